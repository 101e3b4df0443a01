"""The judge spec: what it asks, how it reads replies, and who wrote what is in its prompt."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, TypeVar

from judgelab.calibration.formats import ParseResult, ReadCall
from judgelab.calibration.spec._scale import asked_scales, scale_words
from judgelab.calibration.spec._template import REQUIRED_PLACEHOLDERS, RUBRIC_PARTS, Template
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Rubric
from judgelab.labeler.scales import Format, Kind, format_spec
from judgelab.labeler.transcripts import last_turn

AuthorKind = Literal["human", "model", "unknown"]
"""Who wrote an artifact of the judge prompt: a human, a model (family), or nobody knows."""

AUTHOR_KINDS: tuple[AuthorKind, ...] = ("human", "model", "unknown")


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
        """``(artifact, author_kind, author)``, as :func:`judgelab.calibration.stats.provenance_note` reads it."""
        return (artifact, self.kind, self.name)


UNDECLARED = Author("unknown", "undeclared")
"""The author of an artifact the spec does not declare one for."""


# --------------------------------------------------------------------------------------------
# The spec
# --------------------------------------------------------------------------------------------

ReferenceSource = Literal["task", "texts"]


@dataclass(frozen=True)
class JudgeSpec:
    """A team's judge, loaded from a spec file (:func:`load_spec`).

    It is what :func:`judgelab.calibration.formats.build_call` and :func:`judgelab.calibration.formats.parse` ask
    when a judge carries one (:class:`~judgelab.calibration.formats.PromptSpec`).

    Attributes:
        name: The spec's name.
        sha256: Hash of the spec file's bytes (named in report cards and run records).
        file: The spec file, if it came from one.
        templates: One per (kind, format).
        model: The judge model, if the spec names one.
        family: The judge's own model family.
        temperature: Sampling temperature.
        max_tokens: Reply budget.
        provider: The API the judge speaks: ``"anthropic"``, ``"openai"`` (any
            OpenAI-compatible endpoint), or ``None`` (the command's ``--judge`` decides).
        base_url: The endpoint, for an OpenAI-compatible judge (``--base-url`` overrides it).
        rubric_author: Who wrote the rubric and instructions the judge sees.
        examples: Few-shot examples, verbatim.
        examples_separator: What joins the examples in ``{examples}``.
        examples_author: Who wrote the examples.
        reference_sources: Where references come from: ``task`` and/or ``texts``.
        reference_texts: Task id -> reference answer written in the spec.
        reference_if_missing: Text for ``{reference}`` when a task has none (``None``: refuse).
        references_author: Who wrote the references.
        references_by_task: Task (or pair) id -> reference answer, bound for a run
            (:func:`bind_references`).
        references_by_prompt: Task prompt -> reference answer, for a call made without its
            task id; a prompt two tasks share with different references is left out.
        ambiguous_prompts: Prompt -> the task ids sharing it with different references.
    """

    name: str
    sha256: str
    templates: tuple[Template, ...]
    file: str | None = None
    model: str | None = None
    family: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    provider: str | None = None
    base_url: str | None = None
    rubric_author: Author | None = None
    examples: tuple[str, ...] = ()
    examples_separator: str = "\n\n"
    examples_author: Author | None = None
    reference_sources: tuple[ReferenceSource, ...] = ()
    reference_texts: Mapping[str, str] = field(default_factory=dict)
    reference_if_missing: str | None = None
    references_author: Author | None = None
    references_by_task: Mapping[str, str] = field(default_factory=dict, repr=False)
    references_by_prompt: Mapping[str, str] = field(default_factory=dict, repr=False)
    ambiguous_prompts: Mapping[str, tuple[str, ...]] = field(default_factory=dict, repr=False)

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

    def with_references(
        self,
        by_prompt: Mapping[str, str],
        *,
        by_task: Mapping[str, str] | None = None,
        ambiguous: Mapping[str, tuple[str, ...]] | None = None,
    ) -> JudgeSpec:
        """The spec with each task's reference answer bound (see :func:`bind_references`)."""
        return replace(self, references_by_prompt=dict(by_prompt), references_by_task=dict(by_task or {}),
                       ambiguous_prompts=dict(ambiguous or {}))

    # -- the PromptSpec protocol

    def render(
        self, kind: Kind, fmt: Format, rubric: Rubric, prompt: str, answers: Sequence[str],
        *, task_id: str | None = None,
    ) -> tuple[str, str]:
        """``(system, user)`` of one call, filled from the template for ``kind`` and ``fmt``.

        Args:
            kind: ``pointwise`` or ``pairwise``.
            fmt: The format.
            rubric: The rubric; ``{rubric}`` is its whole text, ``{instructions}``,
                ``{criteria}`` and ``{levels}`` its parts.
            prompt: The task.
            answers: The answer, or answers A and B in the order shown.
            task_id: The task (or pair) judged: its reference answer is looked up by it.

        Raises:
            InputError: If there is no such template; if the rubric text it shows names a scale
                other than the one the template asks for; or if it shows ``{reference}`` and the
                task has no reference answer (and no ``if_missing`` text is set).
        """
        template = self.template(kind, fmt)
        names = template.placeholders
        _check_rubric_scale(self, template, rubric)
        values = {**rubric_parts(rubric), "prompt": prompt,
                  "examples": self.examples_separator.join(self.examples)}
        if kind == "pointwise":
            values["answer"] = values["conversation"] = answers[0]
            # The rubric says which turn is rated; rating the whole (or each turn: the item's own
            # call), {turn} is the whole. A turn's own call (judgelab.calibration.scoring) rates "last" of
            # the conversation up to that turn.
            values["turn"] = last_turn(answers[0]) if rubric.turn == "last" else answers[0]
        else:
            values["answer_a"], values["answer_b"] = answers[0], answers[1]
        if "reference" in names:
            values["reference"] = self._reference(prompt, task_id)
        return template.fill(values)

    def _reference(self, prompt: str, task_id: str | None) -> str:
        found = self.references_by_task.get(task_id) if task_id is not None else None
        if found is None and task_id is None:
            shared = self.ambiguous_prompts.get(prompt)
            if shared:
                raise InputError(
                    f"judge spec {self.name!r} shows {{reference}}, and the tasks {', '.join(shared)} share "
                    f"one prompt with different reference answers, but this call does not say which task it is",
                    file=self.file,
                    fix="run it through a probe or `judgelab score`, which pass each call's task id.",
                )
            found = self.references_by_prompt.get(prompt)
        if found is not None:
            return found
        if self.reference_if_missing is not None:
            return self.reference_if_missing
        shown = " ".join(prompt.split())
        which = f"the task {task_id!r} ({shown[:60] + ('…' if len(shown) > 60 else '')!r})" if task_id else (
            f"the task {shown[:60] + ('…' if len(shown) > 60 else '')!r}")
        raise InputError(
            f"judge spec {self.name!r} shows {{reference}}, but {which} has no reference answer",
            file=self.file,
            fix="give the task a reference answer (the answers file's reference_answer column, or "
            "[references] texts in the spec), or set [references] if_missing.",
        )

    def request_params(self, kind: Kind, fmt: Format) -> dict[str, Any]:
        """The verdict rule's fingerprint: joins each call's params and cache key."""
        return {"verdict_rule": self.template(kind, fmt).verdict.fingerprint}

    def parse(self, fmt: Format, reply: str) -> ParseResult:
        """Read a reply by the verdict rule of the template for ``fmt``."""
        return self.template(format_spec(fmt).kind, fmt).verdict.parse(reply)

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
        return self.template(format_spec(fmt).kind, fmt).verdict.render(value)

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
    """The spec with the reference answer of each task bound to its id.

    References are keyed by task: two tasks with the same prompt keep their own references
    (each call carries its task id, :meth:`JudgeSpec.render`). A call without a task id falls
    back to the prompt, unless tasks sharing it have different references (then it is refused).

    Args:
        spec: The spec.
        tasks: ``(task id, prompt, the task's own reference answer or None)`` of every task the
            run may judge (the project's tasks, the dataset's pairs).

    Returns:
        ``spec`` unchanged when no template shows ``{reference}``; otherwise a copy whose
        ``references_by_task`` holds, per task id, the spec's ``texts`` entry for the task or,
        with ``source = "task"``, the task's own reference (the spec's text wins).
    """
    if not spec.uses("reference"):
        return spec
    by_task: dict[str, str] = {}
    by_prompt: dict[str, dict[str, list[str]]] = {}
    for task_id, prompt, own in tasks:
        text = spec.reference_texts.get(task_id)
        if text is None and "task" in spec.reference_sources and own:
            text = own
        if text is not None and task_id not in by_task:
            by_task[task_id] = text
            by_prompt.setdefault(prompt, {}).setdefault(text, []).append(task_id)
    single = {p: next(iter(refs)) for p, refs in by_prompt.items() if len(refs) == 1}
    ambiguous = {p: tuple(t for ids in refs.values() for t in ids) for p, refs in by_prompt.items() if len(refs) > 1}
    return spec.with_references(single, by_task=by_task, ambiguous=ambiguous)


def rubric_parts(rubric: Rubric) -> dict[str, str]:
    """The rubric placeholders' values: the whole text and its parts.

    ``instructions`` (the rubric's own), ``criteria`` (one ``- name: description`` line
    each) and ``levels`` (the scale in words and the pass rule).
    """
    return {
        "rubric": rubric.as_text(),
        "instructions": rubric.instructions.strip(),
        "criteria": "\n".join(f"- {c.name}: {c.description}" for c in rubric.criteria),
        "levels": f"{rubric.scale_text()}\nPass rule: {rubric.pass_rule}",
    }


@lru_cache(maxsize=128)
def _rubric_conflict(template: Template, rubric: Rubric) -> tuple[str, int, int, str] | None:
    asked = template.verdict.asked
    if asked is None:
        return None
    parts = rubric_parts(rubric)
    for name in RUBRIC_PARTS:
        if name not in template.placeholders:
            continue
        for lo, hi, words in asked_scales(parts[name]):
            if (lo, hi) != asked:
                return name, lo, hi, words
    return None


def _check_rubric_scale(spec: JudgeSpec, template: Template, rubric: Rubric) -> None:
    """Refuse a template whose rubric text tells the judge another scale than the template asks."""
    found = _rubric_conflict(template, rubric)
    if found is None:
        return
    name, lo, hi, words = found
    asked = template.verdict.asked
    assert asked is not None  # a conflict needs an asked scale
    if name in ("rubric", "levels"):
        fix = (f"show {{criteria}} (and {{instructions}}, when they name no scale) instead of {{{name}}}, and write "
               "the template's own scale in its text; or make the template ask for the rubric's scale.")
    else:
        fix = ("leave {instructions} out or reword the rubric's instructions, or make the template ask for the "
               "rubric's scale.")
    raise InputError(
        f"judge spec {spec.name!r}: the {template.kind} {template.format} template asks for "
        f"{scale_words(asked)}, but the {{{name}}} it shows tells the judge {lo} to {hi} ({words!r}, rubric "
        f"{rubric.rubric_id} v{rubric.version})",
        file=spec.file,
        fix=fix,
    )


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
