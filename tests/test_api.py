"""``judgelab``'s public API around the notebook page's walk: opening projects, and its refusals."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import judgelab as jl
from judgelab.labeler.examples import example_path
from judgelab.labeler.exports import export_table
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store


@pytest.mark.both_backends
def test_open_project_reads_the_file_schemas_on_both_backends(store: Store, db: str | Path) -> None:
    import_file(store, "rubric", example_path("rubric.toml"))
    import_file(store, "answers", example_path("answers.jsonl"))
    project = jl.open_project(db)
    pd.testing.assert_frame_equal(project.answers, export_table(store, "answers"))
    assert project.labels.empty and list(project.labels.columns)[:3] == ["label_id", "supersedes", "rater"]
    assert project.rubric is not None and 'id = "support-reply"' in project.rubric
    assert repr(project).endswith("140 answers, 0 labels, 0 judgements, 0 judge run(s)>")
    mine = project.answers
    mine.loc[0, "family"] = "changed"  # a copy: the next read is the database's
    assert project.answers.loc[0, "family"] != "changed"


def test_a_duckdb_project_is_opened_read_only(tmp_path: Path) -> None:
    Store(tmp_path / "p.duckdb")
    project = jl.open_project(tmp_path / "p.duckdb")
    assert project.store.read_only


def test_open_project_names_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(jl.InputError, match="no such project database") as caught:
        jl.open_project(tmp_path / "nowhere.duckdb")
    assert "nowhere.duckdb" in str(caught.value) and not (tmp_path / "nowhere.duckdb").exists()


def test_frames_need_a_rubric_and_a_project_takes_no_frames(tmp_path: Path) -> None:
    answers = pd.read_json(example_path("answers.jsonl"), lines=True)
    with pytest.raises(jl.InputError, match="rubric= is needed"):
        jl.calibrate(answers, None, None)
    Store(tmp_path / "p.duckdb")
    with pytest.raises(jl.InputError, match="pass a Project alone"):
        jl.panel(jl.open_project(tmp_path / "p.duckdb"), rubric=example_path("rubric.toml"))
    with pytest.raises(jl.InputError, match="exactly one of n or budget_hours"):
        jl.design(answers, rubric=example_path("rubric.toml"))


def test_a_frames_project_removes_its_private_database_when_closed() -> None:
    answers = pd.read_json(example_path("answers.jsonl"), lines=True)
    project = jl.project_from_frames(answers, rubric=example_path("rubric.toml"))
    folder = project.store.path.parent
    assert folder.is_dir() and project.source == "DataFrames"
    project.close()
    assert not folder.exists()
