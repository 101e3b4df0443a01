"""Forecast against realised: the active and the stratified plans on both data models (issue 43).

Run: ``python bench/forecast_realised.py`` (about 75 s on 2 CPUs; 300 pools per data model, about
2.5 minutes); ``--reps N`` pools per data model (default 150), ``--pilot`` the pilot's labels
(default 40), ``--target`` the gap's half-width in pp (default 10), ``--n`` the stratified design's
labels (default 240, about what simple random sampling needs for ±10 pp).

Two data models, 800 answers (400 tasks, two families, one label per answer), the judge wrong on
15% of them (:func:`judgelab.calibration.active.pool_model` at 85% agreement):

* ``threshold``: the judge's errors sit where its score is next to the pass threshold (the model
  the plan's prior assumes); the active and stratified designs should save here;
* ``random``: the same pools, but each human verdict is the judge's, flipped on 15% of the answers
  at random (issue 43's second data model): the score tells nothing about where the errors are.

For each pool:

* **forecast**: a pilot of 40 answers drawn by simple random sampling and labelled;
  :func:`judgelab.calibration.active.predicted_saving` from it gives the labels ratio against simple random
  sampling the plan is planned on (``ratio`` for the active design, ``stratified`` for the
  stratified one: 1 when it says "no saving expected") and whether it said so;
* **active, realised**: :func:`judgelab.calibration.active.run_active`, the store's procedure (pilot, batches,
  the gate :func:`judgelab.calibration.active.batch_floor` that falls back to simple random sampling,
  repeated intervals, stop at the target); beside it the same procedure with every batch drawn by
  simple random sampling (floor 1). Realised labels ratio: mean labels of the active run over mean
  labels of the simple random one, both stopped by the same rule at the same target. Width ratio: the
  active run's final half-width over that of a simple random sample of as many answers read as
  ``judgelab calibrate`` reads it (:func:`judgelab.calibration.stats.self_preference_gap`, t interval), whose
  square is the labels ratio at equal width (the repeated interval's price for looking included);
* **stratified, realised**: :func:`judgelab.calibration.design.design_sample` with ``n`` labels, answers
  stratified by the judge's verdict, planned from the same pilot, with the ``gap`` allocation, or
  ``proportional`` when the pilot shows no saving (:func:`judgelab.calibration.design.stratified_gate`, the
  fall-back ``judgelab design`` draws through); read with its weights and
  strata. Its labels ratio is its mean half-width over that of simple random samples of ``n``
  answers, squared.

Coverage: share of the final intervals that hold the true gap of the data model (the judge's
behaviour, not the pool's).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import ndtr

# Run from a checkout without installing: the repository root holds the packages.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judgelab.calibration.active import SimulatedPool, pool_model, predicted_saving, run_active, simulate_pool
from judgelab.calibration.active._simulate import _MU, _PASS, _SD_ANSWER, _SD_TASK
from judgelab.calibration.design import design_sample, stratified_gate
from judgelab.calibration.stats import self_preference_gap

N_TASKS, WRONG = 400, 0.15


def random_errors(sim: SimulatedPool, rng: np.random.Generator) -> SimulatedPool:
    """The second data model: the human verdict is the judge's, flipped on 15% of the answers at random."""
    judge = sim.pool.judge_pass
    human = np.where(rng.random(judge.size) < WRONG, 1 - judge, judge)
    return replace(sim, human_pass=human, human_score=np.where(human == 1, 4.0, 2.0))


def true_gap(model: str) -> float:
    """The data model's gap in pp (the judge's behaviour, not one pool's)."""
    m = pool_model(0.85)
    if model == "threshold":
        return m.truths()["gap (pass)"]
    sd = math.hypot(math.hypot(_SD_TASK, _SD_ANSWER), m.sd_judge)
    # A wrong verdict moves the residual by +1 where the judge passes and -1 where it fails.
    passes = [float(ndtr((_MU[f] + (m.own_bias if f == 0 else 0.0) - _PASS) / sd)) for f in range(2)]
    return 100 * WRONG * 2 * (passes[0] - passes[1])


def _gap(sim: SimulatedPool, rows: np.ndarray, weights: np.ndarray | None = None,
         strata: np.ndarray | None = None) -> tuple[float, float, float]:
    p = sim.pool
    # Sampled by answer: the answer is the cluster (a task's two answers may fall in two strata).
    e = self_preference_gap(p.judge_pass[rows], sim.human_pass[rows], p.family[rows], p.answer_id[rows],
                            own_family="own", weights=weights, strata=strata, interval="panel")
    return e.half_width, e.ci_low, e.ci_high


