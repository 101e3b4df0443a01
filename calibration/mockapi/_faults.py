"""What the mock does to its callers: injected faults (:class:`FaultPlan`) and rate limits (:class:`RateLimit`).

Both are plain objects with no HTTP in them: a fault plan draws the fault for one attempt at
one body, and the :class:`Limiter` keeps the token buckets that admit or refuse a request and
the ``anthropic-ratelimit-*`` headers that describe them.
"""

from __future__ import annotations

import hashlib
import math
import random
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from judgelab.labeler.errors import InputError

__all__ = ["FAULT_KINDS", "MALFORMED_REPLY", "Bucket", "FaultKind", "FaultPlan", "Limiter", "RateLimit"]

FaultKind = Literal["429", "529", "500", "timeout", "malformed"]
FAULT_KINDS: tuple[FaultKind, ...] = ("429", "529", "500", "timeout", "malformed")
"""Every fault the mock can inject."""

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


class Bucket:
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


class Limiter:
    """The mock's rate limits: admission at arrival, completion tokens charged after."""

    def __init__(self, limit: RateLimit) -> None:
        self.requests = Bucket(limit.rpm, limit.burst_s) if limit.rpm else None
        self.tokens = Bucket(limit.tpm, limit.burst_s) if limit.tpm else None
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
