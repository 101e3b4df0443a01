"""Active labelling from start to stop in Chromium, the way a hurried team works.

On a fresh ``judgelab demo`` of its own: the admin chooses a target on the Assignments page,
draws the first batch and double-clicks Apply, then reloads and goes back and forward; the
Overview says the interval waits for the batch. The rater labels the whole queue mixing
shortcuts and clicks, sends one answer with the wrong score and goes back to correct it,
reloads and goes back and forward mid-queue. The rater scores as the judge does, so the first
look meets a target of ±20 pp: the Overview then shows the interval chart and tells the team it
may stop, and the Calibration page names the active estimator and its repeated interval.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from judgelab.labeler.store import Store
from tests.browser.conftest import LAPTOP, expect_text, judgelab, open_page, playwright_api, serve, wait_ready

pytestmark = pytest.mark.browser
expect = playwright_api.expect

def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9']+", text.lower()))


class JudgeScores:
    """The judge's score of the answer on the rater's screen (the test's knowledge, not the page's)."""

    def __init__(self, db: Path) -> None:
        store = Store(db)
        rows = store.query(
            "SELECT a.answer_id, a.text, j.value FROM answers a JOIN judgements j USING (answer_id)"
            " WHERE j.probe = 'pool' AND j.kind = 'pointwise'")
        store.release()
        self.rows = [(words(r.text), int(r.value)) for r in rows.itertuples()]

    def of(self, page: Any) -> int:
        # Answers render verbatim through st.html (the heading in the same element).
        shown = page.get_by_test_id("stHtml").filter(has_text=re.compile(r"^\s*Answer")).first.inner_text()
        seen = words(shown.split("\n", 1)[1])
        overlap = [len(seen & w) / len(seen | w) for w, _ in self.rows]
        best = max(range(len(overlap)), key=overlap.__getitem__)
        assert overlap[best] > 0.8, f"the answer on screen is not one of the pool's ({overlap[best]:.2f})"
        return self.rows[best][1]


def position(page: Any) -> tuple[int, int]:
    """(item, total) of the answer on the rater's screen, once the page shows it."""
    line = page.get_by_text(re.compile(r"Answer \d+ of \d+")).first
    expect(line).to_be_visible(timeout=60_000)
    at, total = re.search(r"Answer (\d+) of (\d+)", line.inner_text()).groups()  # type: ignore[union-attr]
    return int(at), int(total)


def test_a_team_starts_active_labelling_labels_and_is_told_to_stop(tmp_path: Path, browser: Any) -> None:
    db = tmp_path / "demo.duckdb"
    links = dict(re.findall(r"^(rater|admin) link: \S+\?t=(\S+)$", judgelab(db, "demo", "--no-serve"), re.M))
    judge = JudgeScores(db)
    server = serve(db)
    try:
        admin, _ = open_page(browser, f"{server.url}/admin_assignments?t={links['admin']}", viewport=LAPTOP)
        target = admin.get_by_label("Target half-width (pp)")
        target.fill("20")
        target.press("Tab")
        wait_ready(admin)
        admin.get_by_role("button", name="Start: draw batch 1").click()
        expect_text(admin, "Batch 1 of design")
        admin.get_by_role("button", name="Apply this batch to the chosen raters").dblclick()
        expect_text(admin, "assignments made for batch 1")
        admin.reload()
        wait_ready(admin)
        admin.go_back()  # out of the app (the page was opened directly), then back into it
        admin.go_forward()
        wait_ready(admin)
        status = judgelab(db, "design", "--active")
        assert "target ±20 pp" in status and "batch 1:" in status and "batch 2" not in status, status
        drawn = int(re.search(r"batch 1: (\d+) answers drawn", status).group(1))  # type: ignore[union-attr]
        admin.goto(f"{server.url}/admin_overview?t={links['admin']}")
        wait_ready(admin)
        expect_text(admin, f"Batch 1: 0 of {drawn} drawn answers labelled")

        rater, _ = open_page(browser, f"{server.url}/?t={links['rater']}", viewport=LAPTOP)
        at, total = position(rater)
        assert at == 1 and total >= drawn
        for step in range(total):
            score = judge.of(rater)
            if step == 2:  # a slip: the wrong score sent, then back to correct it
                rater.keyboard.press(str(score % 5 + 1))
                rater.keyboard.press("Control+Enter")
                expect_text(rater, f"Answer {at + 1} of {total}")
                rater.keyboard.press("b")
                expect_text(rater, f"Answer {at} of {total}")
                assert judge.of(rater) == score
            rater.keyboard.press(str(score))
            if step % 3 == 1:
                rater.get_by_role("button", name=re.compile("^Submit")).click()
            else:
                rater.keyboard.press("Control+Enter")
            if at == total:
                break
            expect_text(rater, f"Answer {at + 1} of {total}")
            if step == 5:
                rater.reload()
                wait_ready(rater)
            if step == 9:  # the browser's Back steps to the item just labelled; Forward returns
                rater.go_back()
                expect_text(rater, f"Answer {at} of {total}")
                rater.go_forward()
                expect_text(rater, f"Answer {at + 1} of {total}")
            assert position(rater) == (at + 1, total)
            at += 1
        expect_text(rater, f"All {total} answers are rated")

        store = Store(db)
        wrong = store.query(
            "SELECT count(*) AS n FROM labels l JOIN judgements j USING (answer_id) JOIN raters r USING (rater_id)"
            " WHERE j.probe = 'pool' AND r.name = 'demo-rater' AND l.overall <> j.value"
            " AND NOT EXISTS (SELECT 1 FROM labels k WHERE k.supersedes = l.label_id)")["n"].iloc[0]
        store.release()
        assert wrong == 0  # the corrected slip replaced the wrong label

        admin.reload()
        wait_ready(admin)
        expect_text(admin, "Target reached")
        expect_text(admin, "The team may stop labelling")
        expect(admin.get_by_test_id("stVegaLiteChart").first).to_be_visible()
        admin.goto(f"{server.url}/analyst?t={links['admin']}")
        wait_ready(admin)
        expect_text(admin, "active AIPW")
        expect_text(admin, "repeated 95%")
    finally:
        server.stop()
    status = judgelab(db, "design", "--active")
    assert "Target reached" in status and f"batch 1: {drawn} answers drawn" in status, status
