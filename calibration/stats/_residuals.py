"""Judge-minus-human residuals per model family, and the self-preference gap.

The **residual** of a family is the mean of (judge score − human score) over that family's
answers: how much more generous (positive) or strict (negative) the judge is than blind human
raters on that family's writing. The **self-preference gap** is the residual on the judge's own
family minus the residual on the other family. A judge that is lenient everywhere has equal
residuals and no gap; only a residual that moves with the author's family is evidence of
family preference (seed 000: humans pass 71% / 68%, the judge 79% / 66%, residuals +8 / −2,
gap 10 percentage points).

Inputs are one row per answer: the judge's verdict or score, the human score, the answer's
family and its task. Every mean is a Hajek (ratio) mean ``Σ w·x / Σ w``: with design weights
``w`` = 1 / inclusion probability it is consistent for the pool even when the hand-label sample
was stratified by the judge's own verdict; without weights it is the plain mean.

Intervals (:mod:`judgelab.calibration.stats._variance`): the variance is linearised and estimated from
task totals, within the design's strata when the sample was drawn within strata, and the
interval is ``t`` with clusters − strata degrees of freedom. A sample with few disagreements
(a good judge on a few tasks) has its variance raised to the rule of three's
(:func:`judgelab.calibration.stats.rare_event_floor`), and the report says so. Both families' answers to a task
enter one task total, so the gap's interval is paired by task and the difficulty both answers
share cancels. With per-rater labels (``rater_level``) and ``interval="raters"`` (the default),
the interval also covers which raters happened to be on the panel
(:mod:`judgelab.calibration.stats._raters`); ``interval="panel"`` speaks for this panel only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from judgelab.calibration.stats._bootstrap import check_choice, check_level, finite_vector
from judgelab.calibration.stats._humans import _RULES, HumanRule, _collapse
from judgelab.calibration.stats._provenance import provenance_note
from judgelab.calibration.stats._raters import (
    RATER_SCOPES,
    TWO_RATERS_UNEVEN,
    RaterScope,
    RaterSpread,
    rater_spread,
    rater_variance,
    two_rater_refusal,
)
from judgelab.calibration.stats._result import Estimate
from judgelab.calibration.stats._variance import (
    REFUSED_METHOD,
    ClusterDesign,
    VarianceParts,
    cluster_design,
    design_variance,
    narrower_note,
    rare_event_floor,
    reliability_note,
    t_interval,
)

__all__ = ["ResidualScale", "family_residuals", "residuals_and_gap", "self_preference_gap"]

ResidualScale = Literal["pass", "score"]

_MODEL_RULES: tuple[str, ...] = (*_RULES, "model")
"""``"model"``: ``human`` comes from a model of the raters (:func:`judgelab.calibration.stats.dawid_skene`'s
posterior mean), not from collapsing ``rater_level``; the labels then serve the raters' spread only."""
"""``"pass"``: 0/1 pass verdicts, residuals in percentage points. ``"score"``: scores on the
judge's scale (e.g. 1–5), residuals in judge scale points."""

_SCALES: tuple[str, ...] = ("pass", "score")
_UNITS: dict[str, str] = {"pass": "percentage points", "score": "judge scale points"}
_FACTOR: dict[str, float] = {"pass": 100.0, "score": 1.0}
_NAN = float("nan")


