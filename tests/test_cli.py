"""The ``judgelab`` command line: init, import, export round trip, raters, demo, error handling."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.cli import main
from judgelab.labeler.store import Store
from tests.conftest import DATA


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_init_and_db_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run("init", "--db", str(tmp_path / "a.duckdb"))
    assert code == 0 and "schema at migration" in out
    monkeypatch.setenv("JUDGELAB_DB", str(tmp_path / "env.duckdb"))
    assert run("init")[0] == 0
    assert (tmp_path / "env.duckdb").exists()


def test_import_then_export_round_trip(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    assert run("import", "rubric", str(DATA / "rubric.toml"), "--db", db)[0] == 0
    code, out, _ = run("import", "answers", str(DATA / "answers.jsonl"), "--db", db)
    assert code == 0 and "140 answers added" in out
    code, out, _ = run("import", "answers", str(DATA / "answers.jsonl"), "--db", db)
    assert "0 answers added" in out and "140 answers already present" in out
    original = pd.read_json(DATA / "answers.jsonl", lines=True)
    for fmt in ("csv", "jsonl", "parquet"):
        out_file = tmp_path / f"answers.{fmt}"
        assert run("export", "answers", "--file-format", fmt, "--out", str(out_file), "--db", db)[0] == 0
        back = {"csv": pd.read_csv, "parquet": pd.read_parquet}.get(fmt, lambda p: pd.read_json(p, lines=True))(
            out_file
        )
        merged = original.merge(back, on="answer_id", suffixes=("", "_back"))
        assert len(merged) == 140
        for col in ("task_id", "family", "model", "text", "prompt", "category"):
            assert (merged[col] == merged[f"{col}_back"]).all(), (fmt, col)
        # The export re-imports into a fresh database as the same pool.
        fresh = str(tmp_path / f"fresh-{fmt}.duckdb")
        code, out, _ = run("import", "answers", str(out_file), "--db", fresh)
        assert code == 0 and "140 answers added" in out, out


def test_labels_export_round_trip(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    run("import", "rubric", str(DATA / "rubric.toml"), "--db", db)
    run("import", "answers", str(DATA / "answers.jsonl"), "--db", db)
    (tmp_path / "labels.csv").write_text("answer_id,rater,score,pass\nT001-a,ann,4,true\nT001-b,ann,2,false\n")
    assert run("import", "labels", str(tmp_path / "labels.csv"), "--db", db)[0] == 0
    assert run("export", "labels", "--out", str(tmp_path / "out.csv"), "--db", db)[0] == 0
    back = pd.read_csv(tmp_path / "out.csv")
    assert list(back["rater"]) == ["ann", "ann"]
    # The export writes the columns the importer reads (issue 13: it used to say overall/passed).
    assert list(back["score"]) == [4, 2]
    assert list(back["pass"]) == [True, False]


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = Path(__file__).parent / "bad_inputs" / "answers_duplicate_id.csv"
    code, _, err = run("import", "answers", str(bad), "--db", str(tmp_path / "x.duckdb"))
    assert code == 2
    assert err.startswith("judgelab: error: ") and err.count("\n") == 2
    assert "row 2" in err and "'answer_id'" in err and err.splitlines()[1].startswith("Fix: ")


def test_raters_add_list_revoke(tmp_path: Path) -> None:
    db = str(tmp_path / "r.duckdb")
    code, out, _ = run("raters", "add", "alice", "--db", db, "--base-url", "http://h:9")
    assert code == 0 and out.startswith("alice (rater): http://h:9/?t=")
    token = out.strip().rsplit("=", 1)[1]
    assert Store(db).authenticate(token).name == "alice"
    assert "admin" in run("raters", "add", "boss", "--admin", "--db", db)[1]
    assert "alice" in run("raters", "list", "--db", db)[1]
    assert run("raters", "revoke", "alice", "--db", db)[0] == 0
    assert "revoked" in run("raters", "list", "--db", db)[1]
    code, _, err = run("raters", "add", "alice", "--db", db)
    assert code == 2 and "already exists" in err


def test_demo_builds_a_database_with_links(tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    code, out, _ = run("demo", "--no-serve", "--db", str(db))
    assert code == 0, out
    assert "rater link: http://localhost:8501/?t=" in out and "admin link:" in out
    store = Store(db)
    assert len(store.answers(variant="original")) == 140
    assert len(store.answers(variant="padded")) == 5
    labels = store.export_frame("labels")
    assert (labels["source"] == "simulated").all() and len(labels) == 4 * 44  # 44 tickets x 2 answers x 2 raters
    assert store.raters().query("simulated")["name"].str.startswith("sim-").all()
    judged = store.export_frame("judgements")
    assert len(judged) == 140 and judged["parse_error"].isna().all()
    code, _, err = run("demo", "--no-serve", "--db", str(db))
    assert code == 2 and "already exists" in err


def test_a_reading_verb_refuses_a_database_that_does_not_exist(tmp_path: Path) -> None:
    # A mistyped --db (or a forgotten one) used to open a new, empty database: `export` then
    # wrote an empty file and `calibrate` reported nothing, as if the project had no labels.
    missing = tmp_path / "typo.duckdb"
    for args in (["export", "labels", "--out", str(tmp_path / "l.csv")], ["position"], ["raters", "list"]):
        result = CliRunner().invoke(main, [*args, "--db", str(missing)])
        assert result.exit_code == 2, (args, result.output)
        assert f"there is no project database at {missing}" in result.stderr
        assert "judgelab init" in result.stderr
        assert not missing.exists() and not (tmp_path / "l.csv").exists()
    # Verbs that start a project still create it.
    assert CliRunner().invoke(main, ["init", "--db", str(missing)]).exit_code == 0
    assert CliRunner().invoke(main, ["raters", "list", "--db", str(missing)]).exit_code == 0
