"""A rater's W key in Chromium (issue 54): the answer that says who wrote it reaches no other rater.

Ann and Bob are both given one answer of the served demo (k = 2). Ann reads it and presses W;
Bob then opens his Rate page: his queue holds only his other answer, and neither his screen nor
any websocket frame his browser received carries the flagged answer's text (Ann's frames do: the
positive control). The admin's Withheld page lists the answer with Ann's name.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import LAPTOP, Demo, count, expect_text, go, main_text, open_page, playwright_api

pytestmark = pytest.mark.browser


def test_a_flag_by_one_rater_withholds_the_answer_from_the_next_and_shows_on_the_admin_page(
    demo: Demo, browser: Any
) -> None:
    store = demo.store
    ann, ann_token = demo.new_rater("flagging-fay", score=2)
    bob, bob_token = demo.new_rater("next-ned", score=1)
    first = store.next_item(ann)
    assert first is not None
    answer = str(store.query("SELECT answer_id FROM assignments WHERE assignment_id = ?",
                             [first.assignment_id]).iloc[0, 0])
    store.assign_k([answer], 2, [ann, bob], seed=1)  # Bob has it too, still to do
    text = str(store.query("SELECT text FROM answers WHERE answer_id = ?", [answer]).iloc[0, 0])
    # A stretch of the answer that the rules leave as it is (the middle of its longest line).
    line = max(text.splitlines(), key=len)
    chunk = line[len(line) // 2 - 15: len(line) // 2 + 15]
    assert len(chunk) == 30

    page, ann_rec = open_page(browser, f"{demo.url}/?t={ann_token}", viewport=LAPTOP)
    expect_text(page, "Answer 1 of 2")
    assert chunk in main_text(page)
    expect_text(page, "W says who wrote it")  # the keys line (in the form's shadow root)
    page.keyboard.press("w")
    expect_text(page, "Flagged: this answer says who wrote it")
    expect_text(page, "Answer 2 of 2")
    assert chunk in ann_rec.received(page)  # the recorder sees the answer where it was shown
    page.close()
    assert count(store, "SELECT count(*) FROM author_flags WHERE answer_id = ? AND rater_id = ?", [answer, ann]) == 1

    page, bob_rec = open_page(browser, f"{demo.url}/?t={bob_token}", viewport=LAPTOP)
    expect_text(page, "Answer 1 of 1")
    assert chunk not in main_text(page)
    page.keyboard.press("4")
    page.keyboard.press("Control+Enter")
    expect_text(page, "All 1 answers are rated")
    assert chunk not in bob_rec.received(page)
    page.close()
    assert count(store, "SELECT count(*) FROM labels WHERE answer_id = ? AND rater_id = ?", [answer, bob]) == 0

    page, _ = open_page(browser, f"{demo.url}/?t={demo.admin_token}", viewport=LAPTOP)
    go(page, "Withheld")
    card = page.get_by_test_id("stExpander").filter(has_text=answer)
    playwright_api.expect(card).to_contain_text("flagging-fay (rater)")
    page.close()
