"""Does the active plan's forecast read from the pilot whether the judge's score tells its errors?

Run: ``python bench/forecast_evidence.py`` (about a minute on 2 CPUs); ``--reps N`` redraws per
cell (default 100), ``--pilots 40 80 160`` pilot sizes.

Two data models, 800 answers (400 tasks, two families), the judge wrong on 15% of them:

* ``threshold``: :func:`judgelab.calibration.active.pool_model` at 85% agreement: the judge's errors sit
  where its score is next to the pass threshold (the model the plan's prior assumes);
* ``random``: the same pool, but each human verdict is the judge's, flipped on 15% of the answers
  at random: the score tells nothing about where the errors are (issue 43's second data model).

For each pilot (a simple random sample of answers, labelled) the forecast
(:func:`judgelab.calibration.active.predicted_saving`, target ±5 pp on the gap) gives the model's active
ratio against simple random sampling, the evidence it reads from the pilot (disagreement share
where the prior expects errors minus elsewhere, with a 95% Wald interval) and its verdict. Printed
per cell: the mean model ratio, the ratio planned on (1 when no saving is expected), the share of
redraws that say "no saving expected", and the mean evidence with its mean interval.

The realised ratio beside the forecast, for both plans on both data models, is
``bench/forecast_realised.py``'s.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

# Run from a checkout without installing: the repository root holds the packages.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judgelab.calibration.active import pool_model, predicted_saving, simulate_pool


def one(model: str, pilot: int, rep: int) -> dict[str, float]:
    """One redraw: a fresh pool, a pilot, the forecast."""
    rng = np.random.default_rng([rep, pilot])
    sim = simulate_pool(pool_model(0.85), 800, rng)
    judge = sim.pool.judge_pass
    human = sim.human_pass if model == "threshold" else np.where(rng.random(judge.size) < 0.15, 1 - judge, judge)
    labels = np.full(judge.size, np.nan)
    drawn = rng.choice(judge.size, pilot, replace=False)
    labels[drawn] = human[drawn]
    f = predicted_saving(sim.pool, target_half_width=5.0, human_pass=labels, own_family="own")
    e = f.evidence
    return {"model ratio": f.active_ratio, "planned ratio": f.ratio, "no saving": float(f.no_saving),
            "evidence pp": np.nan if e is None else e.estimate, "ci low": np.nan if e is None else e.ci_low,
            "ci high": np.nan if e is None else e.ci_high, "wrong %": 100 * float((human != judge).mean())}


def main(argv: list[str] | None = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--pilots", type=int, nargs="+", default=[40, 80, 160])
    args = parser.parse_args(argv)
    rows = [{"model": model, "pilot": pilot, **one(model, pilot, rep)}
            for model in ("threshold", "random") for pilot in args.pilots for rep in range(args.reps)]
    table = pd.DataFrame(rows).groupby(["model", "pilot"], sort=False).mean()
    pd.set_option("display.width", 200)
    print(f"{args.reps} redraws per row; 800 answers; target ±5 pp on the gap")
    print(table.to_string(float_format=lambda x: f"{x:.2f}"))


if __name__ == "__main__":
    main()
