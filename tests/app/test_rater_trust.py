"""Two tabs on one link, and a revoked rater's typed comment (issue 29, items 2 and 8).

Through the store and the app (``AppTest``): a tab that is behind is refused and shown the
stored label instead of superseding it unseen; a deliberate edit after that still works and
keeps the history; a revoked rater's refused submit shows the comment they typed, to copy.
"""

from __future__ import annotations

from typing import Any

import pytest

from judgelab.labeler.errors import StaleLabelError
from tests.app.conftest import FAMILIES, Pool
from tests.app.test_rate import ALL, act, form_data, open_app

pytestmark = pytest.mark.both_backends


@pytest.fixture
def served(pool: Pool, monkeypatch: pytest.MonkeyPatch) -> Pool:
    """The pool's database is the one the app serves."""
    monkeypatch.setenv("JUDGELAB_DB", str(pool.path))
    return pool


def _one_of_each(pool: Pool, name: str) -> tuple[Any, Any, Any, Any]:
    """A new rater holding one score, one pair and one audit item: ``(rater, score, pair, audit)``."""
    store = pool.store
    rater, _ = store.add_rater(name)
    store.assign_k(pool.originals[:1], 1, [rater.rater_id])
    store.assign_pairs([(f"{FAMILIES[0]}-{pool.tasks[0]}", f"{FAMILIES[1]}-{pool.tasks[0]}")], [rater.rater_id])
    store.assign_audits(pool.padded[:1], [rater.rater_id])
    (score,) = store.rater_queue(rater.rater_id, "score")
    (pair,) = store.rater_queue(rater.rater_id, "pair")
    (audit,) = store.rater_queue(rater.rater_id, "audit")
    return rater, score, pair, audit


def test_a_write_based_on_an_older_label_is_refused(pool: Pool) -> None:
    store = pool.store
    rater, score, pair, audit = _one_of_each(pool, "two-tabs")
    first = store.add_label(rater.rater_id, score.assignment_id, overall=4, criteria=ALL, seen=None)
    with pytest.raises(StaleLabelError, match="labelled meanwhile") as caught:
        store.add_label(rater.rater_id, score.assignment_id, overall=2, criteria=ALL, seen=None)
    assert caught.value.current_id == first
    second = store.add_label(rater.rater_id, score.assignment_id, overall=2, criteria=ALL, seen=first)
    with pytest.raises(StaleLabelError):
        store.add_label(rater.rater_id, score.assignment_id, overall=5, criteria=ALL, seen=first)
    # Without ``seen`` (scripts, the CLI) nothing is checked.
    store.add_label(rater.rater_id, score.assignment_id, overall=5, criteria=ALL)
    rows = store.query("SELECT overall, supersedes FROM labels ORDER BY label_id")
    assert rows["overall"].tolist() == [4, 2, 5] and int(rows["supersedes"].iloc[2]) == second

    p1 = store.add_pair_label(rater.rater_id, pair.assignment_id, 1, seen=None)
    with pytest.raises(StaleLabelError):
        store.add_pair_label(rater.rater_id, pair.assignment_id, -1, seen=None)
    store.add_pair_label(rater.rater_id, pair.assignment_id, -1, seen=p1)
    a1 = store.add_audit(rater.rater_id, audit.assignment_id, True, seen=None)
    with pytest.raises(StaleLabelError):
        store.add_audit(rater.rater_id, audit.assignment_id, False, seen=None)
    store.add_audit(rater.rater_id, audit.assignment_id, False, seen=a1)
    assert store.query("SELECT count(*) AS n FROM pair_labels")["n"].iloc[0] == 2
    assert store.query("SELECT count(*) AS n FROM padding_audits")["n"].iloc[0] == 2


