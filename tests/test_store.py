"""The project database: schema, migrations, and writes from many threads and two processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import duckdb
import pytest

from judgelab.labeler.store import Store, migrations, release_all

# The columns the rest of judgelab relies on, table by table (later migrations may add more).
EXPECTED = {
    "rubrics": {"rubric_id": "VARCHAR", "version": "INTEGER", "scale": "VARCHAR", "pass_threshold": "DOUBLE",
                "pass_rule": "VARCHAR", "author_kind": "VARCHAR", "author": "VARCHAR", "content_hash": "VARCHAR"},
    "rubric_criteria": {"criterion_id": "VARCHAR", "name": "VARCHAR", "description": "VARCHAR"},
    "tasks": {"task_id": "VARCHAR", "prompt": "VARCHAR", "category": "VARCHAR", "reference_answer": "VARCHAR",
              "reference_author_kind": "VARCHAR", "reference_author": "VARCHAR"},
    "answers": {"answer_id": "VARCHAR", "item_id": "VARCHAR", "task_id": "VARCHAR", "family": "VARCHAR",
                "model": "VARCHAR", "variant": "VARCHAR", "parent_answer_id": "VARCHAR", "text": "VARCHAR",
                "self_id_spans": "VARCHAR"},
    "raters": {"rater_id": "INTEGER", "name": "VARCHAR", "role": "VARCHAR", "token_hash": "VARCHAR",
               "revoked_at": "TIMESTAMP"},
    "assignments": {"rater_id": "INTEGER", "kind": "VARCHAR", "answer_id": "VARCHAR", "queue_pos": "INTEGER"},
    "labels": {"label_id": "INTEGER", "rater_id": "INTEGER", "answer_id": "VARCHAR", "overall": "DOUBLE",
               "passed": "BOOLEAN", "criteria": "VARCHAR", "comment": "VARCHAR", "flag_reason": "VARCHAR",
               "seconds": "DOUBLE", "supersedes": "INTEGER", "source": "VARCHAR"},
    "pair_labels": {"shown_left": "VARCHAR", "shown_right": "VARCHAR", "preference": "INTEGER"},
    "padding_audits": {"original_id": "VARCHAR", "rewrite_id": "VARCHAR", "adds_content": "BOOLEAN"},
    "judge_runs": {"run_id": "VARCHAR", "model": "VARCHAR", "family": "VARCHAR"},
    "judgements": {"run_id": "VARCHAR", "cache_key": "VARCHAR", "format": "VARCHAR", "order_shown": "VARCHAR",
                   "value": "DOUBLE", "parse_error": "VARCHAR", "raw": "VARCHAR", "input_tokens": "INTEGER",
                   "output_tokens": "INTEGER", "cost_usd": "DOUBLE", "latency_s": "DOUBLE"},
    "design_items": {"answer_id": "VARCHAR", "stratum": "VARCHAR", "inclusion_prob": "DOUBLE", "weight": "DOUBLE"},
    "settings": {"scope": "VARCHAR", "key": "VARCHAR", "value": "VARCHAR"},
}


def test_schema_has_every_expected_column(store: Store) -> None:
    schema = store.schema()
    for table, columns in EXPECTED.items():
        assert table in schema, table
        for column, dtype in columns.items():
            assert schema[table].get(column) == dtype, (table, column)


@pytest.mark.both_backends
def test_migrations_are_numbered_recorded_and_applied_once(store: Store) -> None:
    shipped = [v for v, _, _ in migrations()]
    # Each engineer gets a number, so gaps are allowed; order and uniqueness are not negotiable.
    assert shipped == sorted(set(shipped)) and shipped[0] == 1, "numbered in order, gaps allowed"
    recorded = store.applied_migrations()
    assert list(recorded["version"]) == shipped
    assert store.migrate() == [], "a second run applies nothing"
    assert list(Store(store.location).applied_migrations()["version"]) == shipped


@pytest.mark.both_backends
def test_token_is_stored_only_hashed(store: Store) -> None:
    rater, token = store.add_rater("alice")
    assert store.authenticate(token) == rater
    dump = store.query("SELECT * FROM raters").to_string()
    assert token not in dump
    store.revoke_rater("alice")
    with pytest.raises(Exception, match="revoked"):
        store.authenticate(token)


@pytest.mark.both_backends
def test_twenty_threads_share_one_store(store: Store) -> None:
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(25):
                store.set_setting("project", f"t{i}-{j}", str(j))
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert int(store.query("SELECT count(*) AS n FROM settings")["n"][0]) == 500


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


WRITER = """
import sys, time
from judgelab.labeler.store import Store
store = Store(sys.argv[1])
deadline = time.monotonic() + float(sys.argv[2])
n = 0
while time.monotonic() < deadline:
    store.set_setting("project", f"app-{n}", "x")
    n += 1
