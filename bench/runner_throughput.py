"""Runner throughput against the local API server at 200 ms latency and concurrency 64.

Run: ``python bench/runner_throughput.py`` (about a minute). ``--calls``, ``--latency`` and
``--concurrency`` change the set-up.

The bound is ``concurrency / latency`` calls per second (64 / 0.2 s = 320 calls/s): with 64
requests always in flight and each taking 200 ms, no client can do better. The figure is the
measured rate as a share of that bound, for two paths:

* **runner**: :func:`calibration.runner.arun_plan` with the real
  :class:`~calibration.judges.AnthropicJudge` (the ``anthropic`` SDK), writing every judgement
  to a fresh project database and the JSONL evidence file, as ``judgelab probe`` does;
* **SDK only**: the same judge's calls under an ``asyncio.Semaphore(64)``, nothing recorded,
  which separates the SDK and HTTP cost from the runner's and the store's.

The API server runs in its own process (``calibration.mockapi``), so its threads do not
compete with the client for the interpreter lock. Each path is measured in a fresh child
process, which also reports its peak memory.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._measure import REPO, child, emit, machine
from calibration.runner import PlannedCall


def _plan(n: int) -> list[PlannedCall]:
    # Distinct prompts: every call is a real request (no cache hits inside the plan).
    return [
        PlannedCall(
            call_id=f"bench/{i}", kind="pointwise", format="likert5",
            prompt=f"Ticket {i}: my order arrived damaged. What should I do?",
            answer=f"Sorry about that. Reply with a photo and we will send a replacement ({i}).",
            probe="bench", arm="original", trial=i,
        )
        for i in range(n)
    ]


async def _measure(path: str, base_url: str, calls: int, concurrency: int, workdir: Path) -> dict[str, float]:
    from calibration.datasets import PROBE_RUBRIC
    from calibration.judges import AnthropicJudge
    from calibration.runner import arun_plan
    from labeler.store import Store

    plan = _plan(calls)
    judge = AnthropicJudge(
        "claude-sonnet-4-6", api_key="bench", base_url=base_url, max_concurrency=concurrency,
        max_retries=0, timeout=30,
    )
    async with judge:
        # Warm the connection pool and the code paths so start-up is not in the figure.
        await asyncio.gather(*(judge.score(f"warm {i}", "warm", PROBE_RUBRIC) for i in range(concurrency)))
        start = time.perf_counter()
        if path == "runner":
            store = Store(workdir / "bench.duckdb")
            summary = await arun_plan(
                plan, judge, store, rubric=PROBE_RUBRIC, judge_kind="anthropic",
                evidence=workdir / "evidence.jsonl", concurrency=concurrency, progress=False,
            )
            elapsed = time.perf_counter() - start
            if summary.parsed + summary.parse_failures != calls or summary.errors:
                raise SystemExit(f"runner lost calls: {summary}")
        else:
            gate = asyncio.Semaphore(concurrency)

            async def one(call: PlannedCall) -> None:
                async with gate:
                    await judge.score(call.prompt, call.answer, PROBE_RUBRIC, call.format)

            await asyncio.gather(*(one(c) for c in plan))
            elapsed = time.perf_counter() - start
    return {"calls": calls, "seconds": elapsed, "calls_per_s": calls / elapsed}


def _start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    code = (
        "import sys; from calibration.mockapi import mock_api_command;"
        "mock_api_command(sys.argv[1:])"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--port", "0", "--latency", str(latency)],
        stdout=subprocess.PIPE, text=True, cwd=REPO,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(r"http://[\d.]+:\d+", line)
    if not found:
        proc.kill()
        raise SystemExit(f"the mock API server did not start: {line!r}")
    return proc, found.group(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--path", choices=["runner", "sdk"], default="runner", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory() as tmp:
            emit(asyncio.run(_measure(args.path, args.base_url, args.calls, args.concurrency, Path(tmp))))
        return

    bound = args.concurrency / args.latency
    print(f"runner throughput · {args.calls} calls · latency {args.latency * 1000:.0f} ms · "
          f"concurrency {args.concurrency} · bound {bound:.0f} calls/s")
    print(f"  {machine()}")
    server, url = _start_server(args.latency)
    try:
        for path, label in (("sdk", "SDK only (nothing recorded)"), ("runner", "runner + database + evidence")):
            fig = child("runner_throughput.py", [
                "--path", path, "--base-url", url, "--calls", str(args.calls),
                "--latency", str(args.latency), "--concurrency", str(args.concurrency),
            ])
            print(f"  {label:32s} {fig['calls_per_s']:7.1f} calls/s = {fig['calls_per_s'] / bound:6.1%} of bound"
                  f"  ({fig['seconds']:.1f} s; peak memory {fig['peak_rss_mb']:.0f} MiB)")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
