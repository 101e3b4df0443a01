"""Read queries behind the calibration report.

A judge run's scores, the human labels, the sample design and the provenance of what the judge
prompt contained.

Analysts are not blind, so these frames carry family, model and variant. Nothing here is
ever handed to a rater page.

Which judgement counts. The runner writes one row per attempt of a planned call and the
newest row of a ``(run_id, call_id)`` is the one that counts (a resume may retry a failure).
Imported judgements carry no ``call_id``; each of them is its own call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import pandas as pd

from judgelab.labeler.store._core import CURRENT_LABEL_RULE, StoreCore, plain_judgement, rubric_match
from judgelab.labeler.store._quality import EXCLUDED_RATERS_SQL
from judgelab.labeler.store._review import CURRENT_ADJUDICATION_RULE
from judgelab.labeler.store._withheld import AUTHOR_STATE_SQL, REVEALS_AUTHOR_SQL, SCREEN_RUBRIC_ID

# The newest row per planned call of one run; rows without a call id each stand alone.
_RUN_ROWS_SQL = """
    SELECT j.judgement_id, j.run_id, j.call_id, j.kind, j.format, j.task_id, j.answer_id,
           j.answer_b_id, j.order_shown, j.probe, j.arm, j.trial, j.value, j.passed,
           j.parse_error, j.error, j.source, j.meta,
           CASE WHEN j.error IS NOT NULL THEN 'error'
                WHEN j.parse_error IS NOT NULL OR j.value IS NULL THEN 'parse_failure'
                ELSE 'parsed' END AS status
    FROM judgements j
    WHERE j.run_id = ? AND j.kind = ?
      AND (j.call_id IS NULL OR NOT EXISTS (
          SELECT 1 FROM judgements n WHERE n.run_id = j.run_id AND n.kind = j.kind
             AND n.call_id = j.call_id AND n.judgement_id > j.judgement_id))
"""

# Current labels: the newest unsuperseded row per (rater, answer, rubric version).
_CURRENT_SQL = f"""
    SELECT l.label_id, l.rater_id, l.rater_name, r.simulated AS rater_simulated,
           l.answer_id, a.task_id, a.family, a.variant, l.rubric_id, l.rubric_version,
           l.overall, l.passed, l.flag_reason, l.source, l.n_raters,
           {REVEALS_AUTHOR_SQL} AS reveals_author
    FROM labels l
    JOIN raters r ON r.rater_id = l.rater_id
        -- a rater paused with "exclude their labels" (judgelab.labeler.store._quality) counts in no calibration
        AND r.rater_id NOT IN ({EXCLUDED_RATERS_SQL})
    JOIN answers a ON a.answer_id = l.answer_id
    -- an answer found to say who wrote it (judgelab.labeler.store._withheld): its labels are set apart
    LEFT JOIN ({AUTHOR_STATE_SQL}) fs ON fs.answer_id = l.answer_id
    {CURRENT_LABEL_RULE}
"""


# Current adjudicated labels: the newest unsuperseded adjudication per (answer, rubric version).
_ADJUDICATED_SQL = f"""
    SELECT l.label_id, l.rater_id, l.rater_name, l.answer_id, a.task_id, a.family, a.variant,
           l.rubric_id, l.rubric_version, l.overall, l.passed, l.revealed
    FROM labels l
    JOIN answers a ON a.answer_id = l.answer_id
    {CURRENT_ADJUDICATION_RULE}
