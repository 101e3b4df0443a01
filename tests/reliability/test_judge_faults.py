"""Judge faults: a real probe plan through the real ``anthropic`` SDK against a failing API.

The local API server (:class:`~judgelab.calibration.mockapi.MockAnthropic`) answers a seeded 20% of
attempts with a 429 (with ``retry-after``), a 529, a 500, a request held past the client's
timeout, or a 200 whose text is no verdict. The checks tie three ledgers together: the plan
(what was asked), the database (what was recorded) and the server's counters and request
log (what was sent and answered). Nothing may be lost, duplicated or retried past the
configured budget, and an unparseable reply must be a counted parse failure, never a score.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from judgelab.calibration import pricing
from judgelab.calibration.datasets import PROBE_RUBRIC, SAMPLE, choose, load_pairs, pool_from_pairs
from judgelab.calibration.judges import AnthropicJudge, OpenAIJudge
from judgelab.calibration.mockapi import FAULT_KINDS, MALFORMED_REPLY, FaultPlan, MockAnthropic
from judgelab.calibration.probes import ProbeContext, Variants, plan_probes
from judgelab.calibration.runner import PlannedCall, RunSummary, arun_plan
from judgelab.labeler.store import Store
from tests.programs import Program, mock_api
from tests.reliability.conftest import REPO
from tests.reliability.fault_proxy import FAULTS, FORWARDED, read_log

MODEL = "claude-sonnet-4-6"
OPENAI_MODEL = "gpt-4.1-mini"
MAX_RETRIES = 6
#: Seconds per HTTP attempt, and how long a ``timeout`` fault holds a request (longer).
CLIENT_TIMEOUT = 2.0
HANG = 3.0


def probe_plan(biases: list[str], n: int = 34) -> list[PlannedCall]:
    """The calls ``judgelab probe --dataset sample --n N --biases ...`` makes (offline padding)."""
    pairs = choose(load_pairs(SAMPLE), n, seed=0)
    ctx = ProbeContext(
        pairs=pairs, pool=pool_from_pairs(pairs), rubric=PROBE_RUBRIC, pool_rubric=PROBE_RUBRIC,
        variants=Variants(), judge_family="claude", other_family="gpt",
    )
    return plan_probes(ctx, biases).calls


async def _run(
    plan: list[PlannedCall], mock: MockAnthropic, store: Store, evidence: Path, *, max_retries: int,
    backend: str = "anthropic",
) -> RunSummary:
    judge: AnthropicJudge | OpenAIJudge
    if backend == "openai":
        judge = OpenAIJudge(
            OPENAI_MODEL, api_key="sk-test-faults", base_url=mock.openai_base_url, max_retries=max_retries,
            timeout=CLIENT_TIMEOUT, max_concurrency=32,
        )
    else:
        judge = AnthropicJudge(
            MODEL, api_key="sk-ant-test-faults", base_url=mock.base_url, max_retries=max_retries,
            timeout=CLIENT_TIMEOUT, max_concurrency=32,
        )
    async with judge:
        return await arun_plan(
            plan, judge, store, rubric=PROBE_RUBRIC, judge_kind=backend, evidence=evidence,
            concurrency=32, progress=False,
        )


#: The judging endpoint of each back-end in the mock, and the counter of a reply cut at max tokens.
JUDGING = {"anthropic": ("/v1/messages", "reply:max_tokens"), "openai": ("/v1/chat/completions", "reply:length")}


def _attempts_per_body(mock: MockAnthropic, path: str = "/v1/messages") -> Counter[str]:
    """How many times each distinct judging request body arrived (first try plus retries)."""
    return Counter(
        json.dumps(r.body, sort_keys=True)
        for r in mock.received
        if r.method == "POST" and r.path == path
    )


@pytest.mark.slow
@pytest.mark.parametrize("backend", list(JUDGING))
def test_twenty_percent_faults_lose_and_duplicate_nothing(tmp_path: Path, backend: str) -> None:
    # The mock's own fault plan faults the judging endpoint of either API alike (the Messages
    # API's, or Chat Completions through the openai SDK).
    path, cut = JUDGING[backend]
    plan = probe_plan(["position", "formatting", "byline"])
    assert len(plan) >= 200
    store = Store(tmp_path / "faults.duckdb")
    faults = FaultPlan(rate=0.2, retry_after=0.05, hang=HANG, seed=7)
    with MockAnthropic(faults=faults) as mock:
        summary = asyncio.run(_run(plan, mock, store, tmp_path / "e.jsonl", max_retries=MAX_RETRIES,
                                   backend=backend))
        counters = Counter(mock.counters)
        per_body = _attempts_per_body(mock, path)
        retry_headers = [r.retry_count or 0 for r in mock.received if r.path == path]

    # Every fault kind really happened, about a fifth of attempts in all.
    for kind in FAULT_KINDS:
        assert counters[f"fault:{kind}"] > 0, f"no {kind} fault was injected; change the seed"
    posts = counters[f"POST {path}"]
    injected = sum(counters[f"fault:{k}"] for k in FAULT_KINDS)
    assert 0.12 < injected / posts < 0.28
    # Conservation at the server: every attempt got exactly one outcome.
    replies = counters["reply:ok"] + counters[cut]
    failed_attempts = sum(counters[f"fault:{k}"] for k in ("429", "529", "500", "timeout"))
    assert posts == replies + failed_attempts

    # The run: every planned call ends parsed or as a counted parse failure.
    assert summary.planned == len(plan)
    assert summary.finished and summary.errors == 0, summary.error_samples
    assert summary.parsed + summary.parse_failures == len(plan)
    rows = store.run_judgements(summary.run_id)
    assert sorted(rows["call_id"]) == sorted(c.call_id for c in plan), "a planned call is lost"
    all_rows = store.query(
        "SELECT call_id, cache_key, source, cached_from, value, parse_error, raw FROM judgements"
        " WHERE run_id = ?",
        [summary.run_id],
    )
    assert len(all_rows) == len(plan), "a call was recorded twice"
    assert set(rows["status"]) <= {"parsed", "parse_failure"}
    # Parse failures are exactly the malformed replies, kept verbatim, never a score.
    failures = all_rows[all_rows["parse_error"].notna()]
    assert all_rows["value"].isna().sum() == len(failures)
    paid = all_rows[all_rows["source"] == "judge"]
    assert paid["cache_key"].is_unique, "one request was paid for twice"
    assert len(paid) == replies, "a reply the server sent is missing from the database, or doubled"
    assert len(paid[paid["parse_error"].notna()]) == counters["fault:malformed"]
    assert set(paid.loc[paid["parse_error"].notna(), "raw"]) == {MALFORMED_REPLY}
    # Identical requests in the plan were made once; the others point at the paid row.
    cached = all_rows[all_rows["source"] == "cache"]
    assert set(cached["cache_key"]) <= set(paid["cache_key"])
    assert len(paid) + len(cached) == len(plan)

    # Retries bounded: no request body was sent more than 1 + max_retries times.
    assert len(per_body) == len(paid)
    assert max(per_body.values()) <= MAX_RETRIES + 1
    assert max(retry_headers) <= MAX_RETRIES
    assert sum(per_body.values()) == posts

    by_kind = ", ".join(f"{k}: {counters['fault:' + k]}" for k in FAULT_KINDS)
    print(
        f"\n{backend}: {len(plan)} planned calls, {len(paid)} requests, {posts} attempts, "
        f"{injected} faults ({by_kind}), "
        f"{summary.parsed} parsed, {summary.parse_failures} parse failures, 0 lost, 0 duplicated, "
        f"most attempts for one request {max(per_body.values())} (budget {MAX_RETRIES + 1})"
    )
    evidence = [json.loads(x) for x in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert sorted(r["call_id"] for r in evidence) == sorted(c.call_id for c in plan)
    assert Counter(r["status"] for r in evidence) == Counter(rows["status"])


@pytest.mark.slow
@pytest.mark.parametrize("backend", list(JUDGING))
def test_exhausted_retries_are_recorded_bounded_and_resumed(tmp_path: Path, backend: str) -> None:
    # 60% of attempts overloaded and a budget of 2 retries: some calls must give up.
    path = JUDGING[backend][0]
    plan = probe_plan(["position"])
    store = Store(tmp_path / "exhaust.duckdb")
    budget = 2
    faults = FaultPlan(rate=0.6, kinds=("529",), retry_after=0.01, seed=3)
    with MockAnthropic(faults=faults) as mock:
        first = asyncio.run(_run(plan, mock, store, tmp_path / "e.jsonl", max_retries=budget, backend=backend))
        per_body = _attempts_per_body(mock, path)
        posts = mock.count(f"POST {path}")
        port = mock.port
    assert first.errors > 0, "no call exhausted its retries; raise the fault rate"
    assert not first.finished
    assert first.parsed + first.parse_failures + first.errors == len(plan)
    assert max(per_body.values()) == budget + 1, "a request was retried past its budget"
    assert sum(per_body.values()) == posts
    rows = store.run_judgements(first.run_id)
    errors = rows[rows["status"] == "error"]
    assert len(errors) == first.errors
    assert all(f"after {budget + 1} attempt(s)" in e for e in errors["error"]), errors["error"].tolist()
    assert errors["value"].isna().all(), "a failed call got a score"

    # Resume against a healthy server at the same address (to the OpenAI judge a server
    # elsewhere is another endpoint, so another judge with a cache of its own): only the failed
    # calls are sent again.
    with MockAnthropic(port=port) as healthy:
        second = asyncio.run(_run(plan, healthy, store, tmp_path / "e.jsonl", max_retries=budget, backend=backend))
        resent = healthy.count(f"POST {path}")
    assert second.run_id == first.run_id and second.resumed
    assert second.finished and second.errors == 0
    failed_keys = set(errors["cache_key"])
    assert resent == len(failed_keys), "a resume re-sent calls that already had a reply"
    final = store.run_judgements(first.run_id)
    assert sorted(final["call_id"]) == sorted(c.call_id for c in plan)
    assert set(final["status"]) <= {"parsed", "parse_failure"}
    history = store.query("SELECT count(*) AS n FROM judgements WHERE run_id = ?", [first.run_id])
    # The failure rows stay as history; one new row per failed call, nothing else.
    assert int(history["n"].iloc[0]) == len(plan) + first.errors


# -- through a fault-injecting proxy, as a user would type it ----------------------------------
#
# Three programs, as in the field: `judgelab mock-api` (the upstream that answers and bills),
# the fault proxy (tests/reliability/fault_proxy.py, its own program), and `judgelab probe`
# pointed at the proxy (run through the CLI's own entry point in this process, to spare a
# second import of the SDK). The ledgers: the plan (what was asked), the proxy's attempt log
# (what was sent, faulted and forwarded) and the upstream's own request counter (what was
# billed).

PROBE_ARGS = ["--n", "34", "--biases", "position,formatting,byline", "--seed", "0"]


def _mock_api(tmp: Path, *extra: str) -> Program:
    return mock_api(tmp, *extra)


def _proxy(tmp: Path, upstream: str, log: Path, *extra: str) -> Program:
    return Program(
        ["-m", "tests.reliability.fault_proxy", "--upstream", upstream, "--log", str(log), *extra],
        cwd=REPO,
    )


@dataclass(frozen=True)
class Backend:
    """A judge back-end as a user types it: its options, its API's path and key variable."""

    name: str
    args: tuple[str, ...]
    path: str  # the judging endpoint
    suffix: str  # appended to a server's URL to make the SDK's base URL
    key_env: str

    def url(self, server: str) -> str:
        """The ``--base-url`` for a server at ``server``."""
        return server + self.suffix


