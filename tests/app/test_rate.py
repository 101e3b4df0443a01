"""The rater pages under AppTest.

Access, the rating flow, going back to edit, skipping, flagging, the compare and audit pages, and
that nothing the page produces unblinds.
"""

from __future__ import annotations

import html
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from streamlit.components.v2.bidi_component.main import _make_trigger_id
from streamlit.testing.v1 import AppTest

from judgelab.labeler.blinding import detect_self_identifying
from judgelab.labeler.models import Answer
from tests.app.conftest import FAMILIES, SCRIPT_TEXT, Pool

APP = Path(__file__).resolve().parents[2] / "judgelab" / "app.py"
PAGES = APP.parent / "views"


@pytest.fixture
def served(pool: Pool, monkeypatch: pytest.MonkeyPatch) -> Pool:
    """The pool's database is the one the app serves."""
    monkeypatch.setenv("JUDGELAB_DB", str(pool.path))
    return pool


def open_app(token: str | None, page: str | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    if token is not None:
        at.query_params["t"] = token
    at.run()
    if page is not None:
        at.switch_page(str(PAGES / page)).run()
    assert not at.exception, at.exception
    return at


def everything(at: AppTest) -> str:
    """What a browser would receive, minus framework code.

    Every element proto the page produced (ids, keys, labels, help, bodies), the URL
    query and the navigation registry.
    """
    parts: list[str] = [json.dumps(at.query_params), repr(at._registered_pages)]

    def walk(node: Any) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            parts.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(parts)


_NONCES = itertools.count()


def rating_forms(at: AppTest) -> list[Any]:
    """The rating forms on the page (not the key catcher drawn before the item)."""
    return [c for c in at.get("bidi_component") if "judgelab_rating_form" in c.proto.component_name]


def form_data(at: AppTest) -> dict[str, Any]:
    """The data the rating form was drawn with (what the browser receives)."""
    (form,) = rating_forms(at)
    return dict(json.loads(form.proto.json))


def act(at: AppTest, do: str, *, item: str | None = None, choice: Any = None,
        criteria: dict[str, float] | None = None, comment: str = "", flag: bool = False,
        reason: str = "", seconds: float | None = 2.0) -> AppTest:
    """What the browser sends when the rater presses Back, Skip, Forward or Submit."""
    (form,) = rating_forms(at)
    payload = {"do": do, "item": item or json.loads(form.proto.json)["item"], "choice": choice,
               "criteria": criteria or {}, "comment": comment, "flag": flag, "reason": reason,
               "seconds": seconds, "nonce": next(_NONCES)}
    states = at._tree.get_widget_states()
    trigger = states.widgets.add()
    trigger.id = _make_trigger_id(form.proto.id, "events")
    trigger.json_trigger_value = json.dumps([{"event": "action", "value": payload}])
    at._run(states)
    assert not at.exception, at.exception
    return at


def button(at: AppTest, label: str) -> Any:
    return next(b for b in at.button if b.label == label)


def click(at: AppTest, label: str) -> AppTest:
    button(at, label).click().run()
    assert not at.exception, at.exception
    return at


def progress_text(at: AppTest) -> str:
    """The progress line's count (``**1 of 6** done``), without the item it is on."""
    return str(at.get("progress")[0].proto.text).split(" · ")[0]


def where(at: AppTest) -> str:
    """Which item the progress line says is shown, and what it says about it."""
    return " · ".join(str(at.get("progress")[0].proto.text).split(" · ")[1:])


def shown_texts(at: AppTest) -> list[str]:
    """The texts of the page's boxes (the task, the answer) as the rater reads them, without headings."""
    found = (re.search(r'<div style="[^"]*">(.*)</div>\Z', str(h.value), re.DOTALL) for h in at.html)
    return [html.unescape(m.group(1)) for m in found if m]


def assert_blind(at: AppTest, pool: Pool) -> None:
    received = everything(at)
    for secret in [*pool.secrets(), *pool.originals]:
        assert secret not in received, f"{secret!r} reached the page"


# -- access -----------------------------------------------------------------------------------


def test_no_token_is_denied(served: Pool) -> None:
    at = open_app(None)
    assert any("Access denied" in e.value for e in at.error)
    assert not at.button and not at.markdown and not shown_texts(at)


def test_unknown_and_revoked_tokens_are_denied(served: Pool) -> None:
    at = open_app("not-a-real-token")
    assert any("not valid" in e.value for e in at.error)
    _, token = served.store.add_rater("carol")
    served.store.assign_k(served.originals, 1, [served.store.authenticate(token).rater_id])
    assert rating_forms(open_app(token))  # the rating form, before the revoke
    served.store.revoke_rater("carol")
    at = open_app(token)
    assert any("revoked" in e.value for e in at.error)
    assert not at.get("bidi_component") and not at.button


def test_raters_get_rater_pages_and_admins_also_admin_pages(served: Pool) -> None:
    _, rater_token = served.store.add_rater("ann")
    _, admin_token = served.store.add_rater("boss", role="admin")
    rater_pages = {Path(str(p["script_path"])).name for p in open_app(rater_token)
                   ._registered_pages.values()}
    assert rater_pages == {"rate.py", "pairwise.py", "audit.py"}
    at = open_app(rater_token)
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page(str(PAGES / "admin_raters.py"))
    admin_pages = {Path(str(p["script_path"])).name for p in open_app(admin_token)
                   ._registered_pages.values()}
    assert rater_pages < admin_pages
    assert {"admin_overview.py", "admin_raters.py"} <= admin_pages


# -- rating -----------------------------------------------------------------------------------


@pytest.fixture
def alice(served: Pool) -> tuple[int, str]:
    rater, token = served.store.add_rater("alice")
    served.store.assign_k(served.originals, 1, [rater.rater_id], seed=4)
    return rater.rater_id, token


ALL = {"correct": 4.0, "complete": 4.0, "tone": 4.0}


def test_the_form_shows_the_rubric_and_submit_stores_the_label(served: Pool, alice: tuple[int, str]) -> None:
    rater_id, token = alice
    at = open_app(token)
    total = len(served.originals)
    assert progress_text(at) == f"**0 of {total}** done"
    data = form_data(at)
    assert [c["name"] for c in data["criteria"]] == ["Correct", "Complete", "Tone"]
    assert next(c["description"] for c in data["criteria"]) == "Every factual claim and step is right."
    assert [o["key"] for o in data["choice"]["options"]] == ["1", "2", "3", "4", "5"]
    assert data["follow"] and data["flag"] is not None and not data["editing"]
    act(at, "submit", choice=5, criteria={"correct": 5, "complete": 5, "tone": 2}, comment="clear steps")
    labels = served.store.rater_current_labels(rater_id)
    assert len(labels) == 1
    row = labels.iloc[0]
    assert (row["overall"], bool(row["passed"]), row["comment"]) == (5.0, True, "clear steps")
    assert json.loads(row["criteria"]) == {"complete": 5.0, "correct": 5.0, "tone": 2.0}
    assert progress_text(at) == f"**1 of {total}** done"
    assert at.query_params["t"] == token  # the token stays in the URL: a reload resumes
    assert_blind(at, served)


def test_back_shows_everything_given_and_an_edit_supersedes(served: Pool, alice: tuple[int, str]) -> None:
    rater_id, token = alice
    at = open_app(token)
    act(at, "submit", choice=3, criteria={"correct": 3, "complete": 2, "tone": 3}, comment="step 2 wrong")
    first = served.store.rater_current_labels(rater_id).iloc[0]
    act(at, "back")
    data = form_data(at)
    assert data["choice"]["value"] == 3 and data["comment"]["value"] == "step 2 wrong"
    assert {c["id"]: c["value"] for c in data["criteria"]} == {"correct": 3, "complete": 2, "tone": 3}
    assert data["editing"] and "replaces it" in where(at)
    act(at, "submit", choice=1, criteria={"correct": 1, "complete": 1, "tone": 1}, comment="step 2 wrong")
    rows = served.store.query("SELECT label_id, overall, supersedes FROM labels ORDER BY label_id")
    assert rows["overall"].tolist() == [3.0, 1.0]
    assert int(rows["supersedes"].iloc[1]) == int(first["label_id"])
    assert served.store.rater_current_labels(rater_id)["overall"].tolist() == [1.0]
    assert progress_text(at) == f"**1 of {len(served.originals)}** done"  # still one item done
    assert "replaces it" not in where(at)  # back at the next one


def test_resubmitting_unchanged_writes_nothing_and_is_not_an_error(served: Pool, alice: tuple[int, str]) -> None:
    rater_id, token = alice
    at = open_app(token)
    act(at, "submit", choice=4, criteria=ALL, comment="fine", flag=False)
    act(at, "back")
    data = form_data(at)
    act(at, "submit", choice=data["choice"]["value"],
        criteria={c["id"]: c["value"] for c in data["criteria"]}, comment=data["comment"]["value"])
    assert len(served.store.query("SELECT 1 FROM labels WHERE rater_id = ?", [rater_id])) == 1
    assert form_data(at)["error"] == "" and not at.error
    assert "Nothing changed" in form_data(at)["notice"]


def test_skip_sends_the_item_to_the_end_and_the_server_refuses_a_missing_score(
    served: Pool, alice: tuple[int, str]
) -> None:
    rater_id, token = alice
    at = open_app(token)
    first = served.store.next_item(rater_id)
    assert first is not None
    act(at, "submit", choice=None, criteria=ALL)  # the browser refuses this itself; so does the server
    assert "overall score is required" in form_data(at)["error"]
    assert served.store.rater_current_labels(rater_id).empty
    act(at, "skip")
    now = served.store.next_item(rater_id)
    assert now is not None and now.assignment_id != first.assignment_id
    assert where(at).startswith(f"Answer {now.position} of")


def test_missing_criteria_are_named(served: Pool, alice: tuple[int, str]) -> None:
    _, token = alice
    at = open_app(token)
    act(at, "submit", choice=4, criteria={"correct": 4})
    error = form_data(at)["error"]
    assert "'Complete' and 'Tone' have no score" in error and "[" not in error
    assert "\nFix: " in error  # the fix on its own line


def test_flag_as_unrateable_with_a_reason(served: Pool, alice: tuple[int, str]) -> None:
    rater_id, token = alice
    at = open_app(token)
    act(at, "submit", choice=None, flag=True, reason="answer is cut off")
    row = served.store.rater_current_labels(rater_id).iloc[0]
    assert row["flag_reason"] == "answer is cut off"
    act(at, "back")
    data = form_data(at)
    assert data["flag"]["value"] is True and data["flag"]["reason"] == "answer is cut off"


def test_active_seconds_from_the_browser_are_stored_within_the_servers_time(
    served: Pool, alice: tuple[int, str]
) -> None:
    rater_id, token = alice
    at = open_app(token)
    act(at, "submit", choice=4, criteria=ALL, seconds=0.0)
    act(at, "submit", choice=4, criteria=ALL, seconds=3600.0)  # more than the server saw: capped
    seconds = served.store.query("SELECT seconds FROM labels WHERE rater_id = ? ORDER BY label_id",
                                 [rater_id])["seconds"].tolist()
    assert seconds[0] == 0.0 and 0 < seconds[1] < 60


def test_a_revoked_raters_submit_stores_nothing_and_says_so(served: Pool, alice: tuple[int, str]) -> None:
    rater_id, token = alice
    at = open_app(token)
    served.store.revoke_rater("alice")
    act(at, "submit", choice=4, criteria=ALL)
    assert served.store.rater_current_labels(rater_id).empty
    shown = " ".join(e.value for e in at.error)
    assert "Access denied" in shown and "not saved" in shown


def test_a_stale_form_is_ignored(served: Pool, alice: tuple[int, str]) -> None:
    rater_id, token = alice
    at = open_app(token)
    act(at, "submit", choice=4, criteria=ALL, item="someone-else:new")
    assert served.store.rater_current_labels(rater_id).empty
    assert "another item" in form_data(at)["error"]  # said, not silently dropped


def test_finished_queue_says_so_and_back_returns_to_the_last_item(served: Pool) -> None:
    rater, token = served.store.add_rater("dan")
    served.store.assign_k(served.originals[:2], 1, [rater.rater_id])
    for item in served.store.rater_queue(rater.rater_id):
        served.store.add_label(rater.rater_id, item.assignment_id, overall=4,
                               criteria={"correct": 4, "complete": 4, "tone": 4})
    at = open_app(token)
    assert any("All 2 answers are rated" in s.value for s in at.success)
    click(at, "Back")
    assert where(at) == "Answer 2 of 2 · you rated this one; a changed label replaces it"


def test_the_rubric_instructions_come_with_the_form(served: Pool, alice: tuple[int, str]) -> None:
    _, token = alice
    guide = form_data(open_app(token))["guide"]
    assert guide["title"].startswith("How to score")
    assert guide["text"] == served.store.rubric().instructions


def test_script_answers_render_as_text_and_nothing_unblinds(served: Pool) -> None:
    rater, token = served.store.add_rater("eve")
    script_answer = f"{FAMILIES[0]}-{served.tasks[0]}"
    served.store.assign_k([script_answer], 1, [rater.rater_id])
    at = open_app(token)
    assert shown_texts(at).count(SCRIPT_TEXT) == 1
    (body,) = [str(h.value) for h in at.html if "alert(1)" in str(h.value)]
    # Escaped: the browser shows the tags as text and makes no element of them.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body and "<script" not in body and "<b>" not in body
    assert_blind(at, served)


def test_images_in_answers_show_as_text_and_are_never_fetched(served: Pool) -> None:
    text = "Reset it as shown: ![diagram](https://tracker.example/pixel.png?rater=1) then retry."
    served.store.add_pool([], [Answer("with-image", served.tasks[1], FAMILIES[0], "m", text)])
    rater, token = served.store.add_rater("ida")
    served.store.assign_k(["with-image"], 1, [rater.rater_id])
    shown = [text for text in shown_texts(open_app(token)) if "tracker.example" in text]
    # Shown as typed: nothing reads it as an image.
    assert shown == [text]


def test_self_identifying_text_is_masked_for_raters(served: Pool) -> None:
    text = "As an AI developed by Zorblax, I suggest resetting the router."
    served.store.add_pool([], [Answer("zorblax-selfid", served.tasks[1], FAMILIES[0], "m", text,
                                      self_id_spans=tuple(detect_self_identifying(text)))])
    rater, token = served.store.add_rater("fay")
    served.store.assign_k(["zorblax-selfid"], 1, [rater.rater_id])
    at = open_app(token)
    assert any(text.startswith("[redacted]") for text in shown_texts(at))
    assert "Zorblax" not in everything(at)
    served.store.set_setting("project", "mask_self_id", "false")
    assert text in shown_texts(open_app(token))


# -- compare and audit ------------------------------------------------------------------------


def test_compare_page_stores_the_preference_with_the_shown_order(served: Pool) -> None:
    rater, token = served.store.add_rater("gus")
    pair = (f"{FAMILIES[0]}-{served.tasks[2]}", f"{FAMILIES[1]}-{served.tasks[2]}")
    served.store.assign_pairs([pair], [rater.rater_id])
    at = open_app(token, "pairwise.py")
    assert progress_text(at) == "**0 of 1** done"
    assert_blind(at, served)
    act(at, "submit", choice=None)
    assert "choose a preference first" in form_data(at)["error"]
    act(at, "submit", choice=2, comment="A gives the steps")
    stored = served.store.query("SELECT shown_left, shown_right, preference, comment"
                                " FROM pair_labels").iloc[0]
    assigned = served.store.query("SELECT answer_id, answer_b_id FROM assignments"
                                  " WHERE kind = 'pair'").iloc[0]
    assert (stored["shown_left"], stored["shown_right"]) == (assigned["answer_id"],
                                                             assigned["answer_b_id"])
    assert (stored["preference"], stored["comment"]) == (2, "A gives the steps")
    assert any("All 1 pairs are compared" in s.value for s in at.success)
    click(at, "Back")
    data = form_data(at)
    assert data["choice"]["value"] == 2 and data["comment"]["value"] == "A gives the steps"


def test_audit_page_stores_yes_no_and_a_note(served: Pool) -> None:
    rater, token = served.store.add_rater("hal")
    served.store.assign_audits(served.padded[:2], [rater.rater_id])
    at = open_app(token, "audit.py")
    assert "fact, caveat, recommendation, example" in form_data(at)["choice"]["label"]
    assert any("×" in c.value for c in at.caption)
    assert_blind(at, served)
    act(at, "submit", choice=True, comment="adds a firmware tip")
    row = served.store.query("SELECT adds_content, note, length_ratio FROM padding_audits").iloc[0]
    assert bool(row["adds_content"]) is True and row["note"] == "adds a firmware tip"
    assert row["length_ratio"] > 1
    assert progress_text(at) == "**1 of 2** done"
    act(at, "back")
    assert form_data(at)["comment"]["value"] == "adds a firmware tip"


def test_empty_queues_say_so(served: Pool) -> None:
    _, token = served.store.add_rater("ivy")
    assert any("No answers to rate" in i.value for i in open_app(token).info)
    assert any("No pairs" in i.value for i in open_app(token, "pairwise.py").info)
    assert any("No padding audits" in i.value for i in open_app(token, "audit.py").info)


def test_rate_page_points_to_other_work(served: Pool) -> None:
    rater, token = served.store.add_rater("kim")
    served.store.assign_audits(served.padded[:2], [rater.rater_id])
    assert any("Padding audit** (2 to do)" in i.value for i in open_app(token).info)


def test_pull_mode_claims_work_when_the_queue_is_empty(served: Pool) -> None:
    served.store.set_setting("project", "claim_k", "2")
    rater, token = served.store.add_rater("jo")
    at = open_app(token)
    assert progress_text(at) == "**0 of 1** done"
    assert len(served.store.rater_queue(rater.rater_id)) == 1


def test_the_server_freezes_its_startup_heap_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # After the first page, what is alive (libraries, the runtime) is frozen for the cyclic
    # collector, once per process: later pages' objects stay collectable.
    import gc

    from judgelab import session

    monkeypatch.setattr(session, "_settled", False)
    gc.unfreeze()
    try:
        session.settle_heap()
        frozen = gc.get_freeze_count()
        assert frozen > 0
        later = [[i] for i in range(1000)]  # noqa: F841 - objects made after the first page
        session.settle_heap()
        # Nothing more is frozen (reference counting may free frozen objects meanwhile, so the
        # count can only have fallen).
        assert gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
