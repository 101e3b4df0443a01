"""The real judge: Claude through the official ``anthropic`` SDK (2.x, on ``httpx2``).

One thin wrapper, no retry loop of its own: the SDK retries 408/409/429/5xx (529 included) and
connection errors with exponential backoff, honouring ``retry-after``, up to ``max_retries``.
The judge's middleware (:mod:`judgelab.calibration.judges._transport`), which the SDK runs inside that
loop once per attempt, adds two things: a 200 whose body cannot be decoded (cut short, empty,
not JSON, not a Message) is retried within the same budget, and every attempt waits for a
permit from a rate governor that reads the ``anthropic-ratelimit-*`` headers, paces to the
stated limits and adapts concurrency (AIMD on 429/529). A call that still fails raises
:class:`JudgeCallError` (a :class:`~judgelab.labeler.errors.JudgeError`) carrying the number of attempts
and the reason; it is never turned into a score or an empty reply. A reply that arrives but
does not parse as a verdict is a recorded parse failure (:func:`judgelab.calibration.formats.parse`),
like every other back-end's.

The rubric (system) block carries the ``cache_control`` breakpoint only when it reaches the
model's minimum cacheable prompt length (:meth:`judgelab.calibration.pricing.PriceTable.cache_applies`):
below it the API would ignore the breakpoint, and the estimate prices it the same way.

SDK facts this module relies on (checked against the installed 2.15 source):

- ``temperature`` is not a ``messages.create`` argument any more; it goes in ``extra_body``
  (and, in a batch request, in the params dict). Models from Opus 4.7, Sonnet 5 and Haiku 5.5
  on, and every Fable and Mythos model, reject sampling parameters with a 400, so the judge
  omits ``temperature`` for them and records ``temperature: None`` in the call's params.
- ``messages.with_raw_response.create`` exposes ``retries_taken``; a failed request carries the
  ``x-stainless-retry-count`` header of its last attempt.
- Client middleware runs inside the retry loop, once per attempt; raising an
  ``anthropic.RetryableError`` from it retries the attempt within ``max_retries``.
- ``messages.batches.results(id)`` GETs the batch, then its ``results_url``.

The API key comes from the caller (the app passes its Streamlit secret) or ``ANTHROPIC_API_KEY``.
It is handed to the SDK client and nowhere else: never logged, never in a repr, never in a call's
params or cache key.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anthropic

from judgelab.calibration import formats, pricing
from judgelab.calibration.judges._base import JudgeCall, Judgement
from judgelab.calibration.judges._hints import fix_for, origin_of
from judgelab.calibration.judges._identity import BatchInDoubt, BatchSearch, identify, is_tagged
from judgelab.calibration.judges._loops import PerLoop
from judgelab.calibration.judges._provider import ProviderJudge
from judgelab.calibration.judges._transport import GovernorMiddleware, RateGovernor, UndecodableReply
from judgelab.labeler.errors import InputError, JudgeError
from judgelab.labeler.models import Rubric

if TYPE_CHECKING:  # the spec module imports the formats, which import this package
    from judgelab.calibration.spec import JudgeSpec

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_MODEL = "claude-sonnet-4-6"
"""The default judge: a current Sonnet that still accepts ``temperature=0`` (reproducible verdicts)."""

_FAMILY_VERSION = re.compile(
    r"^claude-(?P<line>opus|sonnet|haiku|fable|mythos)-(?P<major>\d+)(?:-(?P<minor>\d{1,2}))?(?:-\d{8})?$"
)
# First version of each line that rejects temperature/top_p/top_k on every request.
_SAMPLING_CUTOFF = {"opus": (4, 7), "sonnet": (5, 0), "haiku": (5, 0), "fable": (0, 0), "mythos": (0, 0)}


def rejects_sampling_params(model: str) -> bool:
    """Whether ``model`` answers any ``temperature``/``top_p``/``top_k`` with a 400.

    True for Opus 4.7 and later, Sonnet 5 and later, Haiku 5 and later, every Fable and Mythos
    model (``claude-mythos-preview`` included). Written as a version cutoff rather than an id
    list so a new model of a covered line is handled on day one. Unknown ids (a proxy's own
    names, ``fake-judge``) are assumed to accept them.
    """
    if model.startswith(("claude-mythos", "claude-fable")):
        return True
    m = _FAMILY_VERSION.match(model)
    if not m:
        return False
    version = (int(m.group("major")), int(m.group("minor") or 0))
    return version >= _SAMPLING_CUTOFF[m.group("line")]


class JudgeCallError(JudgeError):
    """A judge request failed for good (after the SDK's retries, or not retryable).

    Attributes:
        model: The judge model.
        attempts: HTTP attempts made, first try included.
        status_code: The last HTTP status, or ``None`` for a timeout or connection error.
        error_type: The API's error type (``overloaded_error``...) or the exception name.
    """

    def __init__(self, message: str, *, model: str, attempts: int, status_code: int | None, error_type: str):
        super().__init__(message)
        self.model = model
        self.attempts = attempts
        self.status_code = status_code
        self.error_type = error_type


class BatchReadShort(JudgeCallError):
    """A batch's result files, read again and again, name fewer requests than the batch answered.

    A file cut at a line break decodes (whole JSON lines, fewer of them): only the batch's own
    request counts tell. The requests it answered are neither missing nor to be sent again
    (that would pay twice): the batch is left to be read by the next execution.

    Attributes:
        results: The results that were read, by custom id (each a true reply or failure).
        read: Requests the files named.
        expected: Requests the batch says it answered (completed + failed).
    """

    def __init__(self, message: str, *, model: str, attempts: int, results: Mapping[str, Judgement],
                 read: int, expected: int) -> None:
        super().__init__(message, model=model, attempts=attempts, status_code=200, error_type="short_results")
        self.results = dict(results)
        self.read = read
        self.expected = expected


def _attempts_of(exc: anthropic.APIError) -> int:
    request = getattr(exc, "request", None)
    header = request.headers.get("x-stainless-retry-count") if request is not None else None
    return int(header) + 1 if header and header.isdigit() else 1


def _call_error(model: str, what: str, exc: anthropic.APIError) -> JudgeCallError:
    if isinstance(exc, UndecodableReply):
        # A reply arrived every time but none could be decoded: a transient fault like a 5xx,
        # and retried like one until the budget ran out.
        return JudgeCallError(
            f"{model}: {what} failed after {exc.attempts} attempt(s): undecodable reply "
            f"(HTTP {exc.status_code}): {exc.reason}. Fix: raise --max-retries, or check what sits between "
            f"you and {origin_of(exc)} (a proxy cutting replies short).",
            model=model,
            attempts=exc.attempts,
            status_code=exc.status_code,
            error_type="undecodable_reply",
        )
    attempts = _attempts_of(exc)
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    error_type = type(exc).__name__
    message = getattr(exc, "message", str(exc))
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        error_type = str(body["error"].get("type", error_type))
        message = str(body["error"].get("message", message))
    hint = " " + fix_for(status, timed_out=isinstance(exc, anthropic.APITimeoutError), provider="anthropic",
                         url=origin_of(exc))
    where = f"HTTP {status} {error_type}" if status is not None else error_type
    return JudgeCallError(
        f"{model}: {what} failed after {attempts} attempt(s): {where}: {message}.{hint}",
        model=model,
        attempts=attempts,
        status_code=status,
        error_type=error_type,
    )


@dataclass(frozen=True)
class BatchStatus:
    """Where a Message Batch stands.

    Attributes:
        batch_id: The batch id.
        processing_status: ``in_progress``, ``canceling`` or ``ended``.
        counts: Requests by state (``processing``, ``succeeded``, ``errored``, ``canceled``,
            ``expired``).
    """

    batch_id: str
    processing_status: str
    counts: Mapping[str, int]

    @property
    def ended(self) -> bool:
        """Whether results can be collected."""
        return self.processing_status == "ended"


_CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class AnthropicJudge(ProviderJudge[BatchStatus]):
    """A Claude judge behind the :class:`~judgelab.calibration.judges.Judge` protocol.

    Args:
        model: The judge model id (default :data:`DEFAULT_MODEL`).
        family: The judge's own model family, for the self-preference gap.
        api_key: The API key; default ``$ANTHROPIC_API_KEY``.
        base_url: API base URL; default the SDK's (``$ANTHROPIC_BASE_URL`` or Anthropic's).
            Point it at :class:`judgelab.calibration.mockapi.MockAnthropic` for dry runs.
        max_concurrency: Requests in flight at once, per event loop.
        max_retries: The SDK's retry budget per request (attempts = retries + 1).
        timeout: Seconds per HTTP attempt.
        temperature: Sampling temperature, sent through ``extra_body``; ``None`` sends none.
            Ignored (and recorded as ``None``) for models that reject it
            (:func:`rejects_sampling_params`).
        max_tokens: Reply budget. Default 1024, or 8192 for models with adaptive thinking on by
            default (the same set that rejects sampling), whose thinking counts against it.
        batch_cache_ttl: Prompt-cache TTL for batch requests (``"1h"``: a batch can take longer
            than the 5-minute default, and the rubric prefix should survive it).
        prices: A loaded price table (default :func:`judgelab.calibration.pricing.load_prices`).
        spec: A team's judge spec (:mod:`judgelab.calibration.spec`): requests are written from its
            templates and replies read by its verdict rules (default: the built-in prompt).

    Raises:
        JudgeError: If no API key is given or set.
        InputError: If a setting is out of range.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        family: str | None = "claude",
        api_key: str | None = None,
        base_url: str | None = None,
        max_concurrency: int = 8,
        max_retries: int = 6,
        timeout: float = 60.0,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        batch_cache_ttl: Literal["5m", "1h"] = "1h",
        prices: pricing.PriceTable | None = None,
        spec: JudgeSpec | None = None,
    ) -> None:
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise JudgeError(
                "AnthropicJudge: no API key. Set ANTHROPIC_API_KEY, or pass api_key= "
                "(the app passes its Streamlit secret)."
            )
        if max_concurrency < 1 or max_retries < 0 or timeout <= 0:
            raise InputError(
                "AnthropicJudge: need max_concurrency >= 1, max_retries >= 0 and timeout > 0; got "
                f"{max_concurrency!r}, {max_retries!r}, {timeout!r}"
            )
        self.model = model
        self.family = family
        self.spec = spec
        self.base_url = base_url
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.batch_cache_ttl = batch_cache_ttl
        self._api_key = key
        self._prices = prices
        rejects = rejects_sampling_params(model)
        if rejects and temperature is not None:
            log.warning("%s does not accept temperature; sending none (the model's default sampling)", model)
        self.temperature = None if rejects else temperature
        self.max_tokens = max_tokens if max_tokens is not None else (8192 if rejects else 1024)
        if self.max_tokens < 1:
            raise InputError(f"AnthropicJudge: max_tokens must be >= 1, got {self.max_tokens!r}")
        self._loops = PerLoop(self._new_client, self.max_concurrency)
        self._batches: dict[str, dict[str, JudgeCall]] = {}
        self._caches: dict[tuple[str, str], bool] = {}

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"AnthropicJudge(model={self.model!r}, family={self.family!r}{where})"

    @property
    def params(self) -> dict[str, Any]:
        """Request params recorded in each call and its cache key."""
        return {"max_tokens": self.max_tokens, "temperature": self.temperature}

    @property
    def endpoint(self) -> str:
        """``anthropic at HOST``: the provider and the endpoint's host, as reports name them."""
        from urllib.parse import urlparse

        url = self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
        return f"anthropic at {urlparse(url).netloc or url}"

    def cache_identity(self) -> str:
        """``""``: a Claude model id names one model, so the request alone decides the reply.

        (The base URL is left out on purpose: a proxy or the mock serving a Claude model id
        stands in for it, and the keys already stored must not change.)
        """
        return ""

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        """The SDK client for the running event loop (call it inside ``async`` code).

        Its Messages requests (judging and padding) go through the judge's middleware: decode
        checks and the rate governor.
        """
        return self._resources()[0]

    @property
    def governor(self) -> RateGovernor:
        """The rate governor of the running event loop (its ``stats`` say what it saw)."""
        return self._resources()[2]

    def _resources(self) -> tuple[anthropic.AsyncAnthropic, asyncio.Semaphore, RateGovernor]:
        return self._loops.get()

    def _new_client(self, governor: RateGovernor) -> anthropic.AsyncAnthropic:
        # Our own http_client: the SDK's default wrapper schedules its own close on whatever
        # loop is running when it is garbage-collected, which fails noisily once the loop that
        # owned its connections has closed.
        return anthropic.AsyncAnthropic(
            api_key=self._api_key,
            base_url=self.base_url,
            max_retries=self.max_retries,
            timeout=self.timeout,
            http_client=anthropic.DefaultAsyncHttpxClient(),
            middleware=[GovernorMiddleware(lambda: governor)],
        )


    # ------------------------------------------------------------------ building requests


    def caches_prefix(self, call: JudgeCall) -> bool:
        """Whether ``call``'s rubric block is long enough for the API to cache it.

        True when it reaches the model's minimum cacheable prompt length (approximate tokens),
        and when the price table does not know the minimum (a breakpoint the API ignores
        costs nothing).
        """
        key = (call.model, call.system)
        known = self._caches.get(key)
        if known is None:
            table = self._prices if self._prices is not None else pricing.load_prices()
            known = table.cache_applies(call.model, pricing.approx_tokens(call.system)) is not False
            # One answer per rubric block and model (a run sends the same block every time).
            if len(self._caches) > 256:
                self._caches.clear()
            self._caches[key] = known
        return known

    def request(self, call: JudgeCall, *, ttl: Literal["5m", "1h"] | None = None) -> dict[str, Any]:
        """The Messages API body for ``call``.

        The rubric system block carries the cache breakpoint when it is long enough to be
        cached (:meth:`caches_prefix`). ``temperature`` is included here (for batch params);
        :meth:`run` moves it to ``extra_body`` because ``messages.create`` no longer takes it.
        """
        system: dict[str, Any] = {"type": "text", "text": call.system}
        if self.caches_prefix(call):
            cache_control: dict[str, str] = {"type": "ephemeral"}
            if ttl is not None:
                cache_control["ttl"] = ttl
            system["cache_control"] = cache_control
        body: dict[str, Any] = {
            "model": call.model,
            "max_tokens": int(call.params.get("max_tokens", self.max_tokens)),
            "system": [system],
            "messages": [{"role": "user", "content": call.user}],
        }
        temperature = call.params.get("temperature", self.temperature)
        if temperature is not None:
            body["temperature"] = temperature
        return body

    # ------------------------------------------------------------------ Judge protocol

    async def run(self, call: JudgeCall, rubric: Rubric | None = None) -> Judgement:
        """Send a prebuilt call and parse the reply.

        Args:
            call: The call (from :meth:`build` or :func:`judgelab.calibration.formats.build_call`).
            rubric: Gives pointwise judgements their ``passed`` verdict.

        Returns:
            The :class:`Judgement`: parsed, or a recorded parse failure with the reply verbatim.

        Raises:
            JudgeCallError: If the request failed after the SDK's retries (or was not retryable).
        """
        body = self.request(call)
        temperature = body.pop("temperature", None)
        extra_body = {"temperature": temperature} if temperature is not None else None
        client, semaphore, _ = self._resources()
        async with semaphore:
            start = time.perf_counter()
            try:
                raw = await client.messages.with_raw_response.create(**body, extra_body=extra_body)
                message = await raw.parse()
            except anthropic.APIError as exc:
                raise _call_error(self.model, f"{call.kind} {call.format} call", exc) from exc
            latency = time.perf_counter() - start
        return self._judgement(call, message, rubric, attempts=raw.retries_taken + 1, latency=latency)

    def _judgement(
        self,
        call: JudgeCall,
        message: Any,
        rubric: Rubric | None,
        *,
        attempts: int = 1,
        latency: float = 0.0,
        batch: bool = False,
    ) -> Judgement:
        text = "".join(getattr(b, "text", "") for b in message.content if getattr(b, "type", "") == "text")
        result = formats.parse(call.format, text, spec=self.spec)
        error = result.error
        if error is not None and message.stop_reason in ("max_tokens", "refusal"):
            error = f"{error} (stop_reason={message.stop_reason})"
        usage = pricing.TokenUsage.from_api(message.usage)
        table = self._prices if self._prices is not None else pricing.load_prices()
        return Judgement(
            kind=call.kind,
            format=call.format,
            model=str(message.model or call.model),
            cache_key=call.cache_key,
            raw=text,
            value=result.value,
            passed=formats.passed_for(rubric, call.format, result.value) if rubric else None,
            parse_error=error,
            input_tokens=usage.input_tokens + usage.cache_write_tokens + usage.cache_write_1h_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens + usage.cache_write_1h_tokens,
            cost_usd=table.cost(call.model, usage, batch=batch),
            latency_s=latency,
            attempts=attempts,
        )

    # ------------------------------------------------------------------ token counting

    async def count_tokens(self, call: JudgeCall) -> int:
        """The exact prompt tokens of ``call`` (``POST /v1/messages/count_tokens``).

        Raises:
            JudgeCallError: If the request failed after retries.
        """
        body = self.request(call)
        client, semaphore, _ = self._resources()
        async with semaphore:
            try:
                counted = await client.messages.count_tokens(
                    model=body["model"], system=body["system"], messages=body["messages"]
                )
            except anthropic.APIError as exc:
                raise _call_error(self.model, "count_tokens", exc) from exc
        return int(counted.input_tokens)

    async def count_prefix_tokens(self, call: JudgeCall) -> int:
        """The exact tokens of ``call``'s rubric (system) block, the prefix the cache would hold.

        Two counts (``POST /v1/messages/count_tokens``): a one-character message with the
        block and without it; the difference is the block.

        Raises:
            JudgeCallError: If a request failed after retries.
        """
        body = self.request(call)
        probe = [{"role": "user", "content": "."}]
        client, semaphore, _ = self._resources()
        async with semaphore:
            try:
                with_block = await client.messages.count_tokens(
                    model=body["model"], system=body["system"], messages=probe  # type: ignore[arg-type]
                )
                without = await client.messages.count_tokens(model=body["model"], messages=probe)  # type: ignore[arg-type]
            except anthropic.APIError as exc:
                raise _call_error(self.model, "count_tokens", exc) from exc
        return max(int(with_block.input_tokens) - int(without.input_tokens), 0)

    # ------------------------------------------------------------------ Message Batches

    def batch_requests(self, calls: Sequence[JudgeCall] | Mapping[str, JudgeCall]) -> list[dict[str, Any]]:
        """The ``requests`` of a Message Batch of ``calls`` (custom id and Messages params).

        A sequence uses each call's cache key as its ``custom_id`` (identical calls are sent
        once); a mapping supplies the custom ids (``^[A-Za-z0-9_-]{1,64}$``).

        Raises:
            InputError: If there are no calls or a custom id is invalid.
        """
        by_id = dict(calls) if isinstance(calls, Mapping) else {c.cache_key: c for c in calls}
        if not by_id:
            raise InputError("submit_batch: no calls to submit")
        bad = [cid for cid in by_id if not _CUSTOM_ID.fullmatch(cid)]
        if bad:
            raise InputError(f"submit_batch: invalid custom ids {bad[:3]!r}; use ^[A-Za-z0-9_-]{{1,64}}$")
        ttl = self.batch_cache_ttl
        return [{"custom_id": cid, "params": self.request(call, ttl=ttl)} for cid, call in by_id.items()]

    async def submit_batch(
        self,
        calls: Sequence[JudgeCall] | Mapping[str, JudgeCall],
        *,
        since: datetime | None = None,
        exclude: Collection[str] = (),
        poll_interval: float = 30.0,
    ) -> str:
        """Submit calls as one Message Batch (half price, results within 24 h), exactly once.

        Args:
            calls: The calls (see :meth:`batch_requests` for their custom ids; the runner's
                carry the intent's tag, :func:`~judgelab.calibration.judges._identity.wire_id`).
            since: When the caller recorded its intent to submit (UTC); default now.
            exclude: Batch ids already claimed by other work (never adopted).
            poll_interval: Seconds between looks at same-size batches after a lost create reply.

        Returns:
            The batch id, for :meth:`poll_batch` and :meth:`collect_batch`.

        Raises:
            InputError: If there are no calls or a custom id is invalid.
            JudgeCallError: If the submission failed after retries.
            BatchInDoubt: A lost create left same-size batches that cannot be checked.
        """
        by_id = dict(calls) if isinstance(calls, Mapping) else {c.cache_key: c for c in calls}
        requests = self.batch_requests(by_id)
        batch_id = await create_batch_once(
            self.client, requests, since=since, exclude=exclude, max_retries=self.max_retries, model=self.model,
            poll_interval=poll_interval,
        )
        self._batches[batch_id] = by_id
        return batch_id

    async def find_batch(
        self, custom_ids: Collection[str], *, since: datetime, exclude: Collection[str] = (),
        poll_interval: float = 30.0, timeout: float | None = None,
    ) -> str | None:
        """The batch of exactly ``custom_ids`` created after ``since``, if the API holds one.

        Same-size candidates still processing are waited for (see :func:`find_batch` and
        :func:`~judgelab.calibration.judges._identity.identify`).

        Raises:
            JudgeCallError: If listing the batches failed after retries.
            BatchInDoubt: Candidates remain that cannot be checked.
        """
        client, model = self.client, self.model
        return await identify(
            lambda: find_batch(client, custom_ids, since=since, exclude=exclude, model=model),
            poll_interval=poll_interval, timeout=timeout, what="lost batch",
        )

    async def check_batch(self, batch_id: str, custom_ids: Collection[str], *, poll_interval: float = 30.0) -> None:
        """Make sure batch ``batch_id`` holds exactly ``custom_ids`` (``--adopt-batch``), waiting for it to end.

        Raises:
            BatchInDoubt: Its results name other requests than ``custom_ids``.
            JudgeCallError: If reading it failed after retries.
        """
        await self.wait_batch(batch_id, poll_interval=poll_interval)
        client = self.client

        async def ids_of() -> set[str]:
            return {item.custom_id async for item in await client.messages.batches.results(batch_id)}

        try:
            held = await patiently(ids_of, tries=_POLL_TRIES, what=f"batch {batch_id} results")
        except anthropic.APIError as exc:
            raise _call_error(self.model, f"batch {batch_id} results", exc) from exc
        _check_held(batch_id, held, custom_ids)

    async def poll_batch(self, batch_id: str) -> BatchStatus:
        """The batch's processing status and request counts.

        A status check is safe to repeat: one whose retries ran out on transient faults is
        asked again (:func:`patiently`), so a batch being waited for is not lost to a bad
        minute of its status checks.

        Raises:
            JudgeCallError: If the request failed after retries.
        """
        client = self.client
        try:
            batch = await patiently(lambda: client.messages.batches.retrieve(batch_id),
                                    tries=_POLL_TRIES, what=f"batch {batch_id} status")
        except anthropic.APIError as exc:
            raise _call_error(self.model, f"batch {batch_id} status", exc) from exc
        return BatchStatus(batch.id, batch.processing_status, batch.request_counts.model_dump())

    async def collect_batch(
        self,
        batch_id: str,
        calls: Mapping[str, JudgeCall] | None = None,
        rubric: Rubric | None = None,
        *,
        skip_unknown: bool = False,
    ) -> dict[str, Judgement]:
        """Every result of an ended batch, as judgements keyed by custom id.

        Nothing is dropped: an errored, canceled or expired request, and a request the results
        file does not mention, comes back as a judgement with ``value=None``, ``raw=""``,
        ``failure_kind="batch_error"`` and a ``parse_error`` that says why.

        Args:
            batch_id: From :meth:`submit_batch`.
            calls: Custom id -> call, as submitted; default: what this judge submitted in this
                process (pass it when collecting after a restart).
            rubric: Gives pointwise judgements their ``passed`` verdict.
            skip_unknown: Leave out results for custom ids not in ``calls`` (requests of the
                batch the caller no longer needs) instead of refusing them.

        Raises:
            JudgeError: If the batch has not ended, or results name an unknown custom id
                (unless ``skip_unknown``).
            BatchReadShort: If the results file, read ``max_retries + 1`` times, still names fewer
                requests than the batch holds (never called missing: the next run reads again).
            JudgeCallError: If a request failed after retries.
        """
        known = dict(calls) if calls is not None else self._batches.get(batch_id)
        if known is None:
            raise JudgeError(
                f"collect_batch: this judge did not submit {batch_id}; pass calls= (custom id -> JudgeCall)"
            )
        status = await self.poll_batch(batch_id)
        if not status.ended:
            raise JudgeError(f"batch {batch_id} is still {status.processing_status}; poll until it has ended")
        out: dict[str, Judgement] = {}
        expected = sum(int(v) for v in status.counts.values())
        for attempt in range(self.max_retries + 1):
            out, seen = await self._read_results(batch_id, known, rubric, skip_unknown=skip_unknown)
            # A results file cut at a line break decodes, yet names fewer requests than the
            # batch holds: read it again (a download is free) rather than call them missing.
            if seen >= expected:
                break
            log.warning("batch %s: results file names %d of %d requests (read %d); reading it again",
                        batch_id, seen, expected, attempt + 1)
        else:
            # Never "missing": the batch answered them (and billed them); the next run reads again.
            raise BatchReadShort(
                f"{self.model}: batch {batch_id}'s results file names {seen} of its {expected} requests "
                f"after {self.max_retries + 1} reads (a file cut short at a line break)",
                model=self.model, attempts=self.max_retries + 1, results=out, read=seen, expected=expected,
            )
        for custom_id, call in known.items():
            if custom_id not in out:
                out[custom_id] = _failed(call, "batch result missing: the results file did not mention it")
        return out

    async def _read_results(
        self, batch_id: str, known: Mapping[str, JudgeCall], rubric: Rubric | None, *, skip_unknown: bool
    ) -> tuple[dict[str, Judgement], int]:
        """One download of a batch's results: judgements by custom id, and the results it named."""
        out: dict[str, Judgement] = {}
        seen: set[str] = set()
        client = self.client

        async def download() -> list[Any]:
            return [item async for item in await client.messages.batches.results(batch_id)]

        try:
            for item in await patiently(download, tries=_POLL_TRIES, what=f"batch {batch_id} results"):
                seen.add(item.custom_id)
                call = known.get(item.custom_id)
                if call is None and skip_unknown:
                    continue
                if call is None:
                    raise JudgeError(f"batch {batch_id} returned unknown custom id {item.custom_id!r}")
                result = item.result
                if result.type == "succeeded":
                    out[item.custom_id] = self._judgement(call, result.message, rubric, batch=True)
                elif result.type == "errored":
                    err = result.error.error
                    out[item.custom_id] = _failed(call, f"batch errored: {err.type}: {err.message}")
                elif result.type == "expired":
                    out[item.custom_id] = _failed(call, "batch expired: not processed within 24 h")
                else:
                    out[item.custom_id] = _failed(call, f"batch {result.type}")
        except anthropic.APIError as exc:
            raise _call_error(self.model, f"batch {batch_id} results", exc) from exc
        return out, len(seen)

    async def cancel_batch(self, batch_id: str) -> BatchStatus:
        """Ask the API to cancel a batch (requests not yet processed come back ``canceled``)."""
        try:
            batch = await self.client.messages.batches.cancel(batch_id)
        except anthropic.APIError as exc:
            raise _call_error(self.model, f"batch {batch_id} cancel", exc) from exc
        return BatchStatus(batch.id, batch.processing_status, batch.request_counts.model_dump())


