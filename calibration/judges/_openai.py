"""A judge on any OpenAI-compatible endpoint, through the official ``openai`` SDK (3.x).

Chat Completions is the one API that OpenAI, Azure OpenAI, vLLM, Ollama, Together and Gemini's
OpenAI-compatible endpoint all speak, so that is what :class:`OpenAIJudge` sends. It gives
the guarantees of the Claude path (:class:`~judgelab.calibration.judges.AnthropicJudge`):

* the SDK retries 408/409/429/5xx and lost connections with backoff honouring
  ``retry-after``, up to ``max_retries``; the client's transport
  (:mod:`judgelab.calibration.judges._openai_transport`) adds that an undecodable 2xx, from any
  endpoint, is retried within the same budget, and that every attempt waits for a permit from
  a :class:`~judgelab.calibration.judges._transport.RateGovernor` fed by the ``x-ratelimit-*`` headers;
* a call that still fails raises :class:`~judgelab.calibration.judges.JudgeCallError` with its attempts
  and reason, never a score; a reply that does not parse is a recorded parse failure;
* the cost of each reply is read from its ``usage`` (cached prompt tokens, from
  ``prompt_tokens_details.cached_tokens``, at the cached rate) and the price table; a model the
  table does not know (a local model on vLLM or Ollama) is honestly unpriced (``None``);
* ``--batch`` goes through OpenAI's Batch API (a JSONL file uploaded, a batch created with a
  marker in its metadata, the output and error files read back), at the batch price, and a
  batch create whose reply was lost is found again rather than created twice
  (:func:`create_openai_batch_once`);
* :meth:`OpenAIJudge.cache_identity` is the endpoint's host: one model name on two servers
  (a quantised "llama3" on Ollama, another on vLLM) is two judges, never one cache.

The key comes from the caller or ``OPENAI_API_KEY``, the endpoint from the caller or
``OPENAI_BASE_URL`` (the SDK's own variables). A local server that wants no key is sent a
stand-in. The key is handed to the SDK client and nowhere else.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlparse

import openai

from judgelab.calibration import formats, pricing
from judgelab.calibration.judges._anthropic import BatchReadShort, JudgeCallError
from judgelab.calibration.judges._base import JudgeCall, Judgement
from judgelab.calibration.judges._hints import fix_for, origin_of
from judgelab.calibration.judges._identity import BatchInDoubt, BatchSearch, is_tagged, marker_of
from judgelab.calibration.judges._loops import PerLoop
from judgelab.calibration.judges._openai_transport import GovernedTransport, undecodable_cause
from judgelab.calibration.judges._provider import ProviderJudge
from judgelab.calibration.judges._transport import RateGovernor
from judgelab.labeler.errors import InputError, JudgeError
from judgelab.labeler.families import infer_family
from judgelab.labeler.models import Rubric

if TYPE_CHECKING:
    from judgelab.calibration.spec import JudgeSpec

log = logging.getLogger(__name__)

__all__ = [
    "OPENAI_DEFAULT_BASE_URL",
    "OpenAIBatchStatus",
    "OpenAIJudge",
    "create_openai_batch_once",
    "infer_family",
]

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where the SDK sends requests when neither ``base_url`` nor ``OPENAI_BASE_URL`` is set."""

_NO_KEY = "judgelab-no-key"

T = TypeVar("T")


async def patiently(ask: Callable[[], Awaitable[T]], *, tries: int = 4, what: str = "request") -> T:
    """``await ask()``, asked again (``tries`` times in all) after a transient ``openai`` failure.

    For reads that are safe to repeat (a batch's status, its files) that a run waits on. The
    error raised at last carries every HTTP attempt of every ask (:func:`_attempts_of`), so that
    its message does not say "after 1 attempt(s)" of a read asked four times.
    """
    spent = 0
    for attempt in range(1, tries + 1):
        try:
            return await ask()
        except openai.APIError as exc:
            spent += _attempts_of(exc)
            status = getattr(exc, "status_code", None)
            if not (status is None or status in (408, 409, 429) or status >= 500) or attempt == tries:
                exc.judgelab_attempts = spent  # type: ignore[attr-defined]
                raise
            log.warning("%s failed (%s); asking again", what, type(exc).__name__)
            await asyncio.sleep(min(2.0**attempt, 30.0))
    raise AssertionError("unreachable")

