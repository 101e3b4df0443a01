"""``judgelab raters``: invite, list, revoke and reissue."""

from __future__ import annotations

import click

from judgelab.admin import invite_rater, reissue_link
from judgelab.cli._util import JudgelabGroup, db_option, echo_json, json_option, new_db_option
from labeler.store import Store

_BASE_URL_HELP = ("App address for the link [default: $JUDGELAB_BASE_URL, else where `judgelab serve` last "
                  "served this project, else http://localhost:8501].")


@click.group(cls=JudgelabGroup)
def raters() -> None:
    """Invite, list and revoke raters."""


@raters.command("add")
@click.argument("name")
@click.option("--admin", is_flag=True, help="Give this person the admin pages.")
@click.option("--base-url", default=None, help=_BASE_URL_HELP)
@new_db_option
def raters_add(name: str, admin: bool, base_url: str | None, db: str | None) -> None:
    """Invite a rater and print their link (shown once; only a hash is stored)."""
    invite = invite_rater(Store(db), name, admin=admin, base=base_url)
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
def raters_revoke(name: str, db: str | None) -> None:
    """Revoke a rater's link; their labels stay."""
    Store(db).revoke_rater(name)
    click.echo(f"revoked {name}")


@raters.command("reissue")
@click.argument("name")
@click.option("--base-url", default=None, help=_BASE_URL_HELP)
@db_option
def raters_reissue(name: str, base_url: str | None, db: str | None) -> None:
    """Give a rater a new link (the old one stops working)."""
    click.echo(f"{name}: {reissue_link(Store(db), name, base=base_url)}")



COMMANDS: list[click.Command] = [raters]
