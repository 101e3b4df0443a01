"""The active (AIPW) estimator of residuals and the gap, look by look, with repeated intervals.

An active design labels the pool in **batches**. Before batch ``b`` is drawn, every sampling
unit ``t`` (an answer, or a whole task when the design is paired) gets a probability ``π_bt`` (1
for a unit labelled already: it costs nothing) and every answer ``i`` a predicted human label
``p_bi`` (:mod:`judgelab.calibration.active._model`), both from the labels of earlier batches only; then
each unit is drawn independently, ``ξ_bt ~ Bernoulli(π_bt)``, and its answers are labelled.

**Estimator.** Every figure is a linear function of the residuals ``e_i = j_i − h_i`` (judge minus
human) over the pool, ``θ = Σ_i c_i e_i`` (a family's residual: ``c_i = 1/N_f`` on its answers;
the gap: ``+1/N_own`` and ``−1/(K·N_f)`` on the ``K`` other families). Batch ``b`` estimates it
by augmented inverse-probability weighting around the prediction ``ê_bi = j_i − p_bi``::

    D_b = Σ_i c_i [ê_bi + ξ_bt(i) / π_bt(i) · (e_i − ê_bi)]

which is unbiased for ``θ`` given the past whatever the predictions (Zrnic & Candès 2024,
arXiv:2403.03208; a difference estimator, Särndal, Swensson & Wretman 1992, §6.3): the judge's
verdicts on the whole pool carry the estimate, and the labels correct the prediction where they
fall. Batches are combined as ``θ̂_k = Σ_{b≤k} w_b D_b / Σ w_b`` with ``w_b`` the batch's
expected labels, fixed before its draw, so the errors ``D_b − θ`` are martingale differences:
each batch is unbiased given the past, the combination is unbiased when the batch sizes are set
in advance, and to first order when the team sizes each batch from the labels so far (the
normalisation then depends on earlier batches; ``tests/active`` measures what is left by
simulation, within Monte Carlo error).

**Variance.** Units are drawn independently (Poisson sampling): with
``u_bt = Σ_{i∈t} c_i (e_i − ê_bi)`` over the unit's answers, ``Var(D_b | past) = Σ_t (1 − π)/π ·
u_bt²``, estimated by ``Σ_{t drawn} (1 − π)/π² · u_bt²``; the combination's is
``Σ w_b² V_b / (Σ w_b)²``. On scores the probabilities follow the pass verdicts, not the score
residuals, so a second estimate pools each stratum's squared corrections (family × judge score)
towards the batch's, and the larger of the two stands. The pool stands for the answers the judge
will see (as everywhere in judgelab), so the variance of the pool's own mean around the judge's
behaviour is added, clustered by task: ``σ²/T`` over ``T`` tasks, ``σ²`` the variance of a task's total
``T·Σ_{i∈task} c_i e_i`` (its second moment estimated by the same AIPW combination), so answers
of one task that move together count as one. With per-rater labels the raters' component of
:mod:`judgelab.calibration.stats._raters` is added as in the other estimates
(``∂θ̂/∂h_i = −c_i Σ_b (w_b/W) ξ_bt/π_bt``).

**Interval.** Each look's estimate gets a repeated confidence interval ``θ̂_k ± c_k·se_k`` from the
alpha-spending plan of :mod:`judgelab.calibration.active._spending`, with the information fractions of the
*gap* (the figure the stopping rule watches): every figure of one look uses its critical value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import special

from judgelab.calibration.active._spending import Spending, spending_boundaries, t_critical
from judgelab.calibration.stats._raters import TWO_RATERS_UNEVEN, RaterScope, rater_terms
from judgelab.calibration.stats._result import Estimate
from judgelab.calibration.stats._variance import MIN_CLUSTERS, REFUSED_METHOD, rare_event_variance

__all__ = [
    "DEFAULT_MARGIN",
    "ActiveDraws",
    "ActiveFigures",
    "LookStatistics",
    "RepeatedIntervals",
    "active_residuals_and_gap",
    "estimand_coefficients",
    "look_statistics",
    "rare_event_variance",
    "repeated_intervals",
]

Scale = Literal["pass", "score"]
LastLook = Literal["target", "tau"]
"""Which look ends a plan: ``"target"``, the first that meets the target by spending the alpha left
(its critical values read as t, :func:`judgelab.calibration.active.t_critical`); ``"tau"``, the look at
the plan's maximum information, with normal critical values (designs started before the first
rule existed keep it, as their stored parameters have no ``last_look``: a plan does not change
after its first look)."""

#: ``c* = margin · z_{1−α/2}``: the target is the half-width at information ``(c*/H)²``.
DEFAULT_MARGIN = 1.5
_FACTOR = {"pass": 100.0, "score": 1.0}
_UNITS = {"pass": "percentage points", "score": "judge scale points"}
_NAN = float("nan")

#: The widest a gap (or a residual) can be on pass verdicts: own minus other pass-rate residuals, pp.
GAP_RANGE = 200.0
_DESIGN_EVENTS = 1.0


@dataclass(frozen=True)
class ActiveDraws:
    """An active design's pool and draws.

    Attributes:
        answer_id: Pool answer ids, shape ``(N,)``.
        unit: Sampling unit code of each answer, ``0..U−1`` (its task when paired).
        task: Task code of each answer, ``0..T−1``.
        task_id: Task id of each code, shape ``(T,)``.
        family: Family of each answer.
        judge_pass: The judge's pass verdict (0/1) of each answer.
        judge_score: The judge's score of each answer (``nan`` where not comparable with humans).
        prob: ``π_bt`` per unit, shape ``(B, U)``.
        drawn: ``ξ_bt``, shape ``(B, U)`` (always true where ``known``).
        known: Units fully labelled before the batch was drawn (probability 1, no new labels).
        pred_pass: Predicted human pass probability ``p_bi``, shape ``(B, N)``.
        pred_score: Predicted human score, shape ``(B, N)`` (``nan`` where not predicted).
        weight: ``w_b``: each batch's weight, fixed before its draw (its expected labels).
    """

    answer_id: npt.NDArray[np.str_]
    unit: npt.NDArray[np.intp]
    task: npt.NDArray[np.intp]
    task_id: npt.NDArray[np.str_]
    family: npt.NDArray[np.str_]
    judge_pass: npt.NDArray[np.float64]
    judge_score: npt.NDArray[np.float64]
    prob: npt.NDArray[np.float64]
    drawn: npt.NDArray[np.bool_]
    known: npt.NDArray[np.bool_]
    pred_pass: npt.NDArray[np.float64]
    pred_score: npt.NDArray[np.float64]
    weight: npt.NDArray[np.float64]

    @property
    def n_batches(self) -> int:
        """Batches drawn."""
        return int(self.prob.shape[0])

    @property
    def n_tasks(self) -> int:
        """Pool tasks."""
        return int(self.task_id.size)

    @property
    def n_units(self) -> int:
        """Sampling units."""
        return int(self.prob.shape[1])

    @property
    def paired(self) -> bool:
        """Whether whole tasks are the sampling units."""
        return self.n_units == self.n_tasks and bool(np.array_equal(self.unit, self.task))

    def labels_per_batch(self) -> npt.NDArray[np.int64]:
        """Answers each batch asked raters to label (drawn units not known before)."""
        per_unit = np.bincount(self.unit, minlength=self.n_units)
        return np.asarray((self.drawn & ~self.known) @ per_unit, dtype=np.int64)

    def head(self, batches: int) -> ActiveDraws:
        """The first ``batches`` batches only."""
        b = slice(0, batches)
        return ActiveDraws(self.answer_id, self.unit, self.task, self.task_id, self.family, self.judge_pass,
                           self.judge_score, self.prob[b], self.drawn[b], self.known[b], self.pred_pass[b],
                           self.pred_score[b], self.weight[b])

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, batches: pd.DataFrame) -> ActiveDraws:
        """Build from a long table, one row per (batch, pool answer).

        Args:
            frame: Columns ``batch``, ``answer_id``, ``unit`` (the sampling unit: the answer's
                own id, or its task's when paired), ``task_id``, ``family``, ``judge_pass``,
                ``judge_score``, ``inclusion_prob``, ``drawn``, ``known``, ``pred_pass``,
                ``pred_score``; every batch lists the same answers.
            batches: Columns ``batch`` and ``weight``, one row per batch.

        Raises:
            ValueError: If batches list different answers or one unit's answers disagree.
        """
        order = sorted(int(b) for b in batches["batch"])
        first = frame[frame["batch"] == order[0]].sort_values("answer_id")
        ids = first["answer_id"].astype(str).to_numpy()
        task_ids, task = np.unique(first["task_id"].astype(str).to_numpy(), return_inverse=True)
        unit = np.unique(first["unit"].astype(str).to_numpy(), return_inverse=True)[1].ravel()
        shape = (len(order), int(unit.max(initial=-1)) + 1)
        prob, drawn, known = np.zeros(shape), np.zeros(shape, bool), np.zeros(shape, bool)
        pred_pass, pred_score = np.zeros((len(order), ids.size)), np.zeros((len(order), ids.size))
        for k, b in enumerate(order):
            rows = frame[frame["batch"] == b].sort_values("answer_id")
            if not np.array_equal(rows["answer_id"].astype(str).to_numpy(), ids):
                raise ValueError(f"ActiveDraws: batch {b} lists other answers than batch {order[0]}")
            for target, col in ((prob[k], "inclusion_prob"), (drawn[k], "drawn"), (known[k], "known")):
                values = rows[col].to_numpy(dtype=float)
                target[unit] = values
                if not np.allclose(target[unit], values):
                    raise ValueError(f"ActiveDraws: answers of one unit disagree on {col} in batch {b}")
            pred_pass[k] = rows["pred_pass"].to_numpy(dtype=float)
            pred_score[k] = pd.to_numeric(rows["pred_score"], errors="coerce").to_numpy(dtype=float)
        weight = batches.set_index("batch").loc[order, "weight"].to_numpy(dtype=float)
        return cls(
            answer_id=ids, unit=unit.astype(np.intp), task=task.ravel().astype(np.intp), task_id=task_ids.astype(str),
            family=first["family"].astype(str).to_numpy(), judge_pass=first["judge_pass"].to_numpy(dtype=float),
            judge_score=pd.to_numeric(first["judge_score"], errors="coerce").to_numpy(dtype=float),
            prob=prob, drawn=drawn, known=known, pred_pass=pred_pass, pred_score=pred_score, weight=weight,
        )


def estimand_coefficients(
    family: npt.ArrayLike, *, own_family: str | None = None, target: str | None = None
) -> npt.NDArray[np.float64]:
    """``c_i`` of one figure: a family's residual (``target``) or the gap (``own_family``).

    Examples:
        >>> estimand_coefficients(["a", "a", "b", "c"], own_family="a").tolist()
        [0.5, 0.5, -0.5, -0.5]
        >>> estimand_coefficients(["a", "a", "b"], target="a").tolist()
        [0.5, 0.5, 0.0]
    """
    fam = np.asarray(family).astype(str)
    names, codes, counts = np.unique(fam, return_inverse=True, return_counts=True)
    codes = codes.ravel()
    if (own_family is None) == (target is None):
        raise ValueError("estimand_coefficients: give own_family (the gap) or target (a family's residual)")
    name = str(own_family if own_family is not None else target)
    if name not in names:
        raise ValueError(f"estimand_coefficients: family {name!r} has no answers; present: {names.tolist()!r}")
    k = int(np.flatnonzero(names == name)[0])
    if target is not None:
        per_family = np.where(np.arange(names.size) == k, 1.0, 0.0)
    else:
        if names.size < 2:
            raise ValueError(f"estimand_coefficients: need a family besides {name!r} for the gap")
        per_family = np.full(names.size, -1.0 / (names.size - 1))
        per_family[k] = 1.0
    return np.asarray(per_family[codes] / counts[codes], dtype=float)


@dataclass(frozen=True)
class LookStatistics:
    """One figure's estimate and variance at each look (after each batch).

    Attributes:
        estimate: ``θ̂_k``, in the figure's units (×100 for pass verdicts).
        variance: Its total variance: ``design + population + raters``.
        design: The batches' sampling variance as estimated (on scores, at least the estimate
            with each stratum's squared corrections pooled towards the batch's). ``variance``
            raises it where ``design_floored``.
        population: The pool's own variance around the judge's behaviour, ``σ²/T``; at least
            the rule of three's (:func:`rare_event_variance` of the figure's units, one verdict or
            one scale point), so a small pool with few disagreements does not speak for the judge.
        raters: The raters' component (0 for this panel only).
        raters_df: Its degrees of freedom (``nan`` when not estimated).
        labels: Answers the design's batches asked raters to label, cumulatively.
        tasks_drawn: Distinct tasks with an answer drawn so far (known ones included).
        scope: Which raters the variance speaks for, in words.
        df: Degrees of freedom of each look's variance (Satterthwaite: the design part's from
            how evenly the drawn units share it, the pool's from the tasks drawn, the raters'
            from theirs); ``inf`` when there is no variance to estimate. The looks' critical
            values are read as t ones with these (:func:`repeated_intervals`).
        design_floored: Per look, whether ``variance`` carries the floor of one disagreement
            among the drawn units in place of ``design`` (``_design_floor``: no look can stop on
            a variance its labels cannot vouch for); ``None`` when not computed.
        refused: Per look, why no interval can speak for raters like these (two raters, as
            ``judgelab calibrate`` refuses them: :func:`judgelab.calibration.stats._raters.two_rater_refusal`,
            or :data:`judgelab.calibration.stats._raters.TWO_RATERS_UNEVEN` when their spread carries half
            the variance or more), else ``None``; empty when not computed.
    """

    estimate: npt.NDArray[np.float64]
    variance: npt.NDArray[np.float64]
    design: npt.NDArray[np.float64]
    population: npt.NDArray[np.float64]
    raters: npt.NDArray[np.float64]
    raters_df: float
    labels: npt.NDArray[np.int64]
    tasks_drawn: npt.NDArray[np.int64]
    scope: str
    df: npt.NDArray[np.float64]
    design_floored: npt.NDArray[np.bool_] | None = None
    refused: tuple[str | None, ...] = ()

    def refused_at(self, look: int) -> str | None:
        """:attr:`refused` at a 0-based look (``None`` when not computed)."""
        return self.refused[look] if look < len(self.refused) else None


def look_statistics(
    draws: ActiveDraws,
    human: npt.ArrayLike,
    coef: npt.ArrayLike,
    *,
    scale: Scale = "pass",
    rater_level: pd.DataFrame | None = None,
    interval: RaterScope = "panel",
) -> LookStatistics:
    """The AIPW estimate of ``Σ c_i e_i`` and its variance after each batch (module docstring).

    Args:
        draws: The design's draws.
        human: Human pass share (``scale="pass"``) or score per pool answer; ``nan`` where
            unlabelled. Every answer of a drawn unit needs one.
        coef: ``c_i`` per pool answer (:func:`estimand_coefficients`).
        scale: ``"pass"`` (percentage points) or ``"score"`` (judge scale points).
        rater_level: Per-rater labels (``answer`` = an answer id, ``rater``, ``score``) for the
            raters' component.
        interval: ``"raters"`` adds the raters' component; ``"panel"`` speaks for this panel.

    Returns:
        A :class:`LookStatistics`, one entry per batch.

    Raises:
        ValueError: If a drawn answer has no human label or no prediction, or shapes differ.
    """
    h = np.asarray(human, dtype=float)
    coef_in = np.asarray(coef, dtype=float)
    c = coef_in * _FACTOR[scale]
    if h.shape != draws.answer_id.shape or c.shape != h.shape:
        raise ValueError("look_statistics: human and coef need one entry per pool answer")
    judge = draws.judge_pass if scale == "pass" else draws.judge_score
    pred = draws.pred_pass if scale == "pass" else draws.pred_score
    drawn = draws.drawn[:, draws.unit]
    inv = np.where(drawn, 1.0 / np.where(drawn, draws.prob[:, draws.unit], 1.0), 0.0)
    missing = drawn & ~np.isfinite(h)[None, :]
    if missing.any():
        raise ValueError(f"look_statistics: {int(missing.any(axis=0).sum())} drawn answer(s) have no human label")
    if not (np.isfinite(pred) | ~drawn).all() or not np.isfinite(pred[:, c != 0]).all():
        raise ValueError("look_statistics: every answer the figure uses needs a prediction")
    e_hat = judge[None, :] - pred
    corr = np.where(drawn, (judge - np.nan_to_num(h))[None, :] - e_hat, 0.0)
    terms = np.nan_to_num(c * e_hat) + c * inv * corr
    d_b = terms.sum(axis=1)
    u = _per_task(c * corr, draws.unit, draws.n_units)
    p = draws.prob
    a_bt = np.where(draws.drawn, (1 - p) / np.where(draws.drawn, p, 1.0) ** 2 * u**2, 0.0)
    v_b = a_bt.sum(axis=1)
    pooled = _pooled_design_variance(draws, c, corr) if scale == "score" else v_b
    spread = pred * (1 - pred) if scale == "pass" else np.zeros_like(pred)
    m2_b = _second_moments(draws, c, judge - np.nan_to_num(h), e_hat, np.nan_to_num(spread), inv)
    w = draws.weight
    big_w = np.cumsum(w)
    estimate = np.cumsum(w * d_b) / big_w
    # On scores the probabilities follow the pass verdicts, so answers far from the threshold are
    # drawn rarely though their scores disagree as often as any: a few draws each, and their large
    # weights' share of the variance is often near 0 just when the estimate misses (at 95%
    # agreement the 1-5 judge's score gap covered 91.8-92.5% on 30-100 tasks). The larger of the
    # two estimates stands: 93.5-95.2% there.
    design = np.maximum(np.cumsum(w**2 * v_b), np.cumsum(w**2 * pooled)) / big_w**2
    second = np.cumsum(w * m2_b) / big_w
    population = np.maximum(second - estimate**2, 0.0) / draws.n_tasks
    # A small pool that shows few disagreements estimates its own variance near zero, and the
    # interval then speaks for this pool, not for the judge: at 95% agreement, 30 tasks and a
    # target of ±20 pp it covered the judge's gap 90.7% of the time (89.9% on scores). The floor
    # is the variance if 3 of the figure's units (one weighs 1/max|c|) had disagreed by one
    # verdict or one scale point: 96.6% there.
    population = np.maximum(population, rare_event_variance(1.0 / np.abs(coef_in).max(), scale=_FACTOR[scale]))
    # No look may stop on a variance the labels cannot vouch for (_design_floor).
    used, design_floored = _design_floor(draws, c, judge - np.nan_to_num(h), design, population)
    gradient = -c[None, :] * np.cumsum(w[:, None] * inv, axis=0) / big_w[:, None]
    raters, raters_df, scope, gross, reasons = _rater_parts(gradient, draws.answer_id, rater_level, interval, c)
    hit = np.vstack([np.bincount(draws.task, weights=drawn[k].astype(float), minlength=draws.n_tasks) > 0
                     for k in range(draws.n_batches)])
    ever = np.cumsum(hit, axis=0) > 0
    tasks_drawn = ever.sum(axis=1).astype(np.int64)
    # Satterthwaite: each drawn unit's term of the design variance is one squared draw, so a
    # variance carried by a few large-weight units has few degrees of freedom.
    with np.errstate(divide="ignore", invalid="ignore"):
        df_design = np.cumsum(w**2 * v_b) ** 2 / np.cumsum(w**4 * (a_bt**2).sum(axis=1))
        # A floored design part is the rule's value, not an estimate: the tasks drawn less one.
        df_design = np.where(design_floored, np.maximum(tasks_drawn - 1.0, 1.0), df_design)
        parts = [(used, df_design), (population, np.maximum(tasks_drawn - 1.0, 1.0)),
                 (raters, np.full(raters.shape, raters_df))]
        spread_df = sum(np.where(v > 0, v**2 / d, 0.0) for v, d in parts)
        df = np.where(spread_df > 0, (used + population + raters) ** 2 / spread_df, math.inf)
    # Two raters, as calibrate reads them: a figure that moves with their mean leniency is refused,
    # and so is one whose raters' spread (resting on 1 df) carries half its variance or more.
    total = used + population + raters
    refused = tuple(r if r is not None or not np.isfinite(g) or g < total[k] / 2 else TWO_RATERS_UNEVEN
                    for k, (r, g) in enumerate(zip(reasons, gross, strict=True)))
    return LookStatistics(
        estimate=estimate,
        variance=used + population + raters,
        design=design,
        population=population,
        raters=raters,
        raters_df=raters_df,
        labels=np.cumsum(draws.labels_per_batch()),
        tasks_drawn=tasks_drawn,
        scope=scope,
        df=np.asarray(df, dtype=float),
        design_floored=design_floored,
        refused=refused,
    )


def _design_floor(
    draws: ActiveDraws, c: npt.NDArray[np.float64], disagreement: npt.NDArray[np.float64],
    design: npt.NDArray[np.float64], population: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Each look's design variance raised so that design + pool reach the rule of three's floor.

    A look whose labels all agree with the judge (or that the predictions foresaw) has a design
    variance near 0 and could meet any target at once: read with this plan, a simple random sample
    looked at every 10% covered 75-78% at 95% agreement before the bench carried the report's
    floor. Every active design carries this one, so none can stop on such a look: the design
    variance if one of the drawn units, at random, had disagreed by as much as the disagreements
    seen (one verdict when none were), i.e. the mean over the draws of
    ``w_b² (1 − π)/π² · Σ_unit c² · size² / W²`` (in the spirit of
    :func:`judgelab.calibration.stats.rare_event_floor`; a unit drawn with certainty adds nothing). One
    disagreement, not the report's three, as the PPI floor: the design already draws where the
    judge is in doubt, and three cost 30% more labels at 95% agreement (41 -> 54 at 70 tasks and
    ±15 pp, 49 -> 61 at 2,000 tasks) for 98-100% coverage; with one, 41 and 50 labels, 96.5% and
    98% (200 runs each, 0-100 judge). The
    floor is on the look's variance about the judge (design + the pool's own), as the report's is
    on its task-resampling variance: a small pool's own variance already keeps it honest, and the
    floor binds where the pool is large and the labels have shown (almost) nothing.

    Returns:
        ``(design, floored)``: the floored variances and, per look, whether the floor was used.
    """
    p = draws.prob
    cu2 = np.bincount(draws.unit, weights=c**2, minlength=draws.n_units)
    full = np.where(draws.drawn, (1 - p) / np.where(draws.drawn, p, 1.0) ** 2 * cu2[None, :], 0.0).sum(axis=1)
    w = draws.weight
    n_draws = np.cumsum((draws.drawn & ~draws.known).sum(axis=1))
    ever = np.cumsum(draws.drawn, axis=0) > 0
    out = design.copy()
    floored = np.zeros(design.size, dtype=bool)
    per_draw = np.cumsum(w**2 * full) / np.cumsum(w) ** 2 / np.maximum(n_draws, 1)
    for k in range(design.size):
        seen = np.abs(disagreement[ever[k][draws.unit] & (c != 0)])
        seen = seen[np.isfinite(seen) & (seen > 0)]
        size = float(seen.mean()) if seen.size else 1.0
        floor = _DESIGN_EVENTS * float(per_draw[k]) * size**2
        if design[k] + population[k] < floor:
            out[k], floored[k] = floor - population[k], True
    return out, floored


