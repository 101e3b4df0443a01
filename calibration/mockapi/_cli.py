"""``judgelab mock-api``: serve :class:`~judgelab.calibration.mockapi.MockAnthropic` on the command line (dry runs)."""

from __future__ import annotations

import json
import signal
import sys
import time
from types import FrameType

import click

from judgelab.calibration.mockapi._faults import FAULT_KINDS, FaultPlan, RateLimit
from judgelab.calibration.mockapi._server import MockAnthropic

__all__ = ["mock_api_command"]


@click.command("mock-api")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8787, show_default=True, type=int, help="Port (0 = any free port).")
@click.option("--latency", default=0.0, show_default=True, type=float, help="Seconds per /v1/messages reply.")
@click.option(
    "--fault-rate", default=0.0, show_default=True, type=click.FloatRange(0, 1), help="Share of failed attempts."
)
@click.option(
    "--faults",
    "fault_kinds",
    default=",".join(FAULT_KINDS),
    show_default=True,
    help="Comma-separated fault kinds to draw from.",
)
@click.option("--retry-after", default=1.0, show_default=True, type=float, help="Seconds in retry-after headers.")
@click.option("--batch-delay", default=5.0, show_default=True, type=float, help="Seconds a batch stays in progress.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seeds the fake judge and the faults.")
@click.option("--fake-position", default=0.0, type=float, help="Fake judge: first-shown win-rate lift.")
@click.option("--fake-verbosity", default=0.0, type=float, help="Fake judge: longer-answer lift.")
@click.option("--fake-formatting", default=0.0, type=float, help="Fake judge: markdown lift.")
@click.option("--fake-leniency", default=0.0, type=float, help="Fake judge: Likert points added.")
@click.option("--fake-noise", default=0.0, type=float, help="Fake judge: noise SD in Likert points.")
@click.option("--rpm", default=None, type=click.FloatRange(min=0, min_open=True),
              help="Enforce this many requests per minute on /v1/messages and /v1/chat/completions "
              "(429 + retry-after).")
@click.option("--tpm", default=None, type=click.FloatRange(min=0, min_open=True),
              help="Enforce this many tokens (prompt + completion) per minute.")
@click.option("--burst-seconds", default=1.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Seconds' worth of each limit that may be spent at once.")
@click.option("--min-cache-tokens", default=None, type=click.IntRange(min=0),
              help="Cache a prompt prefix only from this many tokens [default: the model's minimum "
              "from the price table].")
@click.option("--duration", default=0.0, type=float, help="Stop after this many seconds (0 = until Ctrl-C).")
@click.option("--judge-spec", default=None, type=click.Path(dir_okay=False),
              help="Fake judge: read requests written from this judge spec and answer in its verdict format.")
@click.option("--drop-metadata", is_flag=True, help="OpenAI batches keep no metadata (as some compatible servers).")
@click.option("--short-output", default=0, type=click.IntRange(min=0),
              help="Serve each OpenAI batch output file without its last N lines (cut at a line break).")
@click.option("--short-output-reads", default=None, type=click.IntRange(min=1),
              help="Cut only the first N downloads of each output file [default: every one].")
@click.option("--cut-creates", default=0, type=click.IntRange(min=0),
              help="Carry out the next N OpenAI batch creates but cut their replies short.")
@click.option("--hide-batch-inputs", is_flag=True, help="Neither serve batch input files nor keep their names.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the result as one JSON document on stdout; messages and progress go to stderr. "
                   "Here: the addresses, on one line as soon as the server listens.")
def mock_api_command(
    host: str,
    port: int,
    latency: float,
    fault_rate: float,
    fault_kinds: str,
    retry_after: float,
    batch_delay: float,
    seed: int,
    fake_position: float,
    fake_verbosity: float,
    fake_formatting: float,
    fake_leniency: float,
    fake_noise: float,
    rpm: float | None,
    tpm: float | None,
    burst_seconds: float,
    min_cache_tokens: int | None,
    duration: float,
    judge_spec: str | None,
    drop_metadata: bool = False,
    short_output: int = 0,
    short_output_reads: int | None = None,
    cut_creates: int = 0,
    hide_batch_inputs: bool = False,
    as_json: bool = False,
) -> None:
    """Serve a local Anthropic- and OpenAI-compatible API backed by the fake judge, for dry runs.

    Point a run at it with ANTHROPIC_BASE_URL=http://HOST:PORT and any ANTHROPIC_API_KEY, or
    (--judge openai) with OPENAI_BASE_URL=http://HOST:PORT/v1 and any OPENAI_API_KEY.
    """
    from judgelab.calibration.judges._fake import FakeJudge
    from judgelab.calibration.spec import load_spec

    kinds = tuple(k.strip() for k in fault_kinds.split(",") if k.strip())
    judge = FakeJudge(
        seed=seed,
        position=fake_position,
        verbosity=fake_verbosity,
        formatting=fake_formatting,
        leniency=fake_leniency,
        noise=fake_noise,
        spec=None if judge_spec is None else load_spec(judge_spec),
    )
    plan = FaultPlan(rate=fault_rate, kinds=kinds, retry_after=retry_after, seed=seed)  # type: ignore[arg-type]
    mock = MockAnthropic(
        responder=judge.respond, latency=latency, faults=plan, batch_delay=batch_delay, host=host, port=port,
        min_cache_tokens=min_cache_tokens, rate_limit=RateLimit(rpm=rpm, tpm=tpm, burst_s=burst_seconds),
        drop_metadata=drop_metadata, short_output=short_output, short_output_reads=short_output_reads,
        cut_creates=cut_creates, hide_batch_inputs=hide_batch_inputs,
    )
    with mock:
        # `kill` (SIGTERM) stops it as Ctrl+C does, counters printed: a server started with `&` in a
        # script ignores SIGINT, and a service manager stops with SIGTERM. Before the address is
        # printed: a script that kills it as soon as it reads the address (the test does) would
        # otherwise, on a loaded machine, end it before the handler was there (exit -15, no counters).
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            limits = "".join(
                f"; {name} {value:g}/min" for name, value in (("requests", rpm), ("tokens", tpm)) if value
            )
            if as_json:  # one line, flushed: a script reads the address and goes on while the server runs
                click.echo(json.dumps({"base_url": mock.base_url, "openai_base_url": mock.openai_base_url,
                                       "judge": repr(judge), "fault_rate": fault_rate, "rpm": rpm, "tpm": tpm}))
                sys.stdout.flush()
            click.echo(f"Mock Anthropic API on {mock.base_url} ({judge!r}; fault rate {fault_rate:g}{limits})",
                       err=as_json)
            click.echo(f"  export ANTHROPIC_BASE_URL={mock.base_url} ANTHROPIC_API_KEY=mock", err=as_json)
            click.echo(f"  export OPENAI_BASE_URL={mock.openai_base_url} OPENAI_API_KEY=mock  # --judge openai",
                       err=as_json)
            if duration > 0:
                time.sleep(duration)
            else:
                while True:
                    time.sleep(3600)
        except KeyboardInterrupt:
            pass
    summary = ", ".join(f"{k}={v}" for k, v in sorted(mock.counters.items())) or "no requests"
    click.echo(f"Stopped. {summary}; batch requests billed={mock.batch_requests_billed}", err=as_json)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """Raise :class:`KeyboardInterrupt`, as Ctrl+C does."""
    raise KeyboardInterrupt
