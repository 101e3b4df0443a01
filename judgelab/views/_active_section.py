"""The active labelling sections of the admin pages (Overview and Assignments).

Not a page itself: ``admin_overview.py`` and ``admin_assignments.py`` call these. The words and
figures come from :mod:`judgelab.admin` (and :mod:`judgelab.calibration.active`); this only lays them out.
"""

from __future__ import annotations

import streamlit as st

from judgelab.admin import KEPT, active_chart, active_view, apply_active_draft, draft_active_batch, reassign_stranded
from judgelab.calibration.active import active_saving
from judgelab.labeler.errors import JudgelabError
from judgelab.labeler.store import DesignRole

#: The drawn batch waits here between "Draw" and "Apply" (admin session only).
ACTIVE_DRAFT = "admin_active_draft"
#: What the last action did, shown once after the page reruns with the new state.
ACTIVE_DONE = "admin_active_done"


def overview_section(store: DesignRole, *, labels_in_project: int | None = None) -> None:
    """The gap's interval against the labels collected, the labels still needed, and when to stop.

    Args:
        store: The project store.
        labels_in_project: Every rater's current labels in the project, to say how many of them
            the design's interval reads (``None``: not said).
    """
    # Kept per state of the database (judgelab.admin.KEPT): the status is an estimate over every
    # batch, and recomputing it on each rerun left the page's charts greyed out meanwhile.
    view = KEPT.get(("active_view", str(store.path), store.activity_watermark()), lambda: active_view(store))
    if view is None:
        return
    status = view.status
    st.subheader("Active labelling")
    gap_col, target_col, labels_col = st.columns(3)
    gap_col.metric("Self-preference gap", view.interval)
    gap_col.caption("repeated 95% interval, valid however often it is looked at")
    target_col.metric("Target half-width", f"±{status.target_half_width:g} pp")
    labels_col.metric("Labels in the design's finished batches", f"{status.labels_collected}")
    total = "" if labels_in_project is None else f"; {labels_in_project} labels in the project in all"
    labels_col.caption(f"{status.n_batches} batch(es) of design {status.design_id} drawn{total}")
    if view.stop:
        st.success(view.message)
    elif view.done:
        st.warning(view.message)
    else:
        st.info(view.message)
    st.markdown(f"**Labels needed:** {view.needed}.")
    forecast = KEPT.get(("active_saving", str(store.path), store.activity_watermark()),
                        lambda: active_saving(store, status.design_id))
    if forecast is not None:
        st.caption(forecast.headline + ".")
    # Two intervals of the same gap meet an admin on two pages; say why they differ (issue 29).
    st.caption(
        "**Why this interval is wider than the Calibration page's.** This one decides when to stop: it reads "
        f"only the {status.labels_collected} labels of the design's finished batches, and it is widened so "
        "that looking after every batch does not make a false stop likely (a *repeated* 95% interval). The "
        "Calibration page reports the gap once, with an ordinary 95% interval"
        + (f", from all {labels_in_project} labels" if labels_in_project is not None else "")
        + ", so it is narrower and can sit elsewhere. Decide when to stop here; report from the Calibration page."
    )
    chart = active_chart(status)
    if chart is not None:
        st.altair_chart(chart, key="overview_active_chart")
        shown = status.looks[["look", "labels", "estimate", "ci_low", "ci_high", "half_width", "critical", "reached"]]
        if "no_interval" in status.looks:
            # A look with no interval yet: its plan's astronomic critical value reads as a width.
            shown = shown.assign(critical=shown["critical"].where(status.looks["no_interval"].isna()))
        st.dataframe(
            shown,
            hide_index=True,
            column_config={
                "estimate": st.column_config.NumberColumn("gap (pp)", format="%+.1f"),
                "ci_low": st.column_config.NumberColumn("low", format="%+.1f"),
                "ci_high": st.column_config.NumberColumn("high", format="%+.1f"),
                "half_width": st.column_config.NumberColumn("± (pp)", format="%.1f"),
                "critical": st.column_config.NumberColumn("critical value", format="%.2f"),
                "reached": st.column_config.CheckboxColumn("met the target"),
            },
        )


