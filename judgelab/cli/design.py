"""``judgelab design``: plan the hand-label sample, and optionally hand it to the raters.

See :mod:`judgelab.calibration.design` for the statistics; this module only reads options, calls it
and prints.
"""

from __future__ import annotations

import math
from typing import Any

import click
import pandas as pd

from judgelab.calibration.active import (
    DEFAULT_FLOOR,
    ActiveBatch,
    ActiveStatus,
    active_saving,
    active_status,
    apply_active_batch,
    draw_active_batch,
    reassign_active_batch,
)
from judgelab.calibration.design import (
    ALLOCATIONS,
    STRATIFIERS,
    Design,
    DrawnDesign,
    apply_design,
    design_table,
    draw_design,
)
from judgelab.calibration.stats import RaterScope
from judgelab.cli._progress import progress_bar
from judgelab.cli._raters import RaterSelection, raters_option
from judgelab.cli._util import db_option, echo_json, json_option, quiet_option
from judgelab.labeler.errors import InputError
from judgelab.labeler.store import DesignRole, Store


def _parse_strata(text: str) -> list[Any]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in names if s not in STRATIFIERS]
    if bad:
        raise InputError(
            f"unknown stratifier(s) {', '.join(repr(b) for b in bad)}",
            column="--strata",
            fix=f"use a comma-separated subset of {','.join(STRATIFIERS)}.",
        )
    return names


def _parse_raters(raters: RaterSelection, store: DesignRole) -> tuple[int | list[str] | None, int]:
    """``(what apply_design takes, how many raters share the work)``.

    ``all`` is every active non-admin rater; a count plans for that many (who need not be
    invited yet; ``--apply`` takes the least busy); names and patterns are matched against the
    active raters.
    """
    if raters.count is not None:
        return raters.count, raters.count
    frame = store.raters()
    if raters.everyone:
        count = int(((frame["role"] == "rater") & frame["active"]).sum()) if len(frame) else 0
        return None, count
    pool = frame.loc[frame["active"].astype(bool), "name"].astype(str).tolist() if len(frame) else []
    names = raters.pick(pool, what="active rater")
    return names, len(names)


