"""What sits between the Anthropic judge and the wire: decoding checks and the rate governor.

Both live in one SDK middleware (:class:`GovernorMiddleware`), which the ``anthropic`` SDK runs
*inside* its retry loop, once per HTTP attempt (SDK 2.x: ``anthropic._middleware``). That one
place gives three guarantees the SDK alone does not:

* **No reply can crash a run.** A 200 whose body the client cannot decode (JSON cut short, an
  empty body, HTML or any other content type, JSON that is not what the endpoint answers, a
  batch results file cut short), from any endpoint the judge calls, raises
  :class:`UndecodableReply`, a ``RetryableError``: the SDK retries it within the same
  ``max_retries`` budget and backoff as a 5xx. When the budget is spent it reaches the caller
  as an ``anthropic.APIError`` with the reason, so every ``except anthropic.APIError`` records
  it as a failed call instead of crashing.
* **Within the provider's limits.** Every attempt waits for a permit from the
  :class:`RateGovernor`, which reads the ``anthropic-ratelimit-*`` headers of every reply and
  paces requests and tokens to the limits they state, honours ``retry-after`` for everyone
  after a 429, and adapts the number of attempts in flight (additive increase, multiplicative
  decrease on 429/529).
* **Retries wait their turn.** A retry is an attempt like any other, so it also waits for a
  permit: a burst of 429s cannot turn into a storm of retries.

The governor's arithmetic is pure (a clock is injected), so it is tested without a network.
"""

from __future__ import annotations

import asyncio
import collections
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anthropic
import pydantic
from anthropic import AsyncAPIResponse
from anthropic._middleware import AsyncCallNext, Middleware
from anthropic._request import APIRequest

from judgelab.calibration.pricing import approx_tokens

__all__ = [
    "GovernorMiddleware",
    "GovernorStats",
    "RateGovernor",
    "RateLimits",
    "UndecodableReply",
    "request_tokens",
]

_PREFIX = "anthropic-ratelimit-"

# The AIMD window never shrinks below this many attempts in flight.
_MIN_WINDOW = 1.0
# Before any reply has said what the limits are, at most this many attempts go out at once
# (slow start): a cold burst of the full concurrency would meet a small limit with a storm.
_INITIAL_WINDOW = 4.0
# Multiplicative decrease on a 429 or 529, at most once per this many seconds (one congestion
# event usually answers several attempts at once; they are one signal, not several).
_DECREASE = 0.5
_DECREASE_GAP = 0.5
# Budget held back from what the provider states remains: a quarter second's refill (at most a
# quarter of the bucket), and at least one request. A request is counted when it reaches the
# provider, which can be a while after it was sent (a queue on the way, a busy server);
# meanwhile the provider's bucket may sit full and waste its refill. The reserve leaves room
# for that and costs only burst, not throughput, as long as the provider's bucket does not sit
# full (then its refill is lost): hence a small share of the bucket.
_RESERVE_SECONDS = 0.25
_RESERVE_SHARE = 0.25
_RESERVE_REQUESTS = 1.0
# While attempts are in flight, at most this many go out after the latest reply (plus one per
# reply that arrived with it). A provider
# that stalls (a busy server, a network hiccup) stops answering but its bucket keeps refilling
# up to its size and wastes the rest; the client, pacing by its own clock, would keep sending,
# and when the provider resumes it counts the whole backlog at once against a bucket that
# refilled only to its size: a 1.2 s stall at 50 requests/s had 8 of 300 refused. Holding new
# attempts once this many have gone unanswered bounds that backlog, and costs nothing while
# replies flow (then about one attempt goes out per reply).
_UNANSWERED = 8


class UndecodableReply(anthropic.RetryableError, anthropic.APIError):
    """A reply arrived but could not be decoded into a Message.

    Retryable (the SDK retries it like a 5xx, within ``max_retries``); once the budget is spent
    it reaches the caller as an ``anthropic.APIError``.

    Attributes:
        status_code: The HTTP status of the reply (a 2xx).
        reason: What was wrong with it, in words.
        attempts: HTTP attempts made so far for this call, this one included.
    """

    def __init__(self, reason: str, *, request: Any, status_code: int, attempts: int) -> None:
        anthropic.APIError.__init__(self, f"undecodable reply: {reason}", request, body=None)
        self.status_code = status_code
        self.reason = reason
        self.attempts = attempts


_BATCH = re.compile(r"/v1/messages/batches/[^/]+(?:/cancel)?$")


