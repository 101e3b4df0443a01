"""Admin page: what raters flagged and commented, where they disagree, and adjudication.

Thin page over :mod:`judgelab.admin._review`: the lists, one answer's labels side by side and
the adjudicated label, which is stored as its own label source and never replaces a rater's.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from judgelab.admin import KEPT, AnswerSheet, ReviewBoard, adjudicate, answer_sheet, review_board
from judgelab.labeler.errors import JudgelabError
from judgelab.labeler.models import Rubric
from judgelab.labeler.queue import format_score, scale_choices
from judgelab.labeler.store import MAX_COMMENT_CHARS, ReviewRole
from judgelab.session import current_store, db_path, require_admin

admin = require_admin()
store: ReviewRole = current_store()
FLASH = "review_flash"
#: Answers whose family and model this admin revealed in this session.
REVEALED = "review_revealed"

st.title("Review")


def _board(
    path: str, rubric: Rubric, include: bool, rater: str | None, criterion: str | None, watermark: tuple[int, int]
) -> ReviewBoard:
    # Labels are append-only, so (path, options, watermark) pins the input; any new label or
    # adjudication moves the watermark and the lists are recomputed. Kept in judgelab.admin.KEPT,
    # which Streamlit's clear-cache message (anyone may send it) does not empty.
    key = ("review", path, rubric.rubric_id, rubric.version, include, rater, criterion, watermark)
    return KEPT.get(key, lambda: review_board(store, rubric, rater=rater, criterion=criterion,
                                              include_unversioned=include))


rubrics = store.rubrics()
if rubrics.empty:
    st.info("No rubric yet: import one on the Data page.")
    st.stop()

choices = [f"{r} v{v}" for r, v in zip(rubrics["rubric_id"], rubrics["version"], strict=True)]
left, mid, right = st.columns(3)
picked = left.selectbox("Rubric", range(len(choices)), format_func=choices.__getitem__, key="review_rubric")
row = rubrics.iloc[int(picked or 0)]
rubric = store.rubric(str(row["rubric_id"]), int(row["version"]))
assert rubric is not None
include = st.checkbox("Count imported labels (which carry no rubric version) under this rubric", value=True,
                      key="review_unversioned")
watermark = store.label_watermark()
try:
    everyone = _board(db_path(), rubric, include, None, None, watermark)
    rater = mid.selectbox("Rater", [None, *everyone.raters], key="review_rater",
                          format_func=lambda n: "every rater" if n is None else everyone.raters[n])
    criterion = right.selectbox("Spread of", [None, *everyone.criteria], key="review_criterion",
                                format_func=lambda c: "overall score" if c is None else everyone.criteria[c])
    board = _board(db_path(), rubric, include, rater, criterion, watermark)
except JudgelabError as exc:
    st.error(str(exc))
    st.stop()

numbers = {"adjudicated": st.column_config.NumberColumn(format="%g"),
           "sd": st.column_config.NumberColumn(format="%.2f")}


def blind_table(frame: pd.DataFrame) -> pd.DataFrame:
    """A list as the page shows it: items by their opaque id, no raw ``None``.

    Answer ids often carry the family (``claude-t01``), so the lists name each answer by the item
    id raters see; a missing comment or flag shows empty, not as ``None``.
    """
    out = frame.assign(answer_id=frame["answer_id"].map(lambda a: board.items.get(str(a), str(a))))
    return blank_missing(out.rename(columns={"answer_id": "item"}))


def blank_missing(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with missing text shown empty (st.dataframe prints a raw ``None`` otherwise)."""
    kinds = pd.api.types
    text = [c for c in frame.columns if kinds.is_object_dtype(frame[c]) or kinds.is_string_dtype(frame[c])]
    return frame.assign(**{str(c): frame[c].astype(object).where(frame[c].notna(), "") for c in text})


disagree, flagged, commented = st.tabs([
    f"Disagreements ({len(board.disagreements)})", f"Flagged ({len(board.flagged)})",
    f"Comments ({len(board.comments)})",
])
with disagree:
    st.caption(f"Answers scored by two or more raters, largest spread of the {board.score_name} first "
               "(spread = highest minus lowest score).")
    st.dataframe(blind_table(board.disagreements), hide_index=True, column_config=numbers)
with flagged:
    st.caption("Labels the rater flagged as unrateable, with the reason.")
    st.dataframe(blind_table(board.flagged), hide_index=True, column_config=numbers)
with commented:
    st.caption("Other labels with a comment.")
    st.dataframe(blind_table(board.comments), hide_index=True, column_config=numbers)

st.header("Read and adjudicate")
if not board.answers:
    st.caption("Nothing to review with these filters.")
    st.stop()
