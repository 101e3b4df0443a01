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
import logging
import os
import re
import select
import threading
import time
import urllib.parse
import weakref
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
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
try:
    from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout
except ImportError:  # pragma: no cover - the postgres extra installs it
    ConnectionPool = None  # type: ignore[assignment,misc]
    PoolClosed = PoolTimeout = RuntimeError  # type: ignore[assignment,misc]

from judgelab.labeler.errors import InputError, StoreError

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
    """``url`` with every password in it as ``***``: the one form a URL is shown in (messages, logs).

    libpq takes a password in two places: the userinfo (``postgresql://user:SECRET@host/db``)
    and a ``password`` query parameter (``postgresql://host/db?user=u&password=SECRET``; libpq
    decodes ``%XX`` in a parameter's name, so ``pass%77ord`` is one too). Both are replaced, the
    parameter's name in any case. Anything that is not a URL is returned as it is.

    >>> redact("postgresql://judgelab:s3cret@db.example.org/judgelab")
    'postgresql://judgelab:***@db.example.org/judgelab'
    >>> redact("postgres://db/judgelab?user=u&PassWord=s3cret&sslmode=require")
    'postgres://db/judgelab?user=u&PassWord=***&sslmode=require'
    """
    scheme = _SCHEME.match(url)
    if scheme is None:
        return url
    start = scheme.end()
    rest, asked, query = url[start:].partition("?")
    # The userinfo ends at the last "@" before the query: a host never holds one, and a password
    # might (libpq wants it as %40, but the URL is redacted before anyone checks it).
    userinfo, at, after = rest.rpartition("@")
    if at and ":" in userinfo:
        rest = userinfo.split(":", 1)[0] + ":***@" + after
    if asked:
        query = "&".join(_redacted_param(p) for p in query.split("&"))
    return url[:start] + rest + asked + query


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def _redacted_param(param: str) -> str:
    name, equals, _ = param.partition("=")
    if equals and urllib.parse.unquote(name).strip().lower() == "password":
        return f"{name}=***"
    return param


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
    """A psycopg connection that takes the store's DuckDB-dialect statements.

    Args:
        url: The database.
        con: A connection from the process's pool (:func:`pg_connection`); without it, one of
            its own is opened (for a caller outside the store's units of work).
        home: The pool ``con`` goes back to.
    """

    def __init__(self, url: str, *, con: Any = None, home: Any = None) -> None:
        if psycopg is None:
            raise StoreError("judgelab needs psycopg for a PostgreSQL database.\nFix: pip install 'psycopg[binary]'")
        if con is None:
            try:
                con = psycopg.connect(url, autocommit=True, connect_timeout=10)
            except psycopg.Error as exc:
                raise StoreError(f"could not connect to {redact(url)}: {_first_line(exc)}") from exc
            _configure(con)
        self._con = con
        #: The pool this connection goes back to (``None``: its own, closed when given back).
        self.home = home

    @property
    def raw(self) -> Any:
        """The psycopg connection."""
        return self._con

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


def plain_pg_error(exc: BaseException, con: PgConnection) -> StoreError | None:
    """A PostgreSQL error a user can act on, as one line naming the fix (``None``: not one of those)."""
    if psycopg is None or not isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return None
    info = con.raw.info
    role, database = info.user, info.dbname
    said = _first_line(exc)
    if "schema" in said:
        return StoreError(
            f'the role "{role}" may not create tables in the schema public of the database "{database}" ({said}); '
            "since PostgreSQL 15 only the database's owner may, and judgelab makes its tables on first use. "
            f"Fix: as a superuser, create the database owned by the role (createdb -O {role} {database}), "
            f"or run ALTER DATABASE {database} OWNER TO {role}; or, in that database, "
            f"GRANT CREATE ON SCHEMA public TO {role}; then run the command again."
        )
    return StoreError(
        f'the role "{role}" may not do what this needs in the database "{database}" ({said}). '
        f"Fix: use the role that owns the database (the one that ran `judgelab init`), or grant {role} "
        "the privileges on judgelab's tables as their owner, then run the command again."
    )


# -- the pool -------------------------------------------------------------------------------

#: The variables that size a process's pool (``judgelab serve --pool-size`` sets the first for the
#: server it starts): how many connections the process opens to one database at most, and how
#: many seconds a unit of work waits for one of them before it says the database is full.
POOL_SIZE_ENV = "JUDGELAB_PG_POOL_SIZE"
POOL_TIMEOUT_ENV = "JUDGELAB_PG_POOL_TIMEOUT"
#: Units run one at a time across every process anyway (the advisory lock), so a unit that waits
#: here for a connection loses nothing it would not lose waiting for the lock in the server: ten
#: keep a server's pages busy and leave room for several servers under PostgreSQL's default
#: ``max_connections`` of 100 (see docs/admins/database.md, "Sizing the connections").
DEFAULT_POOL_SIZE = 10
DEFAULT_POOL_TIMEOUT = 30.0
#: How long a connection may sit unused in the pool before it is checked with a round trip.
IDLE_CHECK_SECONDS = 10.0
#: How often a waiting unit looks whether the server refused to connect for a reason that waiting
#: does not cure (a wrong password, no such database, nothing listening).
_LOOK_SECONDS = 0.2
#: Refusals that pass by themselves: every connection slot of the server is taken (53300,
#: ``max_connections``, a role's or database's connection limit), or the server is starting or
#: stopping (57P03). libpq gives no SQLSTATE for a refused connection, so its words are read too.
_PASSING = frozenset({"53300", "57P03"})
_PASSING_WORDS = re.compile(
    r"too many (clients|connections)|connection slots are reserved|is starting up|is shutting down|"
    r"in recovery mode|not yet accepting connections", re.IGNORECASE)


