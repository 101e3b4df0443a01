"""``judgelab db``: the project database as a whole (``db copy`` moves a project to another database)."""

from __future__ import annotations

import click

from judgelab.cli._progress import progress_bar
from judgelab.cli._util import JudgelabGroup, echo_json, json_option, quiet_option


@click.group(cls=JudgelabGroup)
def db() -> None:
    """The project database as a whole: copy a project to another database (DuckDB or PostgreSQL)."""


@db.command("copy")
@click.argument("src")
@click.argument("dst")
@click.option("--batch-rows", type=click.IntRange(min=1), default=None, metavar="N",
              help="Rows read and written at a time (memory holds one page) [default: 5000].")
@json_option
@quiet_option
def db_copy(src: str, dst: str, batch_rows: int | None, as_json: bool, quiet: bool) -> None:
    """Copy every table of the project at SRC into the empty database DST, ids and all.

    SRC and DST are each a DuckDB file or a postgresql:// URL, in either direction. Raters keep
    their invite links, and assignments, settings, labels with their history, judge runs,
    designs, batches and turn scores keep their ids. DST must hold no rows (a new file is made;
    a PostgreSQL database must exist, e.g. from createdb). All or nothing: DST is written in one
    transaction. Stop the app servers on SRC first: the copy reads one snapshot of SRC and holds
    it while it runs.
    """
    # Imported here: the store pulls in DuckDB and pandas, which `judgelab --help` never needs.
    from judgelab.labeler.store import BATCH_ROWS, copy_project

    with progress_bar(quiet, "db copy") as hook:
        done: list[str] = []

        def on_table(table: str, rows: int) -> None:
            done.append(table)
            if hook is not None:  # the number of tables is known only to the copy: no total
                hook(f"{table} ({rows:,} rows)", len(done), 0)

        summary = copy_project(src, dst, batch_rows=batch_rows or BATCH_ROWS, on_table=on_table)
    if as_json:
        echo_json({"source": summary.source, "destination": summary.destination, "tables": summary.tables,
                   "rows": summary.rows, "seconds": summary.seconds})
        return
    width = max(len(t) for t in summary.tables)
    for table, n in summary.tables.items():
        click.echo(f"  {table:<{width}} {n:>10,}")
    click.echo(f"copied {summary.rows:,} rows in {len(summary.tables)} tables from {summary.source} "
               f"to {summary.destination} in {summary.seconds:.1f} s")


COMMANDS: list[click.Command] = [db]
