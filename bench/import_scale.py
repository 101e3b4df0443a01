"""How long the big single-transaction commands hold the database: importing and assigning 100,000 answers.

Run: ``python bench/import_scale.py`` (a few minutes; the CSV is written once into
``--workdir`` and reused).

Every store unit of work is one transaction, and another process that wants the file gets it
only between units (``labeler/store/_core.py``), waiting at most 30 s. An import is
deliberately one unit (all or nothing), so its transaction must fit well inside those 30 s.
Two commands, each in a fresh child process:

* ``judgelab import answers`` of a CSV with ``--tasks`` tasks x 2 families (100,000 answers
  by default), run through the CLI's own entry point into a new database;
* ``Store.assign_k`` of all those answers to 50 raters at k = 2 (200,000 assignments), in
  that database once the raters and a rubric are added.

Figures: wall time of the command, and the time the database file was held: the longest
single unit of work (the time another process would wait at worst), measured by timing the
store's outermost ``connection()`` blocks; plus the child's peak memory. Printed, not
asserted.

First, the answers import beside the database engine's own reader (issue 53): ``--n``
generated answers (:mod:`bench._answers`, about 400 characters each, 5 % with a planted
name) as JSON lines, imported by ``judgelab import answers`` into a new database, and loaded
by DuckDB's ``CREATE TABLE ... AS SELECT * FROM read_json_auto(...)`` into another, each in
a fresh child process: wall time and peak memory side by side. ``--n 1000000`` for the
million-answer figures (the file, about 600 MB, is written once into ``--workdir``);
``--skip-csv`` leaves out the CSV import and ``assign_k`` part. CPU time is printed beside
wall time: on a shared machine it is the steadier figure. ``--pg`` adds the same file imported
into a project on a throwaway PostgreSQL server (``tests/pg.py``) beside PostgreSQL's own
``COPY`` of its lines into a ``jsonb`` column.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._answers import answers
from bench._measure import WORKDIR, built_once, child, emit, machine
from judgelab.labeler.models import Criterion, Rubric
from judgelab.labeler.store import Store
from judgelab.labeler.store._core import StoreCore

FAMILIES = ("claude", "othermodel")
RUBRIC = Rubric(
    rubric_id="bench", version=1, name="Bench rubric", scale="likert5", pass_rule="overall >= 4",
    pass_threshold=4.0, criteria=(Criterion("correct", "Correct", "Right."),),
)
RATERS = 50
K = 2


def write_csv(path: Path, tasks: int) -> None:
    """``tasks`` support tickets, each answered once by every family (a realistic length of text)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["task_id", "prompt", "category", "answer_id", "family", "model", "text"])
        for t in range(tasks):
            prompt = f"Ticket {t}: I was charged twice for my subscription this month. Can you fix it?"
            for f, family in enumerate(FAMILIES):
                text = (
                    f"Thanks for reaching out about ticket {t}. I checked your account and see two charges "
                    f"on the same day. The second one has been refunded and should appear within {3 + f} to "
                    f"{5 + t % 4} business days, depending on your bank. Sorry for the trouble; nothing else "
                    "is needed from you."
                )
                out.writerow([f"t{t:06d}", prompt, "billing", f"a{t:06d}-{family}", family, f"{family}-model", text])


def write_jsonl(path: Path, n: int) -> None:
    """``n`` generated answers (:func:`bench._answers.answers`), 5 tasks each, as JSON lines."""
    with path.open("w", encoding="utf-8") as fh:
        for i, text in enumerate(answers(n, seed=53)):
            family = FAMILIES[i % len(FAMILIES)]
            fh.write(json.dumps({
                "task_id": f"t{i // 5:07d}", "prompt": f"Ticket {i // 5}: I was charged twice. Can you fix it?",
                "answer_id": f"a{i:07d}", "family": family, "model": f"{family}-model", "text": text,
            }, ensure_ascii=False) + "\n")


