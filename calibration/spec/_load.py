"""Loading a judge spec file: every key checked, one clear error each."""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from judgelab.calibration.spec._scale import asked_scales, scale_words
from judgelab.calibration.spec._spec import AUTHOR_KINDS, Author, JudgeSpec, ReferenceSource
from judgelab.calibration.spec._template import _OTHER_KIND, REQUIRED_PLACEHOLDERS, Template, _Problem, _Text
from judgelab.calibration.spec._verdict import VerdictRule
from judgelab.labeler.errors import InputError
from judgelab.labeler.scales import FORMATS, Format, Kind, ScaleError, format_spec, register_scale, scale_from_dict

PROVIDERS = ("anthropic", "openai")
"""The APIs a judge spec's ``[judge] provider`` may name."""

_KEYS: dict[str, tuple[str, ...]] = {
    "": ("judge", "rubric", "examples", "references", "templates"),
    "judge": ("name", "model", "family", "temperature", "max_tokens", "provider", "base_url"),
    "rubric": ("author",),
    "examples": ("items", "separator", "author"),
    "references": ("source", "texts", "if_missing", "author"),
    "template": ("kind", "system", "user", "verdict"),
    "verdict": ("format", "regex", "mapping", "ignore_case", "scale", "samples"),
    "sample": ("reply", "expect", "expect_failure"),
    "author": ("kind", "name"),
}


class _Located(Exception):
    """A spec problem with the key it is at."""

    def __init__(self, where: str, problem: str, fix: str) -> None:
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
                         fix="pass a TOML file such as the example that `judgelab examples DIR` writes "
                             "(DIR/judge_spec.toml).")
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
    references = _table(doc.get("references"), "references")
    sources, texts, if_missing = _references(references)
    spec = JudgeSpec(
        name=_text(judge, "name", "judge") or name,
        sha256=sha256,
        templates=_templates(doc.get("templates")),
        file=file,
        model=_text(judge, "model", "judge"),
        family=_text(judge, "family", "judge"),
        temperature=_number(judge, "temperature", "judge", 0.0, 1.0),
        max_tokens=_whole(judge, "max_tokens", "judge"),
        provider=_provider(judge),
        base_url=_text(judge, "base_url", "judge"),
        rubric_author=_author(rubric.get("author"), "rubric.author"),
        examples=items,
        examples_separator=_text(examples, "separator", "examples") or "\n\n",
        examples_author=_author(examples.get("author"), "examples.author"),
        reference_sources=sources,
        reference_texts=texts,
        reference_if_missing=if_missing,
        references_author=_author(references.get("author"), "references.author"),
    )
    _cross_check(spec, bool(references))
    return spec


def _cross_check(spec: JudgeSpec, has_references: bool) -> None:
    """Artifacts and placeholders must agree: nothing declared and unshown, nothing shown and missing."""
    if spec.uses("examples") and not spec.examples:
        raise _Located("examples", "the templates show {examples} but [examples] has no items",
                       'add items = ["...", "..."] under [examples].')
    if spec.examples and not spec.uses("examples"):
        raise _Located("examples", f"{len(spec.examples)} example(s) are declared but no template shows {{examples}}",
                       "put {examples} in a template, or remove [examples].")
    examples = spec.examples_separator.join(spec.examples)
    for i, t in enumerate(spec.templates, start=1):
        asked = t.verdict.asked
        if asked is None or "examples" not in t.placeholders:
            continue
        for lo, hi, words in asked_scales(examples):
            if (lo, hi) != asked:
                raise _Located(f"templates[{i}]", f"it asks for {scale_words(asked)} but the {{examples}} it shows "
                               f"name {lo} to {hi} ({words!r})",
                               "make the examples rate on the template's scale.")
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
        raise _Located(where, f"must be a table, not {type(value).__name__} {value!r}",
                       "see the example judge_spec.toml (`judgelab examples DIR`) for the layout.")
    return value


