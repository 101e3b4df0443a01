"""The local Anthropic-compatible server, driven by the real ``anthropic`` SDK (no mocks)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anthropic
import pytest
from click.testing import CliRunner

from judgelab.calibration import formats
from judgelab.calibration.mockapi import MALFORMED_REPLY, FaultPlan, MockAnthropic, RateLimit, mock_api_command
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Rubric
from tests.programs import REPO

SYSTEM = "You grade support replies. " * 40


def _client(mock: MockAnthropic, **kwargs: Any) -> anthropic.AsyncAnthropic:
    kwargs.setdefault("max_retries", 0)
    return anthropic.AsyncAnthropic(base_url=mock.base_url, api_key="test", **kwargs)


async def _create(client: anthropic.AsyncAnthropic, user: str = "hello", **kwargs: Any) -> Any:
    kwargs.setdefault("system", [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}])
    return await client.messages.create(
        model="claude-sonnet-4-6",
        max_tokens=kwargs.pop("max_tokens", 256),
        messages=[{"role": "user", "content": user}],
        **kwargs,
    )


async def _create_once(mock: MockAnthropic, user: str = "hello", timeout: float = 60.0, **kwargs: Any) -> Any:
    """One message through a client that is closed again in the same event loop."""
    async with _client(mock, timeout=timeout) as client:
        return await _create(client, user, **kwargs)


def _raw(
    mock: MockAnthropic, path: str, body: dict[str, Any] | None = None, key: bool = True
) -> tuple[int, dict[str, str], Any]:
    """A plain HTTP request (to read status codes and headers the SDK turns into exceptions)."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"content-type": "application/json", **({"x-api-key": "test"} if key else {})}
    req = urllib.request.Request(mock.base_url + path, data=data, headers=headers, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read())


MESSAGE = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}


# ---------------------------------------------------------------- messages


def test_message_shape_and_judge_reply(rubric: Rubric, task: str, answer: str) -> None:
    call = formats.build_call("pairwise", "pairwise5", "claude-sonnet-4-6", rubric, task, [answer, answer])
    with MockAnthropic() as mock:
        message = asyncio.run(_create_once(mock, call.user))
    assert message.type == "message" and message.role == "assistant" and message.id.startswith("msg_")
    assert message.model == "claude-sonnet-4-6" and message.stop_reason == "end_turn"
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    text = message.content[0].text
    assert formats.parse("pairwise5", text).ok


def test_prompt_cache_write_then_read() -> None:
    async def run(mock: MockAnthropic) -> list[Any]:
        async with _client(mock) as client:
            return [await _create(client, f"question {i}") for i in range(3)]

    # min_cache_tokens=0: cache this short prefix (the model's own minimum is tested below).
    with MockAnthropic(min_cache_tokens=0) as mock:
        first, second, _ = (m.usage for m in asyncio.run(run(mock)))
        assert mock.count("cache:write") == 1 and mock.count("cache:read") == 2
    assert first.cache_creation_input_tokens > 0 and first.cache_read_input_tokens == 0
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0
    total = first.input_tokens + first.cache_creation_input_tokens
    assert second.input_tokens + second.cache_read_input_tokens == total


def test_no_breakpoint_or_below_minimum_means_no_cache() -> None:
    async def run(mock: MockAnthropic, **kwargs: Any) -> list[Any]:
        async with _client(mock) as client:
            return [(await _create(client, "q", **kwargs)).usage for _ in range(2)]

    with MockAnthropic() as mock:
        plain = asyncio.run(run(mock, system=SYSTEM))
    with MockAnthropic(min_cache_tokens=10_000) as mock:
        short = asyncio.run(run(mock))
    for usage in (*plain, *short):
        assert usage.cache_read_input_tokens == 0 and usage.cache_creation_input_tokens == 0


