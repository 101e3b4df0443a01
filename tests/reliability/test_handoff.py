"""Handing the file to another process loses nothing: the opener waits until the holder has closed.

DuckDB 2 reads a database's headers before it takes its lock on the file and does not read
them again once it has it. A process whose open started while another one was closing the
file (checkpointing it, then deleting the write-ahead log) got the lock a moment later and
worked on the file as it was before that checkpoint: the holder's last acknowledged labels
vanished and their ids were issued again. The load test hit it under heavy machine load
(10,006 acks for 10,000 labels; a label id acknowledged twice). The store now opens the
file only while it holds a turn lock that the holder keeps until its close has returned
(:mod:`judgelab.labeler.store._core`). These tests force the race instead of waiting for the
scheduler to produce it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from judgelab.labeler.store import Store, release_all
from tests.reliability._worker import Ack, label_one
from tests.reliability.conftest import REPO, add_raters, build_pool

#: A Store process that labels one item for the rater whose token is argv[2], then keeps the
#: file (no idle release, no handoff) until a line arrives on stdin, and lets it go with a
#: close that DuckDB's debug setting stretches (its checkpoint sleeps before it installs the
#: new state): the window in which an open must not start.
_HOLDER = """
import sys, time
import judgelab.labeler.store._core as core
core.IDLE_RELEASE = 600.0
core._Shared.due = lambda self: False
from judgelab.labeler.store import Store
from tests.reliability._worker import label_one
store = Store(sys.argv[1])
ack = label_one(store, sys.argv[2])
with store.connection() as con:
    con.execute(f"SET GLOBAL debug_checkpoint_scan_sleep_ms = {int(sys.argv[3])}")
print("acked", ack.label_id, ack.assignment_id, flush=True)
sys.stdin.readline()
class Timed:
    # The store's connection, noting when its close() returns (release() goes on after it).
    def __init__(self, con):
        self.con, self.closed = con, None
    def __getattr__(self, name):
        return getattr(self.con, name)
    def close(self):
        self.con.close()
        self.closed = time.monotonic()
timed = store._state.con = Timed(store._state.con)
began = time.monotonic()
store.release()
print("closed", began, timed.closed, flush=True)
"""


def _two_rater_pool(tmp_path: Path) -> tuple[Path, str, str]:
    pool = build_pool(tmp_path / "handoff.duckdb", n_tasks=2, per_task=2)
    (first, token_1), (second, token_2) = add_raters(pool.store, 2)
    pool.store.assign_k(pool.answer_ids, 1, [first.rater_id, second.rater_id], seed=1)
    release_all()  # the holder must be able to take the file
    return pool.path, token_1, token_2


def _holder(db: Path, token: str, *, close_ms: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(db), token, str(close_ms)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _wait_marker_moves(db: Path, since: int, timeout: float = 60.0) -> None:
    marker = db.with_name(db.name + ".wait")
    deadline = time.monotonic() + timeout
    while (marker.stat().st_mtime_ns if marker.exists() else 0) == since:
        if time.monotonic() > deadline:
            raise TimeoutError("the opener never waited for the file")
        time.sleep(0.005)


def test_no_open_starts_while_the_holder_is_still_closing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, token_1, token_2 = _two_rater_pool(tmp_path)
    holder = _holder(db, token_1, close_ms=50)
    try:
        assert holder.stdout is not None and holder.stdin is not None
        _, held_id, held_assignment = holder.stdout.readline().split()
        opens: list[float] = []
        real_connect = duckdb.connect

        def recorded(*args: object, **kwargs: object) -> duckdb.DuckDBPyConnection:
            opens.append(time.monotonic())
            return real_connect(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(duckdb, "connect", recorded)
        marker = db.with_name(db.name + ".wait")
        before = marker.stat().st_mtime_ns if marker.exists() else 0
        acks: list[Ack | None] = []
        opener = threading.Thread(target=lambda: acks.append(label_one(Store(db), token_2)))
        opener.start()
        _wait_marker_moves(db, before)  # this process now waits for the file
        holder.stdin.write("go\n")
        holder.stdin.flush()
        _, began, ended = holder.stdout.readline().split()
        opener.join(timeout=60)
        assert holder.wait(timeout=60) == 0, holder.stderr.read() if holder.stderr else ""
    finally:
        if holder.poll() is None:
            holder.kill()
    assert float(ended) - float(began) >= 0.05  # the close did take that long (50 ms a table)
    during = [t for t in opens if t < float(ended)]
    assert not during, f"{len(during)} opens started before the holder had closed the file"
    opened = acks[0]
    assert opened is not None
    labels = Store(db).query("SELECT label_id, assignment_id FROM labels ORDER BY label_id")
    assert [int(held_id), opened.label_id] == labels["label_id"].astype(int).tolist()
    assert int(held_assignment) in set(labels["assignment_id"].astype(int))


# The race itself, made certain: an LD_PRELOAD shim holds the opener's first exclusive lock
# call on the file (DuckDB's F_SETLK) for a second, after DuckDB has read the headers.
_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
static int held = 0;
static void hold(int cmd, void *arg) {
    struct flock *fl = arg;
    if (held || (cmd != F_SETLK && cmd != F_SETLKW) || !fl || fl->l_type != F_WRLCK) return;
    held = 1;
    fprintf(stderr, "lock call held\n");
    fflush(stderr);
    struct timespec ts = {1, 0};
    nanosleep(&ts, NULL);
}
#define WRAP(name) \
int name(int fd, int cmd, ...) { \
    va_list ap; va_start(ap, cmd); void *arg = va_arg(ap, void *); va_end(ap); \
    static int (*real)(int, int, ...) = NULL; \
    if (!real) real = dlsym(RTLD_NEXT, #name); \
    hold(cmd, arg); \
    return real(fd, cmd, arg); \
}
WRAP(fcntl)
WRAP(fcntl64)
"""

