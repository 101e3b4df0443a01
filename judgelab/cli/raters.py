"""``judgelab raters``: invite, list, revoke and reissue."""

from __future__ import annotations

import dataclasses
import math

import click
import pandas as pd

from judgelab.admin import invite_rater, reissue_link
from judgelab.admin._quality import quality_table, rater_quality
from judgelab.cli._util import JudgelabGroup, db_option, echo_json, json_option, new_db_option
from judgelab.labeler.store import Store

_BASE_URL_HELP = ("App address for the link [default: $JUDGELAB_BASE_URL, else where `judgelab serve` last "
                  "served this project, else http://localhost:8501].")


@click.group(cls=JudgelabGroup)
def raters() -> None:
    """Invite, list and revoke raters; their quality on gold items; pause and resume them."""


_EXPIRES_HELP = ("When the link stops working: 12h, 7d, 2w, or never [default: 7d for an admin's link, never for a "
                 "rater's].")


def _expires_note(expires_at: object) -> None:
    if expires_at is not None:
        click.echo(f"the link expires {expires_at:%Y-%m-%d %H:%M} UTC (--expires)", err=True)


@raters.command("add")
@click.argument("name")
@click.option("--admin", is_flag=True, help="Give this person the admin pages.")
@click.option("--expires", default=None, metavar="DURATION", help=_EXPIRES_HELP)
@click.option("--email", default=None, help="Let this rater also sign in with the project's provider as this address.")
@click.option("--base-url", default=None, help=_BASE_URL_HELP)
@new_db_option
@json_option
def raters_add(name: str, admin: bool, expires: str | None, email: str | None, base_url: str | None,
               db: str | None, as_json: bool) -> None:
    """Invite a rater and print their link (shown once; only a hash is stored)."""
    store = Store(db)
    invite = invite_rater(store, name, admin=admin, base=base_url, expires=expires)
    if email:
        store.set_rater_email(invite.rater.name, email)
    if as_json:
        echo_json({"name": invite.rater.name, "role": invite.rater.role, "link": invite.link,
                   "expires_at": None if invite.expires_at is None else f"{invite.expires_at:%Y-%m-%dT%H:%M:%S}Z",
                   "email": email.strip().lower() if email else None})
        return
    click.echo(f"{invite.rater.name} ({invite.rater.role}): {invite.link}")
    _expires_note(invite.expires_at)


@raters.command("list")
@db_option
@json_option
def raters_list(db: str | None, as_json: bool) -> None:
    """List raters (never their tokens)."""
    frame = Store(db).raters()
    if as_json:
        # A rater with no e-mail or expiry: null, not NaN (which is not JSON) or "NaT".
        echo_json(frame.astype(object).where(frame.notna(), None).to_dict(orient="records"))
        return
    for r in frame.itertuples(index=False):
        state = "active" if r.active else "revoked"
        sim = " (simulated)" if r.simulated else ""
        until = "" if pd.isna(r.expires_at) else f"  link expires {r.expires_at:%Y-%m-%d %H:%M} UTC"
        email = f"  signs in as {r.email}" if isinstance(r.email, str) else ""
        click.echo(f"{r.rater_id:>4}  {r.name:<24} {r.role:<6} {state}{sim}{until}{email}")


@raters.command("revoke")
@click.argument("name")
@db_option
@json_option
def raters_revoke(name: str, db: str | None, as_json: bool) -> None:
    """Revoke a rater's link; their labels stay."""
    Store(db).revoke_rater(name)
    _done({"name": name, "state": "revoked"}, f"revoked {name}", as_json)