def _passing(exc: Exception) -> bool:
    """Whether a refused connection is one that waiting cures (:data:`_PASSING`)."""
    return getattr(exc, "sqlstate", None) in _PASSING or bool(_PASSING_WORDS.search(str(exc)))


class _Connector:
    """Opens the pool's connections and keeps the last refusal (the pool itself only logs it)."""

    def __init__(self) -> None:
        self.failure: tuple[float, Exception] | None = None

    def connect(self, conninfo: str, **kwargs: Any) -> Any:
        try:
            con = psycopg.Connection.connect(conninfo, **kwargs)
        except psycopg.Error as exc:
            self.failure = (time.monotonic(), exc)
            raise
        self.failure = None
        return con

    def refused(self, since: float) -> Exception | None:
        """The refusal seen since ``since`` that waiting will not cure, if any."""
        failure = self.failure
        if failure is None or failure[0] < since:
            return None
        return None if _passing(failure[1]) else failure[1]

    def full(self, since: float) -> bool:
        """Whether the server said, since ``since``, that it has no connection slot free."""
        failure = self.failure
        return failure is not None and failure[0] >= since and _passing(failure[1])


@dataclass
class _Pool:
    """One process's connections to one database."""

    pool: Any
    connector: _Connector
    size: int
    timeout: float


_pools: dict[tuple[int, str], _Pool] = {}
_pools_guard = threading.Lock()
#: When each idle connection was given back (a connection is the key, so a closed one drops out).
_returned: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
# psycopg_pool logs each failed connection attempt as a warning; with no logging set up Python
# would print it on stderr, beside the one line judgelab says about it.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())


def pool_settings() -> tuple[int, float]:
    """The pool size and wait of this process: ``$JUDGELAB_PG_POOL_SIZE``, ``$JUDGELAB_PG_POOL_TIMEOUT``.

    Raises:
        InputError: One of them is set to something else than a positive number.
    """
    size_text = os.environ.get(POOL_SIZE_ENV, "").strip()
    wait_text = os.environ.get(POOL_TIMEOUT_ENV, "").strip()
    try:
        size = int(size_text) if size_text else DEFAULT_POOL_SIZE
        wait = float(wait_text) if wait_text else DEFAULT_POOL_TIMEOUT
    except ValueError:
        size = wait = 0
    if size < 1 or not wait > 0:
        raise InputError(
            f"{POOL_SIZE_ENV}={size_text!r} / {POOL_TIMEOUT_ENV}={wait_text!r} are not a whole number of "
            "connections and a number of seconds above 0",
            fix=f"set them to e.g. {POOL_SIZE_ENV}={DEFAULT_POOL_SIZE} and "
                f"{POOL_TIMEOUT_ENV}={DEFAULT_POOL_TIMEOUT:g}, or unset them.",
        )
    return size, wait


def _configure(con: Any) -> None:
    """Set up a new connection once: the types as the store expects them, times in UTC."""
    # numeric (sum/avg of integers) as float, as DuckDB returns DOUBLE/HUGEINT as numbers.
    con.adapters.register_loader("numeric", FloatLoader)
    # str as text, not psycopg's default "unknown": a list of ids must be a text[] for
    # ``unnest(?)``, as DuckDB infers VARCHAR[].
    con.adapters.register_dumper(str, StrDumper)
    con.execute("SET TIME ZONE 'UTC'")


def _pool_for(url: str) -> _Pool:
    """The pool of this process for ``url``, made on first use (a forked child makes its own)."""
    if psycopg is None or ConnectionPool is None:
        raise StoreError("judgelab needs psycopg and psycopg-pool for a PostgreSQL database.\n"
                         "Fix: pip install 'judgelab[postgres]'")
    key = (os.getpid(), url)
    with _pools_guard:
        made = _pools.get(key)
        if made is None:
            size, wait = pool_settings()
            connector = _Connector()
            pool = ConnectionPool(
                url, connection_class=connector, kwargs={"autocommit": True, "connect_timeout": 10},  # type: ignore[arg-type]
                min_size=0, max_size=size, open=True, configure=_configure, name="judgelab", timeout=wait,
                # The pool grows one connection at a time anyway; one worker thread per database is enough.
                num_workers=1,
            )
            made = _pools[key] = _Pool(pool, connector, size, wait)
        return made


