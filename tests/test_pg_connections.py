"""PostgreSQL connections of one process: reused across threads, never shared, never handed out dead.

Streamlit runs every script run (each submit) on a new thread. Connections kept per thread opened
a PostgreSQL session per submit; they are the process's now (:func:`judgelab.labeler.store._backend.pg_connection`),
and each unit of work holds its own until it ends, so the advisory lock that serialises units is
never held by two threads through one session.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import pytest

from judgelab.labeler.store import Store

pytestmark = pytest.mark.postgres


@pytest.fixture
def url(pg_server: str) -> Iterator[str]:
    """A fresh PostgreSQL database (dropped at the end)."""
    from tests import pg

    made = pg.fresh_database(pg_server)
    yield made
    pg.drop_database(pg_server, made)


def backend_pid(store: Store) -> int:
    """The PostgreSQL backend of one unit of work."""
    with store.connection() as con:
        row = con.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


def on_new_thread(store: Store) -> int:
    """:func:`backend_pid` on a thread of its own, as Streamlit runs each script run."""
    seen: list[int] = []
    worker = threading.Thread(target=lambda: seen.append(backend_pid(store)))
    worker.start()
    worker.join()
    return seen[0]


def test_units_on_short_lived_threads_reuse_one_session(url: str) -> None:
    store = Store(url)
    first = backend_pid(store)
    # Before: forty threads, forty sessions (a connect and a backend process per submit).
    assert {on_new_thread(store) for _ in range(40)} == {first}


def test_two_units_at_once_never_share_a_session(url: str) -> None:
    store = Store(url)
    backend_pid(store)  # one idle connection in the process: the one both would want
    inside = threading.Event()
    spans: dict[str, tuple[float, float, int]] = {}

    def unit(name: str, hold: float) -> None:
        with store.connection() as con:
            start = time.monotonic()
            inside.set()
            row = con.execute("SELECT pg_backend_pid()").fetchone()
            time.sleep(hold)
            spans[name] = (start, time.monotonic(), int(row[0]) if row else 0)

    first = threading.Thread(target=unit, args=("first", 0.4))
    first.start()
    inside.wait(10)
    unit("second", 0.0)
    first.join()
    assert spans["first"][2] != spans["second"][2]
    # The advisory lock held the second unit until the first committed.
    assert spans["second"][0] >= spans["first"][1]


def test_a_session_the_server_ended_is_not_handed_out_again(url: str, pg_server: str) -> None:
    store = Store(url)
    ended = backend_pid(store)
    with psycopg.connect(pg_server, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [ended])
        deadline = time.monotonic() + 10
        while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [ended]).fetchone():
            assert time.monotonic() < deadline, "the backend did not end"
            time.sleep(0.05)
    # The next unit gets a live session, not an error from the dead one.
    assert backend_pid(store) != ended
    store.add_rater("alice")
    assert store.query("SELECT name FROM raters")["name"].tolist() == ["alice"]
