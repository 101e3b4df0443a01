"""Planning an active design: the pool, each batch's probabilities, and the labels still needed.

Pure: arrays in, frozen dataclasses out. :mod:`judgelab.calibration.active._store` runs the same steps
over the project database, and :mod:`judgelab.calibration.active._simulate` over simulated pools.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import special

from judgelab.calibration.active._estimate import (
    DEFAULT_MARGIN,
    ActiveDraws,
    LastLook,
    LookStatistics,
    estimand_coefficients,
    repeated_intervals,
)
from judgelab.calibration.active._model import HumanPrediction, predict_humans, sampling_probabilities, task_uncertainty
from judgelab.calibration.active._spending import Spending
from judgelab.calibration.stats._result import Estimate

__all__ = [
    "DEFAULT_FLOOR",
    "GROWTH",
    "LOOKS_PLANNED",
    "MIN_BATCH",
    "PILOT_LABELS",
    "ActivePool",
    "BatchFloor",
    "BatchPlan",
    "SavingForecast",
    "batch_floor",
    "expected_population_variance",
    "labels_still_needed",
    "next_batch_size",
    "next_batch_variance",
    "plan_batch",
    "planned_labels",
    "planning_critical",
    "predicted_saving",
    "stack_draws",
]

#: Share of the uniform rate every task keeps (Zrnic & Candès mix uncertainty sampling with
#: uniform sampling the same way); ``bench/active_economy.py`` compares 0.1 to 0.5.
DEFAULT_FLOOR = 0.2
#: The first batch is the plan's expected need over this many looks ...
LOOKS_PLANNED = 4
#: ... and at most a pilot of this many labels: the plan rests on a prior rate of disagreement
#: until labels arrive, and a good judge needs far fewer than it expects (see :func:`next_batch_size`).
PILOT_LABELS = 40
#: A later batch adds at most this many times the labels collected so far.
GROWTH = 2.0
#: The smallest batch worth a look.
MIN_BATCH = 10
_PP = 100.0


@dataclass(frozen=True)
class ActivePool:
    """The judged answers an active design samples from.

    Attributes:
        answer_id: Answer ids.
        unit: Sampling unit code per answer, ``0..U−1``: the answer itself, or its task when the
            design is paired (every family's answer to a drawn task is labelled).
        task: Task code per answer, ``0..T−1``.
        task_id: Task id per code.
        family: Family per answer.
        judge_pass: The judge's pass verdict (0/1).
        judge_score: The judge's score (``nan`` when it cannot be compared with the humans').
        flipped: The judge disagreed with itself on the answer (orders or formats).
    """

    answer_id: npt.NDArray[np.str_]
    unit: npt.NDArray[np.intp]
    task: npt.NDArray[np.intp]
    task_id: npt.NDArray[np.str_]
    family: npt.NDArray[np.str_]
    judge_pass: npt.NDArray[np.float64]
    judge_score: npt.NDArray[np.float64]
    flipped: npt.NDArray[np.bool_]

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, *, paired: bool = False) -> ActivePool:
        """From one row per answer, sorted here by answer id.

        Args:
            frame: ``answer_id``, ``task_id``, ``family``, ``judge_pass``, and optional
                ``judge_score`` and ``flipped``.
            paired: Whole tasks are the sampling units (else single answers).
        """
        frame = frame.sort_values("answer_id").reset_index(drop=True)
        task_ids, task = np.unique(frame["task_id"].astype(str).to_numpy(), return_inverse=True)
        n = len(frame)
        score = frame["judge_score"] if "judge_score" in frame.columns else pd.Series(np.nan, index=frame.index)
        flipped = frame["flipped"] if "flipped" in frame.columns else pd.Series(False, index=frame.index)
        task = task.ravel().astype(np.intp)
        return cls(
            answer_id=frame["answer_id"].astype(str).to_numpy(), unit=task if paired else np.arange(n, dtype=np.intp),
            task=task,
            task_id=task_ids.astype(str), family=frame["family"].astype(str).to_numpy(),
            judge_pass=frame["judge_pass"].to_numpy(dtype=float),
            judge_score=pd.to_numeric(score, errors="coerce").to_numpy(dtype=float).reshape(n),
            flipped=flipped.fillna(False).to_numpy(dtype=bool),
        )

    @property
    def n_tasks(self) -> int:
        """Tasks in the pool."""
        return int(self.task_id.size)

    @property
    def n_units(self) -> int:
        """Sampling units in the pool."""
        return int(self.unit.max(initial=-1)) + 1

    @property
    def paired(self) -> bool:
        """Whether whole tasks are the sampling units."""
        return bool(np.array_equal(self.unit, self.task))

    def answers_per_unit(self) -> npt.NDArray[np.float64]:
        """``m_t``: the labels a unit costs."""
        return np.bincount(self.unit, minlength=self.n_units).astype(float)

    def known_units(self, human_pass: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """Units all of whose answers have a human pass verdict."""
        missing = ~np.isfinite(np.asarray(human_pass, dtype=float))
        return np.bincount(self.unit, weights=missing.astype(float), minlength=self.n_units) == 0

    def gap_coefficients(self, own_family: str | None) -> npt.NDArray[np.float64]:
        """The stopping rule's figure: the gap, or the first family's residual without a gap."""
        return _figure_coefficients(self.family, own_family)


def _figure_coefficients(family: npt.NDArray[np.str_], own_family: str | None) -> npt.NDArray[np.float64]:
    """:meth:`ActivePool.gap_coefficients` of answers of these families."""
    fams = sorted(set(family.tolist()))
    if own_family is not None and own_family in fams and len(fams) > 1:
        return estimand_coefficients(family, own_family=own_family)
    return estimand_coefficients(family, target=fams[0])


@dataclass(frozen=True)
class BatchPlan:
    """One batch, planned before its draw from the labels so far.

    Attributes:
        prob: ``π_t`` per unit (1 for known units).
        known: Units labelled already.
        prediction: The predicted human labels.
        expected_labels: ``Σ m_t π_t`` over the units not known (the batch size).
        planned_variance: The gap's design variance this batch is planned to give (pp²).
        floor: The smallest probability a unit not known could get.
    """

    prob: npt.NDArray[np.float64]
    known: npt.NDArray[np.bool_]
    prediction: HumanPrediction
    expected_labels: float
    planned_variance: float
    floor: float

    @property
    def weight(self) -> float:
        """``w_b``: the batch's expected labels; a batch that labels every unit left is exact and outweighs the rest.

        Batch sizes, not the inverse planned variances, because the planned variance of the
        first batch rests on the prior alone and is often far off (sizes needed 10-25% fewer
        labels in ``bench/active_economy.py``); per label the batches' variances are alike, and
        sizes are fixed before the draw as the estimator needs.
        """
        exact = not (~self.known).any() or self.planned_variance <= 0
        return 1e12 if exact else self.expected_labels


def planning_critical(level: float = 0.95) -> float:
    """The critical value a plan expects at the look that meets the target: ``z_{1−α/2}``.

    That look spends what the looks before it left, and with the default margin they leave
    nearly all of it: in ``bench/active_economy.py`` the last look's plan value was 1.96-1.97. Read
    as t on a small sample it is a little more; the later batches are sized from the looks, so
    they make up the difference.

    Examples:
        >>> round(planning_critical(), 3)
        1.96
    """
    return float(special.ndtri(0.5 + level / 2))


def _expected_variance(
    prob: npt.NDArray[np.float64], known: npt.NDArray[np.bool_], u: npt.NDArray[np.float64]
) -> float:
    free = ~known
    return float(((1 - prob[free]) / prob[free] * u[free] ** 2).sum())


def plan_batch(
    pool: ActivePool,
    *,
    size: float,
    human_pass: npt.ArrayLike,
    human_score: npt.ArrayLike | None = None,
    own_family: str | None,
    floor: float = DEFAULT_FLOOR,
    disagreement: float = 0.2,
    prior_labels: float = 5.0,
) -> BatchPlan:
    """Probabilities and predictions of the next batch, from the labels so far.

    Args:
        pool: The pool.
        size: Expected labels (answers) of the batch.
        human_pass: Human pass share per answer so far (``nan`` where unlabelled).
        human_score: Human score per answer on the judge's scale (``nan`` where unlabelled).
        own_family: The judge's family.
        floor: See :func:`judgelab.calibration.active.sampling_probabilities`.
        disagreement: Planning disagreement rate for the prior.
        prior_labels: Weight of the prior in a stratum, in labels.

    Returns:
        The :class:`BatchPlan`.
    """
    h = np.asarray(human_pass, dtype=float)
    pred = predict_humans(pool.judge_pass, pool.family, judge_score=pool.judge_score, flipped=pool.flipped,
                          human_pass=h, human_score=human_score, disagreement=disagreement,
                          prior_labels=prior_labels)
    coef = pool.gap_coefficients(own_family) * _PP
    u = task_uncertainty(pred.pred_pass, coef, pool.unit, n_tasks=pool.n_units)
    known = pool.known_units(h)
    m = pool.answers_per_unit()
    prob = sampling_probabilities(u, size, cost=m, floor=floor, fixed=known)
    free = ~known
    total = float(m[free].sum())
    return BatchPlan(
        prob=prob, known=known, prediction=pred,
        expected_labels=float((m[free] * prob[free]).sum()),
        planned_variance=_expected_variance(prob, known, u),
        floor=floor * min(size / total, 1.0) if total else 1.0,
    )


def expected_population_variance(
    pool: ActivePool,
    *,
    human_pass: npt.ArrayLike,
    own_family: str | None,
    disagreement: float = 0.2,
    prior_labels: float = 5.0,
) -> float:
    """The pool's variance around the judge's behaviour, ``σ²/T`` (pp²), that the model expects.

    The look's own estimate of it (:func:`judgelab.calibration.active.look_statistics`) rests on the
    labels so far and is noisy early: one rare answer drawn with a small probability can put it at
    ten times its value after a first batch. :func:`labels_still_needed` treats this part as
    fixed, so projecting from such an estimate says no number of labels can meet the target and
    the next batch would label the whole pool; the model's value (predictions from the same
    labels, :func:`predict_humans`) moves smoothly with them.
    """
    h = np.asarray(human_pass, dtype=float)
    pred = predict_humans(pool.judge_pass, pool.family, judge_score=pool.judge_score, flipped=pool.flipped,
                          human_pass=h, disagreement=disagreement, prior_labels=prior_labels)
    return _population_variance(pool, pred, pool.gap_coefficients(own_family) * _PP)


def _population_variance(pool: ActivePool, pred: HumanPrediction, coef: npt.NDArray[np.float64]) -> float:
    """Model-expected ``σ²/T`` of the gap: the variance of a task's total over tasks, over ``T``."""
    p = pred.pred_pass
    t = pool.n_tasks
    mean = np.bincount(pool.task, weights=coef * (pool.judge_pass - p), minlength=t)
    var = np.bincount(pool.task, weights=coef**2 * p * (1 - p), minlength=t)
    second = float((t**2 * (mean**2 + var)).mean())
    return max(second - float(mean.sum()) ** 2, 0.0) / t