def _drop_pool(url: str, made: _Pool) -> None:
    """Close ``made`` so the next unit starts afresh (its workers would retry for minutes)."""
    with _pools_guard:
        if _pools.get((os.getpid(), url)) is made:
            del _pools[(os.getpid(), url)]
    with suppress(Exception):
        made.pool.close(timeout=0)


def close_pg_pools() -> None:
    """Close every pool of this process (before ``exec`` and at exit); units in progress keep theirs."""
    with _pools_guard:
        mine = [(key, made) for key, made in _pools.items() if key[0] == os.getpid()]
        for key, _ in mine:
            del _pools[key]
    for _, made in mine:
        with suppress(Exception):
            made.pool.close(timeout=0)


def pg_connection(url: str) -> PgConnection:
    """A connection to ``url`` for one unit of work, from the process's pool: wait for one if all are busy.

    Connections are the process's, not a thread's: Streamlit runs every script run (each
    submit) on a new thread, and a connection per thread opened a PostgreSQL session per
    submit (about 8 ms of connecting, a backend process started and ended, and a round trip or
    more per step over a network) where reuse costs nothing. The pool holds at most
    ``$JUDGELAB_PG_POOL_SIZE`` of them, so servers x pool size can be kept under the server's
    ``max_connections``. Give the connection back with :func:`put_pg_connection` when the unit
    ends: until then no other unit has it, so no two threads ever share one session (and with it
    the unit's advisory lock).

    Raises:
        StoreError: The server refused to connect (a wrong password, no such database, nothing
            listening: at once), or no connection came free within ``$JUDGELAB_PG_POOL_TIMEOUT``
            seconds (every one of the process's is busy, or the server has no slot left).
    """
    made = _pool_for(url)
    started = time.monotonic()
    deadline = started + made.timeout
    while True:
        # Wait in short steps, to see a refusal that waiting will not cure as soon as it comes.
        step = min(_LOOK_SECONDS, deadline - time.monotonic())
        try:
            con = made.pool.getconn(timeout=max(step, 0.001))
        except (PoolTimeout, PoolClosed) as exc:
            refused = made.connector.refused(started)
            if refused is not None:
                _drop_pool(url, made)
                raise StoreError(f"could not connect to {redact(url)}: {_first_line(refused)}") from refused
            if isinstance(exc, PoolClosed):  # closed by another unit that saw a refusal: start afresh
                made = _pool_for(url)
            elif time.monotonic() >= deadline:
                raise _full(url, made, made.connector.full(started)) from None
            continue
        if _usable(con):
            return PgConnection(url, con=con, home=made.pool)
        # The server ended it (a restart, pg_terminate_backend, an idle timeout): closed, the pool
        # discards it and opens a replacement; try the next one.
        _close(con)
        made.pool.putconn(con)


def _usable(con: Any) -> bool:
    """Whether an idle connection from the pool still has its session (a round trip only after a pause).

    A server that ends a session says so and closes the socket, which then reads as ready with no
    query sent: such a connection would fail the next unit's first statement.
    """
    if con.closed or con.broken:
        return False
    try:
        ready, _, _ = select.select([con.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return False
    if ready:
        return False
    if time.monotonic() - _returned.get(con, 0.0) < IDLE_CHECK_SECONDS:
        return True
    try:
        con.execute("SELECT 1")
    except psycopg.Error:
        return False
    return True


def _full(url: str, made: _Pool, server_full: bool) -> StoreError:
    """The one line for a unit that waited its whole time for a connection."""
    if server_full:
        why = "the PostgreSQL server has no connection slot free (max_connections)"
        fix = (f"raise max_connections on the server, or lower the pool of each app server ({POOL_SIZE_ENV} or "
               "`judgelab serve --pool-size`) so that servers x pool size <= max_connections - reserved ones")
    else:
        why = f"all {made.size} connections of this process are in use"
        fix = (f"try again shortly; if it recurs, raise `judgelab serve --pool-size` ({POOL_SIZE_ENV}) "
               "within max_connections")
    return StoreError(f"the database {redact(url)} is full: no connection came free within {made.timeout:g} s "
                      f"({why}). Fix: {fix}.")


def put_pg_connection(url: str, con: PgConnection, *, healthy: bool) -> None:
    """Give back ``con`` after a unit of work; one an error may have left unusable is closed (and replaced)."""
    raw = con.raw
    if not healthy:
        _close(raw)
    home = con.home
    if home is None:  # a connection of its own, not the pool's
        _close(raw)
        return
    _returned[raw] = time.monotonic()
    try:
        home.putconn(raw)
    except Exception:  # its pool was closed meanwhile (a refusal, close_pg_pools): nothing to give back to
        _close(raw)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _close(con: Any) -> None:
    with suppress(Exception):  # a broken connection has nothing left to close
        con.close()
