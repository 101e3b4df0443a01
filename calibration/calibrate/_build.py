"""Orchestration: load a run, compute every section of its report, assemble the report.

Each section is one entry of :data:`_SECTIONS` (its name in ``skipped`` messages and the
function that computes it). The sections run in order; a section whose statistic rejects the
data (``ValueError``) is skipped with that message instead of failing the whole report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import pandas as pd

from judgelab.calibration.calibrate._formats import format_rows
from judgelab.calibration.calibrate._human import alphas, analysis_set, kappa_rows, ppi_rows, residual_section
from judgelab.calibration.calibrate._load import CalibrationData, load_calibration_data
from judgelab.calibration.calibrate._model import (
    HUMAN_SCORE_RULES,
    CalibrationReport,
    DesignNote,
    FormatRow,
    HumanScoreRule,
    KappaRow,
    PPIRow,
    ProbeSection,
    ReportOptions,
    ResidualSection,
    TurnSection,
)
from judgelab.calibration.calibrate._probes import probe_section
from judgelab.calibration.calibrate._rater_model import fit_rater_models
from judgelab.calibration.calibrate._scalemap import apply_scale_map, parse_scale_map
from judgelab.calibration.calibrate._turns import turn_section
from judgelab.calibration.stats import Estimate, ProvenanceNote, RaterScope, ResidualScale, provenance_note
from judgelab.labeler.errors import InputError
from judgelab.labeler.scales import is_pointwise
from judgelab.labeler.store import AnalystRole


def calibrate(
    store: AnalystRole,
    run_id: str | None = None,
    *,
    compare_run: str | None = None,
    human_rule: HumanScoreRule = "mean",
    seed: int = 0,
    n_resamples: int = 2000,
    level: float = 0.95,
    interval: RaterScope = "raters",
    judge_family: str | None = None,
    scale_map: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> CalibrationReport:
    """Load a judge run (and optionally a "before" run) and build its calibration report.

    Args:
        store: The project store.
        run_id: The judge run (default: the newest with pointwise judgements). With
            ``compare_run`` this is the run *after* the change.
        compare_run: A run *before* a rubric change, for the padding/truncation comparison.
        human_rule: ``"mean"`` (default), ``"majority"``, ``"adjudicated"`` (an admin's
            adjudicated label where the answer has one, else the mean) or ``"dawid-skene"`` (a
            model of the raters' confusions; see :data:`HumanScoreRule`).
        seed: Seed of every bootstrap (the same seed gives the same report).
        n_resamples: Bootstrap resamples per interval.
        level: Confidence level.
        interval: ``"raters"`` (default) or ``"panel"``: which raters the residual, gap and PPI
            intervals speak for.
        judge_family: The judge's own model family, for a run that records none (or another).
        scale_map: How to read the judge's scores on the rubric's scale when the two differ
            (``linear`` or ``J=R,...``, :func:`judgelab.calibration.calibrate.parse_scale_map`); stated in
            the report's notes. Without one, scores on different scales are never subtracted.
        progress: Called as ``progress(step, done, total)`` before each step (loading, then
            each section of the report), e.g. to draw a progress bar; ``None`` for none.

    Returns:
        A :class:`CalibrationReport`.

    Raises:
        InputError: As :func:`load_calibration_data`.
    """
    if progress is not None:
        progress("loading the run", 0, len(_SECTIONS) + 1)
    data = load_calibration_data(store, run_id)
    if judge_family is not None:
        data = dataclasses.replace(data, run={**data.run, "family": judge_family})
    if scale_map is not None:
        data = _mapped(data, scale_map)
    before = load_calibration_data(store, compare_run) if compare_run is not None else None
    return build_report(
        data, compare=before, human_rule=human_rule, seed=seed, n_resamples=n_resamples, level=level,
        interval=interval, progress=None if progress is None else _after_loading(progress),
    )


def _after_loading(progress: Callable[[str, int, int], None]) -> Callable[[str, int, int], None]:
    """``progress`` with the loading step counted before the sections."""
    return lambda step, done, total: progress(step, done + 1, total + 1)


def _mapped(data: CalibrationData, text: str) -> CalibrationData:
    """``data`` with the judge's scores read on the rubric's scale through the stated mapping."""
    own = data.rubric.scale
    others = [f for f in dict.fromkeys(data.pointwise["format"]) if f != own and is_pointwise(str(f))]
    if not others:
        raise InputError(f"--scale-map: the run's judgements are already on the rubric's scale {own}",
                         fix="leave --scale-map out.")
    return apply_scale_map(data, parse_scale_map(text, str(others[0]), own))


def build_report(
    data: CalibrationData,
    *,
    compare: CalibrationData | None = None,
    human_rule: HumanScoreRule = "mean",
    seed: int = 0,
    n_resamples: int = 2000,
    level: float = 0.95,
    interval: RaterScope = "raters",
    progress: Callable[[str, int, int], None] | None = None,
) -> CalibrationReport:
    """Compute every section of the calibration report from loaded data.

    A section that cannot be computed (no labels, one family, no pairwise judgements...) is
    left empty and listed in ``skipped`` with the reason; it never becomes a made-up number.

    Args:
        data: The run (the "after" run when ``compare`` is given).
        compare: The "before" run for the padding/truncation comparison.
        human_rule: How the human score of an answer is defined (:data:`HumanScoreRule`).
        seed: Seed of every bootstrap.
        n_resamples: Bootstrap resamples.
        level: Confidence level.
        interval: ``"raters"`` or ``"panel"`` (see :func:`calibrate`).
        progress: Called as ``progress(section, done, total)`` before each section and once
            at the end (``done == total``); ``None`` for none.

    Returns:
        A :class:`CalibrationReport`.
    """
    if interval not in ("raters", "panel"):
        raise InputError(f"unknown interval {interval!r}", fix="use 'raters' or 'panel'.")
    if human_rule not in HUMAN_SCORE_RULES:
        raise InputError(f"unknown human rule {human_rule!r}", fix=f"use one of {', '.join(HUMAN_SCORE_RULES)}.")
    if not (isinstance(n_resamples, int) and n_resamples >= 10):
        raise InputError(f"resamples must be a whole number of at least 10; got {n_resamples!r}")
    # The model of the raters is fitted once, to every rater's labels, before any section reads it.
    models = fit_rater_models(data) if human_rule == "dawid-skene" else {}
    opts = ReportOptions(human_rule=human_rule, seed=seed, n_resamples=n_resamples, level=level, interval=interval,
                         rater_models=models)
    analysis, design_note = analysis_set(data, opts)
    inputs = _Inputs(data, analysis, compare, opts)
    sections = _Sections()
    for done, (name, compute) in enumerate(_SECTIONS):
        if progress is not None:
            progress(name, done, len(_SECTIONS))
        try:
            sections.skipped += compute(inputs, sections)
        except ValueError as exc:
            # Data the statistics reject (e.g. every weight zero) skips the section, which keeps
            # its empty default, instead of failing the whole report.
            sections.skipped.append(f"{name}: {exc}")
    if progress is not None:
        progress("done", len(_SECTIONS), len(_SECTIONS))
    prov = provenance_note(data.provenance, judge_family=data.judge_family) if data.judge_family else None
    rubric = data.rubric
    return CalibrationReport(
        run_id=data.run_id,
        judge_model=str(data.run.get("model")),
        judge_family=data.judge_family,
        judge_endpoint=(data.run.get("params") or {}).get("judge_endpoint"),
        rubric={"rubric_id": rubric.rubric_id, "version": rubric.version, "scale": rubric.scale,
                "name": rubric.name, "turn": rubric.turn},
        judge_format=data.judge_format,
        human_rule=human_rule,
        labels=data.label_summary,
        design=design_note,
        provenance=prov,
        provenance_records=data.provenance,
        residuals=sections.residuals,
        kappas=tuple(sections.kappas),
        alphas=sections.alphas,
        ppi=tuple(sections.ppi),
        probes=sections.probes,
        formats=tuple(sections.formats),
        notes=tuple(_notes(data, prov, design_note)),
        skipped=tuple(sections.skipped),
        seed=seed,
        n_resamples=n_resamples,
        level=level,
        n_errors=data.n_errors,
        compare_run_id=None if compare is None else compare.run_id,
        interval=interval,
        rater_models=models,
        rater_names=_rater_names(data) if models else {},
        turns=sections.turns,
    )


@dataclass(frozen=True)
class _Inputs:
    """What every section reads: the run, its analysis set, the "before" run, the options."""

    data: CalibrationData
    analysis: pd.DataFrame
    compare: CalibrationData | None
    opts: ReportOptions


@dataclass
class _Sections:
    """The sections computed so far, each starting empty, and the reasons for what was not."""

    residuals: dict[str, ResidualSection] = field(default_factory=dict)
    kappas: list[KappaRow] = field(default_factory=list)
    alphas: dict[str, Estimate] = field(default_factory=dict)
    ppi: list[PPIRow] = field(default_factory=list)
    probes: ProbeSection = field(default_factory=ProbeSection)
    formats: list[FormatRow] = field(default_factory=list)
    turns: TurnSection = field(default_factory=TurnSection)
    skipped: list[str] = field(default_factory=list)


# Each step computes its section from the inputs (and the sections before it), stores it on
# ``sections`` and returns the reasons for whatever it could not compute. A step stores nothing
# until its computation succeeded, so a ``ValueError`` leaves the section at its empty default.


def _residuals(inputs: _Inputs, sections: _Sections, *, scale: ResidualScale) -> list[str]:
    section, reasons = residual_section(inputs.data, inputs.analysis, scale, inputs.opts)
    if section is not None:
        sections.residuals[scale] = section
    return reasons


def _kappa(inputs: _Inputs, sections: _Sections) -> list[str]:
    sections.kappas, reasons = kappa_rows(inputs.data, inputs.analysis, inputs.opts)
    return reasons


def _alpha(inputs: _Inputs, sections: _Sections) -> list[str]:
    sections.alphas, reasons = alphas(inputs.data, inputs.opts)
    return reasons


def _ppi(inputs: _Inputs, sections: _Sections) -> list[str]:
    sections.ppi, reasons = ppi_rows(inputs.data, inputs.analysis, inputs.opts)
    return reasons


def _probes(inputs: _Inputs, sections: _Sections) -> list[str]:
    probes = sections.probes = probe_section(inputs.data, inputs.compare, inputs.opts)
    reasons = []
    if not probes.gaps and not probes.position:
        reasons.append("probes: the run holds no probe variants (padded, truncated...) and no "
                       "order-swapped pairwise judgements")
    if probes.comparison_reason:
        reasons.append(f"run comparison: {probes.comparison_reason}")
    return reasons


def _formats(inputs: _Inputs, sections: _Sections) -> list[str]:
    # The comparative formats read their slot bias from the position probes computed before.
    sections.formats, reasons = format_rows(inputs.data, probes=sections.probes, opts=inputs.opts)
    return reasons


def _turns(inputs: _Inputs, sections: _Sections) -> list[str]:
    sections.turns = turn_section(inputs.data, inputs.opts)
    # A rubric that rates no turn one by one has no per-turn view to miss: not listed as skipped.
    return [f"per-turn view: {sections.turns.reason}"] if inputs.data.rubric.turn == "each" and \
        sections.turns.reason else []


_SECTIONS: tuple[tuple[str, Callable[[_Inputs, _Sections], list[str]]], ...] = (
    ("residuals (pass)", partial(_residuals, scale="pass")),
    ("residuals (score)", partial(_residuals, scale="score")),
    ("kappa", _kappa),
    ("Krippendorff's alpha", _alpha),
    ("PPI", _ppi),
    ("probes", _probes),
    ("format diagnostics", _formats),
    ("per-turn view", _turns),
)
"""The report's sections in order: the name a skipped section is listed under, and its step."""


def _rater_names(data: CalibrationData) -> dict[str, str]:
    """Each rater's display name by id (the rater model's table names raters as the Raters page does)."""
    labels = data.labels.drop_duplicates("rater_id")
    return {str(i): str(n) for i, n in zip(labels["rater_id"], labels["rater_name"], strict=True) if n is not None}


def _notes(data: CalibrationData, prov: ProvenanceNote | None, design: DesignNote | None) -> list[str]:
    """The sentences the reader needs before the numbers, simulated labels first."""
    notes: list[str] = []
    banner = data.label_summary.banner()
    if banner:
        notes.append(banner)
    if prov is not None and prov.bound == "upper":
        notes.append(f"The self-preference gap is an UPPER BOUND: {prov.reason}.")
    if design is not None:
        notes.append(design.text())
    if data.scale_note:
        notes.append(f"Judge scale: {data.scale_note}.")
    if data.n_errors:
        notes.append(f"{data.n_errors} judge call(s) failed with no reply; they are left out (never scored).")
    return notes
