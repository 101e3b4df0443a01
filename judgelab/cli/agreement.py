"""``judgelab agreement``: a judge's pairwise verdicts against human pair labels, as MT-Bench counts it."""

from __future__ import annotations

import click

from calibration.vote_agreement import vote_agreement
from judgelab.cli._util import db_option, echo_json, json_option
from labeler.errors import InputError
from labeler.exports import export_table
from labeler.store import Store


@click.command()
@click.option("--judge-model", required=True, help="The judge whose pairwise judgements are compared.")
@click.option("--raters", "rater_prefix", default=None,
              help="Only raters whose name starts with this (MT-Bench: expert) [default: every rater].")
@json_option
@db_option
def agreement(judge_model: str, rater_prefix: str | None, as_json: bool, db: str | None) -> None:
    """Agreement of a judge's pairwise verdicts with human pair labels, per turn, with and without ties.

    Counted as FastChat's compute_agreement.py counts it: the judge's two shown orders make one
    vote (a tie unless they agree); each human vote on an item the judge voted on is one
    comparison; human-human compares every two votes on one item; "without tie" drops every
    comparison with a tie. Import MT-Bench's files with `judgelab import ... --from mt-bench`.
    """
    store = Store(db)
    result = vote_agreement(export_table(store, "judgements"), export_table(store, "pair_labels"),
                            export_table(store, "answers"), judge_model=judge_model, rater_prefix=rater_prefix)
    if not result.judge_items or not result.human_votes:
        raise InputError(f"no pairwise judgements by {judge_model!r} and human pair labels to compare"
                         + (f" (raters starting {rater_prefix!r})" if rater_prefix else ""),
                         fix="import both first (e.g. --from mt-bench), and check --judge-model and --raters.")
    if as_json:
        echo_json({"judge_model": judge_model, "raters": rater_prefix, "judge_items": result.judge_items,
                   "unparsed_items": result.unparsed_items, "human_votes": result.human_votes,
                   "rows": [r.to_json() for r in result.rows]})
        return
    click.echo(f"judge {judge_model}: {result.judge_items} items with a verdict in both orders"
               + (f", {result.unparsed_items} left out (a reply without a verdict)" if result.unparsed_items else "")
               + f"; {result.human_votes} human votes")
    for row in result.rows:
        click.echo(row.line())


COMMANDS: list[click.Command] = [agreement]
