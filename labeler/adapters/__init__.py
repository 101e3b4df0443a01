"""Other tools' files in and out: ``judgelab import KIND FILE --from TOOL`` and ``--map``.

Each adapter (one module per tool) converts what that tool documents as its export into rows
of one judgelab kind; judgelab's own importer then validates and writes them all-or-nothing,
so every guarantee of an import holds (one clear error naming the file, row, column and fix;
nothing written on any error; importing twice changes nothing). What a conversion leaves out
is said, one sentence per kind of thing, in :attr:`AdaptedImport.dropped`.

A file no adapter knows is read with a column map instead: ``--map judgelab_column=their_field``
renames a field (a dotted path reaches into a JSON object: ``prompt=data.text``). ``--set
column=value`` gives a column the file lacks one value on every row (a plain table of ratings
has no rater or judge: ``--set rater=alice``).

Out again (:func:`export_to`): ``judgelab export K --to hf`` writes dataset-style rows (the kind's
own columns with the answer's ``id``, ``prompt`` and ``response``), which ``--from hf`` reads back;
``--to label-studio`` writes Label Studio tasks (labels as annotations, judgements as
predictions), which ``--from label-studio`` reads back.

    >>> sorted(ADAPTERS)
    ['alpaca-eval', 'argilla', 'hf', 'inspect', 'label-studio', 'mt-bench', 'otel', 'promptfoo']
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.labeler._rows import Rows, read_rows
from judgelab.labeler.adapters import alpaca_eval, inspect_ai, label_studio, mt_bench, otel, promptfoo
from judgelab.labeler.adapters._common import UNNAMED_FAMILY, Adapted, Adapter
from judgelab.labeler.adapters.hf import ARGILLA, HF
from judgelab.labeler.adapters.label_studio import LABEL_STUDIO, LabelStudioExport, label_config, to_label_studio
from judgelab.labeler.errors import InputError
from judgelab.labeler.exports import export_table, table_bytes
from judgelab.labeler.importers import import_file
from judgelab.labeler.scales import FormatSpec, format_spec
from judgelab.labeler.schemas import DataKind
from judgelab.labeler.store import ImportExportRole, ImportSummary

__all__ = ["ADAPTERS", "EXPORT_TOOLS", "Adapted", "AdaptedImport", "Adapter", "LabelStudioExport", "adapt", "apply_map",
           "apply_values", "export_label_studio", "export_to", "import_from", "label_studio_config", "parse_map",
           "parse_set", "read_users_map", "with_hint"]

ADAPTERS: dict[str, Adapter] = {
    a.name: a for a in (alpaca_eval.ADAPTER, ARGILLA, HF, inspect_ai.ADAPTER, LABEL_STUDIO, mt_bench.ADAPTER,
                        otel.ADAPTER, promptfoo.ADAPTER)
}
"""Every ``--from`` choice, by name."""

EXPORT_TOOLS = ("hf", "label-studio")
"""Every ``--to`` choice."""


@dataclass(frozen=True)
class AdaptedImport:
    """What an import through an adapter or a column map did.

    Attributes:
        summary: The store's import summary.
        dropped: What the conversion left out and why, one sentence each.
        parse_failures: Judge replies in the file that did not parse: imported without a score,
            with a ``parse_error``, and counted as parse failures.
    """

    summary: ImportSummary
    dropped: tuple[str, ...] = field(default=())
    parse_failures: int = 0


def _looks_like(columns: Collection[str]) -> str | None:
    """The tool whose export has these top-level fields, if one adapter's marks are all there."""
    cols = set(columns)
    marks = (("alpaca-eval", {"instruction", "output_1", "output_2", "preference"}),
             ("mt-bench", {"question_id", "g1_winner", "g2_winner"}), ("mt-bench", {"question_id", "judge", "turn"}),
             ("mt-bench", {"question_id", "choices"}), ("label-studio", {"data", "annotations"}),
             ("label-studio", {"data", "predictions"}), ("otel", {"resourceSpans"}))
    for tool, needed in marks:
        if needed <= cols:
            return tool
    if any(c.endswith(".responses") for c in cols):
        return "argilla"
    return None


def with_hint(exc: InputError, path: str | Path) -> InputError:
    """``exc`` with a fix that names ``--from TOOL`` when ``path`` looks like that tool's export."""
    if Path(path).suffix.lower() == ".eval":  # Inspect's default log format, a zip read_rows refuses
        return InputError(exc.problem, file=exc.file, row=exc.row, column=exc.column,
                          fix=f"this looks like an Inspect AI log: add --from inspect. Otherwise: {exc.fix}")
    try:
        tool = _looks_like(read_rows(path).columns)
    except InputError:
        return exc
    if tool is None:
        return exc
    return InputError(exc.problem, file=exc.file, row=exc.row, column=exc.column,
                      fix=f"this looks like {ADAPTERS[tool].name}'s export: add --from {tool}. Otherwise: {exc.fix}")


