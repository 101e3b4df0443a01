"""How long ``judgelab`` takes to start: wall time and CPU per command, from an empty folder.

Run: ``python bench/startup.py`` (about a minute; ``--reps 3`` for a quick look).

Each command runs ``--reps`` times as a fresh process through the installed console script
(the ``judgelab`` next to this Python), in an empty temporary folder; the figures are the
median wall time and the median CPU (user + system, from ``getrusage`` of the children).
The verbs are imported lazily (``judgelab/cli/__init__.py``), so ``--version``, ``--help`` and
the light verbs do not pay for pandas, DuckDB, SciPy, Altair, Streamlit and the Anthropic SDK;
``init`` shows what a verb that opens the database costs.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._measure import machine

COMMANDS: list[list[str]] = [
    ["--version"],
    ["--help"],
    ["examples", "ex"],
    ["init", "--db", "x.duckdb"],
]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(exe: str, argv: list[str], reps: int) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds of ``exe *argv`` over ``reps`` fresh runs."""
    walls, cpus = [], []
    for _ in range(reps):
        with tempfile.TemporaryDirectory(prefix="judgelab-startup-") as folder:
            cpu0, t0 = _children_cpu(), time.perf_counter()
            done = subprocess.run([exe, *argv], cwd=folder, capture_output=True, text=True, timeout=120)
            walls.append(time.perf_counter() - t0)
            cpus.append(_children_cpu() - cpu0)
        if done.returncode != 0:
            raise SystemExit(f"judgelab {' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    default_exe = Path(sys.executable).parent / "judgelab"
    parser.add_argument("--judgelab", default=str(default_exe if default_exe.exists() else shutil.which("judgelab")),
                        help="The console script to time [default: the one next to this Python].")
    args = parser.parse_args()
    print(f"judgelab startup, median of {args.reps} fresh processes ({machine()}); {args.judgelab}")
    print(f"  {'command':32s} {'wall':>8s} {'CPU':>8s}")
    for argv in COMMANDS:
        wall, cpu = measure(args.judgelab, argv, args.reps)
        print(f"  {'judgelab ' + ' '.join(argv):32s} {wall:7.2f}s {cpu:7.2f}s")


if __name__ == "__main__":
    main()
