"""What every adapter shares: the converted rows, ids made from other tools' names, cell errors.

An adapter reads another tool's export with :func:`~judgelab.labeler._rows.read_rows` (so ``.json``
arrays, JSON lines and Parquet all work), checks the fields *that tool* documents, and returns
:class:`Adapted`: rows in judgelab's schema for one kind, and a sentence for everything it left
out. judgelab's own importer then validates and writes the rows all-or-nothing, exactly as for
a file in judgelab's schema.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgelab.labeler._rows import MAX_ID_CHARS, Rows
from judgelab.labeler.errors import InputError

UNNAMED_FAMILY = "the family and model of"
"""How an adapter's ``dropped`` sentence on answers whose file names no family starts (``--family`` replaces it)."""

_NOT_ID = re.compile(r"[^A-Za-z0-9_.:~/-]+")


@dataclass(frozen=True)
class Adapted:
    """Another tool's file converted to one judgelab kind.

    Attributes:
        rows: The rows in judgelab's schema (``rows.file`` names the tool's file, and how its
            records map to rows when that is not one to one).
        dropped: One sentence per kind of thing the conversion left out, and why.
        notes: One sentence per kind of thing the conversion kept but read in a way the user
            should know (e.g. empty answers kept as empty), added to the import summary.
    """

    rows: Rows
    dropped: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


Convert = Callable[[Path], Adapted]


@dataclass(frozen=True)
class Adapter:
    """One tool's export format and what judgelab reads from it.

    Attributes:
        name: The ``--from`` value.
        exports: What the tool writes (the format the adapter reads), for the README's table.
        reads: What judgelab takes from it, for the README's table.
        kinds: For each judgelab kind the file can be imported as, the conversion.
    """

    name: str
    exports: str
    reads: str
    kinds: Mapping[str, Convert]


def read_json_document(path: Path, *, fix: str) -> Any:
    """One JSON document (a tool's single-object export), or one clear error naming the file.

    Args:
        path: The file.
        fix: What to do when the file is not valid JSON (the tool's own way to export it).
    """
    name = str(path)
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise InputError("no such file", file=name, fix="check the path.") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"is not valid JSON ({exc})", file=name, fix=fix) from None


def as_id(text: str) -> str:
    """``text`` (a model or annotator name) as a judgelab id: other characters become ``_``."""
    cleaned = _NOT_ID.sub("_", text.strip()).strip("_.:~/-") or "x"
    if not cleaned[0].isalnum():
        cleaned = "x" + cleaned
    if len(cleaned) > MAX_ID_CHARS:
        cleaned = cleaned[: MAX_ID_CHARS - 13] + "~" + digest(cleaned)
    return cleaned


def digest(text: str) -> str:
    """A short stable id part for ``text`` (12 hex digits of its SHA-256)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def is_missing(value: Any) -> bool:
    """Whether a cell is empty: ``None``, NaN or blank text."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or (
        isinstance(value, str) and not value.strip())


def raw_text(value: Any) -> str | None:
    """A judge's raw reply as text (a JSON value other tools keep there is dumped as JSON)."""
    if is_missing(value):
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


class Source:
    """Typed access to the records of another tool's file, with errors naming the record."""

    def __init__(self, rows: Rows, tool: str) -> None:
        """Read fields of ``rows``, a file ``tool`` wrote."""
        self.rows = rows
        self.tool = tool

    def fail(self, problem: str, *, row: int | None = None, column: str | None = None, fix: str) -> InputError:
        """An error about this file (raise it)."""
        return InputError(problem, file=self.rows.file, row=row, column=column, fix=fix)

    def require(self, *columns: str, what: str) -> None:
        """Refuse a file without ``columns``: it is not ``what`` of this tool."""
        missing = [c for c in columns if c not in self.rows.columns]
        if missing:
            raise self.fail(
                f"is not {what}: it has no {missing} field(s); found {list(self.rows.columns)[:12]}",
                fix=f"pass the file {self.tool} wrote as {what}, or drop --from to read judgelab's own schema.",
            )

    def get(self, row: int, column: str) -> Any:
        """The raw value of ``column`` in record ``row`` (1-based); ``None`` when missing."""
        value = self.rows.rows[row - 1].get(column)
        return None if is_missing(value) else value

    def text(self, row: int, column: str, *, required: bool = True) -> str | None:
        """A text field (numbers are accepted as their text)."""
        value = self.get(row, column)
        if value is None:
            if required:
                raise self.fail("is empty", row=row, column=column,
                                fix=f"fill in {column}: judgelab needs it in every record.")
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(f"expected text, got {type(value).__name__}", row=row, column=column,
                            fix=f"check that the file is {self.tool}'s export, unedited.")
        return str(value) if not isinstance(value, float) or not value.is_integer() else str(int(value))

    def number(self, row: int, column: str, *, required: bool = True) -> float | None:
        """A number field (numeric text is accepted)."""
        value = self.get(row, column)
        if value is None:
            if required:
                raise self.fail("is empty", row=row, column=column, fix="give a number.")
            return None
        try:
            if isinstance(value, bool):
                raise ValueError
            number = float(value)
        except (TypeError, ValueError):
            raise self.fail(f"{value!r} is not a number", row=row, column=column,
                            fix=f"check that the file is {self.tool}'s export, unedited.") from None
        if not math.isfinite(number):
            raise self.fail(f"{value!r} is not a finite number", row=row, column=column, fix="give a number.")
        return number


def rows_of(source: Rows, records: list[dict[str, Any]], *, columns: tuple[str, ...], note: str = "") -> Rows:
    """Converted ``records`` named after ``source``'s file (``note`` says how rows map to records)."""
    name = f"{source.file} ({note})" if note else source.file
    return Rows(name, columns, records)
