r"""An OpenAI-compatible Files + Batch API server, written from OpenAI's API reference, not judgelab's mock.

judgelab's own mock (:mod:`judgelab.calibration.mockapi`) and its OpenAI judge were written by the same
hands; a misreading of the API shared by both would pass every test. This program is written
from the API reference alone, as a second opinion, and run as its own process::

    python -m tests.reliability.openai_batch_server --batch-delay 0.4 --fail-first 7

It prints ``openai batch server on http://HOST:PORT`` and serves until SIGTERM/SIGINT, then
prints one line ``stats {json}`` (what was billed). What it serves, as the reference says:

``POST /v1/files``                multipart form (``purpose``, ``file``): a ``file`` object
``GET /v1/files/{id}``            the ``file`` object
``GET /v1/files/{id}/content``    the file's bytes (input, output or error JSONL)
``POST /v1/batches``              ``input_file_id``, ``endpoint``, ``completion_window``,
                                  ``metadata`` (at most 16 string pairs): a ``batch`` in ``validating``
``GET /v1/batches/{id}``          the ``batch``: ``validating`` -> ``in_progress`` -> ``finalizing``
                                  -> ``completed`` as ``--batch-delay`` passes, ``request_counts``
                                  growing; completed, it names an ``output_file_id`` (lines with a
                                  ``response`` of status 200 and a chat completion ``body``) and,
                                  when some requests failed, an ``error_file_id`` (the same line
                                  shape, ``response.status_code`` 500 and an ``error`` body)
``GET /v1/batches``               newest first, ``limit`` (1..100, default 20) and ``after`` (a
                                  batch id): ``{"object": "list", "data", "first_id", "last_id", "has_more"}``
``POST /v1/batches/{id}/cancel``  ``cancelling``, then ``cancelled`` with the lines done so far

Errors are ``{"error": {"message", "type", "param", "code"}}``. A malformed input file fails
the batch (``status: failed``, ``errors.data``), as the reference describes. ``--fail-first N``
fails about one request in N in the *first* batch that holds it (its line goes to the error
file; a later batch with the same body succeeds), as the transient per-request failures the
error file exists for. A chat completion's verdict is a hash of its messages, so every run of
the same request gets the same verdict, whichever batch carries it. File ids are sequential
(``file-`` and 24 digits), so a test can name one file for a targeted fault.

Two quirks met in the wild, on request: ``--drop-metadata`` keeps no batch ``metadata`` (some
OpenAI-compatible servers), and ``--short-output N`` serves an output file without its last N
lines (cut at a line break: whole JSON lines, fewer of them) on its first ``--short-output-reads``
downloads.

The ledger of what is billed (``stats``): ``uploads``, ``creates``, ``requests_billed``
(requests in the batches created: the API bills each request a batch runs), ``requests_failed``.
"""

from __future__ import annotations

import argparse
import email.parser
import email.policy
import hashlib
import itertools
import json
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

_STEPS = ("validating", "in_progress", "finalizing")


@dataclass
class Batch:
    """One batch and what it holds."""

    id: str
    input_file_id: str
    endpoint: str
    window: str
    metadata: dict[str, str]
    created_at: int
    started: float
    lines: list[dict[str, Any]]
    errors: list[dict[str, Any]] | None = None
    cancelled_at: float | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    finished: dict[str, Any] = field(default_factory=dict)


