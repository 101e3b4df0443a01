"""A local Anthropic-compatible HTTP server for tests and dry runs.

:class:`MockAnthropic` speaks enough of the Messages API for the official ``anthropic`` SDK to
run against it unchanged (``base_url=mock.base_url``):

- ``POST /v1/messages``: a proper Message (id, content, model, stop_reason, usage with cache
  creation and cache read tokens). A ``cache_control`` breakpoint caches the prompt prefix up to
  it when the prefix reaches the model's minimum cacheable length (from the price table, as the
  real API): the first request with that prefix reports cache creation tokens, later ones cache
  reads; a shorter prefix is silently not cached.
- Rate limits (:class:`RateLimit`): a requests-per-minute and a tokens-per-minute budget,
  enforced as token buckets that refill continuously and hold ``burst_s`` seconds' worth (the
  real API also enforces its per-minute limits over shorter intervals). A request over budget
  gets a 429 ``rate_limit_error`` with ``retry-after``; every reply carries the
  ``anthropic-ratelimit-requests-*`` and ``-tokens-*`` headers (limit, remaining, reset).
- ``POST /v1/messages/count_tokens``.
- Message Batches: create, retrieve (``in_progress`` until ``batch_delay`` has passed, then
  ``ended`` with a ``results_url`` pointing back at this server), results as JSONL, list,
  cancel and delete.

The reply text comes from a pluggable ``responder(request_json) -> str``; the default is
:meth:`FakeJudge.respond <calibration.judges.FakeJudge.respond>`, so a dry run gets sensible
verdicts. A :class:`FaultPlan` injects the failures a real judge run meets: 429 with
``retry-after``, 529 ``overloaded_error``, 500, a timeout (the server holds the request past the
client's timeout), and malformed replies (200 with text that does not parse as a verdict).

Token counts are estimates (:func:`calibration.pricing.approx_tokens`), not the real tokenizer.
Models that reject sampling parameters (:func:`calibration.judges.rejects_sampling_params`)
answer a request carrying ``temperature``, ``top_p`` or ``top_k`` with a 400, as the real API
does.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import re
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import click

from calibration.pricing import approx_tokens
from labeler.errors import InputError

__all__ = [
    "FAULT_KINDS",
    "MALFORMED_REPLY",
    "FaultKind",
    "FaultPlan",
    "MockAnthropic",
    "RateLimit",
    "ReceivedRequest",
    "Responder",
    "mock_api_command",
]

FaultKind = Literal["429", "529", "500", "timeout", "malformed"]
FAULT_KINDS: tuple[FaultKind, ...] = ("429", "529", "500", "timeout", "malformed")
"""Every fault the mock can inject."""

Responder = Callable[[dict[str, Any]], str]
"""Turns a Messages request body into the assistant's reply text."""

MALFORMED_REPLY = "I have read both carefully but I would rather not commit to a verdict here."
"""The text of a ``malformed`` fault: a 200 reply that parses under no format."""


@dataclass(frozen=True)
class FaultPlan:
    """Which failures to inject, how often.

    Each attempt fails independently with probability ``rate``; the kind is drawn uniformly from
    ``kinds``. Draws are a function of ``seed``, the request body and how many times that exact
    body has been seen, so a run is reproducible however requests interleave, and a retry of a
    failed request gets a fresh draw.

    Attributes:
        rate: Probability that an attempt fails.
        kinds: The faults to draw from.
        retry_after: Seconds sent in the ``retry-after`` header of 429 and 529 replies.
        hang: Seconds a ``timeout`` fault holds the request before answering (set it above the
            client's timeout).
        seed: Seeds the draws.
        endpoints: Where faults apply: ``"messages"`` (``POST /v1/messages``), ``"batches"``
            (each request inside a batch: 429/529/500 become ``errored`` results, ``timeout``
            becomes ``expired``, ``malformed`` a succeeded result with a malformed reply), and
            ``"count_tokens"``.
    """

    rate: float = 0.0
    kinds: tuple[FaultKind, ...] = FAULT_KINDS
    retry_after: float = 0.1
    hang: float = 5.0
    seed: int = 0
    endpoints: tuple[str, ...] = ("messages",)

    def __post_init__(self) -> None:
        """Refuse a rate outside [0, 1] and unknown fault kinds."""
        if not 0.0 <= self.rate <= 1.0:
            raise InputError(f"FaultPlan: rate={self.rate!r} must be in [0, 1]")
        unknown = [k for k in self.kinds if k not in FAULT_KINDS]
        if unknown or not self.kinds:
            raise InputError(
                f"FaultPlan: unknown fault kinds {unknown!r}; expected some of {list(FAULT_KINDS)}"
            )
        bad = [e for e in self.endpoints if e not in ("messages", "batches", "count_tokens")]
        if bad:
            raise InputError(f"FaultPlan: unknown endpoints {bad!r}")

    def draw(self, endpoint: str, body: bytes, attempt: int) -> FaultKind | None:
        """The fault for this attempt at this body, or ``None``."""
        if self.rate <= 0 or endpoint not in self.endpoints:
            return None
        digest = hashlib.sha256(b"%d\0%d\0" % (self.seed, attempt) + body).digest()
        rng = random.Random(int.from_bytes(digest[:8], "big"))
        if rng.random() >= self.rate:
            return None
        return self.kinds[rng.randrange(len(self.kinds))]


