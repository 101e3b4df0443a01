r"""A fault-injecting HTTP proxy between the ``anthropic`` SDK and an Anthropic-compatible server.

Run it as its own program, in front of ``judgelab mock-api`` (or any upstream)::

    python -m tests.reliability.fault_proxy --upstream http://127.0.0.1:8787 --rate 0.2 \
        --log attempts.jsonl

It prints ``fault proxy on http://HOST:PORT -> UPSTREAM`` and serves until SIGINT/SIGTERM. By
default only ``POST /v1/messages`` attempts are faulted and everything else passes through;
``--endpoints`` names others (``count_tokens``, ``batches``: create, retrieve, list, cancel and
the results file) or ``all``; ``--only-path REGEX`` narrows them to matching paths (one file). Each attempt fails
with probability ``--rate``, the kind drawn uniformly from ``--kinds`` by a hash of the seed, the
body and how many times that body was seen (so a retry gets a fresh draw and a run is
reproducible however requests interleave):

``429``     answered here with ``rate_limit_error`` and ``retry-after`` (upstream never sees it)
``529``     answered here with ``overloaded_error`` and ``retry-after``
``500``     answered here with ``api_error``
``stall``   forwarded (upstream answers and bills it), then the reply is held past the client's
            timeout (``--hang``) and the connection closed without a word
``reset``   forwarded, then the connection is reset (TCP RST) instead of the reply
``cut``     forwarded, then a 200 whose JSON body is cut short (``content-length`` matching the
            cut, so only the JSON is broken, not the HTTP framing)

Two more kinds, for tests of single faults: ``empty`` (forwarded, then a 200 with an empty body)
and ``html`` (forwarded, then a 200 ``text/html`` page).

Every attempt is logged as one JSON line (``--log``): ``endpoint``, ``method``, ``body`` (a hash
of the method, path and request body),
``fault`` (or ``null``), ``forwarded``, ``status`` (the upstream's), ``t_recv``/``t_done``
(wall-clock seconds: arrival, and when the reply was fully written to the client, ``null`` if
it never was).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import http.client
import json
import random
import re
import signal
import socket
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

FAULTS = ("429", "529", "500", "stall", "reset", "cut")
"""The six faults a run meets in the wild."""

EXTRA_FAULTS = ("empty", "html")
"""Single-fault kinds for targeted tests."""

FORWARDED = frozenset({"stall", "reset", "cut", "empty", "html"})
"""Faults that reach the upstream (which answers and bills them) before the reply is lost."""

ENDPOINTS = ("messages", "count_tokens", "batches")
"""What ``--endpoints`` can name."""

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class Proxy:
    """The proxy's settings, its draw counter and its attempt log."""

    def __init__(
        self, upstream: str, *, rate: float, kinds: tuple[str, ...], seed: int, hang: float,
        retry_after: float, log: Path | None, endpoints: tuple[str, ...] = ("messages",),
        first_only: bool = False, only_path: str | None = None,
    ) -> None:
        """Keep the settings; open the log."""
        split = urlsplit(upstream)
        self.host = split.hostname or "127.0.0.1"
        self.port = split.port or 80
        self.rate = rate
        self.kinds = kinds
        self.seed = seed
        self.hang = hang
        self.retry_after = retry_after
        self.endpoints = endpoints
        self.first_only = first_only
        self.only_path = re.compile(only_path) if only_path else None
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.log = log.open("a", encoding="utf-8") if log is not None else None
        self.stopping = threading.Event()

    def draw(self, body: bytes) -> tuple[str, str | None]:
        """``(body hash, fault or None)`` for this attempt at this body (method and path included)."""
        digest = hashlib.sha256(body).hexdigest()[:16]
        with self.lock:
            attempt = self.seen[digest]
            self.seen[digest] += 1
        rng = random.Random(hashlib.sha256(b"%d\0%d\0" % (self.seed, attempt) + body).digest())
        if self.first_only and attempt > 0:
            return digest, None
        if rng.random() >= self.rate:
            return digest, None
        return digest, self.kinds[rng.randrange(len(self.kinds))]

    def record(self, entry: dict[str, Any]) -> None:
        """Append one attempt to the log (flushed: the test reads it while we run)."""
        if self.log is None:
            return
        with self.lock:
            self.log.write(json.dumps(entry) + "\n")
            self.log.flush()

    def forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """Send the request upstream; its status, headers and body."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        try:
            conn.request(method, path, body=body or None, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.getheaders(), resp.read()
        finally:
            conn.close()


class Handler(BaseHTTPRequestHandler):
    """One client connection (keep-alive, as the SDK's pool expects)."""

    proxy: Proxy
    protocol_version = "HTTP/1.1"
    timeout = 60

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the attempt log says everything."""

    def do_GET(self) -> None:
        """Pass through."""
        self._serve("GET")

    def do_POST(self) -> None:
        """Fault or pass through."""
        self._serve("POST")

    def do_DELETE(self) -> None:
        """Pass through."""
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        path = self.path.split("?", 1)[0]
        endpoint = endpoint_of(method, path)
        entry: dict[str, Any] = {"t_recv": time.time(), "path": self.path, "method": method,
                                 "endpoint": endpoint, "fault": None, "forwarded": False,
                                 "status": None, "t_done": None}
        fault = None
        targeted = self.proxy.only_path is None or self.proxy.only_path.fullmatch(path) is not None
        if endpoint in self.proxy.endpoints and targeted:
            key = body if endpoint == "messages" else f"{method} {self.path}\0".encode() + _unbound(
                body, self.headers.get("content-type", ""))
            entry["body"], fault = self.proxy.draw(key)
        entry["fault"] = fault
        try:
            self._answer(method, headers, body, fault, entry)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True
        finally:
            self.proxy.record(entry)

    def _answer(
        self, method: str, headers: dict[str, str], body: bytes, fault: str | None, entry: dict[str, Any]
    ) -> None:
        if fault in ("429", "529", "500"):
            kind = {"429": "rate_limit_error", "529": "overloaded_error", "500": "api_error"}[fault]
            extra = {} if fault == "500" else {"retry-after": f"{self.proxy.retry_after:g}"}
            payload = json.dumps({"type": "error", "error": {"type": kind, "message": f"injected {fault}"}})
            self._send(int(fault), [("content-type", "application/json"), *extra.items()], payload.encode(), entry)
            return
        status, up_headers, up_body = self.proxy.forward(method, self.path, headers, body)
        entry["forwarded"], entry["status"] = True, status
        kept = [(k, v) for k, v in up_headers if k.lower() not in _HOP_BY_HOP]
        if entry["endpoint"] == "batches":
            # A batch's results_url names the upstream; point it here, so the results file
            # comes through this proxy too (as through a forward proxy in the field).
            host, port = self.server.server_address[:2]
            up_body = up_body.replace(
                f"http://{self.proxy.host}:{self.proxy.port}/".encode(), f"http://{host}:{port}/".encode()
            )
        if fault == "stall":
            # Held past the client's timeout; the client has gone by the time this ends.
            self.proxy.stopping.wait(self.proxy.hang)
            self.close_connection = True
            return
        if fault == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.close()
            return
        if fault == "cut":
            up_body = up_body[: max(1, len(up_body) * random.Random(up_body).randint(10, 90) // 100)]
        elif fault == "empty":
            up_body = b""
        elif fault == "html":
            kept = [(k, v) for k, v in kept if k.lower() != "content-type"] + [("content-type", "text/html")]
            up_body = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
        self._send(status, kept, up_body, entry)

    def _send(self, status: int, headers: list[tuple[str, str]], body: bytes, entry: dict[str, Any]) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        entry["t_done"] = time.time()


class _Server(ThreadingHTTPServer):
    request_queue_size = 128
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client killed mid-request is what some tests do on purpose."""


@contextlib.contextmanager
def served_in_thread(proxy: Proxy) -> Iterator[str]:
    """Serve ``proxy`` from a thread of this process; yields its URL (tests that need no child program)."""
    server = _Server(("127.0.0.1", 0), type("_H", (Handler,), {"proxy": proxy}))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        proxy.stopping.set()
        server.shutdown()
        server.server_close()


def _unbound(body: bytes, content_type: str) -> bytes:
    """A multipart body (a file upload) without its boundary, which the SDK draws anew per attempt.

    So that a retried upload is the same request to :meth:`Proxy.draw` (seen once before).
    """
    marker = "boundary="
    if not content_type.startswith("multipart/") or marker not in content_type:
        return body
    boundary = content_type.split(marker, 1)[1].split(";", 1)[0].strip('"').encode()
    return body.replace(boundary, b"BOUNDARY") if boundary else body


def endpoint_of(method: str, path: str) -> str | None:
    """``messages`` (``POST /v1/messages``), ``count_tokens``, ``batches`` (any batch route) or ``None``.

    The OpenAI API's judging endpoint (``POST /v1/chat/completions``) counts as ``messages``, and
    its files and batches (input upload, create, retrieve, list, output file) as ``batches``.
    """
    if path in ("/v1/messages", "/v1/chat/completions"):
        return "messages" if method == "POST" else None
    if path.startswith(("/v1/files", "/v1/batches")):
        return "batches"
    if path == "/v1/messages/count_tokens":
        return "count_tokens"
    if path.startswith("/v1/messages/batches"):
        return "batches"
    return None


def read_log(path: Path) -> list[dict[str, Any]]:
    """The attempts a proxy logged (complete lines only)."""
    out: list[dict[str, Any]] = []
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


def main(argv: list[str] | None = None) -> None:
    """Serve until SIGINT or SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--upstream", required=True, help="Upstream base URL (http://host:port).")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--rate", type=float, default=0.2, help="Share of attempts faulted.")
    parser.add_argument("--kinds", default=",".join(FAULTS), help="Comma-separated fault kinds.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang", type=float, default=5.0, help="Seconds a stall holds the reply.")
    parser.add_argument("--retry-after", type=float, default=0.05, help="retry-after of 429/529.")
    parser.add_argument("--log", type=Path, default=None, help="JSONL file of every attempt.")
    parser.add_argument("--first-attempt-only", action="store_true",
                        help="Fault only the first attempt at each request (a deterministic test of each endpoint).")
    parser.add_argument("--only-path", default=None,
                        help="Fault only requests whose path (no query) matches this regular expression.")
    parser.add_argument("--endpoints", default="messages",
                        help="Comma-separated endpoints to fault: messages, count_tokens, batches, or all.")
    args = parser.parse_args(argv)
    endpoints = ENDPOINTS if args.endpoints.strip() == "all" else tuple(
        e.strip() for e in args.endpoints.split(",") if e.strip())
    if not endpoints or any(e not in ENDPOINTS for e in endpoints):
        parser.error(f"unknown endpoints {args.endpoints!r}; pick from {ENDPOINTS} or all")
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    unknown = [k for k in kinds if k not in FAULTS + EXTRA_FAULTS]
    if unknown or not kinds:
        parser.error(f"unknown fault kinds {unknown}; pick from {FAULTS + EXTRA_FAULTS}")
    proxy = Proxy(args.upstream, rate=args.rate, kinds=kinds, seed=args.seed, hang=args.hang,
                  retry_after=args.retry_after, log=args.log, endpoints=endpoints,
                  first_only=args.first_attempt_only, only_path=args.only_path)
    server = _Server(("127.0.0.1", args.port), type("_H", (Handler,), {"proxy": proxy}))

    def stop(*_: object) -> None:
        proxy.stopping.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"fault proxy on http://127.0.0.1:{server.server_address[1]} -> {args.upstream}", flush=True)
    server.serve_forever(poll_interval=0.05)
    server.server_close()


if __name__ == "__main__":
    main(sys.argv[1:])
