"""Validated importers for every kind of file judgelab reads (:data:`IMPORT_KINDS`).

A rubric is TOML; the other kinds are CSV, JSONL or Parquet with the columns of
:data:`judgelab.labeler.schemas.SCHEMAS` (the README's "File schemas" tables). Every importer reads the
whole file, validates every row, and only then writes, in one transaction: an import is
all-or-nothing. The first problem found raises an :class:`~judgelab.labeler.errors.InputError` naming the
file, the row (1-based, header not counted), the column, and the fix. A column the schema does
not know is such an error too (nothing is dropped silently), unless it is named in
``ignore_columns``. Importing the same file twice changes nothing; a different text under an
existing id is a :class:`~judgelab.labeler.errors.ConflictError`.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from judgelab.labeler._designs_file import parse_designs
from judgelab.labeler._judge import NO_VERDICT, parse_judgements, parse_verdicts
from judgelab.labeler._people import parse_audits, parse_labels, parse_pair_labels
from judgelab.labeler._rows import (
    ID_PATTERN,
    MAX_FIELD_CHARS,
    MAX_ID_CHARS,
    TABLE_SUFFIXES,
    Checker,
    Rows,
    decode,
    neutralise,
    read_rows,
    restore,
)
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Answer, Criterion, ImportedLabel, Pair, Rubric, Task
from judgelab.labeler.scales import FormatSpec, ScaleError, scale_from_toml
from judgelab.labeler.schemas import DATA_KINDS, EXPORT_ONLY, SCHEMAS, DataKind, unknown_columns
from judgelab.labeler.store import ImportExportRole, ImportSummary, Staging
from judgelab.labeler.transcripts import TURN_MODES, Transcript, TranscriptError, check_messages, name_spans, render

__all__ = [
    "IMPORT_KINDS",
    "MAX_FIELD_CHARS",
    "MAX_ID_CHARS",
    "NO_VERDICT",
    "TABLE_SUFFIXES",
    "ImportKind",
    "Rows",
    "import_file",
    "neutralise",
    "parse_answers",
    "parse_audits",
    "parse_designs",
    "parse_judgements",
    "parse_labels",
    "parse_pair_labels",
    "parse_pairs",
    "parse_rubric",
    "parse_verdicts",
    "read_rows",
    "restore",
]

ImportKind = DataKind
IMPORT_KINDS: tuple[ImportKind, ...] = tuple(k for k in DATA_KINDS if k not in EXPORT_ONLY)

_RUBRIC_KEYS = {
    "": ("id", "version", "name", "scale", "pass_threshold", "pass_rule", "instructions", "author", "criteria", "turn"),
    "author.": ("kind", "name"),
    "criteria[].": ("id", "name", "description"),
}


def _check_rubric_keys(doc: dict[str, Any], file: str, ignore: set[str]) -> None:
    """Refuse keys the rubric schema does not know (or drop those named in ``ignore``)."""
    tables: list[tuple[str, dict[str, Any]]] = [("", doc)]
    if isinstance(doc.get("author"), dict):
        tables.append(("author.", doc["author"]))
    tables += [("criteria[].", c) for c in doc.get("criteria", []) if isinstance(c, dict)]
    unknown: list[str] = []
    for where, table in tables:
        for key in list(table):
            full = where + key
            if full in ignore:
                del table[key]
            elif key not in _RUBRIC_KEYS[where] and full not in unknown:
                unknown.append(full)
    if unknown:
        known = [w + k for w, keys in _RUBRIC_KEYS.items() for k in keys]
        raise InputError(
            f"unknown key(s) {unknown}; a rubric has {known}", file=file, column=unknown[0],
            fix="rename them (names are case-sensitive), or pass --ignore-columns "
            f"{','.join(unknown)} to import the rubric without them.",
        )


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


# -- rubric, answers and pairs ---------------------------------------------------------------


def parse_rubric(path: str | Path, *, ignore: Collection[str] = ()) -> Rubric:
    """Read and validate a rubric TOML file; a key the schema does not know is an error.

    Args:
        path: The TOML file.
        ignore: Keys to leave out instead (``author.x`` and ``criteria[].x`` for nested ones).
    """
    path = Path(path)
    name = str(path)
    if not path.is_file():
        raise InputError("no such file", file=name, fix="check the path.")
    try:
        doc = tomllib.loads(decode(path, path.read_bytes()))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"is not valid TOML: {exc}", file=name, fix="fix the TOML syntax.") from None
    _check_rubric_keys(doc, name, set(ignore))
    toml = _Toml(name)
    rubric_id = toml.need(doc, "id", str)
    version = toml.need(doc, "version", int)
    if version < 1:
        raise InputError("version must be 1 or more", file=name, column="version", fix="use 1, 2, ...")
    if "scale" not in doc:
        raise InputError("missing key 'scale'", file=name, column="scale",
                         fix='add `scale = "likert5"` (or binary, numeric100), or a [scale] table.')
    try:
        spec = scale_from_toml(doc["scale"])
    except ScaleError as exc:
        raise InputError(str(exc), file=name, column=exc.column, fix=exc.fix) from None
    declared = spec if isinstance(doc["scale"], dict) else None
    scale = spec.name
    threshold = _pass_threshold(doc.get("pass_threshold"), spec, file=name)
    if declared is not None and threshold is None:
        raise InputError("a declared scale needs a pass_threshold", file=name, column="pass_threshold",
                         fix=f"add `pass_threshold = <one of {declared.grid_text()}>` (the lowest passing score).")
    author = toml.need(doc, "author", dict)
    author_kind = toml.need(author, "kind", str, "author.")
    if author_kind not in ("human", "model"):
        raise InputError(
            f"author.kind {author_kind!r} is not 'human' or 'model'", file=name, column="author.kind",
            fix="write who drafted the rubric: kind = 'human' or 'model'.",
        )
    criteria = _criteria(toml, toml.need(doc, "criteria", list))
    turn = doc.get("turn", "last")
    if turn not in TURN_MODES:
        raise InputError(f"turn {turn!r} is not one of {', '.join(TURN_MODES)}", file=name, column="turn",
                         fix='write which turn of a conversation is rated: turn = "last" (the last assistant '
                             'turn), turn = "whole" (the whole conversation) or turn = "each" (the whole, '
                             'and a score for each assistant turn).')
    try:
        return replace(_rubric(doc, toml, author, rubric_id, version, scale, criteria, threshold, declared), turn=turn)
    except ScaleError as exc:
        raise InputError(str(exc), file=name, column=exc.column, fix=exc.fix) from None


def _rubric(doc: dict[str, Any], toml: _Toml, author: dict[str, Any], rubric_id: str, version: int,
            scale: str, criteria: tuple[Criterion, ...], threshold: float | None,
            declared: FormatSpec | None) -> Rubric:
    """The rubric the checked keys describe (registering a declared scale may still refuse it)."""
    author_kind = author["kind"]
    return Rubric(
        rubric_id=rubric_id,
        version=version,
        name=toml.need(doc, "name", str),
        scale=scale,
        pass_rule=toml.need(doc, "pass_rule", str),
        criteria=criteria,
        pass_threshold=threshold,
        instructions=str(doc.get("instructions", "")),
        author_kind=author_kind,  # type: ignore[arg-type]  # checked above
        author=toml.need(author, "name", str, "author."),
        declared_scale=declared,
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
                fix="see the example rubric.toml (`judgelab examples DIR` writes it) for the expected shape.",
            )
        return value


def _pass_threshold(threshold: Any, spec: FormatSpec, *, file: str) -> float | None:
    """The rubric's optional ``pass_threshold``, checked to be a number on ``scale``."""
    if threshold is None:
        return None
    if not isinstance(threshold, int | float) or isinstance(threshold, bool):
        raise InputError("pass_threshold must be a number", file=file, column="pass_threshold")
    scale = spec.name
    lo, hi = spec.range
    if not lo <= threshold <= hi:
        raise InputError(
            f"pass_threshold {threshold} is outside the {scale} scale ({lo:g}..{hi:g})",
            file=file, column="pass_threshold", fix="pick a score on the scale.",
        )
    if scale not in ("likert5", "numeric100", "binary") and not spec.on_grid(threshold):
        raise InputError(
            f"pass_threshold {threshold} is off the {scale} scale's grid {spec.grid_text()}",
            file=file, column="pass_threshold", fix="pick one of the scale's levels (the lowest passing score).",
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
        if not ID_PATTERN.match(cid) or cid in seen:
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


def parse_answers(rows: Rows, *, known_answer_ids: set[str] = frozenset(),  # type: ignore[assignment]
                  warnings: list[str] | None = None) -> tuple[list[Task], list[Answer]]:
    """Tasks and answers from rows with task_id, prompt, answer_id, family, model, text.

    ``warnings`` (when given) gets a line per conversation shape imported as written (see
    :func:`judgelab.labeler.transcripts.check_messages`), naming its row and message.
    """
    ck = Checker(rows)
    _require_answer_columns(ck, rows.columns)
    tasks: dict[str, Task] = {}
    task_row: dict[str, int] = {}

    def same_task(task: Task, i: int) -> None:
        if task.task_id in tasks and tasks[task.task_id] != task:
            raise _task_differs(rows.file, i, task.task_id, task_row[task.task_id])
        tasks.setdefault(task.task_id, task)
        task_row.setdefault(task.task_id, i)

    answers = [_answer_row(ck, rows, i, warnings, same_task)[1] for i in range(1, len(rows.rows) + 1)]
    ck.unique("answer_id", [a.answer_id for a in answers])
    names = sorted({a.family for a in answers} | {a.model for a in answers})
    answers = [a if a.transcript is None else replace(a, self_id_spans=tuple(name_spans(a.transcript, names)))
               for a in answers]
    file_ids = {a.answer_id for a in answers}
    for i, a in enumerate(answers, start=1):
        parent = a.parent_answer_id
        if parent is not None and parent not in file_ids and parent not in known_answer_ids:
            raise _no_parent(rows.file, i, a.answer_id, parent)
    # Self-identifying spans are found by Store.add_pool, the one path every answer text takes
    # into the store (with this file's and the stored pool's family and model names).
    return list(tasks.values()), answers


def _require_answer_columns(ck: Checker, columns: Sequence[str]) -> None:
    ck.require_columns("task_id", "prompt", "answer_id", "family", "model")
    if "text" not in columns and "messages" not in columns:
        ck.require_columns("text")


def _task_differs(file: str, row: int, task_id: str, first: int) -> InputError:
    return InputError(
        f"task {task_id!r} has a different prompt, category or reference answer than in row {first}",
        file=file, row=row, column="prompt", fix="repeat exactly the same task fields on every row of one task.",
    )


def _no_parent(file: str, row: int, answer_id: str, parent: str) -> InputError:
    return InputError(
        f"parent answer {parent!r} of {answer_id!r} is neither in this file nor in the database",
        file=file, row=row, column="parent_answer_id", fix="import the parent answer first.",
    )


def _answer_row(ck: Checker, rows: Rows, i: int, warnings: list[str] | None,
                same_task: Callable[[Task, int], None]) -> tuple[Task, Answer]:
    """Row ``i``'s task and answer, every field checked; ``same_task`` checks the task against its earlier rows."""
    task_id = ck.text(i, "task_id", is_id=True)
    answer_id = ck.text(i, "answer_id", is_id=True)
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
    same_task(task, i)
    variant = ck.text(i, "variant", required=False, is_id=True) or "original"
    parent = ck.text(i, "parent_answer_id", required=False, is_id=True)
    transcript = _transcript(ck, rows, i, warnings)
    return task, Answer(
        answer_id=str(answer_id),
        task_id=str(task_id),
        family=str(ck.text(i, "family", is_id=True)),
        model=str(ck.text(i, "model", is_id=True)),
        # A conversation's text is its rendering, so the judge, the probes and the
        # self-name detector read the whole of it without knowing it is one.
        text=render(transcript) if transcript is not None else _answer_text(ck, rows, i, "text"),
        variant=variant,
        parent_answer_id=parent,
        transcript=transcript,
    )


def _answer_text(ck: Checker, rows: Rows, i: int, col: str) -> str:
    """An answer's text: an empty string given as one (JSON, Parquet) is an empty answer, not a missing one.

    A model that wrote nothing gave an answer its judge saw (AlpacaEval's files hold such outputs);
    in a CSV an empty cell is a missing value, and stays an error.
    """
    value = rows.rows[i - 1].get(col)
    if isinstance(value, str) and not value.strip() and not rows.spreadsheet:
        return value
    return str(ck.text(i, col))


def _plain(value: Any) -> Any:
    """A Parquet cell's arrays and structs as lists and dicts (what JSON gives)."""
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _transcript(ck: Checker, rows: Rows, i: int, warnings: list[str] | None = None) -> Transcript | None:
    """Row ``i``'s ``messages`` as a transcript (``None`` when the row has a plain ``text``)."""
    if "messages" not in rows.columns:
        return None
    value = _plain(rows.rows[i - 1].get("messages"))
    if value is None or (isinstance(value, str) and not value.strip()) or (isinstance(value, float) and value != value):
        if "text" not in rows.columns:
            raise InputError("is empty", file=rows.file, row=i, column="messages",
                             fix="give the conversation as a list of {role, content} messages.")
        return None
    if ck.text(i, "text", required=False) is not None:
        raise InputError("has both a text and messages", file=rows.file, row=i, column="text",
                         fix="give an answer either as one text or as a list of messages, not both.")
    try:
        transcript, warned = check_messages(value)
    except TranscriptError as e:
        raise InputError(str(e), file=rows.file, row=i, column="messages",
                         fix=e.fix or "write messages in the OpenAI chat form (role, content, tool_calls, "
                             "tool_call_id) or the Anthropic form (content blocks tool_use / tool_result); "
                             "see docs/analysts/conversations.md.") from None
    if warnings is not None:
        warnings += [f"row {i}, {w}" for w in warned]
    return transcript


def parse_pairs(rows: Rows) -> list[Pair]:
    """Pairs in the judge-probe format: prompt, answer_a, answer_b, optional id and gold."""
    ck = Checker(rows)
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
                answer_a=_answer_text(ck, rows, i, "answer_a"),
                answer_b=_answer_text(ck, rows, i, "answer_b"),
                gold=None if gold is None else gold.strip().upper().replace("TIE", "tie"),
            )
        )
    ck.unique("id", [p.pair_id for p in pairs])
    return pairs




