"""Rater quality in the database: gold items, attention checks, qualification and pauses.

The rules this module keeps (the pure parts are :mod:`judgelab.labeler.quality`):

* **Apart from the pool.** Quality items live in their own table (migration 014), never in
  ``answers``: judge runs, designs and calibration read the pool and cannot meet one. Their labels
  go to ``labels`` like any other, and :data:`judgelab.labeler.store._core.CURRENT_LABEL_RULE` leaves them
  out of every label loader by answer id (:data:`QUALITY_IDS_SQL`).
* **Indistinguishable.** A quality item reaches a rater as a ``score`` assignment with an opaque
  item id made like an answer's, its text blinded the same way, on the same page, at a seeded
  position among the live items (:func:`mix_in`). Nothing the page gets says it is one; only in
  training mode, after the rater submits it, does :meth:`QualityMixin.quality_feedback` say so.
* **Held, not deleted.** A paused rater (the newest ``rater_holds`` row is a pause) sees no item;
  a rater still qualifying (fewer than ``qualify_n`` gold labels, or too few of them right) sees
  only the quality items: :func:`visible_rows` filters the queue. Their labels stay; a pause with
  ``exclude_labels`` leaves their labels out of calibration (:data:`EXCLUDED_RATERS_SQL`).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import duckdb
import pandas as pd

from judgelab.labeler.blinding import detect_self_identifying, merge_spans
from judgelab.labeler.errors import ConflictError, InputError, JudgelabError
from judgelab.labeler.quality import SCOPE, QualityItem, QualitySettings, quality_positions, within
from judgelab.labeler.queue import rater_rng
from judgelab.labeler.store._audit import audit, audit_import
from judgelab.labeler.store._bulk import insert_rows
from judgelab.labeler.store._core import StoreCore
from judgelab.labeler.store._pool import ImportSummary, pool_names, write_setting
from judgelab.labeler.store._raters import rater_named

__all__ = [
    "EXCLUDED_RATERS_SQL",
    "QUALITY_IDS_SQL",
    "PausedError",
    "QualityMixin",
    "RaterHold",
    "mix_in",
    "refuse_if_paused",
    "visible_rows",
]

#: Ids of every quality item: their labels count in no analysis.
QUALITY_IDS_SQL = "SELECT answer_id FROM quality_items"

#: Raters paused with ``exclude_labels``: calibration leaves their labels out while the pause lasts.
EXCLUDED_RATERS_SQL = (
    "SELECT h.rater_id FROM (SELECT rater_id, action, exclude_labels,"
    "  row_number() OVER (PARTITION BY rater_id ORDER BY hold_id DESC) AS rn FROM rater_holds) h"
    " WHERE h.rn = 1 AND h.action = 'pause' AND h.exclude_labels"
)

_ITEM_COLUMNS = ("answer_id", "item_id", "kind", "prompt", "text", "n_words", "self_id_spans", "low", "high",
                 "explanation", "source_file")


@dataclass(frozen=True)
class RaterHold:
    """Why a rater's live items are held back (what their page says).

    Attributes:
        state: ``paused`` (by the admin), ``qualifying`` (gold items first) or ``not_qualified``
            (the qualification items are done, too few right).
        reason: The admin's words for a pause (may be empty).
    """

    state: Literal["paused", "qualifying", "not_qualified"]
    reason: str = ""


class PausedError(JudgelabError):
    """A paused rater's write (from a page drawn before the pause): nothing is stored."""


def refuse_if_paused(con: duckdb.DuckDBPyConnection, rater_id: int) -> None:
    """Refuse a write of a rater whose queue the admin paused (one indexed read)."""
    row = con.execute("SELECT action FROM rater_holds WHERE rater_id = ? ORDER BY hold_id DESC LIMIT 1",
                      [int(rater_id)]).fetchone()
    if row is not None and row[0] == "pause":
        raise PausedError("your admin has paused your queue, so this was not stored. Please contact your admin.")


def read_settings(con: duckdb.DuckDBPyConnection) -> QualitySettings:
    """The project's quality settings (defaults where none is stored)."""
    stored = dict(con.execute("SELECT key, value FROM settings WHERE scope = ?", [SCOPE]).fetchall())
    return QualitySettings.from_stored({str(k): str(v) for k, v in stored.items()})


