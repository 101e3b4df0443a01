"""The store and CLI rules behind a rater session a team can trust (issue 12).

* every answer text is checked for self-identifying spans on its way into the store,
  whoever writes it (the demo's padded rewrites used to skip it);
* a revoked rater's write is refused in the write's own transaction;
* resubmitting an unchanged label, pair label or audit writes nothing;
* the app's active seconds are stored, bounded by the server's clock;
* errors put their fix on a line of its own and name criteria by name;
* ``judgelab serve``/``demo`` turn error details off and pick a free port;
* ``judgelab assign`` gives answers to exactly k raters, with the Assignments page's filters.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.cli import main
from judgelab.cli.serve import APP_CONFIG, choose_port, streamlit_command
from judgelab.labeler.errors import AccessError, InputError
from judgelab.labeler.models import Answer
from tests.app.conftest import FAMILIES, MODELS, Pool
from tests.conftest import DATA

ALL = {"correct": 4.0, "complete": 4.0, "tone": 4.0}
REPO = Path(__file__).resolve().parents[2]


def _one_item(pool: Pool, name: str = "alice") -> tuple[int, int]:
    rater, _ = pool.store.add_rater(name)
    pool.store.assign_k(pool.originals[:2], 1, [rater.rater_id], seed=0)
    return rater.rater_id, pool.store.rater_queue(rater.rater_id)[0].assignment_id


# -- one write path for answer text ------------------------------------------------------------


def test_every_answer_written_is_checked_for_self_identifying_text(pool: Pool) -> None:
    store = pool.store
    text = "Restart it. As a language model created by OpenAI, I also say: I'm Claude, made by Anthropic."
    rewrite = Answer("rewrite-1", pool.tasks[0], FAMILIES[0], MODELS[FAMILIES[0]], text,
                     variant="padded", parent_answer_id=pool.originals[0])
    store.add_pool([], [rewrite])  # no spans given: the store finds them itself
    found = store.self_identifying().set_index("answer_id")
    assert "rewrite-1" in found.index  # the Data page's list includes rewrites
    rater, _ = store.add_rater("rita")
    store.assign_audits([(pool.originals[0], "rewrite-1")], [rater.rater_id])
    item = store.rater_queue(rater.rater_id, "audit")[0]
    shown = store.audit_view(rater.rater_id, item.assignment_id).rewrite_text
    for phrase in ("OpenAI", "Anthropic", "Claude", "created by", "language model"):
        assert phrase.lower() not in shown.lower(), shown
    assert shown.startswith("Restart it.")


def test_the_pool_own_names_are_found_in_later_writes(pool: Pool) -> None:
    text = f"Tip from {MODELS[FAMILIES[1]]}: restart it."
    pool.store.add_pool([], [Answer("late", pool.tasks[1], FAMILIES[0], "other-model", text)])
    spans = pool.store.self_identifying().set_index("answer_id").loc["late", "spans"]
    assert [s[2] for s in spans] == [MODELS[FAMILIES[1]]]


# -- writes ------------------------------------------------------------------------------------


def test_a_revoked_rater_cannot_write_anything(pool: Pool) -> None:
    store = pool.store
    rater_id, aid = _one_item(pool)
    store.assign_pairs([(pool.originals[2], pool.originals[3])], [rater_id])
    store.assign_audits(pool.padded[:1], [rater_id])
    store.revoke_rater("alice")
    with pytest.raises(AccessError, match="revoked"):
        store.add_label(rater_id, aid, overall=4, criteria=ALL)
    with pytest.raises(AccessError):
        store.add_pair_label(rater_id, store.rater_queue(rater_id, "pair")[0].assignment_id, 1)
    with pytest.raises(AccessError):
        store.add_audit(rater_id, store.rater_queue(rater_id, "audit")[0].assignment_id, True)
    for table in ("labels", "pair_labels", "padding_audits"):
        assert store.query(f"SELECT count(*) AS n FROM {table}")["n"].iloc[0] == 0


def test_resubmitting_unchanged_writes_nothing(pool: Pool) -> None:
    store = pool.store
    rater_id, aid = _one_item(pool)
    first = store.add_label(rater_id, aid, overall=4, criteria=ALL, comment="ok")
    assert store.add_label(rater_id, aid, overall=4.0, criteria=ALL, comment="ok") == first
    changed = store.add_label(rater_id, aid, overall=4, criteria=ALL, comment="ok, but terse")
    assert changed != first
    flagged = store.add_label(rater_id, aid, overall=None, flag_reason="cut off", comment="ok, but terse")
    assert store.add_label(rater_id, aid, overall=None, flag_reason="cut off", comment="ok, but terse") == flagged
    assert store.query("SELECT count(*) AS n FROM labels")["n"].iloc[0] == 3

    store.assign_pairs([(pool.originals[2], pool.originals[3])], [rater_id])
    pair = store.rater_queue(rater_id, "pair")[0].assignment_id
    p1 = store.add_pair_label(rater_id, pair, 1, comment="A has the date")
    assert store.add_pair_label(rater_id, pair, 1, comment="A has the date") == p1
    assert store.add_pair_label(rater_id, pair, 2, comment="A has the date") != p1
    store.assign_audits(pool.padded[:1], [rater_id])
    audit = store.rater_queue(rater_id, "audit")[0].assignment_id
    a1 = store.add_audit(rater_id, audit, False, note="nothing new")
    assert store.add_audit(rater_id, audit, False, note="nothing new") == a1


def test_active_seconds_are_stored_and_bounded_by_the_server_clock(pool: Pool) -> None:
    store = pool.store
    rater_id, aid = _one_item(pool)
    store.open_item(rater_id, aid)
    time.sleep(0.4)
    store.add_label(rater_id, aid, overall=4, criteria=ALL, seconds=0.25)
    store.open_item(rater_id, aid)  # the page shows it again
    store.add_label(rater_id, aid, overall=3, criteria=ALL, seconds=10_000.0)  # more than the server saw
    seconds = store.query("SELECT seconds FROM labels ORDER BY label_id")["seconds"].tolist()
    assert seconds[0] == 0.25 and seconds[1] < 60


def test_missing_criteria_are_named_and_the_fix_is_on_its_own_line(pool: Pool) -> None:
    rater_id, aid = _one_item(pool)
    with pytest.raises(InputError) as caught:
        pool.store.add_label(rater_id, aid, overall=4, criteria={"correct": 4})
    message = str(caught.value)
    assert message.splitlines() == [
        "'Complete' and 'Tone' have no score",
        "Fix: score every criterion, or flag the item as unrateable.",
    ]
    with pytest.raises(InputError, match="'Tone' has no score"):
        pool.store.add_label(rater_id, aid, overall=4, criteria={"correct": 4, "complete": 4})


def test_the_duplicate_name_hint_says_reissue(pool: Pool) -> None:
    pool.store.add_rater("alice")
    with pytest.raises(InputError, match="reissue"):
        pool.store.add_rater("alice")


# -- serving -------------------------------------------------------------------------------------


def test_serve_turns_error_details_off_with_a_flag(tmp_path: Path) -> None:
    command = streamlit_command(tmp_path / "x.duckdb", 8600, "localhost")
    at = command.index("--client.showErrorDetails")
    assert command[at + 1] == "none"
    config = APP_CONFIG.read_text()  # the packaged config, which Streamlit also reads beside the app
    assert 'showErrorDetails = "none"' in config


def test_a_busy_port_is_refused_when_given_and_skipped_when_not() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        busy = held.getsockname()[1]
        with pytest.raises(InputError, match=f"port {busy}"):
            choose_port("127.0.0.1", busy)
    free = choose_port("127.0.0.1", None)
    assert 8501 <= free < 8601


# -- judgelab assign -----------------------------------------------------------------------------


def test_assign_gives_each_answer_to_exactly_k_raters(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    run = CliRunner()

    def ok(*args: str) -> str:
        done = run.invoke(main, [*args, "--db", db], catch_exceptions=False)
        assert done.exit_code == 0, done.output
        return done.output

    ok("init")
    ok("import", "rubric", str(DATA / "rubric.toml"))
    ok("import", "answers", str(DATA / "answers.jsonl"))
    for name in ("ann", "ben", "cy"):
        ok("raters", "add", name)
    ok("raters", "add", "boss", "--admin")
    out = ok("assign", "--k", "2", "--tasks", "T001:T005", "--seed", "3")
    assert out.startswith("10 answers to 2 of 3 raters each")
    # Raters by name, not by id (issue 29 item 9).
    assert "ann: " in out and "ben: " in out and "cy: " in out and "rater 1" not in out, out
    from judgelab.labeler.store import Store

    store = Store(db)
    per_answer = store.query("SELECT answer_id, count(*) AS n FROM assignments GROUP BY answer_id")
    assert len(per_answer) == 10 and set(per_answer["n"]) == {2}
    ok("assign", "--k", "2", "--tasks", "T001:T005", "--seed", "3")  # again: nothing more
    assert len(store.query("SELECT * FROM assignments")) == 20
    ok("assign", "--k", "1", "--raters", "cy", "--family", "claude", "--tasks", "T006:T006")
    cy = store.query("SELECT a.family FROM assignments s JOIN answers a USING (answer_id)"
                     " JOIN raters r USING (rater_id) WHERE r.name = 'cy'")
    assert "claude" in set(cy["family"])
    bad = run.invoke(main, ["assign", "--raters", "nobody", "--db", db])
    assert bad.exit_code == 2 and "nobody" in bad.output
    boss = store.query("SELECT count(*) AS n FROM assignments s JOIN raters r USING (rater_id)"
                       " WHERE r.name = 'boss'")
    assert boss["n"].iloc[0] == 0  # admins are not dealt work by default


# -- Overview ------------------------------------------------------------------------------------


def test_overview_shows_each_raters_active_time_under_human_headers(
    pool: Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamlit.testing.v1 import AppTest

    store = pool.store
    rater_id, aid = _one_item(pool)
    store.open_item(rater_id, aid)
    time.sleep(0.3)
    store.add_label(rater_id, aid, overall=4, criteria=ALL, seconds=0.2)
    _, admin = store.add_rater("boss", role="admin")
    monkeypatch.setenv("JUDGELAB_DB", str(pool.path))
    at = AppTest.from_file(str(REPO / "judgelab" / "views" / "admin_overview.py"), default_timeout=60)
    at.query_params["t"] = admin
    at.run()
    assert not at.exception
    table = next(d for d in at.dataframe if "median_seconds" in d.value.columns)
    config = json.loads(table.proto.columns)
    shown = [config.get(c, {}).get("label") for c in table.value.columns]
    assert all(label and "_" not in label for label in shown), shown
    assert "Median active s" in shown and "Over 120 s" in shown
    row = table.value.set_index("rater").loc["alice"]
    assert row["median_seconds"] == "0" and row["share_above_cap"] == "0%"
