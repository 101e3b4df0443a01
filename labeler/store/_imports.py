"""Labels and judgements that a team already has from elsewhere, and exports."""

from __future__ import annotations

import hashlib
import json
from typing import Literal

import pandas as pd

from labeler.errors import ConflictError, InputError
from labeler.models import ImportedJudgement, ImportedLabel, ImportedPairLabel
from labeler.store._pool import ImportSummary, PoolMixin
from labeler.store._raters import RaterMixin

ExportKind = Literal["labels", "judgements", "answers", "pair_labels"]


class ImportMixin(RaterMixin, PoolMixin):
    """Imports of outside labels and judgements; exports of every table users ask for."""

    def _known_answers(self, ids: set[str], *, source_file: str | None, column: str) -> None:
        stored = self.answer_ids()
        missing = sorted(ids - stored)
        if missing:
            shown = ", ".join(repr(m) for m in missing[:5])
            raise InputError(
                f"{len(missing)} answer id(s) are not in the database: {shown}",
                file=source_file,
                column=column,
                fix="import the answers first with `judgelab import answers FILE`.",
            )

    def add_imported_labels(
        self,
        labels: list[ImportedLabel],
        *,
        source_file: str | None = None,
        source: Literal["import", "simulated"] = "import",
        rubric: tuple[str, int] | None = None,
    ) -> ImportSummary:
        """Add outside (or simulated) human labels, all or nothing. Identical rows are skipped.

        ``source="simulated"`` marks labels from :mod:`labeler.simulate` so every page and
        report can say they are not real people's. ``rubric`` is the ``(id, version)`` the
        labels were given under, when known.
        """
        rubric_id, rubric_version = rubric if rubric else (None, None)
        self._known_answers({lab.answer_id for lab in labels}, source_file=source_file, column="answer_id")
        same = 0
        with self.connection() as con:
            existing = {
                (r[0], r[1]): (r[2], r[3], r[4])
                for r in con.execute(
                    "SELECT rater_name, answer_id, overall, passed, criteria FROM labels"
                    " WHERE source = ?",
                    [source],
                ).fetchall()
            }
            rows = []
            for lab in labels:
                crit = json.dumps(lab.criteria, sort_keys=True)
                key = (lab.rater, lab.answer_id)
                mine = (lab.overall, lab.passed, crit)
                old = existing.get(key)
                if old is not None:
                    if old != mine:
                        raise ConflictError(
                            f"rater {lab.rater!r} already has a different imported label for "
                            f"answer {lab.answer_id!r}",
                            file=source_file,
                            fix="labels are append-only: correct the file, or label in the app.",
                        )
                    same += 1
                    continue
                existing[key] = mine
                rater_id = self.rater_id_for(lab.rater, create=True, simulated=source == "simulated")
                rows.append(
                    [rater_id, lab.rater, lab.answer_id, lab.overall, lab.passed, crit, lab.comment,
                     source, rubric_id, rubric_version]
                )
            if rows:
                con.executemany(
                    "INSERT INTO labels (rater_id, rater_name, answer_id, overall, passed, criteria,"
                    " comment, source, rubric_id, rubric_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
        return ImportSummary(added={"labels": len(rows)}, unchanged={"labels": same})

    def add_imported_pair_labels(
        self, labels: list[ImportedPairLabel], *, source_file: str | None = None
    ) -> ImportSummary:
        """Add outside pairwise preferences, all or nothing."""
        ids = {lab.shown_left for lab in labels} | {lab.shown_right for lab in labels}
        self._known_answers(ids, source_file=source_file, column="answer_a")
        same = 0
        with self.connection() as con:
            existing = {
                (r[0], r[1], r[2]): r[3]
                for r in con.execute(
                    "SELECT rater_name, shown_left, shown_right, preference FROM pair_labels"
                    " WHERE source = 'import'"
                ).fetchall()
            }
            rows = []
            for lab in labels:
                key = (lab.rater, lab.shown_left, lab.shown_right)
                if key in existing:
                    if existing[key] != lab.preference:
                        raise ConflictError(
                            f"rater {lab.rater!r} already has a different imported preference for "
                            f"{lab.shown_left!r} vs {lab.shown_right!r}",
                            file=source_file,
                            fix="correct the file; labels are append-only.",
                        )
                    same += 1
                    continue
                existing[key] = lab.preference
                rows.append(
                    [self.rater_id_for(lab.rater, create=True), lab.rater, lab.shown_left,
                     lab.shown_right, lab.preference]
                )
            if rows:
                con.executemany(
                    "INSERT INTO pair_labels (rater_id, rater_name, shown_left, shown_right,"
                    " preference, source) VALUES (?, ?, ?, ?, ?, 'import')",
                    rows,
                )
        return ImportSummary(added={"pair labels": len(rows)}, unchanged={"pair labels": same})

    def add_imported_judgements(
        self, judgements: list[ImportedJudgement], *, source_file: str | None = None
    ) -> ImportSummary:
        """Add outside judge scores as judge runs named ``import:<model>``, all or nothing."""
        ids = {j.answer_id for j in judgements} | {j.answer_b_id for j in judgements if j.answer_b_id}
        self._known_answers(ids, source_file=source_file, column="answer_id")
        same = 0
        with self.connection() as con:
            task_of = dict(con.execute("SELECT answer_id, task_id FROM answers").fetchall())
            runs = {r[0] for r in con.execute("SELECT run_id FROM judge_runs").fetchall()}
            existing = {
                r[0]: (r[1], r[2])
                for r in con.execute(
                    "SELECT cache_key, value, passed FROM judgements WHERE source = 'import'"
                ).fetchall()
            }
            rows = []
            for j in judgements:
                run_id = f"import:{j.judge_model}"
                if run_id not in runs:
                    con.execute(
                        "INSERT INTO judge_runs (run_id, judge_kind, model, family, note)"
                        " VALUES (?, 'import', ?, ?, ?)",
                        [run_id, j.judge_model, j.judge_family, f"imported from {source_file}"],
                    )
                    runs.add(run_id)
                identity = json.dumps(
                    [j.judge_model, j.format, j.answer_id, j.answer_b_id, j.order_shown]
                )
                key = "import:" + hashlib.sha256(identity.encode()).hexdigest()
                if key in existing:
                    if existing[key] != (j.value, j.passed):
                        raise ConflictError(
                            f"judge {j.judge_model!r} already has a different imported "
                            f"{j.format} judgement for answer {j.answer_id!r}",
                            file=source_file,
                            fix="correct the file; judgements are never overwritten.",
                        )
                    same += 1
                    continue
                existing[key] = (j.value, j.passed)
                kind = "pairwise" if j.answer_b_id else "pointwise"
                rows.append(
                    [run_id, key, kind, j.format, task_of[j.answer_id], j.answer_id, j.answer_b_id,
                     j.order_shown, j.value, j.passed, j.raw]
                )
            if rows:
                con.executemany(
                    "INSERT INTO judgements (run_id, cache_key, kind, format, task_id, answer_id,"
                    " answer_b_id, order_shown, value, passed, raw, source)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'import')",
                    rows,
                )
        return ImportSummary(added={"judgements": len(rows)}, unchanged={"judgements": same})

    # -- exports -----------------------------------------------------------------------

    def export_frame(self, kind: ExportKind) -> pd.DataFrame:
        """The rows ``judgelab export`` writes, one DataFrame per kind."""
        if kind == "labels":
            return self.query(
                "SELECT l.label_id, l.rater_name AS rater, l.answer_id, a.task_id, l.rubric_id,"
                " l.rubric_version, l.overall, l.passed, l.criteria, l.comment, l.flag_reason,"
                " l.seconds, l.supersedes, l.source, l.created_at,"
                " NOT EXISTS (SELECT 1 FROM labels s WHERE s.supersedes = l.label_id) AS current"
                " FROM labels l LEFT JOIN answers a USING (answer_id) ORDER BY l.label_id"
            )
        if kind == "pair_labels":
            return self.query(
                "SELECT pair_label_id, rater_name AS rater, shown_left, shown_right, preference,"
                " comment, seconds, supersedes, source, created_at FROM pair_labels"
                " ORDER BY pair_label_id"
            )
        if kind == "judgements":
            return self.query(
                "SELECT j.judgement_id, j.run_id, r.model AS judge_model, r.family AS judge_family,"
                " j.kind, j.format, j.task_id, j.answer_id, j.answer_b_id, j.order_shown, j.probe,"
                " j.arm, j.trial, j.value, j.passed, j.parse_error, j.raw, j.input_tokens,"
                " j.output_tokens, j.cost_usd, j.latency_s, j.source, j.created_at"
                " FROM judgements j JOIN judge_runs r USING (run_id) ORDER BY j.judgement_id"
            )
        if kind == "answers":
            return self.query(
                "SELECT a.task_id, t.prompt, t.category, a.answer_id, a.family, a.model, a.variant,"
                " a.parent_answer_id, a.text FROM answers a JOIN tasks t USING (task_id)"
                " ORDER BY a.task_id, a.answer_id"
            )
        raise InputError(
            f"unknown export {kind!r}", fix="use labels, pair_labels, judgements or answers."
        )