def rater_holds(con: duckdb.DuckDBPyConnection, rater_ids: Sequence[int]) -> dict[int, RaterHold | None]:
    """:func:`rater_hold` of each of ``rater_ids`` in three reads, whatever their number.

    The admin's quality table asked each rater in turn: a query per rater, 25 s at 500 raters
    (``bench/size_flat.py``). The rule is the same, read for everyone at once.
    """
    ids = sorted({int(r) for r in rater_ids})
    if not ids:
        return {}
    latest = {int(r): v for r, v in con.execute(
        # The newest row per rater, as rater_hold's ORDER BY hold_id DESC LIMIT 1 reads it.
        "SELECT h.rater_id, h.action || ':' || h.reason FROM rater_holds h"
        " WHERE h.rater_id IN (SELECT unnest($1::INTEGER[]))"
        " AND NOT EXISTS (SELECT 1 FROM rater_holds n WHERE n.rater_id = h.rater_id AND n.hold_id > h.hold_id)",
        [ids],
    ).fetchall()}
    found = con.execute(
        "SELECT (SELECT value FROM settings WHERE scope = $1 AND key = 'qualify_n'),"
        " (SELECT value FROM settings WHERE scope = $1 AND key = 'qualify_min'),"
        " (SELECT count(*) FROM quality_items WHERE kind = 'gold')",
        [SCOPE],
    ).fetchone()
    assert found is not None
    qualify_n, qualify_min, n_gold = found
    need = min(int(float(qualify_n or 0)), int(n_gold))
    marks: dict[int, list[tuple[Any, Any, Any]]] = {}
    if need > 0:
        for rid, overall, low, high in con.execute(
            "SELECT rater_id, overall, low, high FROM ("
            " SELECT l.rater_id, l.overall, q.low, q.high,"
            "  row_number() OVER (PARTITION BY l.rater_id ORDER BY l.label_id) AS k"
            " FROM labels l JOIN quality_items q USING (answer_id)"
            " WHERE l.rater_id IN (SELECT unnest($1::INTEGER[])) AND q.kind = 'gold'"
            " AND l.source <> 'adjudicated' AND l.supersedes IS NULL) m WHERE k <= $2",
            [ids, need],
        ).fetchall():
            marks.setdefault(int(rid), []).append((overall, low, high))
    out: dict[int, RaterHold | None] = {}
    for rid in ids:
        last = latest.get(rid)
        if last is not None and str(last).startswith("pause:"):
            out[rid] = RaterHold("paused", str(last).split(":", 1)[1])
        elif need <= 0:
            out[rid] = None
        elif len(mine := marks.get(rid, [])) < need:
            out[rid] = RaterHold("qualifying")
        else:
            right = sum(within(o, lo, hi) for o, lo, hi in mine)
            out[rid] = None if right >= float(qualify_min or 0.0) * need - 1e-9 else RaterHold("not_qualified")
    return out


def rater_hold(con: duckdb.DuckDBPyConnection, rater_id: int) -> RaterHold | None:
    """Why the rater's live items are held back, or ``None`` when they show (two small reads)."""
    found = con.execute(
        "SELECT (SELECT action || ':' || reason FROM rater_holds WHERE rater_id = $1 ORDER BY hold_id DESC LIMIT 1),"
        " (SELECT value FROM settings WHERE scope = $2 AND key = 'qualify_n'),"
        " (SELECT value FROM settings WHERE scope = $2 AND key = 'qualify_min'),"
        " (SELECT count(*) FROM quality_items WHERE kind = 'gold')",
        [int(rater_id), SCOPE],
    ).fetchone()
    assert found is not None
    latest, qualify_n, qualify_min, n_gold = found
    if latest is not None and str(latest).startswith("pause:"):
        return RaterHold("paused", str(latest).split(":", 1)[1])
    # Never more than there are gold items to give: a rater must always be able to qualify.
    need = min(int(float(qualify_n or 0)), int(n_gold))
    if need <= 0:
        return None
    # The first ``need`` gold labels the rater gave decide, so a later slip does not hide live items again.
    marks = con.execute(
        "SELECT l.overall, q.low, q.high FROM labels l JOIN quality_items q USING (answer_id)"
        " WHERE l.rater_id = $1 AND q.kind = 'gold' AND l.source <> 'adjudicated' AND l.supersedes IS NULL"
        " ORDER BY l.label_id LIMIT $2",
        [int(rater_id), need],
    ).fetchall()
    if len(marks) < need:
        return RaterHold("qualifying")
    right = sum(within(o, lo, hi) for o, lo, hi in marks)
    return None if right >= float(qualify_min or 0.0) * need - 1e-9 else RaterHold("not_qualified")


