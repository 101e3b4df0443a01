"""Compare: two answers side by side and a five-level preference, from the keyboard.

Which answer is A (left) was fixed when the pair was assigned: half of the raters see
each pair one way round, half the other (:func:`labeler.queue.counterbalance`), and the
label stores the order this rater saw.
"""

from __future__ import annotations

import streamlit as st

from labeler.errors import JudgelabError
from labeler.queue import KEYS, previous_index
from labeler.session import current_rater, current_store
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



def go_to(i: int | None) -> None:
    st.session_state[AT] = None if i is None else queue[i].assignment_id


if FLASH in st.session_state:
    st.toast(st.session_state.pop(FLASH), icon=":material/check:")

done = sum(1 for item in queue if item.done)
st.progress(done / len(queue), text=f"**{done} of {len(queue)}** done")

if index is None:
    st.success(f"All {len(queue)} pairs are compared. Thank you!")
    st.button("Back", shortcut=KEYS["back"], on_click=go_to, args=(previous_index(queue, None),))
    st.stop()

item = queue[index]
assert isinstance(screen.view, PairView)
view: PairView = screen.view
prefix = f"pair:{item.item_id}:{item.item_b_id}:{view.current_id or 'new'}:"
K_PREF, K_COMMENT = prefix + "pref", prefix + "comment"
if K_PREF not in st.session_state:
    st.session_state[K_PREF] = view.current_preference
    st.session_state[K_COMMENT] = view.current_comment


def pick(preference: int) -> None:
    st.session_state[K_PREF] = preference


def submit() -> None:
    if st.session_state[K_PREF] is None:
        st.session_state[FLASH + ":error"] = "Choose a preference first (keys 1–5)."
        return
    try:
        store.add_pair_label(
            rater.rater_id, item.assignment_id, int(st.session_state[K_PREF]),
            comment=st.session_state[K_COMMENT],
        )
    except JudgelabError as exc:
        st.session_state[FLASH + ":error"] = str(exc)
        return
    st.session_state[FLASH] = "Preference changed" if view.current_id else "Preference saved"
    st.session_state[AT] = None


def skip() -> None:
    store.skip_item(rater.rater_id, item.assignment_id, "pair")
    st.session_state[AT] = None


st.caption(f"Pair {item.position} of {len(queue)}")
with st.container(border=True):
    st.markdown(view.prompt, unsafe_allow_html=False)
col_a, col_b = st.columns(2, gap="large")
with col_a:
    st.subheader("A")
    with st.container(border=True):
        st.markdown(view.left_text, unsafe_allow_html=False)
with col_b:
    st.subheader("B")
    with st.container(border=True):
        st.markdown(view.right_text, unsafe_allow_html=False)

st.subheader("Which answer is better?")
cols = st.columns(len(LEVELS))
for col, (label, key, preference) in zip(cols, LEVELS, strict=True):
    col.button(
        label, key=f"{prefix}pick:{key}", shortcut=key, on_click=pick,
        args=(preference,), width="stretch",
        type="primary" if st.session_state[K_PREF] == preference else "secondary",
    )
st.text_area("Comment (optional)", key=K_COMMENT, height=70)
if FLASH + ":error" in st.session_state:
    st.error(st.session_state.pop(FLASH + ":error"))

back_col, skip_col, submit_col = st.columns([1, 1, 2])
back_to = previous_index(queue, index)
back_col.button(
    "Back", shortcut=KEYS["back"], on_click=go_to, args=(back_to,), disabled=back_to is None,
    width="stretch",
)
if view.current_id:
    skip_col.button(
        "Forward", shortcut=KEYS["forward"], on_click=go_to,
        args=(index + 1 if index + 1 < len(queue) else None,), width="stretch",
    )
else:
    skip_col.button("Skip", shortcut=KEYS["skip"], on_click=skip, width="stretch")
submit_col.button("Submit", type="primary", shortcut=KEYS["submit"], on_click=submit,
                  width="stretch")
st.caption(
    "Keys: **1–5** preference (1 = A much better … 5 = B much better) · **Ctrl+Enter** submit · "
    "**S** skip · **B** back · **F** forward after going back."
)
