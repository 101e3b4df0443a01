"""Rater trust in Chromium (issue 29): no key lost, unsent work kept, every page on one screen.

* a tab opened before another one labelled the item is told so and shown the stored label;
* keys pressed while a submit is on its way are acted on in order on the items that come
  (Ctrl+Enter included), and one a rater cannot use on the item that came is named at the
  Submit button; an earlier submit's timer never wipes keys queued for a later one (a
  server whose label writes take 1.5 s makes the form busy on purpose);
* a reload, or coming back to an item, restores the score and comment being entered, and
  a submit clears the kept draft;
* Compare and Padding audit at 1366x768: the two texts side by side in scrolling boxes,
  the question's buttons and Submit on screen without scrolling.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import LAPTOP, Demo, expect_text, go, open_page, playwright_api, serve, wait_ready

pytestmark = pytest.mark.browser
expect = playwright_api.expect

SHOTS = Path("/tmp/judgelab-browser-shots")
#: Seconds each label write takes on the slowed server.
WRITE_DELAY = 1.5


@pytest.fixture(scope="module")
def slow_url(demo: Demo) -> Iterator[str]:
    """A second server on the demo's file whose label writes take :data:`WRITE_DELAY` seconds."""
    server = serve(demo.db, launcher=Path(__file__).with_name("_slow_server.py"),
                   env={"JUDGELAB_WRITE_DELAY": str(WRITE_DELAY)})
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def slower_url(demo: Demo) -> Iterator[str]:
    """A server on the demo's file whose label writes take longer than the form's 8 s notice."""
    server = serve(demo.db, launcher=Path(__file__).with_name("_slow_server.py"),
                   env={"JUDGELAB_WRITE_DELAY": "9.5"})
    try:
        yield server.url
    finally:
        server.stop()


def overall(demo: Demo, rater_id: int) -> list[float]:
    return demo.store.query("SELECT overall FROM labels WHERE rater_id = ? ORDER BY label_id",
                            [rater_id])["overall"].tolist()


def chosen(page: Any) -> Any:
    return page.get_by_role("radiogroup", name="Overall score", exact=True).get_by_role("radio", checked=True)


def test_keys_pressed_while_saving_are_acted_on_or_named(demo: Demo, browser: Any, slow_url: str) -> None:
    rater_id, token = demo.new_rater("hurried-hiro", score=3)
    page, _ = open_page(browser, f"{slow_url}/?t={token}", viewport=LAPTOP)
    expect_text(page, "Answer 1 of 3")
    # Two labels in one breath, then F (Forward: nothing to go forward to on a new item).
    for key in ("4", "Control+Enter", "3", "Control+Enter", "f"):
        page.keyboard.press(key)
    expect(page.locator(".jl-message")).to_contain_text("Saving… then 3, Ctrl+Enter, F")
    expect_text(page, "Answer 3 of 3")
    expect(page.locator(".jl-message.error")).to_have_text("Not used on this item: F.", timeout=30_000)
    assert overall(demo, rater_id) == [4, 3]
    page.close()


def test_an_earlier_submits_timer_leaves_later_keys_alone(demo: Demo, browser: Any, slow_url: str) -> None:
    rater_id, token = demo.new_rater("steady-stella", score=3)
    page, _ = open_page(browser, f"{slow_url}/?t={token}", viewport=LAPTOP)
    expect_text(page, "Answer 1 of 3")
    page.keyboard.press("4")
    start = time.monotonic()
    page.keyboard.press("Control+Enter")
    expect_text(page, "Answer 2 of 3")
    # The second submit is on its way when the first one's 8 s would run out.
    time.sleep(max(0.0, 7.0 - (time.monotonic() - start)))
    for key in ("5", "Control+Enter", "2"):
        page.keyboard.press(key)
    expect_text(page, "Answer 3 of 3")
    expect(chosen(page)).to_have_text("2")
    page.keyboard.press("Control+Enter")
    expect_text(page, "All 3 answers are rated")
    assert overall(demo, rater_id) == [4, 5, 2]
    page.close()


def test_a_submit_answered_after_8_s_keeps_the_keys_pressed_meanwhile(
    demo: Demo, browser: Any, slower_url: str
) -> None:
    rater_id, token = demo.new_rater("patient-pat", score=2)
    page, _ = open_page(browser, f"{slower_url}/?t={token}", viewport=LAPTOP)
    expect_text(page, "Answer 1 of 2")
    for key in ("4", "Control+Enter", "3"):
        page.keyboard.press(key)
    expect(page.locator(".jl-message")).to_contain_text("Still saving", timeout=9_000)
    expect(page.locator(".jl-message")).to_contain_text("Keys waiting: 3")
    expect_text(page, "Answer 2 of 2")
    expect(chosen(page)).to_have_text("3")
    assert overall(demo, rater_id) == [4]
    page.close()