print(n)
"""


@pytest.mark.slow
def test_cli_writes_while_serve_and_an_app_writer_hold_the_database(tmp_path: Path) -> None:
    """`judgelab serve` plus a process writing like the app; the CLI writes at the same time."""
    db = tmp_path / "shared.duckdb"
    Store(db)
    env = {**os.environ, "JUDGELAB_DB": str(db)}
    port = _free_port()
    judgelab = str(Path(sys.executable).with_name("judgelab"))
    server = subprocess.Popen(
        [judgelab, "serve", "--db", str(db), "--port", str(port), "--address", "127.0.0.1"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    writer = None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if server.poll() is not None:
                pytest.fail(f"judgelab serve exited: {server.stdout.read().decode() if server.stdout else ''}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as r:
                    if r.read() == b"ok":
                        break
            except OSError:
                time.sleep(0.3)
        else:
            pytest.fail("the app did not come up")
        # The app page touches the database when a session opens it.
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read()
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), "8"], env=env, stdout=subprocess.PIPE, text=True
        )
        names = [f"cli-rater-{i}" for i in range(6)]
        for name in names:
            done = subprocess.run(
                [judgelab, "raters", "add", name, "--db", str(db)], env=env, capture_output=True, text=True,
                timeout=60,
            )
            assert done.returncode == 0, done.stderr
            assert "lock" not in done.stderr.lower()
        out, _ = writer.communicate(timeout=60)
        app_writes = int(out.strip())
        assert writer.returncode == 0
        assert app_writes > 20
    finally:
        server.terminate()
        server.wait(timeout=30)
        if writer and writer.poll() is None:
            writer.kill()
    store = Store(db)
    assert set(names) <= set(store.raters()["name"])
    assert int(store.query("SELECT count(*) AS n FROM settings WHERE key LIKE 'app-%'")["n"][0]) == app_writes


@pytest.mark.slow
def test_a_busy_process_hands_the_file_to_a_waiting_one(tmp_path: Path) -> None:
    """Two processes writing back to back take turns: neither waits anywhere near the lock timeout."""
    db = tmp_path / "turns.duckdb"
    Store(db).set_setting("project", "seed", "x")
    release_all()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db), "6"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)  # the writer has the file and keeps it busy
        # Two seconds of patience would not be enough if the writer kept the file to itself.
        store = Store(db, lock_timeout=2.0)
        mine = 0
        while writer.poll() is None and mine < 200:
            store.set_setting("project", f"parent-{mine}", "x")
            mine += 1
        out, _ = writer.communicate(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert writer.returncode == 0
    theirs = int(out.strip())
    assert mine >= 20 and theirs >= 20, (mine, theirs)
    assert int(store.query("SELECT count(*) AS n FROM settings WHERE key LIKE 'app-%'")["n"][0]) == theirs
    assert int(store.query("SELECT count(*) AS n FROM settings WHERE key LIKE 'parent-%'")["n"][0]) == mine


def test_an_idle_process_releases_the_file(tmp_path: Path) -> None:
    """After a second without work the store closes the file, so any other program can open it."""
    db = tmp_path / "idle.duckdb"
    Store(db).set_setting("project", "k", "v")
    reader = (
        "import sys, time, duckdb\n"
        "deadline = time.monotonic() + 10\n"
        "while True:\n"
        "    try:\n"
        "        con = duckdb.connect(sys.argv[1], read_only=True)\n"
        "        break\n"
        "    except duckdb.IOException:\n"
        "        if time.monotonic() > deadline: raise\n"
        "        time.sleep(0.05)\n"
        "print(con.execute(\"SELECT value FROM settings WHERE key = 'k'\").fetchone()[0])\n"
    )
    done = subprocess.run([sys.executable, "-c", reader, str(db)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "v"


def test_a_store_asked_to_hold_keeps_the_file_when_idle_yet_hands_it_to_a_judgelab_process(
    tmp_path: Path,
) -> None:
    """The app server's store (``idle_release`` of minutes) keeps its connection through a pause.

    A rater's submit after a pause then pays no reopen, and a CLI command in another process
    still gets the file at once through the wait marker.
    """
    db = tmp_path / "hold.duckdb"
    store = Store(db, idle_release=300.0)
    store.set_setting("project", "k", "v")
    con = store._state.con
    time.sleep(1.5)  # longer than the default idle release, and the reaper checks every 0.05 s
    assert store._state.con is con and con is not None  # still open: no reopen on the next unit
    assert store.setting("project", "k") == "v" and store._state.con is con
    writer = ("import sys\nfrom judgelab.labeler.store import Store\n"
              "Store(sys.argv[1]).set_setting('project', 'k', 'cli')\n")
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-c", writer, str(db)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - began < 15  # the handoff, not the five minutes
    assert store.setting("project", "k") == "cli"
    release_all()


def test_the_turn_lock_is_held_exactly_while_the_file_is_open(tmp_path: Path) -> None:
    """A process holds ``<db>.lock`` while it has the file open and lets it go once it has closed it.

    Another process opens only with that lock, so no open starts while a holder is still closing
    (``tests/reliability/test_handoff.py`` shows what such an open lost on DuckDB 2).
    """
    fcntl = pytest.importorskip("fcntl")
    db = tmp_path / "turn.duckdb"
    store = Store(db)
    fd = os.open(db.with_name(db.name + ".lock"), os.O_RDWR)
    try:
        with store.connection(), pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        store.release()
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: nothing here has the file open
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def test_a_process_killed_right_after_creating_the_database_leaves_one_that_opens(tmp_path: Path) -> None:
    """The migrations reach the database file, not only the write-ahead log.

    DuckDB cannot replay their ALTER TABLE statements from it.
    """
    db = tmp_path / "fresh.duckdb"
    code = (
        "import os, signal, sys\nfrom judgelab.labeler.store import Store\n"
        "Store(sys.argv[1])\nos.kill(os.getpid(), signal.SIGKILL)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, timeout=60)
    assert done.returncode == -9, done.stderr
    con = duckdb.connect(str(db))  # a raw open: nothing of judgelab's in between
    try:
        versions = [v for (v,) in con.execute("SELECT version FROM _migrations ORDER BY version").fetchall()]
    finally:
        con.close()
    assert versions == [v for v, _, _ in migrations()]
