"""Stored hand-label sample designs, the reads a design needs, and applying one to raters.

A design (see :mod:`calibration.design`) is saved as one ``designs`` row (its inputs and its
expected precision and hours, as JSON) and one ``design_items`` row per sampled answer with its
stratum, inclusion probability, weight (1/π) and number of raters. Applying it appends ``score``
assignments to the raters' queues (``queue_pos`` is 0-based within a rater's queue, lower
first; new rows go after the rater's existing positions) and stamps ``designs.applied_at``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from labeler.errors import ConflictError, InputError
from labeler.store._bulk import registered
from labeler.store._core import StoreCore

# Arms of a probe that present the answer as it is: their scores are the judge's plain score.
_PLAIN_ARMS = ("original", "control", "baseline", "none")


class DesignMixin(StoreCore):
    """Saves designs and their items, reads what a design is planned from, applies designs."""

    # -- what a design is planned from ----------------------------------------------------------

    def judge_run_info(self, run_id: str | None = None) -> dict[str, Any] | None:
        """A judge run's id, model, family and rubric.

        Args:
            run_id: The run; ``None`` takes the newest run that has parsed pointwise scores.

        Returns:
            ``{"run_id", "model", "family", "rubric_id", "rubric_version"}``, or ``None`` when
            ``run_id`` is ``None`` and no run has pointwise scores.

        Raises:
            InputError: If ``run_id`` names no stored run.
        """
        with self.connection() as con:
            if run_id is None:
                row = con.execute(
                    "SELECT r.run_id, r.model, r.family, r.rubric_id, r.rubric_version"
                    " FROM judge_runs r WHERE EXISTS (SELECT 1 FROM judgements j"
                    "  WHERE j.run_id = r.run_id AND j.kind = 'pointwise' AND j.value IS NOT NULL)"
                    " ORDER BY r.created_at DESC, r.run_id DESC LIMIT 1"
                ).fetchone()
                if row is None:
                    return None
            else:
                row = con.execute(
                    "SELECT run_id, model, family, rubric_id, rubric_version FROM judge_runs"
                    " WHERE run_id = ?",
                    [run_id],
                ).fetchone()
                if row is None:
                    known = [r[0] for r in con.execute(
                        "SELECT run_id FROM judge_runs ORDER BY created_at DESC LIMIT 5").fetchall()]
                    raise InputError(
                        f"no judge run {run_id!r}",
                        fix=("use one of " + ", ".join(repr(k) for k in known) + ".") if known
                        else "run the judge first, or import judgements.",
                    )
        keys = ("run_id", "model", "family", "rubric_id", "rubric_version")
        return dict(zip(keys, row, strict=True))

    def judge_scores(self, run_id: str | None = None) -> pd.DataFrame:
        """The latest parsed pointwise score per answer in one judge run.

        Scores made inside a probe count only from an arm that shows the answer as it is
        (``original``, ``control``, ``baseline``, ``none``) or has no arm: a padded or
        bylined presentation is not the judge's score of the answer.

        Args:
            run_id: The run; ``None`` takes the newest run with pointwise scores.

        Returns:
            Columns ``answer_id``, ``value``, ``passed``, ``run_id`` (empty when there is no run).
        """
        info = self.judge_run_info(run_id)
        if info is None:
            return pd.DataFrame(
                {"answer_id": pd.Series(dtype=str), "value": pd.Series(dtype=float),
                 "passed": pd.Series(dtype="boolean"), "run_id": pd.Series(dtype=str)}
            )
        marks = ", ".join("?" for _ in _PLAIN_ARMS)
        return self.query(
            "SELECT answer_id, value, passed, run_id FROM ("
            " SELECT answer_id, value, passed, run_id, row_number() OVER ("
            "   PARTITION BY answer_id ORDER BY (probe IS NULL) DESC, created_at DESC,"
            "   judgement_id DESC) AS k"
            " FROM judgements WHERE run_id = ? AND kind = 'pointwise' AND value IS NOT NULL"
            f"  AND answer_id IS NOT NULL AND (probe IS NULL OR arm IS NULL OR arm IN ({marks}))"
            ") WHERE k = 1 ORDER BY answer_id",
            [info["run_id"], *_PLAIN_ARMS],
        )

    def human_verdicts(self) -> pd.DataFrame:
        """Per answer, the mean pass verdict of its current human labels (the design's pilot).

        A label is current when no later row supersedes it; flagged (unrateable) labels and
        labels without a pass verdict do not count.

        Returns:
            Columns ``answer_id``, ``n_labels``, ``human_pass`` (a share in [0, 1]).
        """
        return self.query(
            "SELECT answer_id, count(*) AS n_labels,"
            " avg(CASE WHEN passed THEN 1.0 ELSE 0.0 END) AS human_pass"
            " FROM labels l WHERE passed IS NOT NULL AND flag_reason IS NULL AND source <> 'adjudicated'"
            " AND NOT EXISTS (SELECT 1 FROM labels s WHERE s.supersedes = l.label_id)"
            " GROUP BY answer_id ORDER BY answer_id"
        )

    # -- designs ---------------------------------------------------------------------------

    def save_design(
        self,
        design_id: str,
        params: dict[str, Any],
        summary: dict[str, Any],
        items: pd.DataFrame,
    ) -> bool:
        """Store a design and its sampled answers, all or nothing.

        Args:
            design_id: The design's id (a content hash, so the same design saves to one id).
            params: Its inputs (JSON-ready).
            summary: Its expected precision and hours (JSON-ready).
            items: One row per sampled answer with ``answer_id``, ``stratum``,
                ``inclusion_prob``, ``weight``, ``n_raters``.

        Returns:
            ``True`` if written, ``False`` if the same design was stored already.

        Raises:
            ConflictError: If ``design_id`` is stored with other answers.
            InputError: If an item names an answer not in the database.
        """
        cols = ["answer_id", "stratum", "inclusion_prob", "weight", "n_raters"]
        rows = items[cols].copy()
        rows.insert(0, "design_id", design_id)
        rows["n_raters"] = rows["n_raters"].astype("int64")
        with self.connection() as con:
            have = con.execute(
                "SELECT answer_id FROM design_items WHERE design_id = ?", [design_id]
            ).fetchall()
            if have:
                if sorted(r[0] for r in have) != sorted(rows["answer_id"]):
                    raise ConflictError(
                        f"design {design_id} is stored with different answers",
                        fix="draw the design again; ids are content hashes, so this means the "
                        "database was edited by hand.",
                    )
                return False
            with registered(con, "_design_rows", rows):
                unknown = con.execute(
                    "SELECT count(*) FROM _design_rows d"
                    " WHERE NOT EXISTS (SELECT 1 FROM answers a WHERE a.answer_id = d.answer_id)"
                ).fetchone()
                if unknown is not None and unknown[0]:
                    raise InputError(
                        f"{unknown[0]} sampled answer(s) are not in the database",
                        fix="design over the pool of this database (`judgelab design --db ...`).",
                    )
                con.execute(
                    "INSERT INTO designs (design_id, params, summary) VALUES (?, ?, ?)",
                    [design_id, json.dumps(params, default=str),
                     json.dumps(summary, default=str)],
                )
                con.execute(
                    "INSERT INTO design_items (design_id, answer_id, stratum, inclusion_prob,"
                    " weight, n_raters) SELECT design_id, answer_id, stratum, inclusion_prob,"
                    " weight, n_raters FROM _design_rows"
                )
        return True

    def designs(self) -> pd.DataFrame:
        """Every stored design, newest first, with its item count and when it was applied."""
        return self.query(
            "SELECT d.design_id, d.created_at, d.applied_at, count(i.answer_id) AS n_items,"
            " d.params, d.summary FROM designs d LEFT JOIN design_items i USING (design_id)"
            " GROUP BY ALL ORDER BY d.created_at DESC, d.design_id"
        )

    def design_record(self, design_id: str) -> dict[str, Any]:
        """A stored design's inputs, summary and state.

        Raises:
            InputError: If no design has that id.
        """
        with self.connection() as con:
            row = con.execute(
                "SELECT params, summary, created_at, applied_at FROM designs WHERE design_id = ?",
                [design_id],
            ).fetchone()
        if row is None:
            raise InputError(f"no design {design_id!r}", fix="see `judgelab design --help`.")
        return {
            "design_id": design_id,
            "params": json.loads(row[0]),
            "summary": json.loads(row[1]),
            "created_at": row[2],
            "applied_at": row[3],
        }

    def design_items(self, design_id: str) -> pd.DataFrame:
        """A design's sampled answers with task, family and weights (for weighted estimates)."""
        return self.query(
            "SELECT i.answer_id, a.task_id, a.family, i.stratum, i.inclusion_prob, i.weight,"
            " i.n_raters FROM design_items i JOIN answers a USING (answer_id)"
            " WHERE i.design_id = ? ORDER BY a.task_id, i.answer_id",
            [design_id],
        )

    def design_applied(self, design_id: str) -> bool:
        """Whether a stored design has been applied to raters."""
        with self.connection() as con:
            row = con.execute(
                "SELECT applied_at IS NOT NULL FROM designs WHERE design_id = ?", [design_id]
            ).fetchone()
        return bool(row and row[0])

    # -- applying a design ----------------------------------------------------------------------

    def design_raters(self, raters: int | Sequence[str]) -> list[int]:
        """The rater ids a design is applied to.

        Args:
            raters: Names (each must exist and not be revoked), or a count: that many active
                non-admin raters, those with the fewest assignments first.

        Raises:
            InputError: Unknown or revoked names, or fewer active raters than the count.
        """
        with self.connection() as con:
            if isinstance(raters, int):
                if raters < 1:
                    raise InputError(f"need at least one rater; got {raters}",
                                     fix="e.g. --raters 5.")
                found = con.execute(
                    "SELECT r.rater_id FROM raters r LEFT JOIN assignments a USING (rater_id)"
                    " WHERE r.revoked_at IS NULL AND r.role = 'rater'"
                    " GROUP BY r.rater_id ORDER BY count(a.assignment_id), r.rater_id"
                ).fetchall()
                if len(found) < raters:
                    raise InputError(
                        f"the design asks for {raters} raters but the database has "
                        f"{len(found)} active non-admin rater(s)",
                        fix="add raters with `judgelab raters add NAME`, or pass fewer.",
                    )
                return [int(r[0]) for r in found[:raters]]
            names = [n.strip() for n in raters if n.strip()]
            if not names:
                raise InputError("no rater names given", fix="e.g. --raters alice,bob.")
            rows = dict(con.execute(
                "SELECT name, rater_id FROM raters WHERE revoked_at IS NULL"
            ).fetchall())
        missing = [n for n in names if n not in rows]
        if missing:
            raise InputError(
                f"no active rater named {', '.join(repr(m) for m in missing)}",
                fix="see `judgelab raters list`, or add them with `judgelab raters add NAME`.",
            )
        return list(dict.fromkeys(int(rows[n]) for n in names))

    def queue_tails(
        self, rater_ids: Sequence[int], *, depth: int = 3
    ) -> dict[int, tuple[int, list[str]]]:
        """Per rater: the next free queue position and the tasks of the last ``depth`` items.

        Returns:
            ``{rater_id: (next_pos, [task_id, ...])}``, oldest task first; ``(0, [])`` for an
            empty queue.
        """
        out: dict[int, tuple[int, list[str]]] = {int(r): (0, []) for r in rater_ids}
        if not out:
            return out
        marks = ", ".join("?" for _ in out)
        with self.connection() as con:
            rows = con.execute(
                "SELECT s.rater_id, s.queue_pos, a.task_id FROM assignments s"
                " LEFT JOIN answers a ON a.answer_id = s.answer_id"
                f" WHERE s.rater_id IN ({marks}) ORDER BY s.rater_id, s.queue_pos",
                list(out),
            ).fetchall()
        by: dict[int, list[tuple[int, str]]] = {}
        for rid, pos, task in rows:
            by.setdefault(int(rid), []).append((int(pos), str(task)))
        for rid, entries in by.items():
            out[rid] = (entries[-1][0] + 1, [t for _, t in entries[-depth:]] if depth else [])
        return out

    def assigned_answers(
        self, rater_ids: Sequence[int], answer_ids: Sequence[str]
    ) -> set[tuple[int, str]]:
        """``(rater_id, answer_id)`` score assignments that already exist among these."""
        if not rater_ids or not answer_ids:
            return set()
        frame = pd.DataFrame({"answer_id": list(answer_ids)})
        marks = ", ".join("?" for _ in rater_ids)
        with self.connection() as con, registered(con, "_wanted", frame):
            rows = con.execute(
                "SELECT s.rater_id, s.answer_id FROM assignments s JOIN _wanted w"
                f" USING (answer_id) WHERE s.kind = 'score' AND s.rater_id IN ({marks})",
                [int(r) for r in rater_ids],
            ).fetchall()
        return {(int(r), str(a)) for r, a in rows}

    def add_design_assignments(
        self,
        design_id: str,
        plan: pd.DataFrame,
        *,
        rubric: tuple[str, int] | None = None,
    ) -> int:
        """Insert a design's planned ``score`` assignments and mark the design applied.

        Args:
            design_id: A stored, not yet applied design.
            plan: Rows with ``rater_id``, ``answer_id``, ``queue_pos``, ``is_overlap`` (from
                :func:`calibration.design.plan_assignments`).
            rubric: ``(rubric_id, version)`` to score against, or ``None``.

        Returns:
            Assignments inserted.

        Raises:
            InputError: If the design is not stored or was applied already.
        """
        rows = plan[["rater_id", "answer_id", "queue_pos", "is_overlap"]].copy()
        rows["rater_id"] = rows["rater_id"].astype("int64")
        rows["queue_pos"] = rows["queue_pos"].astype("int64")
        rows["is_overlap"] = rows["is_overlap"].astype(bool)
        rubric_id, rubric_version = rubric if rubric is not None else (None, None)
        with self.connection() as con:
            state = con.execute(
                "SELECT applied_at FROM designs WHERE design_id = ?", [design_id]
            ).fetchone()
            if state is None:
                raise InputError(f"no design {design_id!r} to apply",
                                 fix="save the design before applying it.")
            if state[0] is not None:
                raise InputError(f"design {design_id} was applied already",
                                 fix="draw a new design to add more assignments.")
            with registered(con, "_plan", rows):
                con.execute(
                    "INSERT INTO assignments (rater_id, kind, answer_id, queue_pos, rubric_id,"
                    " rubric_version, design_id, is_overlap)"
                    " SELECT rater_id, 'score', answer_id, queue_pos, ?, ?, ?, is_overlap"
                    " FROM _plan ORDER BY rater_id, queue_pos",
                    [rubric_id, rubric_version, design_id],
                )
            con.execute(
                "UPDATE designs SET applied_at = current_timestamp WHERE design_id = ?",
                [design_id],
            )
        return len(rows)

    def design_assignments(self, design_id: str) -> pd.DataFrame:
        """A design's assignments with rater name, task and family (analyst view)."""
        return self.query(
            "SELECT s.assignment_id, s.rater_id, r.name AS rater, s.answer_id, a.task_id,"
            " a.family, s.queue_pos, s.is_overlap FROM assignments s"
            " JOIN raters r USING (rater_id) JOIN answers a ON a.answer_id = s.answer_id"
            " WHERE s.design_id = ? ORDER BY s.rater_id, s.queue_pos",
            [design_id],
        )
