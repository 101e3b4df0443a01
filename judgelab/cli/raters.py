"""``judgelab raters``: invite, list, revoke and reissue."""

from __future__ import annotations

import click

from judgelab.admin import invite_link
from judgelab.cli._util import JudgelabGroup, db_option, echo_json, json_option, new_db_option
from labeler.store import Store


@click.group(cls=JudgelabGroup)
def raters() -> None:
    """Invite, list and revoke raters."""


@raters.command("add")
@click.argument("name")
@click.option("--admin", is_flag=True, help="Give this person the admin pages.")
@click.option("--base-url", default=None, help="App address for the link [default: $JUDGELAB_BASE_URL].")
@new_db_option
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



COMMANDS: list[click.Command] = [raters]
