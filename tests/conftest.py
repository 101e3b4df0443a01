"""Shared fixtures: every test gets its own database under tmp_path, never the working dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from labeler.examples import example_path
from labeler.store import Store

REPO = Path(__file__).resolve().parent.parent
#: The bundled examples (rubric, answers, pairs, judge spec, truth), found as the product finds them.
DATA = example_path("rubric.toml").parent


@pytest.fixture(autouse=True)
def _isolated_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A test that forgets --db must not touch ./judgelab.duckdb.
    monkeypatch.setenv("JUDGELAB_DB", str(tmp_path / "default.duckdb"))


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """An empty, migrated project database."""
    return Store(tmp_path / "project.duckdb")
