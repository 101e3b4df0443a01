"""Exports in the file schemas the importers read: ``judgelab export K`` is ``judgelab import K``'s input.

:func:`export_table` builds one kind's rows in the columns of :data:`judgelab.labeler.schemas.SCHEMAS`
(in that order) from the store's rows; :func:`table_bytes` writes them as CSV, JSON lines or
Parquet, and :func:`rubric_toml` writes a rubric. Floats are written so they read back
exactly; a CSV's formula-like cells are neutralised with a leading ``'`` that the CSV reader
removes again (:func:`judgelab.labeler.importers.neutralise`).

What an export keeps that an import restores: every label, preference and audit row with its
history (``supersedes`` names the row's ``*_id`` in the same file), every judgement that counts
(the newest row of a planned call; an earlier failed attempt that a resume retried is left
out), oriented as a file states a comparison (the score about ``answer_id``, ``order`` saying
which answer was shown first).
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

import numpy as np
import pandas as pd

from judgelab.labeler._rows import neutralise
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Rubric, pair_of
from judgelab.labeler.scales import FORMAT_SPECS, format_spec, known_format
from judgelab.labeler.schemas import SCHEMAS, DataKind
from judgelab.labeler.store import ImportExportRole

__all__ = ["EXPORT_FORMATS", "TableFormat", "designs_json", "export_table", "rubric_toml", "table_bytes"]

TableFormat = Literal["csv", "jsonl", "parquet"]
EXPORT_FORMATS: tuple[TableFormat, ...] = ("csv", "jsonl", "parquet")

_SIDE = {1: "a", -1: "b", 0: "tie"}


def export_table(store: ImportExportRole, kind: DataKind) -> pd.DataFrame:
    """One kind's rows in its file schema (every kind but ``rubric``, which is TOML).

    Raises:
        InputError: ``kind`` is ``rubric`` or unknown.
    """
    builders = {
        "answers": _answers, "pairs": _pairs, "labels": _labels, "pair_labels": _pair_labels, "audits": _audits,
        "judgements": _judgements, "verdicts": _verdicts, "audit_trail": _audit_trail,
    }
    if kind not in builders:
        raise InputError(f"cannot export {kind!r} as a table",
                         fix="export the rubric as TOML (--out rubric.toml); tables: " + ", ".join(builders) + ".")
    frame = builders[kind](store)
    schema = SCHEMAS[kind]
    prefixed = [c for c in frame.columns if schema.prefix and str(c).startswith(schema.prefix)]
    out = frame.reindex(columns=schema.export_order(prefixed)).reset_index(drop=True)
    for column in schema.columns:
        # Whole numbers stay whole where a value is missing (a float column would write 3.0).
        if column.type == "whole number" and column.name in out:
            out[column.name] = out[column.name].astype("Int64")
    return out


def _answers(store: ImportExportRole) -> pd.DataFrame:
    raw = store.export_frame("answers")
    kind, who = raw["reference_author_kind"], raw["reference_author"]
    raw["reference_author"] = [f"{k}:{w}" if isinstance(k, str) and isinstance(w, str) else None
                               for k, w in zip(kind, who, strict=True)]
    # A conversation is exported as its messages (JSON text), not its rendering: the file
    # imports back to the same transcript.
    raw.loc[raw["messages"].notna(), "text"] = None
    return raw


def _pairs(store: ImportExportRole) -> pd.DataFrame:
    return store.export_frame("pairs").rename(columns={"pair_id": "id"})


def _labels(store: ImportExportRole) -> pd.DataFrame:
    raw = store.export_frame("labels")
    out = raw.rename(columns={"overall": "score", "passed": "pass"}).drop(columns=["task_id"])
    scores = [json.loads(c or "{}") for c in raw["criteria"]]
    order = _criterion_order(store, scores)
    for cid in order:
        out[f"criterion:{cid}"] = pd.array([s.get(cid) for s in scores], dtype="Float64")
    # A label's current score per assistant turn (rubric turn = "each"), as a JSON object by turn number.
    by_label: dict[int, dict[str, float]] = {}
    for label_id, turn, score in store.turn_scores(int(i) for i in raw["label_id"]).itertuples(index=False):
        by_label.setdefault(int(label_id), {})[str(int(turn))] = float(score)
    out["turns"] = [json.dumps(by_label[int(i)]) if int(i) in by_label else None for i in raw["label_id"]]
    # The store keeps "no comment" as '' (a NOT NULL column); a file says it is absent, not an empty text.
    out["comment"] = out["comment"].astype(object).where(out["comment"].fillna("").astype(str) != "", None)
    return out.drop(columns=["criteria"])


def _criterion_order(store: ImportExportRole, scores: Iterable[dict[str, Any]]) -> list[str]:
    """Criterion ids in the stored rubrics' order, then any other id the labels use."""
    order: list[str] = []
    rubrics = store.rubrics()
    for rid, version in zip(rubrics["rubric_id"], rubrics["version"], strict=True):
        rubric = store.rubric(str(rid), int(version))
        order += [c.criterion_id for c in (rubric.criteria if rubric else ()) if c.criterion_id not in order]
    used = {cid for s in scores for cid in s}
    return [c for c in order if c in used] + sorted(used - set(order))


