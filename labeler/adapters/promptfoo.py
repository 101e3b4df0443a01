"""promptfoo's eval export (``promptfoo eval -o out.json`` / ``promptfoo export``), results version 3.

The export is one JSON object: ``results.results`` holds one result per test case and provider,
with ``prompt.raw`` (the prompt as sent), ``provider.id``, ``response.output``, and
``gradingResult.componentResults``: one per assertion, each with ``assertion.type``, ``pass``,
``score`` (0-1) and ``reason``. Model-graded assertion types (promptfoo's docs, "Model-graded
metrics": ``llm-rubric``, ``search-rubric``, ``model-graded-closedqa``, ``factuality``, ``g-eval``,
``answer-relevance``, and the RAG ``context-*`` ones) are an LLM judge's grade; the others
(``contains``, ``cost``, ``latency``...) are not judges.

judgelab reads ``answers`` (one per result; the task is ``pf-`` and a hash of the prompt, the
model the provider id, its family the provider's prefix) and ``judgements`` (one per model-graded
component result: ``binary`` format, the 0-1 score and the pass verdict, the reason as the reply,
the rubric in ``meta``). The grader's model is the assertion's, the test's or ``defaultTest``'s
``options.provider`` (``provider``); when the export names none it is ``promptfoo-default``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judgelab.labeler._rows import Rows
from judgelab.labeler.adapters._common import Adapted, Adapter, Source, as_id, digest, read_json_document, rows_of
from judgelab.labeler.errors import InputError

MODEL_GRADED = frozenset({"llm-rubric", "search-rubric", "model-graded-closedqa", "factuality", "g-eval",
                          "answer-relevance", "context-faithfulness", "context-recall", "context-relevance",
                          "conversation-relevance"})
_DEFAULT = "promptfoo-default"
_WHAT = "a promptfoo eval export (promptfoo eval -o out.json): results.results[]"


def _export(path: Path) -> tuple[dict[str, Any], Source]:
    name = str(path)
    doc = read_json_document(path, fix="export the eval again as JSON.")
    results = (doc.get("results") or {}).get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list):
        raise InputError(f"is not {_WHAT}", file=name,
                         fix="write it with promptfoo eval -o out.json or promptfoo export <eval id>.")
    rows = [r for r in results if isinstance(r, dict)]
    return doc, Source(Rows(f"{name} (row N is results.results[N])", tuple(dict.fromkeys(k for r in rows for k in r)),
                            rows), "promptfoo")


def _provider(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("id"), str):
        return str(value["id"])
    return None


def _answer(src: Source, i: int) -> tuple[str, str, str, str]:
    """``(task_id, answer_id, model, prompt)`` of result ``i``."""
    result = src.rows.rows[i - 1]
    prompt = (result.get("prompt") or {}).get("raw")
    model = _provider(result.get("provider"))
    if not isinstance(prompt, str) or model is None:
        raise src.fail("has no prompt.raw or provider.id", row=i, column="prompt" if model else "provider",
                       fix="check that the file is promptfoo's export, unedited.")
    task = f"pf-{digest(prompt)}"
    return task, f"{task}:{as_id(model)}", as_id(model), prompt


def _answers(path: Path) -> Adapted:
    _, src = _export(path)
    out = []
    for i, result in enumerate(src.rows.rows, start=1):
        task, answer, model, prompt = _answer(src, i)
        output = (result.get("response") or {}).get("output")
        if output is None:
            raise src.fail("has no response.output", row=i, column="response",
                           fix="the provider returned nothing (see the result's error); drop the result.")
        out.append({"task_id": task, "prompt": prompt, "answer_id": answer, "family": model.split(":")[0],
                    "model": model, "text": output if isinstance(output, str) else json.dumps(output)})
    dropped = ("the family: promptfoo names a provider, whose prefix is used as the family",
               "the vars, test case and assertion results (import the export as judgements for the "
               "model-graded ones)")
    cols = ("task_id", "prompt", "answer_id", "family", "model", "text")
    return Adapted(rows_of(src.rows, out, columns=cols), dropped)


def _grader(doc: dict[str, Any], result: dict[str, Any], assertion: dict[str, Any]) -> str | None:
    test = result.get("testCase") or {}
    default = (doc.get("config") or {}).get("defaultTest") or {}
    for where in (assertion, test.get("options") or {}, default.get("options") or {}):
        found = _provider(where.get("provider")) if isinstance(where, dict) else None
        if found:
            return found
    return None


def _judgements(path: Path) -> Adapted:
    doc, src = _export(path)
    out: list[dict[str, Any]] = []
    other: set[str] = set()
    unnamed = 0
    for i, result in enumerate(src.rows.rows, start=1):
        _, answer, _, _ = _answer(src, i)
        components = (result.get("gradingResult") or {}).get("componentResults") or []
        for k, comp in enumerate(components, start=1):
            assertion = comp.get("assertion") if isinstance(comp, dict) else None
            kind = assertion.get("type") if isinstance(assertion, dict) else None
            if kind not in MODEL_GRADED:
                other.add(str(kind))
                continue
            grader = _grader(doc, result, assertion)  # type: ignore[arg-type]  # a dict: kind was read from it
            unnamed += grader is None
            score = comp.get("score")
            if not isinstance(score, int | float) or isinstance(score, bool) or not 0 <= score <= 1:
                raise src.fail(f"componentResults[{k}] ({kind}) has score {score!r}, not a number in 0..1", row=i,
                               column="gradingResult", fix="check that the file is promptfoo's export, unedited.")
            tokens = comp.get("tokensUsed") or {}
            out.append({"call_id": f"{result.get('id') or i}:{k}", "judge_model": as_id(grader or _DEFAULT),
                        "format": "binary", "answer_id": answer, "score": float(score),
                        "pass": comp.get("pass") if isinstance(comp.get("pass"), bool) else None,
                        "raw": comp.get("reason"), "input_tokens": tokens.get("prompt"),
                        "output_tokens": tokens.get("completion"),
                        "meta": {"promptfoo_assertion": kind, "rubric": assertion.get("value")}})  # type: ignore[union-attr]
    dropped = []
    if other:
        dropped.append(f"the assertions {sorted(other)}: not model-graded, so not a judge's")
    if unnamed:
        dropped.append(f"the grader's model of {unnamed} grade(s): the export names none (no options.provider), so "
                       f"the judge is recorded as {_DEFAULT} (promptfoo's default grader, which depends on its "
                       "version and the API keys set)")
    cols = ("call_id", "judge_model", "format", "answer_id", "score", "pass", "raw", "input_tokens", "output_tokens",
            "meta")
    return Adapted(rows_of(src.rows, out, columns=cols), tuple(dropped))


ADAPTER = Adapter(
    name="promptfoo",
    exports="eval export JSON (results version 3): results.results[] with prompt.raw, provider.id, "
            "response.output and gradingResult.componentResults[] (assertion type, pass, score, reason)",
    reads="answers (one per result), judgements (each model-graded assertion's grade: llm-rubric, "
          "model-graded-closedqa, factuality, g-eval...; binary 0-1 score and pass)",
    kinds={"answers": _answers, "judgements": _judgements},
)
