"""``judgelab position``: position statistics of any judge run with pairwise judgements."""

from __future__ import annotations

import click

from judgelab.calibration.probes import run_position
from judgelab.cli._util import db_option, echo_json, json_option
from judgelab.labeler.store import Store


@click.command()
@click.option("--judge-run", default=None, help="The judge run [default: the newest with pairwise judgements].")
@click.option("--judge-model", default=None, help="The newest run of this judge model instead.")
@json_option
@db_option
def position(judge_run: str | None, judge_model: str | None, as_json: bool, db: str | None) -> None:
    """Consistency, first-shown advantage and accuracy against gold of a run's pairwise judgements.

    Works on the probe's own runs and on imported ones (`judgelab import verdicts`). A reply that
    did not parse makes its pair inconsistent; intervals are clustered by pair.
    """
    result = run_position(Store(db), run_id=judge_run, judge_model=judge_model)
    if as_json:
        echo_json(result.to_json())
        return
    for line in result.lines():
        click.echo(line)


COMMANDS: list[click.Command] = [position]
