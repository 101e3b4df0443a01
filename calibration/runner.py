"""Run a plan of judge calls: bounded concurrency, a content-addressed cache, resumable runs.

A probe turns a dataset into a list of :class:`PlannedCall` (arms x orders x reps). The runner
executes such a plan against a :class:`~calibration.judges.Judge` and writes every result to
the project database and to a JSONL evidence file as it arrives:

* **Cache.** Before a call is made its request is hashed (:attr:`JudgeCall.cache_key`: model,
  prompt and parameters, plus the judge's own identity for judges with hidden settings, such
  as the fake judge's bias knobs). If any earlier run already paid for an identical request,
  its reply is reused and recorded with ``source = 'cache'`` and zero cost. Identical requests
  inside one plan are made once.
* **Resume.** A run has a ``run_id`` and the hash of its plan. Running the same plan again
  continues the newest unfinished run of that plan (or the run named by ``resume``) and
  re-issues none of the calls that already have a reply.
* **Never paid twice.** Every result is appended to a write-ahead journal
  (:mod:`calibration.journal`) the moment it arrives, before it waits for its database batch
  (one transaction at least every ``flush_interval`` seconds). A killed run's journal is
  replayed by the next run on the database before it decides what to send, so a killed run
  re-sends at most the calls that were in flight when it died.
* **Failures.** A :class:`~labeler.errors.JudgeError` (the back-end gave up after its
  retries, an undecodable reply included) is recorded as a failed call with its reason: never
  dropped, never a score. The run goes on; it stays unfinished, so running it again retries
  exactly the failed calls.
* **Batches.** With ``batch=True`` every uncached call is submitted as one Message Batch
  through the judge's batch methods, polled and collected; the records are the same.

The evidence file is rewritten from the database when the run ends, so after a resume it
holds one row per planned call (the newest result), in plan order.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from calibration.formats import build_call, passed_for
from calibration.journal import Journal, recover
from calibration.judges._base import Failure, Format, Judge, JudgeCall, Judgement, Kind
from labeler.errors import InputError, JudgeError
from labeler.models import Rubric
from labeler.store import JudgementRecord, Store, plain_value

__all__ = [
    "EVIDENCE_FIELDS",
    "EvidenceStatus",
    "Order",
    "PlannedCall",
    "RunSummary",
    "arun_plan",
    "build_request",
    "cache_key_for",
    "evidence_row",
    "evidence_status",
    "judge_identity",
    "plan_hash",
    "record_for",
    "run_plan",
    "write_evidence",
]

Order = Literal["AB", "BA"]

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


@dataclass(frozen=True)
class PlannedCall:
    """One judge call a probe wants made, with the design facts needed to analyse it.

    Attributes:
        call_id: Stable id of the call within its plan (same options -> same ids).
        kind: ``"pointwise"`` (score ``answer``) or ``"pairwise"`` (``answer`` shown first,
            ``answer_b`` second).
        format: The scoring format.
        prompt: The task the answers respond to.
        answer: The answer scored, or the answer shown first (slot A).
        answer_b: The answer shown second (slot B); ``None`` for pointwise calls.
        probe: The probe (bias) the call belongs to.
        arm: The probe arm (``"baseline"``, ``"decorated"``, ``"original"``, ``"padded"``...).
        trial: Trial number within the probe (calls of one trial are compared together).
        order: ``"AB"`` or ``"BA"``: which presentation order of the trial's two answers.
        task_id: The task or pair the call judges.
        answer_id: Id of ``answer``.
        answer_b_id: Id of ``answer_b``.
        meta: Further design facts for the evidence row (JSON-serialisable), e.g.
            ``target_slot``: the shown slot holding the answer the probe varies.
        rubric: The rubric for this call; ``None`` uses the run's rubric.
    """

    call_id: str
    kind: Kind
    format: Format
    prompt: str
    answer: str
    answer_b: str | None = None
    probe: str = ""
    arm: str = ""
    trial: int = 0
    order: Order | None = None
    task_id: str | None = None
    answer_id: str | None = None
    answer_b_id: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    rubric: Rubric | None = None

    def design_meta(self) -> dict[str, Any]:
        """``meta`` plus the lengths of the answers shown (characters and words)."""
        out = dict(self.meta)
        out.setdefault("len_a", len(self.answer))
        out.setdefault("words_a", len(self.answer.split()))
        if self.answer_b is not None:
            out.setdefault("len_b", len(self.answer_b))
            out.setdefault("words_b", len(self.answer_b.split()))
        return out


@dataclass(frozen=True)
class RunSummary:
    """How a run went.

    Attributes:
        run_id: The run.
        planned: Calls in the plan.
        answered_before: Calls that already had a reply when this execution started (resume).
        issued: Requests actually sent to the judge by this execution.
        parsed: Planned calls whose newest result parsed.
        parse_failures: Planned calls whose reply did not parse (recorded, not scored).
        errors: Planned calls that failed after retries (recorded; a re-run retries them).
        cached: Planned calls served from the cache (this run or an earlier one).
        cost_usd: Money spent by this execution at the price the judge reported.
        input_tokens: Prompt tokens billed by this execution.
        output_tokens: Completion tokens billed by this execution.
        elapsed_s: Wall-clock seconds of this execution.
        resumed: Whether an earlier execution of this run existed.
        finished: Whether every planned call now has a reply.
        evidence_path: The JSONL evidence file, if one was written.
        error_samples: Up to five failure reasons, for the console.
    """

    run_id: str
    planned: int
    answered_before: int
    issued: int
    parsed: int
    parse_failures: int
    errors: int
    cached: int
    cost_usd: float
    input_tokens: int
    output_tokens: int
    elapsed_s: float
    resumed: bool
    finished: bool
    evidence_path: str | None = None
    error_samples: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}

    def __str__(self) -> str:
        """The summary the CLI prints after a run."""
        state = "finished" if self.finished else "NOT finished"
        lines = [
            f"run {self.run_id}: {self.planned} planned calls, {state}"
            + (f" (resumed; {self.answered_before} already answered)" if self.resumed else ""),
            f"  parsed {self.parsed} · parse failures {self.parse_failures} · errors "
            f"{self.errors} · served from cache {self.cached}",
            f"  this execution: {self.issued} judge calls, {self.input_tokens:,} input + "
            f"{self.output_tokens:,} output tokens, ${self.cost_usd:.4f}, "
            f"{self.elapsed_s:.1f} s",
        ]
        if self.errors:
            lines.append(
                f"  {self.errors} call(s) failed after retries; run the same command again "
                f"(or --resume {self.run_id}) to retry only those."
            )
            lines += [f"    - {reason}" for reason in self.error_samples]
        if self.evidence_path:
            lines.append(f"  evidence: {self.evidence_path}")
        return "\n".join(lines)


# -- requests and their keys ------------------------------------------------------------

def judge_identity(judge: Judge) -> str:
    """What, besides the request, decides a judge's reply.

    A real model is identified by its model id, which is already in the request. A judge
    with hidden settings (the fake judge's bias knobs and seed) exposes them as
    ``cache_identity``; they are folded into the cache key so that two differently
    configured fake judges never share cached replies.
    """
    identity = getattr(judge, "cache_identity", None)
    if callable(identity):
        identity = identity()
    return "" if identity is None else str(identity)


def build_request(judge: Judge, rubric: Rubric, call: PlannedCall) -> JudgeCall:
    """The exact request ``judge`` would send for ``call`` (for its cache key and for batches).

    A judge that builds its own requests (a ``build(kind, fmt, rubric, prompt, answers)``
    method, as the fake and Anthropic judges have) is asked; otherwise the request is
    :func:`calibration.formats.build_call` with the judge's ``params``.
    """
    answers = [call.answer] if call.answer_b is None else [call.answer, call.answer_b]
    chosen = call.rubric or rubric
    builder = getattr(judge, "build", None)
    if callable(builder):
        built = builder(call.kind, call.format, chosen, call.prompt, answers)
        if isinstance(built, JudgeCall):
            return built
    return build_call(
        call.kind,
        call.format,
        judge.model,
        chosen,
        call.prompt,
        answers,
        dict(getattr(judge, "params", None) or {}),
    )


def cache_key_for(judge: Judge, rubric: Rubric, call: PlannedCall) -> str:
    """The content hash the cache is keyed on: the request's hash plus the judge's identity."""
    base = build_request(judge, rubric, call).cache_key
    identity = judge_identity(judge)
    if not identity:
        return base
    return hashlib.sha256(f"{base}\n{identity}".encode()).hexdigest()


def plan_hash(plan: Sequence[PlannedCall], keys: Mapping[str, str]) -> str:
    """Hash of a plan: its call ids and the cache key of each (so any change of content shows)."""
    digest = hashlib.sha256()
    for call in plan:
        digest.update(f"{call.call_id}\t{keys[call.call_id]}\n".encode())
    return digest.hexdigest()


def _check_plan(plan: Sequence[PlannedCall]) -> None:
    seen: set[str] = set()
    for call in plan:
        if call.call_id in seen:
            raise ValueError(f"run_plan: call_id {call.call_id!r} appears twice in the plan")
        seen.add(call.call_id)
        if call.kind == "pairwise" and call.answer_b is None:
            raise ValueError(f"run_plan: pairwise call {call.call_id!r} has no answer_b")


# -- records and evidence rows ------------------------------------------------------------

def _record(
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
            raise ValueError("_record: a call without a reply needs an API or batch failure")
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
        cost_usd=judgement.cost_usd,
        latency_s=judgement.latency_s,
        source="judge",
    )


def record_for(run_id: str, call: PlannedCall, judgement: Judgement) -> JudgementRecord:
    """The database row a judge's reply to ``call`` becomes (for simulations without a run)."""
    return _record(run_id, call, judgement.cache_key, judgement=judgement)


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


def _reorder_evidence(path: Path, order: Mapping[str, int]) -> bool:
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


def write_evidence(store: Store, run_id: str, path: str | os.PathLike[str]) -> int:
    """(Re)write a run's evidence file from the database, atomically; returns the row count.

    One row per planned call (its newest result), in plan order.
    """
    with store.connection():
        run = store.judge_run(run_id)
        if run is None:
            raise InputError(f"no judge run {run_id!r} in {store.path}")
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


# -- progress -------------------------------------------------------------------------------

class _RateColumn(ProgressColumn):
    """Calls per second over the run so far."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("-- calls/s" if speed is None else f"{speed:.1f} calls/s", style="cyan")


class _SpendColumn(ProgressColumn):
    """Money spent so far by this execution."""

    def render(self, task: Task) -> Text:
        spend = float(task.fields.get("spend", 0.0))
        unpriced = int(task.fields.get("unpriced", 0))
        text = f"${spend:.4f}" + (f" (+{unpriced} unpriced)" if unpriced else "")
        return Text(text, style="green")


def _progress(enabled: bool) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _RateColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        _SpendColumn(),
        console=Console(stderr=True),
        disable=not enabled,
        transient=False,
    )


# -- the run --------------------------------------------------------------------------------

class _Sink:
    """Buffers results and writes them in small batches (one transaction each).

    Each result is written ahead to the journal as it is put (before it is buffered), and its
    journal entry is marked done when its batch commits. Each batch is also appended to the
    evidence file, so the file grows as the run does.
    """

    def __init__(
        self,
        store: Store,
        evidence: Path | None,
        *,
        model: str,
        judge_family: str | None,
        flush_interval: float,
        flush_size: int,
        on_write: Callable[[Sequence[JudgementRecord]], None],
        journal: Journal | None = None,
    ) -> None:
        self.store = store
        self.journal = journal
        self.evidence = evidence
        self.model = model
        self.judge_family = judge_family
        self.flush_interval = flush_interval
        self.flush_size = flush_size
        self.on_write = on_write
        self.buffer: list[JudgementRecord] = []
        self.seqs: list[int] = []
        self.first_buffered = 0.0
        self.written = 0
        self._inflight: set[asyncio.Future[None]] = set()

    async def put(self, records: Iterable[JudgementRecord]) -> None:
        records = list(records)
        if self.journal is not None:
            # Durable first: from here on a kill cannot make anyone pay for these again.
            self.seqs += self.journal.append(records)
        for record in records:
            if not self.buffer:
                self.first_buffered = time.monotonic()
            self.buffer.append(record)
        if len(self.buffer) >= self.flush_size or (
            self.buffer and time.monotonic() - self.first_buffered >= self.flush_interval
        ):
            await self.flush()

    async def flush(self) -> None:
        if not self.buffer:
            return
        batch, self.buffer = self.buffer, []
        seqs, self.seqs = self.seqs, []
        # DuckDB calls block; run them off the event loop so in-flight requests keep moving.
        write = asyncio.ensure_future(asyncio.to_thread(self._write, batch, seqs))
        self._inflight.add(write)
        write.add_done_callback(self._inflight.discard)
        # Shielded: cancelling the caller (the ticker, at the end of a run) does not stop the
        # thread, so the write stays tracked until drain() has seen it finish.
        await asyncio.shield(write)

    async def drain(self) -> None:
        """Wait for every write already handed to a thread (before counting the run)."""
        while self._inflight:
            await asyncio.gather(*list(self._inflight))

    def close_journal(self) -> None:
        """Release the journal (deleted when every entry reached the database)."""
        if self.journal is not None:
            self.journal.close()

    def _write(self, batch: list[JudgementRecord], seqs: list[int]) -> None:
        self.store.add_judgements(batch)
        if self.journal is not None:
            self.journal.done(seqs)
        if self.evidence is not None:
            with self.evidence.open("a", encoding="utf-8") as fh:
                for record in batch:
                    row = evidence_row(
                        record.__dict__, model=self.model, judge_family=self.judge_family
                    )
                    fh.write(json.dumps(row, default=str) + "\n")
        self.written += len(batch)
        self.on_write(batch)

    async def ticker(self) -> None:
        """Flush a lingering partial batch every ``flush_interval`` seconds."""
        while True:
            await asyncio.sleep(self.flush_interval)
            if self.buffer and time.monotonic() - self.first_buffered >= self.flush_interval:
                await self.flush()


def _new_run_id(phash: str) -> str:
    # Time for the reader, plan prefix for grouping, random tail so two runs of one plan
    # started in the same second never share an id.
    return f"run-{datetime.now(UTC):%Y%m%d-%H%M%S}-{phash[:6]}-{secrets.token_hex(3)}"


def _resolve_run(
    store: Store, phash: str, resume: str | None, new_run_id: str | None
) -> tuple[str, bool]:
    """Which run to write to: the one named, the newest unfinished run of this plan, or new."""
    if resume is not None:
        run = store.judge_run(resume)
        if run is None:
            raise InputError(
                f"there is no judge run {resume!r} in {store.path}",
                fix="check the run id printed by the interrupted command, and pass the same --db.",
            )
        if run.get("plan_hash") != phash:
            raise InputError(
                f"run {resume!r} was made with a different plan (other dataset, options, "
                "judge or rubric), so resuming it would mix two experiments",
                fix="re-run with exactly the options of the interrupted run, or drop --resume "
                "to start a new run.",
            )
        return resume, True
    if new_run_id is None:
        unfinished = store.unfinished_runs(phash)
        if not unfinished.empty:
            return str(unfinished.iloc[0]["run_id"]), True
    return new_run_id or _new_run_id(phash), False


async def arun_plan(
    plan: Sequence[PlannedCall],
    judge: Judge,
    store: Store,
    *,
    rubric: Rubric,
    judge_kind: str,
    evidence: str | os.PathLike[str] | None = None,
    run_id: str | None = None,
    resume: str | None = None,
    concurrency: int = 16,
    batch: bool = False,
    progress: bool | None = None,
    params: Mapping[str, Any] | None = None,
    flush_interval: float = 0.25,
    flush_size: int = 64,
    poll_interval: float = 30.0,
) -> RunSummary:
    """Execute ``plan`` with ``judge``, recording every result; see the module docstring.

    Args:
        plan: The calls to make (ids unique).
        judge: The judge back-end.
        store: The project database (cache, resume state and results).
        rubric: The rubric the judge is given (the text raters see).
        judge_kind: ``"anthropic"``, ``"fake"``... (recorded with the run).
        evidence: JSONL evidence file to write (rewritten from the database at the end).
        run_id: Id for a new run (default: generated). A run of the same plan that did not
            finish is continued instead unless ``run_id`` is given.
        resume: Continue this run; it must have been made with the same plan.
        concurrency: Most calls in flight at once.
        batch: Submit the uncached calls as one Message Batch (the judge must support it).
        progress: Show a progress bar (default: only when stderr is a terminal).
        params: The command's options, stored with the run.
        flush_interval: Longest time a finished result waits before it is written.
        flush_size: Results written per transaction at most.
        poll_interval: Seconds between batch status polls.

    Returns:
        The :class:`RunSummary`.

    Raises:
        InputError: ``resume`` names no run, or a run made with a different plan.
        ValueError: Duplicate call ids, ``concurrency < 1``, or ``batch`` with a judge that
            has no batch methods.
    """
    _check_plan(plan)
    if concurrency < 1:
        raise ValueError(f"run_plan: concurrency must be at least 1; got {concurrency!r}")
    if batch and not all(
        hasattr(judge, name) for name in ("submit_batch", "wait_batch", "collect_batch")
    ):
        raise ValueError(
            f"run_plan: judge {type(judge).__name__} has no Message Batches methods; "
            "drop --batch or use the anthropic judge"
        )
    started = time.monotonic()
    keys = {call.call_id: cache_key_for(judge, rubric, call) for call in plan}
    phash = plan_hash(plan, keys)
    evidence_path = Path(evidence) if evidence is not None else None
    # Set-up reads and writes share one unit of work (one open of the file, not four).
    with store.connection():
        # Results a killed execution had received but not yet committed go in first, so
        # that nothing it paid for is asked again.
        recover(store)
        rid, resumed = _resolve_run(store, phash, resume, run_id)
        store.start_judge_run(
            rid,
            judge_kind=judge_kind,
            model=judge.model,
            family=judge.family,
            rubric_id=rubric.rubric_id,
            rubric_version=rubric.version,
            params=dict(params or {}),
            plan_hash=phash,
            n_planned=len(plan),
            evidence_path=None if evidence_path is None else str(evidence_path),
        )
        answered = store.answered_calls(rid)
        pending = [call for call in plan if call.call_id not in answered]
        hits = store.cached_replies({keys[c.call_id] for c in pending})

    tally = _Tally()
    show = sys.stderr.isatty() if progress is None else progress
    bar = _progress(show)
    task_id = bar.add_task(
        "judging", total=len(plan), completed=len(plan) - len(pending), spend=0.0, unpriced=0
    )

    def on_write(records: Sequence[JudgementRecord]) -> None:
        tally.add(records)
        bar.update(task_id, advance=len(records), spend=tally.cost_usd, unpriced=tally.unpriced)

    if evidence_path is not None:
        evidence_path.parent.mkdir(parents=True, exist_ok=True)
        if not resumed:
            evidence_path.write_text("", encoding="utf-8")
    sink = _Sink(
        store,
        evidence_path,
        model=judge.model,
        judge_family=judge.family,
        flush_interval=flush_interval,
        flush_size=flush_size,
        on_write=on_write,
        journal=Journal.open(store, rid),
    )
    with bar:
        ticker = asyncio.create_task(sink.ticker())
        try:
            execution = _Execution(
                judge, rubric, rid, sink, tally, keys,
                {call.call_id: i for i, call in enumerate(plan)},
            )
            await execution.run(
                pending, hits, concurrency=concurrency, batch=batch, poll_interval=poll_interval
            )
        finally:
            ticker.cancel()
            # Whatever finished is written even when the run is failing or cancelled, and a
            # write the cancelled ticker started is waited for before the run is counted.
            try:
                await sink.flush()
                await sink.drain()
            finally:
                sink.close_journal()
    with store.connection():
        counts = store.run_counts(rid)
        finished = counts["answered_or_failed"] - counts["errors"] >= len(plan)
        if finished:
            store.finish_judge_run(rid)
        if evidence_path is not None and not (
            not resumed and _reorder_evidence(evidence_path, {c.call_id: i for i, c in enumerate(plan)})
        ):
            write_evidence(store, rid, evidence_path)
        samples: tuple[str, ...] = ()
        if counts["errors"]:
            frame = store.run_judgements(rid)
            failed = frame[frame["status"] == "error"]
            samples = tuple(
                f"{row.call_id}: {row.error}" for row in failed.head(5).itertuples(index=False)
            )
    return RunSummary(
        run_id=rid,
        planned=len(plan),
        answered_before=len(plan) - len(pending),
        issued=tally.issued,
        parsed=int(counts["parsed"]),
        parse_failures=int(counts["parse_failures"]),
        errors=int(counts["errors"]),
        cached=int(counts["cached"]),
        cost_usd=tally.cost_usd,
        input_tokens=tally.input_tokens,
        output_tokens=tally.output_tokens,
        elapsed_s=time.monotonic() - started,
        resumed=resumed,
        finished=finished,
        evidence_path=None if evidence_path is None else str(evidence_path),
        error_samples=samples,
    )


@dataclass
class _Tally:
    """What one execution has sent and spent so far (for the progress bar and the summary).

    Attributes:
        issued: Requests sent to the judge (a batch counts each of its requests).
        cost_usd: Money the written replies cost at the price the judge reported.
        unpriced: Written replies the price table could not price.
        input_tokens: Prompt tokens billed by the written replies.
        output_tokens: Completion tokens billed by the written replies.
    """

    issued: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, records: Iterable[JudgementRecord]) -> None:
        """Count the replies just written (cache hits and failures spent nothing)."""
        for rec in records:
            if rec.source != "judge" or rec.error is not None:
                continue
            if rec.cost_usd is None:
                self.unpriced += 1
            else:
                self.cost_usd += rec.cost_usd
            self.input_tokens += rec.input_tokens
            self.output_tokens += rec.output_tokens


@dataclass
class _Execution:
    """One execution of a run: serves cache hits, then makes each distinct request once.

    ``failures`` holds, by cache key, why a request got no reply, so that the identical calls
    that were waiting for it are recorded as failed with the same kind.
    """

    judge: Judge
    rubric: Rubric
    rid: str
    sink: _Sink
    tally: _Tally
    keys: Mapping[str, str]
    seqs: Mapping[str, int]
    failures: dict[str, Failure] = field(default_factory=dict)

    def record(self, call: PlannedCall, **outcome: Any) -> JudgementRecord:
        return _record(
            self.rid, call, self.keys[call.call_id], seq=self.seqs[call.call_id], **outcome
        )

    async def run(
        self,
        pending: list[PlannedCall],
        hits: Mapping[str, Mapping[str, Any]],
        *,
        concurrency: int,
        batch: bool,
        poll_interval: float,
    ) -> None:
        """Record ``hits`` (cached replies by key), then call for the rest."""
        if not pending:
            return
        store = self.sink.store
        await self.sink.put(
            self.record(c, cached=hits[self.keys[c.call_id]])
            for c in pending
            if self.keys[c.call_id] in hits
        )
        leaders: dict[str, PlannedCall] = {}
        followers: list[PlannedCall] = []
        for call in pending:
            key = self.keys[call.call_id]
            if key in hits:
                continue
            if key in leaders:
                followers.append(call)
            else:
                leaders[key] = call
        if batch:
            await self.run_batch(list(leaders.values()), poll_interval=poll_interval)
        else:
            await self.run_concurrent(list(leaders.values()), concurrency=concurrency)
        if not followers:
            return
        # Identical requests were made once; the rest reuse that reply as cache hits.
        await self.sink.flush()
        hits = await asyncio.to_thread(
            store.cached_replies, [self.keys[c.call_id] for c in followers]
        )
        records = []
        for call in followers:
            key = self.keys[call.call_id]
            if key in hits:
                records.append(self.record(call, cached=hits[key]))
            else:
                failed = self.failures.get(key, Failure("api_error", "no reply"))
                reason = f"identical call {leaders[key].call_id} failed: {failed.reason}"
                records.append(self.record(call, failure=Failure(failed.kind, reason)))
        await self.sink.put(records)

    async def call(self, call: PlannedCall) -> Judgement:
        rubric = call.rubric or self.rubric
        if call.kind == "pairwise":
            assert call.answer_b is not None  # checked by _check_plan
            return await self.judge.compare(
                call.prompt, call.answer, call.answer_b, rubric, call.format
            )
        return await self.judge.score(call.prompt, call.answer, rubric, call.format)

    async def run_concurrent(self, calls: list[PlannedCall], *, concurrency: int) -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one(call: PlannedCall) -> None:
            async with gate:
                self.tally.issued += 1
                try:
                    judgement = await self.call(call)
                except JudgeError as exc:
                    failure = Failure("api_error", str(exc))
                    self.failures[self.keys[call.call_id]] = failure
                    record = self.record(call, failure=failure)
                else:
                    record = self.record(call, judgement=judgement)
            await self.sink.put([record])

        tasks = [asyncio.create_task(one(call)) for call in calls]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def run_batch(self, calls: list[PlannedCall], *, poll_interval: float) -> None:
        """Submit the calls as one Message Batch, wait, collect and record every result.

        The batch id is stored with the run before waiting, so an execution that dies while
        the batch runs collects that batch on resume instead of submitting (and paying) again.
        """
        if not calls:
            return
        store = self.sink.store
        by_key = {self.keys[c.call_id]: c for c in calls}
        requests = {key: build_request(self.judge, self.rubric, c) for key, c in by_key.items()}
        done: set[str] = set()
        run = await asyncio.to_thread(store.judge_run, self.rid)
        for entry in (run or {}).get("batches", []):
            if entry.get("collected"):
                continue
            ids = [cid for cid in entry["custom_ids"] if cid in requests and cid not in done]
            if ids:
                await self.collect(entry["batch_id"], {c: requests[c] for c in ids}, by_key,
                                   poll_interval=poll_interval)
                done.update(ids)
            await asyncio.to_thread(store.mark_batch_collected, self.rid, entry["batch_id"])
        remaining = {cid: call for cid, call in requests.items() if cid not in done}
        if not remaining:
            return
        submit = self.judge.submit_batch  # type: ignore[attr-defined]  # checked in arun_plan
        batch_id = await submit(remaining)
        self.tally.issued += len(remaining)
        await asyncio.to_thread(store.add_run_batch, self.rid, batch_id, list(remaining))
        await self.collect(batch_id, remaining, by_key, poll_interval=poll_interval)
        await asyncio.to_thread(store.mark_batch_collected, self.rid, batch_id)

    async def collect(
        self,
        batch_id: str,
        requests: Mapping[str, JudgeCall],
        by_key: Mapping[str, PlannedCall],
        *,
        poll_interval: float,
    ) -> None:
        judge: Any = self.judge
        await judge.wait_batch(batch_id, poll_interval=poll_interval)
        results: Mapping[str, Judgement] = await judge.collect_batch(batch_id, calls=requests)
        records = []
        for cid, judgement in results.items():
            call = by_key[cid]
            failure = judgement.failure
            if failure is not None and failure.no_reply:
                # No reply at all (errored, expired, canceled, missing): a failure, retried by
                # a resume, never a parse failure and never a score.
                self.failures[cid] = failure
                records.append(self.record(call, failure=failure))
                continue
            if judgement.passed is None and call.kind == "pointwise" and judgement.value is not None:
                passed = passed_for(call.rubric or self.rubric, call.format, judgement.value)
                judgement = replace(judgement, passed=passed)
            records.append(self.record(call, judgement=judgement))
        await self.sink.put(records)


def run_plan(plan: Sequence[PlannedCall], judge: Judge, store: Store, **kwargs: Any) -> RunSummary:
    """Synchronous :func:`arun_plan` (same arguments)."""
    return asyncio.run(arun_plan(plan, judge, store, **kwargs))
