"""The store's edges (issue 29 item 11): a newer judgelab's file, a read-only file, a full disk.

Each case runs the real ``judgelab`` command in a fresh process on a real DuckDB file, because a
process remembers what it knows about a file (its connection, that it was migrated).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from judgelab.labeler.errors import InputError
from judgelab.labeler.store import MAX_COMMENT_CHARS, Store, migrations, release_all
from tests.app.conftest import build_pool
from tests.app.test_review import assignment
from tests.conftest import DATA


def judgelab(*args: str) -> subprocess.CompletedProcess[str]:
    """``judgelab ARGS`` in a fresh process."""
    return subprocess.run([sys.executable, "-m", "judgelab", *args], capture_output=True, text=True, timeout=120)


def project(path: Path) -> Path:
    """A small project database, closed (no process holds it)."""
    store = Store(path)
    store.add_rater("ann")
    assert judgelab("import", "rubric", str(DATA / "rubric.toml"), "--db", str(path)).returncode == 0
    release_all()
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_database_from_a_newer_judgelab_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    db = project(tmp_path / "p.duckdb")
    newer = max(v for v, _, _ in migrations()) + 1
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO _migrations (version, name) VALUES (?, 'from_the_future')", [newer])
    con.close()
    before = digest(db)
    for args in (("raters", "list"), ("raters", "add", "bob")):
        done = judgelab(*args, "--db", str(db))
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "newer judgelab" in done.stderr and f"migration {newer:03d}" in done.stderr, done.stderr
        assert "Fix: upgrade judgelab" in done.stderr and "Traceback" not in done.stderr
    assert digest(db) == before
    assert not Path(f"{db}.wal").exists()


@pytest.fixture
def immutable(tmp_path: Path) -> Iterator[Path]:
    """A project database the operating system will not let anyone write (even root)."""
    db = project(tmp_path / "ro.duckdb")
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode:
        pytest.skip("cannot make a file immutable here (chattr +i needs root on a supporting file system)")
    try:
        yield db
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=False)


def test_a_read_only_database_is_read_and_a_write_says_read_only(immutable: Path, tmp_path: Path) -> None:
    out = tmp_path / "raters.csv"
    exported = judgelab("export", "rubric", "--out", str(tmp_path / "rubric.toml"), "--db", str(immutable))
    assert exported.returncode == 0, exported.stderr
    listed = judgelab("raters", "list", "--db", str(immutable))
    assert listed.returncode == 0 and "ann" in listed.stdout, listed.stderr
    added = judgelab("raters", "add", "bob", "--db", str(immutable))
    assert added.returncode == 2, (added.stdout, added.stderr)
    assert "is read-only" in added.stderr and "another process" not in added.stderr.lower(), added.stderr
    assert "Traceback" not in added.stderr
    assert not out.exists() or out.stat().st_size == 0


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MB file system (tmpfs), for a full disk."""
    where = tmp_path / "tiny"
    where.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(where)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_disk_is_said_in_words_not_a_traceback(tiny_disk: Path, tmp_path: Path) -> None:
    db = tiny_disk / "p.duckdb"
    assert judgelab("init", "--db", str(db)).returncode == 0
    assert judgelab("import", "rubric", str(DATA / "rubric.toml"), "--db", str(db)).returncode == 0
    # Tasks and answers whose text alone is larger than the disk.
    big = tmp_path / "answers.jsonl"
    filler = "restart the router and update its firmware. " * 400
    big.write_text("".join(
        f'{{"task_id": "t{i}", "prompt": "ticket {i} {filler}", "answer_id": "a{i}", "family": "f", '
        f'"model": "m", "text": "{filler}"}}\n' for i in range(300)), "utf-8")
    done = judgelab("import", "answers", str(big), "--db", str(db))
    assert done.returncode == 2, (done.stdout, done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "full" in done.stderr or "space" in done.stderr, done.stderr


def test_a_comment_longer_than_the_bound_is_refused_in_the_store(tmp_path: Path) -> None:
    """A rater's comment (and a flag reason, a pair comment, an audit note) has a length bound."""
    pool = build_pool(tmp_path / "c.duckdb", n_tasks=2)
    store = pool.store
    ann, _ = store.add_rater("ann")
    answer = pool.originals[0]
    store.assign_k([answer], 1, [ann.rater_id])
    item = assignment(store, ann.rater_id, answer)
    crit = {c.criterion_id: 3.0 for c in store.rubric().criteria}  # type: ignore[union-attr]
    too_long = "x" * (MAX_COMMENT_CHARS + 1)
    with pytest.raises(InputError, match="5,001 characters long; at most 5,000"):
        store.add_label(ann.rater_id, item, overall=3, criteria=crit, comment=too_long)
    with pytest.raises(InputError, match="reason for the flag"):
        store.add_label(ann.rater_id, item, overall=None, flag_reason=too_long)
    assert store.query("SELECT count(*) AS n FROM labels")["n"].iloc[0] == 0
    assert store.add_label(ann.rater_id, item, overall=3, criteria=crit, comment="x" * MAX_COMMENT_CHARS) > 0


def test_the_rating_forms_text_boxes_stop_where_the_store_does() -> None:
    # The browser caps what it sends at the store's bound, so an oversized comment never
    # reaches Streamlit's message cap (the page hung silently there).
    from judgelab.labeler.store import MAX_COMMENT_CHARS
    from judgelab.views._form import FormData

    form = (Path(__file__).resolve().parent.parent / "judgelab" / "views" / "_form.js").read_text()
    # Cut in code points, as the store counts (tests/browser/test_rater_page_edges.py pastes them).
    assert "const max = this.data.max_chars;" in form and "box.value.slice(0, unitsOf(box.value, max))" in form
    data = FormData(item="i:new", title="t", choice_label="c", options=(), choice=None, missing="m",
                    comment_label="Comment", comment="", keys_help="", editing=False, can_back=False)
    assert data.payload()["max_chars"] == MAX_COMMENT_CHARS


def test_a_newer_database_names_the_judgelab_that_wrote_it_and_the_one_to_install(tmp_path: Path) -> None:
    """Issue 47 item 6: each migration records the judgelab version that applied it."""
    from judgelab import __version__

    db = project(tmp_path / "p.duckdb")
    recorded = Store(db).applied_migrations()
    release_all()
    assert set(recorded["judgelab_version"]) == {__version__}
    newer = max(v for v, _, _ in migrations()) + 2
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO _migrations (version, name, judgelab_version) VALUES (?, 'from_the_future', '9.4.1')",
                [newer])
    con.close()
    before = digest(db)
    done = judgelab("raters", "list", "--db", str(db))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"judgelab 9.4.1 added migration {newer:03d}" in done.stderr, done.stderr
    assert f"this judgelab ({__version__}) knows migrations up to {newer - 2:03d}" in done.stderr, done.stderr
    assert "pip install 'judgelab>=9.4.1'" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert digest(db) == before