_OPENER = """
import sys
from judgelab.labeler.store import Store
from tests.reliability._worker import label_one
ack = label_one(Store(sys.argv[1]), sys.argv[2])
print("acked", ack.label_id, ack.assignment_id, flush=True)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="LD_PRELOAD shim for glibc")
def test_an_open_racing_the_holders_close_keeps_every_acknowledged_label(tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler for the lock-call shim")
    shim = tmp_path / "holdlock.so"
    source = tmp_path / "holdlock.c"
    source.write_text(_SHIM)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(shim), str(source), "-ldl"], check=True)
    db, token_1, token_2 = _two_rater_pool(tmp_path)
    holder = _holder(db, token_1, close_ms=0)
    opener = None
    try:
        assert holder.stdout is not None and holder.stdin is not None
        _, held_id, held_assignment = holder.stdout.readline().split()
        marker = db.with_name(db.name + ".wait")
        before = marker.stat().st_mtime_ns if marker.exists() else 0
        opener = subprocess.Popen(
            [sys.executable, "-c", _OPENER, str(db), token_2], cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO), "LD_PRELOAD": str(shim)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        # Let go as soon as the opener is in the race: inside DuckDB's open with its lock call
        # held (it read the headers while the holder had the file), or waiting for its turn.
        lines: list[str] = []
        stderr = opener.stderr
        assert stderr is not None
        threading.Thread(target=lambda: lines.extend(iter(stderr.readline, "")), daemon=True).start()
        deadline = time.monotonic() + 60
        while "lock call held\n" not in lines:
            if (marker.stat().st_mtime_ns if marker.exists() else 0) != before:
                break
            assert time.monotonic() < deadline, "the opener never reached the file"
            time.sleep(0.002)
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.wait(timeout=60) == 0, holder.stderr.read() if holder.stderr else ""
        out, _ = opener.communicate(timeout=60)
        assert opener.returncode == 0, "".join(lines)
    finally:
        for proc in (holder, opener):
            if proc is not None and proc.poll() is None:
                proc.kill()
    _, opened_id, _ = out.split()
    assert opened_id != held_id, "the holder's label id was issued again"
    labels = Store(db).query("SELECT label_id, assignment_id FROM labels ORDER BY label_id")
    assert labels["label_id"].astype(int).tolist() == sorted([int(held_id), int(opened_id)])
    assert int(held_assignment) in set(labels["assignment_id"].astype(int)), "the holder's label was lost"
