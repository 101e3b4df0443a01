"""The analyses of the command line as functions of a project or of DataFrames, with typed results.

:func:`calibrate`, :func:`panel` and :func:`design` take a :class:`~judgelab.Project` (from
:func:`~judgelab.open_project`) or the answers, labels and judgements DataFrames in the
documented file schemas with ``rubric=``. Each calls the function its command calls
(``judgelab calibrate``, ``panel``, ``design``) on the project's store, and wraps the result in
a frozen dataclass: ``to_dict()`` is the command's ``--json`` output, ``to_frame()`` the table
a reader wants first, ``tables()`` every table, ``chart()`` an Altair chart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from judgelab._project import Project, RubricLike, as_project
from judgelab.calibration.calibrate import CalibrationReport, HumanScoreRule
from judgelab.calibration.calibrate import calibrate as _calibrate
from judgelab.calibration.design import (
    ALLOCATIONS,
    STRATIFIERS,
    Allocation,
    DrawnDesign,
    Stratifier,
    design_table,
    draw_design,
)
from judgelab.calibration.panel import (
    PanelData,
    PanelResult,
    heatmap,
    judges_table,
    load_panel,
    panel_analysis,
    panel_json,
)
from judgelab.calibration.probes import RunPosition, run_position
from judgelab.calibration.report import combined_chart, gap_table, render_json, report_tables, residual_table
from judgelab.calibration.stats import RaterScope
from judgelab.labeler.errors import InputError

if TYPE_CHECKING:
    import altair as alt


@dataclass(frozen=True, repr=False)
class Calibration:
    """A judge run read against blind human labels: what ``judgelab calibrate`` reports.

    Attributes:
        report: The full report model (:class:`judgelab.calibration.calibrate.CalibrationReport`): every
            section with its intervals, ``n``, method and units.
    """

    report: CalibrationReport

    def to_dict(self) -> dict[str, Any]:
        """The report as ``judgelab calibrate --json`` prints it (the same JSON, parsed)."""
        return dict(json.loads(render_json(self.report)))

    def to_frame(self) -> pd.DataFrame:
        """The residuals: one row per scale (``pass``, ``score``) and family, then the gap per scale.

        Columns: ``scale``, ``what`` (``residual`` or ``self-preference gap``), ``family``,
        ``estimate``, ``ci_low``, ``ci_high``, ``interval`` (its method, with any warning),
        ``units``.
        """
        rows: list[pd.DataFrame] = []
        for scale, section in self.report.residuals.items():
            table = residual_table(section).rename(columns={"residual": "estimate"})
            table.insert(0, "scale", scale)
            table.insert(1, "what", "residual")
            table["units"] = section.units
            rows.append(table[["scale", "what", "family", "estimate", "ci_low", "ci_high", "interval", "units"]])
        gaps = gap_table(self.report)
        if not gaps.empty:
            rows.append(pd.DataFrame({
                "scale": gaps["scale"], "what": "self-preference gap", "family": self.report.judge_family,
                "estimate": gaps["gap"], "ci_low": gaps["ci_low"], "ci_high": gaps["ci_high"],
                "interval": gaps["interval"], "units": gaps["units"],
            }))
        columns = ["scale", "what", "family", "estimate", "ci_low", "ci_high", "interval", "units"]
        frames = [r for r in rows if not r.empty]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table of the report by name (residuals, gap, kappa, alpha, PPI, probes, formats...)."""
        return report_tables(self.report)

    def chart(self) -> alt.VConcatChart:
        """Every figure with its interval, stacked (the report's PNG, as an Altair chart)."""
        return combined_chart(self.report)

    def __repr__(self) -> str:
        r = self.report
        lines = [f"Calibration of judge run {r.run_id} ({r.judge_model}, family {r.judge_family or 'not recorded'}; "
                 f"human score: {r.human_rule}; {r.labels.n_labels} labels by {r.labels.n_raters} raters)"]
        if r.labels.banner():
            lines.append(f"  WARNING: {r.labels.banner()}")
        for scale, section in r.residuals.items():
            for family, res in section.families.items():
                lines.append(f"  residual [{scale}] {family}: {res.estimate:+.3f} "
                             f"({res.ci_low:+.3f} to {res.ci_high:+.3f}) {section.units}")
            if section.gap is not None:
                g = section.gap
                lines.append(f"  self-preference gap [{scale}]: {g.estimate:+.3f} ({g.ci_low:+.3f} to {g.ci_high:+.3f})"
                             f"{' upper bound' if g.upper_bound else ''}")
        for k in r.kappas:
            if k.scope == "all":
                lines.append(f"  kappa {k.what} ({k.result.weights or 'unweighted'}): {k.result.kappa.estimate:.3f}")
        for what, alpha in r.alphas.items():
            lines.append(f"  Krippendorff's alpha {what}: {alpha.estimate:.3f}")
        return "\n".join(lines)


