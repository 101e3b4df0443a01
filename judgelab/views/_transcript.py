"""A conversation or agent trace on the rater's page: readable at 1366x768, blind, inert.

Every message is drawn verbatim (:func:`~judgelab.labeler.blinding.verbatim_html`: nothing read as
Markdown or HTML) under its role, each role with its own colour bar; tool calls and tool
results fold into expanders named after the tool (arguments and observations inside); a long
message folds after its opening; the rated turn is marked. The transcript comes from the
store already blinded (:func:`judgelab.labeler.transcripts.blinded`).

A long transcript (more than :data:`BLOCK_MESSAGES` messages) is drawn as one HTML block, its
folds HTML ``<details>`` instead of Streamlit expanders: a 500-turn trace drawn as some 1,500
elements took about two minutes before the form's Submit showed; as one block it shows in seconds
(``bench/long_transcript.py``). Every text in it is escaped as in the short form, so it stays inert.
"""

from __future__ import annotations

import html
import re

import streamlit as st

from judgelab.labeler.blinding import verbatim_html
from judgelab.labeler.transcripts import Message, Transcript, TurnMode

__all__ = ["show_transcript", "turn_openings"]

#: A message longer than this shows its opening and folds the rest.
FOLD_CHARS = 1200
#: A transcript with more messages than this is drawn as one HTML block (see the module's notes).
BLOCK_MESSAGES = 60
_OPENING = 600
_ROLE = {"system": ("System prompt", "#8a8a8a"), "user": ("User", "#2b6cb0"),
         "assistant": ("Assistant", "#2f855a"), "tool": ("Tool result", "#b7791f")}
_MD = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&])")


def _label(text: str) -> str:
    """``text`` for an expander's label, which Streamlit reads as Markdown: every mark escaped."""
    return _MD.sub(r"\\\1", text.replace("\n", " "))[:200]


def _head(role: str, rated: bool, turn: int | None = None, of: int = 0) -> str:
    """A message's heading; ``turn``: its number among ``of`` assistant turns scored one by one.

    A scored turn's heading carries ``data-jl-turn``: the form (``_form.js``) draws the turn's
    score buttons in it, and scrolls it into view when the rater moves to the turn's row.
    """
    title, colour = _ROLE[role]
    mark = " &#9733; rated turn" if rated else ""
    if turn is not None:
        mark = f" &#9733; turn {turn} of {of}"  # the form adds this turn's score buttons after it
        return (f'<div data-jl-turn="{turn}" style="border-left: 4px solid {colour}; padding-left: .5rem;'
                f' margin-top: .6rem"><strong style="color: {colour}">{html.escape(title)}</strong>{mark}</div>')
    return (f'<div style="border-left: 4px solid {colour}; padding-left: .5rem; margin-top: .6rem">'
            f'<strong style="color: {colour}">{html.escape(title)}</strong>{mark}</div>')


def _body(m: Message) -> None:
    if len(m.content) > FOLD_CHARS:
        st.html(verbatim_html(m.content[:_OPENING] + " …"))
        with st.expander(_label(f"Show all {len(m.content):,} characters")):
            st.html(verbatim_html(m.content))
    elif m.content:
        st.html(verbatim_html(m.content))


def _fold(summary: str, inner: str) -> str:
    """An HTML fold: ``summary`` (escaped here) over ``inner`` (already escaped HTML)."""
    return (f'<details style="margin: .3rem 0 .3rem .75rem"><summary style="cursor: pointer">'
            f"{html.escape(summary)}</summary>{inner}</details>")


def _block(t: Transcript, rated: int | None, numbers: dict[int, int]) -> str:
    """The whole transcript as one HTML string, drawn as :func:`show_transcript` draws it message by message."""
    out = []
    for i, m in enumerate(t.messages):
        if m.role == "tool":
            out.append(_fold(f"Tool result: {m.name or 'tool'} ({len(m.content):,} characters)",
                             verbatim_html(m.content)))
            continue
        out.append(_head(m.role, i == rated, numbers.get(i), len(numbers)))
        if len(m.content) > FOLD_CHARS:
            out.append(verbatim_html(m.content[:_OPENING] + " …"))
            out.append(_fold(f"Show all {len(m.content):,} characters", verbatim_html(m.content)))
        elif m.content:
            out.append(verbatim_html(m.content))
        out += [_fold(f"Tool call: {c.name}", verbatim_html(c.arguments)) for c in m.tool_calls]
    return "".join(out)


def show_transcript(t: Transcript, turn: TurnMode) -> None:
    """Draw ``t`` message by message, the turn ``turn`` names marked."""
    rated = t.rated_turn(turn)
    numbers = {at: k for k, at in enumerate(t.turns(), start=1)} if turn == "each" else {}
    if turn == "each":
        st.caption(f"Rate the whole conversation, and each of its {len(numbers)} assistant turns on its own "
                   "(beside each turn, or in the form's turn rows; T goes to the first without a score).")
    elif rated is None:
        st.caption("Rate the whole conversation.")
    if len(t.messages) > BLOCK_MESSAGES:
        st.caption(f"{len(t.messages):,} messages; tool calls, tool results and long messages fold (click to open).")
        st.html(_block(t, rated, numbers))
        return
    for i, m in enumerate(t.messages):
        if m.role == "tool":
            # An observation can be long and is rarely what is rated: folded, named by its tool.
            with st.expander(_label(f"Tool result: {m.name or 'tool'} ({len(m.content):,} characters)")):
                st.html(verbatim_html(m.content))
            continue
        st.html(_head(m.role, i == rated, numbers.get(i), len(numbers)))
        _body(m)
        for c in m.tool_calls:
            with st.expander(_label(f"Tool call: {c.name}")):
                st.html(verbatim_html(c.arguments))


def turn_openings(t: Transcript, chars: int = 70) -> list[str]:
    """Each assistant turn's opening words (or its tool calls), to name the turn's row in the form.

    ``t`` is the blinded transcript the page shows, so the form repeats nothing the rater cannot read.
    """
    out = []
    for at in t.turns():
        m = t.messages[at]
        text = " ".join(m.content.split()) or ", ".join(f"tool call: {c.name}" for c in m.tool_calls) or "(empty)"
        out.append(text if len(text) <= chars else text[: chars - 1] + "…")
    return out
