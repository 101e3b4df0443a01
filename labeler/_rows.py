"""Reading tabular files into rows, and typed field access with errors that point at a cell.

CSV, JSON lines, JSON arrays (``.json``: one array of objects, as Label Studio and AlpacaEval
export), Parquet and Arrow (an ``.arrow`` file, or the folder Hugging Face ``datasets`` writes with
``Dataset.save_to_disk``) all become :class:`Rows`: the columns in file order and one dict per
data row. Everything a user can get wrong in a file is an :class:`~judgelab.labeler.errors.InputError`
naming the file, the row (1-based, header not counted), the column and the fix.

**Neutralised CSV cells.** A spreadsheet runs a cell that starts with ``=``, ``+``, ``-``, ``@``,
a tab or a carriage return as a formula (CSV injection). judgelab's CSV exports write such a
cell, and one that starts with ``'``, with one more ``'`` in front, which spreadsheets show as
text (:func:`neutralise`); the CSV reader removes exactly that quote again (:func:`restore`), so
the text round-trips. A cell that starts like a formula without the quote is refused. JSON
lines and Parquet are not opened by spreadsheets: their text is taken verbatim.

    >>> neutralise("=SUM(A1)"), restore(neutralise("=SUM(A1)"))
    ("'=SUM(A1)", '=SUM(A1)')
    >>> neutralise("'tis"), restore("'tis"), restore(neutralise("'=x"))
    ("''tis", "'tis", "'=x")
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from judgelab.labeler.errors import InputError

TABLE_SUFFIXES = (".csv", ".jsonl", ".ndjson", ".json", ".parquet", ".arrow")

#: Longest value accepted in one field. Longer is almost always a broken export.
MAX_FIELD_CHARS = 100_000
MAX_ID_CHARS = 200
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:~/-]*$")
# A cell a spreadsheet would run as a formula (CSV injection, OWASP). Plain prose that
# starts with "-" (a bullet) is fine; "=..." or "+SUM(" / "@cmd|" is not.
_FORMULA = re.compile(r"^(?:=|[+\-@]\s*[A-Za-z_][A-Za-z0-9_.]*\s*[(!|]|@|\t|\r)")
# What an export puts a quote in front of: every formula start, and the quote itself, so that
# removing one leading quote on the way back in is always right.
_NEUTRALISED_START = ("=", "+", "-", "@", "\t", "\r", "'")


def neutralise(text: str) -> str:
    """``text`` as a CSV export writes it: one ``'`` in front of a formula-like (or quoted) start."""
    return "'" + text if text.startswith(_NEUTRALISED_START) else text


def restore(cell: str) -> str:
    """The text of a CSV cell :func:`neutralise` wrote (other cells are returned unchanged)."""
    return cell[1:] if cell[:1] == "'" and cell[1:2] and cell[1:].startswith(_NEUTRALISED_START) else cell


@dataclass(frozen=True)
class Rows:
    """The rows of a tabular file, each a dict of column -> raw value.

    Attributes:
        file: The file's name, as errors show it.
        columns: The columns, in file order.
        rows: One dict per data row.
        spreadsheet: Whether the file is CSV, whose text cells are checked for formulas.
        quoted: ``(row, column)`` of CSV cells whose neutralising quote was removed: their text
            is a formula's, stored as text, and is not refused.
    """

    file: str
    columns: tuple[str, ...]
    rows: list[dict[str, Any]]
    spreadsheet: bool = False
    quoted: frozenset[tuple[int, str]] = field(default=frozenset(), compare=False)

    def without(self, columns: set[str]) -> Rows:
        """These rows with ``columns`` left out (``--ignore-columns``)."""
        if not columns:
            return self
        return Rows(
            self.file,
            tuple(c for c in self.columns if c not in columns),
            [{k: v for k, v in row.items() if k not in columns} for row in self.rows],
            self.spreadsheet,
            self.quoted,
        )


