"""``judgelab init``, ``import`` and ``export``: the project database and files in and out.

Every kind is one file schema (the README's "File schemas"): ``export K`` writes exactly what
``import K`` reads.
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from judgelab.cli._progress import ProgressHook, progress_bar
from judgelab.cli._util import db_option, echo_json, json_option, new_db_option, quiet_option, say
from judgelab.labeler.adapters import (
    ADAPTERS,
    EXPORT_TOOLS,
    export_label_studio,
    export_to,
    import_from,
    label_studio_config,
    parse_map,
    parse_set,
    read_users_map,
    with_hint,
)
from judgelab.labeler.errors import InputError
from judgelab.labeler.exports import EXPORT_FORMATS, designs_json, export_table, rubric_toml, table_bytes
from judgelab.labeler.importers import IMPORT_KINDS, import_file
from judgelab.labeler.schemas import DATA_KINDS
from judgelab.labeler.store import ImportExportRole, ImportSummary, MaintenanceRole, Store


@click.command()
@new_db_option
@json_option
def init(db: str | None, as_json: bool) -> None:
    """Create the project database (or bring an existing one up to date)."""
    store: MaintenanceRole = Store(db)
    versions = store.applied_migrations()["version"].tolist()
    tables = len(store.schema())
    if as_json:
        echo_json({"db": store.shown, "migration": int(max(versions)), "tables": tables})
        return
    click.echo(f"{store.shown}: schema at migration {max(versions)} ({tables} tables)")


@click.command("import")
@click.argument("kind", type=click.Choice(IMPORT_KINDS))
@click.argument("file", type=click.Path())
@click.option("--ignore-columns", default="", metavar="A,B",
              help="Columns of the file to leave out (e.g. from another tool); any other unknown column is an error.")
@click.option("--from", "tool", type=click.Choice(sorted(ADAPTERS)), default=None,
              help="Read the file as this tool exports it (the kinds each reads are listed above); what the "
              "conversion leaves out is printed.")
@click.option("--map", "maps", multiple=True, metavar="COLUMN=FIELD",
              help="Read judgelab's COLUMN from the file's FIELD (a dotted path reaches into JSON); repeatable. "
              "With --from label-studio, --map pass=NAME reads the Choices result NAME as the pass verdict.")
@click.option("--set", "sets", multiple=True, metavar="COLUMN=VALUE",
              help="Give a column the file lacks this value on every row (e.g. --set rater=alice); repeatable.")
@click.option("--family", default=None, metavar="NAME",
              help="Answers: the model family (and model) of every answer the file names none for.")
@new_db_option
@json_option
@quiet_option
def import_(kind: str, file: str, ignore_columns: str, tool: str | None, maps: tuple[str, ...],
            sets: tuple[str, ...], family: str | None, db: str | None, as_json: bool, quiet: bool) -> None:
    """Import a rubric (TOML), answers, pairs, labels, pair_labels, audits, judgements, verdicts or designs (JSON).

    Tables are CSV, JSONL, JSON arrays (.json), Parquet or Arrow (.arrow, or a
    datasets save_to_disk folder) with the columns of the
    README's file schemas, or another tool's export with --from TOOL, or any table
    with --map. All-or-nothing: the first problem names the file, row and column,
    and nothing is written. Importing the same file twice changes nothing.
    """
    ignore = [c for c in ignore_columns.split(",") if c.strip()]
    store = Store(db)
    if tool is None and not maps and not sets and family is None:
        try:
            with progress_bar(quiet, f"import {kind}") as hook:
                summary = import_file(store, kind, file, ignore_columns=ignore,  # type: ignore[arg-type]  # a Choice
                                      progress=hook)
        except InputError as exc:
            if kind in ("rubric", "designs") or exc.row is not None:
                raise
            raise with_hint(exc, file) from None
        if as_json:
            echo_json(_summary_payload(kind, file, summary))
            return
        _echo_summary(file, summary)
        return
    with progress_bar(quiet, f"import {kind}") as hook:
        done = import_from(store, kind, file, tool=tool, column_map=parse_map(maps),  # type: ignore[arg-type]
                           ignore_columns=ignore, values=parse_set(sets), family=family, progress=hook)
    if as_json:
        echo_json({**_summary_payload(kind, file, done.summary), "tool": tool,
                   "parse_failures": done.parse_failures, "left_out": list(done.dropped)})
        return
    _echo_summary(file, done.summary)
    if done.parse_failures:
        click.echo(f"  {done.parse_failures} judge repl{'y' if done.parse_failures == 1 else 'ies'} did not parse: "
                   "imported without a score, counted as parse failures (see parse_error)")
    for line in done.dropped:
        click.echo(f"  left out: {line}")


def _summary_payload(kind: str, file: str, summary: ImportSummary) -> dict[str, Any]:
    """An import's ``--json`` document: counts by kind added and already present, notes, warnings."""
    return {"kind": kind, "file": file, "added": dict(summary.added), "unchanged": dict(summary.unchanged),
            "notes": list(summary.notes), "warnings": list(summary.warnings)}


def _echo_summary(file: str, summary: ImportSummary) -> None:
    """The import's one line, then each warning on a line of its own (counted on the first)."""
    if not summary.warnings:
        click.echo(f"{file}: {summary}")
        return
    n = len(summary.warnings)
    click.echo(f"{file}: {replace(summary, warnings=())}; {n} warning{'s' * (n != 1)} (imported as written):")
    for line in summary.warnings:
        click.echo(f"  warning: {line}")


