"""``judgelab calibrate`` and ``judgelab formats``: the judge read against blind human labels.

``calibrate`` writes the calibration report (markdown, and on request PNG and JSON) for one
judge run; ``formats`` prints the format diagnostics of a run. Both only read the database and
never call the judge. See :mod:`judgelab.calibration.calibrate` for what goes into each figure.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from judgelab.calibration.calibrate import (
    HUMAN_SCORE_RULES,
    CalibrationReport,
    ReportOptions,
    calibrate,
    format_rows,
    jsonable,
    load_calibration_data,
)
from judgelab.calibration.loop import parts_read_line, revalidation_note
from judgelab.calibration.numbers import estimate, num, pct
from judgelab.calibration.report import render_json, turn_lines, write_report
from judgelab.cli._progress import progress_bar
from judgelab.cli._util import db_option, echo_json, json_option, png_option, quiet_option
from judgelab.labeler.store import Store

F = TypeVar("F", bound=Callable[..., Any])


def _seed_option(func: F) -> F:
    return click.option("--seed", type=int, default=0, show_default=True,
                        help="Seed of every bootstrap (the same seed gives the same report).")(func)


def _resamples_option(func: F) -> F:
    return click.option("--resamples", type=click.IntRange(min=10), default=2000, show_default=True,
                        help="Bootstrap resamples per interval.")(func)


def _human_rule_option(func: F) -> F:
    return click.option(
        "--human-rule", type=click.Choice(HUMAN_SCORE_RULES), default="mean", show_default=True,
        help="The human score of an answer: the mean of its raters' current labels, their most frequent "
             "label (ties to the lower), or 'adjudicated': an admin's adjudicated label (Review page) where "
             "the answer has one, else the mean; 'dawid-skene': a model of the raters that estimates each rater's "
             "confusion and the true labels jointly (binary and likert5 rubrics; posterior mean, mode for kappa).",
    )(func)


def _rater_model_lines(report: CalibrationReport) -> list[str]:
    """Each rater's estimated accuracy under the rule ``dawid-skene`` (no lines under the others)."""
    lines = []
    for column, model in report.rater_models.items():
        named = zip((report.rater_names.get(str(r), str(r)) for r in model.raters), model.accuracy(), strict=True)
        lines.append(f"  rater model [{column}]: estimated accuracy " + ", ".join(f"{n} {a:.2f}" for n, a in named))
    return lines + [f"    WARN {w}" for w in report.rater_warnings()]


def _run_option(func: F) -> F:
    return click.option("--judge-run", "run_id", default=None, metavar="ID",
                        help="Judge run to read [default: the newest run with pointwise judgements].")(func)


@click.command("calibrate")
@db_option
@_run_option
@click.option("--compare-run", default=None, metavar="ID",
              help="A run from before a rubric change: read padding and truncation gaps before/after.")
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="Markdown report to write.")
@png_option("Also write the charts as PNG.")
@json_option
@_human_rule_option
@click.option("--interval", type=click.Choice(["raters", "panel"]), default="raters", show_default=True,
              help="Which raters the residual, gap and PPI intervals speak for: raters like these (the "
                   "spread of their leniency included) or this panel only.")
@click.option("--judge-family", default=None, metavar="FAMILY",
              help="The judge's own model family, for a run that records none (imported judgements without a "
                   "judge_family column): the self-preference gap is read against it.")
@click.option("--scale-map", default=None, metavar="linear|J=R,...",
              help="When the judge scored on another scale than the rubric's (a judge spec's 1-10 on a 0-2 "
                   "rubric): how to read its scores on the rubric's scale, stated in the report. 'linear' "
                   "(low to low, high to high) or every judge level's value, e.g. 1=0,2=0,...,10=2.")
