"""OpenTelemetry GenAI spans in OTLP JSON files: conversations and agent runs as answers.

The file is what OpenTelemetry writes to disk: the Collector's file exporter, or Python's
``opentelemetry-exporter-otlp-json-file``, write JSON lines, each one export request
(``{"resourceSpans": [{"resource", "scopeSpans": [{"scope", "spans": [...]}]}]}``, and
``{"resourceLogs": ...}`` lines when logs go to the same file); one JSON document of that shape
is read too. The OTLP JSON encoding writes ids as hex (``traceId`` 32 digits, ``spanId`` 16),
64-bit integers as strings, and every attribute value in a wrapper (``{"stringValue": ...}``,
``intValue``, ``doubleValue``, ``boolValue``, ``arrayValue``, ``kvlistValue``, ``bytesValue``).

A span is a GenAI span by the semantic conventions: it has ``gen_ai.operation.name`` (``chat``,
``text_completion``, ``generate_content`` for a model call; ``invoke_agent``; ``execute_tool``)
or, from before that attribute, ``gen_ai.system``. A model call's messages are read in either
of the forms instrumentations write today:

- the current attributes: ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and
  ``gen_ai.output.messages``, JSON lists of ``{"role", "parts": [...]}`` with ``text``,
  ``tool_call`` (``id``, ``name``, ``arguments``) and ``tool_call_response`` (``id``,
  ``response``) parts; on the span, or on its ``gen_ai.client.inference.operation.details``
  event when content goes to events;
- the older per-message events ``gen_ai.system.message``, ``gen_ai.user.message``,
  ``gen_ai.assistant.message`` (``tool_calls``), ``gen_ai.tool.message`` (``id``) and
  ``gen_ai.choice`` (``message``, ``index``), as span events (fields in attributes) or as log
  records tied to the span (fields in the body).

One answer per agent run (an ``invoke_agent`` span not inside another): its model calls, in
order, make one conversation (each call's input continues the one before, and its output is
added). In a trace without an agent span, one answer per model call, leaving out a call whose
conversation a later call of the trace goes on with (an agent loop without an agent span); a
model-call span around another (two instrumentations, a framework's and the provider's) is
one call, read from the inner span. The
model is the response model (else the request model), the family the one judgelab reads from
a model name (:func:`judgelab.labeler.families.infer_family`), else the provider
(``gen_ai.provider.name``, ``gen_ai.system``). A call or run that failed (span status ERROR,
``error.type``), and one with no user message to be the prompt, are left out and said.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgelab.labeler._rows import Rows
from judgelab.labeler.adapters._common import Adapted, Adapter, as_id, digest
from judgelab.labeler.errors import InputError
from judgelab.labeler.families import infer_family
from judgelab.labeler.transcripts import TranscriptError, parse_messages

_WHAT = ('OTLP JSON: JSON lines, each an export request {"resourceSpans": [...]} as the OpenTelemetry '
         "Collector's file exporter or opentelemetry-exporter-otlp-json-file writes them")
_WRITE = ("export the traces with the Collector's file exporter or opentelemetry-exporter-otlp-json-file, and pass "
          "that file unchanged")
_CAPTURE = ("turn on message capture and run again: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only "
            "(older instrumentations: =true, with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental for "
            "the current attributes)")
_CALLS = ("chat", "text_completion", "generate_content")
_AGENT = "invoke_agent"
_TOOL = "execute_tool"
_DETAILS = "gen_ai.client.inference.operation.details"
_EVENTS = ("gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message",
           "gen_ai.choice")
_HEX = re.compile(r"[0-9a-fA-F]+")
# Roles some providers' instrumentations write, as the conventions name them (OpenAI's developer
# message is a system prompt; Gemini calls its own turns "model").
_ROLE_ALIASES = {"developer": "system", "model": "assistant"}


# -- reading the file -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Event:
    """A span event or a log record tied to a span: its name and fields (a record's body, else attributes)."""

    name: str
    fields: dict[str, Any]
    attrs: dict[str, Any]


@dataclass
class _Span:
    """One span as the file holds it, with where it is (``line``) for errors."""

    trace_id: str
    span_id: str
    parent: str | None
    name: str
    start: int
    attrs: dict[str, Any]
    line: int
    failed: bool = False
    events: list[_Event] = field(default_factory=list)

    @property
    def where(self) -> str:
        """``line N, span ID (name)``: how an error names the span."""
        return f"line {self.line}, span {self.span_id} ({self.name})"

    @property
    def operation(self) -> str | None:
        """The GenAI operation; ``chat`` for a span of the conventions before ``gen_ai.operation.name``."""
        op = self.attrs.get("gen_ai.operation.name")
        if isinstance(op, str) and op:
            return op
        return "chat" if "gen_ai.system" in self.attrs else None


def _fail(path: Path, problem: str, fix: str) -> InputError:
    return InputError(problem, file=str(path), fix=fix)


def _documents(path: Path) -> Iterator[tuple[int, Any]]:
    """Each JSON document of the file with its line: one document, or one per line."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise _fail(path, "no such file", "check the path.") from None
    except UnicodeDecodeError as exc:
        raise _fail(path, f"is not UTF-8 text ({exc.reason})", _WRITE + ".") from None
    if not text.strip():
        raise _fail(path, f"is empty; expected {_WHAT}", _WRITE + ".")
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        pass  # JSON lines: read one line at a time, so that an error names its line
    else:
        for doc in whole if isinstance(whole, list) else [whole]:  # one request, or an array of them
            yield 1, doc
        return
    for n, line in enumerate(text.split("\n"), start=1):  # only "\n" ends a JSON line (not U+2028, ...)
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except json.JSONDecodeError as exc:
            raise _fail(path, f"line {n} is not JSON ({exc.msg} at column {exc.colno})",
                        "pass the file as the exporter wrote it; a last line cut short (the process stopped while "
                        "writing) can be deleted.") from None


def _value(v: Any, where: str, path: Path) -> Any:
    """An OTLP ``AnyValue`` (``{"stringValue": ...}`` and the rest) as plain data."""
    if not isinstance(v, dict):
        raise _fail(path, f"{where}: an attribute value is {type(v).__name__}, not an OTLP AnyValue object",
                    "OTLP JSON wraps every value ({\"stringValue\": ...}); " + _WRITE + ".")
    if not v:
        return None
    kind, inner = next(iter(v.items()))
    try:
        if kind == "stringValue":
            return str(inner)
        if kind == "boolValue":
            return bool(inner)
        if kind == "intValue":  # a 64-bit integer: a string in OTLP JSON
            return int(inner)
        if kind == "doubleValue":
            return float(inner)
        if kind == "bytesValue":
            return str(inner)
        if kind == "arrayValue":
            return [_value(x, where, path) for x in (inner or {}).get("values") or []]
        if kind == "kvlistValue":
            return {str(kv.get("key")): _value(kv.get("value") or {}, where, path)
                    for kv in (inner or {}).get("values") or []}
    except (TypeError, ValueError, AttributeError):
        raise _fail(path, f"{where}: {kind} {inner!r} is not a valid value", _WRITE + ".") from None
    raise _fail(path, f"{where}: unknown value kind {kind!r}", "OTLP JSON values are stringValue, intValue, "
                "doubleValue, boolValue, arrayValue, kvlistValue or bytesValue; " + _WRITE + ".")


def _attrs(items: Any, where: str, path: Path) -> dict[str, Any]:
    """OTLP ``attributes`` (a list of ``{"key", "value"}``) as a dict."""
    if items is None:
        return {}
    if not isinstance(items, list):
        raise _fail(path, f"{where}: attributes is not a list of {{key, value}}", _WRITE + ".")
    return {str(kv.get("key")): _value(kv.get("value") or {}, f"{where}, attribute {kv.get('key')!r}", path)
            for kv in items if isinstance(kv, dict)}


def _id(value: Any, size: int, what: str, where: str, path: Path) -> str:
    """A trace or span id as lowercase hex (OTLP JSON writes hex; protobuf's own JSON mapping, base64)."""
    if isinstance(value, str) and len(value) == 2 * size and _HEX.fullmatch(value):
        return value.lower()
    if isinstance(value, str):
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == size:
            return raw.hex()
    if value is None:  # a hand-made or truncated span: say what is missing, not "None is not an id"
        raise _fail(path, f"{where}: a span has no {what}", "every OTLP span carries traceId and spanId; "
                    + _WRITE + ".")
    raise _fail(path, f"{where}: {what} {value!r} is not an id of {2 * size} hex digits",
                f"OTLP JSON writes {what} as hex; " + _WRITE + ".")


def _spans(path: Path) -> tuple[list[_Span], int]:
    """Every span of the file, log records tied to spans added as their events; and the records tied to none."""
    spans: dict[tuple[str, str], _Span] = {}
    records: list[tuple[str, str, _Event]] = []
    for n, doc in _documents(path):
        if not isinstance(doc, dict) or not ({"resourceSpans", "resourceLogs", "resourceMetrics"} & set(doc)):
            found = list(doc)[:8] if isinstance(doc, dict) else type(doc).__name__
            raise _fail(path, f"line {n} is not an OTLP export request: it has no resourceSpans (found {found})",
                        f"pass {_WHAT}.")
        at = f"line {n}"
        for rs in _objects(doc, "resourceSpans", at, path):
            # instrumentationLibrarySpans: the name of scopeSpans before OTLP 0.19 (2022)
            for ss in _objects(rs, "scopeSpans", at, path) or _objects(rs, "instrumentationLibrarySpans", at, path):
                for s in _objects(ss, "spans", at, path):
                    span = _span(s, n, path)
                    spans.setdefault((span.trace_id, span.span_id), span)
        for rl in _objects(doc, "resourceLogs", at, path):
            for sl in _objects(rl, "scopeLogs", at, path):
                records += [_record(r, n, path) for r in _objects(sl, "logRecords", at, path)]
    loose = 0
    for trace, span_id, event in records:
        owner = spans.get((trace, span_id))
        if owner is not None:
            owner.events.append(event)
        elif event.name in _EVENTS or event.name == _DETAILS:
            loose += 1
    return list(spans.values()), loose


def _objects(container: dict[str, Any], key: str, where: str, path: Path) -> list[dict[str, Any]]:
    """``container[key]``: a list of objects (empty when absent), or an error naming the field."""
    found = container.get(key)
    if found is None:
        return []
    if not isinstance(found, list) or not all(isinstance(x, dict) for x in found):
        raise _fail(path, f"{where}: {key} is not a list of objects", _WRITE + ".")
    return found


def _span(s: dict[str, Any], n: int, path: Path) -> _Span:
    where = f"line {n}"
    span_id = _id(s.get("spanId"), 8, "spanId", where, path)
    where = f"line {n}, span {span_id}"
    parent = s.get("parentSpanId")
    try:
        start = int(s.get("startTimeUnixNano") or 0)
    except (TypeError, ValueError):
        raise _fail(path, f"{where}: startTimeUnixNano {s.get('startTimeUnixNano')!r} is not a whole number",
                    _WRITE + ".") from None
    span = _Span(trace_id=_id(s.get("traceId"), 16, "traceId", where, path), span_id=span_id,
                 parent=_id(parent, 8, "parentSpanId", where, path) if parent else None, name=str(s.get("name") or ""),
                 start=start, attrs=_attrs(s.get("attributes"), where, path), line=n)
    status = s.get("status")
    status = status if isinstance(status, dict) else {}
    # A call that failed (status ERROR, written as the enum's number or its name) has no answer to rate.
    span.failed = status.get("code") in (2, "2", "STATUS_CODE_ERROR") or "error.type" in span.attrs
    for e in _objects(s, "events", where, path):
        attrs = _attrs(e.get("attributes"), f"{where}, event {e.get('name')!r}", path)
        span.events.append(_Event(str(e.get("name") or ""), _event_fields(attrs), attrs))
    return span


def _record(r: dict[str, Any], n: int, path: Path) -> tuple[str, str, _Event]:
    """A log record: ``(trace id, span id, event)`` (empty ids when it is tied to no span)."""
    where = f"line {n}, log record"
    attrs = _attrs(r.get("attributes"), where, path)
    name = str(r.get("eventName") or attrs.get("event.name") or "")
    body = _value(r["body"], where, path) if isinstance(r.get("body"), dict) else None
    fields = body if isinstance(body, dict) else ({"content": body} if body is not None else _event_fields(attrs))
    trace = _id(r["traceId"], 16, "traceId", where, path) if r.get("traceId") else ""
    span = _id(r["spanId"], 8, "spanId", where, path) if r.get("spanId") else ""
    return trace, span, _Event(name, fields, attrs)


def _event_fields(attrs: dict[str, Any]) -> dict[str, Any]:
    """A span event's message fields: its attributes, or the JSON some writers keep in ``gen_ai.event.content``."""
    packed = attrs.get("gen_ai.event.content")
    if isinstance(packed, str):
        try:
            loaded = json.loads(packed)
        except json.JSONDecodeError:
            return attrs
        if isinstance(loaded, dict):
            return loaded
    return attrs


# -- messages of one model call -------------------------------------------------------------------


def _json(value: Any) -> Any:
    """An attribute holding JSON: decoded when it is text (structured values are already data)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _as_text(value: Any) -> str:
    """A tool's result or arguments as the text a rater reads (structured values as JSON)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


@dataclass
class _Notes:
    """What the conversion left out, gathered over the file."""

    parts: set[str] = field(default_factory=set)
    choices: int = 0
    subagents: int = 0
    failed: int = 0
    continued: int = 0
    loose: int = 0
    unasked: int = 0
    wrappers: int = 0


def _from_parts(m: Any, notes: _Notes) -> list[dict[str, Any]]:
    """A current-form message (``role``, ``parts``) in the OpenAI chat form (tool results as tool messages)."""
    if not isinstance(m, dict):
        raise TranscriptError(f"a message is {type(m).__name__}, not an object with role and parts")
    role = m.get("role")
    role = _ROLE_ALIASES.get(role, role) if isinstance(role, str) else role
    parts = m.get("parts")
    if not isinstance(parts, list):
        raise TranscriptError(f"a {role!r} message has no parts list")
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for p in parts:
        kind = p.get("type") if isinstance(p, dict) else None
        if kind == "text":
            texts.append(str(p.get("content") or ""))
        elif kind == "tool_call":
            calls.append({"id": str(p.get("id") or ""), "type": "function",
                          "function": {"name": p.get("name"), "arguments": _as_text(p.get("arguments") or {})}})
        elif kind == "tool_call_response":
            out.append({"role": "tool", "tool_call_id": str(p.get("id") or ""), "content": _as_text(p.get("response"))})
        else:  # reasoning, media (blob, file, uri), server-side tools: not text a rater or judge reads here
            notes.parts.add(str(kind))
    if texts or calls or not out:
        msg: dict[str, Any] = {"role": role, "content": "\n".join(texts) if texts else None}
        if calls:
            msg["tool_calls"] = calls
        out.append(msg)
    return out


def _current(attrs: dict[str, Any], notes: _Notes) -> list[dict[str, Any]] | None:
    """The messages of a call in the current attribute form, or ``None`` when it has none."""
    keys = ("gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages")
    if not any(k in attrs for k in keys):
        return None
    system, given, output = (_json(attrs.get(k)) for k in keys)
    if isinstance(system, str):  # a system prompt written as plain text, not as parts
        system = [{"type": "text", "content": system}]
    for value, key in ((system, keys[0]), (given, keys[1]), (output, keys[2])):
        if value is not None and not isinstance(value, list):
            raise TranscriptError(f"{key} is not a JSON list")
    out: list[dict[str, Any]] = []
    if system:
        text = "\n".join(str(p.get("content") or "") for p in system if isinstance(p, dict) and p.get("type") == "text")
        out.append({"role": "system", "content": text})
    for m in given or []:
        out += _from_parts(m, notes)
    if output:
        notes.choices += len(output) - 1  # one answer per call: the first choice
        out += _from_parts(output[0], notes)
    return out


def _older(events: list[_Event], notes: _Notes) -> list[dict[str, Any]] | None:
    """The messages of a call in the older per-message events, or ``None`` when it has none."""
    out: list[dict[str, Any]] = []
    for e in events:
        if e.name not in _EVENTS:
            continue
        f = e.fields
        if e.name == "gen_ai.choice":
            if f.get("index") not in (None, 0, "0"):
                notes.choices += 1
                continue
            m = _json(f.get("message")) or {}
            f = m if isinstance(m, dict) else {"content": m}
            role = "assistant"
        else:
            role = e.name.removeprefix("gen_ai.").removesuffix(".message")
        msg: dict[str, Any] = {"role": role, "content": _json_content(f.get("content"))}
        calls = _json(f.get("tool_calls"))
        if calls:
            msg["tool_calls"] = calls
        if role == "tool" and f.get("id") is not None:
            msg["tool_call_id"] = str(f["id"])
        out.append(msg)
    # Without content capture the events are still written, with no content in any of them.
    return out if any(m["content"] for m in out) else None


def _json_content(value: Any) -> Any:
    """Message content: text, or a list of parts some writers keep as JSON text."""
    if isinstance(value, str) and value.startswith("[{"):
        loaded = _json(value)
        return loaded if isinstance(loaded, list) else value
    return value


def _call_messages(span: _Span, notes: _Notes) -> list[dict[str, Any]] | None:
    """A model call's conversation (input, then the first output), in the OpenAI chat form; ``None`` if not captured."""
    found = _current(span.attrs, notes)
    if found is None:
        details = [e for e in span.events if e.name == _DETAILS]
        found = _current(details[-1].attrs, notes) if details else None
    return found if found is not None else _older(span.events, notes)


# -- answers --------------------------------------------------------------------------------------


def _key(m: dict[str, Any]) -> str:
    """A message as a comparable text: the same turn sent again compares equal however it was re-encoded.

    An application sends the model's turn back in its next call, and may write an absent text as
    ``""`` or the arguments with other spacing: those are the same turn.
    """
    calls = [(c.get("function", {}).get("name"), _json(c.get("function", {}).get("arguments")))
             for c in m.get("tool_calls") or [] if isinstance(c, dict)]
    return json.dumps([m.get("role"), m.get("content") or "", calls, m.get("tool_call_id")], sort_keys=True,
                      ensure_ascii=False, default=str)


def _merge(steps: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One conversation from an agent's model calls in order.

    A call usually sends the whole conversation so far; some send only what is new (the tool
    results) with the system prompt again. Each call's messages are added after the longest
    run at the end of the conversation they repeat, and a system message already there is not
    added twice.
    """
    conv: list[dict[str, Any]] = []
    for step in steps:
        keys, new = [_key(m) for m in conv], [_key(m) for m in step]
        overlap = next((k for k in range(min(len(keys), len(new)), 0, -1) if keys[-k:] == new[:k]), 0)
        seen = set(keys)
        conv += [m for m, k in zip(step[overlap:], new[overlap:], strict=True)
                 if not (m.get("role") == "system" and k in seen)]
    return conv


def _model(spans: list[_Span]) -> tuple[str | None, str | None]:
    """``(model, provider)`` from the first span naming each (the agent's own, then its calls from the last).

    The response model (the version that answered, ``gpt-4o-mini-2024-07-18``) wins over any
    requested alias, which an agent span often holds alone.
    """
    def first(*keys: str) -> str | None:
        found = next((s.attrs[k] for k in keys for s in spans if s.attrs.get(k)), None)
        return None if found is None else str(found)

    return first("gen_ai.response.model", "gen_ai.request.model"), first("gen_ai.provider.name", "gen_ai.system")


def _agent_of(span: _Span, by_id: dict[tuple[str, str], _Span]) -> _Span | None:
    """The nearest ``invoke_agent`` span enclosing ``span`` (``span`` itself when it is one)."""
    seen: set[str] = set()
    current: _Span | None = span
    while current is not None and current.span_id not in seen:
        if current.operation == _AGENT:
            return current
        seen.add(current.span_id)
        current = by_id.get((current.trace_id, current.parent)) if current.parent else None
    return None


@dataclass(frozen=True)
class _Answer:
    """One answer: the span it is named after, the spans its model and provider come from, its messages."""

    span: _Span
    sources: list[_Span]
    messages: list[dict[str, Any]]


def _conversations(path: Path, spans: list[_Span], notes: _Notes) -> tuple[list[_Answer], int]:
    """The answers of the file: agent runs, and model calls outside any agent; and calls left for a later one."""
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    notes.failed = sum(1 for s in spans if s.failed and s.operation in (*_CALLS, _AGENT))
    calls = sorted((s for s in spans if s.operation in _CALLS and not s.failed), key=lambda s: (s.start, s.line))
    outer = _wrappers(calls, by_id)
    notes.wrappers = len(outer)
    calls = [c for c in calls if id(c) not in outer]
    owner = {id(c): _agent_of(c, by_id) for c in calls}
    messages = {id(c): found for c in calls if (found := _messages_of(path, c, notes)) is not None}
    steps: dict[int, list[_Span]] = {}
    for c in calls:
        if owner[id(c)] is not None:
            steps.setdefault(id(owner[id(c)]), []).append(c)
    tools: dict[int, list[_Span]] = {}
    for t in sorted((s for s in spans if s.operation == _TOOL), key=lambda s: (s.start, s.line)):
        agent = _agent_of(t, by_id)
        if agent is not None:
            tools.setdefault(id(agent), []).append(t)
    answers: list[_Answer] = []
    for agent in sorted((s for s in spans if s.operation == _AGENT), key=lambda s: (s.start, s.line)):
        parent = by_id.get((agent.trace_id, agent.parent)) if agent.parent else None
        if parent is not None and _agent_of(parent, by_id) is not None:
            notes.subagents += 1  # its work is a step of the run that called it
            continue
        if agent.failed:
            continue
        run = _agent_run(path, agent, steps.get(id(agent), []), messages, notes)
        answers.append(_Answer(run.span, run.sources, _with_results(run.messages, tools.get(id(agent), []))))
    alone, continued = _lone_calls(path, [c for c in calls if owner[id(c)] is None], messages)
    return answers + alone, continued


def _with_results(messages: list[dict[str, Any]], tools: list[_Span]) -> list[dict[str, Any]]:
    """``messages`` with a tool message after each tool call they leave unanswered, from its ``execute_tool`` span.

    The model's messages carry a tool's result only in the call after it: a run that ends on a
    tool call (a hand-off, a "final answer" tool) has the result only in the tool's own span
    (``gen_ai.tool.call.result``, recorded with content capture), found by the call's id.
    """
    answered = {str(m.get("tool_call_id")) for m in messages if m.get("role") == "tool"}
    results = {str(t.attrs["gen_ai.tool.call.id"]): t.attrs["gen_ai.tool.call.result"] for t in tools
               if t.attrs.get("gen_ai.tool.call.id") and "gen_ai.tool.call.result" in t.attrs}
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for m in messages:
        if pending and m.get("role") != "tool":  # after the turn's own results, so each result follows its call
            out += pending
            pending = []
        out.append(m)
        for c in m.get("tool_calls") or []:
            key = str(c.get("id")) if isinstance(c, dict) else ""
            if key in results and key not in answered:
                pending.append({"role": "tool", "tool_call_id": key, "content": _as_text(results[key])})
    return out + pending


def _wrappers(calls: list[_Span], by_id: dict[tuple[str, str], _Span]) -> set[int]:
    """The model-call spans that enclose another (a framework's span around the provider's): one call seen twice."""
    found: set[int] = set()
    for c in calls:
        seen: set[str] = set()
        up = by_id.get((c.trace_id, c.parent)) if c.parent else None
        while up is not None and up.span_id not in seen and up.operation != _AGENT:
            seen.add(up.span_id)
            if up.operation in _CALLS:
                found.add(id(up))
            up = by_id.get((up.trace_id, up.parent)) if up.parent else None
    return found


def _agent_run(path: Path, agent: _Span, steps: list[_Span], messages: dict[int, list[dict[str, Any]]],
               notes: _Notes) -> _Answer:
    """An agent run's answer: its model calls merged, or the agent span's own messages when they carry none."""
    if steps and all(id(c) in messages for c in steps):
        return _Answer(agent, [agent, *reversed(steps)], _merge([messages[id(c)] for c in steps]))
    own = _messages_of(path, agent, notes)
    if own is None:
        what = "its model calls carry" if steps else "it has no model call and carries"
        raise _fail(path, f"{agent.where}: an agent run whose messages were not recorded ({what} no "
                          "gen_ai.input.messages / gen_ai.output.messages and no gen_ai.*.message events)",
                    _CAPTURE + ".")
    return _Answer(agent, [agent, *reversed(steps)], own)


def _lone_calls(path: Path, calls: list[_Span], messages: dict[int, list[dict[str, Any]]]) -> tuple[list[_Answer], int]:
    """Model calls outside any agent, one answer each, but for a call a later call of its trace goes on from."""
    by_trace: dict[str, list[_Span]] = {}
    for c in calls:
        if id(c) not in messages:
            raise _fail(path, f"{c.where}: a {c.operation} span whose messages were not recorded", _CAPTURE + ".")
        by_trace.setdefault(c.trace_id, []).append(c)
    answers: list[_Answer] = []
    continued = 0
    for group in by_trace.values():
        keys = {id(c): [_key(m) for m in messages[id(c)]] for c in group}
        for c in group:
            head = keys[id(c)]
            if any(len(keys[id(d)]) > len(head) and keys[id(d)][: len(head)] == head for d in group):
                continued += 1  # an agent loop or a chat without an agent span: the last call is the answer
                continue
            answers.append(_Answer(c, [c], messages[id(c)]))
    return answers, continued


def _messages_of(path: Path, span: _Span, notes: _Notes) -> list[dict[str, Any]] | None:
    """:func:`_call_messages`, a malformed message an error naming the span."""
    try:
        return _call_messages(span, notes)
    except TranscriptError as exc:
        raise _fail(path, f"{span.where}: {exc}", "pass the spans as the instrumentation wrote them.") from None


def _row(path: Path, a: _Answer, several: bool) -> dict[str, Any] | None:
    """The answer's row; ``None`` for a conversation with no user message (no prompt, so no task)."""
    try:
        transcript = parse_messages(a.messages)
    except TranscriptError as exc:
        raise _fail(path, f"{a.span.where}: its messages are not a conversation ({exc})",
                    "pass the spans as the instrumentation wrote them.") from None
    prompt = next((m.content for m in transcript.messages if m.role == "user" and m.content.strip()), None)
    if prompt is None:
        return None
    model, provider = _model(a.sources)
    family = infer_family(model) if model else None
    answer = f"otel-{a.span.trace_id}" + (f"-{a.span.span_id}" if several else "")
    return {"task_id": f"otel-{digest(prompt)}", "prompt": prompt, "answer_id": answer,
            "family": as_id(family or provider or "unknown"), "model": as_id(model or provider or "unknown"),
            "messages": a.messages}


def _answers(path: Path) -> Adapted:
    spans, loose = _spans(path)
    genai = [s for s in spans if s.operation is not None]
    if not genai:
        raise _fail(path, f"has no GenAI span: none of its {len(spans)} span(s) has gen_ai.operation.name (chat, "
                          "invoke_agent, execute_tool) or gen_ai.system",
                    "instrument the application with an OpenTelemetry GenAI instrumentation (for OpenAI's SDK: "
                    "opentelemetry-instrumentation-openai-v2) and " + _WRITE + ".")
    notes = _Notes()
    found, continued = _conversations(path, spans, notes)
    if not found:
        ops = sorted({str(s.operation) for s in genai})
        raise _fail(path, f"has no model call or agent run: its GenAI spans are {ops}",
                    "judgelab reads conversations from chat (or text_completion, generate_content) and invoke_agent "
                    "spans; export those too.")
    per_trace: dict[str, int] = {}
    for a in found:
        per_trace[a.span.trace_id] = per_trace.get(a.span.trace_id, 0) + 1
    made = [_row(path, a, per_trace[a.span.trace_id] > 1) for a in found]
    rows = [r for r in made if r is not None]
    notes.unasked = len(made) - len(rows)
    if not rows:
        raise _fail(path, f"has no conversation with a user message to be its prompt ({len(made)} run(s) and "
                          "call(s) without one)", "judgelab rates answers to a prompt (the first user message); "
                                                 "export runs that were asked something.")
    notes.continued, notes.loose = continued, loose
    dropped = _left_out(spans, genai, rows, notes)
    cols = ("task_id", "prompt", "answer_id", "family", "model", "messages")
    name = f"{path} (row N is the Nth agent run or model call)"
    return Adapted(Rows(name, cols, rows), tuple(dropped))


def _left_out(spans: list[_Span], genai: list[_Span], rows: list[dict[str, Any]], notes: _Notes) -> list[str]:
    """One sentence for each kind of thing the file holds that the answers leave out, with why."""
    other = sorted({str(s.operation) for s in genai} - {*_CALLS, _AGENT, _TOOL})
    said = [
        (True, "the spans' other attributes (tokens, finish reasons, timings, the resource): an answer is its "
               "conversation, its model and family"),
        (any(r["family"] == "unknown" for r in rows),
         "the family of answers whose spans name no model or provider: `unknown` (give --family)"),
        (any(s.operation == _TOOL for s in genai),
         "the execute_tool spans but for results: a tool's call and result are read from the model's messages, "
         "and from the tool's span only a result no later call of the run was sent"),
        (bool(other), f"the {other} spans: those operations are not part of a conversation"),
        (len(spans) > len(genai),
         f"{len(spans) - len(genai)} span(s) without GenAI attributes (HTTP, the application's own)"),
        (notes.continued > 0, f"{notes.continued} model call(s) whose conversation a later call of the same trace "
                              "goes on with: that call is the answer"),
        (bool(notes.parts), f"message parts of type {sorted(notes.parts)}: not text a rater reads (reasoning, media)"),
        (notes.failed > 0, f"{notes.failed} model call(s) or agent run(s) that failed (span status ERROR, "
                           "error.type): no answer to rate; an agent's run goes on from its calls that did not fail"),
        (notes.wrappers > 0, f"{notes.wrappers} model-call span(s) around another (a framework's span around the "
                             "provider's instrumentation's): the same call, read once from the inner span"),
        (notes.unasked > 0, f"{notes.unasked} run(s) or call(s) with no user message: nothing was asked, so there "
                            "is no prompt to rate them against"),
        (notes.subagents > 0, f"the inner model calls of {notes.subagents} agent(s) run by another agent: the run's "
                              "answer is its own conversation, where a sub-agent shows as far as the model's "
                              "messages record it"),
        (notes.choices > 0, f"{notes.choices} output choice(s) after the first: one answer per model call"),
        (notes.loose > 0, f"{notes.loose} GenAI log record(s) tied to no span of the file (export the traces with "
                          "the logs)"),
    ]
    return [sentence for applies, sentence in said if applies]


ADAPTER = Adapter(
    name="otel",
    exports="OTLP JSON lines (the Collector's file exporter, opentelemetry-exporter-otlp-json-file): spans with the "
            "GenAI conventions: gen_ai.input.messages / gen_ai.output.messages / gen_ai.system_instructions, or the "
            "older gen_ai.*.message and gen_ai.choice events",
    reads="answers (one per invoke_agent run, else per chat span: the conversation with tool calls and results; "
          "model from gen_ai.response.model, family from the model name or the provider)",
    kinds={"answers": _answers},
)