def endpoint_of(method: str, url: str) -> str | None:
    """Which API endpoint a request goes to, by its method and URL (``None``: not one the judge uses).

    ``"messages"``, ``"count_tokens"``, ``"batch"`` (create, retrieve or cancel: a batch
    object comes back), ``"batch_list"``, ``"batch_results"`` (the JSONL results file).

    >>> endpoint_of("post", "http://h/v1/messages"), endpoint_of("GET", "http://h/v1/messages/batches")
    ('messages', 'batch_list')
    >>> endpoint_of("GET", "http://h/v1/messages/batches/msgbatch_1/results")
    'batch_results'
    """
    path = url.split("?", 1)[0].rstrip("/")
    method = method.upper()
    if path.endswith("/v1/messages"):
        return "messages" if method == "POST" else None
    if path.endswith("/v1/messages/count_tokens"):
        return "count_tokens"
    if path.endswith("/v1/messages/batches"):
        return "batch" if method == "POST" else "batch_list"
    if path.endswith("/results") and "/v1/messages/batches/" in path:
        return "batch_results"
    if _BATCH.search(path) and method in ("GET", "POST"):
        return "batch"
    return None


def _decode_problem(endpoint: str, response: AsyncAPIResponse[Any], parsed: Any) -> str | None:
    """Why a parsed 2xx reply is not what ``endpoint`` answers, or ``None`` when it is."""
    if isinstance(parsed, str | bytes):
        ctype = response.http_response.headers.get("content-type", "none")
        if not parsed.strip():
            return f"empty body (content-type {ctype})"
        return f"not JSON (content-type {ctype}, {len(parsed)} characters)"
    if endpoint == "messages":
        content = getattr(parsed, "content", None)
        usage = getattr(parsed, "usage", None)
        if not isinstance(content, list) or usage is None:
            return "JSON that is not a Message (no content list or no usage)"
    elif endpoint == "count_tokens":
        if not isinstance(getattr(parsed, "input_tokens", None), int):
            return "JSON that is not a token count (no input_tokens)"
    elif endpoint == "batch":
        if not isinstance(getattr(parsed, "id", None), str) or getattr(parsed, "request_counts", None) is None:
            return "JSON that is not a Message Batch (no id or no request_counts)"
    elif endpoint == "batch_list" and not isinstance(getattr(parsed, "data", None), list):
        return "JSON that is not a list of Message Batches (no data list)"
    return None


