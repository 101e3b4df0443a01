"""What a run reports: the :class:`RunSummary`, the running tally and the progress bar."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TextIO

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

from judgelab.labeler.store import JudgementRecord

__all__ = ["EXIT_CODES", "Billed", "PlainProgress", "RunInterrupted", "RunSummary", "Tally", "progress_bar"]

EXIT_CODES: dict[str, int] = {
    "finished": 0,
    "finished with errors": 3,
    "not finished": 4,
    "interrupted": 130,
}
"""The exit code of a judging command (``probe``, ``score``) by how its run ended.

* ``finished`` (0): every planned call has a reply (parse failures are replies, counted).
* ``finished with errors`` (3): every call was tried, and some ended in an error after their
  retries (a bad key, a refused batch, a batch request that expired); running the same
  command again retries only those.
* ``not finished`` (4): some calls have no result at all (a batch left in doubt, waiting for
  ``--adopt-batch``; a batch created whose status or files could not be read, left
  uncollected); running the same command again continues.
* ``interrupted`` (130): Ctrl-C or SIGTERM; what arrived is saved; the same command continues.

2 stays the code of a bad input or option (before any call), as for every judgelab command.
"""


@dataclass(frozen=True)
class Billed:
    """What the provider billed this execution for, beyond what its results show.

    Attributes:
        replies: Replies the provider sent (each billed), read or not.
        retries: Of those, replies cut short or garbled on the way: billed, lost, and asked
            again (so billed once more).
        unknown: Attempts whose reply never came whole (a timeout, a reset): the provider may
            have billed them; nobody can tell.
    """

    replies: int = 0
    retries: int = 0
    unknown: int = 0


@dataclass(frozen=True)
class RunSummary:
    """How a run went.

    Attributes:
        run_id: The run.
        planned: Calls in the plan.
        answered_before: Calls that already had a reply when this execution started (resume).
        issued: Requests actually sent to the judge by this execution.
        collected: Replies this execution collected from Message Batches an earlier execution
            submitted (paid for now, but not sent now).
        collected_batches: How many such batches.
        parsed: Planned calls whose newest result parsed.
        parse_failures: Planned calls whose reply did not parse (recorded, not scored).
        errors: Planned calls that failed after retries (recorded; a re-run retries them).
        cached: Planned calls served from the cache (this run or an earlier one).
        cost_usd: Money spent by this execution at the price the judge reported (the priced
            replies only: see ``unpriced``).
        input_tokens: Prompt tokens billed by this execution, not read from the prompt cache
            (cache writes included).
        output_tokens: Completion tokens billed by this execution.
        elapsed_s: Wall-clock seconds of this execution (with what its command did first,
            such as the padding rewrites of a probe run).
        resumed: Whether an earlier execution of this run existed.
        finished: Whether every planned call now has a reply.
        evidence_path: The JSONL evidence file, if one was written.
        error_samples: Up to five failure reasons, for the console.
        cache_read_tokens: Prompt tokens read from the prompt cache.
        cache_write_tokens: Prompt tokens written to the prompt cache (part of
            ``input_tokens``).
        unpriced: Replies the price table could not price (their model is not in it).
        model: The judge model.
        price_table: The price table's file (where to add a missing model).
        batches_created: Provider batches this execution created (each billed as it runs).
        batch_requests_created: Requests in those batches.
        in_doubt: Batches whose id was lost and that could not be told from another run's,
            each with what to do (their calls were not sent again).
        uncollected: Batches created and billed whose status or files could not be read after
            retries, each with what to do (their calls wait in them; a rerun collects them).
        billed_replies: Replies to single requests the provider billed this execution for
            (cut replies asked again count each time).
        billed_retries: Of those, replies cut short on the way and asked again.
        unknown_retries: Attempts whose reply never came whole (may have been billed).
        provider: Whether the judge calls a provider that bills (the fake judge answers locally).
        interrupted: Ctrl-C stopped the run (what arrived is saved; the same command continues).
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
    collected: int = 0
    collected_batches: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    unpriced: int = 0
    model: str = ""
    price_table: str = ""
    batches_created: int = 0
    batch_requests_created: int = 0
    in_doubt: tuple[str, ...] = ()
    uncollected: tuple[str, ...] = ()
    billed_replies: int = 0
    billed_retries: int = 0
    unknown_retries: int = 0
    provider: bool = True
    interrupted: bool = False

    @property
    def done(self) -> int:
        """Planned calls with a reply now (parsed or not), this execution's and earlier ones."""
        return self.parsed + self.parse_failures

    @property
    def outcome(self) -> str:
        """``finished``, ``finished with errors``, ``not finished`` or ``interrupted`` (a key of :data:`EXIT_CODES`)."""
        if self.interrupted:
            return "interrupted"
        if self.in_doubt or self.uncollected or self.done + self.errors < self.planned:
            return "not finished"
        if self.errors or not self.finished:
            return "finished with errors"
        return "finished"

    @property
    def exit_code(self) -> int:
        """The command's exit code for this run (:data:`EXIT_CODES`)."""
        return EXIT_CODES[self.outcome]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``cost_usd`` is ``None`` when no reply could be priced)."""
        out = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}
        out["done"], out["outcome"], out["exit_code"] = self.done, self.outcome, self.exit_code
        if self.unpriced and not self.cost_usd:
            out["cost_usd"] = None
        return out

    def _work(self) -> str:
        """What this execution asked for and collected."""
        text = f"{self.issued} judge calls sent"
        if self.batches_created:
            text += (f" ({self.batch_requests_created} of them in "
                     + ("a batch" if self.batches_created == 1 else f"{self.batches_created} batches") + ")")
        if self.collected:
            where = (
                "a batch" if self.collected_batches == 1 else f"{self.collected_batches} batches"
            )
            text += f", collected {self.collected} replies from {where} submitted earlier"
        return text

    def _left(self) -> int:
        """Planned calls with neither a reply nor a failure (a batch in doubt, an interruption)."""
        return max(self.planned - self.done - self.errors, 0)

    def _billed(self) -> str:
        """Every request the provider billed this execution for, results or not."""
        if not self.provider:
            return "nothing (the fake judge answers locally; no provider was called)"
        parts = [f"{self.billed_replies} replies"
                 + (f" ({self.billed_retries} of them cut short on the way and asked again: billed twice or more,"
                    " their tokens unknown and not in the money above)" if self.billed_retries else "")]
        if self.batches_created:
            parts.append(f"{self.batch_requests_created} batch requests in {self.batches_created} batch(es) created")
        if self.collected:
            parts.append(f"{self.collected} replies from batches created by an earlier execution")
        if self.unknown_retries:
            parts.append(f"{self.unknown_retries} attempts whose reply never came whole (may be billed)")
        return "; ".join(parts)

    def _tokens(self) -> str:
        """Every kind of token billed: uncached input, cache writes and reads, output."""
        uncached = max(self.input_tokens - self.cache_write_tokens, 0)
        return (
            f"{uncached:,} input + {self.cache_write_tokens:,} cache-write + "
            f"{self.cache_read_tokens:,} cache-read + {self.output_tokens:,} output tokens"
        )

    def _money(self) -> str:
        """The spend; "unpriced" when the price table does not know the model."""
        if not self.unpriced:
            return f"${self.cost_usd:.4f}"
        if not self.cost_usd:
            return f"unpriced ({self.unpriced} replies)"
        return f"${self.cost_usd:.4f} + {self.unpriced} unpriced replies"

    def __str__(self) -> str:
        """The summary the CLI prints after a run."""
        state = {"finished": "finished", "finished with errors": f"finished with {self.errors} error(s)",
                 "not finished": "NOT finished", "interrupted": "INTERRUPTED (Ctrl-C)"}[self.outcome]
        lines = [
            f"run {self.run_id}: {self.planned} planned calls, {state} (exit code {self.exit_code})"
            + (f" (resumed; {self.answered_before} already answered)" if self.resumed else ""),
            f"  done {self.done} · failed {self.errors} · without a result {self._left()}"
            f" · of the done: parsed {self.parsed}, parse failures {self.parse_failures}, "
            f"served from cache {self.cached}",
            f"  this execution: {self._work()}, {self._tokens()}, {self._money()}, "
            f"{self.elapsed_s:.1f} s",
            f"  billed: {self._billed()}",
        ]
        if self.unpriced:
            lines.append(
                f"  unpriced: {self.model or 'the judge model'} is not in the price table "
                f"({self.price_table or 'calibration/prices.toml'}); add a [models.\"{self.model}\"] "
                "table with input, output, cache_write, cache_write_1h and cache_read (USD per "
                "million tokens) to a copy of it and point JUDGELAB_PRICES at the copy."
            )
        if self.errors:
            lines.append(
                f"  {self.errors} call(s) failed after retries; run the same command again "
                f"(or --resume {self.run_id}) to retry only those."
            )
            lines += [f"    - {reason}" for reason in self.error_samples]
        for doubt in self.in_doubt:
            lines.append(f"  in doubt: {doubt}")
        for unread in self.uncollected:
            lines.append(f"  not collected: {unread}")
        if self.evidence_path:
            lines.append(f"  evidence: {self.evidence_path}")
        return "\n".join(lines)


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run: a :class:`KeyboardInterrupt` that carries the run's summary.

    Attributes:
        summary: What the run had done when it stopped (``interrupted`` set; exit code 130).
    """

    def __init__(self, summary: RunSummary) -> None:
        super().__init__(f"run {summary.run_id} interrupted")
        self.summary = summary


