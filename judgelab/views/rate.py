"""Rate: one answer at a time against the rubric, blind, from the keyboard.

Thin page: the queue, views and writes are :class:`~labeler.store.Store` methods and
the form rules are :mod:`labeler.queue` functions; the header and the Back / Skip /
Submit row are shared with the other queue pages (:mod:`judgelab.views._queue_page`).
Widget keys carry the item's opaque ``item_id`` (never an answer id) and the id of the
label being edited, so going back to an item starts from that label's values.
"""

from __future__ import annotations

import streamlit as st

from judgelab.session import current_rater, current_store
from judgelab.views._queue_page import QueuePage, text_box
from labeler.queue import choice_keys, criteria_after_overall, format_score, scale_choices
from labeler.store import ScoreView

AT = "rate_at"  # assignment the rater went back to (None: resume position)
FLASH = "rate_flash"

rater = current_rater()
store = current_store()

st.title("Rate")

screen = store.screen(rater.rater_id, "score", st.session_state.get(AT))
# Pull mode (project setting claim_k): when nothing is left, hand this rater one more
# answer that still needs raters, unless they went back to look at an earlier one.
claim_k = store.setting("project", "claim_k") if screen.index is None else None
if (
    claim_k
    and st.session_state.get(AT) is None
    and store.claim_next(rater.rater_id, int(claim_k)) is not None
):
    screen = store.screen(rater.rater_id, "score", None)
queue, index = screen.queue, screen.index
if not queue:
    others = {
        "Compare": store.progress(rater.rater_id, "pair"),
        "Padding audit": store.progress(rater.rater_id, "audit"),
    }
    waiting = [f"**{page}** ({p.total - p.done} to do)" for page, p in others.items()
               if p.total > p.done]
    st.info(
        "No answers to rate are assigned to you."
        + (f" You have work on {' and '.join(waiting)}: pick it in the menu." if waiting else
           " Your admin will let you know when there is.")
    )
    st.stop()

page = QueuePage(store, rater.rater_id, "score", queue, AT, FLASH)
index = page.header(
    index, f"All {len(queue)} answers are rated. Thank you!",
    back_help="Go to your last answer to change its label.",
)

item = queue[index]
assert isinstance(screen.view, ScoreView)
view: ScoreView = screen.view
rubric = view.rubric
prefix = f"rate:{item.item_id}:{view.current.label_id if view.current else 'new'}:"
K_OVERALL, K_TOUCHED, K_COMMENT, K_FLAG, K_REASON = (
    prefix + "overall", prefix + "touched", prefix + "comment", prefix + "flag", prefix + "reason"
)


def crit_key(criterion_id: str) -> str:
    """The session-state key of one criterion's score."""
    return f"{prefix}crit:{criterion_id}"


# Start the form from the current label when the rater came back to edit it.
if K_OVERALL not in st.session_state:
    cur = view.current
    st.session_state[K_OVERALL] = cur.overall if cur else None
    st.session_state[K_TOUCHED] = set(cur.criteria) if cur else set()
    st.session_state[K_COMMENT] = cur.comment if cur else ""
    st.session_state[K_FLAG] = bool(cur and cur.flag_reason)
    st.session_state[K_REASON] = (cur.flag_reason or "") if cur else ""
    for c in rubric.criteria:
        st.session_state[crit_key(c.criterion_id)] = cur.criteria.get(c.criterion_id) if cur else None


def pick_overall(value: float) -> None:
    """Set the overall score; untouched criteria follow it."""
    st.session_state[K_OVERALL] = value
    current = {c.criterion_id: st.session_state.get(crit_key(c.criterion_id)) for c in rubric.criteria}
    for cid, score in criteria_after_overall(value, current, st.session_state[K_TOUCHED]).items():
        st.session_state[crit_key(cid)] = score


