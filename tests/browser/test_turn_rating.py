"""In Chromium at 1366x768: a rater scores each assistant turn of a trace by keys (turn = "each", issue 46).

The rubric rates each turn; the rater gives the overall score, jumps to the turns with T, scores
them with digits (each digit moves to the next turn), is told which turn is missing when they
submit too early (nothing is lost), changes one turn with the buttons beside it in the
transcript, and submits. The label and its four turn scores land.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judgelab.labeler.blinding import rendered_reading
from tests.browser.conftest import LAPTOP, expect_text, open_page, serve

pytestmark = pytest.mark.browser


def _trace() -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "Sort out the refund for order 7."}]
    for k in range(1, 4):
        msgs += [{"role": "assistant", "content": f"Step {k}: looking.", "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"k": k})}}]},
                 {"role": "tool", "tool_call_id": f"c{k}", "content": f"result {k}"}]
    msgs.append({"role": "assistant", "content": "Refund started."})
    return {"task_id": "t1", "prompt": "Refund", "answer_id": "ans-zq41", "family": "fam-zq", "model": "model-zq",
            "messages": msgs}


def test_a_rater_scores_each_turn_by_keys(tmp_path: Path, browser: Any) -> None:
    from judgelab.labeler.examples import example_path
    from judgelab.labeler.importers import import_file
    from judgelab.labeler.store import Store

    rubric = tmp_path / "each.toml"
    rubric.write_text('turn = "each"\n' + example_path("rubric.toml").read_text())
    answers = tmp_path / "trace.jsonl"
    answers.write_text(json.dumps(_trace()) + "\n")
    db = tmp_path / "t.duckdb"
    store = Store(db)  # imported in process: three CLI runs would cost this test a third of its time
    import_file(store, "rubric", rubric)
    import_file(store, "answers", answers)
    rater, token = store.add_rater("rhea")
    store.assign_k(["ans-zq41"], 1, [rater.rater_id])
    server = serve(db)
    try:
        page, rec = open_page(browser, f"{server.url}/?t={token}", viewport=LAPTOP)
        expect_text(page, "Each assistant turn (4)")
        page.keyboard.press("4")
        expect_text(page, "Overall: 4")
        page.keyboard.press("t")  # the first turn without a score: turn 1, shown in the transcript
        page.wait_for_function("document.querySelector('[data-jl-turn=\"1\"].jl-turn-on') !== null")
        for digit in ("5", "3", "2"):  # each digit scores its turn and moves to the next
            page.keyboard.press(digit)
        page.wait_for_function("document.querySelector('[data-jl-turn=\"4\"].jl-turn-on') !== null")
        page.keyboard.press("Control+Enter")
        expect_text(page, "Score every assistant turn first (1 without a score: turn 4")
        assert store.query("SELECT count(*) AS n FROM labels")["n"][0] == 0
        page.keyboard.press("4")  # focus stayed on turn 4; the three turns given are still there
        # The same scores sit beside each turn in the transcript; a click there changes turn 2's.
        beside = page.locator("[data-jl-turn='2'] .jl-turn-control button[title='Turn 2: 5']")
        assert page.locator("[data-jl-turn='2'] .jl-turn-control [aria-checked='true']").inner_text() == "3"
        beside.click()
        page.wait_for_function("document.querySelector(\"[data-jl-turn='2'] button[title='Turn 2: 5']\")"
                               ".getAttribute('aria-checked') === 'true'")
        page.keyboard.press("Control+Enter")
        expect_text(page, "All 1 answers are rated")
        assert page.evaluate("document.documentElement.scrollHeight <= window.innerHeight + 1")
        assert rec.dialogs == []
        read = rendered_reading(rec.received(page))[0].lower()
        page.close()
    finally:
        server.stop()
    (label_id,) = store.query("SELECT label_id FROM labels")["label_id"]
    assert store.label_turns(rater.rater_id, int(label_id)) == {1: 5.0, 2: 5.0, 3: 2.0, 4: 4.0}
    assert store.query("SELECT overall FROM labels")["overall"].tolist() == [4.0]
    assert "refund started" in read, "the recorder saw no answer text"
    assert [s for s in ("fam-zq", "model-zq", "ans-zq41") if s in read] == []  # nothing identifying reached the browser
