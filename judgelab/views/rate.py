"""Rate: one answer at a time against the rubric, blind, from the keyboard.

Thin page: the queue, views and writes are :class:`~judgelab.labeler.store.Store` methods; the
rating form lives in the browser (:mod:`judgelab.views._form`: score keys need no round
trip to the server) and its actions are handled by :mod:`judgelab.views._queue_page`.
The item is drawn in a fragment, so a submit reruns the rating area only.

At 1366x768 the task and the answer scroll in one box on the left, and the form (overall score,
criteria with their descriptions, the rubric's score levels, comment, flag and the
buttons) fits beside it without scrolling the page.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from judgelab.admin._incidents import LOAD_FAILED, record
from judgelab.labeler.errors import JudgelabError
from judgelab.labeler.queue import QueueItem, choice_keys, format_score, keys_text, scale_choices
from judgelab.labeler.store import Rater, RaterRole, ScoreView, Screen
from judgelab.session import SERVER_TROUBLE, current_rater, current_token, known_rater_name, rater_store, show_error
from judgelab.views._crowd import crowd_end, crowd_gate
from judgelab.views._form import Action, FormData, rubric_levels, score_options, split_turns
from judgelab.views._queue_page import QueuePage, inert_text, keys_help, read_only_notice
from judgelab.views._transcript import show_transcript, turn_openings

AT = "rate_at"  # assignment the rater went back to (None: resume position)
FLASH = "rate_flash"
FEEDBACK = "rate_feedback"  # training mode: what the last check item expected
SHOWN = "rate_shown"  # (token, what the rating area last drew): drawn again while the database is away
#: Height of the task-and-answer box: the page itself never needs to scroll at 1366x768.
TEXT_HEIGHT = 560

crowd_gate(rater_store(), current_rater())  # a crowd participant: consent first, the clock, the end
st.title("Rate")


def _screen(store: RaterRole, rater_id: int) -> Screen:
    """The rater's screen; in pull mode (project setting ``claim_k``) one more answer when done."""
    at = st.session_state.get(AT)
    screen = store.screen(rater_id, "score", at)
    # Pull mode claims (writes) an answer: not on a file open for reading only.
    claim_k = (store.setting("project", "claim_k")
               if screen.index is None and at is None and not store.read_only else None)
    if claim_k and store.claim_next(rater_id, int(claim_k)) is not None:
        screen = store.screen(rater_id, "score", None)
    elif screen.index is None and at is None and not store.read_only and store.crowd_deal(rater_id):
        screen = store.screen(rater_id, "score", None)  # a crowd participant below the quota: dealt more
    return screen


def _nothing_assigned(store: RaterRole, rater_id: int) -> None:
    others = {
        "Compare": store.progress(rater_id, "pair"),
        "Padding audit": store.progress(rater_id, "audit"),
    }
    waiting = [f"**{page}** ({p.total - p.done} to do)" for page, p in others.items()
               if p.total > p.done]
    st.info(
        "No answers to rate are assigned to you."
        + (f" You have work on {' and '.join(waiting)}: pick it in the menu." if waiting else
           " Your admin will let you know when there is.")
    )


def _held(store: RaterRole, rater_id: int) -> str:
    """What to say when the admin paused the rater's queue or it waits on a review (``""``: not held).

    A rater still qualifying is told nothing: their first items look like any others.
    """
    hold = store.rater_hold(rater_id)
    if hold is None or hold.state == "qualifying":
        return ""
    if hold.state == "paused":
        return ("Your admin has paused your queue: no new answers will be shown to you for now. "
                "Everything you have rated is kept. Please contact your admin.")
    return ("Your queue is on hold until your admin has looked at your first answers. "
            "Everything you have rated is kept. Please contact your admin.")


def _turns(store: RaterRole, rater_id: int, view: ScoreView) -> list[tuple[int, str, str, float | None]]:
    """The form's turn rows when the rubric rates each turn of a conversation (none otherwise)."""
    if view.rubric.turn != "each" or view.transcript is None:
        return []  # an answer that is one text has no turns: its usual scores are all there is
    now = store.label_turns(rater_id, view.current.label_id) if view.current else {}
    return [(k, f"Turn {k}", opening, now.get(k))
            for k, opening in enumerate(turn_openings(view.transcript), start=1)]


