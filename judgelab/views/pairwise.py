"""Compare: two answers side by side and a five-level preference, from the keyboard.

Which answer is A (left) was fixed when the pair was assigned: half of the raters see
each pair one way round, half the other (:func:`labeler.queue.counterbalance`), and the
label stores the order this rater saw.
"""

from __future__ import annotations

import streamlit as st

from judgelab.session import current_rater, current_store
from judgelab.views._queue_page import QueuePage, side_by_side, text_box
from labeler.store import PairView

AT = "pair_at"
FLASH = "pair_flash"

#: (label, shortcut, preference from the left answer's point of view).
LEVELS = (
    ("A much better", "1", 2),
    ("A better", "2", 1),
    ("About the same", "3", 0),
    ("B better", "4", -1),
    ("B much better", "5", -2),
)

rater = current_rater()
store = current_store()

st.title("Compare")

screen = store.screen(rater.rater_id, "pair", st.session_state.get(AT))
queue, index = screen.queue, screen.index
if not queue:
    st.info("No pairs are assigned to you.")
    st.stop()

page = QueuePage(store, rater.rater_id, "pair", queue, AT, FLASH)
index = page.header(index, f"All {len(queue)} pairs are compared. Thank you!")

item = queue[index]
assert isinstance(screen.view, PairView)
view: PairView = screen.view
prefix = f"pair:{item.item_id}:{item.item_b_id}:{view.current_id or 'new'}:"
K_PREF, K_COMMENT = prefix + "pref", prefix + "comment"
if K_PREF not in st.session_state:
    st.session_state[K_PREF] = view.current_preference
    st.session_state[K_COMMENT] = view.current_comment


def pick(preference: int) -> None:
    """Remember the rater's preference."""
    st.session_state[K_PREF] = preference


def submit() -> None:
    """Store the comparison, or say what is missing."""
    if st.session_state[K_PREF] is None:
        page.fail("Choose a preference first (keys 1–5).")
        return
    page.save(
        lambda: store.add_pair_label(
            rater.rater_id, item.assignment_id, int(st.session_state[K_PREF]),
            comment=st.session_state[K_COMMENT],
        ),
        "Preference changed" if view.current_id else "Preference saved",
    )


st.caption(f"Pair {item.position} of {len(queue)}")
text_box(view.prompt)
side_by_side(("A", view.left_text), ("B", view.right_text))

st.subheader("Which answer is better?")
cols = st.columns(len(LEVELS))
for col, (label, key, preference) in zip(cols, LEVELS, strict=True):
    col.button(
        label, key=f"{prefix}pick:{key}", shortcut=key, on_click=pick,
        args=(preference,), width="stretch",
        type="primary" if st.session_state[K_PREF] == preference else "secondary",
    )
st.text_area("Comment (optional)", key=K_COMMENT, height=70)
page.buttons(index, editing=bool(view.current_id), submit=submit)
st.caption(
    "Keys: **1–5** preference (1 = A much better … 5 = B much better) · **Ctrl+Enter** submit · "
    "**S** skip · **B** back · **F** forward after going back."
)
