"""Which imported human records are new, which are stored already, and which would rewrite history.

Labels, pair labels and padding audits are append-only: an edit is a new row that supersedes
the row it replaces. An import carries that history (a record names the record it supersedes),
and importing the same file twice must change nothing, so each record gets an *identity*: its
rater and item (its *group*), its content, and the identity of the record it supersedes (a
nested tuple, compared as such). A record whose identity is stored already is skipped; so are stored rows the app
wrote, which makes re-importing a database's own export a no-op. Two things are refused:

* a new first version of a group that already holds a first version from the same source with
  other content (the import would give one rater two different labels of one item);
* a new edit of a record that a stored row already supersedes (a second, different edit).

This module is pure: the SQL that reads stored rows and writes new ones is in
:mod:`judgelab.labeler.store._imports`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Incoming:
    """One record to import.

    Attributes:
        ref: Its id within the import (``None`` when the file gives none).
        parent: The ``ref`` of the record of this import it supersedes.
        group: The rater and item, e.g. ``(rater, answer_id, rubric_id, rubric_version)``.
        content: What the rater said, normalised so equal content compares equal.
        source: ``"import"`` or ``"simulated"``.
    """

    ref: int | None
    parent: int | None
    group: tuple[Any, ...]
    content: tuple[Any, ...]
    source: str


@dataclass(frozen=True)
class Stored:
    """One stored row of the same table, read the same way (``row_id`` its id)."""

    row_id: int
    supersedes: int | None
    group: tuple[Any, ...]
    content: tuple[Any, ...]
    source: str


@dataclass(frozen=True)
class Planned:
    """A new row: its record, and what it supersedes (a stored id, or a new row's index)."""

    record: int
    stored_parent: int | None
    new_parent: int | None


Key = tuple[Any, ...]
"""A record's identity: ``(group, content, identity of the record it supersedes)``."""


def identity(group: Sequence[Any], content: Sequence[Any], parent: Key | None) -> Key:
    """The key that says two records are the same record."""
    return (tuple(group), tuple(content), parent)


def plan(
    incoming: Sequence[Incoming],
    stored: Sequence[Stored],
    *,
    conflict: Callable[[Incoming], Exception],
    fork: Callable[[Incoming], Exception],
) -> tuple[list[Planned], int]:
    """The rows to insert, in order, and how many records were stored already.

    Args:
        incoming: The records, each after the record it supersedes.
        stored: Stored rows of the same groups (their superseded rows among them).
        conflict: The error for a first version that contradicts a stored one.
        fork: The error for an edit of a row a stored row already supersedes.

    Raises:
        Exception: ``conflict(record)`` or ``fork(record)``.
        ValueError: A record supersedes a ``ref`` that no earlier record has.
    """
    key_of: dict[int, Key] = {}
    id_of: dict[Key, int] = {}
    roots: dict[tuple[Any, ...], list[tuple[Key, str]]] = {}
    edited: dict[int, set[Key]] = {}
    for row in sorted(stored, key=lambda r: r.row_id):
        parent = None if row.supersedes is None else key_of.get(row.supersedes)
        key = key_of[row.row_id] = identity(row.group, row.content, parent)
        id_of.setdefault(key, row.row_id)
        if row.supersedes is None:
            roots.setdefault(row.group, []).append((key, row.source))
        else:
            edited.setdefault(row.supersedes, set()).add(key)
    planned: list[Planned] = []
    batch_key: dict[int, Key] = {}
    where: dict[Key, tuple[int | None, int | None]] = {}  # key -> (stored id, new index)
    first_root: dict[tuple[Any, ...], Key] = {}
    unchanged = 0
    for i, rec in enumerate(incoming):
        parent_key: Key | None = None
        if rec.parent is not None:
            if rec.parent not in batch_key:
                raise ValueError(f"record {i + 1} supersedes {rec.parent}, which no earlier record has")
            parent_key = batch_key[rec.parent]
        key = identity(rec.group, rec.content, parent_key)
        if rec.ref is not None:
            batch_key[rec.ref] = key
        if key in where or key in id_of:
            unchanged += 1
            where.setdefault(key, (id_of.get(key), None))
            continue
        if parent_key is None:
            others = [k for k, source in roots.get(rec.group, []) if source == rec.source]
            seen = first_root.setdefault(rec.group, key) if rec.ref is None else key
            if any(k != key for k in others) or seen != key:
                raise conflict(rec)
            stored_parent, new_parent = None, None
        else:
            stored_parent, new_parent = where[parent_key]
            if stored_parent is not None and edited.get(stored_parent, set()) - {key}:
                raise fork(rec)
        where[key] = (None, len(planned))
        planned.append(Planned(i, stored_parent, new_parent))
    return planned, unchanged
