"""AnthropicJudge through the real ``anthropic`` SDK against the local mock server.

Retry backoff is kept fast with ``retry-after: 0.05``; the SDK's own backoff applies to faults
without the header (500s and timeouts), which is why the fault test allows a few seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, TypeVar

import pytest

from judgelab.calibration import formats, perturb, pricing
from judgelab.calibration.judges import (
    AnthropicJudge,
    Failure,
    Judge,
    JudgeCallError,
    Judgement,
    rejects_sampling_params,
)
from judgelab.calibration.mockapi import FaultPlan, MockAnthropic
from judgelab.labeler.errors import InputError, JudgeError
from judgelab.labeler.models import Rubric


def _judge(mock: MockAnthropic, model: str = "claude-sonnet-4-6", **kwargs: Any) -> AnthropicJudge:
    return AnthropicJudge(model, api_key="test", base_url=mock.base_url, **kwargs)


T = TypeVar("T")


def _go(judge: AnthropicJudge, work: Callable[[AnthropicJudge], Awaitable[T]]) -> T:
    """Run ``work(judge)`` in a fresh event loop and close the judge's client in that loop."""

    async def main() -> T:
        try:
            return await work(judge)
        finally:
            await judge.aclose()

    return asyncio.run(main())


def _bodies(mock: MockAnthropic) -> list[dict[str, Any]]:
    return [r.body for r in mock.received if r.path == "/v1/messages"]


# ---------------------------------------------------------------- construction and key handling


def test_missing_key_is_a_clear_judge_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(JudgeError, match=r"no API key\. Set ANTHROPIC_API_KEY"):
        AnthropicJudge()


def test_key_from_environment_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-value")
    judge = AnthropicJudge()
    assert isinstance(judge, Judge)
    assert "sk-secret" not in repr(judge) and "sk-secret" not in str(judge.params)
    assert judge.model == "claude-sonnet-4-6" and judge.family == "claude"


def test_bad_settings() -> None:
    with pytest.raises(InputError):
        AnthropicJudge(api_key="k", max_concurrency=0)


@pytest.mark.parametrize(
    ("model", "rejects"),
    [
        pytest.param("claude-sonnet-4-6", False, id="sonnet46"),
        pytest.param("claude-opus-4-6", False, id="opus46"),
        pytest.param("claude-haiku-4-5-20251001", False, id="haiku45_dated"),
        pytest.param("claude-opus-4-7", True, id="opus47"),
        pytest.param("claude-opus-5", True, id="opus5"),
        pytest.param("claude-sonnet-5-5", True, id="sonnet55"),
        pytest.param("claude-haiku-5-5", True, id="haiku55"),
        pytest.param("claude-mythos-preview", True, id="mythos_preview"),
        pytest.param("fake-judge", False, id="unknown"),
    ],
)
def test_rejects_sampling_params(model: str, rejects: bool) -> None:
    assert rejects_sampling_params(model) is rejects


# ---------------------------------------------------------------- plain calls


def test_score_and_compare_parse(rubric: Rubric, task: str, answer: str, weak_answer: str) -> None:
    async def run(judge: AnthropicJudge) -> tuple[Judgement, Judgement, Judgement]:
        point = await judge.score(task, answer, rubric, "likert5")
        binary = await judge.score(task, answer, rubric, "binary")
        pair = await judge.compare(task, answer, weak_answer, rubric)
        return point, binary, pair

    with MockAnthropic() as mock:
        point, binary, pair = _go(_judge(mock), run)
    assert point.parsed and point.value in {1.0, 2.0, 3.0, 4.0, 5.0} and point.passed == (point.value >= 4)
    assert binary.parsed and binary.passed == (binary.value == 1.0)
    assert pair.parsed and pair.value is not None and pair.value > 0  # the fake responder prefers content
    for j in (point, binary, pair):
        assert j.model == "claude-sonnet-4-6" and j.attempts == 1
        assert j.cost_usd is not None and j.cost_usd > 0 and j.output_tokens > 0


def _long(rubric: Rubric) -> Rubric:
    """``rubric`` with instructions long enough (> 2,048 tokens) to be prompt-cached."""
    return replace(rubric, instructions=rubric.instructions + " Read every step with care." * 400)