class State:
    """Files, batches and the billing ledger (one lock: requests come on many threads)."""

    def __init__(self, delay: float, fail_first: int, holds: dict[str, float] | None = None, *,
                 drop_metadata: bool = False, short_output: int = 0, short_output_reads: int = 1) -> None:
        self.drop_metadata = drop_metadata
        self.short_output = short_output
        self.short_output_reads = short_output_reads
        self.output_reads: dict[str, int] = {}
        self.delay = delay
        self.fail_first = fail_first
        self.holds = dict(holds or {})
        self.lock = threading.Lock()
        self.files: dict[str, dict[str, Any]] = {}
        self.contents: dict[str, bytes] = {}
        self.batches: dict[str, Batch] = {}
        self.order: list[str] = []  # creation order
        self.seen_bodies: set[str] = set()
        self.ids = itertools.count(1)
        self.stats = {"uploads": 0, "creates": 0, "requests_billed": 0, "requests_failed": 0}

    def new_file(self, name: str, purpose: str, content: bytes) -> dict[str, Any]:
        file_id = f"file-{next(self.ids):024d}"
        obj = {"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
               "filename": name, "purpose": purpose, "status": "processed", "status_details": None}
        self.files[file_id], self.contents[file_id] = obj, content
        return obj

    def served(self, file_id: str) -> bytes:
        """A file's content as served: an output file cut at a line break on its first reads, if asked."""
        content = self.contents[file_id]
        if not self.short_output or not self.files[file_id]["filename"].endswith("_output.jsonl"):
            return content
        reads = self.output_reads[file_id] = self.output_reads.get(file_id, 0) + 1
        if reads > self.short_output_reads:
            return content
        lines = content.splitlines(keepends=True)
        return b"".join(lines[: max(len(lines) - self.short_output, 0)])

    def view(self, batch: Batch) -> dict[str, Any]:
        """The batch object as of now (advancing it through its statuses as time passes)."""
        elapsed = time.monotonic() - batch.started
        total = len(batch.lines)
        if batch.errors is not None:
            status = "failed"
        elif batch.cancelled_at is not None:
            status = "cancelled" if time.monotonic() - batch.cancelled_at > self.delay / 4 else "cancelling"
        elif elapsed < self.delay / 4:
            status = "validating"
        elif elapsed < self.delay * 3 / 4:
            status = "in_progress"
        elif elapsed < self.delay:
            status = "finalizing"
        else:
            status = "completed"
        if status in ("finalizing", "completed", "cancelled") and batch.output_file_id is None:
            self._finish(batch)
        ended = status in ("completed", "cancelled")  # the files are named once the batch has ended
        done = total if status in ("finalizing", "completed") else (
            0 if status in ("validating", "failed") else min(total, int(total * elapsed / self.delay)))
        failed = batch.finished.get("failed", 0) if status in ("finalizing", "completed", "cancelled") else 0
        stamp = int(time.time())
        return {
            "id": batch.id, "object": "batch", "endpoint": batch.endpoint,
            "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
            "input_file_id": batch.input_file_id, "completion_window": batch.window, "status": status,
            "output_file_id": batch.output_file_id if ended else None,
            "error_file_id": batch.error_file_id if ended else None,
            "created_at": batch.created_at,
            "in_progress_at": batch.created_at if status not in ("validating", "failed") else None,
            "expires_at": batch.created_at + 86400,
            "finalizing_at": stamp if status in ("finalizing", "completed") else None,
            "completed_at": stamp if status == "completed" else None,
            "failed_at": stamp if status == "failed" else None, "expired_at": None,
            "cancelling_at": stamp if batch.cancelled_at is not None else None,
            "cancelled_at": stamp if status == "cancelled" else None,
            "request_counts": {"total": total if status != "failed" else 0,
                               "completed": (done - failed) if status != "failed" else 0,
                               "failed": failed},
            "metadata": None if self.drop_metadata else batch.metadata,
        }

    def _finish(self, batch: Batch) -> None:
        """Run the batch's requests: the output and the error file."""
        out, err = [], []
        for n, line in enumerate(batch.lines):
            body = line["body"]
            key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
            first = key not in self.seen_bodies
            self.seen_bodies.add(key)
            entry: dict[str, Any] = {"id": f"batch_req_{batch.id[6:]}_{n}", "custom_id": line["custom_id"]}
            if self.fail_first and first and int(key, 16) % self.fail_first == 0:
                entry["response"] = {"status_code": 500, "request_id": f"req_{key[:16]}",
                                     "body": {"error": {"message": "The server had an error processing your "
                                                        "request.", "type": "server_error", "param": None,
                                                        "code": None}}}
                entry["error"] = None
                err.append(entry)
                continue
            entry["response"] = {"status_code": 200, "request_id": f"req_{key[:16]}", "body": completion(body, key)}
            entry["error"] = None
            out.append(entry)
        self.stats["requests_failed"] += len(err)
        batch.finished = {"failed": len(err)}
        jsonl = "".join(json.dumps(e) + "\n" for e in out).encode()
        batch.output_file_id = self.new_file(f"{batch.id}_output.jsonl", "batch_output", jsonl)["id"]
        if err:
            jsonl = "".join(json.dumps(e) + "\n" for e in err).encode()
            batch.error_file_id = self.new_file(f"{batch.id}_error.jsonl", "batch_output", jsonl)["id"]


