"""What sits between the OpenAI-compatible judge and the wire: decode checks and the rate governor.

The ``openai`` SDK (3.x) has no middleware hook, so the guarantees of the Claude path
(:mod:`judgelab.calibration.judges._transport`) are given one layer lower, by the HTTP transport the
SDK's client sends every attempt through (:class:`GovernedTransport`). The SDK's retry loop
calls it once per attempt, so:

* **No reply can crash a run.** A 2xx whose body cannot be decoded (cut short, empty, not
  JSON, JSON that is not what the endpoint answers, a batch output file cut short), from any
  endpoint the judge calls, raises :class:`UndecodableReply`, an ``httpx2.TransportError``:
  the SDK retries it within the same ``max_retries`` budget and backoff as a dropped
  connection. When the budget is spent the caller gets an ``openai.APIConnectionError``
  whose cause carries the reason (:func:`undecodable_cause`).
* **Within the provider's limits.** Every Chat Completions attempt waits for a permit from the
  shared :class:`~judgelab.calibration.judges._transport.RateGovernor`, fed from OpenAI's
  ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` headers (:func:`openai_rate_limits`)
  and ``retry-after`` / ``retry-after-ms``.
* **Retries wait their turn**: a retry is an attempt like any other and takes a permit too.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import httpx2

from judgelab.calibration.judges._transport import RateGovernor, RateLimits, jsonl_results_problem
from judgelab.calibration.pricing import approx_tokens

__all__ = [
    "GovernedTransport",
    "UndecodableReply",
    "chat_request_tokens",
    "openai_endpoint_of",
    "openai_rate_limits",
    "parse_duration",
    "undecodable_cause",
]


class UndecodableReply(httpx2.TransportError):
    """A 2xx reply arrived but could not be decoded; retried by the SDK like a lost connection.

    Attributes:
        status_code: The HTTP status of the reply.
        reason: What was wrong with it, in words.
        attempts: HTTP attempts made so far for this call, this one included.
    """

    def __init__(self, reason: str, *, request: httpx2.Request, status_code: int, attempts: int) -> None:
        super().__init__(f"undecodable reply: {reason}", request=request)
        self.status_code = status_code
        self.reason = reason
        self.attempts = attempts


def undecodable_cause(exc: BaseException) -> UndecodableReply | None:
    """The :class:`UndecodableReply` behind an SDK error, if that is what it was."""
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            return None
        if isinstance(seen, UndecodableReply):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


_BATCH_ID = re.compile(r"/batches/[^/]+(?:/cancel)?$")
_FILE_ID = re.compile(r"/files/[^/]+$")


def openai_endpoint_of(method: str, url: str) -> str | None:
    """Which endpoint of an OpenAI-compatible API a request goes to (``None``: not the judge's).

    ``"chat"``, ``"file"`` (upload or retrieve), ``"file_content"``, ``"batch"`` (create,
    retrieve, cancel), ``"batch_list"``.

    >>> openai_endpoint_of("POST", "http://h/v1/chat/completions")
    'chat'
    >>> openai_endpoint_of("GET", "http://h/v1/files/file-1/content"), openai_endpoint_of("GET", "http://h/v1/batches")
    ('file_content', 'batch_list')
    """
    path = url.split("?", 1)[0].rstrip("/")
    method = method.upper()
    if path.endswith("/chat/completions"):
        return "chat" if method == "POST" else None
    if path.endswith("/files") and method == "POST":
        return "file"
    if path.endswith("/content") and "/files/" in path:
        return "file_content"
    if _FILE_ID.search(path) and method == "GET":
        return "file"
    if path.endswith("/batches"):
        return "batch" if method == "POST" else "batch_list"
    if _BATCH_ID.search(path):
        return "batch"
    return None


_DURATION = re.compile(r"(?P<n>\d+(?:\.\d+)?)(?P<unit>ms|h|m|s)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str | None) -> float | None:
    """Seconds in an OpenAI reset header (``"1s"``, ``"6m0s"``, ``"20ms"``, ``"0.5s"``, ``"2"``).

    >>> parse_duration("6m0s"), parse_duration("20ms"), parse_duration("1h2m3.5s"), parse_duration("x")
    (360.0, 0.02, 3723.5, None)
    """
    if not text:
        return None
    text = text.strip()
    try:
        return max(float(text), 0.0)
    except ValueError:
        pass
    parts = list(_DURATION.finditer(text))
    if not parts or "".join(p.group(0) for p in parts) != text:
        return None
    return sum(float(p.group("n")) * _UNIT_S[p.group("unit")] for p in parts)


def openai_rate_limits(headers: Mapping[str, str]) -> RateLimits:
    """What an OpenAI reply's ``x-ratelimit-*`` and ``retry-after`` headers say (absent: ``None``).

    >>> openai_rate_limits({"x-ratelimit-limit-requests": "600", "x-ratelimit-remaining-requests": "9",
    ...                     "x-ratelimit-reset-requests": "1.5s"}).requests_reset_s
    1.5
    """
    low: Mapping[str, str] = {k.lower(): v for k, v in headers.items()} if isinstance(headers, dict) else headers

    def number(name: str) -> float | None:
        try:
            value = float(low[name])
        except (KeyError, TypeError, ValueError):
            return None
        return value if math.isfinite(value) else None

    retry_ms = number("retry-after-ms")
    return RateLimits(
        requests_limit=number("x-ratelimit-limit-requests"),
        requests_remaining=number("x-ratelimit-remaining-requests"),
        requests_reset_s=parse_duration(low.get("x-ratelimit-reset-requests")),
        tokens_limit=number("x-ratelimit-limit-tokens"),
        tokens_remaining=number("x-ratelimit-remaining-tokens"),
        tokens_reset_s=parse_duration(low.get("x-ratelimit-reset-tokens")),
        retry_after_s=retry_ms / 1000 if retry_ms is not None else number("retry-after"),
    )


def chat_request_tokens(body: Mapping[str, Any] | None) -> int:
    """Prompt tokens of a Chat Completions body, ~4 characters per token (for pacing only)."""
    if not isinstance(body, Mapping):
        return 0
    total = 0
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            total += approx_tokens(content)
        elif isinstance(content, list):
            total += sum(approx_tokens(str(b.get("text", ""))) for b in content if isinstance(b, Mapping))
    return total


def _json_problem(endpoint: str, body: bytes, ctype: str) -> str | None:
    """Why a 2xx body is not what ``endpoint`` answers, or ``None`` when it is."""
    if endpoint == "file_content":
        return jsonl_results_problem(body, what="batch output file", needs=())
    if not body.strip():
        return f"empty body (content-type {ctype})"
    try:
        parsed = json.loads(body)
    except ValueError:
        return f"body cut short or not JSON ({len(body)} bytes, content-type {ctype})"
    if not isinstance(parsed, dict):
        return "JSON that is not an object"
    if endpoint == "chat":
        choices = parsed.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict) or (
            not isinstance(choices[0].get("message"), dict)
        ):
            return "JSON that is not a chat completion (no choices with a message)"
    elif endpoint in ("file", "batch"):
        if not isinstance(parsed.get("id"), str):
            return f"JSON that is not a {endpoint} object (no id)"
        if endpoint == "batch" and not isinstance(parsed.get("status"), str):
            return "JSON that is not a batch (no status)"
    elif endpoint == "batch_list" and not isinstance(parsed.get("data"), list):
        return "JSON that is not a list of batches (no data list)"
    return None


class GovernedTransport(httpx2.AsyncBaseTransport):
    """The SDK client's transport: every 2xx must decode; every Chat Completions attempt takes a permit.

    Args:
        governor: Returns the :class:`RateGovernor` of the running event loop.
        inner: The transport that really sends (default: a new ``httpx2.AsyncHTTPTransport``).
    """

    def __init__(self, governor: Callable[[], RateGovernor], inner: httpx2.AsyncBaseTransport | None = None) -> None:
        """Keep the governor lookup and the sending transport."""
        self._governor = governor
        self._inner = inner if inner is not None else httpx2.AsyncHTTPTransport()

    async def aclose(self) -> None:
        """Close the sending transport."""
        await self._inner.aclose()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """One attempt: permit (chat only), send, learn from the headers, check that a 2xx decodes."""
        endpoint = openai_endpoint_of(request.method, str(request.url))
        if endpoint is None:
            return await self._inner.handle_async_request(request)
        retry = request.headers.get("x-stainless-retry-count", "0")
        attempts = int(retry) + 1 if retry.isdigit() else 1
        if endpoint != "chat":
            response = await self._inner.handle_async_request(request)
            if 200 <= response.status_code < 300:
                await self._check(endpoint, request, response, attempts)
            return response
        governor = self._governor()
        try:
            body = json.loads(request.content) if request.content else None
        except ValueError:
            body = None
        permit = await governor.acquire(chat_request_tokens(body))
        try:
            try:
                response = await self._inner.handle_async_request(request)
            except httpx2.HTTPError:
                governor.stats.no_reply += 1
                governor.observe(permit, None, RateLimits())
                raise
            limits = openai_rate_limits(response.headers)
            if not 200 <= response.status_code < 300:
                governor.observe(permit, response.status_code, limits)
                return response
            try:
                parsed = await self._check(endpoint, request, response, attempts)
            except httpx2.TimeoutException:
                governor.stats.no_reply += 1
                governor.observe(permit, None, limits)
                raise
            except httpx2.HTTPError:
                governor.stats.undecodable += 1
                governor.observe(permit, None, limits)
                raise
            governor.stats.replies += 1
            usage = parsed.get("usage") if isinstance(parsed, dict) else None
            out = usage.get("completion_tokens") if isinstance(usage, dict) else None
            governor.observe(permit, response.status_code, limits,
                             output_tokens=out if isinstance(out, int) else None)
            return response
        finally:
            governor.release()

    @staticmethod
    async def _check(endpoint: str, request: httpx2.Request, response: httpx2.Response, attempts: int) -> Any:
        """Read the whole body (the SDK then reads it from memory) and check it; the parsed JSON."""
        try:
            body = await response.aread()
        except httpx2.TimeoutException:
            raise
        except httpx2.HTTPError as exc:  # a body cut by a closed connection
            raise UndecodableReply(f"body not read whole: {type(exc).__name__}", request=request,
                                   status_code=response.status_code, attempts=attempts) from exc
        ctype = response.headers.get("content-type", "none")
        problem = _json_problem(endpoint, body, ctype)
        if problem is not None:
            raise UndecodableReply(problem, request=request, status_code=response.status_code, attempts=attempts)
        return None if endpoint == "file_content" else json.loads(body)