def test_the_models_minimum_cacheable_length_applies_by_default() -> None:
    # The default follows the price table, as the real API: claude-sonnet-4-6 caches a prefix
    # only from 2,048 tokens. SYSTEM (~270 tokens) is not cached; ten times longer it is.
    long_system = [{"type": "text", "text": SYSTEM * 10, "cache_control": {"type": "ephemeral"}}]

    async def run(mock: MockAnthropic, **kwargs: Any) -> list[Any]:
        async with _client(mock) as client:
            return [(await _create(client, "q", **kwargs)).usage for _ in range(2)]

    with MockAnthropic() as mock:
        short = asyncio.run(run(mock))
        long = asyncio.run(run(mock, system=long_system))
    assert all(u.cache_read_input_tokens == 0 and u.cache_creation_input_tokens == 0 for u in short)
    assert long[0].cache_creation_input_tokens > 2048 and long[1].cache_read_input_tokens > 2048


def test_rate_limits_send_headers_and_refuse_over_budget_with_retry_after() -> None:
    # 120 requests per minute, one second's worth at once: two requests, then a 429.
    with MockAnthropic(rate_limit=RateLimit(rpm=120, tpm=60_000)) as mock:
        replies = [_raw(mock, "/v1/messages", MESSAGE) for _ in range(3)]
        refused = mock.count("ratelimit:429")
        time.sleep(0.6)
        again = _raw(mock, "/v1/messages", MESSAGE)
    (s1, h1, _), (s2, h2, _), (s3, h3, body3) = replies
    assert (s1, s2, s3, again[0], refused) == (200, 200, 429, 200, 1)
    low = [{k.lower(): v for k, v in h.items()} for h in (h1, h2, h3)]
    assert low[0]["anthropic-ratelimit-requests-limit"] == "120"
    assert [h["anthropic-ratelimit-requests-remaining"] for h in low] == ["1", "0", "0"]
    assert low[0]["anthropic-ratelimit-tokens-limit"] == "60000"
    assert int(low[0]["anthropic-ratelimit-tokens-remaining"]) < 1000
    assert low[0]["anthropic-ratelimit-requests-reset"].endswith("Z")
    assert 0 < float(low[2]["retry-after"]) <= 0.5 and body3["error"]["type"] == "rate_limit_error"
    with pytest.raises(InputError, match="rpm"):
        RateLimit(rpm=0)


def test_one_hour_ttl_is_reported_separately() -> None:
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    with MockAnthropic(min_cache_tokens=0) as mock:
        usage = asyncio.run(_create_once(mock, system=system)).usage
    assert usage.cache_creation is not None
    assert usage.cache_creation.ephemeral_1h_input_tokens == usage.cache_creation_input_tokens > 0


def test_max_tokens_cuts_the_reply() -> None:
    with MockAnthropic(responder=lambda body: "word " * 200) as mock:
        message = asyncio.run(_create_once(mock, max_tokens=5))
    assert message.stop_reason == "max_tokens" and message.usage.output_tokens == 5


def test_count_tokens_matches_the_message_prompt() -> None:
    async def run(mock: MockAnthropic) -> tuple[int, int]:
        async with _client(mock) as client:
            counted = await client.messages.count_tokens(
                model="claude-sonnet-4-6", system=SYSTEM, messages=[{"role": "user", "content": "q"}]
            )
            message = await _create(client, "q", system=SYSTEM)
            return counted.input_tokens, message.usage.input_tokens

    with MockAnthropic() as mock:
        counted, billed = asyncio.run(run(mock))
    assert counted == billed > 0


def test_sampling_params_rejected_for_models_that_reject_them() -> None:
    async def run(mock: MockAnthropic, model: str) -> Any:
        async with _client(mock) as client:
            return await client.messages.create(
                model=model, max_tokens=64, messages=[{"role": "user", "content": "q"}], extra_body={"temperature": 0}
            )

    with MockAnthropic() as mock:
        assert asyncio.run(run(mock, "claude-sonnet-4-6")).stop_reason == "end_turn"
        with pytest.raises(anthropic.BadRequestError, match="deprecated for this model"):
            asyncio.run(run(mock, "claude-opus-5"))


def test_validation_and_auth_errors() -> None:
    with MockAnthropic() as mock:
        status, _, body = _raw(mock, "/v1/messages", MESSAGE, key=False)
        assert status == 401 and body["error"]["type"] == "authentication_error"
        status, _, body = _raw(mock, "/v1/messages", {**MESSAGE, "max_tokens": 0})
        assert status == 400 and "max_tokens" in body["error"]["message"]
        status, _, body = _raw(mock, "/v1/nothing", MESSAGE)
        assert status == 404 and body["error"]["type"] == "not_found_error"


