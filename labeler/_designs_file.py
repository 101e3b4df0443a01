"""The ``designs`` file: every sample design of a project, so its weights travel with its labels.

Labels drawn by a stratified or active design are not a simple random sample: read without the
design's probabilities they give biased estimates (an active design draws the answers where the
judge is doubtful most often). ``judgelab export designs`` writes one JSON document with every
design and its items, and every active design with its batches and their draws; ``judgelab
import designs`` reads it back, all-or-nothing, and checks every key, type and range, naming the
place in the file (``designs[2].items[14].inclusion_prob``) and the fix.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.labeler._rows import decode
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import ImportedDesigns

__all__ = ["DESIGN_KEYS", "parse_designs"]

#: Every key of the file, by where it sits (``""`` is the top level).
DESIGN_KEYS: dict[str, tuple[str, ...]] = {
    "": ("designs", "active_designs"),
    "designs[]": ("design_id", "params", "summary", "created_at", "applied_at", "items"),
    "designs[].items[]": ("answer_id", "stratum", "inclusion_prob", "weight", "n_raters"),
    "active_designs[]": ("design_id", "params", "created_at", "batches"),
    "active_designs[].batches[]": ("batch", "draw_id", "weight", "expected_labels", "summary", "created_at", "draws"),
    "active_designs[].batches[].draws[]": ("answer_id", "unit", "inclusion_prob", "known", "drawn", "pred_pass",
                                           "pred_score", "judge_pass", "judge_score", "flipped"),
}
_OPTIONAL = {"created_at", "applied_at", "pred_score", "judge_score", "flipped"}
_FIX = "export the designs again with `judgelab export designs --out FILE.json`, or correct this value."


@dataclass(frozen=True)
class _Reader:
    """Typed access to the parsed document, with errors that name the file and the place."""

    file: str

    def fail(self, where: str, problem: str, fix: str = _FIX) -> InputError:
        return InputError(problem, file=self.file, column=where, fix=fix)

    def record(self, value: Any, where: str, shape: str) -> dict[str, Any]:
        """An object with the keys of ``shape`` (:data:`DESIGN_KEYS`): unknown keys and missing ones are errors."""
        if not isinstance(value, dict):
            raise self.fail(where or "(top level)", f"expected an object, got {type(value).__name__}")
        known = DESIGN_KEYS[shape]
        unknown = [k for k in value if k not in known]
        if unknown:
            raise self.fail(f"{where}.{unknown[0]}".lstrip("."), f"unknown key {unknown[0]!r}; here the file has "
                            f"{', '.join(known)}")
        missing = [k for k in known if k not in value and k not in _OPTIONAL]
        if missing:
            raise self.fail(f"{where}.{missing[0]}".lstrip("."), f"missing key {missing[0]!r}")
        return value

    def entries(self, raw: Any, where: str, shape: str) -> list[tuple[str, str, dict[str, Any]]]:
        """The objects of the array ``raw`` as ``(place, design_id, object)``; a design id twice is an error."""
        out: list[tuple[str, str, dict[str, Any]]] = []
        seen: set[str] = set()
        for i, value in enumerate(self.array(raw, where)):
            at = f"{where}[{i}]"
            d = self.record(value, at, shape)
            design_id = self.ident(d["design_id"], f"{at}.design_id")
            if design_id in seen:
                raise self.fail(f"{at}.design_id", f"design {design_id!r} appears twice")
            seen.add(design_id)
            out.append((at, design_id, d))
        return out

    def array(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected an array, got {type(value).__name__}")
        return value

    def ident(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(where, "expected a non-empty id")
        return value

    def number(self, value: Any, where: str, *, low: float, high: float, open_low: bool = False,
               optional: bool = False) -> float | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise self.fail(where, f"expected a number, got {value!r}")
        if value < low or value > high or (open_low and value == low):
            bounds = f"{'(' if open_low else '['}{low:g}, {high:g}]"
            raise self.fail(where, f"{value!r} is outside {bounds}")
        return float(value)

    def whole(self, value: Any, where: str, *, low: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise self.fail(where, f"expected a whole number of at least {low}, got {value!r}")
        return value

    def flag(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(where, f"expected true or false, got {value!r}")
        return value

    def mapping(self, value: Any, where: str) -> str:
        """A JSON object, as the text the database stores (keys in the file's order, as exported)."""
        if not isinstance(value, dict):
            raise self.fail(where, f"expected a JSON object, got {type(value).__name__}")
        return json.dumps(value)

    def when(self, value: Any, where: str) -> str | None:
        if value is None:
            return None
        try:
            datetime.fromisoformat(str(value))
        except ValueError:
            raise self.fail(where, f"{value!r} is not an ISO 8601 timestamp",
                            fix="write it as e.g. 2025-03-01 14:02:11.250000.") from None
        return str(value)


def parse_designs(path: str | Path, *, ignore: Collection[str] = ()) -> ImportedDesigns:
    """Read and validate a ``designs`` file (JSON).

    Args:
        path: The file.
        ignore: Unused: the file is judgelab's own and every key is known (a name here is refused).

    Raises:
        InputError: Anything that is not a design judgelab could have written, at its place.
    """
    path = Path(path)
    name = str(path)
    if ignore:
        raise InputError("--ignore-columns does not apply to a designs file", file=name,
                         fix="import the file as judgelab exported it.")
    if not path.is_file():
        raise InputError("no such file", file=name, fix="check the path.")
    try:
        doc = json.loads(decode(path, path.read_bytes()))
    except json.JSONDecodeError as exc:
        raise InputError(f"is not valid JSON: {exc}", file=name, fix=_FIX) from None
    r = _Reader(name)
    top = r.record(doc, "", "")
    designs, items = _designs(r, r.entries(top["designs"], "designs", "designs[]"))
    active, batches, draws = _active(r, r.entries(top["active_designs"], "active_designs", "active_designs[]"),
                                     set(designs["design_id"]))
    return ImportedDesigns(designs=designs, items=items, active=active, batches=batches, draws=draws)


def _designs(r: _Reader, entries: list[tuple[str, str, dict[str, Any]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    for where, design_id, d in entries:
        rows.append({"design_id": design_id, "params": r.mapping(d["params"], f"{where}.params"),
                     "summary": r.mapping(d["summary"], f"{where}.summary"),
                     "created_at": r.when(d.get("created_at"), f"{where}.created_at"),
                     "applied_at": r.when(d.get("applied_at"), f"{where}.applied_at")})
        seen: set[str] = set()
        for j, item in enumerate(r.array(d["items"], f"{where}.items")):
            at = f"{where}.items[{j}]"
            it = r.record(item, at, "designs[].items[]")
            answer = r.ident(it["answer_id"], f"{at}.answer_id")
            if answer in seen:
                raise r.fail(f"{at}.answer_id", f"answer {answer!r} appears twice in design {design_id!r}")
            seen.add(answer)
            items.append({"design_id": design_id, "answer_id": answer,
                          "stratum": r.ident(it["stratum"], f"{at}.stratum"),
                          "inclusion_prob": r.number(it["inclusion_prob"], f"{at}.inclusion_prob", low=0, high=1,
                                                     open_low=True),
                          "weight": r.number(it["weight"], f"{at}.weight", low=0, high=math.inf, open_low=True),
                          "n_raters": r.whole(it["n_raters"], f"{at}.n_raters", low=1), "where": at})
    return (pd.DataFrame(rows, columns=["design_id", "params", "summary", "created_at", "applied_at"]),
            pd.DataFrame(items, columns=["design_id", "answer_id", "stratum", "inclusion_prob", "weight", "n_raters",
                                         "where"]))


def _active(r: _Reader, entries: list[tuple[str, str, dict[str, Any]]],
            in_file: set[str]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rows: list[dict[str, Any]] = []
    batches: list[dict[str, Any]] = []
    draws: list[dict[str, Any]] = []
    for where, design_id, d in entries:
        rows.append({"design_id": design_id, "params": r.mapping(d["params"], f"{where}.params"),
                     "created_at": r.when(d.get("created_at"), f"{where}.created_at")})
        pool: set[str] | None = None
        for k, value_b in enumerate(r.array(d["batches"], f"{where}.batches")):
            at = f"{where}.batches[{k}]"
            b = r.record(value_b, at, "active_designs[].batches[]")
            number = r.whole(b["batch"], f"{at}.batch", low=1)
            if number != k + 1:
                raise r.fail(f"{at}.batch", f"batches must be numbered 1, 2, ... in order; this one is {number}")
            draw_id = r.ident(b["draw_id"], f"{at}.draw_id")
            if draw_id not in in_file:
                raise r.fail(f"{at}.draw_id", f"the batch's answers are in design {draw_id!r}, which the file's "
                             "designs do not hold", fix="export the designs again: the file holds both.")
            batches.append({"design_id": design_id, "batch": number, "draw_id": draw_id,
                            "weight": r.number(b["weight"], f"{at}.weight", low=0, high=math.inf, open_low=True),
                            "expected_labels": r.number(b["expected_labels"], f"{at}.expected_labels", low=0,
                                                        high=math.inf),
                            "summary": r.mapping(b["summary"], f"{at}.summary"),
                            "created_at": r.when(b.get("created_at"), f"{at}.created_at"), "where": at})
            answers = [_draw(r, design_id, number, x, f"{at}.draws[{m}]")
                       for m, x in enumerate(r.array(b["draws"], f"{at}.draws"))]
            ids = [a["answer_id"] for a in answers]
            if len(set(ids)) < len(ids):
                raise r.fail(f"{at}.draws", "an answer appears twice in one batch")
            if pool is not None and set(ids) != pool:
                raise r.fail(f"{at}.draws", "every batch draws from the same pool: this one's answers differ from "
                             "batch 1's")
            pool = set(ids)
            draws += answers
    return (pd.DataFrame(rows, columns=["design_id", "params", "created_at"]),
            pd.DataFrame(batches, columns=["design_id", "batch", "draw_id", "weight", "expected_labels", "summary",
                                           "created_at", "where"]),
            pd.DataFrame(draws, columns=["design_id", "batch", "answer_id", "unit", "inclusion_prob", "known", "drawn",
                                         "pred_pass", "pred_score", "judge_pass", "judge_score", "flipped", "where"]))


def _draw(r: _Reader, design_id: str, batch: int, value: Any, at: str) -> dict[str, Any]:
    x = r.record(value, at, "active_designs[].batches[].draws[]")
    return {"design_id": design_id, "batch": batch, "answer_id": r.ident(x["answer_id"], f"{at}.answer_id"),
            "unit": r.ident(x["unit"], f"{at}.unit"),
            "inclusion_prob": r.number(x["inclusion_prob"], f"{at}.inclusion_prob", low=0, high=1, open_low=True),
            "known": r.flag(x["known"], f"{at}.known"), "drawn": r.flag(x["drawn"], f"{at}.drawn"),
            "pred_pass": r.number(x["pred_pass"], f"{at}.pred_pass", low=0, high=1),
            "pred_score": r.number(x.get("pred_score"), f"{at}.pred_score", low=-math.inf, high=math.inf,
                                   optional=True),
            "judge_pass": r.number(x["judge_pass"], f"{at}.judge_pass", low=0, high=1),
            "judge_score": r.number(x.get("judge_score"), f"{at}.judge_score", low=-math.inf, high=math.inf,
                                    optional=True),
            "flipped": r.flag(x.get("flipped", False), f"{at}.flipped"), "where": at}
