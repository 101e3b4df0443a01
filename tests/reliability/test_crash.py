"""Crash: SIGKILL a process in the middle of labelling; nothing it acknowledged is lost.

A worker labels through the rate page's functions and prints each label id only after
:meth:`~judgelab.labeler.store.Store.add_label` returned (the unit of work committed). The test
kills it with SIGKILL at a random moment, several times over, and checks after each kill
that the database opens cleanly, holds every acknowledged label, holds no half-written
unit, and that labelling resumes where it stopped. The same is checked for a multi-row
unit (an import), and for a real ``streamlit run judgelab/app.py`` server killed while a
rater in chromium submits, where the acknowledgement is the count the rater saw move on.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from judgelab.labeler.store import Store, release_all
from tests.reliability._worker import SCORE
from tests.reliability.conftest import REPO, Lines, add_raters, build_pool, worker

ROUNDS = 5
RATERS = 3


def _acks(lines: list[str]) -> dict[int, tuple[int, int]]:
    """``{label_id: (rater_id, assignment_id)}`` from a worker's ``ack`` lines."""
    out = {}
    for line in lines:
        if line.startswith("ack "):
            r, a, label = (int(x) for x in line.split()[1:])
            out[label] = (r, a)
    return out


def _opens_cleanly(path: Path | str) -> None:
    if isinstance(path, str) and path.startswith("postgresql://"):
        # PostgreSQL's own recovery is not judgelab's to test: a fresh store must open and read it.
        assert Store(path).applied_migrations().shape[0] > 0
        return
    # A raw connection (no judgelab code in between): the file and its WAL must replay.
    release_all()  # this process's store may still hold the file open
    con = duckdb.connect(str(path))
    try:
        con.execute("CHECKPOINT")
        assert con.execute("SELECT count(*) FROM _migrations").fetchone() is not None
    finally:
        con.close()


@pytest.mark.slow
@pytest.mark.both_backends
def test_sigkill_mid_labelling_loses_no_acknowledged_label(db: Path | str) -> None:
    pool = build_pool(db, n_tasks=60, per_task=2)
    store = pool.store
    invited = add_raters(store, RATERS)
    raters = [r.rater_id for r, _ in invited]
    tokens = [t for _, t in invited]
    store.assign_k(pool.answer_ids, 1, raters, seed=3)
    rng = random.Random(11)
    acked: dict[int, tuple[int, int]] = {}
    for round_no in range(ROUNDS):
        proc = worker(["label", str(pool.path)], tokens=tokens)
        lines = Lines(proc)
        lines.wait_for(rng.randint(2, 10), "ack ")
        # Land the kill at a random point of a unit: opening, inside the transaction, closing.
        time.sleep(rng.uniform(0.0, 0.08))
        proc.send_signal(signal.SIGKILL)
        out = lines.finish()
        assert proc.returncode == -signal.SIGKILL, f"round {round_no}: the worker ended on its own"
        assert not [x for x in out if x.startswith("error")], out
        new = _acks(out)
        assert not set(new) & set(acked), "a label id was handed out twice"
        acked.update(new)

        _opens_cleanly(pool.path)
        stored = store.query("SELECT label_id, rater_id, assignment_id, overall, criteria FROM labels")
        ids = {int(x) for x in stored["label_id"]}
        missing = set(acked) - ids
        assert not missing, f"round {round_no}: acknowledged labels lost after SIGKILL: {sorted(missing)}"
        # At most one committed-but-unacknowledged label per rater thread (killed between
        # the commit and the print); anything more would be a unit that was not atomic.
        assert len(ids - set(acked)) <= RATERS
        for row in stored.itertuples(index=False):
            if int(row.label_id) in acked:
                assert acked[int(row.label_id)] == (int(row.rater_id), int(row.assignment_id))
            assert float(row.overall) == SCORE
            assert row.criteria == '{"complete": 4.0, "correct": 4.0}', "a label row was half written"
        assert max(Counter(stored["assignment_id"]).values()) == 1, "an assignment was labelled twice"

    # Resume: the queue continues after the last stored label and finishes with one label each.
    proc = worker(["label", str(pool.path)], tokens=tokens)
    out = Lines(proc).finish(timeout=600)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    assert out[-1] == "done"
    final = store.query("SELECT assignment_id, count(*) AS n FROM labels GROUP BY assignment_id")
    assert len(final) == len(pool.answer_ids)
    assert set(final["n"]) == {1}
    for r in raters:
        assert store.next_item(r) is None


