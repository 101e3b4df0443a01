"""Score the pool: every answer of a chosen set judged once per format, as one judge run.

Probes draw a few answers to measure one bias at a time; calibration needs the judge's score of
every answer the humans label. :func:`score_answers` (``judgelab score``) judges every answer
of a chosen set (the whole pool, the answers of a stored sample design, or the answers that
have human labels) once in each pointwise format, with the judge the caller gives: the
built-in prompt, or a team's judge spec (:mod:`judgelab.calibration.spec`), whose pointwise formats are
then the default. The calls go through :func:`judgelab.calibration.runner.arun_plan`, so identical
requests are answered from the cache, an interrupted run continues where it stopped, and
``batch=True`` uses Message Batches. The run is what ``judgelab calibrate`` reads; with a spec,
the run records the spec and its declared authors (the provenance audit reads them).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from judgelab.calibration.calibrate import SCORE_TURN_PROBE
from judgelab.calibration.datasets import PoolAnswer
from judgelab.calibration.judges import Judge
from judgelab.calibration.probes import judge_endpoint, judge_kind_of, judge_spec, reference_tasks
from judgelab.calibration.runner import PlannedCall, RunSummary, arun_plan
from judgelab.calibration.spec import with_references
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Rubric
from judgelab.labeler.scales import POINTWISE_FORMATS, Format, is_pointwise
from judgelab.labeler.store import JudgeRole
from judgelab.labeler.transcripts import Transcript, render

__all__ = [
    "SCORE_PROBE",
    "TURN_INSTRUCTION",
    "ScoreRunResult",
    "ascore_answers",
    "choose_answers",
    "plan_scores",
    "plan_turns",
    "score_answers",
    "score_formats",
]

SCORE_PROBE = "score"
"""The ``probe`` a scoring run's judgements are recorded under (``arm`` is the format)."""


TURN_INSTRUCTION = (
    "This call rates one assistant turn: the last assistant turn of the conversation shown. What comes "
    "before it is its context; score that turn alone against the rubric."
)
"""Added to the rubric's instructions in a turn's own call (rubric ``turn = "each"``).

The built-in prompt shows the conversation up to the turn and nothing says which part is rated;
this says it, in the rubric text every prompt shows. It also keeps the last turn's call apart
from the conversation's own call, whose request would otherwise be the same (and be answered
from the cache with the whole conversation's score).
"""


def choose_answers(
    store: JudgeRole, *, design: str | None = None, labelled: bool = False
) -> tuple[list[PoolAnswer], str]:
    """The answers to score and a phrase naming the set.

    Args:
        store: The project database.
        design: Score the answers of this stored sample design.
        labelled: Score the answers with at least one current human label.

    Returns:
        The answers (every stored answer, variants included, when neither option is given),
        ordered by task and answer id, and e.g. ``"design d-1 (60 answers)"``.

    Raises:
        InputError: Both options, an unknown design, or an empty set.
    """
    if design is not None and labelled:
        raise InputError("choose one answer set", fix="pass --design ID, --labelled or --all, not several.")
    frame = store.answers()
    what = f"all {len(frame)} answers"
    if design is not None:
        store.design_record(design)  # refuses an unknown design, naming it
        ids = set(store.design_items(design)["answer_id"])
        frame, what = frame[frame["answer_id"].isin(ids)], f"design {design}"
    elif labelled:
        ids = set(store.human_labels()["answer_id"])
        frame, what = frame[frame["answer_id"].isin(ids)], "labelled answers"
    if frame.empty:
        raise InputError(
            f"no answers to score ({what})",
            fix="import answers first (`judgelab import answers FILE`), or choose another set.",
        )
    if design is not None or labelled:
        what += f" ({len(frame)} answers)"
    tasks = store.tasks()
    prompts = dict(zip(tasks["task_id"], tasks["prompt"], strict=True))
    answers = [
        PoolAnswer(str(r.answer_id), str(r.task_id), str(prompts[r.task_id]), str(r.text),
                   str(r.family), str(r.model), from_store=True,
                   transcript=None if pd.isna(r.transcript) else str(r.transcript))
        for r in frame.itertuples(index=False)
    ]
    return answers, what


