"""Inspect AI eval logs (``.eval``, Inspect's default, or ``--log-format json``): samples and model-graded scores.

An Inspect log (``inspect_ai.log.EvalLog``, log version 2) holds ``eval`` (``task``, ``model``,
``run_id``) and ``samples``, each with ``id``, ``epoch``, ``input`` (text or chat messages),
``output.choices[0].message.content``, ``scores`` (per scorer: ``value``, ``explanation``, and
``reason`` when the score is missing) and ``events`` (the sample's transcript). A ``.json`` log is
that object; a ``.eval`` log is a zip of ``header.json`` and one ``samples/<id>_epoch_<n>.json``
per sample, read with Inspect's own reader when ``inspect_ai`` is installed and from the zip
otherwise (Inspect compresses its members with Zstandard, which Python reads from 3.14 on, or
with the ``zstandard`` package that Inspect installs).

A scorer's model calls are found in the transcript two ways, as Inspect wrote them over time:
current releases open a ``span_begin`` event of type ``scorer`` (named after the scorer) and
tag every event inside it with that span's ``span_id``; releases before about 0.3.50 bracketed
the scorer between ``step`` events (``action`` ``begin`` and ``end``).

judgelab reads:

- ``answers``: one per sample and epoch (the task is ``inspect-<task>-<sample id>``; the answer
  ``<task>-e<epoch>:<model>``; the family is the model's provider, ``openai`` in
  ``openai/gpt-4o-mini``). A sample whose ``messages`` hold tool calls or several turns is an
  agent trace or a conversation: its answer is those messages (``judgelab.labeler.transcripts``).
- ``judgements``: one per sample and *model-graded* scorer: a scorer that made a model call
  (``model_graded_qa``, ``model_graded_fact``, custom graders). The judge is that call's model, the
  score ``binary`` (Inspect's own ``value_to_float``: C 1, I 0, P 0.5, N 0; true/false; a number in
  0..1) or ``numeric100`` (a number in 0..100), the reply the scorer's ``explanation``, the tokens
  the call's. A grade Inspect could not read from the grader's reply (``value`` NaN, ``reason``
  ``grader_failed``) is a parse failure: counted, never scored. Scorers that made no model call
  (``match``, ``includes``...) are not judges: left out, and said.
"""

from __future__ import annotations

import importlib
import io
import json
import math
import zipfile
from pathlib import Path
from typing import Any

from judgelab.labeler._rows import Rows
from judgelab.labeler.adapters._common import Adapted, Adapter, Source, as_id, read_json_document, rows_of
from judgelab.labeler.errors import InputError

_GRADES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_WHAT = "an Inspect AI eval log (.eval, or .json from --log-format json)"
_ATTACHMENT = "attachment://"
_ZSTD = 93  # a zip member's compression method number for Zstandard (APPNOTE 4.4.5)


# -- reading the log ------------------------------------------------------------------------------


def _zstd_decompress(data: bytes, name: str) -> bytes:
    """Zstandard-compressed bytes, inflated with Python's own codec (3.14+) or the ``zstandard`` package."""
    try:
        zstd: Any = importlib.import_module("compression.zstd")
        return bytes(zstd.decompress(data))
    except ImportError:
        pass
    try:
        zstandard: Any = importlib.import_module("zstandard")
    except ImportError:
        raise InputError("is a .eval log compressed with Zstandard, which this Python cannot read", file=name,
                         fix="pip install inspect-ai (or zstandard), or convert the log: "
                             "inspect log convert --to json.") from None
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
    return bytes(reader.read())


def _member(archive: zipfile.ZipFile, raw: io.BufferedReader, info: zipfile.ZipInfo, name: str) -> Any:
    """One JSON member of a ``.eval`` zip (deflated, stored, or Zstandard-compressed)."""
    if info.compress_type != _ZSTD:
        data = archive.read(info)
    else:
        # zipfile cannot inflate Zstandard before 3.14: read the member's bytes after its local header.
        raw.seek(info.header_offset)
        header = raw.read(30)
        if header[:4] != b"PK\x03\x04":
            raise InputError(f"its zip member {info.filename} has no local header", file=name,
                             fix="the .eval log is damaged; write it again or convert it with inspect log convert.")
        skip = int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little")
        raw.seek(info.header_offset + 30 + skip)
        data = _zstd_decompress(raw.read(info.compress_size), name)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"its zip member {info.filename} is not valid JSON ({exc})", file=name,
                         fix="the .eval log is damaged; write it again.") from None


