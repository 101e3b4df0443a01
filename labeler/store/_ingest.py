"""Staging an answers file outside the project: a private DuckDB database the import checks and masks in.

An import used to hold every row of the file as Python objects and check each in Python. Here
the file goes into a staging table of a temporary DuckDB database of the import's own (in a
private temporary folder, with a memory limit, so a large file spills to disk instead of
growing the process). Nothing here touches the project: the project's database is held only for
the short read of what the checks need from it and the one short write at the end
(:meth:`judgelab.labeler.store.Store.add_staged_pool`).

DuckDB reads a JSON-lines file itself (``read_json``, each line one JSON value). Any other file
(CSV, Parquet, a JSON array, Arrow, an adapter's conversion) is read by :func:`judgelab.labeler._rows.read_rows`
or the adapter as before and its rows are copied in a slice at a time. Either way each row then
gets a ``plain`` flag, computed as a set operation: every value already is exactly what the Python
checks (:class:`judgelab.labeler._rows.Checker`) would accept and keep unchanged (a string id of the id
characters, a non-blank text under the length limit, nothing a spreadsheet would run). The few
rows that are not plain are read back and checked by the Python checks themselves, which either
give the row's values (written back here) or raise the exact error they always raised.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from judgelab.labeler._rows import MAX_FIELD_CHARS, MAX_ID_CHARS, Rows

#: The normalised columns of a staged answer row, as :func:`judgelab.labeler.importers.parse_answers` gives them.
ROW_COLUMNS = ("task_id", "prompt", "category", "reference_answer", "reference_author_kind", "reference_author",
               "answer_id", "family", "model", "variant", "parent_answer_id", "text", "transcript")
#: Rows copied, checked or read back at a time.
SLICE = 20_000
#: The staging database's memory limit: beyond it DuckDB spills to the private folder.
MEMORY_LIMIT = "512MB"

_ID = f"[A-Za-z0-9][A-Za-z0-9_.:~/-]{{0,{MAX_ID_CHARS - 1}}}"
# Every character Python's str.isspace() calls whitespace: RE2's \s knows only the ASCII ones, and a
# text that is all whitespace to Python is "empty" to the checks.
_NOT_SPACE = ("[^\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}"
              "\\x{202f}\\x{205f}\\x{3000}]")
_IDS = ("task_id", "answer_id", "family", "model")
_OPTIONAL_IDS = ("variant", "parent_answer_id")
_OPTIONAL_TEXTS = ("category", "reference_answer")
#: Columns a plain row has no value in: their rows are for the Python checks.
_NEVER_PLAIN = ("reference_author", "messages")
_SOURCE = ("task_id", "prompt", "category", "reference_answer", "reference_author", "answer_id", "family",
           "model", "variant", "parent_answer_id", "text", "messages")


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class Staging:
    """The private staging database of one import (a context manager; removed on exit)."""

    def __init__(self) -> None:
        """Create the database in a new private temporary folder."""
        self._dir = tempfile.TemporaryDirectory(prefix="judgelab-import-")
        #: The staging database file (attached read-only by the project's write).
        self.path = Path(self._dir.name) / "staging.duckdb"
        self.con: duckdb.DuckDBPyConnection | None = duckdb.connect(str(self.path), config={
            "memory_limit": MEMORY_LIMIT, "temp_directory": str(Path(self._dir.name) / "spill"),
            "preserve_insertion_order": True, "threads": max(1, min(2, os.cpu_count() or 1)),
        })
        self.con.execute("SET enable_progress_bar = false")  # a command's output is its own
        #: The file's columns in its order (every key seen, in order of first appearance).
        self.columns: tuple[str, ...] = ()
        #: How many rows were staged.
        self.n = 0
        self._rows: Rows | None = None
        self._parquet: Path | None = None
        self._types: dict[str, str] = {}

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        self._dir.cleanup()

    def close(self) -> None:
        """Close the staging connection (the file stays until the context ends)."""
        if self.con is not None:
            self.con.close()
            self.con = None

    @property
    def db(self) -> duckdb.DuckDBPyConnection:
        """The open staging connection."""
        assert self.con is not None, "the staging database is closed"
        return self.con

    # -- reading the file -----------------------------------------------------------------------

    def read_json_lines(self, path: Path) -> bool:
        """Let DuckDB read a JSON-lines file, each line one JSON value; whether it read it as Python would.

        ``False`` (nothing staged) for a file DuckDB refuses (not JSON, not UTF-8) or one with a line
        that is not an object: Python's reader then reads it and words the error.
        """
        try:
            self.db.execute(
                "CREATE TABLE raw AS SELECT j FROM read_json(?, format = 'newline_delimited', records = 'false',"
                " columns = {'j': 'JSON'}, maximum_object_size = 33554432)", [str(path)])
            bad = self.db.execute("SELECT count(*) FILTER (WHERE json_type(j) <> 'OBJECT'), count(*) FROM raw"
                                  ).fetchone()
        except duckdb.Error:
            self.db.execute("DROP TABLE IF EXISTS raw")
            return False
        assert bad is not None
        if bad[0]:
            self.db.execute("DROP TABLE raw")
            return False
        self.n = int(bad[1])
        seen: dict[str, None] = {}
        for (keys,) in self.db.execute(
            "SELECT keys FROM (SELECT json_keys(j) AS keys, min(rowid) AS first FROM raw GROUP BY keys)"
            " ORDER BY first"
        ).fetchall():
            for key in keys:
                seen.setdefault(str(key))
        self.columns = tuple(seen)
        return True

    def read_parquet(self, path: Path) -> bool:
        """Let DuckDB read a Parquet file; ``False`` (nothing staged) when it cannot (Python's reader words why)."""
        try:
            self.db.execute("CREATE TABLE raw AS SELECT * EXCLUDE (file_row_number), file_row_number + 1 AS _row_no"
                            " FROM read_parquet(?, file_row_number = true)", [str(path)])
            described = self.db.execute("DESCRIBE raw").fetchall()
            counted = self.db.execute("SELECT count(*) FROM raw").fetchone()
        except duckdb.Error:
            self.db.execute("DROP TABLE IF EXISTS raw")
            return False
        self._types = {str(r[0]): str(r[1]) for r in described if r[0] != "_row_no"}
        self.columns = tuple(self._types)
        self.n = int(counted[0]) if counted else 0
        self._parquet = path
        return True

    def stage_rows(self, rows: Rows) -> None:
        """Copy rows a Python reader read in, a slice at a time (kept for the Python checks)."""
        self._rows = rows
        self.columns = rows.columns
        self.n = len(rows.rows)
        wanted = [c for c in _SOURCE if c in rows.columns]
        fields = [pa.field("row_no", pa.int64())]
        for c in wanted:
            fields += [pa.field(c, pa.string()), pa.field(f"{c}__t", pa.string())]
        schema = pa.schema(fields)
        self.db.execute("CREATE TABLE raw (row_no BIGINT"
                        + "".join(f", {_q(c)} VARCHAR, {_q(c + '__t')} VARCHAR" for c in wanted) + ")")
        for start in range(0, self.n, SLICE):
            part = rows.rows[start : start + SLICE]
            columns: list[list[Any]] = [list(range(start + 1, start + 1 + len(part)))]
            for c in wanted:
                values = [r.get(c) for r in part]
                kinds = [_kind(v, rows, start + k + 1, c) for k, v in enumerate(values)]
                columns += [[v if k == "VARCHAR" else None for v, k in zip(values, kinds, strict=True)], kinds]
            self._insert("raw", pa.table(columns, schema=schema))

    def _insert(self, table: str, frame: pa.Table) -> None:
        self.db.register("_slice", frame)
        try:
            self.db.execute(f"INSERT INTO {table} SELECT * FROM _slice")
        finally:
            self.db.unregister("_slice")

    # -- the plain rows ---------------------------------------------------------------------------

    def build(self, ignore: set[str]) -> int:
        """The ``staged`` table: one row per file row, its values, and whether the row is plain.

        Returns:
            How many rows are not plain (for the Python checks: :meth:`suspects`).
        """
        present = [c for c in _SOURCE if c in self.columns and c not in ignore]
        if self._parquet is not None:  # Parquet: a text column's values as they are, any other type for Python
            value = {c: _q(c) if self._types[c] == "VARCHAR" else "NULL::VARCHAR" for c in present}
            kind = {c: f"CASE WHEN {_q(c)} IS NULL THEN 'NULL' ELSE "
                       f"'{'VARCHAR' if self._types[c] == 'VARCHAR' else 'OTHER'}' END" for c in present}
            source = "(SELECT _row_no AS row_no, * EXCLUDE (_row_no) FROM raw)"
            whole = "true"
        elif self._rows is None:  # JSON: a value and its JSON type per column
            # Each line is parsed once into a struct of JSON values, not once per column.
            shape = "{" + ", ".join(f'"{c}": "JSON"' for c in present) + "}"
            value = {c: f"json_extract_string(f.{_q(c)}, '$')" for c in present}
            kind = {c: f"json_type(f.{_q(c)})" for c in present}
            source = (f"(SELECT rowid + 1 AS row_no, json_keys(j) AS keys, from_json(j, '{shape}') AS f FROM raw)"
                      if present else "(SELECT rowid + 1 AS row_no, json_keys(j) AS keys FROM raw)")
            whole = "len(keys) = len(list_distinct(keys))"  # a repeated key: Python keeps the last one
        else:
            value = {c: _q(c) for c in present}
            kind = {c: _q(c + "__t") for c in present}
            source = "raw"
            whole = "true"

        def v(c: str) -> str:
            return value.get(c, "NULL::VARCHAR")

        def k(c: str) -> str:
            return kind.get(c, "NULL")

        def absent(c: str) -> str:
            return f"coalesce({k(c)}, 'NULL') = 'NULL'"

        def text_ok(c: str, *, blank: bool = False) -> str:
            filled = "true" if blank else f"regexp_matches({v(c)}, '{_NOT_SPACE}')"
            return f"({k(c)} = 'VARCHAR' AND strlen({v(c)}) <= {MAX_FIELD_CHARS} AND {filled})"

        def id_ok(c: str) -> str:
            return f"({k(c)} = 'VARCHAR' AND regexp_full_match({v(c)}, '{_ID}'))"

        checks = [whole, text_ok("prompt"), *(id_ok(c) for c in _IDS)]
        checks += [f"({absent(c)} OR {text_ok(c)})" for c in _OPTIONAL_TEXTS]
        checks += [f"({absent(c)} OR {id_ok(c)})" for c in _OPTIONAL_IDS]
        checks += [absent(c) for c in _NEVER_PLAIN]
        # JSON and Parquet keep an empty answer (a model that wrote nothing); a CSV cell has no such thing.
        spreadsheet = self._rows is not None and self._rows.spreadsheet
        checks.append(text_ok("text", blank=not spreadsheet))
        plain = " AND ".join(f"coalesce({c}, false)" for c in checks)
        self.db.execute(
            "CREATE TABLE staged AS SELECT row_no, "
            f"CASE WHEN {plain} THEN true ELSE false END AS plain, "
            f"{v('task_id')} AS task_id, {v('prompt')} AS prompt, "
            f"CASE WHEN {absent('category')} THEN NULL ELSE {v('category')} END AS category, "
            f"CASE WHEN {absent('reference_answer')} THEN NULL ELSE {v('reference_answer')} END AS reference_answer,"
            " NULL::VARCHAR AS reference_author_kind, NULL::VARCHAR AS reference_author, "
            f"{v('answer_id')} AS answer_id, {v('family')} AS family, {v('model')} AS model, "
            f"CASE WHEN {absent('variant')} THEN 'original' ELSE {v('variant')} END AS variant, "
            f"CASE WHEN {absent('parent_answer_id')} THEN NULL ELSE {v('parent_answer_id')} END AS parent_answer_id, "
            f"{v('text')} AS text, NULL::VARCHAR AS transcript FROM {source}"
        )
        row = self.db.execute("SELECT count(*) FROM staged WHERE NOT plain").fetchone()
        return int(row[0]) if row else 0

    def suspects(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Each row that is not plain, in row order, as the Python reader gives it: ``(row, {column: value})``."""
        last = 0
        while True:
            numbers = [int(r[0]) for r in self.db.execute(
                "SELECT row_no FROM staged WHERE NOT plain AND row_no > ? ORDER BY row_no LIMIT ?", [last, SLICE]
            ).fetchall()]
            if not numbers:
                return
            last = numbers[-1]
            if self._rows is not None:
                for n in numbers:
                    yield n, self._rows.rows[n - 1]
                continue
            if self._parquet is not None:
                yield from self._parquet_rows(numbers)
                continue
            found = dict(self.db.execute(
                "SELECT rowid + 1, j FROM raw WHERE rowid + 1 IN (SELECT unnest(?))", [numbers]).fetchall())
            for n in numbers:
                yield n, {str(key): value for key, value in json.loads(found[n]).items()}

    def _parquet_rows(self, numbers: list[int]) -> Iterator[tuple[int, dict[str, Any]]]:
        """Rows ``numbers`` (ascending) of the Parquet file as pyarrow gives them, one batch in memory at a time."""
        import pyarrow.parquet as pq

        wanted = iter(numbers)
        n = next(wanted, None)
        first = 1
        for batch in pq.ParquetFile(self._parquet).iter_batches(batch_size=SLICE):
            while n is not None and n < first + batch.num_rows:
                yield n, batch.slice(n - first, 1).to_pylist()[0]
                n = next(wanted, None)
            if n is None:
                return
            first += batch.num_rows

    def write_back(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Store the values the Python checks gave rows: ``(row, *ROW_COLUMNS values)`` each."""
        if not rows:
            return
        schema = pa.schema([pa.field("row_no", pa.int64()), *(pa.field(c, pa.string()) for c in ROW_COLUMNS)])
        frame = pa.table([list(c) for c in zip(*rows, strict=True)], schema=schema)
        self.db.register("_fixed", frame)
        try:
            sets = ", ".join(f"{c} = f.{c}" for c in ROW_COLUMNS)
            self.db.execute(f"UPDATE staged SET {sets} FROM _fixed f WHERE staged.row_no = f.row_no")
        finally:
            self.db.unregister("_fixed")

    # -- checks across rows -------------------------------------------------------------------------

    def task_differs(self, before: int | None) -> tuple[int, str, int] | None:
        """The first row (before row ``before``) whose task differs from the task's first row.

        Returns:
            ``(row, task_id, first row of the task)``, or ``None``.
        """
        found = self.db.execute(
            "SELECT row_no, task_id, first FROM (SELECT row_no, task_id, "
            " first_value(row_no) OVER w AS first,"
            " (prompt, category, reference_answer, reference_author_kind, reference_author)"
            "   IS DISTINCT FROM first_value((prompt, category, reference_answer, reference_author_kind,"
            "   reference_author)) OVER w AS differs"
            " FROM staged WHERE row_no < ? WINDOW w AS (PARTITION BY task_id ORDER BY row_no))"
            " WHERE differs ORDER BY row_no LIMIT 1", [before if before is not None else self.n + 1]
        ).fetchone()
        return None if found is None else (int(found[0]), str(found[1]), int(found[2]))

    def repeated_answer(self) -> tuple[int, str, int] | None:
        """The first row whose answer id an earlier row has: ``(row, answer_id, first row)``, or ``None``."""
        found = self.db.execute(
            "SELECT row_no, answer_id, first FROM (SELECT row_no, answer_id,"
            " min(row_no) OVER (PARTITION BY answer_id) AS first FROM staged)"
            " WHERE row_no > first ORDER BY row_no LIMIT 1"
        ).fetchone()
        return None if found is None else (int(found[0]), str(found[1]), int(found[2]))

    def outside_parents(self) -> list[tuple[int, str, str]]:
        """``(row, answer_id, parent)`` of each row whose parent answer is not in the file, in row order."""
        return [(int(r[0]), str(r[1]), str(r[2])) for r in self.db.execute(
            "SELECT row_no, answer_id, parent_answer_id FROM staged WHERE parent_answer_id IS NOT NULL"
            " AND parent_answer_id NOT IN (SELECT answer_id FROM staged) ORDER BY row_no"
        ).fetchall()]

    def names(self) -> list[str]:
        """Every family and model name of the file's answers."""
        return sorted({str(n) for row in self.db.execute("SELECT DISTINCT family, model FROM staged").fetchall()
                       for n in row})

    # -- masks and the rows to write -------------------------------------------------------------------

    def texts(self) -> Iterator[tuple[list[int], list[str], list[str | None]]]:
        """``(rows, texts, transcripts)`` a slice at a time, in row order (held: one slice)."""
        # A cursor of its own: the slices' results are written on the main connection meanwhile.
        cursor = self.db.cursor()
        try:
            reader = cursor.sql("SELECT row_no, text, transcript FROM staged ORDER BY row_no").to_arrow_reader(SLICE)
            for batch in reader:
                yield (batch.column(0).to_pylist(), batch.column(1).to_pylist(), batch.column(2).to_pylist())
        finally:
            cursor.close()

    def finish(self, extras: Iterator[tuple[list[int], list[str], list[int], list[int], list[str]]]) -> None:
        """Write each row's ``(item id, words, characters, spans JSON)``; then the tables to write from.

        ``extras`` gives them a slice at a time, as ``(rows, item ids, words, characters, spans)``.
        """
        self.db.execute("CREATE TABLE extra (row_no BIGINT, item_id VARCHAR, n_words INTEGER, n_chars INTEGER,"
                        " self_id_spans VARCHAR)")
        schema = pa.schema([pa.field("row_no", pa.int64()), pa.field("item_id", pa.string()),
                            pa.field("n_words", pa.int32()), pa.field("n_chars", pa.int32()),
                            pa.field("self_id_spans", pa.string())])
        for rows, items, words, chars, spans in extras:
            self._insert("extra", pa.table([rows, items, words, chars, spans], schema=schema))
        self.db.execute(
            "CREATE TABLE answers_in AS SELECT s.row_no, s.answer_id, e.item_id, s.task_id, s.family, s.model,"
            " s.variant, s.parent_answer_id, s.text, e.n_words, e.n_chars, e.self_id_spans, s.transcript"
            " FROM staged s JOIN extra e USING (row_no) ORDER BY s.row_no")
        self.db.execute(
            "CREATE TABLE tasks_in AS SELECT row_no, task_id, prompt, category, reference_answer,"
            " reference_author_kind, reference_author FROM (SELECT *, row_number() OVER"
            " (PARTITION BY task_id ORDER BY row_no) AS nth FROM staged) WHERE nth = 1 ORDER BY row_no")
        self.db.execute("DROP TABLE extra")
        self.db.execute("DROP TABLE staged")
        self.db.execute("DROP TABLE IF EXISTS raw")
        self.db.execute("CHECKPOINT")

    def to_csv(self, table: str, columns: Sequence[str]) -> Path:
        """``table``'s ``columns`` in row order as a CSV file (for PostgreSQL's ``COPY``)."""
        out = Path(self._dir.name) / f"{table}.csv"
        self.db.execute(f"COPY (SELECT {', '.join(columns)} FROM {table} ORDER BY row_no) TO '{out}'"
                        " (FORMAT csv, HEADER false, QUOTE '\"', ESCAPE '\"')")
        return out


def _kind(value: Any, rows: Rows, row: int, column: str) -> str:
    """A Python-read cell's kind for :meth:`Staging.build`: ``VARCHAR`` only when taken exactly as it is."""
    if value is None:
        return "NULL"
    if type(value) is not str:
        return "OTHER"  # a number, NaN, a list: the Python checks say what it is
    if rows.spreadsheet and ((row, column) in rows.quoted or value[:1] in ("=", "+", "-", "@", "\t", "\r")):
        return "OTHER"  # a formula's start, or a cell whose quote was removed: the Python checks decide
    return "VARCHAR"


def item_ids(n: int) -> list[str]:
    """``n`` new random item ids (what a rater sees instead of the answer id)."""
    raw = secrets.token_hex(8 * n)
    return ["i" + raw[16 * k : 16 * k + 16] for k in range(n)]


SpanFinder = Callable[[list[str], list[str | None]], list[str]]
"""Spans JSON for a slice of ``(texts, transcripts)``."""
