"""Decoration probes: markdown formatting, confident tone and citation-styled lines.

Each re-dresses one answer of a pair without changing what it says (:mod:`judgelab.calibration.perturb`)
and reads the judge's lift for the decorated side against the placebo arm, with the decorated
side alternating A/B across trials and every comparison run in both orders (see
:mod:`judgelab.calibration.probes._lift`).
"""

from __future__ import annotations

import pandas as pd

from judgelab.calibration.probes._base import BiasResult, ProbeContext, ProbePlan
from judgelab.calibration.probes._lift import analyse_lift, plan_lift

#: bias name -> (perturbation variant, card label)
DECORATIONS: dict[str, tuple[str, str]] = {
    "formatting": ("markdown", "Formatting — markdown lift"),
    "tone": ("tone", "Tone — confident-framing lift"),
    "citations": ("citations", "Citations — citation-line lift"),
}


def plan(ctx: ProbeContext, bias: str) -> ProbePlan:
    """The lift design for one decoration."""
    variant, _ = DECORATIONS[bias]
    return plan_lift(ctx, bias, variant)


def analyse(rows: pd.DataFrame, bias: str) -> BiasResult:
    """The card row of one decoration."""
    _, label = DECORATIONS[bias]
    return analyse_lift(rows, bias=bias, label=label)