# -- one entry point ------------------------------------------------------------------------------

# Pairwise human preferences used to come in as `import labels`; a labels file with their columns
# still does.
_PAIR_LABEL_MARKS = ("answer_a", "preference")


def _checked_rows(
    kind: DataKind, path: str | Path, ignore: set[str], reader: Callable[[str | Path], Rows] = read_rows
) -> tuple[DataKind, Rows]:
    """The file's rows with ``ignore`` left out, after refusing any column ``kind`` does not know."""
    rows = reader(path)
    kind = _checked_columns(kind, rows.file, rows.columns, ignore)
    return kind, rows.without(ignore)


def _checked_columns(kind: DataKind, file: str, columns: Sequence[str], ignore: set[str]) -> DataKind:
    """``kind`` (labels may turn out pair labels), after refusing a column it does not know."""
    absent = sorted(ignore - set(columns))
    if absent:
        raise InputError(
            f"--ignore-columns names {absent}, which the file does not have; it has {list(columns)}",
            file=file, fix="list only the file's own columns (names are case-sensitive).",
        )
    columns = [c for c in columns if c not in ignore]
    if kind == "labels" and any(c in columns for c in _PAIR_LABEL_MARKS):
        kind = "pair_labels"
    unknown = unknown_columns(kind, tuple(columns))
    if unknown:
        schema = SCHEMAS[kind]
        known = list(schema.names) + ([f"{schema.prefix}<id>"] if schema.prefix else [])
        raise InputError(
            f"unknown column(s) {unknown}; {kind} files have {known}",
            file=file, column=unknown[0],
            fix="rename them to the schema's names (see the README's file schemas; names are case-sensitive), "
            f"or pass --ignore-columns {','.join(unknown)} to import the file without them.",
        )
    return kind