def planned_labels(
    pool: ActivePool,
    *,
    target_half_width: float,
    human_pass: npt.ArrayLike,
    own_family: str | None,
    floor: float = DEFAULT_FLOOR,
    disagreement: float = 0.2,
    prior_labels: float = 5.0,
    level: float = 0.95,
) -> int | None:
    """Labels the plan expects to need for the target, as if drawn in one batch.

    The model's variance at ``n`` labels (uncertainties from :func:`predict_humans`, probabilities
    from :func:`sampling_probabilities`) plus the pool's, against ``(H / c)²`` with ``c`` the
    :func:`planning_critical` value.

    Returns:
        The labels (answers), or ``None`` when even labelling the whole pool would not do.
    """
    h = np.asarray(human_pass, dtype=float)
    pred = predict_humans(pool.judge_pass, pool.family, judge_score=pool.judge_score, flipped=pool.flipped,
                          human_pass=h, disagreement=disagreement, prior_labels=prior_labels)
    coef = pool.gap_coefficients(own_family) * _PP
    u = task_uncertainty(pred.pred_pass, coef, pool.unit, n_tasks=pool.n_units)
    known = pool.known_units(h)
    m = pool.answers_per_unit()
    allowed = (target_half_width / planning_critical(level)) ** 2 - _population_variance(pool, pred, coef)
    capacity = float(m[~known].sum())
    if allowed <= 0:
        return None

    def variance(n: float) -> float:
        return _expected_variance(sampling_probabilities(u, n, cost=m, floor=floor, fixed=known), known, u)

    if variance(capacity) > allowed:
        return None
    lo, hi = 0.0, capacity
    if variance(1.0) <= allowed:
        return 1
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if variance(mid) <= allowed else (mid, hi)
    return math.ceil(hi)


