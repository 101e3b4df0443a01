"""Copying a whole project database to another one (``judgelab db copy``), on either back-end.

Per-kind exports move labels and judge runs, but not what only the database holds: raters
without labels and their invite tokens, assignments, settings, holds, ids that links and
``supersedes`` chains name. A copy moves every table the migrations create, row for row with
its ids, so every invite link, queue position and label history works on the destination as it
did on the source.

How it is done, and why:

* The tables and their columns are read from the destination's catalogue (both databases are
  migrated to this judgelab's schema first, and must agree), so a table a later migration adds
  is copied without a change here; ``_migrations`` is each database's own record.
* The source is read in one unit of work (one transaction: a consistent snapshot), a page of
  ``batch_rows`` rows at a time in primary-key order (keyset pagination: ``WHERE key > last``),
  so memory holds one page, whatever the size of the project, on both back-ends.
* The destination is written in one unit of work, so the copy lands whole or not at all: any
  failure (an error, Ctrl+C, the server going away) rolls every table back. Each page goes in
  with one ``INSERT ... SELECT`` of an Arrow table typed like the destination's columns
  (:func:`~judgelab.labeler.store._bulk.insert_rows`).
* Each sequence behind an id column is moved past the largest copied id, so new rows get new ids.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgelab.labeler.errors import InputError, StoreError
from judgelab.labeler.store._audit import audit
from judgelab.labeler.store._backend import is_postgres, redact
from judgelab.labeler.store._bulk import insert_rows
from judgelab.labeler.store._core import StoreCore, remove_database, resolve_db_path

#: Rows read and written at a time: one page of the largest table (answers with their text, a
#: few kB each) stays within some tens of MB.
BATCH_ROWS = 5_000

#: Tables each database keeps for itself: which migrations made it, and when.
_OWN_TABLES = frozenset({"_migrations"})
_NEXTVAL = re.compile(r"nextval\('([A-Za-z_][A-Za-z0-9_.]*)'")


@dataclass(frozen=True)
class CopySummary:
    """What :func:`copy_database` copied.

    Attributes:
        source: The source as messages show it (a URL without its password).
        destination: The destination, likewise.
        tables: Rows copied per table, every table of the schema (zero included), by name.
        seconds: Wall time of the copy.
    """

    source: str
    destination: str
    tables: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        """Rows copied in all."""
        return sum(self.tables.values())


@dataclass(frozen=True)
class _Table:
    """One table to copy: its columns (destination order), primary key, and id sequences."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    #: ``(column, sequence)`` for each column whose default draws from a sequence.
    sequences: tuple[tuple[str, str], ...]


def shown(location: str | Path) -> str:
    """A ``--db`` value as messages show it: a file's path, or a URL without its password."""
    return redact(str(location)) if is_postgres(location) else str(location)


def copy_project(source: str | Path, destination: str | Path, *, open_store: Callable[[str | Path], StoreCore],
                 batch_rows: int = BATCH_ROWS, on_table: Callable[[str, int], None] | None = None) -> CopySummary:
    """Copy the project at ``source`` into the empty database at ``destination``.

    Opens both (each a DuckDB file or a ``postgresql://`` URL; the destination is created and
    migrated if it is new) and runs :func:`copy_database`. A destination file this call created is
    removed again when the copy fails, so a failed copy leaves no new file behind.

    Args:
        source: The project to copy; it must exist.
        destination: Where to copy it: a new file, or an empty database.
        open_store: Opens a database (``Store``: this module is one of its parts, so it is given).
        batch_rows: Rows per page (see :func:`copy_database`).
        on_table: Called after each table is written (inside the destination's transaction).

    Raises:
        InputError: No database at ``source``, the two are the same database, or the
            destination holds rows already.
        StoreError: A database cannot be opened, or the copy failed (nothing was written).
    """
    src_file = None if is_postgres(str(source)) else resolve_db_path(source)
    if src_file is not None and not src_file.is_file():
        raise InputError(f"there is no project database at {src_file}",
                         fix="pass the project's database file (or its postgresql:// URL) as SRC.")
    dst_file = None if is_postgres(str(destination)) else resolve_db_path(destination)
    if (src_file is not None and src_file == dst_file) or (src_file is None and str(source) == str(destination)):
        raise InputError("the source and the destination are the same database",
                         fix="name a new file or an empty PostgreSQL database as DST.")
    created = dst_file is not None and not dst_file.exists()
    try:
        src, dst = open_store(src_file or str(source)), open_store(dst_file or str(destination))
        try:
            return copy_database(src, dst, batch_rows=batch_rows, on_table=on_table)
        except _driver_errors() as exc:
            # A server gone away, a full disk, a constraint: the transaction was rolled back.
            raise StoreError(f"the copy to {shown(destination)} failed and was rolled back, so the destination holds "
                             f"nothing of it: {exc}".strip() + "\nFix: correct the cause, then run the copy again."
                             ) from exc
        finally:
            src.release()
            dst.release()
    except BaseException:
        if created and dst_file is not None:
            remove_database(dst_file)
        raise


