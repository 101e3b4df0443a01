"""Size that stays flat: next item, Overview, calibrate, design and export at 1,000 and 1,000,000 answers.

Run: ``python bench/size_flat.py`` (default sizes 1,000 and 1,000,000 answers, each labelled
once, on DuckDB and on a throwaway PostgreSQL server from ``tests/pg.py``); ``--sizes 1000,100000``
to develop on; ``--backends duckdb`` for one back-end; ``--no-cli`` for the in-process figures only.

The projects are written by the engine (:func:`judgelab.labeler.store._synthetic.fill_synthetic`: one
``INSERT ... SELECT`` per table), since this measures reading, not import; the DuckDB files are
kept under ``--workdir`` for later runs (PostgreSQL's are built in each run). Each rater's queue
is 250 assignments (200 labelled) at every size: only the project grows (4 raters at 1,000
answers, 5,000 at 1,000,000).

Side by side in one run, medians of repeated calls in this process, warm (after one call):

- **next item**: ``Store.screen(rater, "score")``, the one store call a Rate page render makes
  (queue, resume position, ``open`` event, blinded view);
- **Overview**: the store-side work of the admin Overview page (``judgelab/views/admin_overview.py``):
  ``overview``, ``revalidation_note``, ``rater_quality``, ``screen_figures``, ``screen_summary``,
  ``activity_watermark``, ``active_view``, ``label_seconds`` with ``rater_times``;

and, as ``judgelab`` commands in a child process (wall time and peak memory): ``calibrate``
(200 resamples), ``design --n 1000`` and ``export`` of every kind. Ratios are largest/smallest size.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._measure import WORKDIR, machine
from judgelab.labeler.store import Store
from judgelab.labeler.store._synthetic import RUN_ID, fill_synthetic

#: Every export kind, with the file it is written to.
EXPORTS = {
    "rubric": "toml", "answers": "parquet", "pairs": "parquet", "labels": "parquet", "pair_labels": "parquet",
    "audits": "parquet", "judgements": "parquet", "verdicts": "parquet", "designs": "json",
}


def _median_ms(call: Callable[[], Any], repeats: int) -> float:
    call()  # warm: a store's first call opens the file and fills its caches
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _overview_calls(store: Store) -> dict[str, Callable[[], Any]]:
    """The Overview page's store-side work, call by call."""
    from judgelab.admin import overview, screen_summary
    from judgelab.admin._active import active_view
    from judgelab.admin._quality import rater_quality
    from judgelab.calibration.loop import revalidation_note
    from judgelab.labeler.timing import rater_times

    return {
        "overview": lambda: overview(store),
        "revalidation_note": lambda: revalidation_note(store),
        "rater_quality": lambda: rater_quality(store),
        "screen_figures": store.screen_figures,
        "screen_summary": lambda: screen_summary(store),
        "activity_watermark": store.activity_watermark,
        "active_view": lambda: active_view(store),
        "label_seconds": lambda: rater_times(store.label_seconds()),
    }


