"""The raters' queues, labels, pairwise labels, padding audits and queue events (the app's writes).

Who gets which item is :mod:`judgelab.labeler.store._assign` (the store's half) and
:mod:`judgelab.labeler.planner` (the policy). The rules this module keeps:

* **Append-only.** A label is never updated: an edit is a new row whose
  ``supersedes`` names the row it replaces. The same holds for pair labels and audits.
* **Blind.** What pages receive (:class:`ScoreView`, :class:`PairView`,
  :class:`AuditView`, :class:`~judgelab.labeler.queue.QueueItem`) carries opaque item ids and
  text only, never answer ids, family, model, variant or parent. Every method that
  takes an ``assignment_id`` checks that it belongs to the rater asking, so a rater
  can never read or write another rater's labels.
* **Active time.** The app sends the seconds the item was on screen in the rater's
  session, counting neither a hidden tab nor idle time beyond a cap
  (:data:`judgelab.labeler.timing.IDLE_CAP_SECONDS`). The store bounds them by the server's own
  clock (from the first ``open`` event after the rater's previous submit or skip of it
  to the write); a write without them (the CLI, scripts) records that server time.
* **Revoked raters write nothing.** Every write checks, in the same transaction, that
  the rater's link is not revoked.
* **Unchanged is a no-op.** Resubmitting exactly the current label (or pair label, or
  audit) writes nothing and returns the current row's id.
* **No silent overwrite.** The app's writes say which label the rater saw (``seen``: its
  id, ``None`` for none); when another tab on the same link has stored a newer one since,
  the write is refused (:class:`~judgelab.labeler.errors.StaleLabelError`) in the same transaction
  that would have superseded it, and the rater is shown what is stored.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import EllipsisType
from typing import Any, NamedTuple

import duckdb
import pandas as pd

from judgelab.labeler.blinding import REDACTED
from judgelab.labeler.errors import AccessError, InputError, StaleLabelError, StoreError
from judgelab.labeler.models import Rubric
from judgelab.labeler.planner import AssignSummary
from judgelab.labeler.queue import KINDS, Kind, Progress, QueueItem, next_position, shown_index
from judgelab.labeler.scales import format_range
from judgelab.labeler.store._assign import AssignMixin
from judgelab.labeler.store._core import check_comment
from judgelab.labeler.store._pool import blind_text, blind_transcript
from judgelab.labeler.store._quality import refuse_if_paused, visible_rows
from judgelab.labeler.store._withheld import RATER_FLAG_REASON, hidden_in_queue, mask_of
from judgelab.labeler.transcripts import Transcript, render

#: The label a write's caller saw: its id, ``None`` (none), or ``...`` (not said: no check).
Seen = int | None | EllipsisType

#: Setting key (scope ``project`` or ``rubric:<id>``) that masks self-identifying spans.
MASK_KEY = "mask_self_id"

#: Masking when no scope sets it: on, because an unmasked "As an AI made by X" unblinds.
MASK_DEFAULT = True

# Per kind: the table of done rows, its id column, and the event-free columns pages read.
_DONE_TABLE: dict[str, tuple[str, str]] = {
    "score": ("labels", "label_id"),
    "pair": ("pair_labels", "pair_label_id"),
    "audit": ("padding_audits", "audit_id"),
}


@dataclass(frozen=True)
class CurrentLabel:
    """A rater's current label of one item, to prefill the form when they go back."""

    label_id: int
    overall: float | None
    criteria: dict[str, float]
    comment: str
    flag_reason: str | None


@dataclass(frozen=True)
class ScoreView:
    """Everything the rate page shows for one item (and nothing that unblinds it)."""

    item: QueueItem
    progress: Progress
    prompt: str
    text: str
    rubric: Rubric
    current: CurrentLabel | None = None
    masked: int = 0
    transcript: Transcript | None = None
    """The answer as a conversation, blinded message by message, when it is one."""


@dataclass(frozen=True)
class PairView:
    """Everything the compare page shows: the two answers in the order this rater sees them."""

    item: QueueItem
    progress: Progress
    prompt: str
    left_text: str
    right_text: str
    current_preference: int | None = None
    current_comment: str = ""
    current_id: int | None = None


@dataclass(frozen=True)
class AuditView:
    """Everything the padding-audit page shows: an original and its rewrite."""

    item: QueueItem
    progress: Progress
    prompt: str
    original_text: str
    rewrite_text: str
    length_ratio: float
    current_adds_content: bool | None = None
    current_note: str = ""
    current_id: int | None = None


