"""Validated importers: rubric (TOML), answers, pairs, labels and judgements (CSV, JSONL, Parquet).

Every importer reads the whole file, validates every row, and only then writes, in
one transaction: an import is all-or-nothing. The first problem found raises an
:class:`~labeler.errors.InputError` naming the file, the row (1-based, header not
counted), the column, and the fix. Importing the same file twice changes nothing;
a different text under an existing id is a :class:`~labeler.errors.ConflictError`.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from labeler.blinding import detect_self_identifying
from labeler.errors import InputError
from labeler.models import (
    Answer,
    Criterion,
    ImportedJudgement,
    ImportedLabel,
    ImportedPairLabel,
    Pair,
    Rubric,
    Task,
)
from labeler.scales import FORMATS, SCALES, format_range
from labeler.store import ImportSummary, Store

ImportKind = Literal["rubric", "answers", "pairs", "labels", "judgements"]
IMPORT_KINDS: tuple[ImportKind, ...] = ("rubric", "answers", "pairs", "labels", "judgements")
TABLE_SUFFIXES = (".csv", ".jsonl", ".ndjson", ".parquet")

#: Longest value accepted in one field. Longer is almost always a broken export.
MAX_FIELD_CHARS = 100_000
MAX_ID_CHARS = 200
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:~/-]*$")
# A cell a spreadsheet would run as a formula (CSV injection, OWASP). Plain prose that
# starts with "-" (a bullet) is fine; "=..." or "+SUM(" / "@cmd|" is not.
_FORMULA = re.compile(r"^(?:=|[+\-@]\s*[A-Za-z_][A-Za-z0-9_.]*\s*[(!|]|@|\t|\r)")


@dataclass(frozen=True)
class Rows:
    """The rows of a tabular file, each a dict of column -> raw value."""

    file: str
    columns: tuple[str, ...]
    rows: list[dict[str, Any]]


# -- reading files ------------------------------------------------------------------------


def _decode(path: Path, data: bytes) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            f"the file is not valid UTF-8 (byte {exc.start} on line {line})",
            file=str(path),
            fix="save the file as UTF-8 (in a spreadsheet: 'CSV UTF-8').",
        ) from None


def read_rows(path: str | Path) -> Rows:
    """Read a CSV, JSONL or Parquet file into rows, with clear errors for broken files."""
    path = Path(path)
    name = str(path)
    if not path.is_file():
        raise InputError("no such file", file=name, fix="check the path.")
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise InputError(
            f"unsupported file type {suffix or '(none)'!r}",
            file=name,
            fix="use .csv, .jsonl or .parquet.",
        )
    data = path.read_bytes()
    if not data.strip():
        raise InputError("the file is empty", file=name, fix="export the data again.")
    if suffix == ".csv":
        columns, rows = _read_csv(path, data)
    elif suffix in (".jsonl", ".ndjson"):
        columns, rows = _read_jsonl(path, data)
    else:
        columns, rows = _read_parquet(path)
    if not rows:
        raise InputError("has a header but no data rows", file=name, fix="add rows or pick another file.")
    return Rows(file=name, columns=tuple(columns), rows=rows)


def _read_csv(path: Path, data: bytes) -> tuple[list[str], list[dict[str, Any]]]:
    """Header and rows of a CSV file (blank lines skipped; a short or long row is an error)."""
    name = str(path)
    text = _decode(path, data)
    csv.field_size_limit(MAX_FIELD_CHARS * 4)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[dict[str, Any]] = []
    try:
        header = next(reader)
        columns = [h.strip() for h in header]
        dupes = sorted({c for c in columns if columns.count(c) > 1})
        if dupes:
            raise InputError(
                f"duplicate column name(s) {dupes}", file=name, fix="rename or drop them."
            )
        for i, record in enumerate(reader, start=1):
            if not any(cell.strip() for cell in record):
                continue
            if len(record) != len(columns):
                raise InputError(
                    f"has {len(record)} fields but the header has {len(columns)}",
                    file=name,
                    row=i,
                    fix="quote fields that contain commas or line breaks.",
                )
            rows.append(dict(zip(columns, record, strict=True)))
    except csv.Error as exc:
        raise InputError(
            f"is not valid CSV: {exc}", file=name, row=max(reader.line_num - 1, 1),
            fix="check quoting; fields with commas, quotes or line breaks must be quoted.",
        ) from None
    return columns, rows


def _read_jsonl(path: Path, data: bytes) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns (every key seen, in order of first appearance) and rows of a JSON-lines file."""
    name = str(path)
    text = _decode(path, data)
    rows: list[dict[str, Any]] = []
    seen: dict[str, None] = {}
    row_no = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        row_no += 1
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"is not valid JSON: {exc.msg} at character {exc.colno}",
                file=name, row=row_no, fix="each line must be one JSON object.",
            ) from None
        if not isinstance(obj, dict):
            raise InputError(
                f"is a JSON {type(obj).__name__}, not an object",
                file=name, row=row_no, fix="each line must be one JSON object {...}.",
            )
        for key in obj:
            seen.setdefault(str(key))
        rows.append({str(k): v for k, v in obj.items()})
    return list(seen), rows


