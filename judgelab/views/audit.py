"""Padding audit: does a padded rewrite add anything a reader could act on?

The padding probe reads a judge's score gap between an answer and its padded rewrite
as verbosity bias, which is valid only if the rewrite adds nothing. This page asks a
person to confirm that, one original/rewrite pair at a time.
"""

from __future__ import annotations

import math

import streamlit as st

from judgelab.session import current_rater, current_store
from judgelab.views._queue_page import QueuePage, side_by_side, text_box
from labeler.store import AuditView

AT = "audit_at"
FLASH = "audit_flash"
QUESTION = (
    "Does the rewrite add any fact, caveat, recommendation, example or anything a reader "
    "could act on?"
)

rater = current_rater()
store = current_store()

st.title("Padding audit")

screen = store.screen(rater.rater_id, "audit", st.session_state.get(AT))
queue, index = screen.queue, screen.index
if not queue:
    st.info("No padding audits are assigned to you.")
    st.stop()

page = QueuePage(store, rater.rater_id, "audit", queue, AT, FLASH)
index = page.header(index, f"All {len(queue)} audits are done. Thank you!")

item = queue[index]
assert isinstance(screen.view, AuditView)
view: AuditView = screen.view
prefix = f"audit:{item.item_id}:{item.item_b_id}:{view.current_id or 'new'}:"
K_ADDS, K_NOTE = prefix + "adds", prefix + "note"
if K_ADDS not in st.session_state:
    st.session_state[K_ADDS] = view.current_adds_content
    st.session_state[K_NOTE] = view.current_note


def pick(adds: bool) -> None:
    """Remember the rater's yes/no answer."""
    st.session_state[K_ADDS] = adds


def submit() -> None:
    """Store the audit, or say what is missing."""
    if st.session_state[K_ADDS] is None:
        page.fail("Answer yes or no first (keys Y / N).")
        return
    page.save(
        lambda: store.add_audit(
            rater.rater_id, item.assignment_id, bool(st.session_state[K_ADDS]),
            note=st.session_state[K_NOTE],
        ),
        "Audit changed" if view.current_id else "Audit saved",
    )


st.caption(f"Audit {item.position} of {len(queue)}")
text_box(view.prompt)
ratio = "—" if math.isinf(view.length_ratio) else f"{view.length_ratio:.2f}×"
st.metric("Length of the rewrite (words, against the original)", ratio)
side_by_side(("Original", view.original_text), ("Rewrite", view.rewrite_text))

st.subheader(QUESTION)
yes_col, no_col = st.columns(2)
yes_col.button(
    "Yes, it adds something", key=prefix + "yes", shortcut="Y", on_click=pick, args=(True,),
    type="primary" if st.session_state[K_ADDS] is True else "secondary", width="stretch",
)
no_col.button(
    "No, nothing new", key=prefix + "no", shortcut="N", on_click=pick, args=(False,),
    type="primary" if st.session_state[K_ADDS] is False else "secondary", width="stretch",
)
st.text_area("Note: what does it add? (optional)", key=K_NOTE, height=70)
page.buttons(index, editing=bool(view.current_id), submit=submit)
st.caption(
    "Keys: **Y** / **N** answer · **Ctrl+Enter** submit · **S** skip · **B** back · "
    "**F** forward after going back."
)