def touch(criterion_id: str) -> None:
    """Mark a criterion as set by hand, so the overall score no longer moves it."""
    st.session_state[K_TOUCHED] = {*st.session_state[K_TOUCHED], criterion_id}


def submit() -> None:
    """Store the label, or say what is missing."""
    flagged = bool(st.session_state[K_FLAG])
    criteria = {
        c.criterion_id: st.session_state.get(crit_key(c.criterion_id)) for c in rubric.criteria
    }
    page.save(
        lambda: store.add_label(
            rater.rater_id,
            item.assignment_id,
            overall=st.session_state[K_OVERALL],
            criteria={k: float(v) for k, v in criteria.items() if v is not None},
            comment=st.session_state[K_COMMENT],
            flag_reason=st.session_state[K_REASON] if flagged else None,
        ),
        "Label changed" if view.current else "Label saved",
    )


st.caption(
    f"Answer {item.position} of {len(queue)}"
    + (" · you rated this one; submitting again replaces your label" if view.current else "")
    + (" · skipped before" if item.skipped else "")
)

left, right = st.columns([5, 4], gap="large")
with left:
    st.subheader("Task")
    text_box(view.prompt)
    st.subheader("Answer")
    text_box(view.text)
    if view.masked:
        st.caption(f"{view.masked} passage(s) that could identify the author are [redacted].")
    with st.expander("Rubric", expanded=True):
        st.markdown(f"**{rubric.name}** (v{rubric.version})")
        if rubric.instructions:
            st.markdown(rubric.instructions)
        st.markdown("\n".join(f"- **{c.name}**: {c.description}" for c in rubric.criteria))
        st.markdown(f"{rubric.scale_text()}  \nPass rule: {rubric.pass_rule}")

choices = scale_choices(rubric.scale)
keys = choice_keys(choices)
with right:
    st.subheader("Overall")
    cols = st.columns(len(choices))
    for col, value, key in zip(cols, choices, keys, strict=True):
        col.button(
            format_score(value),
            key=f"{prefix}pick:{key}",
            shortcut=key,
            type="primary" if st.session_state[K_OVERALL] == value else "secondary",
            on_click=pick_overall,
            args=(value,),
            width="stretch",
        )
    if rubric.scale == "numeric100":
        typed = st.number_input(
            "Or type a score", min_value=0, max_value=100, step=1, key=prefix + "typed",
            value=None,
        )
        if typed is not None and typed != st.session_state[K_OVERALL]:
            pick_overall(float(typed))
    overall = st.session_state[K_OVERALL]
    if overall is None:
        st.markdown("Overall: *not given yet* · Pass: —")
    else:
        verdict = "**pass**" if rubric.passes(float(overall)) else "**fail**"
        st.markdown(f"Overall: **{format_score(float(overall))}** · Pass: {verdict}")

    st.subheader("Criteria")
    for c in rubric.criteria:
        if rubric.scale == "numeric100":
            st.number_input(
                c.name, min_value=0.0, max_value=100.0, step=1.0, key=crit_key(c.criterion_id),
                help=c.description, on_change=touch, args=(c.criterion_id,),
            )
        else:
            st.segmented_control(
                c.name, choices, format_func=format_score, key=crit_key(c.criterion_id),
                help=c.description, on_change=touch, args=(c.criterion_id,),
            )

    st.text_area("Comment (optional)", key=K_COMMENT, height=80)
    st.checkbox("Flag as unrateable", key=K_FLAG)
    if st.session_state[K_FLAG]:
        st.text_input("Why can it not be rated?", key=K_REASON)

    page.buttons(index, editing=bool(view.current), submit=submit)

    st.caption(
        f"Keys: **{keys[0]}–{keys[-1]}** overall score (untouched criteria follow it) · "
        "**Ctrl+Enter** submit · **S** skip · **B** back · **F** forward after going back · "
        "**Tab** moves between fields. Letter and digit keys do nothing while you type "
        "in a text box."
    )
