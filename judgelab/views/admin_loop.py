"""Admin page: the judge loop: where the judge and the people part, two versions compared, the history."""

from __future__ import annotations

import streamlit as st

from judgelab.admin import (
    compare_table,
    confusion_tables,
    disagreement_table,
    held_out_status,
    loop_runs,
    versions_history,
)
from judgelab.calibration.loop import compare_runs, disagreements
from judgelab.labeler.errors import JudgelabError
from judgelab.labeler.store import LoopRole
from judgelab.session import current_store, require_admin

require_admin()
store: LoopRole = current_store()

st.title("Judge loop")
runs = loop_runs(store)
if not runs:
    st.info("No judge run with scores yet: run `judgelab score --labelled` or import judgements.")
    st.stop()

st.subheader("Where the judge and the people part")
run = st.selectbox("Judge run", runs, key="loop_run")
unblind = st.checkbox("Unblind (show family, model and variant)", value=False, key="loop_unblind")
try:
    result = disagreements(store, run, unblind=unblind)
except JudgelabError as exc:
    st.error(str(exc))
    st.stop()
st.caption(f"{len(result.rows)} labelled answers of the tuning part, farthest from the people first.")
st.dataframe(disagreement_table(result), hide_index=True)
if st.checkbox("Per turn (conversations rated turn by turn)", value=False, key="loop_per_turn"):
    try:
        turns = disagreements(store, run, unblind=unblind, per_turn=True)
    except JudgelabError as exc:
        st.info(str(exc))
    else:
        n_turns = 0 if turns.turns is None else len(turns.turns)
        st.caption(f"{n_turns} assistant turns of the tuning part's conversations, farthest from the people first.")
        st.dataframe(disagreement_table(turns), hide_index=True)
for criterion, matrix, rates in confusion_tables(result):
    st.markdown(f"**Confusion [{criterion}]** (rows: people, columns: judge; rates with exact 95% intervals)")
    left, right = st.columns(2)
    left.dataframe(matrix)
    right.dataframe(rates, hide_index=True)

st.subheader("Compare two versions")
a_col, b_col = st.columns(2)
run_a = a_col.selectbox("Version A (old)", runs, index=min(1, len(runs) - 1), key="loop_a")
run_b = b_col.selectbox("Version B (new)", runs, index=0, key="loop_b")
held_out = st.checkbox("Read the held-out part (the look is recorded)", value=False, key="loop_held_out")
if st.button("Compare", key="loop_compare", disabled=run_a == run_b):
    try:
        report = compare_runs(store, run_a, run_b, part="held-out" if held_out else "tuning", n_resamples=1000)
    except JudgelabError as exc:
        st.error(str(exc))
    else:
        st.markdown(f"**Verdict: {report.comparison.verdict}** on the {report.paired.part} part "
                    f"({report.comparison.n_answers} answers; intervals at {report.comparison.level:.1%})")
        st.dataframe(compare_table(report), hide_index=True)
        if report.comparison.mcnemar is not None:
            m = report.comparison.mcnemar
            st.caption(f"McNemar: B right, A wrong on {m.b_only}; A right, B wrong on {m.a_only}; p = {m.p_value:.3g}")

st.subheader("Versions' history")
st.dataframe(versions_history(store), hide_index=True)

# Read after the compare above, so a look this run made is already counted.
st.subheader("Held-out looks")
status = held_out_status(store)
st.metric("Held-out looks", status["looks"],
          help="Every read of the held-out part is counted; its intervals widen for the count (Bonferroni).")
if status["looks"]:
    st.caption("Runs looked at on the held-out part: " + ", ".join(status["runs"]))
    st.dataframe(status["table"], hide_index=True)
