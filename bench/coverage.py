"""Do the report's 95% intervals cover 93-97% where users are? The full grid, and the method choice.

Run: ``python bench/coverage.py`` (the full 72-cell grid; ``--reps`` datasets per cell, 400 by
default, roughly 20-40 minutes on 2 CPUs), ``--cells test`` for the subset the slow test runs,
``--compare`` for the interval methods side by side at 15 and 30 tasks (how the t interval was
chosen), ``--small`` for 8 and 10 tasks (where the report starts calling intervals unreliable),
``--raters`` for the cells where the raters' spread comes from 3-5 raters with one label per
answer (``RATER_CELLS``; the table then says how often the spread stood at its floor, or within
its noise), ``--rater-study`` for issue 32's 24 cells (``RATER_STUDY``: 15/30/100 tasks x 1/3
raters per answer of four x leniency 0/0.4 x simple random/judge-stratified), ``--two-raters`` for
issue 43's 8 cells (``TWO_RATER_CELLS``: a panel of two raters, one label per answer, 30/100 tasks x
leniency 0/0.4 x balanced/unbalanced families), with every residual and gap also under
``interval="panel"`` against the panel's own truth; there a family's residual and PPI are refused
an interval for raters like these, and the table says how often (coverage counts the others).

The model, the truths and the intervals are :mod:`judgelab.calibration.stats._coverage`'s: every interval
is computed by the same functions the calibration report calls. Coverage is in percent; its Monte
Carlo standard error at 95% is ``sqrt(0.95 · 0.05 / reps)`` (1.1 points at 400 datasets).
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

from judgelab.calibration.stats import self_preference_gap
from judgelab.calibration.stats._bootstrap import percentile_interval
from judgelab.calibration.stats._coverage import (
    COVERAGE_GRID,
    INTERVALS,
    PANEL_INTERVALS,
    RATER_CELLS,
    RATER_STUDY,
    TEST_CELLS,
    TWO_RATER_CELLS,
    CoverageCell,
    CoverageResult,
    _simulate,
    _truths,
    coverage_table,
)


def _short(name: str) -> str:
    return (name.replace("residual ", "r ").replace(" (pass)", "").replace(" (score)", " sc")
            .replace(" (pass, panel)", " panel").replace(" (score, panel)", " sc panel"))


def _print(table: pd.DataFrame, results: list[CoverageResult], reps: int) -> None:
    names = INTERVALS + tuple(n for n in PANEL_INTERVALS if n not in INTERVALS)
    shown = table.rename(columns={n: _short(n) for n in names})
    with pd.option_context("display.width", 300, "display.max_columns", 40, "display.max_rows", 200):
        print(shown.to_string(index=False, na_rep="refused"))
    se = 100 * math.sqrt(0.95 * 0.05 / reps)
    cols = [c for c in names if c in table]
    outside = (table[cols] < 93) | (table[cols] > 97)
    far = (table[cols] < 93 - 2 * se) | (table[cols] > 97 + 2 * se)
    # An interval the report marks unreliable in most datasets is not printed plainly, so its
    # coverage is not a promise (the minority family of an unbalanced 15-task sample).
    flagged = pd.DataFrame([{c: res.unreliable.get(c, 0.0) > 0.5 for c in cols} for res in results])
    print(f"\n{reps} datasets per cell; Monte Carlo se of a 95% coverage: {se:.2f} points. "
          f"Cells x intervals outside 93-97: {int(outside.to_numpy().sum())} of "
          f"{int(table[cols].notna().to_numpy().sum())} (refused ones left out); "
          f"outside 93-97 by more than 2 se: {int(far.to_numpy().sum())}, of which "
          f"{int((far & flagged).to_numpy().sum())} marked unreliable in most datasets.")
    for i, res in enumerate(results):
        for c in cols:
            if far.loc[i, c]:
                note = " (marked unreliable)" if flagged.loc[i, c] else ""
                print(f"  {res.cell.label()}: {_short(c)} {100 * res.coverage[c]:.1f}%{note}")
    refusals = [f"  {res.cell.label()}: " + ", ".join(f"{_short(c)} {round(res.refused[c] * reps)}" for c in cols
                                                    if res.refused.get(c, 0.0) > 0)
                for res in results if any(v > 0 for v in res.refused.values())]
    if refusals:
        print(f"Datasets (of {reps}) whose interval was refused (two raters: no interval for raters like these; the "
              "line says why and names --interval panel or a third rater); coverage counts the others:")
        print("\n".join(refusals))
    pooled = table[cols].mean()
    print("Mean coverage over the cells: " + ", ".join(f"{_short(k)} {v:.1f}" for k, v in pooled.items()))
    used = [f"  {res.cell.label()}: " + ", ".join(f"{_short(c)} {100 * res.floored.get(c, 0.0):.0f}%" for c in cols
                                                   if res.floored.get(c, 0.0) > 0)
            for res in results if any(v > 0 for v in res.floored.values())]
    if used:
        print("Datasets whose raters' spread was estimated within its noise (two-way interval) or stood at its "
              "floor; the report line says so:")
        print("\n".join(used))
    print("worst bias/se: the largest |mean error| / its Monte Carlo se over the residuals, gaps and PPI "
          "(design-weighted in the judge-stratified cells); below ~3 is unbiased within Monte Carlo error.")


def compare_methods(reps: int) -> None:
    """The gap's interval at few tasks: percentile task bootstrap (the former method) vs t."""
    rows = []
    for t in (15, 30):
        for unbalanced in (False, True):
            cell = CoverageCell(t, 1, 0.0, unbalanced, "srs")
            gen = np.random.default_rng([7, t, int(unbalanced)])
            truth = _truths(0.0)["gap (pass)"]
            hits = {"percentile bootstrap (tasks)": 0, "normal (linearised)": 0, "t (linearised)": 0}
            for _ in range(reps):
                d = _simulate(cell, gen)
                judge = (d.judge >= 4).astype(float)
                human = (d.labels.groupby("answer")["score"].mean().to_numpy() >= 4).astype(float)
                est = self_preference_gap(judge, human, d.family, d.task, own_family="own", interval="panel")
                hits["t (linearised)"] += est.covers(truth)
                z = 1.959963984540054 * est.extra["se"]
                hits["normal (linearised)"] += abs(est.estimate - truth) <= z
                lo, hi = _percentile_gap(judge - human, d.family, d.task, gen)
                hits["percentile bootstrap (tasks)"] += lo <= truth <= hi
            rows.append({"tasks": t, "families": "unbalanced" if unbalanced else "balanced",
                         **{k: round(100 * v / reps, 1) for k, v in hits.items()}})
    print("Coverage (%) of the self-preference gap's 95% interval, one rater per answer, simple random tasks:")
    print(pd.DataFrame(rows).to_string(index=False))
    print(f"{reps} datasets per row; Monte Carlo se {100 * math.sqrt(0.95 * 0.05 / reps):.2f} points.")


