"""The PostgreSQL back-end: one connection wrapper that speaks the DuckDB connection's dialect.

The store's SQL is written for DuckDB. Rather than keep two copies of ~215 statements, a
statement bound for PostgreSQL goes through :func:`translate` once (cached), which rewrites the
few DuckDB-only forms the store uses into PostgreSQL's, and :class:`PgConnection` offers the
small part of DuckDB's connection API the store calls (``execute`` returning something with
``fetchone``/``fetchall``/``df``, ``executemany``, ``register`` of an Arrow table or DataFrame,
``extract_statements``). Every dialect difference lives in this file.

Concurrency: DuckDB gives judgelab one writer at a time (one process holds the file, one unit of
work runs at a time in it). On PostgreSQL every unit of work takes one transaction-scoped advisory
lock (:data:`UNIT_LOCK`) right after ``BEGIN``, so units run one at a time across every process
and server on the database, and each sees every unit committed before it (READ COMMITTED takes
a snapshot per statement, after the lock). The guarantees the store's code relies on (exactly-k
assignment, no double label, the two-tab check) therefore hold unchanged. A unit is a few
milliseconds, so this costs throughput only far beyond a labelling team's rate.
"""

from __future__ import annotations

import functools
import os
import re
import select
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

import pandas as pd

try:
    import psycopg
    from psycopg.types.numeric import FloatLoader
    from psycopg.types.string import StrDumper
except ImportError:  # pragma: no cover - psycopg is a dependency; say so only when it is needed
    psycopg = None  # type: ignore[assignment]
    FloatLoader = None  # type: ignore[assignment,misc]
    StrDumper = None  # type: ignore[assignment,misc]

from labeler.errors import StoreError

#: The prefixes of a database URL that names a PostgreSQL server.
PG_SCHEMES = ("postgresql://", "postgres://")
#: The key of the advisory lock every unit of work holds (any constant: "judgelab" in ASCII).
UNIT_LOCK = 0x6A75646765

#: Fragments the store splices into many statements (the current-label rules, with ``QUALIFY``),
#: each with its portable form; registered by the modules that define them.
PORTABLE: dict[str, str] = {}


def is_postgres(location: object) -> bool:
    """Whether ``location`` (a ``--db`` value) names a PostgreSQL database rather than a file."""
    return isinstance(location, str) and location.startswith(PG_SCHEMES)