@dataclass(frozen=True)
class _Context:
    """An assignment as a write sees it (server side only; never handed to a page)."""

    answer_id: str
    answer_b_id: str | None
    rubric_id: str | None
    rubric_version: int | None
    rater_name: str
    current_id: int | None
    seconds: float | None
    #: The write's ``seen`` was not the current label (another tab wrote one meanwhile).
    stale: bool = False

    def refuse_if_stale(self) -> None:
        """Refuse a write based on a label that is no longer current (asked after the unchanged case).

        A write equal to the stored label changes nothing, whichever tab sent it: only a
        different one would silently overwrite what the other tab stored.
        """
        if self.stale:
            raise StaleLabelError(self.current_id)

    def timed(self, active: float | None) -> float | None:
        """The seconds to store: the app's active seconds, never more than the server saw.

        Without an ``open`` event the server saw nothing to bound them by: nothing is stored.
        """
        if active is None or active < 0 or self.seconds is None:
            return self.seconds
        return min(active, self.seconds)


class _Source(NamedTuple):
    """What a queue item shows: its answer(s) and rubric (server side only; never handed to a page)."""

    answer_id: str
    answer_b_id: str | None
    rubric_id: str | None
    rubric_version: int | None


@dataclass(frozen=True)
class Screen:
    """One render of a rating page: the rater's queue, where they are, and what to show.

    Attributes:
        queue: The rater's items of this kind in queue order.
        index: Index of the shown item in ``queue``; ``None`` when everything is done.
        view: The shown item's :class:`ScoreView`, :class:`PairView` or
            :class:`AuditView`; ``None`` when ``index`` is.
    """

    queue: list[QueueItem]
    index: int | None
    view: ScoreView | PairView | AuditView | None

    @property
    def progress(self) -> Progress:
        """``done of total``."""
        return _progress(self.queue)


