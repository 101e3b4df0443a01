"""Stored hand-label sample designs, the reads a design needs, and applying one to raters.

A design (see :mod:`judgelab.calibration.design`) is saved as one ``designs`` row (its inputs and its
expected precision and hours, as JSON) and one ``design_items`` row per sampled answer with its
stratum, inclusion probability, weight (1/π) and number of raters. Applying it appends ``score``
assignments to the raters' queues (``queue_pos`` is 0-based within a rater's queue, lower
first; new rows go after the rater's existing positions) and stamps ``designs.applied_at``.

An *active* design (:mod:`judgelab.calibration.active`, migration 010) is one ``active_designs`` row and,
per batch, an ``active_batches`` row, one ``active_draws`` row per pool answer (what was fixed
before the draw) and an ordinary design holding the answers the batch asked raters to label.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import duckdb
import pandas as pd

from judgelab.labeler.errors import ConflictError, InputError
from judgelab.labeler.models import ImportedDesigns
from judgelab.labeler.store._audit import audit, audit_import
from judgelab.labeler.store._bulk import registered
from judgelab.labeler.store._core import CURRENT_LABEL_RULE, StoreCore, plain_judgement, score_answered
from judgelab.labeler.store._pool import ImportSummary

# Each score assignment, with whether it is answered (a label of the rater's on the answer: the
# app's rows name their assignment, imported ones match on rater and answer) and whether it is
# live: answered, or held by a rater who may still answer it (not revoked). Every subquery in FROM
# here has an alias: PostgreSQL before 16 refuses one without.
_HOLDERS = (
    "SELECT *, done OR active AS live FROM ("
    " SELECT s.assignment_id, s.answer_id, s.rater_id, r.name AS rater, s.design_id, r.revoked_at IS NULL AS active,"
    f" {score_answered('s')} AS done"
    " FROM assignments s JOIN raters r USING (rater_id) WHERE s.kind = 'score') held"
)


class DesignMixin(StoreCore):
    """Saves designs and their items, reads what a design is planned from, applies designs."""

    # -- what a design is planned from ----------------------------------------------------------

    def judge_run_info(self, run_id: str | None = None) -> dict[str, Any] | None:
        """A judge run's id, model, family and rubric.

        Args:
            run_id: The run; ``None`` takes the newest run that has a parsed pointwise score of
                an answer as it is (see :meth:`judge_scores`).

        Returns:
            ``{"run_id", "model", "family", "rubric_id", "rubric_version"}``, or ``None`` when
            ``run_id`` is ``None`` and no run has such scores.

        Raises:
            InputError: If ``run_id`` names no stored run.
        """
        with self.connection() as con:
            if run_id is None:
                # A probe run that scored altered answers (padded, other formats) is not the
                # judge's score of the pool: the newest run with a plain score is.
                plain, params = plain_judgement(alias="j")
                row = con.execute(
                    "SELECT r.run_id, r.model, r.family, r.rubric_id, r.rubric_version"
                    " FROM judge_runs r WHERE EXISTS (SELECT 1 FROM judgements j"
                    "  WHERE j.run_id = r.run_id AND j.kind = 'pointwise' AND j.value IS NOT NULL"
                    f"  AND j.answer_id IS NOT NULL AND {plain})"
                    " ORDER BY r.created_at DESC, r.run_id DESC LIMIT 1",
                    params,
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
        (``original``, ``control``, ``baseline``, ``none``) or has no arm, and from a scoring
        run (``judgelab score``): a padded or bylined presentation is not the judge's score of
        the answer. A run scored in several formats gives its scores in one: the rubric's own
        scale, else ``binary``, else the commonest (as the calibration report reads them).

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
        plain, params = plain_judgement()
        return self.query(
            "WITH plain AS (SELECT * FROM judgements WHERE run_id = ? AND kind = 'pointwise'"
            f"  AND value IS NOT NULL AND answer_id IS NOT NULL AND {plain}),"
            # One format for the whole run, so scores on different scales never mix.
            " fmt AS (SELECT format FROM plain GROUP BY format ORDER BY"
            "  coalesce(format = (SELECT scale FROM rubrics WHERE rubric_id = ? AND version = ?), false) DESC,"
            "  (format = 'binary') DESC, count(*) DESC, format LIMIT 1)"
            " SELECT answer_id, value, passed, run_id FROM ("
            " SELECT answer_id, value, passed, run_id, row_number() OVER ("
            "   PARTITION BY answer_id ORDER BY (probe IS NULL) DESC, created_at DESC,"
            "   judgement_id DESC) AS k"
            " FROM plain WHERE format = (SELECT format FROM fmt)"
            ") ranked WHERE k = 1 ORDER BY answer_id",
            [info["run_id"], *params, info["rubric_id"], info["rubric_version"]],
        )

    def human_verdicts(self) -> pd.DataFrame:
        """Per answer, the mean pass verdict of its current human labels (the design's pilot).

        A label is current when no later row supersedes it; flagged (unrateable) labels and
        labels without a pass verdict do not count. An imported annotator mean weighs as its
        ``n_raters`` people.

        Returns:
            Columns ``answer_id``, ``n_labels``, ``human_pass`` (a share in [0, 1]).
        """
        return self.query(
            "SELECT answer_id, count(*) AS n_labels,"
            f" sum(CASE WHEN passed THEN {_PEOPLE} ELSE 0.0 END) / sum({_PEOPLE}) AS human_pass"
            " FROM labels l WHERE passed IS NOT NULL AND flag_reason IS NULL AND source <> 'adjudicated'"
            " AND answer_id NOT IN (SELECT answer_id FROM quality_items)"
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
            audit(con, "design", design_id, items=len(rows))
        return True

    def designs(self) -> pd.DataFrame:
        """Every stored design, newest first, with its item count and when it was applied."""
        return self.query(
            "SELECT d.design_id, d.created_at, d.applied_at, count(i.answer_id) AS n_items,"
            " d.params, d.summary FROM designs d LEFT JOIN design_items i USING (design_id)"
            " GROUP BY d.design_id, d.created_at, d.applied_at, d.params, d.summary"
            " ORDER BY d.created_at DESC, d.design_id"
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
                :func:`judgelab.calibration.design.plan_assignments`).
            rubric: ``(rubric_id, version)`` to score against, or ``None``.

        Returns:
            Assignments inserted.

        Raises:
            InputError: If the design is not stored or was applied already.
        """
        with self.connection() as con:
            state = _applied_at(con, design_id)
            if state is None:
                raise InputError(f"no design {design_id!r} to apply",
                                 fix="save the design before applying it.")
            if state[0] is not None:
                raise InputError(f"design {design_id} was applied already",
                                 fix="draw a new design to add more assignments.")
            _insert_plan(con, design_id, plan, rubric)
            con.execute(
                "UPDATE designs SET applied_at = current_timestamp WHERE design_id = ?",
                [design_id],
            )
            _audit_plan(con, design_id, plan, rubric)
        return len(plan)

    def add_reassignments(self, design_id: str, plan: pd.DataFrame, *, rubric: tuple[str, int] | None = None) -> int:
        """Add ``score`` assignments to an applied design: answers whose raters were revoked, given to others.

        Args:
            design_id: An applied design.
            plan: As :meth:`add_design_assignments`.
            rubric: As :meth:`add_design_assignments`.

        Returns:
            Assignments inserted.

        Raises:
            InputError: If the design is not stored or not applied yet.
        """
        with self.connection() as con:
            state = _applied_at(con, design_id)
            if state is None or state[0] is None:
                raise InputError(f"design {design_id!r} is not applied: nothing to reassign",
                                 fix="apply the design first.")
            _insert_plan(con, design_id, plan, rubric)
            _audit_plan(con, design_id, plan, rubric, reassigned=True)
        return len(plan)

    def score_holders(self, answer_ids: Sequence[str]) -> pd.DataFrame:
        """Every ``score`` assignment of these answers, with who holds it and whether it is done.

        Returns:
            ``assignment_id``, ``answer_id``, ``rater_id``, ``rater``, ``design_id``, ``active``
            (the rater is not revoked), ``done`` (the rater labelled or flagged the answer) and
            ``live`` (done, or the rater may still do it).
        """
        frame = pd.DataFrame({"answer_id": pd.Series(list(answer_ids), dtype=str)})
        with self.connection() as con, registered(con, "_wanted", frame):
            return con.execute(
                f"SELECT h.* FROM ({_HOLDERS}) h JOIN _wanted w USING (answer_id) ORDER BY h.answer_id, h.rater_id"
            ).df()

    def design_assignments(self, design_id: str) -> pd.DataFrame:
        """A design's assignments with rater name, task and family (analyst view)."""
        return self.query(
            "SELECT s.assignment_id, s.rater_id, r.name AS rater, s.answer_id, a.task_id,"
            " a.family, s.queue_pos, s.is_overlap FROM assignments s"
            " JOIN raters r USING (rater_id) JOIN answers a ON a.answer_id = s.answer_id"
            " WHERE s.design_id = ? ORDER BY s.rater_id, s.queue_pos",
            [design_id],
        )

    # -- active designs ----------------------------------------------------------------------------

    def judge_flips(self, run_id: str | None = None) -> pd.DataFrame:
        """Answers on which the judge disagreed with itself, by the runs of the run's model.

        An answer *flips* when its pointwise pass verdicts differ (its plain score's and the
        format study's in other formats, or repeats), or when a pairwise comparison it is in
        picks a different winner once the two answers swap places. Only readings of the answer
        as it is count: a probe arm that alters it (padded, decorated) does not.

        Args:
            run_id: The judge run whose model counts; ``None`` takes the newest run with scores.

        Returns:
            Columns ``answer_id``, ``flipped`` (true), one row per flipping answer (empty when
            there is no run).
        """
        info = self.judge_run_info(run_id)
        if info is None:
            return pd.DataFrame({"answer_id": pd.Series(dtype=str), "flipped": pd.Series(dtype=bool)})
        plain, params = plain_judgement(readings=True, alias="j")
        return self.query(
            "WITH same AS (SELECT run_id FROM judge_runs"
            "  WHERE model = (SELECT model FROM judge_runs WHERE run_id = ?)),"
            " point AS (SELECT j.answer_id FROM judgements j JOIN same USING (run_id)"
            f"  WHERE j.kind = 'pointwise' AND j.passed IS NOT NULL AND j.answer_id IS NOT NULL AND {plain}"
            "  GROUP BY j.answer_id HAVING count(DISTINCT j.passed) > 1),"
            " pairs AS (SELECT least(j.answer_id, j.answer_b_id) AS a, greatest(j.answer_id, j.answer_b_id) AS b,"
            "   CASE WHEN j.answer_id < j.answer_b_id THEN sign(j.value) ELSE -sign(j.value) END AS side"
            "  FROM judgements j JOIN same USING (run_id)"
            f"  WHERE j.kind = 'pairwise' AND j.value IS NOT NULL AND j.answer_b_id IS NOT NULL AND {plain}),"
            " flips AS (SELECT a, b FROM pairs GROUP BY a, b HAVING count(DISTINCT side) > 1)"
            " SELECT DISTINCT answer_id, true AS flipped FROM ("
            "  SELECT answer_id FROM point UNION ALL SELECT a FROM flips UNION ALL SELECT b FROM flips) either"
            " ORDER BY answer_id",
            [info["run_id"], *params, *params],
        )

    def answer_labels(self) -> pd.DataFrame:
        """Per answer, its current raters' labels: the human side of an active design's estimate.

        Returns:
            ``answer_id``, ``n_labels`` (current labels, flagged ones included), ``human_pass``
            (mean pass verdict, ``nan`` when none), ``human_score`` (mean overall score),
            ``flagged_only`` (every current label flags the answer unrateable). An imported
            annotator mean weighs as its ``n_raters`` people in both means.
        """
        verdict = "CASE WHEN passed IS NULL OR flag_reason IS NOT NULL THEN NULL WHEN passed THEN 1.0 ELSE 0.0 END"
        score = "CASE WHEN flag_reason IS NULL THEN overall END"
        return self.query(
            "SELECT answer_id, count(*) AS n_labels,"
            f" sum(({verdict}) * {_PEOPLE}) / sum(CASE WHEN ({verdict}) IS NOT NULL THEN {_PEOPLE} END) AS human_pass,"
            f" sum(({score}) * {_PEOPLE}) / sum(CASE WHEN ({score}) IS NOT NULL THEN {_PEOPLE} END) AS human_score,"
            " bool_and(flag_reason IS NOT NULL) AS flagged_only"
            f" FROM (SELECT l.* FROM labels l {CURRENT_LABEL_RULE}) cur GROUP BY answer_id ORDER BY answer_id"
        )

    def rater_labels(self, answer_ids: Iterable[str]) -> pd.DataFrame:
        """Each rater's current label of some answers (for the raters' variance component).

        Returns:
            ``answer_id``, ``rater_id``, ``passed`` (0/1, ``nan`` when flagged), ``overall`` and
            ``people`` (how many people the label is the mean of: 1, more for an imported
            annotator mean).
        """
        frame = pd.DataFrame({"answer_id": sorted({str(a) for a in answer_ids})})
        if frame.empty:
            return pd.DataFrame(columns=["answer_id", "rater_id", "passed", "overall", "people"])
        with self.connection() as con, registered(con, "_wanted_labels", frame):
            return con.execute(
                "SELECT l.answer_id, l.rater_id,"
                " CASE WHEN l.flag_reason IS NOT NULL OR l.passed IS NULL THEN NULL"
                "      WHEN l.passed THEN 1.0 ELSE 0.0 END AS passed,"
                " CASE WHEN l.flag_reason IS NULL THEN l.overall END AS overall,"
                " coalesce(l.n_raters, 1) AS people"
                " FROM labels l JOIN _wanted_labels w USING (answer_id)"
                f" {CURRENT_LABEL_RULE} ORDER BY l.answer_id, l.rater_id"
            ).df()

    def save_active_design(self, design_id: str, params: dict[str, Any]) -> None:
        """Store a new active design's inputs.

        Raises:
            ConflictError: If the id is taken.
        """
        with self.connection() as con:
            if _active_params(con, design_id) is not None:
                raise ConflictError(f"active design {design_id} exists already",
                                    fix="continue it with `judgelab design --active --apply`.")
            con.execute("INSERT INTO active_designs (design_id, params) VALUES (?, ?)",
                        [design_id, json.dumps(params, default=str)])
            audit(con, "design", design_id, active=True)

    def add_active_batch(
        self,
        design_id: str,
        batch: int,
        *,
        draw_id: str,
        weight: float,
        expected_labels: float,
        summary: dict[str, Any],
        draws: pd.DataFrame,
    ) -> None:
        """Store one batch: its row and, per pool answer, what was fixed before its draw.

        Args:
            design_id: The active design.
            batch: The batch number (the next one: 1 + the batches stored).
            draw_id: The ordinary design holding the batch's sampled answers (saved by the
                caller in the same unit of work).
            weight: The batch's weight, fixed before the draw.
            expected_labels: Its expected new labels.
            summary: JSON-ready facts about the batch.
            draws: One row per pool answer: ``answer_id``, ``unit``, ``inclusion_prob``,
                ``known``, ``drawn``, ``pred_pass``, ``pred_score``, ``judge_pass``,
                ``judge_score``, ``flipped``.

        Raises:
            InputError: If the design is unknown or ``batch`` is not the next number.
        """
        cols = ["answer_id", "unit", "inclusion_prob", "known", "drawn", "pred_pass", "pred_score",
                "judge_pass", "judge_score", "flipped"]
        rows = draws[cols].copy()
        rows.insert(0, "batch", int(batch))
        rows.insert(0, "design_id", design_id)
        with self.connection() as con:
            if _active_params(con, design_id) is None:
                raise InputError(f"no active design {design_id!r}", fix="start one with `judgelab design --active`.")
            row = con.execute("SELECT coalesce(max(batch), 0) FROM active_batches WHERE design_id = ?",
                              [design_id]).fetchone()
            if row is None or int(row[0]) + 1 != batch:
                raise InputError(f"batch {batch} of {design_id} is not the next one",
                                 fix="draw the next batch again from the labels so far.")
            con.execute(
                "INSERT INTO active_batches (design_id, batch, draw_id, weight, expected_labels, summary)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [design_id, int(batch), draw_id, float(weight), float(expected_labels),
                 json.dumps(summary, default=str)],
            )
            with registered(con, "_active_rows", rows):
                con.execute(f"INSERT INTO active_draws SELECT design_id, batch, {', '.join(cols)} FROM _active_rows")
            audit(con, "design", design_id, batch=int(batch), draw=draw_id)

    def active_designs(self) -> pd.DataFrame:
        """Every active design, newest first, with its batch count."""
        return self.query(
            "SELECT d.design_id, d.params, d.created_at, count(b.batch) AS n_batches"
            " FROM active_designs d LEFT JOIN active_batches b USING (design_id)"
            " GROUP BY d.design_id, d.params, d.created_at ORDER BY d.created_at DESC, d.design_id DESC"
        )

    def active_design(self, design_id: str) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
        """An active design's inputs, batches and draws.

        Returns:
            ``(params, batches, draws)``: ``batches`` has ``batch``, ``draw_id``, ``weight``,
            ``expected_labels``, ``summary`` (parsed), ``created_at``, ``assigned`` and ``done``
            (the batch's live score assignments and those answered: an unanswered assignment of a
            revoked rater is not live, nobody will answer it); ``draws`` one row per (batch,
            pool answer) with the stored columns plus ``task_id`` and ``family``.

        Raises:
            InputError: If no active design has that id.
        """
        with self.connection() as con:
            row = _active_params(con, design_id)
        if row is None:
            raise InputError(f"no active design {design_id!r}", fix="see `judgelab design --active`.")
        batches = self.query(
            "SELECT b.batch, b.draw_id, b.weight, b.expected_labels, b.summary, b.created_at,"
            " count_if(coalesce(s.live, false))::BIGINT AS assigned, count_if(coalesce(s.done, false))::BIGINT AS done"
            f" FROM active_batches b LEFT JOIN ({_HOLDERS}) s ON s.design_id = b.draw_id"
            " WHERE b.design_id = ?"
            " GROUP BY b.batch, b.draw_id, b.weight, b.expected_labels, b.summary, b.created_at ORDER BY b.batch",
            [design_id],
        )
        batches["summary"] = [json.loads(s) for s in batches["summary"]]
        draws = self.query(
            "SELECT d.*, a.task_id, a.family FROM active_draws d JOIN answers a USING (answer_id)"
            " WHERE d.design_id = ? ORDER BY d.batch, d.answer_id",
            [design_id],
        )
        return json.loads(row[0]), batches, draws

    def active_draw_ids(self) -> set[str]:
        """The ordinary designs that hold active designs' batches (``active_batches.draw_id``)."""
        with self.connection() as con:
            return {str(r[0]) for r in con.execute("SELECT draw_id FROM active_batches").fetchall()}

    # -- designs in and out of files ------------------------------------------------------------

    def design_tables(self) -> dict[str, pd.DataFrame]:
        """Every design as stored, for ``judgelab export designs``: one frame per table.

        Returns:
            ``designs``, ``items``, ``active``, ``batches`` and ``draws`` (the columns of
            :class:`judgelab.labeler.models.ImportedDesigns`, without ``where``), oldest first.
        """
        return {
            "designs": self.query("SELECT design_id, params, summary, created_at, applied_at FROM designs"
                                  " ORDER BY created_at, design_id"),
            "items": self.query(f"SELECT {', '.join(_ITEM_COLUMNS)} FROM design_items"
                                " ORDER BY design_id, answer_id"),
            "active": self.query("SELECT design_id, params, created_at FROM active_designs"
                                 " ORDER BY created_at, design_id"),
            "batches": self.query(f"SELECT {', '.join(_BATCH_COLUMNS)}, created_at FROM active_batches"
                                  " ORDER BY design_id, batch"),
            "draws": self.query(f"SELECT {', '.join(_DRAW_COLUMNS)} FROM active_draws"
                                " ORDER BY design_id, batch, answer_id"),
        }

    def add_imported_designs(self, parsed: ImportedDesigns, *, source_file: str | None = None) -> ImportSummary:
        """Store the designs of a ``designs`` file, all-or-nothing.

        A design stored already with the same content is left as it is; with other content it is
        a conflict. Every answer a design names must be in the database.

        Raises:
            InputError: An answer the database does not hold (the first, at its place in the file).
            ConflictError: A design id stored with other content.
        """
        with self.connection() as con:
            named = pd.concat([parsed.items[["answer_id", "where"]], parsed.draws[["answer_id", "where"]]],
                              ignore_index=True).drop_duplicates("answer_id").rename(columns={"where": "place"})
            named["pos"] = range(len(named))  # the file's order: the first missing answer is named
            with registered(con, "_named", named):
                # NOT EXISTS, not DuckDB's ANTI JOIN: the same statement runs on PostgreSQL.
                missing = con.execute("SELECT n.answer_id, n.place FROM _named n WHERE NOT EXISTS"
                                      " (SELECT 1 FROM answers a WHERE a.answer_id = n.answer_id)"
                                      " ORDER BY n.pos").fetchall()
            if missing:
                raise InputError(f"{len(missing)} answer id(s) are not in the database, e.g. {missing[0][0]!r}",
                                 file=source_file, column=f"{missing[0][1]}.answer_id",
                                 fix="import the answers first with `judgelab import answers FILE`.")
            new_designs = [d for d in parsed.designs.itertuples() if not self._same_design(con, parsed, d, source_file)]
            new_active = [d for d in parsed.active.itertuples() if not self._same_active(con, parsed, d, source_file)]
            for d in new_designs:
                con.execute("INSERT INTO designs (design_id, params, summary, created_at, applied_at)"
                            " VALUES (?, ?, ?, coalesce(?::TIMESTAMP, current_timestamp), ?::TIMESTAMP)",
                            [d.design_id, d.params, d.summary, d.created_at, d.applied_at])
                items = parsed.items.loc[parsed.items["design_id"] == d.design_id, list(_ITEM_COLUMNS)]
                with registered(con, "_items", items):
                    con.execute(f"INSERT INTO design_items ({', '.join(_ITEM_COLUMNS)})"
                                f" SELECT {', '.join(_ITEM_COLUMNS)} FROM _items")
            for d in new_active:
                con.execute("INSERT INTO active_designs (design_id, params, created_at)"
                            " VALUES (?, ?, coalesce(?::TIMESTAMP, current_timestamp))",
                            [d.design_id, d.params, d.created_at])
                for b in parsed.batches[parsed.batches["design_id"] == d.design_id].itertuples():
                    con.execute(f"INSERT INTO active_batches ({', '.join(_BATCH_COLUMNS)}, created_at)"
                                " VALUES (?, ?, ?, ?, ?, ?, coalesce(?::TIMESTAMP, current_timestamp))",
                                [b.design_id, b.batch, b.draw_id, b.weight, b.expected_labels, b.summary,
                                 b.created_at])
                draws = parsed.draws.loc[parsed.draws["design_id"] == d.design_id, list(_DRAW_COLUMNS)]
                with registered(con, "_draws", draws):
                    con.execute(f"INSERT INTO active_draws ({', '.join(_DRAW_COLUMNS)})"
                                f" SELECT {', '.join(_DRAW_COLUMNS)} FROM _draws")
            n_designs, n_active = len(parsed.designs), len(parsed.active)
            added = {"designs": len(new_designs), "active designs": len(new_active)}
            audit_import(con, added, {"designs": n_designs - len(new_designs),
                                      "active designs": n_active - len(new_active)}, source_file)
        return ImportSummary(
            added={k: n for k, n in added.items() if n},
            unchanged={"designs": n_designs - len(new_designs), "active designs": n_active - len(new_active)},
        )

    def _same_design(self, con: duckdb.DuckDBPyConnection, parsed: ImportedDesigns, d: Any,
                     source_file: str | None) -> bool:
        """Whether design ``d`` of the file is stored already (same content); a conflict if it differs."""
        row = con.execute("SELECT params, summary FROM designs WHERE design_id = ?", [d.design_id]).fetchone()
        if row is None:
            return False
        stored = con.execute(f"SELECT {', '.join(_ITEM_COLUMNS)} FROM design_items WHERE design_id = ?"
                             " ORDER BY answer_id", [d.design_id]).df()
        mine = parsed.items.loc[parsed.items["design_id"] == d.design_id, list(_ITEM_COLUMNS)]
        same = (json.loads(row[0]) == json.loads(d.params) and json.loads(row[1]) == json.loads(d.summary)
                and _same_rows(stored, mine, "answer_id"))
        if not same:
            raise ConflictError(f"design {d.design_id!r} is already stored with different content",
                                file=source_file, fix="import into a fresh database, or leave this design out.")
        return True

    def _same_active(self, con: duckdb.DuckDBPyConnection, parsed: ImportedDesigns, d: Any,
                     source_file: str | None) -> bool:
        """Whether active design ``d`` of the file is stored already (same content); a conflict if it differs."""
        row = _active_params(con, d.design_id)
        if row is None:
            return False
        batches = con.execute(f"SELECT {', '.join(_BATCH_COLUMNS)} FROM active_batches WHERE design_id = ?",
                              [d.design_id]).df()
        draws = con.execute(f"SELECT {', '.join(_DRAW_COLUMNS)} FROM active_draws WHERE design_id = ?",
                            [d.design_id]).df()
        mine = parsed.batches.loc[parsed.batches["design_id"] == d.design_id, list(_BATCH_COLUMNS)]
        same = (json.loads(row[0]) == json.loads(d.params)
                and _same_rows(batches.drop(columns="summary"), mine.drop(columns="summary"), "batch")
                and [json.loads(x) for x in batches.sort_values("batch")["summary"]]
                == [json.loads(x) for x in mine.sort_values("batch")["summary"]]
                and _same_rows(draws, parsed.draws.loc[parsed.draws["design_id"] == d.design_id, list(_DRAW_COLUMNS)],
                               ["batch", "answer_id"]))
        if not same:
            raise ConflictError(f"active design {d.design_id!r} is already stored with different content",
                                file=source_file, fix="import into a fresh database, or leave this design out.")
        return True