def _cpu_s() -> float:
    """CPU time of this process so far (all its threads: DuckDB reads with several), user and system."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure_duckdb(db: str, path: str) -> dict[str, float]:
    """DuckDB's own reader: the file into a table of a new database, nothing checked."""
    import duckdb

    start, cpu = time.perf_counter(), _cpu_s()
    con = duckdb.connect(db)
    rows = con.execute(f"CREATE TABLE answers AS SELECT * FROM read_json_auto('{path}')").fetchone()
    con.close()
    return {"wall_s": time.perf_counter() - start, "cpu_s": _cpu_s() - cpu, "rows": rows[0] if rows else 0}


def measure_copy(url: str, path: str) -> dict[str, float]:
    """PostgreSQL's own bulk load: the file's lines ``COPY``-ed into a ``jsonb`` column (parsed, nothing checked)."""
    import psycopg

    start, cpu = time.perf_counter(), _cpu_s()
    with psycopg.connect(url) as con:
        con.execute("CREATE TABLE raw (j jsonb)")
        # CSV with a quote and a delimiter no JSON line holds: each line is one value, as it is.
        with con.cursor().copy("COPY raw (j) FROM STDIN (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')") as copy, \
                open(path, "rb") as fh:
            while block := fh.read(1 << 20):
                copy.write(block)
        rows = con.execute("SELECT count(*) FROM raw").fetchone()
    return {"wall_s": time.perf_counter() - start, "cpu_s": _cpu_s() - cpu, "rows": rows[0] if rows else 0}


def _held(units: list[float]) -> Any:
    """Time each outermost store unit of work (nested ones reuse its connection and transaction)."""
    original = StoreCore.connection
    depth = threading.local()

    @contextmanager
    def timed(self: StoreCore) -> Iterator[Any]:
        if getattr(depth, "n", 0):
            with original(self) as con:
                yield con
            return
        depth.n = 1
        start = time.perf_counter()
        try:
            with original(self) as con:
                yield con
        finally:
            units.append(time.perf_counter() - start)
            depth.n = 0

    StoreCore.connection = timed  # type: ignore[method-assign,assignment]  # benchmark instrumentation


def measure_import(db: str, csv_path: str) -> dict[str, float]:
    from judgelab.cli import main as cli

    units: list[float] = []
    _held(units)
    start, cpu = time.perf_counter(), _cpu_s()
    cli(["import", "answers", csv_path, "--db", db], standalone_mode=False)
    return {"wall_s": time.perf_counter() - start, "cpu_s": _cpu_s() - cpu, "held_s": max(units),
            "units": len(units)}


def measure_assign(db: str) -> dict[str, float]:
    store = Store(db)
    store.add_rubric(RUBRIC)
    raters = [store.add_rater(f"rater{i:02d}")[0].rater_id for i in range(RATERS)]
    answers = sorted(store.answer_ids())
    units: list[float] = []
    _held(units)
    start = time.perf_counter()
    summary = store.assign_k(answers, K, raters, seed=0)
    return {"wall_s": time.perf_counter() - start, "held_s": max(units), "units": len(units),
            "assignments": summary.n_added}