def test_a_database_made_before_versions_were_recorded_gains_the_column(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE _migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
                " applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)")
    for version, name, sql in migrations():
        for statement in con.extract_statements(sql):
            con.execute(statement)
        con.execute("INSERT INTO _migrations (version, name) VALUES (?, ?)", [version, name])
    con.close()
    recorded = Store(db).applied_migrations()
    release_all()
    assert recorded["judgelab_version"].isna().all() and len(recorded) == len(migrations())


@pytest.mark.postgres
def test_a_newer_postgresql_database_is_refused_and_left_as_it_is(pg_server: str) -> None:
    """The newer-database refusal on PostgreSQL: the CLI says which judgelab to install, writes nothing."""
    import psycopg

    from tests import pg

    url = pg.fresh_database(pg_server)
    try:
        Store(url).add_rater("alice")
        newer = max(v for v, _, _ in migrations()) + 1
        with psycopg.connect(url, autocommit=True) as con:
            con.execute("INSERT INTO _migrations (version, name, judgelab_version)"
                        " VALUES (%s, 'from_the_future', '9.4.1')", [newer])
        for args in (("raters", "list"), ("raters", "add", "bob")):
            done = judgelab(*args, "--db", url)
            assert done.returncode == 2, (args, done.stdout, done.stderr)
            assert f"judgelab 9.4.1 added migration {newer:03d}" in done.stderr, done.stderr
            assert "Traceback" not in done.stderr
        with psycopg.connect(url) as con:
            assert con.execute("SELECT name FROM raters").fetchall() == [("alice",)]
    finally:
        pg.drop_database(pg_server, url)