_PEOPLE = "coalesce(n_raters, 1)"
"""How many people a label's score stands for: an imported annotator mean weighs as its ``n_raters``."""

_ITEM_COLUMNS = ("design_id", "answer_id", "stratum", "inclusion_prob", "weight", "n_raters")
_BATCH_COLUMNS = ("design_id", "batch", "draw_id", "weight", "expected_labels", "summary")
_DRAW_COLUMNS = ("design_id", "batch", "answer_id", "unit", "inclusion_prob", "known", "drawn", "pred_pass",
                 "pred_score", "judge_pass", "judge_score", "flipped")


def _applied_at(con: duckdb.DuckDBPyConnection, design_id: str) -> tuple[Any] | None:
    """``(applied_at,)`` of a stored design (``applied_at`` ``None`` until applied), or ``None``: no such design."""
    return con.execute("SELECT applied_at FROM designs WHERE design_id = ?", [design_id]).fetchone()


def _active_params(con: duckdb.DuckDBPyConnection, design_id: str) -> tuple[str] | None:
    """``(params,)`` of a stored active design (its inputs as JSON), or ``None``: no such design."""
    return con.execute("SELECT params FROM active_designs WHERE design_id = ?", [design_id]).fetchone()


def _same_rows(a: pd.DataFrame, b: pd.DataFrame, key: str | list[str]) -> bool:
    """Whether two frames hold the same rows (any order; missing values equal)."""
    if len(a) != len(b):
        return False
    left = a.sort_values(key).reset_index(drop=True).astype(object)
    right = b[list(a.columns)].sort_values(key).reset_index(drop=True).astype(object)
    return bool(left.where(left.notna(), None).equals(right.where(right.notna(), None)))


