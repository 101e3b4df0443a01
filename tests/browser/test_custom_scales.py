"""Raters on a declared scale, in Chromium: the levels as buttons and keys, with their labels.

A 1-7 Likert rubric (keys 1-7), an MT-Bench-style 1-10 rubric (keys 1-9, 0 for 10) and a 0-10
rubric (11 levels: two digits, 1 then 0 for 10) are served on their own databases. At 1366x768
without scrolling the rater sees one button per level, the key line naming the keys and the
level labels; scores given by key are stored on the scale, Back shows them again, and nothing
about the answers' family or model reaches the browser.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store
from tests.browser.conftest import LAPTOP, Server, expect_text, open_page, playwright_api, serve
from tests.scales.fixtures import LIKERT7, write

pytestmark = pytest.mark.browser
expect = playwright_api.expect

TEN = LIKERT7.replace('"helpful7"', '"helpful10"').replace('name = "likert7"', 'name = "mt_ten"').replace(
    "high = 7", "high = 10").replace('7 = "excellent"', '10 = "excellent"').replace("pass_threshold = 5",
                                                                                   "pass_threshold = 7")
ELEVEN = TEN.replace('"helpful10"', '"helpful11"').replace('name = "mt_ten"', 'name = "zero_ten"').replace(
    "low = 1", "low = 0").replace('1 = "useless"', '0 = "useless"')
ANSWERS = "task_id,prompt,answer_id,family,model,text\n" + "".join(
    f"T{i},How do I reset my password ({i})?,A{i},secretfam,secretmodel-9,Open Settings and press Reset ({i}).\n"
    for i in range(1, 4))


def _project(tmp: Path, rubric: str) -> tuple[Store, str, int]:
    store = Store(tmp / "p.duckdb")
    store.migrate()
    import_file(store, "rubric", write(tmp, "rubric.toml", rubric))
    import_file(store, "answers", write(tmp, "answers.csv", ANSWERS))
    rater, token = store.add_rater("scale-sam")
    store.assign_k(["A1", "A2", "A3"], 1, [rater.rater_id], seed=1)
    return store, token, rater.rater_id


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Any]:
    servers: list[Server] = []

    def start(rubric: str) -> tuple[Store, str, int]:
        folder = tmp_path / f"p{len(servers)}"
        folder.mkdir()
        store, token, rater_id = _project(folder, rubric)
        servers.append(serve(store.path))
        return store, f"{servers[-1].url}/?t={token}", rater_id

    yield start
    for server in servers:
        server.stop()


def _overall(store: Store, rater_id: int) -> list[float]:
    rows = store.query("SELECT overall FROM labels WHERE rater_id = ? ORDER BY label_id", [rater_id])
    return [float(v) for v in rows["overall"]]


def _on_screen(page: Any, levels: list[str], key_line: str) -> None:
    group = page.get_by_role("radiogroup", name="Overall score", exact=True)
    buttons = group.get_by_role("radio")
    expect(buttons).to_have_count(len(levels))
    assert [b.inner_text().strip() for b in buttons.all()] == levels
    assert page.evaluate("() => window.scrollY") == 0
    for box in [group.bounding_box(), page.get_by_role("button", name=re.compile("^Submit")).bounding_box()]:
        assert box is not None and box["y"] + box["height"] <= LAPTOP["height"]
        assert box["x"] + box["width"] <= LAPTOP["width"]
    expect(page.locator(".jl-keys")).to_contain_text(key_line)
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.parametrize(("rubric", "levels", "keys", "want", "key_line", "label"), [
    (LIKERT7, [str(v) for v in range(1, 8)], ["7", "1", "4"], [7.0, 1.0, 4.0], "1–7 overall", "excellent"),
    (TEN, [str(v) for v in range(1, 11)], ["0", "9", "1"], [10.0, 9.0, 1.0], "1–9, 0 = 10 overall", "excellent"),
    (ELEVEN, [str(v) for v in range(11)], ["1 0", "0", "7"], [10.0, 0.0, 7.0],
     "0–10 (two digits: 1 then 0 = 10) overall", "useless"),
], ids=["1-7", "1-10", "0-10"])
def test_a_declared_scale_is_rated_by_keys_at_1366x768(
    served: Any, browser: Any, rubric: str, levels: list[str], keys: list[str], want: list[float],
    key_line: str, label: str,
) -> None:
    store, url, rater_id = served(rubric)
    page, rec = open_page(browser, url, viewport=LAPTOP)
    expect_text(page, "Answer 1 of 3")
    _on_screen(page, levels, key_line)
    expect(page.get_by_role("list", name="Score levels")).to_contain_text(label)
    for n, key in enumerate(keys, start=1):
        for k in key.split():
            page.keyboard.press(k)
        chosen = want[n - 1]
        picked = page.get_by_role("radiogroup", name="Overall score", exact=True).get_by_role("radio", checked=True)
        expect(picked).to_have_text(f"{chosen:g}")
        page.keyboard.press("Control+Enter")
        expect_text(page, f"Answer {n + 1} of 3" if n < 3 else "All 3 answers are rated")
    assert _overall(store, rater_id) == want
    # Revisit: Back shows the last score given, and resubmitting it unchanged stores nothing new.
    page.keyboard.press("b")
    expect_text(page, "Answer 3 of 3")
    picked = page.get_by_role("radiogroup", name="Overall score", exact=True).get_by_role("radio", checked=True)
    expect(picked).to_have_text(f"{want[-1]:g}")
    text = rec.received(page)
    assert "secretfam" not in text and "secretmodel-9" not in text
    assert rec.outside_requests() == []


def test_a_criterion_on_the_0_to_10_scale_is_set_by_digits_as_the_overall_score_is(
    served: Any, browser: Any
) -> None:
    store, url, rater_id = served(ELEVEN)
    page, _ = open_page(browser, url, viewport=LAPTOP)
    expect_text(page, "Answer 1 of 3")
    overall = page.get_by_role("radiogroup", name="Overall score", exact=True)
    helps = page.get_by_role("radiogroup", name="Helps", exact=True)
    # 5 overall (the untouched criterion follows), then down to the criterion and 1, 0: ten.
    page.keyboard.press("5")
    expect(helps.get_by_role("radio", checked=True)).to_have_text("5")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("1")
    page.keyboard.press("0")
    expect(helps.get_by_role("radio", checked=True)).to_have_text("10")
    expect(overall.get_by_role("radio", checked=True)).to_have_text("5")
    page.keyboard.press("Control+Enter")
    expect_text(page, "Answer 2 of 3")
    # A lone 1 on the criterion waits for a second digit, then counts as 1.
    page.keyboard.press("7")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("1")
    expect(helps.get_by_role("radio", checked=True)).to_have_text("1")
    expect(overall.get_by_role("radio", checked=True)).to_have_text("7")
    # Submitted, and 1, 0 typed at once: kept for the next item while saving, still one key (10).
    page.keyboard.press("Control+Enter")
    page.keyboard.press("1")
    page.keyboard.press("0")
    expect_text(page, "Answer 3 of 3")
    expect(overall.get_by_role("radio", checked=True)).to_have_text("10")
    rows = store.query("SELECT overall, criteria FROM labels WHERE rater_id = ? ORDER BY label_id", [rater_id])
    assert [float(v) for v in rows["overall"]] == [5.0, 7.0]
    assert [json.loads(c) for c in rows["criteria"]] == [{"helps": 10}, {"helps": 1}]
