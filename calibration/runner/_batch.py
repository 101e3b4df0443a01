"""The batch path of a run: split the uncached calls into batches, submit, wait, collect.

The judge is a :class:`~judgelab.calibration.judges.BatchJudge`: Anthropic's Message Batches or OpenAI's
Batch API (a file of requests, a batch marked in its metadata); the path below is the same.

A batch holds at most :data:`MAX_BATCH_REQUESTS` requests and :data:`MAX_BATCH_BYTES` of
request body (the API's limits), so a large run is split into several. Each batch is recorded
in the project database *before* it is created (write-ahead, ``judge_batches`` and
``judge_batch_calls``, migration 011) and its id as soon as the API returns it, so whatever
moment an execution dies at, the next one finds every batch it started:

* an intent without an id: the batch may exist upstream (the create reached the API but the
  id never came back). Its custom ids carry a tag drawn for that intent alone
  (:mod:`judgelab.calibration.judges._identity`), so the judge looks for the batch of exactly those ids
  (:meth:`~judgelab.calibration.judges.AnthropicJudge.find_batch`: Anthropic's results once it has
  ended, OpenAI's metadata at once), never one that merely has the same size and age: another
  project on the same key may have one. Found, it is adopted; certainly absent, the intent is
  dropped and its calls go into a new batch; undecidable, it is left in doubt for the user
  (``--adopt-batch ID``), and its calls are not sent again;
* a batch with an id that was not collected: it is waited for and collected (one whose files
  named fewer requests than it answered is read again, never re-sent);
* a collected batch: its results are in the database already.

No batch is created twice and no result is lost. The records are those of the concurrent path.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from judgelab.calibration.formats import passed_for
from judgelab.calibration.judges._anthropic import BatchReadShort, JudgeCallError
from judgelab.calibration.judges._base import Failure, Judge, JudgeCall, Judgement
from judgelab.calibration.judges._identity import BatchInDoubt, key_prefix, new_tag, wire_id
from judgelab.calibration.judges._protocols import BatchJudge
from judgelab.calibration.runner._plan import PlannedCall, build_request
from judgelab.calibration.runner._sink import Ledger
from judgelab.labeler.errors import JudgeError
from judgelab.labeler.models import Rubric
from judgelab.labeler.store import JudgeRole

__all__ = ["MAX_BATCH_BYTES", "MAX_BATCH_REQUESTS", "batch_limits", "check_batch_judge", "run_batch", "split_batches"]

MAX_BATCH_REQUESTS = 100_000
"""Most requests the Message Batches API takes in one batch."""

MAX_BATCH_BYTES = 256 * 1024 * 1024
"""Largest request body (bytes) the Message Batches API takes for one batch."""

# Bytes of the body around the requests (``{"requests": [...]}``) and between two of them.
_ENVELOPE_BYTES = 16
_SEPARATOR_BYTES = 2


def check_batch_judge(judge: Judge) -> BatchJudge:
    """The judge as a :class:`~judgelab.calibration.judges.BatchJudge`; refuse one without batch methods."""
    if not isinstance(judge, BatchJudge):
        raise ValueError(
            f"run_plan: judge {type(judge).__name__} has no Message Batches methods (no batch API); "
            "drop --batch or use the anthropic or openai judge"
        )
    return judge


def batch_limits(judge: Judge) -> tuple[int, int]:
    """The most requests and bytes one batch of ``judge``'s provider may hold.

    A judge states its provider's limits as ``max_batch_requests`` and ``max_batch_bytes``
    (OpenAI's Batch API: 50,000 requests and a 200 MB input file); a judge that states none
    gets the Message Batches API's (:data:`MAX_BATCH_REQUESTS`, :data:`MAX_BATCH_BYTES`).
    """
    requests = getattr(judge, "max_batch_requests", None)
    size = getattr(judge, "max_batch_bytes", None)
    return (requests if isinstance(requests, int) else MAX_BATCH_REQUESTS,
            size if isinstance(size, int) else MAX_BATCH_BYTES)


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
    adopt: Sequence[str] = (),
) -> None:
    """Submit the calls as provider batches within the API's limits; wait, collect, record all.

    Batches of this run that an earlier execution started (recorded, created, or not yet
    collected) are found and collected first; only the calls none of them holds are
    submitted, each new batch recorded (with a fresh tag in its custom ids) before it is
    created. A batch whose id was lost is looked for by those custom ids (never by size and
    time), or taken from ``adopt`` (``--adopt-batch``: checked the same way); one that cannot
    be told from another run's is left in doubt (:attr:`Ledger.doubts`): its calls are
    neither re-sent nor given up, and the run stays unfinished. ``max_requests`` and
    ``max_bytes`` default to the judge's provider's limits (:func:`batch_limits`).
    """
    if not calls:
        return
    check_batch_judge(judge)
    by_key = {ledger.keys[c.call_id]: c for c in calls}
    requests = {key: build_request(judge, rubric, c) for key, c in by_key.items()}
    by_prefix = {key_prefix(wire_id("jl000000000000", key)): key for key in requests}

    def key_of(custom_id: str) -> str | None:
        # Custom ids recorded before batch tags existed are the cache keys themselves.
        return custom_id if custom_id in requests else by_prefix.get(key_prefix(custom_id))

    done = await _earlier_batches(judge, rubric, ledger, requests, by_key, key_of, poll_interval, adopt)
    remaining = {key: call for key, call in requests.items() if key not in done}
    if remaining:
        await _new_batches(judge, rubric, ledger, remaining, by_key, poll_interval,
                           max_requests=max_requests, max_bytes=max_bytes)


async def _earlier_batches(
    judge: Judge, rubric: Rubric, ledger: Ledger, requests: Mapping[str, JudgeCall],
    by_key: Mapping[str, PlannedCall], key_of: Callable[[str], str | None], poll_interval: float,
    adopt: Sequence[str],
) -> set[str]:
    """Collect the batches an earlier execution of this run started; the cache keys they settled.

    The keys of a batch left in doubt are among them: not sent again, not given up.
    """
    store = ledger.sink.store
    batcher = check_batch_judge(judge)
    done: set[str] = set()
    for entry in await asyncio.to_thread(store.run_batches, ledger.rid):
        if entry["collected"]:
            continue
        batch_id = entry["batch_id"]
        wire = {cid: key for cid in entry["custom_ids"] if (key := key_of(cid)) is not None}
        if batch_id is None:
            # Recorded, then the create reply was lost or the execution died: was it created?
            try:
                batch_id = await _lost_batch(batcher, store, entry, adopt, poll_interval)
            except BatchInDoubt as exc:
                ledger.doubts.append(_doubt_text(exc, entry["batch_no"]))
                done.update(wire.values())  # neither re-sent nor given up: the user decides
                continue
            if batch_id is None:
                await asyncio.to_thread(store.drop_batch_intent, ledger.rid, entry["batch_no"])
                continue
            await asyncio.to_thread(store.set_batch_id, ledger.rid, entry["batch_no"], batch_id)
        ids = {cid: key for cid, key in wire.items() if key not in done}
        if ids:
            read = await _collect(judge, rubric, ledger, batch_id, {c: requests[k] for c, k in ids.items()}, ids,
                                  by_key, poll_interval=poll_interval, collected_earlier=True,
                                  batch_no=entry["batch_no"])
            done.update(ids.values())  # unread, its calls still wait in it: never sent again
            if not read:
                continue
            ledger.tally.collected_batches += 1
        await asyncio.to_thread(store.mark_batch_collected, ledger.rid, entry["batch_no"])
    return done


async def _new_batches(
    judge: Judge, rubric: Rubric, ledger: Ledger, remaining: Mapping[str, JudgeCall],
    by_key: Mapping[str, PlannedCall], poll_interval: float, *, max_requests: int | None, max_bytes: int | None,
) -> None:
    """Submit ``remaining`` (by cache key) as new batches, each recorded before it is created; collect them."""
    store = ledger.sink.store
    batcher = check_batch_judge(judge)
    sizes = [(key, len(json.dumps(batcher.batch_requests({key: call})[0]).encode())) for key, call in remaining.items()]
    submitted: list[tuple[int, str, dict[str, str]]] = []
    most_requests, most_bytes = batch_limits(judge)
    limits = {"max_requests": max_requests or most_requests, "max_bytes": max_bytes or most_bytes}
    for chunk in split_batches(sizes, **limits):
        # A tag only this intent has: its batch is told from any other by its custom ids.
        tag = new_tag()
        wire = {wire_id(tag, key): key for key in chunk}
        n_bytes = sum(size for key, size in sizes if key in wire.values())
        batch_no, intent_at = await asyncio.to_thread(store.plan_run_batch, ledger.rid, list(wire), n_bytes=n_bytes)
        claimed = await asyncio.to_thread(store.known_batch_ids)
        try:
            batch_id = await batcher.submit_batch({cid: remaining[key] for cid, key in wire.items()},
                                                  since=intent_at, exclude=claimed, poll_interval=poll_interval)
        except BatchInDoubt as exc:
            ledger.doubts.append(_doubt_text(exc, batch_no))
            continue
        except JudgeError as exc:
            # Refused, or no attempt got through: every call of the batch failed (recorded with
            # why; a re-run looks for the batch once more, then retries them).
            failure = Failure("api_error", str(exc))
            for key in chunk:
                ledger.failures[key] = failure
            await ledger.sink.put(ledger.record(by_key[key], failure=failure) for key in chunk)
            ledger.tally.failed_submissions += 1
            continue
        ledger.tally.issued += len(wire)
        ledger.tally.batches_created += 1
        ledger.tally.batch_requests_created += len(wire)
        await asyncio.to_thread(store.set_batch_id, ledger.rid, batch_no, batch_id)
        submitted.append((batch_no, batch_id, wire))
    for batch_no, batch_id, wire in submitted:
        if await _collect(judge, rubric, ledger, batch_id, {c: remaining[k] for c, k in wire.items()}, wire,
                          by_key, poll_interval=poll_interval, batch_no=batch_no):
            await asyncio.to_thread(store.mark_batch_collected, ledger.rid, batch_no)


async def _lost_batch(
    batcher: BatchJudge, store: JudgeRole, entry: Mapping[str, Any], adopt: Sequence[str], poll_interval: float
) -> str | None:
    """The upstream batch of an intent whose id was lost: named by the user, or found by its custom ids.

    Raises:
        BatchInDoubt: The named batch is not this intent's, or candidates cannot be checked.
    """
    claimed = await asyncio.to_thread(store.known_batch_ids)
    ids = list(entry["custom_ids"])
    named = [b for b in adopt if b not in claimed]
    if named:
        # The user's word is checked like any other candidate: only exactly these custom ids.
        failures: list[BatchInDoubt] = []
        for batch_id in named:
            try:
                await batcher.check_batch(batch_id, ids, poll_interval=poll_interval)
            except BatchInDoubt as exc:
                failures.append(exc)
                continue
            return batch_id
        raise BatchInDoubt("; ".join(str(f) for f in failures), candidates=named, custom_ids=ids)
    return await batcher.find_batch(ids, since=entry["intent_at"], exclude=claimed, poll_interval=poll_interval)


def _doubt_text(exc: BatchInDoubt, batch_no: int) -> str:
    """What the summary says about a batch left in doubt, with the fix."""
    first = exc.candidates[0] if exc.candidates else "BATCH_ID"
    return (
        f"batch {batch_no}: {exc}. Its calls were not sent again (that could pay twice). Fix: if you "
        f"know which batch is this run's, run the same command with --adopt-batch {first} (judgelab "
        "checks that it holds exactly this run's requests); or wait until the batches listed have "
        "ended and run the same command again."
    )


async def _collect(
    judge: Judge,
    rubric: Rubric,
    ledger: Ledger,
    batch_id: str,
    requests: Mapping[str, JudgeCall],
    keys: Mapping[str, str],
    by_key: Mapping[str, PlannedCall],
    *,
    poll_interval: float,
    collected_earlier: bool = False,
    batch_no: int = 0,
) -> bool:
    """Wait for a batch, then record the result of each of ``requests`` (by custom id; ``keys``: their cache keys).

    Returns:
        Whether the batch was read. A batch whose status or files could not be read after
        retries (:class:`~judgelab.calibration.judges.JudgeCallError`) is left uncollected
        (:attr:`Ledger.unread`): created and billed, its results wait upstream for the next
        execution, which collects it; its calls are neither sent again nor failed. So is a
        batch whose files, read again, still name fewer requests than it answered
        (:class:`~judgelab.calibration.judges.BatchReadShort`), once the results that were read are stored.
    """
    batcher = check_batch_judge(judge)
    try:
        await batcher.wait_batch(batch_id, poll_interval=poll_interval)
        # A batch found again may hold calls answered since (its results were stored, then the
        # execution died before marking it collected): only the pending ones are recorded.
        results: Mapping[str, Judgement] = await batcher.collect_batch(batch_id, calls=requests,
                                                                       skip_unknown=True)
    except BatchReadShort as exc:
        # What was read is kept; the rest the batch answered (and billed) waits in its files
        # for the next execution: neither recorded as missing nor sent again.
        await _record(rubric, ledger, exc.results, keys, by_key, collected_earlier=collected_earlier)
        left = len(requests) - len(exc.results)
        ledger.unread.append(
            f"batch {batch_no} ({batch_id}): {exc}. The {len(exc.results)} result(s) read are stored; its other "
            f"{left} call(s) were neither recorded as missing nor sent again (the batch answered them and is "
            "billed for them). Fix: run the same command again; it reads this batch again."
        )
        return False
    except JudgeCallError as exc:
        why = str(exc).split(" Fix: ", 1)[0]  # its own fix ("only the failed calls are sent") is not this one
        ledger.unread.append(
            f"batch {batch_no} ({batch_id}) could not be read: {why} Its {len(requests)} call(s) were not sent "
            "again (the batch is created and billed; its results wait upstream). Fix: run the same command "
            "again; it collects this batch."
        )
        return False
    await _record(rubric, ledger, results, keys, by_key, collected_earlier=collected_earlier)
    return True


async def _record(
    rubric: Rubric, ledger: Ledger, results: Mapping[str, Judgement], keys: Mapping[str, str],
    by_key: Mapping[str, PlannedCall], *, collected_earlier: bool,
) -> None:
    """Record a batch's results (by custom id; ``keys``: their cache keys)."""
    records = []
    for cid, judgement in results.items():
        key = keys[cid]
        call = by_key[key]
        failure = judgement.failure
        if failure is not None and failure.no_reply:
            # No reply at all (errored, expired, canceled, missing): a failure, retried by
            # a resume, never a parse failure and never a score.
            ledger.failures[key] = failure
            records.append(ledger.record(call, failure=failure))
            continue
        if judgement.passed is None and call.kind == "pointwise" and judgement.value is not None:
            passed = passed_for(call.rubric or rubric, call.format, judgement.value)
            judgement = replace(judgement, passed=passed)
        records.append(ledger.record(call, judgement=judgement))
        if collected_earlier:
            ledger.tally.collected += 1
    await ledger.sink.put(records)