BACKENDS = {
    "anthropic": Backend("anthropic", (), "/v1/messages", "", "ANTHROPIC_API_KEY"),
    # Any OpenAI-compatible endpoint, through the openai SDK (the mock serves Chat Completions).
    "openai": Backend("openai", ("--judge", "openai", "--model", "gpt-4.1-mini"), "/v1/chat/completions", "/v1",
                      "OPENAI_API_KEY"),
}


def _upstream_posts(stopped_output: str, backend: Backend = BACKENDS["anthropic"]) -> int:
    """``POST`` to the judging endpoint, from the counters `judgelab mock-api` prints when stopped."""
    found = re.search(rf"POST {re.escape(backend.path)}=(\d+)", stopped_output)
    assert found, stopped_output
    return int(found.group(1))


def _probe(
    base_url: str, db: Path, out: Path, *extra: str, backend: Backend = BACKENDS["anthropic"]
) -> tuple[int, dict[str, Any]]:
    """``judgelab probe ... --json`` through the CLI entry point: (exit code, its JSON)."""
    from click.testing import CliRunner

    from judgelab.cli import main

    result = CliRunner().invoke(
        main,
        ["probe", *backend.args, "--base-url", backend.url(base_url), "--db", str(db), "--out", str(out),
         "--json", *PROBE_ARGS, *extra],
        env={backend.key_env: "sk-test-proxy"},
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout)["run"]


