"""``judgelab raters``: invite, list, revoke and reissue."""

from __future__ import annotations

import dataclasses
import math

import click

from judgelab.admin import invite_rater, reissue_link
from judgelab.admin._quality import quality_table, rater_quality
from judgelab.cli._util import JudgelabGroup, db_option, echo_json, json_option, new_db_option
from labeler.store import Store

_BASE_URL_HELP = ("App address for the link [default: $JUDGELAB_BASE_URL, else where `judgelab serve` last "
                  "served this project, else http://localhost:8501].")


@click.group(cls=JudgelabGroup)
def raters() -> None:
    """Invite, list and revoke raters; their quality on gold items; pause and resume them."""


@raters.command("add")
@click.argument("name")
@click.option("--admin", is_flag=True, help="Give this person the admin pages.")
@click.option("--base-url", default=None, help=_BASE_URL_HELP)
@new_db_option
@json_option
def raters_add(name: str, admin: bool, base_url: str | None, db: str | None, as_json: bool) -> None:
    """Invite a rater and print their link (shown once; only a hash is stored)."""
    invite = invite_rater(Store(db), name, admin=admin, base=base_url)
    if as_json:
        echo_json({"name": invite.rater.name, "role": invite.rater.role, "link": invite.link})
        return
    click.echo(f"{invite.rater.name} ({invite.rater.role}): {invite.link}")


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
@json_option
def raters_revoke(name: str, db: str | None, as_json: bool) -> None:
    """Revoke a rater's link; their labels stay."""
    Store(db).revoke_rater(name)
    _done({"name": name, "state": "revoked"}, f"revoked {name}", as_json)


@raters.command("reissue")
@click.argument("name")
@click.option("--base-url", default=None, help=_BASE_URL_HELP)
@db_option
@json_option
def raters_reissue(name: str, base_url: str | None, db: str | None, as_json: bool) -> None:
    """Give a rater a new link (the old one stops working)."""
    link = reissue_link(Store(db), name, base=base_url)
    _done({"name": name, "link": link}, f"{name}: {link}", as_json)


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
