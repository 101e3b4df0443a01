"""One execution of a run: serve the cache hits, then make each distinct request once.

Calls run concurrently under a bound (``concurrency``), or as one Message Batch
(:mod:`judgelab.calibration.runner._batch`). Identical requests inside one plan are made once; the
calls that share a request reuse its reply as cache hits, or its failure.

Retries and rate limits are not handled here: they are the judge's (the SDK retries each
request, and :class:`judgelab.calibration.judges._transport.RateGovernor` paces them). A
:class:`~judgelab.labeler.errors.JudgeError` reaching this module means the judge gave up on the
request; it is recorded as a failed call, and the run goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from judgelab.calibration import formats
from judgelab.calibration.formats import passed_for
from judgelab.calibration.judges._base import Failure, Judge, JudgeCall, Judgement
from judgelab.calibration.judges._protocols import BuildingJudge
from judgelab.calibration.judges._provider import ProviderJudge
from judgelab.calibration.runner._batch import run_batch
from judgelab.calibration.runner._plan import PlannedCall, build_request
from judgelab.calibration.runner._sink import Ledger
from judgelab.labeler.errors import JudgeError
from judgelab.labeler.models import Rubric

__all__ = ["Execution"]


def _sends_as_built(judge: Judge) -> bool:
    """Whether ``judge``'s score and compare are its ``run`` of the request it builds (an SDK judge's)."""
    kind = type(judge)
    return (issubclass(kind, ProviderJudge) and kind.score is ProviderJudge.score
            and kind.compare is ProviderJudge.compare)


@dataclass
class Execution:
    """One execution of a run: the judge, the run's rubric, and the :class:`Ledger` it books to.

    ``requests`` holds each planned call's request as the run built it for its cache key (by
    call id): an SDK judge sends that very request instead of building it again.
    """

    judge: Judge
    rubric: Rubric
    ledger: Ledger
    requests: Mapping[str, JudgeCall] = field(default_factory=dict)

    async def run(
        self,
        pending: list[PlannedCall],
        hits: Mapping[str, Mapping[str, Any]],
        *,
        concurrency: int,
        batch: bool,
        poll_interval: float,
        adopt: tuple[str, ...] = (),
    ) -> None:
        """Record ``hits`` (cached replies by key), then call for the rest (``adopt``: ``--adopt-batch`` ids)."""
        if not pending:
            return
        ledger = self.ledger
        keys = ledger.keys
        store = ledger.sink.store
        await ledger.sink.put(
            ledger.record(c, cached=self.reread(c, hits[keys[c.call_id]]))
            for c in pending
            if keys[c.call_id] in hits
        )
        leaders: dict[str, PlannedCall] = {}
        followers: list[PlannedCall] = []
        for call in pending:
            key = keys[call.call_id]
            if key in hits:
                continue
            if key in leaders:
                followers.append(call)
            else:
                leaders[key] = call
        if batch:
            await run_batch(
                self.judge, self.rubric, ledger, list(leaders.values()), poll_interval=poll_interval, adopt=adopt
            )
        else:
            await self.run_concurrent(list(leaders.values()), concurrency=concurrency)
        if not followers:
            return
        # Identical requests were made once; the rest reuse that reply as cache hits.
        await ledger.sink.flush()
        hits = await asyncio.to_thread(store.cached_replies, [keys[c.call_id] for c in followers])
        records = []
        for call in followers:
            key = keys[call.call_id]
            if key in hits:
                records.append(ledger.record(call, cached=self.reread(call, hits[key])))
            else:
                failed = ledger.failures.get(key, Failure("api_error", "no reply"))
                reason = f"identical call {leaders[key].call_id} failed: {failed.reason}"
                records.append(ledger.record(call, failure=Failure(failed.kind, reason)))
        await ledger.sink.put(records)

    def reread(self, call: PlannedCall, row: Mapping[str, Any]) -> Mapping[str, Any]:
        """A stored reply read again by the judge spec's verdict rule as it stands now.

        The rule is not part of the cache key (it is not sent: the key is what is sent), so a
        spec whose rule was edited reuses the stored replies and reads them under the new
        rule instead of buying them again. Without a spec the built-in reading stands.
        """
        spec = self.judge.spec if isinstance(self.judge, BuildingJudge) else None
        raw = row.get("raw")
        if spec is None or not isinstance(raw, str) or not raw:
            return row
        result = formats.parse(call.format, raw, spec=spec)
        passed = passed_for(call.rubric or self.rubric, call.format, result.value) if call.kind == "pointwise" else None
        return {**row, "value": result.value, "parse_error": result.error, "passed": passed}

    async def call(self, call: PlannedCall) -> Judgement:
        """Ask the judge for ``call`` (its own rubric, else the run's)."""
        rubric = call.rubric or self.rubric
        judge = self.judge
        built = self.requests.get(call.call_id)
        if built is not None and isinstance(judge, ProviderJudge) and _sends_as_built(judge):
            return await judge.run(built, rubric)
        if (call.task_id is not None and isinstance(judge, BuildingJudge) and judge.spec is not None
                and judge.spec.uses("reference")):
            # A spec's reference answer is the call's task's: send the very request the cache
            # key was made of (score/compare know only the prompt, which two tasks may share).
            return await judge.run(build_request(judge, self.rubric, call), rubric)
        if call.kind == "pairwise":
            assert call.answer_b is not None  # checked by check_plan
            return await self.judge.compare(
                call.prompt, call.answer, call.answer_b, rubric, call.format
            )
        return await self.judge.score(call.prompt, call.answer, rubric, call.format)

    async def run_concurrent(self, calls: list[PlannedCall], *, concurrency: int) -> None:
        """Make the calls, at most ``concurrency`` in flight; each result is put as it arrives."""
        ledger = self.ledger
        gate = asyncio.Semaphore(concurrency)

        async def one(call: PlannedCall) -> None:
            async with gate:
                ledger.tally.issued += 1
                try:
                    judgement = await self.call(call)
                except JudgeError as exc:
                    failure = Failure("api_error", str(exc))
                    ledger.failures[ledger.keys[call.call_id]] = failure
                    record = ledger.record(call, failure=failure)
                else:
                    record = ledger.record(call, judgement=judgement)
            await ledger.sink.put([record])

        tasks = [asyncio.create_task(one(call)) for call in calls]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