def _pair_labels(store: ImportExportRole) -> pd.DataFrame:
    return store.export_frame("pair_labels").rename(columns={"shown_left": "answer_a", "shown_right": "answer_b"})


def _audits(store: ImportExportRole) -> pd.DataFrame:
    return store.export_frame("audits").drop(columns=["length_ratio"])


def _counting_judgements(store: ImportExportRole) -> pd.DataFrame:
    raw = store.export_frame("judgements")
    return raw[raw["counts"].astype(bool)].reset_index(drop=True)


def _judgements(store: ImportExportRole) -> pd.DataFrame:
    raw = _counting_judgements(store)
    flip = (raw["order_shown"] == "BA").fillna(False).to_numpy(bool)
    out = raw.rename(columns={"order_shown": "order", "value": "score", "passed": "pass"})
    first, second = raw["answer_id"].to_numpy(object), raw["answer_b_id"].to_numpy(object)
    out["answer_id"] = np.where(flip, second, first)
    out["answer_b_id"] = np.where(flip, first, second)
    value = raw["value"].to_numpy(float)
    out["score"] = np.where(flip & ~np.isnan(value), 0.0 - value, value)
    out["meta"] = [None if m in (None, "", "{}") else m for m in raw["meta"]]
    store.declared_scales()
    # A declared scale travels with its judgements, so the file re-imports into any project.
    out["scale"] = [None if f in FORMAT_SPECS or not known_format(f) else json.dumps(format_spec(f).as_dict())
                    for f in raw["format"]]
    for col in ("trial", "input_tokens", "output_tokens"):
        out[col] = out[col].astype("Int64")
    return out


def _audit_trail(store: ImportExportRole) -> pd.DataFrame:
    return store.audit_log()


def _verdicts(store: ImportExportRole) -> pd.DataFrame:
    # Verdicts are a pair's two answers judged in either order: imported verdicts and the position
    # probe's calls. Other probes' arms (a decoration's baseline compares the same two answers)
    # are experiments of their own and stay in the judgements export, as do failed calls.
    raw = _counting_judgements(store)
    verdict_like = raw["probe"].isna() | (raw["probe"] == "position")
    raw = raw[(raw["kind"] == "pairwise") & raw["error"].isna() & verdict_like]
    pairs = store.pair_ids()
    rows = []
    for rec in raw.to_dict("records"):
        first, second = str(rec["answer_id"]), str(rec["answer_b_id"])
        pair = pair_of(first, pairs)
        if pair is None or {first, second} != {f"{pair}:a", f"{pair}:b"}:
            continue
        value = rec["value"]
        shown_first = first[-1]
        winner = None
        if value is not None and not math.isnan(value):
            slot = int(np.sign(value))
            winner = _SIDE[slot if shown_first == "a" else -slot]
        rows.append({"pair_id": pair, "judge_model": rec["judge_model"], "shown_first": shown_first,
                     "winner": winner, "raw": rec["raw"], "trial": rec["trial"],
                     "parse_error": rec["parse_error"] if winner is None else None,
                     "judge_family": rec["judge_family"], "run_id": rec["run_id"]})
    out = pd.DataFrame(rows, columns=list(SCHEMAS["verdicts"].names))
    out["trial"] = out["trial"].astype("Int64")
    return out


# -- writing --------------------------------------------------------------------------------------


def table_bytes(frame: pd.DataFrame, fmt: TableFormat) -> bytes:
    """``frame`` as CSV (formula-like cells neutralised), JSON lines or Parquet bytes.

    Raises:
        InputError: An unknown ``fmt``.
    """
    if fmt == "csv":
        # CRLF line ends (RFC 4180): the csv writer then quotes a cell holding a lone "\\r" too.
        return _neutralised(frame).to_csv(index=False, lineterminator="\r\n").encode("utf-8")
    if fmt == "jsonl":
        return "".join(json.dumps(_plain_record(r), ensure_ascii=False) + "\n"
                       for r in frame.to_dict("records")).encode("utf-8")
    if fmt == "parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        return buffer.getvalue()
    raise InputError(f"unknown export format {fmt!r}", fix="use csv, jsonl or parquet.")


