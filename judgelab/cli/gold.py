"""``judgelab gold``: gold items and attention checks, and how they are mixed into raters' queues."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from judgelab.admin._quality import gold_length_gap, import_quality_file, quality_export
from judgelab.cli._util import JudgelabGroup, db_option, echo_json, json_option
from judgelab.labeler.errors import InputError
from judgelab.labeler.exports import EXPORT_FORMATS, table_bytes
from judgelab.labeler.quality import QualitySettings
from judgelab.labeler.store import QualityRole, Store


@click.group(cls=JudgelabGroup)
def gold() -> None:
    """Gold items and attention checks: import them, set how they are mixed in, export their labels."""


def _settings_options(func: click.decorators.FC) -> click.decorators.FC:
    """The quality settings as options (unset ones keep the stored value)."""
    options = [
        click.option("--rate", type=float, default=None,
                     help="Gold and attention items per live item in each queue (0.1 = one per ten)."),
        click.option("--qualify", "qualify_n", type=int, default=None,
                     help="Gold items a rater labels before any live item appears."),
        click.option("--qualify-min", type=float, default=None,
                     help="Share of those a rater must get right to see live items."),
        click.option("--mode", type=click.Choice(["silent", "training"]), default=None,
                     help="silent: the rater is told nothing; training: the expected score after submit."),
        click.option("--min-accuracy", type=float, default=None, help="Warn below this gold accuracy."),
        click.option("--max-attention-failures", type=int, default=None,
                     help="Warn at this many failed attention checks."),
        click.option("--words-per-second", type=float, default=None,
                     help="Reading speed of the too-fast floor (10 = 600 words a minute)."),
        click.option("--seed", type=int, default=None, help="Seeds where quality items go in each queue."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _apply(store: QualityRole, given: dict[str, object]) -> tuple[QualitySettings, dict[int, int]]:
    """Store the given settings over the stored ones; mix quality items in accordingly."""
    changes = {k: v for k, v in given.items() if v is not None}
    settings = dataclasses.replace(store.quality_settings(), **changes)  # type: ignore[arg-type]
    added = store.set_quality_settings(settings) if changes else store.mix_quality()
    return settings, added


def _describe(settings: QualitySettings) -> str:
    return (f"rate {settings.rate:g} per live item, qualification {settings.qualify_n} gold item(s)"
            + (f" ({settings.qualify_min:.0%} right)" if settings.qualify_min else "")
            + f", {settings.mode} mode")


@gold.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@_settings_options
@db_option
@json_option
def gold_import(file: str, db: str | None, as_json: bool, **given: object) -> None:
    """Import gold items and attention checks (id, prompt, text, score or low/high, kind, explanation)."""
    store: QualityRole = Store(db)
    summary = import_quality_file(store, file)
    settings, added = _apply(store, given)
    gap = gold_length_gap(store)
    warning = gap.warning() if gap is not None and gap.telling else None
    if as_json:
        if warning:
            click.echo(f"warning: {warning}", err=True)
        echo_json({"file": file, "added": dict(summary.added), "unchanged": dict(summary.unchanged),
                   "notes": list(summary.notes), "warnings": [*summary.warnings, *([warning] if warning else [])],
                   "settings": dataclasses.asdict(settings), "queued": {str(k): v for k, v in added.items()}})
        return
    click.echo(f"{file}: {summary}")
    click.echo(f"settings: {_describe(settings)}; {sum(added.values())} quality item(s) added to "
               f"{len(added)} rater queue(s)")
    if warning:
        click.echo(f"warning: {warning}", err=True)


@gold.command("settings")
@_settings_options
@db_option
@json_option
def gold_settings(db: str | None, as_json: bool, **given: object) -> None:
    """Show or change how quality items are mixed into queues (mixes them in again)."""
    settings, added = _apply(Store(db), given)
    if as_json:
        echo_json({"settings": dataclasses.asdict(settings), "added": {str(k): v for k, v in added.items()}})
        return
    click.echo(f"settings: {_describe(settings)}; {sum(added.values())} quality item(s) added to "
               f"{len(added)} rater queue(s)")


@gold.command("list")
@db_option
@json_option
def gold_list(db: str | None, as_json: bool) -> None:
    """List the gold items and attention checks with their correct scores."""
    frame = Store(db).quality_items()
    if as_json:
        echo_json(frame.drop(columns=["text", "prompt"]).to_dict(orient="records"))
        return
    for r in frame.itertuples(index=False):
        score = f"{r.low:g}" if r.low == r.high else f"{r.low:g}-{r.high:g}"
        click.echo(f"{r.kind:<9} {r.answer_id:<24} correct {score:<8} {r.n_words} words")


@gold.command("export")
@click.option("--out", required=True, help="CSV, JSONL or Parquet file to write.")
@db_option
@json_option
def gold_export(out: str, db: str | None, as_json: bool) -> None:
    """Export every rater label of a gold item or attention check, marked as such."""
    fmt = Path(out).suffix.lower().lstrip(".")
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"cannot tell the format of {out!r}", fix="name the file .csv, .jsonl or .parquet.")
    frame = quality_export(Store(db))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_bytes(table_bytes(frame, fmt))  # type: ignore[arg-type]  # checked above
    if as_json:
        echo_json({"out": out, "file_format": fmt, "rows": len(frame)})
        return
    click.echo(f"wrote {len(frame)} gold and attention label(s) to {out}")


COMMANDS: list[click.Command] = [gold]
