"""Verdict rules: a regex with one group, what the group means, and the strict parse policy."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

from judgelab.calibration.formats import ParseResult, normalise_reply, parse_on_grid
from judgelab.labeler.errors import InputError
from judgelab.labeler.scales import FORMATS, Format, format_spec


@dataclass(frozen=True)
class VerdictRule:
    """How a reply is read: a regular expression with one group, and what the group means.

    Attributes:
        format: The catalogue format the values belong to.
        regex: The pattern; its one group captures the verdict.
        mapping: ``(group text, value)`` pairs; empty when the group is the number itself.
        ignore_case: Match the pattern and the mapping's labels case-insensitively.
        scale: The whole-number scale the template asks the judge for, when declared
            (``[templates.verdict] scale``); without a mapping a reply off it is a parse failure.
    """

    format: Format
    regex: str
    mapping: tuple[tuple[str, float], ...] = ()
    ignore_case: bool = False
    scale: tuple[int, int] | None = None

    @property
    def asked(self) -> tuple[int, int] | None:
        """The whole-number scale the judge is asked to answer on, or ``None`` for a label menu.

        The declared ``scale``; else, with a mapping whose labels are all whole numbers, their
        lowest and highest; else, without a mapping, the format's range.
        """
        if self.scale is not None:
            return self.scale
        if self.mapping:
            numbers = [int(k) for k, _ in self.mapping if re.fullmatch(r"[+-]?\d+", k)]
            return (min(numbers), max(numbers)) if len(numbers) == len(self.mapping) else None
        lo, hi = format_spec(self.format).range
        return int(lo), int(hi)

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """The compiled regex: ``^`` and ``$`` match at every line, as in a verdict line."""
        return re.compile(self.regex, re.MULTILINE | (re.IGNORECASE if self.ignore_case else 0))

    @property
    def fingerprint(self) -> str:
        """A short hash of the rule: part of every call's cache key, so a new rule re-reads."""
        fields: tuple[Any, ...] = (self.format, self.regex, self.mapping, self.ignore_case)
        # A declared scale changes what parses; an undeclared one keeps the keys runs already have.
        payload = repr(fields if self.scale is None else (*fields, self.scale))
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def _key(self, label: str) -> str:
        return label.casefold() if self.ignore_case else label

    def value_of(self, label: str) -> float | None:
        """The value a mapping label stands for, or ``None`` when it is off the menu."""
        wanted = self._key(label)
        return next((v for k, v in self.mapping if self._key(k) == wanted), None)

    def parse(self, reply: str) -> ParseResult:
        """Read ``reply``: the last match wins; anything else is a failure with a reason."""
        text = normalise_reply(reply)
        if not text.strip():
            return ParseResult(None, "empty reply")
        matches = list(self.pattern.finditer(text))
        if not matches:
            return ParseResult(None, f"no match for the verdict pattern {self.regex} in the reply")
        label = " ".join((matches[-1].group(1) or "").split())
        if not label:
            return ParseResult(None, "the last verdict match captured nothing")
        if self.mapping:
            value = self.value_of(label)
            if value is None:
                menu = ", ".join(k for k, _ in self.mapping)
                return ParseResult(None, f"off-menu verdict {label!r}; expected one of: {menu}")
            return ParseResult(value, None)
        if self.format not in FORMATS:
            # A declared scale (the spec's own, e.g. MT-Bench's 1-10): the number on its grid.
            return parse_on_grid(label, format_spec(self.format))
        return _whole_number(label, self.format, self.scale)

    def label_for(self, value: float) -> str:
        """The label that stands for ``value`` (the nearest one on the menu)."""
        if self.mapping:
            return min(self.mapping, key=lambda kv: abs(kv[1] - value))[0]
        if self.format not in FORMATS:
            spec = format_spec(self.format)
            return f"{min(spec.levels, key=lambda level: abs(level - value)):g}"
        lo, hi = self.scale or format_spec(self.format).range
        return str(int(min(max(round(value), lo), hi)))

    def render(self, value: float) -> str:
        """A verdict text this rule reads as (the value nearest) ``value``: the fake judge's reply.

        Raises:
            InputError: If no such text can be written from the regex (lookarounds,
                back-references).
        """
        label = self.label_for(value)
        try:
            text = _example(self.regex, label)
        except ValueError as exc:
            raise InputError(
                f"the fake judge cannot write a reply for the verdict pattern {self.regex} ({exc})",
                fix="use a pattern without lookarounds or back-references, or a real judge.",
            ) from None
        got = self.parse(text)
        if got.value is None or (self.mapping and got.value != self.value_of(label)):
            raise InputError(f"the fake judge's reply {text!r} does not parse by the pattern {self.regex}",
                             fix="use a simpler pattern, or a real judge.")
        return text

    def describe(self) -> str:
        """``pairwise5 read by `...` (A = +2, B = -2, C = 0)``: the format, regex and mapping."""
        text = f"{self.format} read by `{self.regex}`"
        if self.mapping:
            signed = format_spec(self.format).kind == "pairwise"
            shown = (f"{k} = {v:+g}" if signed and v else f"{k} = {v:g}" for k, v in self.mapping)
            text += " (" + ", ".join(shown) + ")"
        return text