def _pooled_design_variance(
    draws: ActiveDraws, c: npt.NDArray[np.float64], corr: npt.NDArray[np.float64], *, prior_labels: float = 5.0
) -> npt.NDArray[np.float64]:
    """Each batch's design variance with each stratum's squared corrections pooled towards the batch's.

    ``Σ_{i drawn} (1 − π)/π² · c_i² · m_s(i)``, where ``m_s`` is the mean squared correction
    ``(e_i − ê_i)²`` over the batch's new draws in stratum ``s`` (family × judge score, at most 8
    score bins), shrunk towards the mean over all its new draws with the weight of
    ``prior_labels`` answers. Answers of one unit are taken as independent (their covariance is
    in the plain estimate, which stands when larger).
    """
    scores = np.nan_to_num(draws.judge_score)
    if np.unique(scores).size > 8:  # a 0-100 scale: 8 quantile bins
        cuts = np.unique(np.quantile(scores, np.linspace(0, 1, 9)[1:-1]))
        scores = np.searchsorted(cuts, scores, side="right").astype(float)
    stratum = np.unique(np.char.add(np.char.add(draws.family, "|"), scores.astype(str)), return_inverse=True)[1]
    stratum = stratum.ravel()
    size = int(stratum.max(initial=-1)) + 1
    out = np.zeros(draws.n_batches)
    for k in range(draws.n_batches):
        new = (draws.drawn[k] & ~draws.known[k])[draws.unit] & (c != 0)
        if not new.any():
            continue
        r2 = corr[k] ** 2
        n_s = np.bincount(stratum[new], minlength=size)
        m_s = np.bincount(stratum[new], weights=r2[new], minlength=size)
        shrunk = (m_s + prior_labels * r2[new].mean()) / (n_s + prior_labels)
        prob = np.where(new, draws.prob[k][draws.unit], 1.0)
        out[k] = float(np.where(new, (1 - prob) / prob**2 * c**2 * shrunk[stratum], 0.0).sum())
    return out