def decode(path: Path, data: bytes) -> str:
    """``data`` as UTF-8 text (a byte-order mark dropped), or an error naming the bad byte."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            f"the file is not valid UTF-8 (byte {exc.start} on line {line})",
            file=str(path),
            fix="save the file as UTF-8 (in a spreadsheet: 'CSV UTF-8').",
        ) from None


def read_rows(path: str | Path) -> Rows:
    """Read a CSV, JSONL, JSON-array, Parquet or Arrow file into rows, with clear errors for broken files.

    A folder is read as Hugging Face ``datasets`` writes one with ``save_to_disk`` (see
    :func:`_read_saved_dataset`).

    A table with no rows (a header only, an empty JSON-lines file, a Parquet file of no rows) is
    read as no rows: that is what an export of an empty kind writes.
    """
    path = Path(path)
    name = str(path)
    if path.is_dir():
        columns, rows = _read_saved_dataset(path)
        return Rows(name, tuple(columns), rows)
    if not path.is_file():
        raise InputError("no such file", file=name, fix="check the path.")
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise InputError(
            f"unsupported file type {suffix or '(none)'!r}",
            file=name,
            fix="use .csv, .jsonl, .json (an array of objects), .parquet, .arrow, or a datasets save_to_disk folder.",
        )
    if suffix == ".arrow":
        columns, rows = _read_arrow(path)
        return Rows(name, tuple(columns), rows)
    data = path.read_bytes()
    if not data.strip():
        if suffix in (".jsonl", ".ndjson"):
            return Rows(name, (), [])  # how a JSON-lines writer (judgelab's export too) writes no rows
        raise InputError(
            "the file is empty (not even a header row)", file=name,
            fix="check that it was saved or downloaded completely; a table with no rows still has its header.",
        )
    quoted: set[tuple[int, str]] = set()
    if suffix == ".csv":
        columns, rows = _read_csv(path, data, quoted)
    elif suffix in (".jsonl", ".ndjson"):
        columns, rows = _read_jsonl(path, data)
    elif suffix == ".json":
        columns, rows = _read_json_array(path, data)
    else:
        columns, rows = _read_parquet(path)
    return Rows(name, tuple(columns), rows, suffix == ".csv", frozenset(quoted))


def _read_csv(path: Path, data: bytes, quoted: set[tuple[int, str]]) -> tuple[list[str], list[dict[str, Any]]]:
    """Header and rows of a CSV file (blank lines skipped; a short or long row is an error)."""
    name = str(path)
    text = decode(path, data)
    csv.field_size_limit(MAX_FIELD_CHARS * 4)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[dict[str, Any]] = []
    try:
        header = next(reader)
        columns = [h.strip() for h in header]
        dupes = sorted({c for c in columns if columns.count(c) > 1})
        if dupes:
            raise InputError(
                f"duplicate column name(s) {dupes}", file=name, fix="rename or drop them."
            )
        for record in reader:
            if not any(cell.strip() for cell in record):
                continue
            if len(record) != len(columns):
                raise InputError(
                    f"has {len(record)} fields but the header has {len(columns)}",
                    file=name,
                    row=len(rows) + 1,
                    fix="quote fields that contain commas or line breaks.",
                )
            row: dict[str, Any] = {}
            for column, cell in zip(columns, record, strict=True):
                row[column] = restore(cell)
                if row[column] is not cell:
                    quoted.add((len(rows) + 1, column))
            rows.append(row)
    except csv.Error as exc:
        raise InputError(
            f"is not valid CSV: {exc}", file=name, row=max(reader.line_num - 1, 1),
            fix="check quoting; fields with commas, quotes or line breaks must be quoted.",
        ) from None
    return columns, rows


def _read_jsonl(path: Path, data: bytes) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns (every key seen, in order of first appearance) and rows of a JSON-lines file."""
    name = str(path)
    text = decode(path, data)
    rows: list[dict[str, Any]] = []
    seen: dict[str, None] = {}
    row_no = 0
    # Only "\n" ends a record: str.splitlines would also split at the separators JSON allows
    # inside a string (U+2028, U+0085, ...).
    for line in text.split("\n"):
        if not line.strip():
            continue
        row_no += 1
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"is not valid JSON: {exc.msg} at character {exc.colno}",
                file=name, row=row_no, fix="each line must be one JSON object.",
            ) from None
        if not isinstance(obj, dict):
            raise InputError(
                f"is a JSON {type(obj).__name__}, not an object",
                file=name, row=row_no, fix="each line must be one JSON object {...}.",
            )
        for key in obj:
            seen.setdefault(str(key))
        rows.append({str(k): v for k, v in obj.items()})
    return list(seen), rows


