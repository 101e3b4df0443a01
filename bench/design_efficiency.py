"""How many labels does a stratified hand-label design save over simple random sampling?

Run: ``python bench/design_efficiency.py`` (about a minute; ``--quick`` for a smoke run).

For each simulated pool (known human truth for every answer, a judge that over-credits its own
family, so the true self-preference gap is known), it draws many samples and measures the
spread of the gap estimate:

* **SRS**: ``n`` answers drawn at random from the pool; gap = difference of the two families'
  mean residuals.
* **design**: :func:`calibration.design.design_sample` with ``n`` labels (Hajek means with
  weights 1/π), redrawn with :meth:`Design.redraw`. Planned with the default *assumed* figures
  (no pilot), as a first design would be.

An interval's half-width scales as ``1/sqrt(n)``, so the labels the design needs to match the
SRS half-width at ``n`` are ``n · (sd_design / sd_srs)²``; the table prints that ratio
(``n_design / n_srs``, below 1 means fewer labels) and checks it by drawing the design at the
implied size (``check``: its simulated half-width next to SRS's).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

# Run from a checkout without installing: the repository root holds the packages.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from calibration.design import Design, design_sample

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Shape:
    """A pool shape: how answers, tasks and the judge's errors are laid out."""

    name: str
    n_tasks: int = 300
    own_per_task: int = 1
    other_share: float = 1.0      # share of tasks the other family answered
    task_judge_sd: float = 0.8    # judge misreads a task for every family alike -> rho > 0
    own_bias: float = 0.6


SHAPES = (
    Shape("balanced, judge errors shared within task"),
    Shape("balanced, independent errors (rho ~ 0)", task_judge_sd=0.0),
    Shape("other family answered 1/3 of tasks", other_share=1 / 3),
    Shape("3 own-family answers per task", own_per_task=3),
)


def simulate(shape: Shape, seed: int) -> pd.DataFrame:
    """A pool with human truth; latent quality drives both humans and the judge."""
    rng = np.random.default_rng(seed)
    u = rng.normal(0, 1, shape.n_tasks)
    v = rng.normal(0, shape.task_judge_sd, shape.n_tasks) if shape.task_judge_sd else np.zeros(
        shape.n_tasks)
    rows = []
    for t in range(shape.n_tasks):
        answers = [("own", k) for k in range(shape.own_per_task)]
        if rng.random() < shape.other_share:
            answers.append(("other", 0))
        for fam, k in answers:
            z = 0.8 + u[t] + rng.normal()
            human = float(z + rng.normal(0, 0.5) > 0)
            bias = shape.own_bias if fam == "own" else 0.0
            judge = float(z + bias + v[t] + rng.normal(0, 0.5) > 0)
            rows.append({
                "answer_id": f"{fam}{k}-{t}", "task_id": f"t{t:04d}", "family": fam,
                "category": f"c{t % 4}", "n_words": 100, "judge_score": 1 + 4 * judge,
                "judge_pass": judge, "resid": judge - human,
            })
    return pd.DataFrame(rows)


def true_gap(pool: pd.DataFrame) -> float:
    means = pool.groupby("family")["resid"].mean()
    return float(means["own"] - means["other"])


def srs_sd(pool: pd.DataFrame, n: int, reps: int, rng: np.random.Generator) -> tuple[float, float]:
    resid = pool["resid"].to_numpy()
    own = (pool["family"] == "own").to_numpy()
    est = []
    for _ in range(reps):
        idx = rng.choice(len(pool), size=n, replace=False)
        o = own[idx]
        if o.all() or not o.any():
            continue
        est.append(resid[idx][o].mean() - resid[idx][~o].mean())
    return float(np.std(est, ddof=1)), float(np.mean(est))