def test_a_second_tab_is_told_the_item_was_labelled_meanwhile(demo: Demo, browser: Any) -> None:
    rater_id, token = demo.new_rater("two-tabs-tove", score=2)
    tab_b, _ = open_page(browser, f"{demo.url}/?t={token}", viewport=LAPTOP)
    tab_a, _ = open_page(browser, f"{demo.url}/?t={token}", viewport=LAPTOP)
    for tab in (tab_a, tab_b):
        expect_text(tab, "Answer 1 of 2")
    tab_a.keyboard.press("4")
    tab_a.keyboard.press("Control+Enter")
    expect_text(tab_a, "Answer 2 of 2")
    tab_b.keyboard.press("2")
    tab_b.keyboard.press("Control+Enter")
    expect(tab_b.locator(".jl-message.error")).to_contain_text("labelled meanwhile, in another tab")
    expect_text(tab_b, "Answer 1 of 2 · you rated this one")
    expect(chosen(tab_b)).to_have_text("4")  # what tab A stored
    assert overall(demo, rater_id) == [4]
    tab_b.keyboard.press("2")  # having seen it, a deliberate change
    tab_b.keyboard.press("Control+Enter")
    expect(tab_b.locator(".jl-message")).to_have_text("Label changed")
    assert overall(demo, rater_id) == [4, 2]
    tab_a.close()
    tab_b.close()


def drafts(page: Any) -> list[str]:
    return list(page.evaluate("() => Object.keys(localStorage).filter((k) => k.startsWith('judgelab-draft:'))"))


def test_a_reload_and_a_return_keep_the_unsent_score_and_comment(demo: Demo, browser: Any) -> None:
    rater_id, token = demo.new_rater("reloading-rei", score=2)
    page, _ = open_page(browser, f"{demo.url}/?t={token}", viewport=LAPTOP)
    expect_text(page, "Answer 1 of 2")
    comment = page.get_by_label("Comment (optional)")
    page.keyboard.press("2")
    comment.fill("half typed: step 3 is")
    page.reload()
    wait_ready(page)
    expect_text(page, "Answer 1 of 2")
    expect(comment).to_have_value("half typed: step 3 is")
    expect(chosen(page)).to_have_text("2")
    expect(page.locator(".jl-message")).to_contain_text("unsent changes to this item are back")
    # Skip it, reload elsewhere, come back: still there (kept in the browser, not the page).
    page.keyboard.press("s")
    expect_text(page, "Answer 2 of 2")
    page.reload()
    wait_ready(page)
    expect_text(page, "Answer 2 of 2")
    page.keyboard.press("b")
    expect_text(page, "Answer 1 of 2")
    expect(comment).to_have_value("half typed: step 3 is")
    page.keyboard.press("Control+Enter")
    expect_text(page, "Answer 2 of 2")
    stored = demo.store.query("SELECT overall, comment FROM labels WHERE rater_id = ?", [rater_id])
    assert stored.values.tolist() == [[2.0, "half typed: step 3 is"]]
    assert drafts(page) == []  # the submit cleared it
    page.close()


def _inside(box: dict[str, float]) -> bool:
    return (box["y"] >= 0 and box["y"] + box["height"] <= LAPTOP["height"]
            and box["x"] >= 0 and box["x"] + box["width"] <= LAPTOP["width"])


def _one_screen(page: Any, question: str, left: str, right: str, shot: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / shot))
    assert page.evaluate("() => window.scrollY") == 0
    choices = page.get_by_role("radiogroup", name=question, exact=True).get_by_role("radio")
    for i in range(choices.count()):
        assert _inside(choices.nth(i).bounding_box()), (choices.nth(i).inner_text(), choices.nth(i).bounding_box())
    submit = page.get_by_role("button", name=re.compile("^Submit"))
    assert _inside(submit.bounding_box()), submit.bounding_box()
    boxes = [page.get_by_test_id("stVerticalBlock").filter(has=page.get_by_text(h, exact=True)).last.bounding_box()
             for h in (left, right)]
    assert abs(boxes[0]["y"] - boxes[1]["y"]) < 2 and boxes[0]["x"] + boxes[0]["width"] <= boxes[1]["x"], boxes
    assert all(_inside(b) for b in boxes), boxes


def test_compare_and_padding_audit_fit_on_one_screen_at_1366x768(demo: Demo, browser: Any) -> None:
    from judgelab.admin import family_pairs

    rater_id, token = demo.new_rater("laptop-lou", audits=1)
    # A pair of the first task (new_rater's pairs come from the last tasks, which other tests hold).
    answers = demo.store.answers(variant="original")
    first = answers[answers["task_id"] == sorted(answers["task_id"].unique())[0]]
    families = sorted(first["family"].unique())
    demo.store.assign_pairs(family_pairs(first, families[0], families[1])[:1], [rater_id])
    page, _ = open_page(browser, f"{demo.url}/?t={token}", viewport=LAPTOP)
    go(page, "Compare")
    expect_text(page, "Pair 1 of 1")
    _one_screen(page, "Which answer is better?", "A", "B", "compare-1366x768.png")
    go(page, "Padding audit")
    expect_text(page, "Audit 1 of 1")
    _one_screen(page, "Does the rewrite add any fact, caveat, recommendation, example or anything a reader"
                " could act on?", "Original", "Rewrite", "audit-1366x768.png")
    page.close()