def visible_rows(
    con: duckdb.DuckDBPyConnection, rater_id: int, kind: str, rows: list[tuple[Any, ...]]
) -> list[tuple[Any, ...]]:
    """The queue rows a rater sees: all of them, or only quality items while held.

    ``rows`` are :meth:`judgelab.labeler.store._labels.LabelMixin._queue`'s (answer id second).
    """
    hold = rater_hold(con, rater_id)
    if hold is None:
        return rows
    # A paused rater sees nothing: a queue cut down to its quality items would tell them
    # (Back walks through it) which of the items they labelled were gold.
    if hold.state == "paused" or kind != "score" or not rows:
        return []
    quality = {str(a) for (a,) in con.execute(
        "SELECT answer_id FROM quality_items WHERE answer_id IN (SELECT unnest($1::VARCHAR[]))",
        [[str(r[1]) for r in rows]],
    ).fetchall()}
    return [r for r in rows if str(r[1]) in quality]


def mix_in(con: duckdb.DuckDBPyConnection, rater_ids: Sequence[int] | None = None) -> dict[int, int]:
    """Put quality items into raters' score queues as the settings ask; returns items added per rater.

    Each rater gets ``qualify_n`` gold items before their first item and ``rate`` x (live items)
    spread among them (:func:`judgelab.labeler.quality.quality_positions`), never one item twice. Running
    it again adds only what is missing (after more live items were assigned, say).
    """
    settings = read_settings(con)
    if settings.rate <= 0 and settings.qualify_n <= 0:
        return {}
    items = con.execute("SELECT answer_id, kind FROM quality_items ORDER BY answer_id").fetchall()
    if not items:
        return {}
    ids = [int(r) for (r,) in con.execute(
        "SELECT rater_id FROM raters WHERE role = 'rater' AND revoked_at IS NULL"
        + ("" if rater_ids is None else " AND rater_id IN (SELECT unnest($1::INTEGER[]))") + " ORDER BY rater_id",
        [] if rater_ids is None else [[int(r) for r in rater_ids]],
    ).fetchall()]
    kinds = {str(a): str(k) for a, k in items}
    added: dict[int, int] = {}
    rows: list[list[Any]] = []
    for rater_id in ids:
        new = _plan_rater(con, rater_id, kinds, settings)
        if new:
            rows += new
            added[rater_id] = len(new)
    insert_rows(con, "assignments",
                ("rater_id", "kind", "answer_id", "answer_b_id", "queue_pos", "rubric_id", "rubric_version",
                 "design_id", "is_overlap"), rows, id_from=("assignment_id", "seq_assignment"))
    return added


def _plan_rater(
    con: duckdb.DuckDBPyConnection, rater_id: int, kinds: dict[str, str], settings: QualitySettings
) -> list[list[Any]]:
    """The new quality assignments of one rater (rows for ``assignments``)."""
    have = con.execute(
        "SELECT answer_id, queue_pos, rubric_id, rubric_version FROM assignments"
        " WHERE rater_id = ? AND kind = 'score' ORDER BY queue_pos, assignment_id",
        [rater_id],
    ).fetchall()
    live = [r for r in have if str(r[0]) not in kinds]
    taken = {str(r[0]) for r in have if str(r[0]) in kinds}
    gold_taken = sum(1 for a in taken if kinds[a] == "gold")
    qualify_n = min(settings.qualify_n, sum(1 for k in kinds.values() if k == "gold"))
    wanted = qualify_n + round(settings.rate * len(live))
    if wanted <= len(taken):
        return []
    rng = rater_rng(settings.seed, rater_id, f"quality:{len(taken)}")
    free_gold = sorted(a for a, k in kinds.items() if k == "gold" and a not in taken)
    rng.shuffle(free_gold)
    n_front = min(max(qualify_n - gold_taken, 0), len(free_gold), wanted - len(taken))
    front_ids = free_gold[:n_front]
    rest = sorted(a for a in kinds if a not in taken and a not in front_ids)
    rng.shuffle(rest)
    spread_ids = rest[: max(wanted - len(taken) - n_front, 0)] if live else []
    front, spread = quality_positions(
        [int(r[1]) for r in live], len(spread_ids), n_front, rng=rng
    )
    # Before everything already queued (earlier quality items included), in the drawn order.
    lowest = min((int(r[1]) for r in have), default=1)
    front = [min(p, lowest - n_front + i) for i, p in enumerate(front)]
    # The rubric the rater's live items use, so a quality item shows the same form.
    rubric = (live[-1][2], live[-1][3]) if live else (None, None)
    return [[rater_id, "score", a, None, pos, rubric[0], rubric[1], None, False]
            for a, pos in zip(front_ids + spread_ids, front + spread, strict=True)]


