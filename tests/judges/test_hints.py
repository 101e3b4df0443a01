"""Issue 42, point 5: each failure's hint is a fix that would fix *that* failure, in options that exist.

Real SDKs over real HTTP: a port nothing listens on, a server that never answers in time, the
mock API refusing the key, rate-limiting every attempt or failing with a 500. The hint must name
what would fix it (the URL and server for a refused connection, the key for a 401...), and every
``--option`` a hint names must be an option of the judging commands.
"""

from __future__ import annotations

import asyncio
import re
import socket
from typing import Any

import pytest
from click.testing import CliRunner

from judgelab.calibration.judges import AnthropicJudge, JudgeCallError, OpenAIJudge
from judgelab.calibration.mockapi import FaultPlan, MockAnthropic
from judgelab.cli import main
from judgelab.labeler.models import Rubric


def _dead_url() -> str:
    """A local port nothing listens on (bound, then closed: the connection is refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _failure(provider: str, url: str, rubric: Rubric, **kwargs: Any) -> str:
    """The message of the error one judge call ends in."""
    kwargs.setdefault("max_retries", 0)
    judge: AnthropicJudge | OpenAIJudge
    if provider == "anthropic":
        judge = AnthropicJudge("claude-sonnet-4-6", api_key=kwargs.pop("key", "test"), base_url=url, **kwargs)
    else:
        judge = OpenAIJudge("gpt-4.1-mini", api_key=kwargs.pop("key", "sk-test"), base_url=url + "/v1", **kwargs)

    async def main() -> str:
        try:
            await judge.score("My router drops.", "Restart it.", rubric)
        except JudgeCallError as exc:
            return str(exc)
        finally:
            await judge.aclose()
        raise AssertionError("the call did not fail")

    return asyncio.run(main())


def _options(command: str) -> set[str]:
    out = CliRunner().invoke(main, [command, "--help"], terminal_width=200).output
    return set(re.findall(r"--[a-z][a-z-]+", out))


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_each_failure_names_its_own_fix_in_options_that_exist(provider: str, rubric: Rubric) -> None:
    dead = _dead_url()
    refused = _failure(provider, dead, rubric)
    with MockAnthropic(latency=3.0) as slow:
        timed_out = _failure(provider, slow.base_url, rubric, timeout=0.3)
    with MockAnthropic(api_keys={"the-right-key"}) as mock:
        bad_key = _failure(provider, mock.base_url, rubric)
    with MockAnthropic(faults=FaultPlan(rate=1.0, kinds=("429",), retry_after=0.01)) as mock:
        limited = _failure(provider, mock.base_url, rubric)
    with MockAnthropic(faults=FaultPlan(rate=1.0, kinds=("500",))) as mock:
        broken = _failure(provider, mock.base_url, rubric)
    key, base = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL") if provider == "anthropic" else (
        "OPENAI_API_KEY", "OPENAI_BASE_URL")
    # A refused connection: the URL and the server, never "fewer calls in flight".
    assert f"no connection to {dead}" in refused and "--base-url" in refused and base in refused
    assert "--concurrency" not in refused and "max_concurrency" not in refused
    assert "within the timeout" in timed_out and "--timeout" in timed_out and "--concurrency" not in timed_out
    assert "HTTP 401" in bad_key and key in bad_key and "--concurrency" not in bad_key
    assert "HTTP 429" in limited and "--concurrency" in limited and "--max-retries" in limited
    assert "HTTP 500" in broken and "again later" in broken and "--concurrency" not in broken
    named = set().union(*(re.findall(r"--[a-z][a-z-]+", m) for m in (refused, timed_out, bad_key, limited, broken)))
    for command in ("probe", "score"):
        missing = named - _options(command)
        assert not missing, f"hints name options `judgelab {command}` does not have: {sorted(missing)}"
