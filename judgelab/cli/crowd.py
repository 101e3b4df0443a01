"""``judgelab crowd``: study links for crowd platforms (Prolific, MTurk, others) and their participants."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

from judgelab.cli._util import JudgelabGroup, db_option, echo_json, json_option
from judgelab.labeler.errors import InputError
from judgelab.labeler.store import PLATFORMS, CrowdStudy, PeopleRole, Store

_BASE_URL_HELP = ("App address for the link [default: $JUDGELAB_BASE_URL, else where `judgelab serve` last "
                  "served this project, else http://localhost:8501].")


def _study_record(study: CrowdStudy, base: str) -> dict[str, Any]:
    return {"name": study.name, "platform": study.platform, "quota": study.quota, "k": study.k,
            "minutes": study.time_limit / 60, "places": study.places, "completion_code": study.completion_code,
            "completion_url": study.completion_url, "closed": study.closed, "link": study.link(base)}


def _base(store: PeopleRole, given: str | None) -> str:
    from judgelab.admin import base_url  # imported here: the admin helpers are not needed for --help

    return given or base_url(store)


def _answer_ids(path: str | None) -> list[str] | None:
    """One answer id per line (blank lines and ``#`` comments skipped)."""
    if path is None:
        return None
    ids = [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines()
           if line.strip() and not line.lstrip().startswith("#")]
    if not ids:
        raise InputError(f"{path} lists no answer ids", fix="write one answer id per line.")
    return ids


@click.group(cls=JudgelabGroup)
def crowd() -> None:
    """Crowd studies: a study link for Prolific, MTurk or others, and its participants."""


@crowd.command("create")
@click.argument("name")
@click.option("--platform", type=click.Choice(sorted(PLATFORMS)), default="prolific", show_default=True,
              help="Which URL parameters carry the participant, study and session ids.")
@click.option("--quota", type=int, required=True, help="Answers per participant.")
@click.option("--minutes", type=float, required=True,
              help="Time limit from consent; past it the unanswered items go back to the queue.")
@click.option("--k", "k", type=int, default=1, show_default=True, help="Raters per answer (exactly k).")
@click.option("--completion-code", default=None, help="The code the platform expects at the end.")
@click.option("--completion-url", default=None, help="Where to send participants at the end (e.g. Prolific's).")
@click.option("--places", type=int, default=None, help="At most this many participants.")
@click.option("--answers", "answers_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A text file with one answer id per line [default: every original answer].")
@click.option("--consent", "consent_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Consent text (Markdown) shown before the first item; stored as the study's setting.")
@click.option("--instructions", "instructions_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Instructions (Markdown) shown with the consent and on the rating page.")
@click.option("--base-url", default=None, help=_BASE_URL_HELP)
@db_option
@json_option
def crowd_create(name: str, platform: str, quota: int, minutes: float, k: int, completion_code: str | None,
                 completion_url: str | None, places: int | None, answers_file: str | None, consent_file: str | None,
                 instructions_file: str | None, base_url: str | None, db: str | None, as_json: bool) -> None:
    """Create a crowd study and print its link (the URL to paste into the platform)."""
    store = Store(db)
    texts = {key: Path(f).read_text(encoding="utf-8") for key, f in
             (("crowd_consent", consent_file), ("crowd_instructions", instructions_file)) if f}
    study = store.create_crowd_study(
        name, platform=platform, quota=quota, time_limit=minutes * 60, k=k,  # type: ignore[arg-type]
        completion_code=completion_code, completion_url=completion_url, places=places,
        answer_ids=_answer_ids(answers_file),
    )
    for key, text in texts.items():
        store.set_setting(f"crowd:{name}", key, text)
    record = _study_record(study, _base(store, base_url))
    if as_json:
        echo_json(record)
        return
    click.echo(f"crowd study {name} ({platform}): {quota} answers each, {minutes:g} min, k = {k}")
    click.echo(f"study link: {record['link']}")


@crowd.command("studies")
@click.option("--base-url", default=None, help=_BASE_URL_HELP)
@db_option
@json_option
def crowd_studies(base_url: str | None, db: str | None, as_json: bool) -> None:
    """List crowd studies with their links."""
    store = Store(db)
    base = _base(store, base_url)
    records = [_study_record(s, base) for s in store.crowd_studies()]
    if as_json:
        echo_json(records)
        return
    for r in records:
        state = "closed" if r["closed"] else "open"
        click.echo(f"{r['name']:<20} {r['platform']:<9} quota {r['quota']:<4} {r['minutes']:g} min  {state}"
                   f"  {r['link']}")


@crowd.command("participants")
@click.argument("name")
@db_option
@json_option
def crowd_participants(name: str, db: str | None, as_json: bool) -> None:
    """Each participant: items, active time, gold and attention results, pay-relevant time."""
    frame = Store(db).crowd_participants(name)
    rows = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
            for row in frame.to_dict(orient="records")]
    if as_json:
        echo_json(rows)
        return
    if not rows:
        click.echo(f"no participant has opened the link of {name} yet")
        return
    click.echo(f"{'participant':<26} {'outcome':<10} {'items':>5} {'done':>5} {'active s':>9} {'pay s':>8}"
               f" {'gold':>6} {'attention':>9}")
    for r in rows:
        gold = f"{r['gold_right']}/{r['gold']}" if r["gold"] else "-"
        att = f"{r['attention_passed']}/{r['attention']}" if r["attention"] else "-"
        pay = "-" if r["pay_seconds"] is None else f"{r['pay_seconds']:.0f}"
        click.echo(f"{r['participant_id']:<26} {r['outcome'] or 'working':<10} {r['items']:>5} {r['done']:>5}"
                   f" {r['active_seconds']:>9.0f} {pay:>8} {gold:>6} {att:>9}")


@crowd.command("close")
@click.argument("name")
@db_option
@json_option
def crowd_close(name: str, db: str | None, as_json: bool) -> None:
    """Close a study: its link makes and resumes nobody (labels stay)."""
    Store(db).close_crowd_study(name)
    if as_json:
        echo_json({"closed": name})
        return
    click.echo(f"closed {name}", err=False)


COMMANDS: list[click.Command] = [crowd]
