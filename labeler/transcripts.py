"""Conversations and agent traces as answers: one internal form for every provider's messages.

An answer may be a list of messages instead of one text. Two provider forms are read, and
Inspect's chat messages, and all become one :class:`Transcript`:

- the OpenAI chat form: ``{"role", "content", "tool_calls": [{"id", "function": {"name",
  "arguments"}}]}`` and ``{"role": "tool", "tool_call_id", "content"}``;
- the Anthropic messages form: ``content`` a list of blocks, ``tool_use`` (``id``, ``name``,
  ``input``) in an assistant turn and ``tool_result`` (``tool_use_id``, ``content``) in a user
  turn; the system prompt as ``{"system": ..., "messages": [...]}``;
- Inspect's ``ChatMessage`` (``tool_calls`` with ``function`` and ``arguments``, a tool
  message's ``function``).

The answer's ``text`` is :func:`render` of the transcript: every part of judgelab that reads
an answer's text (the judge, the probes, self-name detection, calibration) reads the whole
conversation without knowing it is one, and the rater's page draws it from the transcript.

    >>> t = parse_messages([{"role": "user", "content": "Hi"},
    ...                     {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]}])
    >>> [m.role for m in t.messages], t.rated_turn("last")
    (['user', 'assistant'], 1)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

__all__ = [
    "TURN_MODES",
    "Message",
    "ToolCall",
    "Transcript",
    "TranscriptError",
    "TurnMode",
    "blinded",
    "check_messages",
    "last_turn",
    "name_spans",
    "parse_messages",
    "render",
    "render_message",
    "split_turn",
]

TurnMode = Literal["last", "whole", "each"]
"""Which part of a transcript a rubric rates: the last assistant turn, the whole, or each assistant turn.

