"""The judge loop's selection trap: pick the best of 20 equal judge versions, then report it.

Run: ``python bench/judge_loop_selection.py`` (``--reps N`` replicates, ``--tasks T`` labelled
tasks of two answers each, ``--versions V`` candidate versions, ``--seed S``).

Each replicate simulates labelled answers (likert5 people's scores; pass at 4 and above) and a
baseline judge A plus ``V`` candidate versions B1..BV of *equal true quality*: every judge is the
true score plus independent noise, read on the same scale. So the true difference in pass/fail
agreement between any version and A is zero. The labelled answers are split 70/30 into a
tuning and a held-out part (:func:`judgelab.calibration.loop.make_split`, stratified by family).

- **honest**: pick the version with the best agreement difference on the *tuning* part, then
  report its difference on the *held-out* part (:func:`judgelab.calibration.loop.compare_judges`, paired
  task-clustered bootstrap): the 95% interval covers the true difference (0) about 95% of the time.
- **held-out picking**: pick the best version on the *held-out* part and report it on the same
  part: the reported gain is inflated and the interval covers zero far less often.
- **held-out picking, Bonferroni for V looks**: the same with the interval widened for the ``V``
  versions looked at (what ``judgelab compare --held-out`` does as the looks add up).

Prints the coverage of each procedure with its Monte Carlo standard error, and the mean reported
gain in percentage points.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judgelab.calibration.loop import compare_judges, make_split

LEVELS = np.arange(1.0, 6.0)


def _simulate(rng: np.random.Generator, n_tasks: int, n_versions: int) -> dict[str, np.ndarray]:
    task = np.repeat(np.arange(n_tasks), 2).astype(str)
    family = np.tile(["x", "y"], n_tasks)
    difficulty = np.repeat(rng.normal(0, 0.8, n_tasks), 2)
    truth = np.clip(np.rint(3 + difficulty + rng.normal(0, 0.8, task.size)), 1, 5)
    judges = np.clip(np.rint(truth[None, :] + rng.normal(0, 0.9, (n_versions + 1, task.size))), 1, 5)
    return {"task": task, "family": family, "human": truth, "judges": judges}


def _agreement_gain(data: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
    """Each version's pass/fail agreement minus A's on ``rows``, in percentage points."""
    hp = data["human"][rows] >= 4
    right = (data["judges"][:, rows] >= 4) == hp[None, :]
    return 100 * (right[1:].mean(axis=1) - right[0].mean())


def _report(data: dict[str, np.ndarray], rows: np.ndarray, k: int, *, looks: int, resamples: int,
            seed: int) -> tuple[float, float, float]:
    h, a, b = data["human"][rows], data["judges"][0, rows], data["judges"][k + 1, rows]
    result = compare_judges(h, a, b, human_pass=(h >= 4).astype(float), pass_a=(a >= 4).astype(float),
                            pass_b=(b >= 4).astype(float), human_category=h, family=data["family"][rows],
                            tasks=data["task"][rows], levels=LEVELS, looks=looks, n_resamples=resamples, rng=seed)
    fig = result.figure("agreement").diff
    return fig.estimate, fig.ci_low, fig.ci_high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--tasks", type=int, default=150)
    parser.add_argument("--versions", type=int, default=20)
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    procedures = ("honest (pick on tuning, report on held-out)", "pick and report on held-out",
                  f"pick and report on held-out, Bonferroni x{args.versions}")
    covered = {p: 0 for p in procedures}
    gains = {p: [] for p in procedures}  # type: dict[str, list[float]]
    start = time.perf_counter()
    for rep in range(args.reps):
        data = _simulate(rng, args.tasks, args.versions)
        ids = np.arange(data["task"].size).astype(str)
        parts = make_split(ids, data["family"], fraction=0.3, rng=rep)
        held = np.array([parts[i] == "held-out" for i in ids])
        tuning_rows, held_rows = np.flatnonzero(~held), np.flatnonzero(held)
        k_tune = int(np.argmax(_agreement_gain(data, tuning_rows)))
        k_held = int(np.argmax(_agreement_gain(data, held_rows)))
        for name, k, looks in ((procedures[0], k_tune, 1), (procedures[1], k_held, 1),
                               (procedures[2], k_held, args.versions)):
            est, lo, hi = _report(data, held_rows, k, looks=looks, resamples=args.resamples, seed=rep)
            covered[name] += int(lo <= 0.0 <= hi)
            gains[name].append(est)
    elapsed = time.perf_counter() - start
    print(f"{args.reps} replicates; {args.tasks} labelled tasks x 2 answers, 70/30 split; {args.versions} versions "
          f"of equal true quality against a baseline (true difference in agreement: 0); "
          f"{args.resamples} bootstrap resamples; {elapsed:.0f} s")
    for name in procedures:
        share = covered[name] / args.reps
        se = np.sqrt(share * (1 - share) / args.reps)
        print(f"  {name}: coverage of the true difference {share:.1%} (MC s.e. {se:.1%}); mean reported gain "
              f"{np.mean(gains[name]):+.2f} percentage points")


if __name__ == "__main__":
    main()
