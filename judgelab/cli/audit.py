"""``judgelab audit``: the audit trail of admin actions, newest last (issue 57 point 3)."""

from __future__ import annotations

import click

from judgelab.admin._audit import audit_records, describe
from judgelab.cli._util import db_option, echo_json, json_option
from judgelab.labeler.store import AUDIT_ACTIONS, Store


@click.command()
@click.option("--action", type=click.Choice(list(AUDIT_ACTIONS)), default=None, help="Only entries of this action.")
@click.option("--actor", default=None, metavar="WHO", help="Only entries by this actor (e.g. cli:alice, admin:bob).")
@db_option
@json_option
def audit(action: str | None, actor: str | None, db: str | None, as_json: bool) -> None:
    """The audit trail: who imported, assigned, revoked, adjudicated, paused, exported or changed settings.

    One line per admin action, oldest first, with when it was done and by whom (``cli:<os user>`` for a
    command, ``admin:<name>`` for an admin page). ``judgelab export audit_trail`` writes it as a file.
    """
    records = audit_records(Store(db), action=action, actor=actor)
    if as_json:
        echo_json(records)
        return
    if not records:
        click.echo("no audit entries" + (" match" if action or actor else " yet"), err=True)
        return
    for r in records:
        when = r["done_at"].replace("T", " ")[:19]
        click.echo(f"{r['entry_id']:>5}  {when}  {r['actor']:<20} {r['action']:<14} {r['target']}"
                   + (f"  ({describe(r['detail'])})" if r["detail"] else ""))


COMMANDS: list[click.Command] = [audit]