@dataclass(frozen=True)
class SavingForecast:
    """The saving a design can expect over simple random sampling, predicted from the labels so far.

    Attributes:
        active_ratio: Labels of the active design over those of simple random sampling (SRS) of
            the same units, for the same target (``inf`` when the active design cannot meet it).
        stratified_ratio: The same for a design stratified by the judge's verdicts on the unit
            (Neyman allocation, one batch).
        active_labels: Labels the active design is predicted to need in all (those so far
            included).
        srs_labels: Labels SRS is predicted to need in all.
        stratified_labels: Labels the stratified design is predicted to need in all.
        labels_seen: Labelled answers the prediction rests on.
        disagreements_seen: Human-judge disagreements among them.
        basis: The basis and the condition the prediction holds under, in words.
        measured_ratio: The active design's design effect the draws so far show (its design
            variance over that of SRS of as many units, from the same labels), when the draws
            were given: a model that misplaces the judge's errors shows here, not in
            ``active_ratio``. ``nan`` when not measured.
    """

    active_ratio: float
    stratified_ratio: float
    active_labels: float
    srs_labels: float
    stratified_labels: float
    labels_seen: int
    disagreements_seen: float
    basis: str
    measured_ratio: float = math.nan
    evidence: Estimate | None = None

    @property
    def no_saving(self) -> bool:
        """Whether the labels so far show no link between the judge's score and its errors (``evidence``).

        Then the active design is expected to save nothing (a judge wrong at random made it need
        2.5-3x the labels of simple random sampling): :attr:`ratio` is 1 and the headline says to
        label by simple random sampling.
        """
        return self.evidence is not None and not self.evidence.ci_low > 0

    @property
    def ratio(self) -> float:
        """The active design's ratio to plan on: the larger of the model's and the measured one (1: no saving)."""
        if self.no_saving:
            return 1.0
        known = [r for r in (self.active_ratio, self.measured_ratio) if not np.isnan(r)]
        return float(max(known)) if known else float("nan")  # neither known yet: no figure, no warning

    @property
    def stratified(self) -> float:
        """The stratified design's ratio to plan on: 1 (proportional allocation, no saving) under the same gate.

        The same evidence decides it as :attr:`ratio`: when the labels so far show no link between
        the judge's score and its errors, allocating labels by the judge's verdicts is not expected to
        beat simple random sampling read with the same model (the plan's simple random sample already
        corrects the judge's prediction within each verdict), so the plan is proportional allocation.
        """
        return 1.0 if self.no_saving else self.stratified_ratio

    @property
    def headline(self) -> str:
        """The expected saving in one sentence, for a team deciding whether to commit to the design."""
        if self.no_saving and self.evidence is not None:
            e = self.evidence
            return ("No saving expected: the labels so far show people disagreeing with the judge no more often "
                    f"where its score says they would ({e.extra['upper_share']:.0%} there against "
                    f"{e.extra['lower_share']:.0%} elsewhere: {e.estimate:+.1f} pp, 95% CI {e.ci_low:+.1f} to "
                    f"{e.ci_high:+.1f}, n = {e.n} labels); label by simple random sampling instead of the active "
                    "design or one stratified by the judge's verdicts (or allocate proportionally)")
        if not math.isfinite(self.ratio):
            stratified = (f"; a design stratified by the judge's verdicts needs {self.stratified_ratio:.2f}x the "
                          "labels of simple random sampling" if math.isfinite(self.stratified_ratio) else "")
            return ("Expected saving: none to state (the active design cannot meet the target within the "
                    f"pool{stratified})")
        verdict = "fewer" if self.ratio < 1 else "no fewer"
        stratified = f"{self.stratified_ratio:.2f}x" if math.isfinite(self.stratified_ratio) else "not known yet"
        return (f"Expected labels against simple random sampling: active {self.ratio:.2f}x ({verdict}), stratified "
                f"by the judge's verdicts {stratified}, predicted from {self.labels_seen} labels; it "
                "holds only where the judge's score tells where people disagree with it")


