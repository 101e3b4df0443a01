"""Other tools' files in and out: ``judgelab import KIND FILE --from TOOL`` and ``--map``.

Each adapter (one module per tool) converts what that tool documents as its export into rows
of one judgelab kind; judgelab's own importer then validates and writes them all-or-nothing,
so every guarantee of an import holds (one clear error naming the file, row, column and fix;
nothing written on any error; importing twice changes nothing). What a conversion leaves out
is said, one sentence per kind of thing, in :attr:`AdaptedImport.dropped`.

A file no adapter knows is read with a column map instead: ``--map judgelab_column=their_field``
renames a field (a dotted path reaches into a JSON object: ``prompt=data.text``).

    >>> sorted(ADAPTERS)
    ['alpaca-eval', 'mt-bench']
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labeler._rows import Rows, read_rows
from labeler.adapters import alpaca_eval, mt_bench
from labeler.adapters._common import Adapted, Adapter
from labeler.errors import InputError
from labeler.importers import import_file
from labeler.schemas import DataKind
from labeler.store import ImportSummary, Store

__all__ = ["ADAPTERS", "Adapted", "AdaptedImport", "Adapter", "adapt", "apply_map", "import_from",
           "parse_map"]

ADAPTERS: dict[str, Adapter] = {a.name: a for a in (alpaca_eval.ADAPTER, mt_bench.ADAPTER)}
"""Every ``--from`` choice, by name."""


@dataclass(frozen=True)
class AdaptedImport:
    """What an import through an adapter or a column map did.

    Attributes:
        summary: The store's import summary.
        dropped: What the conversion left out and why, one sentence each.
    """

    summary: ImportSummary
    dropped: tuple[str, ...] = field(default=())


def parse_map(pairs: Collection[str]) -> dict[str, str]:
    """``--map`` values (``judgelab_column=their_field``) as a dict, checked.

    >>> parse_map(["prompt=instruction", "text=data.response"])
    {'prompt': 'instruction', 'text': 'data.response'}
    """
    out: dict[str, str] = {}
    for item in pairs:
        ours, sep, theirs = item.partition("=")
        ours, theirs = ours.strip(), theirs.strip()
        if not sep or not ours or not theirs:
            raise InputError(f"--map {item!r} is not judgelab_column=their_field",
                             fix="write e.g. --map prompt=instruction (repeat --map for more columns).")
        if ours in out:
            raise InputError(f"--map names judgelab's column {ours!r} twice",
                             fix="map each judgelab column from one field.")
        out[ours] = theirs
    return out


def _lookup(row: dict[str, Any], path: str) -> tuple[bool, Any]:
    """``row[path]``, or the value a dotted path reaches through JSON objects; ``(found, value)``."""
    if path in row:
        return True, row[path]
    value: Any = row
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def apply_map(rows: Rows, column_map: Mapping[str, str]) -> Rows:
    """``rows`` with the fields of ``column_map`` renamed to judgelab's columns.

    A mapped field leaves the file's columns (the rest stay, and an unknown one is still an
    error unless ignored); a field no row has is an error naming the file's fields.
    """
    if not column_map:
        return rows
    sources = set(column_map.values())
    absent = [t for t in column_map.values() if not any(_lookup(r, t)[0] for r in rows.rows)]
    if absent and rows.rows:
        raise InputError(f"--map names field(s) {absent} that no row has; the file has {list(rows.columns)}",
                         file=rows.file, fix="map from the file's own fields (names are case-sensitive; "
                                             "a dotted path such as data.text reaches into a JSON object).")
    clash = [c for c in column_map if c in rows.columns and c not in sources]
    if clash:
        raise InputError(f"--map writes column(s) {clash}, which the file already has",
                         file=rows.file, fix=f"map from those columns too, or --ignore-columns {','.join(clash)}.")
    tops = {t.partition(".")[0] if t not in rows.columns else t for t in sources}
    kept = [c for c in rows.columns if c not in tops]
    out = []
    for row in rows.rows:
        new = {c: row.get(c) for c in kept}
        for ours, theirs in column_map.items():
            new[ours] = _lookup(row, theirs)[1]
        out.append(new)
    return Rows(rows.file, (*kept, *column_map), out, rows.spreadsheet, rows.quoted)


def adapt(tool: str | None, kind: DataKind, path: str | Path, *,
          column_map: Mapping[str, str] | None = None) -> Adapted:
    """``path`` converted to rows of ``kind``: by ``tool``'s adapter, or read as it is; then mapped."""
    if tool is None:
        rows = read_rows(path)
        return Adapted(apply_map(rows, column_map or {}))
    adapter = ADAPTERS.get(tool)
    if adapter is None:
        raise InputError(f"no adapter for {tool!r}", fix=f"use one of {sorted(ADAPTERS)}, or --map for other files.")
    convert = adapter.kinds.get(kind)
    if convert is None:
        raise InputError(f"judgelab reads {sorted(adapter.kinds)} from {tool}'s files, not {kind}",
                         file=str(path), fix=f"import it as one of {sorted(adapter.kinds)}.")
    adapted = convert(Path(path))
    return Adapted(apply_map(adapted.rows, column_map or {}), adapted.dropped)


def import_from(
    store: Store, kind: DataKind, path: str | Path, *, tool: str | None = None,
    column_map: Mapping[str, str] | None = None, ignore_columns: Collection[str] = (),
) -> AdaptedImport:
    """Import another tool's ``path`` as ``kind``, all-or-nothing, through ``tool``'s adapter or a column map.

    Raises:
        InputError: No such adapter, a kind it does not read, or anything in the file that cannot
            be imported (naming the file, row, column and fix); nothing is written.
    """
    if kind in ("rubric", "designs"):
        raise InputError(f"a {kind} is judgelab's own file; --from and --map are for tables",
                         fix=f"import the {kind} without --from/--map.")
    adapted = adapt(tool, kind, path, column_map=column_map)
    summary = import_file(store, kind, path, ignore_columns=ignore_columns, reader=lambda _: adapted.rows)
    return AdaptedImport(summary, adapted.dropped)
