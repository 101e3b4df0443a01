"""The rating form of the queue pages: a browser-side form with one message per action.

Score keys, criteria, the comment and the flag change the form in the rater's browser
(``_form.js``) without asking the server anything; Back, Skip, Forward and Submit send
one :class:`Action` with the form's values and the item's active seconds. The pages
(Rate, Compare, Padding audit) build the form's data here and handle its actions in
:mod:`judgelab.views._queue_page`.

What the browser receives is the rater's own item and label and the rubric: never an
answer id, family, model or variant (the item key is the opaque item id and the id of
the rater's own label). Unsent changes are kept in the browser's localStorage per item
(see ``_form.js``) under a scope derived from the invite link (:func:`draft_scope`), so
a reload or a return to the item restores them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import streamlit as st

from judgelab.labeler.models import Rubric
from judgelab.labeler.queue import format_score
from judgelab.labeler.store import MAX_COMMENT_CHARS
from judgelab.labeler.timing import IDLE_CAP_SECONDS

_HERE = Path(__file__).resolve().parent

_CSS = """
:host { display: block; font-family: var(--st-font); color: var(--st-text-color); font-size: 14px; }
.jl-form { display: grid; grid-template-columns: minmax(0, 1.05fr) minmax(0, 1fr); gap: 0 18px; }
.jl-form.narrow { grid-template-columns: minmax(0, 1fr); }
.jl-heading { font-weight: 600; margin: 2px 0 4px; font-size: 14px; }
.jl-options { display: flex; gap: 4px; border-radius: 8px; outline: none; padding: 1px; }
.jl-options:focus-visible, .jl-options:focus { box-shadow: 0 0 0 2px var(--st-primary-color); }
.jl-options button {
  flex: 1 1 0; min-width: 0; padding: 1px 4px; border: 1px solid var(--st-border-color);
  border-radius: 6px; background: var(--st-background-color); color: var(--st-text-color);
  font: inherit; cursor: pointer; line-height: 1.3;
}
.jl-options.wide button { padding: 5px 4px; font-weight: 600; }
.jl-options button.on { background: var(--st-primary-color); border-color: var(--st-primary-color); color: #fff; }
.jl-options button:hover { border-color: var(--st-primary-color); }
.jl-verdict { margin-left: 12px; font-weight: 400; }
.jl-choice { margin-bottom: 8px; }
.jl-crit { margin: 0 0 5px; }
.jl-crit-name { font-weight: 600; font-size: 13px; }
.jl-crit-desc { font-size: 12px; line-height: 1.3; opacity: 0.8; margin: 0 0 2px; }
.jl-levels { margin: 0 0 4px; padding-left: 0; list-style: none; font-size: 12px; line-height: 1.3; }
.jl-levels li { margin: 0 0 3px; }
.jl-level { display: inline-block; min-width: 1.2em; font-weight: 700; }
.jl-rule { font-size: 12px; margin: 0 0 6px; opacity: 0.85; }
.jl-text label { display: block; font-size: 13px; margin: 4px 0 2px; }
.jl-label-row { display: flex; justify-content: space-between; align-items: baseline; gap: 8px; }
.jl-count { font-size: 11.5px; opacity: 0.7; text-align: right; }
.jl-count.error { opacity: 1; color: var(--st-red-color, #b3261e); font-weight: 600; }
.jl-text textarea, .jl-text input {
  width: 100%; box-sizing: border-box; font: inherit; padding: 4px 6px; resize: vertical;
  border: 1px solid var(--st-border-color); border-radius: 6px; background: var(--st-background-color);
  color: var(--st-text-color);
}
.jl-flag { display: block; margin: 6px 0 2px; font-size: 13px; cursor: pointer; }
.jl-buttons { display: flex; gap: 6px; margin-top: 8px; }
.jl-buttons button {
  flex: 1 1 auto; white-space: nowrap; padding: 6px 8px; font: inherit; border-radius: 8px; cursor: pointer;
  border: 1px solid var(--st-border-color); background: var(--st-background-color); color: var(--st-text-color);
}
.jl-buttons button.primary { flex: 2 1 auto; background: var(--st-primary-color); color: #fff;
  border-color: var(--st-primary-color); font-weight: 600; }
.jl-buttons button:disabled { opacity: 0.45; cursor: default; }
kbd { font: 11px monospace; opacity: 0.7; margin-left: 5px; }
.jl-flag kbd { margin-left: 2px; }
.jl-message { min-height: 1.3em; margin: 4px 0 0; font-size: 13px; }
.jl-message.error { color: var(--st-red-color, #b3261e); font-weight: 600; }
.jl-keys { font-size: 11.5px; opacity: 0.7; margin: 2px 0 0; }
.jl-guide { font-size: 12.5px; margin: 4px 0 0; }
.jl-guide summary { cursor: pointer; font-weight: 600; }
.jl-guide p { white-space: pre-wrap; margin: 4px 0 0; line-height: 1.35; }
.jl-turns { max-height: 236px; overflow-y: auto; margin: 2px 0 6px; padding-right: 4px; }
.jl-turns .jl-crit { display: grid; grid-template-columns: 4.2em minmax(0, 1fr); gap: 0 6px; align-items: center; }
.jl-turns .jl-crit-name { grid-row: 1; grid-column: 1; }
.jl-turns .jl-options { grid-row: 1; grid-column: 2; }
.jl-turns .jl-crit-desc { grid-row: 2; grid-column: 1 / -1; margin: 0; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; }
"""

_FORM = st.components.v2.component(
    "judgelab_rating_form",
    html='<div class="jl-mount"></div>',
    css=_CSS,
    js=(_HERE / "_form.js").read_text(encoding="utf-8"),
)

Do = Literal["submit", "back", "skip", "forward", "goto", "reveals"]
_DOS = ("submit", "back", "skip", "forward", "goto", "reveals")

#: A turn's score travels among the criteria under this prefix and the turn number (``#turn-3``): a
#: criterion id starts with a letter or digit (``judgelab.labeler._rows.ID_PATTERN``), so none is taken for a turn.
TURN_PREFIX = "#turn-"


@dataclass(frozen=True)
class Option:
    """One choice of a choice group: its stored value, its text and its key."""

    value: float | int | bool
    label: str
    key: str


@dataclass(frozen=True)
class FormData:
    """What the browser needs to draw the form for one item.

    Attributes:
        item: Opaque key of the item and the rater's current label of it; a new key
            starts a fresh form.
        title: The form's accessible name.
        choice_label: The main choice's heading (``Overall score``, the question).
        options: The main choice's options.
        choice: The current choice (``None``: not given).
        missing: What a refused submit says when the main choice is missing.
        comment_label: The comment box's label.
        comment: The current comment.
        keys_help: The line listing the shortcuts.
        editing: The rater came back to a done item (Forward instead of Skip).
        can_back: Whether there is an item to go back to.
        criteria: ``(criterion_id, name, description, current score)`` per criterion.
        criterion_options: The options of every criterion.
        follow: Untouched criteria take the overall score.
        levels_title: Heading of the score levels.
        levels: ``(level, definition)`` pairs, shown as a list.
        pass_rule: The rubric's pass rule in words.
        verdict: ``{"binary": ..., "threshold": ...}`` to show the pass verdict, or ``None``.
        guide_title: The folded instructions' summary line (``How to score (...)``).
        guide: The rubric's instructions before its score levels, shown as text under the
            buttons, folded ("" shows none).
        flag: Offer "flag as unrateable" (score items).
        reveals: Offer "this answer says who wrote it" (key W; the action ``reveals``), which
            withholds the answer from other raters (score items of the pool).
        flagged: Whether the current label flags the item.
        reason: The current flag reason.
        error: A refusal from the server to show at the Submit button.
        notice: What the last action did (``Label saved``), shown at the Submit button.
        rev: Changes with every answer of the server, so the form always redraws.
        draft_scope: Where the browser keeps this form's unsent drafts (localStorage keys
            start with it): one per invite link and page, not the token itself. ``""``
            keeps none. Also names the page's entries in the browser's history.
        position: The item's 1-based place in the rater's queue (the history entry's ``#item-N``).
        turns: ``(turn, name, opening, current score)`` per assistant turn when the rubric rates
            each turn (:data:`TURN_PREFIX` + turn is its key among the sent criteria); every
            turn needs a score, on the criteria's scale, and none follows the overall score.
    """

    item: str
    title: str
    choice_label: str
    options: Sequence[Option]
    choice: float | int | bool | None
    missing: str
    comment_label: str
    comment: str
    keys_help: str
    editing: bool
    can_back: bool
    criteria: Sequence[tuple[str, str, str, float | None]] = ()
    criterion_options: Sequence[Option] = ()
    follow: bool = False
    levels_title: str = "Score levels"
    levels: Sequence[tuple[str, str]] = ()
    pass_rule: str = ""
    verdict: Mapping[str, Any] | None = None
    guide_title: str = ""
    guide: str = ""
    flag: bool = False
    reveals: bool = False
    flagged: bool = False
    reason: str = ""
    error: str = ""
    notice: str = ""
    rev: int = 0
    draft_scope: str = ""
    position: int = 0
    turns: Sequence[tuple[int, str, str, float | None]] = ()

    def payload(self) -> dict[str, Any]:
        """The JSON the browser side reads."""
        def options(opts: Sequence[Option]) -> list[dict[str, Any]]:
            return [{"value": o.value, "label": o.label, "key": o.key.lower()} for o in opts]

        return {
            "item": self.item, "title": self.title, "rev": self.rev,
            "choice": {"label": self.choice_label, "options": options(self.options),
                       "value": self.choice, "missing": self.missing},
            "criteria": [{"id": c, "name": n, "description": d, "value": v}
                         for c, n, d, v in self.criteria],
            "criterion_options": options(self.criterion_options),
            "turns": [{"id": f"{TURN_PREFIX}{t}", "turn": t, "name": n, "description": d, "value": v}
                      for t, n, d, v in self.turns],
            "follow": self.follow, "levels_title": self.levels_title,
            "levels": [list(x) for x in self.levels], "pass_rule": self.pass_rule,
            "verdict": dict(self.verdict) if self.verdict is not None else None,
            "guide": {"title": self.guide_title, "text": self.guide} if self.guide else None,
            "comment": {"label": self.comment_label, "value": self.comment},
            "flag": {"label": "Flag as unrateable", "reason_label": "Why can it not be rated?",
                     "value": self.flagged, "reason": self.reason} if self.flag else None,
            "reveals": {"label": "Says who wrote it",
                        "help": "This answer tells which model or company wrote it: it is taken out of every "
                                "rater's queue and your admin looks at it. The comment box can say where."}
            if self.reveals else None,
            "keys_help": self.keys_help, "editing": self.editing, "can_back": self.can_back,
            "error": self.error, "notice": self.notice, "idle_cap": IDLE_CAP_SECONDS,
            "draft_scope": self.draft_scope, "position": self.position, "max_chars": MAX_COMMENT_CHARS,
        }


@dataclass(frozen=True)
class Action:
    """What the rater asked for: a button or shortcut, with the form's values.

    Attributes:
        do: ``submit``, ``back``, ``skip``, ``forward``, ``goto`` or ``reveals`` (the answer says who
            wrote it: the W key).
        item: The item key the form was drawn for (an action on a stale form is ignored).
        choice: The main choice (overall score, preference, yes/no), or ``None``.
        criteria: Criterion id -> score (criteria without a score left out).
        comment: The comment or note.
        flag: Whether "flag as unrateable" is ticked.
        reason: The flag's reason.
        seconds: Active seconds on the item in this session, as the browser counted them.
        to: For ``goto`` (the browser's Back or Forward): the place of the item to show (the
            item key without its label part, see :func:`place_of`), or ``done`` for the
            finished screen.
        cut: The text boxes whose text the browser cut to ``MAX_COMMENT_CHARS``, with the length
            it had (``{"jl-comment": 1048576}``): said again after the submit.
    """

    do: Do
    item: str
    choice: Any = None
    criteria: dict[str, float] = field(default_factory=dict)
    comment: str = ""
    flag: bool = False
    reason: str = ""
    seconds: float | None = None
    to: str = ""
    cut: dict[str, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: object) -> Action | None:
        """The action in a trigger payload; ``None`` for anything malformed."""
        if not isinstance(raw, Mapping) or raw.get("do") not in _DOS:
            return None
        crit = raw.get("criteria") or {}
        seconds = raw.get("seconds")
        cut = raw.get("cut") or {}
        return cls(
            do=raw["do"],
            item=str(raw.get("item", "")),
            choice=raw.get("choice"),
            criteria={str(k): float(v) for k, v in crit.items() if isinstance(v, (int, float))}
            if isinstance(crit, Mapping) else {},
            comment=str(raw.get("comment") or ""),
            flag=bool(raw.get("flag")),
            reason=str(raw.get("reason") or ""),
            seconds=float(seconds) if isinstance(seconds, (int, float)) else None,
            to=str(raw.get("to") or ""),
            cut={str(k): int(v) for k, v in cut.items() if isinstance(v, (int, float)) and v > 0}
            if isinstance(cut, Mapping) else {},
        )


def split_turns(criteria: Mapping[str, float]) -> tuple[dict[str, float], dict[int, float]]:
    """The criteria a form sent, and the turn scores travelling among them (see :data:`TURN_PREFIX`).

    Examples:
        >>> split_turns({"tone": 4.0, "#turn-2": 3.0, "#turn-1": 5.0})
        ({'tone': 4.0}, {1: 5.0, 2: 3.0})
    """
    plain = {k: v for k, v in criteria.items() if not k.startswith(TURN_PREFIX)}
    turns = {int(k[len(TURN_PREFIX):]): v for k, v in criteria.items()
             if k.startswith(TURN_PREFIX) and k[len(TURN_PREFIX):].isdigit()}
    return plain, dict(sorted(turns.items()))


def cut_note(action: Action) -> str:
    """What a saved message adds when the browser cut a text box (``""``: nothing was cut).

    The count said is the text's length as stored (Python's ``len``: code points, as the browser's
    counter counts them), so the message and the stored comment always agree; the browser cuts to
    :data:`~judgelab.labeler.store.MAX_COMMENT_CHARS`.

    Examples:
        >>> cut_note(Action(do="submit", item="x", comment="a" * 5000, cut={"jl-comment": 1048576}))
        'your comment was cut to its first 5,000 characters (the text you pasted had 1,048,576)'
    """
    names = {"jl-comment": "comment", "jl-reason": "reason for the flag"}
    kept = {"jl-comment": len(action.comment), "jl-reason": len(action.reason)}
    parts = [f"your {names[box]} was cut to its first {min(kept[box], MAX_COMMENT_CHARS):,} characters "
             f"(the text you pasted had {length:,})" for box, length in sorted(action.cut.items())
             if box in names and (box != "jl-reason" or action.flag)]
    return "; ".join(parts)


def place_of(item_key: str) -> str:
    """The queue position an item key names: the key without its last part (the label's id).

    A browser history entry keeps the place, so it still names the item after the label changed.

    Examples:
        >>> place_of("a1b2:17"), place_of("a1b2:c3d4:new")
        ('a1b2', 'a1b2:c3d4')
    """
    return item_key.rpartition(":")[0]


def draft_scope(token: str | None, kind: str) -> str:
    """Where one link's drafts of one page live in the browser: a hash, never the token.

    Two raters sharing a browser never see each other's drafts; a new link starts clean.

    Examples:
        >>> draft_scope("abc", "score") == draft_scope("abc", "score") != draft_scope("abd", "score")
        True
        >>> draft_scope(None, "score")
        ''
    """
    if not token:
        return ""
    return hashlib.sha256(f"judgelab-draft\0{token}\0{kind}".encode()).hexdigest()[:20]


def rating_form(data: FormData, *, key: str, on_action: Callable[[], None]) -> None:
    """Draw the form; ``on_action`` runs (before the next script run) when the rater acts.

    ``on_action`` reads the action with :func:`pending_action` under the same ``key``.
    """
    _FORM(key=key, data=data.payload(), on_action_change=on_action, height="content")


def pending_action(key: str) -> Action | None:
    """The action the form under ``key`` just sent (inside ``on_action``), if any."""
    state = st.session_state.get(key)
    raw = state.get("action") if isinstance(state, Mapping) else getattr(state, "action", None)
    return Action.parse(raw)


def level_definitions(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Split rubric instructions into the text before the score levels and the levels.

    A level is written ``5: what a 5 means`` inside the instructions; two or more of
    them make a list (highest first, as written). Text without levels comes back whole.

    Examples:
        >>> intro, levels = level_definitions("Read it. 5: all of it. 4: most. 1: none.")
        >>> intro, levels
        ('Read it.', [('5', 'all of it.'), ('4', 'most.'), ('1', 'none.')])
        >>> level_definitions("No levels: here.")
        ('No levels: here.', [])
    """
    marks = list(re.finditer(r"(?:^|(?<=\s))(\d{1,3}):\s+", text))
    if len(marks) < 2:
        return text.strip(), []
    levels = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        levels.append((m.group(1), text[m.end():end].strip()))
    return text[: marks[0].start()].strip(), levels


def score_options(choices: Sequence[float], keys: Sequence[str]) -> list[Option]:
    """The options of a score scale, each with its shortcut key."""
    return [Option(value=float(v), label=format_score(v), key=k) for v, k in zip(choices, keys, strict=True)]


def rubric_levels(rubric: Rubric) -> tuple[str, list[tuple[str, str]]]:
    """The rubric's instructions without the levels, and the levels (see :func:`level_definitions`)."""
    return level_definitions(rubric.instructions or "")


__all__ = [
    "TURN_PREFIX",
    "Action",
    "FormData",
    "Option",
    "cut_note",
    "draft_scope",
    "level_definitions",
    "pending_action",
    "place_of",
    "rating_form",
    "rubric_levels",
    "score_options",
    "split_turns",
]