def _verdicts(path: Path) -> dict[str, tuple[str, Any]]:
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    return {r["call_id"]: (r["status"], r["verdict"] if r["kind"] == "pairwise" else r["score"]) for r in rows}


@pytest.mark.slow
@pytest.mark.parametrize("backend", list(BACKENDS.values()), ids=list(BACKENDS))
def test_one_invocation_through_a_faulty_proxy_finishes_with_a_clean_runs_verdicts(
    tmp_path: Path, backend: Backend
) -> None:
    api = _mock_api(tmp_path)
    log = tmp_path / "attempts.jsonl"
    # 20% of attempts fail, all six faults; a stall holds the reply past the 2 s client timeout.
    proxy = _proxy(tmp_path, api.url, log, "--rate", "0.2", "--seed", "7", "--hang", "3",
                   "--retry-after", "0.05")
    try:
        code, run = _probe(proxy.url, tmp_path / "faulty.duckdb", tmp_path / "faulty.jsonl",
                           "--timeout", "2", "--max-retries", "6", "--concurrency", "16", backend=backend)
        # The reference: the same command straight against the healthy upstream.
        clean_code, clean = _probe(api.url, tmp_path / "clean.duckdb", tmp_path / "clean.jsonl", backend=backend)
    finally:
        proxy.stop()
        posts = _upstream_posts(api.stop(), backend)
    assert code == clean_code == 0
    distinct = clean["issued"]
    upstream = posts - distinct  # the clean run sent each distinct request once, unfaulted
    attempts = [a for a in read_log(log) if a["path"] == backend.path]
    faults = Counter(a["fault"] for a in attempts if a["fault"])
    for kind in FAULTS:
        assert faults[kind] > 0, f"no {kind} fault was injected; change the seed"
    faulted = sum(faults.values())

    # Finished in one go, nothing failed, and every verdict is the clean run's.
    assert run["finished"] and run["errors"] == 0 and run["planned"] == clean["planned"]
    assert run["issued"] == distinct
    assert _verdicts(tmp_path / "faulty.jsonl") == _verdicts(tmp_path / "clean.jsonl")
    # Billing: each distinct request once, plus at most one retry per faulted attempt; exactly
    # that many, in fact: the faults that reached the upstream before the reply was lost.
    forwarded_faults = sum(1 for a in attempts if a["fault"] in FORWARDED)
    assert upstream <= distinct + faulted
    assert upstream == distinct + forwarded_faults
    assert len(attempts) == distinct + faulted  # every fault retried once, nothing else
    print(
        f"\n{backend.name}: {run['planned']} planned calls, {distinct} distinct requests; through 20% faults "
        f"({', '.join(f'{k} {faults[k]}' for k in FAULTS)}): {len(attempts)} attempts, "
        f"{upstream} upstream requests = distinct + {upstream - distinct} "
        f"(bound: distinct + {faulted} faulted attempts); one invocation, exit 0, "
        "verdicts identical to the clean run"
    )


