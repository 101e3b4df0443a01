"""The Message Batches path of a run: submit every uncached call as one batch, wait, collect.

The batch id is stored with the run before waiting, so an execution that dies while the batch
runs collects that batch on resume instead of submitting (and paying) again. The records are
the same as those of the concurrent path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from calibration.formats import passed_for
from calibration.judges._base import Judge, JudgeCall, Judgement
from calibration.runner._plan import PlannedCall, build_request
from calibration.runner._sink import Ledger
from labeler.models import Rubric

__all__ = ["check_batch_judge", "run_batch"]

_BATCH_METHODS = ("submit_batch", "wait_batch", "collect_batch")


def check_batch_judge(judge: Judge) -> None:
    """Refuse a judge without the Message Batches methods (``submit``, ``wait``, ``collect``)."""
    if not all(hasattr(judge, name) for name in _BATCH_METHODS):
        raise ValueError(
            f"run_plan: judge {type(judge).__name__} has no Message Batches methods; "
            "drop --batch or use the anthropic judge"
        )


async def run_batch(
    judge: Judge,
    rubric: Rubric,
    ledger: Ledger,
    calls: list[PlannedCall],
    *,
    poll_interval: float,
) -> None:
    """Submit the calls as one Message Batch, wait, collect and record every result.

    Batches of this run that an earlier execution submitted but did not collect are collected
    first; only the calls none of them holds are submitted.
    """
    if not calls:
        return
    store = ledger.sink.store
    by_key = {ledger.keys[c.call_id]: c for c in calls}
    requests = {key: build_request(judge, rubric, c) for key, c in by_key.items()}
    done: set[str] = set()
    run = await asyncio.to_thread(store.judge_run, ledger.rid)
    for entry in (run or {}).get("batches", []):
        if entry.get("collected"):
            continue
        ids = [cid for cid in entry["custom_ids"] if cid in requests and cid not in done]
        if ids:
            await _collect(judge, rubric, ledger, entry["batch_id"], {c: requests[c] for c in ids},
                           by_key, poll_interval=poll_interval)
            done.update(ids)
        await asyncio.to_thread(store.mark_batch_collected, ledger.rid, entry["batch_id"])
    remaining = {cid: call for cid, call in requests.items() if cid not in done}
    if not remaining:
        return
    submit = judge.submit_batch  # type: ignore[attr-defined]  # checked by check_batch_judge
    batch_id = await submit(remaining)
    ledger.tally.issued += len(remaining)
    await asyncio.to_thread(store.add_run_batch, ledger.rid, batch_id, list(remaining))
    await _collect(judge, rubric, ledger, batch_id, remaining, by_key, poll_interval=poll_interval)
    await asyncio.to_thread(store.mark_batch_collected, ledger.rid, batch_id)


async def _collect(
    judge: Judge,
    rubric: Rubric,
    ledger: Ledger,
    batch_id: str,
    requests: Mapping[str, JudgeCall],
    by_key: Mapping[str, PlannedCall],
    *,
    poll_interval: float,
) -> None:
    batcher: Any = judge
    await batcher.wait_batch(batch_id, poll_interval=poll_interval)
    results: Mapping[str, Judgement] = await batcher.collect_batch(batch_id, calls=requests)
    records = []
    for cid, judgement in results.items():
        call = by_key[cid]
        failure = judgement.failure
        if failure is not None and failure.no_reply:
            # No reply at all (errored, expired, canceled, missing): a failure, retried by
            # a resume, never a parse failure and never a score.
            ledger.failures[cid] = failure
            records.append(ledger.record(call, failure=failure))
            continue
        if judgement.passed is None and call.kind == "pointwise" and judgement.value is not None:
            passed = passed_for(call.rubric or rubric, call.format, judgement.value)
            judgement = replace(judgement, passed=passed)
        records.append(ledger.record(call, judgement=judgement))
    await ledger.sink.put(records)
