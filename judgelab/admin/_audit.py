"""The audit trail as the Audit page and ``judgelab audit`` show it (issue 57 point 3).

The rows are the store's (:mod:`judgelab.labeler.store._audit`); here they become a table a person reads
(one sentence of facts per row) and records a program reads (the facts as a JSON object).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from judgelab.labeler.store import AUDIT_ACTIONS
from judgelab.labeler.store.roles import AuditTrail

#: The Audit page's and ``judgelab audit``'s columns, in order.
AUDIT_COLUMNS = ("when", "actor", "action", "target", "detail")


def audit_records(store: AuditTrail, *, action: str | None = None, actor: str | None = None) -> list[dict[str, Any]]:
    """Every audit entry, oldest first, as ``judgelab audit --json`` prints them.

    Each is ``entry_id, done_at`` (ISO text), ``actor, action, target, detail`` (an object).

    Args:
        store: The project store.
        action: Only entries of this action (one of :data:`~judgelab.labeler.store.AUDIT_ACTIONS`).
        actor: Only entries by this actor (e.g. ``cli:alice``, ``admin:bob``).

    Raises:
        ValueError: ``action`` is not an action the trail records.
    """
    frame = _entries(store, action, actor)
    return [{"entry_id": int(r.entry_id), "done_at": pd.Timestamp(r.done_at).isoformat(), "actor": str(r.actor),
             "action": str(r.action), "target": str(r.target), "detail": json.loads(str(r.detail) or "{}")}
            for r in frame.itertuples(index=False)]


def audit_table(store: AuditTrail, *, action: str | None = None, actor: str | None = None) -> pd.DataFrame:
    """Every audit entry, newest first, as the Audit page shows it: :data:`AUDIT_COLUMNS`.

    ``detail`` is the facts as ``key: value`` text (``added: alice 3, bob 2``), not JSON.
    """
    frame = _entries(store, action, actor).iloc[::-1]
    return pd.DataFrame({
        "when": [pd.Timestamp(t).strftime("%Y-%m-%d %H:%M:%S") for t in frame["done_at"]],
        "actor": frame["actor"].astype(str).tolist(),
        "action": frame["action"].astype(str).tolist(),
        "target": frame["target"].astype(str).tolist(),
        "detail": [describe(json.loads(str(d) or "{}")) for d in frame["detail"]],
    }, columns=list(AUDIT_COLUMNS))


def describe(detail: dict[str, Any]) -> str:
    """An entry's facts as one line: ``added: alice 3, bob 2; items: 5``."""
    parts = []
    for key, value in detail.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        elif isinstance(value, list):
            value = ", ".join(map(str, value))
        parts.append(f"{key}: {value}")
    return "; ".join(parts)


def _entries(store: AuditTrail, action: str | None, actor: str | None) -> pd.DataFrame:
    if action is not None and action not in AUDIT_ACTIONS:
        raise ValueError(f"audit: unknown action {action!r}; expected one of {', '.join(AUDIT_ACTIONS)}")
    frame = store.audit_log(action=action)
    return frame if actor is None else frame[frame["actor"] == actor]
