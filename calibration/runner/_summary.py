"""What a run reports: the :class:`RunSummary`, the running tally and the progress bar."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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

from labeler.store import JudgementRecord

__all__ = ["RunSummary", "Tally", "progress_bar"]


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


@dataclass
class Tally:
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
        _SpendColumn(),
        console=Console(stderr=True),
        disable=not enabled,
        transient=False,
    )
