"""A project with rows in (nearly) every table, built through the product on either back-end.

The demo (rubric, answers, pairs, raters, assignments, simulated labels, a fake-judge run) plus
what only the database holds: a rater with no labels, a paused rater (a hold), pair labels and
padding audits with their history, queue events, a sample design and an active design applied to
raters, gold items and their settings, a rewrite, a judge batch and its calls, a rubric that
rates each turn and a conversation labelled turn by turn, and the audit trail of the admin actions among
these (migration 021).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from click.testing import CliRunner

from judgelab.cli import main
from judgelab.demo import build_demo
from judgelab.labeler.examples import example_path
from judgelab.labeler.importers import parse_rubric
from judgelab.labeler.models import Answer, Task
from judgelab.labeler.store import Store
from judgelab.labeler.transcripts import parse_messages, render

#: Tables the project leaves empty (every other table of the schema holds rows).
EMPTY_TABLES = frozenset({"declared_scales"})


@dataclass(frozen=True)
class Project:
    """What :func:`fill_project` made that a test checks on a copy."""

    location: str
    #: The invite token of the rater who has no label (the link's ``?t=``).
    carol_token: str
    carol_id: int


def cli(*args: str) -> str:
    """``judgelab *args``; its output (a failure fails the test, with the output)."""
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, (args, result.output, result.stderr)
    return result.stdout


def fill_project(location: str | Path) -> Project:
    """Build the project at ``location`` (an empty DuckDB path or PostgreSQL URL)."""
    db = str(location)
    store = Store(location)
    demo = build_demo(store)
    del demo
    carol, carol_token = store.add_rater("carol")
    cli("design", "--db", db, "--n", "20", "--raters", "demo-rater,carol", "--apply")
    cli("design", "--db", db, "--active", "--target-half-width", "20", "--raters", "demo-rater,carol", "--apply")
    cli("gold", "import", str(example_path("gold.csv")), "--db", db)
    rater = int(store.raters().set_index("name").loc["demo-rater", "rater_id"])
    pair = store.rater_queue(rater, "pair")[0]
    store.add_pair_label(rater, pair.assignment_id, 2, comment="left is better")
    store.add_pair_label(rater, pair.assignment_id, -1, comment="changed my mind")
    audit = store.rater_queue(rater, "audit")[0]
    store.add_audit(rater, audit.assignment_id, True, note="adds a paragraph")
    first, second = store.rater_queue(rater)[:2]
    store.open_item(rater, first.assignment_id)
    store.skip_item(rater, second.assignment_id)
    store.add_rewrite("rw-1", variant="padded", model="fake", original="Short.", text="Short, and longer.",
                      length_ratio=3.2, warnings=["none"], input_tokens=5, output_tokens=7, cost_usd=0.001)
    run_id = str(store.query("SELECT run_id FROM judge_runs")["run_id"].iloc[0])
    store.plan_run_batch(run_id, ["c-1", "c-2", "c-3"], n_bytes=123)
    # A conversation under a rubric that rates each turn, labelled by carol turn by turn.
    turns = replace(parse_rubric(example_path("rubric.toml")), rubric_id="turns", turn="each")  # type: ignore[arg-type]
    store.add_rubric(turns)
    transcript = parse_messages([{"role": "user", "content": "q1"}, {"role": "assistant", "content": "r1"},
                                 {"role": "user", "content": "q2"}, {"role": "assistant", "content": "r2"}])
    store.add_pool([Task("conv-task", "Help me twice")],
                   [Answer("conv-1", "conv-task", "claude", "m", render(transcript), transcript=transcript)])
    store.assign_k(["conv-1"], 1, [carol.rater_id], rubric=("turns", turns.version))
    conv = max(store.rater_queue(carol.rater_id), key=lambda i: i.assignment_id)  # the newest: conv-1
    criteria = {c.criterion_id: 4.0 for c in turns.criteria}
    store.add_turn_label(carol.rater_id, conv.assignment_id, overall=4, criteria=criteria, turns={1: 5, 2: 3},
                         seen=None)
    # An answer a rater says names its author (withheld), and the judge's author screen.
    flagged = store.rater_queue(carol.rater_id, "score")[0]
    store.flag_author(carol.rater_id, flagged.assignment_id, note="it signs as a model")
    cli("screen", "--judge", "fake", "--db", db)
    store.set_setting("project", "note", "moved with the project")
    cli("raters", "pause", "carol", "--reason", "on leave", "--db", db)
    # A crowd study of two answers, and a participant who consented and was dealt one (issue 57).
    two = sorted(store.answers(variant="original")["answer_id"])[:2]
    study = store.create_crowd_study("pilot", quota=1, time_limit=600, completion_code="CODE", answer_ids=two)
    store.crowd_start(store.crowd_enter(study.link_key, "PID1", session_id="S1")[0].rater_id)
    store.release()
    return Project(db, carol_token, carol.rater_id)