# OpenAI's reasoning models take max_completion_tokens and refuse a temperature other than 1.
_REASONING = re.compile(r"^(o\d|gpt-5)")


@dataclass(frozen=True)
class OpenAIBatchStatus:
    """Where an OpenAI batch stands.

    Attributes:
        batch_id: The batch id.
        processing_status: ``validating``, ``in_progress``, ``finalizing``, ``completed``,
            ``failed``, ``expired``, ``cancelling`` or ``cancelled``.
        counts: Requests by state (``total``, ``completed``, ``failed``).
    """

    batch_id: str
    processing_status: str
    counts: Mapping[str, int]

    @property
    def ended(self) -> bool:
        """Whether the batch will change no more (its files can be read)."""
        return self.processing_status in ("completed", "failed", "expired", "cancelled")


def _attempts_of(exc: BaseException) -> int:
    """HTTP attempts behind a failed request: the SDK's retries (its header), or :func:`patiently`'s total."""
    total = getattr(exc, "judgelab_attempts", None)
    if isinstance(total, int):
        return total
    request = getattr(exc, "request", None)
    try:
        header = request.headers.get("x-stainless-retry-count") if request is not None else None
    except RuntimeError:  # an error built without a request
        header = None
    return int(header) + 1 if header and header.isdigit() else 1


def _call_error(model: str, host: str, what: str, exc: openai.APIError) -> JudgeCallError:
    """A failed request as a :class:`JudgeCallError` naming the endpoint, attempts and fix."""
    cut = undecodable_cause(exc)
    if cut is not None:
        return JudgeCallError(
            f"{model} at {host}: {what} failed after {cut.attempts} attempt(s): undecodable reply "
            f"(HTTP {cut.status_code}): {cut.reason}. Fix: raise --max-retries, or check what sits between "
            f"you and {host} (a proxy cutting replies short).",
            model=model, attempts=cut.attempts, status_code=cut.status_code, error_type="undecodable_reply",
        )
    attempts = _attempts_of(exc)
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    error_type = type(exc).__name__
    message = getattr(exc, "message", str(exc))
    if isinstance(body, Mapping):
        inner = body.get("error")
        error: Mapping[str, Any] = inner if isinstance(inner, Mapping) else body
        error_type = str(error.get("type") or error.get("code") or error_type)
        message = str(error.get("message", message))
    hint = " " + fix_for(status, timed_out=isinstance(exc, openai.APITimeoutError), provider="openai",
                         url=origin_of(exc) if origin_of(exc) != "the API" else host)
    where = f"HTTP {status} {error_type}" if status is not None else error_type
    return JudgeCallError(
        f"{model} at {host}: {what} failed after {attempts} attempt(s): {where}: {message}.{hint}",
        model=model, attempts=attempts, status_code=status, error_type=error_type,
    )


def _usage(usage: Any) -> pricing.TokenUsage | None:
    """Chat Completions ``usage`` as billed tokens: cached prompt tokens apart (``None``: no usage)."""
    if usage is None:
        return None

    def get(obj: Any, name: str) -> Any:
        if obj is None:
            return None
        return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)

    prompt = int(get(usage, "prompt_tokens") or 0)
    cached = int(get(get(usage, "prompt_tokens_details"), "cached_tokens") or 0)
    return pricing.TokenUsage(
        input_tokens=max(prompt - cached, 0),
        output_tokens=int(get(usage, "completion_tokens") or 0),
        cache_read_tokens=min(cached, prompt),
    )


