"""Admin page: invite raters, revoke them, issue new links, list them."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from judgelab.admin import invite_rater, rater_table, reissue_link, revoke_rater
from judgelab.labeler.errors import JudgelabError
from judgelab.labeler.store import AdminRole
from judgelab.session import current_store, require_admin
from judgelab.views._quality_section import raters_quality

# An action's outcome is kept for exactly one rerun, so the table below is redrawn
# with the change and the message (and a new link) still shows once.
FLASH = "admin_raters_flash"

admin = require_admin()
store: AdminRole = current_store()

st.title("Raters")

flash = st.session_state.pop(FLASH, None)
if flash is not None:
    message, link = flash
    st.success(message)
    if link:
        st.code(link, language=None)


def _done(message: str, link: str | None = None) -> None:
    st.session_state[FLASH] = (message, link)
    st.rerun()


st.subheader("Invite a rater")
with st.form("invite", clear_on_submit=True):
    name = st.text_input("Name", key="invite_name")
    as_admin = st.checkbox("Admin (can see these pages; is not blind)", key="invite_admin")
    invited = st.form_submit_button("Invite", key="invite_submit")
if invited:
    try:
        invite = invite_rater(store, name, admin=as_admin)
    except JudgelabError as exc:
        st.error(str(exc))
    else:
        _done(
            f"Invited {invite.rater.name}. Send them this link now: it is shown only once "
            "(only a hash of it is stored). The copy button is at its right."
            + (f" It expires {invite.expires_at:%Y-%m-%d %H:%M} UTC." if invite.expires_at else ""),
            invite.link,
        )

raters = rater_table(store)

st.subheader("All raters")
if raters.empty:
    st.caption("No raters yet.")
else:
    # A rater never revoked has no time there: a dash, not Streamlit's grey "None".
    shown = raters.drop(columns=["name"]).assign(
        revoked_at=[t.strftime("%Y-%m-%d %H:%M:%S") if pd.notna(t) else "—" for t in raters["revoked_at"]])
    st.dataframe(shown, hide_index=True)

names = raters["name"].tolist()
active = raters.loc[raters["status"] == "active", "name"].tolist()

left, right = st.columns(2)
with left:
    st.subheader("New link")
    st.caption("The old link stops working; a revoked rater is let in again.")
    who = st.selectbox("Rater", names, index=None, key="reissue_name")
    if st.button("Issue a new link", key="reissue_button", disabled=who is None):
        try:
            link = reissue_link(store, str(who))
        except JudgelabError as exc:
            st.error(str(exc))
        else:
            _done(f"New link for {who}; the old one no longer works.", link)
with right:
    st.subheader("Revoke")
    st.caption("The link stops working; the rater's labels stay.")
    gone = st.selectbox("Rater", active, index=None, key="revoke_name")
    if st.button("Revoke", key="revoke_button", disabled=gone is None):
        try:
            revoke_rater(store, str(gone), acting=admin)
        except JudgelabError as exc:
            st.error(str(exc))
        else:
            _done(f"Revoked {gone}.")

raters_quality(store)