@dataclass(frozen=True)
class _Ratings:
    """The labels behind the human scores: one entry per label."""

    row: npt.NDArray[np.intp]  # answer row of each label
    rater: npt.NDArray[np.intp] | None  # None: the table names no raters
    score: npt.NDArray[np.float64]
    per_answer: npt.NDArray[np.intp]  # labels per answer row
    rule: str
    # Labels with a rater (False: a settled score, e.g. an adjudication or an annotator mean,
    # outside the raters' spread).
    rated: npt.NDArray[np.bool_] | None = None
    # People each label's score is the mean of (None: one each); weights the mean rule.
    people: npt.NDArray[np.float64] | None = None

    def share(self) -> npt.NDArray[np.float64]:
        """Each label's share of its answer's mean-rule score: ``people_k / Σ people`` on its answer."""
        if self.people is None:
            return 1.0 / self.per_answer[self.row]
        return self.people / np.bincount(self.row, weights=self.people, minlength=self.per_answer.size)[self.row]

    def by_raters(self) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.float64]]:
        """``(row, rater, score)`` of the labels a rater gave (settled scores left out)."""
        assert self.rater is not None
        keep = np.ones(self.row.size, bool) if self.rated is None else self.rated
        return self.row[keep], self.rater[keep], self.score[keep]

    def collapsed(self) -> npt.NDArray[np.float64]:
        order = np.argsort(self.row, kind="stable")
        starts = np.r_[0, np.cumsum(self.per_answer)[:-1]].astype(np.intp)
        people = None if self.people is None else self.people[order]
        return _collapse(self.score[order][None, :], starts, self.rule, np.unique(self.score), people)[0]


@dataclass(frozen=True)
class _Prepared:
    judge: npt.NDArray[np.float64]
    human: npt.NDArray[np.float64]
    weights: npt.NDArray[np.float64]
    fam_codes: npt.NDArray[np.intp]
    families: list[str]
    design: ClusterDesign
    ratings: _Ratings | None
    spread: RaterSpread | None
    scale: str
    scope: str
    level: float

    @property
    def factor(self) -> float:
        return _FACTOR[self.scale]

    @property
    def weighted(self) -> bool:
        return not bool(np.all(self.weights == self.weights[0]))

    @property
    def stratified(self) -> bool:
        return bool(self.design.stratum_of_cluster.max(initial=0) > 0)


def family_residuals(
    judge: npt.ArrayLike,
    human: npt.ArrayLike | None,
    family: npt.ArrayLike,
    task: npt.ArrayLike,
    *,
    scale: ResidualScale = "pass",
    weights: npt.ArrayLike | None = None,
    strata: npt.ArrayLike | None = None,
    rater_level: pd.DataFrame | None = None,
    answer_ids: npt.ArrayLike | None = None,
    rule: HumanRule | Literal["model"] = "mean",
    interval: RaterScope = "raters",
    level: float = 0.95,
) -> dict[str, Estimate]:
    """Per-family mean of judge minus human, with a design-based t interval.

    Args:
        judge: The judge's verdict (``scale="pass"``: 0/1) or score, one per answer. Unscored
            judgements (parse failures) must be dropped by the caller: ``nan`` is an error.
        human: The human score per answer (for pass verdicts a 0/1 or, after averaging raters,
            a fraction in [0, 1]). May be ``None`` when ``rater_level`` is given; if both are
            given they must agree.
        family: Model family of each answer (keys of the result, as ``str``).
        task: Sampling cluster of each answer: its task (whole tasks are sampled and resampled),
            or the answer itself when answers were sampled one by one.
        scale: ``"pass"`` (result in percentage points) or ``"score"`` (judge scale points).
        weights: Design weights (inverse inclusion probabilities), one per answer; ``None``
            gives equal weights. Means are Hajek ratio means ``Σ w·x / Σ w``.
        strata: Design stratum of each answer when the clusters were drawn within strata
            (every answer of one cluster in one stratum); ``None`` for a simple random sample.
        rater_level: Optional long per-rater table with columns ``answer`` (an id from
            ``answer_ids``, or the row position 0..n−1 when ``answer_ids`` is ``None``),
            ``score`` and ``rater`` (e.g. :attr:`HumanScores.ratings`). Every answer needs at
            least one row. Needed for ``interval="raters"`` to generalise over raters. A row
            whose ``rater`` is missing is a settled score (an adjudicated label): it makes its
            answer's human score and stays out of the raters' spread and share. An optional
            ``people`` column says how many people a row's score is the mean of (missing: 1);
            the mean weights the row by it, and a row of more than one person (an imported
            annotator mean) is no one rater's label, so it too stays out of the spread and share.
        answer_ids: Id of each answer, to match ``rater_level["answer"]``.
        rule: The rule that collapsed the raters into ``human`` (see :data:`HumanRule`). The
            raters' share of the estimate is the mean rule's derivative under either rule (a
            majority has none; the coverage suite checks the mean rule). ``"model"``: ``human``
            is a model's score (Dawid-Skene's posterior mean), given, not collapsed from
            ``rater_level``, whose labels then only feed the raters' spread and share (the mean
            rule's, which errs wide: the model corrects part of a rater's leniency).
        interval: ``"raters"`` (default: raters like these) or ``"panel"`` (this panel only);
            see :data:`RaterScope`. Without ``rater_level`` (or with one rater) the interval can
            only speak for the panel, and the method says so.
        level: Confidence level.

    Returns:
        ``{family: Estimate}``. ``estimate`` is the residual (×100 for pass verdicts), ``n``
        the number of tasks the family's answers cover, and ``extra`` holds ``judge_mean``
        and ``human_mean`` (in percent for pass verdicts, scale points otherwise),
        ``n_answers``, ``weighted``, ``interval`` (a short name of the method, e.g.
        ``"t(28), raters"``), ``scope`` (which raters the interval speaks for), ``df``, ``se``
        and ``unreliable`` (why the interval is not to be trusted, else ``None``). Degenerate
        case: a family whose answers all belong to one task has a ``nan`` interval.

    Raises:
        ValueError: On bad options, unequal lengths, missing values, verdicts other than 0/1
            with ``scale="pass"``, non-positive family weight totals, ``rater_level`` rows
            that do not match the answers, or clusters that span strata.
    """
    prep = _prepare("family_residuals", judge, human, family, task, scale=scale, weights=weights, strata=strata,
                    rater_level=rater_level, answer_ids=answer_ids, rule=rule, interval=interval, level=level)
    return {fam: _family_estimate(prep, k) for k, fam in enumerate(prep.families)}


