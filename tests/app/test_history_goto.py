"""The browser's Back and Forward, server side (issue 29): the ``goto`` action and the key catcher.

The form sends ``goto`` with the place of the history entry's item (the item key without its
label part); the key catcher sends it from the finished screen. Both show that item, with the
rater's stored label; an unknown place or ``done`` shows the resume position.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from streamlit.components.v2.bidi_component.main import _make_trigger_id
from streamlit.testing.v1 import AppTest

from judgelab.views._form import place_of
from tests.app.conftest import Pool
from tests.app.test_rate import act, form_data, open_app

_NONCES = itertools.count()


@pytest.fixture
def served(pool: Pool, monkeypatch: pytest.MonkeyPatch) -> Pool:
    """The pool's database is the one the app serves."""
    monkeypatch.setenv("JUDGELAB_DB", str(pool.path))
    return pool


@pytest.fixture
def alice(served: Pool) -> tuple[int, str]:
    rater, token = served.store.add_rater("alice")
    served.store.assign_k(served.originals, 1, [rater.rater_id], seed=4)
    return rater.rater_id, token


def component(at: AppTest, name: str) -> Any:
    (found,) = [c for c in at.get("bidi_component") if name in c.proto.component_name]
    return found


def trigger(at: AppTest, name: str, event: str, payload: dict[str, Any]) -> AppTest:
    """What the browser sends when the component ``name`` fires ``event``."""
    found = component(at, name)
    states = at._tree.get_widget_states()
    widget = states.widgets.add()
    widget.id = _make_trigger_id(found.proto.id, "events")
    widget.json_trigger_value = json.dumps([{"event": event, "value": {**payload, "nonce": next(_NONCES)}}])
    at._run(states)
    assert not at.exception, at.exception
    return at


def goto(at: AppTest, to: str) -> AppTest:
    data = form_data(at)
    return trigger(at, "judgelab_rating_form", "action", {"do": "goto", "item": data["item"], "to": to})


def test_goto_shows_the_entrys_item_with_its_stored_label(served: Pool, alice: tuple[int, str]) -> None:
    _, token = alice
    at = open_app(token)
    first = form_data(at)
    assert first["position"] == 1 and place_of(first["item"]) in first["item"]
    act(at, "submit", choice=4, criteria={"correct": 4, "complete": 4, "tone": 4})
    assert form_data(at)["position"] == 2
    goto(at, place_of(first["item"]))  # the browser's Back
    data = form_data(at)
    assert data["position"] == 1 and data["choice"]["value"] == 4 and data["editing"]
    goto(at, "done")  # Forward onto the entry after it: the resume position
    assert form_data(at)["position"] == 2
    goto(at, "no-such-place")  # an entry whose item left the queue: the resume position, no error
    assert form_data(at)["position"] == 2 and not at.error


def test_the_key_catcher_comes_first_and_goes_back_from_the_finished_screen(served: Pool) -> None:
    rater, token = served.store.add_rater("finn")
    served.store.assign_k(served.originals[:1], 1, [rater.rater_id])
    at = open_app(token)
    catcher = component(at, "judgelab_key_catcher")
    assert json.loads(catcher.proto.json)["hold"] is True
    kinds = [c.proto.component_name for c in at.get("bidi_component")]
    assert kinds.index(catcher.proto.component_name) < next(i for i, k in enumerate(kinds) if "rating_form" in k)
    place = place_of(form_data(at)["item"])
    act(at, "submit", choice=5, criteria={"correct": 5, "complete": 5, "tone": 5})
    assert any("answers are rated" in s.value for s in at.success)
    catcher = component(at, "judgelab_key_catcher")
    data = json.loads(catcher.proto.json)
    assert data["hold"] is False and data["scope"]  # held keys are named as not used here
    trigger(at, "judgelab_key_catcher", "goto", {"to": place})  # the browser's Back
    assert form_data(at)["position"] == 1 and form_data(at)["choice"]["value"] == 5
