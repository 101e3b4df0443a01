"""Label Studio's JSON export: tasks with ``data``, ``annotations[].result[]`` and ``predictions``.

Label Studio exports one JSON array of tasks (its documented "JSON" format, labelstud.io/guide/
task_format): each task has ``data`` (the fields its labeling config shows), ``annotations``
(each with ``completed_by``, ``result``, ``was_cancelled``, ``lead_time``, ``created_at``,
``parent_annotation``) and ``predictions`` (each with ``model_version`` and ``result``). A result
item has ``from_name``, ``to_name``, ``type`` and ``value``: ``{"rating": 4}``,
``{"number": 72}``, ``{"choices": ["pass"]}``, ``{"text": ["..."]}``.

judgelab reads, from tasks whose answer is ``data.answer_id`` (judgelab's export), ``data.id``, or
else ``ls-task-<task id>``:

- ``answers``: one per task, from ``data``: ``prompt`` (or ``instruction``/``question``), ``text``
  (or ``response``/``output``/``answer``), or a chat in ``messages`` (the last assistant turn is
  the answer, the turns before it the prompt); with ``answer_id`` and ``prompt`` beside them
  (judgelab's export of a conversation answer) the ``messages`` are the answer's conversation;
  optional ``task_id``, ``category``, ``model``, ``family``. Tasks that name no family or model
  get ``unknown`` (or ``--family``, which the import summary then names).
- ``labels``: one per annotation not cancelled: ``completed_by`` (an email, a username, or a user
  id with the user's email in ``created_username``) as the rater; the score result named
  ``score`` (or the only one) as the score and the others as ``criterion:<from_name>`` (a score
  result is a ``rating``, a ``number``, or a ``choices`` whose one choice is a number, as
  judgelab writes a binary or 0-2 scale); the ``choices`` result named ``pass``, or the one
  ``--map pass=<from_name>`` names, as the pass verdict (a Yes/No question such as
  "hallucination?" is not one: the others are left out, and listed); ``textarea`` results named
  ``flag_reason`` as the flag and others as the comment (an empty box is no comment);
  ``lead_time`` as seconds; the annotation's ``id`` and ``parent_annotation`` as the label's
  ``label_id`` and ``supersedes``.
- ``judgements``: one per prediction, ``model_version`` as the judge, the same results (the
  score also from ``score_<format>``), the scoring format from a ``choices`` result named
  ``format`` (judgelab's export writes it; Label Studio has no notion of one) and the judge's
  reply from a ``textarea`` named ``raw``.

``judgelab export labels|judgements|answers --to label-studio`` writes this shape
(:func:`to_label_studio`): tasks numbered in ``id``; raters as user ids 1..n in ``completed_by``
with their names in ``created_username``, and the map of names to ids beside the tasks
(``FILE.users.json``); a labeling config beside them (:func:`label_config`) whose score controls
come from the rubric's scale (:func:`_control`), so that a project opens them as they are.
``data`` carries no family or model, which Label Studio would show to its annotators; a
conversation answer's ``text`` is its rendering. Judge replies that did not parse and pairwise
judgements are not predictions: they are counted in :attr:`LabelStudioExport.left_out`.

Label Studio's import (``ImportApiSerializer``) keeps an annotation's ``completed_by`` only when it
is the user id of a member of the organization (or ``{"email": ...}`` of one); any other id stops
the import, and an annotation without one goes to the user who imports. judgelab's ids 1..n are
its own numbering: create the raters in Label Studio and replace each id by theirs with the users
map (docs/files.md), or drop ``completed_by`` to import them all as yourself.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape as xml_escape

import pandas as pd

from judgelab.labeler._rows import Rows, read_rows
from judgelab.labeler.adapters._common import (
    UNNAMED_FAMILY,
    Adapted,
    Adapter,
    Source,
    as_id,
    digest,
    is_missing,
    rows_of,
)
from judgelab.labeler.scales import FormatSpec, format_spec
from judgelab.labeler.transcripts import Transcript, render

UNKNOWN = "unknown"
"""The family and model of an answer whose task data names neither."""
_UNMAPPED = "\0choices:"  # marks an unmapped choices result's name among the dropped sentences
_PASS = {"pass": True, "yes": True, "true": True, "fail": False, "no": False, "false": False}
_WHAT = "a Label Studio JSON export (an array of tasks with data and annotations)"
_PROMPTS = ("prompt", "instruction", "question")
_TEXTS = ("text", "response", "output", "answer")
_MAX_STARS = 10  # the most stars judgelab asks a Rating for (Label Studio's own templates stay at or below 10)
_MAX_CHOICES = 12  # more levels than this read better as a Number than as a row of choices


def _rater(value: Any, username: Any = None) -> str | None:
    """The rater of an annotation: ``completed_by``'s email or username, else the annotation's own name for them.

    Label Studio stores ``completed_by`` as a user id (an int); its export writes the user's
    email beside it in ``created_username`` (``"<email>, <id>"``), as judgelab's export does.
    """
    if isinstance(value, dict):
        value = value.get("email") or value.get("username") or value.get("id")
    if isinstance(value, int) and isinstance(username, str) and username.strip():
        name, _, uid = username.strip().rpartition(", ")
        return as_id(name if name and uid == str(value) else username.strip())
    if is_missing(value):
        return None
    return as_id(str(value) if not isinstance(value, int) else f"ls-user-{value}")


def _number(item: Any, pass_from: str) -> float | None:
    """A result item's score: a Rating or Number value, or a Choices whose one choice is a level (``"2"``)."""
    if not isinstance(item, dict) or not isinstance(item.get("value"), dict):
        return None
    kind, value = item.get("type"), item["value"]
    if kind in ("rating", "number"):
        number = value.get(kind)
        return float(number) if isinstance(number, int | float) and not isinstance(number, bool) else None
    if kind == "choices" and item.get("from_name") not in (pass_from, "format"):
        picked = value.get("choices") or []
        try:
            return float(picked[0]) if len(picked) == 1 else None
        except (TypeError, ValueError):
            return None  # a Yes/No or other word: a question, not a score
    return None


