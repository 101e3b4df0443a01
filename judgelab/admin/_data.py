"""Imports, rubric versions, self-identifying text, masking and exports for the Data page."""


from __future__ import annotations

import tempfile
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from judgelab.admin._common import EXPORT_MIME, ExportFormat
from judgelab.labeler.errors import InputError
from judgelab.labeler.exports import designs_json, export_table, table_bytes
from judgelab.labeler.importers import IMPORT_KINDS, ImportKind, import_file
from judgelab.labeler.schemas import DATA_KINDS, EXPORT_ONLY, DataKind
from judgelab.labeler.store import MASK_KEY, AdminRole, ImportExportRole, ImportSummary
from judgelab.labeler.store.roles import RubricView

# -- data ----------------------------------------------------------------------------


def import_upload(
    store: ImportExportRole, kind: ImportKind, filename: str, data: bytes, *, ignore_columns: Collection[str] = ()
) -> ImportSummary:
    """Import an uploaded file through the same validated importer as ``judgelab import``.

    The bytes are written to a temporary file that keeps the upload's name (the
    importers pick the reader by suffix). Errors name the uploaded file, not the
    temporary copy; the importer writes nothing when it raises.

    Raises:
        InputError: An unknown kind, or anything the importer rejects.
    """
    if kind not in IMPORT_KINDS:
        raise InputError(
            f"unknown import kind {kind!r}", fix=f"use one of {', '.join(IMPORT_KINDS)}."
        )
    shown = Path(filename).name or "upload"
    with tempfile.TemporaryDirectory(prefix="judgelab-upload-") as folder:
        path = Path(folder) / shown
        path.write_bytes(data)
        try:
            return import_file(store, kind, path, ignore_columns=ignore_columns)
        except InputError as exc:
            if exc.file is None or Path(str(exc.file)).name != shown:
                raise
            # Same error, but naming the file the admin uploaded.
            raise type(exc)(
                exc.problem, file=shown, row=exc.row, column=exc.column, fix=exc.fix
            ) from exc


def rubric_versions(store: RubricView) -> pd.DataFrame:
    """Every stored rubric version, newest first, with its number of criteria."""
    rubrics = store.rubrics()
    if rubrics.empty:
        return rubrics
    counts = []
    for rid, version in zip(rubrics["rubric_id"], rubrics["version"], strict=True):
        rubric = store.rubric(str(rid), int(version))
        counts.append(len(rubric.criteria) if rubric else 0)
    rubrics["criteria"] = counts
    return rubrics