def test_broken_responder_is_a_500() -> None:
    def broken(body: dict[str, Any]) -> str:
        raise RuntimeError("boom")

    with MockAnthropic(responder=broken) as mock:
        status, _, body = _raw(mock, "/v1/messages", MESSAGE)
    assert status == 500 and body["error"]["type"] == "api_error"


def test_latency_is_applied() -> None:
    with MockAnthropic(latency=0.2) as mock:
        start = time.perf_counter()
        _raw(mock, "/v1/messages", MESSAGE)
        assert time.perf_counter() - start >= 0.2


# ---------------------------------------------------------------- faults


@pytest.mark.parametrize(
    ("kind", "status", "error_type"),
    [
        pytest.param("429", 429, "rate_limit_error", id="rate_limited"),
        pytest.param("529", 529, "overloaded_error", id="overloaded"),
        pytest.param("500", 500, "api_error", id="internal"),
    ],
)
def test_status_faults(kind: str, status: int, error_type: str) -> None:
    plan = FaultPlan(rate=1.0, kinds=(kind,), retry_after=0.05)  # type: ignore[arg-type]
    with MockAnthropic(faults=plan) as mock:
        got, headers, body = _raw(mock, "/v1/messages", MESSAGE)
        assert mock.count(f"fault:{kind}") == 1
    assert got == status and body["type"] == "error" and body["error"]["type"] == error_type
    if kind in ("429", "529"):
        assert headers["retry-after"] == "0.05"


def test_timeout_fault_holds_past_the_client_timeout() -> None:
    plan = FaultPlan(rate=1.0, kinds=("timeout",), hang=3.0)
    with MockAnthropic(faults=plan) as mock:
        start = time.perf_counter()
        with pytest.raises(anthropic.APITimeoutError):
            asyncio.run(_create_once(mock, timeout=0.2))
        assert time.perf_counter() - start < 1.5
    # Leaving the context released the held request (stop() does not wait for the 3 s hang).


def test_malformed_fault_is_a_200_without_a_verdict() -> None:
    with MockAnthropic(faults=FaultPlan(rate=1.0, kinds=("malformed",))) as mock:
        message = asyncio.run(_create_once(mock))
    assert message.content[0].text == MALFORMED_REPLY
    for fmt in formats.FORMATS:
        assert not formats.parse(fmt, MALFORMED_REPLY).ok


def test_fault_draws_are_reproducible_and_at_the_stated_rate() -> None:
    plan = FaultPlan(rate=0.3, seed=4)
    draws = [plan.draw("messages", b"body %d" % i, 0) for i in range(3000)]
    assert draws == [plan.draw("messages", b"body %d" % i, 0) for i in range(3000)]
    # 0.3 +- 4 standard errors (sqrt(0.3 * 0.7 / 3000) = 0.0084).
    assert abs(sum(d is not None for d in draws) / 3000 - 0.3) < 0.034
    assert {d for d in draws if d is not None} == {"429", "529", "500", "timeout", "malformed"}
    assert plan.draw("batches", b"x", 0) is None  # batches not in plan.endpoints


def test_fault_plan_validation() -> None:
    with pytest.raises(InputError):
        FaultPlan(rate=1.5)
    with pytest.raises(InputError):
        FaultPlan(kinds=("418",))  # type: ignore[arg-type]
    with pytest.raises(InputError):
        FaultPlan(endpoints=("files",))


# ---------------------------------------------------------------- batches


def _batch_request(i: int) -> dict[str, Any]:
    return {"custom_id": f"req-{i}", "params": {**MESSAGE, "messages": [{"role": "user", "content": f"q{i}"}]}}