@dataclass
class Tally:
    """What one execution has sent and spent so far (for the progress bar and the summary).

    Attributes:
        issued: Requests sent to the judge (a batch counts each of its requests).
        collected: Replies collected from batches an earlier execution submitted (paid now,
            sent then).
        cost_usd: Money the written replies cost at the price the judge reported.
        unpriced: Written replies the price table could not price.
        input_tokens: Prompt tokens billed by the written replies (cache writes included).
        output_tokens: Completion tokens billed by the written replies.
        cache_read_tokens: Prompt tokens the written replies read from the cache.
        cache_write_tokens: Prompt tokens the written replies wrote to the cache.
        collected_batches: Batches an earlier execution submitted that this one collected.
        done: Results written with a reply (parsed or not, cache hits too).
        failed: Results written as failures (no reply).
        judged: Replies written that the judge sent (not cache hits).
        batches_created: Provider batches this execution created (each billed for its
            requests as they run, collected or not).
        batch_requests_created: Requests in those batches.
        failed_submissions: Batches whose creation failed for good (their calls are failures).
    """

    issued: int = 0
    collected: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    collected_batches: int = 0
    batches_created: int = 0
    batch_requests_created: int = 0
    failed_submissions: int = 0
    done: int = 0
    failed: int = 0
    judged: int = 0

    def add(self, records: Iterable[JudgementRecord]) -> None:
        """Count the replies just written (cache hits and failures spent nothing)."""
        for rec in records:
            if rec.error is not None:
                self.failed += 1
                continue
            self.done += 1
            if rec.source != "judge":
                continue
            self.judged += 1
            if rec.cost_usd is None:
                self.unpriced += 1
            else:
                self.cost_usd += rec.cost_usd
            self.input_tokens += rec.input_tokens
            self.output_tokens += rec.output_tokens
            self.cache_read_tokens += rec.cache_read_tokens
            self.cache_write_tokens += rec.cache_write_tokens


