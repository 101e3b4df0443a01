"""Analyst page "Calibration".

The judge read against blind human labels, with the same charts and tables as ``judgelab
calibrate``. Admins only: it shows families, models and variants.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from judgelab.admin import calibration_report, panel_report
from judgelab.calibration.calibrate import HUMAN_SCORE_RULES
from judgelab.calibration.numbers import ci, num
from judgelab.calibration.panel import heatmap, judges_table
from judgelab.calibration.panel import render_markdown as render_panel
from judgelab.calibration.report import confusion_table, render_json, render_markdown, report_charts, report_tables
from judgelab.labeler.errors import JudgelabError
from judgelab.labeler.store import AnalystRole
from judgelab.session import current_store, require_admin

require_admin()
store: AnalystRole = current_store()

st.title("Calibration")

runs = store.calibration_runs()
runs = runs[runs["n_pointwise"] > 0].reset_index(drop=True)
if runs.empty:
    st.info("No judge run with pointwise scores yet: run `judgelab probe ...` or import judgements.")
    st.stop()


# The controls live in the sidebar so that the first thing under the title is the report's own
# warning (simulated labels, an upper-bound gap), not a form.
labels = [f"{r.run_id} · {r.model} · {r.n_pointwise} scores" for r in runs.itertuples(index=False)]
side = st.sidebar
picked = side.selectbox("Judge run", range(len(runs)), format_func=labels.__getitem__, key="analyst_run")
others = ["none", *[r for r in runs["run_id"] if r != runs.loc[int(picked or 0), "run_id"]]]
compare = side.selectbox("Compare with an earlier run (before a rubric change)", others, key="analyst_compare")
rule = side.radio("Human score per answer", HUMAN_SCORE_RULES, horizontal=True, key="analyst_rule",
                  help="Several raters' labels of one answer become its human score by their mean, or "
                       "by the most frequent label (ties to the lower); `adjudicated` takes an admin's "
                       "adjudicated label (Review page) where the answer has one, else the mean; `dawid-skene` "
                       "estimates each rater's confusion and the true labels jointly (posterior mean).")
st.session_state.setdefault("analyst_resamples", 1000)
resamples = int(side.select_slider("Bootstrap resamples", [300, 1000, 2000], key="analyst_resamples"))
run_id = str(runs.loc[int(picked or 0), "run_id"])
try:
    # Kept per input where Streamlit's clear-cache cannot drop it, and built in a worker process
    # so raters' submits in this server do not wait (judgelab.admin._kept).
    with st.spinner("Bootstrapping intervals…"):
        report = calibration_report(store, run_id, compare_run=None if compare == "none" else compare,
                                    human_rule=str(rule), n_resamples=resamples, seed=0)
except JudgelabError as exc:
    st.error(str(exc))
    st.stop()

banner = report.labels.banner()
if banner:
    st.warning(banner, icon=":material/science:")
for note in report.notes:
    if note == banner:
        continue
    (st.warning if "UPPER BOUND" in note else st.info)(note)
st.caption(
    f"Judge `{report.judge_model}` (family `{report.judge_family or 'not recorded'}`), rubric "
    f"`{report.rubric['rubric_id']}` v{report.rubric['version']} ({report.rubric['scale']}), scores in "
    f"`{report.judge_format or 'no pointwise format'}`. {report.human_rule_text()} Intervals are "
    f"{round(100 * report.level)}% ({report.n_resamples} resamples, seed {report.seed})."
)

charts = report_charts(report)
tables = report_tables(report)


def _table(name: str) -> None:
    frame = tables.get(name)
    if frame is None or frame.empty:
        return
    st.dataframe(frame, hide_index=True, key=f"analyst_{name}",
                 column_config={c: st.column_config.NumberColumn(format="%.3f")
                                for c in frame.columns if pd.api.types.is_float_dtype(frame[c])})


st.header("Judge minus human, per family")
gaps = [(scale, s.gap) for scale, s in report.residuals.items() if s.gap is not None]
if gaps:
    cols = st.columns(len(gaps))
    for col, (scale, gap) in zip(cols, gaps, strict=True):
        digits = 1 if scale == "pass" else 2
        bound = " (upper bound)" if gap.upper_bound else ""
        col.metric(f"Self-preference gap, {scale}{bound}", num(gap.estimate, digits, signed=True, unit=gap.units))
        col.caption(f"{ci(gap, digits)}; {gap.n} tasks")
if "residuals" in charts:
    st.altair_chart(charts["residuals"], key="analyst_chart_residuals")
if "gap" in charts:
    st.altair_chart(charts["gap"], key="analyst_chart_gap")
for scale in report.residuals:
    units = report.residuals[scale].units  # a declared scale's own: "scale points (0-2)"
    st.subheader("Pass rate (percentage points)" if scale == "pass" else
                 "Overall score (scale points)" if units == "judge scale points" else f"Overall score ({units})")
    _table(f"residuals_{scale}")

if report.rubric.get("turn") == "each" or report.turns.by_position:
    st.header("Judge minus human, per turn")
    if report.turns.by_position:
        st.caption(f"Judge − human in {report.turns.units}; {report.turns.method}. {report.turns.n_turns} turns of "
                   f"{report.turns.n_answers} conversations.")
        _table("turns_position")
        _table("turns_number")
    else:
        st.info(f"No per-turn view: {report.turns.reason}.")

st.header("Provenance audit")
_table("provenance")
if report.provenance is not None:
    st.caption(report.provenance.reason)

st.header("Agreement")
if "agreement" in charts:
    st.altair_chart(charts["agreement"], key="analyst_chart_agreement")
_table("kappa")
for what in dict.fromkeys(k.what for k in report.kappas):
    st.caption(f"Confusion matrices, {what} (rows: judge, columns: humans), overall and per family")
    st.dataframe(confusion_table(report, what), hide_index=True, key=f"analyst_confusion_{what}")
_table("alpha")
if report.rater_models:
    st.subheader("The model of the raters (Dawid-Skene)")
    for column, model in report.rater_models.items():
        st.caption(f"On the {'pass verdicts' if column == 'pass' else 'overall scores'}: {model.method}.")
    _table("rater_model")
    for warning in report.rater_warnings():
        st.warning(warning)
    st.caption("accuracy: the rater's estimated chance of giving the true category; kappa: the accuracy "
               "chance-corrected at the rater's own label rates (near 0: a random or constant rater); k→k: of "
               "saying k when the true category is k. The whole confusion matrices are in the JSON report "
               "(`rater_model`).")

st.header("Prediction-powered pass rates")
if "ppi" in charts:
    st.altair_chart(charts["ppi"], key="analyst_chart_ppi")
_table("ppi")

st.header("Probes")
if "probes" in charts:
    st.altair_chart(charts["probes"], key="analyst_chart_probes")
_table("probe_gaps")
if report.probes.comparison is not None:
    cmp = report.probes.comparison
    st.subheader(f"Before/after: {report.probes.comparison_run} → {report.run_id}")
    st.markdown(f"**{cmp.verdict}.** {cmp.explanation}")
_table("position")

st.header("Scoring formats")
if "formats" in charts:
    st.altair_chart(charts["formats"], key="analyst_chart_formats")
_table("formats")
for f in report.formats:
    with st.expander(f"What a pipeline should report: {f.format}"):
        for key, value in f.four_quantities().items():
            st.markdown(f"- **{key}**: {value}")

st.header("Panel of judges")
if len(runs) < 2:
    st.caption("One judge run so far: a panel needs two or more runs scored against the same labels.")
elif st.toggle(f"Read all {len(runs)} runs as a panel", key="analyst_panel"):
    try:
        panel_data, panel = panel_report(store, list(runs["run_id"]))
    except (JudgelabError, ValueError) as exc:
        st.error(str(exc))
    else:
        st.altair_chart(heatmap(panel), key="analyst_chart_panel")
        st.dataframe(judges_table(panel), hide_index=True, key="analyst_panel_judges")
        for note in panel_data.notes + panel.notes:
            st.caption(note)
        st.download_button("Download panel (markdown)", render_panel(panel, panel_data), file_name="panel.md",
                           mime="text/markdown", key="analyst_download_panel")

if report.skipped:
    st.header("Not computed")
    for reason in report.skipped:
        st.markdown(f"- {reason}")

left, right = st.columns(2)
left.download_button("Download report (markdown)", render_markdown(report), file_name="calibration_report.md",
                     mime="text/markdown", key="analyst_download_md")
right.download_button("Download report (JSON)", render_json(report), file_name="calibration_report.json",
                      mime="application/json", key="analyst_download_json")
