"""A crowd platform's participant arrives through the study link (issue 57).

:func:`crowd_arrival` runs in the entry point before the token check. A URL with ``?crowd=`` and
the platform's ids (Prolific's ``PROLIFIC_PID``/``STUDY_ID``/``SESSION_ID``, MTurk's
``workerId``/``hitId``/``assignmentId``, or ``pid``/``study``/``session``) makes or resumes the
participant's rater (:meth:`~judgelab.labeler.store.Store.crowd_enter`) and then *replaces* the whole query
string with the rater's own ``?t=`` token: the participant id leaves the address bar (and the
browser's history), and a reload resumes through the token like any rater's link. Everything
after that is an ordinary rater's session (:mod:`judgelab.views._crowd` for consent and the end).
"""

from __future__ import annotations

import streamlit as st

from judgelab.admin._incidents import LOAD_FAILED, record
from judgelab.labeler.errors import AccessError
from judgelab.labeler.store import PLATFORMS, PeopleRole
from judgelab.session import SERVER_TROUBLE, TOKEN_PARAM, current_store

LINK_PARAM = "crowd"
#: What MTurk sends while a worker only previews a HIT: nobody to make a rater of yet.
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"


def crowd_arrival() -> None:
    """A participant opens the study link: make or resume their rater, then swap the URL for their token.

    Does nothing without ``?crowd=``. Stops the page with one sentence when the link cannot let
    this visitor in (unknown or closed study, missing participant id, another session, time ran out).
    """
    params = st.query_params
    key = params.get(LINK_PARAM)
    if not key:
        return
    ids = next(((params.get(p) or "", params.get(s) or "", params.get(x) or "")
                for p, s, x in PLATFORMS.values() if params.get(p)), ("", "", ""))
    if params.get("assignmentId") == MTURK_PREVIEW:
        st.info("This is a preview of the task. Accept the HIT to start rating.")
        st.stop()
    people: PeopleRole = current_store()
    try:
        _rater, token = people.crowd_enter(key, ids[0], platform_study=ids[1], session_id=ids[2])
    except SERVER_TROUBLE as exc:
        record(exc, where="crowd arrival")
        st.warning(LOAD_FAILED)
        st.stop()
        raise  # unreachable
    except AccessError as exc:
        st.error(f"Access denied: {exc}")
        st.stop()
        raise  # unreachable
    # Only the participant's own token stays in the URL: their platform id leaves the address bar.
    params.clear()
    params[TOKEN_PARAM] = token


__all__ = ["LINK_PARAM", "MTURK_PREVIEW", "crowd_arrival"]
