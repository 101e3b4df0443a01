"""Read queries behind the admin pages: progress, label counts, current labels, settings.

Admins are not blind, so these frames may carry family, model and variant. Nothing
here is ever handed to a rater page.

"Done" means the rater has *some* row for the assigned item: a label (scored or
flagged unrateable) for a ``score`` assignment, a preference for a ``pair``
assignment, an audit for an ``audit`` assignment. App rows name their assignment;
imported rows match on the rater and the answer(s). A skip is not done.
"""

from __future__ import annotations

import pandas as pd

from judgelab.labeler.store._core import (
    CURRENT_LABEL_RULE,
    DEAD_SCORE_ASSIGNMENTS,
    StoreCore,
    rubric_match,
)

# Whether an assignment has been answered, per kind (see the module docstring). Rows
# written by the app name their assignment (migration 002); rows without one (imports)
# count for the same rater and item, so outside labels show as progress too. Both ways are
# tables joined to the assignments, not an EXISTS per assignment: a correlated subquery read
# every label once per assignment (88 s for the Overview at 100,000 labels; bench/size_flat.py).
# Each CTE holds a key once (UNION), so a join matches at most one row per assignment.
_DONE_CTE = """
    done_ids AS (
        SELECT assignment_id, 'score' AS kind FROM labels WHERE assignment_id IS NOT NULL
        UNION SELECT assignment_id, 'pair' FROM pair_labels WHERE assignment_id IS NOT NULL
        UNION SELECT assignment_id, 'audit' FROM padding_audits WHERE assignment_id IS NOT NULL),
    outside AS (
        SELECT 'score' AS kind, rater_id, answer_id AS x, CAST(NULL AS VARCHAR) AS y FROM labels
        WHERE assignment_id IS NULL AND source <> 'adjudicated'
        UNION SELECT 'pair', rater_id, shown_left, shown_right FROM pair_labels WHERE assignment_id IS NULL
        UNION SELECT 'pair', rater_id, shown_right, shown_left FROM pair_labels WHERE assignment_id IS NULL
        UNION SELECT 'audit', rater_id, original_id, rewrite_id FROM padding_audits WHERE assignment_id IS NULL)
"""
_DONE_JOIN = """
    LEFT JOIN done_ids d ON d.assignment_id = a.assignment_id AND d.kind = a.kind
    LEFT JOIN outside o ON o.kind = a.kind AND o.rater_id = a.rater_id AND o.x = a.answer_id
        AND (a.kind = 'score' OR o.y = a.answer_b_id)
"""

# The current label of (rater, answer, rubric version) (see CURRENT_LABEL_RULE).
_CURRENT_LABELS_SQL = f"""
    SELECT l.label_id, l.rater_id, l.rater_name, r.simulated, l.answer_id, a.task_id,
           a.family, a.variant, l.rubric_id, l.rubric_version, l.overall, l.passed,
           l.criteria, l.flag_reason, l.seconds, l.source, l.created_at, l.n_raters
    FROM labels l
    JOIN raters r ON r.rater_id = l.rater_id
    LEFT JOIN answers a ON a.answer_id = l.answer_id
    {CURRENT_LABEL_RULE}
"""


