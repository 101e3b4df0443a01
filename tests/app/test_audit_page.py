"""The Audit page under AppTest (issue 57 point 3).

An admin's action on another admin page is recorded under the admin's name (``admin:<name>``), the
Audit page lists it newest first with the command line's entries, filters by action and by who, and
is refused to a rater.
"""

from __future__ import annotations

import pytest

from judgelab.admin import AUDIT_COLUMNS
from judgelab.labeler.store import Store, os_user
from tests.app.test_admin_pages import frame, open_page


@pytest.fixture
def db(store: Store, monkeypatch: pytest.MonkeyPatch) -> Store:
    """The test's store, served to the pages through ``$JUDGELAB_DB``."""
    monkeypatch.setenv("JUDGELAB_DB", str(store.path))
    return store


@pytest.fixture
def tokens(db: Store) -> dict[str, str]:
    _, admin_token = db.add_rater("boss", role="admin")
    _, rater_token = db.add_rater("ann")
    return {"admin": admin_token, "rater": rater_token}


def test_an_admin_page_action_is_listed_under_the_admin_s_name(tokens: dict[str, str], db: Store) -> None:
    raters = open_page("admin_raters.py", tokens["admin"])
    raters.selectbox(key="revoke_name").set_value("ann").run()
    raters.button(key="revoke_button").click().run()
    assert [s.value for s in raters.success] == ["Revoked ann."]

    at = open_page("admin_audit.py", tokens["admin"])
    assert not at.exception and not at.error
    table = frame(at, *AUDIT_COLUMNS)
    me = f"os:{os_user()}"  # the fixture's own store calls: a program of one's own, not a page
    assert list(zip(table["actor"], table["action"], table["target"], strict=True)) == [
        ("admin:boss", "revoke", "ann"), (me, "rater add", "ann"), (me, "rater add", "boss")]
    assert table["detail"].tolist()[1:] == ["role: rater", "role: admin"]

    at.selectbox(key="audit_action").set_value("revoke").run()
    assert frame(at, *AUDIT_COLUMNS)["target"].tolist() == ["ann"]
    at.selectbox(key="audit_action").set_value("(every action)").run()
    at.selectbox(key="audit_actor").set_value(me).run()
    assert frame(at, *AUDIT_COLUMNS)["action"].tolist() == ["rater add", "rater add"]
    at.selectbox(key="audit_action").set_value("pause").run()
    assert [i.value for i in at.info] == ["No entry matches."]


def test_the_audit_page_is_for_admins_only(tokens: dict[str, str]) -> None:
    at = open_page("admin_audit.py", tokens["rater"])
    assert any("for admins" in str(e.value) for e in at.error)
    assert not at.dataframe