def _read_parquet(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and rows of a Parquet file."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise InputError(
            f"is not a readable Parquet file ({exc})", file=str(path), fix="export it again."
        ) from None
    return list(table.column_names), table.to_pylist()


# -- field checks ---------------------------------------------------------------------------


class _Checker:
    """Field accessors that raise an InputError pointing at the row and column."""

    def __init__(self, rows: Rows) -> None:
        self.rows = rows

    def require_columns(self, *required: str, one_of: tuple[str, ...] = ()) -> None:
        missing = [c for c in required if c not in self.rows.columns]
        if missing:
            raise InputError(
                f"missing required column(s) {missing}; found {list(self.rows.columns)}",
                file=self.rows.file,
                fix=f"add the column(s) {', '.join(missing)} (names are case-sensitive).",
            )
        if one_of and not any(c in self.rows.columns for c in one_of):
            raise InputError(
                f"needs at least one of the columns {list(one_of)}",
                file=self.rows.file, fix="add one of them.",
            )

    def _raw(self, row: int, col: str) -> Any:
        value = self.rows.rows[row - 1].get(col)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        return value

    def text(self, row: int, col: str, *, required: bool = True, is_id: bool = False) -> str | None:
        value = self._raw(row, col)
        if isinstance(value, str | int) and not isinstance(value, bool):
            value = str(value)
        elif value is not None:
            raise InputError(
                f"expected text, got {type(value).__name__} {value!r}",
                file=self.rows.file, row=row, column=col, fix="store this field as a string.",
            )
        if value is None or not value.strip():
            if required:
                raise InputError(
                    "is empty", file=self.rows.file, row=row, column=col, fix="fill it in."
                )
            return None
        if len(value) > MAX_FIELD_CHARS:
            raise InputError(
                f"is {len(value):,} characters long (limit {MAX_FIELD_CHARS:,})",
                file=self.rows.file, row=row, column=col,
                fix="check the export; a field this long is usually several rows run together.",
            )
        if _FORMULA.match(value):
            raise InputError(
                f"starts like a spreadsheet formula ({value[:20]!r}); refusing it (CSV injection)",
                file=self.rows.file, row=row, column=col,
                fix="remove the leading '=', '+', '-' or '@', or prefix the cell with a space.",
            )
        if is_id:
            value = value.strip()
            if len(value) > MAX_ID_CHARS or not _ID.match(value):
                raise InputError(
                    f"{value[:40]!r} is not a valid id",
                    file=self.rows.file, row=row, column=col,
                    fix="ids are letters, digits and _ . : ~ / - (no spaces), at most 200 characters.",
                )
        return value

    def number(
        self, row: int, col: str, *, lo: float | None = None, hi: float | None = None,
        required: bool = True, integer: bool = False,
    ) -> float | None:
        value = self._raw(row, col)
        if isinstance(value, str):
            value = value.strip() or None
        if value is None:
            if required:
                raise InputError("is empty", file=self.rows.file, row=row, column=col, fix="give a number.")
            return None
        try:
            if isinstance(value, bool):
                raise ValueError
            number = float(value)
        except (TypeError, ValueError):
            raise InputError(
                f"{value!r} is not a number", file=self.rows.file, row=row, column=col,
                fix="give a plain number such as 4 or 72.5.",
            ) from None
        if not math.isfinite(number) or (integer and number != int(number)):
            raise InputError(
                f"{value!r} is not {'a whole' if integer else 'a finite'} number",
                file=self.rows.file, row=row, column=col, fix="give a valid number.",
            )
        if (lo is not None and number < lo) or (hi is not None and number > hi):
            raise InputError(
                f"{number:g} is outside the allowed range {lo:g} to {hi:g}",
                file=self.rows.file, row=row, column=col, fix="use the rubric's scale.",
            )
        return number

    def boolean(self, row: int, col: str, *, required: bool = False) -> bool | None:
        value = self._raw(row, col)
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float) and value in (0, 1):
            return bool(value)
        text = str(value).strip().lower() if value is not None else ""
        if text in ("true", "1", "yes", "pass", "passed", "y", "t"):
            return True
        if text in ("false", "0", "no", "fail", "failed", "n", "f"):
            return False
        if not text and not required:
            return None
        raise InputError(
            f"{value!r} is not a yes/no value", file=self.rows.file, row=row, column=col,
            fix="use true/false, yes/no, pass/fail or 1/0.",
        )

    def unique(self, col: str, values: list[str | None]) -> None:
        first: dict[str, int] = {}
        for i, v in enumerate(values, start=1):
            if v is None:
                continue
            if v in first:
                raise InputError(
                    f"duplicate id {v!r} (first seen in row {first[v]})",
                    file=self.rows.file, row=i, column=col, fix="ids must be unique within a file.",
                )
            first[v] = i


