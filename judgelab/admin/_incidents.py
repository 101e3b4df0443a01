"""Server errors raters must not see: kept for the admin's Overview and written to the server log.

A full disk, a database turned read-only, a file that will not open: the message that explains it
names the database's path and the command that fixes it, which is the admin's business. A rater
is told one plain sentence (:data:`SAVE_FAILED`, :data:`LOAD_FAILED`); :func:`record` writes the
details to the server's log (logger ``judgelab.app``, at ERROR, with the traceback) and keeps the
last :data:`KEEP` of them in this process for the Overview page's "Recent server errors".

The list lives in the server's memory, not in the database: the database is what failed.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = [
    "LOAD_FAILED",
    "READ_ONLY",
    "SAVE_FAILED",
    "Incident",
    "clear",
    "recent",
    "record",
]

#: What a rater reads when their submit could not be stored (the form keeps their answer).
SAVE_FAILED = "Could not save; your answer is kept in the form; try again shortly or tell your admin."
#: What a rater reads when their page could not be loaded.
LOAD_FAILED = "Could not load this page just now; try again shortly (reload the page) or tell your admin."
#: What a rater reads on a rating page while the database is open for reading only.
READ_ONLY = ("Rating is paused: the project is open for reading only right now, so no answer can be saved. "
             "Everything you rated before is kept. Please tell your admin.")
#: How many incidents the Overview lists (the log has every one).
KEEP = 50

LOG = logging.getLogger("judgelab.app")


@dataclass(frozen=True)
class Incident:
    """One error kept from a rater.

    Attributes:
        at: When it happened (UTC).
        where: What was being done (``Rate: submit``).
        rater: The name of the person it happened to (``""``: not known yet).
        detail: The full message, with the path and the fix.
    """

    at: datetime
    where: str
    rater: str
    detail: str


_recent: deque[Incident] = deque(maxlen=KEEP)
_lock = threading.Lock()


def record(exc: BaseException, *, where: str, rater: str = "") -> Incident:
    """Log ``exc`` with its traceback and keep it for the Overview; returns what was kept."""
    incident = Incident(datetime.now(UTC), where, rater, str(exc) or type(exc).__name__)
    LOG.error("%s failed for %s: %s", where, rater or "an unknown user", incident.detail, exc_info=exc)
    with _lock:
        _recent.append(incident)
    return incident


def recent() -> list[Incident]:
    """The incidents kept, newest first."""
    with _lock:
        return list(reversed(_recent))


def clear() -> None:
    """Forget the kept incidents (the Overview's "Clear" button; the log keeps them)."""
    with _lock:
        _recent.clear()
