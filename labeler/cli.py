"""The ``judgelab`` command line.

Library code raises :class:`~labeler.errors.JudgelabError`; :class:`JudgelabGroup`
turns it into one line on stderr and exit code 2.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from labeler._cli_util import JudgelabGroup, db_option, echo_json, json_option
from labeler.admin import frame_bytes, invite_link
from labeler.errors import InputError
from labeler.importers import IMPORT_KINDS, import_file
from labeler.store import Store, release_all, resolve_db_path

APP = Path(__file__).with_name("app.py")
EXPORT_FORMATS = ("csv", "jsonl", "parquet")


@click.group(cls=JudgelabGroup)
@click.version_option(package_name="judgelab")
def main() -> None:
    """judgelab: instrument an LLM judge before anyone trusts it."""


@main.command()
@db_option
def init(db: str | None) -> None:
    """Create the project database (or bring an existing one up to date)."""
    store = Store(db)
    versions = store.applied_migrations()["version"].tolist()
    click.echo(f"{store.path}: schema at migration {max(versions)} ({len(store.schema())} tables)")


@main.command("import")
@click.argument("kind", type=click.Choice(IMPORT_KINDS))
@click.argument("file", type=click.Path(dir_okay=False))
@db_option
def import_(kind: str, file: str, db: str | None) -> None:
    """Import a rubric (TOML), answers, pairs, labels or judgements (CSV, JSONL, Parquet).

    All-or-nothing: the first problem names the file, row and column, and nothing
    is written. Importing the same file twice changes nothing.
    """
    summary = import_file(Store(db), kind, file)  # type: ignore[arg-type]  # click.Choice checked it
    click.echo(f"{file}: {summary}")


@main.command()
@click.argument("kind", type=click.Choice(["labels", "pair_labels", "judgements", "answers"]))
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS), default=None,
              help="Output format [default: from the --out suffix].")
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="File to write.")
@db_option
def export(kind: str, fmt: str | None, out: str, db: str | None) -> None:
    """Export labels, pairwise labels, judgements or answers."""
    path = Path(out)
    fmt = fmt or path.suffix.lower().lstrip(".")
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"cannot tell the format of {out!r}", fix="pass --format csv|jsonl|parquet.")
    frame = Store(db).export_frame(kind)  # type: ignore[arg-type]  # click.Choice checked it
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(frame_bytes(frame, fmt))  # type: ignore[arg-type]  # checked above
    click.echo(f"wrote {len(frame)} {kind} rows to {out}")


@main.group(cls=JudgelabGroup)
def raters() -> None:
    """Invite, list and revoke raters."""


@raters.command("add")
@click.argument("name")
@click.option("--admin", is_flag=True, help="Give this person the admin pages.")
@click.option("--base-url", default=None, help="App address for the link [default: $JUDGELAB_BASE_URL].")
@db_option
def raters_add(name: str, admin: bool, base_url: str | None, db: str | None) -> None:
    """Invite a rater and print their link (shown once; only a hash is stored)."""
    rater, token = Store(db).add_rater(name, role="admin" if admin else "rater")
    click.echo(f"{rater.name} ({rater.role}): {invite_link(token, base_url)}")


@raters.command("list")
@db_option
@json_option
def raters_list(db: str | None, as_json: bool) -> None:
    """List raters (never their tokens)."""
    frame = Store(db).raters()
    if as_json:
        echo_json(frame.to_dict(orient="records"))
        return
    for r in frame.itertuples(index=False):
        state = "active" if r.active else "revoked"
        sim = " (simulated)" if r.simulated else ""
        click.echo(f"{r.rater_id:>4}  {r.name:<24} {r.role:<6} {state}{sim}")


@raters.command("revoke")
@click.argument("name")
@db_option
def raters_revoke(name: str, db: str | None) -> None:
    """Revoke a rater's link; their labels stay."""
    Store(db).revoke_rater(name)
    click.echo(f"revoked {name}")


@raters.command("reissue")
@click.argument("name")
@click.option("--base-url", default=None, help="App address for the link.")
@db_option
def raters_reissue(name: str, base_url: str | None, db: str | None) -> None:
    """Give a rater a new link (the old one stops working)."""
    token = Store(db).reissue_token(name)
    click.echo(f"{name}: {invite_link(token, base_url)}")


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


@main.command()
@click.option("--port", default=8501, show_default=True)
@click.option("--address", default="localhost", show_default=True)
@db_option
def serve(port: int, address: str, db: str | None) -> None:
    """Start the rater app on the project database."""
    store = Store(db)
    click.echo(f"serving {store.path} on http://{address}:{port}  (Ctrl+C stops)")
    _serve(store.path, port, address)


@main.command()
@click.option("--port", default=8501, show_default=True)
@click.option("--address", default="localhost", show_default=True)
@click.option("--no-serve", is_flag=True, help="Build the demo database and print the links only.")
@db_option
def demo(port: int, address: str, no_serve: bool, db: str | None) -> None:
    """Build a fresh demo database from the bundled data and start the app on it."""
    from labeler.demo import build_demo

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


def _register() -> None:
    from calibration.cli import commands

    for command in commands():
        main.add_command(command)


_register()
