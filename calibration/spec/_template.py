"""Templates: placeholders, one-pass filling, escaping judged text, and reading a request back."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache, partial

from calibration.formats import neutralise, unneutralise
from calibration.spec._verdict import VerdictRule
from labeler.scales import Format, Kind

PLACEHOLDERS: tuple[str, ...] = ("rubric", "prompt", "answer", "answer_a", "answer_b", "reference", "examples")
"""Every placeholder a template may use."""

REQUIRED_PLACEHOLDERS: dict[Kind, tuple[str, ...]] = {
    "pointwise": ("prompt", "answer"),
    "pairwise": ("prompt", "answer_a", "answer_b"),
}
"""What a template of each kind must show the judge."""

_OTHER_KIND: dict[Kind, tuple[str, ...]] = {"pointwise": ("answer_a", "answer_b"), "pairwise": ("answer",)}
# Text a user did not write into the template: escaped so it cannot break the prompt's blocks.
_DATA = frozenset({"prompt", "answer", "answer_a", "answer_b", "reference"})


class _Problem(ValueError):
    """A spec problem found below the loader, which adds where it is."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix


@dataclass(frozen=True)
class _Text:
    """A template text split into literal runs, each followed by a placeholder (or none)."""

    parts: tuple[tuple[str, str | None], ...]

    @classmethod
    def parse(cls, source: str) -> _Text:
        """Split ``source`` at its placeholders.

        Raises:
            _Problem: On an unknown or malformed placeholder or an unbalanced brace.
        """
        try:
            pieces = list(string.Formatter().parse(source))
        except ValueError as exc:
            raise _Problem(f"the template has an unbalanced brace ({exc})",
                           "write {{ and }} for literal braces.") from None
        parts: list[tuple[str, str | None]] = []
        for literal, name, spec, conversion in pieces:
            if name is not None and (name not in PLACEHOLDERS or spec or conversion):
                shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
                raise _Problem(
                    f"unknown placeholder {shown}",
                    f"use only {', '.join('{' + p + '}' for p in PLACEHOLDERS)}; write {{{{ and }}}} "
                    "for literal braces.",
                )
            parts.append((literal, name))
        return cls(tuple(parts))

    @property
    def fields(self) -> frozenset[str]:
        """The placeholders used."""
        return frozenset(name for _, name in self.parts if name)

    def fill(self, values: Mapping[str, str]) -> str:
        """The text with every placeholder replaced (one pass: values are never re-read)."""
        return "".join(literal + (values[name] if name else "") for literal, name in self.parts)

    def fences(self) -> list[str]:
        """The nearest literal line before and after each task, answer or reference placeholder."""
        out: list[str] = []
        for i, (literal, name) in enumerate(self.parts):
            if name not in _DATA:
                continue
            before = [line.strip() for line in literal.splitlines() if line.strip()]
            after_text = self.parts[i + 1][0] if i + 1 < len(self.parts) else ""
            after = [line.strip() for line in after_text.splitlines() if line.strip()]
            out += [f for f in (before[-1:] + after[:1]) if len(f) >= 2 and f not in out]
        return out

    @cached_property
    def reader(self) -> re.Pattern[str]:
        """A pattern that reads the placeholders' values back out of a filled text."""
        pieces: list[str] = []
        seen: set[str] = set()
        for literal, name in self.parts:
            pieces.append(re.escape(literal))
            if name:
                pieces.append(f"(?P={name})" if name in seen else f"(?P<{name}>.*?)")
                seen.add(name)
        return re.compile("".join(pieces), re.DOTALL)


def _flex(text: str) -> str:
    """A pattern for ``text`` in which any run of whitespace matches any other."""
    return "".join(r"\s+" if part.isspace() else re.escape(part) for part in re.split(r"(\s+)", text) if part)


@lru_cache(maxsize=512)
def _fence_patterns(fence: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    rest = _flex(fence[1:])
    find = re.compile(re.escape(fence[0]) + rest, re.IGNORECASE)
    back = re.compile(r"&#(\d+);(?=" + rest + ")", re.IGNORECASE)
    return find, back


def _escape_fences(text: str, fences: Sequence[str]) -> str:
    for fence in fences:
        find, _ = _fence_patterns(fence)
        text = find.sub(lambda m: f"&#{ord(m.group(0)[0])};{m.group(0)[1:]}", text)
    return text


def _unescape_fences(text: str, fences: Sequence[str]) -> str:
    for fence in reversed(fences):
        _, back = _fence_patterns(fence)
        text = back.sub(partial(_restore, fence[0].lower()), text)
    return text


def _restore(first: str, m: re.Match[str]) -> str:
    char = chr(int(m.group(1)))
    return char if char.lower() == first else m.group(0)


@dataclass(frozen=True)
class Template:
    """One kind and format of the team's prompt: system and user text, and the verdict rule.

    Attributes:
        kind: ``pointwise`` or ``pairwise``.
        system: The system block, with placeholders.
        user: The user message, with placeholders.
        verdict: How replies to it are read.
    """

    kind: Kind
    system: str
    user: str
    verdict: VerdictRule

    @property
    def format(self) -> Format:
        """The verdict's catalogue format."""
        return self.verdict.format

    @cached_property
    def _texts(self) -> tuple[_Text, _Text]:
        return _Text.parse(self.system), _Text.parse(self.user)

    @property
    def placeholders(self) -> frozenset[str]:
        """Every placeholder the system and user text use."""
        return self._texts[0].fields | self._texts[1].fields

    @cached_property
    def fences(self) -> tuple[str, ...]:
        """The template's own delimiters around judged text (escaped when an answer repeats them)."""
        return tuple(dict.fromkeys(self._texts[0].fences() + self._texts[1].fences()))

    def guard(self, text: str) -> str:
        """Judged text as it goes into the prompt: built-in tags and this template's fences escaped."""
        return _escape_fences(neutralise(text.strip()), self.fences)

    def unguard(self, text: str) -> str:
        """Undo :meth:`guard` (the offline fake judge reads answers back from a prompt)."""
        return unneutralise(_unescape_fences(text, self.fences))

    def fill(self, values: Mapping[str, str]) -> tuple[str, str]:
        """``(system, user)`` with every placeholder filled; judged text is guarded."""
        filled = {k: self.guard(v) if k in _DATA else v for k, v in values.items()}
        return self._texts[0].fill(filled), self._texts[1].fill(filled)

    def read(self, system: str, user: str) -> dict[str, str] | None:
        """The placeholder values of a request this template wrote, or ``None``."""
        values: dict[str, str] = {}
        for text, part in ((system, self._texts[0]), (user, self._texts[1])):
            m = part.reader.fullmatch(text)
            if m is None:
                return None
            for name, value in m.groupdict().items():
                if values.setdefault(name, value) != value:
                    return None
        return {k: self.unguard(v) if k in _DATA else v for k, v in values.items()}