class LabelMixin(AssignMixin):
    """The raters' queues, and everything raters write (assignments: :class:`AssignMixin`)."""

    # -- the rater's queue ------------------------------------------------------------

    def rater_queue(self, rater_id: int, kind: Kind = "score") -> list[QueueItem]:
        """The rater's assignments of one kind in queue order, with what is done or skipped."""
        with self.connection() as con:
            return self._queue(con, rater_id, kind)[0]

    def _queue(
        self, con: duckdb.DuckDBPyConnection, rater_id: int, kind: Kind
    ) -> tuple[list[QueueItem], list[tuple[Any, ...]]]:
        """The rater's queue (:meth:`rater_queue`) and its rows, item by item (see :func:`_source`).

        The rows stay on the server: a page gets the :class:`~judgelab.labeler.queue.QueueItem` only.
        """
        if kind not in KINDS:
            raise InputError(f"unknown queue kind {kind!r}", fix=f"use one of {KINDS}.")
        table, id_col = _DONE_TABLE[kind]
        # Three plain reads merged in Python: one query with the grouping joins cost about
        # twice as long, most of a screen's store time.
        flag_sql = "d.flag_reason IS NOT NULL" if kind == "score" else "false"
        current: dict[int, tuple[int, bool]] = {}  # assignment -> (current id, flagged)
        for a, done_id, is_flagged in con.execute(
            f"SELECT d.assignment_id, d.{id_col}, {flag_sql} FROM {table} d"
            " WHERE d.rater_id = $1 AND d.assignment_id IS NOT NULL"
            f" AND NOT EXISTS (SELECT 1 FROM {table} s WHERE s.supersedes = d.{id_col})",
            [rater_id],
        ).fetchall():
            best, any_flag = current.get(a, (done_id, False))
            current[a] = (max(best, done_id), any_flag or bool(is_flagged))
        skip_counts: dict[int, tuple[int, int]] = {}  # assignment -> (skips, latest skip's id)
        for a, event_id in con.execute(
            "SELECT assignment_id, event_id FROM queue_events WHERE rater_id = $1 AND event = 'skip'",
            [rater_id],
        ).fetchall():
            count, last = skip_counts.get(a, (0, event_id))
            skip_counts[a] = (count + 1, max(last, event_id))
        rows = []
        for _, a, answer_id, answer_b_id, rubric_id, rubric_version in sorted(
            con.execute(
                "SELECT queue_pos, assignment_id, answer_id, answer_b_id, rubric_id, rubric_version"
                " FROM assignments WHERE rater_id = $1 AND kind = $2",
                [rater_id, kind],
            ).fetchall()
        ):
            done_id, is_flagged = current.get(a, (None, False))
            count, last = skip_counts.get(a, (0, None))
            rows.append((a, answer_id, answer_b_id, done_id, is_flagged, count, last, rubric_id, rubric_version))
        # A paused or qualifying rater sees only gold items and attention checks (judgelab.labeler.store._quality).
        rows = visible_rows(con, rater_id, kind, rows)
        # An answer withheld because it says who wrote it is shown to nobody who has not done it yet.
        rows = hidden_in_queue(con, rows)
        items = self._item_ids(con, [r[1] for r in rows] + [r[2] for r in rows if r[2] is not None])
        queue = [
            QueueItem(
                assignment_id=int(assignment_id),
                kind=kind,
                position=pos,
                item_id=items[answer_id],
                item_b_id=None if answer_b_id is None else items[answer_b_id],
                done_id=None if done_id is None else int(done_id),
                skips=int(skips),
                last_skip_order=None if last_skip is None else int(last_skip),
                flagged=bool(flagged),
            )
            for pos, (assignment_id, answer_id, answer_b_id, done_id, flagged, skips, last_skip, _, _)
            in enumerate(rows, start=1)
        ]
        return queue, rows

    def _item_ids(self, con: duckdb.DuckDBPyConnection, answer_ids: Sequence[str]) -> dict[str, str]:
        """The opaque item id of each answer, cached per store.

        An answer's item id is set at import and never changes, and joining the answers
        table into every queue read cost most of a rater's round trip at 100,000 answers.
        """
        cache: dict[str, str] = self.__dict__.setdefault("_item_cache", {})
        missing = sorted({a for a in answer_ids if a not in cache})
        if missing:
            cache.update(
                con.execute(
                    "SELECT answer_id, item_id FROM answers WHERE answer_id IN (SELECT unnest($1::VARCHAR[]))"
                    " UNION ALL SELECT answer_id, item_id FROM quality_items"
                    " WHERE answer_id IN (SELECT unnest($1::VARCHAR[]))",
                    [missing],
                ).fetchall()
            )
        return cache

    def next_item(self, rater_id: int, kind: Kind = "score") -> QueueItem | None:
        """Where the rater resumes: the first item neither labelled nor skipped, else a skipped one."""
        queue = self.rater_queue(rater_id, kind)
        index = next_position(queue)
        return None if index is None else queue[index]

    def progress(self, rater_id: int, kind: Kind = "score") -> Progress:
        """``done of total`` for one rater and kind (flagged-unrateable items count as done)."""
        return _progress(self.rater_queue(rater_id, kind))

    # -- events and timing --------------------------------------------------------------

    def _own_assignment(
        self, con: duckdb.DuckDBPyConnection, rater_id: int, assignment_id: int, kind: Kind
    ) -> _Source:
        """What the assignment shows; refuses other raters' items."""
        row = con.execute(
            "SELECT rater_id, kind, answer_id, answer_b_id, rubric_id, rubric_version"
            " FROM assignments WHERE assignment_id = ?",
            [int(assignment_id)],
        ).fetchone()
        row = _own_row(row, rater_id, assignment_id, kind)
        return _Source(
            str(row[2]),
            None if row[3] is None else str(row[3]),
            None if row[4] is None else str(row[4]),
            None if row[5] is None else int(row[5]),
        )

    @staticmethod
    def _since_sql(table: str) -> str:
        """SQL for the moment timing restarts: the latest submit or skip of the assignment."""
        return (
            "greatest("
            f"(SELECT max(created_at) FROM {table} WHERE rater_id = $1 AND assignment_id = $2),"
            " (SELECT max(created_at) FROM queue_events WHERE rater_id = $1"
            "  AND assignment_id = $2 AND event = 'skip'),"
            " TIMESTAMP '0001-01-01')"
        )

    def open_item(self, rater_id: int, assignment_id: int, kind: Kind = "score") -> bool:
        """Record that the rater has the item on screen; returns whether an event was written.

        Only the first open since the rater last submitted or skipped this item is
        written, so reruns of the page do not move the start of the clock.
        """
        with self.connection() as con:
            self._own_assignment(con, rater_id, assignment_id, kind)
            return self._record_open(con, rater_id, assignment_id, kind)

    def _record_open(
        self, con: duckdb.DuckDBPyConnection, rater_id: int, assignment_id: int, kind: Kind
    ) -> bool:
        """Write the ``open`` event unless one is there since the last submit or skip (one statement)."""
        made = con.execute(
            "INSERT INTO queue_events (rater_id, assignment_id, event) SELECT $1, $2, 'open'"
            " WHERE NOT EXISTS (SELECT 1 FROM queue_events WHERE rater_id = $1 AND assignment_id = $2"
            f" AND event = 'open' AND created_at > {self._since_sql(_DONE_TABLE[kind][0])})"
            " RETURNING event_id",
            [rater_id, assignment_id],
        ).fetchall()
        return bool(made)

    def skip_item(self, rater_id: int, assignment_id: int, kind: Kind = "score") -> None:
        """Skip an item: it comes back after every item not yet skipped."""
        with self.connection() as con:
            self._own_assignment(con, rater_id, assignment_id, kind)
            con.execute(
                "INSERT INTO queue_events (rater_id, assignment_id, event) VALUES (?, ?, 'skip')",
                [rater_id, assignment_id],
            )

    def _context(
        self, con: duckdb.DuckDBPyConnection, rater_id: int, assignment_id: int, kind: Kind,
        seen: Seen = ...,
    ) -> _Context:
        """Everything a write needs about an assignment; refuses other raters' and revoked raters.

        ``seen``: the id of the label the rater's form showed (``None``: none); when the
        current label is another one the context is ``stale`` and the write, unless it
        changes nothing, is refused (:meth:`_Context.refuse_if_stale`). ``...`` checks nothing.

        Plain indexed reads, the rest in Python: the assignment with its rater, then the
        rater's rows and queue events of this assignment (and, only when there are rows,
        which of them are superseded). The same figures as one query with correlated
        subqueries cost about twice as long.
        """
        table, id_col = _DONE_TABLE[kind]
        row = con.execute(
            "SELECT s.rater_id, s.kind, s.answer_id, s.answer_b_id, s.rubric_id, s.rubric_version,"
            " r.name, r.revoked_at, current_timestamp::TIMESTAMP"
            " FROM assignments s JOIN raters r ON r.rater_id = s.rater_id WHERE s.assignment_id = $1",
            [int(assignment_id)],
        ).fetchone()
        row = _own_row(row, rater_id, assignment_id, kind)
        if row[7] is not None:
            raise AccessError("this invite link was revoked. Ask your admin for a new one.")
        refuse_if_paused(con, rater_id)
        history = con.execute(
            f"SELECT 'done', {id_col}, created_at FROM {table} WHERE rater_id = $1 AND assignment_id = $2"
            " UNION ALL SELECT event, event_id, created_at FROM queue_events"
            " WHERE rater_id = $1 AND assignment_id = $2",
            [int(rater_id), int(assignment_id)],
        ).fetchall()
        done = [int(i) for event, i, _ in history if event == "done"]
        current_id = None
        if done:
            superseded = {
                int(r[0]) for r in con.execute(
                    f"SELECT supersedes FROM {table} WHERE supersedes IN ({', '.join(map(str, done))})"
                ).fetchall()
            }
            current_id = max((i for i in done if i not in superseded), default=None)
        # The clock restarts at the latest submit or skip; it runs from the first open after that.
        since = max((at for event, _, at in history if event in ("done", "skip")), default=None)
        opened = min(
            (at for event, _, at in history if event == "open" and (since is None or at > since)), default=None
        )
        return _Context(
            answer_id=str(row[2]),
            answer_b_id=None if row[3] is None else str(row[3]),
            rubric_id=None if row[4] is None else str(row[4]),
            rubric_version=None if row[5] is None else int(row[5]),
            rater_name=str(row[6]),
            current_id=current_id,
            # Server clock, both ends; never negative even if the clock stepped back.
            seconds=None if opened is None else max((row[8] - opened).total_seconds(), 0.0),
            stale=seen is not ... and seen != current_id,
        )

    def _rubric_of(self, rubric_id: str | None, version: int | None) -> Rubric:
        """The rubric an assignment names (the newest when it names none), cached.

        A stored ``(rubric_id, version)`` never changes (a re-import with other content
        is refused), so caching it per store is safe and saves a query per label.
        """
        if rubric_id is None or version is None:
            found = self.rubric()
        else:
            cache: dict[tuple[str, int], Rubric] = self.__dict__.setdefault("_rubric_cache", {})
            found = cache.get((rubric_id, version))
            if found is None:
                found = self.rubric(rubric_id, version)
                if found is not None:
                    cache[(rubric_id, version)] = found
        if found is None:
            raise InputError("there is no rubric to label against", fix="import a rubric.")
        return found

    # -- writes -------------------------------------------------------------------------

    def add_label(
        self,
        rater_id: int,
        assignment_id: int,
        *,
        overall: float | None,
        criteria: Mapping[str, float] | None = None,
        comment: str = "",
        flag_reason: str | None = None,
        seconds: float | None = None,
        seen: Seen = ...,
    ) -> int:
        """Append the rater's label of a score item; an existing label is superseded, not changed.

        The pass verdict comes from the rubric (:meth:`Rubric.passes`), the seconds
        from the server's clock.

        Args:
            rater_id: The rater (must own the assignment).
            assignment_id: The item.
            overall: The overall score on the rubric's scale; may be ``None`` only when
                the item is flagged unrateable.
            criteria: A score per criterion id on the same scale; every criterion is
                required unless the item is flagged.
            comment: Free text.
            flag_reason: Set to flag the item as unrateable (why, in words).
            seconds: Active seconds on the item as the app counted them (bounded by
                the server's clock); ``None`` records the server's time.
            seen: The id of the label the rater's form showed (``None``: none); the
                write is refused when another label is current now. ``...`` (scripts,
                the CLI): no check.

        Returns:
            The new label's id; the current label's id when nothing changed (then
            nothing is written).

        Raises:
            AccessError: The assignment is not this rater's, or the rater is revoked.
            StaleLabelError: ``seen`` is not the current label (another tab wrote one).
            InputError: A score off the scale, unknown or missing criteria, a flag
                without a reason, or a comment or reason over :data:`MAX_COMMENT_CHARS`.
        """
        check_comment(comment)
        check_comment(flag_reason, "reason for the flag")
        flag = (flag_reason or "").strip() or None
        if flag_reason is not None and flag is None:
            raise InputError(
                "an unrateable flag needs a reason", fix="say why the item cannot be rated."
            )
        scores = {str(c): float(v) for c, v in (criteria or {}).items()}
        with self.connection() as con:
            ctx = self._context(con, rater_id, assignment_id, "score", seen)
            rubric = self._rubric_of(ctx.rubric_id, ctx.rubric_version)
            _check_scores(rubric, overall, scores, flagged=flag is not None)
            if ctx.current_id is not None:
                now = con.execute(_LABEL_CONTENT, [ctx.current_id]).fetchone()
                given = (None if overall is None else float(overall), scores, comment, flag)
                if now is not None and _same_label(now, given):
                    return ctx.current_id
            ctx.refuse_if_stale()
            made = con.execute(
                "INSERT INTO labels (rater_id, rater_name, answer_id, rubric_id, rubric_version,"
                " overall, passed, criteria, comment, flag_reason, seconds, supersedes, source,"
                " assignment_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'app', ?)"
                " RETURNING label_id",
                [
                    rater_id, ctx.rater_name, ctx.answer_id, rubric.rubric_id, rubric.version,
                    overall, None if overall is None else rubric.passes(float(overall)),
                    json.dumps(scores, sort_keys=True), comment, flag, ctx.timed(seconds),
                    ctx.current_id, assignment_id,
                ],
            ).fetchone()
        assert made is not None
        return int(made[0])

    def flag_author(
        self, rater_id: int, assignment_id: int, *, note: str = "", seconds: float | None = None, seen: Seen = ...,
    ) -> int:
        """The rater says the answer tells who wrote it: withhold it from every other rater (the W key).

        One unit of work: the rater's label of the item becomes an unrateable flag (reason
        :data:`~judgelab.labeler.store._withheld.RATER_FLAG_REASON`, then the rater's note), so their queue moves
        on and no score of an unblinded answer is kept; and the answer is withheld
        (:mod:`judgelab.labeler.store._withheld`): never dealt again, hidden where it is still to do, until
        the admin masks or clears it.

        Returns:
            The flag label's id.

        Raises:
            AccessError, StaleLabelError, InputError: As :meth:`add_label`.
        """
        note = note.strip()
        reason = f"{RATER_FLAG_REASON}: {note}" if note else RATER_FLAG_REASON
        with self.connection() as con:
            label_id = self.add_label(rater_id, assignment_id, overall=None, comment="", flag_reason=reason,
                                      seconds=seconds, seen=seen)
            row = con.execute(
                "SELECT s.answer_id, r.name FROM assignments s JOIN raters r USING (rater_id)"
                " WHERE s.assignment_id = ? AND s.answer_id IN (SELECT answer_id FROM answers)",
                [int(assignment_id)],
            ).fetchone()
            if row is not None:  # a gold item or attention check is no answer of the pool: nothing to withhold
                con.execute(
                    "INSERT INTO author_flags (answer_id, action, rater_id, by_name, reason)"
                    " VALUES (?, 'rater', ?, ?, ?)",
                    [str(row[0]), rater_id, str(row[1]), note],
                )
        return label_id

    def add_pair_label(
        self, rater_id: int, assignment_id: int, preference: int, *, comment: str = "",
        seconds: float | None = None, seen: Seen = ...,
    ) -> int:
        """Append the rater's preference for a pair, from the LEFT answer's point of view.

        ``+2`` left much better, ``+1`` left better, ``0`` equal, ``-1`` right better,
        ``-2`` right much better. The shown order is copied from the assignment. The same
        preference and comment as the current pair label write nothing and return its id;
        ``seconds`` and ``seen`` as in :meth:`add_label`.
        """
        check_comment(comment)
        if preference not in (-2, -1, 0, 1, 2):
            raise InputError(
                f"preference must be a whole number from -2 to 2, got {preference!r}",
                fix="+2 left much better ... -2 right much better.",
            )
        with self.connection() as con:
            ctx = self._context(con, rater_id, assignment_id, "pair", seen)
            if ctx.current_id is not None and con.execute(
                "SELECT preference = ? AND comment = ? FROM pair_labels WHERE pair_label_id = ?",
                [int(preference), comment, ctx.current_id],
            ).fetchone() == (True,):
                return ctx.current_id
            ctx.refuse_if_stale()
            made = con.execute(
                "INSERT INTO pair_labels (rater_id, rater_name, shown_left, shown_right,"
                " preference, comment, seconds, supersedes, source, assignment_id)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'app', ?) RETURNING pair_label_id",
                [rater_id, ctx.rater_name, ctx.answer_id, ctx.answer_b_id, int(preference),
                 comment, ctx.timed(seconds), ctx.current_id, assignment_id],
            ).fetchone()
        assert made is not None
        return int(made[0])

    def add_audit(
        self, rater_id: int, assignment_id: int, adds_content: bool, *, note: str = "",
        seconds: float | None = None, seen: Seen = ...,
    ) -> int:
        """Append the rater's padding audit: does the rewrite add anything a reader could act on?

        The same answer and note as the current audit write nothing and return its id;
        ``seconds`` and ``seen`` as in :meth:`add_label`.
        """
        check_comment(note, "note")
        with self.connection() as con:
            ctx = self._context(con, rater_id, assignment_id, "audit", seen)
            if ctx.current_id is not None and con.execute(
                "SELECT adds_content = ? AND note = ? FROM padding_audits WHERE audit_id = ?",
                [bool(adds_content), note, ctx.current_id],
            ).fetchone() == (True,):
                return ctx.current_id
            ctx.refuse_if_stale()
            ratio = self._length_ratio(con, ctx.answer_id, ctx.answer_b_id or "")
            made = con.execute(
                "INSERT INTO padding_audits (rater_id, original_id, rewrite_id, length_ratio,"
                " adds_content, note, seconds, supersedes, assignment_id)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING audit_id",
                [rater_id, ctx.answer_id, ctx.answer_b_id, ratio, bool(adds_content), note,
                 ctx.timed(seconds), ctx.current_id, assignment_id],
            ).fetchone()
        assert made is not None
        return int(made[0])

    @staticmethod
    def _length_ratio(con: duckdb.DuckDBPyConnection, original: str, rewrite: str) -> float:
        rows = dict(
            con.execute(
                "SELECT answer_id, n_words FROM answers WHERE answer_id IN (?, ?)",
                [original, rewrite],
            ).fetchall()
        )
        base = int(rows.get(original, 0))
        return float(rows.get(rewrite, 0)) / base if base else math.inf

    # -- reads for the rater ------------------------------------------------------------

    def rater_current_labels(self, rater_id: int) -> pd.DataFrame:
        """This rater's current labels (superseded rows left out); nobody else's.

        Returns:
            ``label_id``, ``assignment_id``, ``item_id``, ``answer_id``, ``rubric_id``,
            ``rubric_version``, ``overall``, ``passed``, ``criteria`` (JSON text),
            ``comment``, ``flag_reason``, ``seconds``, ``supersedes``, ``created_at``.
        """
        return self.query(
            "SELECT l.label_id, l.assignment_id, a.item_id, l.answer_id, l.rubric_id,"
            " l.rubric_version, l.overall, l.passed, l.criteria, l.comment, l.flag_reason,"
            " l.seconds, l.supersedes, l.created_at"
            " FROM labels l LEFT JOIN answers a USING (answer_id)"
            " WHERE l.rater_id = ? AND l.source <> 'adjudicated' AND NOT EXISTS"
            " (SELECT 1 FROM labels s WHERE s.supersedes = l.label_id)"
            " ORDER BY l.label_id",
            [rater_id],
        )

    def mask_self_id(self, rubric_id: str | None = None) -> bool:
        """Whether raters see self-identifying spans masked.

        The rubric's setting (scope ``rubric:<id>``) wins over the project's; with
        neither set, :data:`MASK_DEFAULT`.
        """
        scopes = ["project"] + ([f"rubric:{rubric_id}"] if rubric_id is not None else [])
        with self.connection() as con:
            found = dict(
                con.execute(
                    "SELECT scope, value FROM settings WHERE key = ? AND scope IN (SELECT unnest(?))",
                    [MASK_KEY, scopes],
                ).fetchall()
            )
        return _masking(found.get(scopes[-1]), found.get("project"))

    def _shown_text(
        self, con: duckdb.DuckDBPyConnection, answer_id: str, rubric_id: str | None
    ) -> tuple[str, str, int, Transcript | None]:
        """``(task prompt, answer text as raters see it, number of masked spans, its transcript)``.

        Masked as :meth:`mask_self_id` says for ``rubric_id``, in one query: the answer, its
        task's prompt and both scopes' masking setting.
        """
        row = con.execute(
            "SELECT t.prompt, a.text, a.self_id_spans,"
            " (SELECT value FROM settings WHERE key = $2 AND scope = $3),"
            " (SELECT value FROM settings WHERE key = $2 AND scope = 'project'), a.transcript"
            " FROM answers a JOIN tasks t USING (task_id) WHERE a.answer_id = $1"
            # A gold item or attention check is shown exactly as an answer is (blinded the same way).
            " UNION ALL SELECT q.prompt, q.text, q.self_id_spans,"
            " (SELECT value FROM settings WHERE key = $2 AND scope = $3),"
            " (SELECT value FROM settings WHERE key = $2 AND scope = 'project'), NULL"
            " FROM quality_items q WHERE q.answer_id = $1",
            [answer_id, MASK_KEY, None if rubric_id is None else f"rubric:{rubric_id}"],
        ).fetchone()
        if row is None:
            raise InputError(f"answer {answer_id!r} is missing from the database")
        masked = mask_of(con, answer_id)
        if masked is not None:
            # The admin's edit of an answer that said who wrote it (judgelab.labeler.store._withheld), blinded as any
            # text.
            shown, n_masked = blind_text(con, masked, "[]")
            return str(row[0]), shown, n_masked, None
        transcript = None if row[5] is None else Transcript.from_json(str(row[5]))
        if not _masking(row[3], row[4]):
            return str(row[0]), str(row[1]), 0, transcript
        if transcript is not None:
            # The page draws the conversation from its transcript; masking its rendering too read a
            # 1 MB trace twice (about 20 s each): the text is the masked transcript's rendering.
            shown_t = blind_transcript(con, transcript)
            text = render(shown_t)
            return str(row[0]), text, text.count(REDACTED) - render(transcript).count(REDACTED), shown_t
        shown, n_masked = blind_text(con, str(row[1]), row[2])
        return str(row[0]), shown, n_masked, None

    def _view(
        self, con: duckdb.DuckDBPyConnection, rater_id: int, item: QueueItem, progress: Progress,
        source: _Source | None = None,
    ) -> ScoreView | PairView | AuditView:
        """The blinded content of one queue item (the rater's own, checked).

        ``source``: the item's row of the rater's queue as :meth:`_queue` read it in this
        unit of work (it holds only the rater's own items); without it, the assignment is
        looked up and its owner checked.
        """
        # What the item shows, not what a write needs (:meth:`_context`: current label and
        # time on item): a render reads the assignment once, or not at all given its source.
        if source is None:
            source = self._own_assignment(con, rater_id, item.assignment_id, item.kind)
        answer_id, answer_b_id, rubric_id, rubric_version = source
        if item.kind == "score":
            rubric = self._rubric_of(rubric_id, rubric_version)
            prompt, text, n_masked, transcript = self._shown_text(con, answer_id, rubric.rubric_id)
            current = None
            row = _done_row(con, item, _LABEL_CONTENT)
            if row is not None and item.done_id is not None:
                current = CurrentLabel(
                    label_id=item.done_id,
                    overall=None if row[0] is None else float(row[0]),
                    criteria={str(k): float(v) for k, v in json.loads(row[1]).items()},
                    comment=str(row[2]),
                    flag_reason=None if row[3] is None else str(row[3]),
                )
            return ScoreView(item, progress, prompt, text, rubric, current, n_masked, transcript)
        # Pairs and audits follow the project's setting (they have no rubric of their own).
        prompt, first, _, _ = self._shown_text(con, answer_id, None)
        _, second, _, _ = self._shown_text(con, answer_b_id or "", None)
        if item.kind == "pair":
            pref: int | None = None
            comment = ""
            row = _done_row(
                con, item, "SELECT preference, comment FROM pair_labels WHERE pair_label_id = ?"
            )
            if row is not None:
                pref, comment = int(row[0]), str(row[1])
            return PairView(item, progress, prompt, first, second, pref, comment, item.done_id)
        ratio = self._length_ratio(con, answer_id, answer_b_id or "")
        adds: bool | None = None
        note = ""
        row = _done_row(con, item, "SELECT adds_content, note FROM padding_audits WHERE audit_id = ?")
        if row is not None:
            adds, note = bool(row[0]), str(row[1])
        return AuditView(item, progress, prompt, first, second, ratio, adds, note, item.done_id)

    def _view_of(
        self, rater_id: int, assignment_id: int, kind: Kind
    ) -> ScoreView | PairView | AuditView:
        with self.connection() as con:
            queue, rows = self._queue(con, rater_id, kind)
            for item, row in zip(queue, rows, strict=True):
                if item.assignment_id == assignment_id:
                    return self._view(con, rater_id, item, _progress(queue), _source(row))
        raise AccessError("that item is not in your queue.")

    def score_view(self, rater_id: int, assignment_id: int) -> ScoreView:
        """What the rate page shows for one of the rater's score items."""
        view = self._view_of(rater_id, assignment_id, "score")
        assert isinstance(view, ScoreView)
        return view

    def pair_view(self, rater_id: int, assignment_id: int) -> PairView:
        """What the compare page shows: both answers in this rater's shown order."""
        view = self._view_of(rater_id, assignment_id, "pair")
        assert isinstance(view, PairView)
        return view

    def audit_view(self, rater_id: int, assignment_id: int) -> AuditView:
        """What the padding-audit page shows: the original, the rewrite and their length ratio."""
        view = self._view_of(rater_id, assignment_id, "audit")
        assert isinstance(view, AuditView)
        return view

    def screen(self, rater_id: int, kind: Kind = "score", at: int | None = None) -> Screen:
        """Everything one render of a rating page needs, in one unit of work.

        Reads the queue, picks the item (assignment ``at`` when the rater went back to
        it, else the resume position), records that it is open (for the timing), and
        loads its blinded view.
        """
        if self.read_only:
            return self._screen(rater_id, kind, at, record=False)
        try:
            return self._screen(rater_id, kind, at, record=True)
        except StoreError:
            # The open event is for the timing only: a full disk or a file turned read-only must
            # not hide the item. Read it without the event; a read that fails too raises.
            return self._screen(rater_id, kind, at, record=False)

    def _screen(self, rater_id: int, kind: Kind, at: int | None, *, record: bool) -> Screen:
        """:meth:`screen` in one unit of work; ``record``: write the ``open`` event too."""
        with self.connection() as con:
            queue, rows = self._queue(con, rater_id, kind)
            index = shown_index(queue, at)
            if index is None:
                return Screen(queue, None, None)
            item = queue[index]
            if record:
                # The queue holds only this rater's items of this kind: no ownership check again.
                self._record_open(con, rater_id, item.assignment_id, kind)
            return Screen(queue, index, self._view(con, rater_id, item, _progress(queue), _source(rows[index])))