def parse_map(pairs: Collection[str]) -> dict[str, str]:
    """``--map`` values (``judgelab_column=their_field``) as a dict, checked.

    >>> parse_map(["prompt=instruction", "text=data.response"])
    {'prompt': 'instruction', 'text': 'data.response'}
    """
    return _parse_pairs("--map", pairs, shape="judgelab_column=their_field", example="prompt=instruction",
                        twice="map each judgelab column from one field.")


def parse_set(pairs: Collection[str]) -> dict[str, str]:
    """``--set`` values (``judgelab_column=value``) as a dict, checked.

    >>> parse_set(["rater=alice", "format=likert5"])
    {'rater': 'alice', 'format': 'likert5'}
    """
    return _parse_pairs("--set", pairs, shape="judgelab_column=value", example="rater=alice",
                        twice="set each column once.")


def _parse_pairs(option: str, pairs: Collection[str], *, shape: str, example: str, twice: str) -> dict[str, str]:
    """``COLUMN=VALUE`` option values as a dict: each with both sides, each column once."""
    out: dict[str, str] = {}
    for item in pairs:
        column, sep, value = item.partition("=")
        column, value = column.strip(), value.strip()
        if not sep or not column or not value:
            raise InputError(f"{option} {item!r} is not {shape}",
                             fix=f"write e.g. {option} {example} (repeat {option} for more columns).")
        if column in out:
            raise InputError(f"{option} names judgelab's column {column!r} twice", fix=twice)
        out[column] = value
    return out


def apply_values(rows: Rows, values: Mapping[str, str]) -> Rows:
    """``rows`` with each column of ``values`` added, holding its value on every row.

    Raises:
        InputError: The rows already have such a column (the file's own values are not overwritten).
    """
    if not values:
        return rows
    clash = [c for c in values if c in rows.columns]
    if clash:
        raise InputError(f"--set gives column(s) {clash}, which the file already has", file=rows.file,
                         fix=f"drop --set {clash[0]}= (the file's own values are used), or --map {clash[0]}= "
                             "from another field.")
    return Rows(rows.file, (*rows.columns, *values), [row | dict(values) for row in rows.rows], rows.spreadsheet,
                rows.quoted)


def _lookup(row: dict[str, Any], path: str) -> tuple[bool, Any]:
    """``row[path]``, or the value a dotted path reaches through JSON objects; ``(found, value)``."""
    if path in row:
        return True, row[path]
    value: Any = row
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def apply_map(rows: Rows, column_map: Mapping[str, str]) -> Rows:
    """``rows`` with the fields of ``column_map`` renamed to judgelab's columns.

    A mapped field leaves the file's columns (the rest stay, and an unknown one is still an
    error unless ignored); a field no row has is an error naming the file's fields.
    """
    if not column_map:
        return rows
    sources = set(column_map.values())
    absent = [t for t in column_map.values() if not any(_lookup(r, t)[0] for r in rows.rows)]
    if absent and rows.rows:
        raise InputError(f"--map names field(s) {absent} that no row has; the file has {list(rows.columns)}",
                         file=rows.file, fix="map from the file's own fields (names are case-sensitive; "
                                             "a dotted path such as data.text reaches into a JSON object).")
    clash = [c for c in column_map if c in rows.columns and c not in sources]
    if clash:
        raise InputError(f"--map writes column(s) {clash}, which the file already has",
                         file=rows.file, fix=f"map from those columns too, or --ignore-columns {','.join(clash)}.")
    tops = {t.partition(".")[0] if t not in rows.columns else t for t in sources}
    kept = [c for c in rows.columns if c not in tops]
    out = []
    for row in rows.rows:
        new = {c: row.get(c) for c in kept}
        for ours, theirs in column_map.items():
            new[ours] = _lookup(row, theirs)[1]
        out.append(new)
    return Rows(rows.file, (*kept, *column_map), out, rows.spreadsheet, rows.quoted)


