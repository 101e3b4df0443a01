"""The audit trail (issue 57 point 3): each admin action leaves one entry, in the action's own transaction.

Store level on both back-ends: every recorded action with its actor, target and facts; a failed or
rolled-back action leaves none; an import or setting that changes nothing is not an action; who the
actor is (``acting_as``, the app's source, the OS user). The CLI's ``judgelab audit --json`` and the
``audit_trail`` export; the Audit page is in ``tests/app/test_audit_page.py``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.cli import main
from judgelab.labeler.errors import InputError
from judgelab.labeler.importers import parse_rubric
from judgelab.labeler.models import Answer, Pair, Task
from judgelab.labeler.quality import QualityItem, QualitySettings
from judgelab.labeler.schemas import SCHEMAS
from judgelab.labeler.store import Store, acting_as, current_actor, os_user, set_actor_source
from tests.conftest import DATA

RUBRIC = parse_rubric(DATA / "rubric.toml")


def entries(store: Store) -> list[tuple[str, str, str]]:
    """``(actor, action, target)`` of every entry, oldest first."""
    frame = store.audit_log()
    return list(zip(frame["actor"], frame["action"], frame["target"], strict=True))


def detail(store: Store, action: str) -> dict[str, Any]:
    """The facts of the newest entry of ``action``."""
    return json.loads(store.audit_log(action=action)["detail"].iloc[-1])  # type: ignore[no-any-return]


def seed(store: Store) -> list[int]:
    """A rubric, three answers of two tasks, raters ann, bob and the admin boss (as ``cli:seed``)."""
    with acting_as("cli:seed"):
        store.add_rubric(RUBRIC, source_file="rubric.toml")
        store.add_pool([Task("t1", "Help"), Task("t2", "More")], [
            Answer("a1", "t1", "fam", "m", "Reset the router."),
            Answer("a2", "t1", "other", "n", "Turn it off and on."),
            Answer("a3", "t2", "fam", "m", "Check the cable."),
        ], source_file="answers.jsonl")
        return [store.add_rater(n, role="admin" if n == "boss" else "rater")[0].rater_id
                for n in ("ann", "bob", "boss")]


@pytest.mark.both_backends
def test_every_admin_action_is_recorded_with_who_what_and_the_facts(store: Store) -> None:
    ann, bob, boss = seed(store)
    assert entries(store) == [("cli:seed", "import", "rubric.toml"), ("cli:seed", "import", "answers.jsonl"),
                              ("cli:seed", "rater add", "ann"), ("cli:seed", "rater add", "bob"),
                              ("cli:seed", "rater add", "boss")]
    assert detail(store, "import") == {"added": {"answers": 3, "tasks": 2}}
    store.audit_log()  # reading is no action
    with acting_as("admin:boss"):
        store.assign_k(["a1", "a2", "a3"], 2, [ann, bob], rubric=(RUBRIC.rubric_id, RUBRIC.version))
        store.assign_pairs([("a1", "a2")], [ann])
        store.add_pairs([Pair("p1", "Q", "left", "right", "a")], source_file="pairs.jsonl")
        store.pause_rater("bob", reason="too fast", exclude_labels=True)
        store.resume_rater("bob")
        link = store.reissue_token("ann")
        store.revoke_rater("ann")
        store.adjudicate(boss, "a1", rubric_id=RUBRIC.rubric_id, version=RUBRIC.version, overall=4, comment="ok")
        store.set_setting("project", "note", "hello")
        store.add_quality_items([QualityItem("g1", "gold", "Q", "A gold answer.", 4, 5)], source_file="gold.csv")
        store.set_quality_settings(QualitySettings(rate=0.5))
        store.record_screen("run-1", [("a2", True, "signs as other", None, 0.01)], judge="fake")
        store.mask_answer("a2", "Turn it off and on (masked).", admin="boss")
        store.clear_answer("a3", admin="boss", reason="nothing there")
        store.record_action("export", "labels.csv", kind="labels", rows=0, format="csv")
    assert link
    done = [(a, t) for who, a, t in entries(store)[5:] if who == "admin:boss"]
    assert done == [
        ("assign", "score"), ("assign", "pair"), ("import", "pairs.jsonl"), ("pause", "bob"), ("resume", "bob"),
        ("rater reissue", "ann"), ("revoke", "ann"), ("adjudicate", "a1"), ("setting", "project:note"),
        ("gold import", "gold.csv"), ("setting", "quality"), ("withhold", "run run-1"), ("mask", "a2"),
        ("clear", "a3"), ("export", "labels.csv"),
    ]
    assert len(entries(store)) == 5 + len(done)  # nothing else, by nobody else
    assert json.loads(store.audit_log(action="assign")["detail"].iloc[0]) == {
        "added": {"ann": 3, "bob": 3}, "items": 3, "rubric": f"{RUBRIC.rubric_id} v{RUBRIC.version}"}
    assert detail(store, "pause") == {"reason": "too fast", "exclude_labels": True}
    assert detail(store, "adjudicate")["overall"] == 4.0
    assert detail(store, "setting") == {"value": {"rate": "0.5"}, "was": {"rate": "0.0"}}
    assert detail(store, "withhold") == {"answers": ["a2"], "judge": "fake"}
    assert detail(store, "clear") == {"by": "boss", "reason": "nothing there"}
    assert (store.audit_log()["done_at"].diff().dropna() >= pd.Timedelta(0)).all()


@pytest.mark.both_backends
def test_a_design_and_its_assignments_are_recorded(store: Store) -> None:
    ann, bob, _ = seed(store)
    items = pd.DataFrame({"answer_id": ["a1", "a3"], "stratum": ["s", "s"], "inclusion_prob": [0.5, 0.5],
                          "weight": [2.0, 2.0], "n_raters": [1, 1]})
    with acting_as("cli:planner"):
        assert store.save_design("d1", {"n": 2}, {}, items)
        assert not store.save_design("d1", {"n": 2}, {}, items)  # stored already: nothing done
        store.add_design_assignments("d1", pd.DataFrame({"rater_id": [ann, bob], "answer_id": ["a1", "a3"],
                                                         "queue_pos": [1, 1], "is_overlap": [False, False]}))
    assert [(a, t) for who, a, t in entries(store) if who == "cli:planner"] == [("design", "d1"), ("assign", "score")]
    assert detail(store, "assign") == {"added": {"ann": 1, "bob": 1}, "design": "d1", "items": 2}


@pytest.mark.both_backends
def test_an_action_that_fails_or_rolls_back_leaves_no_entry(store: Store) -> None:
    *_, boss = seed(store)
    before = entries(store)
    with pytest.raises(InputError):
        store.revoke_rater("nobody")
    with pytest.raises(InputError):
        store.adjudicate(boss, "a1", rubric_id=RUBRIC.rubric_id, version=RUBRIC.version, overall=99)
    with pytest.raises(InputError):
        store.pause_rater("nobody")
    with pytest.raises(InputError):
        store.add_rater("ann")
    # The entry is written in the action's own unit of work: a failure later in it takes both back.
    with pytest.raises(RuntimeError), store.connection():
        store.revoke_rater("ann")
        raise RuntimeError("the rest of the unit failed")
    assert store.authenticate(store.reissue_token("bob")).name == "bob"
    assert entries(store) == [*before, (f"os:{os_user()}", "rater reissue", "bob")]
    assert store.raters().set_index("name").loc["ann", "active"]


@pytest.mark.both_backends
def test_what_changes_nothing_is_not_an_action(store: Store) -> None:
    seed(store)
    store.set_setting("project", "note", "x")
    before = entries(store)
    store.add_rubric(RUBRIC, source_file="rubric.toml")  # the same rubric again
    store.add_pool([Task("t1", "Help")], [Answer("a1", "t1", "fam", "m", "Reset the router.")])
    store.set_setting("project", "note", "x")  # the value it has
    assert entries(store) == before


def test_the_actor_is_the_innermost_acting_as_else_the_source_else_the_os_user() -> None:
    assert current_actor() == f"os:{os_user()}"
    set_actor_source(lambda: "admin:boss")
    try:
        assert current_actor() == "admin:boss"
        with acting_as("cli:ann"):
            assert current_actor() == "cli:ann"
        set_actor_source(lambda: None)  # the app's source outside a page's run
        assert current_actor() == f"os:{os_user()}"
    finally:
        from judgelab.session import admin_actor

        set_actor_source(admin_actor)  # as judgelab.session registers it
    assert current_actor() == f"os:{os_user()}"  # no page is running here


def test_a_read_only_database_exports_and_records_nothing(tmp_path: Path) -> None:
    path = tmp_path / "p.duckdb"
    store = Store(path)
    seed(store)
    store.release()
    reader = Store(path, read_only=True)
    reader.record_action("export", "x.csv", kind="labels")
    assert len(reader.audit_log()) == 5


# -- the command line ------------------------------------------------------------------------------


def cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_cli_records_its_user_and_lists_and_exports_the_trail(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    cli("raters", "add", "ann", "--db", db)
    cli("raters", "pause", "ann", "--reason", "on leave", "--db", db)
    cli("raters", "revoke", "ann", "--db", db)
    out = tmp_path / "trail.csv"
    cli("export", "audit_trail", "--out", str(out), "--db", db)
    listed = json.loads(cli("audit", "--json", "--db", db))
    me = f"cli:{os_user()}"
    assert [(e["actor"], e["action"], e["target"]) for e in listed] == [
        (me, "rater add", "ann"), (me, "pause", "ann"), (me, "revoke", "ann"), (me, "export", str(out))]
    assert listed[1]["detail"] == {"reason": "on leave"}
    assert listed[-1]["detail"] == {"format": "csv", "kind": "audit_trail", "rows": 3}
    assert [e["entry_id"] for e in listed] == [1, 2, 3, 4]
    # The file: the schema's columns, the three entries before the export itself.
    written = pd.read_csv(out)
    assert list(written.columns) == list(SCHEMAS["audit_trail"].names)
    assert written["action"].tolist() == ["rater add", "pause", "revoke"]
    # The filters, and the text listing.
    assert [e["target"] for e in json.loads(cli("audit", "--json", "--action", "revoke", "--actor", me,
                                                "--db", db))] == ["ann"]
    text = cli("audit", "--db", db).splitlines()
    assert len(text) == 4 and "pause" in text[1] and "(reason: on leave)" in text[1]


def test_the_audit_trail_is_not_an_import_kind(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["import", "audit_trail", str(tmp_path / "x.csv"),
                                       "--db", str(tmp_path / "p.duckdb")])
    assert result.exit_code == 2 and "audit_trail" in result.output


def test_an_export_that_fails_to_write_is_not_recorded(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    cli("raters", "add", "ann", "--db", db)
    blocked = tmp_path / "file"
    blocked.write_text("")
    result = CliRunner().invoke(main, ["export", "audit_trail", "--out", str(blocked / "x.csv"), "--db", db])
    assert result.exit_code != 0
    assert [e["action"] for e in json.loads(cli("audit", "--json", "--db", db))] == ["rater add"]


def test_the_import_of_a_conversation_rubric_keeps_its_file_name(store: Store) -> None:
    turns = replace(RUBRIC, rubric_id="turns", turn="each")  # type: ignore[arg-type]
    with acting_as("cli:x"):
        store.add_rubric(turns, source_file="turns.toml")
    assert entries(store) == [("cli:x", "import", "turns.toml")]


@pytest.mark.both_backends
def test_crowd_studies_and_sign_in_addresses_are_recorded(store: Store) -> None:
    """The crowd study's link and its closing, and a rater's sign-in address, are admin actions too."""
    seed(store)
    with acting_as("cli:lead"):
        store.create_crowd_study("pilot", quota=2, time_limit=1800, completion_code="C0DE")
        store.close_crowd_study("pilot")
        store.set_rater_email("ann", "Ann@Example.com")
        store.set_rater_email("ann", None)
        with pytest.raises(InputError):
            store.close_crowd_study("nope")
    assert entries(store)[-4:] == [("cli:lead", "crowd study", "pilot"), ("cli:lead", "crowd close", "pilot"),
                                   ("cli:lead", "rater email", "ann"), ("cli:lead", "rater email", "ann")]
    assert detail(store, "crowd study") == {"k": 1, "minutes": 30.0, "platform": "prolific", "quota": 2}
    assert [json.loads(d)["email"] for d in store.audit_log(action="rater email")["detail"]] == [
        "ann@example.com", "(cleared)"]


@pytest.mark.both_backends
def test_an_admins_first_sign_in_records_the_row_it_makes(store: Store) -> None:
    """The admin list lets a person in; the row their first sign-in makes is an entry in their name."""
    seed(store)
    assert store.signed_in_rater("Lead@Example.com", admin=True) is not None
    assert store.signed_in_rater("lead@example.com", admin=True) is not None  # again: no new row
    assert entries(store)[-1:] == [("admin:lead@example.com", "rater add", "lead@example.com")]
    assert detail(store, "rater add") == {"role": "admin", "via": "sign-in"}
