"""Rater quality in Chromium (issue 36): gold items, attention checks, pauses and qualification.

A project of the bundled rubric and answers, with its own server (quality settings are
project-wide, so the shared demo is left alone):

* a rater who answers gold and attention items wrongly, from the keyboard on the real page,
  is flagged on the admin's Raters page, the admin pauses them there, and the rater's page
  then says so and shows no live item; nothing the rater's browser received tells a gold
  item apart (silent mode);
* qualification: a new rater sees only the gold items first, and the live ones once enough
  of them are right;
* gold and attention labels never reach calibration's labels or the labels export.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import (
    LAPTOP,
    expect_text,
    go,
    judgelab,
    main_text,
    open_page,
    playwright_api,
    serve,
    wait_ready,
)

pytestmark = pytest.mark.browser
expect = playwright_api.expect

SHOTS = Path("/tmp/judgelab-browser-shots")

#: Every gold item's correct score is 5 and the attention check asks for 2, so a rater who
#: presses 1 throughout gets every one wrong.
GOLD = """id,kind,prompt,text,score,explanation
qg-alpha,gold,"Please cancel my plan at the end of the month.","Done: it cancels on the last day.",5,secret-why-alpha
qg-bravo,gold,"Can I change the invoice address?","Yes: Settings > Billing > Invoice address.",5,secret-why-bravo
qg-charlie,gold,"How do I add a teammate?","Settings > Members > Invite, then their email.",5,secret-why-charlie
qa-delta,attention,"Quick question about exports.","A check: give it the overall score 2.",2,secret-why-delta
"""


@dataclass
class Project:
    """The served project and its admin's token."""

    url: str
    db: Path
    store: Any
    admin_token: str

    def rater(self, name: str, n_live: int) -> tuple[int, str]:
        """A new rater with ``n_live`` live answers (one per task, none given to anyone before)."""
        rater, token = self.store.add_rater(name)
        answers = self.store.answers(variant="original")
        taken = set(self.store.query("SELECT answer_id FROM assignments")["answer_id"])
        free = answers[~answers["answer_id"].isin(taken)].groupby("task_id").head(1)
        self.store.assign_k(free["answer_id"].tolist()[:n_live], 1, [rater.rater_id], seed=5)
        return rater.rater_id, token


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """The bundled rubric and answers, the gold file above, an admin; served."""
    from judgelab.labeler.examples import example_path
    from judgelab.labeler.store import Store

    folder = tmp_path_factory.mktemp("quality")
    db = folder / "q.duckdb"
    judgelab(db, "init")
    judgelab(db, "import", "rubric", str(example_path("rubric.toml")))
    judgelab(db, "import", "answers", str(example_path("answers.jsonl")))
    (folder / "gold.csv").write_text(GOLD, encoding="utf-8")
    judgelab(db, "gold", "import", str(folder / "gold.csv"))
    store = Store(db)
    _, admin_token = store.add_rater("boss", role="admin")
    server = serve(db)
    try:
        yield Project(server.url, db, store, admin_token)
    finally:
        server.stop()


def _press_through(page: Any, key: str, n: int) -> None:
    """Score ``n`` items with ``key`` and Ctrl+Enter, waiting for each to come."""
    for i in range(n):
        expect_text(page, f"Answer {i + 1} of {n}")
        page.keyboard.press(key)
        page.keyboard.press("Control+Enter")


