"""The judge's transport: undecodable replies retried then recorded, and the rate governor.

The governor's arithmetic is checked with a fake clock; the middleware end to end through the
real ``anthropic`` SDK, against the local API server, with the fault proxy of the reliability
tests run in this process where a reply must be broken on the wire.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from judgelab.calibration.judges import AnthropicJudge, JudgeCallError, Judgement
from judgelab.calibration.judges._transport import _UNANSWERED, GovernorStats, RateGovernor, RateLimits, request_tokens
from judgelab.calibration.mockapi import MockAnthropic
from judgelab.labeler.models import Rubric
from tests.programs import counter, mock_api
from tests.reliability.fault_proxy import Proxy, read_log, served_in_thread


class Clock:
    """A hand-moved monotonic clock."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _limits(remaining: float, *, limit: float = 600.0, retry_after: float | None = None) -> RateLimits:
    return RateLimits(requests_limit=limit, requests_remaining=remaining, retry_after_s=retry_after)


# ---------------------------------------------------------------- the governor's arithmetic


def test_window_starts_small_and_doubles_per_round_until_the_first_refusal() -> None:
    gov = RateGovernor(64, clock=Clock())
    assert gov.window == 4
    for _ in range(4):  # one round trip of the window: it doubles
        gov.observe(gov.grant(100), 200, RateLimits())
    assert gov.window == 8
    for _ in range(100):
        gov.observe(gov.grant(100), 200, RateLimits())
    assert gov.window == 64


def test_stated_limits_open_the_window_at_once() -> None:
    gov = RateGovernor(64, clock=Clock())
    gov.observe(gov.grant(100), 200, _limits(40))
    assert gov.window == 64


def test_window_halves_on_429_or_529_once_per_event_and_grows_back_one_per_round() -> None:
    clock = Clock()
    gov = RateGovernor(16, clock=clock)
    for _ in range(12):
        gov.observe(gov.grant(100), 200, RateLimits())
    assert gov.window == 16
    permit = gov.grant(100)
    gov.observe(permit, 529, RateLimits())
    assert gov.window == 8
    # A second refusal in the same half second is the same congestion event.
    gov.observe(gov.grant(100), 429, RateLimits())
    assert gov.window == 8 and gov.stats.decreases == 1
    clock.now += 1.0
    gov.observe(gov.grant(100), 429, RateLimits())
    assert gov.window == 4
    # Additive increase: 1/window per success, about one more per round trip of the window.
    for _ in range(4):
        gov.observe(gov.grant(100), 200, RateLimits())
    assert gov.window == pytest.approx(4.9, abs=0.05)
    for _ in range(500):
        gov.observe(gov.grant(100), 200, RateLimits())
    assert gov.window == 16  # never above the configured concurrency
    assert gov.stats.window_min == 4 and gov.stats.rate_limited == 2 and gov.stats.overloaded == 1


def test_pacing_follows_the_stated_limit_and_what_remains() -> None:
    clock = Clock()
    gov = RateGovernor(64, clock=clock)
    assert gov.delay(100) == 0  # no headers yet: nothing to pace by
    first = gov.grant(100)
    # 600 requests a minute = 10 per second; the reply says 0 remained: the next request may
    # go once 3.5 have refilled (a quarter second's refill held back for requests on their way).
    gov.observe(first, 200, _limits(0))
    assert gov.delay(100) == pytest.approx(0.35)
    clock.now += 0.35
    assert gov.delay(100) == pytest.approx(0.0, abs=1e-9)
    # Every request sent is spent from the mirror at once.
    sent = [gov.grant(100) for _ in range(3)]
    assert gov.requests.level == pytest.approx(3.5 - 3)
    clock.now += 1.0
    gov.delay(100)
    assert gov.requests.level == pytest.approx(3.5 - 3 + 10)
    # A reply lowers the mirror to what it says remained, less the requests still in flight
    # that were sent after it (the provider may not have counted them yet) ...
    gov.observe(sent[0], 200, _limits(5))
    assert gov.requests.level == pytest.approx(5 - 2)
    # ... and never raises it: that is refill's job, at the stated rate, up to the bucket.
    gov.observe(sent[1], 200, _limits(50))
    assert gov.requests.level == pytest.approx(5 - 2)
    clock.now += 0.1
    gov.delay(100)
    assert gov.requests.level == pytest.approx(5 - 2 + 1)


def test_a_429_with_retry_after_pauses_every_new_attempt() -> None:
    clock = Clock()
    gov = RateGovernor(8, clock=clock)
    gov.observe(gov.grant(10), 429, RateLimits(retry_after_s=1.5))
    assert gov.delay(10) == pytest.approx(1.5)
    clock.now += 1.5
    assert gov.delay(10) == 0


