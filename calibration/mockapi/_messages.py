"""How the mock answers ``POST /v1/messages`` and ``/v1/messages/count_tokens``.

:class:`MessagesAPI` holds the request handling: rate-limit admission, latency, injected faults,
the reply from the ``responder``, usage with prompt caching (a ``cache_control`` breakpoint
caches the prefix up to it when the prefix reaches the model's minimum cacheable length).
:class:`~judgelab.calibration.mockapi.MockAnthropic` inherits it and sets the state it declares.
An :class:`ApiError` raised anywhere becomes the API's error reply.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from judgelab.calibration.mockapi._faults import MALFORMED_REPLY, FaultKind, FaultPlan, Limiter
from judgelab.calibration.pricing import approx_tokens

__all__ = ["ApiError", "MessagesAPI", "Responder", "json_reply", "prompt_segments", "prompt_tokens", "validate"]

Responder = Callable[[dict[str, Any]], str]
"""Turns a Messages request body into the assistant's reply text."""


class ApiError(Exception):
    """An error reply of the API: HTTP ``status``, error ``kind`` and ``message``, extra ``headers``."""

    def __init__(self, status: int, kind: str, message: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.headers = dict(headers or {})


def json_reply(payload: Any) -> tuple[int, dict[str, str], bytes]:
    """A 200 reply carrying ``payload`` as JSON: ``(status, headers, body)``."""
    return 200, {"content-type": "application/json"}, json.dumps(payload).encode()


class MessagesAPI:
    """The Messages endpoints of the mock (a base of :class:`~judgelab.calibration.mockapi.MockAnthropic`).

    The attributes are set by ``MockAnthropic.__init__``; ``faults`` and the other public ones
    are read at each request, so a test may change them while the server runs.
    """

    responder: Responder
    latency: float
    faults: FaultPlan
    min_cache_tokens: int | None
    counters: Counter[str]
    _limiter: Limiter
    _lock: threading.Lock
    _stop: threading.Event
    _attempts: Counter[tuple[str, str]]  # (endpoint, body digest) -> attempts
    _cache: set[str]
    _ids: itertools.count[int]
    short_output: int
    short_output_reads: int | None
    _output_reads: dict[str, int]

    def _bump(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.counters[key] += n

    def _served_output(self, key: str, content: bytes) -> bytes:
        """A batch's results as served: cut at a line break (``short_output`` lines fewer), when set."""
        if self.short_output <= 0:
            return content
        with self._lock:
            reads = self._output_reads[key] = self._output_reads.get(key, 0) + 1
        if self.short_output_reads is not None and reads > self.short_output_reads:
            return content
        self._bump("fault:short_output")
        lines = content.splitlines(keepends=True)
        return b"".join(lines[: max(len(lines) - self.short_output, 0)])

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stop.wait(seconds)

    def _count_tokens_endpoint(self, raw: bytes, body: Any) -> tuple[int, dict[str, str], bytes]:
        self._fault("count_tokens", raw)
        validate(body, need_max_tokens=False)
        return json_reply({"input_tokens": prompt_tokens(body)})

    def _fault(self, endpoint: str, raw: bytes) -> FaultKind | None:
        with self._lock:
            key = (endpoint, hashlib.sha256(raw).hexdigest())
            attempt = self._attempts[key]
            self._attempts[key] += 1
        kind = self.faults.draw(endpoint, raw, attempt)
        if kind is None:
            return None
        self._bump(f"fault:{kind}")
        retry_after = {"retry-after": f"{self.faults.retry_after:g}"}
        if kind == "429":
            raise ApiError(429, "rate_limit_error", "Number of requests has exceeded your rate limit", retry_after)
        if kind == "529":
            raise ApiError(529, "overloaded_error", "Overloaded", retry_after)
        if kind == "500":
            raise ApiError(500, "api_error", "Internal server error")
        if kind == "timeout":
            self._sleep(self.faults.hang)
            # The client gave up long ago; whatever is written now goes nowhere.
            raise ApiError(504, "timeout_error", "held past the client's timeout")
        return kind  # "malformed": answered below with a non-verdict reply

    def _messages_endpoint(self, raw: bytes, body: Any) -> tuple[int, dict[str, str], bytes]:
        # The limits are checked on arrival, before any work, as the real API does.
        limited = self._limiter.requests is not None or self._limiter.tokens is not None
        if limited:
            wait, headers = self._limiter.admit(prompt_tokens(body) if isinstance(body, Mapping) else 0)
            if wait > 0:
                self._bump("ratelimit:429")
                raise ApiError(
                    429, "rate_limit_error",
                    "This request would exceed your organization's rate limit. Slow down.",
                    {**headers, "retry-after": f"{max(wait, 0.001):.3f}"},
                )
        self._sleep(self.latency)
        fault = self._fault("messages", raw)
        message = self._message(body, malformed=fault == "malformed")
        status, headers, payload = json_reply(message)
        if limited:
            headers.update(self._limiter.charge(int(message["usage"]["output_tokens"])))
        return status, headers, payload

    def _message(self, body: Any, *, malformed: bool = False) -> dict[str, Any]:
        validate(body, need_max_tokens=True)
        from judgelab.calibration.judges._anthropic import rejects_sampling_params

        model = str(body["model"])
        sampling = [k for k in ("temperature", "top_p", "top_k") if body.get(k) is not None]
        if sampling and rejects_sampling_params(model):
            raise ApiError(400, "invalid_request_error", f"`{sampling[0]}` is deprecated for this model.")
        usage = self._usage(body)
        if malformed:
            text = MALFORMED_REPLY
        else:
            try:
                text = self.responder(body)
            except Exception as exc:  # a broken responder is the server's fault: a 500, as upstream
                raise ApiError(500, "api_error", f"responder failed: {type(exc).__name__}") from exc
        max_tokens = int(body["max_tokens"])
        stop_reason = "end_turn"
        out_tokens = approx_tokens(text)
        if out_tokens > max_tokens:
            text, out_tokens, stop_reason = text[: max_tokens * 4], max_tokens, "max_tokens"
        self._bump(f"reply:{'ok' if stop_reason == 'end_turn' else stop_reason}")
        usage["output_tokens"] = out_tokens
        return {
            "id": f"msg_mock_{next(self._ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }

    def _usage(self, body: Mapping[str, Any]) -> dict[str, Any]:
        segments = list(prompt_segments(body))
        total = sum(approx_tokens(text) for text, _ in segments)
        breakpoints = [i for i, (_, cc) in enumerate(segments) if cc]
        write = read = 0
        ttl = "5m"
        if breakpoints:
            last = breakpoints[-1]
            prefix = [text for text, _ in segments[: last + 1]]
            prefix_tokens = sum(approx_tokens(t) for t in prefix)
            cc = segments[last][1] or {}
            ttl = str(cc.get("ttl", "5m"))
            if prefix_tokens >= max(self._min_cache_tokens(str(body.get("model", ""))), 1):
                key = hashlib.sha256(json.dumps([body.get("model"), prefix]).encode()).hexdigest()
                with self._lock:
                    hit = key in self._cache
                    self._cache.add(key)
                if hit:
                    read = prefix_tokens
                    self._bump("cache:read")
                else:
                    write = prefix_tokens
                    self._bump("cache:write")
        return {
            "input_tokens": total - write - read,
            "output_tokens": 0,
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": write if ttl != "1h" else 0,
                "ephemeral_1h_input_tokens": write if ttl == "1h" else 0,
            },
        }

    def _min_cache_tokens(self, model: str) -> int:
        if self.min_cache_tokens is not None:
            return self.min_cache_tokens
        from judgelab.calibration.pricing import load_prices

        return load_prices().min_cache_tokens(model) or 0


def validate(body: Any, *, need_max_tokens: bool) -> None:
    """Refuse a body that is not a Messages request (a 400 ``invalid_request_error``)."""
    if not isinstance(body, Mapping):
        raise ApiError(400, "invalid_request_error", "a JSON object body is required")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise ApiError(400, "invalid_request_error", "model: field required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "invalid_request_error", "messages: at least one message is required")
    if need_max_tokens:
        max_tokens = body.get("max_tokens")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ApiError(400, "invalid_request_error", "max_tokens: a positive integer is required")


def prompt_segments(body: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any] | None]]:
    """The prompt in cache order (system, then messages), with each part's cache_control."""
    system = body.get("system")
    if isinstance(system, str):
        yield system, None
    elif isinstance(system, list):
        for block in system:
            if isinstance(block, Mapping):
                yield str(block.get("text", "")), block.get("cache_control")
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            yield content, None
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, Mapping):
                    yield str(block.get("text", "")), block.get("cache_control")


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """The prompt's token count (an estimate: :func:`judgelab.calibration.pricing.approx_tokens`)."""
    return sum(approx_tokens(text) for text, _ in prompt_segments(body))