def _beside_copy(jsonl: Path) -> None:
    """The same file imported into a PostgreSQL project beside PostgreSQL's own ``COPY`` of it."""
    from tests import pg

    print(f"judgelab import answers vs PostgreSQL's COPY · {jsonl.name} (a throwaway server, tests/pg.py)")
    with pg.server(own=True) as admin:
        ours_db, theirs_db = pg.fresh_database(admin), pg.fresh_database(admin)
        ours = child("import_scale.py", ["import", "--db", ours_db, "--csv", str(jsonl)], timeout=3600)
        theirs = child("import_scale.py", ["copy", "--db", theirs_db, "--csv", str(jsonl)], timeout=3600)
    for label, fig in (("judgelab import answers", ours), ("bare COPY into jsonb", theirs)):
        print(f"  {label:24}: {fig['wall_s']:6.1f} s wall, {fig['cpu_s']:6.1f} s CPU (client), "
              f"peak memory {fig['peak_rss_mb']:5.0f} MiB (client)")
    print(f"  ratio: {ours['wall_s'] / theirs['wall_s']:.1f}x COPY's wall time (target: at most 3x); the project "
          f"held {ours['held_s']:.1f} s at most")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=50_000, help="tasks; two answers each")
    parser.add_argument("--workdir", default=WORKDIR)
    parser.add_argument("--n", type=int, default=100_000, help="answers in the JSON-lines comparison")
    parser.add_argument("--skip-csv", action="store_true", help="only the JSON-lines comparison")
    parser.add_argument("--pg", action="store_true",
                        help="also on a throwaway PostgreSQL server (tests/pg.py): the import beside a bare COPY")
    parser.add_argument("--child", choices=["import", "assign", "duckdb", "copy"], help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--csv", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "import":
        emit(measure_import(args.db, args.csv))
        return
    if args.child == "assign":
        emit(measure_assign(args.db))
        return
    if args.child == "duckdb":
        emit(measure_duckdb(args.db, args.csv))
        return
    if args.child == "copy":
        emit(measure_copy(args.db, args.csv))
        return

    jsonl = Path(args.workdir) / f"answers-{args.n}.jsonl"
    print(f"judgelab import answers vs DuckDB's read_json_auto · {args.n:,} answers as JSON lines")
    print(f"  {machine()}")
    built_once(jsonl, f"{jsonl.name} ({args.n:,} answers)", lambda p: write_jsonl(p, args.n))
    print(f"  file: {jsonl.stat().st_size / 2**20:.0f} MiB")
    with tempfile.TemporaryDirectory() as tmp:
        ours = child("import_scale.py", ["import", "--db", str(Path(tmp, "a.duckdb")), "--csv", str(jsonl)],
                     timeout=3600)
        theirs = child("import_scale.py", ["duckdb", "--db", str(Path(tmp, "b.duckdb")), "--csv", str(jsonl)],
                       timeout=3600)
    for label, fig in (("judgelab import answers", ours), ("DuckDB read_json_auto", theirs)):
        print(f"  {label:24}: {fig['wall_s']:6.1f} s wall, {fig['cpu_s']:6.1f} s CPU, "
              f"peak memory {fig['peak_rss_mb']:5.0f} MiB")
    print(f"  the project was held {ours['held_s']:.1f} s at most (one unit of work: the write)")
    print(f"  ratio: {ours['wall_s'] / theirs['wall_s']:.1f}x DuckDB's wall time, "
          f"{ours['cpu_s'] / theirs['cpu_s']:.1f}x its CPU (target: at most 3x); "
          f"{ours['peak_rss_mb'] / 1024:.2f} GiB peak (target: under 1.5 GiB)")
    if args.pg:
        _beside_copy(jsonl)
    if args.skip_csv:
        return

    n = args.tasks * len(FAMILIES)
    source = Path(args.workdir) / f"import-{n}.csv"
    print(f"import and assign at scale · {n:,} answers ({args.tasks:,} tasks x {len(FAMILIES)} families) · "
          f"{RATERS} raters, k = {K}")
    print(f"  {machine()}")
    if not source.exists():
        write_csv(source, args.tasks)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp, "import.duckdb")
        fig = child("import_scale.py", ["import", "--db", str(db), "--csv", str(source)], timeout=1800)
        print(f"  judgelab import answers: {fig['wall_s']:6.1f} s wall, database held {fig['held_s']:6.1f} s "
              f"at most ({fig['units']} units of work); peak memory {fig['peak_rss_mb']:.0f} MiB")
        fig = child("import_scale.py", ["assign", "--db", str(db)], timeout=1800)
        print(f"  assign_k ({fig['assignments']:,} assignments): {fig['wall_s']:6.1f} s wall, database held "
              f"{fig['held_s']:6.1f} s at most ({fig['units']} units of work); peak memory "
              f"{fig['peak_rss_mb']:.0f} MiB")
    print("  (held: the longest unit of work, one transaction: what another process waits for at worst)")


if __name__ == "__main__":
    main()