def score_formats(judge: Judge, rubric: Rubric, formats: str | Sequence[str] | None = None) -> tuple[Format, ...]:
    """The pointwise formats to score in.

    Args:
        judge: The judge (its spec, if any, decides the default).
        rubric: The project's rubric.
        formats: Comma-separated or a list; default: the judge spec's pointwise formats, else
            the rubric's own scale.

    Raises:
        InputError: An unknown or comparative format, or a format the judge spec has no
            template for.
    """
    spec = judge_spec(judge)
    if spec is not None:
        spec.require("pointwise", "scoring judges one answer at a time")
    if formats is None:
        names: Sequence[str] = spec.formats("pointwise") if spec is not None else (rubric.scale,)
    else:
        names = [n.strip() for n in (formats.split(",") if isinstance(formats, str) else formats) if n.strip()]
    if not names:
        raise InputError("--formats is empty", fix=f"pick from {', '.join(POINTWISE_FORMATS)}.")
    chosen: list[Format] = []
    for name in dict.fromkeys(names):
        fmt = next((f for f in POINTWISE_FORMATS if f == name), None)
        if fmt is None and is_pointwise(name):
            fmt = name  # type: ignore[assignment]  # a declared scale (a rubric's or a judge spec's)
        if fmt is None:
            raise InputError(f"--formats: {name!r} is not a pointwise format",
                             fix=f"pick from {', '.join(POINTWISE_FORMATS)}.")
        if spec is not None:
            spec.template("pointwise", fmt)  # refuses a format the spec cannot ask, naming its own
        chosen.append(fmt)
    return tuple(chosen)


def plan_scores(answers: Sequence[PoolAnswer], formats: Sequence[Format], rubric: Rubric) -> list[PlannedCall]:
    """One pointwise call per answer and format (call ids ``score/<answer id>/<format>``).

    Under a rubric with ``turn = "each"`` a conversation also gets one call per assistant turn and
    format (:func:`plan_turns`); the answer's own call rates the whole conversation.
    """
    calls = [
        PlannedCall(
            call_id=f"{SCORE_PROBE}/{a.answer_id}/{fmt}",
            kind="pointwise",
            format=fmt,
            prompt=a.prompt,
            answer=a.text,
            probe=SCORE_PROBE,
            arm=fmt,
            trial=trial,
            task_id=a.task_id,
            answer_id=a.answer_id,
            meta={"family": a.family},
            rubric=rubric,
        )
        for trial, a in enumerate(answers)
        for fmt in formats
    ]
    return calls + plan_turns(answers, formats, rubric) if rubric.turn == "each" else calls


def plan_turns(answers: Sequence[PoolAnswer], formats: Sequence[Format], rubric: Rubric) -> list[PlannedCall]:
    """One pointwise call per assistant turn of each conversation and format (rubric ``turn = "each"``).

    One judgement per turn rather than one call returning a list of scores: each reply is read by
    the same verdict rule as any other, so a reply that does not parse is one turn's parse
    failure (counted, never a score) and cannot shift the scores of the other turns. The call
    shows the conversation up to and including its turn (``{conversation}``; nothing said later
    can sway the turn's score) and that turn as ``{turn}`` (the call's rubric rates the ``last``
    turn of what it shows). Call ids ``score-turn/<answer id>/<format>/<turn>``; ``meta`` holds
    ``turn`` and ``n_turns``. An answer that is one text has no turns and gets no such call.
    """
    instructions = f"{rubric.instructions.rstrip()}\n\n{TURN_INSTRUCTION}".lstrip()
    one_turn = replace(rubric, turn="last", instructions=instructions)
    calls = []
    for trial, a in enumerate(answers):
        if a.transcript is None:
            continue
        t = Transcript.from_json(a.transcript)
        n_turns = len(t.turns())
        for k in range(1, n_turns + 1):
            shown = render(t.up_to(k))
            calls += [PlannedCall(
                call_id=f"{SCORE_TURN_PROBE}/{a.answer_id}/{fmt}/{k}", kind="pointwise", format=fmt,
                prompt=a.prompt, answer=shown, probe=SCORE_TURN_PROBE, arm=fmt, trial=trial, task_id=a.task_id,
                answer_id=a.answer_id, meta={"family": a.family, "turn": k, "n_turns": n_turns}, rubric=one_turn,
            ) for fmt in formats]
    return calls