def _author(value: str | None, *, file: str, row: int, column: str) -> tuple[str | None, str | None]:
    if value is None:
        return None, None
    kind, _, who = value.partition(":")
    if kind not in ("human", "model") or not who.strip():
        raise InputError(
            f"{value!r} is not a provenance",
            file=file, row=row, column=column,
            fix="write 'human:<name>' or 'model:<family>', e.g. 'model:claude'.",
        )
    return kind, who.strip()


# -- the five importers -----------------------------------------------------------------------


def parse_rubric(path: str | Path) -> Rubric:
    """Read and validate a rubric TOML file."""
    path = Path(path)
    name = str(path)
    if not path.is_file():
        raise InputError("no such file", file=name, fix="check the path.")
    try:
        doc = tomllib.loads(_decode(path, path.read_bytes()))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"is not valid TOML: {exc}", file=name, fix="fix the TOML syntax.") from None
    toml = _Toml(name)
    rubric_id = toml.need(doc, "id", str)
    version = toml.need(doc, "version", int)
    if version < 1:
        raise InputError("version must be 1 or more", file=name, column="version", fix="use 1, 2, ...")
    scale = toml.need(doc, "scale", str)
    if scale not in SCALES:
        raise InputError(
            f"unknown scale {scale!r}", file=name, column="scale", fix=f"use one of {list(SCALES)}."
        )
    threshold = _pass_threshold(doc.get("pass_threshold"), scale, file=name)
    author = toml.need(doc, "author", dict)
    author_kind = toml.need(author, "kind", str, "author.")
    if author_kind not in ("human", "model"):
        raise InputError(
            f"author.kind {author_kind!r} is not 'human' or 'model'", file=name, column="author.kind",
            fix="write who drafted the rubric: kind = 'human' or 'model'.",
        )
    criteria = _criteria(toml, toml.need(doc, "criteria", list))
    return Rubric(
        rubric_id=rubric_id,
        version=version,
        name=toml.need(doc, "name", str),
        scale=scale,  # type: ignore[arg-type]  # checked against SCALES above
        pass_rule=toml.need(doc, "pass_rule", str),
        criteria=criteria,
        pass_threshold=threshold,
        instructions=str(doc.get("instructions", "")),
        author_kind=author_kind,  # type: ignore[arg-type]  # checked above
        author=toml.need(author, "name", str, "author."),
    )