@dataclass(frozen=True, repr=False)
class Panel:
    """Several judge runs read side by side against the same labels: what ``judgelab panel`` reports.

    Attributes:
        result: The analysis (:class:`judgelab.calibration.panel.PanelResult`).
        data: What was read (:class:`judgelab.calibration.panel.PanelData`: the long table, runs, notes).
    """

    result: PanelResult
    data: PanelData

    def to_dict(self) -> dict[str, Any]:
        """The panel as ``judgelab panel --json`` prints it."""
        return dict(json.loads(json.dumps(panel_json(self.result, self.data), default=str, allow_nan=False)))

    def to_frame(self) -> pd.DataFrame:
        """The residual matrix, long: one row per judge (or jury) and answer family."""
        rows = [{"judge": judge, "family": family, **est.to_frame().iloc[0].to_dict()}
                for judge, row in self.result.matrix.items() for family, est in row.items()]
        return pd.DataFrame(rows)

    def tables(self) -> dict[str, pd.DataFrame]:
        """``matrix`` (as :meth:`to_frame`) and ``judges`` (self-bias, family-bias, gap, kappa, spread)."""
        return {"matrix": self.to_frame(), "judges": judges_table(self.result)}

    def chart(self) -> alt.LayerChart:
        """The residual matrix as a heatmap, each cell labelled with its interval."""
        return heatmap(self.result)

    def __repr__(self) -> str:
        lines = [f"Panel of {len(self.data.runs)} judge run(s) on {self.data.rubric} ({self.result.units})"]
        for b in self.result.judges:
            gap = "n/a" if b.gap is None else f"{b.gap.estimate:+.3f} ({b.gap.ci_low:+.3f} to {b.gap.ci_high:+.3f})"
            lines.append(f"  {b.judge} ({b.judge_model}, {b.judge_family}): gap {gap}, n={b.n}")
        lines.append(f"  best kappa: {self.result.best_kappa}; smallest spread: {self.result.best_spread}")
        return "\n".join(lines)


@dataclass(frozen=True, repr=False)
class SampleDesign:
    """A hand-label sample design: what ``judgelab design`` plans (nothing is assigned).

    Attributes:
        drawn: The design and what it was drawn from (:class:`judgelab.calibration.design.DrawnDesign`).
    """

    drawn: DrawnDesign

    def to_dict(self) -> dict[str, Any]:
        """The design as ``judgelab design --json`` prints it (``applied`` left out: nothing is)."""
        return dict(json.loads(json.dumps(self.drawn.to_dict(), default=str, allow_nan=False)))

    def to_frame(self) -> pd.DataFrame:
        """The per-stratum table: pool and sampled counts, inclusion probabilities, weights."""
        return design_table(self.drawn.design)

    @property
    def sample(self) -> pd.DataFrame:
        """The sampled answers: ``answer_id``, ``task_id``, ``family``, ``stratum``, probability, weight."""
        return self.drawn.design.items

    def __repr__(self) -> str:
        d = self.drawn.design
        prec = d.precision
        resid = ", ".join(f"{k} ±{v:.1f}" for k, v in prec.residual_half_width.items())
        return (f"Design {d.design_id}: {d.n_labels} answers to label, {d.params['allocation']} allocation; "
                f"expected 95% half-widths (pp): residuals {resid}, gap ±{prec.gap_half_width:.1f}; "
                f"{d.cost.person_hours:g} person-hours")