def self_preference_gap(
    judge: npt.ArrayLike,
    human: npt.ArrayLike | None,
    family: npt.ArrayLike,
    task: npt.ArrayLike,
    *,
    own_family: str = "claude",
    scale: ResidualScale = "pass",
    weights: npt.ArrayLike | None = None,
    strata: npt.ArrayLike | None = None,
    rater_level: pd.DataFrame | None = None,
    answer_ids: npt.ArrayLike | None = None,
    rule: HumanRule | Literal["model"] = "mean",
    interval: RaterScope = "raters",
    provenance: Iterable[tuple[str, str, str]] | None = None,
    level: float = 0.95,
) -> Estimate:
    """Residual on the judge's own family minus residual on the other family.

    With more than two families the comparison is the **unweighted mean of the other
    families' residuals** (each family counts once, whatever its number of answers), so the
    gap reads "own family versus a typical other family".

    The interval is paired by task: a task's answers from every family enter one task total, so
    the difficulty they share cancels in the gap's variance as it does in the point estimate.

    Args:
        judge: Judge verdicts or scores, one per answer (see :func:`family_residuals`).
        human: Human scores, one per answer (or ``None`` with ``rater_level``).
        family: Model family of each answer.
        task: Sampling cluster (task) of each answer.
        own_family: The judge's own family (compared as ``str``).
        scale: ``"pass"`` (percentage points) or ``"score"`` (judge scale points).
        weights: Design weights (inverse inclusion probabilities); Hajek means.
        strata: Design stratum of each answer (see :func:`family_residuals`).
        rater_level: Per-rater labels (see :func:`family_residuals`).
        answer_ids: Answer ids matching ``rater_level["answer"]``.
        rule: Rater collapsing rule that made ``human``.
        interval: ``"raters"`` or ``"panel"`` (see :func:`family_residuals`).
        provenance: Optional ``(artifact, author_kind, author)`` records of the judge prompt;
            when given, ``extra["bound"]`` and ``extra["bound_reason"]`` come from
            :func:`provenance_note`.
        level: Confidence level.

    Returns:
        An :class:`Estimate` of the gap; ``n`` is the number of tasks. ``extra`` holds, per
        family ``f``, ``judge_mean[f]``, ``human_mean[f]`` and ``residual[f]`` (percent for
        pass verdicts), plus ``own_family``, ``other_families``, the interval fields of
        :func:`family_residuals` and, with ``provenance``, ``bound``/``bound_reason``.
        Degenerate case: a single task gives a ``nan`` interval.

    Raises:
        ValueError: If ``own_family`` is absent or is the only family, and as
            :func:`family_residuals`.
    """
    func = "self_preference_gap"
    prep = _prepare(func, judge, human, family, task, scale=scale, weights=weights, strata=strata,
                    rater_level=rater_level, answer_ids=answer_ids, rule=rule, interval=interval, level=level)
    return _gap_estimate(func, prep, str(own_family), provenance)