def test_attempts_wait_for_a_reply_once_a_few_have_gone_unanswered() -> None:
    async def main() -> None:
        gov = RateGovernor(64, clock=Clock())
        gov.observe(gov.grant(10), 200, _limits(3000, limit=600_000))  # the window opens to 64
        gov.release()
        # After one reply, _UNANSWERED attempts go out, and one more for that reply itself.
        sent = [await asyncio.wait_for(gov.acquire(10), 1.0) for _ in range(_UNANSWERED + 1)]
        blocked = asyncio.ensure_future(gov.acquire(10))
        await asyncio.sleep(0.01)
        assert not blocked.done() and gov.stats.held == 1
        gov.observe(sent[0], 200, _limits(3000, limit=600_000))  # a reply: sending resumes
        gov.release()
        await asyncio.wait_for(blocked, 1.0)
        # Replies that arrive together each make room for one more.
        for permit in sent[1:3]:
            gov.observe(permit, 200, _limits(3000, limit=600_000))
            gov.release()
        more = [await asyncio.wait_for(gov.acquire(10), 1.0) for _ in range(_UNANSWERED + 2)]
        assert gov.stats.held == 1
        late = asyncio.ensure_future(gov.acquire(10))
        await asyncio.sleep(0.01)
        assert not late.done() and gov.stats.held == 2
        late.cancel()
        # With nothing in flight nothing is awaited, however many went out before.
        for permit in [*sent[3:], *more]:
            gov.observe(permit, None, RateLimits())
            gov.release()
        gov.observe(blocked.result(), None, RateLimits())
        gov.release()
        assert gov.in_flight == 0
        await asyncio.wait_for(gov.acquire(10), 1.0)

    asyncio.run(main())


def test_token_budget_paces_by_prompt_and_expected_completion() -> None:
    clock = Clock()
    gov = RateGovernor(8, output_tokens=100, clock=clock)
    permit = gov.grant(900)
    # 60,000 tokens a minute = 1,000 per second; 0 left: a 900 + 100 token request waits 1 s,
    # and a quarter second more for the reserve.
    gov.observe(permit, 200, RateLimits(tokens_limit=60_000, tokens_remaining=0), output_tokens=100)
    assert gov.delay(900) == pytest.approx(1.25)


def test_rate_limit_headers_are_read() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    headers = {
        "Anthropic-RateLimit-Requests-Limit": "3000",
        "anthropic-ratelimit-requests-remaining": "49",
        "anthropic-ratelimit-requests-reset": (now + timedelta(seconds=2)).isoformat().replace("+00:00", "Z"),
        "anthropic-ratelimit-tokens-limit": "bogus",
        "retry-after-ms": "1500",
        "retry-after": "9",
    }
    limits = RateLimits.from_headers(headers, now=now.timestamp())
    assert (limits.requests_limit, limits.requests_remaining) == (3000, 49)
    assert limits.requests_reset_s == pytest.approx(2.0)
    assert limits.tokens_limit is None and limits.retry_after_s == 1.5
    body = {"system": [{"type": "text", "text": "x" * 400}], "messages": [{"role": "user", "content": "y" * 40}]}
    assert request_tokens(body) == 110


# ---------------------------------------------------------------- through the SDK


@contextmanager
def fault_proxy(upstream: str, log: Path, *, rate: float, kinds: tuple[str, ...]) -> Iterator[str]:
    """The reliability tests' fault proxy, served from a thread of this process."""
    proxy = Proxy(upstream, rate=rate, kinds=kinds, seed=3, hang=1.0, retry_after=0.01, log=log)
    with served_in_thread(proxy) as url:
        yield url


def _score_all(
    judge: AnthropicJudge, rubric: Rubric, task: str, answer: str, n: int
) -> list[Judgement | BaseException]:
    async def main() -> list[Judgement | BaseException]:
        try:
            calls = [judge.score(f"{task} (#{i})", answer, rubric) for i in range(n)]
            return list(await asyncio.gather(*calls, return_exceptions=True))
        finally:
            await judge.aclose()

    return asyncio.run(main())


@pytest.mark.parametrize("kind", ["cut", "empty", "html"])
def test_an_undecodable_reply_is_retried_within_the_budget_then_a_judge_error(
    tmp_path: Path, rubric: Rubric, task: str, answer: str, kind: str
) -> None:
    log = tmp_path / "attempts.jsonl"
    with MockAnthropic() as mock, fault_proxy(mock.base_url, log, rate=1.0, kinds=(kind,)) as url:
        judge = AnthropicJudge(api_key="test", base_url=url, max_retries=1)
        (outcome,) = _score_all(judge, rubric, task, answer, 1)
        billed = mock.count("POST /v1/messages")
    assert isinstance(outcome, JudgeCallError), outcome
    assert outcome.attempts == 2 and outcome.error_type == "undecodable_reply"
    assert "undecodable reply" in str(outcome) and "after 2 attempt(s)" in str(outcome)
    assert billed == 2 == len(read_log(log))


