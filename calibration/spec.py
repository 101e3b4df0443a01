r"""Judge specs: a team's own judge (prompt, few-shot examples, references, verdict rule) in TOML.

Without a spec, every probe and judge run uses judgelab's built-in prompt (the rubric text and
:data:`~calibration.formats.JUDGE_INSTRUCTIONS`, the answers in judgelab's tags, a
``VERDICT:`` line). A bias measured on that prompt is a property of judgelab's prompt. A judge
spec describes the team's judge instead, and every probe, ``judgelab score`` and the mock API
run it (``data/judge_spec.toml`` is a full example):

``[judge]``
    ``name``, ``model``, ``family`` (the judge's own model family, for the self-preference
    gap), ``temperature``, ``max_tokens``. All optional.
``[rubric]``
    ``author``: who wrote the rubric and judging instructions the judge sees.
``[examples]``
    ``items`` (few-shot examples, verbatim), ``separator`` (default a blank line), ``author``.
``[references]``
    ``source = "task"`` (each task's reference answer in the project database) and/or
    ``texts = {TASK_ID = "..."}``; ``if_missing`` (text used when a task has none; default:
    refuse the call); ``author``.
``[[templates]]``
    One per kind and format: ``kind`` (``pointwise`` or ``pairwise``), ``system``, ``user``
    and ``[templates.verdict]``: ``format`` (a catalogue format, :mod:`labeler.scales`),
    ``regex`` (exactly one group), ``mapping`` (group text -> value; without one the group
    must be a whole number in the format's range), ``ignore_case``, and ``samples``: replies
    with the value they must parse to (``expect``: a value or a mapping label) or
    ``expect_failure = true``. Every sample is checked when the spec loads, so a wrong regex
    fails at once instead of turning a run into parse failures.

An ``author`` is an inline table ``{kind = "human" | "model" | "unknown", name = "..."}``; a
model author's ``name`` is its family or model id. An artifact with no declared author counts
as unknown, which makes the self-preference gap an upper bound (:func:`provenance`).

**Placeholders.** ``{rubric}`` (the rubric text raters see), ``{prompt}`` (the task),
``{answer}`` (pointwise), ``{answer_a}`` and ``{answer_b}`` (pairwise, in the order shown),
``{reference}`` and ``{examples}``; ``{{`` and ``}}`` are literal braces. A pointwise template
must show ``{prompt}`` and ``{answer}``, a pairwise one ``{prompt}``, ``{answer_a}`` and
``{answer_b}``.

**Escaping.** Templates are filled in one pass, so text inside an answer is never read as a
placeholder. The task, answers and references are escaped as the built-in prompt escapes them
(:func:`~calibration.formats.neutralise`), and so are the template's own delimiters: the
nearest literal line before and after each of those placeholders (``[The End of Assistant A's
Answer]``, say). An answer that repeats one gets its first character written as a character
reference (``&#91;The End of ...``): the judge still reads what was written, but the answer
cannot close its own block.

**Parsing.** The strict policy of :func:`calibration.formats.parse`: the reply is normalised the
same way, the last match of the regex wins, and anything else (no match, an off-menu label, a
number out of range) is a parse failure with a reason, never a default score.

    >>> rule = VerdictRule("pairwise5", r"\[\[([ABC])\]\]", (("A", 2.0), ("B", -2.0), ("C", 0.0)))
    >>> rule.parse("First I thought [[B]]; on reflection [[A]]").value
    2.0
    >>> print(rule.parse("[[D]]").error)
    no match for the verdict pattern \[\[([ABC])\]\] in the reply
    >>> VerdictRule("likert5", r"Rating: \[\[(\d+)\]\]").parse("Rating: [[7]]").error
    '7 is out of range; expected a whole number from 1 to 5'
    >>> rule.render(-2.0)
    '[[B]]'
"""

from __future__ import annotations

import copy
import hashlib
import math
import re
import string
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache, partial
from pathlib import Path
from typing import Any, Literal, TypeVar

from calibration.formats import ParseResult, ReadCall, neutralise, normalise_reply, unneutralise
from labeler.errors import InputError
from labeler.models import Rubric
from labeler.scales import FORMAT_SPECS, FORMATS, Format, Kind