class OpenAIJudge(ProviderJudge[OpenAIBatchStatus]):
    """A judge on an OpenAI-compatible Chat Completions endpoint, behind the judge protocols.

    Args:
        model: The model id the endpoint serves (``gpt-4.1``, ``llama3.1:8b``...).
        family: The judge's own model family (default: read from the model id by
            :func:`infer_family`, else unknown).
        api_key: The API key; default ``$OPENAI_API_KEY`` (a stand-in for a local endpoint).
        base_url: The endpoint; default ``$OPENAI_BASE_URL``, else OpenAI's.
        max_concurrency: Requests in flight at once, per event loop.
        max_retries: The SDK's retry budget per request.
        timeout: Seconds per HTTP attempt.
        temperature: Sampling temperature (``None`` sends none; not sent to OpenAI's reasoning
            models, which refuse any but the default).
        max_tokens: Reply budget (default 1024; 8192 for reasoning models, whose reasoning
            counts against it). Sent as ``max_completion_tokens`` to OpenAI's reasoning models.
        prices: A loaded price table (default :func:`judgelab.calibration.pricing.load_prices`).
        spec: A team's judge spec (:mod:`judgelab.calibration.spec`).

    Raises:
        JudgeError: If no key is set and no endpoint other than OpenAI's is given.
        InputError: If a setting is out of range.
    """

    max_batch_requests = 50_000
    """Most requests one Batch API input file may hold (the API reference's limit)."""
    max_batch_bytes = 200 * 1024 * 1024
    """Largest Batch API input file (200 MB); the runner splits larger runs into several batches."""

    def __init__(
        self,
        model: str,
        *,
        family: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_concurrency: int = 8,
        max_retries: int = 6,
        timeout: float = 60.0,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        prices: pricing.PriceTable | None = None,
        spec: JudgeSpec | None = None,
    ) -> None:
        if not model:
            raise InputError("OpenAIJudge: a model is required (--model, or model in the judge spec)")
        if max_concurrency < 1 or max_retries < 0 or timeout <= 0:
            raise InputError(
                "OpenAIJudge: need max_concurrency >= 1, max_retries >= 0 and timeout > 0; got "
                f"{max_concurrency!r}, {max_retries!r}, {timeout!r}"
            )
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL).rstrip("/")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if self.base_url == OPENAI_DEFAULT_BASE_URL:
                raise JudgeError(
                    "OpenAIJudge: no API key. Set OPENAI_API_KEY, or point --base-url (OPENAI_BASE_URL) "
                    "at a local OpenAI-compatible server (vLLM, Ollama)."
                )
            key = _NO_KEY  # a local server that checks no key
        self.model = model
        self.family = family if family is not None else infer_family(model)
        self.spec = spec
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self._api_key = key
        self._prices = prices
        reasoning = bool(_REASONING.match(model))
        self._reasoning = reasoning
        self.temperature = None if reasoning else temperature
        self.max_tokens = max_tokens if max_tokens is not None else (8192 if reasoning else 1024)
        if self.max_tokens < 1:
            raise InputError(f"OpenAIJudge: max_tokens must be >= 1, got {self.max_tokens!r}")
        self._loops = PerLoop(self._new_client, self.max_concurrency)
        self._batches: dict[str, dict[str, JudgeCall]] = {}

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.model!r}, family={self.family!r}, host={self.host!r})"

    @property
    def host(self) -> str:
        """The endpoint's host (and port): what the report card and calibration report name."""
        return urlparse(self.base_url).netloc or self.base_url

    @property
    def endpoint(self) -> str:
        """``openai at HOST``: the provider and the endpoint's host, as reports name them."""
        return f"openai at {self.host}"

    @property
    def params(self) -> dict[str, Any]:
        """Request params recorded in each call and its cache key."""
        return {"max_tokens": self.max_tokens, "temperature": self.temperature}

    def cache_identity(self) -> str:
        """The endpoint: the same model name on two servers may be two different models."""
        return f"openai-chat {self.host}"

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The SDK client for the running event loop (its transport checks and paces)."""
        return self._resources()[0]

    @property
    def governor(self) -> RateGovernor:
        """The rate governor of the running event loop."""
        return self._resources()[2]

    def _resources(self) -> tuple[openai.AsyncOpenAI, asyncio.Semaphore, RateGovernor]:
        return self._loops.get()

    def _new_client(self, governor: RateGovernor) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=self.base_url,
            max_retries=self.max_retries,
            timeout=self.timeout,
            http_client=openai.DefaultAsyncHttpxClient(transport=GovernedTransport(lambda: governor)),
        )


    # ------------------------------------------------------------------ requests


    def request(self, call: JudgeCall) -> dict[str, Any]:
        """The Chat Completions body for ``call``: the rubric as the system message, then the user's."""
        budget = int(call.params.get("max_tokens", self.max_tokens))
        body: dict[str, Any] = {
            "model": call.model,
            "messages": [{"role": "system", "content": call.system}, {"role": "user", "content": call.user}],
            ("max_completion_tokens" if self._reasoning else "max_tokens"): budget,
        }
        temperature = call.params.get("temperature", self.temperature)
        if temperature is not None:
            body["temperature"] = temperature
        return body

    # ------------------------------------------------------------------ Judge protocol

    async def run(self, call: JudgeCall, rubric: Rubric | None = None) -> Judgement:
        """Send a prebuilt call and parse the reply.

        Raises:
            JudgeCallError: If the request failed after the SDK's retries (or was not retryable).
        """
        body = self.request(call)
        client, semaphore, _ = self._resources()
        async with semaphore:
            start = time.perf_counter()
            try:
                raw = await client.chat.completions.with_raw_response.create(**body)
                completion = raw.parse()
            except openai.APIError as exc:
                raise _call_error(self.model, self.host, f"{call.kind} {call.format} call", exc) from exc
            latency = time.perf_counter() - start
        return self.judgement(call, completion, rubric, attempts=raw.retries_taken + 1, latency=latency)

    def judgement(
        self, call: JudgeCall, completion: Any, rubric: Rubric | None, *,
        attempts: int = 1, latency: float = 0.0, batch: bool = False,
    ) -> Judgement:
        """A chat completion (an SDK object or its JSON) read as the call's judgement."""
        def get(obj: Any, name: str) -> Any:
            return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)

        choice = (get(completion, "choices") or [None])[0]
        message = get(choice, "message") if choice is not None else None
        text = str(get(message, "content") or "") if message is not None else ""
        result = formats.parse(call.format, text, spec=self.spec)
        error = result.error
        finish = get(choice, "finish_reason") if choice is not None else None
        if error is not None and finish in ("length", "content_filter"):
            error = f"{error} (finish_reason={finish})"
        usage = _usage(get(completion, "usage"))
        table = self._prices if self._prices is not None else pricing.load_prices()
        return Judgement(
            kind=call.kind,
            format=call.format,
            model=str(get(completion, "model") or call.model),
            cache_key=call.cache_key,
            raw=text,
            value=result.value,
            passed=formats.passed_for(rubric, call.format, result.value) if rubric else None,
            parse_error=error,
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
            cache_read_tokens=usage.cache_read_tokens if usage else 0,
            # No usage reported (some local servers): the cost is unknown, not zero.
            cost_usd=table.cost(call.model, usage, batch=batch) if usage else None,
            latency_s=latency,
            attempts=attempts,
        )

    # ------------------------------------------------------------------ Batch API

    def batch_requests(self, calls: Sequence[JudgeCall] | Mapping[str, JudgeCall]) -> list[dict[str, Any]]:
        """The lines of a Batch API input file for ``calls`` (``custom_id``, method, url, body).

        Raises:
            InputError: If there are no calls.
        """
        by_id = dict(calls) if isinstance(calls, Mapping) else {c.cache_key: c for c in calls}
        if not by_id:
            raise InputError("submit_batch: no calls to submit")
        return [{"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": self.request(call)}
                for cid, call in by_id.items()]

    async def submit_batch(
        self,
        calls: Sequence[JudgeCall] | Mapping[str, JudgeCall],
        *,
        since: datetime | None = None,
        exclude: Collection[str] = (),
        poll_interval: float = 30.0,
    ) -> str:
        """Upload the calls as a JSONL file and create one batch of them (batch price), exactly once.

        The batch's ``metadata`` carries the digest of its custom ids, so that a batch whose
        create reply was lost is found again as this one, never another run's.

        Raises:
            InputError: If there are no calls.
            JudgeCallError: If the upload or the creation failed after retries.
        """
        by_id = dict(calls) if isinstance(calls, Mapping) else {c.cache_key: c for c in calls}
        lines = self.batch_requests(by_id)
        content = "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines).encode()
        marker = marker_of(list(by_id))
        client = self.client
        try:
            # An upload whose reply was lost is sent again by the SDK: at worst an unused file
            # is stored upstream (files are not billed as requests; nothing is judged twice).
            uploaded = await client.files.create(file=(f"judgelab-{marker}.jsonl", content, "application/jsonl"),
                                                 purpose="batch")
        except openai.APIError as exc:
            raise _call_error(self.model, self.host, "batch input upload", exc) from exc
        batch_id = await create_openai_batch_once(
            client, uploaded.id, list(by_id), since=since, exclude=exclude,
            max_retries=self.max_retries, model=self.model, host=self.host,
        )
        self._batches[batch_id] = by_id
        return batch_id

    async def find_batch(
        self, custom_ids: Collection[str], *, since: datetime, exclude: Collection[str] = (),
        poll_interval: float = 30.0, timeout: float | None = None,
    ) -> str | None:
        """The batch created after ``since`` that is exactly ``custom_ids``'s (by metadata, else input file), if any.

        Raises:
            BatchInDoubt: A candidate without metadata whose input file cannot be read.
        """
        found = await find_openai_batch(self.client, custom_ids, since=since, exclude=exclude,
                                        model=self.model, host=self.host)
        return _settled(found, custom_ids, "a batch of this run")

    async def check_batch(self, batch_id: str, custom_ids: Collection[str], *, poll_interval: float = 30.0) -> None:
        """Make sure batch ``batch_id`` holds exactly ``custom_ids`` (``--adopt-batch``).

        Its metadata marker settles it at once; without one (a batch made by hand, or by an
        older judgelab) it is waited for and its output and error files read.

        Raises:
            BatchInDoubt: It holds other requests than ``custom_ids``.
            JudgeCallError: If reading it failed after retries.
        """
        client = self.client
        try:
            batch = await patiently(lambda: client.batches.retrieve(batch_id), what=f"batch {batch_id} status")
        except openai.APIError as exc:
            raise _call_error(self.model, self.host, f"batch {batch_id} status", exc) from exc
        meta = batch.metadata or {}
        if _MARK in meta:
            if meta[_MARK] != marker_of(custom_ids):
                raise BatchInDoubt(f"batch {batch_id} carries another run's marker ({meta[_MARK]}): not adopted",
                                   candidates=[batch_id], custom_ids=sorted(custom_ids))
            return
        # No marker (a server that keeps no metadata, a batch made by hand): its input file says.
        owner = await _input_owner(client, str(batch.input_file_id), set(custom_ids), marker_of(custom_ids))
        if owner is True:
            return
        if owner is False:
            raise BatchInDoubt(f"batch {batch_id} holds requests that are not this run's: not adopted",
                               candidates=[batch_id], custom_ids=sorted(custom_ids))
        await self.wait_batch(batch_id, poll_interval=poll_interval)
        batch = await patiently(lambda: client.batches.retrieve(batch_id), what=f"batch {batch_id} status")
        held: set[str] = set()
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                held |= {str(item.get("custom_id")) for item in await self._read_file(file_id)}
        if held != set(custom_ids):
            raise BatchInDoubt(f"batch {batch_id} holds requests that are not this run's: not adopted",
                               candidates=[batch_id], custom_ids=sorted(custom_ids))

    async def poll_batch(self, batch_id: str) -> OpenAIBatchStatus:
        """The batch's status and request counts (asked again after transient faults)."""
        client = self.client
        try:
            batch = await patiently(lambda: client.batches.retrieve(batch_id),
                                    what=f"batch {batch_id} status")
        except openai.APIError as exc:
            raise _call_error(self.model, self.host, f"batch {batch_id} status", exc) from exc
        counts = batch.request_counts.model_dump() if batch.request_counts is not None else {}
        return OpenAIBatchStatus(batch.id, batch.status, counts)

    async def collect_batch(
        self,
        batch_id: str,
        calls: Mapping[str, JudgeCall] | None = None,
        rubric: Rubric | None = None,
        *,
        skip_unknown: bool = False,
    ) -> dict[str, Judgement]:
        """Every result of an ended batch, keyed by custom id; a request without a reply is a batch error.

        The files are checked against the batch's ``request_counts``: when they name fewer
        requests than it answered (completed + failed), they are read again, and a shortfall
        that stays is :class:`~judgelab.calibration.judges.BatchReadShort`, never "missing".

        Raises:
            JudgeError: If the batch has not ended, or a result names an unknown custom id
                (unless ``skip_unknown``).
            BatchReadShort: If the files still name fewer requests than the batch answered.
            JudgeCallError: If reading the batch or its files failed after retries.
        """
        known = dict(calls) if calls is not None else self._batches.get(batch_id)
        if known is None:
            raise JudgeError(
                f"collect_batch: this judge did not submit {batch_id}; pass calls= (custom id -> JudgeCall)"
            )
        client = self.client
        try:
            batch = await patiently(lambda: client.batches.retrieve(batch_id),
                                    what=f"batch {batch_id} status")
        except openai.APIError as exc:
            raise _call_error(self.model, self.host, f"batch {batch_id} status", exc) from exc
        if batch.status not in ("completed", "failed", "expired", "cancelled"):
            raise JudgeError(f"batch {batch_id} is still {batch.status}; poll until it has ended")
        counts = batch.request_counts.model_dump() if batch.request_counts is not None else {}
        # What the batch answered, by its own count: a file cut at a line break still decodes.
        expected = int(counts.get("completed") or 0) + int(counts.get("failed") or 0)
        out: dict[str, Judgement] = {}
        seen = 0
        for read in range(1, _READS + 1):
            out, seen = await self._read_results(batch, known, rubric, skip_unknown=skip_unknown)
            if seen >= expected:
                break
            log.warning("batch %s: its files name %d of the %d requests it answered (read %d); reading them again",
                        batch_id, seen, expected, read)
            if read < _READS:
                await asyncio.sleep(min(0.25 * 2 ** (read - 1), 8.0))
        else:
            # Never "missing": the batch answered them (and billed them); the next run reads again.
            raise BatchReadShort(
                f"{self.model} at {self.host}: batch {batch_id}'s output and error files name {seen} of the "
                f"{expected} requests it answered (request_counts: {counts.get('completed', 0)} completed, "
                f"{counts.get('failed', 0)} failed), after {_READS} reads (a file cut short at a line break)",
                model=self.model, attempts=_READS, results=out, read=seen, expected=expected,
            )
        why = f"batch {batch.status}" if batch.status != "completed" else "the output file did not mention it"
        for custom_id, call in known.items():
            if custom_id not in out:
                out[custom_id] = _failed(call, f"batch result missing: {why}")
        return out

    async def _read_results(
        self, batch: Any, known: Mapping[str, JudgeCall], rubric: Rubric | None, *, skip_unknown: bool
    ) -> tuple[dict[str, Judgement], int]:
        """One read of a batch's output and error files: judgements by custom id, and the requests named."""
        out: dict[str, Judgement] = {}
        named: set[str] = set()
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            for item in await self._read_file(file_id):
                custom_id = str(item.get("custom_id"))
                named.add(custom_id)
                call = known.get(custom_id)
                if call is None:
                    if skip_unknown:
                        continue
                    raise JudgeError(f"batch {batch.id} returned unknown custom id {custom_id!r}")
                out[custom_id] = self._batch_line(call, item, rubric)
        return out, len(named)

    async def _read_file(self, file_id: str) -> list[dict[str, Any]]:
        """The JSON lines of a batch output or error file (its whole body is checked by the transport)."""
        client = self.client

        async def download() -> bytes:
            return (await client.files.content(file_id)).content

        try:
            body = await patiently(download, what=f"file {file_id}")
        except openai.APIError as exc:
            raise _call_error(self.model, self.host, f"batch file {file_id}", exc) from exc
        return [json.loads(line) for line in body.splitlines() if line.strip()]

    def _batch_line(self, call: JudgeCall, item: Mapping[str, Any], rubric: Rubric | None) -> Judgement:
        response = item.get("response") if isinstance(item.get("response"), Mapping) else None
        error = item.get("error")
        if response is not None and response.get("status_code") == 200 and isinstance(response.get("body"), Mapping):
            return self.judgement(call, response["body"], rubric, batch=True)
        if response is not None and isinstance(response.get("body"), Mapping):
            detail = response["body"].get("error") or {}
            message = detail.get("message") if isinstance(detail, Mapping) else detail
            return _failed(call, f"batch errored: HTTP {response.get('status_code')}: {message}")
        if isinstance(error, Mapping):
            return _failed(call, f"batch errored: {error.get('code')}: {error.get('message')}")
        return _failed(call, "batch errored: a result line without a response")