def design_sd(design: Design, pool: pd.DataFrame, reps: int) -> tuple[float, float]:
    pos = pd.Series(np.arange(len(pool)), index=pool["answer_id"])
    resid = pool["resid"].to_numpy()
    est = []
    for seed in range(reps):
        items = design.redraw(seed)
        idx = items["answer_id"].map(pos).to_numpy()
        w = items["weight"].to_numpy()
        own = (items["family"] == "own").to_numpy()
        r = resid[idx]
        est.append(np.average(r[own], weights=w[own]) - np.average(r[~own], weights=w[~own]))
    return float(np.std(est, ddof=1)), float(np.mean(est))


def labels_to_match(
    pool: pd.DataFrame, target_sd: float, n0: int, *, paired: bool, reps: int
) -> tuple[int, float, float]:
    """Labels at which the design's simulated gap sd meets ``target_sd``.

    A secant search on ``log sd`` against ``log n`` (a straight line of slope −1/2 when the
    allocation scales; not exactly, because strata keep a minimum of two units and coarsen at
    small budgets). Stops within 3% of the target or after five evaluations and returns the
    closest one.
    """
    tried: list[tuple[int, float, float]] = []
    n = n0
    for _ in range(5):
        design = design_sample(pool, n=n, allocation="gap", paired=paired, own_family="own",
                               overlap=0.0, rng=0)
        sd, mean = design_sd(design, pool, reps)
        tried.append((design.n_labels, sd, mean))
        if abs(sd / target_sd - 1) < 0.03:
            break
        if len(tried) == 1:
            slope = -0.5
        else:
            (n1, s1, _), (n2, s2, _) = tried[-2], tried[-1]
            slope = (math.log(s2) - math.log(s1)) / (math.log(n2) - math.log(n1)) \
                if n1 != n2 else -0.5
            slope = min(slope, -0.1)  # noise must not flip the direction of the search
        labels = design.n_labels
        n = max(4, min(len(pool), round(labels * (target_sd / sd) ** (1 / slope))))
        if n == labels:
            break
    return min(tried, key=lambda t: abs(t[1] / target_sd - 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=150, help="SRS labels (default 150)")
    parser.add_argument("--reps", type=int, default=400, help="draws per estimate")
    parser.add_argument("--quick", action="store_true", help="few draws, for a smoke run")
    args = parser.parse_args()
    reps = 100 if args.quick else args.reps
    n = args.n
    started = time.perf_counter()
    rows = []
    for i, shape in enumerate(SHAPES):
        pool = simulate(shape, seed=100 + i)
        rng = np.random.default_rng(i)
        sd_srs, mean_srs = srs_sd(pool, n, reps, rng)
        r_own = pool[pool["family"] == "own"].groupby("task_id")["resid"].mean()
        r_other = pool[pool["family"] == "other"].groupby("task_id")["resid"].mean()
        both = pd.concat([r_own, r_other], axis=1, join="inner")
        rho = float(both.iloc[:, 0].corr(both.iloc[:, 1]))
        row = {
            "pool": shape.name,
            "answers": len(pool),
            "true gap pp": round(100 * true_gap(pool), 1),
            "rho": round(rho, 2),
            f"SRS hw@{n} pp": round(100 * Z95 * sd_srs, 1),
        }
        for label, paired in (("paired", True), ("unpaired", False)):
            n_need, sd_c, mean_d = labels_to_match(pool, sd_srs, n, paired=paired, reps=reps)
            row[f"{label} ratio"] = round(n_need / n, 2)
            row[f"{label} hw pp"] = round(100 * Z95 * sd_c, 1)
            row[f"{label} bias pp"] = round(100 * (mean_d - true_gap(pool)), 2)
        row["SRS bias pp"] = round(100 * (mean_srs - true_gap(pool)), 2)
        rows.append(row)
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(f"Labels the gap-allocation design needs to match simple random sampling of {n}")
        print("labels (ratio = n_design / n_srs at equal gap half-width; < 1 saves labels).")
        print(f"{reps} draws per figure; 'hw' is the design's simulated 95% half-width at")
        print("n * ratio labels (it should match SRS's); 'bias' is the mean estimate minus the")
        print("pool's true gap (Hajek-weighted for the design).\n")
        print(table.to_string(index=False))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