def read_eval_zip(path: Path) -> dict[str, Any]:
    """A ``.eval`` log read from its zip format alone: the header's fields and ``samples``.

    Args:
        path: The ``.eval`` file.

    Raises:
        InputError: Not a zip, no ``header.json``, or a member that cannot be read.
    """
    name = str(path)
    try:
        with zipfile.ZipFile(path) as archive, path.open("rb") as raw:
            infos = {i.filename: i for i in archive.infolist()}
            if "header.json" not in infos:
                raise InputError(f"is not {_WHAT}: its zip has no header.json", file=name,
                                 fix="pass the .eval file Inspect wrote (inspect eval writes one per task run).")
            doc = _member(archive, raw, infos["header.json"], name)
            samples = [_member(archive, raw, infos[f], name) for f in sorted(infos)
                       if f.startswith("samples/") and f.endswith(".json")]
    except zipfile.BadZipFile:
        raise InputError(f"is not {_WHAT}: not a zip file", file=name,
                         fix="a .eval log is a zip that Inspect wrote; pass it unchanged.") from None
    if not isinstance(doc, dict):
        raise InputError(f"is not {_WHAT}: header.json is not an object", file=name, fix="pass the log Inspect wrote.")
    # The samples' own order in the log, as Inspect's reader gives them (not the zip's file order).
    order = {str(s): k for k, s in enumerate(((doc.get("eval") or {}).get("dataset") or {}).get("sample_ids") or [])}
    samples.sort(key=lambda s: (order.get(str(s.get("id")), len(order)), s.get("epoch") or 1)
                 if isinstance(s, dict) else (len(order), 0))
    return {**doc, "samples": samples}


def _read_eval(path: Path) -> Any:
    """A ``.eval`` log as plain data: through ``inspect_ai``'s reader when installed, else from the zip."""
    try:
        log_module: Any = importlib.import_module("inspect_ai.log")
    except ImportError:
        return read_eval_zip(path)
    try:
        log = log_module.read_eval_log(str(path), resolve_attachments=True)
    except Exception as exc:  # Inspect raises many kinds of errors for a file that is not its log
        raise InputError(f"is not {_WHAT}: Inspect's reader says {type(exc).__name__}: {exc}", file=str(path),
                         fix="pass the .eval file Inspect wrote, unchanged.") from None
    # mode="python" keeps a NaN score a NaN (the JSON mode would write null).
    return log.model_dump(mode="python")


def _log(path: Path) -> tuple[dict[str, Any], Source]:
    name = str(path)
    if path.suffix.lower() == ".eval":
        if not path.is_file():
            raise InputError("no such file", file=name, fix="check the path.")
        doc = _read_eval(path)
    else:
        doc = read_json_document(path, fix="pass the log as Inspect wrote it (.eval, or .json with "
                                           "--log-format json).")
    if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict) or not isinstance(doc.get("samples"), list):
        raise InputError(f"is not {_WHAT}: it needs eval and samples", file=name,
                         fix="pass a log Inspect wrote for a finished run (a log without samples has nothing to "
                             "read: run with --log-samples).")
    samples = [_resolved(s) for s in doc["samples"] if isinstance(s, dict)]
    columns = tuple(dict.fromkeys(k for s in samples for k in s))
    return doc["eval"], Source(Rows(f"{name} (row N is sample N)", columns, samples), "Inspect")


def _resolved(sample: dict[str, Any]) -> dict[str, Any]:
    """``sample`` with ``attachment://<hash>`` texts replaced by the attachments they name.

    Inspect moves long texts of a sample into ``attachments`` when it writes a log; its reader
    puts them back, and a log read as JSON or from the zip needs the same.
    """
    attachments = sample.get("attachments")
    if not isinstance(attachments, dict) or not attachments:
        return sample

    def walk(value: Any) -> Any:
        if isinstance(value, str) and value.startswith(_ATTACHMENT):
            return attachments.get(value.removeprefix(_ATTACHMENT), value)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return {k: (v if k in ("attachments", "events_data") else walk(v)) for k, v in sample.items()}


# -- answers --------------------------------------------------------------------------------------


