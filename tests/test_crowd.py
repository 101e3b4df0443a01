"""Crowd studies in the store (issue 57): the link, participants, quota, time limit, exactly-k, resume."""

from __future__ import annotations

import json

import pytest

from judgelab.labeler.errors import AccessError, InputError
from judgelab.labeler.importers import parse_rubric
from judgelab.labeler.models import Answer, Task
from judgelab.labeler.quality import QualityItem, QualitySettings
from judgelab.labeler.store import Store
from judgelab.labeler.store._core import DEAD_SCORE_ASSIGNMENTS
from tests.conftest import DATA, invoke

CRITERIA = [c.criterion_id for c in parse_rubric(DATA / "rubric.toml").criteria]
T0 = 1_000_000.0


def seed(store: Store, n: int = 5) -> list[str]:
    """``n`` answers to ``n`` tasks under the bundled rubric."""
    store.add_rubric(parse_rubric(DATA / "rubric.toml"))
    store.add_pool([Task(f"t{i}", f"Help {i}") for i in range(n)],
                   [Answer(f"a{i}", f"t{i}", "fam", "m", f"Reset the router ({i}).") for i in range(n)])
    return [f"a{i}" for i in range(n)]


def held(store: Store, rater_id: int) -> list[str]:
    return sorted(store.query("SELECT answer_id FROM assignments WHERE rater_id = ? AND kind = 'score'",
                              [rater_id])["answer_id"])


def rate_all(store: Store, rater_id: int, *, now: float) -> int:
    """Label every open item of the rater (as the page would); how many."""
    n = 0
    for item in store.rater_queue(rater_id):
        if not item.done:
            store.add_label(rater_id, item.assignment_id, overall=4, criteria=dict.fromkeys(CRITERIA, 4.0))
            n += 1
    return n


def live_raters(store: Store) -> dict[str, int]:
    """Raters per answer that count towards k (dead assignments left out)."""
    frame = store.query(f"SELECT answer_id, count(*) AS n FROM assignments WHERE kind = 'score'"
                        f" AND assignment_id NOT IN ({DEAD_SCORE_ASSIGNMENTS}) GROUP BY answer_id")
    return dict(zip(frame["answer_id"], frame["n"].astype(int), strict=True))


@pytest.mark.both_backends
def test_quota_time_limit_and_exactly_k_with_a_leaver_and_a_resume(store: Store) -> None:
    answers = seed(store, 5)
    study = store.create_crowd_study("pilot", quota=2, k=1, time_limit=60, completion_code="C0DE42")
    ann, ann_token = store.crowd_enter(study.link_key, "PID_ANN", session_id="S1", now=T0)
    assert store.authenticate(ann_token) == ann and ann.role == "rater" and "PID" not in ann.name
    assert store.crowd_status(ann.rater_id, now=T0).started is None  # type: ignore[union-attr]
    assert held(store, ann.rater_id) == []  # nothing is dealt before consent
    status = store.crowd_start(ann.rater_id, now=T0)
    assert (status.dealt, status.open, status.deadline) == (2, 2, T0 + 60)
    # bob consents and rates everything; carl (the leaver) consents, rates one and goes away.
    bob, _ = store.crowd_enter(study.link_key, "PID_BOB", now=T0)
    store.crowd_start(bob.rater_id, now=T0)
    rate_all(store, bob.rater_id, now=T0)
    carl, carl_token = store.crowd_enter(study.link_key, "PID_CARL", now=T0 + 1)
    store.crowd_start(carl.rater_id, now=T0 + 1)
    assert len(held(store, carl.rater_id)) == 1  # five answers, k = 1: one was left
    assert store.crowd_finish(bob.rater_id, now=T0 + 5).outcome == "completed"  # type: ignore[union-attr]
    # ann resumes with the same participant id: same rater, same items, a new token (the old one stops).
    again, token2 = store.crowd_enter(study.link_key, "PID_ANN", session_id="S1", now=T0 + 10)
    assert again.rater_id == ann.rater_id and held(store, ann.rater_id) == sorted(held(store, again.rater_id))
    with pytest.raises(AccessError):
        store.authenticate(ann_token)
    assert store.authenticate(token2).rater_id == ann.rater_id
    # Another session with ann's participant id is refused: the link and an id alone open nothing.
    with pytest.raises(AccessError, match="another session"):
        store.crowd_enter(study.link_key, "PID_ANN", session_id="S2", now=T0 + 10)
    rate_all(store, ann.rater_id, now=T0 + 20)
    assert store.crowd_finish(ann.rater_id, now=T0 + 20).outcome == "completed"  # type: ignore[union-attr]
    # dave arrives before carl's deadline: nothing free. After it, carl's item is dave's.
    dave, _ = store.crowd_enter(study.link_key, "PID_DAVE", now=T0 + 30)
    assert store.crowd_start(dave.rater_id, now=T0 + 30).dealt == 0
    assert store.crowd_deal(dave.rater_id, now=T0 + 62) == 1
    assert held(store, dave.rater_id) == held(store, carl.rater_id)
    assert store.crowd_status(carl.rater_id, now=T0 + 62).outcome == "timed_out"  # type: ignore[union-attr]
    with pytest.raises(AccessError):  # the leaver's late submit cannot give the answer a second rater
        store.authenticate(carl_token)
    with pytest.raises(AccessError, match="ran out"):
        store.crowd_enter(study.link_key, "PID_CARL", now=T0 + 63)
    assert set(live_raters(store).values()) == {1} and set(live_raters(store)) == set(answers)
    report = store.crowd_participants("pilot", now=T0 + 100).set_index("participant_id")
    assert report.loc["PID_ANN", ["items", "done", "outcome", "pay_seconds"]].tolist() == [2, 2, "completed", 20.0]
    assert report.loc["PID_CARL", ["items", "done", "outcome", "pay_seconds"]].tolist() == [1, 0, "timed_out", 60.0]
    assert report.loc["PID_DAVE", "pay_seconds"] == 60.0  # working: time so far, capped at the deadline


