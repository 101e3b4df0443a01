"""Labels, preferences, audits and judgements that a team already has from elsewhere, and exports.

Human records keep their history (see :mod:`judgelab.labeler.store._history` for what counts as the
same record on a re-import). Judgements are stored in the runner's orientation (the answer
shown first is ``answer_id``; see :class:`~judgelab.labeler.models.ImportedJudgement`) under a run
named ``import:<model>`` unless the file names one. A judgement may be of a pool answer or of
an answer a probe built from a stored pair (``<pair_id>:a``, ``<pair_id>:b`` and their variants
``<pair_id>:a~...``).
"""

from __future__ import annotations

import hashlib
import json
import math
import secrets
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal

import duckdb
import pandas as pd

from judgelab.labeler.errors import ConflictError, InputError
from judgelab.labeler.models import ImportedAudit, ImportedJudgement, ImportedLabel, ImportedPairLabel, pair_of
from judgelab.labeler.store._audit import audit_import
from judgelab.labeler.store._bulk import drop_stored, insert_rows, staged
from judgelab.labeler.store._history import Incoming, Planned, Stored, plan
from judgelab.labeler.store._pool import PAIRS_QUERY, ImportSummary, PoolMixin, tasks_of
from judgelab.labeler.store._raters import RaterMixin, hash_token
from judgelab.labeler.store._turn_rows import check_turns_exist, current_turns, insert_turns

ExportKind = Literal["labels", "judgements", "answers", "pair_labels", "audits", "pairs"]
EXPORT_KINDS: tuple[ExportKind, ...] = ("labels", "pair_labels", "audits", "judgements", "answers", "pairs")

_LABEL_COLUMNS = ("rater_id", "rater_name", "answer_id", "overall", "passed", "criteria", "comment", "source",
                  "rubric_id", "rubric_version", "flag_reason", "seconds", "supersedes", "created_at", "n_raters")
_PAIR_LABEL_COLUMNS = ("rater_id", "rater_name", "shown_left", "shown_right", "preference", "comment", "seconds",
                       "source", "supersedes", "created_at")
_AUDIT_COLUMNS = ("rater_id", "original_id", "rewrite_id", "length_ratio", "adds_content", "note", "seconds",
                  "source", "supersedes", "created_at")
_JUDGEMENT_COLUMNS = ("cache_key", "value", "passed", "parse_error", "error", "run_id", "kind", "format", "answer_id",
                      "answer_b_id", "order_shown", "raw", "source", "call_id", "probe", "arm", "trial", "meta",
                      "input_tokens", "output_tokens", "cost_usd", "latency_s", "task_id")


def criteria_json(criteria: dict[str, Any]) -> str:
    """A label's criterion scores as the canonical JSON the labels table stores."""
    return json.dumps({str(k): float(v) for k, v in criteria.items()}, sort_keys=True)


def criteria_key(criteria: dict[str, Any]) -> tuple[tuple[str, float], ...]:
    """A label's criterion scores as a comparable key (sorted ``(id, score)`` pairs)."""
    return tuple(sorted((str(k), float(v)) for k, v in criteria.items()))


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _opt_text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