# Reads of a batch's files before a shortfall against its request counts is left for the next run.
_READS = 4
# A batch found upstream may have been created up to this long before the intent was recorded.
_CLOCK_MARGIN = timedelta(minutes=5)
_REFUSED = frozenset({400, 401, 403, 404, 413, 422})
_MARK = "judgelab_batch"
_COUNT = "judgelab_requests"


async def find_openai_batch(
    client: openai.AsyncOpenAI, custom_ids: Collection[str], *, since: datetime, exclude: Collection[str] = (),
    model: str = "judge", host: str = "", input_file_id: str | None = None,
) -> BatchSearch:
    """Look once for the batch of exactly ``custom_ids`` created after ``since``, not in ``exclude``.

    judgelab writes the digest of a batch's custom ids (:func:`~judgelab.calibration.judges._identity.marker_of`;
    the ids carry the intent's random tag) and its request count into the batch's ``metadata``,
    which the API shows at once: a batch is this intent's only when both match. A batch of
    another project, or another judgelab database on the same key, never does.

    Some OpenAI-compatible servers keep no ``metadata``. A batch without judgelab's marker is
    then this intent's only by what only this intent wrote: it was made of ``input_file_id``
    (the file this execution uploaded), or its input file holds exactly ``custom_ids`` (read
    back), or, that file unreadable, the file bears the name judgelab gave it (the digest of
    these ids). One that cannot be read either way is ``undecidable``: the caller stops in
    doubt rather than create a batch blind.

    Raises:
        JudgeCallError: If listing the batches failed after retries.
    """
    floor = (since.replace(tzinfo=UTC) if since.tzinfo is None else since) - _CLOCK_MARGIN
    wanted = set(custom_ids)
    marker, count = marker_of(wanted), str(len(wanted))
    foreign: list[str] = []
    unmarked: list[tuple[str, str]] = []
    try:
        async for batch in client.batches.list(limit=100):
            if datetime.fromtimestamp(batch.created_at, UTC) < floor:
                break  # newest first: the rest are older still
            meta = batch.metadata or {}
            if batch.id in exclude:
                continue
            if _MARK in meta:
                if meta.get(_MARK) == marker and meta.get(_COUNT) == count:
                    return BatchSearch(str(batch.id), foreign=tuple(foreign))
                if meta.get(_COUNT) == count:
                    foreign.append(str(batch.id))
                continue
            # No marker: a server that drops metadata (or a batch made by hand). Its size, when
            # the server already states it, rules out the others; never proof of ownership.
            total = batch.request_counts.total if batch.request_counts is not None else 0
            if total and total != len(wanted):
                continue
            if input_file_id is not None and batch.input_file_id == input_file_id:
                return BatchSearch(str(batch.id), foreign=tuple(foreign))  # made of this execution's upload
            unmarked.append((str(batch.id), str(batch.input_file_id)))
    except openai.APIError as exc:
        raise _call_error(model, host, "batch list", exc) from exc
    return await _check_unmarked(client, unmarked, wanted, marker, foreign)