__all__ = [
    "AUTHOR_KINDS",
    "PLACEHOLDERS",
    "REQUIRED_PLACEHOLDERS",
    "Author",
    "AuthorKind",
    "JudgeSpec",
    "Template",
    "VerdictRule",
    "bind_references",
    "load_spec",
    "parse_spec",
    "provenance",
    "recorded_provenance",
    "with_references",
]

AuthorKind = Literal["human", "model", "unknown"]
"""Who wrote an artifact of the judge prompt: a human, a model (family), or nobody knows."""

AUTHOR_KINDS: tuple[AuthorKind, ...] = ("human", "model", "unknown")

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


# --------------------------------------------------------------------------------------------
# Authors
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Author:
    """The declared author of an artifact.

    Attributes:
        kind: ``human``, ``model`` or ``unknown``.
        name: A person or team, or for a model its family or model id.
    """

    kind: AuthorKind
    name: str

    def record(self, artifact: str) -> tuple[str, str, str]:
        """``(artifact, author_kind, author)``, as :func:`calibration.stats.provenance_note` reads it."""
        return (artifact, self.kind, self.name)


UNDECLARED = Author("unknown", "undeclared")
"""The author of an artifact the spec does not declare one for."""


# --------------------------------------------------------------------------------------------
# Verdict rules
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerdictRule:
    """How a reply is read: a regular expression with one group, and what the group means.

    Attributes:
        format: The catalogue format the values belong to.
        regex: The pattern; its one group captures the verdict.
        mapping: ``(group text, value)`` pairs; empty when the group is the number itself.
        ignore_case: Match the pattern and the mapping's labels case-insensitively.
    """

    format: Format
    regex: str
    mapping: tuple[tuple[str, float], ...] = ()
    ignore_case: bool = False

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """The compiled regex."""
        return re.compile(self.regex, re.IGNORECASE if self.ignore_case else 0)

    @property
    def fingerprint(self) -> str:
        """A short hash of the rule: part of every call's cache key, so a new rule re-reads."""
        payload = repr((self.format, self.regex, self.mapping, self.ignore_case))
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
        last = None
        for last in self.pattern.finditer(text):  # noqa: B007  # only the last match counts
            pass
        if last is None:
            return ParseResult(None, f"no match for the verdict pattern {self.regex} in the reply")
        label = " ".join((last.group(1) or "").split())
        if not label:
            return ParseResult(None, "the last verdict match captured nothing")
        if self.mapping:
            value = self.value_of(label)
            if value is None:
                menu = ", ".join(k for k, _ in self.mapping)
                return ParseResult(None, f"off-menu verdict {label!r}; expected one of: {menu}")
            return ParseResult(value, None)
        return _whole_number(label, self.format)

    def label_for(self, value: float) -> str:
        """The label that stands for ``value`` (the nearest one on the menu)."""
        if self.mapping:
            return min(self.mapping, key=lambda kv: abs(kv[1] - value))[0]
        lo, hi = FORMAT_SPECS[self.format].range
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
                f"the fake judge cannot write a reply for the verdict pattern {self.regex!r} "
                f"({exc})",
                fix="use a pattern without lookarounds or back-references, or a real judge.",
            ) from None
        got = self.parse(text)
        if got.value is None or (self.mapping and got.value != self.value_of(label)):
            raise InputError(f"the fake judge's reply {text!r} does not parse by {self.regex!r}")
        return text

    def describe(self) -> str:
        """``pairwise5 read by `...` (A = +2, B = -2, C = +0)``: the format, regex and mapping."""
        text = f"{self.format} read by `{self.regex}`"
        if self.mapping:
            signed = FORMAT_SPECS[self.format].kind == "pairwise"
            shown = (f"{k} = {v:+g}" if signed and v else f"{k} = {v:g}" for k, v in self.mapping)
            text += " (" + ", ".join(shown) + ")"
        return text


def _whole_number(label: str, fmt: Format) -> ParseResult:
    lo, hi = (int(x) for x in FORMAT_SPECS[fmt].range)
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


# --------------------------------------------------------------------------------------------
# Templates
# --------------------------------------------------------------------------------------------


class _Problem(ValueError):
    """A spec problem found below the loader, which adds where it is."""

    def __init__(self, problem: str, fix: str | None = None) -> None:
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


# --------------------------------------------------------------------------------------------
# The spec
# --------------------------------------------------------------------------------------------

ReferenceSource = Literal["task", "texts"]


