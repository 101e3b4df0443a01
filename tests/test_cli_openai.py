"""Every probe, ``score --all`` and ``calibrate`` with an OpenAI-compatible judge, as a user types them.

No fake judge in the path: the CLI builds the :class:`~judgelab.calibration.judges.OpenAIJudge`, the real
``openai`` SDK sends Chat Completions (and Files and Batches) over HTTP to the local mock, whose
fake judge answers in the spec's verdict format.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.mockapi import MockAnthropic
from judgelab.calibration.probes import BIASES
from judgelab.calibration.spec import load_spec
from judgelab.cli import main
from judgelab.labeler.store import Store
from tests.conftest import DATA, invoke

MODEL = "gpt-4.1-mini"


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _openai_spec(tmp_path: Path, base_url: str) -> Path:
    """The bundled judge spec, as a team judging with GPT on an OpenAI-compatible endpoint writes it."""
    text = (DATA / "judge_spec.toml").read_text().replace(
        'model = "claude-sonnet-4-6"\nfamily = "claude"',
        f'provider = "openai"\nbase_url = "{base_url}"\nmodel = "{MODEL}"\nfamily = "gpt"',
    )
    assert 'provider = "openai"' in text
    path = tmp_path / "gpt_spec.toml"
    path.write_text(text)
    return path


def _labels(path: Path) -> Path:
    rng = random.Random(0)
    with (DATA / "truth.csv").open() as f, path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["answer_id", "rater", "score"])
        for row in csv.DictReader(f):
            for rater in ("ann", "bo"):
                score = min(5, max(1, round(float(row["quality"]) + rng.gauss(0, 0.5))))
                writer.writerow([row["answer_id"], rater, score])
    return path


def test_score_all_and_calibrate_with_a_spec_naming_the_openai_provider(tmp_path: Path) -> None:
    db = str(tmp_path / "project.duckdb")
    assert invoke("import", "rubric", str(DATA / "rubric.toml"), "--db", db).exit_code == 0
    assert invoke("import", "answers", str(DATA / "answers.jsonl"), "--db", db).exit_code == 0
    with MockAnthropic(batch_delay=0.05) as mock:
        host = mock.openai_base_url.split("/")[2]
        spec_path = _openai_spec(tmp_path, mock.openai_base_url)
        mock.responder = FakeJudge(seed=0, spec=load_spec(spec_path)).respond
        # No --judge, no --base-url, no key: the spec names the provider and the endpoint.
        scored = invoke("score", "--judge-spec", str(spec_path), "--all", "--db", db)
        assert scored.exit_code == 0, scored.output
        assert f"scored all 140 answers in likert5 with {MODEL}" in scored.output
        run_id = scored.output.split("next: judgelab calibrate --judge-run ")[1].split()[0]
        bodies = [r.body for r in mock.received if r.path == "/v1/chat/completions"]
        assert len(bodies) == 140 and not [r for r in mock.received if r.path == "/v1/messages"]
        assert all(b["model"] == MODEL and b["messages"][1]["content"].startswith("[Customer Ticket]\n")
                   for b in bodies)
        # Again: nothing new is sent, every reply comes from the cache.
        again = json.loads(invoke("score", "--judge-spec", str(spec_path), "--db", db, "--json").stdout)["run"]
        assert again["issued"] == 0 and again["cached"] == 140
        # The built-in prompt as one OpenAI batch (files upload, batch create, output file).
        batch = invoke("score", "--judge", "openai", "--model", MODEL, "--base-url", mock.openai_base_url,
                       "--all", "--batch", "--poll-interval", "0.05", "--db", db, "--json")
        assert batch.exit_code == 0, batch.output
        batched = json.loads(batch.stdout)["run"]
        assert batched["issued"] == batched["parsed"] == 140 and batched["cost_usd"] > 0
        assert mock.count("POST /v1/batches") == 1 and mock.count("POST /v1/files") == 1
    run = Store(db).judge_run(run_id)
    assert run is not None and run["family"] == "gpt" and run["judge_kind"] == "openai"
    assert run["params"]["judge_endpoint"] == f"openai at {host}"
    assert invoke("import", "labels", str(_labels(tmp_path / "labels.csv")), "--db", db).exit_code == 0
    report = invoke("calibrate", "--judge-run", run_id, "--out", str(tmp_path / "r.md"), "--resamples", "20",
                    "--json", "--db", db)
    assert report.exit_code == 0, report.output
    data = json.loads(report.stdout)
    assert data["judge_model"] == MODEL and data["judge_family"] == "gpt"
    assert data["judge_endpoint"] == f"openai at {host}"
    assert f"Judge `{MODEL}` (family `gpt`, openai at {host})" in (tmp_path / "r.md").read_text()


def test_every_probe_through_the_openai_sdk_and_the_card_names_provider_and_host(tmp_path: Path) -> None:
    db, out = str(tmp_path / "p.duckdb"), tmp_path / "res.jsonl"
    with MockAnthropic() as mock:
        est = invoke("estimate", "--judge", "openai", "--model", MODEL, "--n", "4", "--biases", ",".join(BIASES),
                     "--db", db, "--json")
        assert est.exit_code == 0, est.output
        estimate = json.loads(est.stdout)
        probed = invoke("probe", "--judge", "openai", "--model", MODEL, "--base-url", mock.openai_base_url,
                        "--n", "4", "--biases", ",".join(BIASES), "--db", db, "--out", str(out), "--json")
        assert probed.exit_code == 0, probed.output
        sent = mock.count("POST /v1/chat/completions")
    payload = json.loads(probed.stdout)
    run, padding = payload["run"], payload["padding"]
    assert run["finished"] and run["errors"] == 0 and run["issued"] == estimate["calls"]
    # The verbosity probe's padded variants were rewritten by the model through the same
    # endpoint (--pad llm is the default for a real judge), as the estimate foresaw.
    assert padding["rewrites"] == estimate["padding_rewrites"] > 0 and sent == run["issued"] + padding["rewrites"]
    # The estimate against the run's cost: same calls, same price table (tokens approximated).
    assert run["cost_usd"] > 0 and estimate["cost_usd"] > 0
    assert 0.5 < run["cost_usd"] / estimate["cost_usd"] < 2.0
    assert "has no token counter" in estimate["token_method"]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["bias"] for r in rows} >= set(BIASES) - {"format"}
    assert {r["judge_family"] for r in rows} == {"gpt"}
    card = invoke("report", str(out), "--db", db)
    assert f"judge: {MODEL} (gpt) via openai at 127.0.0.1:" in card.output


def test_the_openai_judge_needs_a_model_and_a_spec_names_a_known_provider(tmp_path: Path) -> None:
    refused = CliRunner().invoke(main, ["estimate", "--judge", "openai", "--n", "2"])
    assert refused.exit_code == 2 and "--judge openai needs --model" in refused.output
    bad = tmp_path / "bad.toml"
    bad.write_text((DATA / "judge_spec.toml").read_text().replace('family = "claude"', 'provider = "gemini"'))
    wrong = CliRunner().invoke(main, ["estimate", "--judge-spec", str(bad), "--n", "2"])
    assert wrong.exit_code != 0 and "provider must be one of anthropic, openai" in wrong.output