def redact(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


# -- the dialect ----------------------------------------------------------------------------

_DOUBLE = re.compile(r"\bDOUBLE\b(?!\s+PRECISION)")
_LIST_CONTAINS = re.compile(r"list_contains\((\?|\$\w+),\s*([\w.]+)\)")
_RANGE = re.compile(r"\bFROM range\((\?|\$\w+)\)")
_DOLLAR = re.compile(r"\$(\w+)")
_HASH = re.compile(r"\bhash\(")
_NUMBERED = re.compile(r"\$\d")
_QUALIFY = re.compile(r"\s+QUALIFY\s+", re.IGNORECASE)
#: Conflict targets of the tables written with DuckDB's ``INSERT OR REPLACE`` (their keys).
_REPLACE_KEYS = {"settings": (("scope", "key"), ("value",))}


def _count_if(sql: str) -> str:
    """``count_if(x)`` -> ``count(*) FILTER (WHERE x)``, matching the parentheses of ``x``."""
    out, pos = [], 0
    while True:
        start = sql.find("count_if(", pos)
        if start < 0:
            out.append(sql[pos:])
            return "".join(out)
        depth, i = 1, start + len("count_if(")
        while depth:
            depth += {"(": 1, ")": -1}.get(sql[i], 0)
            i += 1
        out.append(sql[pos:start])
        out.append(f"count(*) FILTER (WHERE {sql[start + len('count_if('):i - 1]})")
        pos = i


def _insert_or(sql: str) -> str:
    match = re.match(r"\s*INSERT OR (IGNORE|REPLACE) INTO (\w+)", sql)
    if match is None:
        return sql
    kind, table = match.groups()
    sql = sql.replace(f"INSERT OR {kind} INTO", "INSERT INTO", 1)
    if kind == "IGNORE":
        return sql.rstrip().rstrip(";") + " ON CONFLICT DO NOTHING"
    if table not in _REPLACE_KEYS:
        raise StoreError(f"no conflict target known for INSERT OR REPLACE INTO {table} on PostgreSQL")
    keys, values = _REPLACE_KEYS[table]
    sets = ", ".join(f"{v} = EXCLUDED.{v}" for v in values)
    return sql.rstrip().rstrip(";") + f" ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {sets}"


@functools.lru_cache(maxsize=2048)
def translate(sql: str, named: bool) -> str:
    """``sql`` (DuckDB's dialect, ``?``/``$n``/``$name`` parameters) in PostgreSQL's, for psycopg.

    Args:
        sql: One statement as the store writes it.
        named: Its parameters are bound by name or number (``$...``), not by position (``?``).
    """
    for duckdb_form, portable in PORTABLE.items():
        sql = sql.replace(duckdb_form, portable)
    if _QUALIFY.search(sql):
        raise StoreError("QUALIFY has no PostgreSQL translation yet: " + " ".join(sql.split())[:200])
    sql = sql.replace("%", "%%")
    sql = _DOUBLE.sub("DOUBLE PRECISION", sql)
    sql = sql.replace("table_schema = 'main'", "table_schema = current_schema()")
    sql = _count_if(sql)
    sql = _LIST_CONTAINS.sub(r"\2 = ANY(\1)", sql)
    sql = _RANGE.sub(r"FROM generate_series(1, \1)", sql)
    # An order that looks random but is fixed by its input (the sort key of pull mode).
    sql = _HASH.sub("hashtext(", sql)
    sql = _insert_or(sql)
    sql = _DOLLAR.sub(r"%(\1)s", sql) if named else sql.replace("?", "%s")
    return sql


def _params(params: Any) -> tuple[bool, Any]:
    """Whether ``params`` bind by name/number, and the form psycopg takes."""
    if isinstance(params, dict):
        return True, {k: _plain(v) for k, v in params.items()}
    if params is None:
        return False, ()
    return False, [_plain(p) for p in params]


def _plain(value: Any) -> Any:
    """``value`` as psycopg dumps it: numpy scalars as Python numbers, tuples and arrays as lists."""
    if isinstance(value, list | tuple) or type(value).__name__ == "ndarray":
        return [_plain(v) for v in value]
    if type(value).__module__ == "numpy":
        return value.item()
    return value


def _array_type(values: Any) -> str:
    """The PostgreSQL array type of a list parameter, as DuckDB would infer it."""
    if values and all(isinstance(v, bool) for v in values):
        return "BOOLEAN[]"
    if values and all(isinstance(v, int) for v in values):
        return "BIGINT[]"
    if values and all(isinstance(v, float | int) for v in values):
        return "DOUBLE PRECISION[]"
    return "TEXT[]"


def _typed_lists(sql: str, bound: Any) -> str:
    """Cast each list parameter to its array type: PostgreSQL cannot infer ``unnest($1)``'s."""
    if isinstance(bound, dict):
        for name, value in bound.items():
            if isinstance(value, list):
                sql = sql.replace(f"%({name})s", f"%({name})s::{_array_type(value)}")
        return sql
    if not any(isinstance(v, list) for v in bound):
        return sql
    parts = sql.split("%s")
    out = [parts[0]]
    for value, part in zip(bound, parts[1:], strict=False):
        if value == [] and out[-1].endswith(" IN (SELECT unnest(") and part.startswith("))"):
            # An empty list has no element type; ``= ANY('{}')`` takes the column's.
            negated = out[-1].endswith(" NOT IN (SELECT unnest(")
            cut = len(" NOT IN (SELECT unnest(") if negated else len(" IN (SELECT unnest(")
            out[-1] = out[-1][:-cut] + (" <> ALL(" if negated else " = ANY(")
            out.append("%s" + part[1:])
            continue
        out.append("%s" + (f"::{_array_type(value)}" if isinstance(value, list) else "") + part)
    return "".join(out)


def split_script(sql: str) -> list[str]:
    """The statements of a migration script (comments dropped; no ``;`` inside a literal).

    Lines between ``-- duckdb-only: begin`` and ``-- duckdb-only: end`` are left out: they move
    data of files older judgelab versions wrote, which a PostgreSQL database never holds.
    """
    sql = re.sub(r"-- duckdb-only: begin.*?-- duckdb-only: end", "", sql, flags=re.DOTALL)
    lines = [line.split("--", 1)[0] for line in sql.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


# -- the connection --------------------------------------------------------------------------

_PG_TYPES = {
    "string": "VARCHAR", "large_string": "VARCHAR", "int32": "INTEGER", "int64": "BIGINT",
    "double": "DOUBLE PRECISION", "float": "DOUBLE PRECISION", "bool": "BOOLEAN",
}


class PgResult:
    """The result of one statement, with the DuckDB result methods the store calls."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    @property
    def description(self) -> Any:
        """The columns (``d[0]`` is each one's name), as DB-API says."""
        return self._cursor.description

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._cursor.fetchone() if self._cursor.description else None  # type: ignore[no-any-return]

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self._cursor.fetchall()) if self._cursor.description else []

    def df(self) -> pd.DataFrame:
        names = [c.name for c in self._cursor.description or []]
        return pd.DataFrame(self.fetchall(), columns=names)


class PgConnection:
    """A psycopg connection that takes the store's DuckDB-dialect statements."""

    def __init__(self, url: str) -> None:
        if psycopg is None:
            raise StoreError("judgelab needs psycopg for a PostgreSQL database.\nFix: pip install 'psycopg[binary]'")
        try:
            self._con = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise StoreError(f"could not connect to {redact(url)}: {exc}".strip()) from exc
        # numeric (sum/avg of integers) as float, as DuckDB returns DOUBLE/HUGEINT as numbers.
        self._con.adapters.register_loader("numeric", FloatLoader)
        # str as text, not psycopg's default "unknown": a list of ids must be a text[] for
        # ``unnest(?)``, as DuckDB infers VARCHAR[].
        self._con.adapters.register_dumper(str, StrDumper)
        self._con.execute("SET TIME ZONE 'UTC'")

    def execute(self, sql: str, params: Any = None) -> PgResult:
        named, bound = _params(params)
        if not named and isinstance(bound, list) and _NUMBERED.search(sql):
            named, bound = True, {str(i + 1): v for i, v in enumerate(bound)}
        return PgResult(self._con.execute(_typed_lists(translate(sql, named), bound), bound))  # type: ignore[arg-type]

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._con.cursor() as cur:
            cur.executemany(translate(sql, False), [list(r) for r in rows])  # type: ignore[arg-type]

    def extract_statements(self, sql: str) -> list[str]:
        return split_script(sql)

    def complete(self) -> None:
        """Nothing to finish: psycopg results are read whole."""

    def register(self, name: str, frame: Any) -> None:
        """Make ``frame`` (Arrow table or DataFrame) selectable as ``name``: a temporary table."""
        table = frame if hasattr(frame, "schema") and hasattr(frame, "to_pylist") else None
        if table is None:
            import pyarrow as pa

            table = pa.Table.from_pandas(frame, preserve_index=False)
        columns = []
        for f in table.schema:
            kind = _PG_TYPES.get(str(f.type), "TIMESTAMP" if str(f.type).startswith("timestamp") else "VARCHAR")
            columns.append(f'"{f.name}" {kind}')
        self._con.execute(f'CREATE TEMPORARY TABLE "{name}" ({", ".join(columns)}) ON COMMIT DROP')
        names = ", ".join(f'"{f.name}"' for f in table.schema)
        with self._con.cursor().copy(f'COPY "{name}" ({names}) FROM STDIN') as copy:  # type: ignore[arg-type]
            for row in zip(*(col.to_pylist() for col in table.columns), strict=True):
                copy.write_row(row)

    def unregister(self, name: str) -> None:
        self._con.execute(f'DROP TABLE IF EXISTS "{name}"')  # type: ignore[arg-type]

    def close(self) -> None:
        self._con.close()

    @property
    def broken(self) -> bool:
        return bool(self._con.closed or self._con.broken)

    def quiet(self) -> bool:
        """Whether nothing arrived on this idle connection (no round trip).

        A server that ends a session (a restart, ``pg_terminate_backend``, an idle timeout) says
        so and closes the socket, which then reads as ready: such a connection would fail the
        next unit's first statement.
        """
        try:
            ready, _, _ = select.select([self._con.fileno()], [], [], 0)
        except (OSError, ValueError, psycopg.Error):
            return False
        return not ready

    def alive(self) -> bool:
        """Whether the server still answers on this connection (one round trip)."""
        try:
            self._con.execute("SELECT 1")
        except psycopg.Error:
            return False
        return True


#: Idle connections a process keeps per database for its next units of work (about the pages an
#: app server draws at once; more were closed and reopened at every peak), and how long one may
#: sit unused before it is checked with a round trip before reuse. A process never holds more
#: connections than it had units of work in progress at once.
IDLE_KEPT = 16
IDLE_CHECK_SECONDS = 10.0

_idle: dict[tuple[int, str], list[tuple[float, PgConnection]]] = {}
_idle_guard = threading.Lock()


def pg_connection(url: str) -> PgConnection:
    """A connection to ``url`` for one unit of work: an idle one of this process, else a new one.

    Connections are the process's, not a thread's: Streamlit runs every script run (each
    submit) on a new thread, and a connection per thread opened a PostgreSQL session per
    submit (about 8 ms of connecting, a backend process started and ended, and a round trip or
    more per step over a network) where reuse costs nothing. A forked child opens its own. Give
    it back with :func:`put_pg_connection` when the unit ends: until then no other unit has it,
    so no two threads ever share one session (and with it the unit's advisory lock).
    """
    key = (os.getpid(), url)
    while True:
        with _idle_guard:
            idle = _idle.get(key)
            since, con = idle.pop() if idle else (0.0, None)
        if con is None:
            return PgConnection(url)
        if not con.broken and con.quiet() and (time.monotonic() - since < IDLE_CHECK_SECONDS or con.alive()):
            return con
        _close(con)  # the server ended it (a restart, an idle timeout): try the next, or open one


def put_pg_connection(url: str, con: PgConnection, *, healthy: bool) -> None:
    """Give back ``con`` after a unit of work; one an error may have left unusable is closed instead."""
    if healthy and not con.broken:
        with _idle_guard:
            idle = _idle.setdefault((os.getpid(), url), [])
            if len(idle) < IDLE_KEPT:
                idle.append((time.monotonic(), con))
                return
    _close(con)


def _close(con: PgConnection) -> None:
    with suppress(Exception):  # a broken connection has nothing left to close
        con.close()