MIN_EVIDENCE_LABELS = 20
"""Labelled answers needed before the forecast reads the judge's errors from them (else the prior speaks)."""


def score_tells_errors(
    pool: ActivePool, *, human_pass: npt.ArrayLike, disagreement: float = 0.2, prior_labels: float = 5.0,
    level: float = 0.95,
) -> Estimate | None:
    """How much more often people disagree with the judge where its score says they would, from the labels so far.

    The active design saves labels only when the judge's score tells where its errors are: it
    draws the answers the model of :func:`judgelab.calibration.active.predict_humans` puts next to the
    pass threshold (or flipped) more often. Before the labels so far are used, that model's prior
    ranks every answer by its expected disagreement; on the labelled answers this compares the
    observed disagreement share ``|human − judge|`` in the upper half of that ranking with the lower
    half. A judge wrong at random shows no difference, and then no saving is to be expected.

    Returns:
        The difference (upper half minus lower half, percentage points) with a Wald interval on
        the two shares, or ``None`` with fewer than :data:`MIN_EVIDENCE_LABELS` labelled answers
        or fewer than 5 in either half.
    """
    h = np.asarray(human_pass, dtype=float)
    seen = np.isfinite(h)
    if seen.sum() < MIN_EVIDENCE_LABELS:
        return None
    prior = predict_humans(pool.judge_pass, pool.family, judge_score=pool.judge_score, flipped=pool.flipped,
                           disagreement=disagreement, prior_labels=prior_labels)
    q = np.asarray(prior.disagreement, dtype=float)[seen]
    wrong = np.abs(h[seen] - pool.judge_pass[seen])
    # Ties in the prior (a verdict-only judge: one value per stratum) go by rank, so the halves are halves.
    order = np.argsort(np.argsort(q, kind="stable"), kind="stable")
    upper = order >= q.size / 2
    if min(upper.sum(), (~upper).sum()) < 5:
        return None
    a, b = wrong[upper], wrong[~upper]
    diff = float(a.mean() - b.mean())
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size) if a.size > 1 and b.size > 1 else math.nan
    z = float(special.ndtri(0.5 + level / 2))
    if not se > 0:  # no disagreement anywhere (or everywhere): the data cannot place an error
        se = 0.0
    return Estimate(_PP * diff, _PP * (diff - z * se), _PP * (diff + z * se), int(seen.sum()),
                    "disagreement share |human - judge| of the labelled answers in the upper half of the plan's "
                    "prior expected disagreement minus the lower half; Wald interval on the two shares",
                    "percentage points", level,
                    {"upper_share": float(a.mean()), "lower_share": float(b.mean()), "n_upper": int(a.size),
                     "n_lower": int(b.size)})