def _read_json_array(path: Path, data: bytes) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and rows of a ``.json`` file holding one array of objects (row N is element N)."""
    name = str(path)
    text = decode(path, data)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"is not valid JSON: {exc.msg} at line {exc.lineno}, character {exc.colno}",
            file=name, fix="check that the export finished; a .json file must be one JSON array of objects.",
        ) from None
    if not isinstance(doc, list):
        raise InputError(
            f"is a JSON {type(doc).__name__}, not an array of objects", file=name,
            fix="a .json table is one array [{...}, {...}]; save one object per line as .jsonl instead.",
        )
    seen: dict[str, None] = {}
    rows: list[dict[str, Any]] = []
    for row_no, obj in enumerate(doc, start=1):
        if not isinstance(obj, dict):
            raise InputError(
                f"is a JSON {type(obj).__name__}, not an object", file=name, row=row_no,
                fix="each element of the array must be one JSON object {...}.",
            )
        for key in obj:
            seen.setdefault(str(key))
        rows.append({str(k): v for k, v in obj.items()})
    return list(seen), rows


def _read_parquet(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and rows of a Parquet file."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise InputError(
            f"is not a readable Parquet file ({exc})", file=str(path), fix="export it again."
        ) from None
    return list(table.column_names), table.to_pylist()


def _read_arrow(path: Path, features: dict[str, Any] | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and rows of an Arrow IPC file: the stream format ``datasets`` writes, or the file format.

    Args:
        path: The ``.arrow`` file.
        features: The ``features`` of the dataset's ``dataset_info.json``, when known: a
            ``ClassLabel`` column's integers are read as its names (what the dataset means).
    """
    import pyarrow as pa

    try:
        try:
            table = pa.ipc.open_stream(path).read_all()  # datasets' cache and save_to_disk files
        except pa.ArrowInvalid:
            table = pa.ipc.open_file(path).read_all()  # Feather v2 / IPC file format
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise InputError(f"is not a readable Arrow file ({exc})", file=str(path),
                         fix="write it again (Dataset.save_to_disk, or pyarrow's IPC writer).") from None
    rows = table.to_pylist()
    for column, feature in (features or {}).items():
        names = feature.get("names") if isinstance(feature, dict) and feature.get("_type") == "ClassLabel" else None
        if names and column in table.column_names:
            for row in rows:
                value = row.get(column)
                # -1 is datasets' missing class label.
                row[column] = names[value] if isinstance(value, int) and 0 <= value < len(names) else None
    return list(table.column_names), rows


