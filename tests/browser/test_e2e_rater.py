"""End to end in a real browser.

A rater opens the invite link, labels three answers with the keyboard only, goes back and edits one,
and the database holds exactly those labels.

Everything the browser receives is recorded (websocket frames, the bodies of the app's
own HTTP responses, the final DOM, the URLs) and searched for the pool's family, model
and variant strings; an answer carrying ``<script>`` and ``<b>`` must render as text.

Runs Streamlit as a subprocess and Debian's chromium through Playwright (no browser
download is possible here).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from judgelab.labeler.importers import import_file
from judgelab.labeler.models import Answer, Task
from judgelab.labeler.store import Store
from tests.app.conftest import build_pool
from tests.browser.conftest import expect_text as _expect_text
from tests.browser.conftest import open_page as _open
from tests.browser.conftest import playwright_api, serve
from tests.conftest import DATA

pytestmark = pytest.mark.browser

SCRIPT_TEXT = "Please try <script>alert(1)</script> and <b>x</b> before calling us again."


@dataclass
class Served:
    """A running app over a small pool."""

    url: str
    store: Store
    token: str
    rater_id: int
    answers: list[str]
    secrets: list[str] = field(default_factory=list)


def _load_pool(path: Path) -> tuple[Store, list[str]]:
    """The bundled data when present (plus the HTML answer), else a pool built here.

    Returns the store and the three answers to assign: the HTML one, and (from the
    bundled data) one ordinary reply and one that names its model, which masking must hide.
    """
    rubric, answers = DATA / "rubric.toml", DATA / "answers.jsonl"
    if rubric.exists() and answers.exists():
        store = Store(path)
        import_file(store, "rubric", rubric)
        import_file(store, "answers", answers)
        family, model = store.query("SELECT family, model FROM answers LIMIT 1").iloc[0]
        store.add_pool(
            [Task("TX", "Ticket: my invoice page shows odd symbols.")],
            [Answer(f"TX-{family}", "TX", str(family), str(model), SCRIPT_TEXT)],
        )
        # A reply that names its own family in the text: only masking keeps it blind.
        named = store.query(
            "SELECT answer_id FROM answers WHERE self_id_spans <> '[]'"
            " AND contains(lower(text), lower(family)) ORDER BY answer_id LIMIT 1"
        )["answer_id"].tolist()
        plain = store.query(
            "SELECT answer_id FROM answers WHERE self_id_spans = '[]' AND task_id <> 'TX'"
            " ORDER BY answer_id LIMIT 1"
        )["answer_id"].tolist()
        return store, [f"TX-{family}", *named, *plain][:3]
    pool = build_pool(path, n_tasks=3)
    family, model = pool.store.query("SELECT family, model FROM answers LIMIT 1").iloc[0]
    pool.store.add_pool(
        [Task("TX", "Ticket: my invoice page shows odd symbols.")],
        [Answer(f"TX-{family}", "TX", str(family), str(model), SCRIPT_TEXT)],
    )
    return pool.store, [f"TX-{family}", pool.originals[2], pool.originals[5]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db = tmp_path_factory.mktemp("e2e") / "app.duckdb"
    store, chosen = _load_pool(db)
    rater, token = store.add_rater("alice")
    store.assign_k(chosen, 1, [rater.rater_id], seed=3)
    pool = store.query("SELECT DISTINCT family, model, variant FROM answers")
    secrets = sorted({str(v) for col in pool.columns for v in pool[col]})
    server = serve(db)
    try:
        yield Served(server.url, store, token, rater.rater_id, chosen, secrets)
    finally:
        server.stop()


def _shown_task(page: Any, prompts: dict[str, str]) -> str:
    """Which task is on screen (matched on its prompt)."""
    main = page.inner_text("[data-testid='stMain']")
    found = [t for t, p in prompts.items() if p.strip().splitlines()[0] in main]
    assert len(found) == 1, found
    return found[0]


def test_no_token_is_denied(served: Served, browser: Any) -> None:
    page, _ = _open(browser, served.url)
    _expect_text(page, "Access denied")
    assert page.get_by_role("button", name=re.compile("Submit")).count() == 0
    page.close()


def test_rater_labels_three_with_the_keyboard_then_edits_one(
    served: Served, browser: Any
) -> None:
    store = served.store
    task_of = dict(store.query("SELECT answer_id, task_id FROM answers").itertuples(index=False))
    prompts = {task_of[a]: str(p) for a, p in store.query(
        "SELECT a.answer_id, t.prompt FROM answers a JOIN tasks t USING (task_id)"
    ).itertuples(index=False) if a in served.answers}

    page, rec = _open(browser, f"{served.url}/?t={served.token}")
    _expect_text(page, "0 of 3 done")
    given: dict[str, int] = {}
    for n, score in enumerate((4, 2, 5), start=1):
        task = _shown_task(page, prompts)
        page.keyboard.press(str(score))  # overall score; untouched criteria follow it
        _expect_text(page, f"Overall: {score}")
        if n == 2:
            # Type a comment (digits included) and submit from inside the text box.
            page.get_by_label("Comment (optional)").focus()
            page.keyboard.type("step 3 is missing")
            playwright_api.expect(page.get_by_text(f"Overall: {score}")).to_be_visible()
        page.keyboard.press("Control+Enter")
        _expect_text(page, f"{n} of 3 done")
        given[task] = score
    _expect_text(page, "All 3 answers are rated")

    # Back twice (to the second answer) and change its score.
    page.keyboard.press("b")
    _expect_text(page, "Answer 3 of 3")
    page.keyboard.press("b")
    _expect_text(page, "Answer 2 of 3")
    edited = _shown_task(page, prompts)
    page.keyboard.press("1")
    _expect_text(page, "Overall: 1")
    page.keyboard.press("Control+Enter")
    _expect_text(page, "All 3 answers are rated")

    # The HTML answer was shown as text, and nothing ran.
    page.keyboard.press("b")
    for k in (3, 2, 1):
        _expect_text(page, f"Answer {k} of 3")
        if "<script>alert(1)</script>" in page.inner_text("[data-testid='stMain']"):
            break
        page.keyboard.press("b")
    playwright_api.expect(page.get_by_text("<script>alert(1)</script>", exact=False)).to_be_visible()
    assert page.get_by_text("<b>x</b>", exact=False).count() == 1
    assert page.locator("[data-testid='stMain'] script").count() == 0
    assert page.locator("[data-testid='stMain'] b").count() == 0
    assert rec.dialogs == []
    assert served.token in page.url  # a reload would resume

    # The database holds exactly those labels, the edit superseding.
    rows = store.query(
        "SELECT label_id, answer_id, overall, comment, supersedes, seconds FROM labels"
        " WHERE rater_id = ? ORDER BY label_id", [served.rater_id]
    )
    assert len(rows) == 4
    first_three = rows.iloc[:3]
    assert {task_of[a]: int(o) for a, o in zip(first_three["answer_id"], first_three["overall"],
                                               strict=True)} == given
    assert first_three["comment"].tolist()[1] == "step 3 is missing"
    edit = rows.iloc[3]
    assert task_of[edit["answer_id"]] == edited and int(edit["overall"]) == 1
    assert int(edit["supersedes"]) == int(rows[rows.answer_id == edit["answer_id"]]
                                          .iloc[0]["label_id"])
    current = store.rater_current_labels(served.rater_id)
    assert sorted(current["answer_id"]) == sorted(served.answers)
    assert (rows["seconds"] > 0).all()  # every label timed on the server's clock

    # Blind: no family, model or variant string in anything the browser received.
    received = rec.received(page).replace(served.token, "")
    # The recorder really recorded: the answers' text arrived over the websocket.
    assert "alert(1)" in "".join(f.decode("utf-8", errors="replace") for f in rec.frames)
    for secret in served.secrets:
        hits = [m.start() for m in re.finditer(re.escape(secret), received, re.IGNORECASE)]
        context = [received[max(0, i - 60): i + 60] for i in hits[:3]]
        assert not hits, f"{secret!r} reached the browser: {json.dumps(context)}"
    page.close()