def _per_task(values: npt.NDArray[np.float64], task: npt.NDArray[np.intp], n_tasks: int) -> npt.NDArray[np.float64]:
    """Sum each row's values over the answers of each task: ``(B, N) -> (B, T)``."""
    out = np.zeros((values.shape[0], n_tasks))
    for k in range(values.shape[0]):
        out[k] = np.bincount(task, weights=values[k], minlength=n_tasks)
    return out


def _second_moments(
    draws: ActiveDraws,
    c: npt.NDArray[np.float64],
    e: npt.NDArray[np.float64],
    e_hat: npt.NDArray[np.float64],
    spread: npt.NDArray[np.float64],
    inv: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """Per batch, the AIPW estimate of ``T·Σ_t a_t²`` (the mean square of the tasks' totals ``T·a_t``).

    ``a_t = Σ_{i∈t} x_i`` with ``x_i = c_i e_i``. The prediction of ``a_t²`` is
    ``(Σ x̂_i)² + Σ c_i² Var(h_i)``; it is corrected answer by answer (``x_i²``, weight ``1/π``)
    and pair by pair (``x_i x_j``, weight one over the chance that both are drawn: ``1/π_u`` in one
    unit, ``1/(π_u π_v)`` across independent units).
    """
    t_count, u_count = draws.n_tasks, draws.n_units
    first = np.unique(draws.unit, return_index=True)[1]
    unit_task = draws.task[first]
    out = np.zeros(draws.n_batches)
    for k in range(draws.n_batches):
        g = inv[k]
        drawn = g > 0
        x = np.where(drawn, c * e, 0.0)
        xh = np.nan_to_num(c * e_hat[k])
        v = c**2 * spread[k]
        model = np.bincount(draws.task, weights=xh, minlength=t_count) ** 2 + np.bincount(
            draws.task, weights=v, minlength=t_count)
        diag = np.bincount(draws.task, weights=g * (x**2 - np.where(drawn, xh**2 + v, 0.0)), minlength=t_count)
        xh_d = np.where(drawn, xh, 0.0)
        sums = [np.bincount(draws.unit, weights=w, minlength=u_count) for w in (x, x**2, xh_d, xh_d**2)]
        big_x, q, big_xh, qh = sums
        g_u = np.zeros(u_count)
        g_u[draws.unit] = g
        within = g_u * ((big_x**2 - q) - (big_xh**2 - qh))
        across = np.zeros(t_count)
        for y, sign in ((big_x, 1.0), (big_xh, -1.0)):
            gy = g_u * y
            across += sign * (np.bincount(unit_task, weights=gy, minlength=t_count) ** 2
                              - np.bincount(unit_task, weights=gy**2, minlength=t_count))
        total = model + diag + np.bincount(unit_task, weights=within, minlength=t_count) + across
        out[k] = t_count * float(total.sum())
    return out


def _rater_parts(
    gradient: npt.NDArray[np.float64], answer_id: npt.NDArray[np.str_], rater_level: pd.DataFrame | None,
    interval: RaterScope,
    coef: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.float64], float, str, npt.NDArray[np.float64], list[str | None]]:
    """The raters' variance at each look, its df, the scope in words, and with two raters their gross part and refusal.

    The gross part (the raters' mean square, ``nan`` unless there are exactly two raters) and the
    refusal are :func:`judgelab.calibration.stats._raters.rater_terms`', the same calibrate reads. The
    refusal is judged on the Hajek form of the look's gradient (each family's inverse-probability
    weights rescaled to the family's coefficient, ``coef`` per pool answer): calibrate's estimates
    are Hajek means, whose gap's raters' shares sum to exactly 0, while the AIPW gap's sum to 0 only
    on average over the draws; a family's residual moves with the panel's mean leniency either way.
    """
    looks = gradient.shape[0]
    gross = np.full(looks, np.nan)
    reasons: list[str | None] = [None] * looks
    if interval == "panel" or rater_level is None:
        scope = "this panel only" if interval == "panel" else "this panel only (no per-rater labels to generalise from)"
        return np.zeros(looks), _NAN, scope, gross, reasons
    position = pd.Series(np.arange(answer_id.size), index=answer_id)
    rows = rater_level[rater_level["answer"].astype(str).isin(position.index)]
    rows = rows.assign(answer=position.reindex(rows["answer"].astype(str)).to_numpy())
    out = np.zeros(looks)
    df, scope = _NAN, "this panel only (no per-rater labels to generalise from)"
    for k in range(looks):
        used = rows[gradient[k, rows["answer"].to_numpy()] != 0]
        if used.empty:
            continue
        keep = np.unique(used["answer"].to_numpy())
        local = pd.Series(np.arange(keep.size), index=keep)
        labels = used.assign(answer=local.reindex(used["answer"].to_numpy()).to_numpy())
        part = rater_terms(gradient[k, keep], labels, keep.size, "raters")
        out[k], df, scope = part.variance, part.df, part.scope
        if part.refused is not None or part.clustered_df == 1:
            reasons[k] = rater_terms(_hajek_form(gradient[k], coef, keep), labels, keep.size, "raters").refused
        if part.clustered_df == 1:
            gross[k] = part.clustered
    return out, df, scope, gross, reasons


