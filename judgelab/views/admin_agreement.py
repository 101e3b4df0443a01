"""Admin page: how far raters agree (alpha, kappa) and who scores differently (leniency)."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from judgelab.admin import AgreementReport, agreement_kept
from judgelab.calibration.numbers import ci, num
from judgelab.labeler.errors import JudgelabError
from judgelab.labeler.store import ReviewRole
from judgelab.session import current_store, require_admin

require_admin()
store: ReviewRole = current_store()

st.title("Agreement")


def _report(rubric_id: str, version: int, include_unversioned: bool) -> AgreementReport:
    # Kept per input (the label watermark pins it) where a visitor's clear-cache cannot drop it,
    # and built in the worker process, so raters' submits in this server do not wait
    # (judgelab.admin._kept).
    with st.spinner("Bootstrapping intervals…"):
        return agreement_kept(store, rubric_id, version, include_unversioned=include_unversioned)


def _without_empty_reasons(frame: pd.DataFrame) -> pd.DataFrame:
    # "reason" explains a nan figure; a column of Nones only adds noise.
    if "reason" in frame.columns and frame["reason"].isna().all():
        return frame.drop(columns=["reason"])
    return frame


rubrics = store.rubrics()
if rubrics.empty:
    st.info("No rubric yet: import one on the Data page.")
    st.stop()

choices = [f"{r} v{v}" for r, v in zip(rubrics["rubric_id"], rubrics["version"], strict=True)]
picked = st.selectbox("Rubric", range(len(choices)), format_func=choices.__getitem__,
                      key="agreement_rubric")
include = st.checkbox(
    "Count imported labels (which carry no rubric version) under this rubric",
    value=True, key="agreement_unversioned",
)
row = rubrics.iloc[int(picked or 0)]
try:
    report = _report(str(row["rubric_id"]), int(row["version"]), include)
except JudgelabError as exc:
    st.error(str(exc))
    st.stop()

st.caption(
    f"{report.n_labels} current labels on {report.n_answers} answers by {report.n_raters} raters"
    + (f"; {report.n_flagged} flagged unrateable and left out" if report.n_flagged else "")
    + f". Scale {report.rubric.scale}, so alpha uses the {report.level} level. Intervals are "
    "95% percentile bootstraps that resample tasks."
)

alpha = report.overall
left, mid, right = st.columns(3)
left.metric("Krippendorff's alpha, overall score", num(alpha.estimate))
left.caption(
    f"{ci(alpha, signed=False)}; {alpha.n} answers rated by 2+ raters"
    if not math.isnan(alpha.estimate) else str(alpha.extra.get("reason") or "")
)
mid.metric("Rater pairs", f"{len(report.kappas)}")
mid.caption(report.kappa_basis)
right.metric("Raters who stand out", f"{len(report.standouts)}")
right.caption(f"leniency in {report.units}")

st.subheader("Alpha per criterion")
st.dataframe(_without_empty_reasons(report.per_criterion), hide_index=True,
             column_config={c: st.column_config.NumberColumn(format="%.3f")
                            for c in ("alpha", "ci_low", "ci_high")})

st.subheader("Cohen's kappa per rater pair")
if report.kappas.empty:
    st.caption("Needs two raters with labels.")
else:
    st.caption(report.kappa_basis)
    kappas = _without_empty_reasons(report.kappas)
    # A share of items, shown as a percentage (20%, not 0.200).
    kappas = kappas.assign(percent_agreement=100 * kappas["percent_agreement"])
    st.dataframe(kappas, hide_index=True,
                 column_config={**{c: st.column_config.NumberColumn(format="%.3f")
                                   for c in ("kappa", "ci_low", "ci_high")},
                                "percent_agreement": st.column_config.NumberColumn(
                                    "agreement", format="%.0f%%")})

st.subheader("Leniency")
st.caption(
    "Each rater's overall score minus the mean of the other raters on the same answers "
    f"({report.units}; positive = more generous). A rater stands out when the interval "
    "excludes 0 and the size is at least the threshold."
)
for sentence in report.standouts:
    st.warning(sentence)
if not report.leniency.empty:
    st.dataframe(pd.DataFrame(report.leniency), hide_index=True,
                 column_config={c: st.column_config.NumberColumn(format="%.3f")
                                for c in ("leniency", "ci_low", "ci_high", "mean_kappa")})
