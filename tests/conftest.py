"""Shared fixtures: every test gets its own database under tmp_path, never the working dir."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from judgelab.labeler.examples import example_path
from judgelab.labeler.store import Store

REPO = Path(__file__).resolve().parent.parent
#: The bundled examples (rubric, answers, pairs, judge spec, truth), found as the product finds them.
DATA = example_path("rubric.toml").parent


@pytest.fixture(autouse=True)
def _isolated_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A test that forgets --db must not touch ./judgelab.duckdb.
    monkeypatch.setenv("JUDGELAB_DB", str(tmp_path / "default.duckdb"))
    # Nor reach a real provider through a key or URL the developer's shell happens to hold.
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def invoke(*args: str) -> Result:
    """``judgelab *args`` in this process, exceptions raised as they are (not turned into exit 1)."""
    from judgelab.cli import main  # the CLI imports much; only the tests that use it pay for it

    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # A test marked both_backends that uses the database runs once per back-end; the PostgreSQL
    # run carries the `postgres` mark, so `-m postgres` selects the PostgreSQL lane alone.
    if metafunc.definition.get_closest_marker("both_backends") and "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", ["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)],
                             indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The back-end of this run of the test: ``duckdb`` unless it is marked both_backends."""
    return str(getattr(request, "param", "duckdb"))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The URL of a PostgreSQL server for the session (``tests/pg.py``)."""
    from tests import pg

    if pg.pg_bin() is None and not os.environ.get("JUDGELAB_TEST_PG"):
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI must run the PostgreSQL lane, but no PostgreSQL server binary was found")
        pytest.skip("no PostgreSQL server binary (Debian: apt-get install postgresql); PostgreSQL lane skipped")
    with pg.server() as url:
        yield url


@pytest.fixture
def db(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str | Path]:
    """Where this test's empty database is: a file under ``tmp_path``, or a fresh PostgreSQL database."""
    if backend != "postgres":
        yield tmp_path / "project.duckdb"
        return
    from tests import pg

    admin = request.getfixturevalue("pg_server")
    url = pg.fresh_database(admin)
    yield url
    pg.drop_database(admin, url)


@pytest.fixture
def store(db: str | Path) -> Store:
    """An empty, migrated project database (on PostgreSQL too when the test is marked both_backends)."""
    return Store(db)
