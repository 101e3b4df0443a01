"""`judgelab position` on probe runs and imported verdicts; calibrate and formats on pairwise-only data.

The verdicts are LLMBar's (tests/data/llmbar): a database of pairs and pairwise judgements only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.probes import (
    analyse_evidence,
    position_replies,
    read_evidence,
    run_position,
    run_probes,
    statistics_of_replies,
)
from judgelab.cli import main
from judgelab.labeler.errors import InputError
from judgelab.labeler.examples import example_path
from judgelab.labeler.exports import export_table, table_bytes
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store

LLMBAR = Path(__file__).parent / "data" / "llmbar"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_a_probe_run_reads_as_the_report_card_reads_it(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    result = run_probes(FakeJudge(seed=2, position=0.3, parse_failure_rate=0.1), store, n=12, biases="position",
                        evidence=out)
    position = run_position(store)
    assert position.run_id == result.summary.run_id and position.formats == ("pairwise5",)
    s = position.statistics
    assert s.pairs == s.pairs_both_orders == 12 and s.replies == 24
    assert s.parse_failures == result.summary.parse_failures > 0
    assert s.accuracy == {}, "the sample pairs carry no gold in the database"
    card = analyse_evidence(read_evidence(out)).result("position")
    assert card is not None
    assert card.details["consistency"] == s.consistency
    assert card.raw == s.first_shown_advantage


def test_a_probe_run_on_stored_pairs_moves_as_verdicts(store: Store, tmp_path: Path) -> None:
    import_file(store, "pairs", example_path("pairs.jsonl"))
    result = run_probes(FakeJudge(seed=4, position=0.2, parse_failure_rate=0.1), store, n=10,
                        biases="position,formatting", evidence=tmp_path / "r.jsonl")
    rows = store.run_rows(result.summary.run_id, "pairwise")
    probe = statistics_of_replies(position_replies(rows[rows["probe"] == "position"], store.pair_gold()))
    assert probe.accuracy and probe.pairs == 10, "stored pairs carry gold"
    (tmp_path / "v.csv").write_bytes(table_bytes(export_table(store, "verdicts"), "csv"))
    other = Store(tmp_path / "other.duckdb")
    import_file(other, "pairs", example_path("pairs.jsonl"))
    import_file(other, "verdicts", tmp_path / "v.csv")
    # The position probe's calls moved (the formatting probe's arms are in the judgements export).
    assert run_position(other).statistics == probe


@pytest.fixture
def verdicts_db(tmp_path: Path) -> str:
    db = str(tmp_path / "v.duckdb")
    store = Store(db)
    import_file(store, "pairs", LLMBAR / "pairs_Natural.csv")
    import_file(store, "verdicts", LLMBAR / "verdicts_Natural.csv")
    return db


def test_position_prints_text_and_json_and_picks_the_run(verdicts_db: str) -> None:
    code, out, _ = run("position", "--judge-model", "PaLM2/Vanilla_NoRules", "--db", verdicts_db)
    assert code == 0
    head = "judge run import:PaLM2/Vanilla_NoRules (judge PaLM2/Vanilla_NoRules; pairwise5 format)"
    assert out.splitlines()[0] == head
    assert "parse failures: 6 of 200 replies did not parse" in out
    assert "consistency (same winner in both orders; unparsed counts as inconsistent): 81.0%" in out
    assert "positional agreement (LLMBar's `equal`: two unparsed replies agree): 84.0%" in out
    assert "accuracy vs gold, answer a shown first: 77.0%" in out
    code, out, _ = run("position", "--judge-run", "import:GPT-4/Vanilla", "--json", "--db", verdicts_db)
    payload = json.loads(out)
    assert payload["run_id"] == "import:GPT-4/Vanilla" and payload["accuracy"]["a_first"]["value"] == 0.95
    # The Python API calls the same function: the same figures, and the text lines as its repr.
    import judgelab as jl

    api = jl.position(jl.open_project(verdicts_db), run_id="import:GPT-4/Vanilla")
    assert api.to_dict() == payload
    assert repr(api).splitlines()[0].startswith("judge run import:GPT-4/Vanilla")
    assert "consistency" in set(api.to_frame()["statistic"])
    code, _, err = run("position", "--judge-run", "x", "--judge-model", "y", "--db", verdicts_db)
    assert code == 2 and "not both" in err
    code, _, err = run("position", "--judge-model", "nobody", "--db", verdicts_db)
    assert code == 2 and "no run of judge 'nobody'" in err and "'GPT-4/Vanilla'" in err


def test_position_needs_pairwise_judgements(store: Store) -> None:
    with pytest.raises(InputError, match="no judge run with pairwise judgements") as info:
        run_position(store)
    assert "judgelab import verdicts" in (info.value.fix or "")


def test_calibrate_and_formats_read_a_database_of_pairwise_judgements_only(verdicts_db: str, tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    code, _, err = run("calibrate", "--judge-run", "import:PaLM2/Vanilla_NoRules", "--db", verdicts_db,
                       "--out", str(out), "--json", "--resamples", "50")
    assert code == 0, err
    markdown = out.read_text()
    assert "### Position statistics of the run (`judgelab position`)" in markdown
    assert "consistency (same winner in both orders; unparsed counts as inconsistent): 81.0%" in markdown
    payload = json.loads(out.with_suffix(".json").read_text())
    stats = payload["probes"]["position_statistics"]
    assert stats["pairs"] == 100 and stats["parse_failures"] == 6
    assert stats["accuracy"]["both_orders"]["value"] == 0.74
    # With no run named, the newest run with judgements is read (here all are pairwise).
    code, out_text, err = run("formats", "--db", verdicts_db, "--resamples", "50")
    assert code == 0, err
    assert "pairwise5 (comparative" in out_text and "both orders judged for" in out_text