def _insert_plan(
    con: duckdb.DuckDBPyConnection, design_id: str, plan: pd.DataFrame, rubric: tuple[str, int] | None
) -> None:
    """Insert a plan's ``score`` assignments (``rater_id``, ``answer_id``, ``queue_pos``, ``is_overlap``)."""
    rows = plan[["rater_id", "answer_id", "queue_pos", "is_overlap"]].copy()
    rows["rater_id"] = rows["rater_id"].astype("int64")
    rows["queue_pos"] = rows["queue_pos"].astype("int64")
    rows["is_overlap"] = rows["is_overlap"].astype(bool)
    rubric_id, rubric_version = rubric if rubric is not None else (None, None)
    with registered(con, "_plan", rows):
        con.execute(
            "INSERT INTO assignments (rater_id, kind, answer_id, queue_pos, rubric_id,"
            " rubric_version, design_id, is_overlap)"
            " SELECT rater_id, 'score', answer_id, queue_pos, ?, ?, ?, is_overlap"
            " FROM _plan ORDER BY rater_id, queue_pos",
            [rubric_id, rubric_version, design_id],
        )


def _audit_plan(con: duckdb.DuckDBPyConnection, design_id: str, plan: pd.DataFrame,
                rubric: tuple[str, int] | None, *, reassigned: bool = False) -> None:
    """Record a design's assignments (per rater, by name) in the audit trail."""
    if plan.empty:
        return
    per = plan["rater_id"].astype(int).value_counts().to_dict()
    names = dict(con.execute("SELECT rater_id, name FROM raters WHERE rater_id IN (SELECT unnest(?))",
                             [list(per)]).fetchall())
    audit(con, "assign", "score", design=design_id, items=int(plan["answer_id"].nunique()),
          added={str(names.get(r, r)): int(n) for r, n in sorted(per.items())},
          rubric=f"{rubric[0]} v{rubric[1]}" if rubric else None, reassigned=reassigned or None)
