"""Raters and their invite tokens. Only a SHA-256 hash of a token is ever stored.

A rater may also be mapped to an e-mail address and sign in with the project's OpenID Connect
provider instead of a link (:meth:`RaterMixin.signed_in_rater`); a link may expire
(``expires_at``, naive UTC like every timestamp the store compares in Python).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import duckdb
import pandas as pd

from judgelab.labeler._actor import acting_as
from judgelab.labeler.errors import AccessError, InputError
from judgelab.labeler.store._audit import audit
from judgelab.labeler.store._core import StoreCore

Role = Literal["rater", "admin"]


def hash_token(token: str) -> str:
    """SHA-256 of an invite token. Tokens carry 256 random bits, so a fast hash is enough."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def utc_now() -> datetime:
    """Now, in UTC without a time zone: how ``expires_at`` is stored on both back-ends."""
    return datetime.now(UTC).replace(tzinfo=None)


def _expired_text(when: datetime) -> str:
    return f"this link expired on {when:%Y-%m-%d %H:%M} UTC. Ask your admin for a new one."


def normal_email(email: str) -> str:
    """An e-mail address as the store keeps it: trimmed, lower case (providers differ in case).

    Raises:
        InputError: It is not ``name@domain``.
    """
    shown = email.strip().lower()
    local, at, domain = shown.partition("@")
    if not (local and at and "." in domain and not any(c.isspace() for c in shown)):
        raise InputError(f"{email!r} is not an e-mail address", fix="give it as name@example.com.")
    return shown


def rater_named(con: duckdb.DuckDBPyConnection, name: str) -> int | None:
    """The id of the rater called ``name``, or ``None``."""
    row = con.execute("SELECT rater_id FROM raters WHERE name = ?", [name]).fetchone()
    return None if row is None else int(row[0])


@dataclass(frozen=True)
class Rater:
    """A person who labels (or administers)."""

    rater_id: int
    name: str
    role: Role
    simulated: bool = False

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