# -- progress -------------------------------------------------------------------------------

class _RateColumn(ProgressColumn):
    """Calls per second over the run so far."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("-- calls/s" if speed is None else f"{speed:.1f} calls/s", style="cyan")


class _FailedColumn(ProgressColumn):
    """Failed results and retried attempts so far (the bar's count includes the failed)."""

    def render(self, task: Task) -> Text:
        failed = int(task.fields.get("failed", 0))
        retried = int(task.fields.get("retried", 0))
        return Text(f"{failed} failed, {retried} retried", style="red" if failed else "dim")


class _SpendColumn(ProgressColumn):
    """Money spent so far by this execution."""

    def render(self, task: Task) -> Text:
        spend = float(task.fields.get("spend", 0.0))
        unpriced = int(task.fields.get("unpriced", 0))
        return Text(_spend_text(spend, unpriced), style="green")


def _spend_text(spend: float, unpriced: int) -> str:
    """Money so far; replies the price table cannot price are "unpriced", never $0.

    >>> _spend_text(0.0, 3), _spend_text(0.5, 2), _spend_text(0.25, 0)
    ('unpriced', '$0.5000 + 2 unpriced', '$0.2500')
    """
    if unpriced and not spend:
        return "unpriced"
    return f"${spend:.4f}" + (f" + {unpriced} unpriced" if unpriced else "")


def progress_bar(enabled: bool) -> Progress:
    """The progress bar of a run (on stderr; ``enabled=False`` shows nothing)."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _RateColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        _FailedColumn(),
        _SpendColumn(),
        console=Console(stderr=True),
        disable=not enabled,
        transient=False,
    )


@dataclass
class PlainProgress:
    """A run's progress as plain lines, for output that is not a terminal (a log, a pipe).

    The run id comes first, at once (so a killed run can be continued with ``--resume``),
    then a line at most every ``every`` seconds and one at the end.

    Attributes:
        run_id: The run.
        total: Planned calls.
        every: Least seconds between two progress lines.
        stream: Where the lines go (default: standard error, read when a line is written).
        clock: Monotonic seconds (injected for tests).
    """

    run_id: str
    total: int
    every: float = 5.0
    stream: TextIO | None = None
    clock: Callable[[], float] = time.monotonic
    done: int = field(init=False, default=0)
    _last: float = field(init=False, default=-float("inf"))
    _started: float = field(init=False, default=0.0)

    def _say(self, text: str) -> None:
        print(text, file=self.stream or sys.stderr, flush=True)

    def start(self, done: int, *, resumed: bool) -> None:
        """Say which run this is and what is left, before any call is made."""
        self.done = done
        self._started = self._last = self.clock()
        how = "resumed" if resumed else "started"
        self._say(
            f"run {self.run_id} {how}: {self.total - done} of {self.total} calls to make; "
            f"if it stops, continue it with --resume {self.run_id}"
        )

    def advance(self, n: int, *, spend: float, unpriced: int, failed: int = 0, retried: int = 0) -> None:
        """Count ``n`` more results; say so when ``every`` seconds have passed.

        ``failed``: results so far that are failures (no reply); ``retried``: attempts so far
        beyond each request's first.
        """
        self.done += n
        now = self.clock()
        if now - self._last >= self.every or self.done >= self.total:
            self._last = now
            money = _spend_text(spend, unpriced)
            self._say(
                f"run {self.run_id}: {self.done - failed}/{self.total} calls done, {failed} failed, "
                f"{retried} retried, {money}, {now - self._started:.0f} s"
            )
