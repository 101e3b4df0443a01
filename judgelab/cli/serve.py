"""``judgelab serve`` and ``judgelab demo``: the rater app."""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from pathlib import Path

import click

from judgelab.cli._util import db_option, new_db_option
from labeler.errors import InputError
from labeler.store import Store, release_all, resolve_db_path

APP = Path(__file__).resolve().parent.parent / "app.py"

#: The port the app is served on unless ``--port`` says otherwise (the next free one above it
#: when it is busy).
DEFAULT_PORT = 8501


def streamlit_command(db: Path, port: int, address: str) -> list[str]:
    """The ``streamlit run`` command line that serves the app on ``db``.

    Every setting that matters is a flag: ``streamlit run`` reads ``.streamlit/config.toml``
    only from the working directory, which is wherever the admin happens to be. Raters
    never see exception details (``client.showErrorDetails none``): a traceback would show
    server paths and offer to send it to outside sites.
    """
    return [
        sys.executable, "-m", "streamlit", "run", str(APP),
        "--server.port", str(port), "--server.address", address,
        "--server.headless", "true", "--server.fileWatcherType", "none",
        "--server.runOnSave", "false",
        # Streamlit's full garbage collection after every run costs a rater's submit ~40 ms of
        # server CPU with this process's libraries loaded; Python's own collector still runs.
        "--runner.postScriptGC", "false",
        "--browser.gatherUsageStats", "false", "--client.toolbarMode", "minimal",
        "--client.showErrorDetails", "none",
        "--theme.base", "light", "--theme.primaryColor", "#3d6b8f",
        "--theme.backgroundColor", "#fbfaf7", "--theme.secondaryBackgroundColor", "#eef1f3",
        "--theme.textColor", "#24303a",
    ]


def port_is_free(address: str, port: int) -> bool:
    """Whether nothing listens on ``address:port`` (binding it now succeeds)."""
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)
    except OSError:
        infos = [(socket.AF_INET, socket.SOCK_STREAM, 0, "", ("127.0.0.1", port))]
    for family, kind, proto, _, where in infos:
        with socket.socket(family, kind, proto) as s:
            try:
                s.bind(where)
            except OSError:
                return False
    return True


def choose_port(address: str, port: int | None) -> int:
    """The port to serve on: ``port`` when given (refused if busy), else the first free from 8501.

    Raises:
        InputError: The given ``port`` is busy, or no port from 8501 to 8600 is free.
    """
    if port is not None:
        if not port_is_free(address, port):
            raise InputError(
                f"port {port} on {address} is already in use (is another judgelab app running?)",
                fix="stop that server, pass another --port, or leave --port out to use a free one.",
            )
        return port
    for candidate in range(DEFAULT_PORT, DEFAULT_PORT + 100):
        if port_is_free(address, candidate):
            return candidate
    raise InputError(f"no free port from {DEFAULT_PORT} to {DEFAULT_PORT + 99}", fix="pass --port.")


def _serve(db: Path, port: int, address: str) -> None:
    env = {**os.environ, "JUDGELAB_DB": str(db), "JUDGELAB_BASE_URL": f"http://{address}:{port}"}
    sys.stdout.flush()
    # Become the Streamlit server rather than its parent, so a signal sent to
    # `judgelab serve` (Ctrl+C, SIGTERM from a supervisor) reaches the server itself
    # and no orphaned server keeps the port.
    command = streamlit_command(db, port, address)
    release_all()  # exec keeps open files: the server must not inherit our lock on the database
    os.execve(command[0], command, env)


_PORT_HELP = "Port to serve on [default: 8501, or the next free one when it is busy]."


@click.command()
@click.option("--port", type=int, default=None, help=_PORT_HELP)
@click.option("--address", default="localhost", show_default=True)
@db_option
def serve(port: int | None, address: str, db: str | None) -> None:
    """Start the rater app on the project database."""
    store = Store(db)
    port = choose_port(address, port)
    click.echo(f"serving {store.path} on http://{address}:{port}  (Ctrl+C stops)")
    _serve(store.path, port, address)


@click.command()
@click.option("--port", type=int, default=None, help=_PORT_HELP)
@click.option("--address", default="localhost", show_default=True)
@click.option("--no-serve", is_flag=True, help="Build the demo database and print the links only.")
@new_db_option
def demo(port: int | None, address: str, no_serve: bool, db: str | None) -> None:
    """Build a fresh demo database from the bundled examples and start the app on it.

    The links it prints point at the server it starts: on ``--port`` (refused at once if
    busy), else on 8501 or the next free port.
    """
    from judgelab.demo import build_demo

    path = Path(db) if db else Path(tempfile.mkdtemp(prefix="judgelab-demo-")) / "demo.duckdb"
    path = resolve_db_path(path)
    if path.exists():
        raise InputError(f"{path} already exists", fix="give a new --db path, or leave --db out for a temporary one.")
    port = (port or DEFAULT_PORT) if no_serve else choose_port(address, port)
    base = f"http://{address}:{port}"
    result = build_demo(Store(path), base_url=base)
    click.echo(f"demo database: {path}")
    for line in result.summary_lines:
        click.echo(f"  {line}")
    click.echo(f"rater link: {result.rater_url}")
    click.echo(f"admin link: {result.admin_url}")
    if not no_serve:
        click.echo(f"serving on {base}  (Ctrl+C stops)")
        _serve(path, port, address)


COMMANDS: list[click.Command] = [serve, demo]