@dataclass(frozen=True)
class BatchFloor:
    """The floor a batch is drawn with, after the labels so far have had their say (:func:`batch_floor`).

    Attributes:
        floor: The floor to plan the batch with (1: simple random sampling).
        evidence: :func:`score_tells_errors` of the labels so far (``None``: too few to read).
        note: Why the batch falls back, for the batch's notes (``None`` when it does not).
    """

    floor: float
    evidence: Estimate | None
    note: str | None

    @property
    def fell_back(self) -> bool:
        """Whether the batch is drawn by simple random sampling because the labels show no saving."""
        return self.note is not None


def batch_floor(
    pool: ActivePool, *, human_pass: npt.ArrayLike, floor: float = DEFAULT_FLOOR, disagreement: float = 0.2,
    prior_labels: float = 5.0, forecast: SavingForecast | None = None,
) -> BatchFloor:
    """The floor of the next batch: the design's, or 1 (simple random sampling) when the labels show no saving.

    The one gate the store (:func:`judgelab.calibration.active.draw_active_batch`) and the simulator
    (:func:`judgelab.calibration.active.run_active`) both draw through. When the labels so far show no link
    between the judge's score and its errors (:func:`score_tells_errors`' interval does not lie
    above 0), drawing by the judge's doubt spends labels where they help no more than elsewhere (a
    judge wrong at random needed 2.5-3x the labels of simple random sampling), so every unlabelled
    unit gets the same probability. With fewer than :data:`MIN_EVIDENCE_LABELS` labels the design's
    floor stands. The same fall-back follows when the design's own forecast from the labels so far
    (``forecast``: :func:`predicted_saving`, its :attr:`SavingForecast.ratio`) expects the active
    design to need more labels than simple random sampling: a pilot that forecast 1.15x must not
    be followed by an active batch.
    """
    evidence = score_tells_errors(pool, human_pass=human_pass, disagreement=disagreement, prior_labels=prior_labels)
    if evidence is not None and evidence.ci_low > 0 and forecast is not None and math.isfinite(forecast.ratio) \
            and forecast.ratio > 1:
        return BatchFloor(1.0, evidence, (
            f"no saving expected: the forecast from the {forecast.labels_seen} labels so far says the active design "
            f"needs {forecast.ratio:.2f}x the labels of simple random sampling; this batch is drawn by simple "
            "random sampling"))
    if evidence is None or evidence.ci_low > 0:
        return BatchFloor(floor, evidence, None)
    note = (f"no saving expected: people disagreed with the judge no more often where its score says they would "
            f"({evidence.estimate:+.1f} pp, 95% CI {evidence.ci_low:+.1f} to {evidence.ci_high:+.1f}, "
            f"n = {evidence.n} labels); this batch is drawn by simple random sampling")
    return BatchFloor(1.0, evidence, note)