def measure_store(store: Store, n_raters: int, repeats: int) -> dict[str, float]:
    """Next item and Overview figures (ms) on one project."""
    rater = n_raters // 2 + 1  # a rater in the middle of the table, not the first rows written
    figures = {"next_item": _median_ms(lambda: store.screen(rater, "score"), repeats * 3)}
    calls = _overview_calls(store)
    figures["overview"] = _median_ms(lambda: [c() for c in calls.values()], repeats)
    for name, call in calls.items():
        figures[f"  {name}"] = _median_ms(call, max(repeats // 2, 1))
    return figures


#: Runs ``judgelab`` and writes the process's own peak memory (``VmHWM``) to a file at exit:
#: ``ru_maxrss`` of a child on Linux keeps the parent's peak across ``exec``.
_CHILD = (
    "import os, runpy, sys\n"
    "out = sys.argv[1]\n"
    "sys.argv = ['judgelab', *sys.argv[2:]]\n"
    "try:\n"
    "    runpy.run_module('judgelab', run_name='__main__')\n"
    "finally:\n"
    "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
    "    open(out, 'w').write(hwm)\n"
)


def _run(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak MiB of ``judgelab ARGS`` in a child process."""
    with tempfile.TemporaryFile("w+") as log, tempfile.NamedTemporaryFile("r") as peak:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _CHILD, peak.name, *args], stdout=log, stderr=log)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            log.seek(0)
            raise SystemExit(f"judgelab {' '.join(args)} failed ({done.returncode}):\n{log.read()[-4000:]}")
        return wall, int(peak.read() or 0) / 1024


def measure_cli(db: str, out: Path) -> dict[str, str]:
    """``calibrate``, ``design`` and each ``export`` as a user types them: wall time and peak memory."""
    figures: dict[str, str] = {}
    jobs = {
        "calibrate": ["calibrate", "--db", db, "--judge-run", RUN_ID, "--resamples", "200",
                      "--out", str(out / "report.md")],
        "design": ["design", "--db", db, "--n", "1000", "--judge-run", RUN_ID, "--raters", "4"],
        **{f"export {kind}": ["export", kind, "--db", db, "--out", str(out / f"{kind}.{fmt}")]
           for kind, fmt in EXPORTS.items()},
    }
    for name, args in jobs.items():
        wall, peak = _run(args)
        figures[name] = f"{wall:.1f} s, {peak:.0f} MiB"
        print(f"    {name}: {figures[name]}", flush=True)
    return figures


def _duckdb_project(workdir: Path, size: int) -> tuple[str, int]:
    path = workdir / f"size_flat_{size}.duckdb"
    if not path.exists():
        start = time.perf_counter()
        part = path.with_suffix(".part")  # a build that fails leaves no file a later run would take as built
        for stale in (part, part.with_name(part.name + ".wal")):
            stale.unlink(missing_ok=True)
        store = Store(part)
        built = fill_synthetic(store, answers=size)
        store.release()
        part.rename(path)
        print(f"  built {path} in {time.perf_counter() - start:.0f} s ({built.labels} labels, kept for later runs)")
    return str(path), max(size // 200, 1)


def _pg_project(admin: str, size: int) -> tuple[str, int]:
    from tests import pg

    url = pg.fresh_database(admin)
    start = time.perf_counter()
    built = fill_synthetic(Store(url), answers=size)
    print(f"  built a PostgreSQL project of {size} answers in {time.perf_counter() - start:.0f} s "
          f"({built.labels} labels)")
    return url, built.raters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,1000000", help="answers (= labels) per project, smallest first")
    parser.add_argument("--backends", default="duckdb,postgres")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-cli", action="store_true", help="leave out calibrate, design and export")
    parser.add_argument("--workdir", default=WORKDIR)
    args = parser.parse_args()
    # Stopped from outside (kill PID): unwind, so the throwaway PostgreSQL server is stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sizes = [int(s) for s in args.sizes.split(",")]
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"size_flat · {machine()}")
    with ExitStack() as stack:
        for backend in args.backends.split(","):
            admin = None
            if backend == "postgres":
                from tests import pg

                admin = stack.enter_context(pg.server(own=True))
            results: dict[int, dict[str, Any]] = {}
            for size in sizes:
                db, n_raters = (_duckdb_project(workdir, size) if admin is None else _pg_project(admin, size))
                print(f"  {backend}, {size:,} answers and labels:", flush=True)
                store = Store(db)
                figures: dict[str, Any] = measure_store(store, n_raters, args.repeats)
                for name, ms in figures.items():
                    print(f"    {name}: {ms:.1f} ms", flush=True)
                store.release() if admin is None else None
                if not args.no_cli:
                    out = Path(tempfile.mkdtemp(prefix="size_flat_", dir=workdir))
                    figures.update(measure_cli(db, out))
                results[size] = figures
            small, big = results[sizes[0]], results[sizes[-1]]
            print(f"  {backend}: {sizes[-1]:,} / {sizes[0]:,} answers (ratio of medians)")
            for name in ("next_item", "overview", *[k for k in small if k.startswith("  ")]):
                print(f"    {name.strip()}: {big[name]:.1f} ms / {small[name]:.1f} ms = {big[name] / small[name]:.2f}x")
    print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