def _whole_number(label: str, fmt: Format, scale: tuple[int, int] | None = None) -> ParseResult:
    lo, hi = scale or (int(x) for x in format_spec(fmt).range)
    expected = f"a whole number from {lo} to {hi}"
    if not re.fullmatch(r"[+-]?\d+", label):
        return ParseResult(None, f"{label!r} is not a whole number; expected {expected}")
    number = int(label)
    if not lo <= number <= hi:
        return ParseResult(None, f"{number} is out of range; expected {expected}")
    return ParseResult(float(number), None)


# -- writing a text a regex matches (only the fake judge needs it) ---------------------------

_CANDIDATES = "x0 a-A.1:"


def _in_class(char: str, items: Any) -> bool:
    negate = False
    member = False
    for op, av in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            member |= char == chr(av)
        elif name == "RANGE":
            member |= av[0] <= ord(char) <= av[1]
        elif name == "CATEGORY":
            member |= _CATEGORY[str(av)](char)
    return member != negate


_CATEGORY: dict[str, Callable[[str], bool]] = {
    "CATEGORY_DIGIT": str.isdigit,
    "CATEGORY_NOT_DIGIT": lambda c: not c.isdigit(),
    "CATEGORY_SPACE": str.isspace,
    "CATEGORY_NOT_SPACE": lambda c: not c.isspace(),
    "CATEGORY_WORD": lambda c: c.isalnum() or c == "_",
    "CATEGORY_NOT_WORD": lambda c: not (c.isalnum() or c == "_"),
}


def _pick(accept: Callable[[str], bool]) -> str:
    for char in _CANDIDATES:
        if accept(char):
            return char
    raise ValueError("a character class none of the usual characters satisfies")


def _has_group(items: Any) -> bool:
    for op, av in items:
        name = str(op)
        if name == "SUBPATTERN" and (av[0] == 1 or _has_group(av[3])):
            return True
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and _has_group(av[2]):
            return True
        if name == "BRANCH" and any(_has_group(alt) for alt in av[1]):
            return True
        if name == "ATOMIC_GROUP" and _has_group(av):
            return True
    return False


def _emit(items: Any, label: str) -> str:
    return "".join(_emit_one(str(op), av, label) for op, av in items)


def _emit_one(name: str, av: Any, label: str) -> str:
    if name == "LITERAL":
        return chr(av)
    if name == "NOT_LITERAL":
        return _pick(lambda c: ord(c) != av)
    if name == "ANY":
        return _pick(lambda c: c != "\n")
    if name == "IN":
        return _pick(lambda c: _in_class(c, av))
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        low, _high, sub = av
        # An optional part that holds the verdict group is written once.
        return _emit(sub, label) * (max(low, 1) if _has_group(sub) else low)
    if name == "SUBPATTERN":
        return label if av[0] == 1 else _emit(av[3], label)
    if name == "ATOMIC_GROUP":
        return _emit(av, label)
    if name == "BRANCH":
        alternatives = av[1]
        return _emit(next((a for a in alternatives if _has_group(a)), alternatives[0]), label)
    if name == "AT":
        return ""
    raise ValueError(f"no example text for a {name.lower()} in the pattern")


@lru_cache(maxsize=256)
def _example(regex: str, label: str) -> str:
    """A short text ``regex`` matches with ``label`` as its group.

    Python's own regex parser (``re._parser``, private but the only parser of this syntax)
    gives the pattern's tree; each node writes the shortest text it accepts.
    """
    from re import _parser  # type: ignore[attr-defined]

    return _emit(_parser.parse(regex), label)
