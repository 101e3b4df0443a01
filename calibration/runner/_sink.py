"""Where results go as they arrive: the journal first, then small database batches and the evidence file.

:class:`Sink` makes each result durable before anything else happens to it (the write-ahead
journal, :mod:`judgelab.calibration.journal`) and writes it to the database in small batches, one
transaction each. :class:`Ledger` is one execution's bookkeeping around it: which record each
outcome becomes, why a request failed, what was sent.

The journal is written by group commit: the results put during one turn of the event loop
(the replies that arrived together) go to the journal in one ``os.write`` as the loop's next
turn starts, before the loop waits for anything (a reply, a timer, a database write). So a result is
in the operating system's hands before the process can do anything else that takes time, and
always before its database batch is written or it is counted in the progress: a SIGKILL loses
only the calls whose reply had not been read. One write per turn instead of one per reply is
what keeps the journal's cost flat at hundreds of replies per second.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgelab.calibration.journal import Journal
from judgelab.calibration.judges._base import Failure
from judgelab.calibration.runner._plan import PlannedCall
from judgelab.calibration.runner._records import call_record, evidence_row
from judgelab.calibration.runner._summary import Tally
from judgelab.labeler.store import JudgementRecord, JudgeRole

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
        # Results put this loop turn, not yet in the journal (their group commit is scheduled).
        self._ahead: list[JudgementRecord] = []
        self._commit: asyncio.Handle | None = None
        self._journal_error: Exception | None = None

    async def put(self, records: Iterable[JudgementRecord]) -> None:
        """Take results: journalled by this loop turn's group commit, then written in a batch.

        Raises:
            OSError: The journal could not be written (a full disk...): the run stops; what
                arrived is still written to the database.
        """
        records = list(records)
        if self._journal_error is not None:
            error, self._journal_error = self._journal_error, None
            self._buffer(records)
            raise error
        if not records:
            return
        if self.journal is not None:
            # Durable first: the group commit at the end of this loop turn writes them ahead,
            # before the loop can wait for anything; from then on a kill cannot make anyone
            # pay for them again.
            self._ahead += records
            if self._commit is None:
                self._commit = asyncio.get_running_loop().call_soon(self.write_ahead)
        else:
            self._buffer(records)
        if len(self.buffer) + len(self._ahead) >= self.flush_size or (
            self.buffer and time.monotonic() - self.first_buffered >= self.flush_interval
        ):
            await self.flush()

    def write_ahead(self) -> None:
        """Journal the results put since the last group commit (one write), then buffer them."""
        if self._commit is not None:
            self._commit.cancel()
            self._commit = None
        records, self._ahead = self._ahead, []
        if not records:
            return
        try:
            if self.journal is not None:
                self.seqs += self.journal.append(records)
        except Exception as exc:  # raised by the next put (a loop callback has no caller)
            self._journal_error = exc
        finally:
            self._buffer(records)  # the database gets them either way

    def _buffer(self, records: list[JudgementRecord]) -> None:
        if not self.buffer:
            self.first_buffered = time.monotonic()
        self.buffer += records

    async def flush(self) -> None:
        # Nothing reaches the database (or the progress) before it is in the journal.
        self.write_ahead()
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
        self.write_ahead()  # a result put in the turn the run ended in is kept for a resume
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
            if (self.buffer or self._ahead) and time.monotonic() - self.first_buffered >= self.flush_interval:
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
        """The record of ``call``'s outcome (see :func:`~judgelab.calibration.runner._records.call_record`)."""
        return call_record(
            self.rid, call, self.keys[call.call_id], seq=self.seqs[call.call_id], **outcome
        )