@dataclass(frozen=True)
class ScoreRunResult:
    """How a scoring run went.

    Attributes:
        summary: The runner's summary.
        answers: Answers scored.
        answer_set: The phrase naming the set (``"all 140 answers"``...).
        formats: The formats each answer was scored in.
        judge_spec: The judge spec's card line (``None``: the built-in prompt).
        turns: Assistant turns judged one by one besides (rubric ``turn = "each"``), per format.
    """

    summary: RunSummary
    answers: int
    answer_set: str
    formats: tuple[Format, ...]
    judge_spec: str | None = None
    turns: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"run": self.summary.to_dict(), "answers": self.answers, "answer_set": self.answer_set,
                "formats": list(self.formats), "judge_spec": self.judge_spec, "turns": self.turns}


async def ascore_answers(
    judge: Judge,
    store: JudgeRole,
    *,
    design: str | None = None,
    labelled: bool = False,
    formats: str | Sequence[str] | None = None,
    evidence: str | os.PathLike[str] | None = None,
    judge_kind: str | None = None,
    resume: str | None = None,
    concurrency: int = 16,
    batch: bool = False,
    progress: bool | None = None,
    poll_interval: float = 30.0,
    params: Mapping[str, Any] | None = None,
    adopt_batches: Sequence[str] = (),
) -> ScoreRunResult:
    """Judge every answer of the chosen set once per format, recording a judge run.

    Args:
        judge: The judge (built-in prompt, or carrying a judge spec).
        store: The project database (the pool, the rubric, the cache and the results).
        design: Score a stored design's answers (see :func:`choose_answers`).
        labelled: Score the answers that have human labels.
        formats: The pointwise formats (see :func:`score_formats`).
        evidence: A JSONL evidence file to write too.
        judge_kind: Recorded with the run (default ``fake``/``anthropic``).
        resume: Continue this run id (a re-run of the same plan continues it anyway).
        concurrency: Calls in flight at once.
        batch: Submit the calls as one Message Batch.
        progress: Show a progress bar (default: when stderr is a terminal).
        poll_interval: Seconds between batch status checks.
        params: The command's options, stored with the run.
        adopt_batches: Batch ids named as this run's (``--adopt-batch``) for a batch whose
            create reply was lost; each is checked before it is adopted.

    Raises:
        InputError: No rubric, an empty or unknown answer set, or a bad format.
    """
    rubric = store.rubric()
    if rubric is None:
        raise InputError("the database has no rubric to score against",
                         fix="import one with `judgelab import rubric FILE`.")
    answers, what = choose_answers(store, design=design, labelled=labelled)
    chosen = score_formats(judge, rubric, formats)
    spec = judge_spec(judge)
    record = {**(params or {}), "answer_set": what, "formats": list(chosen)}
    endpoint = judge_endpoint(judge)
    if endpoint is not None:
        record["judge_endpoint"] = endpoint  # the calibration report names provider and host
    line = None
    if spec is not None:
        record["judge_spec"] = spec.describe(model=judge.model, params=getattr(judge, "params", None))
        line = spec.card_line(model=judge.model, params=getattr(judge, "params", None))
    if spec is not None and spec.uses("reference"):
        judge = with_references(judge, reference_tasks(store))
    plan = plan_scores(answers, chosen, rubric)
    summary = await arun_plan(
        plan, judge, store, rubric=rubric,
        judge_kind=judge_kind or judge_kind_of(judge), evidence=evidence, resume=resume,
        concurrency=concurrency, batch=batch, progress=progress, params=record, poll_interval=poll_interval,
        adopt_batches=adopt_batches,
    )
    turns = sum(1 for c in plan if c.probe == SCORE_TURN_PROBE) // max(len(chosen), 1)
    return ScoreRunResult(summary, len(answers), what, chosen, line, turns)


def score_answers(judge: Judge, store: JudgeRole, **kwargs: Any) -> ScoreRunResult:
    """Synchronous :func:`ascore_answers` (same arguments)."""
    return asyncio.run(ascore_answers(judge, store, **kwargs))
