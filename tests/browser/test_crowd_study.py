"""A crowd study in a real browser (issue 57): ten Prolific participants through one study link.

On the package's served demo: a study of 19 answers, two per participant, k = 1. The first
participant consents, rates one answer and leaves; the second rates one, closes the tab, opens the
study link again and resumes; seven more rate theirs and see the completion code. The tenth comes
once the leaver's time limit has passed (waited on as a condition: the deadline the store holds),
so the leaver's unrated answer has gone to whoever consented first after it. Then every answer has
exactly one rater who counts, every acknowledged submit is a stored label, and no participant's
browser received another participant's id, or a family, model or answer id.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

from judgelab.labeler.store._core import DEAD_SCORE_ASSIGNMENTS
from tests.browser.conftest import Demo, expect_text, find_all, judgelab, open_page, playwright_api

pytestmark = pytest.mark.browser

#: Seconds from consent: long enough for an honest participant on a loaded machine (they take ~15 s),
#: short enough that it has passed by the time the tenth arrives (the test waits for it if not).
TIME_LIMIT = 75.0
CODE = "C0MPL3TE-7Q"
CONSENT = "CONSENT-TEXT: you agree that your ratings are stored without your name."
PIDS = [f"5f0c{i:02d}a1b2c3d4e5f6a7b8c9d0" for i in range(10)]


def test_ten_prolific_participants_rate_leave_resume_and_finish(demo: Demo, browser: Any) -> None:
    store = demo.store
    taken = set(store.query("SELECT answer_id FROM assignments WHERE kind = 'score'")["answer_id"])
    withheld = set(store.withheld_answers()["answer_id"])
    originals = store.answers(variant="original")
    pool = sorted(a for a in originals["answer_id"] if a not in taken | withheld)[:19]
    assert len(pool) == 19
    study = store.create_crowd_study("e2e", quota=2, k=1, time_limit=TIME_LIMIT, completion_code=CODE,
                                     answer_ids=pool)
    store.set_setting("crowd:e2e", "crowd_consent", CONSENT)
    store.set_setting("crowd:e2e", "crowd_instructions", "Score each answer against the rubric.")
    received: dict[str, str] = {}
    acked: dict[str, int] = {}

    def arrive(i: int, *, session: str | None = None) -> Any:
        url = (f"{demo.url}/?crowd={study.link_key}&PROLIFIC_PID={PIDS[i]}&STUDY_ID=S1"
               f"&SESSION_ID={session or f'sess{i}'}")
        page, rec = open_page(browser, url)
        # The participant's id leaves the address bar: only their own token stays.
        playwright_api.expect(page).to_have_url(re.compile(r"/\?t=[A-Za-z0-9_-]+(#[^?]*)?$"))
        return page, rec

    def start(page: Any) -> None:
        expect_text(page, "CONSENT-TEXT")
        page.get_by_role("button", name="I agree, start").click()
        expect_text(page, "Answer 1 of 2")

    def rate(page: Any, i: int, then: str) -> None:
        page.keyboard.press("4")
        page.keyboard.press("Control+Enter")
        expect_text(page, then)
        acked[PIDS[i]] = acked.get(PIDS[i], 0) + 1

    def close(page: Any, rec: Any, i: int) -> None:
        received[PIDS[i]] = received.get(PIDS[i], "") + rec.received(page)
        page.close()

    # 1: the leaver rates one answer and goes away.
    page, rec = arrive(0)
    start(page)
    assert "Compare" not in page.content() and "Padding audit" not in page.content()  # the Rate page alone
    rate(page, 0, "Answer 2 of 2")
    close(page, rec, 0)
    # 2: rates one, closes the tab, opens the study link again: the second answer, then the code.
    page, rec = arrive(1)
    start(page)
    rate(page, 1, "Answer 2 of 2")
    close(page, rec, 1)
    page, rec = arrive(1)
    expect_text(page, "Answer 2 of 2")
    rate(page, 1, CODE)
    close(page, rec, 1)
    # 3-9: rate both and see the completion code.
    for i in range(2, 9):
        page, rec = arrive(i)
        start(page)
        rate(page, i, "Answer 2 of 2")
        rate(page, i, CODE)
        close(page, rec, i)
    # 10: after the leaver's deadline (a condition the store holds, not a fixed sleep) their answer is free.
    leaver = store.query("SELECT rater_id, deadline FROM crowd_participants WHERE participant_id = ?", [PIDS[0]])
    leaver_id, deadline = int(leaver.iloc[0, 0]), float(leaver.iloc[0, 1])
    while time.time() <= deadline:
        time.sleep(min(1.0, deadline - time.time() + 0.05))
    page, rec = arrive(9)
    start(page)
    rate(page, 9, "Answer 2 of 2")
    rate(page, 9, CODE)
    close(page, rec, 9)

    # The leaver's unrated answer went to another participant, who consented after the leaver's deadline
    # (each participant's quota is dealt at consent; whoever consented first after it got the answer).
    held = store.query("SELECT a.answer_id, p.participant_id, p.started FROM assignments a JOIN crowd_participants p"
                       " USING (rater_id) WHERE a.kind = 'score'")
    unrated = set(held.loc[held["participant_id"] == PIDS[0], "answer_id"]) - set(
        store.query("SELECT answer_id FROM labels WHERE rater_id = ?", [leaver_id])["answer_id"])
    assert len(unrated) == 1
    takers = held[held["answer_id"].isin(unrated) & (held["participant_id"] != PIDS[0])]
    assert len(takers) == 1 and float(takers["started"].iloc[0]) > deadline
    # Exactly k = 1: every answer of the study has one rater who counts; acked = stored.
    live = store.query(f"SELECT answer_id, count(*) AS n FROM assignments WHERE kind = 'score'"
                       f" AND assignment_id NOT IN ({DEAD_SCORE_ASSIGNMENTS}) AND answer_id IN (SELECT unnest(?))"
                       " GROUP BY answer_id", [pool])
    assert sorted(live["answer_id"]) == pool and set(live["n"]) == {1}
    stored = store.query("SELECT p.participant_id, count(*) AS n FROM labels l JOIN crowd_participants p"
                         " USING (rater_id) GROUP BY p.participant_id")
    assert dict(zip(stored["participant_id"], stored["n"].astype(int), strict=True)) == acked
    assert sum(acked.values()) == 19
    # What each browser received: no other participant's id, no family, model or answer id.
    models = list(originals["model"].unique())
    for pid, text in received.items():
        others = [p for p in PIDS if p != pid and p in text]
        assert others == [], f"{pid}'s browser received {others}"
        leaks = {s: find_all(s, text) for s in [*models, *pool] if find_all(s, text)}
        assert leaks == {}, leaks
    # The admin's record: JSON from the CLI.
    rows = {r["participant_id"]: r for r in json.loads(judgelab(demo.db, "crowd", "participants", "e2e", "--json"))}
    assert rows[PIDS[0]]["outcome"] == "timed_out" and rows[PIDS[0]]["pay_seconds"] == pytest.approx(TIME_LIMIT)
    assert all(rows[p]["outcome"] == "completed" and rows[p]["done"] == 2 for p in PIDS[1:])
    assert store.crowd_status(leaver_id).outcome == "timed_out"  # type: ignore[union-attr]
