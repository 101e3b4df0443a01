"""Several app servers on one PostgreSQL against one server on a DuckDB file (issue 45, item 3).

Run: ``python bench/several_servers.py`` (a few minutes; needs Debian's ``chromium``, the ``dev``
extra's Playwright, and Debian's ``postgresql`` server binaries unless ``--pg URL`` names a server
where the user may create databases). ``--setups duckdb:1,postgres:1,postgres:2,postgres:3`` picks
what is measured, ``--raters`` and ``--items`` the crowd.

For each setup, a fresh project (the bundled rubric and 140 answers, ``--raters`` raters, each
answer given to enough of them that everyone has ``--items`` to do) is served by N ``judgelab
serve`` command lines (N > 1 only on PostgreSQL: a DuckDB file has one writing process), rater i
on server i mod N, as sticky sessions behind a load balancer would place them. Every rater opens
their page in their own context of one Chromium; once all pages are loaded, they all label
``--items`` answers at once with the keyboard (a score key, a short pause, Ctrl+Enter, waiting
for the next item each time).

* **submit p50/p95** is the browser's round trip, as ``bench/browser_roundtrip.py`` measures
  it: from the ``keydown`` of Ctrl+Enter to the next item's position (``Answer 7 of 26``)
  being on the page, timed inside the page (Streamlit's rendering and the network included).
* **server CPU per submit**: user + system CPU time of every ``serve`` process (``/proc``, their
  reaped children included) from the moment all pages were loaded to the last submit, divided
  by the submits; page loads are left out.
* **PostgreSQL CPU per submit**: the same for the database server (the postmaster and every
  backend, ended ones included through the postmaster's reaped-children time), when it runs on
  this machine; and the **connections** the database accepted from the servers' start to their end
  (``pg_stat_database.sessions``, page loads included).
* **kept**: labels stored against submits acknowledged (every submit waited for its next item).
* **seconds**: from all pages loaded to the last submit; **load**: the machine's load average
  then (other work on the machine slows the browser round trip first).

Everything (Chromium, the servers, PostgreSQL) shares this machine's CPUs, so the figures are
for one small machine, not a scaling curve: they say what a second and third server cost and
whether anything is lost, not how far more machines would go.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._measure import machine, percentiles
from bench.browser_roundtrip import CHROMIUM, VIEWPORT, WATCH_JS, free_port, start
from judgelab.labeler.examples import example_path

TICK = os.sysconf("SC_CLK_TCK")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid``: its own, its ended children's, and its live children's."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = sum(int(fields[i]) for i in (11, 12, 13, 14)) / TICK
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            child = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # it ended while we looked
            continue
        if int(child[1]) == pid:
            total += (int(child[11]) + int(child[12])) / TICK
    return total


@dataclass
class Setup:
    """One measured setup's figures."""

    backend: str
    servers: int
    submit_ms: list[float] = field(default_factory=list)
    submits: int = 0
    stored: int = 0
    server_cpu_s: float = float("nan")
    db_cpu_s: float = float("nan")
    connections: int | None = None
    seconds: float = float("nan")
    load: float = float("nan")

    def row(self) -> str:
        p50, p95 = percentiles(self.submit_ms)
        per = 1000 / max(self.submits, 1)
        db = "" if math.isnan(self.db_cpu_s) else f"{self.db_cpu_s * per:6.1f}"
        conns = "" if self.connections is None else f"{self.connections:6d}"
        return (f"| {self.backend:10s} | {self.servers} | {p50:5.0f} | {p95:5.0f} | {self.server_cpu_s * per:6.1f} |"
                f" {db:>6s} | {conns:>6s} | {self.stored} of {self.submits} | {self.seconds:5.1f} | {self.load:4.1f} |")


HEADER = ("| database   | servers | submit p50 ms | p95 ms | server CPU ms/submit | PostgreSQL CPU ms/submit |"
          " connections | kept | seconds | load |\n"
          "|---|---|---|---|---|---|---|---|---|---|")


def build(db: str, raters: int, items: int) -> list[tuple[int, str, int]]:
    """The bundled rubric and answers, ``raters`` raters with at least ``items`` each: ``(id, token, queue length)``."""
    from judgelab.labeler.importers import import_file
    from judgelab.labeler.store import Store

    store = Store(db)
    import_file(store, "rubric", example_path("rubric.toml"))
    import_file(store, "answers", example_path("answers.jsonl"))
    made = [store.add_rater(f"bench-{i:02d}") for i in range(raters)]
    answers = store.answers(variant="original")["answer_id"].tolist()
    k = min(raters, math.ceil(raters * items / len(answers)) + 1)
    store.assign_k(answers, k, [r.rater_id for r, _ in made], seed=0)
    out = [(r.rater_id, token, len(store.rater_queue(r.rater_id))) for r, token in made]
    if min(n for _, _, n in out) < items:
        raise SystemExit(f"a rater got fewer than {items} answers: use fewer --items")
    store.release()
    return out


