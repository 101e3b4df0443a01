"""How many labels does active labelling with its stopping rule need, against today's designs?

Run: ``python bench/active_economy.py`` (about 15 minutes on 2 CPUs; ``--quick`` for a smoke run,
``--scale likert5`` or ``numeric100`` for one judge scale, ``--agreements 0.85`` for one level,
``--unrelated 0.25`` for the second data model: a quarter of the judge's readings unrelated to
quality, so its errors are not where its score sits next to the threshold).

The pools (stated, because the saving depends on them): :mod:`judgelab.calibration.active._simulate`,
the coverage suite's model with the judge's and the humans' noise scaled so that the judge's pass
verdict agrees with a human's on 70%, 85% or 95% of the answers, and a real self-preference gap
(the judge reads its own family's answers 0.15 points better: a gap of 5-6 pp). ``--tasks`` tasks
(4,000 by default), one answer per family each, one human label per answer. The judge scores on a
1-5 scale (``likert5``: the coverage suite's judge) or on 0-100 (``numeric100``: the same
reading, without the rounding that hides how close it came to the threshold). A fresh pool per
redraw; the truth is the model's.

Each strategy labels until the self-preference gap's 95% half-width (pass verdicts) meets
``--target`` pp, and the table gives the labels it used and how often its final interval
covered the true gap:

* **SRS fixed n**: simple random sample of tasks (both answers labelled), read with the report's
  t interval (:func:`judgelab.calibration.stats.self_preference_gap`, with its rule-of-three floor under
  the variance while fewer than 3 tasks disagreed), at the one sample size whose mean half-width
  meets the target: the best a fixed plan can do, and only with hindsight (it needs the true
  variance);
* **SRS peeking**: the same, looking after every 20 labels (from 15 tasks on, where the report
  stops marking the interval unreliable) and stopping at the first look whose t interval meets
  the target: what a team without a stopping rule does (the promise breaks);
* **SRS, same rule**: the same sample, with the active design's repeated intervals
  (:func:`judgelab.calibration.active.repeated_intervals`, read as t with the tasks less one) looked at
  every 10% of the fixed n;
* **stratified fixed n / peeking**: today's design (:func:`judgelab.calibration.design.design_sample`,
  ``gap`` allocation, paired by task, judge-verdict strata, planned without a pilot), nested as it
  grows, read with its weights and strata;
* **active + rule**: :func:`judgelab.calibration.active.run_active`: batches drawn with probabilities that
  grow with the judge's doubt, the AIPW estimate, the repeated interval of the O'Brien-Fleming-type
  spending plan, stopping at the first look that meets the target;
* **active + rule, judge flips**: the same on pools whose judge reads every answer twice
  (``rereading=LLMBAR_REREADING``: a second order or format draws its noise afresh) and the
  design sees where the two verdicts differ; the first reading is the same judge, so the
  strategies above are its baselines too. :func:`flip_profiles` prints first how often this judge
  flips and how many of its errors sit there, next to LLMBar's judges (their published two-order
  verdicts in ``tests/data/llmbar``);
* **ideal**: the bound (:func:`ideal_design`): one batch with the Neyman probabilities from each
  answer's true chance of passing given the judge's score and family, no looks, at the size whose
  95% half-width meets the target; without a floor, with the active design's floor, with an
  endless pool (without the pool's own variance), and for the flipping judge (its flips seen).

**Predicted against realised.** Before the team commits, the plan predicts its own saving from
the labels it has (:func:`judgelab.calibration.active.predicted_saving`, after the pilot, the second and
the third batch): ``predicted x SRS`` on the active row (its ``ratio``: the larger of the model's
prediction and the design effect the draws so far measure) and on the stratified row (its
``stratified_ratio``), next to the realised ``x SRS fixed``.

The ``x SRS fixed`` column divides by the SRS fixed n, ``x SRS rule`` by SRS read with the same
rule (what a team that must also stop validly would use without the active design).
Coverage is of the interval at the labels given (for the rules: where they stopped); its Monte
Carlo standard error at 200 redraws is about 1.5 points.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import special

# Run from a checkout without installing: the repository root holds the packages.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judgelab.calibration.active import (
    LLMBAR_REREADING,
    PoolModel,
    SimulatedPool,
    pool_model,
    rare_event_variance,
    repeated_intervals,
    run_active,
    sampling_probabilities,
    simulate_pool,
)
from judgelab.calibration.design import PlanningModel, allocate, design_sample
from judgelab.calibration.stats import self_preference_gap

AGREEMENTS = (0.70, 0.85, 0.95)


def srs_curve(sim: SimulatedPool, gen: np.random.Generator, max_tasks: int) -> pd.DataFrame:
    """Gap estimate and t half-width of a growing simple random sample of tasks, at every size.

    Vectorised (cumulative sums over one permutation of the tasks); equal to
    :func:`self_preference_gap` on the same tasks (checked for a few sizes by :func:`check_srs`).
    """
    p = sim.pool
    e = 100 * (p.judge_pass - sim.human_pass)
    d = np.bincount(p.task, weights=np.where(p.family == "own", e, -e), minlength=p.n_tasks)
    order = gen.permutation(p.n_tasks)[:max_tasks]
    x = d[order]
    n = np.arange(1, x.size + 1)
    mean = np.cumsum(x) / n
    var = np.maximum(np.cumsum(x**2) - n * mean**2, 0) / np.maximum(n - 1, 1)
    # The report's floor (judgelab.calibration.stats.rare_event_floor): as if 3 of the n tasks had
    # disagreed by one verdict (an answer's disagreement is one verdict or none).
    var_mean = np.maximum(var / n, rare_event_variance(n))
    q = special.stdtrit(np.maximum(n - 1, 1), 0.975)
    half = q * np.sqrt(var_mean)
    return pd.DataFrame({"tasks": n, "labels": 2 * n, "estimate": mean, "half": half, "var": var_mean,
                         "order": order})


def check_srs(sim: SimulatedPool, curve: pd.DataFrame) -> None:
    """The vectorised curve is the report's estimator (a few sizes)."""
    p = sim.pool
    for k in (10, 50, 200):
        if k > len(curve):
            continue
        tasks = set(curve["order"].iloc[:k].tolist())
        keep = np.isin(p.task, list(tasks))
        est = self_preference_gap(p.judge_pass[keep], sim.human_pass[keep], p.family[keep], p.task[keep],
                                  own_family="own", interval="panel")
        row = curve.iloc[k - 1]
        same_half = abs(est.half_width - row["half"]) < 1e-6 or (math.isnan(est.half_width) and row["half"] == 0)
        assert abs(est.estimate - row["estimate"]) < 1e-9 and same_half, k


