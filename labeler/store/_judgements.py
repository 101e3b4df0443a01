"""Judge runs and judgements: the probe runner's writes, its cache and its evidence.

A *run* is one execution of a plan of judge calls (``judge_runs``); each answered or failed
call is one row of ``judgements`` naming the planned call it answers (``call_id``). Three
questions the runner asks of this table make it resumable and cheap:

* which planned calls of a run already have an answer (:meth:`JudgementMixin.answered_calls`),
  so a resumed run re-issues none of them;
* whether any earlier run already paid for an identical call
  (:meth:`JudgementMixin.cached_replies`, by the content hash ``cache_key``), so the reply is
  reused and recorded with ``source = 'cache'`` at no new cost;
* which runs of a given plan never finished (:meth:`JudgementMixin.unfinished_runs`).

Failed calls (``error``) are rows too: a failure is reported, never dropped, and a later
resume retries it. The newest row of a ``(run_id, call_id)`` is the one that counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from judgelab.labeler.store._batches import BatchMixin
from judgelab.labeler.store._bulk import insert_rows

JudgementSource = Literal["judge", "cache"]

_COLUMNS = (
    "run_id", "call_id", "cache_key", "kind", "format", "task_id", "answer_id", "answer_b_id",
    "order_shown", "probe", "arm", "trial", "value", "passed", "parse_error", "error", "raw",
    "input_tokens", "output_tokens", "cache_read_tokens", "cost_usd", "latency_s", "source",
    "cached_from", "cache_write_tokens", "meta",
)


@dataclass(frozen=True)
class JudgementRecord:
    """One row of ``judgements`` as the runner writes it.

    Attributes:
        run_id: The run this call belongs to.
        call_id: The planned call's id, unique within the run.
        cache_key: Content hash of the request (model, prompt, parameters, judge identity).
        kind: ``"pointwise"`` or ``"pairwise"``.
        format: The scoring format.
        task_id: The task (or pair) judged, if known.
        answer_id: The answer scored, or the answer shown first in a pairwise call.
        answer_b_id: The answer shown second in a pairwise call.
        order_shown: ``"AB"`` or ``"BA"`` for pairwise calls.
        probe: The probe (bias) the call belongs to.
        arm: The probe arm (``"baseline"``, ``"decorated"``, ``"original"``...).
        trial: The trial number within the probe.
        value: Parsed score or verdict; ``None`` when the reply did not parse or the call failed.
        passed: The rubric's pass verdict for a pointwise score.
        parse_error: Why the reply did not parse.
        error: Why the call failed after its retries (no reply).
        raw: The reply, verbatim.
        input_tokens: Prompt tokens billed by this call (0 when served from the cache).
        output_tokens: Completion tokens billed by this call (0 when served from the cache).
        cache_read_tokens: Prompt-cache tokens read.
        cache_write_tokens: Prompt tokens written to the prompt cache (part of
            ``input_tokens``).
        cost_usd: Money this call spent (0 when served from the cache; ``None`` when unpriced).
        latency_s: Seconds the call took.
        source: ``"judge"`` (a call was made) or ``"cache"`` (an earlier reply was reused).
        cached_from: For ``source == "cache"``, the judgement whose reply was reused.
        meta: Design facts the evidence row needs (JSON-serialisable).
    """

    run_id: str
    call_id: str
    cache_key: str
    kind: str
    format: str
    task_id: str | None = None
    answer_id: str | None = None
    answer_b_id: str | None = None
    order_shown: str | None = None
    probe: str | None = None
    arm: str | None = None
    trial: int | None = None
    value: float | None = None
    passed: bool | None = None
    parse_error: str | None = None
    error: str | None = None
    raw: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float | None = None
    latency_s: float = 0.0
    source: JudgementSource = "judge"
    cached_from: int | None = None
    cache_write_tokens: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    def as_row(self) -> list[Any]:
        """The values in ``_COLUMNS`` order, ``meta`` as JSON."""
        values = [getattr(self, name) for name in _COLUMNS[:-1]]
        return [*values, json.dumps(self.meta, sort_keys=True, default=str)]


class JudgementMixin(BatchMixin):
    """Judge runs, judgements, the content-addressed cache and run resumption."""

    # -- runs ------------------------------------------------------------------------

    def start_judge_run(
        self,
        run_id: str,
        *,
        judge_kind: str,
        model: str,
        family: str | None = None,
        rubric_id: str | None = None,
        rubric_version: int | None = None,
        params: dict[str, Any] | None = None,
        plan_hash: str | None = None,
        n_planned: int | None = None,
        evidence_path: str | None = None,
        note: str = "",
    ) -> None:
        """Record a new run. Starting a run id that exists already is a no-op (a resume).

        Args:
            run_id: The run's id.
            judge_kind: ``"anthropic"``, ``"fake"``...
            model: The judge model id.
            family: The judge's own model family.
            rubric_id: Rubric the judge was given.
            rubric_version: Its version.
            params: The command's options, for the record (JSON-serialisable).
            plan_hash: Hash of the plan, used to find this run again when it did not finish.
            n_planned: Number of calls in the plan.
            evidence_path: Where the run's JSONL evidence goes.
            note: Free text.
        """
        with self.connection() as con:
            exists = con.execute(
                "SELECT 1 FROM judge_runs WHERE run_id = ?", [run_id]
            ).fetchone()
            if exists is not None:
                if evidence_path is not None:
                    con.execute(
                        "UPDATE judge_runs SET evidence_path = ? WHERE run_id = ?",
                        [evidence_path, run_id],
                    )
                return
            con.execute(
                "INSERT INTO judge_runs (run_id, judge_kind, model, family, rubric_id,"
                " rubric_version, params, note, plan_hash, n_planned, evidence_path)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    run_id, judge_kind, model, family, rubric_id, rubric_version,
                    json.dumps(params or {}, sort_keys=True, default=str), note, plan_hash,
                    n_planned, evidence_path,
                ],
            )

    def judge_run(self, run_id: str) -> dict[str, Any] | None:
        """One run's row (``params`` decoded, ``batches`` its Message Batches), or ``None``.

        ``batches`` are :meth:`~judgelab.labeler.store._batches.BatchMixin.run_batches` (migration 011;
        the JSON column 003 kept them in is no longer written).
        """
        rows = self._jrows("SELECT * FROM judge_runs WHERE run_id = ?", [run_id])
        if not rows:
            return None
        row = rows[0]
        row["params"] = json.loads(row["params"] or "{}")
        row["batches"] = self.run_batches(run_id)
        return row

    def finish_judge_run(self, run_id: str) -> None:
        """Mark a run finished (every planned call answered)."""
        with self.connection() as con:
            con.execute(
                "UPDATE judge_runs SET finished_at = current_timestamp WHERE run_id = ?", [run_id]
            )

    def unfinished_runs(self, plan_hash: str | None = None) -> pd.DataFrame:
        """Runs with a plan that have not finished, newest first.

        Args:
            plan_hash: Only runs of this plan.

        Returns:
            Columns ``run_id, judge_kind, model, plan_hash, n_planned, n_answered, n_failed,
            evidence_path, created_at``. ``n_answered`` counts planned calls with a reply
            (parsed or not); ``n_failed`` those whose newest row is a judge failure.
        """
        sql = (
            "WITH latest AS ("
            "  SELECT run_id, call_id, error,"
            "   row_number() OVER (PARTITION BY run_id, call_id ORDER BY judgement_id DESC) AS rn"
            "  FROM judgements WHERE call_id IS NOT NULL)"
            " SELECT r.run_id, r.judge_kind, r.model, r.plan_hash, r.n_planned,"
            "  count(l.call_id) FILTER (WHERE l.error IS NULL) AS n_answered,"
            "  count(l.call_id) FILTER (WHERE l.error IS NOT NULL) AS n_failed,"
            "  r.evidence_path, r.created_at"
            " FROM judge_runs r LEFT JOIN latest l ON l.run_id = r.run_id AND l.rn = 1"
            " WHERE r.finished_at IS NULL AND r.plan_hash IS NOT NULL"
        )
        params: list[Any] = []
        if plan_hash is not None:
            sql += " AND r.plan_hash = ?"
            params.append(plan_hash)
        sql += (
            " GROUP BY r.run_id, r.judge_kind, r.model, r.plan_hash, r.n_planned,"
            " r.evidence_path, r.created_at ORDER BY r.created_at DESC, r.run_id DESC"
        )
        return self.query(sql, params)

    # -- judgements ---------------------------------------------------------------------

    def add_judgements(self, records: Sequence[JudgementRecord]) -> int:
        """Insert judgements in one transaction; returns how many were written."""
        if not records:
            return 0
        rows = [r.as_row() for r in records]
        self._keep_declared_scales(r.format for r in records)  # type: ignore[attr-defined]  # PoolMixin's
        with self.connection() as con:
            insert_rows(con, "judgements", _COLUMNS, rows, id_from=("judgement_id", "seq_judgement"))
        return len(records)

    def answered_calls(self, run_id: str) -> set[str]:
        """Call ids of a run that have a reply (parsed or not). Failed calls are not answered."""
        frame = self.query(
            "SELECT DISTINCT call_id FROM judgements"
            " WHERE run_id = ? AND call_id IS NOT NULL AND error IS NULL",
            [run_id],
        )
        return {str(x) for x in frame["call_id"]}

    def cached_replies(self, cache_keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The first paid-for reply for each cache key that has one.

        Only rows with a reply count (a failure is not a reply), and only rows from real
        calls (``source = 'judge'``): a cache hit always points at the judgement that paid.

        Returns:
            ``{cache_key: row}`` where ``row`` holds ``judgement_id, run_id, value, passed,
            parse_error, raw, input_tokens, output_tokens, cache_read_tokens, cost_usd,
            latency_s``.
        """
        keys = sorted(set(cache_keys))
        if not keys:
            return {}
        rows = self._jrows(
            "SELECT cache_key, judgement_id, run_id, value, passed, parse_error, raw,"
            " input_tokens, output_tokens, cache_read_tokens, cost_usd, latency_s"
            " FROM judgements j"
            " WHERE source = 'judge' AND error IS NULL AND cache_key IN (SELECT unnest(?))"
            " AND NOT EXISTS (SELECT 1 FROM judgements o WHERE o.cache_key = j.cache_key"
            "  AND o.source = 'judge' AND o.error IS NULL AND o.judgement_id < j.judgement_id)",
            [keys],
        )
        return {str(row.pop("cache_key")): row for row in rows}

    def run_judgements(self, run_id: str) -> pd.DataFrame:
        """A run's judgements, the newest row per planned call, in call order of writing.

        Returns:
            Every ``judgements`` column plus ``status`` (``parsed``, ``parse_failure`` or
            ``error``), ``model`` and ``judge_family`` from the run; ``meta`` decoded to a dict.
        """
        frame = self.query(
            "SELECT j.*, r.model, r.family AS judge_family,"
            " CASE WHEN j.error IS NOT NULL THEN 'error'"
            "      WHEN j.parse_error IS NOT NULL OR j.value IS NULL THEN 'parse_failure'"
            "      ELSE 'parsed' END AS status"
            " FROM judgements j JOIN judge_runs r USING (run_id)"
            " WHERE j.run_id = ?"
            " AND NOT EXISTS (SELECT 1 FROM judgements n WHERE n.run_id = j.run_id"
            "  AND n.call_id IS NOT DISTINCT FROM j.call_id AND n.judgement_id > j.judgement_id)"
            " ORDER BY j.judgement_id",
            [run_id],
        )
        frame["meta"] = [json.loads(m or "{}") for m in frame["meta"]]
        return frame

    def run_counts(self, run_id: str) -> dict[str, Any]:
        """How a run's planned calls stand: parsed, parse failures, errors, cached, spend.

        Counts use the newest row per planned call, so a failure retried successfully by a
        resume counts once, as its success.
        """
        counts_sql = (
            "WITH latest AS (SELECT * FROM judgements j WHERE run_id = ?"
            " AND NOT EXISTS (SELECT 1 FROM judgements n WHERE n.run_id = j.run_id"
            "  AND n.call_id IS NOT DISTINCT FROM j.call_id AND n.judgement_id > j.judgement_id))"
            " SELECT count(*) AS answered_or_failed,"
            "  count(*) FILTER (WHERE error IS NULL AND parse_error IS NULL AND value IS NOT NULL)"
            "   AS parsed,"
            "  count(*) FILTER (WHERE error IS NULL AND (parse_error IS NOT NULL OR value IS NULL))"
            "   AS parse_failures,"
            "  count(*) FILTER (WHERE error IS NOT NULL) AS errors,"
            "  count(*) FILTER (WHERE source = 'cache') AS cached"
            " FROM latest"
        )
        spend_sql = (
            "SELECT count(*) FILTER (WHERE source = 'judge') AS calls_made,"
            " coalesce(sum(cost_usd) FILTER (WHERE source = 'judge'), 0) AS cost_usd,"
            " coalesce(sum(input_tokens), 0) AS input_tokens,"
            " coalesce(sum(output_tokens), 0) AS output_tokens"
            " FROM judgements WHERE run_id = ?"
        )
        with self.connection():
            out = self._jrow(counts_sql, [run_id])
            out.update(self._jrow(spend_sql, [run_id]))
        out["cost_usd"] = float(out["cost_usd"])
        return out

    # -- model-written rewrites -----------------------------------------------------------

    def rewrites(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Stored rewrites by key.

        ``{rewrite_key: {variant, model, text, length_ratio, warnings (list), input_tokens,
        output_tokens, cost_usd}}``.
        """
        wanted = sorted(set(keys))
        if not wanted:
            return {}
        rows = self._jrows(
            "SELECT rewrite_key, variant, model, text, length_ratio, warnings, input_tokens,"
            " output_tokens, cost_usd FROM rewrites WHERE rewrite_key IN (SELECT unnest(?))",
            [wanted],
        )
        out = {}
        for row in rows:
            row["warnings"] = json.loads(row["warnings"])
            out[str(row.pop("rewrite_key"))] = row
        return out

    def add_rewrite(
        self,
        rewrite_key: str,
        *,
        variant: str,
        model: str,
        original: str,
        text: str,
        length_ratio: float,
        warnings: Sequence[str] = (),
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost_usd: float | None = None,
    ) -> None:
        """Store one model-written rewrite; a key already stored is left as it is (first wins)."""
        with self.connection() as con:
            con.execute(
                "INSERT OR IGNORE INTO rewrites (rewrite_key, variant, model, original, text,"
                " length_ratio, warnings, input_tokens, output_tokens, cost_usd)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [rewrite_key, variant, model, original, text, length_ratio,
                 json.dumps(list(warnings)), input_tokens, output_tokens, cost_usd],
            )

    # -- padding audits ------------------------------------------------------------------

    def padding_audit_result(self, rewrite_ids: Iterable[str] | None = None) -> dict[str, Any]:
        """What raters said of padded rewrites: how many audits found added content.

        Args:
            rewrite_ids: Only audits of these rewritten answers (default: every audit).

        Returns:
            ``n_audits``, ``n_rewrites`` (distinct rewrites audited), ``n_adds_content``,
            ``share_adds_content`` (``None`` with no audits) and ``mean_length_ratio``.
        """
        sql = (
            "SELECT count(*) AS n_audits, count(DISTINCT rewrite_id) AS n_rewrites,"
            " count(*) FILTER (WHERE adds_content) AS n_adds_content,"
            " avg(length_ratio) AS mean_length_ratio FROM padding_audits"
        )
        params: list[Any] = []
        if rewrite_ids is not None:
            sql += " WHERE rewrite_id IN (SELECT unnest(?))"
            params.append(sorted(set(rewrite_ids)))
        row = self._jrow(sql, params)
        n = int(row["n_audits"])
        row["share_adds_content"] = int(row["n_adds_content"]) / n if n else None
        return row

    def _jrows(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        """A query's rows as dicts of plain Python values (no pandas dtype coercion)."""
        with self.connection() as con:
            cur = con.execute(sql, params)
            names = [d[0] for d in cur.description or []]
            return [
                {name: plain_value(v) for name, v in zip(names, values, strict=True)}
                for values in cur.fetchall()
            ]

    def _jrow(self, sql: str, params: list[Any]) -> dict[str, Any]:
        """The first row of an aggregate query as a dict of plain Python values."""
        return self._jrows(sql, params)[0]


def plain_value(value: Any) -> Any:
    """NumPy/pandas scalars to plain Python.

    Missing values (NaN, NA and NaT, how a DataFrame spells a SQL NULL) to ``None``.
    """
    if value is None:
        return None
    if isinstance(value, (list, dict, str)):
        return value
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        return value
    if hasattr(value, "item"):
        return value.item()
    return value
