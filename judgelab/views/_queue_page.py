"""What the rater queue pages (Rate, Compare, Padding audit) share.

The header (the progress bar, the finished screen), the last save's message (at the form's
Submit button, where the rater is looking; a toast on the finished screen), and the one
handler of the rating form's actions (:mod:`judgelab.views._form`): Back, Skip, Forward
and Submit. Not a page itself: ``app.py`` lists pages by name and this file is not one.

Each page draws its item inside an ``st.fragment``, so a submit reruns the rating area
only. The handler runs as the form's callback, which Streamlit calls *before* the
fragment (or the page) runs again; so it checks the invite token itself, first, and a
revoked rater's submit writes nothing (:func:`judgelab.session.check_access`).

Two tabs on one link: each write says which label the tab showed (the page's ``write``
passes the item's ``done_id`` as the store's ``seen``), so a tab that is behind is told the
item was labelled meanwhile and shown the stored label, and never overwrites it unseen.

Keys before the form, and the browser's history: the header draws the key catcher
(:mod:`judgelab.views._catcher`) before anything of the item, so keys pressed before the form's
script runs are held for it; each item shown is an entry in the browser's history (``#item-N``),
and the browser's Back or Forward sends ``goto`` with the entry's place (:meth:`QueuePage.goto`).

Blinding: navigation carries only the assignment id (a sequence number) of a queue
position, and the form only the opaque item id.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from judgelab.admin._incidents import LOAD_FAILED, READ_ONLY, SAVE_FAILED, record
from judgelab.labeler.blinding import verbatim_html
from judgelab.labeler.errors import AccessError, JudgelabError, StaleLabelError, StoreError
from judgelab.labeler.queue import KEYS, Kind, QueueItem, previous_index
from judgelab.labeler.store import Rater, RaterRole, Screen
from judgelab.session import SERVER_TROUBLE, check_access, current_token, known_rater_name, refuse
from judgelab.views._catcher import key_catcher
from judgelab.views._form import Action, FormData, cut_note, draft_scope, pending_action, rating_form

#: What the rater reads after pressing W (the answer says who wrote it).
REVEALED = ("Flagged: this answer says who wrote it. It is taken out of every rater's queue "
            "and your admin will look at it.")

#: What a write returns: the id of the rater's current label after it (the same id as
#: before when nothing changed). Pages pass the item's ``done_id`` to the store as the label
#: the form showed (``seen``).
Write = Callable[[Action], int]


@dataclass(frozen=True)
class QueuePage:
    """One render of a queue page: the rater's queue and the page's session-state keys.

    Attributes:
        store: The project store.
        rater_id: The rater whose queue it is.
        kind: ``"score"``, ``"pair"`` or ``"audit"``.
        queue: The rater's items of this kind in queue order (not empty).
        at: Session key of the assignment the rater went back to (``None``: resume).
        flash: Session key of the message the next run shows at the Submit button (or toasts
            on the finished screen); ``flash + ":error"``
            holds the refusal the form shows at its Submit button.
    """

    store: RaterRole
    rater_id: int
    kind: Kind
    queue: Sequence[QueueItem]
    at: str
    flash: str

    @property
    def form_key(self) -> str:
        """The rating form's widget key on this page."""
        return f"{self.at}:form"

    def go_to(self, i: int | None) -> None:
        """Open queue position ``i`` (``None``: the resume position)."""
        st.session_state[self.at] = None if i is None else self.queue[i].assignment_id

    def index_of(self, place: str) -> int | None:
        """The queue position whose item key has ``place`` (``None``: none, the resume position).

        A place is an item key without its label part (:func:`~judgelab.views._form.place_of`).
        """
        for i, item in enumerate(self.queue):
            if ":".join(p for p in (item.item_id, item.item_b_id) if p is not None) == place:
                return i
        return None

    def goto(self, place: str) -> None:
        """Show the item at ``place`` (the browser's Back or Forward; ``done``: resume)."""
        self.go_to(self.index_of(place))

    def header(
        self, index: int | None, finished: str, *, back_help: str | None = None, where: str = ""
    ) -> int:
        """Show progress (followed by ``where``: which item this is).

        On the finished screen (``index`` is ``None``) toast the last save, say ``finished``,
        offer Back to the last item, and stop the page. With an item, the form says what the
        last save did (:meth:`form`): one element fewer for the browser to draw per submit.

        Returns:
            ``index``, when there is an item to show.
        """
        # First, before anything of the item: keys pressed before the form is live are held for it.
        key_catcher(self.kind, form_follows=index is not None, scope=draft_scope(current_token(), self.kind),
                    on_goto=self.goto)
        if index is None and self.flash in st.session_state:
            st.toast(st.session_state.pop(self.flash))
        done = sum(1 for item in self.queue if item.done)
        at = f" · {where.format(position=self.queue[index].position)}" if where and index is not None else ""
        st.progress(done / len(self.queue), text=f"**{done} of {len(self.queue)}** done{at}")
        if index is None:
            st.success(finished)
            st.button(
                "Back", shortcut=KEYS["back"], on_click=self.go_to,
                args=(previous_index(self.queue, None),), help=back_help,
            )
            st.stop()
        return index

    def form(self, index: int, data: FormData, write: Write, *, saved: str, changed: str) -> None:
        """Draw the rating form for queue position ``index``; its actions go to :meth:`act`."""
        error = st.session_state.pop(self.flash + ":error", "")
        notice = st.session_state.pop(self.flash, "")
        rev = int(st.session_state.get(self.flash + ":rev", 0))
        filled = FormData(**{**data.__dict__, "error": error, "notice": notice, "rev": rev,
                             "draft_scope": draft_scope(current_token(), self.kind),
                             "position": self.queue[index].position})
        rating_form(filled, key=self.form_key,
                    on_action=partial(self.act, index, data.item, write, saved, changed))

    def act(self, index: int, item_key: str, write: Write, saved: str, changed: str) -> None:
        """Handle the form's action for queue position ``index`` (the form's callback).

        The token is checked before anything else; an action drawn for another item (a
        stale page) does nothing and says so.
        """
        st.session_state[self.flash + ":rev"] = int(st.session_state.get(self.flash + ":rev", 0)) + 1
        action = pending_action(self.form_key)
        if action is None:
            return
        try:
            check_access()
        except AccessError:
            refuse(not_saved=action.do == "submit", kept=kept(action))
            return
        except SERVER_TROUBLE as exc:
            # The database is away (stopped, restarting, a dropped connection): an expected event,
            # not an exception. Nothing was stored; the rater stays on the item, whose form keeps
            # what they gave, and reads one sentence at the Submit button; the next submit tries again.
            self.failed(exc, action.do, said=SAVE_FAILED if action.do in ("submit", "skip") else LOAD_FAILED)
            st.session_state[self.at] = self.queue[index].assignment_id
            return
        if action.item != item_key:
            # Sent from a form drawn for another item (it was answered late): act on nothing,
            # and say so, so the rater presses again on the item now shown.
            st.session_state[self.flash + ":error"] = (
                "Not done: that key was meant for another item than this one. Press it again here."
            )
            return
        item = self.queue[index]
        if action.do == "back":
            self.go_to(previous_index(self.queue, index))
        elif action.do == "forward":
            self.go_to(index + 1 if index + 1 < len(self.queue) else None)
        elif action.do == "goto":
            self.go_to(self.index_of(action.to))
        elif action.do == "skip":
            try:
                self.store.skip_item(self.rater_id, item.assignment_id, self.kind)
            except Exception as exc:  # a full disk, a read-only file: the admin's to read, not the rater's
                self.failed(exc, "skip")
                return
            st.session_state[self.at] = None
        elif action.do == "reveals":
            self.reveals(item, action)
        else:
            self.save(item, action, write, saved=saved, changed=changed)

    def reveals(self, item: QueueItem, action: Action) -> None:
        """The rater says the answer tells who wrote it: withhold it from every other rater, then go on.

        The comment box, if the rater wrote in it, is kept as their note for the admin. Refusals
        are said as a submit's are (:meth:`save`).
        """
        if self.kind != "score":
            st.session_state[self.flash + ":error"] = "Not done: W is for answers rated one at a time."
            return

        def write(act: Action) -> int:
            return self.store.flag_author(self.rater_id, item.assignment_id, note=act.comment,
                                          seconds=act.seconds, seen=item.done_id)

        self.save(item, action, write, saved=REVEALED, changed=REVEALED)

    def failed(self, exc: Exception, what: str, *, said: str = SAVE_FAILED) -> None:
        """Keep ``exc`` for the admin (server log, Overview) and say ``said`` at the Submit button.

        Asks the database nothing (it may be what failed): the rater's name is the one this
        session's token last proved.
        """
        page = {"score": "Rate", "pair": "Compare", "audit": "Padding audit"}[self.kind]
        record(exc, where=f"{page}: {what}", rater=known_rater_name())
        st.session_state[self.flash + ":error"] = said

    def save(self, item: QueueItem, action: Action, write: Write, *, saved: str, changed: str) -> None:
        """Store the action's values; say what happened and go on, or show the refusal and stay."""
        try:
            label_id = write(action)
        except AccessError:  # revoked since the check above: the write refused it
            refuse(not_saved=True, kept=kept(action))
            return
        except StaleLabelError as exc:
            # Another tab stored a label since this one drew the form: stay on the item, so the
            # next run draws the stored label, with the refusal at the Submit button.
            st.session_state[self.flash + ":error"] = str(exc)
            st.session_state[self.at] = item.assignment_id
            return
        except Exception as exc:
            if isinstance(exc, JudgelabError) and not isinstance(exc, StoreError):
                # The rater's own values or state (a score off the scale, a paused queue): theirs to read.
                st.session_state[self.flash + ":error"] = str(exc)
                return
            # The server's trouble (a full disk, a database turned read-only, a DuckDB error): the
            # path, the raw error and the fix go to the log and the admin's Overview; the rater gets
            # one sentence and stays on the item, whose form still holds what they gave.
            self.failed(exc, "submit")
            st.session_state[self.at] = item.assignment_id
            # Also shown to copy should the page stop offering the form (a file turned read-only).
            st.session_state[self.flash + ":kept"] = kept(action)
            return
        if item.done_id is None:
            message = saved
        elif label_id == item.done_id:
            message = "Nothing changed: your label is kept as it was."
        else:
            message = changed
        note = cut_note(action)
        st.session_state[self.flash] = f"{message.rstrip('.')}, but {note}." if note else message
        st.session_state[self.at] = None


