"""Admin page: who labels what.

Give a chosen subset of answers to k raters each, pairs for comparison, padding audits,
or apply a sample design.

Admins are not blind, so filtering by family is offered here; nothing on this page
reaches a rater.
"""

from __future__ import annotations

import streamlit as st

from judgelab.admin import (
    DesignDraft,
    active_raters,
    apply_sample_design,
    assign_audit_sample,
    assign_each_to_k,
    assign_pairwise,
    draft_design,
    family_pairs,
    overview,
    rewrite_variants,
    select_answers,
    subset_summary,
    task_order,
)
from judgelab.labeler.errors import JudgelabError
from judgelab.session import current_store, require_admin
from judgelab.views._active_section import assignments_section

# The drawn design waits here between "Draw" and "Apply" (admin session only).
DRAFT = "admin_design_draft"

require_admin()
store = current_store()  # the admin page wires several roles (Store plays them all)

st.title("Assignments")

catalog = store.answer_catalog()
raters = active_raters(store)
rubrics = store.rubrics()
if catalog.empty:
    st.info("No answers yet: upload some on the Data page.")
    st.stop()
if raters.empty:
    st.info("No active raters yet: invite some on the Raters page.")
    st.stop()
if rubrics.empty:
    st.info("No rubric yet: upload one on the Data page.")
    st.stop()

rater_label = dict(zip(raters["rater_id"], raters["rater"], strict=True))
rubric_choices = [(str(r), int(v)) for r, v in zip(rubrics["rubric_id"], rubrics["version"],
                                                   strict=True)]


def _options(column: str) -> list[str]:
    return sorted({str(v) for v in catalog[column].dropna()})


#: Raters (not admins) are picked by default in every form on this page.
default_raters = [r for r, role in zip(raters["rater_id"], raters["role"], strict=True) if role == "rater"]


def _pick_raters(key: str) -> list[int]:
    """The raters a form assigns to (active raters picked by default)."""
    return list(st.multiselect("Raters", list(rater_label), default=default_raters,
                               format_func=rater_label.__getitem__, key=key))


st.subheader("Each answer to k raters")
c1, c2, c3 = st.columns(3)
categories = c1.multiselect("Categories", _options("category"), key="assign_categories",
                            placeholder="all")
variants = c2.multiselect("Variants", _options("variant"), default=(
    ["original"] if "original" in _options("variant") else []), key="assign_variants",
    placeholder="all")
families = c3.multiselect("Families", _options("family"), key="assign_families",
                          placeholder="all")
tasks = task_order(store)
task_range = None
if len(tasks) > 1:
    first, last = st.select_slider("Tasks", options=tasks, value=(tasks[0], tasks[-1]),
                                   key="assign_tasks")
    task_range = (str(first), str(last))
try:
    chosen = select_answers(catalog, categories=categories, variants=variants,
                            families=families, task_range=task_range, tasks_in_order=tasks)
except JudgelabError as exc:
    st.error(str(exc))
    st.stop()
st.caption(f"{len(chosen)} answers selected "
           f"({int((chosen['assigned'] > 0).sum())} of them already have raters).")
st.dataframe(subset_summary(chosen), hide_index=True)

with st.form("assign_k"):
    who = _pick_raters("assign_raters")
    k_col, seed_col, rubric_col = st.columns(3)
    k = k_col.number_input("k (raters per answer)", min_value=1, max_value=max(len(rater_label), 1),
                           value=min(2, len(rater_label)), step=1, key="assign_k_value")
    seed = seed_col.number_input("Seed", min_value=0, value=0, step=1, key="assign_seed")
    rubric = rubric_col.selectbox("Rubric", rubric_choices, format_func=lambda r: f"{r[0]} v{r[1]}",
                                  key="assign_rubric")
    go = st.form_submit_button(f"Assign each of the {len(chosen)} answers to k raters",
                               key="assign_submit")
if go:
    try:
        summary = assign_each_to_k(store, chosen["answer_id"].tolist(), int(k), list(who),
                                   seed=int(seed), rubric=rubric)
    except JudgelabError as exc:
        st.error(str(exc))
    else:
        st.success(str(summary))

st.subheader("Pairwise comparisons")
st.caption(
    "Two answers to the same task side by side, one from each family, taken from the "
    "selection above. Each rater of a pair sees its sides in a counterbalanced order."
)
family_names = _options("family")
if len(family_names) < 2:
    st.caption("Needs answers from two families.")