async def _check_unmarked(
    client: openai.AsyncOpenAI, unmarked: Sequence[tuple[str, str]], wanted: set[str], marker: str,
    foreign: list[str],
) -> BatchSearch:
    """Which of the batches without a marker (``(batch id, input file id)``, newest first) is ``wanted``'s."""
    undecidable: list[str] = []
    for batch_id, file_id in reversed(unmarked):  # oldest first
        owner = await _input_owner(client, file_id, wanted, marker)
        if owner is True and is_tagged(wanted):
            return BatchSearch(batch_id, foreign=tuple(foreign))
        if owner is False:
            foreign.append(batch_id)
        else:
            # Unreadable, or untagged ids (written before batch tags: another project's plan looks alike).
            undecidable.append(batch_id)
    return BatchSearch(None, foreign=tuple(foreign), undecidable=tuple(undecidable))


async def _input_owner(client: openai.AsyncOpenAI, file_id: str, wanted: set[str], marker: str) -> bool | None:
    """Whether the input file ``file_id`` is exactly ``wanted``'s: ``None`` when it cannot be told."""

    async def content() -> bytes:
        return (await client.files.content(file_id)).content

    try:
        body = await patiently(content, what=f"batch input file {file_id}")
        held = {str(json.loads(line).get("custom_id")) for line in body.splitlines() if line.strip()}
    except (openai.APIError, ValueError, AttributeError):
        held = None
    if held is not None:
        return held == wanted
    # The content is not served (some servers refuse batch inputs): the name judgelab gave it.
    try:
        meta = await patiently(lambda: client.files.retrieve(file_id), what=f"batch input file {file_id}")
    except openai.APIError:
        return None
    return True if meta.filename == f"judgelab-{marker}.jsonl" else None