# -- killed at random moments: answered calls are never paid for twice ---------------------------

KILL_SEEDS = (1, 2)
CONCURRENCY = 16


def _start_probe(tmp: Path, base_url: str, db: Path, out: Path, backend: Backend) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), backend.key_env: "sk-test-kill"}
    return subprocess.Popen(
        [sys.executable, "-m", "judgelab", "probe", *backend.args, "--base-url", backend.url(base_url),
         "--db", str(db),
         "--out", str(out), "--json", "--concurrency", str(CONCURRENCY), *PROBE_ARGS],
        cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )


@pytest.mark.slow
@pytest.mark.parametrize("backend", list(BACKENDS.values()), ids=list(BACKENDS))
def test_sigkill_at_random_moments_re_sends_at_most_the_calls_in_flight(tmp_path: Path, backend: Backend) -> None:
    # 200 ms per reply, as the issue measured: a run of ~200 distinct calls at concurrency 16
    # takes a few seconds, and each seed kills it at a different moment.
    api = _mock_api(tmp_path, "--latency", "0.2")
    report = []
    try:
        for seed in KILL_SEEDS:
            report.append(_kill_and_rerun(tmp_path / f"seed{seed}", api.url, seed, backend))
    finally:
        api.stop()
    print(f"\n{backend.name}: SIGKILL at concurrency 16 -> " + "; ".join(report))


