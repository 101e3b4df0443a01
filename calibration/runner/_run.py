"""Run a plan: open or resume the run, execute it, write the evidence, sum it up.

:func:`arun_plan` is the entry point (:func:`run_plan` its synchronous twin); the package
docstring (:mod:`judgelab.calibration.runner`) says what a run guarantees.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import os
import secrets
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from judgelab.calibration import pricing
from judgelab.calibration.journal import Journal, recover
from judgelab.calibration.judges._anthropic import AnthropicJudge
from judgelab.calibration.judges._base import Judge
from judgelab.calibration.judges._openai import OpenAIJudge
from judgelab.calibration.judges._transport import GovernorStats
from judgelab.calibration.runner._batch import check_batch_judge
from judgelab.calibration.runner._execute import Execution
from judgelab.calibration.runner._plan import (
    PlannedCall,
    build_request,
    check_plan,
    judge_identity,
    plan_hash,
    reading_of,
)
from judgelab.calibration.runner._records import reorder_evidence, write_evidence
from judgelab.calibration.runner._sink import Ledger, Sink
from judgelab.calibration.runner._summary import Billed, PlainProgress, RunInterrupted, RunSummary, Tally, progress_bar
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Rubric
from judgelab.labeler.store import JudgementRecord, JudgeRole

__all__ = ["arun_plan", "run_plan"]


def _new_run_id(phash: str) -> str:
    # Time for the reader, plan prefix for grouping, random tail so two runs of one plan
    # started in the same second never share an id.
    return f"run-{datetime.now(UTC):%Y%m%d-%H%M%S}-{phash[:6]}-{secrets.token_hex(3)}"


def _resolve_run(
    store: JudgeRole, phash: str, resume: str | None, new_run_id: str | None
) -> tuple[str, bool]:
    """Which run to write to: the one named, the newest unfinished run of this plan, or new."""
    if resume is not None:
        run = store.judge_run(resume)
        if run is None:
            raise InputError(
                f"there is no judge run {resume!r} in {store.shown}",
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
    store: JudgeRole,
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
    flush_interval: float = 1.0,
    flush_size: int = 256,
    poll_interval: float = 30.0,
    started: float | None = None,
    adopt_batches: Sequence[str] = (),
) -> RunSummary:
    """Execute ``plan`` with ``judge``, recording every result; see :mod:`judgelab.calibration.runner`.

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
        progress: ``False``: print nothing. Otherwise the run id comes at once on standard
            error, then a progress bar (``True``, or by default when standard error is a
            terminal) or plain progress lines at most every 5 s (by default, when it is not).
        params: The command's options, stored with the run.
        flush_interval: Longest time a finished result waits before it is written to the
            database (it is in the journal already: this bounds the transactions, not what a
            kill loses).
        flush_size: Results written per transaction at most.
        poll_interval: Seconds between batch status polls.
        started: ``time.monotonic()`` when the command's work began (e.g. before the padding
            rewrites of a probe run), so the summary's elapsed time covers it; default now.
        adopt_batches: Batch ids the user names as this run's (``--adopt-batch``), for a batch
            whose create reply was lost; each is checked to hold exactly the lost intent's
            requests before it is adopted.

    Returns:
        The :class:`RunSummary`.

    Raises:
        InputError: ``resume`` names no run, or a run made with a different plan.
        ValueError: Duplicate call ids, ``concurrency < 1``, or ``batch`` with a judge that
            has no batch methods.
    """
    check_plan(plan)
    if concurrency < 1:
        raise ValueError(f"run_plan: concurrency must be at least 1; got {concurrency!r}")
    if batch:
        check_batch_judge(judge)
    # What is alive now (the imported libraries: pandas, DuckDB, the SDK, the plan) outlives the
    # run, yet the cyclic collector walked all of it in every full collection: 7% of a 3,000-call
    # run's time (bench/runner_throughput.py). Frozen, it is skipped; thawed when the run ends.
    gc.freeze()
    try:
        return await _run(
            plan, judge, store, rubric=rubric, judge_kind=judge_kind, evidence=evidence, run_id=run_id,
            resume=resume, concurrency=concurrency, batch=batch, progress=progress, params=params,
            flush_interval=flush_interval, flush_size=flush_size, poll_interval=poll_interval,
            started=started, adopt_batches=tuple(adopt_batches),
        )
    finally:
        gc.unfreeze()


async def _run(
    plan: Sequence[PlannedCall],
    judge: Judge,
    store: JudgeRole,
    *,
    rubric: Rubric,
    judge_kind: str,
    evidence: str | os.PathLike[str] | None,
    run_id: str | None,
    resume: str | None,
    concurrency: int,
    batch: bool,
    progress: bool | None,
    params: Mapping[str, Any] | None,
    flush_interval: float,
    flush_size: int,
    poll_interval: float,
    started: float | None,
    adopt_batches: tuple[str, ...] = (),
) -> RunSummary:
    """:func:`arun_plan` once its arguments are checked."""
    started = time.monotonic() if started is None else started
    # Each request is built once: its hash is the cache key, and an SDK judge sends it as built
    # (building it again per call, with its hash, cost more CPU than the rest of the runner).
    requests = {call.call_id: build_request(judge, rubric, call) for call in plan}
    identity = judge_identity(judge)
    keys = {cid: request.cache_key if not identity
            else hashlib.sha256(f"{request.cache_key}\n{identity}".encode()).hexdigest()
            for cid, request in requests.items()}
    phash = plan_hash(plan, keys, reading=reading_of(judge, plan))
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

    tally = Tally()
    meter = _Meter.of(judge)
    terminal = sys.stderr.isatty()
    show = terminal if progress is None else progress
    bar = progress_bar(show)
    task_id = bar.add_task(
        "judging", total=len(plan), completed=len(plan) - len(pending), spend=0.0, unpriced=0,
        failed=0, retried=0,
    )
    # The run id at once (unless asked for silence), so a killed run can be continued with
    # --resume RUN_ID; not in a terminal (a log file, a pipe, a CI job), plain progress lines
    # follow instead of the bar.
    plain = PlainProgress(rid, len(plan)) if progress is not False else None
    if plain is not None:
        plain.start(len(plan) - len(pending), resumed=resumed)
        if show:
            plain = None  # the bar shows the progress

    def on_write(records: Sequence[JudgementRecord]) -> None:
        tally.add(records)
        retried = meter.retried(tally.issued)
        bar.update(task_id, advance=len(records), spend=tally.cost_usd, unpriced=tally.unpriced,
                   failed=tally.failed, retried=retried)
        if plain is not None:
            plain.advance(len(records), spend=tally.cost_usd, unpriced=tally.unpriced, failed=tally.failed,
                          retried=retried)

    if evidence_path is not None:
        evidence_path.parent.mkdir(parents=True, exist_ok=True)
        if not resumed:
            evidence_path.write_text("", encoding="utf-8")
    sink = Sink(
        store,
        evidence_path,
        model=judge.model,
        judge_family=judge.family,
        flush_interval=flush_interval,
        flush_size=flush_size,
        on_write=on_write,
        journal=Journal.open(store, rid),
    )
    stopped = False
    with bar:
        ticker = asyncio.create_task(sink.ticker())
        ledger = Ledger(rid, sink, tally, keys, {call.call_id: i for i, call in enumerate(plan)})
        try:
            execution = Execution(judge, rubric, ledger, requests)
            await execution.run(
                pending, hits, concurrency=concurrency, batch=batch, poll_interval=poll_interval,
                adopt=adopt_batches,
            )
        except asyncio.CancelledError:
            # Ctrl-C (asyncio.run cancels the main task): what arrived is written below, then
            # the summary goes up with the interruption (RunInterrupted), for the CLI to print.
            stopped = True
        finally:
            ticker.cancel()
            # Whatever finished is written even when the run is failing or cancelled, and a
            # write the cancelled ticker started is waited for before the run is counted.
            try:
                await sink.flush()
                await sink.drain()
            finally:
                sink.close_journal()
    billed = meter.billed(tally)
    with store.connection():
        counts = store.run_counts(rid)
        finished = counts["answered_or_failed"] - counts["errors"] >= len(plan)
        if finished:
            store.finish_judge_run(rid)
        if evidence_path is not None and not (
            not resumed and reorder_evidence(evidence_path, {c.call_id: i for i, c in enumerate(plan)})
        ):
            write_evidence(store, rid, evidence_path)
        samples: tuple[str, ...] = ()
        if counts["errors"]:
            frame = store.run_judgements(rid)
            failed = frame[frame["status"] == "error"]
            samples = tuple(
                f"{row.call_id}: {row.error}" for row in failed.head(5).itertuples(index=False)
            )
    summary = RunSummary(
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
        cache_read_tokens=tally.cache_read_tokens,
        cache_write_tokens=tally.cache_write_tokens,
        collected=tally.collected,
        collected_batches=tally.collected_batches,
        unpriced=tally.unpriced,
        model=judge.model,
        price_table=pricing.load_prices().source if tally.unpriced else "",
        elapsed_s=time.monotonic() - started,
        resumed=resumed,
        finished=finished,
        evidence_path=None if evidence_path is None else str(evidence_path),
        error_samples=samples,
        batches_created=tally.batches_created,
        batch_requests_created=tally.batch_requests_created,
        in_doubt=tuple(ledger.doubts),
        uncollected=tuple(ledger.unread),
        billed_replies=billed.replies,
        billed_retries=billed.retries,
        unknown_retries=billed.unknown,
        provider=meter.stats is not None,
        interrupted=stopped,
    )
    if stopped:
        raise RunInterrupted(summary)
    return summary


class _Meter:
    """What the judge's HTTP attempts since the run began say was billed (an SDK judge's governor)."""

    def __init__(self, stats: GovernorStats | None) -> None:
        self.stats = stats
        self.start = replace(stats) if stats is not None else None

    @classmethod
    def of(cls, judge: Judge) -> _Meter:
        """The meter of ``judge`` (none for a judge without a governor, such as the fake)."""
        governor = judge.governor if isinstance(judge, (AnthropicJudge, OpenAIJudge)) else None
        return cls(governor.stats if governor is not None else None)

    def retried(self, issued: int) -> int:
        """Attempts beyond the first of each request sent so far."""
        if self.stats is None or self.start is None:
            return 0
        return max(self.stats.attempts - self.start.attempts - issued, 0)

    def billed(self, tally: Tally) -> Billed:
        """Replies billed: every 2xx sent back (cut ones too), else the judge's own replies written."""
        if self.stats is None or self.start is None:
            return Billed(replies=tally.judged)
        cut = self.stats.undecodable - self.start.undecodable
        return Billed(replies=self.stats.replies - self.start.replies + cut, retries=cut,
                      unknown=self.stats.no_reply - self.start.no_reply)


def run_plan(plan: Sequence[PlannedCall], judge: Judge, store: JudgeRole, **kwargs: Any) -> RunSummary:
    """Synchronous :func:`arun_plan` (same arguments)."""
    return asyncio.run(arun_plan(plan, judge, store, **kwargs))
