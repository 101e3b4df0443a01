"""Probes on the project's own data (issue 30, item 16), and references of tasks sharing a prompt (item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.calibration.datasets import project_pairs
from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.probes import read_evidence, reference_tasks, run_probes
from judgelab.calibration.runner._plan import build_request
from judgelab.calibration.scoring import choose_answers, plan_scores
from judgelab.calibration.spec import load_spec, with_references
from judgelab.cli import main
from judgelab.labeler.errors import InputError
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store
from tests.conftest import DATA


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_probes_judge_the_projects_imported_pairs_under_its_rubric(store: Store, tmp_path: Path) -> None:
    import_file(store, "rubric", DATA / "rubric.toml")
    (tmp_path / "pairs.csv").write_text(
        "id,prompt,answer_a,answer_b,gold\n"
        + "".join(f"Ticket/{i},My order {i} is late.,Sorry: it ships today.,It ships soon.,A\n" for i in range(6)))
    import_file(store, "pairs", tmp_path / "pairs.csv")
    out = tmp_path / "r.jsonl"
    run_probes(FakeJudge(seed=1), store, dataset="project", n=4, biases="position", evidence=out)
    rows = read_evidence(out)
    assert set(rows["task_id"]) <= {f"Ticket/{i}" for i in range(6)} and rows["task_id"].nunique() == 4
    assert set(rows["dataset"]) == {"project"}
    pairwise = store.run_rows(str(rows["run_id"].iloc[0]), "pairwise")
    assert set(pairwise["task_id"]) == set(rows["task_id"])


def test_without_imported_pairs_the_projects_answers_make_the_pairs(store: Store, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="holds no pairs and no task with two answers"):
        project_pairs(store)
    import_file(store, "answers", DATA / "answers.jsonl")
    pairs = project_pairs(store)
    tasks = store.tasks()
    assert {p.pair_id for p in pairs} == set(tasks["task_id"])
    assert all(p.prompt == dict(zip(tasks["task_id"], tasks["prompt"], strict=True))[p.pair_id] for p in pairs)
    db = str(tmp_path / "project.duckdb")
    code, _, err = run("probe", "--judge", "fake", "--dataset", "project", "--n", "5", "--biases", "position",
                         "--out", str(tmp_path / "e.jsonl"), "--db", db, "--json")
    assert code == 0, err
    assert set(read_evidence(tmp_path / "e.jsonl")["task_id"]) <= set(tasks["task_id"])


def test_two_tasks_sharing_a_prompt_get_their_own_references_in_a_scoring_run(store: Store, tmp_path: Path) -> None:
    rows = [{"task_id": t, "prompt": "Where is my order?", "reference_answer": ref, "answer_id": f"{t}-{f}",
             "family": f, "model": f"{f}-1", "text": f"Answer of {f} to {t}."}
            for t, ref in (("T1", "Order 1 ships Monday."), ("T2", "Order 2 was delivered."))
            for f in ("claude", "gpt")]
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    import_file(store, "rubric", DATA / "rubric.toml")
    import_file(store, "answers", tmp_path / "answers.jsonl")
    db = str(tmp_path / "project.duckdb")
    code, _, err = run("score", "--judge", "fake", "--judge-spec", str(DATA / "judge_spec.toml"), "--all",
                       "--formats", "likert5", "--db", db)
    assert code == 0, err
    # The requests that run sent: each task's calls carry its own reference.
    judge = with_references(FakeJudge(seed=0, spec=load_spec(DATA / "judge_spec.toml")), reference_tasks(store))
    answers, _ = choose_answers(store)
    rubric = store.rubric()
    assert rubric is not None
    for call in plan_scores(answers, ("likert5",), rubric):
        user = build_request(judge, rubric, call).user
        own, other = (("Order 1 ships Monday.", "Order 2 was delivered.") if call.task_id == "T1"
                      else ("Order 2 was delivered.", "Order 1 ships Monday."))
        assert own in user and other not in user


@pytest.mark.parametrize("batch", [False, True], ids=["concurrent", "batch"])
def test_the_real_sdk_sends_each_task_its_own_reference(store: Store, tmp_path: Path, batch: bool) -> None:
    from judgelab.calibration.mockapi import MockAnthropic

    rows = [{"task_id": t, "prompt": "Where is my order?", "reference_answer": ref, "answer_id": f"{t}-a",
             "family": "gpt", "model": "gpt-1", "text": f"An answer to {t}."}
            for t, ref in (("T1", "Order 1 ships Monday."), ("T2", "Order 2 was delivered."))]
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    import_file(store, "rubric", DATA / "rubric.toml")
    import_file(store, "answers", tmp_path / "answers.jsonl")
    spec = load_spec(DATA / "judge_spec.toml")
    with MockAnthropic(responder=FakeJudge(seed=0, spec=spec).respond, batch_delay=0.05) as mock:
        result = CliRunner(env={"ANTHROPIC_API_KEY": "test"}).invoke(main, [
            "score", "--judge", "anthropic", "--base-url", mock.base_url, "--judge-spec", str(DATA / "judge_spec.toml"),
            "--all", "--db", str(tmp_path / "project.duckdb"), "--poll-interval", "0.05",
            *(["--batch"] if batch else [])], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        bodies = [r.body for r in mock.received if r.method == "POST" and r.path.startswith("/v1/messages")]
    messages = [b for b in bodies if isinstance(b, dict) and "messages" in b]
    messages += [req["params"] for b in bodies if isinstance(b, dict) for req in b.get("requests", [])]
    users = [str(m["messages"][0]["content"]) for m in messages]
    assert any("An answer to T1." in u for u in users) and any("An answer to T2." in u for u in users)
    for user in users:
        task = "T1" if "An answer to T1." in user else "T2"
        own, other = ("Order 1 ships Monday.", "Order 2 was delivered.")[:: 1 if task == "T1" else -1]
        assert own in user and other not in user
