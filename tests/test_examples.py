"""The bundled examples ship in the package and ``judgelab examples DIR`` copies them out (issue 31)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab import labeler
from judgelab.cli import main
from judgelab.labeler.errors import InputError
from judgelab.labeler.examples import EXAMPLES, example_path, write_examples
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store


def test_every_example_is_inside_the_package_not_beside_it() -> None:
    package = Path(labeler.__file__).resolve().parent
    for name in EXAMPLES:
        path = example_path(name)
        assert path.is_file() and path.stat().st_size > 0 and package in path.resolve().parents, name
    # One home: the repository keeps no second copy that could drift.
    assert not (package.parent / "data").exists()


def test_an_unknown_example_is_refused_naming_the_ones_there_are() -> None:
    with pytest.raises(InputError, match=r"rubric\.toml"):
        example_path("rubrik.toml")


def test_examples_writes_every_file_and_the_copies_import(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["examples", str(tmp_path / "ex")])
    assert result.exit_code == 0, result.output
    for name in EXAMPLES:
        assert (tmp_path / "ex" / name).read_bytes() == example_path(name).read_bytes()
        assert f"wrote {tmp_path / 'ex' / name}" in result.output
    store = Store(tmp_path / "p.duckdb")
    import_file(store, "rubric", tmp_path / "ex" / "rubric.toml")
    assert import_file(store, "answers", tmp_path / "ex" / "answers.jsonl").added["answers"] == 140


def test_examples_never_overwrites_without_force(tmp_path: Path) -> None:
    folder = tmp_path / "ex"
    folder.mkdir()
    (folder / "rubric.toml").write_text("mine")
    result = CliRunner().invoke(main, ["examples", str(folder)])
    assert result.exit_code == 2 and "rubric.toml already exists" in result.output and "--force" in result.output
    assert (folder / "rubric.toml").read_text() == "mine" and not (folder / "answers.jsonl").exists()
    assert CliRunner().invoke(main, ["examples", str(folder), "--force"]).exit_code == 0
    assert (folder / "rubric.toml").read_bytes() == example_path("rubric.toml").read_bytes()
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="is a file"):
        write_examples(tmp_path / "file")


def test_examples_defaults_to_a_folder_named_examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(main, ["examples"]).exit_code == 0
    assert sorted(p.name for p in (tmp_path / "examples").iterdir()) == sorted(EXAMPLES)
