"""Does the recommended design shorten the interval the report prints, against simple random sampling?

Run: ``python bench/design_efficiency.py`` (a few minutes on 2 CPUs; ``--quick`` for a smoke run).

The pool (stated, because the saving depends on it): 2,000 tasks, one answer from each of two
families; a latent quality drives humans and judge alike, the judge passes its own family more
easily (a true self-preference gap of about 7-8 points), misreads a task for both families alike
(residuals correlate within a task), and scores 1-5 (pass = 4 or 5). The humans' verdict is known
for every answer (one rater, so raters play no part here).

Three ways to spend ``n`` labels, each read the way ``judgelab calibrate`` reads it (the gap's
t interval from :func:`judgelab.calibration.stats.self_preference_gap`, with the design's weights and
strata where there is a design):

* **design**: the recommended design, :func:`judgelab.calibration.design.design_sample` with the ``gap``
  allocation, paired by task and stratified by the judge's verdicts, planned from a pilot of 100
  random tasks (200 labels) (and, for comparison, with no pilot: the assumed planning model);
* **SRS tasks**: ``n / 2`` tasks drawn at random, both answers labelled;
* **SRS answers**: ``n`` answers drawn at random (what labelling "a random sample" means).

For each it prints the mean **reported** 95% half-width of the gap at several label counts, the
labels each needs to match simple random sampling's reported half-width at ``--n`` (a straight
line through log half-width against log labels), the design's predicted half-width next to its
mean reported one, and the realised power of a design planned for ``--min-gap`` at 80% power;
then the same for the pilot plan averaged over 40 fresh pilots, because one pilot of 100 tasks
is itself a sample: it can over- or under-state the spread, and a plan is only as calibrated as
its pilots are on average.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

# Run from a checkout without installing: the repository root holds the packages.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judgelab.calibration.design import Design, PlanningModel, design_sample, planning_model, stratify_pool
from judgelab.calibration.stats import Estimate, self_preference_gap

N_TASKS = 2000


def simulate_pool(seed: int = 100) -> pd.DataFrame:
    """The pool described in the module docstring, with the human verdict of every answer."""
    rng = np.random.default_rng(seed)
    u = rng.normal(0, 1, N_TASKS)
    v = rng.normal(0, 0.8, N_TASKS)
    rows = []
    for t in range(N_TASKS):
        for fam, bias in (("own", 0.5), ("other", 0.0)):
            z = 0.8 + u[t] + rng.normal()
            human = float(z + rng.normal(0, 0.5) > 0)
            score = float(np.clip(np.round(3.5 + 0.9 * (z + bias + v[t] + rng.normal(0, 0.5))), 1, 5))
            rows.append({"answer_id": f"{fam}-{t}", "task_id": f"t{t:04d}", "family": fam, "category": "c",
                         "n_words": 100, "judge_score": score, "judge_pass": float(score >= 4), "truth": human})
    return pd.DataFrame(rows)


def true_gap(pool: pd.DataFrame) -> float:
    resid = (pool["judge_pass"] - pool["truth"]).groupby(pool["family"]).mean()
    return float(100 * (resid["own"] - resid["other"]))


def _gap(rows: pd.DataFrame, *, weighted: bool) -> Estimate:
    return self_preference_gap(
        rows["judge_pass"].to_numpy(), rows["truth"].to_numpy(), rows["family"].to_numpy(),
        rows["task_id"].to_numpy(), own_family="own",
        weights=rows["weight"].to_numpy() if weighted else None,
        strata=rows["stratum"].to_numpy() if weighted else None, interval="panel",
    )


def design_reported(design: Design, pool: pd.DataFrame, reps: int) -> list[Estimate]:
    info = pool.set_index("answer_id")[["judge_pass", "truth"]]
    out = []
    for seed in range(reps):
        rows = design.redraw(seed).join(info, on="answer_id")
        out.append(_gap(rows, weighted=True))
    return out


def srs_reported(pool: pd.DataFrame, n: int, reps: int, *, by_task: bool, seed: int) -> list[Estimate]:
    rng = np.random.default_rng(seed)
    tasks = pool["task_id"].unique()
    out = []
    for _ in range(reps):
        if by_task:
            rows = pool[pool["task_id"].isin(rng.choice(tasks, n // 2, replace=False))]
        else:
            rows = pool.iloc[rng.choice(len(pool), n, replace=False)]
        if rows["family"].nunique() < 2:
            continue
        out.append(_gap(rows, weighted=False))
    return out


def labels_for(widths: dict[int, float], target: float) -> float:
    """Labels at which the log-log line through ``widths`` reaches ``target``."""
    n = np.log(np.array(list(widths)))
    w = np.log(np.array(list(widths.values())))
    slope, icept = np.polyfit(n, w, 1)
    return float(math.exp((math.log(target) - icept) / slope))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="SRS labels to match (default 200)")
    parser.add_argument("--reps", type=int, default=200, help="draws per figure")
    parser.add_argument("--min-gap", type=float, default=None, help="gap to plan power for (default: the true gap)")
    parser.add_argument("--quick", action="store_true", help="few draws, for a smoke run")
    args = parser.parse_args()
    reps = 40 if args.quick else args.reps
    started = time.perf_counter()
    pool = simulate_pool()
    truth = true_gap(pool)
    # A pilot of 100 random tasks, both answers labelled (paired, so the within-task correlation
    # of the residuals is measured too): 200 labels.
    pilot_tasks = np.random.default_rng(1).choice(pool["task_id"].unique(), 100, replace=False)
    piloted = pool.assign(human_pass=np.where(pool["task_id"].isin(pilot_tasks), pool["truth"], np.nan))
    pilot_model = planning_model(stratify_pool(piloted))
    grid = [args.n // 2, args.n, 2 * args.n]
    # The pilot's labels ride along in the pool (human_pass), so each stratum's sd is measured. The
    # oracle plan knows every answer's human verdict: its predicted half-width is what the design
    # promises when its planning figures are right, the check that the report delivers it.
    oracle = pool.assign(human_pass=pool["truth"])
    oracle_model = planning_model(stratify_pool(oracle))
    plans = {"design (oracle plan)": (oracle, oracle_model), "design (pilot)": (piloted, pilot_model),
             "design (no pilot)": (pool, PlanningModel())}
    widths: dict[str, dict[int, float]] = {}
    rows = []
    for name, (frame, model) in plans.items():
        widths[name] = {}
        for n in grid:
            d = design_sample(frame, n=n, allocation="gap", strata=["judge_bin"], own_family="own", overlap=0.0,
                              model=model, rng=0)
            est = design_reported(d, pool, reps)
            hw = float(np.mean([e.half_width for e in est]))
            widths[name][d.n_labels] = hw
            cover = float(np.mean([e.covers(truth) for e in est]))
            bias = float(np.mean([e.estimate for e in est]) - truth)
            rows.append({"method": name, "labels": d.n_labels, "reported hw pp": round(hw, 2),
                         "predicted hw pp": round(d.precision.gap_half_width, 2),
                         "reported/predicted": round(hw / d.precision.gap_half_width, 3),
                         "covers pool truth %": round(100 * cover, 1), "bias pp": round(bias, 2)})
    for name, by_task in (("SRS tasks", True), ("SRS answers", False)):
        widths[name] = {}
        for n in grid:
            est = srs_reported(pool, n, reps, by_task=by_task, seed=n)
            hw = float(np.mean([e.half_width for e in est]))
            widths[name][n] = hw
            rows.append({"method": name, "labels": n, "reported hw pp": round(hw, 2),
                         "covers pool truth %": round(100 * float(np.mean([e.covers(truth) for e in est])), 1),
                         "bias pp": round(float(np.mean([e.estimate for e in est]) - truth), 2)})
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(f"Pool: {N_TASKS} tasks x 2 families, true gap {truth:.2f} pp; strata: the judge's pass/fail on "
              f"each family's answer (paired by task). {reps} draws per row.\n")
        print(table.to_string(index=False))
    target = widths["SRS answers"][args.n]
    print(f"\nLabels each needs for the reported half-width SRS of answers gets at {args.n} labels "
          f"(±{target:.2f} pp):")
    for name, w in widths.items():
        need = labels_for(w, target)
        print(f"  {name:18s} {need:7.0f} labels  ({need / args.n:.2f} x SRS answers)")
    target_t = widths["SRS tasks"][args.n]
    print(f"Against SRS of tasks at {args.n} labels (±{target_t:.2f} pp): "
          + ", ".join(f"{name} needs {labels_for(widths[name], target_t) / args.n:.2f} x" for name in plans) + ".")
    gap = truth if args.min_gap is None else args.min_gap
    print()
    for name, (frame, model) in plans.items():
        _power(name, frame, pool, model, gap, reps)
    _power_over_pilots(pool, gap, pilots=10 if args.quick else 40, reps=reps // 2)
    print(f"'covers pool truth' is over 95% by the finite-population share (the intervals are for the "
          f"judge, not this pool; no correction is applied). {time.perf_counter() - started:.0f} s")


def _power(name: str, frame: pd.DataFrame, pool: pd.DataFrame, model: PlanningModel, gap: float, reps: int) -> None:
    """Plan for ``gap`` at 80% power, draw the planned design, count rejections of 'no gap'."""
    plan = design_sample(frame, n=100, allocation="gap", strata=["judge_bin"], own_family="own", overlap=0.0,
                         model=model, min_gap=gap, rng=0)
    assert plan.target is not None
    d = design_sample(frame, n=plan.target.labels_needed, allocation="gap", strata=["judge_bin"],
                      own_family="own", overlap=0.0, model=model, rng=0)
    est = design_reported(d, pool, max(reps, 400))
    power = float(np.mean([not e.covers(0.0) for e in est]))
    se = math.sqrt(power * (1 - power) / len(est))
    print(f"Power, {name}: planned 0.80 for a {gap:.2f} pp gap -> {plan.target.labels_needed} labels; realised "
          f"{power:.3f} (Monte Carlo se {se:.3f}) over {len(est)} draws.")


def _power_over_pilots(pool: pd.DataFrame, gap: float, *, pilots: int, reps: int) -> None:
    """The pilot plan's power over many pilots: one pilot is itself a sample and can mislead."""
    realised, ratios, labels = [], [], []
    for k in range(pilots):
        tasks = np.random.default_rng([2, k]).choice(pool["task_id"].unique(), 100, replace=False)
        frame = pool.assign(human_pass=np.where(pool["task_id"].isin(tasks), pool["truth"], np.nan))
        model = planning_model(stratify_pool(frame))
        plan = design_sample(frame, n=100, allocation="gap", strata=["judge_bin"], own_family="own", overlap=0.0,
                             model=model, min_gap=gap, rng=k)
        assert plan.target is not None
        d = design_sample(frame, n=plan.target.labels_needed, allocation="gap", strata=["judge_bin"],
                          own_family="own", overlap=0.0, model=model, rng=k)
        est = design_reported(d, pool, reps)
        realised.append(float(np.mean([not e.covers(0.0) for e in est])))
        ratios.append(float(np.mean([e.half_width for e in est])) / d.precision.gap_half_width)
        labels.append(plan.target.labels_needed)
    power = float(np.mean(realised))
    se = float(np.std(realised, ddof=1) / math.sqrt(pilots))
    print(f"Power over {pilots} pilots of 100 tasks each, planned 0.80 for a {gap:.2f} pp gap: realised "
          f"{power:.3f} on average (se {se:.3f}; {min(realised):.2f}-{max(realised):.2f} by pilot), labels planned "
          f"{int(np.median(labels))} (median; {min(labels)}-{max(labels)}), reported/predicted half-width "
          f"{np.mean(ratios):.3f} on average ({min(ratios):.2f}-{max(ratios):.2f}); {reps} draws per pilot.")


if __name__ == "__main__":
    main()
