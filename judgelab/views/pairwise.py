"""Compare: two answers side by side and a five-level preference, from the keyboard.

Which answer is A (left) was fixed when the pair was assigned: half of the raters see
each pair one way round, half the other (:func:`judgelab.labeler.queue.counterbalance`), and the
label stores the order this rater saw. The form is the shared browser-side rating form
(:mod:`judgelab.views._form`), drawn in a fragment. At 1366x768 everything is on one screen:
the two answers in scrolling boxes side by side, the task and the question beside them
(:func:`~judgelab.views._queue_page.two_texts_and_form`).
"""

from __future__ import annotations

import streamlit as st

from judgelab.labeler.errors import InputError
from judgelab.labeler.store import PairView
from judgelab.session import current_rater, rater_store
from judgelab.views._form import Action, FormData, Option
from judgelab.views._queue_page import QueuePage, keys_help, load_screen, read_only_notice, two_texts_and_form

AT = "pair_at"
FLASH = "pair_flash"
QUESTION = "Which answer is better?"

#: (label, shortcut, preference from the left answer's point of view).
LEVELS = (
    ("A much better", "1", 2),
    ("A better", "2", 1),
    ("About the same", "3", 0),
    ("B better", "4", -1),
    ("B much better", "5", -2),
)

current_rater()
st.title("Compare")


@st.fragment
def compare_area() -> None:
    """The progress, the pair and the form; a submit reruns only this."""
    rater = current_rater()
    store = rater_store()
    if read_only_notice(store, FLASH):
        return
    screen = load_screen(store, rater, "pair", st.session_state.get(AT))
    if screen is None:
        return
    queue = screen.queue
    if not queue:
        st.info("No pairs are assigned to you.")
        return
    page = QueuePage(store, rater.rater_id, "pair", queue, AT, FLASH)
    index = page.header(screen.index, f"All {len(queue)} pairs are compared. Thank you!",
                        where=f"Pair {{position}} of {len(queue)}")
    item = queue[index]
    assert isinstance(screen.view, PairView)
    view: PairView = screen.view
    form_column = two_texts_and_form(view.prompt, ("A", view.left_text), ("B", view.right_text))

    def write(action: Action) -> int:
        if action.choice is None:
            raise InputError("no preference is chosen", fix="choose a preference first (keys 1–5).")
        return store.add_pair_label(rater.rater_id, item.assignment_id, int(action.choice),
                                    comment=action.comment, seconds=action.seconds, seen=item.done_id)

    data = FormData(
        item=f"{item.item_id}:{item.item_b_id}:{view.current_id or 'new'}",
        title="Comparison",
        choice_label=QUESTION,
        options=[Option(value=pref, label=label, key=key) for label, key, pref in LEVELS],
        choice=view.current_preference,
        missing="Choose a preference first (keys 1–5).",
        comment_label="Comment (optional)",
        comment=view.current_comment,
        keys_help=keys_help("1–5 preference (1 = A much better … 5 = B much better) · C comment",
                            editing=view.current_id is not None),
        editing=view.current_id is not None,
        can_back=index > 0,
    )
    with form_column:
        page.form(index, data, write, saved="Preference saved", changed="Preference changed")


compare_area()
