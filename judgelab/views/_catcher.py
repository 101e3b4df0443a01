"""The queue pages' key catcher: no key is lost while the rating form's script is on its way.

Under load the item's text can reach the browser seconds before the rating form that is
drawn after it, and keys pressed in that gap reached nothing. The catcher (``_catcher.js``)
is drawn first on every queue screen, before the progress line and the text: from then
until the form is live it holds the rater's form keys and shows them held; the form takes
them when it starts (``_form.js``) and acts on each or names it as not used. On the finished
screen (no form comes) held keys are named as not used.

It shows nothing until a key is held and takes no room in the page (``app.py`` lifts its
element out of the layout, by the ``jl-catcher`` key).

It also keeps the page's place in the browser's history when no form is there (the finished
screen): it adds the screen's entry, and the browser's Back from it asks the server for the
item the entry names (``goto``). With a form on screen the form does this (``_form.js``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import streamlit as st

_HERE = Path(__file__).resolve().parent

#: Prefix of the catcher's widget key; ``app.py``'s style takes elements so keyed out of the flow.
KEY_PREFIX = "jl-catcher"

_CSS = """
:host { display: block; font-family: var(--st-font); }
.jl-held {
  position: fixed; right: 24px; bottom: 18px; z-index: 1000; max-width: 420px;
  padding: 6px 12px; border-radius: 8px; font-size: 14px; font-weight: 600;
  background: var(--st-secondary-background-color); color: var(--st-text-color);
  border: 1px solid var(--st-primary-color); box-shadow: 0 2px 8px rgba(0, 0, 0, 0.15);
}
.jl-held.refused { border-color: var(--st-red-color, #b3261e); color: var(--st-red-color, #b3261e); }
.jl-held[hidden] { display: none; }
"""

_CATCHER = st.components.v2.component(
    "judgelab_key_catcher",
    html='<div class="jl-held" role="status" aria-live="polite" hidden></div>',
    css=_CSS,
    js=(_HERE / "_catcher.js").read_text(encoding="utf-8"),
)


def key_catcher(kind: str, *, form_follows: bool, scope: str = "",
                on_goto: Callable[[str], None] | None = None) -> None:
    """Draw the catcher of a queue page; ``form_follows``: a rating form comes on this screen.

    Call it before anything of the item is drawn, so it listens before the rater sees the item.

    Args:
        kind: The page's queue kind (one catcher per page).
        form_follows: Whether a rating form follows on this screen (else held keys are
            named as not used).
        scope: The page's scope in the browser (:func:`~judgelab.views._form.draft_scope`):
            names its entries in the browser's history.
        on_goto: Called with a place when the browser's Back or Forward asks for an item while
            no form is live (the finished screen); ``done`` asks for the resume position.
    """
    key = f"{KEY_PREFIX}-{kind}"

    def goto() -> None:
        state = st.session_state.get(key)
        raw = state.get("goto") if isinstance(state, Mapping) else getattr(state, "goto", None)
        if on_goto is not None and isinstance(raw, Mapping) and isinstance(raw.get("to"), str):
            on_goto(raw["to"])

    _CATCHER(key=key, data={"hold": form_follows, "scope": scope}, on_goto_change=goto, height="content")


__all__ = ["KEY_PREFIX", "key_catcher"]
