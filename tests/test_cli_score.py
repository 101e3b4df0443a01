"""The analyst path with a team's judge spec: import, score (through the mock API), label, calibrate."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

from click.testing import CliRunner

from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.mockapi import FaultPlan, MockAnthropic
from judgelab.calibration.spec import load_spec
from judgelab.cli import main
from judgelab.labeler.store import Store
from tests.conftest import DATA, invoke

SPEC = DATA / "judge_spec.toml"


def _labels(path: Path) -> Path:
    """Two raters' scores around the bundled true quality of each answer."""
    rng = random.Random(0)
    with (DATA / "truth.csv").open() as f, path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["answer_id", "rater", "score"])
        for row in csv.DictReader(f):
            for rater in ("ann", "bo"):
                score = min(5, max(1, round(float(row["quality"]) + rng.gauss(0, 0.5))))
                writer.writerow([row["answer_id"], rater, score])
    return path


def _own_family_examples(tmp_path: Path) -> Path:
    """The bundled spec with its few-shot examples declared as written by the judge's own family."""
    text = SPEC.read_text().replace(
        '[examples]\nauthor = { kind = "human", name = "Support QA team" }',
        '[examples]\nauthor = { kind = "model", name = "claude-opus-4-7" }',
    )
    path = tmp_path / "own_examples.toml"
    path.write_text(text)
    return path


def test_analyst_path_with_a_judge_spec(tmp_path: Path) -> None:
    db = str(tmp_path / "project.duckdb")
    assert invoke("import", "rubric", str(DATA / "rubric.toml"), "--db", db).exit_code == 0
    assert invoke("import", "answers", str(DATA / "answers.jsonl"), "--db", db).exit_code == 0
    spec = load_spec(SPEC)
    with MockAnthropic(responder=FakeJudge(seed=0, spec=spec).respond, batch_delay=0.05) as mock:
        url = mock.base_url
        # 1. Score the pool with the team's judge.
        scored = invoke("score", "--judge-spec", str(SPEC), "--base-url", url, "--all", "--db", db,
                        "--out", str(tmp_path / "scores.jsonl"))
        assert scored.exit_code == 0, scored.output
        assert "scored all 140 answers in likert5 with claude-sonnet-4-6" in scored.output
        assert "prompt: judge spec support-judge-fastchat (judge_spec.toml, sha256" in scored.output
        run_id = scored.output.split("next: judgelab calibrate --judge-run ")[1].split()[0]
        bodies = [r.body for r in mock.received if r.path == "/v1/messages"]
        assert len(bodies) == 140
        assert all(b["messages"][0]["content"].startswith("[Customer Ticket]\n") for b in bodies)
        assert all("Two rated examples:" in b["system"][0]["text"] for b in bodies)
        # 2. The same command again spends nothing: every request comes from the cache.
        again = json.loads(invoke("score", "--judge-spec", str(SPEC), "--base-url", url, "--db", db, "--json").stdout)
        assert again["run"]["issued"] == 0 and again["run"]["cached"] == 140
        # 3. Labels; then the same judge with its examples declared own-family: the requests are
        #    the same (all from the cache), the run records the new declaration.
        assert invoke("import", "labels", str(_labels(tmp_path / "labels.csv")), "--db", db).exit_code == 0
        own_spec = _own_family_examples(tmp_path)
        own = json.loads(invoke("score", "--judge-spec", str(own_spec), "--base-url", url, "--labelled",
                                "--db", db, "--json").stdout)["run"]
        assert own["issued"] == 0 and own["cached"] == 140 and own["run_id"] != run_id
    # 4. A reworded prompt changes every request: scored again, here as one Message Batch (the
    #    mock's fake judge now reads and answers the reworded prompt).
    reworded = tmp_path / "reworded.toml"
    reworded.write_text(own_spec.read_text().replace("in a few sentences, then give it", "briefly, then give it"))
    with MockAnthropic(responder=FakeJudge(seed=0, spec=load_spec(reworded)).respond, batch_delay=0.05) as mock:
        batch = invoke("score", "--judge-spec", str(reworded), "--base-url", mock.base_url, "--labelled", "--batch",
                       "--poll-interval", "0.05", "--db", db, "--json")
        batches = [r.body for r in mock.received if r.path == "/v1/messages/batches" and r.method == "POST"]
    assert batch.exit_code == 0, batch.output
    assert json.loads(batch.stdout)["run"]["issued"] == json.loads(batch.stdout)["run"]["parsed"] == 140
    assert len(batches) == 1 and len(batches[0]["requests"]) == 140
    assert all("explain your rating briefly" in r["params"]["system"][0]["text"].lower()
               for r in batches[0]["requests"])
    rows = [json.loads(line) for line in (tmp_path / "scores.jsonl").read_text().splitlines()]
    assert {r["status"] for r in rows} == {"parsed"} and {r["format"] for r in rows} == {"likert5"}
    assert all(r["raw"].endswith(f"Rating: [[{int(r['score'])}]]") for r in rows)
    # 5. Calibrate: the provenance audit lists the spec's declared authors.
    human = json.loads(invoke("calibrate", "--judge-run", run_id, "--out", str(tmp_path / "a.md"),
                              "--resamples", "20", "--json", "--db", db).stdout)["provenance"]
    assert ["2 few-shot example(s) (judge spec support-judge-fastchat)", "human", "Support QA team"] in human["records"]
    assert human["bound"] is None
    upper = json.loads(invoke("calibrate", "--judge-run", own["run_id"], "--out", str(tmp_path / "b.md"),
                              "--resamples", "20", "--json", "--db", db).stdout)["provenance"]
    assert upper["bound"] == "upper"
    assert upper["own_family_artifacts"] == ["2 few-shot example(s) (judge spec support-judge-fastchat)"]
    assert "UPPER BOUND" in (tmp_path / "b.md").read_text()
    runs = Store(db).calibration_runs()
    assert set(runs["family"]) == {"claude"}


