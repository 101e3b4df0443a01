"""``judgelab db copy``: a whole project moves between DuckDB and PostgreSQL, ids and all (issue 52, point 6).

Each direction copies a project with rows in every table (``tests/full_project.py``), then checks
the destination holds every row of every table as the source does, that the calibration report
reads the same figures, that a rater's invite link still opens their queue, and that new rows get
new ids. A non-empty destination is refused, and a copy that fails part-way leaves nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judgelab.cli import main
from judgelab.labeler.store import Store, copy_project, migrations, os_user, redact
from tests.full_project import EMPTY_TABLES, fill_project


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def place(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """Makes empty databases: ``place("duckdb", "name")`` a new file path, ``place("postgres", ...)`` a URL."""
    made: list[str] = []

    def make(backend: str, name: str) -> str:
        if backend == "duckdb":
            return str(tmp_path / f"{name}.duckdb")
        from tests import pg

        url = pg.fresh_database(request.getfixturevalue("pg_server"))
        made.append(url)
        return url

    yield make
    if made:
        from tests import pg

        for url in made:
            pg.drop_database(request.getfixturevalue("pg_server"), url)


def tables(location: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table but ``_migrations`` (all columns, as stored), sorted here.

    Sorted in Python: the two back-ends order text by different collations.
    """
    store = Store(location)
    out = {}
    with store.connection() as con:
        for name in sorted(store.schema()):
            if name != "_migrations":
                out[name] = sorted(con.execute(f"SELECT * FROM {name}").fetchall(), key=repr)
    store.release()
    return out


def shown(location: str) -> str:
    """A database as messages (and the audit trail) name it: a file's path, a URL without its password."""
    return redact(location) if location.startswith("postgres") else str(Path(location).resolve())


def calibrate(location: str, out: Path) -> dict[str, Any]:
    code, stdout, stderr = run("calibrate", "--json", "--out", str(out), "--db", location)
    assert code == 0, stderr
    return json.loads(stdout)  # type: ignore[no-any-return]


DIRECTIONS = [
    pytest.param("duckdb", "postgres", 5_000, marks=pytest.mark.postgres, id="duckdb-to-postgres"),
    # Small pages: every table (keys of one to three columns) is read in many pages.
    pytest.param("postgres", "duckdb", 7, marks=pytest.mark.postgres, id="postgres-to-duckdb"),
    pytest.param("duckdb", "duckdb", 7, id="duckdb-to-duckdb"),
]


@pytest.mark.parametrize(("src_kind", "dst_kind", "batch_rows"), DIRECTIONS)
def test_a_project_moves_whole_with_its_ids_links_and_figures(
    place: Any, tmp_path: Path, src_kind: str, dst_kind: str, batch_rows: int
) -> None:
    project = fill_project(place(src_kind, "source"))
    src, dst = project.location, place(dst_kind, "copy")
    code, out, err = run("db", "copy", src, dst, "--json", "--batch-rows", str(batch_rows))
    assert code == 0, err
    report = json.loads(out)
    before, after = tables(src), tables(dst)
    # Every table the migrations create (a later one too), each with every row as the source has it.
    assert set(report["tables"]) == set(before) == set(after)
    assert report["tables"] == {name: len(rows) for name, rows in before.items()}
    assert {name for name, rows in before.items() if not rows} == EMPTY_TABLES
    # The copy's own audit entry follows the copied trail (issue 57): one more row, by this command.
    copy_entry = [row for row in after["audit_log"] if row not in before["audit_log"]]
    assert [(r[0], r[2], r[3], r[4]) for r in copy_entry] == [
        (max(r[0] for r in before["audit_log"]) + 1, f"cli:{os_user()}", "db copy", shown(src))]
    after["audit_log"] = [row for row in after["audit_log"] if row not in copy_entry]
    for name in before:
        assert after[name] == before[name], name
    assert report["rows"] == sum(report["tables"].values())
    # The same figures from the same rows (the report names no database).
    assert calibrate(dst, tmp_path / "dst.md") == calibrate(src, tmp_path / "src.md")
    # Carol's invite link opens her queue on the copy; she is still paused there.
    copy = Store(dst)
    assert copy.authenticate(project.carol_token).rater_id == project.carol_id
    assert copy.rater_hold(project.carol_id) is not None
    assert [v for v, *_ in migrations()] == copy.applied_migrations()["version"].tolist()
    # New rows get new ids: every sequence was moved past the copied ones.
    newest = max(r[0] for r in before["raters"])
    assert copy.add_rater("dan")[0].rater_id == newest + 1