else:
    with st.form("pairwise"):
        p1, p2, p3 = st.columns(3)
        left = p1.selectbox("One family", family_names, index=0, key="pair_first")
        right = p2.selectbox("Other family", family_names, index=1, key="pair_second")
        pair_k = p3.number_input("Raters per pair", min_value=1,
                                 max_value=max(len(rater_label), 1), value=1, step=1,
                                 key="pair_k")
        pair_raters = _pick_raters("pair_raters")
        go_pairs = st.form_submit_button("Assign the pairs", key="pair_submit")
    if go_pairs:
        try:
            pairs = family_pairs(chosen, str(left), str(right))
            made_pairs = assign_pairwise(store, pairs, int(pair_k), list(pair_raters),
                                         seed=int(seed))
        except JudgelabError as exc:
            st.error(str(exc))
        else:
            st.success(str(made_pairs))

st.subheader("Padding audits")
st.caption(
    "A rewrite side by side with its original: does the rewrite add anything a reader "
    "could act on? A sample of about fifteen is enough to check a padding probe."
)
rewrites = rewrite_variants(catalog)
if not rewrites:
    st.caption("No rewritten variants (e.g. padded) in the pool.")
else:
    with st.form("audits"):
        a1, a2, a3 = st.columns(3)
        audit_variant = a1.selectbox("Rewrite", rewrites, key="audit_variant")
        audit_n = a2.number_input("How many", min_value=1, value=15, step=1, key="audit_n")
        audit_k = a3.number_input("Raters per audit", min_value=1,
                                  max_value=max(len(rater_label), 1), value=1, step=1,
                                  key="audit_k")
        audit_raters = _pick_raters("audit_raters")
        go_audits = st.form_submit_button("Assign the audits", key="audit_submit")
    if go_audits:
        try:
            made_audits = assign_audit_sample(store, str(audit_variant), int(audit_n),
                                              int(audit_k), list(audit_raters), seed=int(seed))
        except JudgelabError as exc:
            st.error(str(exc))
        else:
            st.success(str(made_audits))

st.subheader("Apply a sample design")
st.caption(
    "A stratified sample of the original answers, drawn for the self-preference gap; "
    "each sampled answer carries its inclusion probability so calibration can weight it."
)
with st.form("design"):
    d1, d2, d3, d4 = st.columns(4)
    n = d1.number_input("Answers to label", min_value=1, value=min(200, len(catalog)), step=10,
                        key="design_n")
    allocation = d2.selectbox("Allocation", ["gap", "neyman", "proportional", "equal"],
                              key="design_allocation")
    overlap = d3.slider("Overlap (two raters)", 0.0, 1.0, 0.2, 0.05, key="design_overlap")
    d_seed = d4.number_input("Seed", min_value=0, value=0, step=1, key="design_seed")
    d_raters = st.multiselect("Raters", [str(n) for n in raters["name"]],
                              default=[str(n) for n, role in
                                       zip(raters["name"], raters["role"], strict=True)
                                       if role == "rater"],
                              key="design_raters")
    drawn = st.form_submit_button("Draw the design", key="design_draw")
if drawn:
    try:
        st.session_state[DRAFT] = draft_design(
            store, n=int(n), allocation=str(allocation), overlap=float(overlap),
            raters=len(d_raters), seed=int(d_seed),
        )
    except JudgelabError as exc:
        st.session_state.pop(DRAFT, None)
        st.error(str(exc))
draft: DesignDraft | None = st.session_state.get(DRAFT)
if draft is not None:
    st.caption(
        f"Design {draft.design.design_id}: {draft.design.n_labels} answers; "
        f"{draft.minutes_per_label:.1f} min per label ({draft.minutes_source})."
    )
    st.dataframe(draft.table, hide_index=True)
    for note in draft.design.notes:
        st.caption(note)
    if st.button("Apply this design to the chosen raters", key="design_apply"):
        try:
            made = apply_sample_design(store, draft, d_raters, seed=int(d_seed))
        except JudgelabError as exc:
            st.error(str(exc))
        else:
            st.session_state.pop(DRAFT, None)
            st.success(f"{len(made)} assignments made for design {draft.design.design_id}.")

# Active batches go to people only: a simulated rater never labels, so a batch given to one never completes.
assignments_section(store, [str(n) for n, s in zip(raters["name"], raters["simulated"], strict=True) if not s],
                    [str(n) for n, role, s in zip(raters["name"], raters["role"], raters["simulated"], strict=True)
                     if role == "rater" and not s])

st.subheader("Assigned so far")
per_rater = overview(store).per_rater
if per_rater.empty:
    st.caption("Nothing assigned yet.")
else:
    st.dataframe(
        per_rater.drop(columns=["rater_id"]),
        hide_index=True,
        column_config={"share_done": st.column_config.ProgressColumn(
            "share done", format="percent", min_value=0.0, max_value=1.0)},
    )
