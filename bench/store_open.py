"""What one unit of work costs the store, with the file already open and when it must be opened.

Run: ``python bench/store_open.py`` (under a minute once the 100,000-answer database from
``bench/rater_roundtrip.py`` exists in ``--workdir``; without it that size is skipped).

The store keeps its connection to the DuckDB file open between units of work and closes it
after a second idle or to hand the file to another process (see ``labeler/store/_core.py``);
the next unit then opens the file again. Figures per size, p50 and p95 over ``--reps``
repetitions, each size in a fresh child process (which also reports its peak memory):

* ``cold read``: ``Store.release`` then ``Store.query("SELECT 1")``: open the file and run one
  unit (what the first call after an idle second or a handoff pays);
* ``read unit``: ``Store.query("SELECT 1")`` on the open connection;
* ``write unit``: ``Store.set_setting`` on the open connection: one committed write.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._measure import WORKDIR, child, emit, machine, percentiles
from judgelab.labeler.models import Answer, Task
from judgelab.labeler.store import Store


def measure(db: str, reps: int) -> dict[str, float]:
    store = Store(db)

    def cold(i: int) -> None:
        store.release()
        store.query("SELECT 1")

    out: dict[str, float] = {}
    steps = {
        "cold": cold,
        "read": lambda i: store.query("SELECT 1"),
        "write": lambda i: store.set_setting("bench", "counter", str(i)),
    }
    for name, step in steps.items():
        step(-1)  # warm the file cache
        times = []
        for i in range(reps):
            start = time.perf_counter()
            step(i)
            times.append(time.perf_counter() - start)
        out[f"{name}_p50_ms"], out[f"{name}_p95_ms"] = (x * 1000 for x in percentiles(times))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=60)
    parser.add_argument("--workdir", default=WORKDIR)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        emit(measure(args.db, args.reps))
        return

    print(f"store unit-of-work cost · {args.reps} repetitions per figure")
    print(f"  {machine()}")
    big = Path(args.workdir) / "roundtrip-100000-50.duckdb"
    with tempfile.TemporaryDirectory() as tmp:
        sizes: list[tuple[str, Path]] = []
        empty = Path(tmp, "empty.duckdb")
        Store(empty)
        sizes.append(("empty project", empty))
        mid = Path(tmp, "10k.duckdb")
        store = Store(mid)
        store.add_pool(
            [Task(f"t{i}", f"Ticket {i}") for i in range(5000)],
            [Answer(f"a{i}", f"t{i // 2}", "fam", "model", f"Answer {i}.") for i in range(10_000)],
        )
        sizes.append(("10,000 answers", mid))
        if big.exists():
            copy = Path(tmp, "100k.duckdb")
            shutil.copyfile(big, copy)
            sizes.append(("100,000 answers", copy))
        else:
            print(f"  (no {big}: run bench/rater_roundtrip.py first for the 100,000-answer size)")
        print(f"  {'database':18s} {'size':>8s}  {'cold read':>17s}  {'read unit':>17s}  "
              f"{'write unit':>17s}  peak memory")
        for label, path in sizes:
            fig = child("store_open.py", ["--db", str(path), "--reps", str(args.reps)])
            mb = path.stat().st_size / 2**20
            cells = "  ".join(
                f"{fig[f'{k}_p50_ms']:6.1f} / {fig[f'{k}_p95_ms']:6.1f} ms" for k in ("cold", "read", "write")
            )
            print(f"  {label:18s} {mb:6.1f} MB  {cells}  {fig['peak_rss_mb']:.0f} MiB")
    print("  (each cell: p50 / p95)")


if __name__ == "__main__":
    main()
