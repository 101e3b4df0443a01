"""Admin page: crowd studies (issue 57), their study links and each participant's record.

Per participant: the items dealt and done, the active seconds the rating form counted, gold and
attention results, and the pay-relevant time (consent to completion, return or the time limit).
Studies are created with ``judgelab crowd create`` (docs: admins/crowd.md). Thin page over
:mod:`judgelab.labeler.store._crowd`.
"""

from __future__ import annotations

import streamlit as st

from judgelab.admin import base_url
from judgelab.session import current_store, require_admin

admin = require_admin()
store = current_store()

st.title("Crowd")
studies = store.crowd_studies()
if not studies:
    st.info("No crowd study yet. Create one with `judgelab crowd create NAME --quota N --minutes M "
            "--completion-code CODE`, then paste its study link into the platform.")
    st.stop()
chosen = st.selectbox("Study", [s.name for s in studies], index=len(studies) - 1)
study = next(s for s in studies if s.name == chosen)
done_with = f"code `{study.completion_code}`" if study.completion_code else ""
if study.completion_url:
    done_with += (" and " if done_with else "") + f"redirect to {study.completion_url}"
st.caption(f"{study.platform.title()} · {study.quota} answers each · {study.time_limit / 60:g} min · "
           f"k = {study.k} · ends with {done_with}" + (" · **closed**" if study.closed else ""))
st.markdown("Study link (paste it into the platform; it makes raters of this study only):")
st.code(study.link(base_url(store)), language=None, wrap_lines=True)
frame = store.crowd_participants(chosen)
if frame.empty:
    st.info("Nobody has opened the link yet.")
    st.stop()
left, mid, right = st.columns(3)
left.metric("Participants", len(frame))
mid.metric("Completed", int((frame["outcome"] == "completed").sum()))
right.metric("Timed out or returned", int(frame["outcome"].isin(["timed_out", "returned"]).sum()))
shown = frame[["participant_id", "rater", "outcome", "items", "done", "active_seconds", "pay_seconds", "gold",
               "gold_right", "attention", "attention_passed"]].fillna({"outcome": "working"})
st.dataframe(shown, hide_index=True, width="stretch", column_config={
    "active_seconds": st.column_config.NumberColumn("active s", format="%.0f"),
    "pay_seconds": st.column_config.NumberColumn("pay s", format="%.0f",
                                                 help="Consent to completion, return or the time limit."),
})
st.download_button("Download CSV", shown.to_csv(index=False), file_name=f"crowd-{chosen}.csv", mime="text/csv")