``each``: the item's scores rate the whole conversation, and every assistant turn gets a score of
its own on the rubric's scale too (turn 1 is the first assistant turn).
"""

TURN_MODES: tuple[TurnMode, ...] = ("last", "whole", "each")

Role = Literal["system", "user", "assistant", "tool"]
_ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")


class TranscriptError(ValueError):
    """A message list that is not a conversation; the message says which message and why.

    Attributes:
        fix: What to change, when the problem has one fix of its own (``None``: write the
            messages in one of the provider forms).
    """

    def __init__(self, problem: str, fix: str | None = None) -> None:
        """``problem`` names the message; ``fix`` says what to change."""
        super().__init__(problem)
        self.fix = fix


@dataclass(frozen=True)
class ToolCall:
    """One tool call of an assistant turn; ``arguments`` is JSON text, as the model wrote it."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Message:
    """One turn: who spoke, what they said, the tools they called or whose result this is."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class Transcript:
    """A conversation or an agent trace, in order."""

    messages: tuple[Message, ...]

    def rated_turn(self, mode: TurnMode) -> int | None:
        """The index of the rated message: the last assistant turn, or ``None`` for the whole.

        Rating each turn, the item's own scores are of the whole (``None``); see :meth:`turns`.
        """
        if mode in ("whole", "each"):
            return None
        for i in range(len(self.messages) - 1, -1, -1):
            if self.messages[i].role == "assistant":
                return i
        return None

    def turn_text(self, mode: TurnMode) -> str:
        """The rated turn's text (the whole rendering when the whole is rated)."""
        i = self.rated_turn(mode)
        return render(self) if i is None else render_message(self.messages[i])

    def turns(self) -> tuple[int, ...]:
        """The message indexes of the assistant turns, in order (turn ``k`` is ``turns()[k - 1]``).

        >>> parse_messages([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
        ...                 {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]).turns()
        (1, 3)
        """
        return tuple(i for i, m in enumerate(self.messages) if m.role == "assistant")

    def up_to(self, turn: int) -> Transcript:
        """The conversation as it stood when assistant turn ``turn`` (1-based) was written.

        What the judge reads when it scores that turn: nothing said after it can sway its score.

        Raises:
            IndexError: There is no such turn.
        """
        at = self.turns()
        if not 1 <= turn <= len(at):
            raise IndexError(f"turn {turn} of a conversation with {len(at)} assistant turn(s)")
        return Transcript(self.messages[: at[turn - 1] + 1])

    def to_json(self) -> str:
        """The stored form: a JSON list in the OpenAI chat shape (stable key order)."""
        out = []
        for m in self.messages:
            d: dict[str, Any] = {"role": m.role, "content": m.content}
            if m.tool_calls:
                d["tool_calls"] = [{"id": c.call_id, "type": "function",
                                    "function": {"name": c.name, "arguments": c.arguments}} for c in m.tool_calls]
            if m.tool_call_id is not None:
                d["tool_call_id"] = m.tool_call_id
            if m.name is not None:
                d["name"] = m.name
            out.append(d)
        return json.dumps(out, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Transcript:
        """The transcript :meth:`to_json` stored."""
        return parse_messages(json.loads(text))


def render_message(m: Message) -> str:
    """One message as plain text: a role header, the content, one line per tool call."""
    head = f"[{m.role}" + (f" {m.name}" if m.role == "tool" and m.name else "") + "]"
    lines = [head]
    if m.content:
        lines.append(_HEADER.sub(r"\\\1", m.content))
    lines += [f"-> tool call {c.name}({c.arguments})" for c in m.tool_calls]
    return "\n".join(lines)


# A content line that looks like a role header is written with a backslash, so a message cannot
# forge a turn (and the judge's {turn} is always the assistant's own).
_HEADER = re.compile(r"^(\\*\[(?:system|user|assistant|tool)\b[^\n]*\])$", re.MULTILINE)


def last_turn(text: str) -> str:
    """The last assistant turn of a rendered transcript (``text`` itself when it is no transcript)."""
    at = text.rfind("[assistant]\n")
    while at > 0 and text[at - 2:at] != "\n\n":
        at = text.rfind("[assistant]\n", 0, at)
    if at < 0:
        return text
    end = text.find("\n\n[", at)
    while end >= 0 and not _HEADER.match(text, end + 2):
        end = text.find("\n\n[", end + 1)
    return text[at + len("[assistant]\n"): None if end < 0 else end]


def split_turn(text: str) -> tuple[str, str, str] | None:
    r"""A rendered transcript cut around its last assistant turn's content: ``(before, turn, after)``.

    ``None`` when ``text`` is no rendered transcript (it does not open with a role header, or
    has no assistant turn). ``before + turn + after == text``.

        >>> split_turn("[user]\nHi\n\n[assistant]\nHello")
        ('[user]\nHi\n\n[assistant]\n', 'Hello', '')
    """
    if not _HEADER.match(text) or text.startswith("\\"):
        return None
    turn = last_turn(text)
    if turn is text:
        return None
    at = text.rfind("[assistant]\n" + turn)
    if at < 0:
        return None
    start = at + len("[assistant]\n")
    return text[:start], turn, text[start + len(turn):]


def render(t: Transcript) -> str:
    """The transcript as the one plain text the judge, probes and self-name detection read."""
    return "\n\n".join(render_message(m) for m in t.messages)


def _fields(m: Message) -> list[tuple[int, int, bool]]:
    """Where each field of ``m`` sits in :func:`render_message`, and whether any name there is masked.

    A system prompt, a tool's name and a call's arguments speak to or for the agent, so every
    model or maker name in them is masked; what a turn says is held to the usual rule.
    """
    head = f"[{m.role}" + (f" {m.name}" if m.role == "tool" and m.name else "") + "]"
    out: list[tuple[int, int, bool]] = []
    if m.role == "tool" and m.name:
        out.append((len(f"[{m.role} "), len(head) - 1, True))
    at = len(head) + 1
    if m.content:
        out.append((at, at + len(m.content), m.role == "system"))
        at += len(m.content) + 1
    for c in m.tool_calls:
        start = at + len("-> tool call ")
        out.append((start, start + len(c.name), True))
        out.append((start + len(c.name) + 1, start + len(c.name) + 1 + len(c.arguments), True))
        at += len(f"-> tool call {c.name}({c.arguments})") + 1
    return out


def name_spans(t: Transcript, names: Iterable[str] = ()) -> list[tuple[int, int, str]]:
    """Spans of :func:`render` naming a model or maker in a system prompt, tool name or arguments."""
    from judgelab.labeler.blinding import detect_any_names  # blinding's tables load once, when first needed

    text = render(t)
    spans: list[tuple[int, int, str]] = []
    at = 0
    for m in t.messages:
        for start, end, anywhere in _fields(m):
            if anywhere:
                spans += [(at + a + start, at + b + start, w) for a, b, w in
                          detect_any_names(text[at + start: at + end], names)]
        at += len(render_message(m)) + 2
    return spans


def blinded(t: Transcript, names: Iterable[str] = ()) -> Transcript:
    """``t`` as a blind rater reads it: every field masked (system prompts and tools wholly)."""
    return _blinded(t, tuple(sorted(set(names))))


# The detector reads about 50 KB a second: a 500-turn, 1 MB trace took 20 s to mask, and the rater's
# page masks it again on every rerun (each key press, each submit). A transcript and the pool's
# names decide the result, so a page's reruns reuse it (bounded: a few traces' worth of memory).
@lru_cache(maxsize=16)
def _blinded(t: Transcript, pool: tuple[str, ...]) -> Transcript:
    from judgelab.labeler.blinding import detect_any_names, detect_self_identifying_many, mask

    def strict(x: str) -> str:
        return mask(x, detect_any_names(x, pool))

    # One prefilter pass over every message; the full detector reads only the candidates.
    found = detect_self_identifying_many([m.content for m in t.messages], pool)
    return Transcript(tuple(
        Message(role=m.role, content=strict(m.content) if m.role == "system" else mask(m.content, spans),
                tool_calls=tuple(ToolCall(c.call_id, strict(c.name), strict(c.arguments)) for c in m.tool_calls),
                tool_call_id=m.tool_call_id, name=None if m.name is None else strict(m.name))
        for m, spans in zip(t.messages, found, strict=True)))


def _text_of(value: Any, where: str) -> str:
    """A content value's text: a string, or the text parts of a list of parts/blocks."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for p in value:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict) and p.get("type") in ("text", "input_text", "output_text"):
                parts.append(str(p.get("text", "")))
            elif isinstance(p, dict) and p.get("type") in ("reasoning", "thinking", "image", "image_url"):
                continue  # not text a rater or judge reads; reasoning is the model's, not the answer
            else:
                raise TranscriptError(f"{where}: a content part is neither text nor a known block: {str(p)[:80]!r}")
        return "\n".join(parts)
    raise TranscriptError(f"{where}: content must be text or a list of text parts, not {type(value).__name__}")


def _arguments(value: Any) -> str:
    """Tool-call arguments as JSON text (OpenAI sends text, Anthropic and Inspect an object)."""
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {}, ensure_ascii=False, sort_keys=True)


def _openai_call(c: Any, where: str) -> ToolCall:
    """An OpenAI (or Inspect) tool call."""
    if not isinstance(c, dict):
        raise TranscriptError(f"{where}: a tool call must be an object")
    fn = c.get("function")
    if isinstance(fn, dict):  # OpenAI: {"function": {"name", "arguments"}}
        name, args = fn.get("name"), fn.get("arguments")
    else:  # Inspect: {"function": "name", "arguments": {...}}
        name, args = fn if fn is not None else c.get("name"), c.get("arguments")
    if not name:
        raise TranscriptError(f"{where}: a tool call has no function name")
    return ToolCall(call_id=str(c.get("id") or ""), name=str(name), arguments=_arguments(args))


def _messages(obj: dict[str, Any], where: str) -> list[tuple[Message, str]]:
    """One provider message as one or more internal messages (Anthropic results split out), each with where it is."""
    role = obj.get("role")
    if role == "developer":
        # OpenAI's newer name for the system message (the reasoning models' instructions): the same
        # standing instruction to the agent, so it is read, masked and shown as one.
        role = "system"
    if role not in _ROLES:
        raise TranscriptError(f"{where}: role {role!r} is not one of {', '.join(_ROLES)} (or developer)")
    content = obj.get("content")
    blocks = content if isinstance(content, list) else None
    if blocks is not None and any(isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in blocks):
        return _anthropic(role, blocks, where)
    calls = tuple(_openai_call(c, f"{where}, tool call {j + 1}") for j, c in enumerate(obj.get("tool_calls") or []))
    name = obj.get("name") if obj.get("name") is not None else obj.get("function")
    if calls and role != "assistant":
        raise TranscriptError(f"{where}: only an assistant turn calls tools (role is {role!r})")
    return [(Message(role=role, content=_text_of(content, where), tool_calls=calls,
                     tool_call_id=None if obj.get("tool_call_id") is None else str(obj["tool_call_id"]),
                     name=None if name is None else str(name)), where)]


def _anthropic(role: Role, blocks: list[Any], where: str) -> list[tuple[Message, str]]:
    """An Anthropic message with ``tool_use``/``tool_result`` blocks, in internal messages."""
    out: list[tuple[Message, str]] = []
    texts: list[str] = []
    calls: list[ToolCall] = []
    for j, b in enumerate(blocks):
        at = f"{where}, block {j + 1}"
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "tool_use":
            if role != "assistant":
                raise TranscriptError(f"{at}: tool_use belongs in an assistant turn")
            if not b.get("name"):
                raise TranscriptError(f"{at}: tool_use has no name")
            calls.append(ToolCall(call_id=str(b.get("id") or ""), name=str(b["name"]),
                                  arguments=_arguments(b.get("input"))))
        elif kind == "tool_result":
            if texts:  # keep the order the turn was written in
                out.append((Message(role=role, content="\n".join(texts)), where))
                texts = []
            body = _text_of(b.get("content"), at)
            out.append((Message(role="tool", content=("[error] " if b.get("is_error") else "") + body,
                                tool_call_id=None if b.get("tool_use_id") is None else str(b["tool_use_id"])), at))
        else:
            texts.append(_text_of([b], at))
    if texts or calls:
        out.append((Message(role=role, content="\n".join(texts), tool_calls=tuple(calls)), where))
    return out


def parse_messages(value: Any) -> Transcript:
    """Normalise a provider's message list (or ``{"system", "messages"}``) into a transcript.

    Raises:
        TranscriptError: A message that is not one; the message names it (``message 3``).
    """
    return Transcript(messages=tuple(m for m, _ in _parse(value)))


def check_messages(value: Any) -> tuple[Transcript, tuple[str, ...]]:
    """:func:`parse_messages`, refusing what the providers' APIs refuse and warning about the rest.

    Refused (OpenAI's and Anthropic's APIs reject them): a tool result whose call id no assistant
    turn made, a tool result before its call, a tool result with no id and no call before it.
    Imported as written, with a warning each (a trace cut short or exported from elsewhere has
    them; the APIs' rules differ): an empty assistant turn, a conversation that opens with the
    assistant, a system message after the conversation began, a tool call whose result never comes.

        >>> t, warned = check_messages([{"role": "assistant", "content": "Hi"}])
        >>> warned
        ('message 1: the conversation opens with the assistant (no user message before it)',)

    Returns:
        The transcript, and one line per warning naming the file's message (``message 3``).

    Raises:
        TranscriptError: A message that is not one, or a shape the APIs refuse, with its fix.
    """
    located = _parse(value)
    made: dict[str, int] = {}  # call id -> index of the message that makes it
    for i, (m, _) in enumerate(located):
        for c in m.tool_calls:
            made.setdefault(c.call_id, i)
    warned: list[str] = []
    open_calls: dict[str, str] = {}  # call id -> where the call is, until its result comes
    began = False
    for i, (m, where) in enumerate(located):
        if m.role == "tool":
            _answer(m, where, i, made, open_calls, located)
        elif m.role == "system":
            if began:
                warned.append(f"{where}: a system message after the conversation began")
            continue
        elif m.role == "assistant":
            if not began:
                warned.append(f"{where}: the conversation opens with the assistant (no user message before it)")
            if not m.content.strip() and not m.tool_calls:
                warned.append(f"{where}: an empty assistant turn (no text, no tool call)")
            open_calls |= {c.call_id: f"{where} ({c.name})" for c in m.tool_calls}
        began = True
    warned += [f"{at}: a tool call whose result never comes" for at in open_calls.values()]
    return Transcript(messages=tuple(m for m, _ in located)), tuple(warned)


def _answer(m: Message, where: str, i: int, made: dict[str, int], open_calls: dict[str, str],
            located: list[tuple[Message, str]]) -> None:
    """Match tool result ``m`` (message ``i``) with its call, or refuse it as the APIs do."""
    cid = m.tool_call_id
    if not cid:
        if not open_calls:
            raise TranscriptError(f"{where}: a tool result with no call id and no tool call before it",
                                  fix="give the result the id of the call it answers (tool_call_id, or "
                                      "tool_use_id in a tool_result block), after that call.")
        open_calls.pop(next(iter(open_calls)))  # Inspect may leave the id out: the oldest open call
    elif cid not in made:
        raise TranscriptError(f"{where}: a tool result for call {cid!r}, which no assistant turn makes",
                              fix="give the result the id of the call it answers, or leave the result out.")
    elif made[cid] > i:
        raise TranscriptError(f"{where}: a tool result before its call ({cid!r} is made in {located[made[cid]][1]})",
                              fix="put the result after the assistant turn that makes the call.")
    else:
        open_calls.pop(cid, None)


def _parse(value: Any) -> list[tuple[Message, str]]:
    """The internal messages of a provider's message list, each with the file's message it came from."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise TranscriptError(f"not JSON ({e.msg} at character {e.pos})") from None
    system: str | None = None
    if isinstance(value, dict) and "messages" in value:
        system = _text_of(value.get("system"), "system") or None
        value = value["messages"]
    if not isinstance(value, list) or not value:
        raise TranscriptError("messages must be a non-empty list of {role, content} objects")
    out: list[tuple[Message, str]] = [] if system is None else [(Message(role="system", content=system), "system")]
    for i, obj in enumerate(value):
        if not isinstance(obj, dict):
            raise TranscriptError(f"message {i + 1} is not an object")
        out += _messages(obj, f"message {i + 1}")
    names = {c.call_id: c.name for m, _ in out for c in m.tool_calls if c.call_id}
    # A tool result carries its tool's name (Anthropic and OpenAI give only the call id).
    out = [(Message(m.role, m.content, m.tool_calls, m.tool_call_id, names.get(m.tool_call_id or "", m.name)), w)
           if m.role == "tool" and m.name is None else (m, w) for m, w in out]
    if not any(m.role == "assistant" for m, _ in out):
        raise TranscriptError("the messages have no assistant turn to rate")
    return out
