"""Admin page: the audit trail, who did which admin action and when (issue 57 point 3).

Every import, assignment, design, invite, revoke, pause, adjudication, withholding decision, setting
change, export and project copy, from the command line (``cli:<os user>``) or an admin page
(``admin:<name>``), newest first. Thin page over :mod:`judgelab.admin._audit`; the rows are written
by the store with each action (:mod:`judgelab.labeler.store._audit`).
"""

from __future__ import annotations

import functools

import streamlit as st

from judgelab.admin import EXPORT_FORMATS, EXPORT_MIME, ExportFormat, audit_table, export_data
from judgelab.labeler.schemas import DataKind
from judgelab.labeler.store import AUDIT_ACTIONS
from judgelab.session import current_store, require_admin

ALL = "(every action)"

require_admin()
store = current_store()  # the trail (AdminRole) and its export (ImportExportRole)

st.title("Audit trail")
st.caption("Who imported, assigned, revoked, adjudicated, paused, exported or changed settings, and when: "
           "`cli:` names the computer user who ran a command, `admin:` the admin who acted on these pages. "
           "Raters' own labels are not listed here (the labels hold them).")

left, right = st.columns(2)
action = left.selectbox("Action", [ALL, *AUDIT_ACTIONS], key="audit_action",
                        help="; ".join(f"{a}: {meaning}" for a, meaning in AUDIT_ACTIONS.items()))
table = audit_table(store, action=None if action == ALL else action)
actors = sorted(set(table["actor"]))
actor = right.selectbox("Who", [ALL, *actors], key="audit_actor")
if actor != ALL:
    table = table[table["actor"] == actor]

if table.empty:
    st.info("No admin action is recorded yet." if action == ALL and actor == ALL else "No entry matches.")
else:
    st.dataframe(table, hide_index=True, width="stretch")

st.caption("The whole trail as a file (`judgelab export audit_trail` writes the same); the download is recorded too.")
TRAIL: DataKind = "audit_trail"


def _export(fmt: ExportFormat) -> bytes:
    return export_data(store, TRAIL, fmt).data


for column, fmt in zip(st.columns(len(EXPORT_FORMATS)), EXPORT_FORMATS, strict=True):
    column.download_button(
        f"audit_trail.{fmt}",
        # Built only when clicked: a page view is not an export.
        data=functools.partial(_export, fmt),
        file_name=f"audit_trail.{fmt}",
        mime=EXPORT_MIME[fmt],
        key=f"audit_export_{fmt}",
        on_click="ignore",
    )
