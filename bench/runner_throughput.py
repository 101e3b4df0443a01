"""Runner throughput against the local API server at 200 ms latency, with and without a rate limit.

Run: ``python bench/runner_throughput.py`` (about three minutes). ``--calls``, ``--limited-calls``,
``--latency``, ``--concurrency``, ``--rpm`` and ``--repeats`` change the set-up; ``--provider
openai`` measures the OpenAI-compatible judge instead (:class:`~judgelab.calibration.judges.OpenAIJudge`
through the ``openai`` SDK, against the same server's ``/v1/chat/completions``, its limits
stated in ``x-ratelimit-*`` headers), the SDK-alone path then being the bare ``openai`` client.

Two questions, each answered against ``judgelab mock-api`` running in its own process (so its
threads do not compete with the client for the interpreter lock), each path measured in a fresh
child process that also reports its peak memory:

* **Unlimited: what does judgelab cost on top of the SDK?** The bound is
  ``concurrency / latency`` calls per second (64 / 0.2 s = 320 calls/s): with 64 requests always
  in flight and each taking 200 ms, no client can do better. Two paths, interleaved
  ``--repeats`` times so that both see the same machine:

  - **SDK alone**: the official ``anthropic`` client (no judgelab code, no middleware) sending the
    same Messages requests under an ``asyncio.Semaphore(64)``, nothing recorded;
  - **judge alone**: :class:`~judgelab.calibration.judges.AnthropicJudge` (prompt building, middleware,
    reply parsing and pricing) under the same semaphore, nothing recorded (what earlier rounds
    of this benchmark called "SDK only");
  - **runner**: :func:`judgelab.calibration.runner.arun_plan` with the real
    :class:`~judgelab.calibration.judges.AnthropicJudge` (its middleware: decode checks, rate governor),
    the write-ahead journal, the database and the JSONL evidence file, as ``judgelab probe``.

  The figures are the runner's rate as a share of the bare SDK's and of the judge's (means over
  the repeats), and each as a share of the bound. The runner can pass the bare SDK: it freezes
  the objects alive when it starts for the cyclic garbage collector (:func:`gc.freeze`), whose
  full collections otherwise walk every imported library's objects and stall the event loop for
  70-150 ms each; the SDK and judge paths are plain code that pays for them.
* **Limited: does the runner live within the provider's limits at full speed?** The mock
  enforces ``--rpm`` requests per minute (3,000 = 50 per second, a bucket of one second's worth)
  and the runner is set to ``--concurrency 64``, far more than 50 per second needs at 200 ms.
  Figures: the runner's rate as a share of the enforced limit, and the share of requests the
  mock refused with a 429 (of all requests it received).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._measure import REPO, child, emit, machine
from judgelab.calibration.runner import PlannedCall

PROVIDER = "anthropic"
"""The back-end measured (``--provider``)."""

_PATHS = {"anthropic": "POST /v1/messages", "openai": "POST /v1/chat/completions"}


def _make_judge(base_url: str, **kwargs: Any) -> Any:
    """The judge of the back-end measured, pointed at the mock API server."""
    from judgelab.calibration.judges import AnthropicJudge, OpenAIJudge

    if PROVIDER == "openai":
        return OpenAIJudge("gpt-4.1-mini", api_key="bench", base_url=base_url + "/v1", **kwargs)
    return AnthropicJudge("claude-sonnet-4-6", api_key="bench", base_url=base_url, **kwargs)


def _plan(n: int, offset: int = 0) -> list[PlannedCall]:
    # Distinct prompts: every call is a real request (no cache hits inside the plan).
    return [
        PlannedCall(
            call_id=f"bench/{i}", kind="pointwise", format="likert5",
            prompt=f"Ticket {i}: my order arrived damaged. What should I do?",
            answer=f"Sorry about that. Reply with a photo and we will send a replacement ({i}).",
            probe="bench", arm="original", trial=i,
        )
        for i in range(offset, offset + n)
    ]


async def _sdk(base_url: str, calls: int, concurrency: int) -> float:
    """Seconds for ``calls`` requests through the bare SDK (after a warm-up round)."""
    if PROVIDER == "openai":
        return await _openai_sdk(base_url, calls, concurrency)
    import anthropic

    from judgelab.calibration.datasets import PROBE_RUBRIC
    from judgelab.calibration.judges import AnthropicJudge

    # The judge only builds the request bodies here; the SDK client below sends them.
    builder = AnthropicJudge("claude-sonnet-4-6", api_key="bench", base_url=base_url)
    bodies = []
    for call in _plan(calls + concurrency):
        body = builder.request(builder.build("pointwise", "likert5", PROBE_RUBRIC, call.prompt, [call.answer]))
        temperature = body.pop("temperature", None)
        bodies.append((body, None if temperature is None else {"temperature": temperature}))
    client = anthropic.AsyncAnthropic(
        api_key="bench", base_url=base_url, max_retries=0, timeout=30,
        http_client=anthropic.DefaultAsyncHttpxClient(),
    )
    gate = asyncio.Semaphore(concurrency)

    async def one(body: dict[str, Any], extra: dict[str, Any] | None) -> None:
        async with gate:
            await client.messages.create(**body, extra_body=extra)

    async with client:
        await asyncio.gather(*(one(b, e) for b, e in bodies[calls:]))  # warm the pool
        start = time.perf_counter()
        await asyncio.gather(*(one(b, e) for b, e in bodies[:calls]))
        return time.perf_counter() - start


async def _openai_sdk(base_url: str, calls: int, concurrency: int) -> float:
    """Seconds for ``calls`` Chat Completions requests through the bare ``openai`` client."""
    import openai

    from judgelab.calibration.datasets import PROBE_RUBRIC

    builder = _make_judge(base_url)
    bodies = [builder.request(builder.build("pointwise", "likert5", PROBE_RUBRIC, c.prompt, [c.answer]))
              for c in _plan(calls + concurrency)]
    client = openai.AsyncOpenAI(api_key="bench", base_url=base_url + "/v1", max_retries=0, timeout=30,
                                http_client=openai.DefaultAsyncHttpxClient())
    gate = asyncio.Semaphore(concurrency)

    async def one(body: dict[str, Any]) -> None:
        async with gate:
            await client.chat.completions.create(**body)

    async with client:
        await asyncio.gather(*(one(b) for b in bodies[calls:]))  # warm the pool
        start = time.perf_counter()
        await asyncio.gather(*(one(b) for b in bodies[:calls]))
        return time.perf_counter() - start


async def _judge_alone(base_url: str, calls: int, concurrency: int) -> float:
    """Seconds for ``calls`` judge calls with nothing recorded (after a warm-up round)."""
    from judgelab.calibration.datasets import PROBE_RUBRIC

    judge = _make_judge(base_url, max_concurrency=concurrency, max_retries=6, timeout=30)
    gate = asyncio.Semaphore(concurrency)

    async def one(call: PlannedCall) -> None:
        async with gate:
            await judge.score(call.prompt, call.answer, PROBE_RUBRIC, call.format)

    async with judge:
        await asyncio.gather(*(one(c) for c in _plan(concurrency, offset=10**6)))
        start = time.perf_counter()
        await asyncio.gather(*(one(c) for c in _plan(calls)))
        return time.perf_counter() - start


async def _runner(base_url: str, calls: int, concurrency: int, workdir: Path) -> dict[str, float]:
    """Seconds for ``calls`` planned calls through the runner, and what the governor saw."""
    from judgelab.calibration.datasets import PROBE_RUBRIC
    from judgelab.calibration.runner import arun_plan
    from judgelab.labeler.store import Store

    judge = _make_judge(base_url, max_concurrency=concurrency, max_retries=6, timeout=30)
    async with judge:
        # Warm the connection pool and the code paths so start-up is not in the figure.
        warm = _plan(concurrency, offset=10**6)
        await asyncio.gather(*(judge.score(c.prompt, c.answer, PROBE_RUBRIC) for c in warm))
        store = Store(workdir / "bench.duckdb")
        plan = _plan(calls)  # the caller's work, like the SDK path's request bodies
        start = time.perf_counter()
        summary = await arun_plan(
            plan, judge, store, rubric=PROBE_RUBRIC, judge_kind=PROVIDER,
            evidence=workdir / "evidence.jsonl", concurrency=concurrency, progress=False,
        )
        elapsed = time.perf_counter() - start
        if summary.parsed + summary.parse_failures != calls or summary.errors:
            raise SystemExit(f"runner lost calls: {summary}")
        stats = judge.governor.stats
    return {"seconds": elapsed, "rate_limited": stats.rate_limited, "window_min": stats.window_min}


def _measure(path: str, base_url: str, calls: int, concurrency: int, workdir: Path) -> dict[str, float]:
    cpu = time.process_time()
    figures = _measure_path(path, base_url, calls, concurrency, workdir)
    # CPU per call, set-up and warm-up included (the same for every path): steadier than the
    # rate on a shared machine, and what decides the rate when the client's CPU is the limit.
    figures["cpu_ms_per_call"] = 1000 * (time.process_time() - cpu) / calls
    return figures


def _measure_path(path: str, base_url: str, calls: int, concurrency: int, workdir: Path) -> dict[str, float]:
    if path == "sdk":
        figures: dict[str, float] = {"seconds": asyncio.run(_sdk(base_url, calls, concurrency))}
    elif path == "judge":
        figures = {"seconds": asyncio.run(_judge_alone(base_url, calls, concurrency))}
    else:
        figures = asyncio.run(_runner(base_url, calls, concurrency, workdir))
    figures["calls"] = calls
    figures["calls_per_s"] = calls / figures["seconds"]
    return figures


def _start_server(latency: float, *extra: str) -> tuple[subprocess.Popen[str], str]:
    code = (
        "import sys; from judgelab.calibration.mockapi import mock_api_command;"
        "mock_api_command(sys.argv[1:])"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--port", "0", "--latency", str(latency), *extra],
        stdout=subprocess.PIPE, text=True, cwd=REPO,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(r"http://[\d.]+:\d+", line)
    if not found:
        proc.kill()
        raise SystemExit(f"the mock API server did not start: {line!r}")
    return proc, found.group(0)


def _stop_server(proc: subprocess.Popen[str]) -> dict[str, int]:
    """Stop the server; its counters (``POST /v1/messages``, ``ratelimit:429``...)."""
    import signal

    proc.send_signal(signal.SIGTERM)  # a bench run with `&` ignores SIGINT
    out, _ = proc.communicate(timeout=30)
    return {k.strip(): int(v) for k, v in re.findall(r"([\w:/ ]+?)=(\d+)", out.split("Stopped.", 1)[-1])}


def _child_args(path: str, url: str, calls: int, args: argparse.Namespace) -> list[str]:
    return ["--path", path, "--base-url", url, "--calls", str(calls), "--concurrency", str(args.concurrency),
            "--provider", args.provider]


def _unlimited(args: argparse.Namespace) -> None:
    bound = args.concurrency / args.latency
    print(f"unlimited · {args.provider} · {args.calls} calls · latency {args.latency * 1000:.0f} ms · concurrency "
          f"{args.concurrency} · bound {bound:.0f} calls/s · {args.repeats} interleaved repeats")
    server, url = _start_server(args.latency)
    labels = {
        "sdk": "SDK alone (nothing recorded)",
        "judge": "judge alone (nothing recorded)",
        "runner": "runner + journal + database + evidence",
    }
    rates: dict[str, list[float]] = {path: [] for path in labels}
    cpu: dict[str, list[float]] = {path: [] for path in labels}
    try:
        for _ in range(args.repeats):
            for path, label in labels.items():
                fig = child("runner_throughput.py", _child_args(path, url, args.calls, args))
                rates[path].append(fig["calls_per_s"])
                cpu[path].append(fig["cpu_ms_per_call"])
                print(f"  {label:40s} {fig['calls_per_s']:7.1f} calls/s = {fig['calls_per_s'] / bound:6.1%} of "
                      f"bound  ({fig['seconds']:.1f} s; {fig['cpu_ms_per_call']:.2f} ms CPU per call; "
                      f"peak memory {fig['peak_rss_mb']:.0f} MiB)")
    finally:
        _stop_server(server)
    sdk, judge, runner = (sum(rates[p]) / len(rates[p]) for p in labels)
    print(f"  means of {args.repeats}: SDK {sdk:.1f} · judge {judge:.1f} · runner {runner:.1f} calls/s")
    print(f"  runner / SDK alone: {runner / sdk:.3f} (target >= 0.97) · runner / judge alone: {runner / judge:.3f}")
    c_sdk, c_judge, c_runner = (sorted(cpu[p])[len(cpu[p]) // 2] for p in labels)
    print(f"  client CPU per call (median): SDK {c_sdk:.2f} ms · judge {c_judge:.2f} ms · runner {c_runner:.2f} ms "
          f"(SDK / runner {c_sdk / c_runner:.3f})")


def _limited(args: argparse.Namespace) -> None:
    limit = args.rpm / 60
    print(f"limited · {args.provider} · {args.limited_calls} calls · latency {args.latency * 1000:.0f} ms · "
          f"concurrency {args.concurrency} · mock enforces {args.rpm:g} requests/min = {limit:g}/s (bucket of 1 s)")
    server, url = _start_server(args.latency, "--rpm", str(args.rpm))
    try:
        fig = child("runner_throughput.py", _child_args("runner", url, args.limited_calls, args))
    finally:
        counters = _stop_server(server)
    received = counters.get(_PATHS[args.provider], 0)
    refused = counters.get("ratelimit:429", 0)
    warm = args.concurrency  # the warm-up round, sent before the clock started
    print(f"  runner {fig['calls_per_s']:.1f} calls/s = {fig['calls_per_s'] / limit:.1%} of the enforced limit "
          f"(target >= 90%; the first second's bucket of {limit:.0f} adds at most "
          f"{limit / args.limited_calls:.1%}); {fig['seconds']:.1f} s")
    print(f"  429s: {refused} of {received} requests = {refused / max(received, 1):.2%} (target <= 1%; "
          f"{warm} of the requests were the warm-up round); smallest concurrency window "
          f"{fig['window_min']:.0f} (of {args.concurrency})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=3000, help="Calls per unlimited measurement.")
    parser.add_argument("--limited-calls", type=int, default=1500, help="Calls against the rate limit.")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rpm", type=float, default=3000.0, help="The enforced requests per minute.")
    parser.add_argument("--repeats", type=int, default=2, help="Interleaved SDK/runner pairs (unlimited).")
    parser.add_argument("--only", choices=["unlimited", "limited"], default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--path", choices=["runner", "sdk", "judge"], default="runner", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--provider", choices=list(_PATHS), default="anthropic",
                        help="The judge back-end measured: anthropic (Messages) or openai (Chat Completions).")
    args = parser.parse_args()
    global PROVIDER
    PROVIDER = args.provider
    if args.child:
        with tempfile.TemporaryDirectory() as tmp:
            emit(_measure(args.path, args.base_url, args.calls, args.concurrency, Path(tmp)))
        return
    print(f"runner throughput · {machine()}")
    if args.only in (None, "unlimited"):
        _unlimited(args)
    if args.only in (None, "limited"):
        _limited(args)


if __name__ == "__main__":
    main()
