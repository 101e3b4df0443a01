"""A throwaway PostgreSQL server for the tests' PostgreSQL lane.

``JUDGELAB_TEST_PG`` (a ``postgresql://`` URL of a server where the user may create databases)
is used when set; otherwise a cluster is made with Debian's ``initdb`` in a temporary folder and
started on a free port of 127.0.0.1 for the test session, as a non-root user (PostgreSQL refuses
to run as root). With no server binary the lane is skipped, except in CI (``CI=true``), where
it fails: CI installs Debian's ``postgresql`` (``.ci/run``).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def pg_bin() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl`` (the newest Debian cluster version), if any."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server(max_connections: int = 200, *, own: bool = False) -> Iterator[str]:
    """Yield the URL of a running server (started here, stopped on exit, unless given).

    Args:
        max_connections: The server's connection slots (3 of them kept for superusers).
        own: Start a server of its own even when ``JUDGELAB_TEST_PG`` names one (a test that
            needs its settings, e.g. few connection slots).
    """
    given = os.environ.get("JUDGELAB_TEST_PG")
    if given and not own:
        yield given
        return
    bindir = pg_bin()
    if bindir is None:
        raise FileNotFoundError("no PostgreSQL server binary (initdb) found; apt-get install postgresql")
    root = Path(tempfile.mkdtemp(prefix="judgelab-pg-"))
    data, port = root / "data", _free_port()
    run_as: list[str] = []
    if os.geteuid() == 0:  # postgres will not run as root
        user = "postgres" if _has_user("postgres") else "nobody"
        shutil.chown(root, user)
        run_as = ["runuser", "-u", user, "--"]
    subprocess.run([*run_as, str(bindir / "initdb"), "-D", str(data), "-U", "judgelab", "--auth=trust",
                    "-E", "UTF8", "--no-sync"], check=True, capture_output=True)
    opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off -c max_connections={max_connections}"
    subprocess.run([*run_as, str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"),
                    "-w", "start"], check=True, capture_output=True)
    try:
        yield f"postgresql://judgelab@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*run_as, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def fresh_database(admin_url: str) -> str:
    """Create an empty database on the server of ``admin_url``; its URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as con:
        con.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
    return admin_url.rsplit("/", 1)[0] + "/" + name


def drop_database(admin_url: str, url: str) -> None:
    """Drop the database of ``url`` (closing whatever still holds it)."""
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(admin_url, autocommit=True) as con:
        con.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]


class Cluster:
    """A throwaway PostgreSQL cluster of one test's own, which the test may stop and start again.

    Started on a free port of 127.0.0.1 (as a non-root user when run as root); :meth:`stop` is
    ``pg_ctl stop -m fast`` (what an admin's restart does), :meth:`start` brings it back on the
    same port with the same data. Use it as a context manager: the cluster is removed on exit.
    """

    def __init__(self) -> None:
        bindir = pg_bin()
        if bindir is None:
            raise FileNotFoundError("no PostgreSQL server binary (initdb) found; apt-get install postgresql")
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="judgelab-pg-own-"))
        self.data, self.port = self.root / "data", _free_port()
        self.run_as: list[str] = []
        if os.geteuid() == 0:  # postgres will not run as root
            user = "postgres" if _has_user("postgres") else "nobody"
            shutil.chown(self.root, user)
            self.run_as = ["runuser", "-u", user, "--"]
        subprocess.run([*self.run_as, str(bindir / "initdb"), "-D", str(self.data), "-U", "judgelab",
                        "--auth=trust", "-E", "UTF8", "--no-sync"], check=True, capture_output=True)
        self.url = f"postgresql://judgelab@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off -c max_connections=100"
        subprocess.run([*self.run_as, str(self.bindir / "pg_ctl"), "-D", str(self.data), "-o", opts,
                        "-l", str(self.root / "log"), "-w", "start"], check=True, capture_output=True)

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``pg_ctl stop -m MODE``) and wait until it is down."""
        subprocess.run([*self.run_as, str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"],
                       check=True, capture_output=True)

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        subprocess.run([*self.run_as, str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)
