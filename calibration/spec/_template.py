"""Templates: placeholders, one-pass filling, escaping judged text, and reading a request back."""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache

from judgelab.calibration.formats import neutralise, unneutralise
from judgelab.calibration.spec._verdict import VerdictRule
from judgelab.labeler.scales import Format, Kind

PLACEHOLDERS: tuple[str, ...] = (
    "rubric", "instructions", "criteria", "levels",
    "prompt", "answer", "answer_a", "answer_b", "reference", "examples", "conversation", "turn",
)
"""Every placeholder a template may use.

``{rubric}`` is the whole rubric text raters see (its scale and pass rule included);
``{instructions}``, ``{criteria}`` and ``{levels}`` are its parts, for a template that asks for a
scale of its own and must not also show the rubric's. ``{conversation}`` is a pointwise answer
that is a conversation or agent trace, every message rendered and guarded (the same text as
``{answer}``; a template may show it in place of ``{answer}``), and ``{turn}`` the turn the
rubric rates: its last assistant turn (:func:`judgelab.labeler.transcripts.last_turn`; the whole answer
when it is one text), or the whole when the rubric says ``turn = "whole"``.
"""

RUBRIC_PARTS: tuple[str, ...] = ("rubric", "instructions", "criteria", "levels")
"""The placeholders filled from the rubric."""

REQUIRED_PLACEHOLDERS: dict[Kind, tuple[str, ...]] = {
    "pointwise": ("prompt", "answer"),
    "pairwise": ("prompt", "answer_a", "answer_b"),
}
"""What a template of each kind must show the judge."""

_OTHER_KIND: dict[Kind, tuple[str, ...]] = {"pointwise": ("answer_a", "answer_b"), "pairwise": ("answer",)}
# Text a user did not write into the template: escaped so it cannot break the prompt's blocks.
_DATA = frozenset({"prompt", "answer", "answer_a", "answer_b", "reference", "conversation", "turn"})


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

    def fixed(self) -> list[str]:
        """Every line (or part of a line beside a placeholder) of the template's own text."""
        out: list[str] = []
        for literal, _ in self.parts:
            out += [line.strip() for line in literal.splitlines() if line.strip()]
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


# Quote marks an answer can use in place of the template's own: they read the same to a judge.
_QUOTES = str.maketrans({c: "'" for c in "\u2018\u2019\u201a\u201b\u2032\u02bc\u0060\u00b4"}
                        | {c: '"' for c in "\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb"})
_INVISIBLE = frozenset("\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\ufeff\u00ad")
_ESCAPED = re.compile(r"&#(\d{1,7});")
_SHORTEST = 3  # a fixed text shorter than this (normalised) is too common to guard


def _normal_char(char: str) -> str:
    """One character as the fixed-text comparison sees it: no case, no spacing, plain quotes."""
    if char.isspace() or char in _INVISIBLE:
        return ""
    return unicodedata.normalize("NFKC", char).translate(_QUOTES).casefold()


def normalise_line(text: str) -> str:
    """``text`` compared for forgery: case, spacing, invisible characters and quote marks ignored.

    >>> normalise_line("[The End of  Assistant A’s ANSWER]")
    "[theendofassistanta'sanswer]"
    """
    return "".join(_normal_char(c) for c in text)


def _normal_with_map(text: str) -> tuple[str, list[int]]:
    """:func:`normalise_line` of ``text`` and, per normalised character, the index it came from."""
    out: list[str] = []
    where: list[int] = []
    for i, char in enumerate(text):
        piece = _normal_char(char)
        out.append(piece)
        where += [i] * len(piece)
    return "".join(out), where


@lru_cache(maxsize=256)
def _finder(fixed: tuple[str, ...]) -> re.Pattern[str] | None:
    """Every start (overlapping) of any normalised fixed text."""
    if not fixed:
        return None
    return re.compile("(?=(?:" + "|".join(re.escape(f) for f in sorted(fixed, key=len, reverse=True)) + "))")


def _starts(text: str, fixed: tuple[str, ...]) -> set[int]:
    """Indices in ``text`` where a fixed text of the template begins (normalised)."""
    finder = _finder(fixed)
    if finder is None:
        return set()
    normal, where = _normal_with_map(text)
    return {where[m.start()] for m in finder.finditer(normal)}


def _escape_fixed(text: str, fixed: tuple[str, ...]) -> str:
    """``text`` with the first character of every copy of a fixed text written as ``&#NN;``."""
    starts = _starts(text, fixed)
    return "".join(f"&#{ord(c)};" if i in starts else c for i, c in enumerate(text))


def _unescape_fixed(text: str, fixed: tuple[str, ...]) -> str:
    """Undo :func:`_escape_fixed`: a ``&#NN;`` that begins a fixed text goes back to its character."""
    found = list(_ESCAPED.finditer(text))
    if not found:
        return text
    pieces: list[str] = []
    at: list[tuple[int, str]] = []  # (index in the restored text, the escape as written)
    last = 0
    length = 0
    for m in found:
        pieces.append(text[last:m.start()])
        length += m.start() - last
        code = int(m.group(1))
        char = chr(code) if code < 0x110000 else "\ufffd"
        at.append((length, m.group(0)))
        pieces.append(char)
        length += 1
        last = m.end()
    pieces.append(text[last:])
    restored = "".join(pieces)
    starts = _starts(restored, fixed)
    keep = {i: written for i, written in at if i not in starts}
    return "".join(keep.get(i, c) for i, c in enumerate(restored))


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
    def fixed_lines(self) -> tuple[str, ...]:
        """The template's own text, line by line, normalised (:func:`normalise_line`).

        Judged text that reproduces any of them (in any case, spacing or quote marks) is
        escaped, so an answer can neither close its block nor write a later part of the prompt
        (a ``###Feedback:`` line, an ``[The End of Assistant A’s Answer]``).
        """
        lines = (normalise_line(line) for part in self._texts for line in part.fixed())
        return tuple(dict.fromkeys(line for line in lines if len(line) >= _SHORTEST))

    def guard(self, text: str) -> str:
        """Judged text as it goes into the prompt: exact, but for built-in tags and the template's own lines escaped."""
        return _escape_fixed(neutralise(text), self.fixed_lines)

    def unguard(self, text: str) -> str:
        """Undo :meth:`guard` (the offline fake judge reads answers back from a prompt)."""
        return unneutralise(_unescape_fixed(text, self.fixed_lines))

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
        out = {k: self.unguard(v) if k in _DATA else v for k, v in values.items()}
        if "answer" not in out and "conversation" in out:
            out["answer"] = out["conversation"]
        return out