def residuals_and_gap(
    judge: npt.ArrayLike,
    human: npt.ArrayLike | None,
    family: npt.ArrayLike,
    task: npt.ArrayLike,
    *,
    own_family: str = "claude",
    scale: ResidualScale = "pass",
    weights: npt.ArrayLike | None = None,
    strata: npt.ArrayLike | None = None,
    rater_level: pd.DataFrame | None = None,
    answer_ids: npt.ArrayLike | None = None,
    rule: HumanRule | Literal["model"] = "mean",
    interval: RaterScope = "raters",
    provenance: Iterable[tuple[str, str, str]] | None = None,
    level: float = 0.95,
) -> tuple[dict[str, Estimate], Estimate]:
    """:func:`family_residuals` and :func:`self_preference_gap` from one pass over the data.

    Args:
        judge: Judge verdicts or scores, one per answer (see :func:`family_residuals`).
        human: Human scores, one per answer (or ``None`` with ``rater_level``).
        family: Model family of each answer.
        task: Sampling cluster (task) of each answer.
        own_family: The judge's own family (compared as ``str``).
        scale: ``"pass"`` (percentage points) or ``"score"`` (judge scale points).
        weights: Design weights (inverse inclusion probabilities); Hajek means.
        strata: Design stratum of each answer.
        rater_level: Per-rater labels.
        answer_ids: Answer ids matching ``rater_level["answer"]``.
        rule: Rater collapsing rule that made ``human``.
        interval: ``"raters"`` or ``"panel"``.
        provenance: Optional provenance records (see :func:`self_preference_gap`).
        level: Confidence level.

    Returns:
        ``(families, gap)``: what :func:`family_residuals` and :func:`self_preference_gap`
        return.

    Raises:
        ValueError: As :func:`self_preference_gap`.
    """
    func = "residuals_and_gap"
    prep = _prepare(func, judge, human, family, task, scale=scale, weights=weights, strata=strata,
                    rater_level=rater_level, answer_ids=answer_ids, rule=rule, interval=interval, level=level)
    _check_own_family(func, prep, str(own_family))
    families = {fam: _family_estimate(prep, k) for k, fam in enumerate(prep.families)}
    return families, _gap_estimate(func, prep, str(own_family), provenance)


# --------------------------------------------------------------------------------------------
# Estimates
# --------------------------------------------------------------------------------------------


def _point_means(prep: _Prepared) -> dict[str, npt.NDArray[np.float64]]:
    n_fam = len(prep.families)
    total = np.asarray(np.bincount(prep.fam_codes, weights=prep.weights, minlength=n_fam), dtype=float)
    judge = np.bincount(prep.fam_codes, weights=prep.weights * prep.judge, minlength=n_fam) / total
    human = np.bincount(prep.fam_codes, weights=prep.weights * prep.human, minlength=n_fam) / total
    return {"judge": judge, "human": human, "residual": judge - human, "total": total}


