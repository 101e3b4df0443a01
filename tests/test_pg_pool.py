"""A bounded pool of PostgreSQL connections per process (issue 52, point 2).

A server of its own with ``max_connections = 8`` (3 of them kept for superusers, so 5 for the app's
role, as on a small managed database): a unit of work that finds every connection of its process
busy, or the server with no slot left, waits for one and then goes on; one that waits its whole
``$JUDGELAB_PG_POOL_TIMEOUT`` gets one plain sentence, a :class:`~judgelab.labeler.errors.StoreError` (the
CLI: one line and exit 2; the rater pages catch it with the store's other errors and say "Could not
load this page just now"), never a traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from judgelab.labeler.errors import StoreError
from judgelab.labeler.store import Store

#: The variables that bound and time a process's pool (judgelab.labeler.store.POOL_SIZE_ENV, POOL_TIMEOUT_ENV).
POOL_SIZE_ENV, POOL_TIMEOUT_ENV = "JUDGELAB_PG_POOL_SIZE", "JUDGELAB_PG_POOL_TIMEOUT"

pytestmark = pytest.mark.postgres

#: The server's slots; 3 are reserved for superusers (PostgreSQL's default), so the app's role has 5.
SLOTS = 8
FOR_THE_APP = SLOTS - 3
PASSWORD = "pool-s3cret"


@pytest.fixture(scope="module")
def small_server() -> Iterator[str]:
    """A PostgreSQL server of its own with few connection slots; the URL of its superuser."""
    from tests import pg

    if pg.pg_bin() is None:
        pytest.skip("no PostgreSQL server binary to start a server with few connection slots")
    with pg.server(max_connections=SLOTS, own=True) as admin:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f"CREATE ROLE app LOGIN PASSWORD '{PASSWORD}'")  # type: ignore[arg-type]
        yield admin


@pytest.fixture
def url(small_server: str) -> Iterator[str]:
    """A fresh database the (non-superuser) role ``app`` owns, as the docs' recipe makes it; its URL."""
    from tests import pg

    made = pg.fresh_database(small_server)
    name = made.rsplit("/", 1)[1]
    with psycopg.connect(small_server, autocommit=True) as con:
        con.execute(f"ALTER DATABASE {name} OWNER TO app")  # type: ignore[arg-type]
    yield made.replace("judgelab@", f"app:{PASSWORD}@")
    pg.drop_database(small_server, made)


def sessions(admin: str, url: str) -> int:
    """How many sessions the server has open on the database of ``url``."""
    with psycopg.connect(admin, autocommit=True) as con:
        row = con.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                          [url.rsplit("/", 1)[1]]).fetchone()
    return int(row[0]) if row else 0


def hold(store: Store, seconds: float, inside: threading.Event) -> threading.Thread:
    """A unit of work on a thread of its own that keeps its connection for ``seconds``."""

    def unit() -> None:
        with store.connection():
            inside.set()
            time.sleep(seconds)

    worker = threading.Thread(target=unit)
    worker.start()
    return worker


def take_every_slot(url: str) -> list[Any]:
    """Connections of the app's role that fill every slot the server has for it."""
    held = [psycopg.connect(url, autocommit=True) for _ in range(FOR_THE_APP)]
    with pytest.raises(psycopg.OperationalError, match=r"reserved|too many"):
        psycopg.connect(url, autocommit=True).close()
    return held


def test_a_unit_waits_for_a_connection_of_its_process_then_goes_on(
    url: str, small_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(POOL_SIZE_ENV, "2")
    monkeypatch.setenv(POOL_TIMEOUT_ENV, "20")
    store = Store(url)
    first, second = threading.Event(), threading.Event()
    holders = [hold(store, 1.5, first)]
    first.wait(10)
    holders.append(hold(store, 0.0, second))  # waits for the first's advisory lock, holding its connection
    time.sleep(0.3)
    started = time.monotonic()
    store.add_rater("waited")  # both connections are busy: this waits for one
    waited = time.monotonic() - started
    for worker in holders:
        worker.join()
    # Before: no bound, so it opened a third session at once (sessions grew with the pages).
    assert waited > 0.8, waited
    assert sessions(small_server, url) <= 2
    assert store.query("SELECT name FROM raters")["name"].tolist() == ["waited"]


def test_a_pool_that_stays_busy_says_so_in_one_plain_sentence(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(POOL_SIZE_ENV, "1")
    monkeypatch.setenv(POOL_TIMEOUT_ENV, "1")
    store = Store(url)
    inside = threading.Event()
    holder = hold(store, 3.0, inside)
    inside.wait(10)
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        store.add_rater("refused")
    waited = time.monotonic() - started
    holder.join()
    said = str(caught.value)
    assert 0.9 < waited < 2.5, waited
    assert "is full: no connection came free within 1 s (all 1 connections of this process are in use)" in said
    assert "--pool-size" in said and "\n" not in said
    assert PASSWORD not in said and "app:***@" in said


def test_a_server_with_no_slot_left_is_waited_for_then_used(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(POOL_TIMEOUT_ENV, "20")
    held = take_every_slot(url)
    # Another server lets one go after 1.5 s: the unit that waited gets it.
    threading.Timer(1.5, held.pop().close).start()
    started = time.monotonic()
    store = Store(url)  # opening it is a unit of work (the migrations)
    store.add_rater("patient")
    waited = time.monotonic() - started
    for con in held:
        con.close()
    # Before: "could not connect ... remaining connection slots are reserved" at once.
    assert waited > 1.4, waited
    assert store.query("SELECT name FROM raters")["name"].tolist() == ["patient"]


def test_a_full_server_is_one_line_and_exit_2_in_the_cli(url: str) -> None:
    held = take_every_slot(url)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "judgelab", "init", "--db", url],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, POOL_TIMEOUT_ENV: "2"},
        )
    finally:
        for con in held:
            con.close()
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("judgelab: error: the database postgresql://app:***@"), lines[0]
    assert "no connection slot free (max_connections)" in lines[0] and PASSWORD not in done.stderr + done.stdout
