"""Admins (and in-house raters) who sign in with an OpenID Connect provider, and links that expire.

The app signs people in through Streamlit's own ``st.login`` (Authlib underneath), with any
OpenID Connect provider: Google, Microsoft Entra ID, Okta, Keycloak. Who may open the admin pages
is the project's *admin list*, kept in the database's settings: e-mail addresses, and groups read
from one claim of the ID token (``groups`` unless the project names another). A rater mapped to an
e-mail (``judgelab raters email NAME ADDRESS``) signs in the same way and gets the rater pages.

A sign-in lasts the project's session length (12 hours unless set), counted from when the
provider issued the ID token (``iat``): Streamlit's own cookie lasts 30 days, too long for the
pages that are not blind.

The provider's settings never enter the database: ``judgelab serve`` takes them from its options,
its environment or a file (:func:`provider_settings`) and hands Streamlit an ``[auth]`` section
(:func:`auth_section`) in a secrets file of its own (:mod:`judgelab.cli._streamlit`).
"""

from __future__ import annotations

import json
import re
import secrets
import time
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from judgelab.labeler.errors import AccessError, InputError
from judgelab.labeler.store import AdminRole, Rater
from judgelab.labeler.store._raters import normal_email, utc_now

ADMIN_EMAILS_SETTING = "admin_emails"
ADMIN_GROUPS_SETTING = "admin_groups"
GROUP_CLAIM_SETTING = "admin_group_claim"
SESSION_SETTING = "sign_in_seconds"
#: The claim groups are read from unless the project names another (Okta, Keycloak, Entra ID).
DEFAULT_GROUP_CLAIM = "groups"
#: How long a sign-in lasts unless the project says otherwise.
DEFAULT_SESSION_SECONDS = 12 * 3600
#: How long an admin link lasts unless ``--expires`` says otherwise.
DEFAULT_ADMIN_LINK_SECONDS = 7 * 24 * 3600
#: The variable ``judgelab serve`` hands the provider settings to the launcher in (JSON).
AUTH_ENV = "JUDGELAB_SIGN_IN_AUTH"

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$", re.IGNORECASE)


class SignInExpired(AccessError):
    """The person signed in, longer ago than the project's session length."""


def parse_duration(text: str, *, option: str = "--expires") -> int | None:
    """Seconds in ``text`` (``90s``, ``30m``, ``12h``, ``7d``, ``2w``); ``None`` for ``never``.

    >>> parse_duration("12h"), parse_duration("7d"), parse_duration("never")
    (43200, 604800, None)

    Raises:
        InputError: Not a number with one of the units s, m, h, d, w (or ``never``), or zero.
    """
    if text.strip().lower() == "never":
        return None
    found = _DURATION.match(text)
    seconds = int(found.group(1)) * _UNITS[found.group(2).lower()] if found else 0
    if seconds <= 0:
        raise InputError(f"{option} {text!r} is not a duration",
                         fix=f"give a number and a unit, e.g. {option} 12h (s, m, h, d or w), or 'never'.")
    return seconds


def expiry(seconds: int | None) -> datetime | None:
    """When a link made now with a lifetime of ``seconds`` stops working (naive UTC; ``None``: never)."""
    return None if seconds is None else utc_now() + timedelta(seconds=seconds)


# -- the admin list ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AdminList:
    """Who may open the admin pages by signing in, and how long a sign-in lasts."""

    emails: tuple[str, ...]
    groups: tuple[str, ...]
    group_claim: str
    session_seconds: int

    def allows(self, claims: Mapping[str, Any]) -> bool:
        """Whether an ID token's ``claims`` name a listed e-mail or a listed group."""
        email = str(claims.get("email") or "").strip().lower()
        if email and email in self.emails:
            return True
        groups = claims.get(self.group_claim)
        if isinstance(groups, str):
            groups = [groups]
        return isinstance(groups, list) and any(str(g) in self.groups for g in groups)

    def as_dict(self) -> dict[str, Any]:
        """For ``--json``."""
        return {"emails": list(self.emails), "groups": list(self.groups), "group_claim": self.group_claim,
                "session_seconds": self.session_seconds}


def _names(store: AdminRole, key: str) -> tuple[str, ...]:
    raw = store.setting("project", key)
    return tuple(json.loads(raw)) if raw else ()


