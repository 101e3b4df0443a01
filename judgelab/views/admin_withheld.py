"""Admin page: answers withheld from raters because they say who wrote them (issue 54).

A rater's W key ("this answer says who wrote it") or the judge's screen (``judgelab screen``)
withholds an answer: no rater is dealt it and pending assignments of it wait. Here the admin reads
who flagged it and why, then masks it (edits the text raters see; the rules still blind it) or
clears it (nothing unblinds): either gives it back to the queues. Thin page over
:mod:`judgelab.labeler.store._withheld`.
"""

from __future__ import annotations

import streamlit as st

from judgelab.labeler.errors import JudgelabError
from judgelab.labeler.store import AdminRole
from judgelab.session import current_store, require_admin

admin = require_admin()
store: AdminRole = current_store()
FLASH = "withheld_flash"

st.title("Withheld")
st.caption("Answers a rater (key W) or the judge's screen found to say which model or company wrote them. "
           "Nobody is dealt them and raters' pending items of them wait until you mask or clear them. "
           "Labels given before are set apart by `judgelab calibrate` (reported, not counted).")
if FLASH in st.session_state:
    st.success(st.session_state.pop(FLASH))

flags = store.withheld_answers()
if flags.empty:
    st.info("No answer is withheld.")
    st.stop()

st.dataframe(
    flags[["answer_id", "action", "by_name", "reason", "flagged_at"]].rename(columns={
        "answer_id": "Answer", "action": "Flagged by", "by_name": "Who", "reason": "Why", "flagged_at": "When"}),
    hide_index=True, width="stretch",
)


def _decide(answer_id: str, how: str) -> None:
    # The text box's value as the click sent it (a button's args are from the run before the edit).
    text = str(st.session_state.get(f"withheld_text:{answer_id}", ""))
    try:
        if how == "mask":
            store.mask_answer(answer_id, text, admin=admin.name)
            st.session_state[FLASH] = f"{answer_id} masked: raters see your text from now on."
        else:
            store.clear_answer(answer_id, admin=admin.name)
            st.session_state[FLASH] = f"{answer_id} cleared: it is back in the queues as it was."
    except JudgelabError as exc:
        st.session_state[FLASH] = f"Not done: {exc}"


for answer_id, rows in flags.groupby("answer_id", sort=False):
    first = rows.iloc[0]
    with st.expander(f"{answer_id} · task {first['task_id']} · {first['family']} / {first['model']}", expanded=True):
        for _, r in rows.iterrows():
            st.markdown(f"- **{r['by_name']}** ({r['action']}): {r['reason'] or '(no note)'}")
        st.text_area("Text raters will see (edit what tells the author, then Mask)", value=str(first["text"]),
                            key=f"withheld_text:{answer_id}", height=200)
        mask_col, clear_col = st.columns(2)
        mask_col.button("Mask", key=f"withheld_mask:{answer_id}", on_click=_decide, args=(answer_id, "mask"),
                        type="primary")
        clear_col.button("Clear (nothing unblinds)", key=f"withheld_clear:{answer_id}", on_click=_decide,
                         args=(answer_id, "clear"))
