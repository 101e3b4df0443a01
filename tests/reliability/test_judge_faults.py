"""Judge faults: a real probe plan through the real ``anthropic`` SDK against a failing API.

The local API server (:class:`~calibration.mockapi.MockAnthropic`) answers a seeded 20% of
attempts with a 429 (with ``retry-after``), a 529, a 500, a request held past the client's
timeout, or a 200 whose text is no verdict. The checks tie three ledgers together: the plan
(what was asked), the database (what was recorded) and the server's counters and request
log (what was sent and answered). Nothing may be lost, duplicated or retried past the
configured budget, and an unparseable reply must be a counted parse failure, never a score.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest

from calibration.datasets import PROBE_RUBRIC, SAMPLE, choose, load_pairs, pool_from_pairs
from calibration.judges import AnthropicJudge
from calibration.mockapi import FAULT_KINDS, MALFORMED_REPLY, FaultPlan, MockAnthropic
from calibration.probes import ProbeContext, Variants, plan_probes
from calibration.runner import PlannedCall, RunSummary, arun_plan
from labeler.store import Store

MODEL = "claude-sonnet-4-6"
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
    plan: list[PlannedCall], mock: MockAnthropic, store: Store, evidence: Path, *, max_retries: int
) -> RunSummary:
    judge = AnthropicJudge(
        MODEL, api_key="sk-ant-test-faults", base_url=mock.base_url, max_retries=max_retries,
        timeout=CLIENT_TIMEOUT, max_concurrency=32,
    )
    async with judge:
        return await arun_plan(
            plan, judge, store, rubric=PROBE_RUBRIC, judge_kind="anthropic", evidence=evidence,
            concurrency=32, progress=False,
        )


def _attempts_per_body(mock: MockAnthropic) -> Counter[str]:
    """How many times each distinct Messages request body arrived (first try plus retries)."""
    return Counter(
        json.dumps(r.body, sort_keys=True)
        for r in mock.received
        if r.method == "POST" and r.path == "/v1/messages"
    )


@pytest.mark.slow
def test_twenty_percent_faults_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    plan = probe_plan(["position", "formatting", "byline"])
    assert len(plan) >= 200
    store = Store(tmp_path / "faults.duckdb")
    faults = FaultPlan(rate=0.2, retry_after=0.05, hang=HANG, seed=7)
    with MockAnthropic(faults=faults) as mock:
        summary = asyncio.run(_run(plan, mock, store, tmp_path / "e.jsonl", max_retries=MAX_RETRIES))
        counters = Counter(mock.counters)
        per_body = _attempts_per_body(mock)
        retry_headers = [r.retry_count or 0 for r in mock.received if r.path == "/v1/messages"]

    # Every fault kind really happened, about a fifth of attempts in all.
    for kind in FAULT_KINDS:
        assert counters[f"fault:{kind}"] > 0, f"no {kind} fault was injected; change the seed"
    posts = counters["POST /v1/messages"]
    injected = sum(counters[f"fault:{k}"] for k in FAULT_KINDS)
    assert 0.12 < injected / posts < 0.28
    # Conservation at the server: every attempt got exactly one outcome.
    replies = counters["reply:ok"] + counters["reply:max_tokens"]
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
        f"{len(plan)} planned calls, {len(paid)} requests, {posts} attempts, "
        f"{injected} faults ({by_kind}), "
        f"{summary.parsed} parsed, {summary.parse_failures} parse failures, 0 lost, 0 duplicated, "
        f"most attempts for one request {max(per_body.values())} (budget {MAX_RETRIES + 1})"
    )
    evidence = [json.loads(x) for x in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert sorted(r["call_id"] for r in evidence) == sorted(c.call_id for c in plan)
    assert Counter(r["status"] for r in evidence) == Counter(rows["status"])


@pytest.mark.slow
def test_exhausted_retries_are_recorded_bounded_and_resumed(tmp_path: Path) -> None:
    # 60% of attempts overloaded and a budget of 2 retries: some calls must give up.
    plan = probe_plan(["position"])
    store = Store(tmp_path / "exhaust.duckdb")
    budget = 2
    faults = FaultPlan(rate=0.6, kinds=("529",), retry_after=0.01, seed=3)
    with MockAnthropic(faults=faults) as mock:
        first = asyncio.run(_run(plan, mock, store, tmp_path / "e.jsonl", max_retries=budget))
        per_body = _attempts_per_body(mock)
        posts = mock.count("POST /v1/messages")
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

    # Resume against a healthy server: only the failed calls are sent again.
    with MockAnthropic() as healthy:
        second = asyncio.run(_run(plan, healthy, store, tmp_path / "e.jsonl", max_retries=budget))
        resent = healthy.count("POST /v1/messages")
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