@dataclass(frozen=True, repr=False)
class Position:
    """Position statistics of one run's pairwise judgements: what ``judgelab position`` reports.

    Attributes:
        run: The run's figures (:class:`judgelab.calibration.probes.RunPosition`): consistency across the
            two shown orders, first-shown advantage, accuracy against gold, each an
            :class:`~judgelab.Estimate` clustered by pair.
    """

    run: RunPosition

    def to_dict(self) -> dict[str, Any]:
        """The figures as ``judgelab position --json`` prints them."""
        return dict(json.loads(json.dumps(self.run.to_json(), default=str, allow_nan=False)))

    def to_frame(self) -> pd.DataFrame:
        """One row per figure: ``statistic``, then its estimate, interval, ``n``, method and units."""
        s = self.run.statistics
        figures = {"consistency": s.consistency, "positional agreement": s.positional_agreement,
                   "first-shown advantage": s.first_shown_advantage,
                   **{f"accuracy ({k})": e for k, e in s.accuracy.items()}}
        return pd.concat([pd.DataFrame({"statistic": [name]}).join(e.to_frame()) for name, e in figures.items()],
                         ignore_index=True)

    def __repr__(self) -> str:
        return "\n".join(self.run.lines())


def position(
    data: Project | pd.DataFrame,
    labels: pd.DataFrame | None = None,
    judgements: pd.DataFrame | None = None,
    *,
    rubric: RubricLike | None = None,
    run_id: str | None = None,
    judge_model: str | None = None,
) -> Position:
    """Position statistics of a run's pairwise judgements: ``judgelab position`` as a function.

    Args:
        data: A :class:`~judgelab.Project`, or the answers DataFrame.
        labels: With an answers frame: the labels (not read; ``None`` is fine).
        judgements: With an answers frame: the judgements, pairwise ones with ``answer_b_id`` and ``order``.
        rubric: With frames: the rubric.
        run_id: The run (default: the newest with pairwise judgements).
        judge_model: The newest run of this judge model instead.

    Returns:
        A :class:`Position`; its ``to_dict()`` is what ``judgelab position --json`` prints.

    Raises:
        InputError: No run with pairwise judgements, or frames ``judgelab import`` would refuse.
    """
    project = as_project(data, labels, judgements, rubric)
    return Position(run_position(project.store, run_id=run_id, judge_model=judge_model))


def calibrate(
    data: Project | pd.DataFrame,
    labels: pd.DataFrame | None = None,
    judgements: pd.DataFrame | None = None,
    *,
    rubric: RubricLike | None = None,
    run_id: str | None = None,
    human_rule: HumanScoreRule = "mean",
    interval: RaterScope = "raters",
    judge_family: str | None = None,
    scale_map: str | None = None,
    seed: int = 0,
    n_resamples: int = 2000,
) -> Calibration:
    """Read a judge run against the human labels: ``judgelab calibrate`` as a function.

    Args:
        data: A :class:`~judgelab.Project`, or the answers DataFrame (``answers`` file schema).
        labels: With an answers frame: the labels (``labels`` schema).
        judgements: With an answers frame: the judgements (``judgements`` schema).
        rubric: With frames: the rubric (TOML path or text, or a Rubric).
        run_id: The judge run (default: the newest with pointwise judgements).
        human_rule: ``mean``, ``majority``, ``adjudicated`` or ``dawid-skene`` (``--human-rule``).
        interval: ``raters`` or ``panel``: whom the intervals speak for (``--interval``).
        judge_family: The judge's own family for a run that records none (``--judge-family``).
        scale_map: How to read the judge's scale on the rubric's (``--scale-map``).
        seed: Seed of every bootstrap (``--seed``).
        n_resamples: Bootstrap resamples (``--resamples``).

    Returns:
        A :class:`Calibration`; its ``to_dict()`` is what ``judgelab calibrate --json`` prints.

    Raises:
        InputError: Frames ``judgelab import`` would refuse, no judge run, an unknown option.
    """
    project = as_project(data, labels, judgements, rubric)
    report = _calibrate(project.store, run_id, human_rule=human_rule, seed=seed, n_resamples=n_resamples,
                        interval=interval, judge_family=judge_family, scale_map=scale_map)
    return Calibration(report)


def panel(
    data: Project | pd.DataFrame,
    labels: pd.DataFrame | None = None,
    judgements: pd.DataFrame | None = None,
    *,
    rubric: RubricLike | None = None,
    run_ids: list[str] | None = None,
    kappa: bool = True,
) -> Panel:
    """Read several judge runs against the same labels: ``judgelab panel`` as a function.

    Args:
        data: A :class:`~judgelab.Project`, or the answers DataFrame.
        labels: With an answers frame: the labels.
        judgements: With an answers frame: the judgements (several runs: the ``run_id`` column).
        rubric: With frames: the rubric.
        run_ids: The runs of the panel (default: every run with pointwise judgements).
        kappa: Compute kappa (``--no-kappa`` turns it off: its jackknife is the slowest part).

    Returns:
        A :class:`Panel`; its ``to_dict()`` is what ``judgelab panel --json`` prints.

    Raises:
        InputError: Frames ``judgelab import`` would refuse, no run with scores and labels.
    """
    project = as_project(data, labels, judgements, rubric)
    loaded = load_panel(project.store, list(run_ids or []))
    try:
        result = panel_analysis(loaded.frame, scale=loaded.scale, kappa=kappa)
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    return Panel(result, loaded)