def _source(row: tuple[Any, ...]) -> _Source:
    """What a row of :meth:`LabelMixin._queue` shows (built for the shown item only)."""
    return _Source(str(row[1]), None if row[2] is None else str(row[2]),
                   None if row[7] is None else str(row[7]), None if row[8] is None else int(row[8]))


def _masking(rubric_value: object, project_value: object) -> bool:
    """Whether to mask, from the ``mask_self_id`` setting of the rubric's scope and the project's."""
    value = project_value if rubric_value is None else rubric_value
    if value is None:
        return MASK_DEFAULT
    return str(value).strip().lower() == "true"


def _own_row(
    row: tuple[Any, ...] | None, rater_id: int, assignment_id: int, kind: Kind
) -> tuple[Any, ...]:
    """An assignment ``row`` (``rater_id, kind, ...``).

    Refuses one that is missing, another rater's, or not of ``kind``.
    """
    if row is None or int(row[0]) != int(rater_id):
        raise AccessError("that item is not in your queue.")
    if row[1] != kind:
        raise InputError(
            f"assignment {assignment_id} is a {row[1]!r} item, not {kind!r}",
            fix="open it on its own page.",
        )
    return row


_LABEL_CONTENT = "SELECT overall, criteria, comment, flag_reason FROM labels WHERE label_id = ?"
"""A score label's content by id: what an edit is compared with and what the form shows again."""


