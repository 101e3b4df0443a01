"""Perturbations: rewrite an answer so that exactly one property changes.

Each probe compares an answer with a variant that differs in one property the rubric does not
reward (seed 000): longer but no better (:func:`pad`), shorter by load-bearing content
(:func:`truncate`, the mirror probe that keeps a verbosity fix honest), re-dressed in markdown
(:func:`markdown`), framed confidently (:func:`tone`), given citation-styled lines
(:func:`citations`), signed by a model family (:func:`byline`), or left alone (:func:`placebo`,
the control arm that shows what "no change" reads as).

Every function returns a :class:`Perturbed` with the new text, its length ratio in words and
any warnings. The offline functions are deterministic: the same text gives the same variant.
The marker phrases they insert are module constants so that :class:`~judgelab.calibration.judges.FakeJudge`
can detect them from text alone.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from judgelab.labeler.errors import InputError, JudgeError
from judgelab.labeler.models import Rubric

__all__ = [
    "BYLINE",
    "BYLINE_TEMPLATE",
    "CITATION_HEADING",
    "CITATION_LINE",
    "CITATION_SOURCES",
    "IMPERATIVE_VERBS",
    "MARKDOWN_HEADER",
    "MIN_PAD_RATIO",
    "PAD_INSTRUCTION",
    "PAD_RECAP",
    "PAD_TRANSITIONS",
    "PERTURBATIONS",
    "TONE_CLOSERS",
    "TONE_OPENERS",
    "Perturbed",
    "byline",
    "check_padding",
    "citations",
    "count_words",
    "llm_pad",
    "markdown",
    "pad",
    "pad_prompt",
    "placebo",
    "repetition_clause",
    "sentence_kinds",
    "split_sentences",
    "tone",
    "truncate",
]

# --------------------------------------------------------------------------------------------
# Result type and text helpers
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Perturbed:
    """A perturbed answer.

    Attributes:
        text: The variant's text.
        variant: Its name (``padded``, ``truncated``, ``markdown``, ``tone``, ``citations``,
            ``byline``, ``placebo``), as stored in ``answers.variant``.
        length_ratio: Words in the variant divided by words in the original (see
            :func:`count_words`).
        warnings: Reasons to distrust this variant before using it in a probe.
        removed: For ``truncated``: what was removed, as ``"<kind>: <sentence>"``.
        input_tokens: Prompt tokens an LLM rewrite was billed for (0 offline).
        output_tokens: Completion tokens an LLM rewrite was billed for (0 offline).
    """

    text: str
    variant: str
    length_ratio: float
    warnings: tuple[str, ...] = ()
    removed: tuple[str, ...] = field(default=())
    input_tokens: int = 0
    output_tokens: int = 0


_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def count_words(text: str) -> int:
    """Words in ``text``: runs of letters or digits; markdown symbols (``#``, ``-``, ``**``) do not count."""
    return len(_WORD.findall(text))


def _ratio(original: str, variant: str) -> float:
    return count_words(variant) / max(count_words(original), 1)


def _stable_index(text: str, n: int, salt: str) -> int:
    """A deterministic choice in ``range(n)`` from the text (no global RNG)."""
    digest = hashlib.sha256(f"{salt}\0{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n


def _require_text(func: str, text: str) -> None:
    if count_words(text) == 0:
        raise InputError(f"{func}: the answer has no words to perturb", fix="pass a non-empty answer")


_LIST_PREFIX = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)")
_HEADER = re.compile(r"^\s*#{1,6}\s")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Sentences of one line of prose (a simple rule: ``.``, ``!`` or ``?`` then a capital)."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


@dataclass
class _Line:
    prefix: str  # list marker and indent, or "" for prose
    sentences: list[str]
    raw: str  # the line verbatim, used when it is not prose (header, code, blank)
    prose: bool


def _lines(text: str) -> list[_Line]:
    """Split text into lines; prose lines (and list items) are further split into sentences."""
    out: list[_Line] = []
    in_code = False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            in_code = not in_code
            out.append(_Line("", [], line, False))
            continue
        if in_code or not line.strip() or _HEADER.match(line) or CITATION_LINE.match(line):
            out.append(_Line("", [], line, False))
            continue
        m = _LIST_PREFIX.match(line)
        prefix = m.group(1) if m else ""
        out.append(_Line(prefix, split_sentences(line[len(prefix) :]), line, True))
    return out


def _render(lines: list[_Line]) -> str:
    rendered = [ln.prefix + " ".join(ln.sentences) if ln.prose else ln.raw for ln in lines]
    return "\n".join(rendered).strip()


def _lower_first(sentence: str) -> str:
    first = sentence.split(" ", 1)[0]
    # Keep "I", acronyms ("VPN") and words with inner capitals ("iPhone") as written.
    if first in ("I", "I'm", "I'd", "I'll", "I've") or not first[:1].isupper():
        return sentence
    if len(first) > 1 and not first[1:].islower():
        return sentence
    return sentence[:1].lower() + sentence[1:]


# --------------------------------------------------------------------------------------------
# Padding
# --------------------------------------------------------------------------------------------

PAD_INSTRUCTION = """\
Rewrite the answer inside <answer_to_pad> so that it is about twice as long (roughly {target} \
words) while saying nothing that it does not already say.

You may: restate each point in fuller sentences, add transitions between points, split a compact \
sentence into two, and close with a short recap of what the answer has already said.

You must not: add a new fact, caveat, warning, recommendation, option, example, number, name, \
link or claim of any kind; drop, soften or reorder anything the answer says; or change its \
conclusion. A reader must not be able to do anything after reading your version that they could \
not do after reading the original.

Keep the original's format (plain prose stays plain prose, a list stays a list) and its voice.

<answer_to_pad>
{answer}
</answer_to_pad>

Return only the rewritten answer, with no preface."""
"""The rewrite instruction for LLM padding (format with ``target`` and ``answer``).

Written in the spirit of seed 000's ``PAD_INSTRUCTION``, with one change: it does not allow
"spelling out implied steps", because a spelled-out step is something the reader can act on,
which is exactly what a padded variant must not add.
"""

PAD_TRANSITIONS: tuple[str, ...] = (
    "In other words, ",
    "Put another way, ",
    "That is to say, ",
    "Said differently, ",
    "To say it once more, ",
    "Restating that, ",
    "Once again, ",
    "As mentioned, ",
)
"""Openers the offline padding puts before each restated sentence (no content words)."""

PAD_RECAP = "To recap what was said above: "
"""Opener of the recap sentence the offline padding appends."""

MIN_PAD_RATIO = 1.6
"""Below this length ratio a padded variant gets a warning: it under-delivers the probe."""

_PAD_TARGET = 2.0
_PAD_FLOOR = 1.8
_ANSWER_TAG = re.compile(r"<\s*/?\s*answer_to_pad\b[^<>]*>", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_URL = re.compile(r"https?://\S+|www\.\S+", re.IGNORECASE)


def pad(text: str, *, llm: Callable[[str], str] | None = None) -> Perturbed:
    """A variant about twice as long that says nothing new.

    Args:
        text: The answer.
        llm: Optional model call: receives the full :data:`PAD_INSTRUCTION` prompt and returns
            the model's reply. Without it, a deterministic offline padding restates sentences
            with :data:`PAD_TRANSITIONS` and appends a recap (:data:`PAD_RECAP`) until the
            answer is at least 1.8x its word count (about 2x).

    Returns:
        The ``padded`` :class:`Perturbed`. Warnings: length ratio below
        :data:`MIN_PAD_RATIO`; numbers or links that are not in the original (an LLM that
        helpfully added a fact); an empty rewrite.

    Raises:
        InputError: If ``text`` has no words.
    """
    _require_text("pad", text)
    if llm is None:
        return _pad_offline(text)
    return check_padding(text, llm(pad_prompt(text)))


def pad_prompt(text: str) -> str:
    """The :data:`PAD_INSTRUCTION` prompt for ``text`` (tag look-alikes in it escaped)."""
    safe = _ANSWER_TAG.sub(lambda m: m.group(0).replace("<", "&lt;").replace(">", "&gt;"), text)
    return PAD_INSTRUCTION.format(target=round(_PAD_TARGET * count_words(text)), answer=safe)


def check_padding(original: str, padded: str) -> Perturbed:
    """Wrap an externally padded text, with the checks seed 000 asks for before trusting it.

    Returns:
        The ``padded`` :class:`Perturbed`, warning when the ratio is below
        :data:`MIN_PAD_RATIO` and when numbers or links appear that the original lacks.
    """
    padded = padded.strip()
    warnings: list[str] = []
    if not padded:
        warnings.append("the padded text is empty")
    ratio = _ratio(original, padded)
    if ratio < MIN_PAD_RATIO:
        warnings.append(
            f"length ratio {ratio:.2f} is below {MIN_PAD_RATIO}: the padding under-delivers, so "
            "the measured verbosity effect will be too small"
        )
    new_numbers = sorted(set(_NUMBER.findall(padded)) - set(_NUMBER.findall(original)))
    if new_numbers:
        warnings.append(f"numbers not in the original: {', '.join(new_numbers)} (new facts?)")
    new_urls = sorted(set(_URL.findall(padded)) - set(_URL.findall(original)))
    if new_urls:
        warnings.append(f"links not in the original: {', '.join(new_urls)}")
    return Perturbed(padded, "padded", ratio, tuple(warnings))


def _pad_offline(text: str) -> Perturbed:
    lines = _lines(text)
    slots = [(i, j) for i, ln in enumerate(lines) if ln.prose for j in range(len(ln.sentences))]
    if not slots:
        # Only headers / code / citations: nothing we may restate.
        return Perturbed(text, "padded", 1.0, ("no prose sentences to restate; text unchanged",))
    originals = {(i, j): lines[i].sentences[j] for i, j in slots}
    first = originals[slots[0]]
    recap = PAD_RECAP + _restate(first)
    n_words = count_words(text)
    target = _PAD_TARGET * n_words - count_words(recap)
    added: dict[tuple[int, int], list[str]] = {s: [] for s in slots}
    total = n_words
    k = 0
    # Restate sentences in reading order until the budget for "about twice" is spent; a very
    # short answer cycles through its sentences again so the floor is always reached.
    while total < target or (total + count_words(recap)) < _PAD_FLOOR * n_words:
        slot = slots[k % len(slots)]
        restated = PAD_TRANSITIONS[k % len(PAD_TRANSITIONS)] + _restate(originals[slot])
        added[slot].append(restated)
        total += count_words(restated)
        k += 1
    for i, j in reversed(slots):
        lines[i].sentences[j + 1 : j + 1] = added[(i, j)]
    padded = _render(lines) + "\n\n" + recap
    return Perturbed(padded, "padded", _ratio(text, padded), ())


def _restate(sentence: str) -> str:
    # "In other words, first, restart..." reads badly: drop the sequencing lead when restating.
    return _lower_first(_STEP_LEADS.sub("", sentence) or sentence)


async def llm_pad(client: Any, model: str, text: str, *, max_tokens: int = 4096) -> Perturbed:
    """Pad ``text`` with a model through an ``anthropic.AsyncAnthropic`` client.

    Args:
        client: An ``anthropic.AsyncAnthropic`` (or :attr:`AnthropicJudge.client
            <judgelab.calibration.judges.AnthropicJudge.client>`); its retry settings apply.
        model: The model that rewrites.
        text: The answer.
        max_tokens: Reply budget; a reply cut off at it gets a warning.

    Returns:
        The ``padded`` :class:`Perturbed` with :func:`check_padding`'s warnings and the tokens
        the rewrite was billed for (price them with :func:`judgelab.calibration.pricing.cost`).

    Raises:
        InputError: If ``text`` has no words.
        JudgeError: If the API call fails after the client's retries.
    """
    import anthropic

    _require_text("llm_pad", text)
    try:
        message = await client.messages.create(
            model=model,
            max_tokens=max_tokens,
            messages=[{"role": "user", "content": pad_prompt(text)}],
        )
    except anthropic.APIError as exc:
        raise JudgeError(f"llm_pad: {model} failed: {exc}") from exc
    reply = "".join(b.text for b in message.content if getattr(b, "type", "") == "text")
    result = check_padding(text, reply)
    warnings = result.warnings
    if message.stop_reason == "max_tokens":
        warnings = (*warnings, f"the rewrite was cut off at max_tokens={max_tokens}")
    usage = message.usage
    billed_in = int(usage.input_tokens or 0) + int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
    return replace(result, warnings=warnings, input_tokens=billed_in, output_tokens=int(usage.output_tokens or 0))


# --------------------------------------------------------------------------------------------
# Truncation
# --------------------------------------------------------------------------------------------

def _word_set(text: str) -> frozenset[str]:
    """A set of whitespace-separated words (keeps long word lists readable)."""
    return frozenset(text.split())


IMPERATIVE_VERBS: frozenset[str] = _word_set(
    """
    add allow ask avoid back call cancel change check choose clear click close confirm connect
    contact copy create delete disable disconnect do don't download drag email enable enter fill
    find follow forward go install keep let log look make move navigate note open pick plug press
    reach read reboot refresh register reinstall reload remove rename renew replace reply request
    reset restart restore return review run save scroll select send set share sign start stop
    submit switch tap tell try turn type uninstall unplug update upgrade upload use verify visit
    wait write
    """
)
"""Verbs that, opening a sentence, make it an actionable step."""

_STEP_LEADS = re.compile(
    r"^(?:(?:first|second|third|then|next|now|finally|also|lastly|afterwards|after that|"
    r"to start|to begin|if needed|please|just|simply)\b[,:]?\s*)+",
    re.IGNORECASE,
)
_CAVEAT = re.compile(
    r"\b(?:if|unless|note|make sure|be aware|beware|warning|important|careful|caution|however|"
    r"do not|don't|never|avoid|only)\b",
    re.IGNORECASE,
)
_RECOMMEND = re.compile(
    r"\b(?:recommend|recommended|suggest|should|best option|best way|we advise|the fix is)\b",
    re.IGNORECASE,
)


def sentence_kinds(sentence: str) -> set[str]:
    """Which kinds of load-bearing content a sentence carries.

    Returns:
        A subset of ``{"step", "caveat", "recommendation", "number"}``: ``step`` when it opens
        (after "First,", "Then,", "Please"...) with an imperative verb; ``caveat`` for "if",
        "note", "make sure", "do not"...; ``recommendation`` for "should", "recommend"...;
        ``number`` when it contains a digit.
    """
    kinds: set[str] = set()
    body = _LIST_PREFIX.sub("", sentence)
    lead = _STEP_LEADS.sub("", body).lstrip("*_ ").lower()
    first = re.split(r"[\s,.:;!?]+", lead, maxsplit=1)[0]
    if first in IMPERATIVE_VERBS:
        kinds.add("step")
    if _CAVEAT.search(sentence):
        kinds.add("caveat")
    if _RECOMMEND.search(sentence):
        kinds.add("recommendation")
    if re.search(r"\d", sentence):
        kinds.add("number")
    return kinds


def truncate(text: str, *, max_sentences: int = 2) -> Perturbed:
    """A variant missing load-bearing content, for the mirror probe of padding.

    Removes, in this priority and at most ``max_sentences`` sentences: the last actionable step,
    the first caveat sentence, the first recommendation, then the sentence carrying the most
    load-bearing kinds (see :func:`sentence_kinds`). Never removes a header, code, or the only
    sentence; a numbered list is renumbered so the gap does not show.

    Returns:
        The ``truncated`` :class:`Perturbed`; ``removed`` lists each removed sentence as
        ``"<kind>: <sentence>"``. Warnings when nothing load-bearing was found (the last
        sentence is removed instead) or nothing could be removed.

    Raises:
        InputError: If ``text`` has no words or ``max_sentences < 1``.
    """
    _require_text("truncate", text)
    if max_sentences < 1:
        raise InputError(f"truncate: max_sentences must be >= 1, got {max_sentences!r}")
    lines = _lines(text)
    slots = [(i, j) for i, ln in enumerate(lines) if ln.prose for j in range(len(ln.sentences))]
    if len(slots) < 2:
        return Perturbed(text, "truncated", 1.0, ("only one sentence: nothing removed",))
    kinds = {s: sentence_kinds(lines[s[0]].sentences[s[1]]) for s in slots}
    chosen: list[tuple[tuple[int, int], str]] = []
    warnings: list[str] = []

    def take(slot: tuple[int, int] | None, kind: str) -> None:
        if slot is not None and slot not in [c[0] for c in chosen] and len(chosen) < max_sentences:
            chosen.append((slot, kind))

    take(next((s for s in reversed(slots) if "step" in kinds[s]), None), "step")
    take(next((s for s in slots if "caveat" in kinds[s]), None), "caveat")
    take(next((s for s in slots if "recommendation" in kinds[s]), None), "recommendation")
    if not chosen:
        ranked = sorted(slots, key=lambda s: (-len(kinds[s]), slots.index(s)))
        if kinds[ranked[0]]:
            take(ranked[0], sorted(kinds[ranked[0]])[0])
        else:
            take(slots[-1], "last sentence")
            warnings.append("no load-bearing sentence detected; removed the last sentence")
    # Keep at least one sentence.
    chosen = chosen[: len(slots) - 1]
    removed = [f"{kind}: {lines[i].sentences[j]}" for (i, j), kind in chosen]
    for (i, j), _ in sorted(chosen, reverse=True):
        del lines[i].sentences[j]
    kept = [ln for ln in lines if not (ln.prose and not ln.sentences)]
    _renumber(kept)
    truncated = _render(kept)
    return Perturbed(truncated, "truncated", _ratio(text, truncated), tuple(warnings), tuple(removed))


def _renumber(lines: list[_Line]) -> None:
    """Renumber each run of consecutive numbered list items from its first number."""
    expected: int | None = None
    for ln in lines:
        m = re.match(r"^(\s*)(\d+)([.)]\s+)$", ln.prefix) if ln.prose else None
        if not m:
            expected = None
            continue
        if expected is None:
            expected = int(m.group(2))
        ln.prefix = f"{m.group(1)}{expected}{m.group(3)}"
        expected += 1


# --------------------------------------------------------------------------------------------
# Decorations
# --------------------------------------------------------------------------------------------

MARKDOWN_HEADER = "## Answer"
"""The header :func:`markdown` puts on top (the fake judge reads header lines as structure)."""


def markdown(text: str) -> Perturbed:
    """The same sentences re-dressed in markdown: a header, the first sentence in bold, the rest as bullets.

    Returns:
        The ``markdown`` :class:`Perturbed` (its word count rises by the header's one word).

    Raises:
        InputError: If ``text`` has no words.
    """
    _require_text("markdown", text)
    sentences = [s.strip("*_ ") for ln in _lines(text) if ln.prose for s in ln.sentences]
    if not sentences:
        return Perturbed(text, "markdown", 1.0, ("no prose sentences to re-dress",))
    parts = [MARKDOWN_HEADER, "", f"**{sentences[0]}**"]
    if sentences[1:]:
        parts += ["", *(f"- {s}" for s in sentences[1:])]
    out = "\n".join(parts)
    return Perturbed(out, "markdown", _ratio(text, out))


TONE_OPENERS: tuple[str, ...] = (
    "I can say with complete confidence that this will sort it out.",
    "This is the definitive answer to your question.",
    "Rest assured, this is exactly the right approach.",
)
"""Confident openers :func:`tone` prepends (one, chosen from the text)."""

TONE_CLOSERS: tuple[str, ...] = (
    "This approach is guaranteed to work.",
    "There is no doubt this is the correct solution.",
    "Follow this and the problem will be fully resolved.",
)
"""Confident closers :func:`tone` appends (one, chosen from the text)."""


def tone(text: str) -> Perturbed:
    """The same answer with confident framing: one opener and one closer sentence.

    The framing asserts certainty but adds no step, fact or caveat.

    Raises:
        InputError: If ``text`` has no words.
    """
    _require_text("tone", text)
    opener = TONE_OPENERS[_stable_index(text, len(TONE_OPENERS), "tone-open")]
    closer = TONE_CLOSERS[_stable_index(text, len(TONE_CLOSERS), "tone-close")]
    out = f"{opener} {text.strip()}\n\n{closer}"
    return Perturbed(out, "tone", _ratio(text, out))


CITATION_LINE = re.compile(r"^\s*\[\d+\]\s+\S")
"""A citation-styled line: ``[1] Source...``."""

CITATION_HEADING = "References:"
"""The heading line :func:`citations` puts above its citation lines."""

CITATION_SOURCES: tuple[str, ...] = (
    "Support Knowledge Base, \"Troubleshooting common issues\", article 1042 (2024).",
    "Customer Care Handbook, 3rd edition, chapter 7 (2023).",
    "Product documentation, \"Frequently asked questions\" (2024).",
    "Service Quality Guidelines, section 4.2 (2022).",
)
"""Citation lines :func:`citations` chooses from. They point at nothing the answer uses."""


def citations(text: str, *, n: int = 2) -> Perturbed:
    """The same answer with ``n`` citation-styled lines appended (``[1] ...``).

    Raises:
        InputError: If ``text`` has no words or ``n`` is not in ``1..len(CITATION_SOURCES)``.
    """
    _require_text("citations", text)
    if not 1 <= n <= len(CITATION_SOURCES):
        raise InputError(f"citations: n must be 1..{len(CITATION_SOURCES)}, got {n!r}")
    start = _stable_index(text, len(CITATION_SOURCES), "cite")
    chosen = [CITATION_SOURCES[(start + k) % len(CITATION_SOURCES)] for k in range(n)]
    lines = [f"[{k + 1}] {src}" for k, src in enumerate(chosen)]
    out = "\n".join([text.strip(), "", CITATION_HEADING, *lines])
    return Perturbed(out, "citations", _ratio(text, out))


BYLINE_TEMPLATE = "This response was generated by {family}."
"""The byline :func:`byline` appends."""

BYLINE = re.compile(r"This response was generated by (?P<family>[^.\n]+)\.")
"""Finds a byline and the family it names."""


def byline(text: str, family: str) -> Perturbed:
    """The same answer, signed ``This response was generated by <family>.``.

    A byline probe measures the judge's response to a claimed author. It is not a
    self-preference probe: in production no byline is present (seed 000).

    Raises:
        InputError: If ``text`` has no words or ``family`` is empty.
    """
    _require_text("byline", text)
    if not family.strip():
        raise InputError("byline: family must not be empty")
    out = f"{text.strip()}\n\n{BYLINE_TEMPLATE.format(family=family.strip())}"
    return Perturbed(out, "byline", _ratio(text, out))


def placebo(text: str) -> Perturbed:
    """The answer unchanged: the control arm, whose gap shows the probe's noise floor."""
    return Perturbed(text, "placebo", 1.0)


# --------------------------------------------------------------------------------------------
# Rubric check
# --------------------------------------------------------------------------------------------

_REPETITION_CLAUSE = re.compile(
    r"\b(?:repeat\w*|repetit\w*|redundan\w*|concise\w*|brevity|brief|succinct\w*|"
    r"to the point|filler|padding|padded|verbos\w*|wordy|wordiness|unnecessar\w* length|"
    r"no longer than|short as possible)\b",
    re.IGNORECASE,
)


def repetition_clause(rubric: Rubric) -> str | None:
    """The rubric line that penalises repetition or length, if any.

    A "does not repeat itself" or "concise" clause penalises a padded variant for the
    repetition, which pushes the measured verbosity bias down and can hide a real length
    preference (seed 000). Report it beside every padding result.

    Returns:
        The first rubric line (criterion, instruction or pass rule) with such a clause, or
        ``None``.
    """
    for line in rubric.as_text().splitlines():
        if _REPETITION_CLAUSE.search(line):
            return line.strip().removeprefix("- ").strip()
    return None


PERTURBATIONS: dict[str, Callable[[str], Perturbed]] = {
    "padded": pad,
    "truncated": truncate,
    "markdown": markdown,
    "tone": tone,
    "citations": citations,
    "placebo": placebo,
}
"""The offline single-argument perturbations by variant name (``byline`` also needs a family)."""
