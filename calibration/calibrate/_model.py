"""The frozen report model: every section of the calibration report as data.

Nothing here computes a statistic or lays out a page: the section builders (``_human``,
``_probes``, ``_formats``) fill these dataclasses and :mod:`judgelab.calibration.report` renders them
(this module never imports it). The few sentences a figure needs wherever it is shown (the
simulated-label banner, the design note, the four quantities of a format) live with their data.
Each class has a ``to_dict`` whose output is JSON-ready (``nan`` becomes ``None``, see
:func:`jsonable`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from judgelab.calibration.numbers import ci, num, pct
from judgelab.calibration.stats import (
    Estimate,
    FormatDiagnostics,
    HumanRule,
    KappaResult,
    PositionStatistics,
    ProvenanceNote,
    RaterModel,
    RaterScope,
    ResidualScale,
    RunComparison,
    SlotDecomposition,
)

HumanScoreRule = Literal["mean", "majority", "adjudicated", "dawid-skene"]
"""How the human score of an answer is defined in the report.

``"mean"`` (the default) and ``"majority"`` collapse the raters' current labels
(:data:`judgelab.calibration.stats.HumanRule`). ``"adjudicated"``: an admin's adjudicated label where the
answer has one (it replaces the raters' labels of that answer), else the raters' mean.
``"dawid-skene"``: a model of the raters (each rater's confusion and the true labels estimated
jointly, :mod:`judgelab.calibration.calibrate._rater_model`); the posterior mean on the scale, and its mode
for kappa.
"""

HUMAN_SCORE_RULES: tuple[HumanScoreRule, ...] = ("mean", "majority", "adjudicated", "dawid-skene")


@dataclass(frozen=True)
class ReportOptions:
    """How every section is computed.

    Attributes:
        human_rule: How the human score of an answer is defined (:data:`HumanScoreRule`).
        seed: Seed of every bootstrap (each statistic is seeded with it, so sections do not
            shift when another section is added).
        n_resamples: Bootstrap resamples.
        level: Confidence level.
        interval: Which raters the residual, gap and PPI intervals speak for: ``"raters"``
            (raters like these; default) or ``"panel"`` (this panel only).
        rater_models: Under ``"dawid-skene"``, the fitted models per label column (``"pass"``,
            ``"overall"``); fitted when needed if left empty.
    """

    human_rule: HumanScoreRule = "mean"
    seed: int = 0
    n_resamples: int = 2000
    level: float = 0.95
    interval: RaterScope = "raters"
    rater_models: Mapping[str, RaterModel] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def collapse(self) -> HumanRule:
        """How the raters of an answer are collapsed (an adjudicated answer has one "rater")."""
        return "majority" if self.human_rule == "majority" else "mean"


@dataclass(frozen=True)
class LabelSummary:
    """How many human labels the report rests on, and how many of them are simulated.

    Attributes:
        n_labels: Current, scored labels (superseded edits and flagged items left out).
        n_answers: Answers with at least one such label.
        n_raters: Raters behind them.
        n_simulated_labels: Labels stored as simulated or given by a simulated rater.
        n_simulated_raters: Simulated raters among ``n_raters``.
        n_flagged: Current labels flagged unrateable (no score), left out.
        sources: Label count per ``source`` (``app``, ``import``, ``simulated``).
        n_adjudicated: Answers with a current adjudicated label that has a score (admins'
            labels, never counted among the raters above).
        n_revealed: Of those, adjudications the admin gave after revealing the answer's
            family, model and unmasked text (the Review page adjudicates blind by default).
        n_annotator_means: Labels that are already the mean of several people (imported with
            ``n_raters`` above 1): each weighs as its number of people in its answer's human
            score and is no rater's label in the raters' spread or alpha.
        n_set_apart: Scored labels left out because their answer was found to say who wrote it
            (withheld by a rater's flag or the screen, or masked after the label was given).
        n_set_apart_answers: The answers those labels are on.
    """

    n_labels: int
    n_answers: int
    n_raters: int
    n_simulated_labels: int
    n_simulated_raters: int
    n_flagged: int
    sources: dict[str, int]
    n_adjudicated: int = 0
    n_revealed: int = 0
    n_annotator_means: int = 0
    n_set_apart: int = 0
    n_set_apart_answers: int = 0

    def set_apart_line(self) -> str | None:
        """The report's line on labels set apart because their answer reveals its author (``None``: none)."""
        if not self.n_set_apart:
            return None
        return (f"set apart: {self.n_set_apart} labels on {self.n_set_apart_answers} answers that reveal their "
                "author (left out of every figure)")

    @property
    def simulated(self) -> bool:
        """Whether any label the report uses is simulated."""
        return self.n_simulated_labels > 0

    def banner(self) -> str | None:
        """The sentence every form of the report opens with when labels are simulated."""
        if not self.simulated:
            return None
        share = "all" if self.n_simulated_labels == self.n_labels else f"{self.n_simulated_labels} of"
        return (
            f"SIMULATED LABELS: {share} {self.n_labels} human labels come from "
            f"{self.n_simulated_raters} simulated rater(s), not from people. Every figure that "
            "compares the judge with humans rests on them; collect real labels before trusting it."
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**dataclasses.asdict(self), "simulated": self.simulated}


@dataclass(frozen=True)
class DesignNote:
    """The stored sample design the labels came from, if any.

    Attributes:
        design_id: The design.
        weighted: Whether its weights differ between answers (equal weights change nothing).
        n_in_design: Labelled, judged answers inside the design (the ones analysed).
        n_left_out: Labelled, judged answers outside it, left out of the weighted analysis.
        estimator: The estimator of the residuals and the gap.
        interval: Their interval.
        active: For an active design, its batches and target in words (``None`` otherwise).
    """

    design_id: str
    weighted: bool
    n_in_design: int
    n_left_out: int
    estimator: str = "Hajek mean weighted by 1/inclusion probability"
    interval: str = "t interval of the linearised stratified variance"
    active: str | None = None

    def text(self) -> str:
        """One sentence for the report."""
        if self.active is not None:
            return (
                f"Labels come from active design {self.design_id!r} ({self.active}): the residuals and the "
                f"self-preference gap are {self.estimator} estimates (the judge on the whole pool, corrected by "
                f"inverse-probability-weighted human labels) with {self.interval}, valid however often the team "
                "looked and wherever it stopped; kappa and the prediction-powered rows weight each labelled answer "
                "by one over its chance of being drawn in some batch."
            )
        how = (
            "every mean is a Hajek mean weighted by 1/inclusion probability, so a sample "
            "stratified by judge score stays unbiased"
            if self.weighted
            else "its weights are all equal, so the means are unweighted"
        )
        left = (
            f"; {self.n_left_out} labelled answer(s) outside the design were left out, because "
            "their chance of being labelled is unknown"
            if self.n_left_out
            else ""
        )
        return f"Labels come from sample design {self.design_id!r} ({self.n_in_design} answers): {how}{left}."

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**dataclasses.asdict(self), "text": self.text()}



@dataclass(frozen=True)
class FamilyResidual:
    """One family's mean judge-minus-human residual on one scale, with its interval.

    Attributes:
        family: The model family.
        estimate: The residual, judge minus human, in ``units``.
        ci_low: Lower end of the interval (``nan`` when the family's answers cover one task).
        ci_high: Upper end of the interval.
        n: Tasks the family's answers cover (the bootstrap resamples tasks).
        method: How the residual and its interval were computed.
        units: ``"percentage points"`` (pass verdicts) or ``"judge scale points"``.
        level: Confidence level of the interval.
        judge_mean: The judge's mean on the family (percent for pass verdicts, scale points
            otherwise).
        human_mean: The humans' mean on the family, in the same units as ``judge_mean``.
        n_answers: The family's answers analysed.
        weighted: Whether the means are design-weighted (Hajek).
        interval: Short name of the interval method (e.g. ``"t(28), raters"``).
        scope: Which raters the interval speaks for, in words.
        unreliable: Why the interval is not to be trusted (too few tasks or df), else ``None``.
    """

    family: str
    estimate: float
    ci_low: float
    ci_high: float
    n: int
    method: str
    units: str
    level: float
    judge_mean: float
    human_mean: float
    n_answers: int
    weighted: bool
    interval: str = ""
    scope: str = ""
    unreliable: str | None = None

    @classmethod
    def from_estimate(cls, family: str, est: Estimate) -> FamilyResidual:
        """Read one entry of :func:`judgelab.calibration.stats.family_residuals` into typed fields."""
        x = est.extra
        return cls(family, est.estimate, est.ci_low, est.ci_high, est.n, est.method, est.units, est.level,
                   judge_mean=float(x["judge_mean"]), human_mean=float(x["human_mean"]),
                   n_answers=int(x["n_answers"]), weighted=bool(x["weighted"]), **_interval_fields(x))

    def as_estimate(self) -> Estimate:
        """The same figure as the statistics return it (an :class:`Estimate` with ``extra``)."""
        extra = {"judge_mean": self.judge_mean, "human_mean": self.human_mean, "n_answers": self.n_answers,
                 "weighted": self.weighted, "interval": self.interval, "scope": self.scope,
                 "unreliable": self.unreliable}
        return Estimate(self.estimate, self.ci_low, self.ci_high, self.n, self.method, self.units, self.level,
                        extra)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, shaped as :meth:`Estimate.to_dict` (the means under ``extra``)."""
        return self.as_estimate().to_dict()


@dataclass(frozen=True)
class SelfPreferenceGap:
    """The judge's own family's residual minus the other families', with its paired interval.

    Attributes:
        estimate: The gap, in ``units``.
        ci_low: Lower end of the paired task-clustered interval (``nan`` with one task).
        ci_high: Upper end.
        n: Tasks.
        method: How the gap and its interval were computed.
        units: ``"percentage points"`` (pass verdicts) or ``"judge scale points"``.
        level: Confidence level of the interval.
        own_family: The judge's own family.
        other_families: The families it is compared with (their residuals' unweighted mean).
        judge_means: The judge's mean per family (percent for pass verdicts).
        human_means: The humans' mean per family.
        residuals: The residual per family.
        bound: ``"upper"`` when the judge prompt's provenance makes the gap an upper bound on
            self-preference, else ``None``.
        bound_reason: Why (``None`` when provenance was not checked).
        interval: Short name of the interval method (e.g. ``"t(28), raters"``).
        scope: Which raters the interval speaks for, in words.
        unreliable: Why the interval is not to be trusted (too few tasks or df), else ``None``.
    """

    estimate: float
    ci_low: float
    ci_high: float
    n: int
    method: str
    units: str
    level: float
    own_family: str
    other_families: tuple[str, ...]
    judge_means: Mapping[str, float]
    human_means: Mapping[str, float]
    residuals: Mapping[str, float]
    bound: Literal["upper"] | None = None
    bound_reason: str | None = None
    interval: str = ""
    scope: str = ""
    unreliable: str | None = None

    @property
    def upper_bound(self) -> bool:
        """Whether the gap is an upper bound on self-preference (see :attr:`bound_reason`)."""
        return self.bound == "upper"

    @classmethod
    def from_estimate(cls, est: Estimate) -> SelfPreferenceGap:
        """Read :func:`judgelab.calibration.stats.self_preference_gap`'s result into typed fields."""
        x = est.extra
        families = [k.removeprefix("residual[").removesuffix("]") for k in x if k.startswith("residual[")]
        bound = x.get("bound")
        return cls(
            est.estimate, est.ci_low, est.ci_high, est.n, est.method, est.units, est.level,
            own_family=str(x["own_family"]),
            other_families=tuple(str(f) for f in x["other_families"]),
            judge_means={f: float(x[f"judge_mean[{f}]"]) for f in families},
            human_means={f: float(x[f"human_mean[{f}]"]) for f in families},
            residuals={f: float(x[f"residual[{f}]"]) for f in families},
            bound="upper" if bound == "upper" else None,
            bound_reason=None if x.get("bound_reason") is None else str(x["bound_reason"]),
            **_interval_fields(x),
        )

    def as_estimate(self) -> Estimate:
        """The same figure as the statistics return it (an :class:`Estimate` with ``extra``)."""
        extra: dict[str, Any] = {"own_family": self.own_family, "other_families": list(self.other_families)}
        for fam in self.residuals:
            extra[f"judge_mean[{fam}]"] = self.judge_means[fam]
            extra[f"human_mean[{fam}]"] = self.human_means[fam]
            extra[f"residual[{fam}]"] = self.residuals[fam]
        extra |= {"interval": self.interval, "scope": self.scope, "unreliable": self.unreliable}
        if self.bound_reason is not None:
            extra["bound"] = self.bound
            extra["bound_reason"] = self.bound_reason
        return Estimate(self.estimate, self.ci_low, self.ci_high, self.n, self.method, self.units, self.level,
                        extra)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, shaped as :meth:`Estimate.to_dict` (the per-family figures under ``extra``)."""
        return self.as_estimate().to_dict()


def _interval_fields(extra: Mapping[str, Any]) -> dict[str, Any]:
    """The interval's short name, rater scope and reliability from a statistic's ``extra``."""
    unreliable = extra.get("unreliable")
    return {"interval": str(extra.get("interval", "")), "scope": str(extra.get("scope", "")),
            "unreliable": None if unreliable is None else str(unreliable)}


@dataclass(frozen=True)
class ResidualSection:
    """Judge-minus-human residuals on one scale, per family, and the self-preference gap.

    Attributes:
        scale: ``"pass"`` (percentage points) or ``"score"`` (rubric scale points).
        units: Units of every figure.
        families: Residual per family.
        gap: Own-family residual minus the other families', or ``None`` with ``gap_reason``.
        gap_reason: Why there is no gap.
        n_answers: Answers analysed.
    """

    scale: ResidualScale
    units: str
    families: dict[str, FamilyResidual]
    gap: SelfPreferenceGap | None
    gap_reason: str | None
    n_answers: int

    @property
    def method(self) -> str:
        """How the families' residuals were computed (one method for every family)."""
        return next(iter(self.families.values())).method

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "scale": self.scale,
            "units": self.units,
            "n_answers": self.n_answers,
            "families": {k: v.to_dict() for k, v in self.families.items()},
            "gap": None if self.gap is None else self.gap.to_dict(),
            "gap_reason": self.gap_reason,
        }


@dataclass(frozen=True)
class KappaRow:
    """Cohen's kappa between the judge and the humans on one scope.

    Attributes:
        scope: ``"all"`` or a family.
        what: ``"pass verdict"`` or ``"overall score"``.
        result: The kappa, percent agreement and confusion matrix (rows: judge, columns:
            humans).
        ties_to_lower: Answers whose raters tied on the most frequent category, so the lower
            category (for pass verdicts: fail) stood for the humans.
    """

    scope: str
    what: str
    result: KappaResult
    ties_to_lower: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; the confusion matrix as labels plus nested lists."""
        cm = self.result.confusion
        return {
            "scope": self.scope,
            "what": self.what,
            "weights": self.result.weights or "unweighted",
            "kappa": self.result.kappa.to_dict(),
            "ties_to_lower": self.ties_to_lower,
            "percent_agreement": self.result.percent_agreement.to_dict(),
            "confusion": {
                "rows": "judge",
                "columns": "humans",
                "labels": [_plain(v) for v in self.result.labels],
                "counts": [[int(x) for x in row] for row in cm.to_numpy()],
            },
            "reason": self.result.reason,
        }


@dataclass(frozen=True)
class PPIRow:
    """A family's human-level pass rate, prediction-powered beside human-only.

    Attributes:
        family: The family.
        ppi: The estimate from the judge's verdicts on the whole pool plus the human labels.
        human_only: The same from the human labels alone.
        n_labelled: Answers with human labels (and a judge verdict).
        n_unlabelled: Answers with a judge verdict only.
    """

    family: str
    ppi: Estimate
    human_only: Estimate
    n_labelled: int
    n_unlabelled: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "family": self.family,
            "ppi": self.ppi.to_dict(),
            "human_only": self.human_only.to_dict(),
            "n_labelled": self.n_labelled,
            "n_unlabelled": self.n_unlabelled,
        }


@dataclass(frozen=True)
class VariantGap:
    """A pointwise probe: judge score of a variant minus (or, for truncation, under) its original.

    Attributes:
        variant: The variant (``padded``, ``truncated``, ``markdown``...).
        format: The pointwise format.
        gap: The gap in the format's scale points (truncation: original minus truncated).
        verdict: PASS/WARN/FAIL for a bias (``None`` for truncation, where a large gap is
            the judge noticing missing content, not a bias).
        thresholds: The thresholds ``verdict`` used, in the gap's units.
        original_mean: The judge's mean score of the originals (the pairs' base).
        variant_mean: The judge's mean score of the variants.
        pairs: Complete (variant, original) pairs the gap rests on.
    """

    variant: str
    format: str
    gap: Estimate
    verdict: str | None
    thresholds: tuple[float, float] | None
    original_mean: float
    variant_mean: float
    pairs: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "variant": self.variant,
            "format": self.format,
            "gap": self.gap.to_dict(),
            "verdict": self.verdict,
            "thresholds": None if self.thresholds is None else {"warn": self.thresholds[0], "fail": self.thresholds[1]},
        }


@dataclass(frozen=True)
class PositionResult:
    """Order-swapped comparisons of one probe arm in one comparative format.

    Attributes:
        probe: The probe (``judgements.probe``; ``"pairwise"`` when unnamed).
        arm: The probe arm (may be empty).
        format: The comparative format.
        candidate: Which answer of each pair the win rates are for ("X").
        n_pairs: Pairs of answers compared.
        n_both_orders: Pairs judged in both orders (the decomposition uses these).
        first_shown: First-shown win advantage over all judgements (percentage points).
        decomposition: Candidate preference ``q`` and slot bias ``b``, with consistency.
        raw_lift: X's single-order win rate minus 50% (percentage points).
        swap_lift: X's swap-averaged win rate minus 50% (a win counts when both orders agree).
        length_controlled: X's swap-averaged win rate with the length difference regressed
            out (a share), or ``None`` with ``length_reason``.
        length_reason: Why there is no length-controlled win rate.
    """

    probe: str
    arm: str
    format: str
    candidate: str
    n_pairs: int
    n_both_orders: int
    first_shown: Estimate
    decomposition: SlotDecomposition | None
    raw_lift: Estimate
    swap_lift: Estimate | None
    length_controlled: Estimate | None
    length_reason: str | None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "probe": self.probe,
            "arm": self.arm,
            "format": self.format,
            "candidate": self.candidate,
            "n_pairs": self.n_pairs,
            "n_both_orders": self.n_both_orders,
            "first_shown": self.first_shown.to_dict(),
            "decomposition": None if self.decomposition is None else self.decomposition.to_dict(),
            "raw_lift": self.raw_lift.to_dict(),
            "swap_lift": None if self.swap_lift is None else self.swap_lift.to_dict(),
            "length_controlled": None if self.length_controlled is None else self.length_controlled.to_dict(),
            "length_reason": self.length_reason,
        }


@dataclass(frozen=True)
class FormatRow:
    """Format diagnostics for one scoring format, and the four quantities seed 001 asks for.

    Attributes:
        diagnostics: Distinct values, D1, D2, tie probability, top-tied share, tau-a/b,
            Somers' D, top-1 agreement and parse rate (share of every reply in the run).
        kind: ``"pointwise"`` or ``"comparative"``.
        score_rule: How a candidate's score is read from the judgements.
        decoding_rule: The decoding parameters and the parsing rule.
        slot_handling: For comparative formats: whether orders were swapped, and the slot bias.
        reference: What agreement is measured against.
    """

    diagnostics: FormatDiagnostics
    kind: str
    score_rule: str
    decoding_rule: str
    slot_handling: str
    reference: str

    @property
    def format(self) -> str:
        """The scoring format these diagnostics describe."""
        return self.diagnostics.format_name

    def four_quantities(self) -> dict[str, str]:
        """The four things a curation pipeline should report about its format (seed 001)."""
        d = self.diagnostics
        pr = d.parse_rate
        return {
            "format and decoding rule": f"{self.format}; {self.decoding_rule}",
            "tie probability / D2": (
                f"tie probability {num(d.tie_probability, 3)}, D2 {num(d.d2, 2)} effective levels "
                f"({d.distinct_values} distinct values over {d.n_scored} scored candidates, {d.n} of them "
                "with a reference)"
            ),
            "comparative slot handling and bias": self.slot_handling,
            "verdict parse rate": (
                f"{pct(pr.estimate)} of {pr.n} replies ({ci(pr, 1, percent=True)})"
            ),
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "format": self.format,
            "kind": self.kind,
            "score_rule": self.score_rule,
            "decoding_rule": self.decoding_rule,
            "slot_handling": self.slot_handling,
            "reference": self.reference,
            "diagnostics": self.diagnostics.to_dict(),
            "four_quantities": self.four_quantities(),
        }


@dataclass(frozen=True)
class ProbeSection:
    """Probe results found in the run.

    Attributes:
        gaps: Pointwise variant gaps (padding, truncation and any other variant judged).
        comparison: The before/after reading of padding and truncation gaps (with
            ``--compare-run``), or ``None``.
        comparison_run: The "before" run.
        comparison_reason: Why there is no comparison although one was asked for.
        position: Order-swapped pairwise results.
        statistics: The position statistics of the run (its position probe's judgements, else
            all its pairwise ones), as ``judgelab position`` prints them (``None`` when it has none).
    """

    gaps: tuple[VariantGap, ...] = ()
    comparison: RunComparison | None = None
    comparison_run: str | None = None
    comparison_reason: str | None = None
    position: tuple[PositionResult, ...] = ()
    statistics: PositionStatistics | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "gaps": [g.to_dict() for g in self.gaps],
            "comparison": None if self.comparison is None else {
                "before_run": self.comparison_run, **self.comparison.to_dict()},
            "comparison_reason": self.comparison_reason,
            "position": [p.to_dict() for p in self.position],
            "position_statistics": None if self.statistics is None else self.statistics.to_json(),
        }



SCORE_TURN_PROBE = "score-turn"
"""The ``probe`` of a scoring run's per-turn judgements (rubric ``turn = "each"``): one call per
assistant turn, ``meta`` holding ``turn`` and ``n_turns``. The item-level residuals never read them."""

TurnPosition = Literal["first", "middle", "last"]
"""Where a turn sits in its conversation: a conversation with one assistant turn has only a last one."""


@dataclass(frozen=True)
class TurnRow:
    """Judge minus human on the turns at one position (or with one number).

    Attributes:
        position: ``first``, ``middle`` or ``last``, or the turn's number (``"1"``, ``"2"``...).
        judge_mean: The judge's mean turn score there.
        human_mean: The humans' mean turn score there (each turn's raters averaged first).
        estimate: Judge minus human (mean over turns), with its interval, ``n`` (turns) and units.
        n_answers: The conversations those turns come from (the bootstrap's clusters).
    """

    position: str
    judge_mean: float
    human_mean: float
    estimate: Estimate
    n_answers: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"position": self.position, "judge_mean": self.judge_mean, "human_mean": self.human_mean,
                "n_answers": self.n_answers, **self.estimate.to_dict()}


@dataclass(frozen=True)
class TurnSection:
    """The per-turn view: where in a conversation the judge departs from people.

    Attributes:
        by_position: One row per position (first, middle, last) that has turns.
        by_number: One row per turn number (turn 1, 2, ...).
        n_turns: Turns with both a judge score and a human score.
        n_answers: Conversations they come from.
        units: What the differences are in (judge scale points).
        method: How the intervals were computed.
        reason: Why there is no view (no per-turn labels, no per-turn judgements...); ``""`` when there is.
    """

    by_position: tuple[TurnRow, ...] = ()
    by_number: tuple[TurnRow, ...] = ()
    n_turns: int = 0
    n_answers: int = 0
    units: str = ""
    method: str = ""
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"by_position": [r.to_dict() for r in self.by_position],
                "by_number": [r.to_dict() for r in self.by_number], "n_turns": self.n_turns,
                "n_answers": self.n_answers, "units": self.units, "method": self.method,
                "reason": self.reason or None}


@dataclass(frozen=True)
class CalibrationReport:
    """The calibration report of one judge run (see the module docstring for its choices).

    Attributes:
        run_id: The judge run.
        judge_model: The judge model.
        judge_family: The judge's own family (from ``judge_runs.family``).
        rubric: ``rubric_id``, ``version``, ``scale``, ``name``.
        judge_format: The pointwise format the residuals and kappa use.
        human_rule: How the human score of an answer is defined (:data:`HumanScoreRule`).
        labels: Label counts, simulated ones included.
        design: The sample design the labels came from, or ``None``.
        provenance: Whether the gap is an upper bound, and why.
        provenance_records: What was checked: ``(artifact, author_kind, author)``.
        residuals: Per scale (``"pass"``, ``"score"``), the residual section.
        kappas: Judge-vs-human Cohen's kappa rows, overall then per family.
        alphas: Krippendorff's alpha among raters (``"overall score"``, ``"pass verdict"``).
        ppi: Prediction-powered pass rates per family.
        probes: Probe results.
        formats: Format diagnostics per format.
        notes: Sentences the reader needs before the numbers (simulated labels first).
        skipped: Sections that could not be computed, each with the reason.
        seed: Seed of every bootstrap.
        n_resamples: Bootstrap resamples.
        level: Confidence level of every interval.
        n_errors: Planned calls that failed with no reply (not scores).
        compare_run_id: The "before" run of a rubric-change comparison, if any.
        interval: Which raters the residual, gap and PPI intervals speak for (``"raters"`` or
            ``"panel"``).
        rater_models: Under the rule ``dawid-skene``, the model of the raters per label column
            (``"pass"``, ``"overall"``): each rater's estimated confusion.
        rater_names: The display name of each rater id in ``rater_models``.
        judge_endpoint: The judge's provider and endpoint host (``"openai at
            api.openai.com"``), when the run recorded it.
        turns: The per-turn view (rubric ``turn = "each"``): judge minus human by turn position;
            its ``reason`` says why it is empty.
    """

    run_id: str
    judge_model: str
    judge_family: str | None
    rubric: dict[str, Any]
    judge_format: str | None
    human_rule: HumanScoreRule
    labels: LabelSummary
    design: DesignNote | None
    provenance: ProvenanceNote | None
    provenance_records: tuple[tuple[str, str, str], ...]
    residuals: dict[str, ResidualSection]
    kappas: tuple[KappaRow, ...]
    alphas: dict[str, Estimate]
    ppi: tuple[PPIRow, ...]
    probes: ProbeSection
    formats: tuple[FormatRow, ...]
    notes: tuple[str, ...]
    skipped: tuple[str, ...]
    seed: int
    n_resamples: int
    level: float
    n_errors: int = 0
    compare_run_id: str | None = field(default=None)
    interval: RaterScope = "raters"
    rater_models: Mapping[str, RaterModel] = field(default_factory=dict)
    rater_names: Mapping[str, str] = field(default_factory=dict)
    judge_endpoint: str | None = None
    turns: TurnSection = field(default_factory=TurnSection)

    @property
    def simulated(self) -> bool:
        """Whether any human label behind the report is simulated."""
        return self.labels.simulated

    def human_rule_text(self) -> str:
        """How the human score of an answer is defined, and how many answers are adjudicated."""
        n = self.labels.n_adjudicated
        answers = f"{n} answer{'' if n == 1 else 's'}"
        mean = "the mean of the raters' current labels (a pass rate for pass verdicts)"
        rule = {
            "mean": mean,
            "majority": "the raters' most frequent current label, ties going to the lower score",
            "adjudicated": f"an admin's adjudicated label where the answer has one ({answers} adjudicated"
                           f"{self._revealed_words()}), else {mean}",
            "dawid-skene": "the posterior mean on the scale (for pass verdicts the probability of a pass) under "
                           "Dawid and Skene's model of the raters, which estimates each rater's confusion between "
                           "the rubric's levels and every answer's true level jointly by EM; the raters' leniency "
                           "spread and shares enter the intervals as under the mean rule, which errs wide",
        }[self.human_rule]
        kappa = "the raters' majority category"
        scope = (
            "raters like these: the intervals of the residuals, the gap and PPI add the spread of "
            "the raters' leniency, as if another panel from the same population had labelled"
            if self.interval == "raters"
            else "this panel only: the intervals treat the raters' leniencies as fixed"
        )
        if self.human_rule == "adjudicated":
            kappa = f"the adjudicated category, else {kappa}"
        ties = ("a tie goes to the lower category (for pass verdicts an even split is a fail), which leans "
                "kappa's human side towards fail")
        if self.human_rule == "dawid-skene":
            kappa, ties = "the model's most probable category", "a tie of the posterior goes to the lower category"
        text = (
            f"Human score per answer (rule `{self.human_rule}`): {rule}. Intervals speak for {scope}. Kappa uses "
            f"{kappa}; {ties}."
        )
        if self.labels.n_annotator_means:
            text += " " + self._annotator_means_text()
        if self.human_rule == "adjudicated":
            return text + " An adjudicator is never counted as a rater (alpha is among raters only)."
        if n:
            verb = "has" if n == 1 else "have"
            return text + f" {answers} {verb} an adjudicated label, not used under this rule (`adjudicated` uses it)."
        return text

    def rater_warnings(self) -> list[str]:
        """Under the rule ``dawid-skene``, one sentence per flagged rater and label column (else none).

        A rater whose labels tell the true level no better than chance (a random rater, one
        who always gives the same level) is estimated as such by the model but still weighs in its
        posterior: the sentence names them, as ``judgelab raters quality`` names a rater below the
        gold accuracy (:meth:`judgelab.calibration.stats.RaterModel.warnings`).
        """
        out = []
        for column, model in self.rater_models.items():
            what = "pass verdicts" if column == "pass" else "overall scores"
            for rater, warnings in zip(model.raters, model.warnings(), strict=True):
                out += [f"rater {self.rater_names.get(str(rater), str(rater))} ({what}): {w}" for w in warnings]
        return out

    def _annotator_means_text(self) -> str:
        """How the labels that are already means of several people enter the human score."""
        k = self.labels.n_annotator_means
        how = ("the mean weighs each by its number of people (a mean of 3 people at 2.0 beside one rater's 0 "
               "gives 1.5, the four people's mean; the majority counts it as that many votes)")
        if self.human_rule == "dawid-skene":
            how = "the rater model is fitted to single raters' labels only"
        return (f"{k} label{'' if k == 1 else 's'} {'is' if k == 1 else 'are'} already the mean of several people "
                f"(imported with n_raters): {how}; such a label is no one rater's, so the raters' spread and "
                "alpha leave it out.")

    def _named(self, model: dict[str, Any]) -> dict[str, Any]:
        """A model's JSON with each rater's display name beside their id."""
        raters = [{**r, "name": self.rater_names.get(str(r["rater"]))} for r in model["raters"]]
        return {**model, "raters": raters}

    def _revealed_words(self) -> str:
        """``"; 2 of them after revealing the family"`` (or nothing when every one was blind)."""
        k = self.labels.n_revealed
        return f"; {k} of them given after revealing the answer's family, not blind" if k else ""

    def to_dict(self) -> dict[str, Any]:
        """The whole report as JSON-ready data (``nan`` becomes ``None``)."""
        out: dict[str, Any] = {
            "simulated_labels": self.simulated,
            "notes": list(self.notes),
            "run_id": self.run_id,
            "compare_run_id": self.compare_run_id,
            "judge_model": self.judge_model,
            "judge_family": self.judge_family,
            "judge_endpoint": self.judge_endpoint,
            "rubric": self.rubric,
            "judge_format": self.judge_format,
            "human_rule": self.human_rule,
            "human_rule_text": self.human_rule_text(),
            "rater_model": {k: self._named(m.to_dict()) for k, m in self.rater_models.items()} or None,
            "rater_warnings": self.rater_warnings(),
            "interval": self.interval,
            "labels": self.labels.to_dict(),
            "design": None if self.design is None else self.design.to_dict(),
            "provenance": None if self.provenance is None else {
                "bound": self.provenance.bound,
                "reason": self.provenance.reason,
                "own_family_artifacts": list(self.provenance.own_family_artifacts),
                "unknown_artifacts": list(self.provenance.unknown_artifacts),
                "records": [list(r) for r in self.provenance_records],
            },
            "residuals": {k: v.to_dict() for k, v in self.residuals.items()},
            "kappa": [k.to_dict() for k in self.kappas],
            "alpha": {k: v.to_dict() for k, v in self.alphas.items()},
            "ppi": [p.to_dict() for p in self.ppi],
            "probes": self.probes.to_dict(),
            "formats": [f.to_dict() for f in self.formats],
            "turns": self.turns.to_dict(),
            "skipped": list(self.skipped),
            "n_errors": self.n_errors,
            "seed": self.seed,
            "n_resamples": self.n_resamples,
            "level": self.level,
        }
        return jsonable(out)


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def jsonable(value: Any) -> Any:
    """Deep copy of ``value`` made JSON-ready.

    NumPy scalars to Python, ``nan``/``inf`` to ``None``, tuples to lists, DataFrames to lists of
    records.
    """
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, pd.DataFrame):
        return jsonable(value.to_dict(orient="records"))
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    value = _plain(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