def admin_list(store: AdminRole) -> AdminList:
    """The project's admin list (empty until ``judgelab admins allow``)."""
    session = store.setting("project", SESSION_SETTING)
    return AdminList(
        emails=_names(store, ADMIN_EMAILS_SETTING),
        groups=_names(store, ADMIN_GROUPS_SETTING),
        group_claim=store.setting("project", GROUP_CLAIM_SETTING) or DEFAULT_GROUP_CLAIM,
        session_seconds=int(session) if session else DEFAULT_SESSION_SECONDS,
    )


def _store_names(store: AdminRole, key: str, names: Iterable[str]) -> None:
    store.set_setting("project", key, json.dumps(sorted(set(names))))


def change_admins(store: AdminRole, *, emails: Iterable[str] = (), groups: Iterable[str] = (),
                  remove: bool = False) -> AdminList:
    """Add ``emails`` and ``groups`` to the admin list (or, with ``remove``, take them off it).

    Raises:
        InputError: An address is not an e-mail, a group is empty, or (removing) one is not listed.
    """
    now = admin_list(store)
    wanted_emails = [normal_email(e) for e in emails]
    wanted_groups = [g.strip() for g in groups]
    if any(not g for g in wanted_groups):
        raise InputError("a group needs a name", fix="give it as the provider's group claim holds it.")
    if remove:
        missing = [e for e in wanted_emails if e not in now.emails] + [g for g in wanted_groups if g not in now.groups]
        if missing:
            raise InputError(f"not on the admin list: {', '.join(missing)}", fix="see `judgelab admins list`.")
        _store_names(store, ADMIN_EMAILS_SETTING, set(now.emails) - set(wanted_emails))
        _store_names(store, ADMIN_GROUPS_SETTING, set(now.groups) - set(wanted_groups))
    else:
        _store_names(store, ADMIN_EMAILS_SETTING, {*now.emails, *wanted_emails})
        _store_names(store, ADMIN_GROUPS_SETTING, {*now.groups, *wanted_groups})
    return admin_list(store)


def set_sign_in(store: AdminRole, *, group_claim: str | None = None, session_seconds: int | None = None) -> AdminList:
    """Name the claim groups are read from, and how long a sign-in lasts."""
    if group_claim is not None:
        if not group_claim.strip():
            raise InputError("--group-claim needs a claim name", fix="e.g. --group-claim groups (or roles).")
        store.set_setting("project", GROUP_CLAIM_SETTING, group_claim.strip())
    if session_seconds is not None:
        store.set_setting("project", SESSION_SETTING, str(session_seconds))
    return admin_list(store)


def resolve_sign_in(store: AdminRole, claims: Mapping[str, Any], *, now: float | None = None) -> Rater:
    """Who the signed-in person with ID token ``claims`` is in this project.

    An admin when the admin list names their e-mail or one of their groups; else the rater mapped
    to their e-mail. Checked on every page, so taking someone off the list takes effect at once.

    Raises:
        SignInExpired: The ID token was issued longer ago than the project's session length.
        AccessError: No verified e-mail in the claims, or neither an admin nor a mapped rater.
    """
    admins = admin_list(store)
    issued = claims.get("iat")
    now = time.time() if now is None else now
    if not isinstance(issued, int | float) or now - float(issued) > admins.session_seconds:
        raise SignInExpired("your sign-in has expired. Sign in again.")
    email = str(claims.get("email") or "").strip()
    if not email or claims.get("email_verified") is False:
        raise AccessError("your provider sent no verified e-mail address, so this project cannot tell who you are. "
                          "Ask your admin.")
    try:
        rater = store.signed_in_rater(email, admin=admins.allows(claims))
    except InputError as exc:
        raise AccessError(f"{email} is not an e-mail address this project can use. Ask your admin.") from exc
    if rater is None:
        raise AccessError(f"{email} is not on this project's admin list, nor a rater here. "
                          "Ask an admin to add you (`judgelab admins allow`).")
    return rater


# -- the provider -----------------------------------------------------------------------------

_PROVIDER_KEYS = ("server_metadata_url", "client_id", "client_secret", "cookie_secret")
_WELL_KNOWN = "/.well-known/openid-configuration"


