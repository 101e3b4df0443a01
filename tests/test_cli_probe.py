"""``judgelab estimate / probe / report`` through click, as a user types them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.calibration.mockapi import FaultPlan, MockAnthropic
from judgelab.cli import main
from judgelab.labeler.examples import example_path
from tests.conftest import invoke

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_judge_probe_quickstart_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGELAB_DB", str(tmp_path / "project.duckdb"))
    # 1. Preview the cost first: no probe spend, no database created.
    est = invoke("estimate", "--dataset", "sample", "--n", "20")
    assert est.exit_code == 0, est.output
    assert "cost at list price" in est.output and "cost at batch price" in est.output
    assert "~4 characters per token" in est.output and "nothing was spent" in est.output
    assert not (tmp_path / "project.duckdb").exists()
    # 2. The fake judge with an injected bias, writing the evidence.
    probe = invoke("probe", "--judge", "fake", "--fake-position", "0.4", "--fake-verbosity", "0.3",
                   "--dataset", "sample", "--n", "25", "--out", "results.jsonl")
    assert probe.exit_code == 0, probe.output
    assert "finished" in probe.output and "parse failures 0" in probe.output
    rows = [json.loads(line) for line in Path("results.jsonl").read_text().splitlines()]
    assert {r["bias"] for r in rows} == {"position", "verbosity", "formatting"}
    for field in ("trial", "bias", "arm", "order", "kind", "format", "verdict", "score", "winner",
                  "reason", "raw", "answer_id", "len_a", "input_tokens", "cost_usd", "cached"):
        assert field in rows[0]
    # 3. The card with the before/after mitigation columns, as markdown and PNG.
    report = invoke("report", "results.jsonl", "--mitigate", "--out", "report_card.md",
                    "--png", "report_card.png")
    assert report.exit_code == 0, report.output
    card = Path("report_card.md").read_text()
    position = next(line for line in card.splitlines() if line.startswith("| Position"))
    # --fake-position 0.4: the orders rarely agree, so the mitigation's cost fails it too.
    assert "decisions lost to the swap" in position and "FAIL → PASS" not in position
    assert "After swap-avg" in card and "**Swap consistency**" in card
    assert "judge: fake-judge (claude) · sample · 350 judgements · n=25 pairs" in card
    png = Path("report_card.png").read_bytes()
    assert png[:8] == PNG_MAGIC and len(png) > 30_000
    # Re-running the same probe spends nothing: every request is answered from the cache.
    again = invoke("probe", "--judge", "fake", "--fake-position", "0.4", "--fake-verbosity", "0.3",
                   "--dataset", "sample", "--n", "25", "--out", "again.jsonl", "--json")
    run = json.loads(again.stdout)["run"]
    assert run["issued"] == 0 and run["cached"] == run["planned"] == len(rows)


def test_report_json_and_stdout(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    db = str(tmp_path / "p.duckdb")
    assert invoke("probe", "--judge", "fake", "--fake-formatting", "0.3", "--n", "8", "--biases",
                  "position,formatting,byline", "--out", str(out), "--db", db).exit_code == 0
    printed = invoke("report", str(out), "--db", db)
    assert printed.exit_code == 0 and printed.output.startswith("# LLM-as-judge bias report card")
    assert "| Byline" in printed.output and "After swap-avg" not in printed.output.split("\n\n")[2]
    as_json = json.loads(invoke("report", str(out), "--mitigate", "--json", "--db", db).stdout)
    assert [r["bias"] for r in as_json["rows"]] == ["position", "formatting", "byline"]
    position = as_json["rows"][0]
    assert as_json["mitigate"] is True and position["after_swap_avg"]["units"] == "percentage points"
    assert "decisions lost" in position["after_swap_avg"]["method"] and position["detectable"]["effect"] > 0


def test_estimate_json_and_unknown_model(tmp_path: Path) -> None:
    db = str(tmp_path / "none.duckdb")
    payload = json.loads(invoke("estimate", "--n", "5", "--biases", "position,byline", "--json",
                                "--db", db).stdout)
    assert payload["calls"] == payload["distinct_requests"] == 20  # 5 pairs x 2 orders x 2 probes
    assert payload["spent"] == 0.0 and payload["cost_usd_batch"] == pytest.approx(payload["cost_usd"] / 2)
    assert payload["padding_rewrites"] == 0
    unknown = invoke("estimate", "--n", "5", "--model", "my-own-model", "--db", db)
    assert unknown.exit_code == 0
    assert "unknown model 'my-own-model'" in unknown.output and "price table" in unknown.output
    assert not Path(db).exists()


def test_bad_dataset_names_file_row_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "pairs.csv"
    bad.write_text("prompt,answer_a,answer_b\nQ1,yes,no\nQ2,yes,\n")
    result = CliRunner().invoke(main, ["probe", "--judge", "fake", "--dataset", str(bad), "--out",
                                       str(tmp_path / "x.jsonl"), "--db", str(tmp_path / "p.duckdb")])
    assert result.exit_code == 2
    assert "pairs.csv, row 2, column 'answer_b'" in result.output
    other = CliRunner().invoke(main, ["estimate", "--dataset", str(tmp_path / "pairs.txt")])
    assert other.exit_code == 2 and "unsupported dataset type '.txt'" in other.output


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    no_key = CliRunner().invoke(main, ["probe", "--n", "2", "--db", db, "--out", str(tmp_path / "o.jsonl")])
    assert no_key.exit_code == 2 and "ANTHROPIC_API_KEY" in no_key.output and "--judge fake" in no_key.output
    resume = CliRunner().invoke(main, ["probe", "--judge", "fake", "--n", "2", "--db", db, "--resume",
                                       "run-nope", "--out", str(tmp_path / "o.jsonl")])
    assert resume.exit_code == 2 and "no judge run 'run-nope'" in resume.output
    biases = CliRunner().invoke(main, ["estimate", "--biases", "position,length"])
    assert biases.exit_code == 2 and "unknown bias 'length'" in biases.output
    missing = CliRunner().invoke(main, ["report", str(tmp_path / "nothing.jsonl")])
    assert missing.exit_code == 2 and "no such evidence file" in missing.output


def test_the_real_sdk_path_against_the_local_server(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    out = tmp_path / "r.jsonl"
    faults = FaultPlan(rate=0.2, kinds=("429", "529"), retry_after=0.01, seed=3)
    with MockAnthropic(faults=faults, batch_delay=0.05) as mock:
        est = json.loads(invoke("estimate", "--n", "4", "--base-url", mock.base_url, "--json",
                                "--db", db).stdout)
        assert est["token_method"].startswith("exact") and est["padding_rewrites"] == 8
        result = invoke("probe", "--n", "4", "--base-url", mock.base_url, "--db", db, "--out",
                        str(out), "--json", "--no-progress")
        payload = json.loads(result.stdout)
        run = payload["run"]
        # Every planned judgement arrived despite injected 429/529/500s: none lost.
        assert run["finished"] and run["parsed"] == run["planned"] and run["errors"] == 0
        assert mock.count("fault:429") + mock.count("fault:529") > 0
        assert payload["padding"]["rewrites"] == 8  # padded by the model through the API
        assert run["issued"] == est["calls"]
        again = json.loads(invoke("estimate", "--n", "4", "--base-url", mock.base_url, "--json",
                                  "--db", db).stdout)
        assert again["calls"] == 0 and again["already_cached"] == est["distinct_requests"]
        direct = mock.count("POST /v1/messages")
        batch = json.loads(invoke("probe", "--n", "6", "--batch", "--poll-interval", "0.02",
                                  "--base-url", mock.base_url, "--db", db, "--out",
                                  str(tmp_path / "b.jsonl"), "--json").stdout)
        # Issue 14: with --batch the new padding rewrites go through a batch of their own too
        # (one for the rewrites, one for the judge calls), and nothing goes out one by one.
        assert batch["run"]["finished"] and mock.count("POST /v1/messages/batches") == 2
        assert mock.count("POST /v1/messages") == direct
        assert batch["run"]["issued"] > 0 and batch["padding"]["reused"] == 8
        assert batch["padding"]["rewrites"] == 4
    card = invoke("report", str(out), "--mitigate", "--db", db)
    assert card.exit_code == 0 and "claude-sonnet-4-6" in card.output
    assert os.path.getsize(out) > 0


def test_pool_probes_use_the_project_database(tmp_path: Path) -> None:
    data = example_path("rubric.toml").parent
    db = str(tmp_path / "p.duckdb")
    assert invoke("import", "rubric", str(data / "rubric.toml"), "--db", db).exit_code == 0
    assert invoke("import", "answers", str(data / "answers.jsonl"), "--db", db).exit_code == 0
    out = tmp_path / "r.jsonl"
    result = invoke("probe", "--judge", "fake", "--fake-verbosity", "0.3", "--n", "3", "--biases",
                    "verbosity,truncation", "--db", db, "--out", str(out))
    assert result.exit_code == 0, result.output
    from judgelab.labeler.store import Store

    store = Store(db)
    padded = store.answers(variant="padded")
    # 2n pool answers from the database, each with its padded and truncated variant stored.
    assert len(padded) == 6 and len(store.answers(variant="truncated")) == 6
    assert all(a.endswith("~padded") for a in padded["answer_id"])
    assert set(padded["parent_answer_id"]) <= set(store.answers(variant="original")["answer_id"])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    pointwise = [r for r in rows if r["kind"] == "pointwise"]
    assert {r["pool"] for r in pointwise} == {"store"}
    # Raters audited two of the padded rewrites; one added content.
    ids = sorted(padded["answer_id"])[:2]
    with store.connection() as con:
        con.executemany(
            "INSERT INTO padding_audits (rater_id, original_id, rewrite_id, length_ratio, adds_content)"
            " VALUES (1, ?, ?, 2.0, ?)",
            [[i.removesuffix("~padded"), i, flag] for i, flag in zip(ids, (True, False), strict=True)],
        )
    card = invoke("report", str(out), "--db", db).output
    assert "Padding audits: 1 of 2 audits (50%) found that the rewrite added content" in card
    run_id = rows[0]["run_id"]
    assert json.loads(invoke("report", str(out), "--json", "--db", db).stdout)["analysis"]["runs"] == [run_id]


def test_a_run_with_failed_calls_exits_3_with_failures_counted_and_resumes(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    out = str(tmp_path / "r.jsonl")
    args = ["probe", "--n", "3", "--biases", "position", "--db", db, "--out", out, "--json",
            "--max-retries", "0"]
    with MockAnthropic(faults=FaultPlan(rate=1.0, kinds=("500",))) as mock:
        failed = CliRunner().invoke(main, [*args, "--base-url", mock.base_url, "--concurrency", "2"])
        # Issue 14: failures after retries are recorded and counted; issue 42: and the run
        # says so in its exit code (3: finished with errors), for scripts and CI.
        assert failed.exit_code == 3
        run = json.loads(failed.stdout)["run"]
        assert run["errors"] == 6 and not run["finished"] and run["error_samples"]
        assert run["outcome"] == "finished with errors" and run["exit_code"] == 3
        mock.faults = FaultPlan()
        done = invoke(*args, "--base-url", mock.base_url)
        again = json.loads(done.stdout)["run"]
        assert done.exit_code == 0 and again["resumed"] and again["run_id"] == run["run_id"]
        assert again["finished"] and again["issued"] == 6
