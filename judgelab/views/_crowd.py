"""The crowd participant's part of the rater app: arrival by study link, consent, clock, the end.

Thin: every rule (who may enter, quota, time limit, exactly-k, resume) is the store's
(:mod:`judgelab.labeler.store._crowd`). What this module adds is where the URL's ids go:

* :func:`judgelab.crowd_entry.crowd_arrival` (the entry point, before the token check) turns the
  study link into the participant's own ``?t=`` token.
* :func:`crowd_gate` runs at the top of the Rate page: consent and instructions first (the clock
  starts at consent), the time left while working, the end screen once the outcome is set.
* :func:`crowd_end` runs where the Rate page would say "all rated": the completion code, or a
  redirect to the platform's completion URL.

A participant's page reads their own standing only; no other participant's id or name is ever
read for it.
"""

from __future__ import annotations

import math
import time

import streamlit as st

from judgelab.labeler.store import CrowdStatus, Rater, RaterRole

# A tiny component whose script runs in the page itself: it sends the browser to the platform's
# completion URL (a Streamlit app cannot answer with an HTTP redirect).
_REDIRECT = st.components.v2.component(
    "judgelab_crowd_redirect",
    html="<span></span>",
    js="export default function (c) { const u = c.data && c.data.url;"
       " if (u && !window.judgelabRedirected) { window.judgelabRedirected = true; window.location.assign(u); } }",
)


def is_crowd(store: RaterRole, rater: Rater) -> bool:
    """Whether ``rater`` came from a crowd study (they see the Rate page only)."""
    return not rater.is_admin and store.crowd_status(rater.rater_id) is not None


def _texts(store: RaterRole, status: CrowdStatus) -> tuple[str, str]:
    """The study's consent and instructions (its own settings, else the project's)."""
    found = []
    for key in ("crowd_consent", "crowd_instructions"):
        text = store.setting(f"crowd:{status.study.name}", key) or store.setting("project", key) or ""
        found.append(text)
    return found[0], found[1]


def _start(store: RaterRole, rater_id: int) -> None:
    store.crowd_start(rater_id)


def _give_back(store: RaterRole, rater_id: int) -> None:
    store.crowd_return(rater_id)


def crowd_gate(store: RaterRole, rater: Rater) -> CrowdStatus | None:
    """Consent before the first item, the clock while working, the end once set; ``None`` for other raters.

    Stops the page on the consent and end screens.
    """
    if rater.is_admin:
        return None
    status = store.crowd_status(rater.rater_id)
    if status is None:
        return None
    consent, instructions = _texts(store, status)
    if status.outcome is not None:
        show_end(status)
        st.stop()
    if status.started is None:
        minutes = status.study.time_limit / 60
        st.subheader("Before you start")
        if consent:
            st.markdown(consent)
        if instructions:
            st.markdown("**Instructions**")
            st.markdown(instructions)
        st.caption(f"You will rate up to {status.study.quota} answers. You have {minutes:g} minutes from the "
                   "moment you start; answers not rated by then go to someone else.")
        st.button("I agree, start", type="primary", on_click=_start, args=(store, rater.rater_id))
        st.stop()
    left = max(0.0, (status.deadline or 0.0) - time.time())
    with st.expander(f"Instructions · about {math.ceil(left / 60)} min left"):
        if instructions:
            st.markdown(instructions)
        st.button("Give the study back (stop now)", on_click=_give_back, args=(store, rater.rater_id),
                  help="The answers you have not rated go to someone else; what you rated is kept.")
    return status


def show_end(status: CrowdStatus) -> None:
    """The end screen: completion code and/or the redirect; or why the study ended without one."""
    if status.outcome == "timed_out":
        st.warning("Your time for this study ran out. What you rated is kept; please return the study on the "
                   "platform.")
        return
    if status.outcome == "returned":
        st.info("You gave the study back. What you rated is kept.")
        return
    study = status.study
    st.success("You have finished. Thank you!")
    if study.completion_code:
        st.markdown("Your completion code:")
        st.code(study.completion_code, language=None)
    if study.completion_url:
        st.link_button("Back to the platform to finish", study.completion_url, type="primary")
        st.caption("You are being sent back to the platform.")
        _REDIRECT(key="jl-crowd-redirect", data={"url": study.completion_url})


def crowd_end(store: RaterRole, rater_id: int) -> bool:
    """At the end of the queue: show the end (``True``), or ``False`` for a rater who is not a crowd participant."""
    status = store.crowd_finish(rater_id)
    if status is None or status.started is None:
        return False
    if status.outcome is not None:
        show_end(status)
        return True
    if status.dealt == 0:
        st.info("There is nothing to rate in this study right now. Please come back in a few minutes, or return "
                "the study on the platform.")
        return True
    return False


__all__ = ["crowd_end", "crowd_gate", "is_crowd", "show_end"]
