"""Published means: a mean of several people written rounded (1.667 for 5/3) imports as the exact mean.

Through the CLI, from files: the import message says what was read, the store holds 5/3, a
rounding coarser than the file's own is refused with the row, the column and the fix, and a
refused file writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.cli import main
from judgelab.labeler.exports import export_table
from judgelab.labeler.store import Store

RUBRIC = """\
id = "q"
version = 1
name = "Quality"
pass_rule = "Good answers pass."
pass_threshold = {threshold}
author = {{ kind = "human", name = "team" }}
{scale}
[[criteria]]
id = "q"
name = "Quality"
description = "The answer is good."
"""
Q5 = '[scale]\nname = "q5"\nlow = 1\nhigh = 5\nstep = 1\n'
ANSWERS = "task_id,prompt,answer_id,family,model,text\n" + "".join(
    f"T{i},Question {i},A{i},fam{i % 2},m{i % 2},Answer {i}.\n" for i in range(1, 5))


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.fixture(params=["declared", "likert5"])
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A database with a rubric (a declared 1-5 scale, or the named likert5) and four answers."""
    db = tmp_path / "p.duckdb"
    scale = Q5 if request.param == "declared" else 'scale = "likert5"\n'
    (tmp_path / "r.toml").write_text(RUBRIC.format(threshold=2, scale=scale))
    (tmp_path / "a.csv").write_text(ANSWERS)
    assert _cli("init", "--db", str(db))[0] == 0
    assert _cli("import", "rubric", str(tmp_path / "r.toml"), "--db", str(db))[0] == 0
    assert _cli("import", "answers", str(tmp_path / "a.csv"), "--db", str(db))[0] == 0
    return db


def test_a_three_decimal_mean_of_three_imports_as_the_exact_mean(project: Path) -> None:
    file = project.parent / "published.csv"
    file.write_text("rater,answer_id,score,n_raters\npub,A1,1.667,3\npub,A2,4.333,3\npub,A3,2.5,2\npub,A4,3,3\n")
    code, out = _cli("import", "labels", str(file), "--db", str(project))
    assert code == 0, out
    assert "4 labels added" in out
    assert "2 scores read as the exact mean of n_raters people" in out
    assert "(3 decimals)" in out and "row 1: 1.667 stored as 5/3" in out
    stored = export_table(Store(project), "labels").set_index("answer_id")
    # Exact, not 1.667: the float nearest 5/3, as 5 / 3 computes it.
    assert stored.loc["A1", "score"] == 5 / 3 and stored.loc["A2", "score"] == 13 / 3
    assert stored.loc["A3", "score"] == 2.5 and stored.loc["A4", "score"] == 3
    # The pass verdict reads the exact mean (threshold 2: 5/3 fails).
    assert list(stored["pass"]) == [False, True, True, True]
    # Importing the same file again changes nothing.
    code, out = _cli("import", "labels", str(file), "--db", str(project))
    assert code == 0 and "0 labels added, 4 labels already present" in out


def test_json_numbers_count_their_own_decimals(project: Path) -> None:
    file = project.parent / "published.json"
    file.write_text(json.dumps([{"rater": "pub", "answer_id": "A1", "score": 1.67, "n_raters": 3},
                                {"rater": "pub", "answer_id": "A2", "score": 2.5, "n_raters": 2}]))
    code, out = _cli("import", "labels", str(file), "--db", str(project))
    assert code == 0 and "row 1: 1.67 stored as 5/3" in out and "(2 decimals)" in out
    assert export_table(Store(project), "labels").set_index("answer_id").loc["A1", "score"] == 5 / 3


def test_a_rounding_coarser_than_the_files_own_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    db = tmp_path / "p.duckdb"
    (tmp_path / "r.toml").write_text(RUBRIC.format(threshold=2, scale=Q5))
    (tmp_path / "a.csv").write_text(ANSWERS)
    for args in (("init",), ("import", "rubric", str(tmp_path / "r.toml")),
                 ("import", "answers", str(tmp_path / "a.csv"))):
        assert _cli(*args, "--db", str(db))[0] == 0
    file = tmp_path / "mixed.csv"
    # The file writes 3 decimals (4.333): 1.67 is 0.0033 from 5/3, beyond its half-unit of 0.0005.
    file.write_text("rater,answer_id,score,n_raters\npub,A2,4.333,3\npub,A1,1.67,3\n")
    code, out = _cli("import", "labels", str(file), "--db", str(db))
    assert code != 0
    assert "mixed.csv, row 2, column 'score': 1.67 is not a mean of 3 scores" in out
    assert "nor within the file's rounding (3 decimals) of one" in out
    assert "rounded to the same decimals as the file's other scores" in out
    assert export_table(Store(db), "labels").empty
    # A whole-number file cannot say which mean of 3 its 2 rounds (5/3, 2 or 7/3 all read 2),
    # so an exact 2 is 2, and the only figures it could write are on the grid already.
    whole = tmp_path / "whole.csv"
    whole.write_text("rater,answer_id,score,n_raters\npub,A1,2,3\n")
    assert _cli("import", "labels", str(whole), "--db", str(db))[0] == 0
    stored = export_table(Store(db), "labels")
    assert isinstance(stored, pd.DataFrame) and list(stored["score"]) == [2]
