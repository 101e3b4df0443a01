"""The PostgreSQL recipe and its secrets through the CLI, on a real server (issue 52, points 4 and 5).

* ``createdb judgelab`` as the superuser, then ``judgelab init`` as another role: PostgreSQL 15 lets
  only the database's owner create tables in ``public``. One line naming the fix and exit 2, not a
  traceback; the docs' recipe (``createdb -O ROLE DB``) and the GRANT it names both work.
* A password in the URL, in the userinfo or as a ``password=`` query parameter (any case), given
  with ``--db`` or through ``JUDGELAB_DB``, is never printed: not by ``init``, not by ``serve``, not
  in an error. The URL keeps both slashes of ``postgresql://``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests import pg

pytestmark = pytest.mark.postgres

SECRET = "Sup3r-s3cret"
JUDGELAB = str(Path(sys.executable).with_name("judgelab"))


def judgelab(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``judgelab ARGS`` in a fresh process (``JUDGELAB_DB`` only when ``env`` gives it)."""
    base = {k: v for k, v in os.environ.items() if k != "JUDGELAB_DB"}
    return subprocess.run([JUDGELAB, *args], capture_output=True, text=True, timeout=120, env={**base, **(env or {})})


@pytest.fixture
def role(pg_server: str) -> Iterator[str]:
    """A login role that is not a superuser and owns nothing yet."""
    name = f"r_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server, autocommit=True) as con:
        con.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{SECRET}'")  # type: ignore[arg-type]
    yield name
    with psycopg.connect(pg_server, autocommit=True) as con:
        for db in con.execute("SELECT datname FROM pg_database WHERE datdba = (SELECT oid FROM pg_roles "
                              "WHERE rolname = %s)", [name]).fetchall():
            con.execute(f"DROP DATABASE IF EXISTS {db[0]} WITH (FORCE)")  # type: ignore[arg-type]
        con.execute(f"DROP OWNED BY {name}")  # type: ignore[arg-type]
        con.execute(f"DROP ROLE {name}")  # type: ignore[arg-type]


@pytest.fixture
def superusers_db(pg_server: str) -> Iterator[str]:
    """A database made as the docs' recipe once said: ``createdb judgelab`` as the superuser; its name."""
    url = pg.fresh_database(pg_server)
    yield url.rsplit("/", 1)[1]
    pg.drop_database(pg_server, url)


def as_role(pg_server: str, role: str, database: str, *, query: bool = False) -> str:
    """The URL of ``database`` for ``role``, its password in the userinfo or (``query``) a parameter."""
    where = pg_server.split("@", 1)[1].rsplit("/", 1)[0]
    if query:
        return f"postgresql://{where}/{database}?user={role}&password={SECRET}&sslmode=disable"
    return f"postgresql://{role}:{SECRET}@{where}/{database}"


def test_init_as_a_role_that_does_not_own_the_database_is_one_line_naming_the_fix(
    pg_server: str, role: str, superusers_db: str
) -> None:
    done = judgelab("init", "--db", as_role(pg_server, role, superusers_db))
    lines = done.stderr.strip().splitlines()
    # Before: a 37-line traceback ending in "permission denied for schema public", exit 1.
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr
    said = lines[0]
    assert said.startswith(f'judgelab: error: the role "{role}" may not create tables in the schema public'), said
    assert f"createdb -O {role} {superusers_db}" in said and f"GRANT CREATE ON SCHEMA public TO {role}" in said
    assert SECRET not in done.stderr + done.stdout
    # The GRANT it names is enough (on a database someone else owns).
    with psycopg.connect(pg_server.rsplit("/", 1)[0] + "/" + superusers_db, autocommit=True) as con:
        con.execute(f"GRANT CREATE ON SCHEMA public TO {role}")  # type: ignore[arg-type]
    granted = judgelab("init", "--db", as_role(pg_server, role, superusers_db))
    assert granted.returncode == 0, granted.stderr


def test_the_docs_recipe_works_on_postgresql_15(pg_server: str, role: str) -> None:
    bindir = pg.pg_bin()
    assert bindir is not None
    host = re.match(r"postgresql://(\w+)@([\d.]+):(\d+)/", pg_server)
    assert host is not None
    superuser, address, port = host.groups()
    database = f"d_{uuid.uuid4().hex[:10]}"
    # docs/admins/database.md: "createdb -O judgelab judgelab", as the superuser.
    subprocess.run([str(bindir / "createdb"), "-h", address, "-p", port, "-U", superuser, "-O", role, database],
                   check=True, capture_output=True, text=True)
    done = judgelab("init", env={"JUDGELAB_DB": as_role(pg_server, role, database)})
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(rf"postgresql://{role}:\*\*\*@{address}:{port}/{database}: schema at migration \d+ "
                        r"\(\d+ tables\)\n", done.stdout), done.stdout
    added = judgelab("raters", "add", "alice", env={"JUDGELAB_DB": as_role(pg_server, role, database)})
    assert added.returncode == 0, added.stderr


@pytest.mark.parametrize("how", ["userinfo --db", "query --db", "userinfo JUDGELAB_DB", "query JUDGELAB_DB"])
def test_init_never_prints_the_password(pg_server: str, role: str, how: str) -> None:
    database = f"d_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server, autocommit=True) as con:
        con.execute(f"CREATE DATABASE {database} OWNER {role}")  # type: ignore[arg-type]
    url = as_role(pg_server, role, database, query=how.startswith("query"))
    done = judgelab("init", "--db", url) if how.endswith("--db") else judgelab("init", env={"JUDGELAB_DB": url})
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr
    shown = done.stdout.split(": schema at", 1)[0]
    # Before: "postgresql:/ROLE:***@..." (one slash), and a query's password printed as it was.
    assert shown == url.replace(SECRET, "***"), done.stdout


@pytest.mark.parametrize("how", ["userinfo", "query", "QUERY"])
def test_an_error_names_the_database_without_its_password(pg_server: str, role: str, how: str) -> None:
    url = as_role(pg_server, role, "no_such_database", query=how != "userinfo")
    if how == "QUERY":  # libpq refuses the name in capitals, and the message still hides the value
        url = url.replace("password=", "PASSWORD=")
    done = judgelab("init", env={"JUDGELAB_DB": url})
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"judgelab: error: could not connect to {url.replace(SECRET, '***')}: "), lines[0]
    why = 'invalid URI query parameter: "PASSWORD"' if how == "QUERY" else 'database "no_such_database" does not exist'
    assert why in lines[0], lines[0]
    assert SECRET not in done.stderr + done.stdout


@pytest.mark.parametrize("query", [False, True], ids=["userinfo", "query"])
def test_serve_never_prints_the_password(tmp_path: Path, pg_server: str, role: str, query: bool) -> None:
    database = f"d_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server, autocommit=True) as con:
        con.execute(f"CREATE DATABASE {database} OWNER {role}")  # type: ignore[arg-type]
    url = as_role(pg_server, role, database, query=query)
    env = {k: v for k, v in os.environ.items() if k not in ("JUDGELAB_BASE_URL", "JUDGELAB_DB")}
    env.update(PYTHONUNBUFFERED="1", JUDGELAB_DB=url)
    proc = subprocess.Popen([JUDGELAB, "serve", "--port", str(_free_port()), "--pool-size", "3"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    out: list[str] = []
    try:
        deadline = time.monotonic() + 60
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            out.append(line)
            if "Ctrl+C stops" in line:
                break
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=30)
    printed = "".join(out)
    assert f"serving {url.replace(SECRET, '***')}\n" in printed, printed
    assert "connections: up to 3 to the database at once" in printed, printed
    assert SECRET not in printed


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
