"""The Overview's "Recent server errors": what raters were spared, in full, for the admin.

Not a page itself: ``admin_overview.py`` calls :func:`server_errors`. The list is
:mod:`judgelab.admin._incidents`' (this server process's memory; the server log has each one
with its traceback).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from judgelab.admin._incidents import SAVE_FAILED, clear, recent


def server_errors() -> None:
    """List the server errors kept from raters, newest first (nothing when there is none)."""
    incidents = recent()
    if not incidents:
        return
    st.subheader("Recent server errors")
    st.caption(f"Raters were told only: \u201c{SAVE_FAILED}\u201d (or that the page could not load). "
               "The full messages, newest first; the server log has each with its traceback.")
    # A plain table: the messages are long and wrap (a data grid would cut them to one line).
    st.table(pd.DataFrame({
        "When": [i.at.strftime("%Y-%m-%d %H:%M:%S UTC") for i in incidents],
        "Doing": [i.where for i in incidents],
        "Rater": [i.rater or "—" for i in incidents],
        "Error (with the fix)": [i.detail for i in incidents],
    }).set_index("When"))
    if st.button("Clear this list", key="server_errors_clear"):
        clear()
        st.rerun()