class AdminMixin(StoreCore):
    """Read-only aggregates for the admin pages."""

    def assignment_progress(self) -> pd.DataFrame:
        """Assigned and done items per rater and assignment kind.

        Returns:
            One row per (rater, kind) with at least one assignment: ``rater_id``,
            ``name``, ``role``, ``simulated``, ``active``, ``kind``, ``assigned``,
            ``done``. Raters with no assignments do not appear.
        """
        return self.query(
            f"""
            WITH {_DONE_CTE}
            SELECT r.rater_id, r.name, r.role, r.simulated, r.revoked_at IS NULL AS active,
                   a.kind, count(*)::BIGINT AS assigned,
                   count(CASE WHEN d.assignment_id IS NOT NULL OR o.rater_id IS NOT NULL THEN 1 END)::BIGINT AS done
            FROM assignments a JOIN raters r ON r.rater_id = a.rater_id
            {_DONE_JOIN}
            GROUP BY r.rater_id, r.name, r.role, r.simulated, r.revoked_at, a.kind
            ORDER BY r.rater_id, a.kind
            """
        )

    def labels_by_rater(self) -> pd.DataFrame:
        """Every rater who has a label, with how many current labels they hold.

        Returns:
            ``rater_id``, ``name``, ``role``, ``simulated``, ``active``, ``labels``
            (current labels: edits replace, they do not add) and ``flagged``
            (of those, flagged unrateable). Includes raters with no assignments,
            e.g. those who came with imported or simulated labels.
        """
        return self.query(
            f"""
            SELECT r.rater_id, r.name, r.role, r.simulated, r.revoked_at IS NULL AS active,
                   count(*)::BIGINT AS labels,
                   count_if(cur.flag_reason IS NOT NULL)::BIGINT AS flagged
            FROM ({_CURRENT_LABELS_SQL}) cur JOIN raters r ON r.rater_id = cur.rater_id
            GROUP BY r.rater_id, r.name, r.role, r.simulated, r.revoked_at
            ORDER BY r.rater_id
            """
        )

    def labels_per_answer(self) -> pd.DataFrame:
        """How many raters each answer is assigned to and labelled by.

        Returns:
            One row per answer that has a score assignment or a label: ``answer_id``,
            ``assigned`` (raters with a ``score`` assignment) and ``labelled``
            (distinct raters with a label, flagged ones included).
        """
        return self.query(
            """
            WITH assigned AS (
                SELECT answer_id, count(DISTINCT rater_id) AS n
                FROM assignments WHERE kind = 'score' GROUP BY answer_id),
            labelled AS (
                SELECT answer_id, count(DISTINCT rater_id) AS n
                FROM labels WHERE source <> 'adjudicated' GROUP BY answer_id)
            SELECT answer_id, coalesce(assigned.n, 0) AS assigned,
                   coalesce(labelled.n, 0) AS labelled
            FROM assigned FULL OUTER JOIN labelled USING (answer_id)
            -- gold items and attention checks are no answers of the pool (judgelab.labeler.store._quality)
            WHERE answer_id NOT IN (SELECT answer_id FROM quality_items)
            ORDER BY answer_id
            """
        )

    def label_seconds(self) -> pd.DataFrame:
        """Seconds spent per label, for every label that recorded its time.

        Returns:
            ``label_id``, ``rater_id``, ``simulated`` (the rater's flag), ``source``
            and ``seconds``; edits are included (re-reading an item is work too).
        """
        return self.query(
            "SELECT l.label_id, l.rater_id, r.simulated, l.source, l.seconds"
            " FROM labels l JOIN raters r ON r.rater_id = l.rater_id"
            " WHERE l.seconds IS NOT NULL ORDER BY l.label_id"
        )

    def current_labels(
        self,
        rubric_id: str | None = None,
        version: int | None = None,
        *,
        include_unversioned: bool = True,
    ) -> pd.DataFrame:
        """Every rater's current label per answer (superseded rows left out).

        Args:
            rubric_id: Keep labels given under this rubric (all rubrics when ``None``).
            version: Keep labels given under this version of ``rubric_id``.
            include_unversioned: Also keep labels with no rubric (imported ones),
                which are read as given under the chosen rubric.

        Returns:
            ``label_id``, ``rater_id``, ``rater_name``, ``simulated``, ``answer_id``,
            ``task_id``, ``family``, ``variant``, ``rubric_id``, ``rubric_version``,
            ``overall``, ``passed``, ``criteria`` (JSON text), ``flag_reason``,
            ``seconds``, ``source``, ``created_at``, ``n_raters`` (people an imported annotator
            mean stands for; ``None``: one person's label).
        """
        where: list[str] = []
        params: list[object] = []
        if rubric_id is not None:
            match = rubric_match(rubric_id, version, params)
            if include_unversioned:
                match = f"({match}) OR rubric_id IS NULL"
            where.append(f"({match})")
        sql = f"SELECT * FROM ({_CURRENT_LABELS_SQL}) cur"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return self.query(sql + " ORDER BY answer_id, rater_id", params)

    def answer_catalog(self) -> pd.DataFrame:
        """Every answer without its text, with how often it is assigned and labelled.

        Returns:
            ``answer_id``, ``task_id``, ``category``, ``family``, ``model``,
            ``variant``, ``n_words``, ``assigned`` (raters with a live score assignment:
            not a revoked rater's unanswered one) and ``labelled`` (raters with a label).
        """
        return self.query(
            f"""
            WITH dead AS ({DEAD_SCORE_ASSIGNMENTS})
            SELECT a.answer_id, a.task_id, t.category, a.family, a.model, a.variant,
                   a.n_words,
                   (SELECT count(DISTINCT s.rater_id) FROM assignments s
                     WHERE s.kind = 'score' AND s.answer_id = a.answer_id
                       AND s.assignment_id NOT IN (SELECT assignment_id FROM dead)) AS assigned,
                   (SELECT count(DISTINCT l.rater_id) FROM labels l
                     WHERE l.answer_id = a.answer_id AND l.source <> 'adjudicated') AS labelled
            FROM answers a LEFT JOIN tasks t ON t.task_id = a.task_id
            ORDER BY a.task_id, a.answer_id
            """
        )

    def label_watermark(self) -> tuple[int, int]:
        """``(number of label rows, highest label id)``: changes whenever a label is written.

        Labels are append-only, so pages can cache figures computed from them under
        this pair and recompute only when it moves.
        """
        with self.connection() as con:
            row = con.execute("SELECT count(*), coalesce(max(label_id), 0) FROM labels").fetchone()
        assert row is not None
        return int(row[0]), int(row[1])

    def activity_watermark(self) -> tuple[int, ...]:
        """Counts and highest ids of labels, assignments, revocations, active batches and judgements.

        Moves whenever anything an admin page's figures read is written (rows are appended, a
        rater revoked), so a figure kept under it is never stale; one cheap query.
        """
        with self.connection() as con:
            row = con.execute(
                "SELECT (SELECT count(*) FROM labels), (SELECT coalesce(max(label_id), 0) FROM labels),"
                " (SELECT count(*) FROM pair_labels), (SELECT count(*) FROM padding_audits),"
                " (SELECT count(*) FROM assignments), (SELECT coalesce(max(assignment_id), 0) FROM assignments),"
                " (SELECT count(*) FROM raters WHERE revoked_at IS NOT NULL), (SELECT count(*) FROM raters),"
                " (SELECT count(*) FROM active_batches), (SELECT count(*) FROM judgements),"
                " (SELECT count(*) FROM answers)"
            ).fetchone()
        assert row is not None
        return tuple(int(x) for x in row)

    def settings_for(self, key: str) -> pd.DataFrame:
        """Every scope's value of one setting (e.g. ``mask_self_id``): ``scope``, ``value``."""
        return self.query(
            "SELECT scope, value FROM settings WHERE key = ? ORDER BY scope", [key]
        )