def _read_saved_dataset(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and rows of a folder written by ``datasets``' ``Dataset.save_to_disk``.

    The folder holds ``state.json`` (its ``_data_files`` name the shards in order),
    ``dataset_info.json`` (the features) and ``data-NNNNN-of-NNNNN.arrow`` shards in Arrow's
    stream format. A ``DatasetDict`` folder (``dataset_dict.json``) holds one such folder per
    split: the user picks one, as a table has no splits.
    """
    name = str(path)
    if (path / "dataset_dict.json").is_file():
        try:
            splits = json.loads((path / "dataset_dict.json").read_text(encoding="utf-8")).get("splits", [])
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            splits = []
        first = (path / str(splits[0])) if splits else path / "train"
        raise InputError(f"is a DatasetDict folder with the splits {splits}; judgelab reads one split at a time",
                         file=name, fix=f"pass one split's folder, e.g. {first}.")
    state_file = path / "state.json"
    if not state_file.is_file():
        raise InputError("is a folder, not a table file (and not a datasets save_to_disk folder: no state.json)",
                         file=name, fix="pass a .csv, .jsonl, .json, .parquet or .arrow file, or the folder "
                                        "Dataset.save_to_disk wrote.")
    try:
        state = json.loads(state_file.read_text(encoding="utf-8"))
        shards = [str(f["filename"]) for f in state["_data_files"]]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as exc:
        raise InputError(f"has a state.json that datasets did not write ({type(exc).__name__}: {exc})",
                         file=str(state_file), fix="save the dataset again with Dataset.save_to_disk.") from None
    if state.get("_indices_data_files"):  # an older datasets kept a selection as an indices file
        raise InputError("holds an indices mapping (a select/shuffle not flattened)", file=name,
                         fix="save it again after dataset = dataset.flatten_indices().")
    features: dict[str, Any] = {}
    info_file = path / "dataset_info.json"
    if info_file.is_file():
        try:
            features = dict(json.loads(info_file.read_text(encoding="utf-8")).get("features") or {})
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError, TypeError, ValueError):
            features = {}  # the names of class labels are a nicety; the Arrow data is the table
    columns: list[str] = []
    rows: list[dict[str, Any]] = []
    for shard in shards:
        if not (path / shard).is_file():
            raise InputError(f"state.json names the shard {shard!r}, which is not in the folder", file=name,
                             fix="copy the whole folder Dataset.save_to_disk wrote.")
        shard_columns, shard_rows = _read_arrow(path / shard, features)
        if columns and shard_columns != columns:
            raise InputError(f"shard {shard!r} has the columns {shard_columns}, not {columns}", file=name,
                             fix="save the dataset again with Dataset.save_to_disk.")
        columns = shard_columns
        rows.extend(shard_rows)
    return columns, rows


# -- field checks ---------------------------------------------------------------------------


class Checker:
    """Field accessors that raise an InputError pointing at the row and column."""

    def __init__(self, rows: Rows) -> None:
        """Check fields of ``rows``."""
        self.rows = rows

    def fail(self, problem: str, *, row: int | None = None, column: str | None = None, fix: str) -> InputError:
        """An error about this file (raise it)."""
        return InputError(problem, file=self.rows.file, row=row, column=column, fix=fix)

    def require_columns(self, *required: str, one_of: tuple[str, ...] = ()) -> None:
        """Every column of ``required``, and one of ``one_of``, must be in the file."""
        missing = [c for c in required if c not in self.rows.columns]
        if missing:
            raise InputError(
                f"missing required column(s) {missing}; found {list(self.rows.columns)}",
                file=self.rows.file,
                fix=f"add the column(s) {', '.join(missing)} (names are case-sensitive).",
            )
        if one_of and not any(c in self.rows.columns for c in one_of):
            raise InputError(
                f"needs at least one of the columns {list(one_of)}",
                file=self.rows.file, fix="add one of them.",
            )

    def has(self, col: str) -> bool:
        """Whether the file has column ``col``."""
        return col in self.rows.columns

    def _raw(self, row: int, col: str) -> Any:
        value = self.rows.rows[row - 1].get(col)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        return value

    def _string(self, row: int, col: str) -> str | None:
        value = self._raw(row, col)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return str(value)
        if value is not None:
            raise InputError(
                f"expected text, got {type(value).__name__} {value!r}",
                file=self.rows.file, row=row, column=col, fix="store this field as a string.",
            )
        return None

    def _checked(self, row: int, col: str, value: str) -> str:
        if len(value) > MAX_FIELD_CHARS:
            raise InputError(
                f"is {len(value):,} characters long (limit {MAX_FIELD_CHARS:,})",
                file=self.rows.file, row=row, column=col,
                fix="check the export; a field this long is usually several rows run together.",
            )
        if self.rows.spreadsheet and (row, col) not in self.rows.quoted and _FORMULA.match(value):
            raise InputError(
                f"starts like a spreadsheet formula ({value[:20]!r}); refusing it (CSV injection)",
                file=self.rows.file, row=row, column=col,
                fix="remove the leading '=', '+', '-' or '@', or prefix the cell with a space, or with ' "
                "to keep the text exactly (judgelab reads '=... as the text =...).",
            )
        return value

    def text(self, row: int, col: str, *, required: bool = True, is_id: bool = False) -> str | None:
        """A text field (``None`` when empty and not required); ids are stripped and checked."""
        value = self._string(row, col)
        if value is None or not value.strip():
            if required:
                raise InputError(
                    "is empty", file=self.rows.file, row=row, column=col, fix="fill it in."
                )
            return None
        value = self._checked(row, col, value)
        if is_id:
            value = value.strip()
            if len(value) > MAX_ID_CHARS or not ID_PATTERN.match(value):
                raise InputError(
                    f"{value[:40]!r} is not a valid id",
                    file=self.rows.file, row=row, column=col,
                    fix="ids are letters, digits and _ . : ~ / - (no spaces), at most 200 characters.",
                )
        return value

    def free_text(self, row: int, col: str) -> str | None:
        """Free text kept exactly as written (spaces too); ``None`` only when missing or empty."""
        value = self._string(row, col)
        return None if value is None or value == "" else self._checked(row, col, value)

    def choice(self, row: int, col: str, allowed: tuple[str, ...], *, required: bool = False) -> str | None:
        """A value from ``allowed`` (compared case-insensitively), or ``None`` when empty."""
        value = self.text(row, col, required=required)
        if value is None:
            return None
        found = value.strip().lower()
        if found not in allowed:
            raise InputError(
                f"{value!r} is not one of {', '.join(allowed)}", file=self.rows.file, row=row, column=col,
                fix=f"write one of {', '.join(allowed)}" + ("." if required else ", or leave it empty."),
            )
        return found

    def number(
        self, row: int, col: str, *, lo: float | None = None, hi: float | None = None,
        required: bool = True, integer: bool = False,
    ) -> float | None:
        """A number (``None`` when empty and not required), checked against ``lo``..``hi``."""
        value = self._raw(row, col)
        if isinstance(value, str):
            value = value.strip() or None
        if value is None:
            if required:
                raise InputError("is empty", file=self.rows.file, row=row, column=col, fix="give a number.")
            return None
        try:
            if isinstance(value, bool):
                raise ValueError
            number = float(value)
        except (TypeError, ValueError):
            raise InputError(
                f"{value!r} is not a number", file=self.rows.file, row=row, column=col,
                fix="give a plain number such as 4 or 72.5.",
            ) from None
        if not math.isfinite(number) or (integer and number != int(number)):
            raise InputError(
                f"{value!r} is not {'a whole' if integer else 'a finite'} number",
                file=self.rows.file, row=row, column=col, fix="give a valid number.",
            )
        if (lo is not None and number < lo) or (hi is not None and number > hi):
            raise InputError(
                f"{number:g} is outside the allowed range {lo:g} to {hi:g}",
                file=self.rows.file, row=row, column=col, fix="use the rubric's scale.",
            )
        return number

    def decimals(self, col: str) -> int | None:
        """The most decimal places a number in ``col`` is written with (``None``: no numbers).

        A CSV cell counts as written (``1.667``: 3; ``2``: 0); a JSON or Parquet number as its
        shortest round-trip text (``repr``), which is what the writer's rounding left. Cells that
        are not numbers are left to :meth:`number` to refuse.

        >>> Checker(Rows("f.csv", ("score",), [{"score": "1.667"}, {"score": "2.5"}, {"score": 4.0},
        ...                                     {"score": ""}])).decimals("score")
        3
        """
        most: int | None = None
        for record in self.rows.rows:
            value = record.get(col)
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                continue
            text = value.strip() if isinstance(value, str) else repr(value)
            try:
                exponent = Decimal(text).as_tuple().exponent
            except InvalidOperation:
                continue
            if isinstance(exponent, int):  # not NaN or infinity
                places = max(0, -exponent)
                most = places if most is None else max(most, places)
        return most

    def integer(self, row: int, col: str, *, required: bool = False, lo: int | None = None) -> int | None:
        """A whole number, or ``None`` when empty and not required."""
        value = self.number(row, col, required=required, integer=True)
        if value is None:
            return None
        if lo is not None and value < lo:
            raise InputError(
                f"{value:g} is less than {lo}", file=self.rows.file, row=row, column=col,
                fix=f"give a whole number of at least {lo}.",
            )
        return int(value)

    def boolean(self, row: int, col: str, *, required: bool = False) -> bool | None:
        """A yes/no value in any of the usual spellings, or ``None`` when empty and not required."""
        value = self._raw(row, col)
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float) and value in (0, 1):
            return bool(value)
        text = str(value).strip().lower() if value is not None else ""
        if text in ("true", "1", "yes", "pass", "passed", "y", "t"):
            return True
        if text in ("false", "0", "no", "fail", "failed", "n", "f"):
            return False
        if not text and not required:
            return None
        raise InputError(
            f"{value!r} is not a yes/no value", file=self.rows.file, row=row, column=col,
            fix="use true/false, yes/no, pass/fail or 1/0.",
        )

    def timestamp(self, row: int, col: str) -> datetime | None:
        """An ISO 8601 time as a naive datetime (a zone, when given, is converted to UTC)."""
        value = self._raw(row, col)
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        try:
            if isinstance(value, datetime):
                when = value
            elif isinstance(value, date):
                when = datetime(value.year, value.month, value.day)
            elif isinstance(value, str):
                when = datetime.fromisoformat(value.strip())
            else:
                raise ValueError
        except ValueError:
            raise InputError(
                f"{value!r} is not a time", file=self.rows.file, row=row, column=col,
                fix="write an ISO 8601 time such as 2025-03-01 14:02:11.",
            ) from None
        if when.tzinfo is not None:
            when = when.astimezone(UTC).replace(tzinfo=None)
        return when

    def json_object(self, row: int, col: str) -> dict[str, Any] | None:
        """A JSON object (text in a CSV cell, or an object in JSON lines), or ``None`` when empty."""
        value = self._raw(row, col)
        if isinstance(value, str):
            if not value.strip():
                return None
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"is not valid JSON: {exc.msg}", file=self.rows.file, row=row, column=col,
                    fix='write a JSON object such as {"variant": "padded"}.',
                ) from None
        if value is None:
            return None
        if not isinstance(value, dict):
            raise InputError(
                f"is a JSON {type(value).__name__}, not an object", file=self.rows.file, row=row, column=col,
                fix='write a JSON object such as {"variant": "padded"}.',
            )
        return {str(k): v for k, v in value.items()}

    def unique(self, col: str, values: list[str | None]) -> None:
        """No value of ``values`` (one per row) may repeat."""
        first: dict[str, int] = {}
        for i, v in enumerate(values, start=1):
            if v is None:
                continue
            if v in first:
                raise InputError(
                    f"duplicate id {v!r} (first seen in row {first[v]})",
                    file=self.rows.file, row=i, column=col, fix="ids must be unique within a file.",
                )
            first[v] = i
