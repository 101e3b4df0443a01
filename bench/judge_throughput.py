"""``judgelab score`` against the bare SDK client on the same mock API, at concurrency 8, 32 and 64.

Run: ``python bench/judge_throughput.py`` (a few minutes). ``--provider anthropic|openai|both``,
``--calls`` (answers scored per measurement), ``--latency`` (seconds per reply, default 50 ms),
``--concurrency 8,32,64`` and ``--repeats`` change the set-up; ``--profile`` runs one
``score`` measurement under cProfile and prints where its CPU went.

The question: how many calls per second does judging reach when the provider answers fast, and
how close is that to what the official SDK alone reaches? ``judgelab mock-api`` runs in its own
process (its threads do not compete with the client for the interpreter lock), and each
measurement runs in a fresh child process:

* **score**: :func:`judgelab.calibration.scoring.ascore_answers`, which ``judgelab score`` calls: the
  plan from the database, the judge (its middleware: decode checks, rate governor), the
  write-ahead journal, the database batches and the plain progress lines (standard error is
  not a terminal), on a fresh copy of a pool of ``--calls`` answers, as ``judgelab score
  --judge anthropic`` (or ``--judge openai``) without ``--out``;
* **sdk**: the bare ``anthropic.AsyncAnthropic`` (or ``openai.AsyncOpenAI``) client sending the
  same request bodies under an ``asyncio.Semaphore(concurrency)``, nothing recorded.

Both warm their connection pool with one round of ``concurrency`` requests before the clock
starts. The machine is shared, so the two paths are measured back to back (interleaved,
``--repeats`` times) and the figure that matters is their ratio; each also reports its CPU per
call (the client process's ``process_time`` over the timed part), steadier than a rate on a
busy machine.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._measure import WORKDIR, child, emit, machine
from bench.import_scale import RUBRIC, write_csv
from bench.runner_throughput import _start_server, _stop_server

_MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4.1-mini"}


def _pool(calls: int, workdir: Path) -> Path:
    """A database with the rubric and ``calls`` answers (built once, kept between runs)."""
    db = workdir / f"judge-throughput-{calls}.duckdb"
    if db.exists():
        return db
    from judgelab.cli import main as cli
    from judgelab.labeler.store import Store

    workdir.mkdir(parents=True, exist_ok=True)
    source = workdir / f"judge-throughput-{calls}.csv"
    write_csv(source, (calls + 1) // 2)
    building = db.with_name(db.name + ".building")
    building.unlink(missing_ok=True)
    Store(building).add_rubric(RUBRIC)
    cli(["import", "answers", str(source), "--db", str(building)], standalone_mode=False)
    building.rename(db)
    return db


def _judge(provider: str, base_url: str, concurrency: int) -> Any:
    from judgelab.calibration.judges import AnthropicJudge, OpenAIJudge

    if provider == "openai":
        return OpenAIJudge(_MODELS[provider], api_key="bench", base_url=base_url + "/v1",
                           max_concurrency=concurrency, max_retries=6, timeout=30)
    return AnthropicJudge(_MODELS[provider], api_key="bench", base_url=base_url,
                          max_concurrency=concurrency, max_retries=6, timeout=30)


def _warm_texts(n: int) -> list[tuple[str, str]]:
    return [(f"Warm-up ticket {i}: where is my parcel?", f"It left the depot today ({i}).") for i in range(n)]


async def _score(provider: str, base_url: str, pool: Path, concurrency: int, workdir: Path) -> dict[str, float]:
    """Seconds and CPU for one ``score`` run over the pool (after a warm-up round)."""
    from judgelab.calibration.scoring import ascore_answers
    from judgelab.labeler.store import Store

    db = workdir / "score.duckdb"
    shutil.copy(pool, db)
    store = Store(db)
    judge = _judge(provider, base_url, concurrency)
    async with judge:
        await asyncio.gather(*(judge.score(p, a, RUBRIC) for p, a in _warm_texts(concurrency)))
        start, cpu = time.perf_counter(), time.process_time()
        result = await ascore_answers(judge, store, concurrency=concurrency, progress=None, judge_kind=provider)
        seconds, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    summary = result.summary
    if summary.errors or summary.done != summary.planned:
        raise SystemExit(f"score lost calls: {summary}")
    return {"seconds": seconds, "cpu_s": cpu_s, "calls": summary.issued}


async def _sdk(provider: str, base_url: str, pool: Path, concurrency: int) -> dict[str, float]:
    """Seconds and CPU for the same requests through the bare SDK client (after a warm-up round)."""
    from judgelab.calibration.runner._plan import build_request
    from judgelab.calibration.scoring import choose_answers, plan_scores
    from judgelab.labeler.store import Store

    judge = _judge(provider, base_url, concurrency)
    answers, _ = choose_answers(Store(pool))
    calls = [build_request(judge, RUBRIC, c) for c in plan_scores(answers, ("likert5",), RUBRIC)]
    warm = [judge.build("pointwise", "likert5", RUBRIC, p, [a]) for p, a in _warm_texts(concurrency)]
    bodies = [judge.request(call) for call in warm + calls]
    gate = asyncio.Semaphore(concurrency)
    if provider == "openai":
        import openai

        oclient = openai.AsyncOpenAI(api_key="bench", base_url=base_url + "/v1", max_retries=0, timeout=30,
                                     http_client=openai.DefaultAsyncHttpxClient())

        async def one(body: dict[str, Any]) -> None:
            async with gate:
                await oclient.chat.completions.create(**body)

        client: Any = oclient
    else:
        import anthropic

        aclient = anthropic.AsyncAnthropic(api_key="bench", base_url=base_url, max_retries=0, timeout=30,
                                           http_client=anthropic.DefaultAsyncHttpxClient())

        async def one(body: dict[str, Any]) -> None:
            temperature = body.pop("temperature", None)
            async with gate:
                await aclient.messages.create(**body, extra_body=None if temperature is None else
                                              {"temperature": temperature})

        client = aclient
    async with client:
        await asyncio.gather(*(one(b) for b in bodies[:concurrency]))
        start, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one(b) for b in bodies[concurrency:]))
        seconds, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    return {"seconds": seconds, "cpu_s": cpu_s, "calls": len(bodies) - concurrency}


def _measure(args: argparse.Namespace) -> dict[str, float]:
    pool = Path(args.pool)
    if args.path == "sdk":
        figures = asyncio.run(_sdk(args.provider, args.base_url, pool, args.c))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            figures = asyncio.run(_score(args.provider, args.base_url, pool, args.c, Path(tmp)))
    figures["calls_per_s"] = figures["calls"] / figures["seconds"]
    figures["cpu_ms_per_call"] = 1000 * figures["cpu_s"] / figures["calls"]
    return figures


def _profile(args: argparse.Namespace) -> None:
    import cProfile
    import pstats

    server, url = _start_server(args.latency)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            pool = _pool(args.calls, Path(args.workdir))
            c = int(args.concurrency.split(",")[0])
            profiler = cProfile.Profile()
            profiler.enable()
            figures = asyncio.run(_score(args.provider, url, pool, c, Path(tmp)))
            profiler.disable()
    finally:
        _stop_server(server)
    print(f"score under cProfile: {figures['calls'] / figures['seconds']:.1f} calls/s")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


def _compare(provider: str, args: argparse.Namespace, pool: Path) -> None:
    server, url = _start_server(args.latency)
    levels = [int(c) for c in args.concurrency.split(",")]
    print(f"{provider} · {args.calls} calls per measurement · latency {args.latency * 1000:.0f} ms · "
          f"{args.repeats} interleaved repeats")
    print(f"  {'conc.':>5} {'bound':>6} {'score calls/s':>14} {'SDK calls/s':>12} {'ratio':>6}"
          f" {'score CPU/call':>15} {'SDK CPU/call':>13}")
    try:
        for c in levels:
            ratios: list[float] = []
            rates: dict[str, list[float]] = {"score": [], "sdk": []}
            cpus: dict[str, list[float]] = {"score": [], "sdk": []}
            for _ in range(args.repeats):
                pair = {}
                for path in ("score", "sdk"):
                    pair[path] = child("judge_throughput.py", [
                        "--path", path, "--base-url", url, "--pool", str(pool), "--c", str(c),
                        "--provider", provider,
                    ])
                    rates[path].append(pair[path]["calls_per_s"])
                    cpus[path].append(pair[path]["cpu_ms_per_call"])
                ratios.append(pair["score"]["calls_per_s"] / pair["sdk"]["calls_per_s"])
            mean = {p: sum(v) / len(v) for p, v in rates.items()}
            cpu = {p: sorted(v)[len(v) // 2] for p, v in cpus.items()}
            print(f"  {c:>5} {c / args.latency:>6.0f} {mean['score']:>14.1f} {mean['sdk']:>12.1f} "
                  f"{sum(ratios) / len(ratios):>6.2f} {cpu['score']:>12.2f} ms {cpu['sdk']:>10.2f} ms"
                  f"   (ratios {', '.join(f'{r:.2f}' for r in ratios)})", flush=True)
    finally:
        _stop_server(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--provider", choices=["anthropic", "openai", "both"], default="both")
    parser.add_argument("--calls", type=int, default=1000, help="Answers scored per measurement.")
    parser.add_argument("--latency", type=float, default=0.05, help="Seconds per reply of the mock.")
    parser.add_argument("--concurrency", default="8,32,64", help="Comma-separated concurrency levels.")
    parser.add_argument("--repeats", type=int, default=2, help="Interleaved score/SDK pairs per level.")
    parser.add_argument("--workdir", default=WORKDIR, help="Where the answer pool is built once and kept.")
    parser.add_argument("--profile", action="store_true", help="Profile one score run (first concurrency).")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--path", choices=["score", "sdk"], default="score", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--pool", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--c", type=int, default=32, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        emit(_measure(args))
        return
    if args.profile:
        _profile(args)
        return
    print(f"judge throughput: judgelab score vs the bare SDK client · {machine()}")
    pool = _pool(args.calls, Path(args.workdir))
    for provider in (["anthropic", "openai"] if args.provider == "both" else [args.provider]):
        _compare(provider, args, pool)


if __name__ == "__main__":
    main()
