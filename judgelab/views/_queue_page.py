"""What the rater queue pages (Rate, Compare, Padding audit) share.

The header (the last save's toast, the progress bar, the finished screen), the saved /
error flash, skipping, and the Back / Skip-or-Forward / Submit row. Not a page itself:
``app.py`` lists pages by name and this file is not one of them.

Blinding: nothing here keys a widget on anything but its label; navigation carries only
the assignment id (a sequence number) of a queue position.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import streamlit as st

from labeler.blinding import inert_markdown
from labeler.errors import JudgelabError
from labeler.queue import KEYS, Kind, QueueItem, previous_index
from labeler.store import Store


@dataclass(frozen=True)
class QueuePage:
    """One render of a queue page: the rater's queue and the page's session-state keys.

    Attributes:
        store: The project store.
        rater_id: The rater whose queue it is.
        kind: ``"score"``, ``"pair"`` or ``"audit"``.
        queue: The rater's items of this kind in queue order (not empty).
        at: Session key of the assignment the rater went back to (``None``: resume).
        flash: Session key of the message the next run toasts; ``flash + ":error"``
            holds the error it shows above the buttons.
    """

    store: Store
    rater_id: int
    kind: Kind
    queue: Sequence[QueueItem]
    at: str
    flash: str

    def go_to(self, i: int | None) -> None:
        """Open queue position ``i`` (``None``: the resume position)."""
        st.session_state[self.at] = None if i is None else self.queue[i].assignment_id

    def header(self, index: int | None, finished: str, *, back_help: str | None = None) -> int:
        """Toast the last save and show progress.

        On the finished screen (``index`` is ``None``) say ``finished``, offer Back to the last
        item, and stop the page.

        Returns:
            ``index``, when there is an item to show.
        """
        if self.flash in st.session_state:
            st.toast(st.session_state.pop(self.flash), icon=":material/check:")
        done = sum(1 for item in self.queue if item.done)
        st.progress(done / len(self.queue), text=f"**{done} of {len(self.queue)}** done")
        if index is None:
            st.success(finished)
            st.button(
                "Back", shortcut=KEYS["back"], on_click=self.go_to,
                args=(previous_index(self.queue, None),), help=back_help,
            )
            st.stop()
        return index

    def fail(self, message: str) -> None:
        """Show ``message`` as an error above the buttons on the next run."""
        st.session_state[self.flash + ":error"] = message

    def save(self, write: Callable[[], object], message: str) -> None:
        """Run the store write ``write``.

        On success toast ``message`` and go to the resume position, on a :class:`JudgelabError` show
        it and stay.
        """
        try:
            write()
        except JudgelabError as exc:
            self.fail(str(exc))
            return
        st.session_state[self.flash] = message
        st.session_state[self.at] = None

    def skip(self, assignment_id: int) -> None:
        """Skip the item (it comes back at the end) and go to the resume position."""
        self.store.skip_item(self.rater_id, assignment_id, self.kind)
        st.session_state[self.at] = None

    def buttons(self, index: int, *, editing: bool, submit: Callable[[], None]) -> None:
        """The pending error, then the navigation buttons with their shortcuts.

        Back, Skip (Forward when ``editing`` a done item) and Submit, with the
        :data:`~labeler.queue.KEYS` shortcuts.
        """
        if self.flash + ":error" in st.session_state:
            st.error(st.session_state.pop(self.flash + ":error"))
        back_col, skip_col, submit_col = st.columns([1, 1, 2])
        back_to = previous_index(self.queue, index)
        back_col.button(
            "Back", shortcut=KEYS["back"], on_click=self.go_to, args=(back_to,),
            disabled=back_to is None, width="stretch",
        )
        if editing:
            # Came back to a done item: move on without changing it.
            skip_col.button(
                "Forward", shortcut=KEYS["forward"], on_click=self.go_to,
                args=(index + 1 if index + 1 < len(self.queue) else None,), width="stretch",
            )
        else:
            skip_col.button(
                "Skip", shortcut=KEYS["skip"], on_click=self.skip,
                args=(self.queue[index].assignment_id,), width="stretch",
            )
        submit_col.button(
            "Submit", type="primary", shortcut=KEYS["submit"], on_click=submit, width="stretch"
        )


def text_box(text: str) -> None:
    """A task's or an answer's text in a bordered box, rendered inert.

    Markdown renders, HTML never runs (``unsafe_allow_html=False`` shows tags as text) and
    images show as text (:func:`~labeler.blinding.inert_markdown`), so the browser fetches
    nothing an answer names.
    """
    with st.container(border=True):
        st.markdown(inert_markdown(text), unsafe_allow_html=False)


def side_by_side(left: tuple[str, str], right: tuple[str, str]) -> None:
    """Two texts side by side, each given as ``(heading, markdown)`` (see :func:`text_box`)."""
    for col, (heading, text) in zip(st.columns(2, gap="large"), (left, right), strict=True):
        with col:
            st.subheader(heading)
            text_box(text)