def test_a_careless_rater_is_flagged_paused_and_told(project: Project, browser: Any) -> None:
    judgelab(project.db, "gold", "settings", "--rate", "0.5", "--qualify", "0", "--mode", "silent")
    rater_id, token = project.rater("careless-cody", 8)
    queue = project.store.rater_queue(rater_id)
    assert len(queue) == 12  # 8 live + 4 quality items, mixed in
    page, rec = open_page(browser, f"{project.url}/?t={token}", viewport=LAPTOP)
    _press_through(page, "1", len(queue))
    expect_text(page, f"All {len(queue)} answers are rated")
    received = rec.received(page)
    # Silent mode: no id, kind or explanation of a quality item reached the rater's browser.
    for secret in ("qg-alpha", "qg-bravo", "qg-charlie", "qa-delta", "secret-why", "quality_items"):
        assert secret not in received, secret
    assert "expected score" not in received

    admin, _ = open_page(browser, f"{project.url}/?t={project.admin_token}", viewport=LAPTOP)
    go(admin, "Raters")
    expect_text(admin, "Rater quality")
    text = main_text(admin)
    assert "careless-cody" in text and "gold accuracy 0%" in text and "failed 1 attention check" in text
    SHOTS.mkdir(parents=True, exist_ok=True)
    admin.get_by_text("Rater quality").first.scroll_into_view_if_needed()
    admin.screenshot(path=str(SHOTS / "raters-quality-1366x768.png"))
    # Pick the rater as a keyboard user does: open the box, type the name, Enter.
    admin.get_by_label("Rater to pause").click()
    admin.keyboard.type("careless-cody")
    admin.keyboard.press("Enter")
    wait_ready(admin)
    expect(admin.get_by_role("button", name="Pause", exact=True)).to_be_enabled()
    admin.get_by_role("button", name="Pause", exact=True).click()
    expect_text(admin, "Paused careless-cody")
    assert project.store.rater_hold(rater_id).state == "paused"
    go(admin, "Overview")
    expect_text(admin, "Rater quality")
    assert "careless-cody** (paused)" in main_text(admin) or "careless-cody (paused)" in main_text(admin)
    admin.screenshot(path=str(SHOTS / "overview-quality-1366x768.png"))

    # The rater's page now says so; new live items are held back, nothing is deleted.
    project.store.assign_k(
        project.store.answers(variant="original")["answer_id"].tolist()[-1:], 1, [rater_id], seed=9)
    page.reload()
    expect_text(page, "Your admin has paused your queue")
    # Nothing is shown, not even the done gold items: Back must not walk through them alone.
    assert project.store.rater_queue(rater_id) == []
    assert "of 4 done" not in main_text(page) and "Back" not in main_text(page)
    assert len(project.store.quality_labels().query("rater_id == @rater_id")) == 4
    page.close()
    admin.close()


def test_qualification_holds_back_live_items(project: Project, browser: Any) -> None:
    judgelab(project.db, "gold", "settings", "--rate", "0", "--qualify", "2", "--qualify-min", "1.0")
    rater_id, token = project.rater("new-nora", 3)
    page, _ = open_page(browser, f"{project.url}/?t={token}", viewport=LAPTOP)
    expect_text(page, "Answer 1 of 2")  # the two gold items only
    assert "paused" not in main_text(page)  # qualifying is not announced: the items look like any others
    page.keyboard.press("5")
    page.keyboard.press("Control+Enter")
    expect_text(page, "Answer 2 of 2")
    page.keyboard.press("5")
    page.keyboard.press("Control+Enter")
    # Both right: the live items appear after them.
    expect_text(page, "Answer 3 of 5")
    assert project.store.rater_hold(rater_id) is None
    page.close()


def test_gold_never_reaches_calibration_or_the_labels_export(project: Project) -> None:
    quality = set(project.store.quality_items()["answer_id"])
    assert len(project.store.quality_labels()) >= 6  # the two tests above labelled them
    assert not quality & set(project.store.human_labels()["answer_id"])
    assert not quality & set(project.store.answer_labels()["answer_id"])
    out = project.db.parent / "labels.csv"
    judgelab(project.db, "export", "labels", "--out", str(out))
    assert not any(q in out.read_text(encoding="utf-8") for q in quality)
    marked = project.db.parent / "gold-labels.csv"
    judgelab(project.db, "gold", "export", "--out", str(marked))
    assert "qg-alpha" in marked.read_text(encoding="utf-8") and ",gold," in marked.read_text(encoding="utf-8")
