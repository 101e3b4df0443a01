"""Plain records that move between the importers, the store and the app."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

import pandas as pd

from judgelab.labeler.scales import FormatSpec, ScaleError, format_range, format_spec, register_scale
from judgelab.labeler.transcripts import Transcript, TurnMode

AuthorKind = Literal["human", "model"]


@dataclass(frozen=True)
class Criterion:
    """One thing the rubric asks an answer to do."""

    criterion_id: str
    name: str
    description: str


@dataclass(frozen=True)
class Rubric:
    """A versioned rubric, shown verbatim to raters and to the judge.

    ``scale`` names the scale: a named one (``likert5``) or one the rubric declares, whose
    declaration ``declared_scale`` carries (:func:`judgelab.labeler.scales.declare_scale`); building the
    rubric registers it, so every consumer finds it by name. A declared scale needs a
    ``pass_threshold`` on its grid.
    """

    rubric_id: str
    version: int
    name: str
    scale: str
    pass_rule: str
    criteria: tuple[Criterion, ...]
    pass_threshold: float | None = None
    instructions: str = ""
    author_kind: AuthorKind = "human"
    author: str = "unknown"
    declared_scale: FormatSpec | None = None
    turn: TurnMode = "last"
    """Which turn of a conversation is rated: the last assistant turn, the whole, or the whole and each turn."""

    def __post_init__(self) -> None:
        """Register a declared scale and check the pass threshold is on it."""
        if self.declared_scale is not None:
            if self.declared_scale.name != self.scale:
                raise ScaleError(f"the rubric's scale {self.scale!r} is not its declared scale "
                                 f"{self.declared_scale.name!r}", column="scale.name",
                                 fix="name the declared scale as the rubric's scale.")
            register_scale(self.declared_scale)
            if self.pass_threshold is None:
                raise ScaleError("a declared scale needs a pass_threshold", column="pass_threshold",
                                 fix=f"add `pass_threshold = <a level of {self.declared_scale.grid_text()}>`.")
            if not self.declared_scale.on_grid(self.pass_threshold):
                raise ScaleError(f"pass_threshold {self.pass_threshold:g} is off the scale "
                                 f"{self.declared_scale.grid_text()}", column="pass_threshold",
                                 fix="pick one of the scale's levels.")

    @property
    def scale_spec(self) -> FormatSpec:
        """The rubric's scale: its declaration, or the named format's spec."""
        return self.declared_scale if self.declared_scale is not None else format_spec(self.scale)

    def content_hash(self) -> str:
        """Hash of everything a rater or judge sees, used to detect conflicting re-imports."""
        payload = asdict(self)
        # A named scale hashes as before the scale became data, so stored rubrics still match.
        if payload.pop("declared_scale") is not None and self.declared_scale is not None:
            payload["declared_scale"] = self.declared_scale.as_dict()
        # The default turn hashes as before conversations existed, so stored rubrics still match.
        if payload["turn"] == "last":
            del payload["turn"]
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def passes(self, overall: float) -> bool:
        """The pass verdict the rubric's threshold gives an overall score.

        The verdict depends on the overall score alone, so a judge (which gives only an
        overall score) and a rater are held to the same rule; a rubric that wants "no
        criterion fails" says so in words raters and judge both read.
        """
        if self.scale == "binary":
            return overall >= 1
        if self.declared_scale is not None and self.pass_threshold is not None:
            return overall >= self.pass_threshold - 1e-9
        threshold = self.pass_threshold if self.pass_threshold is not None else (
            4.0 if self.scale == "likert5" else 70.0
        )
        return overall >= threshold

    def scale_text(self) -> str:
        """How the overall score is given, in words."""
        if self.scale == "binary":
            return "Overall: accept (1) or reject (0)."
        if self.declared_scale is not None:
            return _declared_text(self.declared_scale)
        lo, hi = format_range(self.scale)
        return f"Overall: a whole number from {lo:g} (worst) to {hi:g} (best)."

    def as_text(self) -> str:
        """The rubric as the one text both raters and the judge read."""
        lines = [f"{self.name} (v{self.version})"]
        if self.instructions:
            lines += ["", self.instructions.strip()]
        lines += ["", "Criteria:"]
        for c in self.criteria:
            lines.append(f"- {c.name}: {c.description}")
        lines += ["", self.scale_text(), f"Pass rule: {self.pass_rule}"]
        return "\n".join(lines)


def _declared_text(spec: FormatSpec) -> str:
    """How a declared scale's overall score is given, in words (labels included)."""
    kind = "a whole number" if spec.whole else "a number"
    step = "" if spec.step == 1 else f" in steps of {spec.step:g}"
    text = f"Overall: {kind} from {spec.low:g} (worst) to {spec.high:g} (best){step}."
    if spec.labels:
        text += " Levels: " + "; ".join(f"{level:g} = {words}" for level, words in spec.labels) + "."
    return text