"""


class CalibrationMixin(StoreCore):
    """Read-only queries for :mod:`judgelab.calibration.calibrate` and the analyst page."""

    def calibration_runs(self) -> pd.DataFrame:
        """Every judge run with how many judgements of each kind it holds, newest first.

        Returns:
            ``run_id``, ``judge_kind``, ``model``, ``family``, ``rubric_id``,
            ``rubric_version``, ``created_at``, ``n_pointwise``, ``n_pairwise`` and
            ``n_parsed`` (judgements with a parsed value, all kinds).
        """
        return self.query(
            """
            SELECT r.run_id, r.judge_kind, r.model, r.family, r.rubric_id, r.rubric_version,
                   r.created_at,
                   count(j.judgement_id) FILTER (WHERE j.kind = 'pointwise') AS n_pointwise,
                   count(j.judgement_id) FILTER (WHERE j.kind = 'pairwise') AS n_pairwise,
                   count(j.judgement_id) FILTER (WHERE j.value IS NOT NULL) AS n_parsed
            FROM judge_runs r LEFT JOIN judgements j ON j.run_id = r.run_id
            GROUP BY r.run_id, r.judge_kind, r.model, r.family, r.rubric_id, r.rubric_version, r.created_at
            ORDER BY r.created_at DESC, r.run_id DESC
            """
        )

    def latest_scored_run(self) -> str | None:
        """The newest run that scored answers as they are, else the newest with any pointwise judgement.

        A probe run that scored altered answers or other formats (padding, the format study)
        comes after the run that scored the pool, but the report is of the pool's scores. A
        screen's run (:data:`~judgelab.labeler.store._withheld.SCREEN_RUBRIC_ID`) scores nothing and is never picked.
        """
        plain, params = plain_judgement(alias="j")
        with self.connection() as con:
            row = con.execute(
                "SELECT r.run_id FROM judge_runs r JOIN judgements j ON j.run_id = r.run_id"
                " WHERE j.kind = 'pointwise' AND r.rubric_id IS DISTINCT FROM ? GROUP BY r.run_id, r.created_at"
                f" ORDER BY bool_or({plain}) DESC, r.created_at DESC, r.run_id DESC LIMIT 1",
                [SCREEN_RUBRIC_ID, *params],
            ).fetchone()
        return None if row is None else str(row[0])

    def run_rows(self, run_id: str, kind: str = "pointwise") -> pd.DataFrame:
        """A run's judgements of one kind, the row that counts per planned call.

        Args:
            run_id: The run.
            kind: ``"pointwise"`` or ``"pairwise"``.

        Returns:
            Columns ``judgement_id, run_id, call_id, kind, format, task_id, answer_id,
            answer_b_id, order_shown, probe, arm, trial, value, passed, parse_error, error,
            source, meta`` (decoded to a dict) and ``status`` (``parsed``,
            ``parse_failure`` or ``error``), in the order they were written.
        """
        frame = self.query(_RUN_ROWS_SQL + " ORDER BY j.judgement_id", [run_id, kind])
        frame["meta"] = [json.loads(m) if isinstance(m, str) and m else {} for m in frame["meta"]]
        return frame

    def pool_answers(self) -> pd.DataFrame:
        """Every answer without its text.

        ``answer_id, task_id, category, family, model, variant, parent_answer_id, n_words,
        n_chars``.
        """
        return self.query(
            "SELECT a.answer_id, a.task_id, t.category, a.family, a.model, a.variant,"
            " a.parent_answer_id, a.n_words, a.n_chars"
            " FROM answers a LEFT JOIN tasks t ON t.task_id = a.task_id"
            " ORDER BY a.task_id, a.answer_id"
        )

    def human_labels(self, rubric_id: str | None = None, version: int | None = None) -> pd.DataFrame:
        """Every rater's current label per answer, for one rubric version plus unversioned ones.

        Imported labels carry no rubric; they are read as given under the chosen rubric. Admins'
        adjudicated labels are not raters' labels and are left out (:meth:`adjudicated_labels`).

        Args:
            rubric_id: Keep labels given under this rubric (every rubric when ``None``).
            version: Keep labels given under this version of ``rubric_id``.

        Returns:
            ``label_id, rater_id, rater_name, rater_simulated, answer_id, task_id, family,
            variant, rubric_id, rubric_version, overall, passed, flag_reason, source, n_raters,
            reveals_author`` (the answer was found to say who wrote it: withheld now, or masked after
            this label; :mod:`judgelab.labeler.store._withheld`).
        """
        sql = f"SELECT * FROM ({_CURRENT_SQL}) cur"
        params: list[object] = []
        if rubric_id is not None:
            match = rubric_match(rubric_id, version, params)
            sql += f" WHERE ({match}) OR rubric_id IS NULL"
        return self.query(sql + " ORDER BY answer_id, rater_id", params)

    def label_notes(self, answer_ids: Iterable[str]) -> pd.DataFrame:
        """The raters' current labels of some answers with their criteria scores and comments.

        Returns:
            ``rater_id, rater_name, answer_id, rubric_id, rubric_version, overall, passed,
            criteria`` (JSON text), ``comment``, ``flag_reason``, ``source``; admins'
            adjudications left out.
        """
        ids = [str(a) for a in answer_ids]
        if not ids:
            ids = [""]
        marks = ", ".join("?" for _ in ids)
        return self.query(
            "SELECT l.rater_id, l.rater_name, l.answer_id, l.rubric_id, l.rubric_version, l.overall, l.passed,"
            " l.criteria, l.comment, l.flag_reason, l.source"
            f" FROM labels l WHERE l.answer_id IN ({marks}) AND l.source <> 'adjudicated'"
            " AND NOT EXISTS (SELECT 1 FROM labels s WHERE s.supersedes = l.label_id)"
            " ORDER BY l.answer_id, l.rater_id",
            ids,
        )

    def adjudicated_labels(self, rubric_id: str | None = None, version: int | None = None) -> pd.DataFrame:
        """The current adjudicated label per answer, for one rubric version plus unversioned ones.

        Args:
            rubric_id: Keep adjudications given under this rubric (every rubric when ``None``).
            version: Keep adjudications given under this version of ``rubric_id``.

        Returns:
            ``label_id, rater_id, rater_name`` (the admin who adjudicated), ``answer_id, task_id,
            family, variant, rubric_id, rubric_version, overall, passed, revealed`` (given after
            revealing the family; ``None`` before judgelab recorded it).
        """
        sql = f"SELECT * FROM ({_ADJUDICATED_SQL}) cur"
        params: list[object] = []
        if rubric_id is not None:
            match = rubric_match(rubric_id, version, params)
            sql += f" WHERE ({match}) OR rubric_id IS NULL"
        return self.query(sql + " ORDER BY answer_id, label_id", params)

    def label_design_items(self) -> pd.DataFrame:
        """Every stored sample design's items, newest design first.

        Returns:
            ``design_id, answer_id, stratum, inclusion_prob, weight, n_raters, applied_at,
            created_at``.
        """
        return self.query(
            "SELECT i.design_id, i.answer_id, i.stratum, i.inclusion_prob, i.weight, i.n_raters,"
            " d.applied_at, d.created_at"
            " FROM design_items i LEFT JOIN designs d ON d.design_id = i.design_id"
            " ORDER BY d.applied_at DESC NULLS LAST, d.created_at DESC NULLS LAST,"
            " i.design_id, i.answer_id"
        )

    def reference_provenance(self, task_ids: Iterable[str]) -> pd.DataFrame:
        """Who wrote the reference answers of some tasks.

        Returns:
            One row per task that has a reference answer: ``task_id``,
            ``reference_author_kind`` and ``reference_author`` (either may be missing).
        """
        ids = sorted({str(t) for t in task_ids})
        if not ids:
            return pd.DataFrame(columns=["task_id", "reference_author_kind", "reference_author"])
        return self.query(
            "SELECT task_id, reference_author_kind, reference_author FROM tasks"
            " WHERE reference_answer IS NOT NULL AND reference_answer <> ''"
            " AND task_id IN (SELECT unnest(?)) ORDER BY task_id",
            [ids],
        )