def completion(body: dict[str, Any], key: str) -> dict[str, Any]:
    """A chat completion for a request: the verdict line the user message asks for, drawn from its hash."""
    user = next((m.get("content", "") for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    text = str(user)
    pick = int(key[:8], 16)
    if "ACCEPT" in text and "REJECT" in text:
        verdict = ("ACCEPT", "REJECT")[pick % 2]
    elif "A much better" in text:
        verdict = ("A much better", "A better", "tie", "B better", "B much better")[pick % 5]
    elif "0 (worst) to 100" in text:
        verdict = str(pick % 101)
    elif "1 (worst) to 5" in text:
        verdict = str(1 + pick % 5)
    else:
        verdict = "OK"
    prompt = sum(len(str(m.get("content", ""))) for m in body.get("messages", [])) // 4
    return {
        "id": f"chatcmpl-{key[:24]}", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "unknown"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": f"Checked.\nVERDICT: {verdict}",
                                             "refusal": None}, "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 6, "total_tokens": prompt + 6,
                  "prompt_tokens_details": {"cached_tokens": 0}},
    }


class Handler(BaseHTTPRequestHandler):
    """The routes of the reference."""

    state: State
    protocol_version = "HTTP/1.1"
    _reply: tuple[int, str, bytes] = (500, "text/plain", b"")

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        """Retrieve and list."""
        self._route("GET")

    def do_POST(self) -> None:
        """Upload, create, cancel."""
        self._route("POST")

    def _route(self, method: str) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        split = urlsplit(self.path)
        path, query = split.path, {k: v[-1] for k, v in parse_qs(split.query).items()}
        if not str(self.headers.get("authorization", "")).startswith("Bearer "):
            self._error(401, "invalid_request_error", "You didn't provide an API key.")
            self._flush()
            return
        st = self.state
        route = _route_name(method, path)
        with st.lock:
            hold = st.holds.pop(route, 0.0) if route else 0.0
            self.route(method, path, raw, query)
        if route:
            # Acted on, reply not yet sent: a test kills its client at this moment.
            print(f"event {route} {path}", flush=True)
        if hold:
            time.sleep(hold)
        self._flush()

    def route(self, method: str, path: str, raw: bytes, query: dict[str, str]) -> None:
        """Act on the request and prepare its reply (sent by :meth:`_flush`)."""
        st = self.state
        if method == "POST" and path == "/v1/files":
            self._upload(raw)
        elif method == "POST" and path == "/v1/batches":
            self._create(raw)
        elif method == "GET" and path == "/v1/batches":
            self._list(query)
        elif (m := re.fullmatch(r"/v1/batches/([\w-]+)(/cancel)?", path)) and (method == "GET") != bool(m[2]):
            batch = st.batches.get(m[1])
            if batch is None:
                self._error(404, "invalid_request_error", f"No batch found with id '{m[1]}'.")
                return
            if m[2] and batch.cancelled_at is None:
                batch.cancelled_at = time.monotonic()
            self._json(st.view(batch))
        elif method == "GET" and (m := re.fullmatch(r"/v1/files/([\w-]+)(/content)?", path)):
            if m[1] not in st.files:
                self._error(404, "invalid_request_error", f"No such File object: {m[1]}")
            elif m[2]:
                self._send(200, "application/octet-stream", st.served(m[1]))
            else:
                self._json(st.files[m[1]])
        else:
            self._error(404, "invalid_request_error", f"Invalid URL ({method} {path})")

    def _upload(self, raw: bytes) -> None:
        ctype = self.headers.get("content-type", "")
        if not ctype.startswith("multipart/form-data"):
            self._error(400, "invalid_request_error", "Uploads must be multipart/form-data.")
            return
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {ctype}\r\n\r\n".encode() + raw)
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            fields[str(name)] = (part.get_filename(), payload if isinstance(payload, bytes) else b"")
        purpose = fields.get("purpose", (None, b""))[1].decode()
        if "file" not in fields or purpose not in ("batch", "fine-tune", "assistants", "vision", "user_data", "evals"):
            self._error(400, "invalid_request_error", "'file' and a valid 'purpose' are required.")
            return
        self.state.stats["uploads"] += 1
        name, content = fields["file"]
        self._json(self.state.new_file(name or "upload.jsonl", purpose, content))

    def _create(self, raw: bytes) -> None:
        st = self.state
        try:
            body = json.loads(raw)
        except ValueError:
            self._error(400, "invalid_request_error", "We could not parse the JSON body of your request.")
            return
        file_id, endpoint = body.get("input_file_id"), body.get("endpoint")
        metadata = body.get("metadata") or {}
        if file_id not in st.files or st.files[file_id]["purpose"] != "batch":
            self._error(400, "invalid_request_error", f"Invalid 'input_file_id': '{file_id}'.")
            return
        if endpoint not in ("/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/completions") or (
            body.get("completion_window") != "24h"):
            self._error(400, "invalid_request_error", "Invalid 'endpoint' or 'completion_window'.")
            return
        if len(metadata) > 16 or any(not isinstance(v, str) or len(v) > 512 or len(k) > 64
                                     for k, v in metadata.items()):
            self._error(400, "invalid_request_error", "Invalid 'metadata': at most 16 string pairs.")
            return
        lines, errors = [], []
        for n, text in enumerate(st.contents[file_id].decode().splitlines(), 1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
                assert line["url"] == endpoint and line["method"] == "POST" and isinstance(line["body"], dict)
                assert isinstance(line["custom_id"], str)
            except (ValueError, KeyError, AssertionError, TypeError):
                errors.append({"code": "invalid_request", "message": "Invalid request line.", "param": None,
                               "line": n})
                continue
            lines.append(line)
        if len({x["custom_id"] for x in lines}) != len(lines):
            errors.append({"code": "duplicate_custom_id", "message": "custom_id values must be unique.",
                           "param": None, "line": None})
        batch_id = f"batch_{hashlib.sha256(b'%d%f' % (len(st.order), time.time())).hexdigest()[:24]}"
        batch = Batch(batch_id, file_id, endpoint, body["completion_window"], dict(metadata), int(time.time()),
                      time.monotonic(), [] if errors else lines, errors or None)
        st.batches[batch_id] = batch
        st.order.append(batch_id)
        st.stats["creates"] += 1
        st.stats["requests_billed"] += len(batch.lines)
        self._json(st.view(batch))

    def _list(self, query: dict[str, str]) -> None:
        st = self.state
        try:
            limit = int(query.get("limit", "20"))
        except ValueError:
            limit = 0
        if not 1 <= limit <= 100:
            self._error(400, "invalid_request_error", "'limit' must be between 1 and 100.")
            return
        newest = list(reversed(st.order))
        after = query.get("after")
        if after is not None:
            newest = newest[newest.index(after) + 1:] if after in newest else []
        page = [st.view(st.batches[b]) for b in newest[:limit]]
        self._json({"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                    "last_id": page[-1]["id"] if page else None, "has_more": len(newest) > limit})

    def _json(self, payload: Any) -> None:
        self._send(200, "application/json", json.dumps(payload).encode())

    def _error(self, status: int, kind: str, message: str) -> None:
        body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
        self._send(status, "application/json", json.dumps(body).encode())

    def _send(self, status: int, ctype: str, body: bytes) -> None:
        self._reply = (status, ctype, body)

    def _flush(self) -> None:
        status, ctype, body = self._reply
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.send_header("x-request-id", f"req_{hashlib.sha256(body).hexdigest()[:16]}")
        self.end_headers()
        self.wfile.write(body)


def _route_name(method: str, path: str) -> str | None:
    """``upload``, ``create``, ``list``, ``retrieve``, ``cancel`` or ``content``: what ``--hold`` and events name."""
    if path == "/v1/files":
        return "upload" if method == "POST" else None
    if path == "/v1/batches":
        return "create" if method == "POST" else "list"
    if path.startswith("/v1/batches/"):
        return "cancel" if path.endswith("/cancel") else "retrieve"
    if path.startswith("/v1/files/") and path.endswith("/content"):
        return "content"
    return None


def main(argv: list[str] | None = None) -> None:
    """Serve until SIGTERM or SIGINT, then print the billing ledger."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--batch-delay", type=float, default=0.4, help="Seconds from create to completed.")
    parser.add_argument("--fail-first", type=int, default=0,
                        help="Fail about 1 in N requests in the first batch that holds them (0: none).")
    parser.add_argument("--hold", action="append", default=[], metavar="ROUTE=SECONDS",
                        help="Hold the first reply of ROUTE (upload, create, list, retrieve, content) "
                        "after acting on it.")
    parser.add_argument("--drop-metadata", action="store_true", help="Keep no batch metadata.")
    parser.add_argument("--short-output", type=int, default=0, metavar="N",
                        help="Serve output files without their last N lines (cut at a line break).")
    parser.add_argument("--short-output-reads", type=int, default=1, metavar="K",
                        help="Cut only the first K downloads of each output file.")
    args = parser.parse_args(argv)
    holds = {k: float(v) for k, v in (h.split("=", 1) for h in args.hold)}
    state = State(args.batch_delay, args.fail_first, holds, drop_metadata=args.drop_metadata,
                  short_output=args.short_output, short_output_reads=args.short_output_reads)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), type("_H", (Handler,), {"state": state}))
    server.daemon_threads = True

    def stop(*_: object) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"openai batch server on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever(poll_interval=0.05)
    server.server_close()
    with state.lock:
        print("stats " + json.dumps(state.stats), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
