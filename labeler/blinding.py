"""Keeping raters blind: find text that names the model or its maker, and mask it."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

#: Makers and model names that identify an answer's author when they appear in its text.
KNOWN_NAMES: tuple[str, ...] = (
    "Anthropic", "Claude", "OpenAI", "ChatGPT", "GPT-?[0-9][\\w.-]*", "GPT", "Gemini", "Bard",
    "Google DeepMind", "DeepMind", "Llama", "Meta AI", "Mistral", "Mixtral", "Qwen", "DeepSeek",
    "Grok", "xAI", "Copilot", "Cohere", "Command R",
)

_AI_PHRASES = (
    # "As an AI (language model|assistant) (developed|made|created|trained|built) by X"
    r"\bas an? (?:ai|artificial intelligence)(?: (?:language )?model| assistant| chatbot)?"
    r"(?:,? (?:developed|made|created|trained|built|designed) by [A-Z][\w .-]{1,30}?)?(?=[,.;:!?]|\s|$)",
    r"\bas a (?:large )?language model\b"
    r"(?:,? (?:developed|made|created|trained|built) by [A-Z][\w .-]{1,30}?(?=[,.;:!?]|\s|$))?",
    r"\bi(?:'| a)m an? (?:ai|large language model|language model)\b",
    r"\b(?:generated|written|produced) (?:with|by) [A-Z][\w.-]+",
)


@functools.lru_cache(maxsize=64)
def _patterns(extra_names: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The names pattern and the "created by <name>" pattern for one set of extra names.

    Compiled once per set: an import checks every answer against the same names.
    """
    names = [*KNOWN_NAMES, *(re.escape(n) for n in extra_names if n and len(n) >= 3)]
    # Longest first so "GPT-5" wins over "GPT".
    names.sort(key=len, reverse=True)
    by_names = re.compile(r"(?<![\w-])(?:" + "|".join(names) + r")(?![\w])", re.IGNORECASE)
    # "created by <maker>": the phrase names the author as much as the name does.
    by = re.compile(r"\b(?:created|developed|trained|built|made|designed|powered) by (?:the )?(?:team at )?"
                    + by_names.pattern, re.IGNORECASE)
    return by_names, by


_PHRASES = tuple(re.compile(p, re.IGNORECASE) for p in _AI_PHRASES)


def detect_self_identifying(
    text: str, extra_names: Iterable[str] = ()
) -> list[tuple[int, int, str]]:
    """Spans of ``text`` that could tell a rater which model or maker wrote it.

    Args:
        text: The answer text.
        extra_names: Further names to look for, typically the pool's own family and
            model ids (e.g. ``"claude-sonnet-4-6"``).

    Returns:
        Sorted, non-overlapping ``(start, end, matched_text)`` spans; empty when none.

    Examples:
        >>> detect_self_identifying("As an AI developed by OpenAI, I can help.")
        [(0, 28, 'As an AI developed by OpenAI')]
    """
    spans: list[tuple[int, int]] = []
    for pattern in _PHRASES:
        spans += [(m.start(), m.end()) for m in pattern.finditer(text)]
    names, by = _patterns(tuple(sorted(set(extra_names))))
    spans += [(m.start(), m.end()) for m in names.finditer(text)]
    spans += [(m.start(), m.end()) for m in by.finditer(text)]
    return merge_spans(text, spans)


def merge_spans(text: str, spans: Iterable[Sequence[object]]) -> list[tuple[int, int, str]]:
    """Overlapping or touching ``(start, end, ...)`` spans of ``text`` merged, with their text.

    Examples:
        >>> merge_spans("As an AI by OpenAI.", [(0, 8), (6, 11, "x"), (12, 18)])
        [(0, 11, 'As an AI by'), (12, 18, 'OpenAI')]
    """
    merged: list[list[int]] = []
    for start, end in sorted(_offsets(s, len(text)) for s in spans):
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e, text[s:e]) for s, e in merged]


#: What a masked span shows instead of the self-identifying text.
REDACTED = "[redacted]"


def mask(text: str, spans: Iterable[Sequence[object]]) -> str:
    """``text`` with each span replaced by ``[redacted]``.

    Args:
        text: The answer text.
        spans: ``(start, end, ...)`` character offsets, as :func:`detect_self_identifying`
            returns and ``answers.self_id_spans`` stores (extra fields are ignored).
            Overlapping or touching spans become one ``[redacted]``; offsets are clipped
            to the text.

    Returns:
        The masked text; ``text`` itself when there are no spans.
    """
    cuts: list[list[int]] = []
    for span in sorted((_offsets(s, len(text)) for s in spans), key=lambda p: p[0]):
        start, end = span
        if end <= start:
            continue
        if cuts and start <= cuts[-1][1]:
            cuts[-1][1] = max(cuts[-1][1], end)
        else:
            cuts.append([start, end])
    if not cuts:
        return text
    parts: list[str] = []
    at = 0
    for start, end in cuts:
        parts += [text[at:start], REDACTED]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def _offsets(span: Sequence[object], length: int) -> tuple[int, int]:
    """A span's ``(start, end)`` clipped to ``[0, length]``."""
    start, end = int(span[0]), int(span[1])  # type: ignore[call-overload]
    return max(0, min(start, length)), max(0, min(end, length))


def inert_markdown(text: str) -> str:
    """``text`` as markdown that makes the browser fetch nothing.

    An image in an answer (``![alt](https://...)``) would make every rater's browser
    request that address: an outside party would learn who opened which answer, and
    the picture could name the model. Writing the image's ``[`` as a character
    reference leaves it as literal text (markdown never reads a reference as syntax),
    so the rater sees exactly what the answer contains. HTML is already shown as text
    (``unsafe_allow_html=False``). Inside a code span the reference shows as typed
    (``!&#91;``), a cosmetic cost of not parsing markdown here.
    """
    return text.replace("![", "!&#91;")


__all__ = ["KNOWN_NAMES", "REDACTED", "detect_self_identifying", "inert_markdown", "mask", "merge_spans"]
