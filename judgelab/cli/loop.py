"""``judgelab compare`` and ``judgelab disagreements``: the judge loop against the people.

``compare`` reads two judge runs on the same labelled answers, paired; ``disagreements`` lists the
answers where a judge run and the people part most. Both read the tuning part of the project's
held-out split by default; ``--held-out`` reads the held-out part, and each such look is recorded.
See :mod:`judgelab.calibration.loop`.
"""

from __future__ import annotations

import click

from judgelab.calibration.loop import (
    HELD_OUT,
    TUNING,
    compare_runs,
    disagreements,
    render_compare,
    render_disagreements,
)
from judgelab.cli._progress import progress_bar
from judgelab.cli._util import db_option, echo_json, json_option, quiet_option
from judgelab.labeler.store import Store


def _part(held_out: bool, every: bool) -> str:
    if held_out and every:
        raise click.UsageError("--held-out and --all-labels cannot be given together")
    return HELD_OUT if held_out else "all" if every else TUNING


@click.command("compare")
@db_option
@click.option("--judge-run", "runs", multiple=True, required=True, metavar="ID",
              help="Give it twice: version A (the old judge), then version B (the new one).")
@click.option("--held-out", is_flag=True,
              help="Read the held-out part of the labels instead of the tuning part; the look is recorded and "
                   "the intervals widened for every held-out look so far (Bonferroni).")
@click.option("--all-labels", "every", is_flag=True,
              help="Read every labelled answer, both parts (tuning and held-out) together.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the paired bootstrap (and of the split, when the project has none yet).")
@click.option("--resamples", type=click.IntRange(min=10), default=2000, show_default=True,
              help="Bootstrap resamples per interval.")
@json_option
@quiet_option
def compare_command(db: str | None, runs: tuple[str, ...], held_out: bool, every: bool, seed: int, resamples: int,
                    as_json: bool, quiet: bool) -> None:
    """Compare two judge versions on the same labelled answers, paired.

    Change in pass/fail agreement (with McNemar's exact test), kappa, the absolute residual per
    family and the absolute self-preference gap, each B minus A with a paired task-clustered bootstrap interval. Says
    "B is better" only when an interval excludes zero on B's side.
    """
    if len(runs) != 2:
        raise click.UsageError(f"give --judge-run exactly twice (A, then B); got {len(runs)}")
    with progress_bar(quiet, "compare: paired bootstrap"):
        report = compare_runs(Store(db), runs[0], runs[1], part=_part(held_out, every),  # type: ignore[arg-type]
                              seed=seed, n_resamples=resamples)
    if as_json:
        echo_json(report.to_dict())
        return
    click.echo(render_compare(report))


@click.command("disagreements")
@db_option
@click.option("--judge-run", "run_id", default=None, metavar="ID",
              help="Judge run to read [default: the newest run that scored the pool].")
@click.option("--held-out", is_flag=True,
              help="Read the held-out part of the labels instead of the tuning part (the look is recorded).")
@click.option("--all-labels", "every", is_flag=True, help="Read every labelled answer, both parts together.")
@click.option("--unblind", is_flag=True, help="Show each answer's family, model and variant (blind by default).")
@click.option("--per-turn", is_flag=True,
              help="Rank each (conversation, assistant turn) by the judge's per-turn score against the raters' "
                   "turn scores (rubric turn = \"each\").")
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True,
              help="How many answers the text output lists (--json and --csv hold all).")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None,
              help="Also write every answer's row to this CSV file.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the held-out split, when the project has none yet.")
@json_option
@quiet_option
def disagreements_command(db: str | None, run_id: str | None, held_out: bool, every: bool, unblind: bool,
                          per_turn: bool, top: int, csv_path: str | None, seed: int, as_json: bool,
                          quiet: bool) -> None:
    """The answers where a judge run and the people part most, and its confusion matrices.

    Ranked by the absolute difference of judge and people (the raters' mean), each with the
    judge's reply and the raters' labels and comments; blind (no family, model or variant) unless
    --unblind. The pass/fail and per-level confusion matrices carry the true pass and true fail
    rates with exact intervals. --per-turn ranks the turns of conversations instead (the text
    and --csv list turns; --json adds "turns" to the answers).
    """
    with progress_bar(quiet, "disagreements"):
        result = disagreements(Store(db), run_id, part=_part(held_out, every),  # type: ignore[arg-type]
                               unblind=unblind, seed=seed, per_turn=per_turn)
    if csv_path:
        result.csv_frame().to_csv(csv_path, index=False)
    if as_json:
        echo_json(result.to_dict())
        return
    click.echo(render_disagreements(result, top=top))
    if csv_path:
        click.echo(f"wrote {csv_path}")


COMMANDS: list[click.Command] = [compare_command, disagreements_command]
