"""How the mock answers the OpenAI API: Chat Completions, Files and Batches.

The same server (:class:`~judgelab.calibration.mockapi.MockAnthropic`) speaks it beside the Messages
API, so one mock serves both judges (``openai.AsyncOpenAI(base_url=mock.openai_base_url)``):

- ``POST /v1/chat/completions``: a chat completion (id, choices with the message and
  ``finish_reason``, usage with ``prompt_tokens_details.cached_tokens``), with the same latency,
  injected faults (the fault plan's ``"messages"`` endpoint: the judging endpoint of either
  API) and rate limits as ``/v1/messages``. Limits are stated OpenAI's way:
  ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` (reset as a duration, ``"0.25s"``)
  and ``retry-after`` / ``retry-after-ms`` on a 429. Prompt caching is automatic, as OpenAI's:
  a system message reaching the model's minimum cacheable length (1,024 tokens unless the
  price table or ``min_cache_tokens`` says otherwise) is read from the cache from its second use.
- ``POST /v1/files`` (multipart upload), ``GET /v1/files/{id}``, ``GET /v1/files/{id}/content``.
- ``POST /v1/batches``, ``GET /v1/batches/{id}`` (``in_progress`` until ``batch_delay`` has
  passed, then ``completed`` with an output file and, when some requests failed, an error
  file), ``GET /v1/batches`` (newest first, ``after`` and ``limit``), ``POST /v1/batches/{id}/cancel``.
  Faults drawn for the ``"batches"`` endpoint put the request in the error file (429/529/500
  as its HTTP status, ``timeout`` as ``batch_expired``); ``malformed`` answers it with a reply
  that parses as no verdict.

Knobs for the quirks of OpenAI-compatible servers and what a network does to them (set on
the server, :class:`~judgelab.calibration.mockapi.MockAnthropic`): ``drop_metadata`` (a server that keeps
no batch ``metadata``), ``short_output`` and ``short_output_reads`` (an output file served cut at
a line break: whole JSON lines, fewer of them), ``cut_creates`` (a create carried out whose reply
is cut short) and ``hide_batch_inputs`` (a server that neither serves batch input files nor
keeps their names).
:attr:`~judgelab.calibration.mockapi.MockAnthropic.batch_requests_billed` counts what the batches created
hold: what the provider bills.

Replies come from the server's ``responder``, given the request in Messages shape (the system
message as ``system``), so the fake judge answers both APIs alike, in the spec's verdict format.
"""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
import itertools
import json
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from judgelab.calibration.mockapi._faults import MALFORMED_REPLY
from judgelab.calibration.mockapi._messages import ApiError, MessagesAPI, json_reply
from judgelab.calibration.pricing import approx_tokens

__all__ = ["OpenAIAPI", "is_openai_path", "openai_error_body"]

_DEFAULT_MIN_CACHE = 1024
_IDS = itertools.count(1)


def is_openai_path(path: str) -> bool:
    """Whether ``path`` is one of the OpenAI endpoints the mock serves (its errors are shaped OpenAI's way)."""
    return path.startswith(("/v1/chat/", "/v1/files", "/v1/batches"))