def adapt(tool: str | None, kind: DataKind, path: str | Path, *,
          column_map: Mapping[str, str] | None = None, values: Mapping[str, str] | None = None) -> Adapted:
    """``path`` converted to rows of ``kind``: by ``tool``'s adapter, or read as it is; then mapped and set."""
    if tool is None:
        rows = read_rows(path)
        return Adapted(apply_values(apply_map(rows, column_map or {}), values or {}))
    adapter = ADAPTERS.get(tool)
    if adapter is None:
        raise InputError(f"no adapter for {tool!r}", fix=f"use one of {sorted(ADAPTERS)}, or --map for other files.")
    convert = adapter.kinds.get(kind)
    if convert is None:
        raise InputError(f"judgelab reads {sorted(adapter.kinds)} from {tool}'s files, not {kind}",
                         file=str(path), fix=f"import it as one of {sorted(adapter.kinds)}.")
    column_map = dict(column_map or {})
    if tool == "label-studio" and kind in ("labels", "judgements") and "." not in column_map.get("pass", "."):
        # --map pass=<from_name> names a result of the annotations, not a field of the rows.
        adapted = label_studio.people(Path(path), "annotations" if kind == "labels" else "predictions",
                                      pass_from=column_map.pop("pass"))
    else:
        adapted = convert(Path(path))
    return Adapted(apply_values(apply_map(adapted.rows, column_map), values or {}), adapted.dropped, adapted.notes)


def import_from(
    store: ImportExportRole, kind: DataKind, path: str | Path, *, tool: str | None = None,
    column_map: Mapping[str, str] | None = None, ignore_columns: Collection[str] = (),
    values: Mapping[str, str] | None = None, family: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> AdaptedImport:
    """Import another tool's ``path`` as ``kind``, all-or-nothing, through ``tool``'s adapter or a column map.

    ``family`` (answers only) is the model family of every answer whose file does not name one
    (empty, or ``unknown`` from an adapter), and its model too when that is missing: a Label
    Studio project's tasks rarely carry either. ``progress`` is :func:`~judgelab.labeler.importers.import_file`'s.

    Raises:
        InputError: No such adapter, a kind it does not read, or anything in the file that cannot
            be imported (naming the file, row, column and fix); nothing is written.
    """
    if kind in ("rubric", "designs"):
        raise InputError(f"a {kind} is judgelab's own file; --from and --map are for tables",
                         fix=f"import the {kind} without --from/--map.")
    adapted = adapt(tool, kind, path, column_map=column_map, values=values)
    if family is not None:
        if kind != "answers":
            raise InputError(f"--family is for answers, not {kind}", fix="drop --family.")
        rows, named = _with_family(adapted.rows, family)
        # The adapter's sentence on answers left 'unknown' no longer holds: say what --family did instead.
        dropped = tuple(d for d in adapted.dropped if not d.startswith(UNNAMED_FAMILY))
        notes = (*adapted.notes, f"{named} answer(s) whose file names no family or model: family {family!r} "
                                 "(--family)") if named else adapted.notes
        adapted = Adapted(rows, dropped, notes)
    summary = import_file(store, kind, path, ignore_columns=ignore_columns, reader=lambda _: adapted.rows,
                          progress=progress)
    if adapted.notes:
        summary = replace(summary, notes=(*summary.notes, *adapted.notes))
    failures = sum(1 for r in adapted.rows.rows if kind == "judgements" and isinstance(r.get("parse_error"), str))
    return AdaptedImport(summary, adapted.dropped, failures)


def _with_family(rows: Rows, family: str) -> tuple[Rows, int]:
    """``rows`` with ``family`` (and model) filled in where they are empty or ``unknown``; and how many rows changed."""
    def unnamed(value: Any) -> bool:
        return value is None or (isinstance(value, float) and value != value) or str(value).strip() in ("", "unknown")

    out = [{**r, **{c: family for c in ("family", "model") if unnamed(r.get(c))}} for r in rows.rows]
    named = sum(1 for r in rows.rows if unnamed(r.get("family")))
    columns = tuple(dict.fromkeys((*rows.columns, "family", "model")))
    return Rows(rows.file, columns, out, rows.spreadsheet, rows.quoted), named


def export_to(store: ImportExportRole, kind: DataKind, tool: str, fmt: str) -> tuple[bytes, int]:
    """``kind`` as ``tool`` reads it: ``(file bytes, rows or tasks written)``.

    Args:
        store: The project store.
        kind: ``answers``, ``labels`` or ``judgements`` (Label Studio: answers as tasks to label,
            without family or model; labels as annotations; judgements as predictions).
        tool: One of :data:`EXPORT_TOOLS`.
        fmt: ``jsonl``, ``json`` or ``parquet`` for ``hf``; ``json`` for Label Studio.

    Raises:
        InputError: A kind, tool or format that does not go together.
    """
    if tool not in EXPORT_TOOLS:
        raise InputError(f"cannot export to {tool!r}", fix=f"use one of {list(EXPORT_TOOLS)}.")
    kinds = ("answers", "labels", "judgements")
    if kind not in kinds:
        raise InputError(f"--to {tool} exports {', '.join(kinds)}, not {kind}",
                         fix="export the other kinds in judgelab's own schema (without --to).")
    if tool == "label-studio":
        if fmt != "json":
            raise InputError("Label Studio imports a JSON array of tasks", fix="pass --out FILE.json.")
        done = export_label_studio(store, kind)
        return done.tasks_json(), len(done.tasks)
    answers = export_table(store, "answers")
    frame = _hf_frame(export_table(store, kind), answers, kind)
    if fmt == "json":
        lines = table_bytes(frame, "jsonl").decode("utf-8").split("\n")  # only "\n" ends a JSON line
        records = [json.loads(line) for line in lines if line.strip()]
        return json.dumps(records, ensure_ascii=False, indent=1).encode("utf-8"), len(frame)
    if fmt not in ("jsonl", "parquet"):
        raise InputError(f"a Hugging Face dataset is JSON lines or Parquet, not {fmt!r}",
                         fix="pass --out FILE.jsonl or FILE.parquet.")
    return table_bytes(frame, fmt), len(frame)  # type: ignore[arg-type]  # checked above


def _rubric_scale(store: ImportExportRole) -> FormatSpec | None:
    """The newest rubric's scale (a declared one registered first, so it is found by name)."""
    store.declared_scales()
    rubric = store.rubric()
    if rubric is None:
        return None
    try:
        return format_spec(rubric.scale)
    except KeyError:
        return None


def read_users_map(path: str | Path) -> dict[str, int]:
    """A users map (rater name to Label Studio user id) an earlier ``--to label-studio`` export wrote.

    Raises:
        InputError: Not a JSON object of whole-number ids.
    """
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"is not valid JSON ({exc})", file=str(path),
                         fix='write the map as {"rater": <Label Studio user id>, ...}, or delete it.') from None
    bad = [k for k, v in doc.items() if isinstance(v, bool) or not isinstance(v, int) or v < 1] \
        if isinstance(doc, dict) else ["(the file)"]
    if bad:
        raise InputError(f"the id of {bad[0]!r} is not a Label Studio user id (a whole number from 1)",
                         file=str(path), fix="give each rater the id Label Studio shows for them "
                                             "(Organization > People), or delete the file.")
    return {str(k): int(v) for k, v in doc.items()}


