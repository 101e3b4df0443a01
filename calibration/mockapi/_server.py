"""The mock's server: :class:`MockAnthropic` (lifecycle, routing) and the HTTP handler in front of it.

The request handling itself is inherited: Messages from
:class:`~judgelab.calibration.mockapi._messages.MessagesAPI`, Message Batches from
:class:`~judgelab.calibration.mockapi._batches.BatchesAPI`.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import Counter, deque
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from judgelab.calibration.mockapi._batches import Batch, BatchesAPI, batch_json, batch_list_json
from judgelab.calibration.mockapi._faults import FaultPlan, Limiter, RateLimit
from judgelab.calibration.mockapi._messages import ApiError, Responder, json_reply
from judgelab.calibration.mockapi._openai import OpenAIAPI, is_openai_path, openai_error_body

__all__ = ["MockAnthropic", "ReceivedRequest"]


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


class MockAnthropic(OpenAIAPI, BatchesAPI):
    """A local Anthropic- and OpenAI-compatible server on ``127.0.0.1`` (port 0 picks a free port).

    It serves the Messages API and, for the OpenAI-compatible judge, Chat Completions, Files
    and Batches (:mod:`judgelab.calibration.mockapi._openai`; :attr:`openai_base_url` is that SDK's
    ``base_url``), with the same latency, faults and rate limits.

    Use it as a context manager; :attr:`base_url` is the URL to give the SDK::

        with MockAnthropic(latency=0.05, faults=FaultPlan(rate=0.2, retry_after=0.05)) as mock:
            client = anthropic.AsyncAnthropic(base_url=mock.base_url, api_key="test")

    Args:
        responder: Reply text for a request body; default: a seed-0
            :class:`~judgelab.calibration.judges.FakeJudge`'s :meth:`respond`.
        latency: Seconds every ``POST /v1/messages`` waits before answering.
        faults: The :class:`FaultPlan` (default: none).
        batch_delay: Seconds a batch stays ``in_progress``.
        min_cache_tokens: A cache breakpoint below this many prefix tokens is silently ignored,
            as the real API does below a model's minimum. ``None`` (default): the model's
            minimum from the price table (:meth:`judgelab.calibration.pricing.PriceTable.cache_applies`;
            a model the table has no minimum for caches any size); ``0``: always cache.
        rate_limit: The requests- and tokens-per-minute limits to enforce (default: none).
        host: Interface to bind.
        port: Port to bind (0 = any free port).
        max_received: How many requests :attr:`received` keeps (a long dry run must not grow
            without bound).
        api_keys: The keys it accepts (default: any non-empty key); any other is answered 401.
        drop_metadata: OpenAI batches keep no ``metadata`` (as some OpenAI-compatible servers).
        short_output: Each download of a batch's results (a Message Batch's results, an OpenAI
            batch's output file) leaves out its last this many lines (whole JSON lines: a file
            cut at a line break).
        short_output_reads: Only the first this many downloads of each are cut
            (``None``: every one).
        cut_creates: The next this many OpenAI batch creates are carried out, their reply cut
            short on the way.
        hide_batch_inputs: Refuse (400) to serve the content of batch input files, and keep
            no name for them.

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
        api_keys: Collection[str] | None = None,
        drop_metadata: bool = False,
        short_output: int = 0,
        short_output_reads: int | None = None,
        cut_creates: int = 0,
        hide_batch_inputs: bool = False,
    ) -> None:
        """Configure the server; :meth:`start` binds the port."""
        if responder is None:
            from judgelab.calibration.judges._fake import FakeJudge

            responder = FakeJudge(seed=0).respond
        self.responder = responder
        self.api_keys = None if api_keys is None else frozenset(api_keys)
        self.latency = latency
        self.faults = faults or FaultPlan()
        self.batch_delay = batch_delay
        self.drop_metadata = drop_metadata
        self.short_output = short_output
        self.short_output_reads = short_output_reads
        self.cut_creates = cut_creates
        self.hide_batch_inputs = hide_batch_inputs
        self._output_reads = {}
        self.min_cache_tokens = min_cache_tokens
        self.rate_limit = rate_limit or RateLimit()
        self._limiter = Limiter(self.rate_limit)
        self.counters: Counter[str] = Counter()
        self.received: deque[ReceivedRequest] = deque(maxlen=max_received)
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._attempts: Counter[tuple[str, str]] = Counter()  # (endpoint, body digest) -> attempts
        self._cache: set[str] = set()
        self._batches: dict[str, Batch] = {}
        self._files = {}
        self._openai_batches = {}
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

    @property
    def openai_base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: pass it to the ``openai`` SDK as ``base_url``."""
        return f"{self.base_url}/v1"

    @property
    def batch_requests_billed(self) -> int:
        """Requests in every batch created (both APIs): what the provider bills, collected or not."""
        with self._lock:
            return (sum(b.total for b in self._openai_batches.values())
                    + sum(len(b.requests) for b in self._batches.values()))

    def count(self, key: str) -> int:
        """A counter's value (0 if never incremented)."""
        with self._lock:
            return self.counters[key]

    # ------------------------------------------------------------------ routing

    def handle(
        self, method: str, path: str, raw: bytes, headers: Mapping[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        """Answer one HTTP request: ``(status, headers, body)`` (``path`` may carry a query)."""
        path, _, query = path.partition("?")
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
        route = re.sub(r"/(?:msgbatch_|batch_mock|file-mock)[A-Za-z0-9_]+", "/{id}", path)
        self._bump(f"{method} {route}")
        try:
            if not headers.get("x-api-key") and not headers.get("authorization"):
                raise ApiError(401, "authentication_error",
                               "an API key is required (x-api-key header or Authorization: Bearer)")
            given = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
            if self.api_keys is not None and given not in self.api_keys:
                raise ApiError(401, "authentication_error", "invalid x-api-key")
            multipart = headers.get("content-type", "").startswith("multipart/")
            if raw and body is None and not multipart:
                raise ApiError(400, "invalid_request_error", "request body is not valid JSON")
            answered = self._openai_route(method, path, raw, body, headers, parse_qs(query))
            if answered is not None:
                return answered
            return self._route(method, path, raw, body, parse_qs(query))
        except ApiError as err:
            payload = (openai_error_body(err) if is_openai_path(path)
                       else {"type": "error", "error": {"type": err.kind, "message": err.message}})
            return err.status, err.headers, json.dumps(payload).encode()

    def _route(
        self, method: str, path: str, raw: bytes, body: Any, query: Mapping[str, list[str]]
    ) -> tuple[int, dict[str, str], bytes]:
        if method == "POST" and path == "/v1/messages":
            return self._messages_endpoint(raw, body)
        if method == "POST" and path == "/v1/messages/count_tokens":
            return self._count_tokens_endpoint(raw, body)
        if path == "/v1/messages/batches":
            if method == "POST":
                return json_reply(batch_json(self._create_batch(body), self.base_url))
            if method == "GET":
                page, more = self._batch_page(query)
                return json_reply(batch_list_json(page, self.base_url, has_more=more))
        m = re.fullmatch(r"/v1/messages/batches/(?P<id>[^/]+)(?P<rest>/results|/cancel)?", path)
        if m:
            batch_id, rest = m.group("id"), m.group("rest")
            if method == "GET" and rest is None:
                return json_reply(batch_json(self._get_batch(batch_id), self.base_url))
            if method == "GET" and rest == "/results":
                return 200, {"content-type": "application/binary"}, self._results(batch_id)
            if method == "POST" and rest == "/cancel":
                return json_reply(batch_json(self._cancel(batch_id), self.base_url))
            if method == "DELETE" and rest is None:
                return json_reply(self._delete(batch_id))
        raise ApiError(404, "not_found_error", f"no route for {method} {path}")


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
        status, extra, payload = self.mock.handle(method, self.path, raw, headers)
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