@_seed_option
@_resamples_option
@quiet_option
def calibrate_command(
    db: str | None,
    run_id: str | None,
    compare_run: str | None,
    out: str,
    png: str | None,
    as_json: bool,
    human_rule: str,
    interval: str,
    judge_family: str | None,
    scale_map: str | None,
    seed: int,
    resamples: int,
    quiet: bool,
) -> None:
    """Write the calibration report of a judge run.

    Residuals and self-preference gap per family, kappa, alpha, PPI, probe results and format
    diagnostics.

    The report is always written to --out (Markdown). With --json it is also printed on stdout
    as one JSON document, and written beside --out as the same JSON (FILE.json); the files
    written are then named on stderr.
    """
    store = Store(db)
    with progress_bar(quiet, "calibrate") as hook:
        report = calibrate(
            store, run_id, compare_run=compare_run, human_rule=human_rule,  # type: ignore[arg-type]
            seed=seed, n_resamples=resamples, interval=interval, judge_family=judge_family,  # type: ignore[arg-type]
            scale_map=scale_map, progress=hook,
        )
        written = write_report(report, out, png=png, json_path=Path(out).with_suffix(".json") if as_json else None)
    if as_json:
        click.echo(render_json(report))
        for path in written:
            click.echo(f"wrote {path}", err=True)
        return
    banner = report.labels.banner()
    click.echo("".join(f"{line}\n" for line in _warnings(banner, revalidation_note(store, report.run_id))), nl=False)
    click.echo(f"Calibration report for judge run {report.run_id} ({report.judge_model}, family "
               f"{report.judge_family or 'not recorded'})")
    click.echo("\n".join([f"  human score: rule {report.human_rule}; {report.labels.n_adjudicated} answer(s) "
                          "adjudicated", *_rater_model_lines(report)]))
    click.echo(f"  intervals: {_scope_line(report.interval)}")
    click.echo("".join(f"  {line}\n" for line in [report.labels.set_apart_line()] if line), nl=False)
    click.echo(f"  labels read: {parts_read_line(store)}")
    for scale, section in report.residuals.items():
        digits = 1 if scale == "pass" else 2
        for fam, r in section.families.items():
            click.echo(f"  residual [{scale}] {fam}: {estimate(r, digits)} [{_how(r.interval, r.unreliable)}]")
        g = section.gap
        if g is not None:
            bound = "  (upper bound)" if g.upper_bound else ""
            click.echo(f"  self-preference gap [{scale}]: {estimate(g, digits)} [{_how(g.interval, g.unreliable)}]"
                       f"{bound}")
    for k in report.kappas:
        if k.scope == "all":
            x = k.result.kappa.extra
            click.echo(f"  kappa {k.what} ({k.result.weights or 'unweighted'}; humans' majority, a tie goes to the "
                       f"lower category, {k.ties_to_lower} tied): {estimate(k.result.kappa, 3)} "
                       f"[{_how(str(x.get('interval', '')), x.get('unreliable'))}]")
    click.echo("".join(f"  {line}\n" for line in turn_lines(report)), nl=False)  # nothing unless turn = "each"
    if report.probes.comparison is not None:
        click.echo(f"  rubric change: {report.probes.comparison.verdict}")
    for note in report.notes:
        if note != banner:
            click.echo(f"  note: {note}")
    for path in written:
        click.echo(f"wrote {path}")


def _warnings(banner: str | None, stale: str | None) -> list[str]:
    """The lines above the report: simulated labels; a judge version no compare has read (issue 55)."""
    return ([f"WARNING: {banner}"] if banner else []) + ([f"RE-VALIDATE: {stale}"] if stale else [])


def _scope_line(interval: str) -> str:
    if interval == "raters":
        return ("residuals, gap and PPI speak for raters like these (another panel from the same population); "
                "kappa for this panel; --interval panel for this panel only")
    return "this panel of raters only (--interval raters to include the spread of raters' leniency)"


def _how(short: str, unreliable: str | None) -> str:
    """The interval method for a summary line, and the warning when it is not to be trusted or refused."""
    if not unreliable:
        return short
    return f"{short}; NO INTERVAL: {unreliable}" if short.startswith("none") else f"{short}; UNRELIABLE: {unreliable}"


@click.command("formats")
@db_option
@_run_option
@json_option
@click.option("--reference", default="human", show_default=True, metavar="human|FORMAT",
              help="What agreement is measured against: the human score, or another pointwise format "
                   "of the same run (e.g. numeric100).")
@_human_rule_option
@_seed_option
@_resamples_option
@quiet_option
def formats_command(
    db: str | None, run_id: str | None, as_json: bool, reference: str, human_rule: str, seed: int,
    resamples: int, quiet: bool,
) -> None:
    """Format diagnostics of a judge run.

    Distinct values, effective levels D1/D2, tie probability, top-tied share, tau-a/tau-b/Somers'
    D/top-1 against a reference, parse rate, and the four quantities a judge-based pipeline should
    report.
    """
    with progress_bar(quiet, "formats") as hook:
        if hook is not None:
            hook("loading the run", 0, 2)
        data = load_calibration_data(Store(db), run_id)
        if hook is not None:
            hook("format diagnostics", 1, 2)
        opts = ReportOptions(human_rule=human_rule, seed=seed, n_resamples=resamples)  # type: ignore[arg-type]
        rows, skipped = format_rows(data, reference=reference, opts=opts)
    banner = data.label_summary.banner() if reference == "human" else None
    if as_json:
        echo_json(jsonable({
            "simulated_labels": data.label_summary.simulated if reference == "human" else False,
            "run_id": data.run_id,
            "formats": [r.to_dict() for r in rows],
            "skipped": skipped,
        }))
        return
    if banner:
        click.echo(f"WARNING: {banner}")
    click.echo(f"Format diagnostics for judge run {data.run_id}")
    for row in rows:
        d = row.diagnostics
        click.echo("")
        click.echo(f"{row.format} ({row.kind}; score: {row.score_rule})")
        click.echo(f"  scored candidates {d.n_scored} ({d.n} with a reference, on {d.n_prompts} prompts); "
                   f"distinct values {d.distinct_values}; "
                   f"D1 {num(d.d1)}; D2 {num(d.d2)}; tie probability {num(d.tie_probability, 3)}; "
                   f"top score tied on {pct(d.top_tied_share, 0)} of prompts")
        click.echo(f"  against {row.reference}:")
        for name, est in (("tau-a", d.tau_a), ("tau-b", d.tau_b), ("Somers' D", d.somers_d),
                          ("top-1", d.top1)):
            click.echo(f"    {name}: {estimate(est, 3)}")
        click.echo("  what a pipeline should report:")
        for key, value in row.four_quantities().items():
            click.echo(f"    {key}: {value}")
    for reason in skipped:
        click.echo(f"not computed: {reason}")


COMMANDS: list[click.Command] = [calibrate_command, formats_command]