def _text(table: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str | None:
    value = table.get(key)
    if value is None:
        if required:
            raise _Located(where, f"{key} is missing", f"add {key} = \"...\".")
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise _Located(where, f"{key} must be a non-empty string, not {value!r}",
                       "quote it; use '''...''' for text over several lines.")
    return value


def _provider(judge: Mapping[str, Any]) -> str | None:
    """``[judge] provider``: the API the judge speaks (``anthropic`` or ``openai``), if named."""
    value = _text(judge, "provider", "judge")
    if value is not None and value not in PROVIDERS:
        raise _Located("judge", f"provider must be one of {', '.join(PROVIDERS)}, not {value!r}",
                       'write provider = "openai" for any OpenAI-compatible endpoint (OpenAI, Azure, '
                       'vLLM, Ollama, Gemini), or leave it out for Claude.')
    return value


def _texts(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _Located(where, "must be a list of non-empty strings", 'write items = ["...", "..."].')
    return tuple(value)


def _number(table: Mapping[str, Any], key: str, where: str, lo: float, hi: float) -> float | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise _Located(where, f"{key} must be a number from {lo:g} to {hi:g}, not {value!r}",
                       f"write {key} = {lo:g}, say, or leave it out.")
    return float(value)


def _whole(table: Mapping[str, Any], key: str, where: str) -> int | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _Located(where, f"{key} must be a whole number of at least 1, not {value!r}",
                       f"write {key} = 1024, say, or leave it out.")
    return value


def _author(value: Any, where: str) -> Author | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise _Located(where, f"must be a table, not {value!r}", 'write author = {kind = "human", name = "QA team"}.')
    _only(value, "author", where)
    kind = value.get("kind")
    if kind not in AUTHOR_KINDS:
        raise _Located(where, f"unknown author kind {kind!r}",
                       f"use one of {', '.join(AUTHOR_KINDS)} (a model author names its family in name).")
    author = _text(value, "name", where)
    if kind == "model" and not author:
        raise _Located(where, "a model author needs a name",
                       'write {kind = "model", name = "<its family or model id>"}.')
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
        raise _Located("references.texts", f"the reference for {bad[0]!r} must be a non-empty string",
                       'write texts = {TASK_ID = "the reference answer"}.')
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
        raise _Located("templates", "must be an array of tables", "write [[templates]], not [templates].")
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
    wrong = [p for p in _OTHER_KIND[kind] if p in fields]
    if wrong:
        other = "pairwise" if kind == "pointwise" else "pointwise"
        shown = ", ".join("{" + p + "}" for p in REQUIRED_PLACEHOLDERS[kind][1:])
        raise _Located(where, f"{{{wrong[0]}}} belongs in a {other} template, not a {kind} one",
                       f"replace {{{wrong[0]}}} with {shown}: a {kind} template shows those.")
    # A conversation template shows the answer as {conversation}.
    missing = [p for p in REQUIRED_PLACEHOLDERS[kind]
               if p not in fields and not (p == "answer" and "conversation" in fields)]
    if missing:
        raise _Located(where, f"a {kind} template must show {{{missing[0]}}}",
                       f"put {{{missing[0]}}} in its system or user text.")
    template = Template(kind, system, user, _verdict(table.get("verdict"), f"{where}.verdict", kind))
    _check_asked_scale(template, where)
    return template


def _check_asked_scale(template: Template, where: str) -> None:
    """The scale the template's own words ask for must be the one its verdict rule reads."""
    asked = template.verdict.asked
    if asked is None:
        return
    for lo, hi, words in asked_scales(template.system + "\n" + template.user):
        if (lo, hi) != asked:
            raise _Located(
                where,
                f"its text asks for a score from {lo} to {hi} ({words!r}) but its verdict reads "
                f"{scale_words(asked)} ({_asked_because(template.verdict)})",
                _scale_fix(template.verdict, (lo, hi)),
            )


def _asked_because(rule: VerdictRule) -> str:
    if rule.scale is not None:
        return "its declared scale"
    if rule.mapping:
        return "the labels of its mapping"
    return f"the {rule.format} range, with no mapping"


def _scale_fix(rule: VerdictRule, scale: tuple[int, int]) -> str:
    lo, hi = scale
    f_lo, f_hi = (int(x) for x in format_spec(rule.format).range)
    if rule.mapping or (lo, hi) == (f_lo, f_hi):
        return f"make the template's words and its verdict agree (declare scale = [{lo}, {hi}] and map each score)."
    return (f"declare scale = [{lo}, {hi}] and map each score to a {rule.format} value (mapping = "
            f'{{"{lo}" = {f_lo}, ..., "{hi}" = {f_hi}}}), or ask for {f_lo}-{f_hi} in the text.')


def _verdict(value: Any, where: str, kind: Kind) -> VerdictRule:
    table = _table(value, where)
    if not table:
        raise _Located(where, "is missing", "add [templates.verdict] with format, regex and samples.")
    _only(table, "verdict", where)
    fmt = table.get("format")
    declared = _declared_scale(table, where, kind)
    if declared is not None:
        # A declared scale's name is a format like the catalogue's (judgelab.labeler.scales.format_spec reads it).
        fmt = cast(Format, declared)
    elif fmt not in FORMATS:
        raise _Located(where, f"unknown format {fmt!r}", f"use one of {', '.join(FORMATS)}.")
    if format_spec(fmt).kind != kind:
        fits = ", ".join(f for f in FORMATS if format_spec(f).kind == kind)
        raise _Located(where, f"{fmt!r} is a {format_spec(fmt).kind} format, not a {kind} one",
                       f"a {kind} template takes one of {fits}.")
    regex = _text(table, "regex", where, required=True) or ""
    ignore_case = table.get("ignore_case", False)
    if not isinstance(ignore_case, bool):
        raise _Located(where, f"ignore_case must be true or false, not {ignore_case!r}", "write ignore_case = true.")
    _check_regex(regex, where)
    mapping = _mapping(table.get("mapping"), f"{where}.mapping", fmt, ignore_case)
    scale = None if declared is not None else _scale(table.get("scale"), where, fmt, bool(mapping))
    rule = VerdictRule(fmt, regex, mapping, ignore_case, scale)
    _check_samples(rule, table.get("samples"), where)
    return rule


def _declared_scale(table: Mapping[str, Any], where: str, kind: Kind) -> str | None:
    """The name of the scale ``[templates.verdict.scale]`` declares (MT-Bench's 1-10), or ``None``.

    A table ``scale = { name = "mt10", low = 1, high = 10, step = 1 }`` is the scale the judge is
    asked for, and the format its judgements carry; ``format``, if given, must name it. A scale
    ``[lo, hi]`` (two numbers) keeps its old meaning: read onto ``format`` through a mapping.
    """
    value = table.get("scale")
    if not isinstance(value, Mapping):
        return None
    if kind != "pointwise":
        raise _Located(f"{where}.scale", "a declared scale is for a pointwise template",
                       "declare the scale on the pointwise template, or remove it.")
    try:
        spec = register_scale(scale_from_dict(value))
    except ScaleError as exc:
        raise _Located(f"{where}.{exc.column}", str(exc), exc.fix) from None
    fmt = table.get("format")
    if fmt is not None and fmt != spec.name:
        raise _Located(f"{where}.format", f"format {fmt!r} is not the declared scale {spec.name!r}",
                       f"write format = \"{spec.name}\" or leave format out: the declared scale is the format.")
    return spec.name


def _check_regex(regex: str, where: str) -> None:
    try:
        groups = re.compile(regex).groups
    except re.error as exc:
        raise _Located(where, f"regex '{regex}' does not compile: {exc}",
                       "check the escapes (single-quoted TOML strings keep backslashes as written).") from None
    fix = "capture the verdict in one (...) group and make any other group non-capturing, (?:...)."
    if groups == 0:
        raise _Located(where, f"regex '{regex}' has no group around the verdict", fix)
    if groups > 1:
        raise _Located(where, f"regex '{regex}' has {groups} groups; it needs exactly one, around the verdict", fix)


def _scale(value: Any, where: str, fmt: Format, mapped: bool) -> tuple[int, int] | None:
    """The declared ``scale = [lo, hi]``: whole numbers; read as is only if it shares the format's top."""
    if value is None:
        return None
    ok = (isinstance(value, list) and len(value) == 2
          and all(isinstance(v, int) and not isinstance(v, bool) for v in value) and value[0] < value[1])
    if not ok:
        raise _Located(where, f"scale must be two whole numbers, lowest first, not {value!r}",
                       "write scale = [1, 10], say: the scale the template asks the judge for.")
    lo, hi = int(value[0]), int(value[1])
    f_lo, f_hi = (int(x) for x in format_spec(fmt).range)
    if not mapped and not (f_lo <= lo and hi == f_hi):
        raise _Located(
            where,
            f"the template asks for {lo}-{hi} but {fmt} without a mapping stores the number as it is "
            f"({f_lo}-{f_hi}): a {(lo + hi) // 2} would be read as {(lo + hi) // 2} on {f_lo}-{f_hi}",
            f'map each score to a {fmt} value (mapping = {{"{lo}" = {f_lo}, ..., "{hi}" = {f_hi}}}).',
        )
    return lo, hi


def _mapping(value: Any, where: str, fmt: Format, ignore_case: bool = False) -> tuple[tuple[str, float], ...]:
    table = _table(value, where)
    lo, hi = format_spec(fmt).range
    out: list[tuple[str, float]] = []
    seen: dict[str, str] = {}
    for label, v in table.items():
        key = " ".join(str(label).split())
        same = key.casefold() if ignore_case else key
        if same in seen:
            how = "after spacing is cleaned up" + (" and case ignored" if ignore_case else "")
            raise _Located(where, f"the labels {seen[same]!r} and {str(label)!r} are the same {how} "
                           f"({key!r}): a reply {key!r} could mean either",
                           "keep one of them, or make the labels differ in more than spacing.")
        seen[same] = str(label)
        whole = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v == int(v)
        if not key or not whole or not lo <= v <= hi:
            raise _Located(where, f"{label!r} = {v!r} is not a whole number from {lo:g} to {hi:g} (the {fmt} range)",
                           f"map each label to a {fmt} value.")
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
        raise _Located(where, "samples must be an array of tables", 'write samples = [{reply = "...", expect = ...}].')
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
        raise _Located(where, "says neither what it parses to nor that it fails",
                       "add expect = <value or mapping label>, or expect_failure = true.")
    if isinstance(expect, int | float):
        return float(expect)
    label = " ".join(str(expect).split())
    if rule.mapping:
        value = rule.value_of(label)
        if value is None:
            raise _Located(where, f"expect = {expect!r} is not a label of the mapping",
                           f"use one of {', '.join(k for k, _ in rule.mapping)}, or the value.")
        return value
    if re.fullmatch(r"[+-]?\d+", label):
        return float(label)
    raise _Located(where, f"expect = {expect!r} is neither a value nor a mapping label",
                   "write the value, e.g. expect = 4.")