def _done_row(
    con: duckdb.DuckDBPyConnection, item: QueueItem, sql: str
) -> tuple[Any, ...] | None:
    """The row ``sql`` selects by id for the rater's current label of ``item``.

    ``None`` when the item has none.
    """
    if item.done_id is None:
        return None
    return con.execute(sql, [item.done_id]).fetchone()


def _progress(queue: Sequence[QueueItem]) -> Progress:
    return Progress(
        done=sum(1 for i in queue if i.done),
        total=len(queue),
        skipped=sum(1 for i in queue if i.skipped),
    )


def _check_scores(
    rubric: Rubric, overall: float | None, criteria: Mapping[str, float], *, flagged: bool
) -> None:
    """Refuse scores the rubric's scale does not allow (see :data:`judgelab.labeler.scales.FORMAT_SPECS`)."""
    lo, hi = format_range(rubric.scale)
    whole = rubric.scale in ("binary", "likert5")
    grid = rubric.declared_scale  # a declared scale's levels are its grid (0-10 by 0.5 allows 7.5)
    names = {c.criterion_id: c.name for c in rubric.criteria}
    unknown = sorted(set(criteria) - set(names))
    if unknown:
        raise InputError(
            f"{_listed(unknown)} {'is not a criterion' if len(unknown) == 1 else 'are not criteria'}"
            f" of rubric {rubric.name!r} (v{rubric.version})",
            fix=f"score only {_listed(list(names.values()))}.",
        )
    if not flagged:
        if overall is None:
            raise InputError(
                "an overall score is required", fix="give one, or flag the item as unrateable."
            )
        missing = [name for cid, name in names.items() if cid not in criteria]
        if missing:
            raise InputError(
                f"{_listed(missing)} {'has' if len(missing) == 1 else 'have'} no score",
                fix="score every criterion, or flag the item as unrateable.",
            )
    values = {names[c]: v for c, v in criteria.items()}
    if overall is not None:
        values["overall"] = float(overall)
    for name, value in values.items():
        if (not (lo <= value <= hi) or (whole and value != int(value)) or math.isnan(value)
                or (grid is not None and not grid.on_grid(value))):
            raise InputError(
                f"the {name} score {value:g} is not on the {rubric.scale} scale",
                column=name,
                fix=rubric.scale_text(),
            )


def _listed(names: Sequence[str]) -> str:
    """Names as a sentence lists them: ``Tone``, ``Tone and Accuracy``, ``A, B and C``."""
    quoted = [f"'{n}'" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _same_label(stored: tuple[Any, ...], given: tuple[Any, ...]) -> bool:
    """Whether a stored ``(overall, criteria JSON, comment, flag_reason)`` row equals ``given``."""
    overall, criteria, comment, flag = stored
    return (
        (None if overall is None else float(overall), {str(k): float(v) for k, v in json.loads(criteria).items()},
         str(comment), None if flag is None else str(flag))
        == given
    )


__all__ = [
    "MASK_DEFAULT",
    "MASK_KEY",
    "AssignSummary",
    "AuditView",
    "CurrentLabel",
    "LabelMixin",
    "PairView",
    "ScoreView",
    "Screen",
]
