"""Tests for ``judgelab design`` through the real command group."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.admin import draft_design, overview
from judgelab.cli import main
from judgelab.labeler.store import Store
from tests.test_design import _fill, simulate_pool


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One filled database per module; each test works on its own copy."""
    path = tmp_path_factory.mktemp("design") / "template.duckdb"
    store = Store(path)
    _fill(store, simulate_pool(80, seed=3), raters=4)
    store.release()  # closing checkpoints the write-ahead log into the file the tests copy
    return path


@pytest.fixture
def db(template: Path, tmp_path: Path) -> str:
    path = tmp_path / "design.duckdb"
    shutil.copyfile(template, path)
    return str(path)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["design", *args])
    return result.exit_code, result.stdout, result.stderr


def test_design_prints_table_precision_target_and_cost(db: str) -> None:
    code, out, _ = run("--db", db, "--n", "60", "--raters", "4", "--min-gap", "10")
    assert code == 0, out
    assert "paired by task, 30 tasks / 60 answers from a pool of 160 answers" in out
    assert "stratum" in out and "inclusion_prob" in out and "total" in out
    assert "self-preference gap: ±" in out
    assert "Cohen's kappa SE" in out and "12 double-labelled answers" in out
    assert "Target: a 10 pp gap at alpha 0.05, power 0.8 needs" in out
    # 60 labels + 12 second labels = 72 ratings x 2.5 min = 3 person-hours.
    assert "72 ratings x 2.5 min (assumed) = 3 person-hours" in out
    assert Store(db).designs().empty  # nothing stored without --apply


def test_design_json_is_complete_and_parseable(db: str) -> None:
    code, out, _ = run("--db", db, "--budget-hours", "3", "--allocation", "neyman",
                       "--unpaired", "--strata", "family,judge_bin", "--json",
                       "--target-half-width", "15", "--minutes-per-label", "3")
    assert code == 0, out
    payload = json.loads(out)
    # 3 h = 180 min buys 180 / (3 * 1.2) = 50 labels.
    assert payload["labels"] == 50
    assert payload["cost"]["person_hours"] == pytest.approx(3.0)
    assert payload["params"]["allocation"] == "neyman"
    assert payload["target"]["kind"] == "half_width"
    assert payload["strata"][-1]["stratum"] == "total"
    assert payload["judge_run"]["judge_family"] == "claude"
    assert set(payload["precision"]["residual_half_width"]) == {"claude", "gpt"}


def test_design_apply_creates_assignments(db: str) -> None:
    code, out, _ = run("--db", db, "--n", "40", "--raters", "rater0,rater1,rater2", "--apply")
    assert code == 0, out
    assert "Applied: 48 assignments to 3 raters" in out
    store = Store(db)
    designs = store.designs()
    assert len(designs) == 1 and designs["applied_at"].notna().all()
    rows = store.design_assignments(str(designs["design_id"].iloc[0]))
    assert len(rows) == 48 and set(rows["rater"]) == {"rater0", "rater1", "rater2"}


def test_design_errors_are_one_line_and_exit_2(db: str) -> None:
    code, _, err = run("--db", db, "--n", "40", "--raters", "9", "--apply")
    assert code == 2
    assert "asks for 9 raters but the database has 4 active non-admin rater(s)" in err
    code, _, err = run("--db", db, "--n", "40", "--raters", "rater0,nobody", "--apply")
    assert code == 2 and "no active rater named 'nobody'" in err
    code, _, err = run("--db", db, "--n", "40", "--strata", "family,colour")
    assert code == 2 and "unknown stratifier(s) 'colour'" in err
    code, _, err = run("--db", db, "--n", "40", "--budget-hours", "3")
    assert code == 2 and "exactly one of --n or --budget-hours" in err
    code, _, err = run("--db", db, "--n", "40", "--judge-run", "missing")
    assert code == 2 and "no judge run 'missing'" in err
    assert Store(db).designs().empty


def test_design_on_an_empty_database_says_what_to_do(tmp_path: Path) -> None:
    Store(tmp_path / "empty.duckdb").release()  # a project with no answers yet
    code, _, err = run("--db", str(tmp_path / "empty.duckdb"), "--n", "10")
    assert code == 2
    assert "no answers" in err and "judgelab import answers" in err


def _timed_labels(
    store: Store, name: str, answers: list[str], seconds: list[float], *, simulated: bool
) -> None:
    """``name`` labels ``answers`` in the app, taking ``seconds`` over each."""
    if simulated:
        store.add_rater(name, simulated=True)
    rid = int(store.raters().set_index("name")["rater_id"][name])
    store.assign_k(answers, 1, [rid], seed=0)
    for item, secs in zip(store.rater_queue(rid), seconds, strict=True):
        store.open_item(rid, item.assignment_id)
        label_id = store.add_label(rid, item.assignment_id, overall=4.0,
                                   criteria={"helpful": 4.0})
        with store.connection() as con:  # the server clock timed it in microseconds
            con.execute("UPDATE labels SET seconds = ? WHERE label_id = ?", [secs, label_id])


def test_cli_and_assignments_page_quote_the_same_person_hours(db: str) -> None:
    store = Store(db)
    # People take about two minutes; a simulated rater's one-second labels must not count.
    answers = store.answers(variant="original")["answer_id"].tolist()
    _timed_labels(store, "rater0", answers[:6], [90, 150, 120, 200, 100, 130], simulated=False)
    _timed_labels(store, "bot", answers[6:13], [1.0] * 7, simulated=True)
    code, out, _ = run("--db", db, "--n", "40", "--raters", "4", "--json")
    assert code == 0, out
    cli = json.loads(out)
    page = draft_design(store, n=40, raters=4)
    # median of 90..200 is 125 s = 2.08 min, from the six people's labels only.
    assert cli["cost"]["minutes_per_label"] == page.minutes_per_label == 2.08
    assert cli["cost"]["minutes_source"] == page.minutes_source == (
        "measured median of 6 timed labels by people")
    assert cli["cost"]["person_hours"] == page.design.cost.person_hours > 0
    assert cli["design_id"] == page.design.design_id
    # The Overview reads the same rule: people's median, people's count.
    view = overview(store)
    assert view.median_seconds == 125.0 and view.seconds_basis == "6 timed labels by people"
