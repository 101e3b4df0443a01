"""In Chromium at 1366x768: a rater rates 20-turn agent traces by keys, blind (issue 46).

Two traces (the Anthropic form and the OpenAI form) whose system prompt, tool names and tool
arguments name models and makers are imported with ``judgelab import answers``; a rater opens
Rate, opens a folded tool call, rates both by keys, and the labels land. Nothing the browser
received (websocket frames, HTML, DOM) names a maker, a product or the pool's families and
models, and the answer text stays inert.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judgelab.labeler.blinding import rendered_reading
from tests.browser.conftest import LAPTOP, expect_text, judgelab, open_page, serve

pytestmark = pytest.mark.browser

PROMPT = "Sort out the refund for order 1042."
POOL = [("fam-north", "model-north-1"), ("fam-south", "model-south-2")]
SECRET = ("Claude", "Anthropic", "Gemini", "OpenAI", "ChatGPT", *(n for pair in POOL for n in pair))
LONG = "line of the shipping log; " * 150  # an observation long enough to fold


def _anthropic(n: int) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    for k in range(9):
        msgs.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Step {k}: checking <b>the</b> order **now**."},
            {"type": "tool_use", "id": f"u{k}", "name": "claude_lookup", "input": {"order": 1042, "step": k}}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"u{k}",
                                                  "content": LONG if k == 3 else f"result {k}"}]})
    msgs.append({"role": "assistant", "content": "Refund started; FINAL-NORTH."})
    return {"task_id": "t1", "prompt": PROMPT, "answer_id": f"a{n}", "family": POOL[0][0], "model": POOL[0][1],
            "messages": {"system": "You are Claude, a support agent made by Anthropic.", "messages": msgs}}


def _openai(n: int) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are ChatGPT, built by OpenAI."},
                                  {"role": "user", "content": PROMPT}]
    for k in range(9):
        msgs.append({"role": "assistant", "content": f"Step {k}.", "tool_calls": [
            {"id": f"c{k}", "type": "function",
             "function": {"name": "search", "arguments": json.dumps({"engine": "Gemini", "step": k})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"result {k}"})
    msgs.append({"role": "assistant", "content": "Refund started; FINAL-SOUTH."})
    return {"task_id": "t2", "prompt": PROMPT + " (2)", "answer_id": f"b{n}", "family": POOL[1][0],
            "model": POOL[1][1], "messages": msgs}


def test_a_rater_rates_twenty_turn_traces_by_keys_and_nothing_identifying_leaks(tmp_path: Path, browser: Any) -> None:
    file = tmp_path / "traces.jsonl"
    file.write_text(json.dumps(_anthropic(1)) + "\n" + json.dumps(_openai(1)) + "\n")
    db = tmp_path / "t.duckdb"
    from judgelab.labeler.examples import example_path
    from judgelab.labeler.store import Store

    judgelab(db, "init")
    judgelab(db, "import", "rubric", str(example_path("rubric.toml")))
    judgelab(db, "import", "answers", str(file))
    store = Store(db)
    rater, token = store.add_rater("rhea")
    store.assign_k(["a1", "b1"], 1, [rater.rater_id], seed=1)
    server = serve(db)
    try:
        page, rec = open_page(browser, f"{server.url}/?t={token}", viewport=LAPTOP)
        expect_text(page, "Answer 1 of 2")
        expect_text(page, "rated turn")
        main = page.locator("[data-testid='stMain']")
        # Roles apart; tool calls and results folded and named; the long observation folded.
        assert main.get_by_text("System prompt", exact=True).count() == 1
        assert main.get_by_text("Assistant", exact=True).count() == 10
        assert main.get_by_text("rated turn").count() == 1
        expanders = main.locator("[data-testid='stExpander']")
        assert expanders.count() == 18
        assert not any(e.is_visible() for e in main.get_by_text("line of the shipping log").all())
        # Open a tool call with the mouse, then rate by keys: the keys still reach the form.
        expanders.first.locator("summary").click()
        page.keyboard.press("4")
        expect_text(page, "Overall: 4")
        page.keyboard.press("Control+Enter")
        expect_text(page, "1 of 2 done")
        page.keyboard.press("2")
        expect_text(page, "Overall: 2")
        page.keyboard.press("Control+Enter")
        expect_text(page, "All 2 answers are rated")
        # The page never scrolled at 1366x768: the transcript scrolls in its box.
        assert page.evaluate("document.documentElement.scrollHeight <= window.innerHeight + 1")
        assert page.locator("[data-testid='stMain'] b").count() == 0 and rec.dialogs == []
        page.keyboard.press("b")
        expect_text(page, "Answer 2 of 2")
        received = rec.received(page)
        page.close()
    finally:
        server.stop()
    labels = store.query("SELECT answer_id, overall FROM labels ORDER BY label_id")
    assert sorted(labels["overall"].tolist()) == [2.0, 4.0] and set(labels["answer_id"]) == {"a1", "b1"}
    read = rendered_reading(received)[0].lower()
    assert "final-north" in read or "final-south" in read, "the recorder saw no answer text"
    assert [s for s in SECRET if s.lower() in read] == []