def test_batch_lifecycle_through_the_sdk() -> None:
    async def run(mock: MockAnthropic) -> tuple[Any, Any, list[Any], Any]:
        async with _client(mock) as client:
            created = await client.messages.batches.create(requests=[_batch_request(i) for i in range(3)])  # type: ignore[misc]
            assert created.processing_status == "in_progress" and created.results_url is None
            await asyncio.sleep(0.25)
            ended = await client.messages.batches.retrieve(created.id)
            results = [item async for item in await client.messages.batches.results(created.id)]
            listing = await client.messages.batches.list()
            return created, ended, results, listing

    with MockAnthropic(batch_delay=0.2) as mock:
        created, ended, results, listing = asyncio.run(run(mock))
        assert ended.results_url.startswith(mock.base_url)
    assert ended.processing_status == "ended" and ended.request_counts.succeeded == 3
    assert sorted(r.custom_id for r in results) == ["req-0", "req-1", "req-2"]
    assert all(r.result.type == "succeeded" for r in results)
    assert [b.id for b in listing.data] == [created.id]


def test_batch_faults_become_errored_and_expired_results() -> None:
    async def run(mock: MockAnthropic, kinds: tuple[str, ...]) -> list[Any]:
        async with _client(mock) as client:
            created = await client.messages.batches.create(requests=[_batch_request(i) for i in range(4)])  # type: ignore[misc]
            await asyncio.sleep(0.1)
            return [item.result.type async for item in await client.messages.batches.results(created.id)]

    for kinds, expected in ((("500",), "errored"), (("timeout",), "expired")):
        plan = FaultPlan(rate=1.0, kinds=kinds, endpoints=("batches",))  # type: ignore[arg-type]
        with MockAnthropic(batch_delay=0.05, faults=plan) as mock:
            assert asyncio.run(run(mock, kinds)) == [expected] * 4


def test_batch_cancel_and_delete() -> None:
    async def run(mock: MockAnthropic) -> tuple[Any, list[Any], Any]:
        async with _client(mock) as client:
            created = await client.messages.batches.create(requests=[_batch_request(0)])  # type: ignore[list-item]
            canceling = await client.messages.batches.cancel(created.id)
            await asyncio.sleep(0.1)
            kinds = [item.result.type async for item in await client.messages.batches.results(created.id)]
            deleted = await client.messages.batches.delete(created.id)
            with pytest.raises(anthropic.NotFoundError):
                await client.messages.batches.retrieve(created.id)
            return canceling.processing_status, kinds, deleted.type

    with MockAnthropic(batch_delay=0.05) as mock:
        assert asyncio.run(run(mock)) == ("canceling", ["canceled"], "message_batch_deleted")


def test_batch_validation() -> None:
    with MockAnthropic() as mock:
        status, _, body = _raw(mock, "/v1/messages/batches", {"requests": [_batch_request(0), _batch_request(0)]})
        assert status == 400 and "unique" in body["error"]["message"]
        bad = {"requests": [{"custom_id": "has space", "params": MESSAGE}]}
        assert _raw(mock, "/v1/messages/batches", bad)[0] == 400
        assert _raw(mock, "/v1/messages/batches/msgbatch_nope")[0] == 404


# ---------------------------------------------------------------- command line


def test_mock_api_command_serves_and_reports() -> None:
    result = CliRunner().invoke(
        mock_api_command, ["--port", "0", "--duration", "0.2", "--fake-position", "0.3"], catch_exceptions=False
    )
    assert result.exit_code == 0
    assert "Mock Anthropic API on http://127.0.0.1:" in result.output
    assert "position=0.3" in result.output
    assert "Stopped." in result.output


def test_mock_api_started_in_the_background_stops_on_sigterm_with_its_counters(tmp_path: Path) -> None:
    # `judgelab mock-api ... &` in a script (the README's dry run) starts with SIGINT ignored, as
    # every background job of a shell without job control does: Ctrl+C cannot reach it, and
    # `kill` (SIGTERM) used to end it without its counters.
    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen(
        [sys.executable, "-m", "judgelab", "mock-api", "--port", "0"], cwd=tmp_path, stdout=subprocess.PIPE,
        text=True, env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}, preexec_fn=ignore_sigint,
    )
    try:
        assert proc.stdout is not None
        assert re.search(r"http://[\d.]+:\d+", proc.stdout.readline())
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert "Stopped. no requests" in out