answer_id = st.selectbox("Answer (item id)", board.answers, key="review_answer",
                         format_func=lambda a: board.items.get(str(a), str(a)))
sheet: AnswerSheet = answer_sheet(store, str(answer_id), rubric, include_unversioned=include)
prefix = f"review:{answer_id}:{sheet.adjudication.label_id if sheet.adjudication else 'new'}:"


def score_input(label: str, key: str, rubric: Rubric, value: float | None) -> None:
    """One score widget on the rubric's scale (empty until picked)."""
    if rubric.scale == "numeric100":
        st.number_input(label, min_value=0.0, max_value=100.0, step=1.0, value=value, key=key)
    else:
        options = scale_choices(rubric.scale)
        st.selectbox(label, options, index=None if value is None else options.index(value), key=key,
                     format_func=format_score, placeholder="not scored")


def store_adjudication(rubric: Rubric, answer_id: str, prefix: str) -> None:
    """Store the form's adjudicated label (callback: runs before the page re-renders)."""
    state = st.session_state
    # Revealed at any time in this session counts, even if the toggle was switched off again.
    revealed = answer_id in state.get(REVEALED, set())
    try:
        label_id = adjudicate(
            store, admin, answer_id, rubric, overall=state.get(prefix + "overall"),
            criteria={c.criterion_id: state.get(prefix + c.criterion_id) for c in rubric.criteria},
            comment=str(state.get(prefix + "comment") or ""), revealed=revealed,
        )
    except JudgelabError as exc:
        state[FLASH] = ("error", str(exc))
        return
    how = "after revealing the family (recorded)" if revealed else "blind"
    state[FLASH] = ("success", f"Adjudicated label #{label_id} stored for {answer_id}, {how}; raters' labels "
                               "unchanged.")


answer = sheet.answer
# Blind by default: the adjudicator's label settles the answer's human score (and so the
# self-preference gap), so it is given as the raters gave theirs, without the family, model or
# variant and with self-names masked. Revealing is per answer, and an adjudication stored after a
# reveal records it (labels.revealed).
reveal_key = f"review_reveal:{answer_id}"
revealed = st.toggle("Reveal family, model and unmasked text", key=reveal_key,
                     help="Off: you read the answer as the raters did. An adjudication stored after revealing "
                          "is recorded as not blind.")
if revealed:
    st.session_state.setdefault(REVEALED, set()).add(str(answer_id))
    st.caption(f"Answer {answer['answer_id']} · task {answer['task_id']} · family {answer['family']} · model "
               f"{answer['model']} · variant {answer['variant']}")
else:
    st.caption(f"Task {answer['task_id']} · read blind, as the raters saw it"
               + (f" ({answer['masked']} self-identifying passage(s) [redacted])" if answer["masked"] else ""))
text_left, text_right = st.columns(2)
with text_left:
    st.subheader("Task")
    st.text(str(answer["prompt"] or ""))
with text_right:
    st.subheader("Answer")
    st.text(str(answer["text"] if revealed else answer["blind_text"]))

st.subheader("Labels side by side")
if sheet.labels.empty and sheet.adjudication is None:
    st.caption("No label under this rubric yet.")
else:
    st.dataframe(sheet.side_by_side())
with st.expander(f"Every label row of this answer, edits included ({len(sheet.history)})"):
    st.dataframe(blank_missing(sheet.history), hide_index=True)

st.subheader("Adjudicated label")
current = sheet.adjudication
st.caption(
    (f"Current: {format_score(current.overall)} by {current.admin}"
     + {True: ", given after revealing the family", False: ", given blind", None: ""}[current.revealed]
     + ". Storing another replaces it (the old one stays in the history). " if current else "")
    + "Kept as its own label (source `adjudicated`), beside the raters' labels, never in place of them; "
    "`judgelab calibrate --human-rule adjudicated` uses it as the answer's human score."
)
with st.form(key=prefix + "form", border=True):
    score_input("Overall", prefix + "overall", rubric, current.overall if current else None)
    for c in rubric.criteria:
        given = current.criteria.get(c.criterion_id) if current else None
        score_input(f"{c.name} (optional)", prefix + c.criterion_id, rubric,
                    None if given is None or math.isnan(given) else given)
    st.text_area("Why (shown beside the raters' labels)", value=current.comment if current else "",
                 key=prefix + "comment", height=80, max_chars=MAX_COMMENT_CHARS)
    st.form_submit_button("Store adjudicated label", type="primary", key="review_submit",
                          on_click=store_adjudication, args=(rubric, str(answer_id), prefix))
flash = st.session_state.pop(FLASH, None)
if flash:
    (st.error if flash[0] == "error" else st.success)(flash[1])