def assignments_section(store: DesignRole, rater_names: list[str], default_raters: list[str]) -> None:
    """Start an active design or draw its next batch, and apply it to raters."""
    st.subheader("Active labelling")
    st.caption(
        "Batches of answers drawn where the judge is least likely to agree with people, until the "
        "self-preference gap's interval is as narrow as the target. After each batch is labelled the next "
        "batch's probabilities are recomputed from the labels so far; the Overview shows the interval and "
        "says when the team may stop."
    )
    done = st.session_state.pop(ACTIVE_DONE, None)
    if done:
        st.success(done)
    view = active_view(store)
    if view is not None:
        (st.success if view.stop else st.info)(view.message)
    with st.form("active"):
        a1, a2, a3, a4 = st.columns(4)
        # An open design keeps its target: the field shows it, and only a new design takes another.
        going = view is not None and not view.done
        target = a1.number_input("Target half-width (pp)", min_value=0.5,
                                 value=view.status.target_half_width if going and view else 15.0, step=0.5,
                                 key="active_target")
        budget = a2.number_input("Budget (person-hours, 0 = none)", min_value=0.0, value=0.0, step=1.0,
                                 key="active_budget")
        overlap = a3.slider("Overlap (two raters)", 0.0, 1.0, 0.0, 0.05, key="active_overlap")
        seed = a4.number_input("Seed", min_value=0, value=0, step=1, key="active_seed")
        who = st.multiselect("Raters", rater_names, default=default_raters, key="active_raters")
        new = st.checkbox("Start a new design (even if one is open)", key="active_new")
        label = "Draw the next batch" if view is not None and not view.done else "Start: draw batch 1"
        drawn = st.form_submit_button(label, key="active_draw")
    if view is not None and view.stranded:
        _reassign_button(store, view.stranded, list(who), int(seed))
    if drawn:
        try:
            start = bool(new) or not going
            st.session_state[ACTIVE_DRAFT] = draft_active_batch(
                store, target_half_width=float(target) if start else None, budget_hours=float(budget) or None,
                overlap=float(overlap), new=start, seed=int(seed),
            )
        except JudgelabError as exc:
            st.session_state.pop(ACTIVE_DRAFT, None)
            st.error(str(exc))
    draft = st.session_state.get(ACTIVE_DRAFT)
    if draft is None:
        return
    s = draft.summary()
    st.caption(
        f"Batch {draft.batch} of design {draft.design_id}: {draft.n_new} answers to label; labelling "
        f"probabilities {s['prob_min']:.3f} to {s['prob_max']:.3f} (floor {s['floor']:.3f}), planned from "
        f"{s['labels_learnt_from']} labelled answers."
    )
    for note in draft.notes:
        st.caption(note)
    if st.button("Apply this batch to the chosen raters", key="active_apply"):
        try:
            made = apply_active_draft(store, draft, list(who), seed=int(seed))
        except JudgelabError as exc:
            st.error(str(exc))
        else:
            st.session_state.pop(ACTIVE_DRAFT, None)
            st.success(f"{len(made)} assignments made for batch {draft.batch} of design {draft.design_id}.")


def _reassign_button(store: DesignRole, stranded: int, who: list[str], seed: int) -> None:
    """Give the batch's answers whose raters were revoked to the chosen raters."""
    if not st.button(f"Reassign: give the {stranded} stranded answer(s) to the chosen raters", key="active_reassign"):
        return
    try:
        made = reassign_stranded(store, who, seed=seed)
    except JudgelabError as exc:
        st.error(str(exc))
        return
    per = made.groupby("rater").size()
    st.session_state[ACTIVE_DONE] = (
        f"{len(made)} assignments made for the stranded answers "
        f"({', '.join(f'{r}: {n}' for r, n in per.items())}); the batch's draw is unchanged."
        if len(made) else "Nothing was stranded any more: another admin gave those answers to raters already."
    )
    st.rerun()