# Status checks of a batch being waited for, each with the SDK's retries, before giving up.
_POLL_TRIES = 4
# A batch found upstream may have been created up to this long before the intent was recorded
# by the local clock (the two clocks differ).
_CLOCK_MARGIN = timedelta(minutes=5)
# Statuses after which a batch create certainly created nothing: the request was refused.
_REFUSED = frozenset({400, 401, 403, 404, 413, 422})


async def find_batch(
    client: anthropic.AsyncAnthropic,
    custom_ids: Collection[str],
    *,
    since: datetime,
    exclude: Collection[str] = (),
    model: str = "judge",
) -> BatchSearch:
    """Look once for the batch of exactly ``custom_ids`` created after ``since``.

    The Message Batches API keeps no client-side marker on a batch (``create`` takes only the
    requests) and shows a batch's custom ids only in its results, once it has ended. So the
    batches created since the intent (less a margin for clock skew), not in ``exclude`` and of
    the same request count are candidates, and a candidate is this intent's only when its
    results name exactly ``custom_ids`` (which carry the intent's random tag:
    :mod:`judgelab.calibration.judges._identity`); candidates still processing are reported as
    ``pending``, never adopted.

    Raises:
        JudgeCallError: If listing the batches failed after retries.
    """
    wanted = set(custom_ids)
    floor = since.replace(tzinfo=UTC) if since.tzinfo is None else since
    floor -= _CLOCK_MARGIN
    candidates: list[tuple[str, str]] = []
    try:
        async for batch in client.messages.batches.list(limit=100):
            created = batch.created_at if batch.created_at.tzinfo else batch.created_at.replace(tzinfo=UTC)
            if created < floor:
                break  # newest first: the rest are older still
            if batch.id in exclude:
                continue
            if sum(int(v) for v in batch.request_counts.model_dump().values()) == len(wanted):
                candidates.append((str(batch.id), str(batch.processing_status)))
    except anthropic.APIError as exc:
        raise _call_error(model, "batch list", exc) from exc
    pending: list[str] = []
    foreign: list[str] = []
    undecidable: list[str] = []
    for batch_id, status in reversed(candidates):  # oldest first
        if status != "ended":
            pending.append(batch_id)
            continue

        async def ids_of(batch_id: str = batch_id) -> set[str]:
            return {item.custom_id async for item in await client.messages.batches.results(batch_id)}

        try:
            held = await patiently(ids_of, tries=_POLL_TRIES, what=f"batch {batch_id} results")
        except anthropic.APIError:
            undecidable.append(batch_id)
            continue
        if held != wanted:
            foreign.append(batch_id)
        elif not is_tagged(wanted):
            undecidable.append(batch_id)  # untagged ids: another project's same plan looks alike
        else:
            return BatchSearch(batch_id, foreign=tuple(foreign))
    return BatchSearch(None, pending=tuple(pending), foreign=tuple(foreign), undecidable=tuple(undecidable))


