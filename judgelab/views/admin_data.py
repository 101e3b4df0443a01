"""Admin page: the data in and out.

Upload files through the validated importers (with columns to ignore), rubric versions,
self-identifying text and whether raters see it, and exports of every kind in the schema the
importers read.
"""

from __future__ import annotations

import functools

import streamlit as st

from judgelab.admin import (
    EXPORT_FORMATS,
    EXPORT_KINDS,
    EXPORT_MIME,
    ExportFormat,
    export_data,
    export_designs,
    import_upload,
    masking_state,
    masking_table,
    rubric_versions,
    self_identifying_table,
    set_masking,
)
from judgelab.labeler.errors import JudgelabError
from judgelab.labeler.importers import IMPORT_KINDS
from judgelab.labeler.schemas import DataKind
from judgelab.session import current_store, require_admin

# An action's outcome is kept for exactly one rerun, so tables are redrawn with the change.
FLASH = "admin_data_flash"

require_admin()
store = current_store()  # the admin page wires several roles (Store plays them all)

st.title("Data")

flash = st.session_state.pop(FLASH, None)
if flash is not None:
    st.success(flash)


def _done(message: str) -> None:
    st.session_state[FLASH] = message
    st.rerun()


st.subheader("Upload")
st.caption(
    "Rubrics are TOML; answers, pairs, labels, pair labels, audits, judgements and verdicts are "
    "CSV, JSONL or Parquet with the columns of the README's file schemas. Every row is checked "
    "first: a file with any problem imports nothing, and a column judgelab does not know is an "
    "error unless you list it to ignore."
)
with st.form("upload", clear_on_submit=False):
    kind = st.selectbox("What the file holds", IMPORT_KINDS, key="upload_kind")
    upload = st.file_uploader(
        "File", type=["toml", "csv", "jsonl", "ndjson", "parquet", "json"], key="upload_file"
    )
    ignore = st.text_input("Columns to ignore (comma-separated)", key="upload_ignore")
    submitted = st.form_submit_button("Import", key="upload_submit")
if submitted:
    if upload is None:
        st.warning("Choose a file first.")
    else:
        try:
            summary = import_upload(store, kind, upload.name, upload.getvalue(),
                                    ignore_columns=[c for c in str(ignore).split(",") if c.strip()])
        except JudgelabError as exc:
            st.error(str(exc))
        else:
            _done(f"{upload.name}: {summary}")

st.subheader("Rubric versions")
versions = rubric_versions(store)
if versions.empty:
    st.caption("No rubric yet: upload one above.")
else:
    st.dataframe(versions, hide_index=True)

st.subheader("Self-identifying text")
flagged = self_identifying_table(store)
if flagged.empty:
    st.caption("No answer names a model or its maker.")
else:
    st.caption(
        f"{len(flagged)} answers name a model or maker (the match is in [[brackets]]). "
        "Masking replaces those spans in what raters see; the stored text is unchanged."
    )
    st.dataframe(flagged, hide_index=True)

st.dataframe(masking_table(store), hide_index=True)
scope_col, choice_col, save_col = st.columns([2, 2, 1], vertical_alignment="bottom")
scope = scope_col.selectbox("For", list(masking_state(store)), key="mask_scope")
choice = choice_col.radio(
    "Raters see these spans", ["masked", "shown"], horizontal=True, key="mask_choice"
)
if save_col.button("Save", key="mask_save"):
    try:
        set_masking(store, str(scope), choice == "masked")
    except JudgelabError as exc:
        st.error(str(exc))
    else:
        _done(f"Self-identifying spans are now {choice} for raters ({scope}).")

st.subheader("Export")
st.caption(
    "Each kind in the file schema `judgelab import` reads (see the README's file schemas), so a "
    "download re-imports as it is. Labels, preferences and audits carry their edit history "
    "(`supersedes`; `current` marks the rows no later edit supersedes). In CSV a cell that starts "
    "like a spreadsheet formula gets a leading ' that the importer removes again."
)
export_kind = st.selectbox("What to export", EXPORT_KINDS, index=EXPORT_KINDS.index("labels"), key="export_kind")


def _export(kind: DataKind, fmt: ExportFormat) -> bytes:
    return export_data(store, kind, fmt).data


for column, fmt in zip(st.columns(len(EXPORT_FORMATS)), EXPORT_FORMATS, strict=True):
    column.download_button(
        f"{export_kind}.{fmt}",
        # Built only when clicked: the page does not export every row on every rerun.
        data=functools.partial(_export, export_kind, fmt),
        file_name=f"{export_kind}.{fmt}",
        mime=EXPORT_MIME[fmt],
        key=f"export_{fmt}",
        on_click="ignore",
    )

st.caption(
    "The sample designs, with the probability each labelled answer had of being drawn: labels drawn by a "
    "design are read with these, so export them with the labels when the project moves."
)
st.download_button(
    "designs.json",
    data=lambda: export_designs(store).data,
    file_name="designs.json",
    mime="application/json",
    key="export_designs",
    on_click="ignore",
)