def import_file(
    store: ImportExportRole, kind: ImportKind, path: str | Path, *, ignore_columns: Collection[str] = (),
    reader: Callable[[str | Path], Rows] = read_rows, progress: Callable[[str, int, int], None] | None = None,
) -> ImportSummary:
    """Validate ``path`` as ``kind`` and import it all-or-nothing.

    Args:
        store: The project store.
        kind: One of :data:`IMPORT_KINDS`.
        path: The file.
        ignore_columns: Columns (rubric: keys) of the file to leave out; any other column the
            kind's schema does not know is an error.
        reader: What turns the file into rows (default :func:`read_rows`; an adapter of
            :mod:`judgelab.labeler.adapters` converts another tool's export instead). Not for rubrics
            and designs.
        progress: Called as ``progress(step, done, total)`` as the import moves from reading
            to checking to writing (and once at the end), e.g. to draw a progress bar.

    Raises:
        InputError: An unknown kind, or anything in the file that cannot be imported as it is.
        ConflictError: The file would change data already stored.
    """
    step = _steps(progress)
    summary = _import_file(store, kind, path, ignore_columns, reader, step)
    step("done", _STEPS)
    return summary


#: The steps :func:`import_file` reports: reading, checking, writing.
_STEPS = 3


def _steps(progress: Callable[[str, int, int], None] | None) -> Callable[[str, int], None]:
    """``step(what, done)``: ``progress`` out of :data:`_STEPS`, or nothing when it is ``None``."""
    if progress is None:
        return lambda what, done: None
    return lambda what, done: progress(what, done, _STEPS)