def _pp(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"±{x:.1f} pp"


def _print_design(design: Design, info: dict[str, Any], applied: pd.DataFrame | None) -> None:
    p = design.params
    unit = "tasks" if p["paired"] else "answers"
    click.echo(
        f"Design {design.design_id}: {p['allocation']} allocation, "
        f"{'paired by task' if p['paired'] else 'unpaired'}, "
        f"{int(design.strata['n_units'].sum())} {unit} / {design.n_labels} answers "
        f"from a pool of {int(design.strata['N_answers'].sum())} answers"
    )
    run = info.get("run_id")
    judged = f"{run} ({info.get('n_judged', 0)} answers scored)" if run else (
        "none (every answer is unjudged)")
    others = "family" if len(design.precision.residual_half_width) == 2 else "families"
    click.echo(
        f"Judge run: {judged}; gap = residual on {design.own_family!r} minus the other {others}"
    )
    click.echo("")
    table = design_table(design)
    click.echo(table.to_string(index=False, na_rep=""))
    click.echo("")
    prec = design.precision
    resid = ", ".join(f"{k} {_pp(v)}" for k, v in prec.residual_half_width.items())
    click.echo("Expected precision (95% half-widths, percentage points):")
    click.echo(f"  residuals: {resid}")
    click.echo(f"  self-preference gap: {_pp(prec.gap_half_width)}")
    kse = "n/a" if not math.isfinite(prec.kappa_se) else f"{prec.kappa_se:.3f}"
    click.echo(
        f"  Cohen's kappa SE: {kse} on {prec.n_overlap} double-labelled answers "
        f"(expected kappa {design.model.kappa:.2f})"
    )
    m = design.model
    click.echo(
        f"  planning figures: disagreement {m.disagreement:.2f}, within-task rho {m.rho:.2f} "
        f"({m.source})"
    )
    if design.target is not None:
        t = design.target
        what = (
            f"a gap half-width of ±{t.value_pp:g} pp" if t.kind == "half_width"
            else f"a {t.value_pp:g} pp gap at alpha {t.alpha:g}, power {t.power:g}"
        )
        if t.labels_needed < 0:
            click.echo(f"Target: {what} cannot be reached under this allocation.")
        else:
            pool = int(design.strata["N_answers"].sum())
            fits = "" if t.fits_pool else f"; more than the pool's {pool} answers"
            click.echo(
                f"Target: {what} needs {t.labels_needed} labels ({t.units_needed} {unit}{fits}), "
                f"{t.cost.person_hours:g} person-hours, "
                f"{t.cost.calendar_days} day(s) for {t.cost.raters} rater(s)"
            )
    c = design.cost
    click.echo(
        f"Cost: {c.labels} labels + {c.ratings - c.labels - c.quality_ratings} second labels"
        + (f" + {c.quality_ratings} gold and attention labels" if c.quality_ratings else "")
        + f" = {c.ratings} ratings "
        f"x {c.minutes_per_label:g} min ({c.minutes_source}) = {c.person_hours:g} person-hours; "
        f"{c.raters} rater(s) at {c.hours_per_rater_per_day:g} h/day: "
        f"{c.calendar_days} calendar day(s)"
    )
    for note in design.notes:
        click.echo(f"Note: {note}")
    if applied is not None:
        per = applied.groupby("rater").size()
        click.echo(
            f"Applied: {len(applied)} assignments to {len(per)} raters "
            f"({', '.join(f'{r} {n}' for r, n in per.items())})"
        )


def _payload(drawn: DrawnDesign, applied: pd.DataFrame | None) -> dict[str, Any]:
    out = {**drawn.to_dict(), "applied": None}  # the library's dict: judgelab.design gives the same
    if applied is not None:
        out["applied"] = {
            "assignments": len(applied),
            "per_rater": {str(k): int(v) for k, v in applied.groupby("rater").size().items()},
        }
    return out


def _print_status(status: ActiveStatus) -> None:
    p = status.params
    unit = "tasks (every family's answer)" if p["paired"] else "answers one by one"
    budget = "no budget" if p.get("budget_labels") is None else \
        f"budget {p['budget_hours']:g} person-hours = {p['budget_labels']} labels"
    planned = p.get("planned_labels")
    click.echo(
        f"Active design {status.design_id}: target ±{status.target_half_width:g} pp on the self-preference gap "
        f"(pass verdicts); samples {unit}; {budget}"
    )
    click.echo(
        f"Plan: repeated {p['level']:.0%} intervals of an "
        f"{'O' + chr(39) + 'Brien-Fleming' if p['spending'] == 'obf' else 'Pocock'}-type alpha-spending plan, valid "
        f"whenever the team stops; the pool's {status.pool_answers} judged answers; expected need "
        f"{'beyond the pool' if planned is None else f'about {planned} labels'} (disagreement "
        f"{p['disagreement']:.2f}, {p['disagreement_source']})"
    )
    for row in status.batches.itertuples():
        state = "labelled" if row.complete else f"{row.labelled} of {row.new_labels} labelled"
        click.echo(f"  batch {row.batch}: {row.new_labels} answers drawn to label "
                   f"({row.expected_labels:.0f} expected); {state}")
    if not status.looks.empty:
        click.echo(_looks_table(status.looks))
    click.echo(status.message)
    if math.isfinite(status.labels_needed) and status.labels_needed > 0:
        what = "still needed at the current rate" if status.figures is not None else "the plan expects in all"
        click.echo(f"Labels {what}: about {status.labels_needed:.0f} "
                   f"({status.hours_needed:.1f} person-hours at {status.minutes_per_label:g} min per label)")


def _looks_table(looks: pd.DataFrame) -> str:
    """The looks as a table; a look with no interval yet says so instead of its numbers (issue 52)."""
    shown = looks.round({"estimate": 2, "se": 2, "critical": 3, "boundary": 3, "df": 1, "ci_low": 2,
                         "ci_high": 2, "half_width": 2, "tau": 3}).astype(object)
    if "no_interval" in looks:
        absent = looks["no_interval"].notna().to_numpy()
        shown.loc[absent, ["ci_low", "ci_high"]] = "-"
        shown.loc[absent, "half_width"] = "no interval yet"
        # A critical value of 6e14 is the plan's own (it spends almost nothing early); shown, it reads as a width.
        shown.loc[absent, "critical"] = "-"
        shown = shown.drop(columns="no_interval")
    return str(shown.to_string(index=False))


def _print_batch(batch: ActiveBatch, applied: pd.DataFrame | None) -> None:
    s = batch.summary()
    verb = "Drew" if applied is not None else "Next"
    # The same count as the status's "N answers drawn": answers already in a queue are among them.
    queued = f", {batch.queued} of them already in a rater's queue" if batch.queued else ""
    click.echo(
        f"{verb} batch {batch.batch} of {batch.design_id}: {batch.n_new + batch.queued} answers drawn to label"
        f"{queued} ({s['expected_labels']:g} expected); labelling probabilities "
        f"{s['prob_min']:.3f}-{s['prob_max']:.3f} (floor {s['floor']:.3f}), planned from "
        f"{s['labels_learnt_from']} labelled answers"
    )
    for note in batch.notes:
        click.echo(f"Note: {note}")
    if applied is not None:
        per = applied.groupby("rater").size()
        click.echo(f"Applied: {len(applied)} assignments to {len(per)} raters "
                   f"({', '.join(f'{r} {n}' for r, n in per.items())})")
    else:
        click.echo("Not applied: pass --apply to store the batch and create the raters' assignments.")


def _run_active(store: DesignRole, options: dict[str, Any], rater_arg: int | list[str] | None, n_raters: int,
                do_apply: bool, as_json: bool, *, interval: RaterScope, quiet: bool = True) -> None:
    """``--active``: the open design's status, and its next batch (drawn, and applied with --apply)."""
    batch = None
    applied = None
    reassigned = None
    with progress_bar(quiet, "design --active") as hook:
        step = hook or _no_progress
        step("reading the open design", 0, 3)
        status = active_status(store, interval=interval)
        finished = status is not None and status.state not in ("labelling", "ready")
        if status is None or options["new"] or status.state == "ready" or (finished and options["target_half_width"]):
            step("drawing the next batch", 1, 3)
            batch = draw_active_batch(store, **options)
            if do_apply:
                step("assigning it", 2, 3)
                who: int | list[str] = rater_arg if rater_arg is not None else max(n_raters, 1)
                applied = apply_active_batch(store, batch, who, rng=options["seed"])
                status = active_status(store, interval=interval)
        elif do_apply and status is not None and status.state == "labelling" and status.batches["stranded"].any():
            # The batch's answers whose raters were revoked go to active raters; its draw stays.
            step("reassigning", 2, 3)
            who = rater_arg if rater_arg is not None else max(n_raters, 1)
            reassigned = reassign_active_batch(store, who, rng=options["seed"])
            status = active_status(store, interval=interval)
        elif do_apply:
            assert status is not None
            fix = ("finish labelling the batch first." if status.state == "labelling"
                   else "stop here, or start a new design with --new --target-half-width.")
            raise InputError(status.message, fix=fix)
    if as_json:
        echo_json({
            "status": None if status is None else _status_payload(status),
            "batch": None if batch is None else {**batch.summary(), "design_id": batch.design_id,
                                                 "applied": None if applied is None else len(applied)},
            "reassigned": None if reassigned is None else len(reassigned),
            "saving": _saving_payload(store, status),
        })
        return
    # What this command did first (the batch it drew, the answers it gave away), then where the
    # design stands after it: the status's "0 of 41 labelled" printed before "Drew batch 1" read as
    # a batch nobody had asked for (issue 29).
    if batch is not None:
        _print_batch(batch, applied)
    if reassigned is not None:
        per = reassigned.groupby("rater").size()
        click.echo(f"Reassigned: {len(reassigned)} assignments of answers whose raters were revoked, to "
                   f"{len(per)} raters ({', '.join(f'{r} {n}' for r, n in per.items())})")
    if status is not None:
        click.echo("Status after this command:" if batch is not None or reassigned is not None else "Status:")
        _print_status(status)
        forecast = active_saving(store, status.design_id)
        if forecast is not None:
            click.echo(forecast.headline)


def _no_progress(step: str, done: int, total: int) -> None:
    """No bar (``--quiet``, or stderr is not a terminal)."""


def _saving_payload(store: DesignRole, status: ActiveStatus | None) -> dict[str, Any] | None:
    """The design's predicted saving over simple random sampling, for ``--json``."""
    forecast = None if status is None else active_saving(store, status.design_id)
    if forecast is None:
        return None
    return _finite({"active_ratio": forecast.ratio, "active_ratio_model": forecast.active_ratio,
                    "active_ratio_measured": forecast.measured_ratio, "stratified_ratio": forecast.stratified,
                    "stratified_ratio_model": forecast.stratified_ratio, "no_saving": forecast.no_saving,
                    "labels_seen": forecast.labels_seen, "basis": forecast.basis,
                    "units": "labels of the design over labels of simple random sampling for the same target"})


def _finite(x: Any) -> Any:
    """``x`` with every non-finite float (an infinite critical value, say) as ``None``."""
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _status_payload(status: ActiveStatus) -> dict[str, Any]:
    looks = status.looks.astype(object).where(status.looks.notna(), None).to_dict(orient="records")
    gap = None
    if status.figures is not None and status.figures.gap is not None:
        gap = status.figures.gap.to_dict()
    return _finite({
        "design_id": status.design_id, "state": status.state, "message": status.message,
        "target_half_width": status.target_half_width, "labels_collected": status.labels_collected,
        "labels_needed": None if not math.isfinite(status.labels_needed) else status.labels_needed,
        "hours_needed": None if not math.isfinite(status.hours_needed) else round(status.hours_needed, 2),
        "looks": looks, "gap": gap, "params": status.params,
    })


@click.command("design")
@db_option
@click.option("--n", "n", type=click.IntRange(min=1), default=None,
              help="Label budget: distinct answers to label.")
@click.option("--budget-hours", type=float, default=None,
              help="Budget in person-hours instead of labels (overlap and minutes included).")
@click.option("--strata", default="family,category,judge_bin", show_default=True,
              help=f"Comma-separated stratifiers from {','.join(STRATIFIERS)}.")
@click.option("--allocation", type=click.Choice(ALLOCATIONS), default="gap", show_default=True,
              help="How the budget is spread over strata.")
@click.option("--overlap", type=click.FloatRange(0.0, 1.0), default=0.2, show_default=True,
              help="Share of the sample labelled by two raters (for inter-rater reliability).")
@raters_option("Who shares the labelling (a count plans for raters not yet invited; --apply gives the work "
               "to them).", count=True)
@click.option("--judge-run", default=None,
              help="Judge run whose scores bin the answers [default: the newest].")
@click.option("--minutes-per-label", type=float, default=None,
              help="Minutes per label [default: people's measured median (5 or more timed "
              "labels), else 2.5].")
@click.option("--hours-per-day", type=float, default=2.0, show_default=True,
              help="Labelling hours each rater gives a day.")
@click.option("--target-half-width", type=float, default=None,
              help="Wanted 95% half-width of the gap, percentage points.")
@click.option("--min-gap", type=float, default=None,
              help="Smallest gap worth detecting (alpha 0.05, power 0.8), percentage points.")
@click.option("--paired/--unpaired", default=None,
              help="Sample whole tasks (both families' answers) or single answers [default: paired; "
              "unpaired with --active].")
@click.option("--judge-bins", type=click.IntRange(min=2), default=2, show_default=True,
              help="2 bins the judge's pass verdict; more cut its score at quantiles.")
@click.option("--length-bins", type=click.IntRange(min=1), default=3, show_default=True,
              help="Length bins when length_bin is a stratifier.")
@click.option("--disagreement", type=float, default=None,
              help="Planning judge-human disagreement rate [default: pilot, else 0.2].")
@click.option("--rho", type=float, default=None,
              help="Planning within-task residual correlation [default: pilot, else 0].")
@click.option("--kappa", type=float, default=0.6, show_default=True,
              help="Expected inter-rater kappa.")
@click.option("--variant", default="original", show_default=True,
              help="Answer variant to sample ('all' for every variant).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for the draw.")
@click.option("--active", is_flag=True,
              help="Active labelling: batches drawn where the judge is least trustworthy, until the gap's "
              "interval meets --target-half-width (each run draws the next batch from the labels so far).")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="With --active: labels per batch at most [default: half the expected need, then what the "
              "current rate says the next look needs].")
