"""How long the cluster bootstrap takes on a large input (100,000 rows in 5,000 clusters).

Run: ``python bench/cluster_bootstrap.py``. Prints seconds per call for 2,000 resamples, the
median of ``--repeats`` calls (tests/stats/test_bootstrap.py checks the result, not the time).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judgelab.calibration.stats import cluster_bootstrap, weighted_mean


def main() -> None:
    """Time :func:`cluster_bootstrap` of a weighted mean and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--clusters", type=int, default=5_000)
    parser.add_argument("--resamples", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    tasks = rng.integers(0, args.clusters, args.rows)
    x = rng.normal(size=args.rows)
    times = []
    for seed in range(args.repeats):
        start = time.perf_counter()
        cluster_bootstrap(weighted_mean, tasks, x, n_resamples=args.resamples, rng=seed)
        times.append(time.perf_counter() - start)
    print(f"cluster bootstrap: {args.rows:,} rows, {args.clusters:,} clusters, {args.resamples:,} resamples: "
          f"median {statistics.median(times):.2f} s over {args.repeats} calls "
          f"(min {min(times):.2f}, max {max(times):.2f})")


if __name__ == "__main__":
    main()
