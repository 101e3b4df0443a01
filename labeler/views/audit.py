"""Padding audit: does a padded rewrite add anything a reader could act on?

The padding probe reads a judge's score gap between an answer and its padded rewrite
as verbosity bias, which is valid only if the rewrite adds nothing. This page asks a
person to confirm that, one original/rewrite pair at a time.
"""

from __future__ import annotations

import math

import streamlit as st

from labeler.errors import JudgelabError
from labeler.queue import KEYS, previous_index
from labeler.session import current_rater, current_store
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



def go_to(i: int | None) -> None:
    st.session_state[AT] = None if i is None else queue[i].assignment_id


if FLASH in st.session_state:
    st.toast(st.session_state.pop(FLASH), icon=":material/check:")

done = sum(1 for item in queue if item.done)
st.progress(done / len(queue), text=f"**{done} of {len(queue)}** done")

if index is None:
    st.success(f"All {len(queue)} audits are done. Thank you!")
    st.button("Back", shortcut=KEYS["back"], on_click=go_to, args=(previous_index(queue, None),))
    st.stop()

item = queue[index]
assert isinstance(screen.view, AuditView)
view: AuditView = screen.view
prefix = f"audit:{item.item_id}:{item.item_b_id}:{view.current_id or 'new'}:"
K_ADDS, K_NOTE = prefix + "adds", prefix + "note"
if K_ADDS not in st.session_state:
    st.session_state[K_ADDS] = view.current_adds_content
    st.session_state[K_NOTE] = view.current_note


def pick(adds: bool) -> None:
    st.session_state[K_ADDS] = adds


def submit() -> None:
    if st.session_state[K_ADDS] is None:
        st.session_state[FLASH + ":error"] = "Answer yes or no first (keys Y / N)."
        return
    try:
        store.add_audit(
            rater.rater_id, item.assignment_id, bool(st.session_state[K_ADDS]),
            note=st.session_state[K_NOTE],
        )
    except JudgelabError as exc:
        st.session_state[FLASH + ":error"] = str(exc)
        return
    st.session_state[FLASH] = "Audit changed" if view.current_id else "Audit saved"
    st.session_state[AT] = None


def skip() -> None:
    store.skip_item(rater.rater_id, item.assignment_id, "audit")
    st.session_state[AT] = None


st.caption(f"Audit {item.position} of {len(queue)}")
with st.container(border=True):
    st.markdown(view.prompt, unsafe_allow_html=False)
ratio = "—" if math.isinf(view.length_ratio) else f"{view.length_ratio:.2f}×"
st.metric("Length of the rewrite (words, against the original)", ratio)
col_o, col_r = st.columns(2, gap="large")
with col_o:
    st.subheader("Original")
    with st.container(border=True):
        st.markdown(view.original_text, unsafe_allow_html=False)
with col_r:
    st.subheader("Rewrite")
    with st.container(border=True):
        st.markdown(view.rewrite_text, unsafe_allow_html=False)

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
    "Keys: **Y** / **N** answer · **Ctrl+Enter** submit · **S** skip · **B** back · "
    "**F** forward after going back."
)
