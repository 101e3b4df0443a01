"""Shared helpers for the benchmarks: run the measured part in a fresh process, read its figures.

Each benchmark measures in a child process (``python bench/<script>.py --child ...``) so that
its peak memory (``ru_maxrss``) is the measured work's alone, not the set-up's or another
benchmark's. The child prints one JSON object as its last stdout line.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
#: Where set-up data is built once and kept between runs (``--workdir``).
WORKDIR = "/tmp/judgelab-bench"


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(
    script: str, args: Sequence[str], *, timeout: float = 600, env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Run ``python bench/SCRIPT --child ARGS`` and return the JSON its last line prints."""
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / script), "--child", *args],
        capture_output=True, text=True, timeout=timeout, cwd=REPO,
        env={**os.environ, **(env or {})},
    )
    if done.returncode != 0:
        raise SystemExit(f"{script} child failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def emit(figures: dict[str, Any]) -> None:
    """Print the child's figures (with its peak memory) as the last stdout line."""
    figures["peak_rss_mb"] = round(peak_rss_mb(), 1)
    print(json.dumps(figures), flush=True)


def percentiles(values: Sequence[float], qs: Sequence[float] = (50, 95)) -> list[float]:
    """``np.percentile`` of ``values`` at ``qs`` (NaN when empty)."""
    if not values:
        return [float("nan")] * len(qs)
    return [float(x) for x in np.percentile(np.asarray(values, dtype=float), qs)]


def machine() -> str:
    """One line about where the figures were measured."""
    load = os.getloadavg()
    return (
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {load[0]:.1f} at start"
    )


def built_once(path: Path, what: str, build: Callable[[Path], None]) -> None:
    """Build ``path`` with ``build`` unless an earlier run left it; say how long it took."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    build(path)
    print(f"  built {what} in {time.perf_counter() - start:.0f} s (kept for later runs)")