def jsonl_results_problem(
    body: bytes, *, what: str = "results file", needs: tuple[str, ...] = ("result",)
) -> str | None:
    r"""Why a batch results file (JSON Lines) is not whole, or ``None`` when every line is a result.

    Each line must be an object with a ``custom_id`` and, as objects, the fields ``needs``
    (Anthropic's ``result``; OpenAI's output file needs none beyond ``custom_id``). A file cut
    short ends in a partial line; a file cut at a line break is caught by the caller, which
    compares the results with the batch's request counts.

    >>> jsonl_results_problem(b'{"custom_id": "a", "result": {}}\n') is None
    True
    >>> jsonl_results_problem(b'{"custom_id": "a"', what="batch output file", needs=())
    'batch output file cut short (17 bytes, no final line break)'
    """
    if body and not body.endswith(b"\n"):
        return f"{what} cut short ({len(body)} bytes, no final line break)"
    for number, line in enumerate(body.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            return f"{what} line {number} is not JSON ({len(body)} bytes)"
        if not isinstance(item, dict) or "custom_id" not in item or any(
                not isinstance(item.get(field), dict) for field in needs):
            missing = " or ".join(("custom_id", *needs))
            return f"{what} line {number} is not a batch result (no {missing})"
    return None


async def _check_decodes(endpoint: str, request: APIRequest, response: AsyncAPIResponse[Any]) -> Any:
    """Parse a successful reply now (the SDK caches it), or raise :class:`UndecodableReply`.

    A batch results file is read whole (the SDK then iterates the bytes already read) and
    each line checked.
    """
    status = response.http_response.status_code
    attempts = request.retries_taken + 1
    if endpoint == "batch_results":
        try:
            body = await response.http_response.aread()
        except Exception as exc:  # the HTTP library's read errors (a body cut by a
            # closed connection) are not re-exported by the SDK; any of them is a lost reply.
            raise UndecodableReply(
                f"results file not read whole: {type(exc).__name__}", request=response.http_request,
                status_code=status, attempts=attempts,
            ) from exc
        problem = jsonl_results_problem(body)
        if problem is not None:
            raise UndecodableReply(problem, request=response.http_request, status_code=status, attempts=attempts)
        return None
    try:
        parsed = await response.parse()
    except (
        ValueError, TypeError, AttributeError, pydantic.ValidationError, anthropic.APIResponseValidationError
    ) as exc:
        # ValueError covers json.JSONDecodeError and UnicodeDecodeError; TypeError a JSON value
        # of the wrong shape (a list where an object belongs); AttributeError a list page whose
        # body is text (the SDK's page parser expects a model).
        size = len(response.http_response.content)
        ctype = response.http_response.headers.get("content-type", "none")
        what = "empty body" if size == 0 else f"body cut short or garbled ({size} bytes)"
        reason = f"{what}, content-type {ctype}: {type(exc).__name__}"
        raise UndecodableReply(reason, request=response.http_request, status_code=status, attempts=attempts) from exc
    problem = _decode_problem(endpoint, response, parsed)
    if problem is not None:
        raise UndecodableReply(problem, request=response.http_request, status_code=status, attempts=attempts)
    return parsed


# --------------------------------------------------------------------------------------------
# Rate-limit headers
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RateLimits:
    """What one reply's headers say about the organisation's limits.

    Attributes:
        requests_limit: Requests per minute allowed (``anthropic-ratelimit-requests-limit``).
        requests_remaining: Requests left before the limit bites.
        requests_reset_s: Seconds until the request budget is full again.
        tokens_limit: Tokens per minute allowed (``anthropic-ratelimit-tokens-limit``, the most
            restrictive of the token limits).
        tokens_remaining: Tokens left.
        tokens_reset_s: Seconds until the token budget is full again.
        retry_after_s: ``retry-after-ms`` or ``retry-after``, in seconds.
    """

    requests_limit: float | None = None
    requests_remaining: float | None = None
    requests_reset_s: float | None = None
    tokens_limit: float | None = None
    tokens_remaining: float | None = None
    tokens_reset_s: float | None = None
    retry_after_s: float | None = None

    @classmethod
    def from_headers(cls, headers: Mapping[str, str], *, now: float | None = None) -> RateLimits:
        """Read the headers (names in any case); absent or malformed values are ``None``.

        Reset times are RFC 3339 instants; ``now`` is the wall-clock time to measure them from
        (default: ``time.time()``).

        >>> RateLimits.from_headers({"anthropic-ratelimit-requests-limit": "3000",
        ...                          "anthropic-ratelimit-requests-remaining": "49",
        ...                          "retry-after": "1"}).requests_remaining
        49.0
        """
        # An HTTP client's headers are case-insensitive already; a plain dict is lower-cased.
        low: Mapping[str, str] = (
            {k.lower(): v for k, v in headers.items()} if isinstance(headers, dict) else headers
        )
        if _PREFIX + "requests-limit" not in low and _PREFIX + "tokens-limit" not in low and (
            "retry-after" not in low and "retry-after-ms" not in low
        ):
            return _NO_LIMITS
        wall = time.time() if now is None else now

        def number(name: str) -> float | None:
            try:
                value = float(low[name])
            except (KeyError, TypeError, ValueError):
                return None
            return value if math.isfinite(value) else None

        def reset(name: str) -> float | None:
            text = low.get(name)
            if not text:
                return None
            try:
                moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                return None
            return max(moment.timestamp() - wall, 0.0)

        retry_ms = number("retry-after-ms")
        retry = retry_ms / 1000 if retry_ms is not None else number("retry-after")
        return cls(
            requests_limit=number(_PREFIX + "requests-limit"),
            requests_remaining=number(_PREFIX + "requests-remaining"),
            requests_reset_s=reset(_PREFIX + "requests-reset"),
            tokens_limit=number(_PREFIX + "tokens-limit"),
            tokens_remaining=number(_PREFIX + "tokens-remaining"),
            tokens_reset_s=reset(_PREFIX + "tokens-reset"),
            retry_after_s=retry,
        )


_NO_LIMITS = RateLimits()


def request_tokens(body: Mapping[str, Any] | None) -> int:
    """Prompt tokens of a Messages request body, ~4 characters per token (for pacing only)."""
    if not isinstance(body, Mapping):
        return 0
    total = 0
    system = body.get("system")
    if isinstance(system, str):
        total += approx_tokens(system)
    elif isinstance(system, list):
        total += sum(approx_tokens(str(b.get("text", ""))) for b in system if isinstance(b, Mapping))
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            total += approx_tokens(content)
        elif isinstance(content, list):
            total += sum(approx_tokens(str(b.get("text", ""))) for b in content if isinstance(b, Mapping))
    return total


# --------------------------------------------------------------------------------------------
# The governor
# --------------------------------------------------------------------------------------------


@dataclass
class _Bucket:
    """A client-side mirror of one of the provider's token buckets (requests or tokens).

    ``rate`` (per second) and ``cap`` (the bucket's size) come from the headers. The mirror's
    ``level`` refills at ``rate`` up to ``cap`` and is spent by every attempt this client sends
    (at send time, the earliest the provider can count it). Replies only ever *lower* it: each
    says what remained, and the requests this client has in flight that were sent after the
    one it answers may not be counted in it yet, so ``remaining - those`` is a ceiling on what
    is left. Taking the lowest reading errs low by about the requests in flight whichever way
    the provider counts (at admission or when it replies, and whatever order replies arrive
    in), which costs burst room, not throughput: paced at the refill rate, the provider's
    bucket never runs dry, and another client spending the same budget shows up at once.
    """

    rate: float = 0.0
    cap: float = 0.0
    level: float = 0.0
    at: float = 0.0
    known: bool = False

    def refill(self, now: float) -> None:
        if self.known and now > self.at:
            self.level = min(self.cap, self.level + self.rate * (now - self.at))
        self.at = now

    def wait(self, cost: float, reserve: float) -> float:
        """Seconds until ``cost`` units can be taken keeping a reserve back (0 when now).

        The reserve is ``reserve`` or :data:`_RESERVE_SECONDS` of refill (at most
        :data:`_RESERVE_SHARE` of the bucket), whichever is more.
        """
        if not self.known or self.rate <= 0:
            return 0.0
        held = max(reserve, min(_RESERVE_SECONDS * self.rate, _RESERVE_SHARE * self.cap))
        # A cost larger than the whole budget can never fit: let it go at a full bucket.
        need = min(cost + held, self.cap)
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def take(self, cost: float) -> None:
        if self.known:
            self.level -= cost

    def sync(self, limit: float, remaining: float, reset_s: float | None, in_flight_after: float, now: float) -> None:
        """Learn from a reply: ``remaining`` for its request, ``in_flight_after`` sent since."""
        self.refill(now)
        self.rate = limit / 60.0
        # The provider's bucket size: what ``reset`` says it takes to fill from ``remaining``,
        # else one minute's worth (the stated limit).
        cap = remaining + self.rate * reset_s if reset_s is not None else limit
        self.cap = max(cap, remaining, 1.0)
        ceiling = min(self.cap, remaining) - in_flight_after
        self.level = ceiling if not self.known else min(self.level, ceiling)
        self.at = now
        self.known = True


@dataclass
class GovernorStats:
    """What the governor saw (for tests, benchmarks and the curious).

    Attributes:
        attempts: Attempts granted a permit.
        rate_limited: 429 replies.
        overloaded: 529 replies.
        decreases: Times the window was halved.
        waited_s: Total seconds attempts waited for pacing or a ``retry-after`` pause.
        window_min: Smallest window reached.
        held: Times an attempt waited for a reply because :data:`_UNANSWERED` attempts had
            gone out since the latest one.
        replies: Attempts answered with a 2xx that decoded (billed, and read).
        undecodable: Attempts answered with a 2xx whose body was cut or garbled: the provider
            billed them, the reply was lost, and the call was asked again.
        no_reply: Attempts sent whose reply never came whole (timeout, reset): the provider
            may have billed them; nobody can tell.
    """

    attempts: int = 0
    replies: int = 0
    undecodable: int = 0
    no_reply: int = 0
    rate_limited: int = 0
    overloaded: int = 0
    decreases: int = 0
    waited_s: float = 0.0
    window_min: float = math.inf
    held: int = 0


@dataclass(frozen=True)
class Permit:
    """One attempt's place in the governor: its send order and the tokens it was charged."""

    seq: int
    tokens: float


@dataclass
class RateGovernor:
    """Paces attempts to the provider's stated limits and adapts how many run at once.

    Four controls, each from a different signal:

    * **Window (AIMD).** At most ``floor(window)`` attempts are in flight, never more than
      ``ceiling`` (the configured concurrency). It starts small and, like TCP's slow start,
      grows by one per success (doubling every round trip) until the first 429 or 529; from
      then on every success adds ``1 / window`` (about one more per round trip) and a 429 or
      529 halves it, at most once per half second. Once replies state the rate limits, the
      pacing below keeps the rate, so the window opens to ``ceiling`` at once.
    * **Pacing.** Once a reply carries ``anthropic-ratelimit-requests-*`` (and ``-tokens-*``)
      headers, attempts are paced to ``limit / 60`` per second with a budget mirrored from
      ``remaining``: an attempt waits until the mirrored budget covers it. Each reply
      re-synchronises the mirror: ``remaining`` as the provider counted it, minus what this
      client has sent since the request it answers (see :class:`_Bucket`).
    * **Pause.** A 429 with ``retry-after`` stops every new attempt for that long (the limit is
      the organisation's, so every attempt would meet it).
    * **Replies clock the sending.** While attempts are in flight, at most
      :data:`_UNANSWERED` go out after the latest reply (one more per reply that arrived with
      it); the next waits for a reply. A provider
      that stalls then receives a bounded backlog when it resumes, not every attempt the pacing
      allowed meanwhile, which its bucket, full and wasting its refill, would refuse.

    Args:
        ceiling: Most attempts in flight (the configured concurrency).
        output_tokens: Completion tokens an attempt is assumed to take before any reply has
            said (replaced by the running mean of the replies).
        clock: Monotonic seconds (injected for tests).
    """

    ceiling: int
    output_tokens: float = 150.0
    clock: Callable[[], float] = time.monotonic
    window: float = field(init=False)
    in_flight: int = field(init=False, default=0)
    pause_until: float = field(init=False, default=0.0)
    requests: _Bucket = field(init=False, default_factory=_Bucket)
    tokens: _Bucket = field(init=False, default_factory=_Bucket)
    stats: GovernorStats = field(init=False, default_factory=GovernorStats)
    _last_decrease: float = field(init=False, default=-math.inf)
    _slow_start: bool = field(init=False, default=True)
    _replies: int = field(init=False, default=0)
    _next: int = field(init=False, default=0)
    _unanswered: int = field(init=False, default=0)
    _inflight: dict[int, Permit] = field(init=False, default_factory=dict)
    _waiters: collections.deque[asyncio.Future[None]] = field(init=False, default_factory=collections.deque)

    def __post_init__(self) -> None:
        """Start the window small (slow start)."""
        if self.ceiling < 1:
            raise ValueError(f"RateGovernor: ceiling must be at least 1; got {self.ceiling!r}")
        self.window = min(float(self.ceiling), _INITIAL_WINDOW)
        self.stats.window_min = self.window

    # -- decisions (pure given the clock) ------------------------------------------------

    def delay(self, prompt_tokens: float) -> float:
        """Seconds an attempt of ``prompt_tokens`` must wait before it may go (0 = now).

        Only pacing and the pause; the window is checked by :meth:`acquire`.
        """
        now = self.clock()
        self.requests.refill(now)
        self.tokens.refill(now)
        cost = prompt_tokens + self.output_tokens
        return max(
            self.pause_until - now,
            self.requests.wait(1.0, _RESERVE_REQUESTS),
            self.tokens.wait(cost, 0.0),
            0.0,
        )

    def grant(self, prompt_tokens: float) -> Permit:
        """Charge one attempt to the mirrored budgets (call when :meth:`delay` is 0)."""
        permit = Permit(self._next, prompt_tokens + self.output_tokens)
        self._next += 1
        self._inflight[permit.seq] = permit
        self.requests.take(1.0)
        self.tokens.take(permit.tokens)
        self.in_flight += 1
        self._unanswered += 1
        self.stats.attempts += 1
        return permit

    def observe(
        self, permit: Permit, status: int | None, limits: RateLimits, *, output_tokens: int | None = None
    ) -> None:
        """Learn from one attempt's outcome: its status (``None``: no reply) and headers.

        Each reply can lower the budget mirrors to what it says remains (see :class:`_Bucket`).
        """
        now = self.clock()
        self._inflight.pop(permit.seq, None)
        # A reply restarts the count, and replies that arrive together (one event-loop turn
        # often handles several) each make room for one more attempt: the provider is alive.
        self._unanswered = min(self._unanswered, 0) - 1
        if limits.requests_limit or limits.tokens_limit:
            later = [p for seq, p in self._inflight.items() if seq > permit.seq]
            for bucket, limit, remaining, reset_s, after in (
                (self.requests, limits.requests_limit, limits.requests_remaining, limits.requests_reset_s,
                 float(len(later))),
                (self.tokens, limits.tokens_limit, limits.tokens_remaining, limits.tokens_reset_s,
                 sum(p.tokens for p in later)),
            ):
                if limit is not None and remaining is not None and limit > 0:
                    bucket.sync(limit, remaining, reset_s, after, now)
        if self._slow_start and self.requests.known:
            # The provider states its limits: pacing holds the rate, the window may open.
            self._slow_start = False
            self.window = float(self.ceiling)
        if status in (429, 529):
            self._slow_down(status, limits, now)
        elif status is not None and 200 <= status < 300:
            grow = 1.0 if self._slow_start else 1.0 / self.window
            self.window = min(float(self.ceiling), self.window + grow)
            if output_tokens is not None:
                # Running mean of completion tokens: what the next attempt is charged.
                self._replies += 1
                self.output_tokens += (output_tokens - self.output_tokens) / min(self._replies, 50)

    def _slow_down(self, status: int, limits: RateLimits, now: float) -> None:
        self._slow_start = False
        if status == 429:
            self.stats.rate_limited += 1
            if limits.retry_after_s is not None and limits.retry_after_s > 0:
                self.pause_until = max(self.pause_until, now + limits.retry_after_s)
        else:
            self.stats.overloaded += 1
        if now - self._last_decrease >= _DECREASE_GAP:
            self.window = max(_MIN_WINDOW, self.window * _DECREASE)
            self._last_decrease = now
            self.stats.decreases += 1
            self.stats.window_min = min(self.stats.window_min, self.window)

    # -- the async gate ------------------------------------------------------------------

    async def acquire(self, prompt_tokens: float) -> Permit:
        """Wait for a place in the window and for the pacing, then take a permit."""
        started = self.clock()
        while True:
            held = self.in_flight > 0 and self._unanswered >= _UNANSWERED
            if held or self.in_flight >= max(int(self.window), 1):
                self.stats.held += held
                waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._waiters.append(waiter)
                try:
                    await waiter
                finally:
                    if not waiter.done():
                        waiter.cancel()
                continue
            pause = self.delay(prompt_tokens)
            if pause > 0:
                await asyncio.sleep(pause)
                continue
            permit = self.grant(prompt_tokens)
            self.stats.waited_s += self.clock() - started
            return permit

    def release(self) -> None:
        """An attempt ended: free its place and wake whoever waits for one."""
        self.in_flight = max(self.in_flight - 1, 0)
        free = max(int(self.window), 1) - self.in_flight
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1


class GovernorMiddleware(Middleware):
    """The SDK middleware: every reply must decode; every Messages attempt takes a permit.

    Every endpoint the judge calls (``messages``, ``count_tokens``, batch create, retrieve,
    list, cancel and results) has its 2xx replies decode-checked: a cut or garbled body is an
    :class:`UndecodableReply`, retried like a 5xx. Only ``POST .../messages`` (judging and
    padding) is paced by the governor; the others are few and light.

    Args:
        governor: Returns the :class:`RateGovernor` of the running event loop (a governor's
            waiters are futures of one loop).
    """

    def __init__(self, governor: Callable[[], RateGovernor]) -> None:
        """Keep the governor lookup."""
        self._governor = governor

    async def handle_async(self, request: APIRequest, call_next: AsyncCallNext) -> AsyncAPIResponse[Any]:
        """One attempt: permit, send, learn, check that a 2xx decodes."""
        endpoint = endpoint_of(request.method, str(request.url))
        if endpoint is None or (request.stream and endpoint != "batch_results"):
            return await call_next(request)
        if endpoint != "messages":
            response = await call_next(request)
            if response.http_response.is_success:
                await _check_decodes(endpoint, request, response)
            return response
        governor = self._governor()
        body = request.json if isinstance(request.json, Mapping) else None
        permit = await governor.acquire(request_tokens(body))
        try:
            try:
                response = await call_next(request)
            except anthropic.APIConnectionError:
                governor.stats.no_reply += 1
                governor.observe(permit, None, RateLimits())
                raise
            http = response.http_response
            limits = RateLimits.from_headers(http.headers)
            if not http.is_success:
                governor.observe(permit, http.status_code, limits)
                return response
            try:
                message = await _check_decodes(endpoint, request, response)
            except UndecodableReply:
                governor.stats.undecodable += 1
                governor.observe(permit, None, limits)
                raise
            governor.stats.replies += 1
            usage = getattr(message, "usage", None)
            out = getattr(usage, "output_tokens", None)
            governor.observe(permit, http.status_code, limits, output_tokens=out if isinstance(out, int) else None)
            return response
        finally:
            governor.release()