def test_the_command_prints_each_table_s_count(place: Any) -> None:
    src, dst = place("duckdb", "source"), place("duckdb", "copy")
    run("init", "--db", src)
    run("import", "rubric", str(Path(__file__).parent.parent / "labeler" / "examples" / "rubric.toml"), "--db", src)
    code, out, err = run("db", "copy", src, dst)
    assert code == 0, err
    lines = out.splitlines()
    assert any(line.split() == ["rubrics", "1"] for line in lines)
    assert any(line.split() == ["labels", "0"] for line in lines)
    assert any(line.split() == ["audit_log", "1"] for line in lines)  # the import's entry
    assert lines[-1].startswith(f"copied 7 rows in {len(lines) - 1} tables from {src} to {dst} in ")


@pytest.mark.parametrize("dst_kind", ["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_destination_with_rows_is_refused_and_left_as_it_was(place: Any, dst_kind: str) -> None:
    src, dst = place("duckdb", "source"), place(dst_kind, "copy")
    rubric = str(Path(__file__).parent.parent / "labeler" / "examples" / "rubric.toml")
    for db in (src, dst):
        assert run("import", "rubric", rubric, "--db", db)[0] == 0
    Store(dst).add_rater("someone")
    before = tables(dst)
    code, out, err = run("db", "copy", src, dst)
    assert code == 2 and out == ""
    problem, fix = err.strip().splitlines()
    assert problem.startswith("judgelab: error: the destination ") and "is not empty: it holds rows in audit_log, " \
        "raters, rubric_criteria, rubrics; nothing was copied" in problem
    assert fix.startswith("Fix: copy into a new file or a new, empty PostgreSQL database")
    assert tables(dst) == before


def test_bad_arguments_are_one_message_each(place: Any, tmp_path: Path) -> None:
    code, _, err = run("db", "copy", str(tmp_path / "missing.duckdb"), place("duckdb", "copy"))
    assert code == 2 and f"there is no project database at {tmp_path / 'missing.duckdb'}" in err
    assert not (tmp_path / "copy.duckdb").exists()
    src = place("duckdb", "source")
    run("init", "--db", src)
    code, _, err = run("db", "copy", src, src)
    assert code == 2 and "the source and the destination are the same database" in err


def test_an_interrupted_copy_leaves_no_new_file_and_an_existing_database_empty(place: Any) -> None:
    project = fill_project(place("duckdb", "source"))
    seen: list[str] = []

    def interrupt(table: str, n: int) -> None:
        seen.append(table)
        if table == "labels":
            raise KeyboardInterrupt  # Ctrl+C half-way through the tables

    new = place("duckdb", "new")
    with pytest.raises(KeyboardInterrupt):
        copy_project(project.location, new, on_table=interrupt)
    assert "answers" in seen and not Path(new).exists()
    existing = place("duckdb", "existing")
    assert run("init", "--db", existing)[0] == 0
    with pytest.raises(KeyboardInterrupt):
        copy_project(project.location, existing, on_table=interrupt)
    assert not any(tables(existing).values())


@pytest.mark.postgres
def test_a_copy_that_fails_on_the_server_leaves_nothing_and_can_run_again(place: Any) -> None:
    import psycopg

    project = fill_project(place("duckdb", "source"))
    dst = place("postgres", "copy")
    Store(dst).release()  # migrated: the tables exist, empty
    with psycopg.connect(dst, autocommit=True) as con:
        # The last table copied fails on the server, after every other table was written.
        con.execute("CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$"
                    " LANGUAGE plpgsql")
        con.execute("CREATE TRIGGER refuse BEFORE INSERT ON turn_scores FOR EACH ROW EXECUTE FUNCTION refuse()")
    code, out, err = run("db", "copy", project.location, dst)
    assert code == 2 and out == ""
    assert "failed and was rolled back, so the destination holds nothing of it: disk on fire" in err
    assert "Traceback" not in err
    assert not any(tables(dst).values())
    with psycopg.connect(dst, autocommit=True) as con:
        con.execute("DROP TRIGGER refuse ON turn_scores")
    assert run("db", "copy", project.location, dst)[0] == 0
    copied = tables(dst)
    assert [r[3] for r in copied["audit_log"]].count("db copy") == 1  # the copy that worked, only
    copied["audit_log"] = [r for r in copied["audit_log"] if r[3] != "db copy"]
    assert copied == tables(project.location)
