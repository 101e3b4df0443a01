"""The judgelab rater app: ``streamlit run judgelab/app.py`` with ``JUDGELAB_DB`` set.

The entry point only authenticates the ``?t=`` invite token and builds the
navigation: the rating pages for everyone (as a bar at the top for raters), the admin
pages and the analyst's Calibration page for admins (who land on the Overview, with
the menu in the sidebar). Every page re-checks access
itself (through :mod:`judgelab.session`), so a page opened directly is just as guarded.

The pages live in ``views/``, not ``pages/``: Streamlit treats a ``pages/`` folder next
to the entry point as an old-style multipage app, and on a cold server a deep link
would then list every page file in the sidebar before ``st.navigation`` takes over.
"""

from __future__ import annotations

import streamlit as st
from streamlit.navigation.page import Page

from judgelab.crowd_entry import crowd_arrival
from judgelab.session import current_actor, current_rater, rater_store, settle_heap, sign_out_button
from judgelab.views._crowd import is_crowd

#: (file, title, icon) in menu order.
RATER_PAGES = (
    ("rate.py", "Rate", ":material/grading:"),
    ("pairwise.py", "Compare", ":material/compare:"),
    ("audit.py", "Padding audit", ":material/difference:"),
)
ADMIN_PAGES = (
    ("admin_overview.py", "Overview", ":material/monitoring:"),
    ("admin_raters.py", "Raters", ":material/group:"),
    ("admin_crowd.py", "Crowd", ":material/groups:"),
    ("admin_data.py", "Data", ":material/database:"),
    ("admin_assignments.py", "Assignments", ":material/assignment_ind:"),
    ("admin_agreement.py", "Agreement", ":material/handshake:"),
    ("admin_review.py", "Review", ":material/rate_review:"),
    ("admin_withheld.py", "Withheld", ":material/visibility_off:"),
    ("admin_loop.py", "Judge loop", ":material/model_training:"),
    ("admin_audit.py", "Audit trail", ":material/history:"),
)
ANALYST_PAGES = (("analyst.py", "Calibration", ":material/insights:"),)


def _pages(entries: tuple[tuple[str, str, str], ...], *, default: str | None = None) -> list[Page]:
    """``st.Page`` objects for ``entries``; ``default`` names the landing page's file."""
    return [
        st.Page(f"views/{name}", title=title, icon=icon, default=name == default)
        for name, title, icon in entries
    ]


# An emoji icon: a Material icon here makes every rater's browser fetch it from an outside
# font host on every page.
st.set_page_config(page_title="judgelab", page_icon="📝", layout="wide")
# Room for the rating form at 1366x768: less blank space around the page, a smaller title.
st.html(
    "<style>"
    "[data-testid='stMainBlockContainer']{padding:3.6rem 1.5rem 1rem}"
    "[data-testid='stMain'] h1{font-size:1.5rem;padding:0 0 .1rem}"
    # The queue pages' key catcher (views/_catcher.py) shows itself fixed in a corner: its
    # element takes no room, so it adds no gap to the one-screen layout.
    "[class*='st-key-jl-catcher']{position:absolute;width:0;height:0;overflow:visible}"
    "</style>"
)

crowd_arrival()  # ?crowd=: a crowd platform's participant arrives (crowd_entry.py); leaves ?t= in the URL
rater = current_rater()  # stops here with "Access denied" when the token is missing or bad

if rater.is_admin:
    sections: dict[str, list[Page]] = {
        "Label": _pages(RATER_PAGES),
        "Admin": _pages(ADMIN_PAGES, default="admin_overview.py"),
        "Analysis": _pages(ANALYST_PAGES),
    }
    # Fourteen links: Streamlit folds a menu of more than ten behind "View more", which would
    # hide the later admin pages (Withheld, Judge loop, Audit trail) from a glance.
    page = st.navigation(sections, expanded=True)
    st.sidebar.caption(f"Signed in as **{current_actor()}**")
    sign_out_button()
    # The Calibration report is built in a worker process (judgelab.admin._kept); starting it
    # now, not on the first report, keeps its interpreter start-up off the admin's wait.
    # Imported here: the calibration code it needs is not a rater's to load.
    from judgelab.admin import warm_worker

    warm_worker()
else:
    # Raters get their three pages as a bar at the top: the sidebar's width goes to the
    # answer and the rubric.
    crowd = is_crowd(rater_store(), rater)  # a crowd participant gets the Rate page alone, no menu
    page = st.navigation(_pages(RATER_PAGES[:1] if crowd else RATER_PAGES, default="rate.py"),
                         position="hidden" if crowd else "top")
page.run()
settle_heap()