@dataclass(frozen=True)
class Provider:
    """An OpenID Connect provider as ``judgelab serve`` hands it to Streamlit."""

    server_metadata_url: str
    client_id: str
    client_secret: str
    cookie_secret: str
    #: Whether the cookie secret was made for this start (sign-ins then end when the server stops).
    cookie_secret_made: bool
    scope: str = "openid email profile"


def provider_settings(file: str | Path | None = None, **given: str | None) -> Provider | None:
    """The provider from ``file`` (a TOML file: the keys at its top or in ``[auth]``), then ``given``.

    ``given`` (from options or the environment) outranks the file: ``server_metadata_url`` (an
    issuer URL is completed with ``/.well-known/openid-configuration``), ``client_id``,
    ``client_secret``, ``cookie_secret`` (made at random when missing), ``scope``.

    Returns:
        ``None`` when nothing names a provider (the app then signs nobody in).

    Raises:
        InputError: The file cannot be read, or the settings are incomplete or not a URL.
    """
    found: dict[str, Any] = {}
    if file is not None:
        try:
            loaded = tomllib.loads(Path(file).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise InputError(f"cannot read the sign-in settings in {file}: {exc}",
                             fix="give a TOML file with server_metadata_url, client_id and client_secret.") from exc
        section = loaded.get("auth", loaded)
        found = {k: section[k] for k in (*_PROVIDER_KEYS, "scope") if section.get(k)}
        scope = (section.get("client_kwargs") or {}).get("scope")
        if scope and "scope" not in found:
            found["scope"] = scope
    found.update({k: v for k, v in given.items() if v})
    if not found.get("server_metadata_url") and not found.get("client_id"):
        return None
    missing = [k for k in ("server_metadata_url", "client_id", "client_secret") if not found.get(k)]
    if missing:
        flags = ", ".join(f"--oidc-{k.replace('_', '-').replace('server-', '')}" for k in missing)
        raise InputError(f"the sign-in provider's settings lack {', '.join(missing)}",
                         fix=f"pass {flags} (or the JUDGELAB_OIDC_* variables, or --oidc-file); see "
                             "docs/admins/sign-in.md.")
    url = str(found["server_metadata_url"]).strip()
    if not re.match(r"^https?://[^/\s]+", url):
        raise InputError(f"--oidc-metadata-url {url!r} is not an http(s) address",
                         fix="give the provider's issuer, e.g. https://accounts.google.com.")
    if not url.rstrip("/").endswith(_WELL_KNOWN):
        url = url.rstrip("/") + _WELL_KNOWN
    cookie = str(found.get("cookie_secret") or "")
    return Provider(url, str(found["client_id"]), str(found["client_secret"]),
                    cookie or secrets.token_urlsafe(32), not cookie,
                    str(found.get("scope") or "openid email profile"))


def redirect_uri(base: str) -> str:
    """The address the provider sends people back to: register it with the provider."""
    return f"{base.rstrip('/')}/oauth2callback"


def auth_section(provider: Provider, base: str) -> dict[str, Any]:
    """Streamlit's ``[auth]`` secrets section for ``provider`` served at ``base``."""
    return {"redirect_uri": redirect_uri(base), "cookie_secret": provider.cookie_secret,
            "client_id": provider.client_id, "client_secret": provider.client_secret,
            "server_metadata_url": provider.server_metadata_url,
            "client_kwargs": {"scope": provider.scope}}


def secrets_toml(auth: Mapping[str, Any]) -> str:
    r"""``auth`` as a ``secrets.toml`` holding one ``[auth]`` table (strings and one nested table).

    >>> print(secrets_toml({"client_id": 'a"b', "client_kwargs": {"scope": "openid"}}))
    [auth]
    client_id = "a\"b"
    <BLANKLINE>
    [auth.client_kwargs]
    scope = "openid"
    <BLANKLINE>
    """
    # A JSON string is a TOML basic string (same escapes), so no TOML writer is needed.
    plain = [f"{k} = {json.dumps(str(v))}" for k, v in auth.items() if not isinstance(v, Mapping)]
    lines = ["[auth]", *plain, ""]
    for key, table in auth.items():
        if isinstance(table, Mapping):
            lines += [f"[auth.{key}]", *(f"{k} = {json.dumps(str(v))}" for k, v in table.items()), ""]
    return "\n".join(lines)
