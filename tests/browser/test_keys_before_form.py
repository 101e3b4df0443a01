"""Keys pressed before the rating form is drawn (issue 29): held, shown held, then acted on.

A server that pauses between an item's text and its form (``_late_form_server.py``, as a
loaded server's script run does) leaves the rater looking at the answer with no form yet.
Keys pressed then are held by the key catcher (``views/_catcher.js``), shown held, and
acted on in order by the form when it comes; on the finished screen they are named as not
used.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import LAPTOP, Demo, expect_text, playwright_api, serve

pytestmark = pytest.mark.browser
expect = playwright_api.expect

#: Seconds between the item's text and its form on the late server.
FORM_DELAY = 3.0


@pytest.fixture(scope="module")
def form_gate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """While this file exists the late server holds every rating form back (a test creates it)."""
    return tmp_path_factory.mktemp("gate") / "hold-the-form"


@pytest.fixture(scope="module")
def late_url(demo: Demo, form_gate: Path) -> Iterator[str]:
    """A server on the demo's file that draws every rating form :data:`FORM_DELAY` s after the text."""
    server = serve(demo.db, launcher=Path(__file__).with_name("_late_form_server.py"),
                   env={"JUDGELAB_FORM_DELAY": str(FORM_DELAY), "JUDGELAB_FORM_GATE": str(form_gate)})
    try:
        yield server.url
    finally:
        server.stop()


def overall(demo: Demo, rater_id: int) -> list[float]:
    return demo.store.query("SELECT overall FROM labels WHERE rater_id = ? ORDER BY label_id",
                            [rater_id])["overall"].tolist()


def chosen(page: Any) -> Any:
    return page.get_by_role("radiogroup", name="Overall score", exact=True).get_by_role("radio", checked=True)


def test_keys_pressed_before_the_form_is_drawn_are_held_then_acted_on(
    demo: Demo, browser: Any, late_url: str, form_gate: Path
) -> None:
    rater_id, token = demo.new_rater("early-erin", score=3)
    page = browser.new_page(viewport=LAPTOP)
    # The first form is held back until the keys are shown held: on a loaded machine the
    # fixed delay alone could end between two key presses.
    form_gate.touch()
    page.goto(f"{late_url}/?t={token}")
    # The item is on screen, its form not yet: the rater scores, submits and scores the next.
    expect(page.get_by_text("Answer 1 of 3")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Task", exact=True).first).to_be_visible()
    assert page.get_by_role("radiogroup", name="Overall score", exact=True).count() == 0
    for key in ("4", "Control+Enter", "3"):
        page.keyboard.press(key)
    expect(page.locator(".jl-held")).to_have_text("Loading the form… keys held for it: 4, Ctrl+Enter, 3")
    form_gate.unlink()
    expect_text(page, "Answer 2 of 3")
    expect(chosen(page)).to_have_text("3", timeout=30_000)
    expect(page.locator(".jl-held")).to_be_hidden()
    assert overall(demo, rater_id) == [4]
    page.close()