class RaterMixin(StoreCore):
    """Creates, authenticates and revokes raters."""

    def add_rater(
        self, name: str, *, role: Role = "rater", simulated: bool = False, expires_at: datetime | None = None,
    ) -> tuple[Rater, str]:
        """Create a rater and return it with its invite token (shown once, stored hashed).

        ``expires_at``: when the link stops working (naive UTC; ``None``: never).
        """
        name = name.strip()
        if not name:
            raise InputError("a rater needs a non-empty name", fix="give a name, e.g. alice.")
        if role not in ("rater", "admin"):
            raise InputError(f"unknown role {role!r}", fix="use 'rater' or 'admin'.")
        token = secrets.token_urlsafe(32)
        with self.connection() as con:
            if con.execute("SELECT 1 FROM raters WHERE name = ?", [name]).fetchone():
                raise InputError(
                    f"a rater named {name!r} already exists",
                    fix="choose another name; to give this rater a new link, reissue it"
                    " (Raters page: New link, or `judgelab raters reissue NAME`).",
                )
            row = con.execute(
                "INSERT INTO raters (name, role, token_hash, simulated, expires_at) VALUES (?, ?, ?, ?, ?)"
                " RETURNING rater_id",
                [name, role, hash_token(token), simulated, expires_at],
            ).fetchone()
            audit(con, "rater add", name, role=role, simulated=simulated or None)
        assert row is not None
        return Rater(int(row[0]), name, role, simulated), token

    def authenticate(self, token: str | None) -> Rater:
        """The rater a token belongs to; raises :class:`AccessError` if unknown or revoked."""
        if not token:
            raise AccessError("no invite token: open the link your admin sent you.")
        digest = hash_token(token)
        with self.connection() as con:
            row = con.execute(
                "SELECT rater_id, name, role, simulated, revoked_at, token_hash, expires_at FROM raters"
                " WHERE token_hash = ?",
                [digest],
            ).fetchone()
        if row is None or not hmac.compare_digest(str(row[5]), digest):
            raise AccessError("this invite link is not valid. Ask your admin for a new one.")
        if row[4] is not None:
            raise AccessError("this invite link was revoked. Ask your admin for a new one.")
        if row[6] is not None and row[6] <= utc_now():
            raise AccessError(_expired_text(row[6]))
        return Rater(int(row[0]), str(row[1]), row[2], bool(row[3]))

    def signed_in_rater(self, email: str, *, admin: bool) -> Rater | None:
        """Who a person signed in with the project's provider as ``email`` is here.

        The rater mapped to ``email`` (:meth:`set_rater_email`), with the admin role exactly when
        ``admin`` (the project's admin list says so, whatever the row's role); an admin with no
        row yet gets one, named by the address, with no usable link (their adjudications and
        actions need a rater id). ``None``: neither mapped to a rater nor an admin (an admin's row
        whose address left the list included).

        Raises:
            AccessError: The rater mapped to ``email`` was revoked.
        """
        email = normal_email(email)
        with self.connection() as con:
            row = con.execute(
                "SELECT rater_id, name, role, simulated, revoked_at FROM raters WHERE email = ?"
                " ORDER BY rater_id LIMIT 1", [email],
            ).fetchone()
            if row is None and admin:
                taken = rater_named(con, email)
                if taken is not None:  # a rater named by this address before it was mapped
                    con.execute("UPDATE raters SET email = ? WHERE rater_id = ?", [email, taken])
                else:
                    con.execute(
                        "INSERT INTO raters (name, role, token_hash, email) VALUES (?, 'admin', ?, ?)",
                        [email, hash_token(secrets.token_urlsafe(32)), email],
                    )
                    # The admin list let them in; their first sign-in is who made their row.
                    with acting_as(f"admin:{email}"):
                        audit(con, "rater add", email, role="admin", via="sign-in")
                row = con.execute(
                    "SELECT rater_id, name, role, simulated, revoked_at FROM raters WHERE email = ?", [email]
                ).fetchone()
        # Signed in, the admin list alone makes an admin: an admin's row whose address left the list
        # is no rater either.
        if row is None or (not admin and row[2] == "admin"):
            return None
        if row[4] is not None:
            raise AccessError(f"access for {email} was revoked. Ask your admin.")
        return Rater(int(row[0]), str(row[1]), "admin" if admin else "rater", bool(row[3]))

    def set_rater_email(self, name: str, email: str | None) -> None:
        """Let rater ``name`` sign in as ``email`` (``None``: with their link only).

        Raises:
            InputError: No rater ``name``, or another rater has ``email``.
        """
        address = normal_email(email) if email else None
        with self.connection() as con:
            if address is not None:
                other = con.execute(
                    "SELECT name FROM raters WHERE email = ? AND name <> ?", [address, name]
                ).fetchone()
                if other is not None:
                    raise InputError(f"{address} already signs in as rater {other[0]!r}",
                                     fix=f"clear it first: `judgelab raters email {other[0]} --clear`.")
            row = con.execute(
                "UPDATE raters SET email = ? WHERE name = ? RETURNING rater_id", [address, name]
            ).fetchone()
            if row is not None:
                audit(con, "rater email", name, email=address or "(cleared)")
        if row is None:
            raise InputError(f"no rater named {name!r}", fix="see `judgelab raters list`.")

    def revoke_rater(self, name: str) -> None:
        """Revoke a rater's token; their labels stay."""
        with self.connection() as con:
            row = con.execute(
                "UPDATE raters SET revoked_at = current_timestamp WHERE name = ? AND revoked_at IS NULL"
                " RETURNING rater_id",
                [name],
            ).fetchone()
            if row is None:
                raise InputError(f"no active rater named {name!r}", fix="see `judgelab raters list`.")
            audit(con, "revoke", name)

    def reissue_token(self, name: str, *, expires_at: datetime | None = None) -> str:
        """A fresh token for an existing rater (the old one stops working); ``expires_at`` as in :meth:`add_rater`."""
        token = secrets.token_urlsafe(32)
        with self.connection() as con:
            row = con.execute(
                "UPDATE raters SET token_hash = ?, revoked_at = NULL, expires_at = ? WHERE name = ? RETURNING rater_id",
                [hash_token(token), expires_at, name],
            ).fetchone()
            if row is None:
                raise InputError(f"no rater named {name!r}", fix="see `judgelab raters list`.")
            audit(con, "rater reissue", name)
        return token

    def raters(self) -> pd.DataFrame:
        """All raters (never their token hashes)."""
        return self.query(
            "SELECT rater_id, name, role, simulated, created_at, revoked_at,"
            " revoked_at IS NULL AS active, email, expires_at FROM raters ORDER BY rater_id"
        )

    def rater_id_for(self, name: str, *, create: bool = False, simulated: bool = False) -> int:
        """The id of a rater by name; with ``create`` an unknown name becomes a rater with no usable link."""
        with self.connection() as con:
            found = rater_named(con, name)
            if found is not None:
                return found
            if not create:
                raise InputError(f"no rater named {name!r}", fix="see `judgelab raters list`.")
            # A random hash nobody holds the token for: imported raters cannot log in.
            made = con.execute(
                "INSERT INTO raters (name, role, token_hash, simulated, revoked_at)"
                " VALUES (?, 'rater', ?, ?, current_timestamp) RETURNING rater_id",
                [name, hash_token(secrets.token_urlsafe(32)), simulated],
            ).fetchone()
        assert made is not None
        return int(made[0])
