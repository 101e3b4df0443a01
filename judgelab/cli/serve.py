"""``judgelab serve`` and ``judgelab demo``: the rater app."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from judgelab.cli._util import db_option
from labeler.errors import InputError
from labeler.store import Store, release_all, resolve_db_path

APP = Path(__file__).resolve().parent.parent / "app.py"



def streamlit_command(db: Path, port: int, address: str) -> list[str]:
    """The ``streamlit run`` command line that serves the app on ``db``."""
    return [
        sys.executable, "-m", "streamlit", "run", str(APP),
        "--server.port", str(port), "--server.address", address,
        "--server.headless", "true", "--server.fileWatcherType", "none",
        "--browser.gatherUsageStats", "false", "--client.toolbarMode", "minimal",
        "--theme.base", "light", "--theme.primaryColor", "#3d6b8f",
    ]


def _serve(db: Path, port: int, address: str) -> None:
    env = {**os.environ, "JUDGELAB_DB": str(db), "JUDGELAB_BASE_URL": f"http://{address}:{port}"}
    sys.stdout.flush()
    # Become the Streamlit server rather than its parent, so a signal sent to
    # `judgelab serve` (Ctrl+C, SIGTERM from a supervisor) reaches the server itself
    # and no orphaned server keeps the port.
    command = streamlit_command(db, port, address)
    release_all()  # exec keeps open files: the server must not inherit our lock on the database
    os.execve(command[0], command, env)


@click.command()
@click.option("--port", default=8501, show_default=True)
@click.option("--address", default="localhost", show_default=True)
@db_option
def serve(port: int, address: str, db: str | None) -> None:
    """Start the rater app on the project database."""
    store = Store(db)
    click.echo(f"serving {store.path} on http://{address}:{port}  (Ctrl+C stops)")
    _serve(store.path, port, address)


@click.command()
@click.option("--port", default=8501, show_default=True)
@click.option("--address", default="localhost", show_default=True)
@click.option("--no-serve", is_flag=True, help="Build the demo database and print the links only.")
@db_option
def demo(port: int, address: str, no_serve: bool, db: str | None) -> None:
    """Build a fresh demo database from the bundled data and start the app on it."""
    from judgelab.demo import build_demo

    path = Path(db) if db else Path(tempfile.mkdtemp(prefix="judgelab-demo-")) / "demo.duckdb"
    path = resolve_db_path(path)
    if path.exists():
        raise InputError(f"{path} already exists", fix="pass a new --db path, or omit --db for a temporary one.")
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