def _form_data(view: ScoreView, index: int, turns: list[tuple[int, str, str, float | None]]) -> FormData:
    rubric = view.rubric
    choices = scale_choices(rubric.scale)
    keys = choice_keys(choices)
    options = score_options(choices, keys)
    cur = view.current
    intro, levels = rubric_levels(rubric)
    if not levels and rubric.scale_spec.labels:
        # A declared scale's level labels ("0 = wrong ... 2 = right") are the score levels shown.
        levels = [(format_score(level), words) for level, words in reversed(rubric.scale_spec.labels)]
    shown = keys_text(choices, keys)
    # The stored turn scores are part of the item key: new scores of an unchanged label redraw the form.
    stored = "".join(f"t{k}={v:g}" for k, _, _, v in turns if v is not None)
    return FormData(
        item=f"{view.item.item_id}:{cur.label_id if cur else 'new'}{stored}",
        title="Rating",
        choice_label="Overall score",
        options=options,
        choice=cur.overall if cur else None,
        missing=f"Give an overall score first (keys {shown}), or flag the item.",
        comment_label="Comment (optional)",
        comment=cur.comment if cur else "",
        keys_help=keys_help(f"{shown} overall (untouched criteria follow) · "
                            "↓ then digits or ←/→ criteria" + (" and turns · T first turn without a score" if turns
                                                               else "") + " · U flag · W says who wrote it"
                            " · C comment",
                            editing=cur is not None),
        editing=cur is not None,
        can_back=index > 0,
        criteria=[(c.criterion_id, c.name, c.description, cur.criteria.get(c.criterion_id) if cur else None)
                  for c in rubric.criteria],
        criterion_options=score_options(choices, keys),
        follow=True,
        levels_title=f"{rubric.name}: score levels" if levels else "",
        levels=levels,
        pass_rule=f"{rubric.scale_text()} Pass rule: {rubric.pass_rule}",
        verdict={"binary": rubric.scale == "binary", "threshold": _threshold(view)},
        guide_title=f"How to score ({rubric.name}, v{rubric.version})",
        guide=intro,
        flag=True,
        reveals=True,
        flagged=bool(cur and cur.flag_reason),
        reason=(cur.flag_reason or "") if cur else "",
        turns=turns,
    )


def _write(store: RaterRole, rater_id: int, item: QueueItem, action: Action, by_turn: bool) -> int:
    """Store the form's label (with its turn scores when ``by_turn``); its id."""
    criteria, scored = split_turns(action.criteria)
    overall = None if action.choice is None else float(action.choice)
    flag = action.reason if action.flag else None
    # seen: another tab's label since this render is refused, not superseded.
    if by_turn:  # the label and its turn scores in one unit of work: acknowledged means both are stored
        return store.add_turn_label(
            rater_id, item.assignment_id, overall=overall, turns=scored, criteria=criteria,
            comment=action.comment, flag_reason=flag, seconds=action.seconds, seen=item.done_id,
        )
    return store.add_label(
        rater_id, item.assignment_id, overall=overall, criteria=criteria, comment=action.comment,
        flag_reason=flag, seconds=action.seconds, seen=item.done_id,
    )


def _threshold(view: ScoreView) -> float:
    """The lowest overall score that passes (the form shows the verdict as the rater picks)."""
    choices = scale_choices(view.rubric.scale)
    passing = [c for c in choices if view.rubric.passes(c)]
    return min(passing) if passing else max(choices) + 1


@dataclass(frozen=True)
class _Shown:
    """What the rating area shows: everything read from the database for one render.

    Read first and drawn after (:func:`_draw`), so a database that fails halfway leaves nothing
    half drawn; the last one is kept in the session (:data:`SHOWN`) to draw again while the
    database is away.
    """

    rater: Rater
    store: RaterRole
    queue: list[QueueItem]
    index: int | None
    view: ScoreView | None
    turns: list[tuple[int, str, str, float | None]]
    held: str


