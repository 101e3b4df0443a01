"""Format study: the same pool of answers scored under several pointwise formats (seed 001).

"The Format is the Filter" shows that, under fixed decoding, the scoring format alone sets most
of a judge's tie structure. This probe scores every pool answer under each format (``binary``,
``likert5``, ``numeric100`` by default) and reports, per format, the structural quantities the
paper asks a pipeline to report that need no reference scores: parse rate, distinct values,
effective granularity ``D1``/``D2``, tie probability and the share of tasks whose top score is
tied. Agreement with humans (tau_a, Somers' D, top-1) needs human labels: ``judgelab formats``
reads these judgements from the database once labels exist.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from calibration.formats import FORMATS
from calibration.probes._base import ProbeContext, ProbePlan
from calibration.runner import PlannedCall
from calibration.stats import Estimate, effective_levels, proportion, tie_probability, top_tied_share

NAME = "format"


def plan(ctx: ProbeContext) -> ProbePlan:
    """Every pool answer under every format in ``ctx.formats``."""
    out = ProbePlan()
    for trial, answer in enumerate(ctx.pool):
        for fmt in ctx.formats:
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
    return out


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
        mean_score: Mean parsed score, in the format's own units.
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


def analyse(rows: pd.DataFrame) -> list[FormatRow]:
    """One :class:`FormatRow` per format, in the order the formats appear."""
    out = []
    present = list(dict.fromkeys(rows["format"]))
    known = [f for f in FORMATS if f in present]
    for fmt in known + [f for f in present if f not in known]:
        sub = rows[rows["format"] == fmt]
        ok = (sub["status"] == "parsed").to_numpy()
        scores = pd.to_numeric(sub["score"], errors="coerce").to_numpy(float)[ok]
        groups = sub["task_id"].to_numpy()[ok]
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