def _driver_errors() -> tuple[type[Exception], ...]:
    """The database drivers' own error classes (psycopg's only where it is installed)."""
    import duckdb

    try:
        import psycopg
    except ImportError:  # the postgres extra is not installed: only DuckDB files can be copied
        return (duckdb.Error,)
    return (duckdb.Error, psycopg.Error)


def copy_database(source: StoreCore, destination: StoreCore, *, batch_rows: int = BATCH_ROWS,
                  on_table: Callable[[str, int], None] | None = None) -> CopySummary:
    """Copy every row of every table of ``source`` into the empty ``destination``, ids kept.

    Both are migrated to this judgelab's schema (a :class:`~judgelab.labeler.store.Store` migrates on
    opening). All or nothing: the destination is written in one transaction.

    Args:
        source: The project to copy (read in one transaction: a consistent snapshot).
        destination: An empty database (its tables may exist, but hold no row).
        batch_rows: Rows read and written at a time; memory holds one such page.
        on_table: Called with each table's name and row count once it is written, before the
            destination commits (a progress line; raising there rolls the copy back).

    Raises:
        InputError: The destination holds rows already.
        StoreError: The two schemas differ (a judgelab of another version made one).
    """
    if batch_rows < 1:
        raise InputError(f"batch_rows must be at least 1, got {batch_rows}")
    started = time.monotonic()
    copied: dict[str, int] = {}
    with destination.connection() as dst, source.connection() as src:
        tables = _tables(dst)
        _check_same_schema(src, dst, tables, source, destination)
        filled = [t.name for t in tables if dst.execute(f"SELECT 1 FROM {t.name} LIMIT 1").fetchone()]
        if filled:
            raise InputError(
                f"the destination {shown(destination.location)} is not empty: it holds rows in "
                f"{', '.join(filled[:5])}{' and more' if len(filled) > 5 else ''}; nothing was copied",
                fix="copy into a new file or a new, empty PostgreSQL database (createdb NAME).",
            )
        for table in tables:
            copied[table.name] = _copy_table(src, dst, table, batch_rows)
            if on_table is not None:
                on_table(table.name, copied[table.name])
        for table in tables:
            for column, sequence in table.sequences:
                _advance(dst, table.name, column, sequence)
        # After the sequences moved: the copy's own entry follows the copied trail (issue 57).
        audit(dst, "db copy", shown(source.location), rows=sum(copied.values()))
    return CopySummary(shown(source.location), shown(destination.location), copied,
                       round(time.monotonic() - started, 3))