def _settled(search: BatchSearch, custom_ids: Collection[str], what: str) -> str | None:
    """The batch a search found, ``None`` when none is this intent's; in doubt, :class:`BatchInDoubt`."""
    if search.found is not None or not search.undecidable:
        return search.found
    raise BatchInDoubt(
        f"{what}: its create reply was lost, this server keeps no batch metadata, and judgelab cannot read "
        f"whether batch(es) {', '.join(search.undecidable)} (created since, same size or size not yet "
        "known) hold this run's requests (their input files were not served)",
        candidates=search.undecidable, custom_ids=sorted(custom_ids),
    )


async def create_openai_batch_once(
    client: openai.AsyncOpenAI,
    input_file_id: str,
    custom_ids: Sequence[str],
    *,
    since: datetime | None = None,
    exclude: Collection[str] = (),
    max_retries: int = 6,
    model: str = "judge",
    host: str = "",
) -> str:
    """Create a Chat Completions batch of an uploaded file and return its id, never twice.

    As :func:`~judgelab.calibration.judges.create_batch_once`: a create whose reply is lost may have
    created the batch all the same, so before each new attempt the batches created since
    ``since`` are listed and the one whose ``metadata`` carries the digest of these custom ids
    is adopted (:func:`find_openai_batch`); on a server that keeps no metadata, the one made of
    ``input_file_id`` or whose input file holds these custom ids. Only a refusal (a 4xx other
    than 408/409/429) is final at once.

    Raises:
        JudgeCallError: If no attempt created the batch.
        BatchInDoubt: A batch without metadata may be this one and its input cannot be read:
            no second batch is created blind.
    """
    start = since or datetime.now(UTC)
    once = client.with_options(max_retries=0)
    last: openai.APIError | None = None
    metadata = {_MARK: marker_of(custom_ids), _COUNT: str(len(set(custom_ids)))}

    async def search() -> str | None:
        found = await find_openai_batch(client, custom_ids, since=start, exclude=exclude, model=model, host=host,
                                        input_file_id=input_file_id)
        return _settled(found, custom_ids, "a batch of this run")

    for attempt in range(max_retries + 1):
        if attempt:
            found = await search()
            if found is not None:
                log.info("batch create: adopted %s, created by an attempt whose reply was lost", found)
                return found
            await asyncio.sleep(min(0.5 * 2 ** (attempt - 1), 8.0))
        try:
            batch = await once.batches.create(
                input_file_id=input_file_id, endpoint="/v1/chat/completions", completion_window="24h",
                metadata=metadata,
            )
            return str(batch.id)
        except openai.APIStatusError as exc:
            if exc.status_code in _REFUSED:
                raise _call_error(model, host, "batch submission", exc) from exc
            last = exc
        except openai.APIError as exc:  # connection, timeout, undecodable reply
            last = exc
    found = await search()
    if found is not None:
        return found
    assert last is not None
    raise _call_error(model, host, "batch submission", last) from last


def _failed(call: JudgeCall, reason: str) -> Judgement:
    """A batch request that came back without a reply (never a parse failure, never a score)."""
    return Judgement(kind=call.kind, format=call.format, model=call.model, cache_key=call.cache_key, raw="",
                     value=None, parse_error=reason, failure_kind="batch_error")
