"""``judgelab init``, ``import`` and ``export``: the project database and files in and out."""

from __future__ import annotations

from pathlib import Path

import click

from judgelab.admin import frame_bytes
from judgelab.cli._util import db_option
from labeler.errors import InputError
from labeler.importers import IMPORT_KINDS, import_file
from labeler.store import Store

EXPORT_FORMATS = ("csv", "jsonl", "parquet")



@click.command()
@db_option
def init(db: str | None) -> None:
    """Create the project database (or bring an existing one up to date)."""
    store = Store(db)
    versions = store.applied_migrations()["version"].tolist()
    click.echo(f"{store.path}: schema at migration {max(versions)} ({len(store.schema())} tables)")


@click.command("import")
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


@click.command()
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



COMMANDS: list[click.Command] = [init, import_, export]
