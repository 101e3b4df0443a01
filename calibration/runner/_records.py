"""What a run writes for each planned call: its database row and its JSONL evidence row.

A call's outcome is a reply (parsed or not), a cache hit or a failure without a reply; each
becomes one :class:`~judgelab.labeler.store.JudgementRecord`, and each record one evidence row.
:func:`evidence_status` is the one place the stored columns are read back as a kind of outcome.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from judgelab.calibration.judges._base import Failure, Judgement
from judgelab.calibration.runner._plan import PlannedCall
from judgelab.labeler.errors import InputError
from judgelab.labeler.store import JudgementRecord, JudgeRole, plain_value

__all__ = [
    "EVIDENCE_FIELDS",
    "EvidenceStatus",
    "call_record",
    "evidence_row",
    "evidence_status",
    "record_for",
    "reorder_evidence",
    "write_evidence",
]

EvidenceStatus = Literal["parsed", "parse_failure", "error"]
"""An evidence row's ``status``: the reply parsed, a reply did not parse, or there was no reply
(an API or batch error, which a resume retries)."""

#: Fields every evidence row carries (``meta`` keys are added after these).
EVIDENCE_FIELDS: tuple[str, ...] = (
    "run_id", "call_id", "trial", "bias", "arm", "order", "kind", "format", "verdict", "score",
    "winner", "passed", "status", "reason", "raw", "task_id", "answer_id", "answer_b_id",
    "len_a", "len_b", "words_a", "words_b", "input_tokens", "output_tokens",
    "cache_read_tokens", "cost_usd", "latency_s", "cached", "cached_from", "model",
    "judge_family",
)


def call_record(
    run_id: str,
    call: PlannedCall,
    key: str,
    *,
    judgement: Judgement | None = None,
    failure: Failure | None = None,
    cached: Mapping[str, Any] | None = None,
    seq: int | None = None,
) -> JudgementRecord:
    """The database row for one planned call's outcome (a reply, a cache hit or a failure).

    A call without a reply (``failure``: an API or batch error) stores its reason in the
    ``error`` column; a reply that did not parse stores it in ``parse_error``.
    :func:`evidence_status` reads the kind back from those columns. ``seq`` is the call's
    position in the plan, kept in ``meta`` so the evidence file can list calls in plan order
    whatever order they finished in.
    """
    meta = call.design_meta()
    if seq is not None:
        meta["seq"] = seq
    common: dict[str, Any] = {
        "run_id": run_id,
        "call_id": call.call_id,
        "cache_key": key,
        "kind": call.kind,
        "format": call.format,
        "task_id": call.task_id,
        "answer_id": call.answer_id,
        "answer_b_id": call.answer_b_id,
        "order_shown": call.order,
        "probe": call.probe or None,
        "arm": call.arm or None,
        "trial": call.trial,
        "meta": meta,
    }
    if cached is not None:
        # Reusing an earlier reply spends nothing: tokens and cost are zero, and the row
        # points at the judgement that paid.
        return JudgementRecord(
            **common,
            value=cached["value"],
            passed=cached["passed"],
            parse_error=cached["parse_error"],
            raw=cached["raw"],
            cost_usd=0.0,
            source="cache",
            cached_from=int(cached["judgement_id"]),
        )
    if judgement is None:
        if failure is None or not failure.no_reply:
            raise ValueError("call_record: a call without a reply needs an API or batch failure")
        return JudgementRecord(**common, error=failure.reason, source="judge")
    unparsed = judgement.failure
    return JudgementRecord(
        **common,
        value=judgement.value,
        passed=judgement.passed,
        parse_error=None if unparsed is None else unparsed.reason,
        raw=judgement.raw,
        input_tokens=judgement.input_tokens,
        output_tokens=judgement.output_tokens,
        cache_read_tokens=judgement.cache_read_tokens,
        cache_write_tokens=judgement.cache_write_tokens,
        cost_usd=judgement.cost_usd,
        latency_s=judgement.latency_s,
        source="judge",
    )


def record_for(run_id: str, call: PlannedCall, judgement: Judgement) -> JudgementRecord:
    """The database row a judge's reply to ``call`` becomes (for simulations without a run)."""
    return call_record(run_id, call, judgement.cache_key, judgement=judgement)