@pytest.mark.both_backends
def test_a_participant_id_in_two_studies_is_two_raters_who_never_rate_one_answer_twice(store: Store) -> None:
    seed(store, 3)
    one = store.create_crowd_study("one", quota=2, k=2, time_limit=600, completion_code="A")
    two = store.create_crowd_study("two", quota=3, k=2, time_limit=600, completion_url="https://example.org/done?cc=B")
    first, _ = store.crowd_enter(one.link_key, "PID_X", now=T0)
    store.crowd_start(first.rater_id, now=T0)
    second, _ = store.crowd_enter(two.link_key, "PID_X", now=T0)
    assert second.rater_id != first.rater_id
    store.crowd_start(second.rater_id, now=T0)
    assert not set(held(store, first.rater_id)) & set(held(store, second.rater_id))
    assert len(held(store, second.rater_id)) == 1  # three answers, two held by the same person elsewhere


def test_returning_gives_the_items_back_at_once_and_places_and_closing_stop_new_raters(store: Store) -> None:
    seed(store, 2)
    study = store.create_crowd_study("s", quota=2, k=1, time_limit=600, completion_code="A", places=2,
                                     answer_ids=["a0", "a1"])
    ann, _ = store.crowd_enter(study.link_key, "A1", now=T0)
    store.crowd_start(ann.rater_id, now=T0)
    store.crowd_return(ann.rater_id, now=T0 + 5)
    bob, _ = store.crowd_enter(study.link_key, "B1", now=T0 + 6)
    assert store.crowd_start(bob.rater_id, now=T0 + 6).dealt == 2
    with pytest.raises(AccessError, match="no place"):
        store.crowd_enter(study.link_key, "C1", now=T0 + 7)
    with pytest.raises(AccessError, match="returned"):
        store.crowd_enter(study.link_key, "A1", now=T0 + 7)
    with pytest.raises(AccessError, match="not valid"):
        store.crowd_enter("made-up", "B1", now=T0 + 7)
    with pytest.raises(AccessError, match="participant id"):
        store.crowd_enter(study.link_key, "<script>", now=T0 + 7)
    store.close_crowd_study("s")
    with pytest.raises(AccessError, match="closed"):
        store.crowd_enter(study.link_key, "B1", now=T0 + 8)
    assert store.crowd_status(store.add_rater("inhouse")[0].rater_id) is None


