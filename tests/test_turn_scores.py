"""Per-turn scores in the store: a rubric with turn = "each" (issue 46), on both back-ends."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from judgelab.labeler.errors import InputError, StaleLabelError
from judgelab.labeler.importers import parse_rubric
from judgelab.labeler.models import Answer, Rubric, Task
from judgelab.labeler.store import Store
from judgelab.labeler.transcripts import parse_messages, render
from tests.conftest import DATA


def _conversation(n_turns: int) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for k in range(1, n_turns + 1):
        out += [{"role": "user", "content": f"question {k}"}, {"role": "assistant", "content": f"reply {k}"}]
    return out


def each_rubric(turn: str = "each") -> Rubric:
    """The bundled rubric (likert5, criteria) rating each turn."""
    return replace(parse_rubric(DATA / "rubric.toml"), turn=turn)  # type: ignore[arg-type]


def seed(store: Store, *, turn: str = "each", n_turns: int = 3) -> tuple[int, int, int]:
    """A rubric, a three-turn conversation and a plain answer, both assigned to one rater.

    Returns:
        The rater's id, the conversation's assignment and the plain answer's assignment.
    """
    rubric = each_rubric(turn)
    store.add_rubric(rubric)
    t = parse_messages(_conversation(n_turns))
    store.add_pool([Task("t1", "Help")], [
        Answer("conv", "t1", "a", "m", render(t), transcript=t),
        Answer("plain", "t1", "b", "m", "One answer."),
    ])
    rater, _ = store.add_rater("ann")
    store.assign_k(["conv", "plain"], 1, [rater.rater_id], rubric=(rubric.rubric_id, rubric.version))
    queue = {store.score_view(rater.rater_id, i.assignment_id).text.startswith("[user]"): i.assignment_id
             for i in store.rater_queue(rater.rater_id)}
    return rater.rater_id, queue[True], queue[False]


CRITERIA = {c.criterion_id: 4.0 for c in each_rubric().criteria}


@pytest.mark.both_backends
def test_a_label_and_its_turn_scores_are_stored_together_and_read_back(store: Store) -> None:
    rater, conv, _ = seed(store)
    label = store.add_turn_label(rater, conv, overall=4, criteria=CRITERIA, turns={1: 5, 2: 3, 3: 4}, seen=None)
    assert store.label_turns(rater, label) == {1: 5.0, 2: 3.0, 3: 4.0}
    frame = store.turn_scores([label])
    assert list(zip(frame["turn"], frame["score"], strict=True)) == [(1, 5.0), (2, 3.0), (3, 4.0)]
    # The label itself is an ordinary label: item-level calibration reads it unchanged.
    assert float(store.human_labels()["overall"].iloc[0]) == 4.0
    # Unchanged (label and turns): no write, the same id.
    assert store.add_turn_label(rater, conv, overall=4, criteria=CRITERIA, turns={1: 5, 2: 3, 3: 4},
                                seen=label) == label
    assert len(store.query("SELECT * FROM turn_scores")) == 3
    # Only a turn changed: the label stays, its turn 2 has a newer score (append-only).
    assert store.add_turn_label(rater, conv, overall=4, criteria=CRITERIA, turns={1: 5, 2: 2, 3: 4},
                                seen=label) == label
    assert store.label_turns(rater, label) == {1: 5.0, 2: 2.0, 3: 4.0}
    assert len(store.query("SELECT * FROM turn_scores")) == 6
    # An edit of the label: a new label with its own turn scores; the old one's are its history.
    edited = store.add_turn_label(rater, conv, overall=3, criteria=CRITERIA, turns={1: 1, 2: 2, 3: 3}, seen=label)
    assert edited != label
    assert store.label_turns(rater, edited) == {1: 1.0, 2: 2.0, 3: 3.0}
    current = store.human_labels()
    assert list(current["label_id"]) == [edited]
    assert set(store.turn_scores(current["label_id"])["score"]) == {1.0, 2.0, 3.0}


@pytest.mark.both_backends
def test_a_missing_or_bad_turn_stores_nothing(store: Store) -> None:
    rater, conv, plain = seed(store)
    with pytest.raises(InputError, match=r"1 assistant turn\(s\) have no score \(turn 3\)"):
        store.add_turn_label(rater, conv, overall=4, criteria=CRITERIA, turns={1: 5, 2: 3})
    with pytest.raises(InputError, match="turn 4 is not an assistant turn"):
        store.add_turn_label(rater, conv, overall=4, criteria=CRITERIA, turns={1: 5, 2: 3, 3: 4, 4: 1})
    with pytest.raises(InputError, match="score 7 of turn 2 is not on the likert5 scale"):
        store.add_turn_label(rater, conv, overall=4, criteria=CRITERIA, turns={1: 5, 2: 7, 3: 4})
    assert store.query("SELECT count(*) AS n FROM labels")["n"][0] == 0  # the label was not written either
    # A flagged item needs no turn scores; an answer that is one text has none to give.
    assert store.add_turn_label(rater, conv, overall=None, turns={}, flag_reason="empty replies") > 0
    assert store.add_turn_label(rater, plain, overall=4, criteria=CRITERIA, turns={}) > 0
    with pytest.raises(InputError, match="one text, not a conversation"):
        store.add_turn_label(rater, plain, overall=3, criteria=CRITERIA, turns={1: 3})


@pytest.mark.both_backends
def test_another_tab_s_turn_scores_are_not_overwritten(store: Store) -> None:
    rater, conv, _ = seed(store)
    first = store.add_turn_label(rater, conv, overall=4, criteria=CRITERIA, turns={1: 5, 2: 3, 3: 4}, seen=None)
    with pytest.raises(StaleLabelError):  # a form that saw no label changes the turns
        store.add_turn_label(rater, conv, overall=4, criteria=CRITERIA, turns={1: 1, 2: 1, 3: 1}, seen=None)
    assert store.label_turns(rater, first) == {1: 5.0, 2: 3.0, 3: 4.0}


def test_turn_scores_under_a_rubric_rating_one_turn_are_refused_and_labels_are_private(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    rater, conv, _ = seed(store, turn="last")
    with pytest.raises(InputError, match="rates turn = 'last', not each turn"):
        store.add_turn_label(rater, conv, overall=4, criteria=CRITERIA, turns={1: 4})
    label = store.add_turn_label(rater, conv, overall=4, criteria=CRITERIA, turns={})
    other, _ = store.add_rater("bo")
    with pytest.raises(Exception, match="not yours"):
        store.label_turns(other.rater_id, label)


def test_a_rubric_reads_turn_each_and_an_unknown_turn_names_the_file_and_the_fix(tmp_path: Path) -> None:
    text = (DATA / "rubric.toml").read_text()
    good = tmp_path / "each.toml"
    good.write_text('turn = "each"\n' + text)
    assert parse_rubric(good).turn == "each"
    store = Store(tmp_path / "p.duckdb")
    store.add_rubric(parse_rubric(good))
    assert store.rubric() is not None and store.rubric().turn == "each"  # type: ignore[union-attr]
    bad = tmp_path / "every.toml"
    bad.write_text('turn = "every"\n' + text)
    with pytest.raises(InputError) as err:
        parse_rubric(bad)
    said = str(err.value)
    assert "every.toml" in said and "'every'" in said and 'turn = "each"' in said


def test_a_labels_file_s_turns_are_read_and_refused_when_they_cannot_be(tmp_path: Path) -> None:
    from judgelab.labeler.importers import import_file

    store = Store(tmp_path / "p.duckdb")
    seed(store)
    good = tmp_path / "labels.csv"
    good.write_text('answer_id,rater,score,turns\nconv,zed,4,"{""1"": 5, ""2"": 3, ""3"": 4}"\n')
    import_file(store, "labels", good)
    (label_id,) = store.query("SELECT label_id FROM labels WHERE rater_name = 'zed'")["label_id"]
    assert store.turn_scores([int(label_id)])["score"].tolist() == [5.0, 3.0, 4.0]
    bad = tmp_path / "bad.csv"
    bad.write_text('answer_id,rater,score,turns\nconv,yan,4,"{""1"": 9}"\n')
    with pytest.raises(InputError) as err:
        import_file(store, "labels", bad)
    assert "bad.csv" in str(err.value) and "turns" in str(err.value) and "from 1 to 5" in str(err.value)
    plain = tmp_path / "plain.toml"
    plain.write_text((DATA / "rubric.toml").read_text().replace('id = "support-reply"', 'id = "one-turn"', 1))
    store.add_rubric(parse_rubric(plain))
    last = tmp_path / "last.csv"
    last.write_text('answer_id,rater,score,rubric_id,rubric_version,turns\nconv,xi,4,one-turn,1,"{""1"": 4}"\n')
    with pytest.raises(InputError, match="rates turn = 'last', not each turn"):
        import_file(store, "labels", last)
    beyond = tmp_path / "beyond.csv"
    beyond.write_text('answer_id,rater,score,rubric_id,rubric_version,turns\n'
                      'conv,wu,4,support-reply,1,"{""1"": 4, ""4"": 4}"\n')
    with pytest.raises(InputError, match="'conv' scores turn 4, but the answer has 3 assistant turn"):
        import_file(store, "labels", beyond)