def stratified_curve(sim: SimulatedPool, gen: np.random.Generator, grid: list[int]) -> pd.DataFrame:
    """Today's design grown along ``grid`` (labels), nested: each size adds units within each stratum."""
    frame = sim.frame().assign(category="c", n_words=100)
    top = max(grid)
    d = design_sample(frame, n=top, allocation="gap", strata=["judge_bin"], paired=True, overlap=0.0,
                      own_family="own", model=PlanningModel(), rng=int(gen.integers(2**31)))
    inc = d.inclusion
    unit_of = inc["unit_index"].to_numpy()
    stratum_of = inc["stratum_index"].to_numpy()
    sizes = d.strata["N_units"].to_numpy()
    ranks = np.empty(unit_of.max() + 1)
    first = np.unique(unit_of, return_index=True)[1]
    unit_stratum = stratum_of[first]
    for h in range(len(sizes)):
        members = np.flatnonzero(unit_stratum == h)
        ranks[members] = gen.permutation(members.size)
    judge = sim.pool.judge_pass
    rows = []
    for labels in grid:
        n_h = allocate(d.strata["n_units"].to_numpy(float), min(labels // 2, int(sizes.sum())), capacity=sizes,
                       minimum=2)
        keep = ranks[unit_of] < n_h[stratum_of]
        weight = (sizes / np.maximum(n_h, 1))[stratum_of]
        est = self_preference_gap(judge[keep], sim.human_pass[keep], sim.pool.family[keep], sim.pool.task[keep],
                                  own_family="own", weights=weight[keep], strata=stratum_of[keep], interval="panel")
        rows.append({"labels": int(keep.sum()), "estimate": est.estimate, "half": est.half_width,
                     "low": est.ci_low, "high": est.ci_high})
    return pd.DataFrame(rows)


def _cell(sim: SimulatedPool) -> npt.NDArray[np.str_]:
    """What the design sees of each answer: its family, the judge's score and whether it flipped."""
    seen = np.char.add(sim.pool.family, np.char.mod("%g", sim.pool.judge_score))
    return np.asarray(np.where(sim.pool.flipped, np.char.add(seen, "f"), seen))


@functools.cache
def _population(model: PoolModel, scale: str,
                rereading: float) -> tuple[npt.NDArray[np.str_], npt.NDArray[np.float64], float]:
    """Per cell (:func:`_cell`) the chance that a person passes the answer, and ``Var(d)`` of a task.

    Estimated once per model, scale and judge on 400,000 tasks: the ideal design with and without
    a floor share them.
    """
    big = simulate_pool(model, 400_000, np.random.default_rng(2), judge_scale=scale,  # type: ignore[arg-type]
                        rereading=rereading)
    cells, code = np.unique(_cell(big), return_inverse=True)
    chance = np.bincount(code, weights=big.human_pass) / np.bincount(code)
    e = 100 * (big.pool.judge_pass - big.human_pass)
    d = np.bincount(big.pool.task, weights=np.where(big.pool.family == "own", e, -e))
    return cells, chance, float(d.var())


def ideal_design(model: PoolModel, scale: str, *, tasks: int, target: float, floor: float,
                 check: bool = False, rereading: float = 0.0) -> dict[str, float]:
    """Labels an ideal one-batch active design would need: the bound no stopping rule can beat.

    The ideal knows each answer's true chance that a person passes it given what the design can
    see (the judge's score, the answer's family and, for a judge that reads twice (``rereading``),
    whether its two verdicts differ; estimated on a pool of 400,000 tasks) and
    labels once, with the Neyman probabilities ``π ∝ √(p(1 − p))`` (and the floor), no looks and
    no alpha spent. Its gap variance at ``n`` labels is the Poisson-sampling design variance
    ``Σ c² (1 − π)/π · 100² p(1 − p)`` plus the pool's own ``Var(d)/T`` (``d``: a task's
    own-minus-other residual, in pp); the labels are the smallest ``n`` with
    ``1.96 · √variance ≤ target`` (``endless pool``: without the pool's part). ``floor=0`` is the
    bound itself for any design-unbiased estimate that sees only what the judge said; ``check``
    compares the formula with the spread of the estimate over 400 fresh pools, one draw each.
    """
    cells, chance, var_d = _population(model, scale, rereading)
    pool_var = var_d / tasks
    sim = simulate_pool(model, tasks, np.random.default_rng(3), judge_scale=scale,  # type: ignore[arg-type]
                        rereading=rereading)

    def chance_of(s: SimulatedPool) -> npt.NDArray[np.float64]:
        return np.asarray(chance[np.searchsorted(cells, _cell(s))])

    p = chance_of(sim)
    v = 100**2 * p * (1 - p) / tasks**2
    allowed = (target / 1.96) ** 2 - pool_var

    def design_var(n: float) -> float:
        pi = sampling_probabilities(np.sqrt(v), n, floor=max(floor, 1e-9))
        return float(((1 - pi) / pi * v).sum())

    def smallest(budget: float) -> float:
        lo, hi = 1.0, float(v.size)
        for _ in range(50):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if design_var(mid) <= budget else (mid, hi)
        return hi

    hi = smallest(allowed)
    # With an endless pool (its own variance gone), at the same design variance per label.
    out = {"labels": hi, "endless pool": smallest((target / 1.96) ** 2), "pool share": pool_var / (target / 1.96) ** 2}
    if check:
        truth = model.truths()["gap (pass)"]
        gen = np.random.default_rng(4)
        errors = []
        for _ in range(400):
            s = simulate_pool(model, tasks, gen, judge_scale=scale, rereading=rereading)  # type: ignore[arg-type]
            q = chance_of(s)
            pi = sampling_probabilities(np.sqrt(100**2 * q * (1 - q)), hi, floor=max(floor, 1e-9))
            xi = gen.random(pi.size) < pi
            c = np.where(s.pool.family == "own", 1.0, -1.0) / tasks
            e_hat = 100 * (s.pool.judge_pass - q)
            e_true = 100 * (s.pool.judge_pass - s.human_pass)
            errors.append(float((c * (e_hat + xi / pi * (e_true - e_hat))).sum()) - truth)
        out["check sd"] = float(np.std(errors))
        out["formula sd"] = math.sqrt(design_var(hi) + pool_var)
    return out


def flip_profiles(tasks: int = 100_000) -> pd.DataFrame:
    """How often a judge disagrees with itself, and how many of its errors sit there.

    LLMBar's judges on its Natural set (two orders of each pair, against the gold label; the
    verdicts in ``tests/data/llmbar``) next to the simulated 1-5 judge with
    ``rereading=LLMBAR_REREADING`` against the noiseless verdict (quality of 3.5 or more): the
    check that the flipping judge of the table below flips like judges people use.
    """
    rows = []
    data = Path(__file__).resolve().parent.parent / "tests" / "data" / "llmbar"
    gold = pd.read_csv(data / "pairs_Natural.csv").set_index("id")["gold"].str.lower()
    verdicts = pd.read_csv(data / "verdicts_Natural.csv")
    for judge, got in verdicts.groupby("judge_model"):
        wide = got.pivot_table(index="pair_id", columns="shown_first", values="winner", aggfunc="first")
        right = wide[["a", "b"]].eq(gold.reindex(wide.index), axis=0).to_numpy()
        flip = (wide["a"] != wide["b"]).to_numpy()[:, None]
        rows.append({"judge": f"LLMBar Natural, {judge}", "pairs or answers": len(wide),
                     "right %": 100 * right.mean(), "flips %": 100 * flip.mean(),
                     "errors on flips %": 100 * (~right & flip).sum() / max((~right).sum(), 1)})
    for agreement in AGREEMENTS:
        sim = simulate_pool(pool_model(agreement), tasks, np.random.default_rng(5), rereading=LLMBAR_REREADING)
        wrong = sim.pool.judge_pass != (sim.quality >= 3.5)
        flip = sim.pool.flipped
        rows.append({"judge": f"simulated, {agreement:.0%} agreement with people", "pairs or answers": flip.size,
                     "right %": 100 * (1 - wrong.mean()), "flips %": 100 * flip.mean(),
                     "errors on flips %": 100 * (wrong & flip).sum() / wrong.sum()})
    return pd.DataFrame(rows).round(1)


def summarise(labels: list[float], covered: list[bool]) -> dict[str, Any]:
    arr = np.asarray(labels, dtype=float)
    return {"labels": round(float(np.mean(arr))), "median": round(float(np.median(arr))),
            "p90": round(float(np.quantile(arr, 0.9))), "coverage %": round(100 * float(np.mean(covered)), 1)}


def one_level(agreement: float, scale: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every strategy at one agreement level and judge scale."""
    model = pool_model(agreement, unrelated=args.unrelated)
    truth = model.truths()["gap (pass)"]
    target = args.target
    z = 1.96
    # The SRS need from the model, to size the grids (the fixed n itself is read off the curves).
    probe = simulate_pool(model, 20000, np.random.default_rng([9, int(agreement * 100)]), judge_scale=scale)  # type: ignore[arg-type]
    e = 100 * (probe.pool.judge_pass - probe.human_pass)
    sd = float(np.std(e[probe.pool.family == "own"] - e[probe.pool.family == "other"]))
    srs_need = 2 * (z * sd / target) ** 2
    max_tasks = min(args.tasks, math.ceil(1.6 * srs_need / 2))
    grid = sorted({int(2 * round(x / 2)) for x in np.linspace(0.3 * srs_need, 1.6 * srs_need, 27)})
    srs, strat, active, flipping = [], [], [], []
    for rep in range(args.reps):
        gen = np.random.default_rng([args.seed, int(agreement * 100), rep, scale == "numeric100"])
        sim = simulate_pool(model, args.tasks, gen, judge_scale=scale)  # type: ignore[arg-type]
        curve = srs_curve(sim, gen, max_tasks)
        if rep == 0:
            check_srs(sim, curve)
        srs.append(curve)
        strat.append(stratified_curve(sim, gen, grid))
        run = run_active(sim, target_half_width=target, rng=gen, floor=args.floor, forecast_looks=3)
        active.append(run)
        # The same judge reading every answer twice (its own stream, so the rows above keep theirs).
        other = np.random.default_rng([args.seed, int(agreement * 100), rep, scale == "numeric100", 1])
        twice = simulate_pool(model, args.tasks, other, judge_scale=scale,  # type: ignore[arg-type]
                              rereading=LLMBAR_REREADING)
        flipping.append(run_active(twice, target_half_width=target, rng=other, floor=args.floor))
    rows = []
    label = {"agreement": f"{agreement:.0%}", "judge": scale, "unrelated": args.unrelated,
             "true gap pp": round(truth, 2)}
    # SRS fixed n: the smallest size whose mean half-width meets the target.
    half = np.vstack([c["half"].to_numpy() for c in srs])
    half[:, :9] = np.inf  # at least ten tasks
    n_fixed = int(np.argmax(half.mean(axis=0) <= target))
    cover = [abs(c["estimate"].iloc[n_fixed] - truth) <= c["half"].iloc[n_fixed] for c in srs]
    rows.append({**label, "strategy": "SRS fixed n", **summarise([2 * (n_fixed + 1)] * len(srs), cover)})
    fixed_labels = 2 * (n_fixed + 1)
    # SRS peeking every 20 labels (10 tasks), from 15 tasks on (below that the report marks the
    # interval unreliable, so nobody stops on it).
    labels, cover = [], []
    for c in srs:
        looks = c.iloc[14::10]
        hit = looks[looks["half"] <= target]
        row = hit.iloc[0] if len(hit) else looks.iloc[-1]
        labels.append(row["labels"])
        cover.append(abs(row["estimate"] - truth) <= row["half"])
    rows.append({**label, "strategy": "SRS peeking", **summarise(labels, cover)})
    # SRS with the same rule: repeated intervals at every 10% of the fixed n.
    labels, cover = [], []
    step = max(1, round(0.1 * (n_fixed + 1)))
    for c in srs:
        looks = c.iloc[max(step, 15) - 1::step]
        rci = repeated_intervals(looks["estimate"], looks["var"], target_half_width=target, df=looks["tasks"] - 1)
        ok = np.flatnonzero(rci.half_width <= target)
        finite = np.flatnonzero(np.isfinite(rci.critical))
        k = int(ok[0]) if ok.size else int(finite[-1])
        labels.append(looks["labels"].iloc[k])
        cover.append(bool(rci.ci_low[k] <= truth <= rci.ci_high[k]))
    rows.append({**label, "strategy": "SRS, same rule", **summarise(labels, cover)})
    # Stratified: fixed n (mean half-width meets the target) and peeking along the grid.
    s_half = np.vstack([s["half"].to_numpy() for s in strat])
    met = np.flatnonzero(s_half.mean(axis=0) <= target)
    k = int(met[0]) if met.size else len(grid) - 1
    rows.append({**label, "strategy": "stratified fixed n",
                 **summarise([s["labels"].iloc[k] for s in strat],
                             [s["low"].iloc[k] <= truth <= s["high"].iloc[k] for s in strat]),
                 **_predicted(active, "stratified_ratio")})
    labels, cover = [], []
    for s in strat:
        hit = s[s["half"] <= target]
        row = hit.iloc[0] if len(hit) else s.iloc[-1]
        labels.append(row["labels"])
        cover.append(row["low"] <= truth <= row["high"])
    rows.append({**label, "strategy": "stratified peeking", **summarise(labels, cover)})
    # Active with the stopping rule.
    finals = [r.final() for r in active]
    rows.append({**label, "strategy": "active + rule",
                 **summarise([r.labels for r in active], [f["ci_low"] <= truth <= f["ci_high"] for f in finals]),
                 "looks": round(float(np.mean([len(r.looks) for r in active])), 2),
                 "met target %": round(100 * float(np.mean([r.stopped for r in active])), 1),
                 **_predicted(active, "ratio")})
    score_truth = model.truths()["gap (score)"]
    if scale == "likert5":
        rows[-1]["score-gap coverage %"] = round(100 * float(np.mean(
            [r.score_gap[1] <= score_truth <= r.score_gap[2] for r in active])), 1)
    finals = [r.final() for r in flipping]
    rows.append({**label, "strategy": "active + rule, judge flips",
                 **summarise([r.labels for r in flipping], [f["ci_low"] <= truth <= f["ci_high"] for f in finals]),
                 "looks": round(float(np.mean([len(r.looks) for r in flipping])), 2),
                 "met target %": round(100 * float(np.mean([r.stopped for r in flipping])), 1)})
    # The bound: an ideal one-batch design that knows each answer's chance of passing.
    for floor, name in ((0.0, "ideal, no floor (bound)"), (args.floor, "ideal, floor")):
        ideal = ideal_design(model, scale, tasks=args.tasks, target=target, floor=floor, check=floor > 0)
        rows.append({**label, "strategy": name, "labels": round(ideal["labels"])})
        if floor == 0:
            rows.append({**label, "strategy": "ideal, no floor, endless pool", "labels": round(ideal["endless pool"])})
        if floor > 0:
            print(f"  ideal design check: sd of its estimate over 400 pools {ideal['check sd']:.2f} pp, formula "
                  f"{ideal['formula sd']:.2f} pp; the pool's own variance is {ideal['pool share']:.0%} of the "
                  "target's", file=sys.stderr)
    ideal = ideal_design(model, scale, tasks=args.tasks, target=target, floor=0.0, rereading=LLMBAR_REREADING)
    rows.append({**label, "strategy": "ideal, judge flips (bound)", "labels": round(ideal["labels"])})
    same_rule = next(r["labels"] for r in rows if r["strategy"] == "SRS, same rule")
    for row in rows:
        row["x SRS fixed"] = round(row["labels"] / fixed_labels, 2)
        row["x SRS rule"] = round(row["labels"] / same_rule, 2)
    return rows


def _predicted(runs: list[Any], field: str) -> dict[str, Any]:
    """Mean (and 10-90% range) of the plan's predicted ratio after the pilot, look 2 and look 3."""
    out: dict[str, Any] = {}
    for k, name in ((0, "predicted x SRS, pilot"), (1, "look 2"), (2, "look 3")):
        values = np.array([getattr(r.forecasts[k], field) for r in runs if len(r.forecasts) > k], dtype=float)
        values = values[np.isfinite(values)]
        if values.size:
            lo, hi = np.quantile(values, [0.1, 0.9])
            out[name] = f"{values.mean():.2f} ({lo:.2f}-{hi:.2f})"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200, help="redraws per cell (default 200)")
    parser.add_argument("--tasks", type=int, default=4000, help="tasks in each pool (default 4000)")
    parser.add_argument("--target", type=float, default=5.0, help="target half-width of the gap, pp (default 5)")
    parser.add_argument("--scale", choices=["likert5", "numeric100", "both"], default="both")
    parser.add_argument("--floor", type=float, default=0.2, help="active design's floor (default 0.2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--agreements", type=float, nargs="+", default=list(AGREEMENTS),
                        help="agreement levels (default 0.70 0.85 0.95)")
    parser.add_argument("--unrelated", type=float, default=0.0,
                        help="share of the judge's readings unrelated to quality (default 0: the first data model)")
    parser.add_argument("--quick", action="store_true", help="20 redraws, for a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.reps = 20
    started = time.perf_counter()
    scales = ["likert5", "numeric100"] if args.scale == "both" else [args.scale]
    rows = []
    for scale in scales:
        for agreement in args.agreements:
            cell = time.perf_counter()
            rows += one_level(agreement, scale, args)
            print(f"  {scale}, {agreement:.0%} agreement: {time.perf_counter() - cell:.0f} s", file=sys.stderr)
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 220, "display.max_columns", 20):
        print("A judge that disagrees with itself (the flipping judge of the table: rereading "
              f"{LLMBAR_REREADING:g}):\n")
        print(flip_profiles().to_string(index=False), end="\n\n")
        print(f"Target: the gap's 95% half-width at most ±{args.target:g} pp (pass verdicts). Pools of {args.tasks} "
              f"tasks x 2 families, {args.reps} redraws per cell; active floor {args.floor:g}.\n")
        print(table.astype(object).where(table.notna(), "").to_string(index=False))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
