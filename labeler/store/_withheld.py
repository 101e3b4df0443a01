"""Answers withheld from raters because they say who wrote them (migration 019, issue 54).

A list of rules (:mod:`judgelab.labeler.blinding`) always trails what people and models write, so two more
lines of defence sit behind it: a rater's own flag (the Rate page's W key) and the judge's screen
(``judgelab screen``, :mod:`judgelab.calibration.screen`). Either one *withholds* the answer. The rules this
module keeps:

* **Append-only.** ``author_flags`` holds one row per event; the newest row of an answer is its
  state (:data:`AUTHOR_STATE_SQL`): ``rater`` or ``screen`` withheld, ``mask`` shown with the
  admin's text, ``clear`` back as it was.
* **Never dealt again.** A withheld answer is dealt to no rater (``assign_k`` leaves it out,
  ``claim_next`` never picks it) and is hidden from every queue where it is still to do
  (:func:`hidden_in_queue`). Those pending assignments are *parked*, not revoked: they still count
  towards the answer's k (so nobody else is dealt it meanwhile) and come back to the same raters
  when the admin masks or clears the answer. A rater who already labelled it keeps it in their
  queue (they have read it; their history stays whole).
* **Set apart, not dropped.** Calibration leaves out the labels given on an answer that is
  withheld, or given before its mask, and reports how many (:data:`REVEALS_AUTHOR_SQL`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import duckdb
import pandas as pd

from judgelab.labeler.errors import InputError
from judgelab.labeler.store._audit import audit
from judgelab.labeler.store._core import StoreCore, check_comment
from judgelab.labeler.store._pool import blind_text

__all__ = [
    "AUTHOR_STATE_SQL",
    "REVEALS_AUTHOR_SQL",
    "SCREEN_RUBRIC_ID",
    "WITHHELD_SQL",
    "ScreenFigures",
    "WithheldMixin",
    "hidden_in_queue",
    "mask_of",
    "withheld_among",
]

Row = TypeVar("Row", bound=tuple[Any, ...])

#: The newest event per answer: ``answer_id, action, created_at``.
AUTHOR_STATE_SQL = (
    "SELECT f.answer_id, f.action, f.created_at FROM (SELECT answer_id, action, created_at,"
    "  row_number() OVER (PARTITION BY answer_id ORDER BY flag_id DESC) AS rn FROM author_flags) f"
    " WHERE f.rn = 1"
)

#: Ids of the answers withheld now (their newest event is a rater's flag or the screen's).
WITHHELD_SQL = f"SELECT s.answer_id FROM ({AUTHOR_STATE_SQL}) s WHERE s.action IN ('rater', 'screen')"

#: Whether label ``l`` was given on an answer known to reveal its author: withheld now, or masked
#: after the label (the rater read the unmasked text). ``fs`` is :data:`AUTHOR_STATE_SQL` joined on
#: the label's answer; a cleared answer (the admin found nothing) reveals nothing.
REVEALS_AUTHOR_SQL = (
    "coalesce(fs.action IN ('rater', 'screen') OR (fs.action = 'mask' AND l.created_at < fs.created_at), false)"
)

#: What a rater's flag says when the rater wrote no note (the flag label's reason, the admin's list).
RATER_FLAG_REASON = "says who wrote it"
#: The rubric id of ``judgelab screen``'s runs (:mod:`judgelab.calibration.screen`): a screen is a judge run
#: whose verdicts are about the answer's author, never a score, so no report picks it by default.
SCREEN_RUBRIC_ID = "author-screen"


@dataclass(frozen=True)
class ScreenFigures:
    """The screen's figures for the admin's Overview (``judgelab screen``).

    Attributes:
        screened: Answers the screen has a verdict or a parse failure for (any run).
        flagged: Of those, answers the screen read as revealing their author.
        parse_failures: Answers whose newest screen reply did not parse (no verdict).
        cleared: Flagged answers the admin has cleared since (found to reveal nothing).
        masked: Flagged answers the admin has masked since.
        withheld: Answers withheld now, by the screen or by raters.
        cost_usd: What the screen's calls cost (``None``: no call recorded a cost).
    """

    screened: int
    flagged: int
    parse_failures: int
    cleared: int
    masked: int
    withheld: int
    cost_usd: float | None


def withheld_among(con: duckdb.DuckDBPyConnection, answer_ids: Sequence[str]) -> set[str]:
    """Which of ``answer_ids`` are withheld now."""
    if not answer_ids:
        return set()
    return {str(a) for (a,) in con.execute(
        f"SELECT answer_id FROM ({WITHHELD_SQL}) w WHERE answer_id IN (SELECT unnest($1::VARCHAR[]))",
        [sorted({str(a) for a in answer_ids})],
    ).fetchall()}


def hidden_in_queue(con: duckdb.DuckDBPyConnection, rows: list[Row]) -> list[Row]:
    """A rater's queue rows without the items still to do whose answer (or either answer) is withheld.

    ``rows`` are :meth:`judgelab.labeler.store._labels.LabelMixin._queue`'s: answer id second, the second
    answer third, the rater's current row's id fourth (``None``: not done).
    """
    ids = [str(r[i]) for r in rows for i in (1, 2) if r[i] is not None]
    hidden = withheld_among(con, ids)
    if not hidden:
        return rows
    return [r for r in rows if r[3] is not None or not ({str(r[1]), str(r[2])} & hidden)]


def mask_of(con: duckdb.DuckDBPyConnection, answer_id: str) -> str | None:
    """The admin's text for ``answer_id`` when its newest event is a mask (``None``: not masked)."""
    row = con.execute(
        "SELECT action, shown_text FROM author_flags WHERE answer_id = ? ORDER BY flag_id DESC LIMIT 1",
        [answer_id],
    ).fetchone()
    return None if row is None or row[0] != "mask" else str(row[1])


