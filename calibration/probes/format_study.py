"""Format study: the same pool of answers scored under several formats (seed 001).

"The Format is the Filter" shows that, under fixed decoding, the scoring format alone sets most
of a judge's tie structure. This probe scores every pool answer under each format (``binary``,
``likert5``, ``numeric100`` by default; ``anchored`` and ``tournament`` on request) and reports,
per format, the structural quantities the paper asks a pipeline to report that need no
reference scores: parse rate, distinct values, effective granularity ``D1``/``D2``, tie
probability and the share of tasks whose top score is tied. Agreement with humans (tau_a,
Somers' D, top-1) needs human labels: ``judgelab formats`` reads these judgements from the
database once labels exist.

The two comparative formats score a task's answers from pairwise verdicts, as the paper does:

* ``anchored``: the task's first answer (in pool order) is the fixed anchor, shown as
  Response A; every answer of the task, the anchor included, is compared with it once, and its
  score is ``(v + 2) / 4`` from its own slot (:func:`judgelab.calibration.formats.anchored_score`). The
  anchor's own comparison is a self-comparison, as in the paper's unswapped design.
* ``tournament``: every within-task pair once, in listing order
  (:func:`judgelab.calibration.formats.tournament_pairs`); an answer's score is its mean win probability
  over its matches (:func:`judgelab.calibration.formats.tournament_scores`). A task with one answer has
  no matches and no tournament scores.

The parse rate counts replies (one per comparison); the other figures count the answers'
derived scores. A comparison whose reply did not parse leaves its answers' scores out (an
answer whose every match failed has no score, never a default one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from judgelab.calibration.datasets import PoolAnswer
from judgelab.calibration.formats import FORMATS, anchored_score, tournament_pairs, tournament_scores
from judgelab.calibration.probes._base import ProbeContext, ProbePlan
from judgelab.calibration.runner import PlannedCall
from judgelab.calibration.stats import Estimate, effective_levels, proportion, tie_probability, top_tied_share
from judgelab.labeler.models import Rubric
from judgelab.labeler.scales import PAIRWISE_FORMATS

NAME = "format"


COMPARATIVE = ("anchored", "tournament")
"""The comparative formats the study can run (scores derived from verdicts)."""


def plan(ctx: ProbeContext) -> ProbePlan:
    """Every pool answer under every format in ``ctx.formats`` (comparative ones per task)."""
    out = ProbePlan()
    comparative = [f for f in ctx.formats if f in PAIRWISE_FORMATS]
    unknown = [f for f in comparative if f not in COMPARATIVE]
    if unknown:
        raise ValueError(f"format study: {unknown[0]!r} is not a format the study can run; "
                         f"comparative formats: {', '.join(COMPARATIVE)}")
    for trial, answer in enumerate(ctx.pool):
        for fmt in ctx.formats:
            if fmt in PAIRWISE_FORMATS:
                continue
            out.calls.append(
                PlannedCall(
                    call_id=f"{NAME}/{answer.answer_id}/{fmt}",
                    kind="pointwise",
                    format=fmt,
                    prompt=answer.prompt,
                    answer=answer.text,
                    probe=NAME,
                    arm=fmt,
                    trial=trial,
                    task_id=answer.task_id,
                    answer_id=answer.answer_id,
                    meta={"pool": "store" if answer.from_store else "pairs",
                          "family": answer.family},
                    rubric=ctx.pool_rubric,
                )
            )
    tasks: dict[str, list[PoolAnswer]] = {}
    for answer in ctx.pool:
        tasks.setdefault(answer.task_id, []).append(answer)
    for fmt in comparative:
        for trial, (task_id, answers) in enumerate(tasks.items()):
            out.calls += _comparisons(fmt, task_id, answers, trial, ctx.pool_rubric)
    return out


def _comparisons(fmt: str, task_id: str, answers: list[PoolAnswer], trial: int, rubric: Rubric) -> list[PlannedCall]:
    """One task's comparisons under ``anchored`` or ``tournament``."""
    by_id = {a.answer_id: a for a in answers}
    if fmt == "anchored":
        anchor = answers[0]
        matches = [(anchor.answer_id, a.answer_id) for a in answers]
    else:
        matches = tournament_pairs([a.answer_id for a in answers])
    calls = []
    for first_id, second_id in matches:
        first, second = by_id[first_id], by_id[second_id]
        calls.append(
            PlannedCall(
                call_id=f"{NAME}/{fmt}/{task_id}/{first_id}/{second_id}",
                kind="pairwise",
                format=fmt,  # type: ignore[arg-type]  # a comparative format, checked in plan()
                prompt=first.prompt,
                answer=first.text,
                answer_b=second.text,
                probe=NAME,
                arm=fmt,
                trial=trial,
                task_id=task_id,
                answer_id=first_id,
                answer_b_id=second_id,
                meta={"pool": "store" if first.from_store else "pairs", "family": second.family,
                      "comparison": fmt},
                rubric=rubric,
            )
        )
    return calls