def _percentile_gap(resid: np.ndarray, family: np.ndarray, task: np.ndarray, gen: np.random.Generator,
                    n_resamples: int = 400) -> tuple[float, float]:
    """Percentile bootstrap over tasks of the gap (the pre-issue-15 interval), vectorised."""
    codes = np.unique(task, return_inverse=True)[1]
    g = codes.max() + 1
    counts = np.stack([np.bincount(gen.integers(0, g, g), minlength=g) for _ in range(n_resamples)]).astype(float)
    out = []
    for fam in ("own", "other"):
        sel = family == fam
        num = counts @ np.bincount(codes[sel], weights=resid[sel], minlength=g)
        den = counts @ np.bincount(codes[sel], minlength=g).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(100 * num / den)
    return percentile_interval(out[0] - out[1], 0.95)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400, help="datasets per cell (default 400)")
    parser.add_argument("--cells", choices=["full", "test"], default="full")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compare", action="store_true", help="compare interval methods at 15 and 30 tasks")
    parser.add_argument("--small", action="store_true", help="8 and 10 tasks")
    parser.add_argument("--raters", action="store_true", help="the raters' spread from 3-5 raters, one label each")
    parser.add_argument("--rater-study", action="store_true",
                        help="issue 32's 24 cells: 15/30/100 tasks x 1/3 raters x leniency 0/0.4 x srs/stratified")
    parser.add_argument("--two-raters", action="store_true",
                        help="issue 43's 8 cells: two raters, one label per answer, 30/100 tasks x leniency 0/0.4 x "
                             "balanced/unbalanced, raters vs panel")
    args = parser.parse_args()
    started = time.perf_counter()
    if args.compare:
        compare_methods(args.reps)
        print(f"\n{time.perf_counter() - started:.0f} s")
        return
    if args.small:
        cells = tuple(CoverageCell(t, m, s, False, samp) for t in (8, 10) for m, s in ((1, 0.0), (2, 0.4))
                      for samp in ("srs", "judge-stratified"))
    elif args.raters:
        cells = RATER_CELLS
    elif args.rater_study:
        cells = RATER_STUDY
    elif args.two_raters:
        cells = TWO_RATER_CELLS
    else:
        cells = COVERAGE_GRID if args.cells == "full" else TEST_CELLS

    def progress(res: CoverageResult) -> None:
        low = min(v for v in res.coverage.values() if not math.isnan(v))
        print(f"  {res.cell.label()}: lowest {100 * low:.1f}%, {res.seconds:.0f} s", file=sys.stderr, flush=True)

    table, results = coverage_table(cells, args.reps, seed=args.seed, progress=progress, panel_scope=args.two_raters)
    _print(table, results, args.reps)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
