"""A rater's first hour, in Chromium, the way a hurried person works.

On the served demo (the bundled rubric: five criteria with long descriptions), fresh raters
mix clicks and shortcuts, go back and forward, edit and reload, at 1366x768 and 1400x900:

* going back shows everything given (criteria, overall, comment, flag and reason; the
  Compare comment and the audit note), in one session and after a reload, and
  resubmitting unchanged stores nothing new and says nothing is wrong;
* Ctrl+Enter submits whatever has focus (a clicked criterion included); plain keys type
  normally inside the comment box; a score key pressed right after Ctrl+Enter, before the
  next item is there, is the next item's score;
* everything works from the keyboard (the flag and the criteria too), the Submit button,
  the criteria, their descriptions and the rubric's score levels are on screen at
  1366x768 without scrolling, and a refused submit says why next to the Submit button;
* the time on an item counts from when this session showed it, without a hidden tab;
* the browser asks no host but the app's for anything.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import (
    DESKTOP,
    LAPTOP,
    Demo,
    count,
    expect_text,
    go,
    open_page,
    playwright_api,
    serve,
    wait_ready,
)

pytestmark = pytest.mark.browser
expect = playwright_api.expect

SHOTS = Path("/tmp/judgelab-browser-shots")


def criteria_names(demo: Demo) -> list[str]:
    rubric = demo.store.rubric()
    return [c.name for c in rubric.criteria]


def group(page: Any, name: str) -> Any:
    """The choice group (overall, a criterion) named ``name``."""
    return page.get_by_role("radiogroup", name=name, exact=True)


def chosen(page: Any, name: str) -> str | None:
    """The option chosen in group ``name`` (``None``: nothing chosen)."""
    picked = group(page, name).get_by_role("radio", checked=True)
    return None if picked.count() == 0 else picked.first.inner_text().strip()


def click_option(page: Any, name: str, value: str) -> None:
    """Click option ``value`` of the group named ``name`` with the mouse."""
    box = group(page, name)
    if box.count() == 0:  # the page before the rating form: a segmented control per criterion
        box = page.get_by_test_id("stElementContainer").filter(has=page.get_by_text(name, exact=True)).last
        box.get_by_role("button", name=value, exact=True).click()
        wait_ready(page)
        return
    box.get_by_role("radio", name=value, exact=True).click()


def comment(page: Any) -> Any:
    return page.get_by_label("Comment (optional)")


def labels_of(demo: Demo, rater_id: int) -> Any:
    return demo.store.query(
        "SELECT label_id, answer_id, overall, criteria, comment, flag_reason, supersedes, seconds"
        " FROM labels WHERE rater_id = ? ORDER BY label_id", [rater_id])


def assert_local_only(rec: Any) -> None:
    assert rec.outside_requests() == [], f"the browser asked other hosts: {rec.outside_requests()}"


def test_going_back_and_forth_and_reloading_loses_nothing(demo: Demo, browser: Any) -> None:
    rater_id, token = demo.new_rater("hurried-hana", score=4)
    names = criteria_names(demo)
    page, rec = open_page(browser, f"{demo.url}/?t={token}", viewport=DESKTOP)
    expect_text(page, "Answer 1 of 4")
    # 1: a score, one criterion set by hand, a comment.
    page.keyboard.press("4")
    click_option(page, names[0], "2")
    comment(page).click()
    page.keyboard.type("first: step 2 is wrong")
    page.keyboard.press("Control+Enter")
    expect_text(page, "Answer 2 of 4")
    expect(page.locator(".jl-message")).to_have_text("Label saved")  # at the Submit button
    # 2: flagged, with a reason.
    page.keyboard.press("3")
    page.get_by_label("Flag as unrateable").check()
    page.get_by_label("Why can it not be rated?").fill("the reply is cut off")
    page.keyboard.press("Control+Enter")
    expect_text(page, "Answer 3 of 4")
    # 3: a score and a comment.
    page.keyboard.press("5")
    comment(page).fill("third is fine")
    page.keyboard.press("Control+Enter")
    expect_text(page, "Answer 4 of 4")
    assert len(labels_of(demo, rater_id)) == 3

    def shows(n: int) -> None:
        expect_text(page, f"Answer {n} of 4")
        if n == 1:
            expect(comment(page)).to_have_value("first: step 2 is wrong")
            assert chosen(page, names[0]) == "2" and all(chosen(page, c) == "4" for c in names[1:])
            assert chosen(page, "Overall score") == "4"
        elif n == 2:
            expect(page.get_by_label("Flag as unrateable")).to_be_checked()
            expect(page.get_by_label("Why can it not be rated?")).to_have_value("the reply is cut off")
            assert chosen(page, "Overall score") == "3" and all(chosen(page, c) == "3" for c in names)
        else:
            expect(comment(page)).to_have_value("third is fine")
            assert chosen(page, "Overall score") == "5" and all(chosen(page, c) == "5" for c in names)

    # B, B, F, B, B: every visit shows everything given.
    for key, n in (("b", 3), ("b", 2), ("f", 3), ("b", 2), ("b", 1)):
        page.keyboard.press(key)
        shows(n)
    forward = page.get_by_role("button", name=re.compile("^Forward"))
    expect(forward).to_be_visible()
    assert forward.evaluate("b => b.scrollWidth <= b.clientWidth"), "the Forward button's text is cut"
    # Resubmitting unchanged is a no-op: no error, no new row.
    page.keyboard.press("Control+Enter")
    expect_text(page, "Answer 4 of 4")
    expect(page.locator(".jl-message")).to_contain_text("Nothing changed")
    assert len(labels_of(demo, rater_id)) == 3
    assert "no score" not in page.content()

    # A reload resumes, and going back still shows everything.
    page.reload()
    wait_ready(page)
    expect_text(page, "Answer 4 of 4")
    for n in (3, 2, 1):
        page.keyboard.press("b")
        shows(n)
    page.keyboard.press("Control+Enter")  # unchanged again
    expect_text(page, "Answer 4 of 4")
    rows = labels_of(demo, rater_id)
    assert len(rows) == 3, rows
    first = rows.iloc[0]
    assert json.loads(first["criteria"])[demo.store.rubric().criteria[0].criterion_id] == 2
    assert rows["flag_reason"].tolist()[1] == "the reply is cut off"
    assert_local_only(rec)
    page.close()


def test_ctrl_enter_submits_whatever_has_focus(demo: Demo, browser: Any) -> None:
    rater_id, token = demo.new_rater("clicky-cleo", score=2)
    names = criteria_names(demo)
    page, rec = open_page(browser, f"{demo.url}/?t={token}", viewport=DESKTOP)
    expect_text(page, "Answer 1 of 2")
    page.keyboard.press("4")
    click_option(page, names[-1], "2")  # focus is now on a criterion's option
    page.keyboard.press("Control+Enter")
    expect_text(page, "Answer 2 of 2")
    rows = labels_of(demo, rater_id)
    assert len(rows) == 1, "Ctrl+Enter after clicking a criterion stored nothing"
    crit = json.loads(rows["criteria"].iloc[0])
    assert crit[demo.store.rubric().criteria[-1].criterion_id] == 2
    assert sorted(crit.values()) == [2, 4, 4, 4, 4]

    # Plain keys type inside the comment box; Ctrl+Enter submits from there.
    page.keyboard.press("3")
    comment(page).click()
    page.keyboard.type("1 b s f u 5")
    expect(comment(page)).to_have_value("1 b s f u 5")
    expect_text(page, "Answer 2 of 2")
    assert chosen(page, "Overall score") == "3"
    page.keyboard.press("Control+Enter")
    expect_text(page, "All 2 answers are rated")
    rows = labels_of(demo, rater_id)
    assert rows["comment"].tolist() == ["", "1 b s f u 5"] and rows["overall"].tolist() == [4, 3]
    assert_local_only(rec)
    page.close()


def submit_then_press(page: Any, score: str, key: str) -> None:
    """Score, Ctrl+Enter, then ``key`` at once: before the server has answered with the next item."""
    page.keyboard.press(score)
    page.keyboard.press("Control+Enter")
    page.keyboard.press(key)


def test_a_score_key_pressed_while_the_next_item_loads_is_its_score(demo: Demo, browser: Any) -> None:
    rater_id, token = demo.new_rater("quick-quinn", score=2)
    page, rec = open_page(browser, f"{demo.url}/?t={token}", viewport=DESKTOP)
    expect_text(page, "Answer 1 of 2")
    submit_then_press(page, "4", "3")
    expect_text(page, "Answer 2 of 2")
    expect(group(page, "Overall score").get_by_role("radio", checked=True)).to_have_text("3")
    page.keyboard.press("Control+Enter")
    expect_text(page, "All 2 answers are rated")
    assert labels_of(demo, rater_id)["overall"].tolist() == [4, 3]
    assert_local_only(rec)
    page.close()


def test_b_pressed_while_the_next_item_loads_goes_back_to_the_item_just_sent(demo: Demo, browser: Any) -> None:
    rater_id, token = demo.new_rater("back-at-once-bo", score=3)
    page, rec = open_page(browser, f"{demo.url}/?t={token}", viewport=DESKTOP)
    expect_text(page, "Answer 1 of 3")
    submit_then_press(page, "4", "b")
    expect_text(page, "Answer 1 of 3 · you rated this one")
    expect(group(page, "Overall score").get_by_role("radio", checked=True)).to_have_text("4")
    page.keyboard.press("f")
    expect_text(page, "Answer 2 of 3")
    submit_then_press(page, "3", "s")  # Skip on the item that comes
    expect_text(page, "Answer 3 of 3 · skipped before")  # the item that came was skipped (and is the only one left)
    assert labels_of(demo, rater_id)["overall"].tolist() == [4, 3]
    assert_local_only(rec)
    page.close()


def test_each_submit_checks_the_token_once_before_it_writes(demo: Demo, browser: Any, tmp_path: Path) -> None:
    # A second server on the demo's file, with the store's token checks and label writes
    # logged in the order it ran them (the submit's callback and the fragment rerun it
    # causes are one script run: they share one check, and it comes before the write).
    trace = tmp_path / "trace.log"
    server = serve(demo.db, launcher=Path(__file__).with_name("_traced_server.py"),
                   env={"JUDGELAB_TRACE": str(trace)})
    try:
        rater_id, token = demo.new_rater("once-olga", score=3)
        page, rec = open_page(browser, f"{server.url}/?t={token}", viewport=DESKTOP)
        expect_text(page, "Answer 1 of 3")
        loaded = trace.read_text().split()
        assert loaded and set(loaded) == {"check"}, loaded
        for position in (2, 3):
            page.keyboard.press("4")
            page.keyboard.press("Control+Enter")
            expect_text(page, f"Answer {position} of 3")
        page.keyboard.press("4")
        page.keyboard.press("Control+Enter")
        expect_text(page, "All 3 answers are rated")
        assert trace.read_text().split()[len(loaded):] == ["check", "write"] * 3
        assert labels_of(demo, rater_id)["overall"].tolist() == [4, 4, 4]
        assert_local_only(rec)
        page.close()
    finally:
        server.stop()


def _inside(box: dict[str, float], viewport: dict[str, int]) -> bool:
    return (box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"]
            and box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"])


def test_keyboard_first_with_everything_on_screen_at_1366x768(demo: Demo, browser: Any) -> None:
    rater_id, token = demo.new_rater("keyboard-kai", score=3)
    names = criteria_names(demo)
    page, rec = open_page(browser, f"{demo.url}/?t={token}", viewport=LAPTOP)
    expect_text(page, "Answer 1 of 3")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "rate-1366x768.png"))
    # In view without scrolling: Submit, every criterion with its description, the score levels.
    assert page.evaluate("() => window.scrollY") == 0
    submit = page.get_by_role("button", name=re.compile("^Submit"))
    assert _inside(submit.bounding_box(), LAPTOP), submit.bounding_box()
    descriptions = [c.description for c in demo.store.rubric().criteria]
    for name, description in zip(names, descriptions, strict=True):
        assert _inside(group(page, name).bounding_box(), LAPTOP), name
        shown = page.get_by_text(description, exact=True)
        expect(shown).to_be_visible()
        assert _inside(shown.bounding_box(), LAPTOP), description
    levels = page.get_by_role("list", name="Score levels").get_by_role("listitem")
    expect(levels).to_have_count(5)
    for i in range(5):
        assert _inside(levels.nth(i).bounding_box(), LAPTOP), levels.nth(i).inner_text()
    # The rubric's instructions, folded under the buttons; opened, they stay open while scoring.
    guide = page.locator("details.jl-guide")
    guide.locator("summary").click()
    page.keyboard.press("3")
    expect(guide).to_have_attribute("open", "")
    expect(guide).to_contain_text("Read the customer's ticket first")
    guide.locator("summary").click()

    # Everything from the keyboard: overall, two criteria, the flag and its reason, submit.
    page.keyboard.press("4")
    page.keyboard.press("ArrowDown")  # into the criteria
    page.keyboard.press("2")  # scores the focused criterion, then moves to the next
    page.keyboard.press("3")
    page.keyboard.press("Escape")
    page.keyboard.press("u")  # flag; the reason box takes the focus
    page.keyboard.type("cannot read the attachment")
    page.keyboard.press("Control+Enter")
    expect_text(page, "Answer 2 of 3")
    row = labels_of(demo, rater_id).iloc[0]
    ids = [c.criterion_id for c in demo.store.rubric().criteria]
    assert json.loads(row["criteria"]) == {ids[0]: 2, ids[1]: 3, **dict.fromkeys(ids[2:], 4)}
    assert row["flag_reason"] == "cannot read the attachment" and row["overall"] == 4

    # A refused submit says why, next to the Submit button.
    page.keyboard.press("Control+Enter")
    refusal = page.get_by_role("alert").filter(has_text=re.compile("overall", re.IGNORECASE))
    expect(refusal).to_be_visible(timeout=10_000)
    page.screenshot(path=str(SHOTS / "rate-refused-1366x768.png"))
    box, at = refusal.bounding_box(), submit.bounding_box()
    assert _inside(box, LAPTOP) and abs(box["y"] - at["y"]) < 120, (box, at)
    assert len(labels_of(demo, rater_id)) == 1
    assert_local_only(rec)
    page.close()


def test_compare_comment_and_audit_note_come_back(demo: Demo, browser: Any) -> None:
    rater_id, token = demo.new_rater("paired-pia", pairs=2, audits=2)
    page, rec = open_page(browser, f"{demo.url}/?t={token}", viewport=DESKTOP)
    go(page, "Compare")
    expect_text(page, "Pair 1 of 2")
    page.keyboard.press("1")
    comment(page).fill("A names the refund date")
    page.keyboard.press("Control+Enter")
    expect_text(page, "Pair 2 of 2")
    page.keyboard.press("b")
    expect_text(page, "Pair 1 of 2")
    expect(comment(page)).to_have_value("A names the refund date")
    assert chosen(page, "Which answer is better?") == "A much better"
    page.keyboard.press("Control+Enter")  # unchanged
    expect_text(page, "Pair 2 of 2")
    assert count(demo.store, "SELECT count(*) FROM pair_labels WHERE rater_id = ?", [rater_id]) == 1

    go(page, "Padding audit")
    expect_text(page, "Audit 1 of 2")
    page.keyboard.press("y")
    page.get_by_label("Note: what does it add? (optional)").fill("a new caveat")
    page.keyboard.press("Control+Enter")
    expect_text(page, "Audit 2 of 2")
    page.keyboard.press("b")
    expect_text(page, "Audit 1 of 2")
    expect(page.get_by_label("Note: what does it add? (optional)")).to_have_value("a new caveat")
    page.keyboard.press("Control+Enter")  # unchanged
    expect_text(page, "Audit 2 of 2")
    assert count(demo.store, "SELECT count(*) FROM padding_audits WHERE rater_id = ?", [rater_id]) == 1
    assert_local_only(rec)
    page.close()


def test_time_on_item_counts_from_this_session(demo: Demo, browser: Any) -> None:
    rater_id, token = demo.new_rater("slow-sam", score=2)
    page, _ = open_page(browser, f"{demo.url}/?t={token}", viewport=DESKTOP)
    expect_text(page, "Answer 1 of 2")
    page.close()  # opened, then left for a while
    time.sleep(8)
    page, _ = open_page(browser, f"{demo.url}/?t={token}", viewport=DESKTOP)
    expect_text(page, "Answer 1 of 2")
    page.keyboard.press("4")
    page.keyboard.press("Control+Enter")
    expect_text(page, "Answer 2 of 2")
    seconds = float(labels_of(demo, rater_id)["seconds"].iloc[0])
    assert 0 < seconds < 6, f"{seconds:.1f} s recorded for about a second of work"

    # A hidden tab does not count: 8 s away in another tab, then a quick label.
    page.keyboard.press("3")
    page.evaluate(HIDE)
    time.sleep(8)
    page.evaluate(SHOW)
    page.keyboard.press("Control+Enter")
    expect_text(page, "All 2 answers are rated")
    seconds = float(labels_of(demo, rater_id)["seconds"].iloc[1])
    assert 0 < seconds < 6, f"{seconds:.1f} s recorded: the hidden tab was counted"
    page.close()


#: What the browser does when the rater switches to another tab, and back.
HIDE = """() => { Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true});
                 document.dispatchEvent(new Event('visibilitychange')); }"""
SHOW = """() => { Object.defineProperty(document, 'visibilityState', {value: 'visible', configurable: true});
                 document.dispatchEvent(new Event('visibilitychange')); }"""