@dataclass(frozen=True)
class _Toml:
    """Typed key access to a parsed TOML document, with errors that name the file and key."""

    file: str

    def need(
        self, table: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str = ""
    ) -> Any:
        """``table[key]``, which must exist and be a ``kind``; ``where`` prefixes the key named."""
        full = f"{where}{key}"
        if key not in table:
            raise InputError(f"missing key {full!r}", file=self.file, column=full, fix=f"add `{key} = ...`.")
        value = table[key]
        # bool is an int subclass: `version = true` must not pass as a version number.
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise InputError(
                f"key {full!r} has the wrong type ({type(value).__name__})", file=self.file, column=full,
                fix="see data/rubric.toml for the expected shape.",
            )
        return value


def _pass_threshold(threshold: Any, scale: str, *, file: str) -> float | None:
    """The rubric's optional ``pass_threshold``, checked to be a number on ``scale``."""
    if threshold is None:
        return None
    if not isinstance(threshold, int | float) or isinstance(threshold, bool):
        raise InputError("pass_threshold must be a number", file=file, column="pass_threshold")
    lo, hi = format_range(scale)
    if not lo <= threshold <= hi:
        raise InputError(
            f"pass_threshold {threshold} is outside the {scale} scale ({lo:g}..{hi:g})",
            file=file, column="pass_threshold", fix="pick a score on the scale.",
        )
    return float(threshold)


def _criteria(toml: _Toml, criteria_raw: list[Any]) -> tuple[Criterion, ...]:
    """The rubric's ``[[criteria]]`` tables, each with a unique id, a name and a description."""
    name = toml.file
    if not criteria_raw:
        raise InputError("the rubric has no criteria", file=name, column="criteria", fix="add [[criteria]] tables.")
    criteria = []
    seen: set[str] = set()
    for i, c in enumerate(criteria_raw, start=1):
        if not isinstance(c, dict):
            raise InputError("each criterion must be a table", file=name, row=i, column="criteria")
        cid = toml.need(c, "id", str, f"criteria[{i}].")
        if not _ID.match(cid) or cid in seen:
            raise InputError(
                f"criterion id {cid!r} is invalid or repeated", file=name, row=i, column="criteria.id",
                fix="give each criterion a unique id of letters, digits and underscores.",
            )
        seen.add(cid)
        criteria.append(
            Criterion(
                cid,
                toml.need(c, "name", str, f"criteria[{i}]."),
                toml.need(c, "description", str, f"criteria[{i}]."),
            )
        )
    return tuple(criteria)


def parse_answers(rows: Rows, *, known_answer_ids: set[str] = frozenset()) -> tuple[list[Task], list[Answer]]:  # type: ignore[assignment]
    """Tasks and answers from rows with task_id, prompt, answer_id, family, model, text."""
    ck = _Checker(rows)
    ck.require_columns("task_id", "prompt", "answer_id", "family", "model", "text")
    tasks: dict[str, Task] = {}
    task_row: dict[str, int] = {}
    answers: list[Answer] = []
    ids: list[str | None] = []
    raw_answers = []
    for i in range(1, len(rows.rows) + 1):
        task_id = ck.text(i, "task_id", is_id=True)
        answer_id = ck.text(i, "answer_id", is_id=True)
        ids.append(answer_id)
        ref_kind, ref_author = _author(
            ck.text(i, "reference_author", required=False),
            file=rows.file, row=i, column="reference_author",
        )
        task = Task(
            task_id=str(task_id),
            prompt=str(ck.text(i, "prompt")),
            category=ck.text(i, "category", required=False),
            reference_answer=ck.text(i, "reference_answer", required=False),
            reference_author_kind=ref_kind,  # type: ignore[arg-type]  # validated by _author
            reference_author=ref_author,
        )
        if task.task_id in tasks and tasks[task.task_id] != task:
            raise InputError(
                f"task {task.task_id!r} has a different prompt, category or reference answer than in "
                f"row {task_row[task.task_id]}",
                file=rows.file, row=i, column="prompt",
                fix="repeat exactly the same task fields on every row of one task.",
            )
        tasks.setdefault(task.task_id, task)
        task_row.setdefault(task.task_id, i)
        variant = ck.text(i, "variant", required=False, is_id=True) or "original"
        parent = ck.text(i, "parent_answer_id", required=False, is_id=True)
        raw_answers.append((i, answer_id, task_id, variant, parent))
        answers.append(
            Answer(
                answer_id=str(answer_id),
                task_id=str(task_id),
                family=str(ck.text(i, "family", is_id=True)),
                model=str(ck.text(i, "model", is_id=True)),
                text=str(ck.text(i, "text")),
                variant=variant,
                parent_answer_id=parent,
            )
        )
    ck.unique("answer_id", ids)
    file_ids = {a.answer_id for a in answers}
    for i, answer_id, _, _, parent in raw_answers:
        if parent is not None and parent not in file_ids and parent not in known_answer_ids:
            raise InputError(
                f"parent answer {parent!r} of {answer_id!r} is neither in this file nor in the database",
                file=rows.file, row=i, column="parent_answer_id", fix="import the parent answer first.",
            )
    # Self-identifying spans, looking for the pool's own family and model names as well.
    names = {a.family for a in answers} | {a.model for a in answers}
    answers = [
        Answer(**{**a.__dict__, "self_id_spans": tuple(detect_self_identifying(a.text, names))})
        for a in answers
    ]
    return list(tasks.values()), answers


