"""``judgelab panel``: several judge runs read side by side against the same human labels.

Prints the judge x answer-family residual matrix, each judge's self- and family-bias (OLS with
task-clustered intervals) beside its simple gap, the two juries and each judge's agreement with
people. See :mod:`judgelab.calibration.panel` for what goes into each figure. Only reads the database.
"""

from __future__ import annotations

from pathlib import Path

import click

from judgelab.calibration.panel import load_panel, panel_analysis, panel_json, render_markdown, write_png
from judgelab.cli._progress import progress_bar
from judgelab.cli._util import db_option, echo_json, json_option, png_option, quiet_option
from judgelab.labeler.store import Store


@click.command("panel")
@db_option
@click.option("--judge-run", "run_ids", multiple=True, metavar="ID",
              help="A judge run of the panel (repeat it) [default: every run with pointwise judgements].")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Also write the markdown here.")
@png_option("Write the residual matrix as a heatmap PNG.")
@json_option
@click.option("--no-kappa", is_flag=True, help="Skip kappa (its jackknife is the slowest part).")
@quiet_option
def panel_command(db: str | None, run_ids: tuple[str, ...], out: str | None, png: str | None, as_json: bool,
                  no_kappa: bool, quiet: bool) -> None:
    """Read a panel of judges against the same human labels.

    Residual matrix (judge x answer family), each judge's self-bias and family-bias controlled for
    the human score, the juries (mean of all judges; mean of the judges of other families) and
    which judge agrees with people best.
    """
    with progress_bar(quiet, "panel") as hook:
        if hook is not None:
            hook("loading the runs", 0, 2)
        data = load_panel(Store(db), list(run_ids))
        if hook is not None:
            hook("residuals, biases, juries" + ("" if no_kappa else ", kappa"), 1, 2)
        try:
            result = panel_analysis(data.frame, scale=data.scale, kappa=not no_kappa)
        except ValueError as exc:  # the loader keeps this from happening; say it plainly if it does
            raise click.ClickException(str(exc)) from exc
    text = render_markdown(result, data)
    if out:
        Path(out).write_text(text, encoding="utf-8")
    if png:
        write_png(result, png)
    if as_json:
        echo_json(panel_json(result, data))
        return
    click.echo(text)
    for path in (out, png):
        if path:
            click.echo(f"wrote {path}")


COMMANDS: list[click.Command] = [panel_command]