def _coefficients(prep: _Prepared, k: int | None, own: int | None = None) -> npt.NDArray[np.float64]:
    """``c_f``: the estimate is ``Σ_f c_f · residual_f`` (one family, or own minus mean of others)."""
    n_fam = len(prep.families)
    if k is not None:
        return np.eye(n_fam)[k]
    assert own is not None
    c = np.full(n_fam, -1.0 / (n_fam - 1))
    c[own] = 1.0
    return c


def _variance_parts(prep: _Prepared, coef: npt.NDArray[np.float64]) -> VarianceParts:
    """Linearised variance of ``Σ_f c_f · residual_f`` (×factor), design and raters' parts."""
    means = _point_means(prep)
    fam = prep.fam_codes
    # Influence of answer a on residual_f: w_a (e_a − θ_f) / W_f for a in f.
    scale = coef[fam] * prep.weights / means["total"][fam] * prep.factor
    psi = scale * (prep.judge - prep.human - means["residual"][fam])
    inside = scale != 0
    design, df, g, h = design_variance(psi, prep.design, domain=inside)
    # A good judge's small sample shows no disagreement, or one or two, and estimates its variance
    # at or near 0: "+nan to +nan", or an interval that speaks for these tasks and not the judge
    # (at 95% agreement a family's residual covered 39-61% at 15-30 tasks, 84-92% at 50-100).
    # The rule of three's floor (rare_event_floor): a unit is an answer of a family's residual, a
    # task of the gap.
    design, units = rare_event_floor(design, scale[inside] / prep.factor, (prep.judge - prep.human)[inside],
                                     scale=prep.factor)
    parts = VarianceParts(design, df, n_clusters=g, n_strata=h, floor_units=units)
    r = prep.ratings
    if prep.scope != "raters" or r is None or r.rater is None or prep.spread is None:
        return parts
    if not np.isfinite(prep.spread.variance):
        return parts
    # ∂θ/∂y_k = −c_f w_a s_k / W_f for label k on answer a, s_k its share of the answer's mean
    # (1/m_a; people_k / Σ people when some labels are already means of several people).
    rows, rater, _ = r.by_raters()
    keep = np.ones(r.row.size, bool) if r.rated is None else r.rated
    gradient = -scale[rows] * r.share()[keep]
    # The two-way interval (judgelab.calibration.stats._raters): the raters' mean square on their df, less
    # the noise the design's variance already holds, never clipped to "no spread".
    raters = rater_variance(gradient, rater, prep.spread, part="net")
    clustered = rater_variance(gradient, rater, prep.spread, part="gross")
    # The mean square behind `clustered` rests on R − 1 df (VarianceParts.df splits by that).
    two_way = VarianceParts(design, df, raters, prep.spread.df, g, h, parts.floor_units, clustered,
                            prep.spread.n_raters - 1)
    # Two raters: 1 df for their spread; a residual moves with their mean leniency (refused), and a
    # gap whose raters' difference carries half its variance would be read on that one df, as would
    # one whose raters cannot be told from the families (compared without the covariates: one rater
    # per family, whose equal means gave a zero-width interval).
    reason = two_rater_refusal(gradient, rater, prep.spread)
    uneven = (not two_way.raters_clustered < two_way.total / 2
              or (prep.spread.how == "between raters" and not prep.spread.adjusted))
    if reason is None and prep.spread.n_raters == 2 and uneven:
        reason = TWO_RATERS_UNEVEN
    return two_way if reason is None else two_way.refuse(reason, prep.level)


def _interval_fields(prep: _Prepared, estimate: float, parts: VarianceParts) -> tuple[float, float, dict[str, Any]]:
    lo, hi = t_interval(estimate, parts, prep.level)
    scope = _scope(prep) + narrower_note(estimate, parts, prep.level)
    who = "raters" if scope.startswith("raters") else "panel"
    short = (f"t({parts.df:.0f}){parts.floor_note(short=True)}, {who}" if parts.refused is None
             else f"none (2 raters), {who}")
    extra: dict[str, Any] = {
        "interval": short,
        "scope": scope,
        "df": parts.df,
        "se": float(np.sqrt(parts.total)) if np.isfinite(parts.total) else _NAN,
        "unreliable": reliability_note(parts),
    }
    return lo, hi, extra