def test_an_interrupted_scoring_run_resumes_without_paying_twice(tmp_path: Path) -> None:
    db = str(tmp_path / "project.duckdb")
    invoke("import", "rubric", str(DATA / "rubric.toml"), "--db", db)
    invoke("import", "answers", str(DATA / "answers.jsonl"), "--db", db)
    spec = load_spec(SPEC)
    faults = FaultPlan(rate=0.3, kinds=("500",), seed=1)
    with MockAnthropic(responder=FakeJudge(seed=0, spec=spec).respond, faults=faults) as mock:
        args = ["score", "--judge-spec", str(SPEC), "--base-url", mock.base_url, "--max-retries", "0",
                "--db", db, "--json"]
        first = invoke(*args)
        assert first.exit_code == 3, "a run whose calls ended in errors exits 3 (issue 42)"
        run = json.loads(first.stdout)["run"]
        assert not run["finished"] and run["errors"] > 0 and run["parsed"] + run["errors"] == 140
        mock.faults = FaultPlan()
        second = json.loads(invoke(*args).stdout)["run"]
    assert second["run_id"] == run["run_id"] and second["resumed"] and second["finished"]
    assert second["answered_before"] == run["parsed"] and second["issued"] == run["errors"]
    assert second["parsed"] == 140


def test_probe_and_estimate_take_a_judge_spec(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    spec = load_spec(SPEC)
    est = invoke("estimate", "--judge-spec", str(SPEC), "--n", "3", "--biases", "position", "--db", db)
    assert est.exit_code == 0 and "  prompt: judge spec support-judge-fastchat" in est.output
    with MockAnthropic(responder=FakeJudge(seed=0, spec=spec).respond) as mock:
        probe = invoke("probe", "--judge-spec", str(SPEC), "--base-url", mock.base_url, "--model", "claude-haiku-4-5",
                       "--n", "3", "--biases", "position", "--out", str(tmp_path / "r.jsonl"), "--db", db)
        assert probe.exit_code == 0, probe.output
        assert {r.body["model"] for r in mock.received if r.path == "/v1/messages"} == {"claude-haiku-4-5"}
    card = invoke("report", str(tmp_path / "r.jsonl"), "--db", db).output
    assert "Prompt: judge spec support-judge-fastchat" in card and "model claude-haiku-4-5" in card


def test_score_refuses_two_answer_sets_and_a_bad_spec(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    Store(db).release()
    both = CliRunner().invoke(main, ["score", "--judge", "fake", "--all", "--labelled", "--db", db])
    assert both.exit_code == 2 and "choose one answer set" in both.output
    bad = CliRunner().invoke(main, ["score", "--judge", "fake", "--judge-spec",
                                    str(Path(__file__).parent / "bad_specs" / "regex_no_group.toml"), "--db", db])
    assert bad.exit_code == 2 and "has no group around the verdict" in bad.output
    empty = CliRunner().invoke(main, ["score", "--judge", "fake", "--db", db])
    assert empty.exit_code == 2 and "no rubric" in empty.output


def test_mock_api_takes_a_judge_spec(tmp_path: Path) -> None:
    served = invoke("mock-api", "--port", "0", "--duration", "0.05", "--judge-spec", str(SPEC))
    assert served.exit_code == 0 and "Mock Anthropic API on http://127.0.0.1:" in served.output
    bad = CliRunner().invoke(main, ["mock-api", "--port", "0", "--duration", "0.05", "--judge-spec",
                                    str(Path(__file__).parent / "bad_specs" / "unknown_format.toml")])
    assert bad.exit_code == 2 and "unknown format 'never_declared9'" in bad.output