def parse_pairs(rows: Rows) -> list[Pair]:
    """Pairs in the judge-probe format: prompt, answer_a, answer_b, optional id and gold."""
    ck = _Checker(rows)
    ck.require_columns("prompt", "answer_a", "answer_b")
    pairs = []
    for i in range(1, len(rows.rows) + 1):
        pair_id = ck.text(i, "id", required=False, is_id=True)
        gold = ck.text(i, "gold", required=False)
        if gold is not None and gold.strip().upper() not in ("A", "B", "TIE"):
            raise InputError(
                f"gold {gold!r} is not A, B or tie", file=rows.file, row=i, column="gold",
                fix="write A, B, tie, or leave it empty.",
            )
        pairs.append(
            Pair(
                pair_id=pair_id or f"row{i}",
                prompt=str(ck.text(i, "prompt")),
                answer_a=str(ck.text(i, "answer_a")),
                answer_b=str(ck.text(i, "answer_b")),
                gold=None if gold is None else gold.strip().upper().replace("TIE", "tie"),
            )
        )
    ck.unique("id", [p.pair_id for p in pairs])
    return pairs


def parse_labels(rows: Rows, *, rubric: Rubric | None) -> list[ImportedLabel] | list[ImportedPairLabel]:
    """Human labels: answer_id, rater, score and/or pass (or answer_a, answer_b, preference for pairs)."""
    ck = _Checker(rows)
    if "answer_a" in rows.columns or "preference" in rows.columns:
        ck.require_columns("answer_a", "answer_b", "rater", "preference")
        pair_labels = []
        for i in range(1, len(rows.rows) + 1):
            pref = ck.number(i, "preference", lo=-2, hi=2, integer=True)
            pair_labels.append(
                ImportedPairLabel(
                    rater=str(ck.text(i, "rater", is_id=True)),
                    shown_left=str(ck.text(i, "answer_a", is_id=True)),
                    shown_right=str(ck.text(i, "answer_b", is_id=True)),
                    preference=int(pref or 0),
                )
            )
        return pair_labels
    ck.require_columns("answer_id", "rater", one_of=("score", "pass"))
    lo, hi = format_range(rubric.scale) if rubric else (None, None)
    crit_cols = [c for c in rows.columns if c.startswith("criterion:")]
    labels = []
    seen: dict[tuple[str, str], int] = {}
    for i in range(1, len(rows.rows) + 1):
        answer_id = str(ck.text(i, "answer_id", is_id=True))
        rater = str(ck.text(i, "rater", is_id=True))
        if (rater, answer_id) in seen:
            raise InputError(
                f"rater {rater!r} labels answer {answer_id!r} twice (first in row {seen[(rater, answer_id)]})",
                file=rows.file, row=i, column="answer_id", fix="keep one label per rater and answer.",
            )
        seen[(rater, answer_id)] = i
        score = ck.number(i, "score", lo=lo, hi=hi, required=False)
        passed = ck.boolean(i, "pass")
        if score is None and passed is None:
            raise InputError(
                "has neither a score nor a pass verdict", file=rows.file, row=i, column="score",
                fix="fill in score or pass.",
            )
        if passed is None and score is not None and rubric is not None:
            passed = rubric.passes(score)
        criteria = {}
        for col in crit_cols:
            value = ck.number(i, col, lo=lo, hi=hi, required=False)
            if value is not None:
                criteria[col.removeprefix("criterion:")] = value
        comment = ck.text(i, "comment", required=False)
        labels.append(ImportedLabel(answer_id, rater, score, passed, criteria, comment or ""))
    return labels


