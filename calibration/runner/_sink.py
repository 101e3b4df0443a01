"""Where results go as they arrive: the journal first, then small database batches and the evidence file.

:class:`Sink` makes each result durable the moment it is put (the write-ahead journal,
:mod:`calibration.journal`) and writes it to the database in small batches, one transaction
each. :class:`Ledger` is one execution's bookkeeping around it: which record each outcome
becomes, why a request failed, what was sent.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calibration.journal import Journal
from calibration.judges._base import Failure
from calibration.runner._plan import PlannedCall
from calibration.runner._records import call_record, evidence_row
from calibration.runner._summary import Tally
from labeler.store import JudgementRecord, JudgeRole

__all__ = ["Ledger", "Sink"]


class Sink:
    """Buffers results and writes them in small batches (one transaction each).

    Each result is written ahead to the journal as it is put (before it is buffered), and its
    journal entry is marked done when its batch commits. Each batch is also appended to the
    evidence file, so the file grows as the run does.
    """

    def __init__(
        self,
        store: JudgeRole,
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



@dataclass
class Ledger:
    """One execution's bookkeeping: the record each outcome becomes, failures, requests sent.

    ``failures`` holds, by cache key, why a request got no reply, so that the identical calls
    that were waiting for it are recorded as failed with the same kind.

    Attributes:
        rid: The run written to.
        sink: Where the records go.
        tally: What this execution has sent and spent.
        keys: Each planned call's cache key, by call id.
        seqs: Each planned call's position in the plan, by call id.
        failures: Why each failed request got no reply, by cache key.
        doubts: Batches whose id was lost and that could not be told from another run's
            (what to do about each, for the summary); their calls were left unsent.
        unread: Batches created and not collected because their status or files could not be
            read after retries (what to do about each); their calls wait in them.
    """

    rid: str
    sink: Sink
    tally: Tally
    keys: Mapping[str, str]
    seqs: Mapping[str, int]
    failures: dict[str, Failure] = field(default_factory=dict)
    doubts: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)

    def record(self, call: PlannedCall, **outcome: Any) -> JudgementRecord:
        """The record of ``call``'s outcome (see :func:`~calibration.runner._records.call_record`)."""
        return call_record(
            self.rid, call, self.keys[call.call_id], seq=self.seqs[call.call_id], **outcome
        )