def test_request_shape_temperature_and_cache_control(rubric: Rubric, task: str, answer: str) -> None:
    async def run(judge: AnthropicJudge) -> Judgement:
        await judge.score(task, answer, _long(rubric))
        return await judge.score(task, answer, rubric)

    with MockAnthropic() as mock:
        _go(_judge(mock), run)
        _go(_judge(mock, "claude-opus-5"), run)
        old_long, old, _, new = _bodies(mock)
    # temperature travels in the body via extra_body; a rubric block long enough to be cached
    # carries the breakpoint, a short one (below the model's minimum) does not.
    assert old["temperature"] == 0.0
    assert old_long["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in old["system"][0]
    assert old["system"][0]["text"] == formats.system_text(rubric)
    # A model that rejects sampling params gets none (the mock would answer 400 otherwise).
    assert "temperature" not in new and new["max_tokens"] == 8192


def test_second_call_reads_the_prompt_cache(rubric: Rubric, task: str, answer: str, weak_answer: str) -> None:
    rubric = _long(rubric)

    async def run(judge: AnthropicJudge) -> list[Judgement]:
        return [await judge.score(task, a, rubric) for a in (answer, weak_answer)]

    with MockAnthropic() as mock:
        first, second = _go(_judge(mock), run)
    system_tokens = pricing.approx_tokens(formats.system_text(rubric))
    assert first.cache_read_tokens == 0 and first.input_tokens > system_tokens  # wrote the cache
    assert second.cache_read_tokens == system_tokens
    assert second.cost_usd is not None and first.cost_usd is not None and second.cost_usd < first.cost_usd


def test_cut_off_reply_is_a_parse_failure_with_the_stop_reason(rubric: Rubric, task: str, answer: str) -> None:
    with MockAnthropic() as mock:
        j = _go(_judge(mock, max_tokens=4), lambda j: j.score(task, answer, rubric))
    assert j.value is None and j.parse_error is not None and "stop_reason=max_tokens" in j.parse_error


def test_works_across_event_loops(rubric: Rubric, task: str, answer: str) -> None:
    # The app runs each action in a fresh loop; the judge must rebuild its loop-bound client.
    with MockAnthropic() as mock:
        judge = _judge(mock)
        first = _go(judge, lambda j: j.score(task, answer, rubric))
        second = _go(judge, lambda j: j.score(task, answer, rubric))
    assert first.raw == second.raw and first.parsed


def test_one_judge_shared_by_threads_each_running_a_loop(rubric: Rubric, task: str, answer: str) -> None:
    # Streamlit sessions are threads; a cached judge may run in several loops at once.
    with MockAnthropic(latency=0.02) as mock:
        judge = _judge(mock, max_concurrency=2)

        def session(i: int) -> list[Judgement]:
            async def work(j: AnthropicJudge) -> list[Judgement]:
                return list(await asyncio.gather(*(j.score(f"{task} {i}-{k}", answer, rubric) for k in range(6))))

            return _go(judge, work)

        with ThreadPoolExecutor(max_workers=4) as pool:
            results = [j for batch in pool.map(session, range(4)) for j in batch]
    assert len(results) == 24 and all(j.parsed for j in results)
    assert len({j.cache_key for j in results}) == 24


def test_count_tokens(rubric: Rubric, task: str, answer: str) -> None:
    with MockAnthropic() as mock:
        judge = _judge(mock)
        call = judge.build("pointwise", "likert5", rubric, task, [answer])
        counted = _go(judge, lambda j: j.count_tokens(call))
    assert counted == pricing.approx_tokens(call.system) + pricing.approx_tokens(call.user)


# ---------------------------------------------------------------- faults and retries


def test_every_call_ends_parsed_or_as_a_counted_failure(rubric: Rubric, task: str, answer: str) -> None:
    # The client timeout is generous so that only injected timeouts time out, even on a busy
    # machine: the equality between retries and transient faults below depends on it.
    plan = FaultPlan(rate=0.3, retry_after=0.05, hang=3.0, seed=11)

    async def run(judge: AnthropicJudge) -> list[Judgement]:
        calls = [judge.score(f"{task} (ticket {i})", answer, rubric) for i in range(60)]
        return list(await asyncio.gather(*calls))

    with MockAnthropic(faults=plan) as mock:
        results = _go(_judge(mock, max_retries=6, timeout=1.0, max_concurrency=16), run)
        counters = dict(mock.counters)
    # None lost, none duplicated.
    assert len(results) == 60 and len({j.cache_key for j in results}) == 60
    failures = [j for j in results if not j.parsed]
    # Every malformed reply, and only those, became a recorded parse failure.
    assert len(failures) == counters.get("fault:malformed", 0) > 0
    assert all(j.value is None and j.parse_error for j in failures)
    # Each retry answers exactly one transient fault; retries are bounded by max_retries.
    transient = sum(counters.get(f"fault:{k}", 0) for k in ("429", "529", "500", "timeout"))
    assert transient > 0
    assert sum(j.attempts - 1 for j in results) == transient
    assert counters["POST /v1/messages"] == sum(j.attempts for j in results)
    assert max(j.attempts for j in results) <= 7


def test_exhausted_retries_raise_with_the_attempt_count(rubric: Rubric, task: str, answer: str) -> None:
    plan = FaultPlan(rate=1.0, kinds=("529",), retry_after=0.01)
    with MockAnthropic(faults=plan) as mock:
        with pytest.raises(JudgeCallError) as info:
            _go(_judge(mock, max_retries=2), lambda j: j.score(task, answer, rubric))
        assert mock.count("POST /v1/messages") == 3
    err = info.value
    assert isinstance(err, JudgeError)
    assert err.attempts == 3 and err.status_code == 529 and err.error_type == "overloaded_error"
    assert "after 3 attempt(s)" in str(err) and "test" not in str(err).split("overloaded_error", 1)[1]


def test_timeouts_exhausting_retries_raise(rubric: Rubric, task: str, answer: str) -> None:
    plan = FaultPlan(rate=1.0, kinds=("timeout",), hang=2.0)
    with MockAnthropic(faults=plan) as mock, pytest.raises(JudgeCallError) as info:
        _go(_judge(mock, max_retries=1, timeout=0.2), lambda j: j.score(task, answer, rubric))
    assert info.value.attempts == 2 and info.value.status_code is None


def test_non_retryable_error_is_one_attempt(rubric: Rubric, task: str, answer: str) -> None:
    with MockAnthropic() as mock:
        judge = _judge(mock)
        call = formats.build_call("pointwise", "likert5", judge.model, rubric, task, answer, {"max_tokens": 0})
        with pytest.raises(JudgeCallError) as info:
            _go(judge, lambda j: j.run(call))
    assert info.value.attempts == 1 and info.value.status_code == 400


# ---------------------------------------------------------------- batches


def test_batch_submit_poll_collect(rubric: Rubric, task: str, answer: str) -> None:
    rubric = _long(rubric)  # long enough to carry a cache breakpoint

    async def run(judge: AnthropicJudge) -> tuple[str, Any, Any, dict[str, Judgement]]:
        calls = [judge.build("pointwise", "likert5", rubric, f"{task} #{i}", [answer]) for i in range(4)]
        batch_id = await judge.submit_batch([*calls, calls[0]])  # the duplicate is sent once
        early = await judge.poll_batch(batch_id)
        with pytest.raises(JudgeError, match="still in_progress"):
            await judge.collect_batch(batch_id)
        done = await judge.wait_batch(batch_id, poll_interval=0.05, timeout=5)
        return batch_id, early, done, await judge.collect_batch(batch_id, rubric=rubric)

    with MockAnthropic(batch_delay=0.2) as mock:
        judge = _judge(mock)
        _, early, done, results = _go(judge, run)
        body = next(r.body for r in mock.received if r.path == "/v1/messages/batches")
    assert early.processing_status == "in_progress" and early.counts["processing"] == 4
    assert done.ended and done.counts["succeeded"] == 4
    assert len(results) == 4 and all(j.parsed and j.passed is not None for j in results.values())
    assert all(key == j.cache_key for key, j in results.items())
    params = body["requests"][0]["params"]
    assert params["temperature"] == 0.0 and params["system"][0]["cache_control"]["ttl"] == "1h"
    # Batch results are billed at the batch discount.
    j = next(iter(results.values()))
    usage = pricing.TokenUsage(
        input_tokens=j.input_tokens - pricing.approx_tokens(formats.system_text(rubric)) * (j.cache_read_tokens == 0),
        output_tokens=j.output_tokens,
        cache_write_1h_tokens=pricing.approx_tokens(formats.system_text(rubric)) * (j.cache_read_tokens == 0),
        cache_read_tokens=j.cache_read_tokens,
    )
    assert j.cost_usd == pytest.approx(pricing.cost(judge.model, usage, batch=True))


def test_batch_failures_are_recorded_not_dropped(rubric: Rubric, task: str, answer: str) -> None:
    plan = FaultPlan(rate=0.6, kinds=("500", "timeout", "malformed"), endpoints=("batches",), seed=3)

    async def run(judge: AnthropicJudge) -> tuple[dict[str, Any], dict[str, Judgement]]:
        calls = {f"item-{i}": judge.build("pointwise", "likert5", rubric, f"{task} #{i}", [answer]) for i in range(20)}
        batch_id = await judge.submit_batch(calls)
        await judge.wait_batch(batch_id, poll_interval=0.05, timeout=5)
        # Collect with a fresh judge, as after a restart: the calls are passed back in.
        fresh = _judge(mock)
        try:
            with pytest.raises(JudgeError, match="did not submit"):
                await fresh.collect_batch(batch_id)
            return calls, await fresh.collect_batch(batch_id, calls)
        finally:
            await fresh.aclose()

    with MockAnthropic(batch_delay=0.05, faults=plan) as mock:
        calls, results = _go(_judge(mock), run)
        counters = dict(mock.counters)
    assert set(results) == set(calls)
    reasons = [j.parse_error or "" for j in results.values()]
    assert sum(r.startswith("batch errored: api_error") for r in reasons) == counters.get("fault:500", 0) > 0
    assert sum(r.startswith("batch expired") for r in reasons) == counters.get("fault:timeout", 0) > 0
    malformed = [j for j in results.values() if j.raw and not j.parsed]
    assert len(malformed) == counters.get("fault:malformed", 0) > 0
    # The kind rides beside the reason: no reply is a batch error, a bad reply a parse failure.
    no_reply = [j for j in results.values() if j.failure_kind == "batch_error"]
    assert len(no_reply) == counters.get("fault:500", 0) + counters.get("fault:timeout", 0)
    assert all(not j.raw and j.failure is not None and j.failure.no_reply for j in no_reply)
    assert all(j.failure_kind == "parse_failure" for j in malformed)
    assert sum(j.parsed for j in results.values()) == 20 - sum(
        counters.get(f"fault:{k}", 0) for k in ("500", "timeout", "malformed")
    )


def test_batch_cancel(rubric: Rubric, task: str, answer: str) -> None:
    async def run(judge: AnthropicJudge) -> dict[str, Judgement]:
        batch_id = await judge.submit_batch([judge.build("pointwise", "binary", rubric, task, [answer])])
        assert (await judge.cancel_batch(batch_id)).processing_status == "canceling"
        await judge.wait_batch(batch_id, poll_interval=0.05, timeout=15)
        return await judge.collect_batch(batch_id)

    # The batch must still be processing when the cancel arrives: 50 ms was outrun under load.
    with MockAnthropic(batch_delay=2.0) as mock:
        (result,) = _go(_judge(mock), run).values()
    assert result.value is None and result.parse_error == "batch canceled"
    assert result.failure == Failure("batch_error", "batch canceled")


def test_submit_batch_validates_custom_ids(rubric: Rubric, task: str, answer: str) -> None:
    with MockAnthropic() as mock:
        judge = _judge(mock)
        call = judge.build("pointwise", "likert5", rubric, task, [answer])
        with pytest.raises(InputError, match="invalid custom ids"):
            _go(judge, lambda j: j.submit_batch({"has space": call}))
        with pytest.raises(InputError, match="no calls"):
            _go(judge, lambda j: j.submit_batch([]))


# ---------------------------------------------------------------- LLM padding through the judge client


def test_llm_pad_against_the_mock(answer: str) -> None:
    async def run(judge: AnthropicJudge) -> perturb.Perturbed:
        return await perturb.llm_pad(judge.client, judge.model, answer)

    with MockAnthropic() as mock:
        padded = _go(_judge(mock), run)
        prompt = _bodies(mock)[0]["messages"][0]["content"]
    assert "<answer_to_pad>" in prompt
    assert padded.length_ratio >= 1.8 and padded.warnings == ()
    assert padded.input_tokens == pricing.approx_tokens(prompt)
    assert padded.output_tokens == pricing.approx_tokens(padded.text)


def test_llm_pad_failure_is_a_judge_error(answer: str) -> None:
    plan = FaultPlan(rate=1.0, kinds=("500",))

    async def run(judge: AnthropicJudge) -> perturb.Perturbed:
        return await perturb.llm_pad(judge.client, judge.model, answer)

    with MockAnthropic(faults=plan) as mock, pytest.raises(JudgeError, match="llm_pad"):
        _go(_judge(mock, max_retries=0), run)