@dataclass(frozen=True)
class FormatRow:
    """One format's structural figures.

    Attributes:
        format: The scoring format.
        replies: Judgements under it.
        parse_rate: Share of replies that parsed (Wilson interval).
        distinct_values: Distinct scores emitted.
        d1: Effective levels, exponentiated Shannon entropy.
        d2: Effective levels, inverse tie probability.
        tie_probability: Chance two random scores are equal.
        top_tied_share: Share of tasks (with 2+ answers) whose top score is tied.
        mean_score: Mean parsed score, in the format's own units (a comparative format's
            derived score is a win probability, 0..1).
    """

    format: str
    replies: int
    parse_rate: Estimate
    distinct_values: int
    d1: float
    d2: float
    tie_probability: float
    top_tied_share: float
    mean_score: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, Estimate):
                value = value.to_dict()
            elif isinstance(value, float) and math.isnan(value):
                value = None
            out[name] = value
        return out


def derived_scores(rows: pd.DataFrame, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, task ids)`` of the answers one format scored, from its evidence rows.

    Pointwise formats: each parsed score. ``anchored``: each candidate's score against the
    anchor, from its own slot. ``tournament``: each answer's mean win probability over its
    parsed matches (an answer with none has no score).
    """
    ok = (rows["status"] == "parsed").to_numpy()
    if fmt not in PAIRWISE_FORMATS:
        scores = pd.to_numeric(rows["score"], errors="coerce").to_numpy(float)[ok]
        return scores, rows["task_id"].to_numpy()[ok]
    verdicts = pd.to_numeric(rows["verdict"], errors="coerce").to_numpy(float)
    firsts, seconds, tasks = rows["answer_id"].to_numpy(), rows["answer_b_id"].to_numpy(), rows["task_id"].to_numpy()
    if fmt == "anchored":
        keep = ok & ~np.isnan(verdicts)
        scores = np.array([anchored_score(v, candidate_slot="B") for v in verdicts[keep]], dtype=float)
        return scores, tasks[keep]
    out_scores: list[float] = []
    out_tasks: list[Any] = []
    for task in dict.fromkeys(tasks):
        sel = tasks == task
        matches = [
            (str(a), str(b), None if not good or math.isnan(v) else float(v))
            for a, b, v, good in zip(firsts[sel], seconds[sel], verdicts[sel], ok[sel], strict=True)
        ]
        for result in tournament_scores(matches).values():
            if not math.isnan(result.score):
                out_scores.append(result.score)
                out_tasks.append(task)
    return np.array(out_scores, dtype=float), np.array(out_tasks, dtype=object)


def analyse(rows: pd.DataFrame) -> list[FormatRow]:
    """One :class:`FormatRow` per format, in the order the formats appear."""
    out = []
    present = list(dict.fromkeys(rows["format"]))
    known = [f for f in FORMATS if f in present]
    for fmt in known + [f for f in present if f not in known]:
        sub = rows[rows["format"] == fmt]
        ok = (sub["status"] == "parsed").to_numpy()
        scores, groups = derived_scores(sub, str(fmt))
        has = scores.size > 0
        out.append(
            FormatRow(
                format=str(fmt),
                replies=len(sub),
                parse_rate=proportion(ok.astype(int)),
                distinct_values=int(np.unique(scores).size),
                d1=effective_levels(scores, alpha=1.0) if has else math.nan,
                d2=effective_levels(scores, alpha=2.0) if has else math.nan,
                tie_probability=tie_probability(scores) if has else math.nan,
                top_tied_share=top_tied_share(scores, groups) if has else math.nan,
                mean_score=float(scores.mean()) if has else math.nan,
            )
        )
    return out
