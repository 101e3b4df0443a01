"""In Chromium: a 500-message, ~1 MB agent trace is usable on the Rate page within seconds (issue 52, 13).

Drawn as some 1,500 Streamlit elements it took about two minutes before its Submit showed; drawn
as one inert HTML block it shows in seconds. The time to a visible Submit is printed (a bench
figure, not asserted tightly); a submit stores the label; the answer text stays inert and nothing
identifying reaches the browser.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from judgelab.labeler.blinding import rendered_reading
from tests.browser.conftest import LAPTOP, Recorder, expect_text, judgelab, serve

pytestmark = pytest.mark.browser

PROMPT = "Sort out the refund for order 1042."
POOL = ("fam-north", "model-north-1")
SECRET = ("Claude", "Anthropic", "OpenAI", *POOL)
STEP = "Checked the <b>ledger</b> entry and the **refund** window; nothing unusual in this step. " * 14


def long_trace(turns: int = 249) -> list[dict[str, Any]]:
    """A system prompt naming makers, a user ask, ``turns`` assistant calls with results, a final turn."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are Claude, made by Anthropic."},
                                  {"role": "user", "content": PROMPT}]
    for k in range(turns):
        msgs.append({"role": "assistant", "content": f"Step {k}: {STEP}", "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": "openai_lookup",
                                                             "arguments": json.dumps({"step": k})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"result {k}: {STEP}{STEP}"})
    msgs.append({"role": "assistant", "content": "Refund started; FINAL-LONG."})
    return msgs


def test_a_500_message_trace_shows_its_submit_in_seconds_and_a_submit_stores(tmp_path: Path, browser: Any) -> None:
    messages = long_trace()
    row = {"task_id": "t1", "prompt": PROMPT, "answer_id": "a1", "family": POOL[0], "model": POOL[1],
           "messages": messages}
    file = tmp_path / "trace.jsonl"
    file.write_text(json.dumps(row) + "\n")
    assert len(messages) >= 500 and file.stat().st_size > 900_000
    db = tmp_path / "t.duckdb"
    from judgelab.labeler.examples import example_path
    from judgelab.labeler.store import Store

    judgelab(db, "init")
    judgelab(db, "import", "rubric", str(example_path("rubric.toml")))
    judgelab(db, "import", "answers", str(file))
    store = Store(db)
    rater, token = store.add_rater("rhea")
    store.assign_k(["a1"], 1, [rater.rater_id], seed=1)
    server = serve(db)
    try:
        # A server's first visitor loads the app's modules (issue 53's cold first page, not this one's):
        # a page without a link first, so the figure is the trace's own.
        warm = browser.new_page(viewport=dict(LAPTOP))
        warm.goto(server.url)
        warm.get_by_text("link", exact=False).first.wait_for(timeout=120_000)
        warm.close()
        start = time.monotonic()
        # open_page waits a minute for the script; the first view of a 1 MB trace masks it first.
        page = browser.new_page(viewport=dict(LAPTOP))
        rec = Recorder()
        rec.attach(page)
        page.goto(f"{server.url}/?t={token}")
        submit = page.get_by_role("button", name=re.compile("^Submit"))
        submit.wait_for(state="visible", timeout=180_000)
        expect_text(page, "FINAL-LONG", timeout=180_000)
        shown = time.monotonic() - start
        print(f"\n500-message trace ({file.stat().st_size / 1e6:.2f} MB): Submit and the last turn visible "
              f"after {shown:.1f} s")
        assert shown < 90, f"the page took {shown:.0f} s"  # generous: about two minutes before (issue 52)
        main = page.locator("[data-testid='stMain']")
        # Folded, and inert: the results open on a click, no <b> became bold.
        assert main.get_by_text("Tool result: [redacted]_lookup", exact=False).count() >= 1 or \
            main.locator("details").count() >= 249
        assert page.locator("[data-testid='stMain'] b").count() == 0 and rec.dialogs == []
        page.keyboard.press("4")
        expect_text(page, "Overall: 4")
        page.keyboard.press("Control+Enter")
        expect_text(page, "All 1 answers are rated", timeout=120_000)
        received = rec.received(page)
        page.close()
    finally:
        server.stop()
    labels = store.query("SELECT answer_id, overall FROM labels")
    assert labels["overall"].tolist() == [4.0] and labels["answer_id"].tolist() == ["a1"]
    read = rendered_reading(received)[0].lower()
    assert "final-long" in read, "the recorder saw no answer text"
    assert [s for s in SECRET if s.lower() in read] == []