def predicted_saving(
    pool: ActivePool,
    *,
    target_half_width: float,
    human_pass: npt.ArrayLike,
    own_family: str | None,
    floor: float = DEFAULT_FLOOR,
    disagreement: float = 0.2,
    prior_labels: float = 5.0,
    level: float = 0.95,
    draws: ActiveDraws | None = None,
    design_variance: float | None = None,
    human_in_draws: npt.ArrayLike | None = None,
) -> SavingForecast:
    """Predict the active and stratified designs' labels against SRS from the labels so far.

    A saving is not a constant of the method: it is as large as the judge's score tells where
    people disagree with it. When the judge's errors sit next to its pass threshold, the active
    design needed 0.6-0.7x the labels of SRS at 85% agreement; when a quarter of its readings are
    unrelated to quality, about 1x (``bench/active_economy.py --unrelated 0.25``). So the plan
    says what it expects from what its labels show, before the team commits to it: the model of
    where people disagree (:func:`judgelab.calibration.active.predict_humans`, refitted from 20 labels on),
    the active design's one-batch need (:func:`planned_labels`, with its floor), the same with
    uniform probabilities (SRS of the same units) and with Neyman allocation over strata of the
    judge's verdicts on each unit (``(Σ_h W_h S_h)² / S²`` of SRS's variance), all for the same
    target and with the pool's own variance.

    Args:
        pool: The pool.
        target_half_width: The gap's target half-width, percentage points.
        human_pass: Labels so far (a pilot or a first batch), ``nan`` where unlabelled.
        own_family: The judge's family (``None``: a residual of the pool).
        floor: The active design's floor.
        disagreement: Planning disagreement rate for the prior.
        prior_labels: Weight of the prior in a stratum, in labels.
        level: Confidence level.
        draws: The active design's draws so far, with ``design_variance`` (the last look's
            :attr:`LookStatistics.design`): the design effect they show is measured too
            (:attr:`SavingForecast.measured_ratio`).
        design_variance: See ``draws``.
        human_in_draws: ``human_pass`` in the order of ``draws.answer_id`` when it is not the
            pool's order (default: the pool's).

    Returns:
        A :class:`SavingForecast`.
    """
    h = np.asarray(human_pass, dtype=float)
    kw: dict[str, Any] = {"target_half_width": target_half_width, "human_pass": h, "own_family": own_family,
                          "disagreement": disagreement, "prior_labels": prior_labels, "level": level}
    seen = int(np.isfinite(h).sum())
    extra = {name: planned_labels(pool, floor=f, **kw) for name, f in (("active", floor), ("srs", 1.0))}
    total = {name: math.inf if n is None else float(seen + n) for name, n in extra.items()}
    pred = predict_humans(pool.judge_pass, pool.family, judge_score=pool.judge_score, flipped=pool.flipped,
                          human_pass=h, disagreement=disagreement, prior_labels=prior_labels)
    factor = _stratified_factor(pool, pred, pool.gap_coefficients(own_family) * _PP)
    stratified = seen + (total["srs"] - seen) * factor
    disagreements = float(np.nansum(np.abs(h - pool.judge_pass)))
    ratio_a = total["active"] / total["srs"] if math.isfinite(total["srs"]) else math.nan
    ratio_s = stratified / total["srs"] if math.isfinite(total["srs"]) else math.nan
    basis = (
        f"predicted from {seen} labels ({disagreements:.0f} disagreements) by the plan's model of where people "
        f"disagree with the judge: active {total['active']:.0f} labels, stratified by the judge's verdicts "
        f"{stratified:.0f}, simple random {total['srs']:.0f}, for ±{target_half_width:g} pp, each as one batch "
        "(the stopping rule and the learning add 5-10% to the active design). It holds while the labels so far "
        "show where people disagree with the judge; with few of them the model's prior (disagreement next to "
        "the pass threshold) speaks more than the data, and a judge whose errors lie anywhere saves less"
    )
    measured = math.nan
    if draws is not None and design_variance is not None:
        h_draws = h if human_in_draws is None else np.asarray(human_in_draws, dtype=float)
        coef_draws = _figure_coefficients(draws.family, own_family) * _PP
        measured = _measured_design_effect(draws, h_draws, coef_draws, design_variance)
        basis += (f"; the draws so far measure a design effect of {measured:.2f} against simple random sampling of "
                  "as many units (plan on the larger of the two)")
    evidence = score_tells_errors(pool, human_pass=h, disagreement=disagreement, prior_labels=prior_labels,
                                  level=level)
    if evidence is not None:
        basis += (f"; in the labels so far people disagreed with the judge on {evidence.extra['upper_share']:.0%} of "
                  f"the answers its score puts where they would, against {evidence.extra['lower_share']:.0%} elsewhere "
                  f"({evidence.estimate:+.1f} pp, 95% CI {evidence.ci_low:+.1f} to {evidence.ci_high:+.1f})")
    return SavingForecast(ratio_a, ratio_s, total["active"], total["srs"], stratified, seen, disagreements, basis,
                          measured, evidence)


def _measured_design_effect(
    draws: ActiveDraws, h: npt.NDArray[np.float64], coef: npt.NDArray[np.float64], design_variance: float
) -> float:
    """The last look's design variance over SRS's of as many units, both from the labels so far.

    SRS's is ``U² S²/n (1 − n/U)``, ``S²`` the variance of a unit's term ``Σ c (judge − human)``
    over the pool, estimated from the drawn units weighted by ``1/π`` (``π`` of being drawn in
    any batch so far).
    """
    ever = draws.drawn.any(axis=0)
    pi = 1 - np.prod(np.where(draws.known, 1.0, 1 - draws.prob), axis=0)
    z = np.bincount(draws.unit, weights=np.nan_to_num(coef * (draws.judge_pass - h)), minlength=draws.n_units)
    w = 1 / np.maximum(pi[ever], 1e-12)
    mean = float(w @ z[ever] / w.sum())
    s2 = float(w @ (z[ever] - mean) ** 2 / w.sum())
    units, n = draws.n_units, int(ever.sum())
    srs = units**2 * s2 / max(n, 1) * (1 - n / units)
    return float(design_variance / srs) if srs > 0 else math.nan


