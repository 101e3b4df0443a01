"""Review and adjudication without a browser: the store's adjudicated labels and the admin functions.

An adjudicated label is a ``labels`` row with source ``adjudicated``: it never supersedes or
changes a rater's label, a re-adjudication supersedes the previous adjudication only, and no
query about raters (agreement, progress, a rater's own labels) counts it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from judgelab.admin import adjudicate, agreement_report, answer_sheet, review_board
from judgelab.labeler.errors import AccessError, InputError
from judgelab.labeler.store import ADJUDICATED, Rater, Store, migrations
from tests.app.conftest import RUBRIC, Pool, build_pool


@dataclass(frozen=True)
class Seeded:
    """A pool with three raters' app labels, for reviewing."""

    pool: Pool
    admin: Rater
    admin_token: str
    raters: dict[str, tuple[Rater, str]]
    answers: list[str]

    @property
    def store(self) -> Store:
        return self.pool.store


def _crit(overall: float, **given: float) -> dict[str, float]:
    return {"correct": overall, "complete": overall, "tone": overall, **given}


def assignment(store: Store, rater_id: int, answer_id: str) -> int:
    frame = store.query("SELECT assignment_id FROM assignments WHERE rater_id = ? AND answer_id = ?",
                        [rater_id, answer_id])
    return int(frame["assignment_id"].iloc[0])


def seed_review(path: Path) -> Seeded:
    """Four answers labelled in the app by ann and bob (carol on one), with known disagreements.

    a0: overall 1 vs 5 (spread 4), tone 3 vs 3, ann comments. a1: overall 3 vs 4, tone 1 vs 5.
    a2: 4, 4 and carol 2. a3: ann flags it unrateable, bob gives 2.
    """
    pool = build_pool(path)
    store = pool.store
    admin, admin_token = store.add_rater("boss", role="admin")
    raters = {name: store.add_rater(name) for name in ("ann", "bob", "carol")}
    a = pool.originals[:4]
    ann, bob, carol = (raters[n][0].rater_id for n in ("ann", "bob", "carol"))
    store.assign_k(a, 2, [ann, bob])
    store.assign_k([a[2]], 3, [ann, bob, carol])
    plan: list[tuple[int, str, float | None, dict[str, float], str, str | None]] = [
        (ann, a[0], 1, _crit(1, tone=3), "far too short", None),
        (bob, a[0], 5, _crit(5, tone=3), "", None),
        (ann, a[1], 3, _crit(3, tone=1), "", None),
        (bob, a[1], 4, _crit(4, tone=5), "", None),
        (ann, a[2], 4, _crit(4), "", None),
        (bob, a[2], 4, _crit(4), "", None),
        (carol, a[2], 2, _crit(2), "", None),
        (ann, a[3], None, {}, "", "not in English"),
        (bob, a[3], 2, _crit(2), "", None),
    ]
    for rater_id, answer_id, overall, criteria, comment, flag in plan:
        store.add_label(rater_id, assignment(store, rater_id, answer_id), overall=overall, criteria=criteria,
                        comment=comment, flag_reason=flag)
    return Seeded(pool, admin, admin_token, raters, a)


@pytest.fixture
def seeded(tmp_path: Path) -> Seeded:
    return seed_review(tmp_path / "review.duckdb")


def raters_rows(store: Store) -> pd.DataFrame:
    """Every rater label row as exported (adjudications left out), to compare before and after."""
    frame = store.export_frame("labels")
    return frame[frame["source"] != ADJUDICATED].reset_index(drop=True)


# -- the store ------------------------------------------------------------------------------------


def test_an_adjudication_is_its_own_source_and_leaves_raters_labels_alone(seeded: Seeded) -> None:
    store, a0 = seeded.store, seeded.answers[0]
    before = raters_rows(store)
    current_before = store.current_labels()["label_id"].tolist()
    label_id = store.adjudicate(seeded.admin.rater_id, a0, rubric_id="support", version=1, overall=3,
                                criteria={"tone": 3}, comment="ann missed step 2; bob overlooked the length")
    row = store.query("SELECT * FROM labels WHERE label_id = ?", [label_id]).iloc[0]
    assert row["source"] == ADJUDICATED and row["rater_name"] == "boss"
    assert row["rater_id"] == seeded.admin.rater_id and pd.isna(row["supersedes"])
    assert pd.isna(row["assignment_id"]) and bool(row["passed"]) is False
    assert json.loads(row["criteria"]) == {"tone": 3.0}
    pd.testing.assert_frame_equal(raters_rows(store), before)
    # Nothing about raters counts it.
    assert store.current_labels()["label_id"].tolist() == current_before
    assert label_id not in set(store.human_labels("support", 1)["label_id"])
    assert "boss" not in set(store.labels_by_rater()["name"])
    per_answer = store.labels_per_answer().set_index("answer_id")["labelled"]
    assert per_answer[a0] == 2
    adj = store.adjudications("support", 1)
    assert adj[["label_id", "answer_id", "rater_name", "overall"]].values.tolist() == [[label_id, a0, "boss", 3.0]]
    exported = store.export_frame("labels").set_index("label_id").loc[label_id]
    assert exported["source"] == ADJUDICATED and exported["rater"] == "boss" and bool(exported["current"])