def _import_file(
    store: ImportExportRole, kind: ImportKind, path: str | Path, ignore_columns: Collection[str],
    reader: Callable[[str | Path], Rows], step: Callable[[str, int], None],
) -> ImportSummary:
    """:func:`import_file`, reporting each step to ``step``."""
    step(f"reading {Path(path).name}", 0)
    name = str(path)
    ignore = {c.strip() for c in ignore_columns if c.strip()}
    if kind not in IMPORT_KINDS:
        raise InputError(f"unknown import kind {kind!r}", fix=f"use one of {list(IMPORT_KINDS)}.")
    if kind == "rubric":
        return store.add_rubric(parse_rubric(path, ignore=ignore), source_file=name)
    if kind == "designs":
        return store.add_imported_designs(parse_designs(path, ignore=ignore), source_file=name)
    store.declared_scales()  # a file may name a scale a stored rubric declares
    if kind == "answers":
        return _import_answers(store, path, ignore, reader, step)
    kind, rows = _checked_rows(kind, path, ignore, reader)
    if not rows.rows:
        return ImportSummary(added={}, unchanged={})  # an export of an empty kind: nothing to import
    step(f"checking {len(rows.rows):,} rows, writing them", 1)
    if kind == "pairs":
        return store.add_pairs(parse_pairs(rows), source_file=name)
    if kind == "labels":
        labels = parse_labels(rows, rubric_of=store.rubric)
        summary = store.add_imported_labels(labels, source_file=name)
        return replace(summary, notes=summary.notes + _rounded_means_note(rows, labels))
    if kind == "pair_labels":
        return store.add_imported_pair_labels(parse_pair_labels(rows), source_file=name)
    if kind == "audits":
        return store.add_imported_audits(parse_audits(rows), source_file=name)
    if kind == "judgements":
        return store.add_imported_judgements(parse_judgements(rows, rubric=store.rubric()), source_file=name)
    return store.add_imported_judgements(parse_verdicts(rows, pairs=store.pair_ids()), source_file=name)