class QualityMixin(StoreCore):
    """Gold items, attention checks, quality settings, pauses and the labels they are read from."""

    # -- items and settings --------------------------------------------------------------------

    def add_quality_items(self, items: Sequence[QualityItem], *, source_file: str | None = None) -> ImportSummary:
        """Store gold items and attention checks: all of them or none.

        An id stored with the same content is skipped; with other content, or an id the pool's
        answers use, it is a :class:`~judgelab.labeler.errors.ConflictError` and nothing is written.
        """
        with self.connection() as con:
            names = pool_names(con)
            pool = {str(a) for (a,) in con.execute(
                "SELECT answer_id FROM answers WHERE answer_id IN (SELECT unnest($1::VARCHAR[]))",
                [[q.answer_id for q in items]],
            ).fetchall()}
            if pool:
                raise ConflictError(
                    f"quality item id(s) {sorted(pool)[:5]} are already answers of the pool",
                    file=source_file, column="id", fix="give gold items and attention checks ids of their own.",
                )
            stored = {str(r[0]): tuple(r[1:]) for r in con.execute(
                "SELECT answer_id, kind, prompt, text, low, high, explanation FROM quality_items").fetchall()}
            rows = []
            same = 0
            for q in items:
                content = (q.kind, q.prompt, q.text, q.low, q.high, q.explanation)
                if q.answer_id in stored:
                    if stored[q.answer_id] != content:
                        raise ConflictError(
                            f"quality item {q.answer_id!r} is stored with other content", file=source_file,
                            column="id", fix="give a changed item a new id (labels of the old one keep its answer).",
                        )
                    same += 1
                    continue
                spans = merge_spans(q.text, detect_self_identifying(q.text, names))
                rows.append([q.answer_id, "i" + secrets.token_hex(8), q.kind, q.prompt, q.text,
                             len(q.text.split()), json.dumps([list(s) for s in spans]), q.low, q.high,
                             q.explanation, source_file])
            insert_rows(con, "quality_items", _ITEM_COLUMNS, rows)
            mix_in(con)
            audit_import(con, {"quality items": len(rows)}, {"quality items": same}, source_file, action="gold import")
        return ImportSummary(added={"quality items": len(rows)}, unchanged={"quality items": same})

    def quality_items(self) -> pd.DataFrame:
        """Every gold item and attention check: ``answer_id, kind, prompt, text, n_words, low, high, explanation``."""
        return self.query("SELECT answer_id, kind, prompt, text, n_words, low, high, explanation"
                          " FROM quality_items ORDER BY kind, answer_id")

    def quality_settings(self) -> QualitySettings:
        """The project's quality settings."""
        with self.connection() as con:
            return read_settings(con)

    def set_quality_settings(self, settings: QualitySettings) -> dict[int, int]:
        """Store the settings and mix quality items into every queue accordingly; returns items added per rater."""
        with self.connection() as con:
            # One entry for the change, naming only the settings whose value it changes.
            was = read_settings(con).stored()
            changed = {k: v for k, v in settings.stored().items() if was.get(k) != v}
            if changed:
                audit(con, "setting", SCOPE, value=changed, was={k: was.get(k) for k in changed})
            for key, value in settings.stored().items():
                write_setting(con, SCOPE, key, value)
            return mix_in(con)

    def mix_quality(self) -> dict[int, int]:
        """Mix quality items into every rater's queue as the settings ask (only what is missing)."""
        with self.connection() as con:
            return mix_in(con)

    # -- holds ---------------------------------------------------------------------------------

    def _rater_row(self, con: duckdb.DuckDBPyConnection, name: str) -> int:
        found = rater_named(con, name)
        if found is None:
            raise InputError(f"no rater named {name!r}", fix="see `judgelab raters list`.")
        return found

    def pause_rater(self, name: str, *, reason: str = "", exclude_labels: bool = False) -> None:
        """Hold back a rater's live items; nothing they labelled is deleted.

        Args:
            name: The rater.
            reason: Shown to the admin (not to the rater).
            exclude_labels: Leave the rater's labels out of calibration while the pause lasts.
        """
        with self.connection() as con:
            rater_id = self._rater_row(con, name)
            con.execute("INSERT INTO rater_holds (rater_id, action, exclude_labels, reason) VALUES (?, 'pause', ?, ?)",
                        [rater_id, bool(exclude_labels), reason])
            audit(con, "pause", name, reason=reason or None, exclude_labels=exclude_labels or None)

    def resume_rater(self, name: str) -> None:
        """Give a paused rater their live items back (their labels count again)."""
        with self.connection() as con:
            rater_id = self._rater_row(con, name)
            con.execute("INSERT INTO rater_holds (rater_id, action) VALUES (?, 'resume')", [rater_id])
            audit(con, "resume", name)

    def rater_hold(self, rater_id: int) -> RaterHold | None:
        """Why the rater's live items are held back, or ``None`` (what the rater's page says)."""
        with self.connection() as con:
            return rater_hold(con, rater_id)

    def rater_holds(self, rater_ids: Sequence[int]) -> dict[int, RaterHold | None]:
        """:meth:`rater_hold` of each of ``rater_ids``, read at once (the admin's quality table)."""
        with self.connection() as con:
            return rater_holds(con, rater_ids)

    def rater_pauses(self) -> pd.DataFrame:
        """Each rater's newest pause or resume: ``rater_id, action, exclude_labels, reason, created_at``."""
        return self.query(
            "SELECT h.rater_id, h.action, h.exclude_labels, h.reason, h.created_at FROM rater_holds h"
            " WHERE NOT EXISTS (SELECT 1 FROM rater_holds n WHERE n.rater_id = h.rater_id AND n.hold_id > h.hold_id)"
            " ORDER BY h.rater_id"
        )

    # -- what quality is read from -------------------------------------------------------------

    def quality_labels(self) -> pd.DataFrame:
        """Every rater's current label of a quality item.

        Returns:
            ``label_id, rater_id, rater_name, answer_id, kind, low, high, overall, flag_reason,
            seconds, n_words, created_at``.
        """
        return self.query(
            "SELECT l.label_id, l.rater_id, l.rater_name, l.answer_id, q.kind, q.low, q.high, l.overall,"
            " l.flag_reason, l.seconds, q.n_words, l.created_at"
            " FROM labels l JOIN quality_items q USING (answer_id)"
            " WHERE l.source <> 'adjudicated' AND NOT EXISTS (SELECT 1 FROM labels s WHERE s.supersedes = l.label_id)"
            " ORDER BY l.rater_id, l.label_id"
        )

    def label_speeds(self) -> pd.DataFrame:
        """Every current rater label with its active seconds and its answer's length (for the too-fast flag).

        Returns:
            ``label_id, rater_id, answer_id, seconds, n_words, quality`` (the quality item's kind,
            ``None`` for a live answer).
        """
        return self.query(
            "SELECT l.label_id, l.rater_id, l.answer_id, l.seconds, coalesce(a.n_words, q.n_words) AS n_words,"
            " q.kind AS quality"
            " FROM labels l LEFT JOIN answers a USING (answer_id) LEFT JOIN quality_items q USING (answer_id)"
            " WHERE l.source <> 'adjudicated' AND NOT EXISTS (SELECT 1 FROM labels s WHERE s.supersedes = l.label_id)"
            " ORDER BY l.label_id"
        )

    def quality_feedback(self, rater_id: int, label_id: int) -> str | None:
        """In training mode, what a rater is told after submitting a quality item; else ``None``.

        ``None`` for a live answer and in silent mode, so nothing reaches the browser that
        tells a quality item apart.
        """
        with self.connection() as con:
            if read_settings(con).mode != "training":
                return None
            row = con.execute(
                "SELECT l.overall, q.low, q.high, q.explanation, q.kind FROM labels l JOIN quality_items q"
                " USING (answer_id) WHERE l.label_id = ? AND l.rater_id = ?",
                [int(label_id), int(rater_id)],
            ).fetchone()
        if row is None:
            return None
        overall, low, high, why, kind = row
        expected = f"{low:g}" if low == high else f"{low:g} to {high:g}"
        gave = "no score" if overall is None else f"{overall:g}"
        verdict = "Right" if within(overall, low, high) else "Not quite"
        what = "an attention check" if kind == "attention" else "a training item"
        return (f"{verdict}: that was {what}. The expected score was {expected}; you gave {gave}."
                + (f" {why}" if why else ""))
