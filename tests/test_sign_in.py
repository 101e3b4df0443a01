"""Admins who sign in, rater e-mails, links that expire (issue 57, point 2), without a browser.

The browser walk through a real provider is tests/browser/test_sign_in.py.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.admin import invite_rater, reissue_link
from judgelab.admin._signin import (
    AUTH_ENV,
    SignInExpired,
    admin_list,
    auth_section,
    change_admins,
    parse_duration,
    provider_settings,
    resolve_sign_in,
    set_sign_in,
)
from judgelab.cli import main
from judgelab.cli._streamlit import use_sign_in
from judgelab.labeler.errors import AccessError, InputError
from judgelab.labeler.store import Store

NOW = 2_000_000_000.0


def claims(email: str, **more: object) -> dict[str, object]:
    return {"email": email, "iat": int(NOW) - 60, "is_logged_in": True, **more}


@pytest.mark.both_backends
def test_links_expire_and_reissue_sets_a_new_expiry(store: Store) -> None:
    _, old = store.add_rater("old", role="admin", expires_at=datetime(2001, 1, 1))
    with pytest.raises(AccessError, match="expired on 2001-01-01 00:00 UTC"):
        store.authenticate(old)
    _, fresh = store.add_rater("fresh", role="admin", expires_at=datetime.now() + timedelta(days=400))
    assert store.authenticate(fresh).is_admin
    token = store.reissue_token("old", expires_at=None)
    assert store.authenticate(token).name == "old"
    # The invite helpers: an admin's link lasts 7 days unless told; a rater's never expires.
    invite = invite_rater(store, "boss", admin=True)
    assert invite.expires_at is not None
    assert timedelta(days=6.99) < invite.expires_at - datetime.now(UTC).replace(tzinfo=None) <= timedelta(days=7)
    assert invite_rater(store, "ann").expires_at is None
    reissue_link(store, "boss", expires="never")
    assert pd.isna(store.raters().set_index("name").loc["boss", "expires_at"])


@pytest.mark.both_backends
def test_who_signs_in_admins_by_email_or_group_and_mapped_raters(store: Store) -> None:
    store.add_rater("ann")
    store.set_rater_email("ann", "Ann@Example.com")
    change_admins(store, emails=["Alice@Example.com"], groups=["leads"])
    set_sign_in(store, group_claim="roles")

    alice = resolve_sign_in(store, claims("ALICE@example.com"), now=NOW)
    assert alice.is_admin and alice.name == "alice@example.com"
    # The second sign-in finds the same row.
    assert resolve_sign_in(store, claims("alice@example.com"), now=NOW).rater_id == alice.rater_id
    # A group, read from the claim the project names.
    assert resolve_sign_in(store, claims("lee@example.com", roles=["leads"]), now=NOW).is_admin
    with pytest.raises(AccessError, match="not on this project's admin list"):
        resolve_sign_in(store, claims("lee2@example.com", groups=["leads"]), now=NOW)
    # A mapped rater gets the rater pages.
    ann = resolve_sign_in(store, claims("ann@example.com"), now=NOW)
    assert ann.name == "ann" and not ann.is_admin
    # Taken off the list: refused on the next page.
    change_admins(store, emails=["alice@example.com"], remove=True)
    with pytest.raises(AccessError, match="not on this project's admin list"):
        resolve_sign_in(store, claims("alice@example.com"), now=NOW)
    # Revoked: refused even when mapped.
    store.revoke_rater("ann")
    with pytest.raises(AccessError, match="revoked"):
        resolve_sign_in(store, claims("ann@example.com"), now=NOW)
    with pytest.raises(InputError, match="already signs in as rater 'ann'"):
        store.add_rater("bob")
        store.set_rater_email("bob", "ann@example.com")


def test_a_sign_in_expires_and_unverified_or_missing_emails_are_refused(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    change_admins(store, emails=["alice@example.com"])
    assert admin_list(store).session_seconds == 12 * 3600
    with pytest.raises(SignInExpired):
        resolve_sign_in(store, {**claims("alice@example.com"), "iat": NOW - 12 * 3600 - 1}, now=NOW)
    with pytest.raises(SignInExpired):
        resolve_sign_in(store, {"email": "alice@example.com"}, now=NOW)  # no iat: cannot tell its age
    with pytest.raises(AccessError, match="no verified e-mail"):
        resolve_sign_in(store, claims("alice@example.com", email_verified=False), now=NOW)
    with pytest.raises(AccessError, match="no verified e-mail"):
        resolve_sign_in(store, {"iat": NOW}, now=NOW)
    with pytest.raises(InputError, match=r"not on the admin list: bob@example\.com"):
        change_admins(store, emails=["bob@example.com"], remove=True)


def test_provider_settings_from_a_file_options_override_and_the_auth_section(tmp_path: Path) -> None:
    assert provider_settings(None) is None
    file = tmp_path / "auth.toml"
    file.write_text('[auth]\nserver_metadata_url = "https://kc.example.org/realms/r"\nclient_id = "a"\n'
                    'client_secret = "s"\ncookie_secret = "c"\n[auth.client_kwargs]\nscope = "openid email groups"\n')
    p = provider_settings(file, client_id="b")
    assert p is not None and (p.client_id, p.client_secret, p.cookie_secret, p.scope) == \
        ("b", "s", "c", "openid email groups")
    assert p.server_metadata_url == "https://kc.example.org/realms/r/.well-known/openid-configuration"
    auth = auth_section(p, "https://labels.example.org")
    assert auth["redirect_uri"] == "https://labels.example.org/oauth2callback"
    made = provider_settings(server_metadata_url="https://accounts.google.com", client_id="x", client_secret="y")
    assert made is not None and made.cookie_secret_made and len(made.cookie_secret) >= 32
    with pytest.raises(InputError, match="lack client_secret"):
        provider_settings(server_metadata_url="https://accounts.google.com", client_id="x")
    with pytest.raises(InputError, match="not an http"):
        provider_settings(server_metadata_url="accounts.google.com", client_id="x", client_secret="y")
    assert parse_duration("90s") == 90
    with pytest.raises(InputError, match="not a duration"):
        parse_duration("0h")


def test_the_launcher_writes_a_private_secrets_file_streamlit_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    auth = {"redirect_uri": "http://h:1/oauth2callback", "cookie_secret": 'c"\\x', "client_id": "a",
            "client_secret": "s", "server_metadata_url": "http://p/.well-known/openid-configuration",
            "client_kwargs": {"scope": "openid email"}}
    monkeypatch.setenv(AUTH_ENV, json.dumps(auth))
    argv = use_sign_in(["streamlit", "run", "app.py"])
    assert argv[:3] == ["streamlit", "run", "app.py"] and argv[3] == "--secrets.files"
    path = Path(argv[4])
    assert tomllib.loads(path.read_text())["auth"] == auth
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert AUTH_ENV not in os.environ  # not handed on to anything the server starts
    assert use_sign_in(["streamlit", "run", "app.py"]) == ["streamlit", "run", "app.py"]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_admins_and_raters_commands(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    assert run("init", "--db", db)[0] == 0
    code, out, _ = run("admins", "allow", "Alice@Example.com", "--group", "leads", "--json", "--db", db)
    assert code == 0 and json.loads(out)["emails"] == ["alice@example.com"]
    code, out, _ = run("admins", "settings", "--session", "8h", "--group-claim", "roles", "--json", "--db", db)
    assert json.loads(out)["session_seconds"] == 8 * 3600 and json.loads(out)["group_claim"] == "roles"
    code, out, err = run("raters", "add", "boss", "--admin", "--db", db)
    assert code == 0 and out.startswith("boss (admin): ") and "the link expires" in err
    code, out, err = run("raters", "add", "ann", "--email", "ann@example.com", "--expires", "never", "--db", db)
    assert code == 0 and err == ""
    code, out, _ = run("admins", "list", "--json", "--db", db)
    assert json.loads(out)["raters"] == [{"name": "ann", "role": "rater", "email": "ann@example.com", "active": True}]
    code, _, err = run("raters", "add", "x", "--expires", "5x", "--db", db)
    assert code == 2 and "is not a duration" in err
    code, _, err = run("admins", "allow", "not-an-address", "--db", db)
    assert code == 2 and "is not an e-mail address" in err
    code, out, _ = run("raters", "list", "--json", "--db", db)
    assert {r["name"]: r["email"] for r in json.loads(out)} == {"boss": None, "ann": "ann@example.com"}
    code, _, err = run("serve", "--oidc-client-id", "x", "--db", db)
    assert code == 2 and "lack server_metadata_url" in err