def test_cut_replies_among_good_ones_cost_one_retry_each(
    tmp_path: Path, rubric: Rubric, task: str, answer: str
) -> None:
    log = tmp_path / "attempts.jsonl"
    with MockAnthropic() as mock, fault_proxy(mock.base_url, log, rate=0.3, kinds=("cut",)) as url:
        judge = AnthropicJudge(api_key="test", base_url=url, max_retries=6, max_concurrency=8)
        results = _score_all(judge, rubric, task, answer, 20)
    cut = sum(1 for a in read_log(log) if a["fault"] == "cut")
    assert cut > 0
    assert all(isinstance(j, Judgement) and j.parsed for j in results)
    assert sum(j.attempts - 1 for j in results if isinstance(j, Judgement)) == cut


def _against_the_limit(
    tmp_path: Path, rubric: Rubric, task: str, answer: str, n: int, *, stall: tuple[float, float] | None = None
) -> tuple[int, list[Judgement | BaseException], GovernorStats]:
    """``n`` calls at concurrency 64 against ``judgelab mock-api`` enforcing 3,000 requests/min.

    ``stall = (after, seconds)`` stops the server process (SIGSTOP) ``after`` seconds into the
    run for ``seconds``, as a busy machine or a network hiccup stops an API. Returns the
    requests refused with a 429, the results and the governor's stats.
    """
    api = mock_api(tmp_path, "--latency", "0.05", "--rpm", "3000")
    stats: list[GovernorStats] = []

    def stop_for_a_while(after: float, seconds: float) -> None:
        time.sleep(after)
        os.kill(api.proc.pid, signal.SIGSTOP)
        time.sleep(seconds)
        os.kill(api.proc.pid, signal.SIGCONT)

    async def main() -> list[Judgement | BaseException]:
        judge = AnthropicJudge(api_key="test", base_url=api.url, max_concurrency=64)
        try:
            calls = [judge.score(f"{task} (#{i})", answer, rubric) for i in range(n)]
            return list(await asyncio.gather(*calls, return_exceptions=True))
        finally:
            stats.append(judge.governor.stats)
            await judge.aclose()

    staller = threading.Thread(target=stop_for_a_while, args=stall, daemon=True) if stall else None
    try:
        if staller is not None:
            staller.start()
        results = asyncio.run(main())
    finally:
        if staller is not None:
            staller.join()
        stopped = api.stop()
    refused = counter(stopped, "ratelimit:429")
    print(f"refused {refused} of {n}; governor {stats}")
    assert counter(stopped, "POST /v1/messages") == n + refused
    return refused, results, stats[0]


def test_concurrency_64_against_an_enforced_limit_neither_storms_nor_fails(
    rubric: Rubric, task: str, answer: str, tmp_path: Path
) -> None:
    # 50 requests a second, at most 50 at once, and 64 calls allowed in flight: the governor
    # reads the limit from the first replies and paces to it. The server is `judgelab mock-api`
    # in its own process, as an API is. Unpaced, 64 in flight at 50 ms would ask over 1,000 a
    # second of a 50-a-second budget: most would be refused.
    n = 150
    refused, results, _ = _against_the_limit(tmp_path, rubric, task, answer, n)
    assert all(isinstance(j, Judgement) and j.parsed for j in results)
    assert refused <= 0.01 * n, f"{refused} requests refused for the rate limit"


def test_a_server_that_stalls_then_resumes_is_not_sent_a_backlog_it_must_refuse(
    rubric: Rubric, task: str, answer: str, tmp_path: Path
) -> None:
    # The server stops for 2 s mid-run. Its bucket refills only to its size (1 s worth);
    # a client pacing by its own clock would keep sending, and the server would count the
    # whole backlog at once when it resumes: without the reply clock, 10 of 300 were refused
    # (8 after a 1.2 s stall). The governor sends at most a few attempts after the latest reply.
    n = 300
    refused, results, stats = _against_the_limit(tmp_path, rubric, task, answer, n, stall=(1.5, 2.0))
    assert all(isinstance(j, Judgement) and j.parsed for j in results)
    assert stats.held > 0
    assert refused <= 0.01 * n, f"{refused} requests refused after the stall"