@dataclass(frozen=True)
class Task:
    """A prompt answers respond to (e.g. a customer ticket)."""

    task_id: str
    prompt: str
    category: str | None = None
    reference_answer: str | None = None
    reference_author_kind: AuthorKind | None = None
    reference_author: str | None = None


@dataclass(frozen=True)
class Answer:
    """A response to a task. Family, model and variant never reach a rater."""

    answer_id: str
    task_id: str
    family: str
    model: str
    text: str
    variant: str = "original"
    parent_answer_id: str | None = None
    self_id_spans: tuple[tuple[int, int, str], ...] = field(default=(), compare=False)
    transcript: Transcript | None = None
    """The conversation this answer is, when it is one; ``text`` is then its rendering."""

    @property
    def n_words(self) -> int:
        """Whitespace-separated words in the answer text."""
        return len(self.text.split())


@dataclass(frozen=True)
class Pair:
    """Two answers to one prompt in the judge-probe format."""

    pair_id: str
    prompt: str
    answer_a: str
    answer_b: str
    gold: str | None = None


Source = Literal["import", "simulated", "adjudicated"]
"""Where an imported human record came from: an outside file, :mod:`judgelab.labeler.simulate`, or an
admin's adjudication (labels only) exported from another database."""


@dataclass(frozen=True)
class ImportedLabel:
    """A human label collected elsewhere.

    Attributes:
        answer_id: The answer labelled.
        rater: The rater's name.
        overall: The overall score (``None`` for a flagged label, or a pass-only one).
        passed: The pass verdict.
        criteria: A score per criterion id.
        comment: The rater's comment.
        flag_reason: Why the rater flagged the item unrateable, when they did.
        seconds: Seconds the rater spent on it.
        created_at: When it was given (``None``: now).
        rubric: ``(rubric id, version)`` it was given under (``None``: the import's rubric).
        source: ``"simulated"`` for a simulated rater's label (``None``: the import's source).
        ref: Its id within the file, for ``supersedes`` to name.
        supersedes: The ``ref`` of the earlier label (same rater, answer, rubric) it replaces.
        n_raters: How many people ``overall`` is the mean of (``None``: one person's label).
        published: The score as the file wrote it when that was a rounded mean of ``n_raters``
            people (``1.667``; ``overall`` then holds the exact mean, 5/3), else ``None``.
        turns: Turn number -> score, for a conversation labelled under a rubric that rates each
            turn (empty: none).
    """

    answer_id: str
    rater: str
    overall: float | None
    passed: bool | None
    criteria: dict[str, float] = field(default_factory=dict)
    comment: str = ""
    flag_reason: str | None = None
    seconds: float | None = None
    created_at: datetime | None = None
    rubric: tuple[str, int] | None = None
    source: Source | None = None
    ref: int | None = None
    supersedes: int | None = None
    n_raters: int | None = None
    published: float | None = None
    turns: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ImportedPairLabel:
    """A human pairwise preference collected elsewhere (+2 left much better .. -2).

    ``comment`` to ``supersedes`` mean what they mean for :class:`ImportedLabel`.
    """

    rater: str
    shown_left: str
    shown_right: str
    preference: int
    comment: str = ""
    seconds: float | None = None
    created_at: datetime | None = None
    source: Source | None = None
    ref: int | None = None
    supersedes: int | None = None


@dataclass(frozen=True)
class ImportedAudit:
    """A padding audit collected elsewhere: does the rewrite add content to the original?

    ``seconds`` to ``supersedes`` mean what they mean for :class:`ImportedLabel`.
    """

    rater: str
    original_id: str
    rewrite_id: str
    adds_content: bool
    note: str = ""
    seconds: float | None = None
    created_at: datetime | None = None
    ref: int | None = None
    supersedes: int | None = None