@dataclass(frozen=True)
class JudgeSpec:
    """A team's judge, loaded from a spec file (:func:`load_spec`).

    It is what :func:`calibration.formats.build_call` and :func:`calibration.formats.parse` ask
    when a judge carries one (:class:`~calibration.formats.PromptSpec`).

    Attributes:
        name: The spec's name.
        sha256: Hash of the spec file's bytes (named in report cards and run records).
        file: The spec file, if it came from one.
        templates: One per (kind, format).
        model: The judge model, if the spec names one.
        family: The judge's own model family.
        temperature: Sampling temperature.
        max_tokens: Reply budget.
        rubric_author: Who wrote the rubric and instructions the judge sees.
        examples: Few-shot examples, verbatim.
        examples_separator: What joins the examples in ``{examples}``.
        examples_author: Who wrote the examples.
        reference_sources: Where references come from: ``task`` and/or ``texts``.
        reference_texts: Task id -> reference answer written in the spec.
        reference_if_missing: Text for ``{reference}`` when a task has none (``None``: refuse).
        references_author: Who wrote the references.
        references_by_prompt: Task prompt -> reference answer, bound for a run
            (:func:`bind_references`).
    """

    name: str
    sha256: str
    templates: tuple[Template, ...]
    file: str | None = None
    model: str | None = None
    family: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    rubric_author: Author | None = None
    examples: tuple[str, ...] = ()
    examples_separator: str = "\n\n"
    examples_author: Author | None = None
    reference_sources: tuple[ReferenceSource, ...] = ()
    reference_texts: Mapping[str, str] = field(default_factory=dict)
    reference_if_missing: str | None = None
    references_author: Author | None = None
    references_by_prompt: Mapping[str, str] = field(default_factory=dict, repr=False)

    # -- looking things up

    def formats(self, kind: Kind) -> tuple[Format, ...]:
        """The formats the spec has a template for, of one kind, in file order."""
        return tuple(t.format for t in self.templates if t.kind == kind)

    def uses(self, placeholder: str) -> bool:
        """Whether any template uses ``placeholder``."""
        return any(placeholder in t.placeholders for t in self.templates)

    def template(self, kind: Kind, fmt: Format) -> Template:
        """The template for one kind and format.

        Raises:
            InputError: If the spec has none.
        """
        for t in self.templates:
            if t.kind == kind and t.format == fmt:
                return t
        have = ", ".join(self.formats(kind)) or "none"
        raise InputError(
            f"judge spec {self.name!r} has no {kind} template in the format {fmt!r} (its {kind} "
            f"formats: {have})",
            file=self.file,
            fix=f"add a [[templates]] table with kind = \"{kind}\" and verdict.format = \"{fmt}\".",
        )

    def require(self, kind: Kind, why: str) -> None:
        """Refuse, before anything is spent, a run that needs a kind the spec has no template for.

        Raises:
            InputError: Saying which probe (``why``) needs it.
        """
        if not self.formats(kind):
            raise InputError(
                f"judge spec {self.name!r} has no {kind} template, and {why}",
                file=self.file,
                fix=f"add a [[templates]] table with kind = \"{kind}\", or leave that probe out.",
            )

    def with_references(self, by_prompt: Mapping[str, str]) -> JudgeSpec:
        """The spec with each task prompt's reference answer bound (see :func:`bind_references`)."""
        return replace(self, references_by_prompt=dict(by_prompt))

    # -- the PromptSpec protocol

    def render(
        self, kind: Kind, fmt: Format, rubric: Rubric, prompt: str, answers: Sequence[str]
    ) -> tuple[str, str]:
        """``(system, user)`` of one call, filled from the template for ``kind`` and ``fmt``.

        Raises:
            InputError: If there is no such template, or it shows ``{reference}`` and the task
                has no reference answer (and no ``if_missing`` text is set).
        """
        template = self.template(kind, fmt)
        names = template.placeholders
        values = {"rubric": rubric.as_text(), "prompt": prompt,
                  "examples": self.examples_separator.join(self.examples)}
        if kind == "pointwise":
            values["answer"] = answers[0]
        else:
            values["answer_a"], values["answer_b"] = answers[0], answers[1]
        if "reference" in names:
            values["reference"] = self._reference(prompt)
        return template.fill(values)

    def _reference(self, prompt: str) -> str:
        found = self.references_by_prompt.get(prompt)
        if found is not None:
            return found
        if self.reference_if_missing is not None:
            return self.reference_if_missing
        shown = " ".join(prompt.split())
        raise InputError(
            f"judge spec {self.name!r} shows {{reference}}, but the task "
            f"{shown[:60] + ('…' if len(shown) > 60 else '')!r} has no reference answer",
            file=self.file,
            fix="give the task a reference answer (the answers file's reference_answer column, or "
            "[references] texts in the spec), or set [references] if_missing.",
        )

    def request_params(self, kind: Kind, fmt: Format) -> dict[str, Any]:
        """The verdict rule's fingerprint: joins each call's params and cache key."""
        return {"verdict_rule": self.template(kind, fmt).verdict.fingerprint}

    def parse(self, fmt: Format, reply: str) -> ParseResult:
        """Read a reply by the verdict rule of the template for ``fmt``."""
        return self.template(FORMAT_SPECS[fmt].kind, fmt).verdict.parse(reply)

    def read(self, system: str, user: str) -> ReadCall | None:
        """Recover kind, format, task and answers from a request one of the templates wrote."""
        for t in self.templates:
            values = t.read(system, user)
            if values is None:
                continue
            names = REQUIRED_PLACEHOLDERS[t.kind][1:]
            return ReadCall(t.kind, t.format, values["prompt"], tuple(values[n] for n in names))
        return None

    def verdict_text(self, fmt: Format, value: float) -> str:
        """A verdict the template for ``fmt`` reads as ``value`` (the fake judge's last line)."""
        return self.template(FORMAT_SPECS[fmt].kind, fmt).verdict.render(value)

    # -- the record

    def provenance(self) -> tuple[tuple[str, str, str], ...]:
        """``(artifact, author_kind, author)`` of each artifact of the prompt (see :func:`provenance`)."""
        return provenance(self)

    def describe(self, *, model: str | None = None, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """A JSON-ready record of the spec and the settings a run used.

        Args:
            model: The model the run used (default: the spec's).
            params: The judge's request parameters (``temperature``, ``max_tokens``), which
                win over the spec's when present.
        """
        used = dict(params or {})
        return {
            "name": self.name,
            "file": None if self.file is None else Path(self.file).name,
            "sha256": self.sha256,
            "model": model or self.model,
            "family": self.family,
            "temperature": used.get("temperature", self.temperature),
            "max_tokens": used.get("max_tokens", self.max_tokens),
            "templates": [{"kind": t.kind, "format": t.format, "regex": t.verdict.regex,
                           "mapping": dict(t.verdict.mapping) or None} for t in self.templates],
            "provenance": [list(r) for r in self.provenance()],
        }

    def card_line(self, *, model: str | None = None, params: Mapping[str, Any] | None = None) -> str:
        """One line naming the spec, its file hash and settings, for report cards."""
        d = self.describe(model=model, params=params)
        settings = [f"model {d['model'] or 'unspecified'}"]
        for key in ("temperature", "max_tokens"):
            if d[key] is not None:
                settings.append(f"{key} {d[key]:g}")
        settings += [t.verdict.describe() for t in self.templates]
        where = f"{d['file']}, " if d["file"] else ""
        return f"judge spec {self.name} ({where}sha256 {self.sha256[:12]}): " + " · ".join(settings)


def provenance(spec: JudgeSpec) -> tuple[tuple[str, str, str], ...]:
    """Who wrote each artifact of a spec's prompt: rubric, few-shot examples, references.

    An artifact the spec holds without a declared author is ``unknown`` (so the self-preference
    gap is an upper bound). Two are left to the project's own records: the rubric when the
    templates show ``{rubric}`` (the project's rubric file names its author) and references
    taken from the tasks (each task's reference carries its author).
    """
    where = f"judge spec {spec.name}"
    out: list[tuple[str, str, str]] = []
    if spec.rubric_author is not None:
        out.append(spec.rubric_author.record(f"rubric and instructions in the prompt ({where})"))
    elif not spec.uses("rubric"):
        out.append(UNDECLARED.record(f"rubric written into the templates ({where})"))
    if spec.examples:
        author = spec.examples_author or UNDECLARED
        out.append(author.record(f"{len(spec.examples)} few-shot example(s) ({where})"))
    if spec.uses("reference"):
        if spec.references_author is not None:
            out.append(spec.references_author.record(f"reference answers ({where})"))
        elif "texts" in spec.reference_sources or spec.reference_if_missing is not None:
            out.append(UNDECLARED.record(f"reference answers written into the spec ({where})"))
    return tuple(out)


def recorded_provenance(params: Mapping[str, Any] | None) -> tuple[tuple[str, str, str], ...]:
    """The provenance records a judge run stored with its judge spec (none without one).

    A run made with a spec keeps :meth:`JudgeSpec.describe` under ``params["judge_spec"]``;
    ``judgelab calibrate`` reads the spec's declared authors back from there. A malformed
    record counts as an artifact of unknown authorship rather than being dropped.

    >>> recorded_provenance({"judge_spec": {"provenance": [["2 few-shot example(s)", "model", "claude"]]}})
    (('2 few-shot example(s)', 'model', 'claude'),)
    >>> recorded_provenance({"model": "m"})
    ()
    """
    spec = (params or {}).get("judge_spec")
    if not isinstance(spec, Mapping):
        return ()
    out: list[tuple[str, str, str]] = []
    for record in spec.get("provenance") or []:
        if isinstance(record, Sequence) and len(record) == 3 and record[1] in AUTHOR_KINDS:
            out.append((str(record[0]), str(record[1]), str(record[2])))
        else:
            out.append((f"an unreadable provenance record of judge spec {spec.get('name')}", "unknown", "unknown"))
    return tuple(out)


def bind_references(
    spec: JudgeSpec, *, tasks: Iterable[tuple[str, str, str | None]] = ()
) -> JudgeSpec:
    """The spec with the reference answer of each task bound to its prompt.

    Calls carry the task prompt, not its id, so references are looked up by prompt.

    Args:
        spec: The spec.
        tasks: ``(task id, prompt, the task's own reference answer or None)`` of every task the
            run may judge (the project's tasks, the dataset's pairs).

    Returns:
        ``spec`` unchanged when no template shows ``{reference}``; otherwise a copy whose
        ``references_by_prompt`` holds, per prompt, the spec's ``texts`` entry for the task id
        or, with ``source = "task"``, the task's own reference (the spec's text wins).
    """
    if not spec.uses("reference"):
        return spec
    by_prompt: dict[str, str] = {}
    for task_id, prompt, own in tasks:
        text = spec.reference_texts.get(task_id)
        if text is None and "task" in spec.reference_sources and own:
            text = own
        if text is not None:
            by_prompt.setdefault(prompt, text)
    return spec.with_references(by_prompt)


_J = TypeVar("_J")


def with_references(judge: _J, tasks: Iterable[tuple[str, str, str | None]]) -> _J:
    """``judge`` with its spec's reference answers bound for the tasks a run may judge.

    Args:
        judge: A judge carrying a ``spec`` attribute (or none).
        tasks: As in :func:`bind_references`.

    Returns:
        ``judge`` itself when it has no spec or its spec shows no ``{reference}``; otherwise a
        shallow copy (same client, same settings) whose spec has the references bound, so the
        caller's judge is left as it was.
    """
    spec = getattr(judge, "spec", None)
    if not isinstance(spec, JudgeSpec) or not spec.uses("reference"):
        return judge
    clone = copy.copy(judge)
    clone.spec = bind_references(spec, tasks=tasks)  # type: ignore[attr-defined]  # checked above
    return clone


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------

_KEYS: dict[str, tuple[str, ...]] = {
    "": ("judge", "rubric", "examples", "references", "templates"),
    "judge": ("name", "model", "family", "temperature", "max_tokens"),
    "rubric": ("author",),
    "examples": ("items", "separator", "author"),
    "references": ("source", "texts", "if_missing", "author"),
    "template": ("kind", "system", "user", "verdict"),
    "verdict": ("format", "regex", "mapping", "ignore_case", "samples"),
    "sample": ("reply", "expect", "expect_failure"),
    "author": ("kind", "name"),
}


class _Located(Exception):
    """A spec problem with the key it is at."""

    def __init__(self, where: str, problem: str, fix: str | None = None) -> None:
        super().__init__(problem)
        self.where = where
        self.problem = problem
        self.fix = fix


def load_spec(path: str | Path) -> JudgeSpec:
    """Load and check a judge spec file.

    Args:
        path: The TOML file.

    Returns:
        The :class:`JudgeSpec`, named by ``[judge] name`` (default: the file's stem), with the
        file's sha256.

    Raises:
        InputError: One clear error naming the file, the key and the fix: a missing file,
            invalid TOML, an unknown key, an unknown placeholder, a template without a
            placeholder its kind needs, an unknown format, a regex without exactly one group,
            a sample reply that does not parse to its expected value, an unknown author kind...
    """
    file = Path(path)
    if not file.is_file():
        raise InputError("no such judge spec file", file=str(file),
                         fix="pass a TOML file such as data/judge_spec.toml.")
    raw = file.read_bytes()
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text", file=str(file), fix="save the spec as UTF-8.") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"is not valid TOML: {exc}", file=str(file),
                         fix="check the quoting; regexes read best in single quotes ('...').") from None
    return parse_spec(doc, file=str(file), sha256=hashlib.sha256(raw).hexdigest(), name=file.stem)


