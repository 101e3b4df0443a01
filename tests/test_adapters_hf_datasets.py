"""Hugging Face `datasets` files as the current release writes them: save_to_disk folders, .arrow, Parquet, JSON.

Every file here is written in the test by `datasets` itself (``Dataset.save_to_disk``,
``to_parquet``, ``to_json``), from the real MT-Bench texts and GPT-4 ratings in tests/data/hf
(see its NOTICE), as a plain id/prompt/response/model/rating table: the shape a team moving from
the Hub has. The rating is a label or a judgement only when the user says which.
"""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.cli import main
from judgelab.labeler.exports import export_table
from judgelab.labeler.importers import read_rows
from judgelab.labeler.store import Store

HF = Path(__file__).parent / "data" / "hf"

RUBRIC = """\
id = "mt-bench-10"
version = 1
name = "MT-Bench single grading, 1-10 as 10-100"
scale = "numeric100"
pass_rule = "70 or more"
[author]
kind = "human"
name = "tests"
[[criteria]]
id = "overall"
name = "Overall"
description = "helpfulness, relevance, accuracy, depth, creativity and detail (MT-Bench single-v1)"
"""


def run(*args: str, ok: bool = True) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert (result.exit_code == 0) is ok, result.output
    return result.output


@pytest.fixture(scope="module")
def table() -> list[dict]:
    """The plain table: granite-7b-lab's turn-1 MT-Bench answers and GPT-4's rating of each (x 10)."""
    answers = [json.loads(line) for line in (HF / "answers.jsonl").read_text().splitlines()]
    ratings = pd.read_parquet(HF / "judgements.parquet").set_index("id")["rating"]
    rows = [{"id": a["id"], "prompt": a["prompt"], "response": a["response"], "model": a["model"],
             "rating": float(ratings[a["id"]])} for a in answers if pd.notna(ratings[a["id"]])]
    assert len(rows) == 4  # one of the five has no rating (GPT-4 gave none): not a row of a ratings table
    return rows


def test_a_save_to_disk_folder_imports_as_answers_and_its_rating_as_judgements(tmp_path: Path, table: list) -> None:
    folder = tmp_path / "rated"
    datasets.Dataset.from_list(table).save_to_disk(str(folder), num_shards=2)  # two shards: order kept
    assert len(list(folder.glob("data-*.arrow"))) == 2
    db = str(tmp_path / "p.duckdb")
    out = run("import", "answers", str(folder), "--from", "hf", "--db", db)
    assert "4 answers added" in out
    assert "left out: the field(s) ['rating']" in out and "--set judge_model=" in out and "--set rater=" in out
    got = export_table(Store(db), "answers").set_index("answer_id")
    for rec in table:
        assert (got.loc[rec["id"], "text"], got.loc[rec["id"], "prompt"]) == (rec["response"], rec["prompt"])
    out = run("import", "judgements", str(folder), "--from", "hf", "--set", "judge_model=gpt-4",
              "--set", "format=numeric100", "--db", db)
    assert "4 judgements added" in out and "left out: the field(s) ['prompt', 'response', 'model']" in out
    judged = export_table(Store(db), "judgements").set_index("answer_id")
    assert {r["id"]: r["rating"] for r in table} == judged["score"].to_dict()
    assert set(judged["judge_model"]) == {"gpt-4"} and set(judged["format"]) == {"numeric100"}
    # Without --set the table has no judge: the error says which column and how to give it.
    out = run("import", "judgements", str(folder), "--from", "hf", "--db", str(tmp_path / "q.duckdb"), ok=False)
    assert "judge_model" in out


@pytest.mark.parametrize("writer", ["to_parquet", "to_json", "arrow"])
def test_the_rating_imports_as_labels_from_each_file_datasets_writes(tmp_path: Path, table: list, writer: str) -> None:
    ds = datasets.Dataset.from_list(table)
    if writer == "to_parquet":
        path = tmp_path / "rated.parquet"
        ds.to_parquet(str(path))
    elif writer == "to_json":
        path = tmp_path / "rated.jsonl"
        ds.to_json(str(path), lines=True)
    else:
        ds.save_to_disk(str(tmp_path / "saved"))
        [path] = (tmp_path / "saved").glob("data-*.arrow")  # the shard itself, an Arrow stream file
    db = str(tmp_path / "p.duckdb")
    (tmp_path / "rubric.toml").write_text(RUBRIC)
    run("import", "rubric", str(tmp_path / "rubric.toml"), "--db", db)
    run("import", "answers", str(path), "--from", "hf", "--db", db)
    out = run("import", "labels", str(path), "--from", "hf", "--set", "rater=rater-1", "--db", db)
    assert "4 labels added" in out
    labels = export_table(Store(db), "labels")
    assert sorted(labels[["answer_id", "score"]].itertuples(index=False, name=None)) == \
        sorted((r["id"], r["rating"]) for r in table)
    assert set(labels["rater"]) == {"rater-1"}