def _content(value: Any) -> str | None:
    """Message content: text, or the text parts of a content list."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(p.get("text")) for p in value if isinstance(p, dict) and p.get("type") == "text") or None
    return None


def _prompt(sample: dict[str, Any]) -> str | None:
    given = sample.get("input")
    if isinstance(given, list):
        return "\n\n".join(filter(None, (_content(m.get("content")) for m in given
                                         if isinstance(m, dict) and m.get("role") == "user"))) or None
    return _content(given)


def _ids(ev: dict[str, Any], src: Source, i: int) -> tuple[str, str, str]:
    sample = src.rows.rows[i - 1]
    task = f"inspect-{as_id(str(ev.get('task') or 'task'))}-{as_id(str(src.text(i, 'id')))}"
    model = as_id(str(ev.get("model") or "model"))
    return task, f"{task}-e{sample.get('epoch') or 1}:{model}", model


def _answers(path: Path) -> Adapted:
    ev, src = _log(path)
    out = []
    for i, sample in enumerate(src.rows.rows, start=1):
        task, answer, model = _ids(ev, src, i)
        choices = (sample.get("output") or {}).get("choices") or []
        text = _content(choices[0].get("message", {}).get("content")) if choices else None
        if text is None:
            raise src.fail("has no output text", row=i, column="output",
                           fix="the sample produced no answer; drop it or rerun it.")
        prompt = _prompt(sample)
        if prompt is None:
            raise src.fail("has no input text", row=i, column="input", fix="check the log.")
        messages = sample.get("messages")
        row: dict[str, Any] = {"task_id": task, "prompt": prompt, "answer_id": answer, "family": model.split("/")[0],
                               "model": model, "text": text}
        if _is_trace(messages):
            # An agent run or a conversation is the answer as a whole: its messages, not the last text.
            row["text"], row["messages"] = None, messages
        out.append(row)
    dropped = ("the family: Inspect names a model's provider, used as its family",
               "the target, metadata and events (import the log as judgements for the scores)")
    columns: tuple[str, ...] = ("task_id", "prompt", "answer_id", "family", "model", "text")
    if any("messages" in r for r in out):
        columns += ("messages",)
    return Adapted(rows_of(src.rows, out, columns=columns), dropped)


def _is_trace(messages: Any) -> bool:
    """Whether a sample's messages are a trace or a conversation: tool calls, or several assistant turns."""
    if not isinstance(messages, list):
        return False
    roles = [m.get("role") for m in messages if isinstance(m, dict)]
    return "tool" in roles or roles.count("assistant") > 1


# -- judgements -----------------------------------------------------------------------------------


def _grader_calls(sample: dict[str, Any]) -> tuple[dict[str, list[dict[str, Any]]], int]:
    """Each scorer's model calls in the sample's transcript, and how many calls no span places.

    A call belongs to the nearest enclosing span of type ``scorer`` (current logs) or falls
    between a scorer's ``step`` begin and end (older logs). A call in no span at all is counted
    as unplaced, so that a log whose transcript judgelab cannot read is not taken for one
    without graders.
    """
    calls: dict[str, list[dict[str, Any]]] = {}
    spans: dict[str, tuple[str | None, str | None, str | None]] = {}  # id -> (type, name, parent)
    step_scorer: str | None = None
    steps = False
    loose = 0  # calls in no span judgelab saw
    for event in sample.get("events") or []:
        if not isinstance(event, dict):
            continue
        kind = event.get("event")
        if kind == "span_begin" and event.get("id") is not None:
            spans[str(event["id"])] = (event.get("type"), event.get("name"), event.get("parent_id"))
        elif kind == "step":
            steps = True
            if event.get("type") == "scorer":
                step_scorer = str(event.get("name")) if event.get("action") == "begin" else None
        elif kind == "model":
            scorer, known = _scorer_of(event.get("span_id"), spans)
            scorer = scorer or step_scorer
            if scorer is not None:
                calls.setdefault(scorer, []).append(event)
            elif not known:
                loose += 1
    # In a log with steps (before spans) a call outside a scorer's step is the solver's.
    return calls, 0 if steps and not spans else loose


def _scorer_of(span_id: Any, spans: dict[str, tuple[str | None, str | None, str | None]]) -> tuple[str | None, bool]:
    """The scorer whose span encloses ``span_id`` (``None`` if none does), and whether the span is known."""
    seen: set[str] = set()
    current = None if span_id is None else str(span_id)
    known = current in spans
    while current is not None and current in spans and current not in seen:
        seen.add(current)
        kind, name, parent = spans[current]
        if kind == "scorer":
            return str(name), True
        current = None if parent is None else str(parent)
    return None, known


def _value(src: Source, i: int, scorer: str, value: Any) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value.strip().upper() in _GRADES:
        return _GRADES[value.strip().upper()]
    if isinstance(value, int | float) and 0 <= value <= 100:
        return float(value)
    raise src.fail(f"scorer {scorer!r} gave {value!r}, which is not a grade (C, I, P, N), true/false or a number "
                   "in 0..100", row=i, column="scores", fix="judgelab reads one value per scorer; check the log.")


def _unscored(score: dict[str, Any]) -> bool:
    """Whether Inspect recorded no grade (``Score.unscored``: value NaN or null, a ``reason``)."""
    value = score.get("value")
    return value is None or (isinstance(value, float) and math.isnan(value))