def test_the_tab_that_is_behind_is_told_and_shown_the_stored_label(served: Pool) -> None:
    rater, token = served.store.add_rater("tabby")
    served.store.assign_k(served.originals[:2], 1, [rater.rater_id])
    tab_b = open_app(token)  # opened first, left on item 1
    tab_a = open_app(token)
    item = form_data(tab_b)["item"]
    act(tab_a, "submit", choice=4, criteria=ALL, comment="from tab A")
    act(tab_b, "submit", choice=1, criteria={k: 1.0 for k in ALL}, comment="from tab B")
    data = form_data(tab_b)
    assert "labelled meanwhile" in data["error"], data["error"]
    assert data["notice"] == ""  # not "Label saved"
    # Tab B stays on the item and shows what tab A stored.
    assert data["item"].split(":")[0] == item.split(":")[0] and data["item"] != item
    assert data["choice"]["value"] == 4 and data["comment"]["value"] == "from tab A"
    labels = served.store.query("SELECT overall, comment, supersedes FROM labels ORDER BY label_id")
    assert labels["comment"].tolist() == ["from tab A"]
    # Having seen it, a deliberate edit replaces it, and the history keeps both.
    act(tab_b, "submit", choice=2, criteria=ALL, comment="from tab B, on purpose")
    assert form_data(tab_b)["notice"] == "Label changed"
    labels = served.store.query("SELECT overall, comment, supersedes FROM labels ORDER BY label_id")
    assert labels["comment"].tolist() == ["from tab A", "from tab B, on purpose"]
    assert labels["supersedes"].iloc[1] is not None


def test_compare_in_two_tabs_is_refused_too(served: Pool) -> None:
    rater, token = served.store.add_rater("pairs-in-tabs")
    pair = (f"{FAMILIES[0]}-{served.tasks[2]}", f"{FAMILIES[1]}-{served.tasks[2]}")
    served.store.assign_pairs([pair], [rater.rater_id])
    tab_b = open_app(token, "pairwise.py")
    tab_a = open_app(token, "pairwise.py")
    act(tab_a, "submit", choice=2)
    act(tab_b, "submit", choice=-2)
    data = form_data(tab_b)
    assert "labelled meanwhile" in data["error"] and data["choice"]["value"] == 2
    assert served.store.query("SELECT preference FROM pair_labels")["preference"].tolist() == [2]


def test_a_revoked_raters_typed_comment_stays_on_screen_to_copy(served: Pool) -> None:
    rater, token = served.store.add_rater("revoked-rosa")
    served.store.assign_k(served.originals[:1], 1, [rater.rater_id])
    at = open_app(token)
    served.store.revoke_rater("revoked-rosa")
    act(at, "submit", choice=4, criteria=ALL, comment="Step 3 **is** wrong -- see $5 fee")
    assert " ".join(e.value for e in at.error).count("not saved") == 1
    assert [c.value for c in at.code] == ["Step 3 **is** wrong -- see $5 fee"]


def test_a_second_tab_sending_exactly_the_stored_label_changes_nothing_and_is_not_refused(pool: Pool) -> None:
    # Two tabs gave the same answer: nothing would be overwritten, so "labelled meanwhile" would
    # be a false alarm; the write is the unchanged case (the stored label's id, no new row).
    store = pool.store
    rater, score, pair, audit = _one_of_each(pool, "same-in-two-tabs")
    first = store.add_label(rater.rater_id, score.assignment_id, overall=4, criteria=ALL, seen=None)
    assert store.add_label(rater.rater_id, score.assignment_id, overall=4, criteria=ALL, seen=None) == first
    p1 = store.add_pair_label(rater.rater_id, pair.assignment_id, 1, seen=None)
    assert store.add_pair_label(rater.rater_id, pair.assignment_id, 1, seen=None) == p1
    a1 = store.add_audit(rater.rater_id, audit.assignment_id, True, seen=None)
    assert store.add_audit(rater.rater_id, audit.assignment_id, True, seen=None) == a1
    counts = [int(store.query(f"SELECT count(*) AS n FROM {t} WHERE rater_id = ?", [rater.rater_id])["n"].iloc[0])
              for t in ("labels", "pair_labels", "padding_audits")]
    assert counts == [1, 1, 1]
