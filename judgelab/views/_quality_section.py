"""The rater-quality sections of the admin pages (Overview and Raters).

Not a page itself: ``admin_overview.py`` and ``admin_raters.py`` call these. The figures come from
:mod:`judgelab.admin._quality` (accuracy on gold with its Wilson interval, attention failures,
too-fast labels, warnings); this only lays them out, and wires the pause, resume, import and
settings controls to store methods.
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import streamlit as st

from judgelab.admin._quality import (
    QualityReport,
    gold_length_gap,
    import_quality_file,
    quality_table,
    rater_quality,
)
from judgelab.labeler.errors import JudgelabError
from judgelab.labeler.quality import QualitySettings
from judgelab.labeler.store import AdminRole, PeopleRole, QualityRole

#: What the last quality action did, shown once after the page reruns with the new state.
QUALITY_DONE = "admin_quality_done"

_COLUMNS = {
    "rater": st.column_config.TextColumn("Rater"),
    "state": st.column_config.TextColumn("State"),
    "gold": st.column_config.TextColumn("Gold accuracy (95% CI)"),
    "gold_n": st.column_config.NumberColumn("Gold n"),
    "attention": st.column_config.TextColumn("Attention failed"),
    "fast": st.column_config.TextColumn("Too fast"),
    "excluded": st.column_config.CheckboxColumn("Labels excluded"),
}


def _pct(v: float) -> str:
    return "—" if math.isnan(v) else f"{v:.0%}"


def _table(report: QualityReport) -> pd.DataFrame:
    raw = quality_table(report)
    return pd.DataFrame({
        "rater": raw["rater"], "state": raw["state"],
        "gold": [("—" if n == 0 else f"{_pct(e)} [{_pct(lo)}, {_pct(hi)}]")
                 for n, e, lo, hi in zip(raw["gold_n"], raw["gold_accuracy"], raw["ci_low"], raw["ci_high"],
                                         strict=True)],
        "gold_n": raw["gold_n"],
        "attention": [f"{f} of {n}" for f, n in zip(raw["attention_failed"], raw["attention"], strict=True)],
        "fast": [f"{f} of {n}" if n else "—" for f, n in zip(raw["too_fast"], raw["timed"], strict=True)],
        "excluded": raw["excluded"],
    })


def quality_warnings(report: QualityReport, *, where: str, store: QualityRole | None = None) -> None:
    """One warning per flagged rater; ``where`` says where the pause control is.

    With ``store``, first a warning when gold answers can be told apart by their length.
    """
    gap = gold_length_gap(store) if store is not None and report.gold_items else None
    if gap is not None and gap.telling:
        st.warning(gap.warning())
    for r in report.flagged:
        st.warning(f"**{r.rater}** ({r.state}): " + "; ".join(r.warnings)
                   + ("." if r.state in ("paused", "revoked") else f". Pause them {where} if needed."))


def _method(report: QualityReport) -> str:
    s = report.settings
    return (f"{report.gold_items} gold item(s), {report.attention_items} attention check(s) mixed in at "
            f"{s.rate:g} per live item, {s.qualify_n} qualification item(s), {s.mode} mode. Accuracy: share of "
            f"gold labels in the correct range, 95% Wilson interval (scipy.stats.binomtest), warned below "
            f"{s.min_accuracy:.0%} from {s.min_gold} gold labels. Too fast: under {s.min_seconds:g} s or the "
            f"answer's words at {s.words_per_second:g} words/s.")


def overview_quality(store: QualityRole) -> None:
    """Overview's section: warnings and the per-rater quality table (nothing when no quality item exists)."""
    report = rater_quality(store)
    if report.gold_items + report.attention_items == 0 and not report.flagged:
        return
    st.subheader("Rater quality")
    quality_warnings(report, where="on the Raters page", store=store)
    st.dataframe(_table(report), hide_index=True, width="stretch", column_config=_COLUMNS)
    st.caption(_method(report))


def raters_quality(store: AdminRole) -> None:
    """Raters' section: the quality table, pause and resume, gold import and the settings."""
    done = st.session_state.pop(QUALITY_DONE, None)
    if done:
        st.success(done)
    report = rater_quality(store)
    st.subheader("Rater quality")
    quality_warnings(report, where="below", store=store)
    if report.raters:
        st.dataframe(_table(report), hide_index=True, width="stretch", column_config=_COLUMNS)
    st.caption(_method(report))
    _pause_controls(store, report)
    _gold_controls(store, report.settings)


def _act(message: str) -> None:
    st.session_state[QUALITY_DONE] = message
    st.rerun()


def _pause_controls(store: PeopleRole, report: QualityReport) -> None:
    running = [r.name for r in report.raters if r.state != "paused"]
    paused = [r.name for r in report.raters if r.state == "paused"]
    left, right = st.columns(2)
    with left:
        st.markdown("**Pause a rater's live queue**")
        who = st.selectbox("Rater to pause", running, index=None, key="quality_pause_name")
        reason = st.text_input("Reason (for admins)", key="quality_pause_reason")
        exclude = st.checkbox("Leave their labels out of calibration while paused", key="quality_pause_exclude")
        if st.button("Pause", key="quality_pause_button", disabled=who is None):
            try:
                store.pause_rater(str(who), reason=reason, exclude_labels=exclude)
            except JudgelabError as exc:
                st.error(str(exc))
            else:
                _act(f"Paused {who}: their page says so and shows no live items; nothing is deleted.")
    with right:
        st.markdown("**Resume**")
        back = st.selectbox("Rater to resume", paused, index=None, key="quality_resume_name")
        if st.button("Resume", key="quality_resume_button", disabled=back is None):
            store.resume_rater(str(back))
            _act(f"Resumed {back}.")


def _gold_controls(store: QualityRole, settings: QualitySettings) -> None:
    left, right = st.columns(2)
    with left:
        st.markdown("**Import gold items and attention checks**")
        st.caption("Columns: id, prompt, text, score (or low and high), kind (gold or attention), explanation.")
        upload = st.file_uploader("Gold file", type=["csv", "jsonl", "json", "parquet"], key="quality_upload")
        if st.button("Import", key="quality_import", disabled=upload is None):
            assert upload is not None
            try:
                summary = import_quality_file(store, upload.name, data=upload.getvalue())
            except JudgelabError as exc:
                st.error(str(exc))
            else:
                _act(f"{upload.name}: {summary}.")
    with right, st.form("quality_settings"):
        st.markdown("**How they are mixed in**")
        rate = st.number_input("Per live item", 0.0, 1.0, settings.rate, 0.05, key="quality_rate")
        qualify = st.number_input("Qualification items", 0, 100, settings.qualify_n, key="quality_qualify")
        qualify_min = st.number_input("Share right to qualify", 0.0, 1.0, settings.qualify_min, 0.1,
                                      key="quality_qualify_min")
        mode = st.radio("After submit", ["silent", "training"], index=["silent", "training"].index(settings.mode),
                        horizontal=True, key="quality_mode")
        min_acc = st.number_input("Warn below accuracy", 0.0, 1.0, settings.min_accuracy, 0.05,
                                  key="quality_min_accuracy")
        if st.form_submit_button("Save and mix in", key="quality_save"):
            try:
                new = dataclasses.replace(settings, rate=float(rate), qualify_n=int(qualify),
                                          qualify_min=float(qualify_min), mode=str(mode),  # type: ignore[arg-type]
                                          min_accuracy=float(min_acc))
                added = store.set_quality_settings(new)
            except JudgelabError as exc:
                st.error(str(exc))
            else:
                _act(f"Saved; {sum(added.values())} quality item(s) added to {len(added)} queue(s).")