def _text(name: str, value: dict[str, Any], out: dict[str, Any]) -> None:
    """A textarea result as the flag, the judge's reply or the comment; an empty box is none of them (not "")."""
    text = "\n".join(str(t) for t in value.get("text") or [] if t is not None)
    if text.strip():
        out[name if name in ("flag_reason", "raw") else "comment"] = text


def _results(src: Source, i: int, where: str, result: Any, out: dict[str, Any], dropped: set[str],
             pass_from: str) -> None:
    """Put one annotation's (or prediction's) result items into ``out`` as judgelab columns.

    Only the ``choices`` result named ``pass_from`` is the pass verdict: a Yes/No question such
    as "hallucination?" is not a verdict on the answer, and with several of them none may be
    guessed (``--map pass=<from_name>`` names the one that is). A Choices whose choice is a
    number is a score on a scale with few levels (judgelab's export writes a binary or 0-2 scale
    so); ``score_<format>`` is the score of a judgement on a format other than the rubric's.
    """
    if not isinstance(result, list):
        raise src.fail(f"{where}.result is not a list", row=i, column="annotations",
                       fix="check that the file is Label Studio's JSON export, unedited.")
    numbers = [r for r in result if _number(r, pass_from) is not None]
    for item in result:
        if not isinstance(item, dict) or not isinstance(item.get("value"), dict):
            raise src.fail(f"{where}.result has an item without a value", row=i, column="annotations",
                           fix="check that the file is Label Studio's JSON export, unedited.")
        kind, name, value = item.get("type"), str(item.get("from_name") or ""), item["value"]
        number = _number(item, pass_from)
        if number is not None:
            if name == "score" or name.startswith("score_") or len(numbers) == 1:
                out["score"] = number
            else:
                out[f"criterion:{as_id(name)}"] = number
        elif kind in ("rating", "number"):
            continue  # no value: nothing given
        elif kind == "choices" and name == "format":
            out["format"] = (value.get("choices") or [None])[0]
        elif kind == "choices" and name == pass_from:
            picked = [str(c).strip().lower() for c in value.get("choices") or []]
            if len(picked) != 1 or picked[0] not in _PASS:
                raise src.fail(f"{where}: the choices result {name!r} (the pass verdict) is {value.get('choices')}",
                               row=i, column="annotations",
                               fix="map as pass a question answered with one of pass/fail, yes/no, true/false.")
            out["pass"] = _PASS[picked[0]]
        elif kind == "choices":
            dropped.add(f"{_UNMAPPED}{name}")
        elif kind == "textarea":
            _text(name, value, out)
        else:
            dropped.add(f"results of type {kind!r} ({name!r}): judgelab reads rating, number, choices and textarea")