def _scope(prep: _Prepared) -> str:
    """Which raters the interval speaks for, in words."""
    if prep.scope == "panel":
        return "this panel only"
    if prep.ratings is None or prep.spread is None:
        return "this panel only (no per-rater labels to generalise from)"
    if not np.isfinite(prep.spread.variance):
        return "this panel only (one rater: their leniency cannot be told from the judge's)"
    return f"raters like these ({prep.spread.n_raters} raters, {prep.spread.note(net=True)})"


def _method(prep: _Prepared, parts: VarianceParts, scope: str, *, gap: bool, n_other: int = 1) -> str:
    mean = "weighted (Hajek) mean" if prep.weighted else "mean"
    what = f"{mean} of judge − human"
    if gap:
        other = "the other family's" if n_other == 1 else "the mean of the other families'"
        what += f"; own-family residual minus {other}"
    strata = f" in {parts.n_strata} strata" if prep.stratified else ""
    paired = "paired " if gap else ""
    interval = f"t interval with {parts.df:.1f} df" if parts.refused is None else REFUSED_METHOD
    return (
        f"{what}; linearised variance over {parts.n_clusters} {paired}task clusters{strata}{parts.floor_note()}, "
        f"{interval}; raters: {scope}"
    )


def _family_estimate(prep: _Prepared, k: int) -> Estimate:
    means = _point_means(prep)
    in_fam = prep.fam_codes == k
    parts = _variance_parts(prep, _coefficients(prep, k))
    estimate = float(means["residual"][k] * prep.factor)
    lo, hi, fields = _interval_fields(prep, estimate, parts)
    n_tasks = int(np.unique(prep.design.cluster[in_fam]).size)
    return Estimate(
        estimate=estimate,
        ci_low=lo,
        ci_high=hi,
        n=n_tasks,
        method=_method(prep, parts, fields["scope"], gap=False),
        units=_UNITS[prep.scale],
        level=prep.level,
        extra={
            "judge_mean": float(means["judge"][k] * prep.factor),
            "human_mean": float(means["human"][k] * prep.factor),
            "n_answers": int(in_fam.sum()),
            "weighted": prep.weighted,
            **fields,
        },
    )


def _check_own_family(func: str, prep: _Prepared, own: str) -> None:
    if own not in prep.families:
        raise ValueError(f"{func}: own_family {own!r} has no answers; families present: {prep.families!r}")
    if len(prep.families) < 2:
        raise ValueError(f"{func}: need answers from at least one family besides {own!r}")