def test_readjudicating_supersedes_only_the_previous_adjudication(seeded: Seeded) -> None:
    store, a0 = seeded.store, seeded.answers[0]
    first = store.adjudicate(seeded.admin.rater_id, a0, rubric_id="support", version=1, overall=3)
    before = raters_rows(store)
    other_admin, _ = store.add_rater("chief", role="admin")
    second = store.adjudicate(other_admin.rater_id, a0, rubric_id="support", version=1, overall=4, comment="on reread")
    history = store.label_history(a0).set_index("label_id")
    assert int(history.loc[second, "supersedes"]) == first
    assert not bool(history.loc[first, "current"]) and bool(history.loc[second, "current"])
    # Every rater label of the answer is still current and unchanged.
    raters_of_a0 = history[history["source"] != ADJUDICATED]
    assert len(raters_of_a0) == 2 and raters_of_a0["current"].all()
    pd.testing.assert_frame_equal(raters_rows(store), before)
    adj = store.adjudications("support", 1)
    assert adj["label_id"].tolist() == [second] and adj["rater_name"].tolist() == ["chief"]
    # Another answer's adjudication supersedes nothing.
    third = store.adjudicate(seeded.admin.rater_id, seeded.answers[1], rubric_id="support", version=1, overall=4)
    assert pd.isna(store.label_history(seeded.answers[1]).set_index("label_id").loc[third, "supersedes"])


def test_only_an_active_admin_adjudicates_scores_on_the_scale(seeded: Seeded) -> None:
    store, a0 = seeded.store, seeded.answers[0]
    ann = seeded.raters["ann"][0]
    with pytest.raises(AccessError):
        store.adjudicate(ann.rater_id, a0, rubric_id="support", version=1, overall=3)
    with pytest.raises(InputError, match="not on the likert5 scale"):
        store.adjudicate(seeded.admin.rater_id, a0, rubric_id="support", version=1, overall=7)
    with pytest.raises(InputError, match=r"Tone score 2\.5"):
        store.adjudicate(seeded.admin.rater_id, a0, rubric_id="support", version=1, overall=3, criteria={"tone": 2.5})
    with pytest.raises(InputError, match="unknown criteria speed"):
        store.adjudicate(seeded.admin.rater_id, a0, rubric_id="support", version=1, overall=3, criteria={"speed": 3})
    with pytest.raises(InputError, match="not in the database"):
        store.adjudicate(seeded.admin.rater_id, "nope", rubric_id="support", version=1, overall=3)
    with pytest.raises(InputError, match="no rubric"):
        store.adjudicate(seeded.admin.rater_id, a0, rubric_id="support", version=9, overall=3)
    store.revoke_rater("boss")
    with pytest.raises(AccessError):
        store.adjudicate(seeded.admin.rater_id, a0, rubric_id="support", version=1, overall=3)
    assert store.adjudications().empty


def test_an_admin_who_also_rates_keeps_both_labels_apart(seeded: Seeded) -> None:
    store, a1 = seeded.store, seeded.answers[1]
    boss = seeded.admin.rater_id
    store.assign_k([a1], 3, [seeded.raters["ann"][0].rater_id, seeded.raters["bob"][0].rater_id, boss])
    # Adjudicating an answer the admin is assigned does not mark their assignment done.
    store.adjudicate(boss, a1, rubric_id="support", version=1, overall=5)
    progress = store.assignment_progress().set_index("name")
    assert int(progress.loc["boss", "done"]) == 0
    assert store.progress(boss).done == 0 and store.rater_current_labels(boss).empty
    assert store.screen(boss).view.current is None  # type: ignore[union-attr]  # one item, no prefill
    own = store.add_label(boss, assignment(store, boss, a1), overall=2, criteria=_crit(2))
    # Both are current: the rater label among raters, the adjudication on its own.
    assert own in set(store.current_labels()["label_id"])
    assert store.rater_current_labels(boss)["label_id"].tolist() == [own]
    assert store.adjudications()["overall"].tolist() == [5.0]
    assert int(store.assignment_progress().set_index("name").loc["boss", "done"]) == 1


def test_agreement_among_raters_never_counts_the_adjudicator(seeded: Seeded) -> None:
    store = seeded.store
    before = agreement_report(store, "support", 1, n_resamples=50)
    for answer in seeded.answers:
        store.adjudicate(seeded.admin.rater_id, answer, rubric_id="support", version=1, overall=5)
    after = agreement_report(store, "support", 1, n_resamples=50)
    assert (after.n_labels, after.n_raters) == (before.n_labels, before.n_raters) == (8, 3)
    assert after.overall.estimate == pytest.approx(before.overall.estimate)
    assert "boss" not in set(after.kappas["rater_a"]) | set(after.kappas["rater_b"])


