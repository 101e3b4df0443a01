"""Padding audit: does a padded rewrite add anything a reader could act on?

The padding probe reads a judge's score gap between an answer and its padded rewrite
as verbosity bias, which is valid only if the rewrite adds nothing. This page asks a
person to confirm that, one original/rewrite pair at a time, with the shared
browser-side rating form (:mod:`judgelab.views._form`) drawn in a fragment; the question
is the form's heading, beside the two texts, on one screen at 1366x768.
"""

from __future__ import annotations

import math

import streamlit as st

from judgelab.labeler.errors import InputError
from judgelab.labeler.store import AuditView
from judgelab.session import current_rater, rater_store
from judgelab.views._form import Action, FormData, Option
from judgelab.views._queue_page import QueuePage, keys_help, load_screen, read_only_notice, two_texts_and_form

AT = "audit_at"
FLASH = "audit_flash"
QUESTION = (
    "Does the rewrite add any fact, caveat, recommendation, example or anything a reader "
    "could act on?"
)

current_rater()
st.title("Padding audit")


@st.fragment
def audit_area() -> None:
    """The progress, the two texts and the form; a submit reruns only this."""
    rater = current_rater()
    store = rater_store()
    if read_only_notice(store, FLASH):
        return
    screen = load_screen(store, rater, "audit", st.session_state.get(AT))
    if screen is None:
        return
    queue = screen.queue
    if not queue:
        st.info("No padding audits are assigned to you.")
        return
    page = QueuePage(store, rater.rater_id, "audit", queue, AT, FLASH)
    index = page.header(screen.index, f"All {len(queue)} audits are done. Thank you!",
                        where=f"Audit {{position}} of {len(queue)}")
    item = queue[index]
    assert isinstance(screen.view, AuditView)
    view: AuditView = screen.view
    ratio = "—" if math.isinf(view.length_ratio) else f"{view.length_ratio:.2f}×"
    form_column = two_texts_and_form(view.prompt, ("Original", view.original_text),
                                     ("Rewrite", view.rewrite_text),
                                     note=f"The rewrite is {ratio} the original's length in words.")

    def write(action: Action) -> int:
        if action.choice is None:
            raise InputError("no answer is chosen", fix="answer yes or no first (keys Y / N).")
        return store.add_audit(rater.rater_id, item.assignment_id, bool(action.choice),
                               note=action.comment, seconds=action.seconds, seen=item.done_id)

    data = FormData(
        item=f"{item.item_id}:{item.item_b_id}:{view.current_id or 'new'}",
        title="Audit",
        choice_label=QUESTION,
        options=[Option(value=True, label="Yes, it adds something", key="y"),
                 Option(value=False, label="No, nothing new", key="n")],
        choice=view.current_adds_content,
        missing="Answer yes or no first (keys Y / N).",
        comment_label="Note: what does it add? (optional)",
        comment=view.current_note,
        keys_help=keys_help("Y / N answer · C note", editing=view.current_id is not None),
        editing=view.current_id is not None,
        can_back=index > 0,
    )
    with form_column:
        page.form(index, data, write, saved="Audit saved", changed="Audit changed")


audit_area()