# -- answers, staged ---------------------------------------------------------------------------------

_JSON_LINES = (".jsonl", ".ndjson")


def _import_answers(
    store: ImportExportRole, path: str | Path, ignore: set[str], reader: Callable[[str | Path], Rows],
    step: Callable[[str, int], None] = lambda what, done: None,
) -> ImportSummary:
    """:func:`import_file` of an answers file, through a staging database of the import's own.

    DuckDB reads a JSON-lines or Parquet file itself; any other file (or one DuckDB refuses, or a
    JSON-lines file with a line that is not an object) is read by ``reader`` as before. The rows are staged
    (:class:`judgelab.labeler.store.Staging`), where one set operation marks the plain ones (every field
    already what :func:`parse_answers` accepts and keeps as it is); only the others are checked
    here in Python, by the very code :func:`parse_answers` runs, which raises its exact errors.
    The checks across rows (a task written two ways, a repeated answer id, a parent nowhere) are
    queries over the staging table. The project is read briefly (parents, the pool's names) and
    written once, in one short transaction (:meth:`judgelab.labeler.store.Store.add_staged_pool`).
    """
    file = Path(path)
    name = str(file)  # as read_rows names it
    warned: list[str] = []
    with Staging() as stage:
        suffix = file.suffix.lower()
        engine = (reader is read_rows and file.is_file() and file.stat().st_size > 0
                  and ((suffix in _JSON_LINES and stage.read_json_lines(file))
                       or (suffix == ".parquet" and stage.read_parquet(file))))
        rows = None if engine else reader(path)
        if rows is not None:
            name = rows.file
        columns = stage.columns if rows is None else rows.columns
        _checked_columns("answers", name, columns, ignore)
        if (rows is None and stage.n == 0) or (rows is not None and not rows.rows):
            return ImportSummary(added={}, unchanged={})  # an export of an empty kind: nothing to import
        kept = tuple(c for c in columns if c not in ignore)
        _require_answer_columns(Checker(Rows(name, kept, [])), kept)
        step(f"checking {stage.n if rows is None else len(rows.rows):,} answers", 1)
        if rows is not None:
            stage.stage_rows(rows)
        stage.build(ignore)
        failed = _check_suspects(stage, name, kept, ignore, rows, warned)
        differs = stage.task_differs(failed.row if failed is not None else None)
        if differs is not None:
            raise _task_differs(name, *differs)
        if failed is not None:
            raise failed
        repeated = stage.repeated_answer()
        if repeated is not None:
            row, answer_id, first = repeated
            raise InputError(f"duplicate id {answer_id!r} (first seen in row {first})", file=name, row=row,
                             column="answer_id", fix="ids must be unique within a file.")
        outside = stage.outside_parents()
        if outside:
            stored = store.stored_answers([parent for _, _, parent in outside])
            for row, answer_id, parent in outside:
                if parent not in stored:
                    raise _no_parent(name, row, answer_id, parent)
        step("writing the answers", 2)
        summary = store.add_staged_pool(stage, source_file=str(path))
    return replace(summary, warnings=tuple(warned)) if warned else summary