@click.option("--floor", type=click.FloatRange(0.0, 1.0, min_open=True), default=DEFAULT_FLOOR, show_default=True,
              help="With --active: share of the uniform labelling rate every answer keeps.")
@click.option("--new", "new_active", is_flag=True, help="With --active: start a new design even if one is open.")
@click.option("--interval", type=click.Choice(["raters", "panel"]), default="raters", show_default=True,
              help="With --active: which raters the status's intervals speak for, as in `judgelab calibrate`: "
                   "raters like these (their leniency spread included; refused with 2 raters) or this panel only.")
@click.option("--apply", "do_apply", is_flag=True,
              help="Store the design (or the next active batch) and create the raters' assignments.")
@json_option
@quiet_option
def design(
    db: str | None,
    n: int | None,
    budget_hours: float | None,
    strata: str,
    allocation: str,
    overlap: float,
    raters: RaterSelection,
    judge_run: str | None,
    minutes_per_label: float | None,
    hours_per_day: float,
    target_half_width: float | None,
    min_gap: float | None,
    paired: bool,
    judge_bins: int,
    length_bins: int,
    disagreement: float | None,
    rho: float | None,
    kappa: float,
    variant: str,
    seed: int,
    active: bool,
    batch_size: int | None,
    floor: float,
    new_active: bool,
    interval: str,
    do_apply: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """Plan the hand-label sample: strata, allocation, precision, hours; --apply assigns it.

    Prints the per-stratum table (pool counts, sampled counts, inclusion probabilities and
    weights), the expected precision of each family's residual and of the self-preference gap,
    the kappa standard error on the overlap, the labels a target needs, and the person-hours and
    calendar days.

    With --active the design is drawn in batches instead: each run prints where the open design
    stands (the gap's interval after every labelled batch, the labels the current rate says are
    still needed, and whether the team may stop) and draws the next batch, with probabilities
    recomputed from the labels so far; --apply stores it and assigns it.
    """
    if active:
        if n is not None or min_gap is not None:
            raise click.UsageError("--active takes --target-half-width (and optionally --budget-hours), not "
                                   "--n or --min-gap")
        store = Store(db)
        rater_arg, n_raters = _parse_raters(raters, store)
        options = {
            "target_half_width": target_half_width, "budget_hours": budget_hours, "batch_size": batch_size,
            "run_id": judge_run, "variant": None if variant == "all" else variant,
            "paired": bool(paired) if paired is not None else False, "overlap": overlap, "floor": floor,
            "disagreement": disagreement, "minutes_per_label": minutes_per_label, "new": new_active, "seed": seed,
        }
        _run_active(store, options, rater_arg, n_raters, do_apply, as_json,
                    interval="panel" if interval == "panel" else "raters", quiet=quiet)
        return
    if (n is None) == (budget_hours is None):
        raise click.UsageError("give exactly one of --n or --budget-hours")
    if target_half_width is not None and min_gap is not None:
        raise click.UsageError("give --target-half-width or --min-gap, not both")
    store = Store(db)
    stratifiers = _parse_strata(strata)
    rater_arg, n_raters = _parse_raters(raters, store)
    with progress_bar(quiet, "design") as hook:
        step = hook or _no_progress
        step("drawing the sample", 0, 2 if do_apply else 1)
        drawn = draw_design(
            store,
            n=n,
            budget_hours=budget_hours,
            run_id=judge_run,
            variant=None if variant == "all" else variant,
            minutes_per_label=minutes_per_label,
            allocation=allocation,  # type: ignore[arg-type]  # click.Choice checked it
            strata=stratifiers,
            paired=True if paired is None else paired,
            overlap=overlap,
            judge_bins=judge_bins,
            length_bins=length_bins,
            disagreement=disagreement,
            rho=rho,
            kappa=kappa,
            raters=n_raters,
            hours_per_rater_per_day=hours_per_day,
            target_half_width=target_half_width,
            min_gap=min_gap,
            seed=seed,
        )
        plan, info = drawn.design, drawn.pool_info
        applied = None
        if do_apply:
            step("assigning it", 1, 2)
            who: int | list[str] = rater_arg if rater_arg is not None else max(n_raters, 1)
            applied = apply_design(store, plan, who, rng=seed, rubric=drawn.judge_rubric)
    if as_json:
        echo_json(_payload(drawn, applied))
    else:
        _print_design(plan, info, applied)


COMMANDS: list[click.Command] = [design]