def test_a_rating_column_of_another_name_is_mapped_and_class_labels_read_as_names(tmp_path: Path,
                                                                                  table: list) -> None:
    # A helpfulness column under its own name, and a pass verdict stored as datasets' ClassLabel
    # (integers in the Arrow data, names in dataset_info.json).
    rows = [{k: v for k, v in r.items() if k != "rating"} | {"helpfulness": r["rating"],
                                                             "verdict": int(r["rating"] >= 70)} for r in table]
    ds = datasets.Dataset.from_list(rows).cast_column("verdict", datasets.ClassLabel(names=["fail", "pass"]))
    ds.save_to_disk(str(tmp_path / "saved"))
    read = read_rows(tmp_path / "saved")
    assert [r["verdict"] for r in read.rows] == ["pass" if r["verdict"] else "fail" for r in rows]
    db = str(tmp_path / "p.duckdb")
    (tmp_path / "rubric.toml").write_text(RUBRIC)
    run("import", "rubric", str(tmp_path / "rubric.toml"), "--db", db)
    out = run("import", "answers", str(tmp_path / "saved"), "--from", "hf", "--db", db)
    assert "['helpfulness', 'verdict']" in out and "--map score=<the rating column>" in out
    run("import", "labels", str(tmp_path / "saved"), "--from", "hf", "--set", "rater=rater-1", "--map",
        "score=helpfulness", "--map", "pass=verdict", "--db", db)
    labels = export_table(Store(db), "labels").set_index("answer_id")
    for r in rows:
        assert labels.loc[r["id"], "score"] == r["helpfulness"] and bool(labels.loc[r["id"], "pass"]) == bool(
            r["verdict"])


def test_bad_datasets_files_are_refused_with_the_fix(tmp_path: Path, table: list) -> None:
    ds = datasets.Dataset.from_list(table)
    datasets.DatasetDict({"train": ds, "test": ds}).save_to_disk(str(tmp_path / "dd"))
    db = str(tmp_path / "p.duckdb")
    out = run("import", "answers", str(tmp_path / "dd"), "--from", "hf", "--db", db, ok=False)
    assert "DatasetDict folder with the splits ['train', 'test']" in out and str(tmp_path / "dd" / "train") in out
    (tmp_path / "empty").mkdir()
    out = run("import", "answers", str(tmp_path / "empty"), "--from", "hf", "--db", db, ok=False)
    assert "no state.json" in out and "save_to_disk" in out
    (tmp_path / "bad.arrow").write_bytes(b"not arrow at all")
    out = run("import", "answers", str(tmp_path / "bad.arrow"), "--from", "hf", "--db", db, ok=False)
    assert "is not a readable Arrow file" in out
    ds.save_to_disk(str(tmp_path / "cut"))
    next((tmp_path / "cut").glob("data-*.arrow")).unlink()
    out = run("import", "answers", str(tmp_path / "cut"), "--from", "hf", "--db", db, ok=False)
    assert "which is not in the folder" in out
    ds.save_to_disk(str(tmp_path / "ok"))
    out = run("import", "answers", str(tmp_path / "ok"), "--from", "hf", "--set", "model=other", "--db", db,
              ok=False)
    assert "--set gives column(s) ['model'], which the file already has" in out
    assert len(export_table(Store(db), "answers")) == 0  # nothing written by any of them


def test_a_saved_dataset_in_judgelabs_own_schema_imports_without_from(tmp_path: Path, table: list) -> None:
    own = [{"task_id": f"t{i}", "prompt": r["prompt"], "answer_id": r["id"], "family": "granite",
            "model": r["model"], "text": r["response"]} for i, r in enumerate(table)]
    datasets.Dataset.from_list(own).save_to_disk(str(tmp_path / "own"))
    out = run("import", "answers", str(tmp_path / "own"), "--db", str(tmp_path / "p.duckdb"))
    assert "4 answers added" in out
