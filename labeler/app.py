"""The judgelab rater app: ``streamlit run labeler/app.py`` with ``JUDGELAB_DB`` set.

The entry point only authenticates the ``?t=`` invite token and builds the
navigation: the rating pages for everyone, the admin pages for admins, and the
analyst's Calibration page when it is installed. Every page re-checks access itself
(through :mod:`labeler.session`), so a page opened directly is just as guarded.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit.navigation.page import Page

from labeler.session import current_rater

PAGES = Path(__file__).resolve().parent / "pages"

#: (file, title, icon) in menu order.
RATER_PAGES = (
    ("rate.py", "Rate", ":material/grading:"),
    ("pairwise.py", "Compare", ":material/compare:"),
    ("audit.py", "Padding audit", ":material/difference:"),
)
ADMIN_PAGES = (
    ("admin_overview.py", "Overview", ":material/monitoring:"),
    ("admin_raters.py", "Raters", ":material/group:"),
    ("admin_data.py", "Data", ":material/database:"),
    ("admin_assignments.py", "Assignments", ":material/assignment_ind:"),
    ("admin_agreement.py", "Agreement", ":material/handshake:"),
)
ANALYST_PAGES = (("analyst.py", "Calibration", ":material/insights:"),)


def _pages(
    entries: tuple[tuple[str, str, str], ...], *, first_default: bool = False
) -> list[Page]:
    """``st.Page`` objects for the entries whose file exists (pages arrive in stages)."""
    out: list[Page] = []
    for i, (name, title, icon) in enumerate(entries):
        if (PAGES / name).exists():
            out.append(
                st.Page(f"pages/{name}", title=title, icon=icon, default=first_default and i == 0)
            )
    return out


st.set_page_config(page_title="judgelab", page_icon=":material/grading:", layout="wide")

rater = current_rater()  # stops here with "Access denied" when the token is missing or bad

sections: dict[str, list[Page]] = {"Label": _pages(RATER_PAGES, first_default=True)}
if rater.is_admin:
    sections["Admin"] = _pages(ADMIN_PAGES)
    analyst = _pages(ANALYST_PAGES)
    if analyst:
        sections["Analysis"] = analyst

page = st.navigation(sections)
st.sidebar.caption(f"Signed in as **{rater.name}**")
page.run()