def _gap_estimate(
    func: str, prep: _Prepared, own: str, provenance: Iterable[tuple[str, str, str]] | None
) -> Estimate:
    """The gap's :class:`Estimate`: own-family residual minus the mean of the others'."""
    _check_own_family(func, prep, own)
    own_k = prep.families.index(own)
    others = [k for k in range(len(prep.families)) if k != own_k]
    means = _point_means(prep)
    coef = _coefficients(prep, None, own_k)
    gap = float(coef @ means["residual"] * prep.factor)
    parts = _variance_parts(prep, coef)
    lo, hi, fields = _interval_fields(prep, gap, parts)
    extra: dict[str, Any] = {"own_family": own, "other_families": [prep.families[k] for k in others]}
    for k, fam in enumerate(prep.families):
        extra[f"judge_mean[{fam}]"] = float(means["judge"][k] * prep.factor)
        extra[f"human_mean[{fam}]"] = float(means["human"][k] * prep.factor)
        extra[f"residual[{fam}]"] = float(means["residual"][k] * prep.factor)
    extra.update(fields)
    if provenance is not None:
        note = provenance_note(provenance, judge_family=own)
        extra["bound"] = note.bound
        extra["bound_reason"] = note.reason
    return Estimate(
        estimate=gap,
        ci_low=lo,
        ci_high=hi,
        n=int(prep.design.n_clusters),
        method=_method(prep, parts, fields["scope"], gap=True, n_other=len(others)),
        units=_UNITS[prep.scale],
        level=prep.level,
        extra=extra,
    )


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _prepare(
    func: str,
    judge: npt.ArrayLike,
    human: npt.ArrayLike | None,
    family: npt.ArrayLike,
    task: npt.ArrayLike,
    *,
    scale: str,
    weights: npt.ArrayLike | None,
    strata: npt.ArrayLike | None,
    rater_level: pd.DataFrame | None,
    answer_ids: npt.ArrayLike | None,
    rule: str,
    interval: str,
    level: float,
) -> _Prepared:
    check_choice(func, "scale", scale, _SCALES)
    check_choice(func, "rule", rule, _MODEL_RULES)
    check_choice(func, "interval", interval, RATER_SCOPES)
    check_level(func, level)
    j = _float_array(func, "judge", judge)
    n = j.size
    if n == 0:
        raise ValueError(f"{func}: no answers")
    fam = np.asarray(family).astype(str)
    tsk = np.asarray(task)
    if fam.shape != (n,) or tsk.shape != (n,):
        raise ValueError(
            f"{func}: judge, family and task must have one entry per answer; got lengths {n}, {fam.shape}, {tsk.shape}"
        )
    if pd.isna(tsk).any():
        raise ValueError(f"{func}: task ids must not be missing")
    if scale == "pass" and not np.isin(j, (0.0, 1.0)).all():
        raise ValueError(f"{func}: with scale='pass' judge verdicts must be 0/1 or boolean")

    ratings = None if rater_level is None else _build_ratings(func, rater_level, answer_ids, n, rule, scale)
    h = _human_per_answer(func, human, ratings, n, rule, scale)
    w = _weights(func, weights, n)
    families, fam_codes = np.unique(fam, return_inverse=True)
    fam_codes = fam_codes.ravel()
    totals = np.bincount(fam_codes, weights=w, minlength=families.size)
    if (totals <= 0).any():
        bad = families[totals <= 0].tolist()
        raise ValueError(f"{func}: families {bad!r} have zero total weight")
    spread = None
    if ratings is not None and ratings.rater is not None and interval == "raters":
        rows, rater, score = ratings.by_raters()
        # Between raters, the judge's reading and the family take out much of what the answers'
        # quality spreads over the labels, so the raters' means are compared more sharply.
        covariates = np.column_stack([j, np.eye(families.size)[fam_codes][:, 1:]])[rows]
        spread = (rater_spread(rows, rater, score, covariates=covariates, clusters=tsk[rows]) if rows.size
                  else None)
    return _Prepared(
        judge=j,
        human=h,
        weights=w,
        fam_codes=fam_codes.astype(np.intp),
        families=[str(f) for f in families],
        design=cluster_design(tsk, strata, weights=None if weights is None else w, func=func),
        ratings=ratings,
        spread=spread,
        scale=scale,
        scope=interval,
        level=level,
    )


def _human_per_answer(
    func: str, human: npt.ArrayLike | None, ratings: _Ratings | None, n: int, rule: str, scale: str
) -> npt.NDArray[np.float64]:
    """The human score per answer: given, or collapsed from the raters (and then checked against them)."""
    if human is None:
        if ratings is None or rule == "model":
            raise ValueError(f"{func}: pass human scores, or rater_level to compute them (not with rule='model')")
        h = ratings.collapsed()
    else:
        h = _float_array(func, "human", human)
        if h.shape != (n,):
            raise ValueError(f"{func}: human must have one score per answer ({n}); got {h.shape}")
        # A model's human score is no collapse of the labels: nothing to check it against.
        if ratings is not None and rule != "model" and not np.allclose(h, ratings.collapsed(), atol=1e-9, rtol=0):
            raise ValueError(
                f"{func}: human scores disagree with rater_level collapsed by rule={rule!r}; "
                "pass human=None to use rater_level alone, or the rule that made human"
            )
    if scale == "pass" and ((h < 0) | (h > 1)).any():
        raise ValueError(f"{func}: with scale='pass' human scores must lie in [0, 1]")
    return h


