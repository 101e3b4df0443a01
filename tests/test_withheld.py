"""Answers withheld because they say who wrote them (issue 54), on both back-ends.

The raters' flag, the admin's mask and clear, the screen's records, and what calibration sets apart.
"""

from __future__ import annotations

import pytest

from judgelab.labeler.importers import parse_rubric
from judgelab.labeler.models import Answer, Task
from judgelab.labeler.store import Store
from tests.conftest import DATA

CRITERIA = [c.criterion_id for c in parse_rubric(DATA / "rubric.toml").criteria]


def seed(store: Store) -> tuple[int, int, int]:
    """Three answers of two tasks, each given to ann and bob (k = 2); carl has nothing yet."""
    store.add_rubric(parse_rubric(DATA / "rubric.toml"))
    store.add_pool([Task("t1", "Help"), Task("t2", "More help")], [
        Answer("a1", "t1", "fam", "m", "Reset the router, then call us."),
        Answer("a2", "t1", "fam", "m", "Turn it off and on."),
        Answer("a3", "t2", "fam", "m", "Check the cable."),
    ])
    ids = [store.add_rater(n)[0].rater_id for n in ("ann", "bob", "carl")]
    store.assign_k(["a1", "a2", "a3"], 2, ids[:2])
    return ids[0], ids[1], ids[2]


def answers_in_queue(store: Store, rater: int) -> set[str]:
    """The answers behind the items the rater's queue shows (the store's view, not the page's)."""
    shown = {i.assignment_id for i in store.rater_queue(rater)}
    frame = store.query("SELECT assignment_id, answer_id FROM assignments WHERE rater_id = ?", [rater])
    return {str(a) for i, a in zip(frame["assignment_id"], frame["answer_id"], strict=True) if int(i) in shown}


def assignment_of(store: Store, rater: int, answer: str) -> int:
    row = store.query("SELECT assignment_id FROM assignments WHERE rater_id = ? AND answer_id = ?", [rater, answer])
    return int(row.iloc[0, 0])


@pytest.mark.both_backends
def test_a_raters_flag_withholds_the_answer_from_everyone_else_until_the_admin_clears_it(store: Store) -> None:
    ann, bob, carl = seed(store)
    label = store.flag_author(ann, assignment_of(store, ann, "a1"), note="signs off as a chatbot of a company")
    # Ann's item is done (an unrateable flag, no score), and stays in her queue as flagged.
    item = next(i for i in store.rater_queue(ann) if i.done_id == label)
    assert item.flagged
    assert answers_in_queue(store, ann) == {"a1", "a2", "a3"}
    # Bob's pending assignment of a1 is parked: hidden, still his, still counting towards k = 2.
    assert answers_in_queue(store, bob) == {"a2", "a3"}
    assert "a1" not in {str(a) for a in store.query("SELECT answer_id FROM assignments WHERE rater_id = ?",
                                                       [carl])["answer_id"]}
    # Never dealt again: neither by a larger k nor by pull mode.
    store.assign_k(["a1", "a2", "a3"], 3, [ann, bob, carl])
    assert answers_in_queue(store, carl) == {"a2", "a3"}
    assert store.claim_next(carl, 4) is None
    assert len(store.query("SELECT * FROM assignments WHERE answer_id = 'a1'")) == 2
    listed = store.withheld_answers()
    assert listed[["answer_id", "state", "action", "by_name", "reason"]].values.tolist() == [
        ["a1", "withheld", "rater", "ann", "signs off as a chatbot of a company"]]
    assert store.screen_figures().withheld == 1
    # The admin finds nothing that unblinds: a1 goes back to Bob (and k = 3 deals it to carl now).
    store.clear_answer("a1", admin="root")
    assert store.withheld_answers().empty
    assert answers_in_queue(store, bob) == {"a1", "a2", "a3"}
    store.assign_k(["a1"], 3, [ann, bob, carl])
    assert "a1" in answers_in_queue(store, carl)


@pytest.mark.both_backends
def test_a_masked_answer_comes_back_with_the_admins_text_blinded(store: Store) -> None:
    ann, bob, _ = seed(store)
    store.flag_author(ann, assignment_of(store, ann, "a2"))
    assert store.withheld_answers()["reason"].tolist() == [""]
    store.mask_answer("a2", "Turn it off and on. Made by OpenAI.", admin="root")
    view = store.score_view(bob, assignment_of(store, bob, "a2"))
    assert view.text.startswith("Turn it off and on.") and "OpenAI" not in view.text and view.masked >= 1
    listed = store.withheld_answers(every=True)
    assert listed[["answer_id", "state", "shown_text"]].values.tolist() == [
        ["a2", "masked", "Turn it off and on. Made by OpenAI."]]


@pytest.mark.both_backends
def test_labels_on_answers_found_to_reveal_their_author_are_marked_for_calibration(store: Store) -> None:
    ann, bob, _ = seed(store)
    # Bob scores a1 and a3 before anyone flags anything; then Ann flags a1 (withheld) and a3 (later masked).
    for answer in ("a1", "a3"):
        store.add_label(bob, assignment_of(store, bob, answer), overall=4.0,
                        criteria=dict.fromkeys(CRITERIA, 4.0))
        store.flag_author(ann, assignment_of(store, ann, answer))
    store.mask_answer("a3", "Check the cable.", admin="root")
    labels = store.human_labels()
    scored = labels[labels["flag_reason"].isna()]
    assert dict(zip(scored["answer_id"], scored["reveals_author"].astype(bool), strict=True)) == {
        "a1": True, "a3": True}
    # A label given on the masked text reads nothing that unblinds; a cleared answer's labels count again.
    store.add_label(bob, assignment_of(store, bob, "a3"), overall=2.0,
                    criteria=dict.fromkeys(CRITERIA, 2.0))
    store.clear_answer("a1", admin="root")
    scored = store.human_labels()
    scored = scored[scored["flag_reason"].isna()]
    assert dict(zip(scored["answer_id"], scored["reveals_author"].astype(bool), strict=True)) == {
        "a1": False, "a3": False}


@pytest.mark.both_backends
def test_the_screens_readings_withhold_what_it_flags_and_count_parse_failures(store: Store) -> None:
    ann, bob, _ = seed(store)
    store.clear_answer("a3", admin="root")  # an admin's decision stands: the screen does not withhold it again
    made = store.record_screen("run-1", [
        ("a1", True, "names its maker in German", None, 0.001),
        ("a2", None, "", "no verdict in the reply", 0.001),
        ("a3", True, "mentions a product", None, 0.002),
    ], judge="fake")
    assert made == 1
    assert answers_in_queue(store, bob) == {"a2", "a3"}
    figures = store.screen_figures()
    assert (figures.screened, figures.flagged, figures.parse_failures, figures.withheld) == (3, 2, 1, 1)
    assert figures.cost_usd == pytest.approx(0.004)
    store.clear_answer("a1", admin="root")
    assert store.screen_figures().cleared == 1
    listed = store.withheld_answers(every=True)
    assert listed[["answer_id", "action", "reason"]].values.tolist() == [["a1", "screen", "names its maker in German"]]
    del ann