def evidence_row(
    record: Mapping[str, Any], *, model: str | None, judge_family: str | None
) -> dict[str, Any]:
    """One JSONL evidence row from a judgement (a :class:`JudgementRecord` as a dict or a database row).

    ``verdict`` is the pairwise verdict from slot A's side (+2 A much better .. -2 B much
    better) and ``winner`` the shown slot it favours (``"A"``, ``"B"`` or ``"tie"``);
    ``score`` is a pointwise score. ``reason`` is why there is no value: a parse failure or
    a judge failure (``status`` says which).
    """
    record = {k: plain_value(v) for k, v in record.items()}
    meta = dict(record.get("meta") or {})
    value = record.get("value")
    value = None if value is None else float(value)
    kind = record.get("kind")
    status, reason = evidence_status(record)
    winner = None
    if kind == "pairwise" and value is not None:
        winner = "A" if value > 0 else "B" if value < 0 else "tie"
    cost = record.get("cost_usd")
    row: dict[str, Any] = {
        "run_id": record.get("run_id"),
        "call_id": record.get("call_id"),
        "trial": _int_or_none(record.get("trial")),
        "bias": record.get("probe"),
        "arm": record.get("arm"),
        "order": record.get("order_shown"),
        "kind": kind,
        "format": record.get("format"),
        "verdict": value if kind == "pairwise" else None,
        "score": value if kind == "pointwise" else None,
        "winner": winner,
        "passed": None if record.get("passed") is None else bool(record.get("passed")),
        "status": status,
        "reason": reason,
        "raw": record.get("raw"),
        "task_id": record.get("task_id"),
        "answer_id": record.get("answer_id"),
        "answer_b_id": record.get("answer_b_id"),
        "len_a": meta.pop("len_a", None),
        "len_b": meta.pop("len_b", None),
        "words_a": meta.pop("words_a", None),
        "words_b": meta.pop("words_b", None),
        "input_tokens": int(record.get("input_tokens") or 0),
        "output_tokens": int(record.get("output_tokens") or 0),
        "cache_read_tokens": int(record.get("cache_read_tokens") or 0),
        "cost_usd": None if cost is None else float(cost),
        "latency_s": float(record.get("latency_s") or 0.0),
        "cached": record.get("source") == "cache",
        "cached_from": _int_or_none(record.get("cached_from")),
        "model": model,
        "judge_family": judge_family,
    }
    meta.pop("seq", None)
    for key, val in meta.items():
        row.setdefault(key, val)
    return row


def evidence_status(record: Mapping[str, Any]) -> tuple[EvidenceStatus, str | None]:
    """A stored judgement's status and the reason it has no value, read from its columns.

    The one place the stored columns are turned back into a kind of outcome: ``error`` set
    means no reply (an API or batch error), else a missing value or a ``parse_error`` means
    a reply that did not parse.

    >>> evidence_status({"error": None, "parse_error": None, "value": 4.0})
    ('parsed', None)
    >>> evidence_status({"error": None, "parse_error": None, "value": None})
    ('parse_failure', 'no value parsed from the reply')
    """
    error = plain_value(record.get("error"))
    parse_error = plain_value(record.get("parse_error"))
    if error is not None:
        return "error", error
    if parse_error is not None or plain_value(record.get("value")) is None:
        return "parse_failure", parse_error or "no value parsed from the reply"
    return "parsed", None


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def reorder_evidence(path: Path, order: Mapping[str, int]) -> bool:
    """Put a fresh run's appended evidence file in plan order, without the database.

    Only when the file holds exactly one row per planned call (a first execution whose every
    result was appended as it was written); otherwise ``False`` and the caller rewrites it from
    the database (:func:`write_evidence`). Rows are kept byte for byte.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    if len(lines) != len(order):
        return False
    keyed = []
    for line in lines:
        call_id = json.loads(line).get("call_id")
        if call_id not in order:
            return False
        keyed.append((order[call_id], line))
    keyed.sort()
    if len({seq for seq, _ in keyed}) != len(keyed):
        return False
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(line + "\n" for _, line in keyed), encoding="utf-8")
    tmp.replace(path)
    return True


def write_evidence(store: JudgeRole, run_id: str, path: str | os.PathLike[str]) -> int:
    """(Re)write a run's evidence file from the database, atomically; returns the row count.

    One row per planned call (its newest result), in plan order.
    """
    with store.connection():
        run = store.judge_run(run_id)
        if run is None:
            raise InputError(f"no judge run {run_id!r} in {store.shown}")
        frame = store.run_judgements(run_id)
    if not frame.empty:
        seq = [m.get("seq", i) if isinstance(m, dict) else i for i, m in enumerate(frame["meta"])]
        frame = frame.assign(_seq=seq).sort_values("_seq", kind="stable").drop(columns="_seq")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for record in frame.to_dict(orient="records"):
            row = evidence_row(
                {str(k): v for k, v in record.items()},
                model=run["model"],
                judge_family=run["family"],
            )
            fh.write(json.dumps(row, default=str) + "\n")
    tmp.replace(target)
    return len(frame)