async def create_batch_once(
    client: anthropic.AsyncAnthropic,
    requests: list[dict[str, Any]],
    *,
    since: datetime | None = None,
    exclude: Collection[str] = (),
    max_retries: int = 6,
    model: str = "judge",
    poll_interval: float = 30.0,
    identify_timeout: float | None = None,
) -> str:
    """Create a Message Batch and return its id, never creating it twice.

    A create whose reply is lost (cut short, a timeout, a reset, a 5xx) may have created the
    batch all the same, so it is not retried blindly as the SDK would: before each new attempt
    the batch of exactly these custom ids is looked for (:func:`find_batch`), waiting for
    same-size candidates to end (only then do they show their custom ids), and adopted if
    found. Only a refusal (4xx other than 408/409/429) is final at once.

    Raises:
        JudgeCallError: If no attempt created the batch (after ``max_retries`` retries).
        BatchInDoubt: A lost create left candidates that cannot be checked.
    """
    start = since or datetime.now(UTC)
    once = client.with_options(max_retries=0)
    custom_ids = [str(r["custom_id"]) for r in requests]

    async def search() -> str | None:
        return await identify(
            lambda: find_batch(client, custom_ids, since=start, exclude=exclude, model=model),
            poll_interval=poll_interval, timeout=identify_timeout, what="batch submission",
        )

    last: anthropic.APIError | None = None
    for attempt in range(max_retries + 1):
        if attempt:
            found = await search()
            if found is not None:
                log.info("batch create: adopted %s, created by an attempt whose reply was lost", found)
                return found
            await asyncio.sleep(_backoff(attempt, last))
        try:
            batch = await once.messages.batches.create(requests=requests)  # type: ignore[arg-type]
            return str(batch.id)
        except anthropic.APIStatusError as exc:
            if exc.status_code in _REFUSED:
                raise _call_error(model, "batch submission", exc) from exc
            last = exc
        except anthropic.APIError as exc:  # connection, timeout, undecodable reply
            last = exc
    found = await search()
    if found is not None:
        return found
    assert last is not None
    raise _call_error(model, "batch submission", last) from last