def _reply(call: dict[str, Any]) -> str | None:
    """The grader's reply text in a model event."""
    output = call.get("output") or {}
    if isinstance(output.get("completion"), str):
        return str(output["completion"])
    choices = output.get("choices") or []
    return _content((choices[0].get("message") or {}).get("content")) if choices else None


def _judgement(ev: dict[str, Any], src: Source, i: int, scorer: str, score: dict[str, Any],
               call: dict[str, Any]) -> dict[str, Any]:
    """One scorer's grade of one sample as a judgement row (``value`` ``None`` for a parse failure)."""
    sample = src.rows.rows[i - 1]
    _, answer, _ = _ids(ev, src, i)
    usage = (call.get("output") or {}).get("usage") or {}
    row = {"run_id": f"inspect:{as_id(str(ev.get('run_id') or 'run'))}",
           "call_id": f"{src.text(i, 'id')}:e{sample.get('epoch') or 1}:{scorer}",
           "judge_model": as_id(str(call.get("model"))), "answer_id": answer, "scorer": scorer,
           "raw": score.get("explanation"), "input_tokens": usage.get("input_tokens"),
           "output_tokens": usage.get("output_tokens"), "parse_error": None,
           "meta": {"inspect_value": score.get("value"), "inspect_scorer": scorer}}
    if _unscored(score):
        reason = str(score.get("reason") or "no value")
        row["value"] = None
        row["parse_error"] = f"Inspect recorded no grade ({reason})"
        row["raw"] = _reply(call) or score.get("explanation")  # the grader's words, not Inspect's note on them
        row["meta"] = {"inspect_value": None, "inspect_reason": reason, "inspect_scorer": scorer,
                       "inspect_explanation": score.get("explanation")}
    else:
        row["value"] = _value(src, i, scorer, score.get("value"))
    return row


def _judgements(path: Path) -> Adapted:
    ev, src = _log(path)
    out: list[dict[str, Any]] = []
    skipped: set[str] = set()
    panels: set[str] = set()
    unplaced = 0
    for i, sample in enumerate(src.rows.rows, start=1):
        calls, lost = _grader_calls(sample)
        unplaced += lost
        for scorer, score in (sample.get("scores") or {}).items():
            if scorer not in calls:
                skipped.add(scorer)
                continue
            if len({str(c.get("model")) for c in calls[scorer]}) > 1:
                panels.add(scorer)
            out.append(_judgement(ev, src, i, scorer, score if isinstance(score, dict) else {}, calls[scorer][-1]))
    if not out:
        found = f"{unplaced} model call(s) outside any span, which judgelab cannot tie to a scorer; " if unplaced \
            else ""
        raise InputError(f"has no model-graded score to import: {found}the scorers "
                         f"{sorted(skipped) or '(none)'} made no model call", file=str(path),
                         fix="judgements are the grades of a scorer that calls a model (model_graded_qa, "
                             "model_graded_fact, a custom grader); import this log as answers only.")
    by_scorer: dict[str, float] = {}
    for row in out:
        by_scorer[row["scorer"]] = max(by_scorer.get(row["scorer"], 0.0), row["value"] or 0.0)
    for row in out:  # one format per scorer: binary when every value is 0..1
        row["format"] = "binary" if by_scorer[row.pop("scorer")] <= 1 else "numeric100"
        row["score"] = row.pop("value")
    dropped = ["the grader's prompt (metadata.grading) and the score's answer field (the scorer's name and value "
               "are in meta)"]
    if skipped:
        dropped.append(f"the scorer(s) {sorted(skipped)}: they made no model call, so they are not judges")
    if panels:
        dropped.append(f"all but the last grader of the scorer(s) {sorted(panels)}, which asked several models: "
                       "the judge is the last call's model")
    cols = ("run_id", "call_id", "judge_model", "format", "answer_id", "score", "parse_error", "raw",
            "input_tokens", "output_tokens", "meta")
    return Adapted(rows_of(src.rows, out, columns=cols), tuple(dropped))


ADAPTER = Adapter(
    name="inspect",
    exports="an eval log (log version 2), .eval (zip) or .json: eval (task, model), samples with input, output, "
            "scores (value, explanation, reason) and events (scorer spans, or steps before 0.3.50)",
    reads="answers (one per sample and epoch), judgements (each model-graded scorer's grade: C/I/P/N as "
          "binary 1/0/0.5/0, or a number; a grade Inspect could not read is a parse failure; the grader's model "
          "from the scorer's model call)",
    kinds={"answers": _answers, "judgements": _judgements},
)