def test_migration_005_keeps_every_label_source(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE _migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
                " applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)")
    for version, name, sql in migrations():
        if version < 5:
            for statement in con.extract_statements(sql):
                con.execute(statement)
            con.execute("INSERT INTO _migrations (version, name) VALUES (?, ?)", [version, name])
    for source in ("app", "import", "simulated"):
        con.execute("INSERT INTO labels (rater_id, rater_name, answer_id, overall, source) VALUES (1, 'x', ?, 3, ?)",
                    [f"a-{source}", source])
    con.close()
    store = Store(path)
    assert 5 in set(store.applied_migrations()["version"])
    rows = store.query("SELECT answer_id, source FROM labels ORDER BY label_id").values.tolist()
    assert rows == [["a-app", "app"], ["a-import", "import"], ["a-simulated", "simulated"]]
    with store.connection() as c:
        c.execute("INSERT INTO labels (rater_id, rater_name, answer_id) VALUES (1, 'x', 'a-new')")
        assert c.execute("SELECT source FROM labels WHERE answer_id = 'a-new'").fetchone() == ("app",)
        with pytest.raises(duckdb.ConstraintException):
            c.execute("INSERT INTO labels (rater_id, rater_name, answer_id, source) VALUES (1, 'x', 'b', NULL)")


# -- the admin functions ----------------------------------------------------------------------------


def test_review_board_lists_flags_comments_and_the_largest_spreads(seeded: Seeded) -> None:
    a = seeded.answers
    board = review_board(seeded.store, RUBRIC)
    assert board.disagreements["answer_id"].tolist() == [a[0], a[2], a[1]]
    top = board.disagreements.iloc[0]
    assert (top["raters"], top["low"], top["high"], top["spread"]) == (2, 1.0, 5.0, 4.0)
    assert top["scores"] == "ann 1 · bob 5"
    assert board.flagged[["answer_id", "rater", "flag_reason"]].values.tolist() == [[a[3], "ann", "not in English"]]
    assert board.comments[["answer_id", "rater", "comment"]].values.tolist() == [[a[0], "ann", "far too short"]]
    assert set(board.raters) == {"ann", "bob", "carol"}
    assert board.answers == [a[0], a[2], a[1], a[3]]


def test_review_board_filters_by_rater_and_criterion(seeded: Seeded) -> None:
    a = seeded.answers
    tone = review_board(seeded.store, RUBRIC, criterion="tone")
    assert tone.disagreements["answer_id"].tolist()[0] == a[1]
    assert tone.disagreements.iloc[0]["scores"] == "ann 1 · bob 5" and tone.score_name == "criterion Tone"
    carol = review_board(seeded.store, RUBRIC, rater="carol")
    assert carol.disagreements["answer_id"].tolist() == [a[2]]
    assert carol.flagged.empty and carol.comments.empty
    assert review_board(seeded.store, RUBRIC, rater="bob").flagged.empty
    with pytest.raises(InputError, match="no criterion"):
        review_board(seeded.store, RUBRIC, criterion="speed")
    with pytest.raises(InputError, match="no labels by a rater named 'zed'"):
        review_board(seeded.store, RUBRIC, rater="zed")


def test_answer_sheet_shows_every_label_side_by_side_and_the_adjudication(seeded: Seeded) -> None:
    a0 = seeded.answers[0]
    adjudicate(seeded.store, seeded.admin, a0, RUBRIC, overall=3, criteria={"tone": 3, "correct": None},
               comment=" both half right ")
    sheet = answer_sheet(seeded.store, a0, RUBRIC)
    assert sheet.answer["family"] and sheet.answer["text"]
    assert sheet.labels["rater"].tolist() == ["ann", "bob"]
    assert sheet.adjudication is not None and sheet.adjudication.comment == "both half right"
    assert sheet.adjudication.criteria == {"tone": 3.0}
    table = sheet.side_by_side()
    assert list(table.columns) == ["ann", "bob", "adjudicated (boss)"]
    assert table.loc["overall"].tolist() == ["1", "5", "3"]
    assert table.loc["pass"].tolist() == ["fail", "pass", "fail"]
    assert table.loc["Tone"].tolist() == ["3", "3", "3"] and table.loc["Correct"].tolist() == ["1", "5", ""]
    assert table.loc["comment"].tolist() == ["far too short", "", "both half right"]
    assert len(sheet.history) == 3
    board = review_board(seeded.store, RUBRIC)
    assert board.disagreements.set_index("answer_id").loc[a0, "adjudicated"] == 3.0
    with pytest.raises(InputError, match="needs an overall score"):
        adjudicate(seeded.store, seeded.admin, a0, RUBRIC, overall=None)
