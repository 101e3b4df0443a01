"""The browser's Back and Forward inside Rate (issue 29): one history entry per item.

A hurried rater in Chromium at 1366x768 clicks and uses shortcuts, then the browser's Back
and Forward: Back steps to the item seen before (its stored label shown, editable, as the
in-app Back shows it), Forward returns, an edit from there is stored, a reload stays on the
entry's item, Back pressed while a submit is on its way goes back once the submit is stored
(keys pressed meanwhile are named as not used), the finished screen is an entry too, and
switching to another app page and back still works. The URL only gains ``#item-N`` (or
``#done``): the query is the invite link's own, nothing new.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import LAPTOP, Demo, expect_text, go, open_page, playwright_api, serve, wait_ready

pytestmark = pytest.mark.browser
expect = playwright_api.expect


def overall(demo: Demo, rater_id: int) -> list[float]:
    return demo.store.query("SELECT overall FROM labels WHERE rater_id = ? ORDER BY label_id",
                            [rater_id])["overall"].tolist()


def chosen(page: Any) -> Any:
    return page.get_by_role("radiogroup", name="Overall score", exact=True).get_by_role("radio", checked=True)


def shows(page: Any, n: int, score: str | None = None) -> None:
    expect_text(page, f"Answer {n} of 4")
    if score is not None:
        expect(chosen(page)).to_have_text(score)
        expect(page.get_by_text("you rated this one")).to_be_visible()


def test_back_and_forward_step_through_the_items(demo: Demo, browser: Any) -> None:
    rater_id, token = demo.new_rater("history-hugo", score=4)
    page, _ = open_page(browser, f"{demo.url}/?t={token}", viewport=LAPTOP)
    shows(page, 1)
    # A click, then the shortcut; a shortcut, then the button.
    page.get_by_role("radiogroup", name="Overall score", exact=True).get_by_role("radio", name="4").click()
    page.keyboard.press("Control+Enter")
    shows(page, 2)
    page.keyboard.press("3")
    page.get_by_role("button", name=re.compile("^Submit")).click()
    shows(page, 3)
    assert urllib.parse.urlsplit(page.url).fragment == "item-3"

    page.go_back()
    shows(page, 2, "3")
    page.go_back()
    shows(page, 1, "4")
    page.go_forward()
    shows(page, 2, "3")
    # An edit from there is a changed label; the next item comes as after any submit.
    page.keyboard.press("5")
    page.keyboard.press("Control+Enter")
    shows(page, 3)
    expect(page.locator(".jl-message")).to_have_text("Label changed")
    page.go_back()
    shows(page, 2, "5")
    # A reload stays on the entry's item.
    page.reload()
    wait_ready(page)
    shows(page, 2, "5")
    page.go_forward()
    shows(page, 3)
    for score in ("2", "1"):
        page.keyboard.press(score)
        page.keyboard.press("Control+Enter")
    expect_text(page, "All 4 answers are rated")
    page.go_back()
    shows(page, 4, "1")
    page.go_forward()
    expect_text(page, "All 4 answers are rated")
    assert overall(demo, rater_id) == [4, 3, 5, 2, 1]

    # Another app page and back: the page switch is Streamlit's, the item entries still ours.
    go(page, "Compare")
    page.go_back()
    expect_text(page, "All 4 answers are rated")
    page.go_back()
    shows(page, 4, "1")
    page.go_forward()
    expect_text(page, "All 4 answers are rated")
    page.go_forward()
    title = page.get_by_test_id("stMain").get_by_role("heading", name="Compare", exact=True)
    expect(title).to_be_visible(timeout=60_000)

    # The invite token stays where it was: the query is the link's own, the fragment names no token.
    parts = urllib.parse.urlsplit(page.url)
    assert urllib.parse.parse_qs(parts.query) == {"t": [token]} and token not in parts.fragment
    assert overall(demo, rater_id) == [4, 3, 5, 2, 1]
    page.close()


@pytest.fixture(scope="module")
def slow_url(demo: Demo) -> Iterator[str]:
    """A server on the demo's file whose label writes take 1.5 s (a submit stays on its way)."""
    server = serve(demo.db, launcher=Path(__file__).with_name("_slow_server.py"),
                   env={"JUDGELAB_WRITE_DELAY": "1.5"})
    try:
        yield server.url
    finally:
        server.stop()


def test_back_while_a_submit_is_on_its_way_goes_back_once_it_is_stored(
    demo: Demo, browser: Any, slow_url: str
) -> None:
    rater_id, token = demo.new_rater("history-hasty", score=3)
    page, _ = open_page(browser, f"{slow_url}/?t={token}", viewport=LAPTOP)
    expect_text(page, "Answer 1 of 3")
    page.keyboard.press("4")
    page.keyboard.press("Control+Enter")
    expect_text(page, "Answer 2 of 3")
    page.keyboard.press("3")
    page.keyboard.press("Control+Enter")
    page.go_back()  # at once: the submit of item 2 is still being written
    page.keyboard.press("5")
    expect(page.locator(".jl-message.error")).to_contain_text("keys not used: 5", timeout=30_000)
    expect_text(page, "Answer 1 of 3 · you rated this one")
    expect(chosen(page)).to_have_text("4")
    assert overall(demo, rater_id) == [4, 3]
    page.go_forward()
    expect_text(page, "Answer 2 of 3 · you rated this one")
    expect(chosen(page)).to_have_text("3")
    page.close()
