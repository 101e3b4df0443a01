"""The Message Batches of judge runs: one row per batch, one per call in it (migration 011).

A batch is recorded before it is created (:meth:`BatchMixin.plan_run_batch`: its calls and the
moment of the intent), its API id when the API has answered (:meth:`BatchMixin.set_batch_id`)
and its collection when its results are stored (:meth:`BatchMixin.mark_batch_collected`). A
run that died in between finds every intent here, and the runner looks for the batch upstream
before it would create another.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from judgelab.labeler.store._bulk import insert_rows
from judgelab.labeler.store._core import StoreCore

__all__ = ["BatchMixin"]


class BatchMixin(StoreCore):
    """Write-ahead records of the Message Batches a judge run submits."""

    def plan_run_batch(
        self, run_id: str, custom_ids: Sequence[str], *, n_bytes: int = 0
    ) -> tuple[int, datetime]:
        """Record the intent to submit a batch of ``custom_ids``, before it is created.

        Args:
            run_id: The run.
            custom_ids: The batch's custom ids (one per request).
            n_bytes: The size of the request body, for the record.

        Returns:
            ``(batch_no, intent_at)``: the batch's number within the run and the moment of the
            intent (naive UTC); a batch created for it was created after that moment.
        """
        intent_at = datetime.now(UTC).replace(tzinfo=None)
        with self.connection() as con:
            row = con.execute(
                "SELECT coalesce(max(batch_no), 0) + 1 FROM judge_batches WHERE run_id = ?", [run_id]
            ).fetchone()
            batch_no = int(row[0]) if row else 1
            con.execute(
                "INSERT INTO judge_batches (run_id, batch_no, n_requests, bytes, intent_at)"
                " VALUES (?, ?, ?, ?, ?)",
                [run_id, batch_no, len(custom_ids), int(n_bytes), intent_at],
            )
            insert_rows(
                con, "judge_batch_calls", ("run_id", "batch_no", "custom_id"),
                [(run_id, batch_no, cid) for cid in custom_ids],
            )
        return batch_no, intent_at

    def set_batch_id(self, run_id: str, batch_no: int, batch_id: str) -> None:
        """Record the API's id of a planned batch (it exists upstream from now on)."""
        with self.connection() as con:
            con.execute(
                "UPDATE judge_batches SET batch_id = ?, submitted_at = ? WHERE run_id = ? AND batch_no = ?",
                [batch_id, datetime.now(UTC).replace(tzinfo=None), run_id, int(batch_no)],
            )

    def drop_batch_intent(self, run_id: str, batch_no: int) -> None:
        """Forget a planned batch the API never created (its calls go into a new batch)."""
        with self.connection() as con:
            con.execute(
                "DELETE FROM judge_batch_calls WHERE run_id = ? AND batch_no = ?", [run_id, int(batch_no)]
            )
            con.execute(
                "DELETE FROM judge_batches WHERE run_id = ? AND batch_no = ? AND batch_id IS NULL",
                [run_id, int(batch_no)],
            )

    def mark_batch_collected(self, run_id: str, batch_no: int) -> None:
        """Record that a batch's results are stored."""
        with self.connection() as con:
            con.execute(
                "UPDATE judge_batches SET collected_at = ? WHERE run_id = ? AND batch_no = ?",
                [datetime.now(UTC).replace(tzinfo=None), run_id, int(batch_no)],
            )

    def run_batches(self, run_id: str) -> list[dict[str, Any]]:
        """A run's batches in order, each with its ``custom_ids``.

        Returns:
            Dicts with ``batch_no``, ``batch_id`` (``None`` while only intended),
            ``n_requests``, ``bytes``, ``intent_at``, ``submitted_at``, ``collected_at``,
            ``collected`` (bool) and ``custom_ids`` (list).
        """
        with self.connection() as con:
            batches = con.execute(
                "SELECT batch_no, batch_id, n_requests, bytes, intent_at, submitted_at, collected_at"
                " FROM judge_batches WHERE run_id = ? ORDER BY batch_no",
                [run_id],
            ).fetchall()
            calls = con.execute(
                "SELECT batch_no, custom_id FROM judge_batch_calls WHERE run_id = ? ORDER BY batch_no, custom_id",
                [run_id],
            ).fetchall()
        ids: dict[int, list[str]] = {}
        for batch_no, custom_id in calls:
            ids.setdefault(int(batch_no), []).append(str(custom_id))
        names = ("batch_no", "batch_id", "n_requests", "bytes", "intent_at", "submitted_at", "collected_at")
        out = []
        for values in batches:
            row = dict(zip(names, values, strict=True))
            row["collected"] = row["collected_at"] is not None
            row["custom_ids"] = ids.get(int(row["batch_no"]), [])
            out.append(row)
        return out

    def known_batch_ids(self) -> set[str]:
        """Every batch id this database has recorded (a batch found upstream is never adopted twice).

        The judge runs' batches, and the padding rewrites' batches (settings of scope
        ``padding_batch``, their ``:intent`` entries aside).
        """
        with self.connection() as con:
            rows = con.execute(
                "SELECT batch_id FROM judge_batches WHERE batch_id IS NOT NULL"
                " UNION SELECT value FROM settings WHERE scope = 'padding_batch' AND key NOT LIKE '%:intent'"
            ).fetchall()
        return {str(r[0]) for r in rows}
