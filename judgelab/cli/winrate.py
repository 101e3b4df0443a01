"""``judgelab winrate``: each model's win rate against another from pairwise judgements (a leaderboard)."""

from __future__ import annotations

import click

from judgelab.calibration.leaderboard import win_rates
from judgelab.cli._progress import progress_bar
from judgelab.cli._util import db_option, echo_json, json_option, quiet_option
from judgelab.labeler.errors import InputError
from judgelab.labeler.exports import export_table
from judgelab.labeler.store import ImportExportRole, Store


@click.command()
@click.option("--judge-model", default=None, help="Only this judge's judgements [default: each judge on its own].")
@click.option("--baseline", default=None, help="Rank every model against this model's answers (AlpacaEval's "
              "baseline) [default: each judgement's answer_id model against its answer_b_id model].")
@click.option("--length-controlled", is_flag=True,
              help="Also give the length-controlled win rate in percent: AlpacaEval's GLM refitted on the imported "
              "rows only, each instruction's difficulty learnt across the models judged against the same baseline "
              "(5 or more), else a length-only fit; each figure names its estimand (neither is the published LC).")
@click.option("--resamples", default=1000, show_default=True, type=click.IntRange(min=1),
              help="Bootstrap resamples for the length-controlled interval.")
@click.option("--seed", default=0, show_default=True, help="Seed of that bootstrap.")
@json_option
@quiet_option
@db_option
def winrate(judge_model: str | None, baseline: str | None, length_controlled: bool, resamples: int, seed: int,
            as_json: bool, quiet: bool, db: str | None) -> None:
    """Win rate of each model against another, as AlpacaEval reports it, from pairwise judgements.

    A judgement's score about an answer (+1 better, -1 worse, 0 a tie, fractions kept) is a win of
    (score + 1) / 2; judgements of the same two answers (both orders) are averaged first; replies
    without a verdict are left out and counted. Import e.g. AlpacaEval's annotations with
    `judgelab import answers|judgements annotations.json --from alpaca-eval`.
    """
    store: ImportExportRole = Store(db)
    with progress_bar(quiet, "winrate"):
        rows = win_rates(export_table(store, "judgements"), export_table(store, "answers"), judge_model=judge_model,
                         baseline=baseline, length_controlled=length_controlled, n_resamples=resamples, rng=seed)
    if not rows:
        raise InputError("no pairwise judgements between answers of known models"
                         + (f" judged by {judge_model!r}" if judge_model else "")
                         + (f" against {baseline!r}" if baseline else ""),
                         fix="import answers and pairwise judgements first (e.g. --from alpaca-eval), "
                             "and check --judge-model and --baseline.")
    if as_json:
        echo_json([r.to_json() for r in rows])
        return
    for row in rows:
        click.echo(row.line())


COMMANDS: list[click.Command] = [winrate]