def _stratified_factor(pool: ActivePool, pred: HumanPrediction, coef: npt.NDArray[np.float64]) -> float:
    """``(Σ_h W_h S_h)² / S²``: Neyman allocation over the units' judge verdicts, against SRS."""
    units = pool.n_units
    mean = np.bincount(pool.unit, weights=coef * (pool.judge_pass - pred.pred_pass), minlength=units)
    var = np.bincount(pool.unit, weights=coef**2 * pred.pred_pass * (1 - pred.pred_pass), minlength=units)
    key = np.char.add(np.char.add(pool.family, ":"), pool.judge_pass.astype(int).astype(str))
    order = np.argsort(pool.unit, kind="stable")
    per_unit = pd.Series(key[order]).groupby(pool.unit[order]).agg("|".join)
    stratum = np.unique(per_unit.to_numpy().astype(str), return_inverse=True)[1].ravel()
    total_sd = math.sqrt(float(mean.var() + var.mean()))
    if total_sd <= 0:
        return 1.0
    frame = pd.DataFrame({"s": stratum, "mean": mean, "var": var})
    g = frame.groupby("s")
    within = np.sqrt(g["mean"].var(ddof=0).fillna(0.0) + g["var"].mean())
    weights = g.size() / units
    return float((weights * within).sum() ** 2 / total_sd**2)


def next_batch_variance(
    pool: ActivePool,
    *,
    human_pass: npt.ArrayLike,
    own_family: str | None,
    floor: float = DEFAULT_FLOOR,
    disagreement: float = 0.2,
    prior_labels: float = 5.0,
) -> Callable[[float], float]:
    """The design variance (pp²) the model expects of a new batch of ``n`` labels, as a function of ``n``.

    The predictions are made once, from the labels so far (:func:`predict_humans`); each ``n``
    only re-scales the probabilities (:func:`sampling_probabilities`).
    """
    h = np.asarray(human_pass, dtype=float)
    pred = predict_humans(pool.judge_pass, pool.family, judge_score=pool.judge_score, flipped=pool.flipped,
                          human_pass=h, disagreement=disagreement, prior_labels=prior_labels)
    u = task_uncertainty(pred.pred_pass, pool.gap_coefficients(own_family) * _PP, pool.unit, n_tasks=pool.n_units)
    known = pool.known_units(h)
    m = pool.answers_per_unit()

    def variance(n: float) -> float:
        return _expected_variance(sampling_probabilities(u, n, cost=m, floor=floor, fixed=known), known, u)

    return variance


def labels_still_needed(
    stats: LookStatistics,
    *,
    target_half_width: float,
    capacity: float = math.inf,
    aim: float = 1.0,
    level: float = 0.95,
    spending: Spending = "obf",
    margin: float = DEFAULT_MARGIN,
    next_variance: Callable[[float], float] | None = None,
    weight_total: float | None = None,
    population: float | None = None,
    last_look: LastLook = "target",
) -> float:
    """Labels the current rate says are still needed to meet the target at the next look.

    Without ``next_variance``, the design variance times the labels so far is the *rate*
    (variance per label), and ``n`` more labels would give ``rate / (labels + n) + pool + raters``
    at the next look. With it (the model's variance of a new batch of ``n`` labels, planned from
    the labels so far, :func:`next_batch_variance`), the next look's design variance is the
    batches' combination, ``(Σ w_b² V̂_b + n² V(n)) / (W + n)²``, so a first batch drawn before
    the predictions had learnt anything does not set the pace of the rest. Either way the next
    look's critical value follows from the plan and the looks so far
    (:func:`judgelab.calibration.active.spending_boundaries`), and the answer is the smallest ``n`` whose
    next-look half-width is at most ``aim·H``.

    Args:
        stats: The looks so far (of the figure the stopping rule watches).
        target_half_width: ``H``.
        capacity: Labels left (unlabelled answers, or the budget).
        aim: Share of ``H`` to aim at (below 1 leaves room for the noise of the rate).
        level: ``1 − alpha`` of the plan.
        spending: The spending function.
        margin: See :data:`judgelab.calibration.active.DEFAULT_MARGIN`.
        next_variance: ``V(n)``, see above.
        weight_total: ``W``: the batches' weights so far (their expected labels), with
            ``next_variance``.
        population: The model's pool variance (:func:`expected_population_variance`), used
            instead of the last look's estimate only when that estimate alone rules the target
            out: it can be ten times too high after a small first batch, and the projection
            treats this part as fixed, so it would ask for the whole pool.
        last_look: See :data:`judgelab.calibration.active.LastLook`.

    Returns:
        0 when the last look met the target; ``inf`` when ``capacity`` labels would not.
    """
    plan: dict[str, Any] = {"target_half_width": target_half_width, "level": level, "spending": spending,
                            "margin": margin, "last_look": last_look}
    zeros = np.zeros(stats.variance.size + 1)
    if repeated_intervals(zeros[1:], stats.variance, df=stats.df, **plan).half_width[-1] <= target_half_width:
        return 0.0
    labels = float(max(stats.labels[-1], 1))
    rate = float(stats.design[-1]) * labels
    fixed = float(stats.population[-1] + stats.raters[-1])
    df_per_label = float(stats.df[-1]) / labels  # the next look's degrees of freedom grow with its labels

    past = float(stats.design[-1]) * (weight_total or labels) ** 2

    def half_width(extra: float) -> float:
        if next_variance is None or weight_total is None:
            var = rate / (labels + extra) + fixed
        else:
            var = (past + extra**2 * next_variance(extra)) / (weight_total + extra) ** 2 + fixed
        df = np.r_[stats.df, max(df_per_label * (labels + extra), 1.0)]
        return float(repeated_intervals(zeros, np.r_[stats.variance, var], df=df, **plan).half_width[-1])

    goal = aim * target_half_width
    most = capacity if math.isfinite(capacity) else 100 * labels
    if most < 1:
        return math.inf
    if half_width(most) > goal and population is not None and population < stats.population[-1]:
        # The estimated pool variance alone rules the target out; it is noisy early, so the
        # model's value decides whether more labels can still meet it (a batch, not the pool).
        fixed = float(population + stats.raters[-1])
    if half_width(most) > goal:
        return math.inf
    lo, hi = 0.0, float(most)
    while hi - lo > 0.5:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if half_width(mid) <= goal else (mid, hi)
    return float(math.ceil(hi))


