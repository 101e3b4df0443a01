"""Labels and judgements that a team already has from elsewhere, and exports."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Sequence
from typing import Any, Literal

import duckdb
import pandas as pd

from labeler.errors import ConflictError, InputError
from labeler.models import ImportedJudgement, ImportedLabel, ImportedPairLabel
from labeler.store._bulk import drop_stored, insert_rows, staged
from labeler.store._pool import ImportSummary, PoolMixin
from labeler.store._raters import RaterMixin, hash_token

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

    def _rater_ids(
        self, con: duckdb.DuckDBPyConnection, names: Sequence[str], *, simulated: bool
    ) -> dict[str, int]:
        """Rater ids by name, one query for all of them.

        Unknown names become raters (in order of ``names``) with a random token hash nobody holds
        and revoked, so they cannot log in.
        """
        wanted = list(dict.fromkeys(names))
        found = {
            str(name): int(rater_id)
            for name, rater_id in con.execute(
                "SELECT name, rater_id FROM raters WHERE name IN (SELECT unnest(?))", [wanted]
            ).fetchall()
        }
        new = [name for name in wanted if name not in found]
        ids = insert_rows(
            con,
            "raters",
            ("name", "role", "token_hash", "simulated"),
            [[name, "rater", hash_token(secrets.token_urlsafe(32)), simulated] for name in new],
            id_from=("rater_id", "seq_rater"),
        )
        if ids:
            con.execute(
                "UPDATE raters SET revoked_at = current_timestamp WHERE rater_id IN (SELECT unnest(?))", [ids]
            )
        found.update(zip(new, ids, strict=True))
        return found

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

        def conflict(rater: str, answer_id: str) -> ConflictError:
            return ConflictError(
                f"rater {rater!r} already has a different imported label for answer {answer_id!r}",
                file=source_file,
                fix="labels are append-only: correct the file, or label in the app.",
            )

        # Rows are built and repeats in the list settled before the transaction opens.
        first: dict[tuple[str, str], tuple[Any, ...]] = {}
        rows: list[list[Any]] = []
        for lab in labels:
            key = (lab.rater, lab.answer_id)
            mine = (lab.overall, lab.passed, json.dumps(lab.criteria, sort_keys=True))
            seen = first.get(key)
            if seen is not None:
                if seen != mine:
                    raise conflict(*key)
                continue
            first[key] = mine
            rows.append([lab.rater, lab.answer_id, *mine, lab.comment, source, rubric_id, rubric_version])
        with self.connection() as con:
            with staged(con, "labels", ("rater_name", "answer_id", "overall", "passed", "criteria"),
                        [row[:5] for row in rows]) as mine_rel:
                stored = con.execute(
                    "SELECT DISTINCT m.rater_name, m.answer_id, m.overall IS NOT DISTINCT FROM l.overall"
                    " AND m.passed IS NOT DISTINCT FROM l.passed AND m.criteria = l.criteria"
                    f" FROM {mine_rel} m JOIN labels l USING (rater_name, answer_id) WHERE l.source = ?",
                    [source],
                ).fetchall()
            rows = drop_stored(rows, stored, conflict, width=2)
            raters = self._rater_ids(con, [row[0] for row in rows], simulated=source == "simulated")
            insert_rows(
                con,
                "labels",
                ("rater_id", "rater_name", "answer_id", "overall", "passed", "criteria", "comment", "source",
                 "rubric_id", "rubric_version"),
                [[raters[row[0]], *row] for row in rows],
                id_from=("label_id", "seq_label"),
            )
        return ImportSummary(added={"labels": len(rows)}, unchanged={"labels": len(labels) - len(rows)})

    def add_imported_pair_labels(
        self, labels: list[ImportedPairLabel], *, source_file: str | None = None
    ) -> ImportSummary:
        """Add outside pairwise preferences, all or nothing."""
        ids = {lab.shown_left for lab in labels} | {lab.shown_right for lab in labels}
        self._known_answers(ids, source_file=source_file, column="answer_a")

        def conflict(rater: str, left: str, right: str) -> ConflictError:
            return ConflictError(
                f"rater {rater!r} already has a different imported preference for {left!r} vs {right!r}",
                file=source_file,
                fix="correct the file; labels are append-only.",
            )

        first: dict[tuple[str, str, str], int] = {}
        rows: list[list[Any]] = []
        for lab in labels:
            key = (lab.rater, lab.shown_left, lab.shown_right)
            if key in first:
                if first[key] != lab.preference:
                    raise conflict(*key)
                continue
            first[key] = lab.preference
            rows.append([lab.rater, lab.shown_left, lab.shown_right, lab.preference, "import"])
        columns = ("rater_name", "shown_left", "shown_right", "preference", "source")
        with self.connection() as con:
            with staged(con, "pair_labels", columns[:4], [row[:4] for row in rows]) as mine:
                stored = con.execute(
                    "SELECT DISTINCT m.rater_name, m.shown_left, m.shown_right, m.preference = p.preference"
                    f" FROM {mine} m JOIN pair_labels p USING (rater_name, shown_left, shown_right)"
                    " WHERE p.source = 'import'"
                ).fetchall()
            rows = drop_stored(rows, stored, conflict, width=3)
            raters = self._rater_ids(con, [row[0] for row in rows], simulated=False)
            insert_rows(
                con,
                "pair_labels",
                ("rater_id", *columns),
                [[raters[row[0]], *row] for row in rows],
                id_from=("pair_label_id", "seq_pair_label"),
            )
        return ImportSummary(
            added={"pair labels": len(rows)}, unchanged={"pair labels": len(labels) - len(rows)}
        )

    def add_imported_judgements(
        self, judgements: list[ImportedJudgement], *, source_file: str | None = None
    ) -> ImportSummary:
        """Add outside judge scores as judge runs named ``import:<model>``, all or nothing."""
        ids = {j.answer_id for j in judgements} | {j.answer_b_id for j in judgements if j.answer_b_id}
        self._known_answers(ids, source_file=source_file, column="answer_id")

        def conflict(key: str) -> ConflictError:
            j = by_key[key]
            return ConflictError(
                f"judge {j.judge_model!r} already has a different imported {j.format} judgement for answer "
                f"{j.answer_id!r}",
                file=source_file,
                fix="correct the file; judgements are never overwritten.",
            )

        by_key: dict[str, ImportedJudgement] = {}
        runs: dict[str, list[Any]] = {}
        rows: list[list[Any]] = []
        for j in judgements:
            run_id = f"import:{j.judge_model}"
            runs.setdefault(run_id, [run_id, "import", j.judge_model, j.judge_family, f"imported from {source_file}"])
            identity = json.dumps([j.judge_model, j.format, j.answer_id, j.answer_b_id, j.order_shown])
            key = "import:" + hashlib.sha256(identity.encode()).hexdigest()
            seen = by_key.get(key)
            if seen is not None:
                if (seen.value, seen.passed) != (j.value, j.passed):
                    raise conflict(key)
                continue
            by_key[key] = j
            kind = "pairwise" if j.answer_b_id else "pointwise"
            rows.append(
                [key, j.value, j.passed, run_id, kind, j.format, j.answer_id, j.answer_b_id, j.order_shown, j.raw,
                 "import"]
            )
        with self.connection() as con:
            with staged(con, "judgements", ("cache_key", "value", "passed"), [row[:3] for row in rows]) as mine:
                stored = con.execute(
                    "SELECT DISTINCT m.cache_key, m.value IS NOT DISTINCT FROM j.value"
                    " AND m.passed IS NOT DISTINCT FROM j.passed"
                    f" FROM {mine} m JOIN judgements j USING (cache_key) WHERE j.source = 'import'"
                ).fetchall()
            rows = drop_stored(rows, stored, conflict)
            known_runs = {
                str(r[0])
                for r in con.execute(
                    "SELECT run_id FROM judge_runs WHERE run_id IN (SELECT unnest(?))", [list(runs)]
                ).fetchall()
            }
            insert_rows(
                con,
                "judge_runs",
                ("run_id", "judge_kind", "model", "family", "note"),
                [run for run_id, run in runs.items() if run_id not in known_runs],
            )
            task_of = self._task_of_answers(con, [row[6] for row in rows])
            insert_rows(
                con,
                "judgements",
                ("cache_key", "value", "passed", "run_id", "kind", "format", "answer_id", "answer_b_id",
                 "order_shown", "raw", "source", "task_id"),
                [[*row, task_of[row[6]]] for row in rows],
                id_from=("judgement_id", "seq_judgement"),
            )
        return ImportSummary(
            added={"judgements": len(rows)}, unchanged={"judgements": len(judgements) - len(rows)}
        )

    @staticmethod
    def _task_of_answers(con: duckdb.DuckDBPyConnection, answer_ids: Sequence[str]) -> dict[str, str]:
        """The task of each of ``answer_ids`` (all stored), in one query."""
        return {
            str(a): str(t)
            for a, t in con.execute(
                "SELECT answer_id, task_id FROM answers WHERE answer_id IN (SELECT unnest(?))",
                [list(dict.fromkeys(answer_ids))],
            ).fetchall()
        }

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

