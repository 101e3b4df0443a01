"""Simulated raters for the demo, so analyst pages have labels before a team starts.

Every label made here is stored with ``source = 'simulated'`` by raters flagged
``simulated``; pages and reports say so wherever they show them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgelab.labeler.models import ImportedLabel, Rubric
from judgelab.labeler.store import ImportExportRole, ImportSummary


@dataclass(frozen=True)
class SimulatedRater:
    """A simulated person: a fixed leniency (scale points) and per-label noise (sd)."""

    name: str
    leniency: float
    noise: float


def simulated_labels(
    truth: pd.DataFrame,
    rubric: Rubric,
    *,
    raters: list[SimulatedRater],
    raters_per_answer: int = 2,
    rng: np.random.Generator | int | None = 0,
) -> list[ImportedLabel]:
    """Labels around a known quality per answer.

    Args:
        truth: ``answer_id`` and ``quality`` on the rubric's likert5 scale.
        rubric: The rubric (its criteria and pass rule are used).
        raters: The simulated raters.
        raters_per_answer: How many distinct raters label each answer.
        rng: Seed or generator; the same seed gives the same labels.

    Returns:
        One label per (answer, rater) pair drawn.
    """
    gen = np.random.default_rng(rng)
    lo, hi = (1, 5) if rubric.scale == "likert5" else (0, 100) if rubric.scale == "numeric100" else (0, 1)
    out = []
    for row in truth.itertuples(index=False):
        chosen = gen.choice(len(raters), size=min(raters_per_answer, len(raters)), replace=False)
        for idx in chosen:
            r = raters[int(idx)]
            quality = float(row.quality)  # type: ignore[arg-type]  # a numeric column
            overall = float(np.clip(np.rint(quality + r.leniency + gen.normal(0, r.noise)), lo, hi))
            criteria = {
                c.criterion_id: float(np.clip(np.rint(overall + gen.normal(0, 0.6)), lo, hi))
                for c in rubric.criteria
            }
            out.append(
                ImportedLabel(
                    answer_id=str(row.answer_id),
                    rater=r.name,
                    overall=overall,
                    passed=rubric.passes(overall),
                    criteria=criteria,
                    comment="simulated label",
                )
            )
    return out


DEMO_RATERS = [
    SimulatedRater("sim-rater-1", leniency=0.0, noise=0.5),
    SimulatedRater("sim-rater-2", leniency=0.3, noise=0.6),
    SimulatedRater("sim-rater-3", leniency=-0.2, noise=0.5),
    SimulatedRater("sim-rater-4", leniency=0.1, noise=0.8),
]


def add_simulated_labels(store: ImportExportRole, truth: pd.DataFrame, *, seed: int = 0) -> ImportSummary:
    """Store demo labels from :data:`DEMO_RATERS` for every answer in ``truth``."""
    rubric = store.rubric()
    if rubric is None:
        raise ValueError("import a rubric before simulating labels")
    labels = simulated_labels(truth, rubric, raters=DEMO_RATERS, rng=seed)
    return store.add_imported_labels(
        labels, source_file="simulated", source="simulated", rubric=(rubric.rubric_id, rubric.version)
    )