async def _rater(browser: Any, url: str, total: int, items: int, seed: int, loaded: Any, go: Any,
                 fig: Setup) -> None:
    """One rater: load the page, wait for everyone, then ``items`` labels by keyboard, each waited for."""
    rng = random.Random(seed)
    context = await browser.new_context(viewport=VIEWPORT)
    page = await context.new_page()
    await page.add_init_script(WATCH_JS.replace("__FIRST__", json.dumps(f"Answer 1 of {total}")))
    await page.goto(url, timeout=180_000)
    await page.wait_for_function("() => window.__benchRead().t1 !== null", timeout=180_000, polling=100)
    await page.locator(".jl-buttons button.primary").wait_for(timeout=180_000)
    loaded()
    await go.wait()
    shown = "t => { const s = window.__benchRead(); return s.t1 !== null && s.target === t; }"
    for i in range(1, items + 1):
        await asyncio.sleep(rng.uniform(0.2, 0.6))  # a hurried rater's reading time
        await page.keyboard.press(rng.choice("2345"))
        target = f"Answer {i + 1} of {total}" if i < total else "answers are rated"
        await page.evaluate("t => window.__benchArm(t)", target)
        await page.keyboard.press("Control+Enter")
        await page.wait_for_function(shown, arg=target, timeout=120_000, polling=50)
        state = await page.evaluate("() => window.__benchRead()")
        fig.submit_ms.append(float(state["t1"]) - float(state["t0"]))
        fig.submits += 1
    await context.close()


@contextmanager
def postgres(given: str | None, needed: bool) -> Iterator[str | None]:
    """The URL of ``given``, else of a throwaway server (:mod:`tests.pg`); ``None`` when not ``needed``."""
    if given or not needed:
        yield given
        return
    from tests import pg

    with pg.server() as url:
        yield url


def postmaster(url: str) -> int | None:
    """The pid of the postmaster serving ``url``, when it runs on this machine."""
    import psycopg

    with psycopg.connect(url) as con:
        row = con.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        try:  # while the backend lives: it ends with this connection
            return int((Path(f"/proc/{row[0]}/stat").read_text().rsplit(")", 1)[1].split())[1])
        except OSError:  # the server is elsewhere
            return None


def sessions(url: str) -> int:
    """Connections the database of ``url`` has accepted since its statistics were reset.

    A live session's count may reach the statistics only when it ends: read it before the
    servers start and after they stopped.
    """
    import psycopg

    with psycopg.connect(url) as con:
        con.execute("SELECT pg_stat_clear_snapshot()")
        row = con.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()").fetchone()
    assert row is not None
    return int(row[0])


def measure(backend: str, servers: int, raters: int, items: int, pg_url: str | None) -> Setup:
    """One setup, start to end (see the module's docstring)."""
    from playwright.async_api import async_playwright

    from judgelab.cli.serve import streamlit_command

    fig = Setup(backend, servers)
    with tempfile.TemporaryDirectory(prefix="judgelab-servers-bench-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        master: int | None = None
        if backend == "postgres":
            assert pg_url is not None
            from tests import pg

            db = pg.fresh_database(pg_url)
            stack.callback(pg.drop_database, pg_url, db)
            master = postmaster(db)
        else:
            db = str(work / "bench.duckdb")
        people = build(db, raters, items)
        opened = sessions(db) if master is not None else 0
        procs, urls = [], []
        for _ in range(servers):
            port = free_port()
            urls.append(f"http://127.0.0.1:{port}")
            procs.append(start(streamlit_command(db, port, "127.0.0.1"), urls[-1],
                               {**os.environ, "JUDGELAB_DB": db}, work, "/_stcore/health"))
        for proc in procs:
            stack.callback(proc.wait, 15)
            stack.callback(proc.terminate)
        marks: dict[str, float] = {}

        async def run() -> None:
            go = asyncio.Event()
            ready = 0

            def loaded() -> None:
                nonlocal ready
                ready += 1
                if ready == raters:
                    marks["server"] = sum(tree_cpu(p.pid) for p in procs)
                    if master is not None:
                        marks["db"] = tree_cpu(master)
                    marks["t"] = time.perf_counter()
                    go.set()

            async with async_playwright() as p:
                browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                await asyncio.gather(*[
                    _rater(browser, f"{urls[i % servers]}/?t={token}", total, items, i, loaded, go, fig)
                    for i, (_, token, total) in enumerate(people)])
                fig.seconds = time.perf_counter() - marks["t"]
                fig.server_cpu_s = sum(tree_cpu(p.pid) for p in procs) - marks["server"]
                if master is not None:
                    fig.db_cpu_s = tree_cpu(master) - marks["db"]
                await browser.close()

        asyncio.run(run())
        fig.load = os.getloadavg()[0]
        for proc in procs:
            proc.terminate()
            proc.wait(15)
        if master is not None:
            time.sleep(1)  # the servers' sessions end with them; their counts reach the statistics
            fig.connections = sessions(db) - opened
        from judgelab.labeler.store import Store

        store = Store(db)
        fig.stored = int(store.query("SELECT count(*) AS n FROM labels").iloc[0, 0])
        store.release()
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--setups", default="duckdb:1,postgres:1,postgres:2,postgres:3",
                        help="comma-separated BACKEND:SERVERS (backend duckdb or postgres)")
    parser.add_argument("--raters", type=int, default=16, help="raters at once")
    parser.add_argument("--items", type=int, default=8, help="labels per rater")
    parser.add_argument("--pg", help="a PostgreSQL server URL (default: a throwaway cluster, tests/pg.py)")
    args = parser.parse_args()
    setups = [(b, int(n)) for b, n in (s.split(":") for s in args.setups.split(","))]
    for backend, n in setups:
        if backend not in ("duckdb", "postgres") or n < 1 or (backend == "duckdb" and n > 1):
            parser.error(f"--setups: {backend}:{n} is not measurable (duckdb:1, or postgres:N)")
    print(f"several app servers · {args.raters} raters in Chromium {VIEWPORT['width']}x{VIEWPORT['height']}"
          f" · {args.items} labels each")
    print(f"  {machine()}")
    print(HEADER)
    with postgres(args.pg, any(b == "postgres" for b, _ in setups)) as pg_url:
        for backend, n in setups:
            print(measure(backend, n, args.raters, args.items, pg_url).row(), flush=True)


if __name__ == "__main__":
    main()