def _load() -> _Shown | None:
    """Read what the rating area shows; ``None`` after saying why there is nothing to rate.

    Raises:
        Exception: One of :data:`~judgelab.session.SERVER_TROUBLE` (the database is away).
    """
    rater = current_rater(raise_trouble=True)  # a fragment's rerun skips app.py: check the token here too
    store = rater_store()
    if read_only_notice(store, FLASH):
        return None
    try:
        screen = _screen(store, rater.rater_id)
    except SERVER_TROUBLE:
        raise
    except JudgelabError as exc:
        if store.rubric() is None:
            st.warning("There is no rubric to rate against yet, so there is nothing to rate. "
                       "Please tell your admin: a rubric has to be added on the Data page first.")
        else:
            show_error(exc)
        return None
    if screen.index is None and st.session_state.get(AT) is None and crowd_end(store, rater.rater_id):
        return None  # a crowd participant's end: the completion code or the redirect
    queue = screen.queue
    held = _held(store, rater.rater_id)
    if held and not queue:
        st.warning(held)
        return None
    if not queue:
        _nothing_assigned(store, rater.rater_id)
        return None
    view = screen.view
    assert view is None or isinstance(view, ScoreView)
    turns = _turns(store, rater.rater_id, view) if view is not None else []
    shown = _Shown(rater, store, queue, screen.index, view, turns, held)
    # Only an item is drawn again while the database is away (the finished screen has no form).
    st.session_state[SHOWN] = (current_token(), shown) if screen.index is not None else None
    return shown


def _kept(exc: Exception) -> _Shown | None:
    """The database is away: keep ``exc`` for the admin; the item last shown, to draw again.

    A database that stops, restarts or drops the connection is an expected event here, not an
    exception: the rater's item is drawn again as it was, its form still holding what they gave,
    with one plain sentence at the Submit button (what a failed submit said, else
    :data:`~judgelab.admin._incidents.LOAD_FAILED`); their next submit tries again. With no item
    shown before (a first load), the sentence alone.
    """
    record(exc, where="Rate: load", rater=known_rater_name())
    kept = st.session_state.get(SHOWN)
    if not isinstance(kept, tuple) or kept[0] != current_token() or not isinstance(kept[1], _Shown):
        st.warning(LOAD_FAILED)
        return None
    st.session_state.setdefault(FLASH + ":error", LOAD_FAILED)
    st.session_state[AT] = kept[1].queue[kept[1].index or 0].assignment_id
    return kept[1]


def _draw(shown: _Shown) -> None:
    """Draw the progress, the item and the form (asks the database nothing)."""
    store, rater, queue, view, turns = shown.store, shown.rater, shown.queue, shown.view, shown.turns
    if shown.held:
        st.warning(shown.held)
    said = st.session_state.pop(FEEDBACK, None)
    if said:  # training mode only: what the last submitted check item expected (judgelab.labeler.store._quality)
        st.info(said)
    page = QueuePage(store, rater.rater_id, "score", queue, AT, FLASH)
    item = queue[shown.index] if shown.index is not None else None
    where = f"Answer {{position}} of {len(queue)}" + (
        " · you rated this one; a changed label replaces it" if isinstance(view, ScoreView) and view.current else ""
    ) + (" · skipped before" if item is not None and item.skipped else "")
    index = page.header(shown.index, f"All {len(queue)} answers are rated. Thank you!",
                        back_help="Go to your last answer to change its label.", where=where)
    item = queue[index]
    assert isinstance(view, ScoreView)
    left, right = st.columns([4, 5], gap="medium")
    with left, st.container(height=TEXT_HEIGHT, border=True):
        inert_text(view.prompt, heading="Task")
        if view.transcript is not None:
            inert_text("", heading="Conversation", rule=True)
            show_transcript(view.transcript, view.rubric.turn)
        else:
            inert_text(view.text, heading="Answer", rule=True)
        if view.masked:
            st.caption(f"{view.masked} passage(s) that could identify the author are [redacted].")

    def write(action: Action) -> int:
        label_id = _write(store, rater.rater_id, item, action, bool(turns))
        said = store.quality_feedback(rater.rater_id, label_id)
        if said:
            st.session_state[FEEDBACK] = said
        return label_id

    with right:
        page.form(index, _form_data(view, index, turns), write,
                  saved="Label saved", changed="Label changed")


@st.fragment
def rating_area() -> None:
    """The progress, the item and the form; a submit reruns only this."""
    try:
        shown = _load()
    except SERVER_TROUBLE as exc:  # the database's trouble: the admin's to read (Overview, server log)
        shown = _kept(exc)
    if shown is not None:
        _draw(shown)


rating_area()