def read_only_notice(store: RaterRole, flash: str) -> bool:
    """On a database open for reading only, say rating is paused (no form); whether it is.

    What the rater typed into a submit that failed meanwhile is shown to copy (their browser
    keeps it for the item too, :mod:`judgelab.views._form`).
    """
    typed = st.session_state.pop(flash + ":kept", "")
    if not store.read_only:
        return False
    st.info(READ_ONLY)
    if typed:
        st.caption("What you typed in your last answer, which was not saved, to copy:")
        st.code(typed, language=None, wrap_lines=True)
    return True


def load_screen(store: RaterRole, rater: Rater, kind: Kind, at: int | None) -> Screen | None:
    """The rater's screen (:meth:`~judgelab.labeler.store.Store.screen`), or ``None`` after saying it could not load.

    A database error is the admin's (kept with :func:`~judgelab.admin._incidents.record`); the rater
    reads :data:`~judgelab.admin._incidents.LOAD_FAILED`.
    """
    try:
        return store.screen(rater.rater_id, kind, at)
    except SERVER_TROUBLE as exc:
        record(exc, where=f"{kind} page: load", rater=rater.name)
        st.warning(LOAD_FAILED)
        return None


def kept(action: Action) -> str:
    """The text the rater typed into the form (comment, flag reason): shown with a refusal to copy."""
    return "\n\n".join(t for t in (action.comment.strip(), action.reason.strip() if action.flag else "") if t)