class ImportMixin(RaterMixin, PoolMixin):
    """Imports of outside labels, preferences, audits and judgements; exports of every table."""

    # -- shared ---------------------------------------------------------------------------

    def pair_ids(self) -> set[str]:
        """Every stored pair id."""
        with self.connection() as con:
            return {str(r[0]) for r in con.execute("SELECT pair_id FROM pairs").fetchall()}

    def pair_gold(self) -> dict[str, str | None]:
        """Every stored pair's gold winner: ``"a"``, ``"b"``, ``"tie"``, or ``None`` when unknown."""
        with self.connection() as con:
            return {str(p): None if g is None else str(g).lower()
                    for p, g in con.execute("SELECT pair_id, gold FROM pairs").fetchall()}

    def _known_answers(
        self, ids: set[str], *, source_file: str | None, column: str, pair_answers: bool = False
    ) -> None:
        stored = self.answer_ids()
        missing = sorted(ids - stored)
        if missing and pair_answers:
            pairs = self.pair_ids()
            missing = [m for m in missing if pair_of(m, pairs) is None]
        if missing:
            shown = ", ".join(repr(m) for m in missing[:5])
            raise InputError(
                f"{len(missing)} answer id(s) are not in the database: {shown}",
                file=source_file,
                column=column,
                fix="import the answers first with `judgelab import answers FILE`"
                + (" (or the pairs, for `<pair>:a` ids, with `judgelab import pairs FILE`)." if pair_answers else "."),
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

    def _raters_by_source(
        self, con: duckdb.DuckDBPyConnection, names_sources: Sequence[tuple[str, str]]
    ) -> dict[str, int]:
        """Rater ids; a name first seen on a simulated record becomes a simulated rater."""
        raters = self._rater_ids(con, [n for n, s in names_sources if s == "simulated"], simulated=True)
        raters.update(self._rater_ids(con, [n for n, s in names_sources if s != "simulated"], simulated=False))
        return raters

    @staticmethod
    def _new_ids(con: duckdb.DuckDBPyConnection, sequence: str, planned: list[Planned]) -> list[tuple[int, int | None]]:
        """``(id, supersedes)`` for each planned row, ids drawn in row order."""
        drawn = con.execute(f"SELECT nextval('{sequence}') FROM range(?)", [len(planned)]).fetchall()
        ids = sorted(int(r[0]) for r in drawn)
        return [
            (ids[i], p.stored_parent if p.new_parent is None else ids[p.new_parent]) for i, p in enumerate(planned)
        ]

    @staticmethod
    def _now(con: duckdb.DuckDBPyConnection) -> datetime:
        """The database's clock, as a ``created_at`` default gives it."""
        row = con.execute("SELECT current_timestamp::TIMESTAMP").fetchone()
        assert row is not None
        return row[0]  # type: ignore[no-any-return]  # a TIMESTAMP comes back as a datetime

    # -- labels ---------------------------------------------------------------------------

    def add_imported_labels(
        self,
        labels: list[ImportedLabel],
        *,
        source_file: str | None = None,
        source: Literal["import", "simulated"] = "import",
        rubric: tuple[str, int] | None = None,
    ) -> ImportSummary:
        """Add outside (or simulated) human labels with their history, all or nothing.

        A label already stored (the same rater, answer, rubric, content and history, whoever
        wrote it) is skipped, so importing a file twice, or a database's own export, changes
        nothing. ``source="simulated"`` marks labels from :mod:`judgelab.labeler.simulate` so every page
        and report can say they are not real people's (a label's own ``source`` wins).
        ``rubric`` is the ``(id, version)`` the labels were given under when a label names none.

        Raises:
            InputError: An answer is not stored, or a label supersedes none of the earlier ones.
            ConflictError: A rater already has a different imported label of an answer, or an
                edit would fork a stored history.
        """
        self._known_answers({lab.answer_id for lab in labels}, source_file=source_file, column="answer_id")
        incoming = [
            Incoming(lab.ref, lab.supersedes, (lab.rater, lab.answer_id, *(lab.rubric or rubric or (None, None))),
                     (_opt_float(lab.overall), lab.passed, criteria_key(lab.criteria), lab.comment or "",
                      _opt_text(lab.flag_reason), lab.n_raters, tuple(sorted(lab.turns.items()))),
                     lab.source or source)
            for lab in labels
        ]
        what = "label"

        def conflict(rec: Incoming) -> ConflictError:
            return ConflictError(
                f"rater {rec.group[0]!r} already has a different imported {what} for answer {rec.group[1]!r}",
                file=source_file,
                fix="labels are append-only: correct the file, or label in the app.",
            )

        scores: dict[str, tuple[tuple[str, float], ...]] = {}  # criteria texts repeat: read each once

        def stored_scores(text: str | None) -> tuple[tuple[str, float], ...]:
            key = text or "{}"
            if key not in scores:
                scores[key] = criteria_key(json.loads(key))
            return scores[key]

        with self.connection() as con:
            check_turns_exist(con, {(lab.rater, lab.answer_id): lab.turns.keys() for lab in labels},
                              source_file=source_file)
            found = con.execute(
                "SELECT label_id, supersedes, source, rater_name, answer_id, rubric_id, rubric_version, overall,"
                " passed, criteria, comment, flag_reason, n_raters FROM labels"
                " WHERE answer_id IN (SELECT unnest(?))",
                [sorted({lab.answer_id for lab in labels})],
            ).fetchall()
            turns = current_turns(con, [int(r[0]) for r in found]) if any(lab.turns for lab in labels) else {}
            stored = [
                Stored(int(r[0]), r[1], (r[3], r[4], r[5], r[6]),
                       (_opt_float(r[7]), r[8], stored_scores(r[9]), r[10] or "", _opt_text(r[11]),
                        None if r[12] is None else int(r[12]), tuple(sorted(turns.get(int(r[0]), {}).items()))),
                       str(r[2]))
                for r in found
            ]
            planned, unchanged = self._plan(incoming, stored, conflict, what, source_file)
            raters = self._raters_by_source(con, [(labels[p.record].rater, incoming[p.record].source)
                                                  for p in planned])
            now = self._now(con)
            rows, new_turns = [], []
            for p, (new_id, parent) in zip(planned, self._new_ids(con, "seq_label", planned), strict=True):
                lab, rec = labels[p.record], incoming[p.record]
                rows.append([new_id, raters[lab.rater], lab.rater, lab.answer_id, rec.content[0], rec.content[1],
                             criteria_json(lab.criteria), rec.content[3], rec.source, rec.group[2], rec.group[3],
                             rec.content[4], lab.seconds, parent, lab.created_at or now, lab.n_raters])
                new_turns += [(new_id, turn, score) for turn, score in sorted(lab.turns.items())]
            insert_rows(con, "labels", ("label_id", *_LABEL_COLUMNS), rows)
            insert_turns(con, new_turns)
            audit_import(con, {"labels": len(planned)}, {"labels": unchanged}, source_file)
        return ImportSummary(added={"labels": len(planned)}, unchanged={"labels": unchanged})

    @staticmethod
    def _plan(
        incoming: list[Incoming], stored: list[Stored], conflict: Callable[[Incoming], ConflictError], what: str,
        source_file: str | None,
    ) -> tuple[list[Planned], int]:
        def fork(rec: Incoming) -> ConflictError:
            return ConflictError(
                f"rater {rec.group[0]!r}'s {what} of {rec.group[1]!r} is already superseded by a different edit",
                file=source_file,
                fix="an import cannot add a second edit of one version; export the database's history and "
                "correct that file.",
            )

        groups = {rec.group for rec in incoming}
        try:
            return plan(incoming, [s for s in stored if s.group in groups], conflict=conflict, fork=fork)
        except ValueError as exc:
            raise InputError(str(exc), file=source_file, column="supersedes",
                             fix="list each record before the records that supersede it.") from None

    # -- pair labels and audits -----------------------------------------------------------------

    def add_imported_pair_labels(
        self, labels: list[ImportedPairLabel], *, source_file: str | None = None
    ) -> ImportSummary:
        """Add outside pairwise preferences with their history, all or nothing (rules as labels)."""
        ids = {lab.shown_left for lab in labels} | {lab.shown_right for lab in labels}
        self._known_answers(ids, source_file=source_file, column="answer_a")
        incoming = [
            Incoming(lab.ref, lab.supersedes, (lab.rater, lab.shown_left, lab.shown_right),
                     (int(lab.preference), lab.comment or ""), lab.source or "import")
            for lab in labels
        ]

        def conflict(rec: Incoming) -> ConflictError:
            rater, left, right = rec.group
            return ConflictError(
                f"rater {rater!r} already has a different imported preference for {left!r} vs {right!r}",
                file=source_file,
                fix="correct the file; labels are append-only.",
            )

        with self.connection() as con:
            stored = [
                Stored(int(r[0]), r[1], (r[3], r[4], r[5]), (int(r[6]), r[7] or ""), str(r[2]))
                for r in con.execute(
                    "SELECT pair_label_id, supersedes, source, rater_name, shown_left, shown_right, preference,"
                    " comment FROM pair_labels WHERE shown_left IN (SELECT unnest(?))",
                    [sorted({lab.shown_left for lab in labels})],
                ).fetchall()
            ]
            planned, unchanged = self._plan(incoming, stored, conflict, "preference", source_file)
            raters = self._raters_by_source(con, [(labels[p.record].rater, incoming[p.record].source)
                                                  for p in planned])
            now = self._now(con)
            rows = []
            for p, (new_id, parent) in zip(planned, self._new_ids(con, "seq_pair_label", planned), strict=True):
                lab, rec = labels[p.record], incoming[p.record]
                rows.append([new_id, raters[lab.rater], lab.rater, lab.shown_left, lab.shown_right, lab.preference,
                             lab.comment or "", lab.seconds, rec.source, parent, lab.created_at or now])
            insert_rows(con, "pair_labels", ("pair_label_id", *_PAIR_LABEL_COLUMNS), rows)
            audit_import(con, {"pair labels": len(planned)}, {"pair labels": unchanged}, source_file)
        return ImportSummary(added={"pair labels": len(planned)}, unchanged={"pair labels": unchanged})

    def add_imported_audits(self, audits: list[ImportedAudit], *, source_file: str | None = None) -> ImportSummary:
        """Add outside padding audits with their history, all or nothing (rules as labels).

        The length ratio is worked out from the two stored answers, as the app does.
        """
        ids = {a.original_id for a in audits} | {a.rewrite_id for a in audits}
        self._known_answers(ids, source_file=source_file, column="original_id")
        incoming = [
            Incoming(a.ref, a.supersedes, (a.rater, a.original_id, a.rewrite_id), (bool(a.adds_content), a.note or ""),
                     "import")
            for a in audits
        ]

        def conflict(rec: Incoming) -> ConflictError:
            return ConflictError(
                f"rater {rec.group[0]!r} already has a different imported audit of {rec.group[2]!r}",
                file=source_file,
                fix="correct the file; audits are append-only.",
            )

        with self.connection() as con:
            stored = [
                Stored(int(r[0]), r[1], (r[3], r[4], r[5]), (bool(r[6]), r[7] or ""), str(r[2]))
                for r in con.execute(
                    "SELECT a.audit_id, a.supersedes, a.source, r.name, a.original_id, a.rewrite_id, a.adds_content,"
                    " a.note FROM padding_audits a JOIN raters r USING (rater_id)"
                    " WHERE a.rewrite_id IN (SELECT unnest(?))",
                    [sorted({a.rewrite_id for a in audits})],
                ).fetchall()
            ]
            planned, unchanged = self._plan(incoming, stored, conflict, "audit", source_file)
            raters = self._rater_ids(con, [audits[p.record].rater for p in planned], simulated=False)
            words = dict(con.execute("SELECT answer_id, n_words FROM answers WHERE answer_id IN (SELECT unnest(?))",
                                     [sorted(ids)]).fetchall())
            now = self._now(con)
            rows = []
            for p, (new_id, parent) in zip(planned, self._new_ids(con, "seq_audit", planned), strict=True):
                a = audits[p.record]
                base = int(words.get(a.original_id, 0))
                ratio = float(words.get(a.rewrite_id, 0)) / base if base else math.inf
                rows.append([new_id, raters[a.rater], a.original_id, a.rewrite_id, ratio, bool(a.adds_content),
                             a.note or "", a.seconds, "import", parent, a.created_at or now])
            insert_rows(con, "padding_audits", ("audit_id", *_AUDIT_COLUMNS), rows)
            audit_import(con, {"audits": len(planned)}, {"audits": unchanged}, source_file)
        return ImportSummary(added={"audits": len(planned)}, unchanged={"audits": unchanged})

    # -- judgements ---------------------------------------------------------------------------

    def add_imported_judgements(
        self, judgements: list[ImportedJudgement], *, source_file: str | None = None
    ) -> ImportSummary:
        """Add outside judge replies, all or nothing, each under its run (default ``import:<model>``).

        A judgement already stored (the same judge, format, answers, order, and run, call,
        probe, arm and trial when given) is skipped; the same one with another result is a
        :class:`ConflictError`. A reply that did not parse (no value; ``parse_error`` says why)
        and a call that failed (``error``) are stored as such: counted, never scored.
        """
        ids = {j.answer_id for j in judgements} | {j.answer_b_id for j in judgements if j.answer_b_id}
        self._known_answers(ids, source_file=source_file, column="answer_id", pair_answers=True)

        def conflict(key: str, clash: ImportedJudgement | None = None) -> ConflictError:
            j = by_key[key]
            if clash is not None:  # two rows of this file
                return ConflictError(
                    f"rows {j.row} and {clash.row} judge the same thing ({j.shown}, judge {j.judge_model!r}) "
                    "with different results",
                    file=source_file, row=clash.row,
                    fix="keep the row that is right and delete the other (a trial column is for repeated calls).",
                )
            where = f"row {j.row}: " if j.row is not None else ""
            return ConflictError(
                f"{where}{j.shown} (judge {j.judge_model!r}, run {j.default_run!r}) was imported before with a "
                "different result",
                file=source_file, row=j.row,
                fix=f"stored judgements are never overwritten. To store the corrected file, give it a new run_id "
                f"(a run_id column, say {j.default_run.removeprefix('import:') + '-corrected'!r}) and import it "
                "again: it becomes a run of its own, and the earlier run stays as it was.",
            )

        by_key: dict[str, ImportedJudgement] = {}
        runs: dict[str, list[Any]] = {}
        rows: list[list[Any]] = []
        for j in judgements:
            run = runs.setdefault(j.default_run, [j.default_run, "import", j.judge_model, j.judge_family,
                                                  f"imported from {source_file}"])
            if run[2] != j.judge_model:
                raise InputError(f"run {j.default_run!r} holds judgements of {run[2]!r} and of {j.judge_model!r}",
                                 file=source_file, column="run_id", fix="one run is one judge model.")
            key = judgement_key(j)
            seen = by_key.get(key)
            if seen is not None:
                if _result(seen) != _result(j):
                    raise conflict(key, j)
                continue
            by_key[key] = j
            rows.append([key, j.value, j.passed, j.parse_error, j.error, j.default_run,
                         "pairwise" if j.answer_b_id else "pointwise", j.format, j.answer_id, j.answer_b_id,
                         j.order_shown, j.raw, "import", j.call_id, j.probe, j.arm, j.trial,
                         json.dumps(j.meta, sort_keys=True, default=str), j.input_tokens, j.output_tokens, j.cost_usd,
                         j.latency_s, j.task_id])
        with self.connection() as con:
            with staged(con, "judgements", _JUDGEMENT_COLUMNS[:5], [row[:5] for row in rows]) as mine:
                stored = con.execute(
                    "SELECT DISTINCT m.cache_key, m.value IS NOT DISTINCT FROM j.value"
                    " AND m.passed IS NOT DISTINCT FROM j.passed AND m.parse_error IS NOT DISTINCT FROM j.parse_error"
                    " AND m.error IS NOT DISTINCT FROM j.error"
                    f" FROM {mine} m JOIN judgements j USING (cache_key) WHERE j.source = 'import'"
                ).fetchall()
            rows = drop_stored(rows, stored, conflict)
            self._add_runs(con, runs, source_file)
            task_of = tasks_of(con, [row[8] for row in rows if row[-1] is None])
            pairs = {str(r[0]) for r in con.execute("SELECT pair_id FROM pairs").fetchall()}
            for row in rows:
                row[-1] = row[-1] or task_of.get(row[8]) or pair_of(row[8], pairs)
            insert_rows(con, "judgements", _JUDGEMENT_COLUMNS, rows, id_from=("judgement_id", "seq_judgement"))
            audit_import(con, {"judgements": len(rows)}, {"judgements": len(judgements) - len(rows)}, source_file)
        self._keep_declared_scales(j.format for j in judgements)  # type: ignore[attr-defined]  # PoolMixin's
        return ImportSummary(
            added={"judgements": len(rows)}, unchanged={"judgements": len(judgements) - len(rows)}
        )

    @staticmethod
    def _add_runs(con: duckdb.DuckDBPyConnection, runs: dict[str, list[Any]], source_file: str | None) -> None:
        """Create the runs an import names that are not stored; a stored run must be of the same model."""
        stored = dict(con.execute(
            "SELECT run_id, model FROM judge_runs WHERE run_id IN (SELECT unnest(?))", [list(runs)]
        ).fetchall())
        for run_id, model in stored.items():
            if model != runs[run_id][2]:
                raise ConflictError(f"run {run_id!r} is a run of judge {model!r}, not of {runs[run_id][2]!r}",
                                    file=source_file, column="run_id",
                                    fix="name another run_id, or leave it empty for import:<judge_model>.")
        insert_rows(
            con,
            "judge_runs",
            ("run_id", "judge_kind", "model", "family", "note"),
            [run for run_id, run in runs.items() if run_id not in stored],
        )

    # -- exports -----------------------------------------------------------------------

    def export_frame(self, kind: ExportKind) -> pd.DataFrame:
        """Every stored row of one kind, as the database holds it (analysts' columns).

        The file schemas ``judgelab export`` writes are built from these by
        :func:`judgelab.labeler.exports.export_table`.
        """
        queries: dict[str, str] = {
            "labels": "SELECT l.label_id, l.rater_name AS rater, l.answer_id, a.task_id, l.rubric_id,"
                      " l.rubric_version, l.overall, l.n_raters, l.passed, l.criteria, l.comment, l.flag_reason,"
                      " l.seconds, l.supersedes, l.source, l.created_at,"
                      " NOT EXISTS (SELECT 1 FROM labels s WHERE s.supersedes = l.label_id) AS current"
                      " FROM labels l LEFT JOIN answers a USING (answer_id)"
                      # Gold and attention labels are no labels of the pool: `judgelab gold export` has them.
                      " WHERE l.answer_id NOT IN (SELECT answer_id FROM quality_items) ORDER BY l.label_id",
            "pair_labels": "SELECT p.pair_label_id, p.rater_name AS rater, p.shown_left, p.shown_right, p.preference,"
                           " p.comment, p.seconds, p.supersedes, p.source, p.created_at,"
                           " NOT EXISTS (SELECT 1 FROM pair_labels s WHERE s.supersedes = p.pair_label_id) AS current"
                           " FROM pair_labels p ORDER BY p.pair_label_id",
            "audits": "SELECT a.audit_id, r.name AS rater, a.original_id, a.rewrite_id, a.length_ratio,"
                      " a.adds_content, a.note, a.seconds, a.supersedes, a.source, a.created_at,"
                      " NOT EXISTS (SELECT 1 FROM padding_audits s WHERE s.supersedes = a.audit_id) AS current"
                      " FROM padding_audits a JOIN raters r USING (rater_id) ORDER BY a.audit_id",
            "judgements": "SELECT j.judgement_id, j.run_id, j.call_id, r.model AS judge_model,"
                          " r.family AS judge_family, j.kind, j.format, j.task_id, j.answer_id, j.answer_b_id,"
                          " j.order_shown, j.probe, j.arm, j.trial, j.value, j.passed, j.parse_error, j.error,"
                          " j.raw, j.input_tokens, j.output_tokens, j.cost_usd, j.latency_s, j.meta, j.source,"
                          " j.created_at,"
                          " j.call_id IS NULL OR j.judgement_id = max(j.judgement_id)"
                          "  OVER (PARTITION BY j.run_id, j.call_id) AS counts"
                          " FROM judgements j JOIN judge_runs r USING (run_id) ORDER BY j.judgement_id",
            "answers": "SELECT a.task_id, t.prompt, t.category, t.reference_answer, t.reference_author_kind,"
                       " t.reference_author, a.answer_id, a.family, a.model, a.variant, a.parent_answer_id, a.text,"
                       " a.transcript AS messages"
                       " FROM answers a JOIN tasks t USING (task_id) ORDER BY a.task_id, a.answer_id",
            "pairs": PAIRS_QUERY,
        }
        if kind not in queries:
            raise InputError(f"unknown export {kind!r}", fix=f"use one of {', '.join(EXPORT_KINDS)}.")
        return self.query(queries[kind])


def judgement_key(j: ImportedJudgement) -> str:
    """The identity of an imported judgement (stable for files that name no run, call or trial)."""
    parts: list[Any] = [j.judge_model, j.format, j.answer_id, j.answer_b_id, j.order_shown]
    extra = [j.run_id, j.call_id, j.probe, j.arm, j.trial]
    if j.run_id == f"import:{j.judge_model}":
        extra[0] = None
    if any(x is not None for x in extra):
        parts += extra
    return "import:" + hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _result(j: ImportedJudgement) -> tuple[Any, ...]:
    return (j.value, j.passed, j.parse_error, j.error)