def design(
    data: Project | pd.DataFrame,
    labels: pd.DataFrame | None = None,
    judgements: pd.DataFrame | None = None,
    *,
    rubric: RubricLike | None = None,
    n: int | None = None,
    budget_hours: float | None = None,
    strata: tuple[Stratifier, ...] = ("family", "category", "judge_bin"),
    allocation: Allocation = "gap",
    overlap: float = 0.2,
    raters: int = 1,
    run_id: str | None = None,
    minutes_per_label: float | None = None,
    hours_per_day: float = 2.0,
    target_half_width: float | None = None,
    min_gap: float | None = None,
    paired: bool = True,
    judge_bins: int = 2,
    length_bins: int = 3,
    disagreement: float | None = None,
    rho: float | None = None,
    kappa: float = 0.6,
    variant: str | None = "original",
    seed: int = 0,
) -> SampleDesign:
    """Plan the hand-label sample: ``judgelab design`` as a function (it never assigns anything).

    The options are the command's, with the same defaults (``raters`` is a count here: the
    command's default counts the project's active raters).

    Args:
        data: A :class:`~judgelab.Project`, or the answers DataFrame.
        labels: With an answers frame: pilot labels (measure disagreement, correlation, time).
        judgements: With an answers frame: the judge run whose scores bin the answers.
        rubric: With frames: the rubric.
        n: Label budget: distinct answers to label (give ``n`` or ``budget_hours``).
        budget_hours: Budget in person-hours instead.
        strata: Stratifiers, from ``family``, ``category``, ``judge_bin``, ``length_bin``.
        allocation: ``proportional``, ``equal``, ``neyman`` or ``gap``.
        overlap: Share of the sample labelled by two raters.
        raters: How many raters share the work.
        run_id: The judge run whose scores bin the answers (default: the newest).
        minutes_per_label: Minutes per label (default: measured, else 2.5).
        hours_per_day: Labelling hours each rater gives a day.
        target_half_width: Wanted 95% half-width of the gap, percentage points.
        min_gap: Smallest gap worth detecting, percentage points.
        paired: Sample whole tasks (both families' answers) or single answers.
        judge_bins: Bins of the judge's score (2: its pass verdict).
        length_bins: Length bins when ``length_bin`` is a stratifier.
        disagreement: Planning judge-human disagreement rate (default: pilot, else 0.2).
        rho: Planning within-task residual correlation (default: pilot, else 0).
        kappa: Expected inter-rater kappa.
        variant: Answer variant to sample (``None``: every variant).
        seed: Seed of the draw.

    Returns:
        A :class:`SampleDesign`; its ``to_dict()`` is what ``judgelab design --json`` prints.

    Raises:
        InputError: Both or neither of ``n`` and ``budget_hours``, an unknown stratifier or
            allocation, frames ``judgelab import`` would refuse.
    """
    if (n is None) == (budget_hours is None):
        raise InputError("design: give exactly one of n or budget_hours", fix="e.g. design(project, n=40).")
    bad = [s for s in strata if s not in STRATIFIERS]
    if bad or allocation not in ALLOCATIONS:
        raise InputError(f"design: unknown stratifier(s) {bad!r} or allocation {allocation!r}",
                         fix=f"strata from {', '.join(STRATIFIERS)}; allocation one of {', '.join(ALLOCATIONS)}.")
    project = as_project(data, labels, judgements, rubric)
    drawn = draw_design(
        project.store, n=n, budget_hours=budget_hours, run_id=run_id, variant=variant,
        minutes_per_label=minutes_per_label, allocation=allocation, strata=list(strata), paired=paired,
        overlap=overlap, judge_bins=judge_bins, length_bins=length_bins, disagreement=disagreement, rho=rho,
        kappa=kappa, raters=raters, hours_per_rater_per_day=hours_per_day, target_half_width=target_half_width,
        min_gap=min_gap, seed=seed,
    )
    return SampleDesign(drawn)