def parse_spec(
    doc: Mapping[str, Any], *, file: str | None = None, sha256: str | None = None, name: str = "judge spec"
) -> JudgeSpec:
    """Check a parsed spec document and build the :class:`JudgeSpec` (see :func:`load_spec`).

    Args:
        doc: The TOML document as a mapping.
        file: The file it came from, for messages and the record.
        sha256: The file's hash (default: the hash of the document's ``repr``).
        name: The name when ``[judge]`` gives none.

    Raises:
        InputError: As :func:`load_spec`.
    """
    try:
        return _build(doc, file=file, sha256=sha256 or hashlib.sha256(repr(doc).encode()).hexdigest(), name=name)
    except _Located as exc:
        where = f"{exc.where}: " if exc.where else ""
        raise InputError(f"{where}{exc.problem}", file=file, fix=exc.fix) from None


def _build(doc: Mapping[str, Any], *, file: str | None, sha256: str, name: str) -> JudgeSpec:
    _only(doc, "", "")
    judge = _table(doc.get("judge"), "judge")
    rubric = _table(doc.get("rubric"), "rubric")
    examples = _table(doc.get("examples"), "examples")
    _only(judge, "judge", "judge")
    _only(rubric, "rubric", "rubric")
    _only(examples, "examples", "examples")
    items = _texts(examples.get("items"), "examples.items")
    sources, texts, if_missing = _references(_table(doc.get("references"), "references"))
    spec = JudgeSpec(
        name=_text(judge, "name", "judge") or name,
        sha256=sha256,
        templates=_templates(doc.get("templates")),
        file=file,
        model=_text(judge, "model", "judge"),
        family=_text(judge, "family", "judge"),
        temperature=_number(judge, "temperature", "judge", 0.0, 1.0),
        max_tokens=_whole(judge, "max_tokens", "judge"),
        rubric_author=_author(rubric.get("author"), "rubric.author"),
        examples=items,
        examples_separator=_text(examples, "separator", "examples") or "\n\n",
        examples_author=_author(examples.get("author"), "examples.author"),
        reference_sources=sources,
        reference_texts=texts,
        reference_if_missing=if_missing,
        references_author=_author(_table(doc.get("references"), "references").get("author"), "references.author"),
    )
    _cross_check(spec, bool(doc.get("references")))
    return spec