def inert_text(text: str, *, heading: str = "", rule: bool = False) -> None:
    """A task's or an answer's text under a bold ``heading`` (after a rule), shown verbatim.

    What raters see is what the judge reads: every character as written, nothing read as
    Markdown or HTML (:func:`~judgelab.labeler.blinding.verbatim_html`: no ``--`` turned into a
    dash, no ``$...$`` maths, line breaks and indentation kept, tags shown as text), so
    nothing runs and the browser fetches nothing an answer names. The heading is in the
    same element: a submit redraws every element of the item, and each one costs the
    browser a render. Each text is its own element.
    """
    lead = ("<hr>" if rule else "") + (f"<p><strong>{html.escape(heading)}</strong></p>" if heading else "")
    st.html(lead + verbatim_html(text))


#: Height of the text boxes of a queue page, as Rate's: at 1366x768 the page never scrolls.
TEXT_HEIGHT = 560
#: Height of the task's box beside the form on Compare and Padding audit.
TASK_HEIGHT = 170


def text_box(text: str, *, heading: str = "", height: int | None = None) -> None:
    """:func:`inert_text` in a bordered box; with a ``height`` (px) the box scrolls, not the page."""
    with st.container(border=True, height="content" if height is None else height):
        inert_text(text, heading=heading)


def side_by_side(left: tuple[str, str], right: tuple[str, str], *, height: int | None = None) -> None:
    """Two texts side by side, each given as ``(heading, markdown)`` (see :func:`text_box`)."""
    for col, (heading, text) in zip(st.columns(2, gap="small"), (left, right), strict=True):
        with col:
            text_box(text, heading=heading, height=height)


def two_texts_and_form(
    prompt: str, left: tuple[str, str], right: tuple[str, str], *, note: str = ""
) -> DeltaGenerator:
    """Compare's and Padding audit's one-screen layout; returns the column the form goes in.

    As on Rate, the texts scroll in bounded boxes and the question and Submit sit beside
    them, so at 1366x768 nothing needs the page to scroll: the two texts side by side on
    the left (two thirds), the task (its own scrolling box) and ``note`` above the form on
    the right.
    """
    texts, side = st.columns([2, 1], gap="medium")
    with texts:
        side_by_side(left, right, height=TEXT_HEIGHT)
    with side:
        text_box(prompt, heading="Task", height=TASK_HEIGHT)
        if note:
            st.caption(note)
    return side


def keys_help(choice: str, *, editing: bool) -> str:
    """The shortcut line under the form."""
    return (
        f"Keys: {choice} · Ctrl+Enter submit · B back · "
        + ("F forward" if editing else "S skip")
        + " · Esc leaves a text box. Letters and digits type normally in a text box."
    )