class WithheldMixin(StoreCore):
    """The admin's list of withheld answers, masking and clearing them, and the screen's records."""

    def withheld_answers(self, *, every: bool = False) -> pd.DataFrame:
        """The answers withheld now (every answer ever flagged when ``every``), for the admin.

        Returns:
            One row per flag: ``answer_id, task_id, family, model, state`` (``withheld``, ``masked``
            or ``cleared``), ``action`` (``rater`` or ``screen``: who flagged), ``by_name`` (the
            rater, or the screen's judge run), ``reason``, ``flagged_at``, ``text`` (as stored) and
            ``shown_text`` (the admin's mask, if any), newest flag first.
        """
        where = "" if every else " WHERE s.action IN ('rater', 'screen')"
        return self.query(
            "SELECT f.answer_id, a.task_id, a.family, a.model,"
            " CASE s.action WHEN 'mask' THEN 'masked' WHEN 'clear' THEN 'cleared' ELSE 'withheld' END AS state,"
            " f.action, f.by_name, f.reason, f.created_at AS flagged_at, a.text,"
            " (SELECT m.shown_text FROM author_flags m WHERE m.answer_id = f.answer_id AND m.action = 'mask'"
            "  ORDER BY m.flag_id DESC LIMIT 1) AS shown_text"
            f" FROM author_flags f JOIN ({AUTHOR_STATE_SQL}) s ON s.answer_id = f.answer_id"
            " JOIN answers a ON a.answer_id = f.answer_id"
            f"{where}{' AND' if where else ' WHERE'} f.action IN ('rater', 'screen')"
            " ORDER BY f.created_at DESC, f.flag_id DESC"
        )

    def mask_answer(self, answer_id: str, text: str, *, admin: str) -> None:
        """Show raters ``text`` instead of the answer's own from now on; the answer goes back to the queues.

        The text is blinded like any answer's (the rules still read it). Labels given before the mask
        stay set apart by calibration.

        Raises:
            InputError: An unknown answer, or an empty text.
        """
        if not text.strip():
            raise InputError("the masked text is empty", fix="write the text raters should read, or clear the flag.")
        self._decide(answer_id, "mask", admin=admin, text=text)

    def clear_answer(self, answer_id: str, *, admin: str, reason: str = "") -> None:
        """The admin found nothing that unblinds: the answer goes back to the queues as it is.

        Raises:
            InputError: An unknown answer.
        """
        self._decide(answer_id, "clear", admin=admin, reason=reason)

    def _decide(self, answer_id: str, action: str, *, admin: str, text: str | None = None, reason: str = "") -> None:
        check_comment(reason, "reason")
        with self.connection() as con:
            if con.execute("SELECT 1 FROM answers WHERE answer_id = ?", [answer_id]).fetchone() is None:
                raise InputError(f"answer {answer_id!r} is not in the database", fix="pick one from the list.")
            con.execute(
                "INSERT INTO author_flags (answer_id, action, by_name, reason, shown_text) VALUES (?, ?, ?, ?, ?)",
                [answer_id, action, admin, reason, text],
            )
            audit(con, action, answer_id, reason=reason or None, by=admin)

    def shown_mask(self, answer_id: str) -> str | None:
        """The text raters see of a masked answer, blinded (``None``: not masked)."""
        with self.connection() as con:
            text = mask_of(con, answer_id)
            return None if text is None else blind_text(con, text, "[]")[0]

    # -- the screen (judgelab.calibration.screen) --------------------------------------------------

    def screen_readings(self, run_id: str) -> pd.DataFrame:
        """A screen run's newest reply per answer: ``answer_id, value, parse_error, error, raw, cost_usd``."""
        return self.query(
            "SELECT j.answer_id, j.value, j.parse_error, j.error, j.raw, j.cost_usd FROM judgements j"
            " WHERE j.run_id = ? AND NOT EXISTS (SELECT 1 FROM judgements n WHERE n.run_id = j.run_id"
            "  AND n.call_id = j.call_id AND n.judgement_id > j.judgement_id)"
            " ORDER BY j.answer_id",
            [run_id],
        )

    def record_screen(
        self, run_id: str, rows: Sequence[tuple[str, bool | None, str, str | None, float | None]], *, judge: str
    ) -> int:
        """Store a screen run's readings and withhold the answers it flagged, in one unit of work.

        Args:
            run_id: The judge run the readings come from.
            rows: ``(answer_id, reveals, reason, parse_error, cost_usd)`` per answer; ``reveals`` is
                ``None`` for a reply that did not parse (recorded and counted, never a verdict).
            judge: Names the screen in the admin's list (e.g. the judge model).

        Returns:
            How many answers became withheld (flagged, not yet withheld, not decided by an admin).
        """
        with self.connection() as con:
            con.execute("DELETE FROM screen_verdicts WHERE run_id = ?", [run_id])
            if rows:
                con.executemany(
                    "INSERT INTO screen_verdicts (run_id, answer_id, reveals, reason, parse_error, cost_usd)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    [[run_id, a, r, reason, err, cost] for a, r, reason, err, cost in rows],
                )
            made = con.execute(
                "INSERT INTO author_flags (answer_id, action, by_name, reason, run_id)"
                " SELECT v.answer_id, 'screen', ?, v.reason, v.run_id FROM screen_verdicts v"
                " WHERE v.run_id = ? AND v.reveals"
                f" AND v.answer_id NOT IN ({WITHHELD_SQL})"
                " AND v.answer_id NOT IN (SELECT answer_id FROM author_flags WHERE action IN ('mask', 'clear'))"
                " RETURNING answer_id",
                [f"screen ({judge}, run {run_id})", run_id],
            ).fetchall()
            if made:
                audit(con, "withhold", f"run {run_id}", answers=sorted(str(a) for (a,) in made), judge=judge)
        return len(made)

    def screen_figures(self) -> ScreenFigures:
        """The screen's figures over every run (each answer's newest reading counts)."""
        with self.connection() as con:
            row = con.execute(
                "WITH newest AS (SELECT answer_id, reveals, parse_error, row_number() OVER"
                "  (PARTITION BY answer_id ORDER BY (reveals IS NOT NULL) DESC, created_at DESC) AS rn"
                "  FROM screen_verdicts)"
                " SELECT count(*), count(*) FILTER (WHERE reveals),"
                "  count(*) FILTER (WHERE reveals IS NULL)"
                " FROM newest WHERE rn = 1"
            ).fetchone()
            states = dict(con.execute(
                f"SELECT s.action, count(*) FROM ({AUTHOR_STATE_SQL}) s"
                " WHERE s.answer_id IN (SELECT answer_id FROM author_flags WHERE action = 'screen')"
                " GROUP BY s.action"
            ).fetchall())
            withheld = con.execute(f"SELECT count(*) FROM ({WITHHELD_SQL}) w").fetchone()
            cost = con.execute("SELECT sum(cost_usd) FROM screen_verdicts").fetchone()
        assert row is not None and withheld is not None and cost is not None
        return ScreenFigures(
            screened=int(row[0]), flagged=int(row[1]), parse_failures=int(row[2]),
            cleared=int(states.get("clear", 0)), masked=int(states.get("mask", 0)), withheld=int(withheld[0]),
            cost_usd=None if cost[0] is None else float(cost[0]),
        )
