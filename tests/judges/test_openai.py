"""OpenAIJudge through the real ``openai`` SDK (3.x) against the local mock's Chat Completions, Files and Batches.

The same guarantees as the Claude path (tests/judges/test_anthropic.py, test_transport.py):
faults retried within the budget, undecodable replies retried on every endpoint, the rate
governor reading ``x-ratelimit-*``, cost from ``usage`` with cached prompt tokens, an honest
"unpriced", batches created once, and a cache that one model name on two endpoints never shares.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from judgelab.calibration import formats, pricing
from judgelab.calibration.datasets import PROBE_RUBRIC
from judgelab.calibration.judges import (
    AnthropicJudge,
    BatchJudge,
    BuildingJudge,
    FakeJudge,
    JudgeCallError,
    OpenAIJudge,
    infer_family,
)
from judgelab.calibration.judges._openai_transport import openai_rate_limits
from judgelab.calibration.mockapi import MALFORMED_REPLY, FaultPlan, MockAnthropic, RateLimit
from judgelab.calibration.runner import PlannedCall, arun_plan, cache_key_for
from judgelab.labeler.errors import JudgeError
from judgelab.labeler.models import Rubric
from judgelab.labeler.store import Store
from tests.reliability.fault_proxy import Proxy, read_log, served_in_thread

T = TypeVar("T")
MODEL = "gpt-4.1-mini"


def _judge(url: str, model: str = MODEL, **kwargs: Any) -> OpenAIJudge:
    return OpenAIJudge(model, api_key="sk-test", base_url=url, **kwargs)


def _go(judge: OpenAIJudge, work: Callable[[OpenAIJudge], Awaitable[T]]) -> T:
    async def main() -> T:
        try:
            return await work(judge)
        finally:
            await judge.aclose()

    return asyncio.run(main())


def _chat_bodies(mock: MockAnthropic) -> list[dict[str, Any]]:
    return [r.body for r in mock.received if r.path == "/v1/chat/completions"]


def _plan(n: int) -> list[PlannedCall]:
    return [PlannedCall(f"c{i}", "pointwise", "likert5", f"Ticket {i}: the router drops.", f"Answer {i}: restart it.")
            for i in range(n)]


# ---------------------------------------------------------------- protocols, settings, identity


def test_every_back_end_is_the_judge_the_runner_takes_it_for() -> None:
    openai_judge = _judge("http://127.0.0.1:9/v1")
    claude = AnthropicJudge(api_key="k")
    assert isinstance(openai_judge, BatchJudge) and isinstance(claude, BatchJudge)
    assert isinstance(FakeJudge(seed=0), BuildingJudge) and not isinstance(FakeJudge(seed=0), BatchJudge)


class _Misspelled:
    """A back-end that builds its own requests but misspelled ``cache_identity``."""

    def __init__(self) -> None:
        self._inner = FakeJudge(seed=0)
        self.model, self.family, self.spec, self.params = "fake-judge", "claude", None, self._inner.params
        self.build, self.run = self._inner.build, self._inner.run
        self.score, self.compare = self._inner.score, self._inner.compare

    def cache_identiy(self) -> str:
        return "mine"


def test_a_back_end_missing_part_of_the_protocol_is_refused_not_given_another_judges_keys(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="lacks cache_identity"):
        cache_key_for(_Misspelled(), PROBE_RUBRIC, _plan(1)[0])
    with pytest.raises(TypeError, match="lacks cache_identity"):
        asyncio.run(arun_plan(_plan(2), _Misspelled(), Store(tmp_path / "m.duckdb"), rubric=PROBE_RUBRIC,
                              judge_kind="fake", progress=False))


def test_one_model_name_on_two_endpoints_never_shares_a_cache_key() -> None:
    call = _plan(1)[0]
    here, there = _judge("http://127.0.0.1:9/v1"), _judge("http://10.0.0.2:8000/v1")
    assert cache_key_for(here, PROBE_RUBRIC, call) != cache_key_for(there, PROBE_RUBRIC, call)
    slash = _judge("http://127.0.0.1:9/v1/")
    assert cache_key_for(here, PROBE_RUBRIC, call) == cache_key_for(slash, PROBE_RUBRIC, call)
    # The Claude path's keys do not change (no identity folded in).
    claude = AnthropicJudge(api_key="k")
    assert cache_key_for(claude, PROBE_RUBRIC, call) == claude.build(
        "pointwise", "likert5", PROBE_RUBRIC, call.prompt, [call.answer]).cache_key


def test_key_family_and_endpoint_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(JudgeError, match="OPENAI_API_KEY"):
        OpenAIJudge("gpt-4.1")
    local = OpenAIJudge("llama3.1:8b", base_url="http://localhost:11434/v1")  # Ollama needs no key
    assert local.family == "llama" and local.endpoint == "openai at localhost:11434"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://vllm.internal:8000/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    judge = OpenAIJudge("Qwen/Qwen2.5-7B-Instruct", family="qwen")
    assert judge.host == "vllm.internal:8000" and "sk-secret" not in repr(judge)
    assert infer_family("o3-mini") == "gpt" and infer_family("gemini-2.5-pro") == "gemini"
    # OpenAI's reasoning models take max_completion_tokens and no temperature.
    body = OpenAIJudge("o3").request(OpenAIJudge("o3").build("pointwise", "likert5", PROBE_RUBRIC, "t", ["a"]))
    assert "max_completion_tokens" in body and "temperature" not in body and "max_tokens" not in body


def test_openai_rate_limit_headers_are_read() -> None:
    limits = openai_rate_limits({"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "7",
                                 "x-ratelimit-reset-requests": "6m0s", "x-ratelimit-limit-tokens": "30000",
                                 "x-ratelimit-remaining-tokens": "29000", "x-ratelimit-reset-tokens": "20ms",
                                 "retry-after-ms": "250"})
    assert (limits.requests_limit, limits.requests_remaining, limits.requests_reset_s) == (500, 7, 360.0)
    assert (limits.tokens_remaining, limits.tokens_reset_s, limits.retry_after_s) == (29000, 0.02, 0.25)


# ---------------------------------------------------------------- replies, cost and faults


def test_score_and_compare_parse_with_cost_from_usage(rubric: Rubric, task: str, answer: str, weak_answer: str) -> None:
    with MockAnthropic(min_cache_tokens=50) as mock:
        judge = _judge(mock.openai_base_url)

        async def work(j: OpenAIJudge) -> list[Any]:
            first = await j.score(task, answer, rubric)
            second = await j.score(task, weak_answer, rubric)
            pair = await j.compare(task, answer, weak_answer, rubric)
            return [first, second, pair]

        first, second, pair = _go(judge, work)
        body = _chat_bodies(mock)[0]
    assert body["messages"][0]["role"] == "system" and body["temperature"] == 0.0 and body["max_tokens"] == 1024
    assert first.parsed and second.parsed and pair.parsed and pair.kind == "pairwise"
    # The rubric block was cached from its second use: read at the cached-input rate.
    assert first.cache_read_tokens == 0 and second.cache_read_tokens > 0
    table = pricing.load_prices()
    expected = table.cost(MODEL, pricing.TokenUsage(second.input_tokens, second.output_tokens,
                                                    cache_read_tokens=second.cache_read_tokens))
    assert second.cost_usd == pytest.approx(expected)
    uncached = table.cost(MODEL, pricing.TokenUsage(second.input_tokens + second.cache_read_tokens,
                                                    second.output_tokens))
    assert second.cost_usd is not None and uncached is not None and second.cost_usd < uncached


def test_a_local_model_is_unpriced_never_guessed(rubric: Rubric, task: str, answer: str) -> None:
    with MockAnthropic() as mock:
        judgement = _go(_judge(mock.openai_base_url, "llama3.1:8b"), lambda j: j.score(task, answer, rubric))
    assert judgement.parsed and judgement.input_tokens > 0 and judgement.cost_usd is None


def test_every_call_ends_parsed_or_as_a_counted_failure(rubric: Rubric) -> None:
    faults = FaultPlan(rate=0.3, retry_after=0.01, hang=3.0, seed=4)
    with MockAnthropic(faults=faults) as mock:
        judge = _judge(mock.openai_base_url, max_retries=8, timeout=1.0, max_concurrency=16)

        async def work(j: OpenAIJudge) -> list[Any]:
            return await asyncio.gather(*(j.score(f"ticket {i}", f"answer {i}", rubric) for i in range(40)))

        out = _go(judge, work)
        counters = dict(mock.counters)
    assert all(k in counters for k in ("fault:429", "fault:500", "fault:timeout", "fault:malformed"))
    malformed = [j for j in out if not j.parsed]
    assert len(malformed) == counters["fault:malformed"] and {j.raw for j in malformed} == {MALFORMED_REPLY}
    assert max(j.attempts for j in out) > 1 and all(j.attempts <= 9 for j in out)


def test_exhausted_retries_raise_with_the_attempt_count_and_endpoint(rubric: Rubric, task: str, answer: str) -> None:
    with MockAnthropic(faults=FaultPlan(rate=1.0, kinds=("500",))) as mock, pytest.raises(
        JudgeCallError, match=r"after 3 attempt\(s\): HTTP 500"
    ) as err:
        _go(_judge(mock.openai_base_url, max_retries=2), lambda j: j.score(task, answer, rubric))
    assert err.value.attempts == 3 and "127.0.0.1" in str(err.value)


@pytest.mark.parametrize("kind", ["cut", "empty", "html"])
def test_an_undecodable_reply_is_retried_within_the_budget_then_a_judge_error(
    kind: str, rubric: Rubric, task: str, answer: str
) -> None:
    with MockAnthropic() as mock, served_in_thread(
        Proxy(mock.base_url, rate=1.0, kinds=(kind,), seed=0, hang=1.0, retry_after=0.01, log=None)
    ) as url, pytest.raises(JudgeCallError, match="undecodable reply") as err:
        _go(_judge(url + "/v1", max_retries=2), lambda j: j.score(task, answer, rubric))
    assert err.value.attempts == 3 and err.value.error_type == "undecodable_reply"


def test_cut_replies_on_every_endpoint_are_retried_never_a_crash(rubric: Rubric, tmp_path: Path) -> None:
    # The first attempt at every request (chat, upload, batch create, retrieve, list, output file)
    # comes back a 200 cut short; the run still finishes, with one batch.
    log = tmp_path / "attempts.jsonl"
    with MockAnthropic(batch_delay=0.1) as mock, served_in_thread(
        Proxy(mock.base_url, rate=1.0, kinds=("cut",), seed=1, hang=1.0, retry_after=0.01, log=log,
              endpoints=("messages", "batches"), first_only=True)
    ) as url:
        store = Store(tmp_path / "cut.duckdb")
        judge = _judge(url + "/v1", max_retries=3)
        plan = _plan(6)

        async def work(j: OpenAIJudge) -> Any:
            concurrent = await arun_plan(plan[:3], j, store, rubric=PROBE_RUBRIC, judge_kind="openai", progress=False)
            batched = await arun_plan(plan[3:], j, store, rubric=PROBE_RUBRIC, judge_kind="openai", batch=True,
                                      poll_interval=0.05, progress=False)
            return concurrent, batched

        concurrent, batched = _go(judge, work)
        creates = mock.count("POST /v1/batches")
    cut = {(a["method"], a["path"].split("?")[0].rsplit("/", 1)[-1]) for a in read_log(log) if a["fault"] == "cut"}
    assert ("POST", "completions") in cut and ("POST", "files") in cut and ("GET", "content") in cut
    assert concurrent.finished and batched.finished and batched.errors == 0 and batched.parsed == 3
    # The cut create reply was found again by its marker, not created a second time.
    assert creates >= 1 and mock.count("GET /v1/batches") >= 1
    assert len(mock._openai_batches) == 1


# ---------------------------------------------------------------- rate limits


def test_concurrency_32_against_an_enforced_limit_neither_storms_nor_fails(rubric: Rubric) -> None:
    # 600 requests/min (10/s, a 1 s bucket of 10): the governor reads x-ratelimit-* and paces.
    with MockAnthropic(rate_limit=RateLimit(rpm=600)) as mock:
        judge = _judge(mock.openai_base_url, max_concurrency=32, max_retries=8)

        async def work(j: OpenAIJudge) -> tuple[list[Any], Any]:
            out = await asyncio.gather(*(j.score(f"ticket {i}", f"answer {i}", rubric) for i in range(40)))
            return out, j.governor.stats

        out, stats = _go(judge, work)
        refused, posts = mock.count("ratelimit:429"), mock.count("POST /v1/chat/completions")
    assert all(j.parsed for j in out)
    assert refused / posts <= 0.1, (refused, posts)
    assert stats.waited_s > 0  # paced, not refused


# ---------------------------------------------------------------- the Batch API


def test_batch_submit_poll_collect_at_the_batch_price(rubric: Rubric, task: str, answer: str, weak_answer: str) -> None:
    with MockAnthropic(batch_delay=0.1) as mock:
        judge = _judge(mock.openai_base_url)
        calls = {"a": judge.build("pointwise", "likert5", rubric, task, [answer]),
                 "b": judge.build("pairwise", "pairwise5", rubric, task, [answer, weak_answer])}

        async def work(j: OpenAIJudge) -> Any:
            batch_id = await j.submit_batch(calls)
            status = await j.wait_batch(batch_id, poll_interval=0.05)
            return status, await j.collect_batch(batch_id, rubric=rubric), await j.run(calls["a"], rubric)

        status, results, direct = _go(judge, work)
    assert status.ended and status.counts["completed"] == 2
    assert results["a"].value == direct.value and results["b"].parsed
    assert results["a"].cost_usd == pytest.approx(direct.cost_usd * 0.5)


def test_batch_failures_are_recorded_not_dropped(rubric: Rubric) -> None:
    faults = FaultPlan(rate=0.5, kinds=("500", "timeout", "malformed"), seed=2, endpoints=("batches",))
    with MockAnthropic(batch_delay=0.05, faults=faults) as mock:
        judge = _judge(mock.openai_base_url)
        calls = {f"c{i}": judge.build("pointwise", "likert5", rubric, f"t{i}", [f"a{i}"]) for i in range(12)}

        async def work(j: OpenAIJudge) -> Any:
            batch_id = await j.submit_batch(calls)
            await j.wait_batch(batch_id, poll_interval=0.05)
            return await j.collect_batch(batch_id)

        results = _go(judge, work)
        counters = dict(mock.counters)
    assert set(results) == set(calls)
    errored = [r for r in results.values() if r.failure_kind == "batch_error"]
    malformed = [r for r in results.values() if r.failure_kind == "parse_failure"]
    assert len(errored) == counters.get("fault:500", 0) + counters.get("fault:timeout", 0) > 0
    assert len(malformed) == counters.get("fault:malformed", 0)
    assert all(r.value is None for r in errored + malformed)
    assert any("batch_expired" in (r.parse_error or "") for r in errored) or not counters.get("fault:timeout")


def test_a_lost_batch_is_found_again_by_its_marker_never_created_twice(rubric: Rubric) -> None:
    with MockAnthropic(batch_delay=0.05) as mock:
        judge = _judge(mock.openai_base_url)
        calls = {f"c{i}": judge.build("pointwise", "likert5", rubric, f"t{i}", [f"a{i}"]) for i in range(3)}
        since = datetime.now(UTC)

        async def work(j: OpenAIJudge) -> tuple[str, str | None, str | None, str | None]:
            made = await j.submit_batch(calls, since=since)
            # Found by the digest of exactly its custom ids; another set of three ids of the
            # same size (another run's) never matches it (issue 42).
            return (made, await j.find_batch(list(calls), since=since),
                    await j.find_batch(list(calls), since=since, exclude={made}),
                    await j.find_batch(["d0", "d1", "d2"], since=since))

        made, found, other, foreign = _go(judge, work)
    assert found == made and other is None and foreign is None
    assert formats.parse("likert5", "VERDICT: 4").value == 4.0
