"""A rater leaves in the middle of an active batch: the admin reassigns in Chromium, the newcomer labels.

On a fresh ``judgelab demo`` of its own (the package's shared demo must keep its rater): the
first active batch goes to the demo rater, who is revoked before labelling; the Assignments page
says the batch's answers are in no active rater's queue, one click gives them to the new rater,
and a hurried admin who reloads and goes back and forward gets no second reassignment. The new
rater then labels the batch's first answer by click and by keyboard.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from judgelab.labeler.store import Store
from tests.browser.conftest import expect_text, judgelab, open_page, playwright_api, serve, wait_ready

pytestmark = pytest.mark.browser

def test_the_admin_reassigns_a_leavers_batch_and_the_newcomer_labels_it(tmp_path: Path, browser: Any) -> None:
    db = tmp_path / "demo.duckdb"
    links = dict(re.findall(r"^(rater|admin) link: \S+\?t=(\S+)$", judgelab(db, "demo", "--no-serve"), re.M))
    judgelab(db, "design", "--active", "--target-half-width", "10", "--overlap", "0", "--apply")
    bea = judgelab(db, "raters", "add", "bea").strip().rsplit("?t=", 1)[1]
    judgelab(db, "raters", "revoke", "demo-rater")
    server = serve(db)
    try:
        page, _ = open_page(browser, f"{server.url}/admin_assignments?t={links['admin']}",
                            viewport={"width": 1366, "height": 768})
        expect_text(page, "in no active rater's queue")
        button = page.get_by_role("button", name=re.compile("^Reassign: give the 41 stranded"))
        playwright_api.expect(button).to_be_visible()
        button.click()
        expect_text(page, "41 assignments made for the stranded answers (bea: 41)")
        assert page.get_by_role("button", name=re.compile("^Reassign")).count() == 0
        page.reload()
        wait_ready(page)
        assert page.get_by_role("button", name=re.compile("^Reassign")).count() == 0
        page.go_back()  # out of the app (the page was opened directly), then back into it
        page.go_forward()
        wait_ready(page)
        expect_text(page, "Active labelling")
        assert page.get_by_role("button", name=re.compile("^Reassign")).count() == 0
        store = Store(db)
        held = store.query("SELECT count(*) AS n FROM assignments s JOIN raters r USING (rater_id)"
                           " WHERE r.name = 'bea'")["n"].iloc[0]
        store.release()
        assert held == 41  # once, whatever the admin clicked afterwards

        rater, _ = open_page(browser, f"{server.url}/?t={bea}", viewport={"width": 1366, "height": 768})
        expect_text(rater, "Answer 1 of 41")
        rater.keyboard.press("4")
        rater.keyboard.press("Control+Enter")
        expect_text(rater, "Answer 2 of 41")
    finally:
        server.stop()
    status = judgelab(db, "design", "--active")
    assert "1 of 41 labelled" in status and "no active rater" not in status