@dataclass(frozen=True)
class RateLimit:
    """The organisation limits the mock enforces on ``POST /v1/messages``.

    Attributes:
        rpm: Requests per minute (``None``: no request limit).
        tpm: Tokens per minute, prompt and completion together (``None``: no token limit).
            A request is admitted when the budget covers its prompt; its completion is charged
            when it is written.
        burst_s: Seconds' worth of each limit a full bucket holds (1 s: at 3,000 rpm, at most
            50 requests at once, as the real API enforces a per-minute limit over shorter
            intervals too).
    """

    rpm: float | None = None
    tpm: float | None = None
    burst_s: float = 1.0

    def __post_init__(self) -> None:
        """Refuse non-positive limits."""
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise InputError(f"RateLimit: {name}={value!r} must be > 0 (or None for no limit)")
        if self.burst_s <= 0:
            raise InputError(f"RateLimit: burst_s={self.burst_s!r} must be > 0")


class _Bucket:
    """One continuously refilling budget (requests or tokens)."""

    def __init__(self, per_minute: float, burst_s: float) -> None:
        self.limit = per_minute
        self.rate = per_minute / 60.0
        self.cap = max(self.rate * burst_s, 1.0)
        self.level = self.cap
        self.at = time.monotonic()

    def refill(self, now: float) -> None:
        self.level = min(self.cap, self.level + self.rate * (now - self.at))
        self.at = now

    def short(self, cost: float) -> float:
        """Seconds until ``cost`` fits (0 when it fits now); a cost above the cap fits a full bucket."""
        need = min(cost, self.cap)
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def headers(self, name: str, now: float) -> dict[str, str]:
        full_in = max(self.cap - self.level, 0.0) / self.rate
        reset = datetime.now(UTC) + timedelta(seconds=full_in)
        return {
            f"anthropic-ratelimit-{name}-limit": f"{self.limit:g}",
            f"anthropic-ratelimit-{name}-remaining": str(max(math.floor(self.level), 0)),
            f"anthropic-ratelimit-{name}-reset": reset.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }


class _Limiter:
    """The mock's rate limits: admission at arrival, completion tokens charged after."""

    def __init__(self, limit: RateLimit) -> None:
        self.requests = _Bucket(limit.rpm, limit.burst_s) if limit.rpm else None
        self.tokens = _Bucket(limit.tpm, limit.burst_s) if limit.tpm else None
        self.lock = threading.Lock()

    def admit(self, prompt_tokens: int) -> tuple[float, dict[str, str]]:
        """``(0, headers)`` when admitted (and charged), else ``(seconds to wait, headers)``."""
        with self.lock:
            now = time.monotonic()
            wait = 0.0
            for bucket, cost in ((self.requests, 1.0), (self.tokens, float(prompt_tokens))):
                if bucket is not None:
                    bucket.refill(now)
                    wait = max(wait, bucket.short(cost))
            if wait == 0.0:
                if self.requests is not None:
                    self.requests.level -= 1.0
                if self.tokens is not None:
                    self.tokens.level -= prompt_tokens
            return wait, self._headers(now)

    def charge(self, output_tokens: int) -> dict[str, str]:
        """Charge a completion; the headers as they stand after it."""
        with self.lock:
            now = time.monotonic()
            if self.tokens is not None:
                self.tokens.refill(now)
                self.tokens.level -= output_tokens
            if self.requests is not None:
                self.requests.refill(now)
            return self._headers(now)

    def _headers(self, now: float) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.requests is not None:
            out.update(self.requests.headers("requests", now))
        if self.tokens is not None:
            out.update(self.tokens.headers("tokens", now))
        return out


