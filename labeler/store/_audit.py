"""The audit trail: who did which admin action, when (migration 021, issue 57 point 3).

Each store method that an admin's action goes through (import, assign, revoke, adjudicate, pause,
settings, withholding, ...) writes one ``audit_log`` row with :func:`audit` *inside its own unit of
work*: the row commits with the action or rolls back with it, so an action that fails is never
logged as done and one that is done is never missing. The CLI and the admin pages call the same
store methods, so both log through this one path.

Who is acting is not a parameter of every method: it is read, at the moment of the write, from
:func:`judgelab.labeler._actor.current_actor`:

1. :func:`~judgelab.labeler._actor.acting_as`, a context (thread-local, so two app sessions never
   mix) that the CLI opens around each command (``cli:<os user>``);
2. else the process's actor source (:func:`~judgelab.labeler._actor.set_actor_source`), which the
   app registers to name the signed-in admin of the current Streamlit session (``admin:<name>``);
3. else ``os:<os user>``: a library call from a program of one's own.

Raters' own actions (labels, flags, skips) are not logged here: the labels tables hold them, each
with its rater and time.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pandas as pd

from judgelab.labeler._actor import current_actor
from judgelab.labeler.store._core import StoreCore

#: Every action the trail records, with what it means (the admin page and docs list these).
AUDIT_ACTIONS: dict[str, str] = {
    "import": "rows imported (rubric, answers, pairs, labels, audits, judgements, designs)",
    "gold import": "gold items and attention checks imported",
    "assign": "answers, pairs or audits given to raters",
    "design": "a sample or active design saved",
    "rater add": "a rater or admin invited",
    "rater reissue": "a new invite link issued (the old one stops working)",
    "rater email": "a rater's sign-in address set or taken away",
    "crowd study": "a crowd study's link made (quota, time limit, completion)",
    "crowd close": "a crowd study's link closed",
    "revoke": "a rater's link revoked",
    "pause": "a rater paused",
    "resume": "a paused rater resumed",
    "adjudicate": "an adjudicated label given",
    "withhold": "answers withheld by the judge's author screen",
    "mask": "a withheld answer's shown text edited",
    "clear": "a withheld answer given back as it was",
    "setting": "a project, rubric or quality setting changed",
    "export": "rows exported to a file",
    "db copy": "the project copied into this database",
}


def audit(con: Any, action: str, target: str = "", **detail: Any) -> None:
    """Write one audit row on ``con``, the connection of the unit of work doing the action.

    Args:
        con: The open unit of work's connection (the row commits or rolls back with it).
        action: One of :data:`AUDIT_ACTIONS`.
        target: What the action was on (a rater's name, an answer id, a file).
        **detail: Facts worth keeping (counts, reasons); stored as a JSON object, ``None`` left out.
    """
    assert action in AUDIT_ACTIONS, action
    facts = {k: v for k, v in detail.items() if v is not None}
    con.execute("INSERT INTO audit_log (actor, action, target, detail) VALUES (?, ?, ?, ?)",
                [current_actor(), action, target, json.dumps(facts, sort_keys=True, default=str)])


class AuditMixin(StoreCore):
    """Reads the audit trail, and records actions that are not a store write (an export)."""

    def record_action(self, action: str, target: str = "", **detail: Any) -> None:
        """Record an action the store did not write itself (an export written to a file).

        A read-only database records nothing (its exports still work: nothing could be written).
        """
        if action not in AUDIT_ACTIONS:
            raise ValueError(f"record_action: unknown action {action!r}; expected one of {', '.join(AUDIT_ACTIONS)}")
        if self.read_only:
            return
        with self.connection() as con:
            audit(con, action, target, **detail)

    def audit_log(self, *, since: datetime | None = None, action: str | None = None) -> pd.DataFrame:
        """The audit trail, oldest first: ``entry_id, done_at, actor, action, target, detail`` (a JSON text).

        Args:
            since: Only rows at or after this time (the database's clock).
            action: Only rows of this action.
        """
        where: list[str] = []
        params: list[Any] = []
        if since is not None:
            where.append("done_at >= ?")
            params.append(since)
        if action is not None:
            where.append("action = ?")
            params.append(action)
        sql = "SELECT entry_id, done_at, actor, action, target, detail FROM audit_log"
        return self.query(sql + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY entry_id", params)


def audit_import(con: Any, added: dict[str, int], unchanged: dict[str, int], source_file: str | None,
                 *, action: str = "import") -> None:
    """Record an import that added rows (one that added nothing changed nothing, and is not an action)."""
    if any(added.values()):
        audit(con, action, source_file or "", added={k: n for k, n in added.items() if n},
              unchanged={k: n for k, n in unchanged.items() if n} or None)


def audit_setting(con: Any, scope: str, key: str, value: str) -> None:
    """Record a setting about to be written, when it changes (call before the write)."""
    row = con.execute("SELECT value FROM settings WHERE scope = ? AND key = ?", [scope, key]).fetchone()
    old = None if row is None else str(row[0])
    if old != value:
        audit(con, "setting", f"{scope}:{key}", value=value, was=old)
