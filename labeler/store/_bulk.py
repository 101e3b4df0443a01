"""Bulk writes: many rows in one statement, inside the caller's transaction.

DuckDB runs ``executemany`` as one statement per row, so inserting 100,000 rows that way
held the database file for minutes, far past the 30 s another process waits for it
(``labeler/store/_core.py``). Here the rows become one Arrow table, each column typed as
the target table declares it (so a NULL in an INTEGER column stays a NULL and never turns
a column into floats), registered on the connection, and written with a single
``INSERT ... SELECT``. Nothing here commits: the caller's unit of work stays one
all-or-nothing transaction.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import duckdb
import pyarrow as pa

from judgelab.labeler.errors import StoreError

# The column types the migrations use. JSON is stored as VARCHAR, so there are no
# struct or list columns to map.
_ARROW_TYPES: dict[str, pa.DataType] = {
    "VARCHAR": pa.string(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "TIMESTAMP": pa.timestamp("us"),
    # The same types as PostgreSQL's information_schema names them.
    "character varying": pa.string(),
    "integer": pa.int32(),
    "bigint": pa.int64(),
    "double precision": pa.float64(),
    "boolean": pa.bool_(),
    "timestamp without time zone": pa.timestamp("us"),
}

_names = itertools.count()

#: Rows converted to Arrow at a time.
_SLICE = 20_000


#: ``{table: {column: type}}`` as the migrations declare them. Every database is migrated to
#: the same schema before use, so it is read once per process, not on every write (the
#: runner writes every quarter second).
_declared: dict[str, dict[str, str]] = {}


def _schema(con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[str]) -> pa.Schema:
    """The Arrow schema of ``columns`` as ``table`` declares them."""
    declared = _declared.get(table)
    if declared is None:
        declared = _declared[table] = dict(
            con.execute(
                "SELECT column_name, data_type FROM information_schema.columns"
                " WHERE table_schema = 'main' AND table_name = ?",
                [table],
            ).fetchall()
        )
    fields = []
    for column in columns:
        kind = declared.get(column)
        if kind not in _ARROW_TYPES:
            raise StoreError(f"cannot stage column {table}.{column} of type {kind!r}")
        fields.append(pa.field(column, _ARROW_TYPES[kind]))
    return pa.schema(fields)


def _arrow(schema: pa.Schema, rows: Sequence[Sequence[Any]], ids: Sequence[int] | None = None) -> pa.Table:
    """``rows`` as an Arrow table of ``schema`` (``ids`` as its first column when given).

    Built a slice of rows at a time, so the transposed copy of the values that Arrow
    needs exists for one slice only, not for every row at once.
    """
    batches = []
    for start in range(0, len(rows), _SLICE):
        values: list[Sequence[Any]] = list(zip(*rows[start : start + _SLICE], strict=True))
        if ids is not None:
            values.insert(0, ids[start : start + _SLICE])
        batches.append(
            pa.record_batch([pa.array(v, type=f.type) for v, f in zip(values, schema, strict=True)], schema=schema)
        )
    return pa.Table.from_batches(batches, schema=schema)


@contextmanager
def staged(
    con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> Iterator[str]:
    """Register ``rows`` on ``con`` as a relation typed like ``table``'s ``columns``.

    For set-based checks against stored rows (a join instead of a query per row) before
    an insert.

    Args:
        con: The open connection of the current unit of work.
        table: The table whose column types the rows take.
        columns: Column names, in the order of each row's values.
        rows: The rows, each a sequence of plain Python values (``None`` for NULL).

    Yields:
        The name to select from while the block runs.
    """
    with _registered(con, table, _arrow(_schema(con, table, columns), rows)) as name:
        yield name


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, name: str, frame: Any) -> Iterator[str]:
    """Make ``frame`` (a DataFrame or Arrow table) selectable as ``name`` while the block runs.

    Any result an ``execute()`` left unread on ``con`` is run to its end before the
    frame is registered and before it is dropped: DuckDB 2 refuses ``register`` and
    ``unregister`` on a connection with an unfinished result (a ``fetchone()`` leaves
    one), and every statement of a unit of work shares one connection.
    """
    con.complete()
    con.register(name, frame)
    try:
        yield name
    except BaseException:
        # Tried, but never in place of the error that got here: after a failed statement
        # PostgreSQL refuses every other one until the rollback (which drops the table anyway),
        # and its "transaction is aborted" would hide the cause from the user.
        with suppress(Exception):
            con.complete()
            con.unregister(name)
        raise
    con.complete()
    con.unregister(name)


@contextmanager
def _registered(con: duckdb.DuckDBPyConnection, table: str, arrow: pa.Table) -> Iterator[str]:
    with registered(con, f"_staged_{table}_{next(_names)}", arrow) as name:
        yield name


def insert_rows(
    con: duckdb.DuckDBPyConnection,
    table: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    id_from: tuple[str, str] | None = None,
) -> list[int]:
    """Insert ``rows`` into ``table`` with one statement; the bulk form of ``executemany``.

    Args:
        con: The open connection of the current unit of work.
        table: Target table.
        columns: Column names, in the order of each row's values.
        rows: The rows, each a sequence of plain Python values (``None`` for NULL).
        id_from: ``(id column, sequence)`` for tables whose key comes from a sequence. The
            ids are drawn here and given in row order, because a parallel insert may draw
            a column default's ``nextval`` out of row order, and readers take the newest
            row by id (the current label, a run's latest reply to a call).

    Returns:
        The ids given to the rows, in row order, when ``id_from`` is set; else an empty list.
    """
    if not rows:
        return []
    ids: list[int] | None = None
    if id_from is not None:
        id_column, sequence = id_from
        drawn = con.execute(f"SELECT nextval('{sequence}') FROM range(?)", [len(rows)]).fetchall()
        ids = sorted(int(r[0]) for r in drawn)
        columns = [id_column, *columns]
    names = ", ".join(columns)
    with _registered(con, table, _arrow(_schema(con, table, columns), rows, ids)) as source:
        con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM {source}")
    return ids or []


def drop_stored(
    rows: list[list[Any]],
    stored: Sequence[Sequence[Any]],
    conflict: Callable[..., Exception],
    *,
    width: int = 1,
) -> list[list[Any]]:
    """``rows`` without those whose key is already stored with the same content.

    Imports skip rows they already hold and refuse rows that would change one. ``stored``
    comes from one join of the staged rows (:func:`staged`) with the table.

    Args:
        rows: The rows to insert; each starts with its ``width`` key values.
        stored: ``(*key, same content)`` for each stored row that has one of those keys.
        conflict: Builds the error for a key stored with different content, called with
            the key's values.
        width: How many leading values of a row make its key.

    Raises:
        Exception: ``conflict(*key)`` for the first row, in row order, whose key is stored
            with different content.
    """
    if not stored:
        return rows
    same: dict[tuple[Any, ...], bool] = {}
    for found in stored:
        key = tuple(found[:width])
        # Several stored rows of one key: one with other content is enough to conflict.
        same[key] = same.get(key, True) and bool(found[width])
    for row in rows:
        if same.get(tuple(row[:width])) is False:
            raise conflict(*row[:width])
    return [row for row in rows if tuple(row[:width]) not in same]