def next_batch_size(collected: int, *, needed: float | None, left: int) -> int:
    """Labels the next batch draws.

    The first batch (nothing collected yet) is a pilot: the plan's expected need ``needed`` over
    :data:`LOOKS_PLANNED` looks, at most :data:`PILOT_LABELS`. A later batch is what the current
    rate says the next look needs (``needed``, from :func:`labels_still_needed`; infinite when it
    says nothing left would do), at most :data:`GROWTH` times the labels collected so far. The plan
    starts from a prior rate of disagreement and the rate after a small batch is noisy, so sizes
    grow step by step instead of jumping to a projection: in ``bench/active_economy.py`` (100
    pools per cell) a pilot of 40 and doubling cut the labels a 0-100 judge at 95% agreement needs
    from 0.97x to 0.59x those of simple random sampling, and a 1-5 judge's from 1.32x to 0.93x,
    and at 70-85% agreement moved them by 0 to -5%; a pilot of 60 followed by whatever the
    projection said needed 9% more labels at 85% (the projection from 60 labels overshot).

    Args:
        collected: Labels the design's batches collected so far.
        needed: See above (``None``: the plan cannot say; the first batch then takes a pilot).
        left: Labels left (unlabelled answers, within the budget).

    Returns:
        At least :data:`MIN_BATCH` (unless fewer are left), at most ``left``.

    Examples:
        >>> next_batch_size(0, needed=600, left=5000), next_batch_size(40, needed=600, left=5000)
        (40, 80)
        >>> next_batch_size(120, needed=35, left=5000), next_batch_size(120, needed=math.inf, left=100)
        (35, 100)
    """
    size: float
    if collected <= 0:
        plan = math.inf if needed is None else needed / LOOKS_PLANNED
        size = min(PILOT_LABELS, plan)
    else:
        size = min(math.inf if needed is None else needed, GROWTH * collected)
    return int(min(left, max(MIN_BATCH, math.ceil(size))))


def stack_draws(
    pool: ActivePool, plans: Sequence[BatchPlan], drawn: Sequence[npt.ArrayLike]
) -> ActiveDraws:
    """The :class:`ActiveDraws` of batches planned by :func:`plan_batch` and drawn as ``drawn``."""
    if len(plans) != len(drawn) or not plans:
        raise ValueError("stack_draws: one draw per planned batch, at least one")
    xi = np.vstack([np.asarray(d, dtype=bool) | p.known for d, p in zip(drawn, plans, strict=True)])
    return ActiveDraws(
        answer_id=pool.answer_id, unit=pool.unit, task=pool.task, task_id=pool.task_id, family=pool.family,
        judge_pass=pool.judge_pass, judge_score=pool.judge_score,
        prob=np.vstack([p.prob for p in plans]), drawn=xi, known=np.vstack([p.known for p in plans]),
        pred_pass=np.vstack([p.prediction.pred_pass for p in plans]),
        pred_score=np.vstack([p.prediction.pred_score for p in plans]),
        weight=np.array([p.weight for p in plans]),
    )
