"""Admin page: labelling progress per rater and overall, and the work left."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from judgelab.admin import overview, screen_summary
from judgelab.calibration.loop import revalidation_note
from judgelab.labeler.timing import IDLE_CAP_SECONDS, rater_times
from judgelab.session import current_store, require_admin
from judgelab.views._active_section import overview_section
from judgelab.views._errors_section import server_errors
from judgelab.views._quality_section import overview_quality

require_admin()
store = current_store()  # the admin page wires several roles (Store plays them all)
view = overview(store)

st.title("Overview")

if store.read_only:
    st.warning(f"The project database {store.path} is open for reading only: the admin pages and exports work, "
               "and raters are told rating is paused (nothing they do is saved). To rate again, make the file "
               "and its folder writable, then restart `judgelab serve`.")
server_errors()
stale = revalidation_note(store)
if stale:
    st.warning(f"Re-validate the judge: {stale}")

if view.assigned == 0:
    st.info("Nothing is assigned yet. Assign answers to raters on the Assignments page.")

done_col, left_col, secs_col, hours_col = st.columns(4)
share = "" if math.isnan(view.share_done) else f" ({view.share_done:.0%})"
done_col.metric("Done", f"{view.done} of {view.assigned}", help=None)
done_col.caption(f"items answered{share}")
left_col.metric("Remaining", f"{view.remaining}")
# A revoked rater's unanswered items stay in the count (they are history), but nobody will label
# them: say how many, and where they go (issue 29).
held = view.per_rater[~view.per_rater["active"].astype(bool)] if not view.per_rater.empty else view.per_rater
stranded = int(held["remaining"].sum()) if not held.empty else 0
if stranded:
    left_col.caption(f"of which {stranded} held by revoked rater(s): nobody will label them unless they are "
                     "given to others (Assignments page)")
secs_col.metric(
    "Median seconds per label",
    "—" if math.isnan(view.median_seconds) else f"{view.median_seconds:.0f} s",
)
secs_col.caption(view.seconds_basis)
hours_col.metric("Person-hours left", f"{view.person_hours_left:.1f} h")
hours_col.caption(f"remaining items × {view.minutes_per_label:g} min per label ({view.minutes_source})")

overview_quality(store)

withheld = store.screen_figures().withheld
screened = screen_summary(store)
if screened or withheld:
    st.subheader("Answers that say who wrote them")
    if screened:
        st.markdown(screened)
    if withheld:
        st.caption(f"{withheld} answer(s) withheld from raters now (a rater's W key or the screen): "
                   "mask or clear them on the Withheld page.")

per = view.per_rater
overview_section(store, labels_in_project=None if per.empty else int(per["labels"].sum()))

#: Human headers for the per-rater table, in order (other columns are left out).
HEADERS = {
    "rater": "Rater", "active": "Active", "assigned": "Assigned", "done": "Done",
    "remaining": "Remaining", "share_done": "Share done", "done_score": "Rated",
    "done_pair": "Compared", "done_audit": "Audited", "labels": "Labels",
    "median_seconds": "Median active s", "share_above_cap": f"Over {IDLE_CAP_SECONDS} s",
}

st.subheader("Progress per rater")
if view.per_rater.empty:
    st.caption("No rater has assignments yet.")
else:
    times = rater_times(store.label_seconds())
    table = view.per_rater.merge(times, on="rater_id", how="left")
    table = table[[c for c in HEADERS if c in table.columns]]
    # A rater without timed labels has no median: a dash, not "None".
    table["median_seconds"] = table["median_seconds"].map(lambda v: "—" if pd.isna(v) else f"{v:.0f}")
    table["share_above_cap"] = table["share_above_cap"].map(lambda v: "—" if pd.isna(v) else f"{v:.0%}")
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={
            **{c: st.column_config.NumberColumn(h) for c, h in HEADERS.items()},
            "rater": st.column_config.TextColumn("Rater"),
            "active": st.column_config.CheckboxColumn("Active"),
            "share_done": st.column_config.ProgressColumn(
                "Share done", format="percent", min_value=0.0, max_value=1.0
            ),
            "median_seconds": st.column_config.TextColumn("Median active s"),
            "share_above_cap": st.column_config.TextColumn(f"Over {IDLE_CAP_SECONDS} s"),
        },
    )
    st.caption(
        "Active seconds: the time an item was on the rater's screen before the submit, without a "
        f"hidden tab or idle stretches beyond {IDLE_CAP_SECONDS} s. \"Over {IDLE_CAP_SECONDS} s\" is the "
        "share of a rater's timed labels that took longer than that."
    )

st.subheader("Labels per answer")
if view.labels_per_answer.empty:
    st.caption("No answer is assigned or labelled yet.")
else:
    st.caption("How many answers have been labelled by 0, 1, 2, … raters (assigned or labelled answers).")
    st.bar_chart(view.labels_per_answer, x="labels", y="answers", x_label="raters who labelled it",
                 y_label="answers")
    st.dataframe(view.labels_per_answer, hide_index=True)