@raters.command("reissue")
@click.argument("name")
@click.option("--expires", default=None, metavar="DURATION", help=_EXPIRES_HELP)
@click.option("--base-url", default=None, help=_BASE_URL_HELP)
@db_option
@json_option
def raters_reissue(name: str, expires: str | None, base_url: str | None, db: str | None, as_json: bool) -> None:
    """Give a rater a new link (the old one stops working)."""
    store = Store(db)
    link = reissue_link(store, name, base=base_url, expires=expires)
    until = store.raters().set_index("name").loc[name, "expires_at"]
    until = None if pd.isna(until) else until
    if as_json:
        echo_json({"name": name, "link": link,
                   "expires_at": None if until is None else f"{until:%Y-%m-%dT%H:%M:%S}Z"})
        return
    click.echo(f"{name}: {link}")
    _expires_note(until)


@raters.command("email")
@click.argument("name")
@click.argument("email", required=False)
@click.option("--clear", is_flag=True, help="Take the address away (the rater then uses their link only).")
@db_option
@json_option
def raters_email(name: str, email: str | None, clear: bool, db: str | None, as_json: bool) -> None:
    """Let rater NAME sign in with the project's provider as EMAIL, instead of a link."""
    if not clear and not email:
        raise click.UsageError("give the EMAIL to sign in with, or --clear")
    Store(db).set_rater_email(name, None if clear else email)
    if as_json:
        echo_json({"rater": name, "email": None if clear else email.strip().lower() if email else None})
        return
    click.echo(f"{name} signs in with their link only" if clear else f"{name} may sign in as {email}")


@raters.command("quality")
@db_option
@json_option
def raters_quality(db: str | None, as_json: bool) -> None:
    """Each rater's accuracy on gold (95% Wilson interval), attention failures, too-fast labels, state."""
    report = rater_quality(Store(db))
    table = quality_table(report)
    if as_json:
        echo_json({"settings": dataclasses.asdict(report.settings),
                   "method": "Wilson score interval (scipy.stats.binomtest), 95%",
                   "raters": [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
                              for row in table.to_dict(orient="records")]})
        return
    click.echo(f"{report.gold_items} gold item(s), {report.attention_items} attention check(s); accuracy is the "
               "share of gold labels in the correct range, 95% Wilson interval (scipy.stats.binomtest)")
    for r in report.raters:
        acc = ("no gold labels" if r.accuracy.n == 0 else
               f"gold {r.accuracy.estimate:.0%} [{r.accuracy.ci_low:.0%}, {r.accuracy.ci_high:.0%}] n={r.accuracy.n}")
        fast = f"too fast {r.fast}/{r.timed}" if r.timed else "no timed labels"
        click.echo(f"{r.rater:<24} {r.state:<13} {acc:<34} attention failed {r.attention_failed}/{r.attention}"
                   f"  {fast}" + ("  labels excluded" if r.excluded else ""))
        for warning in r.warnings:
            click.echo(f"    WARN {warning}")


@raters.command("pause")
@click.argument("name")
@click.option("--reason", default="", help="Why (shown to admins, not to the rater).")
@click.option("--exclude-labels", is_flag=True, help="Leave this rater's labels out of calibration while paused.")
@db_option
@json_option
def raters_pause(name: str, reason: str, exclude_labels: bool, db: str | None, as_json: bool) -> None:
    """Hold back a rater's live items (nothing is deleted; their page says they are paused)."""
    Store(db).pause_rater(name, reason=reason, exclude_labels=exclude_labels)
    _done({"name": name, "state": "paused", "reason": reason, "labels_excluded": exclude_labels},
          f"paused {name}" + ("; their labels are left out of calibration" if exclude_labels else ""), as_json)


@raters.command("resume")
@click.argument("name")
@db_option
@json_option
def raters_resume(name: str, db: str | None, as_json: bool) -> None:
    """Give a paused rater their live items back (their labels count again)."""
    Store(db).resume_rater(name)
    _done({"name": name, "state": "active"}, f"resumed {name}", as_json)


def _done(payload: dict[str, object], line: str, as_json: bool) -> None:
    """What a change to one rater did: ``payload`` with ``--json``, else ``line``."""
    if as_json:
        echo_json(payload)
    else:
        click.echo(line)


COMMANDS: list[click.Command] = [raters]