def export_label_studio(store: ImportExportRole, kind: DataKind, *,
                        users: Mapping[str, int] | None = None) -> LabelStudioExport:
    """``kind`` (answers, labels or judgements) as Label Studio tasks, on the rubric's scale.

    Args:
        store: The project store.
        kind: ``answers``, ``labels`` or ``judgements``.
        users: Raters' Label Studio user ids (:func:`read_users_map`); others are numbered.

    Raises:
        InputError: Another kind.
    """
    if kind not in ("answers", "labels", "judgements"):
        raise InputError(f"--to label-studio exports answers, labels, judgements, not {kind}",
                         fix="export the other kinds in judgelab's own schema (without --to).")
    answers = export_table(store, "answers")
    frame = export_table(store, kind)
    return to_label_studio(answers, labels=frame if kind == "labels" else None,
                           judgements=frame if kind == "judgements" else None, every_answer=kind == "answers",
                           scale=_rubric_scale(store), users=users)


def label_studio_config(store: ImportExportRole, tasks_json: bytes) -> str:
    """The labeling config (XML) for tasks :func:`export_to` wrote for Label Studio, from the store's rubric.

    Written beside the tasks, it makes a Label Studio project that opens them as they are: every
    result's control, named as in the results, on the rubric's scale (binary: a Choices of 0 and
    1; 1..k: a k-star Rating; a continuous scale: a Number), with the rubric's criteria names and
    instructions.
    """
    scale = _rubric_scale(store)
    rubric = store.rubric()
    criteria = [(c.criterion_id, c.name) for c in rubric.criteria] if rubric else []
    names = [("score", f"Overall ({rubric.scale})" if rubric else "Overall"), ("pass", "Pass"), *criteria]
    return label_config(json.loads(tasks_json), criteria=names, instructions=rubric.instructions if rubric else "",
                        scale=scale)


def _hf_frame(frame: pd.DataFrame, answers: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Dataset-style rows: the answer's ``id``, ``prompt`` and ``response`` first, then the kind's columns."""
    if kind == "answers":
        out = frame.rename(columns={"answer_id": "id", "text": "response"})
        return out[["id", "prompt", "response", *[c for c in out.columns if c not in ("id", "prompt", "response")]]]
    by_id = answers.set_index("answer_id")
    out = frame.rename(columns={"answer_id": "id"})
    lead = pd.DataFrame({"id": out["id"], "prompt": by_id["prompt"].reindex(out["id"]).to_numpy(),
                         "response": by_id["text"].reindex(out["id"]).to_numpy()})
    if "answer_b_id" in out:
        lead["response_b"] = by_id["text"].reindex(out["answer_b_id"]).to_numpy()
    return pd.concat([lead, out.drop(columns=["id"])], axis=1)