def self_identifying_table(store: ImportExportRole, *, context: int = 40) -> pd.DataFrame:
    """Answers whose text names a model or maker, one row per answer.

    Args:
        store: The project store.
        context: Characters of text kept either side of the first span.

    Returns:
        ``answer_id``, ``task_id``, ``family``, ``spans`` (count), ``matches``
        (the matched strings, ``"; "``-joined) and ``excerpt`` (text around the
        first match, the match in ``[[...]]``).
    """
    frame = store.self_identifying()
    columns = ["answer_id", "task_id", "family", "spans", "matches", "excerpt"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for rec in frame.to_dict("records"):
        spans = [(int(s[0]), int(s[1])) for s in rec["spans"]]
        text = str(rec["text"])
        start, end = spans[0]
        lead = "…" if start > context else ""
        tail = "…" if end + context < len(text) else ""
        excerpt = (
            lead + text[max(0, start - context):start] + "[[" + text[start:end] + "]]"
            + text[end:end + context] + tail
        )
        rows.append({
            "answer_id": rec["answer_id"],
            "task_id": rec["task_id"],
            "family": rec["family"],
            "spans": len(spans),
            "matches": "; ".join(dict.fromkeys(text[s:e] for s, e in spans)),
            "excerpt": excerpt.replace("\n", " "),
        })
    return pd.DataFrame(rows, columns=columns)


def mask_scopes(store: RubricView) -> list[str]:
    """The scopes masking can be set for: ``project`` and ``rubric:<id>`` per stored rubric."""
    rubrics = store.rubrics()
    ids = sorted({str(r) for r in rubrics["rubric_id"]}) if len(rubrics) else []
    return ["project", *(f"rubric:{r}" for r in ids)]


def masking_state(store: AdminRole) -> dict[str, bool | None]:
    """Masking per scope: ``True``/``False`` when set, ``None`` when left to the default."""
    stored = store.settings_for(MASK_KEY)
    values = {str(s): str(v).lower() == "true" for s, v in zip(stored["scope"], stored["value"],
                                                                strict=True)}
    return {scope: values.get(scope) for scope in [*mask_scopes(store), *values]}


def masking_table(store: AdminRole) -> pd.DataFrame:
    """Per scope, the stored setting and what raters actually get.

    A rubric's setting wins over the project's, which wins over the default
    (:data:`judgelab.labeler.store.MASK_DEFAULT`); ``effective`` applies that rule
    (:meth:`Store.mask_self_id`).

    Returns:
        ``scope``, ``setting`` (``masked``/``shown``/``not set``) and ``raters see``
        (``masked``/``shown``).
    """
    word = {True: "masked", False: "shown", None: "not set"}
    rows = []
    for scope, value in masking_state(store).items():
        rubric_id = scope.removeprefix("rubric:") if scope.startswith("rubric:") else None
        # With no rubric, mask_self_id reads the project's setting, then the default.
        effective = store.mask_self_id(rubric_id)
        rows.append({"scope": scope, "setting": word[value], "raters see": word[effective]})
    return pd.DataFrame(rows, columns=["scope", "setting", "raters see"])


def set_masking(store: AdminRole, scope: str, on: bool) -> None:
    """Mask (or show) self-identifying spans for raters in ``scope``.

    Raises:
        InputError: ``scope`` is neither ``project`` nor ``rubric:<id>`` of a stored rubric.
    """
    if scope not in mask_scopes(store):
        raise InputError(
            f"unknown masking scope {scope!r}",
            fix="use 'project' or 'rubric:<id>' for a rubric in the database.",
        )
    store.set_setting(scope, MASK_KEY, "true" if on else "false")


# -- export --------------------------------------------------------------------------

#: What the Data page exports as tables: every kind ``judgelab export`` writes as a table that
#: ``judgelab import`` reads back (the rubric is TOML and the designs JSON: :func:`export_designs`;
#: the audit trail is the Audit page's).
EXPORT_KINDS: tuple[DataKind, ...] = tuple(k for k in DATA_KINDS if k not in ("rubric", "designs", *EXPORT_ONLY))


@dataclass(frozen=True)
class Download:
    """A file for ``st.download_button``."""

    data: bytes
    file_name: str
    mime: str


def frame_bytes(frame: pd.DataFrame, fmt: ExportFormat) -> bytes:
    """``frame`` as CSV, JSON lines or Parquet bytes.

    CSV cells that a spreadsheet would run as a formula get a leading ``'`` that
    ``judgelab import`` removes again (:func:`judgelab.labeler.exports.table_bytes`).
    """
    return table_bytes(frame, fmt)


def export_data(store: ImportExportRole, kind: DataKind, fmt: ExportFormat) -> Download:
    """One kind's rows in the file schema ``judgelab import`` reads, as a download.

    Raises:
        InputError: An unknown kind or format.
    """
    if kind not in EXPORT_KINDS and kind not in EXPORT_ONLY:
        raise InputError(f"unknown export {kind!r}", fix=f"use one of {', '.join((*EXPORT_KINDS, *EXPORT_ONLY))}.")
    frame = export_table(store, kind)
    download = Download(frame_bytes(frame, fmt), f"{kind}.{fmt}", EXPORT_MIME[fmt])
    # Built when the admin clicks the download button (the Data page passes a callable).
    store.record_action("export", download.file_name, kind=kind, rows=len(frame), format=fmt)
    return download


def export_designs(store: ImportExportRole) -> Download:
    """Every sample and active design with its probabilities (JSON), as ``judgelab export designs`` writes them."""
    text, n = designs_json(store)
    store.record_action("export", "designs.json", kind="designs", rows=n, format="json")
    return Download(text.encode("utf-8"), "designs.json", "application/json")


def export_labels(store: ImportExportRole, fmt: ExportFormat) -> Download:
    """Every label row (with ``current`` marking the unsuperseded ones) as a download."""
    return export_data(store, "labels", fmt)
