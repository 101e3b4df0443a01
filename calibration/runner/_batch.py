"""The batch path of a run: split the uncached calls into batches, submit, wait, collect.

The judge is a :class:`~calibration.judges.BatchJudge`: Anthropic's Message Batches or OpenAI's
Batch API (a file of requests, a batch marked in its metadata); the path below is the same.

A batch holds at most :data:`MAX_BATCH_REQUESTS` requests and :data:`MAX_BATCH_BYTES` of
request body (the API's limits), so a large run is split into several. Each batch is recorded
in the project database *before* it is created (write-ahead, ``judge_batches`` and
``judge_batch_calls``, migration 011) and its id as soon as the API returns it, so whatever
moment an execution dies at, the next one finds every batch it started:

* an intent without an id: the batch may exist upstream (the create reached the API but the
  id never came back); the judge looks for it among the batches the API lists
  (:meth:`~calibration.judges.AnthropicJudge.find_batch`: created after the intent, same
  request count, not claimed by another record) and adopts it, else the intent is dropped and
  its calls go into a new batch;
* a batch with an id that was not collected: it is waited for and collected;
* a collected batch: its results are in the database already.

No batch is created twice and no result is lost. The records are those of the concurrent path.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from dataclasses import replace

from calibration.formats import passed_for
from calibration.judges._base import Judge, JudgeCall, Judgement
from calibration.judges._protocols import BatchJudge
from calibration.runner._plan import PlannedCall, build_request
from calibration.runner._sink import Ledger
from labeler.models import Rubric

__all__ = ["MAX_BATCH_BYTES", "MAX_BATCH_REQUESTS", "check_batch_judge", "run_batch", "split_batches"]

MAX_BATCH_REQUESTS = 100_000
"""Most requests the Message Batches API takes in one batch."""

MAX_BATCH_BYTES = 256 * 1024 * 1024
"""Largest request body (bytes) the Message Batches API takes for one batch."""

# Bytes of the body around the requests (``{"requests": [...]}``) and between two of them.
_ENVELOPE_BYTES = 16
_SEPARATOR_BYTES = 2


def check_batch_judge(judge: Judge) -> BatchJudge:
    """The judge as a :class:`~calibration.judges.BatchJudge`; refuse one without batch methods."""
    if not isinstance(judge, BatchJudge):
        raise ValueError(
            f"run_plan: judge {type(judge).__name__} has no Message Batches methods (no batch API); "
            "drop --batch or use the anthropic or openai judge"
        )
    return judge


def split_batches(
    sizes: Iterable[tuple[str, int]],
    *,
    max_requests: int = MAX_BATCH_REQUESTS,
    max_bytes: int = MAX_BATCH_BYTES,
) -> list[list[str]]:
    """Split requests into batches within the API's limits, in the order given.

    Args:
        sizes: ``(custom_id, bytes of its JSON request)`` pairs.
        max_requests: Most requests per batch.
        max_bytes: Most bytes of request body per batch.

    Returns:
        The custom ids of each batch.

    Raises:
        ValueError: If one request alone is larger than ``max_bytes``.

    >>> split_batches([("a", 10), ("b", 10), ("c", 10)], max_requests=2)
    [['a', 'b'], ['c']]
    >>> split_batches([("a", 10), ("b", 10), ("c", 10)], max_bytes=45)
    [['a', 'b'], ['c']]
    """
    batches: list[list[str]] = []
    current: list[str] = []
    used = _ENVELOPE_BYTES
    for custom_id, size in sizes:
        if size + _ENVELOPE_BYTES > max_bytes:
            raise ValueError(
                f"batch request {custom_id} is {size:,} bytes, more than a whole batch may hold "
                f"({max_bytes:,}); shorten the prompt or drop --batch"
            )
        if current and (len(current) >= max_requests or used + _SEPARATOR_BYTES + size > max_bytes):
            batches.append(current)
            current, used = [], _ENVELOPE_BYTES
        current.append(custom_id)
        used += size + _SEPARATOR_BYTES
    if current:
        batches.append(current)
    return batches


async def run_batch(
    judge: Judge,
    rubric: Rubric,
    ledger: Ledger,
    calls: list[PlannedCall],
    *,
    poll_interval: float,
    max_requests: int | None = None,
    max_bytes: int | None = None,
) -> None:
    """Submit the calls as Message Batches within the API's limits; wait, collect, record all.

    Batches of this run that an earlier execution started (recorded, created, or not yet
    collected) are found and collected first; only the calls none of them holds are
    submitted, each new batch recorded before it is created. ``max_requests`` and
    ``max_bytes`` default to the API's limits (:data:`MAX_BATCH_REQUESTS`,
    :data:`MAX_BATCH_BYTES`).
    """
    if not calls:
        return
    store = ledger.sink.store
    batcher = check_batch_judge(judge)
    by_key = {ledger.keys[c.call_id]: c for c in calls}
    requests = {key: build_request(judge, rubric, c) for key, c in by_key.items()}
    done: set[str] = set()
    for entry in await asyncio.to_thread(store.run_batches, ledger.rid):
        if entry["collected"]:
            continue
        batch_id = entry["batch_id"]
        if batch_id is None:
            # Recorded, then the execution died: was it created upstream?
            claimed = await asyncio.to_thread(store.known_batch_ids)
            batch_id = await batcher.find_batch(entry["n_requests"], since=entry["intent_at"], exclude=claimed)
            if batch_id is None:
                await asyncio.to_thread(store.drop_batch_intent, ledger.rid, entry["batch_no"])
                continue
            await asyncio.to_thread(store.set_batch_id, ledger.rid, entry["batch_no"], batch_id)
        ids = [cid for cid in entry["custom_ids"] if cid in requests and cid not in done]
        if ids:
            await _collect(judge, rubric, ledger, batch_id, {c: requests[c] for c in ids}, by_key,
                           poll_interval=poll_interval, collected_earlier=True)
            done.update(ids)
            ledger.tally.collected_batches += 1
        await asyncio.to_thread(store.mark_batch_collected, ledger.rid, entry["batch_no"])
    remaining = {cid: call for cid, call in requests.items() if cid not in done}
    if not remaining:
        return
    sizes = [(cid, len(json.dumps(batcher.batch_requests({cid: call})[0]).encode())) for cid, call in remaining.items()]
    submitted: list[tuple[int, str, dict[str, JudgeCall]]] = []
    limits = {"max_requests": max_requests or MAX_BATCH_REQUESTS, "max_bytes": max_bytes or MAX_BATCH_BYTES}
    for chunk in split_batches(sizes, **limits):
        part = {cid: remaining[cid] for cid in chunk}
        n_bytes = sum(size for cid, size in sizes if cid in part)
        batch_no, intent_at = await asyncio.to_thread(store.plan_run_batch, ledger.rid, chunk, n_bytes=n_bytes)
        claimed = await asyncio.to_thread(store.known_batch_ids)
        batch_id = await batcher.submit_batch(part, since=intent_at, exclude=claimed)
        ledger.tally.issued += len(part)
        await asyncio.to_thread(store.set_batch_id, ledger.rid, batch_no, batch_id)
        submitted.append((batch_no, batch_id, part))
    for batch_no, batch_id, part in submitted:
        await _collect(judge, rubric, ledger, batch_id, part, by_key, poll_interval=poll_interval)
        await asyncio.to_thread(store.mark_batch_collected, ledger.rid, batch_no)


async def _collect(
    judge: Judge,
    rubric: Rubric,
    ledger: Ledger,
    batch_id: str,
    requests: Mapping[str, JudgeCall],
    by_key: Mapping[str, PlannedCall],
    *,
    poll_interval: float,
    collected_earlier: bool = False,
) -> None:
    batcher = check_batch_judge(judge)
    await batcher.wait_batch(batch_id, poll_interval=poll_interval)
    # A batch found again may hold calls answered since (its results were stored, then the
    # execution died before marking it collected): only the pending ones are recorded.
    results: Mapping[str, Judgement] = await batcher.collect_batch(batch_id, calls=requests, skip_unknown=True)
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
        if collected_earlier:
            ledger.tally.collected += 1
    await ledger.sink.put(records)