def _plain(value: Any) -> Any:
    """A value JSON writes exactly: missing as null, times in ISO 8601, NumPy scalars as Python's."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, np.generic):
        return _plain(value.item())
    return value


def _plain_record(record: dict[Any, Any]) -> dict[str, Any]:
    return {str(k): _plain(v) for k, v in record.items()}


def _neutralised(frame: pd.DataFrame) -> pd.DataFrame:
    # A comment or rater name starting "=", "+", "-" or "@" would run as a formula when the CSV
    # is opened in a spreadsheet (CSV injection); a leading quote stops that, and the CSV reader
    # removes it again, so the text round-trips.
    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype == object or pd.api.types.is_string_dtype(safe[column]):
            safe[column] = safe[column].map(lambda v: neutralise(v) if isinstance(v, str) else v)
    return safe


def rubric_toml(rubric: Rubric) -> str:
    """The rubric as TOML that ``judgelab import rubric`` reads back as the same rubric."""

    def s(text: str) -> str:
        # A JSON string is a TOML basic string (the same escapes), once DEL, which TOML wants
        # escaped and JSON does not, is escaped too; non-ASCII stays as it is (JSON would write
        # characters beyond U+FFFF as surrogate pairs, which TOML refuses).
        return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")

    decl = rubric.declared_scale
    lines = [f"id = {s(rubric.rubric_id)}", f"version = {rubric.version}", f"name = {s(rubric.name)}"]
    if decl is None:
        lines.append(f"scale = {s(rubric.scale)}")
    if rubric.pass_threshold is not None:
        lines.append(f"pass_threshold = {rubric.pass_threshold!r}")
    lines += [f"pass_rule = {s(rubric.pass_rule)}", f"instructions = {s(rubric.instructions)}", "", "[author]",
              f"kind = {s(rubric.author_kind)}", f"name = {s(rubric.author)}"]
    if decl is not None:
        labels = ", ".join(f"{s(f'{level:g}')} = {s(words)}" for level, words in decl.labels)
        lines += ["", "[scale]", f"name = {s(decl.name)}", f"low = {decl.low!r}", f"high = {decl.high!r}",
                  f"step = {decl.step!r}", f"labels = {{ {labels} }}"]
    for c in rubric.criteria:
        lines += ["", "[[criteria]]", f"id = {s(c.criterion_id)}", f"name = {s(c.name)}",
                  f"description = {s(c.description)}"]
    return "\n".join(lines) + "\n"


def designs_json(store: ImportExportRole) -> tuple[str, int]:
    """Every sample design and active design as the ``designs`` file (JSON), and how many there are.

    Labels drawn by a design are read with its probabilities; the file carries them so that a
    project rebuilt from its exports estimates as the original did (:mod:`judgelab.labeler._designs_file`).
    """
    t = store.design_tables()
    items: dict[str, list[dict[str, Any]]] = {}
    for i in _records(t["items"]):
        items.setdefault(i.pop("design_id"), []).append(i)
    draws: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for x in _records(t["draws"]):
        draws.setdefault((x.pop("design_id"), x.pop("batch")), []).append(x)
    batches: dict[str, list[dict[str, Any]]] = {}
    for b in _records(t["batches"]):
        key = b.pop("design_id")
        batches.setdefault(key, []).append({**b, "summary": json.loads(b["summary"]),
                                            "draws": draws.get((key, b["batch"]), [])})
    designs = [
        {"design_id": d["design_id"], "params": json.loads(d["params"]), "summary": json.loads(d["summary"]),
         "created_at": d["created_at"], "applied_at": d["applied_at"], "items": items.get(d["design_id"], [])}
        for d in _records(t["designs"])
    ]
    active = [
        {"design_id": a["design_id"], "params": json.loads(a["params"]), "created_at": a["created_at"],
         "batches": batches.get(a["design_id"], [])}
        for a in _records(t["active"])
    ]
    doc = {"designs": designs, "active_designs": active}
    return json.dumps(doc, indent=1) + "\n", len(designs) + len(active)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain JSON values: timestamps as ISO text, missing values as ``None``."""
    out = []
    for row in frame.astype(object).where(frame.notna(), None).to_dict(orient="records"):
        out.append({k: (str(v) if isinstance(v, pd.Timestamp | datetime) else
                        v.item() if isinstance(v, np.generic) else v) for k, v in row.items()})
    return out