def _weights(func: str, weights: npt.ArrayLike | None, n: int) -> npt.NDArray[np.float64]:
    """Design weights, one non-negative number per answer (all ones when not given)."""
    if weights is None:
        return np.ones(n)
    w = _float_array(func, "weights", weights)
    if w.shape != (n,) or (w < 0).any():
        raise ValueError(f"{func}: weights must be one non-negative number per answer")
    return w


def _build_ratings(
    func: str,
    rater_level: pd.DataFrame,
    answer_ids: npt.ArrayLike | None,
    n: int,
    rule: str,
    scale: str,
) -> _Ratings:
    if not {"answer", "score"} <= set(rater_level.columns):
        raise ValueError(f"{func}: rater_level needs columns 'answer' and 'score'; got {list(rater_level.columns)!r}")
    scores = pd.to_numeric(rater_level["score"]).to_numpy(dtype=float)
    if not np.isfinite(scores).all():
        raise ValueError(f"{func}: rater_level scores must not be missing (drop them first)")
    if scale == "pass" and not np.isin(scores, (0.0, 1.0)).all():
        raise ValueError(f"{func}: with scale='pass' rater_level scores must be 0/1")
    if answer_ids is None:
        rows = pd.to_numeric(rater_level["answer"]).to_numpy()
        if not (np.equal(np.mod(rows, 1), 0).all() and ((rows >= 0) & (rows < n)).all()):
            raise ValueError(f"{func}: without answer_ids, rater_level['answer'] must be row positions 0..{n - 1}")
        row = rows.astype(np.intp)
    else:
        ids = pd.Index(np.asarray(answer_ids))
        if len(ids) != n or not ids.is_unique:
            raise ValueError(f"{func}: answer_ids must be {n} unique ids, one per answer")
        row = ids.get_indexer(rater_level["answer"].to_numpy())
        if (row < 0).any():
            unknown = rater_level["answer"].to_numpy()[row < 0][:3].tolist()
            raise ValueError(f"{func}: rater_level answers {unknown!r} are not in answer_ids")
    sizes = np.bincount(row, minlength=n)
    if (sizes == 0).any():
        raise ValueError(
            f"{func}: {int((sizes == 0).sum())} answer(s) have no rows in rater_level; "
            "every answer needs at least one rating"
        )
    people = _people(func, rater_level)
    rater_codes, rated = None, None
    if "rater" in rater_level.columns:
        # A missing rater marks a settled score (an adjudicated label): it makes its answer's
        # human score but is no rater's, so the raters' spread never sees it. Nor does a score
        # that is already the mean of several people (an imported annotator mean).
        rated = rater_level["rater"].notna().to_numpy()
        if people is not None:
            rated = rated & (people == 1)
        raters = np.where(rated, rater_level["rater"].to_numpy().astype(str), "")
        rater_codes = np.unique(raters, return_inverse=True)[1].ravel().astype(np.intp)
    return _Ratings(row=row.astype(np.intp), rater=rater_codes, score=scores, per_answer=sizes.astype(np.intp),
                    rule=rule, rated=rated, people=people)


def _people(func: str, rater_level: pd.DataFrame) -> npt.NDArray[np.float64] | None:
    """The optional ``people`` column: how many people each row's score is the mean of (``None``: one each)."""
    if "people" not in rater_level.columns:
        return None
    people = pd.to_numeric(rater_level["people"]).fillna(1).to_numpy(dtype=float)
    if (people < 1).any() or not np.equal(np.mod(people, 1), 0).all():
        raise ValueError(f"{func}: rater_level['people'] must be whole numbers of people, 1 or more")
    return people


def _float_array(func: str, name: str, x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    return finite_vector(
        func, name, x, nonfinite="has missing or infinite values; drop unscored answers explicitly"
    )