def one(model: str, rep: int, *, target: float, n_strat: int, truth: float, pilot_n: int = 40) -> dict[str, float]:
    """One pool of ``model``: the forecasts and the realised figures of both plans."""
    rng = np.random.default_rng([43, rep])
    sim = simulate_pool(pool_model(0.85), N_TASKS, rng)
    if model == "random":
        sim = random_errors(sim, rng)
    pool, size = sim.pool, sim.pool.answer_id.size
    labels = np.full(size, np.nan)
    pilot = rng.choice(size, pilot_n, replace=False)
    labels[pilot] = sim.human_pass[pilot]
    f = predicted_saving(pool, target_half_width=target, human_pass=labels, own_family="own")
    out: dict[str, float] = {"active forecast": f.ratio, "strat forecast": f.stratified,
                             "no saving said": float(f.no_saving)}

    run = run_active(sim, target_half_width=target, rng=rng)
    srs_run = run_active(sim, target_half_width=target, rng=rng, floor=1.0)
    last = run.final()
    later = run.looks["fell_back"].iloc[1:]
    srs_rows = rng.choice(size, run.labels, replace=False)
    out.update({"active labels": run.labels, "srs labels": srs_run.labels,
                "active hw": last["half_width"], "srs hw same n": _gap(sim, srs_rows)[0],
                "active fell back": float(later.mean()) if later.size else 0.0,
                "active covers": float(last["ci_low"] <= truth <= last["ci_high"]),
                "srs rule covers": float(srs_run.final()["ci_low"] <= truth <= srs_run.final()["ci_high"])})

    frame = sim.frame().assign(human_pass=labels, category="c", n_words=100)
    allocation, _ = stratified_gate(frame, "gap")  # the product's gate (judgelab design), not a copy
    d = design_sample(frame, n=n_strat, allocation=allocation, strata=["judge_bin"], paired=False, overlap=0.0,
                      own_family="own", rng=rng)
    position = pd.Series(np.arange(size), index=pool.answer_id)
    rows = position.reindex(d.items["answer_id"]).to_numpy()
    hw, lo, hi = _gap(sim, rows, d.items["weight"].to_numpy(float), d.items["stratum"].to_numpy())
    srs_hw = _gap(sim, rng.choice(size, len(rows), replace=False))[0]
    out.update({"strat hw": hw, "strat srs hw": srs_hw, "strat fell back": float(allocation == "proportional"),
                "strat covers": float(lo <= truth <= hi), "strat labels": float(len(rows))})
    return out


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per data model and plan: forecast, realised, fall-backs, coverage."""
    rows = []
    for model, g in frame.groupby("model", sort=False):
        reps = len(g)
        rows.append({
            "data model": model, "plan": "active", "forecast x SRS": g["active forecast"].mean(),
            "forecast range": f"{g['active forecast'].quantile(0.1):.2f}-{g['active forecast'].quantile(0.9):.2f}",
            "said no saving %": 100 * g["no saving said"].mean(),
            "realised labels x SRS (same rule)": g["active labels"].mean() / g["srs labels"].mean(),
            "width x SRS same n": (g["active hw"] / g["srs hw same n"]).mean(),
            "batches fell back %": 100 * g["active fell back"].mean(),
            "coverage %": 100 * g["active covers"].mean(), "SRS coverage %": 100 * g["srs rule covers"].mean(),
            "pools": reps})
        width = g["strat hw"].mean() / g["strat srs hw"].mean()
        rows.append({
            "data model": model, "plan": "stratified", "forecast x SRS": g["strat forecast"].mean(),
            "forecast range": f"{g['strat forecast'].quantile(0.1):.2f}-{g['strat forecast'].quantile(0.9):.2f}",
            "said no saving %": 100 * g["no saving said"].mean(),
            "realised labels x SRS (same rule)": width**2, "width x SRS same n": width,
            "batches fell back %": 100 * g["strat fell back"].mean(),
            "coverage %": 100 * g["strat covers"].mean(), "SRS coverage %": math.nan, "pools": reps})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=150)
    parser.add_argument("--target", type=float, default=10.0)
    parser.add_argument("--n", type=int, default=240)
    parser.add_argument("--pilot", type=int, default=40, help="labels of the pilot the forecasts read")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows = []
    for model in ("threshold", "random"):
        truth = true_gap(model)
        rows += [{"model": model, **one(model, rep, target=args.target, n_strat=args.n, truth=truth,
                                                   pilot_n=args.pilot)}
                 for rep in range(args.reps)]
    table = summarise(pd.DataFrame(rows))
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 20)
    print(f"{args.reps} pools per data model; 800 answers, judge wrong on 15%; active target ±{args.target:g} pp "
          f"on the gap; stratified design {args.n} labels; forecast from a {args.pilot}-label pilot")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
