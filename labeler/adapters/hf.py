"""Dataset-style tables, as on the Hugging Face Hub (``hf``) and as Argilla exports records (``argilla``).

**hf**: one flat row per item, JSONL, ``.json``, Parquet, an ``.arrow`` file or a
``Dataset.save_to_disk`` folder (read by :func:`~judgelab.labeler._rows.read_rows`), the shapes ``datasets``
writes and ``judgelab export K --to hf`` writes: ``id`` (the answer), ``prompt`` (or
``instruction``/``question``), ``response`` (or ``output``/``completion``), and the kind's own
fields. judgelab reads ``answers`` (``model`` or ``generator``, ``family`` defaulting to the
model, ``task_id`` defaulting to a hash of the prompt), ``labels`` (``rater``/``annotator``,
``score``/``rating`` and judgelab's other label columns) and ``judgements`` (``judge_model``/
``judge``, ``format``, ``score``/``rating``, and judgelab's other judgement columns). A row's
prompt, response, model and the answer's other fields belong to its answer: they are left out
of labels and judgements; a rating (or any field judgelab's answers do not have) is left out of
answers, with a ``left out:`` line saying how to import it. Which kind a rating column is, a
human's label or a judge's score, only the user knows: they say it by the kind they import the
file as, and give what a plain table lacks with ``--set`` (``rater=`` for labels; ``judge_model=``
and ``format=`` for judgements) and, for a rating column of another name, ``--map score=<column>``.

**argilla**: Argilla 2.x records as ``Dataset.records.to_datasets()``/``to_hub`` flatten them:
``id``, ``status``, the fields (``prompt``, ``response``...), metadata keys, and per question
``<q>.responses`` (one value per user), ``<q>.responses.users`` and ``<q>.responses.status``.
judgelab reads ``answers`` from the fields and ``labels``: one per submitted response, the rating
question ``score``/``rating``/``quality``/``overall`` (or the only numeric one) as the score, other
numeric questions as ``criterion:<q>``, a text question as the comment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from judgelab.labeler._rows import read_rows
from judgelab.labeler.adapters._common import Adapted, Adapter, Source, as_id, digest, is_missing, rows_of
from judgelab.labeler.schemas import SCHEMAS

_PROMPTS = ("prompt", "instruction", "question")
_RESPONSES = ("response", "output", "completion")
_ANSWER_CONTEXT = {"prompt", "response", "response_b", "task_id"}
_SYNONYMS = {"labels": {"annotator": "rater", "rating": "score"},
             "judgements": {"judge": "judge_model", "rating": "score"}}


def _first(columns: tuple[str, ...], names: tuple[str, ...]) -> str | None:
    return next((c for c in names if c in columns), None)


def _answer_rows(src: Source, model_column: str | None, prompt: str, response: str) -> list[dict[str, Any]]:
    out = []
    for i in range(1, len(src.rows.rows) + 1):
        text_prompt = str(src.text(i, prompt))
        model = src.text(i, model_column, required=False) if model_column else None
        if model is None:
            raise src.fail("has no model", row=i, column=model_column or "model",
                           fix="add a model (or generator) field, or pass --map model=<the field naming it>.")
        family = src.text(i, "family", required=False) if "family" in src.rows.columns else None
        out.append({"task_id": src.text(i, "task_id", required=False) or f"hf-{digest(text_prompt)}",
                    "prompt": text_prompt, "category": src.text(i, "category", required=False)
                    if "category" in src.rows.columns else None,
                    "answer_id": src.text(i, "id"), "family": as_id(family or model), "model": as_id(model),
                    "text": src.text(i, response)})
    return out


def _hf_answers(path: Path) -> Adapted:
    src = Source(read_rows(path), "a dataset-style table")
    cols = src.rows.columns
    prompt, response = _first(cols, _PROMPTS), _first(cols, _RESPONSES)
    src.require("id", prompt or "prompt", response or "response", what="a dataset-style table of answers")
    model = _first(cols, ("model", "generator"))
    base = {(r["answer_id"]): r for r in _answer_rows(src, model, str(prompt), str(response))}
    used = {"id", prompt, response, model, "family", "task_id", "category"}
    # judgelab's other answer columns pass through; a rating is not the answer's (it is a label or
    # a judgement, which only the user can say), so it and other fields are left out, and said.
    rest = [c for c in cols if c not in used and SCHEMAS["answers"].knows(c)]
    other = [c for c in cols if c not in used and c not in rest]
    out = [base[str(src.text(i, "id"))] | {c: src.rows.rows[i - 1].get(c) for c in rest}
           for i in range(1, len(src.rows.rows) + 1)]
    dropped = [] if "family" in cols else ["the model family: the table has none, so family is the model's name"]
    if other:
        rating = next((c for c in other if c in ("rating", "score")), None)
        how = ("; a rating is a label or a judgement: import the file again as labels "
               "(--from hf --set rater=<who rated>) or as judgements (--from hf --set judge_model=<judge> "
               "--set format=<its scale, e.g. likert5>)" + ("" if rating else ", with --map score=<the rating column>"))
        dropped.append(f"the field(s) {other}: judgelab's answers have no such column{how}")
    return Adapted(rows_of(src.rows, out, columns=("task_id", "prompt", "category", "answer_id", "family", "model",
                                                   "text", *rest)), tuple(dropped))


def _hf_kind(kind: Literal["labels", "judgements"]) -> Any:
    def convert(path: Path) -> Adapted:
        rows = read_rows(path)
        src = Source(rows, "a dataset-style table")
        src.require("id", what=f"a dataset-style table of {kind}")
        renames = {"id": "answer_id", **{k: v for k, v in _SYNONYMS[kind].items()
                                          if k in rows.columns and v not in rows.columns}}
        # The answer's own fields (prompt, response, model, ...) ride along on every row of a
        # dataset: they are the answer's, not this kind's, unless this kind has the column too.
        answer_fields = _ANSWER_CONTEXT | set(_PROMPTS) | set(_RESPONSES) | {"generator"}
        context = [c for c in rows.columns if c != "id" and c not in renames and not SCHEMAS[kind].knows(c)
                   and (c in answer_fields or SCHEMAS["answers"].knows(c))]
        columns = tuple(renames.get(c, c) for c in rows.columns if c not in context)
        out = [{renames.get(k, k): v for k, v in row.items() if k not in context} for row in rows.rows]
        dropped = (f"the field(s) {context}: they belong to the answer (import the file as answers for them)",) \
            if context else ()
        return Adapted(rows_of(rows, out, columns=columns), dropped)
    return convert


HF = Adapter(
    name="hf",
    exports="dataset-style rows in JSONL/JSON/Parquet, an .arrow file or a save_to_disk folder (datasets "
            "5.2): id, prompt (instruction), response (output), model, and rating fields",
    reads="answers (a rating left out, said); labels (rater/annotator or --set rater=, score/rating, judgelab's "
          "label columns); judgements (judge_model/judge or --set judge_model=, format or --set format=, "
          "score/rating, judgelab's judgement columns)",
    kinds={"answers": _hf_answers, "labels": _hf_kind("labels"), "judgements": _hf_kind("judgements")},
)


# -- Argilla ------------------------------------------------------------------------------------

_RATING_NAMES = ("score", "rating", "quality", "overall")


def _questions(columns: tuple[str, ...]) -> list[str]:
    return [c[: -len(".responses")] for c in columns if c.endswith(".responses")]


def _argilla_answers(path: Path) -> Adapted:
    src = Source(read_rows(path), "Argilla")
    prompt, response = _first(src.rows.columns, _PROMPTS), _first(src.rows.columns, _RESPONSES)
    src.require("id", prompt or "prompt", response or "response",
                what="Argilla records with prompt and response fields")
    model = _first(src.rows.columns, ("model", "generator"))
    cols = ("task_id", "prompt", "category", "answer_id", "family", "model", "text")
    dropped = ("the questions' responses and suggestions (import the file as labels for the responses)",)
    return Adapted(rows_of(src.rows, _answer_rows(src, model, str(prompt), str(response)), columns=cols), dropped)


def _numeric(src: Source, q: str) -> bool:
    values = [v for row in src.rows.rows for v in (row.get(f"{q}.responses") or [])]
    return bool(values) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _argilla_labels(path: Path) -> Adapted:
    src = Source(read_rows(path), "Argilla")
    questions = _questions(src.rows.columns)
    if "id" not in src.rows.columns or not questions:
        raise src.fail("is not Argilla records: no id or no <question>.responses field; "
                       f"found {list(src.rows.columns)[:12]}",
                       fix="export the dataset with Dataset.records.to_datasets() or to_hub(with_records=True).")
    numeric = [q for q in questions if _numeric(src, q)]
    score_q = next((q for q in _RATING_NAMES if q in numeric), numeric[0] if len(numeric) == 1 else None)
    if score_q is None and numeric:
        raise src.fail(f"cannot tell which of the rating questions {numeric} is the overall score",
                       fix=f"name it one of {list(_RATING_NAMES)}, e.g. --map score.responses=<question>.responses.")
    out: list[dict[str, Any]] = []
    skipped = 0
    for i in range(1, len(src.rows.rows) + 1):
        answer = src.text(i, "id")
        by_user: dict[str, dict[str, Any]] = {}
        for q in questions:
            values = src.get(i, f"{q}.responses") or []
            users = src.get(i, f"{q}.responses.users") or []
            status = src.get(i, f"{q}.responses.status") or [None] * len(values)
            if not (len(values) == len(users) == len(status)):
                raise src.fail(f"{q}.responses, .users and .status have different lengths", row=i,
                               column=f"{q}.responses", fix="export the records again; they are cut.")
            for value, user, state in zip(values, users, status, strict=True):
                if state not in (None, "submitted"):
                    skipped += 1
                    continue
                row = by_user.setdefault(str(user), {"rater": as_id(str(user)), "answer_id": answer})
                if q == score_q:
                    row["score"] = value
                elif q in numeric:
                    row[f"criterion:{as_id(q)}"] = value
                elif not is_missing(value):
                    row["comment"] = "\n".join(filter(None, [row.get("comment"), f"{q}: {value}"]))
        out.extend(by_user.values())
    criteria = sorted({k for r in out for k in r if k.startswith("criterion:")})
    cols = ("rater", "answer_id", "score", *criteria, "comment")
    dropped = ["the suggestions (a model's pre-filled answers: judgelab has no format to store them under)",
               "the record's other fields and metadata (import the file as answers for prompt and response)"]
    if skipped:
        dropped.append(f"{skipped} draft or discarded response(s): only submitted responses are labels")
    return Adapted(rows_of(src.rows, out, columns=cols, note="one row per record and user"), tuple(dropped))


ARGILLA = Adapter(
    name="argilla",
    exports="Argilla 2.x records (to_datasets/to_hub): id, fields, <question>.responses, .responses.users, "
            ".responses.status, <question>.suggestion",
    reads="answers (the prompt and response fields); labels (one per submitted response; the rating question "
          "as score, other numeric questions as criteria, text questions in the comment)",
    kinds={"answers": _argilla_answers, "labels": _argilla_labels},
)

__all__ = ["ARGILLA", "HF"]