def _hajek_form(
    gradient: npt.NDArray[np.float64], coef: npt.NDArray[np.float64], keep: npt.NDArray[np.intp]
) -> npt.NDArray[np.float64]:
    """``gradient`` at the answers ``keep``, each family's (one value of ``coef``) rescaled to sum to ``−Σ coef``."""
    g = gradient[keep].copy()
    for value in np.unique(coef[coef != 0]):
        mine = coef[keep] == value
        total = float(g[mine].sum())
        if total != 0:
            g[mine] *= -float(coef[coef == value].sum()) / total
    return g


@dataclass(frozen=True)
class RepeatedIntervals:
    """The looks' repeated confidence intervals of one figure (see :func:`repeated_intervals`).

    ``boundary`` holds the plan's (normal) critical values, ``critical`` what multiplies each
    look's standard error: the boundary read as a t value with the look's degrees of freedom.
    """

    critical: npt.NDArray[np.float64]
    ci_low: npt.NDArray[np.float64]
    ci_high: npt.NDArray[np.float64]
    half_width: npt.NDArray[np.float64]
    tau: npt.NDArray[np.float64]
    spent: npt.NDArray[np.float64]
    max_information: float
    boundary: npt.NDArray[np.float64]


def repeated_intervals(
    estimate: npt.ArrayLike,
    variance: npt.ArrayLike,
    *,
    target_half_width: float,
    level: float = 0.95,
    spending: Spending = "obf",
    margin: float = DEFAULT_MARGIN,
    critical: npt.ArrayLike | None = None,
    min_variance: npt.ArrayLike = 0.0,
    df: npt.ArrayLike | None = None,
    last_look: LastLook = "target",
) -> RepeatedIntervals:
    """Repeated confidence intervals ``θ̂_k ± c_k·se_k`` of the looks so far.

    Args:
        estimate: ``θ̂_k`` per look.
        variance: Its variance per look.
        target_half_width: ``H``: the plan's maximum information is ``(margin·z/H)²``.
        level: ``1 − alpha`` of the whole plan.
        spending: The spending function.
        margin: See :data:`DEFAULT_MARGIN`.
        critical: The plan's (normal) critical values of the looks, when another figure's plan
            sets them (:attr:`RepeatedIntervals.boundary` of that figure).
        min_variance: A floor under each look's variance (a number, or one per look; see
            :func:`rare_event_variance`). A sample that has seen no disagreement yet estimates a
            variance near zero, and its interval would meet any target at the first look: a
            simple random sample looked at every 10% under this plan covered 75-78% at 95%
            agreement in ``bench/active_economy.py``.
        df: Degrees of freedom of each look's variance (:attr:`LookStatistics.df`): the plan's
            normal critical values are read as t ones (:func:`judgelab.calibration.active.t_critical`).
            ``None``: normal.
        last_look: See :data:`LastLook`.

    Returns:
        The intervals (``critical`` is what multiplies each look's standard error). A look
        after the plan's alpha is spent may spend nothing: its critical value and half-width are
        infinite, and the interval to report stays the last finite one.
    """
    est = np.asarray(estimate, dtype=float)
    var = np.maximum(np.maximum(np.asarray(variance, dtype=float), np.asarray(min_variance, dtype=float)), 1e-300)
    z = float(special.ndtri(0.5 + level / 2))
    max_info = (margin * z / target_half_width) ** 2
    if last_look == "tau":
        df = None
    if critical is None:
        b = spending_boundaries(1.0 / var, max_information=max_info, alpha=1 - level, spending=spending,
                                target_half_width=target_half_width if last_look == "target" else None, df=df)
        boundary, tau, spent = b.critical, b.tau, b.spent
    else:
        boundary = np.asarray(critical, dtype=float)
        tau = np.minimum((1.0 / var) / max_info, 1.0)
        spent = np.full(boundary.size, _NAN)
    crit = t_critical(boundary, df)
    half = crit * np.sqrt(var)
    return RepeatedIntervals(crit, est - half, est + half, half, tau, spent, max_info, boundary)