@pytest.mark.slow
@pytest.mark.both_backends
def test_sigkill_mid_import_leaves_whole_batches_only(db: Path | str) -> None:
    # A multi-row unit (an import of 2,000 answers) killed part-way is all there or absent.
    store = Store(db)
    size = 2000
    rng = random.Random(5)
    proc = worker(["bulk", str(db), "--batches", "40", "--size", str(size)])
    lines = Lines(proc)
    lines.wait_for(rng.randint(2, 5), "batch ")
    time.sleep(rng.uniform(0.0, 0.2))
    proc.send_signal(signal.SIGKILL)
    out = lines.finish()
    assert proc.returncode == -signal.SIGKILL, "the import finished before the kill; make it longer"
    acked = {int(x.split()[1]) for x in out if x.startswith("batch ")}

    _opens_cleanly(db)
    counts = store.query(
        "SELECT task_id, count(*) AS n FROM answers GROUP BY task_id ORDER BY task_id"
    )
    per_batch = {int(t.removeprefix("bulk")): int(n) for t, n in zip(counts["task_id"], counts["n"], strict=True)}
    assert set(per_batch.values()) <= {size}, f"a batch was partly imported: {per_batch}"
    assert acked <= set(per_batch), "an acknowledged import is missing"
    assert len(set(per_batch) - acked) <= 1, "more than the in-flight batch committed unacknowledged"
    tasks = store.query("SELECT task_id FROM tasks")
    assert set(tasks["task_id"]) == {f"bulk{b:03d}" for b in per_batch}, "a task came without its answers"


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.both_backends
def test_sigkill_of_the_app_server_mid_submit_loses_no_acknowledged_label(db: Path | str, tmp_path: Path) -> None:
    # The real thing: `streamlit run judgelab/app.py`, a rater in chromium submitting from the
    # keyboard, and the server killed with SIGKILL right after a submit key press.
    bt = pytest.importorskip("tests.browser.conftest")
    pool = build_pool(db, n_tasks=10, per_task=2)
    store = pool.store
    (rater, token), = add_raters(store, 1)
    store.assign_k(pool.answer_ids, 1, [rater.rater_id], seed=4)
    total = len(pool.answer_ids)
    acknowledged = random.Random(8).randint(3, 6)
    with bt.playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=bt.CHROMIUM, args=bt.CHROMIUM_ARGS)
        try:
            server = bt.serve(pool.path, cwd=tmp_path)
            proc = server.proc
            try:
                page, _ = bt.open_page(browser, f"{server.url}/?t={token}")
                for n in range(1, acknowledged + 2):
                    # The form listens for keys once its component has mounted, a moment
                    # after the script has finished: wait for its status line.
                    bt.expect_text(page, "Overall: not given yet")
                    page.keyboard.press("4")
                    bt.expect_text(page, "Overall: 4")
                    page.keyboard.press("Control+Enter")
                    if n <= acknowledged:
                        # What the rater sees is the acknowledgement: the count moved on.
                        bt.expect_text(page, f"{n} of {total} done")
                proc.send_signal(signal.SIGKILL)  # while the last submit is in flight
                proc.wait(30)
                assert proc.returncode == -signal.SIGKILL
                page.close()
            finally:
                if proc.poll() is None:
                    proc.kill()

            _opens_cleanly(pool.path)
            stored = store.query("SELECT label_id, assignment_id FROM labels ORDER BY label_id")
            assert acknowledged <= len(stored) <= acknowledged + 1, (
                f"{acknowledged} labels were acknowledged on screen, {len(stored)} are stored"
            )
            assert stored["assignment_id"].is_unique

            # A restarted server resumes where the database says the rater is.
            server = bt.serve(pool.path, cwd=tmp_path)
            try:
                page, _ = bt.open_page(browser, f"{server.url}/?t={token}")
                bt.expect_text(page, f"{len(stored)} of {total} done")
                bt.expect_text(page, "Overall: not given yet")
                page.keyboard.press("4")
                bt.expect_text(page, "Overall: 4")
                page.keyboard.press("Control+Enter")
                bt.expect_text(page, f"{len(stored) + 1} of {total} done")
                page.close()
            finally:
                server.stop()
        finally:
            browser.close()


_DEMO_THEN_DIE = """
import os, signal, sys
from judgelab.demo import build_demo
from judgelab.labeler.store import Store
store = Store(sys.argv[1])
build_demo(store)
store.revoke_rater("demo-rater")
store.set_setting("project", "mask_self_id", "false")
print(store.query(
    "SELECT (SELECT count(*) FROM labels) AS labels, (SELECT count(*) FROM judgements) AS judgements,"
    " (SELECT count(*) FROM assignments) AS assignments, (SELECT count(*) FROM answers) AS answers"
).iloc[0].to_json(), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_sigkill_after_every_kind_of_write_leaves_them_all(tmp_path: Path) -> None:
    """The store keeps its file open between units, so a killed process leaves its commits in the write-ahead log.

    The demo build (imports, raters, assignments, labels, a judge run), a revocation and a setting
    all replay.
    """
    db = tmp_path / "demo.duckdb"
    done = subprocess.run(
        [sys.executable, "-c", _DEMO_THEN_DIE, str(db)], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert db.with_name("demo.duckdb.wal").stat().st_size > 0  # the commits were in the log
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    _opens_cleanly(db)
    store = Store(db)
    for table, n in counts.items():
        assert int(store.query(f"SELECT count(*) AS n FROM {table}")["n"].iloc[0]) == n, table
    assert store.setting("project", "mask_self_id") == "false"
    revoked = store.query("SELECT revoked_at FROM raters WHERE name = 'demo-rater'")["revoked_at"]
    assert revoked.notna().all() and len(revoked) == 1