def openai_error_body(err: ApiError) -> dict[str, Any]:
    """An error reply as OpenAI writes it: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": err.message, "type": err.kind, "param": None, "code": None}}


@dataclass
class _File:
    id: str
    filename: str
    purpose: str
    content: bytes
    created_at: int


@dataclass
class _OpenAIBatch:
    id: str
    input_file_id: str
    endpoint: str
    metadata: dict[str, str] | None
    created_at: int
    ready_at: float
    total: int
    status: str = "in_progress"
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed_at: int | None = None
    cancelled_at: int | None = None
    counts: dict[str, int] = field(default_factory=lambda: {"total": 0, "completed": 0, "failed": 0})


class OpenAIAPI(MessagesAPI):
    """The OpenAI endpoints of the mock (a base of :class:`~judgelab.calibration.mockapi.MockAnthropic`)."""

    batch_delay: float
    drop_metadata: bool
    cut_creates: int
    hide_batch_inputs: bool
    _files: dict[str, _File]
    _openai_batches: dict[str, _OpenAIBatch]

    def _openai_route(
        self, method: str, path: str, raw: bytes, body: Any, headers: Mapping[str, str],
        query: Mapping[str, list[str]],
    ) -> tuple[int, dict[str, str], bytes] | None:
        """Answer an OpenAI request, or ``None`` when ``path`` is none of the OpenAI routes."""
        if path == "/v1/chat/completions" and method == "POST":
            return self._chat_endpoint(raw, body)
        if path == "/v1/files" and method == "POST":
            return json_reply(self._file_json(self._upload(raw, headers.get("content-type", ""))))
        m = re.fullmatch(r"/v1/files/(?P<id>[^/]+)(?P<content>/content)?", path)
        if m and method == "GET":
            found = self._file(m.group("id"))
            if m.group("content"):
                return 200, {"content-type": "application/octet-stream"}, self._content(found)
            return json_reply(self._file_json(found))
        if path == "/v1/batches":
            if method == "POST":
                status, headers, payload = json_reply(self._batch_json(self._create_openai_batch(body)))
                with self._lock:
                    cut = self.cut_creates > 0
                    self.cut_creates -= cut
                if cut:
                    # Created all the same: only the reply is lost on the way (a cut body).
                    self._bump("fault:cut_create")
                    payload = payload[: len(payload) // 2]
                return status, headers, payload
            if method == "GET":
                return json_reply(self._openai_batch_page(query))
        m = re.fullmatch(r"/v1/batches/(?P<id>[^/]+)(?P<cancel>/cancel)?", path)
        if m:
            if method == "GET" and not m.group("cancel"):
                return json_reply(self._batch_json(self._openai_batch(m.group("id"))))
            if method == "POST" and m.group("cancel"):
                return json_reply(self._batch_json(self._cancel_openai_batch(m.group("id"))))
        return None

    # ------------------------------------------------------------------ chat completions

    def _chat_endpoint(self, raw: bytes, body: Any) -> tuple[int, dict[str, str], bytes]:
        limited = self._limiter.requests is not None or self._limiter.tokens is not None
        if limited:
            wait, _ = self._limiter.admit(chat_prompt_tokens(body) if isinstance(body, Mapping) else 0)
            if wait > 0:
                self._bump("ratelimit:429")
                wait = max(wait, 0.001)
                raise ApiError(
                    429, "rate_limit_exceeded",
                    "Rate limit reached for requests. Please try again later.",
                    {**self._openai_limit_headers(), "retry-after": f"{wait:.3f}",
                     "retry-after-ms": str(math.ceil(wait * 1000))},
                )
        self._sleep(self.latency)
        fault = self._fault("messages", raw)
        completion = self._completion(body, malformed=fault == "malformed")
        status, headers, payload = json_reply(completion)
        if limited:
            self._limiter.charge(int(completion["usage"]["completion_tokens"]))
            headers.update(self._openai_limit_headers())
        return status, headers, payload

    def _completion(self, body: Any, *, malformed: bool = False) -> dict[str, Any]:
        """A chat completion for a request body (refused with a 400 when it is not one)."""
        if not isinstance(body, Mapping) or not isinstance(body.get("model"), str) or not body["model"]:
            raise ApiError(400, "invalid_request_error", "model: a model is required")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, Mapping) for m in messages):
            raise ApiError(400, "invalid_request_error", "messages: a non-empty list of messages is required")
        model = str(body["model"])
        system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
        rest = [m for m in messages if m.get("role") not in ("system", "developer")]
        if malformed:
            text = MALFORMED_REPLY
        else:
            try:
                text = self.responder({"model": model, "system": system, "messages": rest})
            except Exception as exc:  # a broken responder is the server's fault: a 500
                raise ApiError(500, "server_error", f"responder failed: {type(exc).__name__}") from exc
        budget = body.get("max_completion_tokens", body.get("max_tokens"))
        out_tokens = approx_tokens(text)
        finish = "stop"
        if isinstance(budget, int) and not isinstance(budget, bool) and 0 < budget < out_tokens:
            text, out_tokens, finish = text[: budget * 4], budget, "length"
        self._bump(f"reply:{'ok' if finish == 'stop' else finish}")
        prompt = chat_prompt_tokens(body)
        cached = self._cached_prefix(model, system)
        return {
            "id": f"chatcmpl-mock-{next(self._ids):06d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                         "finish_reason": finish, "logprobs": None}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": out_tokens,
                "total_tokens": prompt + out_tokens,
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }

    def _cached_prefix(self, model: str, system: str) -> int:
        """Tokens of the system message read from the automatic prompt cache (0 the first time)."""
        tokens = approx_tokens(system)
        minimum = self.min_cache_tokens
        if minimum is None:
            from judgelab.calibration.pricing import load_prices

            minimum = load_prices().min_cache_tokens(model) or _DEFAULT_MIN_CACHE
        if not system or tokens < max(minimum, 1):
            return 0
        key = "openai:" + hashlib.sha256(json.dumps([model, system]).encode()).hexdigest()
        with self._lock:
            hit = key in self._cache
            self._cache.add(key)
        self._bump("cache:read" if hit else "cache:write")
        return tokens if hit else 0

    def _openai_limit_headers(self) -> dict[str, str]:
        """The limiter's state as OpenAI states it (``x-ratelimit-*``, resets as durations)."""
        out: dict[str, str] = {}
        limiter = self._limiter
        with limiter.lock:
            now = time.monotonic()
            for name, bucket in (("requests", limiter.requests), ("tokens", limiter.tokens)):
                if bucket is None:
                    continue
                bucket.refill(now)
                out[f"x-ratelimit-limit-{name}"] = f"{bucket.limit:g}"
                out[f"x-ratelimit-remaining-{name}"] = str(max(math.floor(bucket.level), 0))
                out[f"x-ratelimit-reset-{name}"] = f"{max(bucket.cap - bucket.level, 0.0) / bucket.rate:.3f}s"
        return out

    # ------------------------------------------------------------------ files

    def _upload(self, raw: bytes, content_type: str) -> _File:
        if not content_type.startswith("multipart/form-data"):
            raise ApiError(400, "invalid_request_error", "a file upload is multipart/form-data")
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw
        )
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            if isinstance(name, str) and isinstance(payload, bytes):
                fields[name] = (part.get_filename(), payload)
        if "file" not in fields:
            raise ApiError(400, "invalid_request_error", "file: a file is required")
        purpose = fields.get("purpose", (None, b""))[1].decode()
        filename, content = fields["file"]
        found = _File(f"file-mock{next(_IDS):06d}", filename or "upload", purpose, content, int(time.time()))
        with self._lock:
            self._files[found.id] = found
        return found

    def _file(self, file_id: str) -> _File:
        with self._lock:
            found = self._files.get(file_id)
        if found is None:
            raise ApiError(404, "invalid_request_error", f"No such File object: {file_id}")
        return found

    def _content(self, found: _File) -> bytes:
        """A file's bytes as served: an output file cut at a line break, an input file refused, as set."""
        if found.purpose == "batch" and self.hide_batch_inputs:
            raise ApiError(400, "invalid_request_error", f"Not allowed to download files of purpose: {found.purpose}")
        if found.purpose != "batch_output":
            return found.content
        return self._served_output(found.id, found.content)

    def _file_json(self, f: _File) -> dict[str, Any]:
        hidden = f.purpose == "batch" and self.hide_batch_inputs  # nor keeps the name it was given
        return {"id": f.id, "object": "file", "bytes": len(f.content), "created_at": f.created_at,
                "filename": "upload.jsonl" if hidden else f.filename, "purpose": f.purpose, "status": "processed"}

    # ------------------------------------------------------------------ batches

    def _create_openai_batch(self, body: Any) -> _OpenAIBatch:
        if not isinstance(body, Mapping):
            raise ApiError(400, "invalid_request_error", "a JSON object body is required")
        source = self._file(str(body.get("input_file_id")))
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            raise ApiError(400, "invalid_request_error",
                           "endpoint must be /v1/chat/completions and completion_window 24h")
        lines = [line for line in source.content.splitlines() if line.strip()]
        ids: list[str] = []
        for number, line in enumerate(lines, start=1):
            try:
                item = json.loads(line)
            except ValueError:
                raise ApiError(400, "invalid_request_error", f"input file line {number} is not JSON") from None
            if not isinstance(item, dict) or not isinstance(item.get("custom_id"), str):
                raise ApiError(400, "invalid_request_error", f"input file line {number} has no custom_id")
            ids.append(item["custom_id"])
        if not ids or len(set(ids)) != len(ids):
            raise ApiError(400, "invalid_request_error", "the input file needs requests with unique custom_ids")
        metadata = body.get("metadata")
        batch = _OpenAIBatch(
            id=f"batch_mock{next(_IDS):06d}", input_file_id=source.id, endpoint=str(body["endpoint"]),
            metadata=dict(metadata) if isinstance(metadata, Mapping) and not self.drop_metadata else None,
            created_at=int(time.time()),
            ready_at=time.monotonic() + self.batch_delay, total=len(ids),
        )
        batch.counts["total"] = len(ids)
        with self._lock:
            self._openai_batches[batch.id] = batch
        return batch

    def _openai_batch(self, batch_id: str) -> _OpenAIBatch:
        with self._lock:
            batch = self._openai_batches.get(batch_id)
        if batch is None:
            raise ApiError(404, "invalid_request_error", f"No such Batch object: {batch_id}")
        if batch.status in ("in_progress", "cancelling") and time.monotonic() >= batch.ready_at:
            self._finish_openai_batch(batch)
        return batch

    def _finish_openai_batch(self, batch: _OpenAIBatch) -> None:
        source = self._file(batch.input_file_id)
        out: list[str] = []
        errors: list[str] = []
        for line in source.content.splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            custom_id = item["custom_id"]
            if batch.status == "cancelling":
                errors.append(json.dumps({"id": f"req_{custom_id}", "custom_id": custom_id, "response": None,
                                          "error": {"code": "batch_cancelled", "message": "batch cancelled"}}))
                continue
            status, result = self._batch_line_result(item.get("body"))
            row = {"id": f"req_{custom_id}", "custom_id": custom_id, "error": None,
                   "response": {"status_code": status, "request_id": f"req_{custom_id}", "body": result}}
            if status == 0:
                row = {"id": f"req_{custom_id}", "custom_id": custom_id, "response": None,
                       "error": {"code": "batch_expired", "message": "not processed within the completion window"}}
            (out if status == 200 else errors).append(json.dumps(row))
        with self._lock:
            if batch.status not in ("in_progress", "cancelling"):
                return
            if out:
                batch.output_file_id = self._store_file("batch_output", out)
            if errors:
                batch.error_file_id = self._store_file("batch_error", errors)
            batch.counts.update(completed=len(out), failed=len(errors))
            batch.status = "cancelled" if batch.status == "cancelling" else "completed"
            moment = int(time.time())
            if batch.status == "cancelled":
                batch.cancelled_at = moment
            else:
                batch.completed_at = moment

    def _store_file(self, purpose: str, lines: list[str]) -> str:
        """Keep a batch's output or error file (called with the lock held)."""
        made = _File(f"file-mock{next(_IDS):06d}", f"{purpose}.jsonl", purpose,
                     "".join(line + "\n" for line in lines).encode(), int(time.time()))
        self._files[made.id] = made
        return made.id

    def _batch_line_result(self, body: Any) -> tuple[int, dict[str, Any]]:
        """``(HTTP status, body)`` of one batch request; status 0: it expired."""
        raw = json.dumps(body, sort_keys=True).encode()
        kind = self.faults.draw("batches", raw, 0)
        if kind is not None:
            self._bump(f"fault:{kind}")
        if kind == "timeout":
            return 0, {}
        if kind in ("429", "529", "500"):
            message = {"429": "rate limit exceeded", "529": "overloaded", "500": "server error"}[kind]
            return int(kind), {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
        try:
            return 200, self._completion(body, malformed=kind == "malformed")
        except ApiError as err:
            return err.status, openai_error_body(err)

    def _cancel_openai_batch(self, batch_id: str) -> _OpenAIBatch:
        batch = self._openai_batch(batch_id)
        with self._lock:
            if batch.status == "in_progress":
                batch.status = "cancelling"
        return batch

    def _openai_batch_page(self, query: Mapping[str, list[str]]) -> dict[str, Any]:
        try:
            limit = int((query.get("limit") or ["20"])[0])
        except ValueError:
            limit = 0
        if not 1 <= limit <= 100:
            raise ApiError(400, "invalid_request_error", "limit: must be between 1 and 100")
        with self._lock:
            ids = list(self._openai_batches)
        batches = [self._openai_batch(i) for i in reversed(ids)]
        afters = query.get("after")
        if afters:
            after = afters[0]
            order = [b.id for b in batches]
            batches = batches[order.index(after) + 1:] if after in order else []
        page = batches[:limit]
        data = [self._batch_json(b) for b in page]
        return {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None, "has_more": len(batches) > limit}

    def _batch_json(self, b: _OpenAIBatch) -> dict[str, Any]:
        return {
            "id": b.id, "object": "batch", "endpoint": b.endpoint, "errors": None,
            "input_file_id": b.input_file_id, "completion_window": "24h", "status": b.status,
            "output_file_id": b.output_file_id, "error_file_id": b.error_file_id,
            "created_at": b.created_at, "in_progress_at": b.created_at, "expires_at": b.created_at + 86400,
            "completed_at": b.completed_at, "cancelled_at": b.cancelled_at,
            "request_counts": dict(b.counts), "metadata": b.metadata,
        }


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
    return ""


def chat_prompt_tokens(body: Mapping[str, Any]) -> int:
    """A Chat Completions request's prompt tokens (estimated, as the Messages endpoint's)."""
    return sum(approx_tokens(_text(m.get("content"))) for m in body.get("messages") or [] if isinstance(m, Mapping))