def parse_judgements(rows: Rows, *, rubric: Rubric | None) -> list[ImportedJudgement]:
    """Judge scores: answer_id, judge_model, format, score and/or pass (answer_b_id + order for pairs)."""
    ck = _Checker(rows)
    ck.require_columns("answer_id", "judge_model", "format", one_of=("score", "pass"))
    out = []
    for i in range(1, len(rows.rows) + 1):
        fmt = str(ck.text(i, "format"))
        if fmt not in FORMATS:
            raise InputError(
                f"unknown format {fmt!r}", file=rows.file, row=i, column="format",
                fix=f"use one of {list(FORMATS)}.",
            )
        lo, hi = format_range(fmt)
        b_id = ck.text(i, "answer_b_id", required=False, is_id=True)
        order = ck.text(i, "order", required=False)
        if order is not None and order not in ("AB", "BA"):
            raise InputError(
                f"order {order!r} is not AB or BA", file=rows.file, row=i, column="order",
                fix="write AB when answer_id was shown first, BA otherwise.",
            )
        score = ck.number(i, "score", lo=lo, hi=hi, required=False)
        passed = ck.boolean(i, "pass")
        if score is None and passed is None:
            raise InputError(
                "has neither a score nor a pass verdict", file=rows.file, row=i, column="score",
                fix="fill in score or pass.",
            )
        if passed is None and score is not None and rubric is not None and fmt == rubric.scale:
            passed = rubric.passes(score)
        out.append(
            ImportedJudgement(
                answer_id=str(ck.text(i, "answer_id", is_id=True)),
                judge_model=str(ck.text(i, "judge_model", is_id=True)),
                value=score,
                passed=passed,
                format=fmt,
                answer_b_id=b_id,
                order_shown=order,
                judge_family=ck.text(i, "judge_family", required=False, is_id=True),
                raw=ck.text(i, "raw", required=False),
            )
        )
    return out


def import_file(store: Store, kind: ImportKind, path: str | Path) -> ImportSummary:
    """Validate ``path`` as ``kind`` and import it all-or-nothing."""
    name = str(path)
    if kind == "rubric":
        return store.add_rubric(parse_rubric(path), source_file=name)
    if kind not in IMPORT_KINDS:
        raise InputError(f"unknown import kind {kind!r}", fix=f"use one of {list(IMPORT_KINDS)}.")
    rows = read_rows(path)
    handlers: dict[str, Callable[[], ImportSummary]] = {
        "answers": lambda: store.add_pool(
            *parse_answers(rows, known_answer_ids=store.answer_ids()), source_file=name
        ),
        "pairs": lambda: store.add_pairs(parse_pairs(rows), source_file=name),
        "judgements": lambda: store.add_imported_judgements(
            parse_judgements(rows, rubric=store.rubric()), source_file=name
        ),
    }
    if kind == "labels":
        rubric = store.rubric()
        labels = parse_labels(rows, rubric=rubric)
        if labels and isinstance(labels[0], ImportedPairLabel):
            return store.add_imported_pair_labels(labels, source_file=name)  # type: ignore[arg-type]
        return store.add_imported_labels(
            labels,  # type: ignore[arg-type]
            source_file=name,
            rubric=(rubric.rubric_id, rubric.version) if rubric else None,
        )
    return handlers[kind]()