def _cross_check(spec: JudgeSpec, has_references: bool) -> None:
    """Artifacts and placeholders must agree: nothing declared and unshown, nothing shown and missing."""
    if spec.uses("examples") and not spec.examples:
        raise _Located("examples", "the templates show {examples} but [examples] has no items",
                       'add items = ["...", "..."] under [examples].')
    if spec.examples and not spec.uses("examples"):
        raise _Located("examples", f"{len(spec.examples)} example(s) are declared but no template shows {{examples}}",
                       "put {examples} in a template, or remove [examples].")
    if spec.uses("reference") and not has_references:
        raise _Located("references", "the templates show {reference} but there is no [references] table",
                       'add [references] with source = "task" (or texts = {TASK_ID = "..."}).')
    if has_references and not spec.uses("reference"):
        raise _Located("references", "references are declared but no template shows {reference}",
                       "put {reference} in a template, or remove [references].")


# -- typed reads ---------------------------------------------------------------------------------

def _only(table: Mapping[str, Any], section: str, where: str) -> None:
    allowed = _KEYS[section]
    unknown = [k for k in table if k not in allowed]
    if unknown:
        raise _Located(where, f"unknown key {unknown[0]!r}", f"use {', '.join(allowed)}.")


def _table(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _Located(where, f"must be a table, not {type(value).__name__} {value!r}")
    return value


def _text(table: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str | None:
    value = table.get(key)
    if value is None:
        if required:
            raise _Located(where, f"{key} is missing")
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise _Located(where, f"{key} must be a non-empty string, not {value!r}")
    return value


def _texts(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _Located(where, "must be a list of non-empty strings")
    return tuple(value)


def _number(table: Mapping[str, Any], key: str, where: str, lo: float, hi: float) -> float | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise _Located(where, f"{key} must be a number from {lo:g} to {hi:g}, not {value!r}")
    return float(value)


def _whole(table: Mapping[str, Any], key: str, where: str) -> int | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _Located(where, f"{key} must be a whole number of at least 1, not {value!r}")
    return value


def _author(value: Any, where: str) -> Author | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise _Located(where, f"must be a table such as {{kind = \"human\", name = \"QA team\"}}, not {value!r}")
    _only(value, "author", where)
    kind = value.get("kind")
    if kind not in AUTHOR_KINDS:
        raise _Located(where, f"unknown author kind {kind!r}",
                       f"use one of {', '.join(AUTHOR_KINDS)} (a model author names its family in name).")
    author = _text(value, "name", where)
    if kind == "model" and not author:
        raise _Located(where, "a model author needs name = its model family or model id")
    return Author(kind, author or kind)


def _references(table: Mapping[str, Any]) -> tuple[tuple[ReferenceSource, ...], dict[str, str], str | None]:
    _only(table, "references", "references")
    source = table.get("source")
    if source is not None and source != "task":
        raise _Located("references", f"unknown source {source!r}",
                       'use source = "task" (each task\'s reference answer), and/or texts = {TASK_ID = "..."}.')
    texts = dict(_table(table.get("texts"), "references.texts"))
    bad = [k for k, v in texts.items() if not isinstance(v, str) or not v.strip()]
    if bad:
        raise _Located("references.texts", f"the reference for {bad[0]!r} must be a non-empty string")
    sources: list[ReferenceSource] = ["task"] if source == "task" else []
    if texts:
        sources.append("texts")
    if table and not sources:
        raise _Located("references", "names no source of reference answers",
                       'set source = "task", or give texts = {TASK_ID = "..."}.')
    return tuple(sources), texts, _text(table, "if_missing", "references")


# -- templates and verdicts -----------------------------------------------------------------------

def _templates(value: Any) -> tuple[Template, ...]:
    if not value:
        raise _Located("templates", "the spec has no [[templates]]",
                       "add a [[templates]] table per kind (pointwise, pairwise) with system, user and verdict.")
    if not isinstance(value, list):
        raise _Located("templates", "must be an array of tables: write [[templates]], not [templates]")
    out: list[Template] = []
    for i, item in enumerate(value, start=1):
        template = _template(item, f"templates[{i}]")
        if any(t.kind == template.kind and t.format == template.format for t in out):
            raise _Located(f"templates[{i}]", f"a second {template.kind} template in the format {template.format!r}",
                           "keep one template per kind and format.")
        out.append(template)
    return tuple(out)


def _template(item: Any, where: str) -> Template:
    table = _table(item, where)
    _only(table, "template", where)
    kind = table.get("kind")
    if kind not in REQUIRED_PLACEHOLDERS:
        raise _Located(where, f"unknown kind {kind!r}", 'use kind = "pointwise" or kind = "pairwise".')
    system = _text(table, "system", where) or ""
    user = _text(table, "user", where, required=True) or ""
    fields: set[str] = set()
    for part, text in (("system", system), ("user", user)):
        try:
            fields |= _Text.parse(text).fields
        except _Problem as exc:
            raise _Located(f"{where}.{part}", exc.problem, exc.fix) from None
    missing = [p for p in REQUIRED_PLACEHOLDERS[kind] if p not in fields]
    if missing:
        raise _Located(where, f"a {kind} template must show {{{missing[0]}}}",
                       f"put {{{missing[0]}}} in its system or user text.")
    wrong = [p for p in _OTHER_KIND[kind] if p in fields]
    if wrong:
        other = "pairwise" if kind == "pointwise" else "pointwise"
        raise _Located(where, f"{{{wrong[0]}}} belongs in a {other} template, not a {kind} one")
    return Template(kind, system, user, _verdict(table.get("verdict"), f"{where}.verdict", kind))


def _verdict(value: Any, where: str, kind: Kind) -> VerdictRule:
    table = _table(value, where)
    if not table:
        raise _Located(where, "is missing: every template needs a verdict table (format, regex, samples)")
    _only(table, "verdict", where)
    fmt = table.get("format")
    if fmt not in FORMATS:
        raise _Located(where, f"unknown format {fmt!r}", f"use one of {', '.join(FORMATS)}.")
    if FORMAT_SPECS[fmt].kind != kind:
        fits = ", ".join(f for f in FORMATS if FORMAT_SPECS[f].kind == kind)
        raise _Located(where, f"{fmt!r} is a {FORMAT_SPECS[fmt].kind} format; a {kind} template needs one of {fits}")
    regex = _text(table, "regex", where, required=True) or ""
    ignore_case = table.get("ignore_case", False)
    if not isinstance(ignore_case, bool):
        raise _Located(where, f"ignore_case must be true or false, not {ignore_case!r}")
    _check_regex(regex, where)
    rule = VerdictRule(fmt, regex, _mapping(table.get("mapping"), f"{where}.mapping", fmt), ignore_case)
    _check_samples(rule, table.get("samples"), where)
    return rule


def _check_regex(regex: str, where: str) -> None:
    try:
        groups = re.compile(regex).groups
    except re.error as exc:
        raise _Located(where, f"regex {regex!r} does not compile: {exc}") from None
    fix = "capture the verdict in one (...) group and make any other group non-capturing, (?:...)."
    if groups == 0:
        raise _Located(where, f"regex {regex!r} has no group around the verdict", fix)
    if groups > 1:
        raise _Located(where, f"regex {regex!r} has {groups} groups; it needs exactly one, around the verdict", fix)


def _mapping(value: Any, where: str, fmt: Format) -> tuple[tuple[str, float], ...]:
    table = _table(value, where)
    lo, hi = FORMAT_SPECS[fmt].range
    out: list[tuple[str, float]] = []
    for label, v in table.items():
        key = " ".join(str(label).split())
        whole = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v == int(v)
        if not key or not whole or not lo <= v <= hi:
            raise _Located(where, f"{label!r} = {v!r}: a mapping value must be a whole number from "
                           f"{lo:g} to {hi:g} (the {fmt} range)")
        out.append((key, float(v)))
    return tuple(out)


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 60 else f"…{flat[-57:]}"


def _check_samples(rule: VerdictRule, value: Any, where: str) -> None:
    if not value:
        raise _Located(where, "has no samples",
                       'add samples = [{reply = "... [[A]]", expect = "A"}]: each is checked when the spec loads.')
    if not isinstance(value, list):
        raise _Located(where, "samples must be an array of tables")
    fix = "fix the regex or the mapping (or the sample's expected value)."
    for i, item in enumerate(value, start=1):
        at = f"{where}.samples[{i}]"
        table = _table(item, at)
        _only(table, "sample", at)
        reply = _text(table, "reply", at, required=True) or ""
        got = rule.parse(reply)
        if table.get("expect_failure") is True:
            if got.value is not None:
                raise _Located(at, f"the sample reply ({_preview(reply)!r}) parses to {got.value:g}, but it "
                               "is marked expect_failure", fix)
            continue
        expected = _expected(rule, table.get("expect"), at)
        if got.value is None:
            raise _Located(at, f"the sample reply ({_preview(reply)!r}) does not parse: {got.error}", fix)
        if got.value != expected:
            raise _Located(at, f"the sample reply ({_preview(reply)!r}) parses to {got.value:g}, "
                           f"expected {expected:g}", fix)


def _expected(rule: VerdictRule, expect: Any, where: str) -> float:
    if expect is None or isinstance(expect, bool):
        raise _Located(where, "needs expect = <value or mapping label>, or expect_failure = true")
    if isinstance(expect, int | float):
        return float(expect)
    label = " ".join(str(expect).split())
    if rule.mapping:
        value = rule.value_of(label)
        if value is None:
            raise _Located(where, f"expect = {expect!r} is not a label of the mapping "
                           f"({', '.join(k for k, _ in rule.mapping)})")
        return value
    if re.fullmatch(r"[+-]?\d+", label):
        return float(label)
    raise _Located(where, f"expect = {expect!r} is neither a value nor a mapping label")