# The --from choices and the kinds each reads, under the command's description.
import_.help = inspect.cleandoc(import_.help or "") + "\n\n\b\n--from TOOL reads:\n" + "\n".join(
    f"  {a.name:<13} {', '.join(a.kinds)}" for a in ADAPTERS.values())


@click.command()
@click.argument("kind", type=click.Choice(DATA_KINDS))
@click.option("--file-format", "fmt", type=click.Choice([*EXPORT_FORMATS, "toml", "json"]), default=None,
              help="The file's format [default: from the --out suffix]. (--formats, on other commands, "
                   "are the judge's scoring formats.)")
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="File to write.")
@click.option("--to", "tool", type=click.Choice(EXPORT_TOOLS), default=None,
              help="Write what this tool imports: hf (dataset-style JSONL/JSON/Parquet rows with the answer's id, "
              "prompt and response) or label-studio (JSON tasks: labels as annotations, judgements as predictions); "
              "`judgelab import K FILE --from TOOL` reads it back.")
@db_option
@json_option
@quiet_option
def export(kind: str, fmt: str | None, out: str, tool: str | None, db: str | None, as_json: bool,
           quiet: bool) -> None:
    """Export one kind in the file schema ``judgelab import`` reads (the rubric as TOML, the designs as JSON)."""
    path = Path(out)
    fmt = fmt or path.suffix.lower().lstrip(".")
    store: ImportExportRole = Store(db)
    if tool == "label-studio" and fmt == "json":
        with progress_bar(quiet, f"export {kind}") as hook:
            written = _export_label_studio(store, kind, path, as_json=as_json, hook=hook)
        if as_json:
            echo_json({"kind": kind, "tool": tool, **written})
        return
    with progress_bar(quiet, f"export {kind}") as hook:
        data, n = _export_bytes(store, kind, fmt, out, tool, hook)
        if hook is not None:
            hook(f"writing {path.name}", 1, 2)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        store.record_action("export", str(path), kind=kind, rows=n, **({"to": tool} if tool else {"format": fmt}))
    if as_json:
        echo_json({"kind": kind, "tool": tool, "file_format": fmt, "out": out, "rows": n})
    elif tool is not None:
        click.echo(f"wrote {n} {kind} rows for {tool} to {out}")
    else:
        what = "designs (sample and active, with their probabilities)" if kind == "designs" else f"{kind} rows"
        click.echo(f"wrote {n} {what} to {out}")


def _export_bytes(store: ImportExportRole, kind: str, fmt: str, out: str, tool: str | None,
                  hook: ProgressHook | None) -> tuple[bytes, int]:
    """The exported file's bytes and its row count (reading the project is the first of two steps)."""
    if hook is not None:
        hook(f"reading {kind}", 0, 2)
    if tool is not None:
        return export_to(store, kind, tool, fmt)  # type: ignore[arg-type]  # a Choice
    if kind == "rubric":
        rubric = store.rubric()
        if rubric is None:
            raise InputError("there is no rubric in the database", fix="import one with `judgelab import rubric FILE`.")
        if fmt != "toml":
            raise InputError("a rubric is exported as TOML", fix="pass --out FILE.toml.")
        return rubric_toml(rubric).encode("utf-8"), 1
    if kind == "designs":
        if fmt != "json":
            raise InputError("the designs are exported as JSON", fix="pass --out FILE.json.")
        text, n = designs_json(store)
        return text.encode("utf-8"), n
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"cannot tell the format of {out!r}", fix="pass --file-format csv|jsonl|parquet.")
    frame = export_table(store, kind)  # type: ignore[arg-type]  # click.Choice checked it
    return table_bytes(frame, fmt), len(frame)  # type: ignore[arg-type]  # checked above


def _export_label_studio(store: ImportExportRole, kind: str, path: Path, *, as_json: bool,
                         hook: ProgressHook | None) -> dict[str, Any]:
    """Label Studio tasks, their labeling config and the raters' ids, each beside the others; what is left out.

    Returns:
        What was written, for ``--json``: the files, the task count, what was left out.
    """
    users = path.with_suffix(".users.json")  # edited to Label Studio's own ids, it is read back
    if hook is not None:
        hook(f"reading {kind}", 0, 2)
    done = export_label_studio(store, kind, users=read_users_map(users) if users.is_file() else None)  # type: ignore[arg-type]
    if hook is not None:
        hook(f"writing {path.name}", 1, 2)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = done.tasks_json()
    path.write_bytes(data)
    store.record_action("export", str(path), kind=kind, rows=len(done.tasks), to="label-studio")
    say(f"wrote {len(done.tasks)} tasks for label-studio to {path}", as_json=as_json)
    config = path.with_suffix(".label_config.xml")  # so the tasks open in Label Studio as they are
    config.write_text(label_studio_config(store, data), encoding="utf-8")
    say(f"wrote the labeling config to {config} (Settings > Labeling Interface > Code)", as_json=as_json)
    if done.users:
        users.write_bytes(done.users_json())
        say(f"wrote the raters' completed_by ids to {users}: Label Studio keeps an annotation's completed_by "
            "only if it is a member's user id; put each rater's Label Studio id there and export again "
            "(docs/files.md)", as_json=as_json)
    for line in done.left_out:
        click.echo(f"left out: {line}", err=True)
    return {"out": str(path), "tasks": len(done.tasks), "label_config": str(config),
            "users": str(users) if done.users else None, "left_out": list(done.left_out)}


COMMANDS: list[click.Command] = [init, import_, export]