@dataclass
class _Batch:
    id: str
    requests: list[dict[str, Any]]
    created: datetime
    ready_at: float
    status: str = "in_progress"
    ended: datetime | None = None
    cancel_initiated: datetime | None = None
    results: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class ReceivedRequest:
    """One request the mock received (the API key header is never kept).

    Attributes:
        method: ``GET``, ``POST`` or ``DELETE``.
        path: The URL path.
        body: The parsed JSON body (``None`` for none or invalid JSON).
        retry_count: The SDK's ``x-stainless-retry-count`` header, if sent.
    """

    method: str
    path: str
    body: Any
    retry_count: int | None


class _ApiError(Exception):
    def __init__(self, status: int, kind: str, message: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.headers = dict(headers or {})


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


class MockAnthropic:
    """A local Anthropic-compatible server on ``127.0.0.1`` (port 0 picks a free port).

    Use it as a context manager; :attr:`base_url` is the URL to give the SDK::

        with MockAnthropic(latency=0.05, faults=FaultPlan(rate=0.2, retry_after=0.05)) as mock:
            client = anthropic.AsyncAnthropic(base_url=mock.base_url, api_key="test")

    Args:
        responder: Reply text for a request body; default: a seed-0
            :class:`~calibration.judges.FakeJudge`'s :meth:`respond`.
        latency: Seconds every ``POST /v1/messages`` waits before answering.
        faults: The :class:`FaultPlan` (default: none).
        batch_delay: Seconds a batch stays ``in_progress``.
        min_cache_tokens: A cache breakpoint below this many prefix tokens is silently ignored,
            as the real API does below a model's minimum. ``None`` (default): the model's
            minimum from the price table (:meth:`calibration.pricing.PriceTable.cache_applies`;
            a model the table has no minimum for caches any size); ``0``: always cache.
        rate_limit: The requests- and tokens-per-minute limits to enforce (default: none).
        host: Interface to bind.
        port: Port to bind (0 = any free port).
        max_received: How many requests :attr:`received` keeps (a long dry run must not grow
            without bound).

    Attributes:
        counters: Requests per route (``"POST /v1/messages"``), faults injected
            (``"fault:429"``...), rate-limit refusals (``"ratelimit:429"``), replies
            (``"reply:ok"``, ``"reply:max_tokens"``), and cache events (``"cache:write"``,
            ``"cache:read"``).
        received: The last ``max_received`` requests received, in arrival order.
    """

    def __init__(
        self,
        *,
        responder: Responder | None = None,
        latency: float = 0.0,
        faults: FaultPlan | None = None,
        batch_delay: float = 0.2,
        min_cache_tokens: int | None = None,
        rate_limit: RateLimit | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        max_received: int = 10_000,
    ) -> None:
        """Configure the server; :meth:`start` binds the port."""
        if responder is None:
            from calibration.judges._fake import FakeJudge

            responder = FakeJudge(seed=0).respond
        self.responder = responder
        self.latency = latency
        self.faults = faults or FaultPlan()
        self.batch_delay = batch_delay
        self.min_cache_tokens = min_cache_tokens
        self.rate_limit = rate_limit or RateLimit()
        self._limiter = _Limiter(self.rate_limit)
        self.counters: Counter[str] = Counter()
        self.received: deque[ReceivedRequest] = deque(maxlen=max_received)
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._attempts: Counter[tuple[str, str]] = Counter()  # (endpoint, body digest) -> attempts
        self._cache: set[str] = set()
        self._batches: dict[str, _Batch] = {}
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> MockAnthropic:
        """Bind and serve in a background thread."""
        if self._server is not None:
            return self
        handler = type("_Handler", (_Handler,), {"mock": self})
        server = _Server((self._host, self._port), handler)
        self._server = server
        self._stop.clear()
        # A short poll interval makes stop() quick (shutdown waits for the loop's next poll).
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="mock-anthropic", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests held by latency or a timeout fault are released."""
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> MockAnthropic:
        """Start the server for a ``with`` block."""
        return self.start()

    def __exit__(self, *exc: object) -> None:
        """Stop the server."""
        self.stop()

    @property
    def port(self) -> int:
        """The bound port."""
        if self._server is None:
            raise RuntimeError("MockAnthropic is not running; call start() or use it as a context manager")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``: pass it to the SDK as ``base_url``."""
        return f"http://{self._host}:{self.port}"

    def count(self, key: str) -> int:
        """A counter's value (0 if never incremented)."""
        with self._lock:
            return self.counters[key]

    def _bump(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.counters[key] += n

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stop.wait(seconds)

    # ------------------------------------------------------------------ routing

    def handle(
        self, method: str, path: str, raw: bytes, headers: Mapping[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        """Answer one HTTP request: ``(status, headers, body)``."""
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        retry = headers.get("x-stainless-retry-count")
        with self._lock:
            self.received.append(
                ReceivedRequest(method, path, body, int(retry) if retry and retry.isdigit() else None)
            )
        route = re.sub(r"/msgbatch_[A-Za-z0-9_]+", "/{id}", path)
        self._bump(f"{method} {route}")
        try:
            if not headers.get("x-api-key") and not headers.get("authorization"):
                raise _ApiError(401, "authentication_error",
                                "an API key is required (x-api-key header or Authorization: Bearer)")
            if raw and body is None:
                raise _ApiError(400, "invalid_request_error", "request body is not valid JSON")
            return self._route(method, path, raw, body)
        except _ApiError as err:
            payload = {"type": "error", "error": {"type": err.kind, "message": err.message}}
            return err.status, err.headers, json.dumps(payload).encode()

    def _route(self, method: str, path: str, raw: bytes, body: Any) -> tuple[int, dict[str, str], bytes]:
        if method == "POST" and path == "/v1/messages":
            return self._messages_endpoint(raw, body)
        if method == "POST" and path == "/v1/messages/count_tokens":
            self._fault("count_tokens", raw)
            _validate(body, need_max_tokens=False)
            return self._json({"input_tokens": _prompt_tokens(body)})
        if path == "/v1/messages/batches":
            if method == "POST":
                return self._json(self._create_batch(body))
            if method == "GET":
                return self._json(self._list_batches())
        m = re.fullmatch(r"/v1/messages/batches/(?P<id>[^/]+)(?P<rest>/results|/cancel)?", path)
        if m:
            batch_id, rest = m.group("id"), m.group("rest")
            if method == "GET" and rest is None:
                return self._json(self._batch_json(self._get_batch(batch_id)))
            if method == "GET" and rest == "/results":
                return 200, {"content-type": "application/binary"}, self._results(batch_id)
            if method == "POST" and rest == "/cancel":
                return self._json(self._cancel(batch_id))
            if method == "DELETE" and rest is None:
                return self._json(self._delete(batch_id))
        raise _ApiError(404, "not_found_error", f"no route for {method} {path}")

    @staticmethod
    def _json(payload: Any) -> tuple[int, dict[str, str], bytes]:
        return 200, {"content-type": "application/json"}, json.dumps(payload).encode()

    # ------------------------------------------------------------------ messages

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
            raise _ApiError(429, "rate_limit_error", "Number of requests has exceeded your rate limit", retry_after)
        if kind == "529":
            raise _ApiError(529, "overloaded_error", "Overloaded", retry_after)
        if kind == "500":
            raise _ApiError(500, "api_error", "Internal server error")
        if kind == "timeout":
            self._sleep(self.faults.hang)
            # The client gave up long ago; whatever is written now goes nowhere.
            raise _ApiError(504, "timeout_error", "held past the client's timeout")
        return kind  # "malformed": answered below with a non-verdict reply

    def _messages_endpoint(self, raw: bytes, body: Any) -> tuple[int, dict[str, str], bytes]:
        # The limits are checked on arrival, before any work, as the real API does.
        limited = self._limiter.requests is not None or self._limiter.tokens is not None
        if limited:
            wait, headers = self._limiter.admit(_prompt_tokens(body) if isinstance(body, Mapping) else 0)
            if wait > 0:
                self._bump("ratelimit:429")
                raise _ApiError(
                    429, "rate_limit_error",
                    "This request would exceed your organization's rate limit. Slow down.",
                    {**headers, "retry-after": f"{max(wait, 0.001):.3f}"},
                )
        self._sleep(self.latency)
        fault = self._fault("messages", raw)
        message = self._message(body, malformed=fault == "malformed")
        status, headers, payload = self._json(message)
        if limited:
            headers.update(self._limiter.charge(int(message["usage"]["output_tokens"])))
        return status, headers, payload

    def _message(self, body: Any, *, malformed: bool = False) -> dict[str, Any]:
        _validate(body, need_max_tokens=True)
        from calibration.judges._anthropic import rejects_sampling_params

        model = str(body["model"])
        sampling = [k for k in ("temperature", "top_p", "top_k") if body.get(k) is not None]
        if sampling and rejects_sampling_params(model):
            raise _ApiError(400, "invalid_request_error", f"`{sampling[0]}` is deprecated for this model.")
        usage = self._usage(body)
        if malformed:
            text = MALFORMED_REPLY
        else:
            try:
                text = self.responder(body)
            except Exception as exc:  # a broken responder is the server's fault: a 500, as upstream
                raise _ApiError(500, "api_error", f"responder failed: {type(exc).__name__}") from exc
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
        segments = list(_segments(body))
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
        from calibration.pricing import load_prices

        return load_prices().min_cache_tokens(model) or 0

    # ------------------------------------------------------------------ batches

    def _create_batch(self, body: Any) -> dict[str, Any]:
        requests = body.get("requests") if isinstance(body, Mapping) else None
        if not isinstance(requests, list) or not requests:
            raise _ApiError(400, "invalid_request_error", "requests: a non-empty list is required")
        ids = [r.get("custom_id") if isinstance(r, Mapping) else None for r in requests]
        if any(not isinstance(i, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", i) for i in ids):
            raise _ApiError(400, "invalid_request_error", "custom_id must match ^[a-zA-Z0-9_-]{1,64}$")
        if len(set(ids)) != len(ids):
            raise _ApiError(400, "invalid_request_error", "custom_id values must be unique within a batch")
        batch = _Batch(
            id=f"msgbatch_mock_{next(self._ids):06d}",
            requests=list(requests),
            created=datetime.now(UTC),
            ready_at=time.monotonic() + self.batch_delay,
        )
        with self._lock:
            self._batches[batch.id] = batch
        return self._batch_json(batch)

    def _get_batch(self, batch_id: str) -> _Batch:
        with self._lock:
            batch = self._batches.get(batch_id)
        if batch is None:
            raise _ApiError(404, "not_found_error", f"no batch {batch_id!r}")
        if batch.status != "ended" and time.monotonic() >= batch.ready_at:
            self._finish(batch)
        return batch

    def _finish(self, batch: _Batch) -> None:
        results = []
        for request in batch.requests:
            custom_id = request["custom_id"]
            if batch.status == "canceling":
                results.append({"custom_id": custom_id, "result": {"type": "canceled"}})
                continue
            results.append({"custom_id": custom_id, "result": self._batch_result(request.get("params"))})
        with self._lock:
            if batch.status != "ended":
                batch.results = results
                batch.status = "ended"
                batch.ended = datetime.now(UTC)

    def _batch_result(self, params: Any) -> dict[str, Any]:
        raw = json.dumps(params, sort_keys=True).encode()
        try:
            kind = self.faults.draw("batches", raw, 0)
            if kind is not None:
                self._bump(f"fault:{kind}")
            if kind == "timeout":
                return {"type": "expired"}
            if kind in ("429", "529", "500"):
                error = {"429": "rate_limit_error", "529": "overloaded_error", "500": "api_error"}[kind]
                return {"type": "errored", "error": {"type": "error", "error": {"type": error, "message": error}}}
            return {"type": "succeeded", "message": self._message(params, malformed=kind == "malformed")}
        except _ApiError as err:
            return {
                "type": "errored",
                "error": {"type": "error", "error": {"type": err.kind, "message": err.message}},
            }

    def _counts(self, batch: _Batch) -> dict[str, int]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if batch.status != "ended":
            counts["processing"] = len(batch.requests)
        for r in batch.results:
            counts[r["result"]["type"]] += 1
        return counts

    def _batch_json(self, batch: _Batch) -> dict[str, Any]:
        ended = batch.status == "ended"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": batch.status,
            "request_counts": self._counts(batch),
            "created_at": _iso(batch.created),
            "expires_at": _iso(batch.created + timedelta(hours=24)),
            "ended_at": _iso(batch.ended) if batch.ended else None,
            "cancel_initiated_at": _iso(batch.cancel_initiated) if batch.cancel_initiated else None,
            "archived_at": None,
            "results_url": f"{self.base_url}/v1/messages/batches/{batch.id}/results" if ended else None,
        }

    def _results(self, batch_id: str) -> bytes:
        batch = self._get_batch(batch_id)
        if batch.status != "ended":
            raise _ApiError(400, "invalid_request_error", f"batch {batch_id} has not ended yet")
        return "".join(json.dumps(r) + "\n" for r in batch.results).encode()

    def _cancel(self, batch_id: str) -> dict[str, Any]:
        batch = self._get_batch(batch_id)
        if batch.status == "in_progress":
            with self._lock:
                batch.status = "canceling"
                batch.cancel_initiated = datetime.now(UTC)
        return self._batch_json(batch)

    def _list_batches(self) -> dict[str, Any]:
        with self._lock:
            ids = list(self._batches)
        data = [self._batch_json(self._get_batch(i)) for i in reversed(ids)]
        return {
            "data": data,
            "has_more": False,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
        }

    def _delete(self, batch_id: str) -> dict[str, Any]:
        batch = self._get_batch(batch_id)
        if batch.status != "ended":
            raise _ApiError(400, "invalid_request_error", "a batch must end before it can be deleted")
        with self._lock:
            del self._batches[batch_id]
        return {"id": batch_id, "type": "message_batch_deleted"}


def _validate(body: Any, *, need_max_tokens: bool) -> None:
    if not isinstance(body, Mapping):
        raise _ApiError(400, "invalid_request_error", "a JSON object body is required")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise _ApiError(400, "invalid_request_error", "model: field required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _ApiError(400, "invalid_request_error", "messages: at least one message is required")
    if need_max_tokens:
        max_tokens = body.get("max_tokens")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise _ApiError(400, "invalid_request_error", "max_tokens: a positive integer is required")


def _segments(body: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any] | None]]:
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


def _prompt_tokens(body: Mapping[str, Any]) -> int:
    return sum(approx_tokens(text) for text, _ in _segments(body))


class _Server(ThreadingHTTPServer):
    # The stdlib default backlog of 5 refuses connections when a judge opens a dozen at once,
    # which the SDK would see as connection errors and retry: faults nobody injected.
    request_queue_size = 128
    daemon_threads = True
    block_on_close = False


class _Handler(BaseHTTPRequestHandler):
    mock: MockAnthropic
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects
    timeout = 30  # drop idle keep-alive connections

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        path = self.path.split("?", 1)[0]
        status, extra, payload = self.mock.handle(method, path, raw, headers)
        try:
            self.send_response(status)
            self.send_header("content-type", extra.pop("content-type", "application/json"))
            self.send_header("content-length", str(len(payload)))
            self.send_header("request-id", f"req_mock_{time.monotonic_ns()}")
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            # The client timed out and left; nothing to answer.
            self.close_connection = True

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def log_message(self, format: str, *args: Any) -> None:
        # Quiet: tests and dry runs read the counters instead.
        return


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


@click.command("mock-api")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8787, show_default=True, type=int, help="Port (0 = any free port).")
@click.option("--latency", default=0.0, show_default=True, type=float, help="Seconds per /v1/messages reply.")
@click.option(
    "--fault-rate", default=0.0, show_default=True, type=click.FloatRange(0, 1), help="Share of failed attempts."
)
@click.option(
    "--faults",
    "fault_kinds",
    default=",".join(FAULT_KINDS),
    show_default=True,
    help="Comma-separated fault kinds to draw from.",
)
@click.option("--retry-after", default=1.0, show_default=True, type=float, help="Seconds in retry-after headers.")
@click.option("--batch-delay", default=5.0, show_default=True, type=float, help="Seconds a batch stays in progress.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seeds the fake judge and the faults.")
@click.option("--fake-position", default=0.0, type=float, help="Fake judge: first-shown win-rate lift.")
@click.option("--fake-verbosity", default=0.0, type=float, help="Fake judge: longer-answer lift.")
@click.option("--fake-formatting", default=0.0, type=float, help="Fake judge: markdown lift.")
@click.option("--fake-leniency", default=0.0, type=float, help="Fake judge: Likert points added.")
@click.option("--fake-noise", default=0.0, type=float, help="Fake judge: noise SD in Likert points.")
@click.option("--rpm", default=None, type=click.FloatRange(min=0, min_open=True),
              help="Enforce this many requests per minute on /v1/messages (429 + retry-after).")
@click.option("--tpm", default=None, type=click.FloatRange(min=0, min_open=True),
              help="Enforce this many tokens (prompt + completion) per minute.")
@click.option("--burst-seconds", default=1.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Seconds' worth of each limit that may be spent at once.")
@click.option("--min-cache-tokens", default=None, type=click.IntRange(min=0),
              help="Cache a prompt prefix only from this many tokens [default: the model's minimum "
              "from the price table].")
@click.option("--duration", default=0.0, type=float, help="Stop after this many seconds (0 = until Ctrl-C).")
@click.option("--judge-spec", default=None, type=click.Path(dir_okay=False),
              help="Fake judge: read requests written from this judge spec and answer in its verdict format.")
def mock_api_command(
    host: str,
    port: int,
    latency: float,
    fault_rate: float,
    fault_kinds: str,
    retry_after: float,
    batch_delay: float,
    seed: int,
    fake_position: float,
    fake_verbosity: float,
    fake_formatting: float,
    fake_leniency: float,
    fake_noise: float,
    rpm: float | None,
    tpm: float | None,
    burst_seconds: float,
    min_cache_tokens: int | None,
    duration: float,
    judge_spec: str | None,
) -> None:
    """Serve a local Anthropic-compatible API backed by the fake judge, for dry runs.

    Point a run at it with ANTHROPIC_BASE_URL=http://HOST:PORT and any ANTHROPIC_API_KEY.
    """
    from calibration.judges._fake import FakeJudge
    from calibration.spec import load_spec

    kinds = tuple(k.strip() for k in fault_kinds.split(",") if k.strip())
    judge = FakeJudge(
        seed=seed,
        position=fake_position,
        verbosity=fake_verbosity,
        formatting=fake_formatting,
        leniency=fake_leniency,
        noise=fake_noise,
        spec=None if judge_spec is None else load_spec(judge_spec),
    )
    plan = FaultPlan(rate=fault_rate, kinds=kinds, retry_after=retry_after, seed=seed)  # type: ignore[arg-type]
    mock = MockAnthropic(
        responder=judge.respond, latency=latency, faults=plan, batch_delay=batch_delay, host=host, port=port,
        min_cache_tokens=min_cache_tokens, rate_limit=RateLimit(rpm=rpm, tpm=tpm, burst_s=burst_seconds),
    )
    with mock:
        limits = "".join(
            f"; {name} {value:g}/min" for name, value in (("requests", rpm), ("tokens", tpm)) if value
        )
        click.echo(f"Mock Anthropic API on {mock.base_url} ({judge!r}; fault rate {fault_rate:g}{limits})")
        click.echo(f"  export ANTHROPIC_BASE_URL={mock.base_url} ANTHROPIC_API_KEY=mock")
        try:
            if duration > 0:
                time.sleep(duration)
            else:
                while True:
                    time.sleep(3600)
        except KeyboardInterrupt:
            pass
    summary = ", ".join(f"{k}={v}" for k, v in sorted(mock.counters.items())) or "no requests"
    click.echo(f"Stopped. {summary}")
