"""Reports describe the run truly (issue 30, item 18): how replies were read, decoding, the judge family."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from judgelab.calibration.calibrate import load_calibration_data
from judgelab.calibration.calibrate._formats import _decoding_rule
from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.probes import run_probes
from judgelab.calibration.spec import load_spec
from judgelab.cli import main
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store
from tests.conftest import DATA

LLMBAR = Path(__file__).parent / "data" / "llmbar"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_a_spec_run_is_described_by_its_verdict_rule_and_its_decoding(store: Store) -> None:
    spec = load_spec(DATA / "judge_spec.toml")
    result = run_probes(FakeJudge(seed=1, spec=spec), store, n=4, biases="position")
    rule = _decoding_rule(load_calibration_data(store, result.summary.run_id).run)
    assert "VERDICT line" not in rule and "not recorded" not in rule
    assert rule.startswith("greedy decoding (temperature 0); strict parse by the judge spec's verdict rules")
    assert r"pairwise5 by `\[\[([ABC])\]\]`" in rule and "the last match wins" in rule


def test_imported_verdicts_are_described_as_imported_and_the_family_fix_is_named(tmp_path: Path) -> None:
    db = str(tmp_path / "v.duckdb")
    store = Store(db)
    import_file(store, "pairs", LLMBAR / "pairs_Natural.csv")
    import_file(store, "verdicts", LLMBAR / "verdicts_Natural.csv")
    code, out, err = run("formats", "--db", db, "--judge-run", "import:GPT-4/Vanilla", "--resamples", "20")
    assert code == 0, err
    assert "last VERDICT line wins" not in out and "values as imported" in out
    report = tmp_path / "r.md"
    code, _, err = run("calibrate", "--judge-run", "import:GPT-4/Vanilla", "--db", db, "--out", str(report),
                       "--json", "--resamples", "20", "--judge-family", "gpt")
    assert code == 0, err
    assert json.loads(report.with_suffix(".json").read_text())["judge_family"] == "gpt"


def test_the_no_family_reason_names_the_fix_not_a_column() -> None:
    from judgelab.calibration.calibrate._human import _no_gap_reason

    reason = _no_gap_reason(None, ["a", "b"]) or ""
    assert "judge_runs.family" not in reason
    assert "--judge-family" in reason and "judge_family column" in reason
