"""Raters and their invite tokens. Only a SHA-256 hash of a token is ever stored."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Literal

import duckdb
import pandas as pd

from labeler.errors import AccessError, InputError
from labeler.store._audit import audit
from labeler.store._core import StoreCore

Role = Literal["rater", "admin"]


def hash_token(token: str) -> str:
    """SHA-256 of an invite token. Tokens carry 256 random bits, so a fast hash is enough."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


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

    def add_rater(self, name: str, *, role: Role = "rater", simulated: bool = False) -> tuple[Rater, str]:
        """Create a rater and return it with its invite token (shown once, stored hashed)."""
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
                "INSERT INTO raters (name, role, token_hash, simulated) VALUES (?, ?, ?, ?)"
                " RETURNING rater_id",
                [name, role, hash_token(token), simulated],
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
                "SELECT rater_id, name, role, simulated, revoked_at, token_hash FROM raters"
                " WHERE token_hash = ?",
                [digest],
            ).fetchone()
        if row is None or not hmac.compare_digest(str(row[5]), digest):
            raise AccessError("this invite link is not valid. Ask your admin for a new one.")
        if row[4] is not None:
            raise AccessError("this invite link was revoked. Ask your admin for a new one.")
        return Rater(int(row[0]), str(row[1]), row[2], bool(row[3]))

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

    def reissue_token(self, name: str) -> str:
        """A fresh token for an existing rater (the old one stops working)."""
        token = secrets.token_urlsafe(32)
        with self.connection() as con:
            row = con.execute(
                "UPDATE raters SET token_hash = ?, revoked_at = NULL WHERE name = ? RETURNING rater_id",
                [hash_token(token), name],
            ).fetchone()
            if row is None:
                raise InputError(f"no rater named {name!r}", fix="see `judgelab raters list`.")
            audit(con, "rater reissue", name)
        return token

    def raters(self) -> pd.DataFrame:
        """All raters (never their token hashes)."""
        return self.query(
            "SELECT rater_id, name, role, simulated, created_at, revoked_at,"
            " revoked_at IS NULL AS active FROM raters ORDER BY rater_id"
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