@dataclass(frozen=True)
class ImportedJudgement:
    """A judge reply collected elsewhere, in the store's orientation.

    For a pairwise judgement ``answer_id`` is the answer shown FIRST (slot A) and ``value`` is
    slot-coded (+ favours the first-shown answer), as the probe runner writes them;
    ``order_shown`` is ``"AB"`` when the answer the verdict is about (the target) was shown
    first and ``"BA"`` when it was shown second. The importers turn a file's orientation (score
    from ``answer_id``'s point of view, ``order`` saying which was first) into this one.

    Attributes:
        answer_id: The answer scored (pairwise: shown first).
        judge_model: The judge model.
        value: The parsed score or verdict; ``None`` when the reply did not parse or the call failed.
        passed: The pass verdict of a pointwise score.
        format: The scoring format.
        answer_b_id: Pairwise: the answer shown second.
        order_shown: Pairwise: ``"AB"`` or ``"BA"`` (see above).
        judge_family: The judge's own model family.
        raw: The reply, verbatim.
        run_id: The run to file it under (``None``: ``import:<judge_model>``).
        call_id: The planned call within the run.
        probe: The probe.
        arm: The probe arm.
        trial: The trial.
        parse_error: Why the reply did not parse.
        error: Why the call failed with no reply.
        meta: Design facts (JSON-serialisable).
        input_tokens: Prompt tokens billed.
        output_tokens: Completion tokens billed.
        cost_usd: Money spent.
        latency_s: Seconds the call took.
        task_id: The task (or pair) judged (``None``: the answer's task, or its pair).
        row: The file row it came from, for messages (not part of its identity).
    """

    answer_id: str
    judge_model: str
    value: float | None
    passed: bool | None
    format: str
    answer_b_id: str | None = None
    order_shown: str | None = None
    judge_family: str | None = None
    raw: str | None = None
    run_id: str | None = None
    call_id: str | None = None
    probe: str | None = None
    arm: str | None = None
    trial: int | None = None
    parse_error: str | None = None
    error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    task_id: str | None = None
    row: int | None = field(default=None, compare=False)

    @property
    def shown(self) -> str:
        """What the judgement is of, in the file's words: ``pair 'P1', answer b shown first``."""
        pair = self.task_id
        if pair is not None and self.answer_id in (f"{pair}:a", f"{pair}:b"):
            return f"pair {pair!r}, answer {self.answer_id[-1]} shown first"
        if self.answer_b_id is not None:
            return f"answer {self.answer_id!r} shown first against {self.answer_b_id!r}"
        return f"answer {self.answer_id!r}"

    @property
    def default_run(self) -> str:
        """The run an import files this judgement under."""
        return self.run_id or f"import:{self.judge_model}"


def pair_of(answer_id: str, pairs: Collection[str]) -> str | None:
    """The pair a probe answer id such as ``P1:a`` or ``P1:b~padded`` was built from, among ``pairs``.

    The judge probes and ``judgelab import verdicts`` name a pair's answers ``<pair_id>:a`` and
    ``<pair_id>:b`` (variants ``<pair_id>:a~<variant>``).

    >>> pair_of("P1:b~padded", {"P1"}), pair_of("P1:c", {"P1"}), pair_of("x:a:b", {"x:a"})
    ('P1', None, 'x:a')
    """
    for side in (":a", ":b"):
        start = answer_id.find(side)
        while start > 0:
            rest = answer_id[start + 2:]
            if (not rest or rest.startswith("~")) and answer_id[:start] in pairs:
                return answer_id[:start]
            start = answer_id.find(side, start + 1)
    return None


@dataclass(frozen=True)
class ImportedDesigns:
    """Sample designs read from a ``designs`` file (``judgelab export designs``), one frame per table.

    Attributes:
        designs: ``design_id``, ``params``, ``summary`` (JSON text), ``created_at``,
            ``applied_at`` (ISO text or ``None``).
        items: ``design_id``, ``answer_id``, ``stratum``, ``inclusion_prob``, ``weight``,
            ``n_raters``, and ``where`` (the item's place in the file, for errors).
        active: ``design_id``, ``params`` (JSON text), ``created_at``.
        batches: ``design_id``, ``batch``, ``draw_id``, ``weight``, ``expected_labels``,
            ``summary`` (JSON text), ``created_at``, ``where``.
        draws: ``design_id``, ``batch``, ``answer_id``, ``unit``, ``inclusion_prob``, ``known``,
            ``drawn``, ``pred_pass``, ``pred_score``, ``judge_pass``, ``judge_score``, ``flipped``,
            ``where``.
    """

    designs: pd.DataFrame
    items: pd.DataFrame
    active: pd.DataFrame
    batches: pd.DataFrame
    draws: pd.DataFrame
