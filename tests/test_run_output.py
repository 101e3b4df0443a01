"""What a run tells its user: an honest summary, and the run id at once when output is not a terminal."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judgelab.calibration.judges import AnthropicJudge
from judgelab.calibration.mockapi import MockAnthropic
from judgelab.calibration.runner import run_plan
from judgelab.calibration.runner._summary import PlainProgress, RunSummary
from judgelab.labeler.store import Store
from tests.programs import REPO, mock_api
from tests.test_runner import RUBRIC, plan_of


def test_an_unpriced_model_says_unpriced_and_how_to_price_it_and_counts_cache_tokens(tmp_path: Path) -> None:
    # A model the price table does not know: its replies cost "unpriced", never $0.0000. Its
    # minimum cacheable length is unknown too, so the rubric block carries the breakpoint and
    # the API (here one that caches any length) writes it once and reads it after.
    plan = [c for c in plan_of(4) if c.kind == "pointwise"]
    store = Store(tmp_path / "p.duckdb")
    with MockAnthropic(min_cache_tokens=0) as mock:
        judge = AnthropicJudge("my-own-model", api_key="test", base_url=mock.base_url, max_concurrency=1)
        summary = run_plan(plan, judge, store, rubric=RUBRIC, judge_kind="anthropic", progress=False,
                           concurrency=1)
        writes, reads = mock.count("cache:write"), mock.count("cache:read")
    text = str(summary)
    assert "$0.0000" not in text
    assert "unpriced (4 replies)" in text
    assert 'add a [models."my-own-model"]' in text and "JUDGELAB_PRICES" in text
    assert summary.to_dict()["cost_usd"] is None
    assert writes == 1 and reads == 3
    assert summary.cache_write_tokens > 0 and summary.cache_read_tokens == 3 * summary.cache_write_tokens
    assert f"{summary.cache_write_tokens:,} cache-write + {summary.cache_read_tokens:,} cache-read" in text


def test_the_elapsed_time_covers_what_the_command_did_before_the_run(tmp_path: Path) -> None:
    # The padding rewrites of a probe run happen before arun_plan: `started` carries the
    # command's start, and the summary's elapsed time counts from it.
    from tests.test_runner import CountingJudge

    started = time.monotonic() - 42.0
    summary = run_plan(plan_of(1), CountingJudge(), Store(tmp_path / "p.duckdb"), rubric=RUBRIC,
                       judge_kind="fake", progress=False, started=started)
    assert summary.elapsed_s >= 42.0


def test_a_judge_that_calls_no_provider_is_billed_nothing(tmp_path: Path) -> None:
    # The fake judge answers in-process: its replies are results, not billed provider replies.
    from tests.test_runner import CountingJudge

    summary = run_plan(plan_of(2), CountingJudge(), Store(tmp_path / "p.duckdb"), rubric=RUBRIC,
                       judge_kind="fake", progress=False)
    assert summary.done == summary.planned and not summary.provider
    assert "billed: nothing (the fake judge answers locally" in str(summary)


def test_a_summary_of_a_run_that_only_collected_an_earlier_batch_says_so() -> None:
    summary = RunSummary(
        run_id="r", planned=24, answered_before=0, issued=0, parsed=24, parse_failures=0, errors=0,
        cached=0, cost_usd=0.0257, input_tokens=1000, output_tokens=500, elapsed_s=1.0, resumed=True,
        finished=True, collected=24, collected_batches=1,
    )
    assert "0 judge calls sent, collected 24 replies from a batch submitted earlier" in str(summary)


def test_not_in_a_terminal_the_run_id_comes_at_once_then_plain_progress_lines(tmp_path: Path) -> None:
    now = [0.0]
    out = io.StringIO()
    plain = PlainProgress("run-x", 10, every=5.0, stream=out, clock=lambda: now[0])
    plain.start(2, resumed=True)
    assert out.getvalue() == (
        "run run-x resumed: 8 of 10 calls to make; if it stops, continue it with --resume run-x\n"
    )
    plain.advance(3, spend=0.01, unpriced=0)  # too soon for a line
    now[0] = 6.0
    plain.advance(1, spend=0.02, unpriced=1)
    now[0] = 7.0
    plain.advance(4, spend=0.03, unpriced=1, failed=2, retried=5)  # the end: always a line
    # Done counts replies only; failed results (no reply) and retried attempts apart (issue 42).
    assert out.getvalue().splitlines()[1:] == [
        "run run-x: 6/10 calls done, 0 failed, 0 retried, $0.0200 + 1 unpriced, 6 s",
        "run run-x: 8/10 calls done, 2 failed, 5 retried, $0.0300 + 1 unpriced, 7 s",
    ]


@pytest.mark.slow
def test_a_probe_killed_in_a_pipe_is_resumed_with_the_run_id_it_printed_first(tmp_path: Path) -> None:
    # `judgelab probe` with stderr a pipe (a CI log): the run id is its first line, before any
    # call is made, so after a SIGKILL the run is continued with --resume RUN_ID.
    api = mock_api(tmp_path, "--latency", "0.2")
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_API_KEY": "sk-ant-test-pipe"}
    args = [sys.executable, "-m", "judgelab", "probe", "--base-url", api.url, "--db", str(tmp_path / "p.duckdb"),
            "--out", str(tmp_path / "r.jsonl"), "--n", "12", "--biases", "position", "--concurrency", "2",
            "--pad", "offline"]
    try:
        child = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        assert child.stderr is not None
        first = child.stderr.readline()
        found = re.match(r"run (\S+) started: (\d+) of (\d+) calls to make; .*--resume \1$", first.strip())
        assert found, first
        run_id = found.group(1)
        time.sleep(1.0)
        assert child.poll() is None, "the run ended before it was killed"
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=20)
        done = subprocess.run([*args, "--resume", run_id, "--json"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
    finally:
        api.stop()
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    assert run["run_id"] == run_id and run["resumed"] and run["finished"] and run["answered_before"] > 0
    assert done.stderr.startswith(f"run {run_id} resumed: ")
