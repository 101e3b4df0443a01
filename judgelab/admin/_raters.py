"""Inviting, reissuing and revoking raters."""


from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import pandas as pd

from judgelab.admin._common import BASE_URL_SETTING, DEFAULT_BASE_URL, display_name
from judgelab.admin._signin import DEFAULT_ADMIN_LINK_SECONDS, expiry, parse_duration
from judgelab.labeler.errors import InputError
from judgelab.labeler.store import PeopleRole, Rater

if TYPE_CHECKING:
    pass


# -- raters --------------------------------------------------------------------------


@dataclass(frozen=True)
class Invite:
    """A new rater and the link that lets them in (shown once; only its hash is stored)."""

    rater: Rater
    link: str
    #: When the link stops working (naive UTC), or ``None``.
    expires_at: datetime | None = None


def link_expiry(expires: str | None, *, admin: bool) -> datetime | None:
    """When a link made now stops working: ``expires`` (``12h``, ``7d``, ``never``), else the default.

    Admin links last :data:`~judgelab.admin._signin.DEFAULT_ADMIN_LINK_SECONDS` (7 days) unless told
    otherwise: they open pages that are not blind. Rater links do not expire unless told.
    """
    if expires is None:
        return expiry(DEFAULT_ADMIN_LINK_SECONDS) if admin else None
    return expiry(parse_duration(expires))


def base_url(store: PeopleRole | None = None) -> str:
    """Where invite links point: ``$JUDGELAB_BASE_URL``, else where ``store`` was last served, else localhost:8501.

    ``judgelab serve`` sets the variable for the app and records the address in the project
    (:data:`BASE_URL_SETTING`), so a link made later matches the server even when its port moved.
    """
    recorded = store.setting("project", BASE_URL_SETTING) if store is not None else None
    return (os.environ.get("JUDGELAB_BASE_URL") or recorded or DEFAULT_BASE_URL).rstrip("/")


def invite_link(token: str, base: str | None = None) -> str:
    """The link that carries ``token`` to the app: ``{base}/?t={token}``."""
    root = (base or base_url()).rstrip("/")
    return f"{root}/?t={urllib.parse.quote(token, safe='')}"


def invite_rater(store: PeopleRole, name: str, *, admin: bool = False, base: str | None = None,
                 expires: str | None = None) -> Invite:
    """Create a rater (or admin) and return the invite link to send them (``expires``: :func:`link_expiry`)."""
    until = link_expiry(expires, admin=admin)
    rater, token = store.add_rater(name, role="admin" if admin else "rater", expires_at=until)
    return Invite(rater=rater, link=invite_link(token, base or base_url(store)), expires_at=until)


def reissue_link(store: PeopleRole, name: str, *, base: str | None = None, expires: str | None = None) -> str:
    """A new invite link for ``name``; the old one stops working (a revoked rater is let in again).

    ``expires`` as in :func:`link_expiry` (an admin's new link expires in 7 days unless told).
    """
    frame = store.raters()
    role = frame.loc[frame["name"] == name, "role"]
    until = link_expiry(expires, admin=bool(len(role)) and role.iloc[0] == "admin")
    return invite_link(store.reissue_token(name, expires_at=until), base or base_url(store))


def revoke_rater(store: PeopleRole, name: str, *, acting: Rater | None = None) -> None:
    """Stop ``name``'s link from working; their labels stay.

    Args:
        store: The project store.
        name: The rater to revoke.
        acting: The admin doing it; an admin cannot revoke themselves (they would
            lock themselves out of the page they are on).

    Raises:
        InputError: No active rater of that name, or ``name`` is ``acting``.
    """
    if acting is not None and acting.name == name:
        raise InputError(
            "you cannot revoke your own link from the app",
            fix="ask another admin, or use `judgelab raters revoke NAME`.",
        )
    store.revoke_rater(name)


def rater_table(store: PeopleRole) -> pd.DataFrame:
    """Every rater for the Raters page. Never a token or its hash.

    Returns:
        ``rater`` (display name), ``name``, ``role``, ``status`` (``active``,
        ``revoked``, or ``no link (imported)`` for raters who came with imported
        labels), ``simulated``, ``created_at``, ``revoked_at``.
    """
    frame = store.raters()
    if frame.empty:
        return pd.DataFrame(columns=["rater", "name", "role", "status", "simulated", "created_at",
                                     "revoked_at"])
    frame["rater"] = [display_name(n, bool(s)) for n, s in zip(frame["name"], frame["simulated"],
                                                                 strict=True)]
    # Raters created by an import never had a link: their revoked_at is set in the same
    # transaction that creates them, so it equals created_at (DuckDB's current_timestamp
    # is the transaction's start). A real revoke happens in a later transaction.
    never = frame["revoked_at"].notna() & (frame["revoked_at"] == frame["created_at"])
    frame["status"] = frame["active"].map({True: "active", False: "revoked"})
    frame.loc[never, "status"] = "no link (imported)"
    return frame[["rater", "name", "role", "status", "simulated", "created_at", "revoked_at"]]


