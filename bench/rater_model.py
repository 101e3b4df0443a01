"""The rater model against the majority on raters of known confusion: error rates, bias, coverage.

Run: ``python bench/rater_model.py`` (200 datasets at 30, 60 and 150 tasks, about 7 CPU minutes:
each Dawid-Skene reading refits the model on 100 task resamples); ``--reps N`` datasets per row,
``--tasks 60 150`` the task counts, ``--per-answer 3`` raters per answer.

The model is :func:`judgelab.calibration.stats.simulate_raters`'s: pass/fail answers of two families with
a known true verdict, a judge with a self-preference, and five raters of known confusion (one
careful, two lenient, one harsh, one careless), three per answer. Each dataset is read under the
majority, the mean and Dawid-Skene (:func:`judgelab.calibration.stats.compare_rules`, the report's own
residual functions, intervals for raters like these):

* ``error %``: answers whose human category differs from the true verdict (Dawid-Skene: the
  posterior mode); ``sq err``: mean squared distance of the human score the residuals use from
  the truth (the majority's 0/1 equals its error rate; Dawid-Skene's posterior is a Brier score);
* ``bias``: mean estimate minus the known truth (percentage points) for each family's residual
  and the gap; ``cover``: share of 95% intervals that hold the known truth; ``width``: their
  mean width. The Monte Carlo standard error of a coverage near 95% over 200 datasets is 1.5 points.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

# Run from a checkout without installing: the repository root holds the packages.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judgelab.calibration.stats import RULES_COMPARED, compare_rules, simulate_raters

FIGURES = ("own", "other", "gap")


def run(n_tasks: int, reps: int, per_answer: int, seed: int = 0) -> pd.DataFrame:
    """One row per rule: error rates, bias, coverage and width over ``reps`` datasets."""
    tally: dict[str, dict[str, list[float]]] = {rule: {} for rule in RULES_COMPARED}
    for rep in range(reps):
        sim = simulate_raters(n_tasks=n_tasks, labels_per_answer=per_answer, seed=seed * 100_003 + rep)
        truth = {**sim.residuals, "gap": sim.gap}
        for rule, reading in compare_rules(sim).items():
            t = tally[rule]
            t.setdefault("error %", []).append(100 * reading.error_rate)
            t.setdefault("sq err", []).append(reading.squared_error)
            for fig in FIGURES:
                est = reading.gap if fig == "gap" else reading.residuals[fig]
                t.setdefault(f"bias {fig}", []).append(est.estimate - truth[fig])
                t.setdefault(f"cover {fig} %", []).append(100.0 * reading.covered[fig])
                t.setdefault(f"width {fig}", []).append(est.ci_high - est.ci_low)
    rows = [{"tasks": n_tasks, "rule": rule, **{k: float(np.mean(v)) for k, v in t.items()}}
            for rule, t in tally.items()]
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--tasks", type=int, nargs="+", default=[30, 60, 150])
    parser.add_argument("--per-answer", type=int, default=3)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    table = pd.concat([run(n, args.reps, args.per_answer) for n in args.tasks], ignore_index=True)
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.float_format", "{:.2f}".format):
        print(table.to_string(index=False))
    print(f"\n{args.reps} datasets per row, {args.per_answer} of 5 raters per answer, 95% intervals for raters like "
          f"these; {time.perf_counter() - start:.0f} s.")


if __name__ == "__main__":
    main()