def _kill_and_rerun(work: Path, upstream: str, seed: int, backend: Backend) -> str:
    rng = random.Random(seed)
    work.mkdir()
    log = work / "attempts.jsonl"
    proxy = _proxy(work, upstream, log, "--rate", "0")
    db, out = work / "kill.duckdb", work / "kill.jsonl"
    try:
        child = _start_probe(work, proxy.url, db, out, backend)
        # Kill after a random number of delivered replies plus a random fraction of a round
        # trip, while calls are in flight.
        target = rng.randint(10, 180)
        deadline = time.monotonic() + 180
        while sum(1 for a in read_log(log) if a["t_done"]) < target:
            assert child.poll() is None, "the run ended before it was killed"
            assert time.monotonic() < deadline, "the run never got going"
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.2))
        child.send_signal(signal.SIGKILL)
        killed_at = time.time()
        child.wait(timeout=10)
        code, run = _probe(proxy.url, db, out, "--concurrency", str(CONCURRENCY), backend=backend)
    finally:
        proxy.stop()
    assert code == 0 and run["resumed"] and run["finished"] and run["errors"] == 0
    # Billed attempts: the upstream answered them (a request the killed process was still
    # writing arrives cut short and is refused, never billed).
    attempts = [a for a in read_log(log) if a["path"] == backend.path and a["status"] == 200]
    sent = Counter(a["body"] for a in attempts)
    first_done: dict[str, float | None] = {}
    for a in attempts:
        first_done.setdefault(a["body"], a["t_done"])
    resent = [b for b, n in sent.items() if n > 1]
    assert max(sent.values()) <= 2
    # Re-sent: only calls in flight when the process died. Never more than the concurrency,
    # and none whose reply had been delivered well before the kill (the old quarter-second
    # write buffer lost up to 0.27 s of delivered replies).
    assert len(resent) <= CONCURRENCY, (seed, len(resent))
    late = [b for b in resent if (first_done[b] or killed_at) < killed_at - 0.5]
    assert not late, f"seed {seed}: replies delivered before the kill were paid for again"
    delivered = len([b for b in resent if (first_done[b] or killed_at + 1) <= killed_at])
    return (
        f"seed {seed}: killed after {target}+ replies; {len(attempts)} upstream requests for "
        f"{len(sent)} distinct calls, {len(resent)} re-sent ({delivered} of them delivered by the "
        "upstream but not yet read by the client when it died)"
    )


