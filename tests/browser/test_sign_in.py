"""Admins who sign in through a real OpenID Connect provider run locally, in Chromium (issue 57, point 2).

The provider is ``oidc-provider-mock`` (a real OpenID provider: discovery, authorization form, token
endpoint, signed ID tokens, end-session), in a thread of this process. The app is a second server
on the package's demo database, started with the ``[auth]`` section ``judgelab serve --oidc-...``
hands to Streamlit (:func:`judgelab.admin._signin.auth_section`, through the launcher's secrets
file). One browser walks the whole story, in order:

* a listed admin signs in and reaches the admin pages;
* their sign-in expires (the project's session length, shortened) and the pages ask again;
* they sign out (through the provider's end-session page) and only the Sign-in button is left;
* a person not on the admin list (and no rater) is refused, with a Sign-out button;
* a member of a listed group is an admin;
* a rater's link opened in the signed-in admin's browser shows the rater's pages only, and an
  admin page's address with that link opens no admin page;
* an expired admin link is refused.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import (
    Demo,
    expect_text,
    main_text,
    menu_titles,
    open_page,
    playwright_api,
    serve,
    wait_ready,
)

oidc_provider_mock = pytest.importorskip("oidc_provider_mock")

pytestmark = [
    pytest.mark.browser,
    # The provider's own use of Authlib's older API, in its thread: not ours to fix.
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

ADMIN = "alice@example.com"
STRANGER = "mallory@example.com"
GROUP_MEMBER = "carol@example.com"


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    """The OpenID provider, on a free port of this machine (plain http, as a test provider may be)."""
    os.environ["AUTHLIB_INSECURE_TRANSPORT"] = "1"
    users = [oidc_provider_mock.User(sub=GROUP_MEMBER, claims={"email": GROUP_MEMBER, "groups": ["judgelab-admins"]})]
    with oidc_provider_mock.run_server_in_thread(user_claims=users) as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture(scope="module")
def signed(demo: Demo, provider: str) -> Iterator[str]:
    """A server on the demo database that signs people in with ``provider``; the demo's admin list set."""
    from judgelab.admin._signin import AUTH_ENV, auth_section, change_admins, provider_settings

    change_admins(demo.store, emails=[ADMIN], groups=["judgelab-admins"])
    settings = provider_settings(server_metadata_url=provider, client_id="judgelab", client_secret="not-a-secret")
    assert settings is not None
    # Streamlit fills in {port} itself: the test's server picks its port as it starts.
    auth = auth_section(settings, "http://127.0.0.1:{port}")
    server = serve(demo.db, env={AUTH_ENV: json.dumps(auth), "AUTHLIB_INSECURE_TRANSPORT": "1"})
    try:
        yield server.url
    finally:
        server.stop()


def _sign_in(page: Any, who: str) -> None:
    """Press Sign in, and authorize as ``who`` on the provider's own form."""
    expect_text(page, "Sign in with your organisation's account")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_placeholder("sub").fill(who)
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_selector("[data-testid='stApp'][data-test-connection-state='CONNECTED']", timeout=60_000)
    wait_ready(page)


def test_sign_in_admins_raters_and_links(browser: Any, demo: Demo, signed: str) -> None:
    from judgelab.labeler.store import Store

    store = Store(demo.db)
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    try:
        # No link, not signed in: the Sign-in button, nothing else.
        page.goto(signed)
        _sign_in(page, ADMIN)
        expect_text(page, "Overview")
        assert "Overview" in menu_titles(page) and "Raters" in menu_titles(page)
        expect_text(page, f"Signed in as {ADMIN}")
        reached = time.time()
        row = store.query("SELECT role, email FROM raters WHERE name = ?", [ADMIN])
        assert row.iloc[0].tolist() == ["admin", ADMIN]

        # The session length, shortened to a second: once it has passed, the next page asks again.
        store.set_setting("project", "sign_in_seconds", "1")
        while time.time() < reached + 1.5:  # the ID token was issued before `reached`
            time.sleep(0.1)
        page.reload()
        expect_text(page, "Your sign-in has expired")
        assert "Overview" not in main_text(page)
        store.set_setting("project", "sign_in_seconds", str(12 * 3600))
        page.get_by_role("button", name="Sign in again").click()
        page.get_by_placeholder("sub").fill(ADMIN)
        page.get_by_role("button", name="Authorize").click()
        expect_text(page, f"Signed in as {ADMIN}")

        # A rater's link in this signed-in browser: the rater's pages, never an admin page.
        page.goto(f"{signed}/?t={demo.rater_token}")
        wait_ready(page)
        assert menu_titles(page) == ["Rate", "Compare", "Padding audit"]
        page.goto(f"{signed}/admin_raters?t={demo.rater_token}")
        wait_ready(page)
        assert "Invite" not in main_text(page) and "Raters" not in menu_titles(page)

        # Sign out: through the provider's end-session page, back to the Sign-in button.
        page.goto(signed)
        expect_text(page, f"Signed in as {ADMIN}")
        page.get_by_test_id("stSidebar").get_by_role("button", name="Sign out").click()
        page.get_by_role("button", name="End session").click()  # the provider's own page
        expect_text(page, "Sign in with your organisation's account")

        # Someone the provider knows but the project does not.
        _sign_in(page, STRANGER)
        expect_text(page, f"{STRANGER} is not on this project's admin list")
        assert "Overview" not in menu_titles(page)
        page.get_by_role("button", name="Sign out").click()
        page.get_by_role("button", name="End session").click()  # wait for the sign-out's own navigation

        # A member of a listed group.
        _sign_in(page, GROUP_MEMBER)
        expect_text(page, f"Signed in as {GROUP_MEMBER}")
        assert "Raters" in menu_titles(page)
    finally:
        context.close()

    # An admin link past its expiry opens nothing.
    from datetime import datetime

    _, token = store.add_rater("expired-admin", role="admin", expires_at=datetime(2001, 1, 1))
    page, _ = open_page(browser, f"{signed}/?t={token}")
    try:
        expect_text(page, "this link expired on 2001-01-01 00:00 UTC")
        assert page.get_by_test_id("stSidebarNav").count() == 0
        playwright_api.expect(page.get_by_role("button", name="Sign in")).to_have_count(0)
    finally:
        page.close()