def test_gold_and_attention_results_per_participant(store: Store) -> None:
    seed(store, 4)
    store.add_quality_items([QualityItem("g1", "gold", "Q", "gold text", 4, 5),
                             QualityItem("c1", "attention", "Q", "Score this 1.", 1, 1)])
    store.set_quality_settings(QualitySettings(rate=1.0))
    study = store.create_crowd_study("q", quota=2, k=1, time_limit=600, completion_code="A")
    ann, _ = store.crowd_enter(study.link_key, "A1", now=T0)
    status = store.crowd_start(ann.rater_id, now=T0)
    mine = set(held(store, ann.rater_id))
    assert status.dealt == 2 and {"g1", "c1"} <= mine  # quality items come on top of the quota
    assert status.open == len(mine)
    rate_all(store, ann.rater_id, now=T0)  # 4 everywhere: gold right (4-5), attention failed (1)
    assert store.crowd_finish(ann.rater_id, now=T0 + 9).outcome == "completed"  # type: ignore[union-attr]
    row = store.crowd_participants("q", now=T0 + 9).iloc[0]
    assert (row["items"], row["gold"], row["gold_right"], row["attention"], row["attention_passed"]) == (2, 1, 1, 1, 0)


def test_bad_study_settings_are_one_clear_line(store: Store) -> None:
    seed(store, 1)
    with pytest.raises(InputError, match="completion code or a completion URL"):
        store.create_crowd_study("x", quota=1, time_limit=60)
    with pytest.raises(InputError, match="not usable"):
        store.create_crowd_study("bad name", quota=1, time_limit=60, completion_code="A")
    with pytest.raises(InputError, match="not in the database"):
        store.create_crowd_study("x", quota=1, time_limit=60, completion_code="A", answer_ids=["nope"])


def test_cli_creates_a_study_and_lists_its_participants_as_json(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "p.duckdb"
    store = Store(db)
    seed(store, 2)
    store.release()
    made = invoke("crowd", "create", "pilot", "--quota", "1", "--minutes", "5", "--completion-code", "C0DE",
                  "--base-url", "https://rate.example.org", "--db", str(db), "--json")
    assert made.exit_code == 0, made.output
    info = json.loads(made.stdout)
    assert info["link"].startswith("https://rate.example.org/?crowd=")
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in info["link"]
    key = info["link"].split("crowd=")[1].split("&")[0]
    ann, _ = store.crowd_enter(key, "PID1")
    store.crowd_start(ann.rater_id)
    store.release()
    listed = invoke("crowd", "participants", "pilot", "--db", str(db), "--json")
    rows = json.loads(listed.stdout)
    assert [(r["participant_id"], r["items"]) for r in rows] == [("PID1", 1)]
    bad = invoke("crowd", "participants", "nope", "--db", str(db))
    assert bad.exit_code == 2 and "no crowd study named 'nope'" in bad.output


def test_the_crowd_admin_page_lists_participants_and_refuses_a_participant(store: Store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from streamlit.testing.v1 import AppTest

    from tests.app.test_admin_pages import PAGES

    seed(store, 2)
    monkeypatch.setenv("JUDGELAB_DB", str(store.path))
    study = store.create_crowd_study("pilot", quota=1, time_limit=600, completion_code="C0DE")
    ann, ann_token = store.crowd_enter(study.link_key, "PID_ANN")
    store.crowd_start(ann.rater_id)
    _, admin_token = store.add_rater("boss", role="admin")
    at = AppTest.from_file(str(PAGES / "admin_crowd.py"), default_timeout=60)
    at.query_params["t"] = admin_token
    at.run()
    assert not at.exception
    table = at.dataframe[0].value
    assert table["participant_id"].tolist() == ["PID_ANN"] and table["items"].tolist() == [1]
    assert f"crowd={study.link_key}" in at.code[0].value
    refused = AppTest.from_file(str(PAGES / "admin_crowd.py"), default_timeout=60)
    refused.query_params["t"] = ann_token
    refused.run()
    assert [e.value for e in refused.error] == ["Access denied: this page is for admins."]
    assert not refused.dataframe