@dataclass(frozen=True)
class ActiveFigures:
    """The residuals and the gap on one scale from an active design, at its last look.

    Attributes:
        families: Each family's residual as an :class:`Estimate`.
        gap: The self-preference gap (``None`` with one family or no judge family).
        looks: One row per look: ``look``, ``labels``, ``tasks``, ``estimate``, ``se``,
            ``critical`` (the multiplier of ``se``), ``boundary`` (the plan's normal value it reads
            as t), ``df``, ``ci_low``, ``ci_high``, ``half_width``, ``tau``, ``reached`` (the
            half-width met the target) of the figure the stopping rule watches (the gap, else the
            first family's residual).
        stopped_at: The first look whose interval met the target (1-based), else ``None``.
        statistics: The watched figure's :class:`LookStatistics` (what the labels still
            needed are computed from).

    The estimates are those of the last look with a finite interval (normally the last look).
    """

    families: dict[str, Estimate]
    gap: Estimate | None
    looks: pd.DataFrame
    stopped_at: int | None
    statistics: LookStatistics


def active_residuals_and_gap(
    draws: ActiveDraws,
    human: npt.ArrayLike,
    *,
    scale: Scale = "pass",
    own_family: str | None = None,
    target_half_width: float,
    critical: Sequence[float] | None = None,
    rater_level: pd.DataFrame | None = None,
    interval: RaterScope = "panel",
    level: float = 0.95,
    spending: Spending = "obf",
    margin: float = DEFAULT_MARGIN,
    last_look: LastLook = "target",
) -> ActiveFigures:
    """Each family's residual and the gap from an active design, with repeated intervals.

    Args:
        draws: The design's draws (its complete batches).
        human: Human score per pool answer on ``scale`` (``nan`` where unlabelled).
        scale: ``"pass"`` or ``"score"``.
        own_family: The judge's family (the gap's first term); ``None`` or absent: no gap.
        target_half_width: The design's target half-width of the gap on the pass scale (pp).
        critical: The looks' critical values from the pass-scale gap's plan (for the score
            scale, whose figures ride on the same looks); ``None`` computes them here.
        rater_level: Per-rater labels (``answer`` id, ``rater``, ``score``) for the raters' part.
        interval: ``"raters"`` or ``"panel"``.
        level: ``1 − alpha`` of the plan.
        spending: The spending function.
        margin: See :data:`DEFAULT_MARGIN`.
        last_look: See :data:`LastLook`.

    Returns:
        The :class:`ActiveFigures`.
    """
    fams = sorted(set(draws.family.tolist()))
    has_gap = own_family is not None and own_family in fams and len(fams) > 1
    common: dict[str, Any] = {"scale": scale, "rater_level": rater_level, "interval": interval}
    lead_coef = estimand_coefficients(draws.family, own_family=own_family) if has_gap else \
        estimand_coefficients(draws.family, target=fams[0])
    lead = look_statistics(draws, human, lead_coef, **common)
    rci = repeated_intervals(lead.estimate, lead.variance, critical=critical, target_half_width=target_half_width,
                             level=level, spending=spending, margin=margin, df=lead.df, last_look=last_look)
    looks = pd.DataFrame({
        "look": np.arange(1, draws.n_batches + 1), "labels": lead.labels, "tasks": lead.tasks_drawn,
        "estimate": lead.estimate, "se": np.sqrt(lead.variance), "critical": rci.critical, "boundary": rci.boundary,
        "df": lead.df,
        "ci_low": rci.ci_low, "ci_high": rci.ci_high, "half_width": rci.half_width, "tau": rci.tau,
    })
    refused = np.array([lead.refused_at(k) is not None for k in range(draws.n_batches)])
    looks["no_interval"] = [_no_interval(float(h), float(v), scale) for h, v in zip(rci.half_width, lead.variance,
                                                                                     strict=True)]
    # A look whose interval is refused (two raters, calibrate's rule) has none, nor one that is no
    # interval yet (see _no_interval): it cannot meet the target.
    looks.loc[refused | looks["no_interval"].notna().to_numpy(), ["ci_low", "ci_high", "half_width"]] = np.nan
    looks["reached"] = looks["half_width"] <= target_half_width if scale == "pass" else False
    hit = np.flatnonzero(looks["reached"].to_numpy())
    stopped = int(hit[0]) + 1 if hit.size else None
    finite = np.flatnonzero(np.isfinite(rci.critical))
    # A look that may spend nothing has no interval: report the last one that has.
    report = int(finite[-1]) if finite.size else draws.n_batches - 1
    judge = draws.judge_pass if scale == "pass" else draws.judge_score
    describe = _Describe(draws, report, float(rci.boundary[report]), scale, level, spending, stopped,
                         last_look == "target")
    families = {}
    for f in fams:
        stats = lead if (not has_gap and f == fams[0]) else look_statistics(
            draws, human, estimand_coefficients(draws.family, target=f), **common)
        families[f] = describe.estimate(stats, extra={
            "judge_mean": float(judge[draws.family == f].mean() * _FACTOR[scale]),
            "human_mean": float((judge[draws.family == f].mean() * _FACTOR[scale]) - stats.estimate[report]),
            "n_answers": int((draws.family == f).sum()), "weighted": True,
        }, gap=False)
    gap = None
    if has_gap:
        assert own_family is not None
        extra: dict[str, Any] = {"own_family": own_family, "other_families": [f for f in fams if f != own_family]}
        for f, est in families.items():
            extra[f"judge_mean[{f}]"] = est.extra["judge_mean"]
            extra[f"human_mean[{f}]"] = est.extra["human_mean"]
            extra[f"residual[{f}]"] = est.estimate
        gap = describe.estimate(lead, extra=extra, gap=True)
    return ActiveFigures(families=families, gap=gap, looks=looks, stopped_at=stopped, statistics=lead)