def _check_suspects(stage: Staging, name: str, columns: tuple[str, ...], ignore: set[str], rows: Rows | None,
                    warned: list[str]) -> InputError | None:
    """Check the rows the staging table could not call plain; write their values back.

    Returns:
        The first row's error (in row order), or ``None``: the caller still looks for an earlier
        task written two ways before raising it, as :func:`parse_answers` would have met that first.
    """
    fixed: list[tuple[Any, ...]] = []
    failed: InputError | None = None
    for i, raw in stage.suspects():
        row = _OneRow(i, {k: v for k, v in raw.items() if k not in ignore})
        one = Rows(name, columns, row, rows.spreadsheet if rows is not None else False,  # type: ignore[arg-type]
                   rows.quoted if rows is not None else frozenset())
        try:
            task, answer = _answer_row(Checker(one), one, i, warned, lambda task, i: None)
        except InputError as exc:
            failed = exc
            break
        fixed.append((i, task.task_id, task.prompt, task.category, task.reference_answer, task.reference_author_kind,
                      task.reference_author, answer.answer_id, answer.family, answer.model, answer.variant,
                      answer.parent_answer_id, answer.text,
                      None if answer.transcript is None else answer.transcript.to_json()))
        if len(fixed) >= 5_000:
            stage.write_back(fixed)
            fixed = []
    stage.write_back(fixed)
    return failed


class _OneRow(list[dict[str, Any]]):
    """The rows of a file as :class:`Checker` reads them, where only row ``number`` is held."""

    def __init__(self, number: int, row: dict[str, Any]) -> None:
        super().__init__()
        self.number, self.row = number, row

    def __getitem__(self, index: Any) -> Any:
        return self.row if index == self.number - 1 else {}

    def __len__(self) -> int:
        return self.number


def _rounded_means_note(rows: Rows, labels: Sequence[ImportedLabel]) -> tuple[str, ...]:
    """The import message's line on scores read as the exact means they round (none: empty)."""
    rounded = [(i, lab) for i, lab in enumerate(labels, start=1) if lab.published is not None]
    if not rounded:
        return ()
    decimals = Checker(rows).decimals("score")
    row, first = rounded[0]
    mean = Fraction(first.overall or 0.0).limit_denominator(10_000)
    return (f"{len(rounded)} score{'s' * (len(rounded) != 1)} read as the exact mean of n_raters people that "
            f"the file's rounding ({decimals} decimals) shows (row {row}: {first.published:g} stored as "
            f"{mean.numerator}/{mean.denominator} = {first.overall!r})",)
