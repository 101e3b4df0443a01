"""``judgelab agreement``: a judge's pairwise verdicts against human pair labels, as MT-Bench counts it."""

from __future__ import annotations

import click

from judgelab.calibration.vote_agreement import vote_agreement
from judgelab.cli._raters import RaterSelection, raters_option
from judgelab.cli._util import db_option, echo_json, json_option
from judgelab.labeler.errors import InputError
from judgelab.labeler.exports import export_table
from judgelab.labeler.store import Store


@click.command()
@click.option("--judge-model", required=True, help="The judge whose pairwise judgements are compared.")
@raters_option("Only these raters' pair labels (MT-Bench's experts: 'expert*').")
@json_option
@db_option
def agreement(judge_model: str, raters: RaterSelection, as_json: bool, db: str | None) -> None:
    """Agreement of a judge's pairwise verdicts with human pair labels, per turn, with and without ties.

    Counted as FastChat's compute_agreement.py counts it: the judge's two shown orders make one
    vote (a tie unless they agree); each human vote on an item the judge voted on is one
    comparison; human-human compares every two votes on one item; "without tie" drops every
    comparison with a tie. Import MT-Bench's files with `judgelab import ... --from mt-bench`.
    """
    store = Store(db)
    labels = export_table(store, "pair_labels")
    if not raters.everyone and len(labels):
        # Matched against the raters of the pair labels: imported ones (MT-Bench's) are not invited raters.
        chosen = raters.pick(list(dict.fromkeys(labels["rater"].astype(str))), what="rater of a pair label",
                              fix="see the rater column of `judgelab export pair_labels`.")
        labels = labels[labels["rater"].astype(str).isin(chosen)]
    result = vote_agreement(export_table(store, "judgements"), labels,
                            export_table(store, "answers"), judge_model=judge_model)
    if not result.judge_items or not result.human_votes:
        raise InputError(f"no pairwise judgements by {judge_model!r} and human pair labels to compare"
                         + (f" (--raters {raters.text})" if not raters.everyone else ""),
                         fix="import both first (e.g. --from mt-bench), and check --judge-model and --raters.")
    if as_json:
        echo_json({"judge_model": judge_model, "raters": raters.text, "judge_items": result.judge_items,
                   "unparsed_items": result.unparsed_items, "human_votes": result.human_votes,
                   "rows": [r.to_json() for r in result.rows]})
        return
    click.echo(f"judge {judge_model}: {result.judge_items} items with a verdict in both orders"
               + (f", {result.unparsed_items} left out (a reply without a verdict)" if result.unparsed_items else "")
               + f"; {result.human_votes} human votes")
    for row in result.rows:
        click.echo(row.line())


COMMANDS: list[click.Command] = [agreement]