# -- every endpoint faulted: estimate and probe --batch still finish in one invocation -----------

def _judgelab(*args: str, backend: Backend = BACKENDS["anthropic"]) -> tuple[int, str]:
    """``judgelab ARGS`` through the CLI entry point: (exit code, its standard output)."""
    from click.testing import CliRunner

    from judgelab.cli import main

    result = CliRunner().invoke(main, list(args), env={backend.key_env: "sk-test-proxy"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout


#: Where each back-end creates a batch (the counter `judgelab mock-api` prints when stopped).
BATCH_CREATE = {"anthropic": "/v1/messages/batches", "openai": "/v1/batches"}


@pytest.mark.slow
@pytest.mark.parametrize("backend", list(BACKENDS.values()), ids=list(BACKENDS))
def test_estimate_and_probe_batch_through_faults_on_every_endpoint_create_the_clean_runs_batches(
    tmp_path: Path, backend: Backend
) -> None:
    # 40% of attempts at every endpoint fail: 429, 529, 500, a stall past the client's timeout,
    # a reset, or a 200 cut short. Anthropic: count_tokens, batch create, retrieve, list,
    # results. OpenAI: the batch input upload, batch create, retrieve, list and output file;
    # OpenAI has no count_tokens endpoint, so its estimate sends nothing (it approximates).
    args = [*backend.args, "--n", "6", "--biases", "position,verbosity", "--seed", "0"]
    runs = {}
    for label, rate in (("clean", None), ("faulty", "0.4")):
        api = _mock_api(tmp_path, "--batch-delay", "0.2")
        log = tmp_path / f"attempts-{label}.jsonl"
        proxy = None if rate is None else _proxy(
            tmp_path, api.url, log, "--rate", rate, "--seed", "5", "--endpoints", "all", "--hang", "3",
            "--retry-after", "0.05")
        url = backend.url(api.url if proxy is None else proxy.url)
        try:
            est_code, est = _judgelab("estimate", "--base-url", url, "--batch", "--json", *args, backend=backend)
            code, out = _judgelab("probe", "--base-url", url, "--db", str(tmp_path / f"{label}.duckdb"),
                                  "--out", str(tmp_path / f"{label}.jsonl"), "--batch", "--poll-interval", "0.2",
                                  "--timeout", "2", "--json", *args, backend=backend)
        finally:
            if proxy is not None:
                proxy.stop()
            stopped = api.stop()
        assert est_code == code == 0
        runs[label] = (json.loads(est), json.loads(out), stopped, read_log(log) if proxy else [])
    (clean_est, clean, clean_api, _), (est, probed, faulty_api, attempts) = runs["clean"], runs["faulty"]
    run = probed["run"]
    faulted = Counter(a["endpoint"] for a in attempts if a["fault"])
    assert faulted["batches"] > 0
    if backend.name == "anthropic":
        assert faulted["count_tokens"] > 0
        assert est["token_method"] == clean_est["token_method"] == pricing.EXACT_METHOD
    else:
        assert faulted["count_tokens"] == 0 and "has no token counter" in est["token_method"]
        assert est["token_method"] == clean_est["token_method"]
    assert est["cost_usd_batch"] == clean_est["cost_usd_batch"]
    assert run["finished"] and run["errors"] == 0 and run["parsed"] == clean["run"]["parsed"]
    # The padding rewrites went through the back-end's own batch, all of them, in both runs.
    assert probed["padding"]["rewrites"] == clean["padding"]["rewrites"] == est["padding_rewrites"] > 0
    creates = re.compile(rf"POST {re.escape(BATCH_CREATE[backend.name])}=(\d+)")
    made = [m.group(1) if (m := creates.search(text)) else None for text in (clean_api, faulty_api)]
    assert made == ["2", "2"], made  # the rewrites' batch and the judge calls' batch, each once
