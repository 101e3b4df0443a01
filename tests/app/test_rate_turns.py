"""The Rate page under a rubric that rates each assistant turn (turn = "each", issue 46), under AppTest."""

from __future__ import annotations

from dataclasses import replace

import pytest

from judgelab.labeler.models import Answer, Task
from judgelab.labeler.transcripts import parse_messages, render
from tests.app.conftest import FAMILIES, MODELS, RUBRIC, Pool
from tests.app.test_rate import act, assert_blind, click, everything, form_data, open_app, served

__all__ = ["served"]  # the fixture, imported for these tests

EACH = replace(RUBRIC, rubric_id="support-each", turn="each")
ALL = {"correct": 4.0, "complete": 4.0, "tone": 4.0}


@pytest.fixture
def traced(served: Pool) -> tuple[Pool, int, str]:
    """One three-turn conversation (a tool call naming its maker among them) and one plain answer."""
    t = parse_messages([
        {"role": "user", "content": "My router drops."},
        {"role": "assistant", "content": "Which model is it?"},
        {"role": "user", "content": "An AX-3."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "function": {"name": f"{FAMILIES[0]}_kb_search", "arguments": '{"q": "AX-3"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Firmware 2.1 fixes drops."},
        {"role": "assistant", "content": "Update the firmware to 2.1."},
    ])
    served.store.add_rubric(EACH)
    served.store.add_pool([Task("conv-t", "Router help")], [
        Answer(f"{FAMILIES[0]}-conv", "conv-t", FAMILIES[0], MODELS[FAMILIES[0]], render(t), transcript=t)])
    rater, token = served.store.add_rater("tess")
    served.store.assign_k([f"{FAMILIES[0]}-conv"], 1, [rater.rater_id], rubric=(EACH.rubric_id, EACH.version))
    return served, rater.rater_id, token


def test_each_turn_has_a_row_and_a_submit_without_every_turn_stores_nothing(
        traced: tuple[Pool, int, str]) -> None:
    pool, rater_id, token = traced
    at = open_app(token)
    data = form_data(at)
    assert [(t["turn"], t["name"], t["value"]) for t in data["turns"]] == [
        (1, "Turn 1", None), (2, "Turn 2", None), (3, "Turn 3", None)]
    assert data["turns"][0]["description"] == "Which model is it?"
    # The tool call's name named its maker: masked in the row as in the transcript.
    assert FAMILIES[0] not in data["turns"][1]["description"] and "tool call" in data["turns"][1]["description"]
    assert "T first turn without a score" in data["keys_help"]
    assert 'data-jl-turn=\\"3\\"' in everything(at) and "turn 3 of 3" in everything(at)
    assert_blind(at, pool)
    act(at, "submit", choice=4, criteria={**ALL, "#turn-1": 5, "#turn-2": 3})
    refused = form_data(at)
    assert "1 assistant turn(s) have no score (turn 3)" in refused["error"]
    assert pool.store.rater_current_labels(rater_id).empty  # nothing stored, the form keeps its values
    assert refused["item"] == data["item"]


def test_turn_scores_are_stored_with_the_label_and_come_back_on_back(traced: tuple[Pool, int, str]) -> None:
    pool, rater_id, token = traced
    at = open_app(token)
    act(at, "submit", choice=4, criteria={**ALL, "#turn-1": 5, "#turn-2": 3, "#turn-3": 2})
    (label_id,) = pool.store.rater_current_labels(rater_id)["label_id"]
    assert pool.store.label_turns(rater_id, int(label_id)) == {1: 5.0, 2: 3.0, 3: 2.0}
    assert pool.store.rater_current_labels(rater_id)["criteria"].iloc[0] == (
        '{"complete": 4.0, "correct": 4.0, "tone": 4.0}')  # no turn among the criteria
    click(at, "Back")  # from the done screen (this was the rater's one item)
    data = form_data(at)
    assert {t["id"]: t["value"] for t in data["turns"]} == {"#turn-1": 5, "#turn-2": 3, "#turn-3": 2}
    # A turn changed, the rest the same: the label stays, the turn's new score is stored.
    act(at, "submit", choice=4, criteria={**ALL, "#turn-1": 5, "#turn-2": 4, "#turn-3": 2})
    assert pool.store.label_turns(rater_id, int(label_id)) == {1: 5.0, 2: 4.0, 3: 2.0}
    assert len(pool.store.query("SELECT * FROM labels")) == 1
    click(at, "Back")
    assert {t["id"]: t["value"] for t in form_data(at)["turns"]} == {"#turn-1": 5, "#turn-2": 4, "#turn-3": 2}


def test_a_plain_answer_under_the_same_rubric_has_no_turn_rows(traced: tuple[Pool, int, str]) -> None:
    pool, _, _ = traced
    rater, token = pool.store.add_rater("uma")
    pool.store.assign_k(pool.originals[:1], 1, [rater.rater_id], rubric=(EACH.rubric_id, EACH.version))
    at = open_app(token)
    assert form_data(at)["turns"] == []
    act(at, "submit", choice=4, criteria=ALL)
    assert len(pool.store.rater_current_labels(rater.rater_id)) == 1
