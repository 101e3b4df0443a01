"""``judgelab admins``: who may open the admin pages by signing in with the project's provider."""

from __future__ import annotations

import click

from judgelab.admin._signin import AdminList, admin_list, change_admins, parse_duration, set_sign_in
from judgelab.cli._util import JudgelabGroup, db_option, echo_json, json_option
from judgelab.labeler.store import AdminRole, Store


@click.group(cls=JudgelabGroup)
def admins() -> None:
    """The admin list for signing in (e-mails, groups), and how long a sign-in lasts."""


def _show(listed: AdminList, as_json: bool, store: AdminRole | None = None) -> None:
    if as_json:
        payload = listed.as_dict()
        if store is not None:
            frame = store.raters()
            payload["raters"] = [{"name": r.name, "role": r.role, "email": r.email, "active": bool(r.active)}
                                 for r in frame.itertuples(index=False) if isinstance(r.email, str)]
        echo_json(payload)
        return
    click.echo(f"e-mails: {', '.join(listed.emails) or '(none)'}")
    click.echo(f"groups:  {', '.join(listed.groups) or '(none)'} (read from the {listed.group_claim!r} claim)")
    click.echo(f"a sign-in lasts {listed.session_seconds // 60} min")
    if store is not None:
        frame = store.raters()
        for r in frame.itertuples(index=False):
            if isinstance(r.email, str):
                click.echo(f"  {r.name:<24} {r.role:<6} signs in as {r.email}" + ("" if r.active else " (revoked)"))


@admins.command("list")
@db_option
@json_option
def admins_list(db: str | None, as_json: bool) -> None:
    """The admin list, and the raters who sign in by e-mail."""
    store = Store(db)
    _show(admin_list(store), as_json, store)


@admins.command("allow")
@click.argument("emails", nargs=-1)
@click.option("--group", "groups", multiple=True, help="A group (as the provider's group claim names it); repeatable.")
@db_option
@json_option
def admins_allow(emails: tuple[str, ...], groups: tuple[str, ...], db: str | None, as_json: bool) -> None:
    """Let EMAILS (and members of each --group) open the admin pages once signed in."""
    if not emails and not groups:
        raise click.UsageError("give at least one e-mail address or --group")
    _show(change_admins(Store(db), emails=emails, groups=groups), as_json)


@admins.command("remove")
@click.argument("emails", nargs=-1)
@click.option("--group", "groups", multiple=True, help="A group to take off the list; repeatable.")
@db_option
@json_option
def admins_remove(emails: tuple[str, ...], groups: tuple[str, ...], db: str | None, as_json: bool) -> None:
    """Take EMAILS (and each --group) off the admin list; it takes effect on their next page."""
    if not emails and not groups:
        raise click.UsageError("give at least one e-mail address or --group")
    _show(change_admins(Store(db), emails=emails, groups=groups, remove=True), as_json)


@admins.command("settings")
@click.option("--group-claim", default=None, help="The ID token claim that lists a person's groups [default: groups].")
@click.option("--session", default=None, metavar="DURATION",
              help="How long a sign-in lasts before the person signs in again: 30m, 12h, 1d [default: 12h].")
@db_option
@json_option
def admins_settings(group_claim: str | None, session: str | None, db: str | None, as_json: bool) -> None:
    """Set the group claim and how long a sign-in lasts (shows them when given nothing)."""
    seconds = None if session is None else parse_duration(session, option="--session")
    if session is not None and seconds is None:
        raise click.BadParameter("a sign-in cannot last forever; give e.g. 12h", param_hint="--session")
    _show(set_sign_in(Store(db), group_claim=group_claim, session_seconds=seconds), as_json)


COMMANDS: list[click.Command] = [admins]