def _tables(con: Any) -> list[_Table]:
    """Every table of the schema but :data:`_OWN_TABLES`, by name, with columns, key and sequences."""
    columns: dict[str, list[tuple[str, str | None]]] = {}
    for table, column, default in con.execute(
        "SELECT c.table_name, c.column_name, c.column_default FROM information_schema.columns c"
        " JOIN information_schema.tables t ON t.table_name = c.table_name AND t.table_schema = c.table_schema"
        " WHERE c.table_schema = 'main' AND t.table_type = 'BASE TABLE'"
        " ORDER BY c.table_name, c.ordinal_position"
    ).fetchall():
        columns.setdefault(str(table), []).append((str(column), None if default is None else str(default)))
    keys: dict[str, list[str]] = {}
    for table, column in con.execute(
        "SELECT k.table_name, k.column_name FROM information_schema.table_constraints c"
        " JOIN information_schema.key_column_usage k ON k.constraint_name = c.constraint_name"
        "  AND k.table_name = c.table_name AND k.table_schema = c.table_schema"
        " WHERE c.constraint_type = 'PRIMARY KEY' AND c.table_schema = 'main'"
        " ORDER BY k.table_name, k.ordinal_position"
    ).fetchall():
        keys.setdefault(str(table), []).append(str(column))
    out = []
    for name in sorted(columns):
        if name in _OWN_TABLES:
            continue
        if name not in keys:
            # Pages are read in key order; a table without a key could not be paged safely.
            raise StoreError(f"table {name} has no primary key, so it cannot be copied page by page")
        sequences = tuple((c, m.group(1)) for c, d in columns[name] if d and (m := _NEXTVAL.search(d)))
        out.append(_Table(name, tuple(c for c, _ in columns[name]), tuple(keys[name]), sequences))
    return out


def _check_same_schema(src: Any, dst: Any, tables: Sequence[_Table], source: StoreCore,
                       destination: StoreCore) -> None:
    """Refuse to copy between databases whose migrations or tables differ."""
    versions = [sorted(int(r[0]) for r in con.execute("SELECT version FROM _migrations").fetchall())
                for con in (src, dst)]
    theirs = {t.name: t.columns for t in _tables(src)}
    mine = {t.name: t.columns for t in tables}
    if versions[0] != versions[1] or theirs != mine:
        raise StoreError(
            f"{shown(source.location)} and {shown(destination.location)} do not have the same schema "
            f"(migrations {versions[0][-1:]} and {versions[1][-1:]}), so nothing was copied.\n"
            "Fix: open both with this judgelab first (any command migrates a database), then copy again."
        )


def _copy_table(src: Any, dst: Any, table: _Table, batch_rows: int) -> int:
    """Copy ``table`` a page at a time in key order; the rows copied."""
    names = ", ".join(table.columns)
    order = ", ".join(table.key)
    at = [table.columns.index(k) for k in table.key]
    last: list[Any] | None = None
    n = 0
    while True:
        where, params = ("", []) if last is None else _after(table.key, last)
        rows = src.execute(f"SELECT {names} FROM {table.name}{where} ORDER BY {order} LIMIT {int(batch_rows)}",
                           params).fetchall()
        if not rows:
            return n
        insert_rows(dst, table.name, table.columns, rows)
        n += len(rows)
        if len(rows) < batch_rows:
            return n
        last = [rows[-1][i] for i in at]


def _after(key: Sequence[str], last: Sequence[Any]) -> tuple[str, list[Any]]:
    """SQL ``WHERE`` of the rows after ``last`` in ``key`` order (a row comparison, spelled out)."""
    terms, params = [], []
    for i, column in enumerate(key):
        equal = [f"{k} = ?" for k in key[:i]]
        terms.append("(" + " AND ".join([*equal, f"{column} > ?"]) + ")")
        params += [*last[:i], last[i]]
    return " WHERE " + " OR ".join(terms), params


def _advance(con: Any, table: str, column: str, sequence: str) -> None:
    """Move ``sequence`` past the largest ``column`` of ``table``, so new rows never reuse a copied id.

    Drawing values is the one way both back-ends share (DuckDB has no ``setval``): one draw says
    where the sequence stands, and the rest bring it to the largest id.
    """
    top = con.execute(f"SELECT max({column}) FROM {table}").fetchone()
    if top is None or top[0] is None:
        return
    drawn = con.execute(f"SELECT nextval('{sequence}')").fetchone()
    behind = int(top[0]) - int(drawn[0]) if drawn is not None else 0
    if behind > 0:
        con.execute(f"SELECT max(nextval('{sequence}')) FROM range(?)", [behind]).fetchall()
