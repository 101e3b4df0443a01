"""``judgelab examples DIR``: copy the bundled examples out of the installed package.

A light verb: it imports neither pandas nor DuckDB, so it answers at once.
"""

from __future__ import annotations

import click

from judgelab.cli._util import echo_json, json_option
from judgelab.labeler.examples import EXAMPLES, write_examples


@click.command("examples")
@click.argument("folder", type=click.Path(file_okay=False), default="examples")
@click.option("--force", is_flag=True, help="Replace files of the same name already in FOLDER.")
@json_option
def examples(folder: str, force: bool, as_json: bool) -> None:
    """Write the bundled examples (rubric, answers, pairs, judge spec) into a folder.

    FOLDER is created if absent (default: ./examples). The same files the demo and
    ``--dataset sample`` use, to read, edit and import: e.g. ``judgelab import rubric
    examples/rubric.toml`` or ``judgelab probe --judge-spec examples/judge_spec.toml``.
    """
    written = write_examples(folder, overwrite=force)
    if as_json:
        echo_json([{"file": str(path), "what": EXAMPLES[path.name]} for path in written])
        return
    for path in written:
        click.echo(f"wrote {path}  ({EXAMPLES[path.name]})")


COMMANDS: list[click.Command] = [examples]