def _check_held(batch_id: str, held: Collection[str], custom_ids: Collection[str]) -> None:
    """Refuse to adopt a batch whose requests are not exactly the intent's."""
    wanted = set(custom_ids)
    if set(held) != wanted:
        other = sorted(set(held) - wanted)
        raise BatchInDoubt(
            f"batch {batch_id} holds requests that are not this run's ({len(set(held) & wanted)} of its "
            f"{len(set(held))} custom ids are this batch's {len(wanted)}"
            + (f"; e.g. {other[0]!r}" if other else "") + "): not adopted",
            candidates=[batch_id], custom_ids=sorted(wanted),
        )


def transient(exc: anthropic.APIError) -> bool:
    """Whether a failed request may succeed if asked again (no reply, a cut reply, 408/409/429/5xx)."""
    status = getattr(exc, "status_code", None)
    return isinstance(exc, UndecodableReply) or status is None or status in (408, 409, 429) or status >= 500


async def patiently(ask: Callable[[], Awaitable[T]], *, tries: int = 4, what: str = "request") -> T:
    """``await ask()``, asked again (up to ``tries`` times in all) after a transient failure.

    For reads that are safe to repeat (a batch's status, its results file) and that a run
    waits on: one request's SDK retries can run out during a bad minute; the run need not.
    """
    for attempt in range(1, tries + 1):
        try:
            return await ask()
        except anthropic.APIError as exc:
            if not transient(exc) or attempt == tries:
                raise
            log.warning("%s failed (%s); asking again", what, type(exc).__name__)
            await asyncio.sleep(min(2.0**attempt, 30.0))
    raise AssertionError("unreachable")


def _backoff(attempt: int, exc: anthropic.APIError | None) -> float:
    """Seconds before create attempt ``attempt`` (``retry-after`` when the refusal said)."""
    response = getattr(exc, "response", None)
    header = response.headers.get("retry-after") if response is not None else None
    try:
        if header is not None:
            return min(float(header), 60.0)
    except ValueError:
        pass
    return min(0.5 * 2 ** (attempt - 1), 8.0)


def _failed(call: JudgeCall, reason: str) -> Judgement:
    """A batch request that came back without a reply (never a parse failure, never a score)."""
    return Judgement(
        kind=call.kind,
        format=call.format,
        model=call.model,
        cache_key=call.cache_key,
        raw="",
        value=None,
        parse_error=reason,
        failure_kind="batch_error",
    )
