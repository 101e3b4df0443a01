"""Inspect AI eval logs (``inspect eval ... --log-format json``): the samples and their model-graded scores.

An Inspect log (``inspect_ai.log.EvalLog``, log version 2) is one JSON object: ``eval`` (``task``,
``model``, ``run_id``), and ``samples``, each with ``id``, ``epoch``, ``input`` (text or chat
messages), ``output.choices[0].message.content``, ``scores`` (per scorer: ``value``,
``explanation``) and ``events`` (the sample's transcript: a ``step`` event begins and ends each
scorer, a ``model`` event is a model call).

judgelab reads:

- ``answers``: one per sample and epoch (the task is ``inspect-<task>-<sample id>``; the answer
  ``<task>-e<epoch>:<model>``; the family is the model's provider, ``openai`` in
  ``openai/gpt-4o-mini``).
- ``judgements``: one per sample and *model-graded* scorer: a scorer whose step made a model call
  (``model_graded_qa``, ``model_graded_fact``, custom graders). The judge is that call's model, the
  score ``binary`` (Inspect's own ``value_to_float``: C 1, I 0, P 0.5, N 0; true/false; a number in
  0..1) or ``numeric100`` (a number in 0..100), the reply the scorer's ``explanation``, the tokens
  the call's. Scorers that made no model call (``match``, ``includes``...) are not judges: left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labeler._rows import Rows
from labeler.adapters._common import Adapted, Adapter, Source, as_id, read_json_document, rows_of
from labeler.errors import InputError

_GRADES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_WHAT = "an Inspect AI eval log in JSON (inspect eval --log-format json)"


def _log(path: Path) -> tuple[dict[str, Any], Source]:
    name = str(path)
    doc = read_json_document(path, fix="a binary .eval log must be converted: inspect log convert --to json.")
    if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict) or not isinstance(doc.get("samples"), list):
        raise InputError(f"is not {_WHAT}: it needs eval and samples", file=name,
                         fix="write the log with --log-format json, or convert it: inspect log convert --to json.")
    samples = [s for s in doc["samples"] if isinstance(s, dict)]
    columns = tuple(dict.fromkeys(k for s in samples for k in s))
    return doc["eval"], Source(Rows(f"{name} (row N is sample N)", columns, samples), "Inspect")


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
        out.append({"task_id": task, "prompt": prompt, "answer_id": answer, "family": model.split("/")[0],
                    "model": model, "text": text})
    dropped = ("the family: Inspect names a model's provider, used as its family",
               "the target, messages, metadata and events (import the log as judgements for the scores)")
    return Adapted(rows_of(src.rows, out, columns=("task_id", "prompt", "answer_id", "family", "model", "text")),
                   dropped)


def _grader_calls(sample: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each scorer's last model call in the sample's events (a scorer that made none is absent)."""
    calls: dict[str, dict[str, Any]] = {}
    scorer = None
    for event in sample.get("events") or []:
        if not isinstance(event, dict):
            continue
        if event.get("event") == "step" and event.get("type") == "scorer":
            scorer = str(event.get("name")) if event.get("action") == "begin" else None
        elif event.get("event") == "model" and scorer is not None:
            calls[scorer] = event
    return calls


def _value(src: Source, i: int, scorer: str, value: Any) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value.strip().upper() in _GRADES:
        return _GRADES[value.strip().upper()]
    if isinstance(value, int | float) and 0 <= value <= 100:
        return float(value)
    raise src.fail(f"scorer {scorer!r} gave {value!r}, which is not a grade (C, I, P, N), true/false or a number "
                   "in 0..100", row=i, column="scores", fix="judgelab reads one value per scorer; check the log.")


def _judgements(path: Path) -> Adapted:
    ev, src = _log(path)
    out: list[dict[str, Any]] = []
    skipped: set[str] = set()
    for i, sample in enumerate(src.rows.rows, start=1):
        _, answer, _ = _ids(ev, src, i)
        calls = _grader_calls(sample)
        for scorer, score in (sample.get("scores") or {}).items():
            if scorer not in calls:
                skipped.add(scorer)
                continue
            call = calls[scorer]
            usage = (call.get("output") or {}).get("usage") or {}
            out.append({"run_id": f"inspect:{as_id(str(ev.get('run_id') or 'run'))}",
                        "call_id": f"{src.text(i, 'id')}:e{sample.get('epoch') or 1}:{scorer}",
                        "judge_model": as_id(str(call.get("model"))), "answer_id": answer, "scorer": scorer,
                        "value": _value(src, i, scorer, (score or {}).get("value")),
                        "raw": (score or {}).get("explanation"), "input_tokens": usage.get("input_tokens"),
                        "output_tokens": usage.get("output_tokens"),
                        "meta": {"inspect_value": (score or {}).get("value"), "inspect_scorer": scorer}})
    by_scorer: dict[str, float] = {}
    for row in out:
        by_scorer[row["scorer"]] = max(by_scorer.get(row["scorer"], 0.0), row["value"])
    for row in out:  # one format per scorer: binary when every value is 0..1
        row["format"] = "binary" if by_scorer[row.pop("scorer")] <= 1 else "numeric100"
        row["score"] = row.pop("value")
    dropped = ["the grader's prompt (metadata.grading) and the score's answer field (the scorer's name and value "
               "are in meta)"]
    if skipped:
        dropped.append(f"the scorer(s) {sorted(skipped)}: they made no model call, so they are not judges")
    cols = ("run_id", "call_id", "judge_model", "format", "answer_id", "score", "raw", "input_tokens",
            "output_tokens", "meta")
    return Adapted(rows_of(src.rows, out, columns=cols), tuple(dropped))


ADAPTER = Adapter(
    name="inspect",
    exports="an eval log in JSON (log version 2): eval (task, model), samples with input, output, scores "
            "(value, explanation) and events",
    reads="answers (one per sample and epoch), judgements (each model-graded scorer's grade: C/I/P/N as "
          "binary 1/0/0.5/0, or a number; the grader's model from the scorer's model call)",
    kinds={"answers": _answers, "judgements": _judgements},
)