def _no_interval(half_width: float, variance: float, scale: Scale) -> str | None:
    """Why a look's interval is no interval yet (``None``: it is one).

    An early look of a plan that spends almost nothing there, read as t on a handful of labels,
    came out ±13,263,157,866,567 pp wide; labels that all agree within each stratum give a zero
    variance and a ±0.0 pp "interval". Neither says anything about the gap, so neither is shown
    as a number.
    """
    if not math.isfinite(variance) or variance <= 0:
        return "the labels so far show no variation to size an interval (too few labels per stratum)"
    if not math.isfinite(half_width):
        return "the plan spends no error rate at this look"
    if scale == "pass" and half_width > GAP_RANGE:
        return (f"too few labels: it would be wider than ±{GAP_RANGE:g} pp, more than any gap can be; "
                "it appears as batches are labelled")
    return None


@dataclass(frozen=True)
class _Describe:
    """Turns a figure's reported look into an :class:`Estimate` with the plan's words."""

    draws: ActiveDraws
    look: int  # 0-based
    boundary: float  # the plan's (normal) critical value; each figure reads it with its own df
    scale: Scale
    level: float
    spending: Spending
    stopped: int | None
    read_as_t: bool

    def estimate(self, stats: LookStatistics, *, extra: dict[str, Any], gap: bool) -> Estimate:
        k = self.look + 1
        se = math.sqrt(stats.variance[self.look])
        df = float(stats.df[self.look]) if self.read_as_t else math.inf
        critical = float(t_critical(self.boundary, df))
        half = critical * se
        est = float(stats.estimate[self.look])
        tasks = int(stats.tasks_drawn[self.look])
        who = "raters" if stats.scope.startswith("raters") else "panel"
        as_t = math.isfinite(df)
        short = f"repeated CI, look {k} (c={critical:.2f}{f', t({df:.0f})' if as_t else ''}), {who}"
        reading = (f": the plan's {self.boundary:.2f} read as t with {df:.0f} Satterthwaite degrees of freedom"
                   if as_t else "")
        spend_name = "O'Brien-Fleming-type" if self.spending == "obf" else "Pocock-type"
        what = "own-family residual minus the other families' mean" if gap else "residual"
        unit = "tasks" if self.draws.paired else "answers"
        method = (
            f"active AIPW estimate of the {what}: the judge on all {self.draws.answer_id.size} pool answers "
            f"minus the predicted human label, corrected by inverse-probability-weighted labels on {tasks} "
            f"task(s) drawn in {k} of {self.draws.n_batches} batch(es) (Zrnic & Candès 2024); variance of the "
            f"batches' independent draws of {unit} plus the pool's, clustered by task; repeated confidence "
            f"interval at look {k} of an {spend_name} alpha-spending plan (critical value {critical:.2f}{reading}), "
            f"valid whenever the team stops; raters: {stats.scope}"
        )
        reason = stats.refused_at(self.look)
        if reason is not None:
            # Two raters, as calibrate refuses them: the reason and the fix, never a narrow interval.
            panel = critical * math.sqrt(max(float(stats.variance[self.look] - stats.raters[self.look]), 0.0))
            refused = (f"{reason}; this panel's own interval (±{panel:.3g} here) is `--interval panel`, or add a "
                       "third rater")
            return Estimate(est, _NAN, _NAN, tasks, f"{method.split('; raters:')[0]}; {REFUSED_METHOD}",
                            _UNITS[self.scale], self.level,
                            {**extra, "interval": f"none (2 raters), {who}", "scope": stats.scope, "df": df,
                             "se": se, "unreliable": refused, "refused": refused, "estimator": "active AIPW",
                             "look": k, "critical": critical, "stopped_at": self.stopped})
        unreliable = None
        if tasks < MIN_CLUSTERS:
            unreliable = f"only {tasks} tasks drawn: intervals are checked from {MIN_CLUSTERS} tasks up"
        absent = _no_interval(half, float(stats.variance[self.look]), self.scale)
        if absent is not None:
            return Estimate(est, _NAN, _NAN, tasks, method, _UNITS[self.scale], self.level,
                            {**extra, "interval": f"none yet, look {k}", "scope": stats.scope, "df": df, "se": se,
                             "unreliable": f"no interval yet: {absent}", "no_interval": absent,
                             "estimator": "active AIPW", "look": k, "critical": critical, "stopped_at": self.stopped})
        fields = {"interval": short, "scope": stats.scope, "df": df, "se": se, "unreliable": unreliable,
                  "estimator": "active AIPW", "look": k, "critical": critical, "stopped_at": self.stopped}
        return Estimate(est, est - half, est + half, tasks, method, _UNITS[self.scale], self.level,
                        {**extra, **fields})