def _answer_id(src: Source, i: int) -> str:
    """The task's answer: ``data.answer_id`` (judgelab's export), else ``data.id``, else ``ls-task-<task id>``."""
    data = src.rows.rows[i - 1]["data"]
    for key in ("answer_id", "id"):
        if not is_missing(data.get(key)):
            return str(data[key])
    if not is_missing(src.get(i, "id")):
        return f"ls-task-{src.text(i, 'id')}"
    raise src.fail("the task has no id and its data no answer_id", row=i, column="data",
                   fix="export from Label Studio with task ids, or give each task's data an answer_id.")


def _read(path: Path) -> Rows:
    """The file's tasks: a JSON array of them, or one task object (a cloud storage target's ``<id>.json``)."""
    if path.suffix.lower() == ".json" and path.is_file():
        try:
            doc = json.loads(path.read_text(encoding="utf-8-sig"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            doc = None  # read_rows says what is wrong, with the place
        if isinstance(doc, dict) and "data" in doc:
            return Rows(str(path), tuple(doc), [doc])
    return read_rows(path)


def _tasks(path: Path) -> Source:
    src = Source(_read(path), "Label Studio")
    src.require("data", what=_WHAT)
    for i in range(1, len(src.rows.rows) + 1):
        if not isinstance(src.get(i, "data"), dict):
            raise src.fail("data is not an object", row=i, column="data",
                           fix="check that the file is Label Studio's JSON export, unedited.")
        _answer_id(src, i)
    return src


def _dialogue(messages: list[Any]) -> tuple[str | None, str | None]:
    """A chat (``data.messages`` of ``role``/``content``, as Label Studio's chat templates show) as prompt and answer.

    The answer is the last assistant turn; the prompt is the dialogue before it, one ``role: content``
    line per turn (only the text when the dialogue before it is one user turn).
    """
    turns = [(str(m.get("role")), str(m.get("content"))) for m in messages
             if isinstance(m, dict) and not is_missing(m.get("content"))]
    last = max((k for k, (role, _) in enumerate(turns) if role == "assistant"), default=None)
    if last is None or last == 0:
        return None, None
    before = turns[:last]
    if len(before) == 1:
        return before[0][1], turns[last][1]
    return "\n\n".join(f"{role}: {content}" for role, content in before), turns[last][1]


def _answers(path: Path) -> Adapted:
    src = _tasks(path)
    out = []
    unknown = 0
    for i in range(1, len(src.rows.rows) + 1):
        data = src.rows.rows[i - 1]["data"]
        prompt = next((data[k] for k in _PROMPTS if not is_missing(data.get(k))), None)
        text = next((data[k] for k in _TEXTS if not is_missing(data.get(k))), None)
        messages = None
        if prompt is not None and not is_missing(data.get("answer_id")) and isinstance(data.get("messages"),
                                                                                       list | dict):
            # judgelab's export of a conversation answer: the messages are the answer, the text its rendering.
            messages, text = data["messages"], None
        elif prompt is None and text is None and isinstance(data.get("messages"), list):
            prompt, text = _dialogue(data["messages"])
        if prompt is None or (text is None and messages is None):
            raise src.fail(f"data has no {'prompt' if prompt is None else 'answer text'}; it has {sorted(data)}",
                           row=i, column="data", fix=f"name the fields one of {list(_PROMPTS)} and {list(_TEXTS)}.")
        model = data.get("model") if not is_missing(data.get("model")) else None
        family = data.get("family") if not is_missing(data.get("family")) else model
        unknown += family is None
        out.append({"task_id": data.get("task_id") or f"ls-{digest(str(prompt))}", "prompt": prompt,
                    "category": data.get("category"), "answer_id": _answer_id(src, i),
                    "family": as_id(str(family)) if family is not None else UNKNOWN,
                    "model": as_id(str(model)) if model is not None else UNKNOWN,
                    "text": None if messages is not None else text, "messages": messages})
    extra = sorted({k for r in src.rows.rows for k in r["data"]} - {*_PROMPTS, *_TEXTS, "answer_id", "id", "task_id",
                                                                    "category", "family", "model", "messages"})
    dropped = ["the annotations and predictions (import the file as labels or judgements)"]
    if unknown:
        dropped.append(f"{UNNAMED_FAMILY} {unknown} task(s): their data has neither, so they are {UNKNOWN!r} "
                       "(give data.family and data.model, or --family NAME, to compare families)")
    if extra:
        dropped.append(f"the data field(s) {extra}")
    cols: tuple[str, ...] = ("task_id", "prompt", "category", "answer_id", "family", "model", "text")
    if any(r["messages"] is not None for r in out):
        cols = (*cols, "messages")
    else:
        out = [{k: v for k, v in r.items() if k != "messages"} for r in out]
    return Adapted(rows_of(src.rows, out, columns=cols), tuple(dropped))


def _who(src: Source, i: int, n: int, key: str, item: dict[str, Any]) -> dict[str, Any]:
    """The rater's (annotation) or judge's (prediction) columns of one item."""
    if key == "annotations":
        rater = _rater(item.get("completed_by"), item.get("created_username"))
        if rater is None:
            raise src.fail(f"annotations[{n}] has no completed_by", row=i, column="annotations",
                           fix="export with the annotators (completed_by) included.")
        return {"label_id": item.get("id"), "supersedes": item.get("parent_annotation"), "rater": rater,
                "seconds": item.get("lead_time"), "created_at": item.get("created_at")}
    judge = item.get("model_version")
    if is_missing(judge):
        raise src.fail(f"predictions[{n}] has no model_version", row=i, column="predictions",
                       fix="say which judge made the prediction in model_version.")
    return {"judge_model": as_id(str(judge))}


def _item(src: Source, i: int, n: int, key: str, item: Any, dropped: set[str], pass_from: str) -> dict[str, Any]:
    """One annotation or prediction as a row of labels or judgements."""
    if not isinstance(item, dict):
        raise src.fail(f"{key}[{n}] is not an object", row=i, column=key, fix="check the export.")
    row: dict[str, Any] = {"answer_id": _answer_id(src, i), **_who(src, i, n, key, item)}
    _results(src, i, f"{key}[{n}]", item.get("result"), row, dropped, pass_from)
    if not any(k in row for k in ("score", "pass", "flag_reason")):
        found = [f"{r.get('type')} {r.get('from_name')!r}" for r in item.get("result") or [] if isinstance(r, dict)]
        raise src.fail(f"{key}[{n}] has no score or pass verdict judgelab can read (its results: {found})",
                       row=i, column=key,
                       fix="judgelab reads a Rating or Number result (named score, or the only one), the Choices "
                           "result named pass (or the one given by --map pass=<from_name>); a textarea named "
                           "flag_reason flags the item.")
    if key == "predictions" and "format" not in row:
        raise src.fail(f"predictions[{n}] does not say its scoring format", row=i, column="predictions",
                       fix="add a choices result named 'format' (likert5, numeric100, binary), as judgelab's "
                           "export writes it.")
    return row


def people(path: Path, key: str, *, pass_from: str = "pass") -> Adapted:
    """Annotations (``key`` ``annotations``) as labels or predictions as judgements.

    Args:
        path: The export.
        key: ``annotations`` or ``predictions``.
        pass_from: The ``from_name`` of the choices result that is the pass verdict.
    """
    src = _tasks(path)
    out: list[dict[str, Any]] = []
    dropped: set[str] = set()
    cancelled = 0
    for i in range(1, len(src.rows.rows) + 1):
        items = src.get(i, key) or []
        if not isinstance(items, list):
            raise src.fail(f"{key} is not a list", row=i, column=key, fix="check the export.")
        for n, item in enumerate(items, start=1):
            if isinstance(item, dict) and item.get("was_cancelled"):
                cancelled += 1
                continue
            out.append(_item(src, i, n, key, item, dropped, pass_from))
    if cancelled:
        dropped.add(f"{cancelled} cancelled (skipped) annotation(s)")
    unmapped = sorted(d.removeprefix(_UNMAPPED) for d in dropped if d.startswith(_UNMAPPED))
    if unmapped:
        dropped = {d for d in dropped if not d.startswith(_UNMAPPED)}
        dropped.add(f"the choices result(s) {unmapped}: not mapped (--map pass=<from_name> reads one as the pass "
                    "verdict, when its Yes/pass means the answer passes)")
    dropped.add("the rubric version and the label's source: Label Studio has no place for them (the newest rubric; "
                "source import)" if key == "annotations" else
                "the run, call, probe, tokens, cost and latency: Label Studio keeps the score, pass, format and raw "
                "reply (judgelab's --to hf export keeps everything)")
    columns = tuple(dict.fromkeys(k for r in out for k in r))
    if key == "annotations" and all(r.get("supersedes") is None for r in out):
        columns = tuple(c for c in columns if c not in ("label_id", "supersedes"))
        out = [{k: v for k, v in r.items() if k not in ("label_id", "supersedes")} for r in out]
    return Adapted(rows_of(src.rows, out, columns=columns, note=f"one row per task and {key[:-1]}"),
                   tuple(sorted(dropped)))


def _control(spec: FormatSpec | None) -> str:
    """The Label Studio control that holds a score on ``spec``: ``rating``, ``number`` or ``choices``.

    Label Studio's Rating gives whole stars 1..maxRating, so only a 1..k scale (k at most 10) is one;
    a scale with few other levels (binary 0/1, an ordinal 0-2, a half-step scale) is a Choices of
    its levels; a continuous scale (``numeric100``) or one with many levels is a Number.
    """
    if spec is None or spec.step is None:
        return "number"
    if spec.whole and spec.low == 1 and spec.step == 1 and spec.high <= _MAX_STARS:
        return "rating"
    return "choices" if len(spec.levels) <= _MAX_CHOICES else "number"


def _level_text(value: float) -> str:
    """A level as a Choices value: ``"0"``, ``"1"``, ``"1.5"``."""
    return f"{float(value):g}"


def _plain(value: Any) -> Any:
    if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):
        value = value.item()
        return None if isinstance(value, float) and math.isnan(value) else value
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value


def _score_item(name: str, spec: FormatSpec | None, value: float) -> dict[str, Any]:
    """One score (or criterion score) as the result of the control :func:`_control` gives ``spec``."""
    kind = _control(spec)
    if kind == "choices":
        return _result(name, "choices", [_level_text(value)])
    if kind == "rating":
        return _result(name, "rating", round(value))
    return _result(name, "number", int(value) if float(value).is_integer() else float(value))


def _result(name: str, kind: str, value: Any) -> dict[str, Any]:
    key = {"rating": "rating", "number": "number", "choices": "choices", "textarea": "text"}[kind]
    return {"from_name": name, "to_name": "text", "type": kind, "value": {key: value}}


def _result_items(rec: dict[str, Any], criteria: list[str], spec: FormatSpec | None,
                  score_name: str = "score") -> list[dict[str, Any]]:
    items = []
    if _plain(rec.get("score")) is not None:
        items.append(_score_item(score_name, spec, float(rec["score"])))
    for c in criteria:
        if _plain(rec.get(c)) is not None:
            items.append(_score_item(c.removeprefix("criterion:"), spec, float(rec[c])))
    if _plain(rec.get("pass")) is not None:
        items.append(_result("pass", "choices", ["pass" if rec["pass"] else "fail"]))
    for name in ("comment", "flag_reason", "raw"):
        text = _plain(rec.get(name))
        if text is not None and str(text).strip():
            items.append(_result(name, "textarea", [str(text)]))
    return items


def _spec_of(name: str) -> FormatSpec | None:
    try:
        return format_spec(name)
    except KeyError:
        return None


def _task_data(a: dict[str, Any]) -> dict[str, Any]:
    """A task's ``data``: the answer's ids, prompt and text, never its family or model.

    A conversation answer's ``text`` is its rendering (what judgelab's judge and raters read, one
    ``role: content`` block per message), which Label Studio's Text tag shows; its ``messages``
    (judgelab's transcript as JSON) ride along so the answer imports back as the same conversation.
    """
    data = {"answer_id": str(a["answer_id"]), "task_id": str(a["task_id"]), "prompt": str(a["prompt"])}
    messages = _plain(a.get("messages"))
    if messages is not None:
        transcript = Transcript.from_json(str(messages))
        data["text"] = render(transcript)
        data["messages"] = json.loads(str(messages))
    else:
        data["text"] = str(_plain(a.get("text")) or "")
    return data


@dataclass(frozen=True)
class LabelStudioExport:
    """What :func:`to_label_studio` wrote.

    Attributes:
        tasks: The tasks (a JSON array for Label Studio's import).
        users: Each rater's ``completed_by`` id, by rater name (written beside the tasks).
        left_out: One sentence per kind of thing the tasks do not carry, with counts.
    """

    tasks: list[dict[str, Any]]
    users: dict[str, int] = field(default_factory=dict)
    left_out: tuple[str, ...] = ()

    def tasks_json(self) -> bytes:
        """The tasks as JSON; NaN is not JSON, so a stray one is an error here, not in Label Studio."""
        return json.dumps(self.tasks, ensure_ascii=False, indent=1, allow_nan=False).encode("utf-8")

    def users_json(self) -> bytes:
        """The users map: rater name to ``completed_by`` id."""
        return json.dumps(self.users, ensure_ascii=False, indent=1, allow_nan=False).encode("utf-8")


def to_label_studio(answers: pd.DataFrame, labels: pd.DataFrame | None = None,
                    judgements: pd.DataFrame | None = None, *, every_answer: bool = False,
                    scale: FormatSpec | None = None, users: Mapping[str, int] | None = None) -> LabelStudioExport:
    """Label Studio tasks for judgelab's answers: labels as annotations, pointwise judgements as predictions.

    Args:
        answers: ``judgelab export answers`` rows.
        labels: ``judgelab export labels`` rows (every row, superseded ones too, linked by
            ``parent_annotation``), or ``None``.
        judgements: ``judgelab export judgements`` rows (pairwise ones and replies that did not
            parse are left out, and counted in ``left_out``: a Label Studio task is one answer,
            and a prediction needs a score), or ``None``.
        every_answer: A task for every answer (to label in Label Studio), not only the labelled
            or judged ones.
        scale: The rubric's scale: labels' scores and criteria, and judgements on it, are results
            of the control :func:`_control` gives it (a judgement on another format goes to
            ``score_<format>``).
        users: Label Studio user ids of raters (an earlier export's users map, edited to the
            ids the raters have in Label Studio); other raters are numbered after the largest.

    Returns:
        One task per answer (with a label or judgement, or every one), numbered from 1 in ``id``:
        ``data`` has the answer's ``answer_id``, ``task_id``, ``prompt`` and ``text`` (a
        conversation's rendering, with its ``messages``), never its family or model. An
        annotation's ``completed_by`` is the rater's number in ``users`` (Label Studio reads a
        user id) and ``created_username`` the rater's name with that number, as Label Studio's
        export writes it (``"<name>, <id>"``), so the rater comes back unchanged.
    """
    tasks: dict[str, dict[str, Any]] = {}
    by_id = answers.set_index("answer_id", drop=False)

    def task(answer_id: str) -> dict[str, Any]:
        if answer_id not in tasks:
            tasks[answer_id] = {"id": len(tasks) + 1, "data": _task_data(by_id.loc[answer_id].to_dict()),
                                "annotations": [], "predictions": []}
        return tasks[answer_id]

    if every_answer:
        for answer_id in answers["answer_id"]:
            task(str(answer_id))
    ids: dict[str, int] = {}
    left_out: list[str] = []
    if labels is not None and len(labels):
        criteria = [c for c in labels.columns if str(c).startswith("criterion:")]
        raters = list(dict.fromkeys(labels["rater"].astype(str)))
        ids = {r: int(users[r]) for r in raters if users and r in users}
        for r in raters:
            ids.setdefault(r, max(ids.values(), default=0) + 1)
        users = ids
        for rec in labels.to_dict("records"):
            uid = users[str(rec["rater"])]
            task(str(rec["answer_id"]))["annotations"].append({
                "id": _plain(rec["label_id"]), "completed_by": uid, "created_username": f"{rec['rater']}, {uid}",
                "result": _result_items(rec, criteria, scale), "was_cancelled": False, "ground_truth": False,
                "created_at": _plain(rec.get("created_at")), "lead_time": _plain(rec.get("seconds")),
                "parent_annotation": _plain(rec.get("supersedes")),
            })
    if judgements is not None and len(judgements):
        pairwise = judgements["answer_b_id"].notna()
        unparsed = ~pairwise & judgements["score"].isna()
        for rec in judgements[~pairwise & ~unparsed].to_dict("records"):
            fmt = str(rec["format"])
            on_scale = scale is not None and fmt == scale.name
            items = _result_items(rec, [], scale if on_scale else _spec_of(fmt),
                                  "score" if on_scale else f"score_{as_id(fmt)}")
            items.append(_result("format", "choices", [fmt]))
            task(str(rec["answer_id"]))["predictions"].append({"model_version": rec["judge_model"], "result": items})
        if unparsed.any():
            left_out.append(f"{int(unparsed.sum())} judge repl(ies) that did not parse (no score; a Label Studio "
                            "prediction is a score): see them with `judgelab export judgements` (parse_error)")
        if pairwise.any():
            left_out.append(f"{int(pairwise.sum())} pairwise judgement(s): a Label Studio task is one answer")
    return LabelStudioExport(list(tasks.values()), ids, tuple(left_out))


def _esc(text: str) -> str:
    return xml_escape(text, {'"': "&quot;"})


def _score_control(name: str, spec: FormatSpec | None, seen: list[float]) -> list[str]:
    """The XML of the control that holds scores on ``spec`` (from the values ``seen`` without one)."""
    kind, n = _control(spec), _esc(name)
    if kind == "rating":
        top = int(spec.high) if spec is not None else max(5, int(max(seen, default=5)))
        return [f'  <Rating name="{n}" toName="text" maxRating="{top}"/>']
    if kind == "choices" and spec is not None:
        lines = [f'  <Choices name="{n}" toName="text" choice="single" showInline="true">']
        for level in spec.levels:
            label = spec.label(level)
            hint = f' hint="{_esc(label)}"' if label else ""
            lines.append(f'    <Choice value="{_level_text(level)}"{hint}/>')
        return [*lines, "  </Choices>"]
    low = spec.low if spec is not None else min([0.0, *seen])
    high = spec.high if spec is not None else max([100.0, *seen])
    step = f' step="{spec.step:g}"' if spec is not None and spec.step is not None else ""
    return [f'  <Number name="{n}" toName="text" min="{low:g}" max="{high:g}"{step}/>']


def label_config(tasks: list[dict[str, Any]], *, criteria: Iterable[tuple[str, str]] = (),
                 instructions: str = "", scale: FormatSpec | None = None) -> str:
    """A Label Studio labeling config (XML) with a control for every result ``tasks`` hold.

    Label Studio checks every annotation and prediction against its project's config: each
    result's ``from_name`` must be a control of the result's type (Rating, Number, Choices with
    that choice, TextArea) naming ``text``. The config shows the prompt and the answer, and
    carries the rubric's criteria names and instructions as the controls' headers. A score's
    control comes from its scale, not from the scores seen: the rubric's ``scale`` for ``score``
    and the criteria, the judgement's format for ``score_<format>``.

    Args:
        tasks: What :func:`to_label_studio` wrote.
        criteria: ``(criterion id, name)`` pairs of the rubric, in its order (``score`` and
            ``pass`` may be named too).
        instructions: The rubric's instructions, shown above the controls.
        scale: The rubric's scale.
    """
    names = dict(criteria)
    rubric_controls = [c for c in names if c not in ("score", "pass")]
    controls: dict[str, tuple[str, set[str], list[float]]] = {}
    for t in tasks:
        for item in [r for a in t["annotations"] + t["predictions"] for r in a["result"]]:
            kind, name, value = item["type"], item["from_name"], item["value"]
            entry = controls.setdefault(name, (kind, set(), []))
            if kind == "choices":
                entry[1].update(str(c) for c in value["choices"])
            elif kind in ("rating", "number"):
                entry[2].append(float(value[kind]))
    if not any(t["predictions"] for t in tasks):  # a project to label in needs these even if unused
        for name in ("score", *rubric_controls, "pass", "comment", "flag_reason"):
            kind = "textarea" if name in ("comment", "flag_reason") else "pass" if name == "pass" else _control(scale)
            controls.setdefault(name, ("choices" if kind == "pass" else kind, set(), []))
    lines = ["<View>", '  <Header value="Prompt"/>', '  <Text name="prompt" value="$prompt"/>',
             '  <Header value="Answer"/>', '  <Text name="text" value="$text"/>']
    if instructions:
        lines.append(f'  <Header value="{_esc(instructions)}" size="6"/>')
    for name, (kind, choices, numbers) in controls.items():
        lines.append(f'  <Header value="{_esc(names.get(name, name))}" size="5"/>')
        spec = scale if name == "score" or name in rubric_controls or name in names else (
            _spec_of(name.removeprefix("score_")) if name.startswith("score_") else None)
        if kind in ("rating", "number") or (kind == "choices" and name not in ("pass", "format") and spec):
            lines += _score_control(name, spec, numbers)
        elif kind == "choices":
            picks = sorted(choices | ({"pass", "fail"} if name == "pass" else set()))
            lines.append(f'  <Choices name="{_esc(name)}" toName="text" choice="single">')
            lines += [f'    <Choice value="{_esc(c)}"/>' for c in picks]
            lines.append("  </Choices>")
        else:
            lines.append(f'  <TextArea name="{_esc(name)}" toName="text"/>')
    lines.append("</View>")
    return "\n".join(lines) + "\n"


LABEL_STUDIO = Adapter(
    name="label-studio",
    exports="JSON export: an array of tasks with data, annotations[].result[] (rating, number, choices, textarea) "
            "and predictions[] (model_version, result)",
    reads="answers (from data), labels (one per annotation not cancelled), judgements (one per prediction)",
    kinds={"answers": _answers, "labels": lambda p: people(p, "annotations"),
           "judgements": lambda p: people(p, "predictions")},
)
