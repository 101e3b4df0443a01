"""Who is acting: the name the audit trail records with each admin action (:mod:`judgelab.labeler.store._audit`).

Kept apart from the store so the command line can name its actor without loading the store's
libraries (``judgelab --help`` stays light).
"""

from __future__ import annotations

import getpass
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["acting_as", "current_actor", "os_user", "set_actor_source"]

_acting: ContextVar[str | None] = ContextVar("judgelab_actor", default=None)
_source: list[Callable[[], str | None]] = []


def os_user() -> str:
    """The operating-system user running this process (``unknown`` when it has no name)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a container's uid with no passwd entry
        return "unknown"


@contextmanager
def acting_as(actor: str) -> Iterator[None]:
    """Record every action inside the block (on this thread) as done by ``actor``."""
    token = _acting.set(actor)
    try:
        yield
    finally:
        _acting.reset(token)


def set_actor_source(source: Callable[[], str | None] | None) -> None:
    """Name the process's fallback actor: ``source()`` is asked at each write (``None`` from it: not known).

    The app registers one that names the admin signed in to the current session; ``None`` removes it.
    """
    _source.clear()
    if source is not None:
        _source.append(source)


def current_actor() -> str:
    """Who the action being written now is by.

    The innermost :func:`acting_as` of this thread (the CLI opens one around each command: ``cli:<user>``),
    else what the process's source names (the app: ``admin:<name>`` of the session's signed-in admin), else
    ``os:<user>`` (a library call from one's own program).
    """
    explicit = _acting.get()
    if explicit:
        return explicit
    for source in _source:
        found = source()
        if found:
            return found
    return f"os:{os_user()}"
