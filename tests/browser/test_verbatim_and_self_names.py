"""In Chromium: answers render character for character, and no self-name reaches the rater.

A pool is served whose answers are (a) texts Markdown would change (`` -- ``, ``$5 and
$10``, single newlines, ``--flag``, indented code, ``<script>``) and (b) every phrase of
the self-identification corpus (``tests/data/self_id/self_identifying.jsonl``), grouped a
few dozen to an answer, imported through the store's one write path. A rater labels every
item by keyboard on the Rate page. For each item the answer box's DOM text must equal the
answer's text (a); and no corpus name may be readable (as a rater reads it: markup,
character references, invisible characters and look-alikes undone) in the rendered text
or anywhere in the websocket frames the browser received (b).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from judgelab.labeler.blinding import rendered_reading
from judgelab.labeler.models import Answer, Rubric, Task
from judgelab.labeler.store import Store
from tests.app.conftest import RUBRIC
from tests.app.test_verbatim_answers import TRICKY
from tests.browser.conftest import expect_text, open_page, playwright_api, serve, wait_ready

pytestmark = pytest.mark.browser

CORPUS = Path(__file__).resolve().parents[1] / "data" / "self_id" / "self_identifying.jsonl"
#: The answer boxes' verbatim text blocks, as the page draws them.
BOXES = "[data-testid='stMain'] [data-testid='stHtml'] div[style*='pre-wrap']"


@dataclass
class Served:
    """The running app, the rater's token, and what each answer says."""

    url: str
    token: str
    store: Store
    texts: dict[str, str]
    names: list[str]


def _corpus() -> list[dict[str, Any]]:
    with CORPUS.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db = tmp_path_factory.mktemp("verbatim") / "app.duckdb"
    store = Store(db)
    rubric: Rubric = RUBRIC
    store.add_rubric(rubric)
    rows = _corpus()
    # The pool holds every family and model a corpus row names as its own.
    pool = sorted({n for r in rows for n in r.get("pool", [])})
    owners = [(pool[i], pool[(i + 1) % len(pool)]) for i in range(len(pool))]
    task = Task("t-verbatim", "Please help with my account -- and the $5 fee.")
    texts: dict[str, str] = {f"tricky-{i}": text for i, text in enumerate(TRICKY)}
    for i in range(0, len(rows), 36):
        texts[f"selfid-{i // 36}"] = "\n".join(r["text"] for r in rows[i : i + 36])
    answers = [Answer(aid, task.task_id, *owners[i % len(owners)], text) for i, (aid, text) in enumerate(texts.items())]
    store.add_pool([task], answers)
    rater, token = store.add_rater("rhea")
    store.assign_k(list(texts), 1, [rater.rater_id], seed=5)
    server = serve(db)
    try:
        yield Served(server.url, token, store, texts, sorted({n for r in rows for n in r["names"]}))
    finally:
        server.stop()


def _readable(name: str, read: str) -> list[str]:
    """Excerpts of ``read`` where ``name`` (as a rater reads it) stands as a whole word."""
    wanted = re.escape(rendered_reading(name)[0])
    return [read[max(0, m.start() - 50) : m.end() + 50]
            for m in re.finditer(rf"(?<![A-Za-z0-9]){wanted}(?![A-Za-z0-9])", read, re.IGNORECASE)][:2]


def test_answers_render_verbatim_and_no_self_name_reaches_the_rater(served: Served, browser: Any) -> None:
    page, rec = open_page(browser, f"{served.url}/?t={served.token}")
    expect_text(page, "done")
    total = len(served.texts)
    shown: list[tuple[str, str]] = []  # (textContent, innerText) of each item's answer box
    screens: list[str] = []  # the main area's text as laid out, per item
    elements: list[str] = []  # elements made from a text (there must be none)
    for done in range(total):
        main = page.locator("[data-testid='stMain']")
        playwright_api.expect(main).to_contain_text("Please help with my account")
        screens.append(main.inner_text().replace("\u00a0", " "))
        content = page.locator(BOXES).evaluate_all("els => els.map(e => [e.textContent, e.innerText])")
        shown += [(c, i) for c, i in content if not c.startswith("Please help")]
        # Inert: nothing in the texts became an element, nothing ran.
        made = page.locator("[data-testid='stMain'] :is([data-testid='stHtml'], [data-testid='stMarkdown'])"
                            " :is(script, img, a, b, em, code, h1, ol, blockquote)")
        elements += [made.nth(i).evaluate("e => e.outerHTML") for i in range(made.count())]
        page.keyboard.press("4")
        page.keyboard.press("Control+Enter")
        expect_text(page, f"{done + 1} of {total} done")
    wait_ready(page)
    assert rec.dialogs == []

    # (a) Every tricky text is on the screen exactly as written (as laid out: innerText), and
    # its box holds exactly its characters (textContent).
    for text in TRICKY:
        assert any(text.replace("\u00a0", " ") in screen for screen in screens), (
            f"{text!r} was not shown verbatim; the screens read: {json.dumps(screens, ensure_ascii=False)}")
        assert text in {c for c, _ in shown}
    assert "Please help with my account -- and the $5 fee." in screens[0]
    assert elements == []

    # (b) The self-identifying answers reached the page masked, on screen and in the frames.
    rendered = rendered_reading("\n".join(i for _, i in shown))[0]
    assert rendered.count("[redacted]") >= len(_corpus()), "the walk saw fewer masked names than the corpus has"
    frames = rendered_reading("\n".join(f.decode("utf-8", errors="replace") for f in rec.frames))[0]
    assert "pass --flag" in frames, "the recorder saw no answer text; it would miss a leak too"
    leaks = {name: hits for name in served.names
             if (hits := _readable(name, rendered) + _readable(name, frames))}
    assert leaks == {}, json.dumps(leaks, ensure_ascii=False, indent=1)
    page.close()
