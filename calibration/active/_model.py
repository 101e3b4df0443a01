"""What the judge says about each answer's human label, and the probability of labelling it.

Pure functions, fixed before each batch is drawn (only labels from earlier batches enter), which
is what keeps the estimator of :mod:`judgelab.calibration.active._estimate` unbiased.

**Prediction.** Each answer gets a probability that a human passes it, ``p_i``, and an expected
human score, from three sources the project already has:

* the judge's **score distance to the pass threshold**: without labels, a human disagrees with
  the judge's verdict with probability ``q_i = Φ(−d_i/σ)``, as if the human's score were the
  judge's plus normal noise of sd ``σ``; ``d_i`` is the distance of the judge's score to the
  boundary between its passing and failing scores, and ``σ`` is solved so that the mean ``q``
  is the planning disagreement rate (0.2 unless a pilot measured it);
* the judge's **disagreement with itself** between the two orders of a pairwise comparison or
  between scoring formats: such an answer's ``q`` moves halfway to a coin toss;
* **pilot residuals by stratum**: the labels so far first re-fit ``σ`` (so that the labelled
  answers' expected disagreements add up to the disagreements seen, once there are
  ``min_refit`` of them), then scale each stratum's disagreements (family x judge verdict x
  score distance, when the scale has few distinct scores, x self-disagreement) by the ratio of
  the disagreements seen to those expected in it, shrunk towards 1 with the weight of
  ``prior_labels`` labels; the expected human score is the judge's shifted by the stratum's mean
  judge-minus-human score, shrunk the same way.

**Probability of labelling.** Active statistical inference (Zrnic & Candès 2024, "Active
Statistical Inference", ICML, arXiv:2403.03208) labels unit ``t`` with probability
``π_t ∝ u_t``, the sd of what the label would correct: for the self-preference gap, the task's
``u_t = √(Σ_{i∈t} g_i² p_i(1 − p_i))`` with ``g_i`` the answer's coefficient in the gap. A unit
costs its answers' labels ``m_t``; minimising ``Σ u_t²/π_t`` at an expected cost ``Σ m_t π_t = n``
gives ``π_t ∝ u_t/√m_t``. Mixed with the uniform rate ``r = n / Σ m`` as in the paper,
``π_t = min(1, γ·r + λ·u_t/√m_t)``, so no unit falls below the floor ``γ·r`` (a model that is
wrong about a stratum cannot switch it off) and ``λ`` makes the expected labels exactly ``n``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import optimize, special

__all__ = ["HumanPrediction", "predict_humans", "sampling_probabilities", "task_uncertainty"]

#: Distinct score distances kept as their own strata; more are cut into this many quantile bins.
_MAX_DISTANCES = 8
#: Predicted pass probabilities are kept inside this margin of 0 and 1 for the uncertainty. It is
#: small on purpose: the floor keeps every unit drawable, and a wider margin (0.02 was tried) makes
#: a good judge's confident answers look uncertain, flattening the probabilities and overstating the
#: variance the next batch is sized from (a third more labels at 95% agreement in the bench).
_P_MARGIN = 1e-3


@dataclass(frozen=True)
class HumanPrediction:
    """The predicted human label of each answer.

    Attributes:
        pred_pass: Probability that a human passes the answer.
        pred_score: Expected human score on the judge's scale (the judge's score shifted by the
            stratum's mean residual; ``nan`` where the judge gave no score).
        disagreement: Probability that the human's verdict differs from the judge's.
        stratum: The stratum each answer's pilot residuals come from.
        prior_sd: ``σ`` of the score-distance prior (``nan`` when the judge's scores carry no
            distance, e.g. a binary judge: every answer then starts at the planning rate).
        n_labelled: Labelled answers the strata learnt from.
    """

    pred_pass: npt.NDArray[np.float64]
    pred_score: npt.NDArray[np.float64]
    disagreement: npt.NDArray[np.float64]
    stratum: npt.NDArray[np.str_]
    prior_sd: float
    n_labelled: int


def predict_humans(
    judge_pass: npt.ArrayLike,
    family: npt.ArrayLike,
    *,
    judge_score: npt.ArrayLike | None = None,
    flipped: npt.ArrayLike | None = None,
    human_pass: npt.ArrayLike | None = None,
    human_score: npt.ArrayLike | None = None,
    disagreement: float = 0.2,
    prior_labels: float = 5.0,
    min_refit: int = 20,
) -> HumanPrediction:
    """Predict each answer's human label from the judge and the labels so far.

    Args:
        judge_pass: The judge's pass verdict (0/1) per answer.
        family: Model family per answer.
        judge_score: The judge's score per answer (``None``: verdicts only).
        flipped: Whether the judge disagreed with itself on the answer (orders or formats).
        human_pass: Labels so far: the human pass verdict (a share in [0, 1] with several raters),
            ``nan`` where unlabelled.
        human_score: The human score on the judge's scale, ``nan`` where unlabelled.
        disagreement: Planning rate of human-judge disagreement the prior averages to.
        prior_labels: How many labels the prior counts as in a stratum.
        min_refit: Labelled answers needed before they re-fit the prior's ``σ``.

    Returns:
        A :class:`HumanPrediction`.

    Raises:
        ValueError: On unequal lengths, verdicts other than 0/1, or options out of range.

    Examples:
        >>> p = predict_humans([1, 1, 0, 0], list("aabb"), judge_score=[5, 4, 3, 1], disagreement=0.2)
        >>> [round(float(x), 3) for x in p.disagreement]  # 4 and 3 sit next to the 3.5 boundary
        [0.105, 0.338, 0.338, 0.018]
    """
    j = _vector("judge_pass", judge_pass)
    n = j.size
    if not np.isin(j, (0.0, 1.0)).all():
        raise ValueError("predict_humans: judge_pass must be 0/1 for every answer")
    if not 0 < disagreement < 1 or prior_labels <= 0:
        raise ValueError("predict_humans: disagreement must be in (0, 1) and prior_labels positive")
    fam = np.asarray(family).astype(str)
    score = np.full(n, np.nan) if judge_score is None else _vector("judge_score", judge_score, n)
    flip = np.zeros(n, bool) if flipped is None else np.asarray(flipped, dtype=bool)
    h = np.full(n, np.nan) if human_pass is None else _vector("human_pass", human_pass, n)
    hs = np.full(n, np.nan) if human_score is None else _vector("human_score", human_score, n)
    if fam.shape != (n,) or flip.shape != (n,):
        raise ValueError("predict_humans: every input needs one entry per answer")

    distance = _distance(j, score)
    seen = np.isfinite(h)
    differs = np.abs(h - j)  # the disagreement seen (a share with several raters)
    q0, prior_sd = _prior(distance, min(disagreement, 0.45))
    if seen.sum() >= min_refit and np.isfinite(prior_sd):
        q0, prior_sd = _refit(distance, seen, differs, prior_sd)
    q0 = np.where(flip, (q0 + 0.5) / 2, q0)
    stratum = _strata(fam, j, distance, flip)
    codes = np.unique(stratum, return_inverse=True)[1].ravel()
    size = int(codes.max(initial=-1)) + 1
    seen_c = np.bincount(codes[seen], weights=differs[seen], minlength=size)
    expected_c = np.bincount(codes[seen], weights=q0[seen], minlength=size)
    mean_q0 = np.bincount(codes, weights=q0, minlength=size) / np.maximum(np.bincount(codes, minlength=size), 1)
    # A stratum so far from the threshold that its prior rounds to 0 and that has no label yet
    # has nothing to scale (0/0): it keeps its prior, and the clip below gives it the smallest rate.
    expected_all = expected_c + prior_labels * mean_q0
    ratio = np.divide(seen_c + prior_labels * mean_q0, expected_all, out=np.ones(size), where=expected_all > 0)
    q = np.clip(q0 * ratio[codes], 1e-4, 0.95)
    p = j * (1 - q) + (1 - j) * q
    both = np.isfinite(hs) & np.isfinite(score)
    m_c = np.bincount(codes[both], minlength=size).astype(float)
    shift = np.bincount(codes[both], weights=(score - hs)[both], minlength=size) / (m_c + prior_labels)
    return HumanPrediction(
        pred_pass=p,
        pred_score=score - shift[codes],
        disagreement=q,
        stratum=stratum,
        prior_sd=prior_sd,
        n_labelled=int(seen.sum()),
    )


def _vector(name: str, x: npt.ArrayLike, n: int | None = None) -> npt.NDArray[np.float64]:
    out = np.asarray(x, dtype=float).ravel()
    if n is not None and out.shape != (n,):
        raise ValueError(f"predict_humans: {name} must have one entry per answer ({n}); got {out.shape}")
    return out


def _distance(judge_pass: npt.NDArray[np.float64], score: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Distance of each judge score to the boundary between its passing and failing scores.

    The boundary is the midpoint between the highest failing and the lowest passing score seen
    (3.5 on a 1-5 scale passing at 4), so no rubric is needed. Without scores, or when the
    verdicts do not split the scores (a pass below a fail), every distance is 1.
    """
    known = np.isfinite(score)
    passing, failing = score[known & (judge_pass == 1)], score[known & (judge_pass == 0)]
    if not known.all() or passing.size == 0 or failing.size == 0 or failing.max() > passing.min():
        return np.ones(judge_pass.size)
    boundary = (failing.max() + passing.min()) / 2
    return np.asarray(np.abs(score - boundary), dtype=float)


def _prior(distance: npt.NDArray[np.float64], rate: float) -> tuple[npt.NDArray[np.float64], float]:
    """``q = Φ(−d/σ)`` with ``σ`` such that the mean ``q`` is ``rate`` (``rate`` everywhere without spread)."""
    if distance.size == 0 or np.ptp(distance) == 0 or not (distance > 0).all():
        return np.full(distance.size, rate), math.nan

    def gap(log_sd: float) -> float:
        return float(special.ndtr(-distance / math.exp(log_sd)).mean()) - rate

    log_sd = optimize.brentq(gap, -12.0, 12.0, xtol=1e-10)
    sd = math.exp(log_sd)
    return np.asarray(special.ndtr(-distance / sd), dtype=float), sd


def _refit(
    distance: npt.NDArray[np.float64], seen: npt.NDArray[np.bool_], differs: npt.NDArray[np.float64], sd: float
) -> tuple[npt.NDArray[np.float64], float]:
    """``σ`` re-fit so that the labelled answers' ``Σ Φ(−d/σ)`` equals their disagreements seen.

    The prior is already a probit curve of the human's pass in the judge's score,
    ``Φ((s − boundary)/σ)``, so this is a calibration of it. A fuller fit (a boundary shift per
    family and ``σ`` by penalised maximum likelihood, without the stratum factors on a 0-100
    judge) was measured in ``bench/active_economy.py`` at 85% agreement: 2.7% fewer labels on a
    0-100 judge, 1.5% on a 1-5 one (200 redraws on the same seeds), and more runs spending the
    plan's alpha before the target (5.75% against 2.75% in the seeded test): not adopted.
    """
    d, target = distance[seen], float(differs[seen].sum())
    lo, hi = float(special.ndtr(-d / math.exp(-12)).sum()), float(special.ndtr(-d / math.exp(12)).sum())
    if not lo < target < hi:
        return np.asarray(special.ndtr(-distance / sd), dtype=float), sd
    log_sd = optimize.brentq(lambda x: float(special.ndtr(-d / math.exp(x)).sum()) - target, -12.0, 12.0,
                             xtol=1e-10)
    sd = math.exp(log_sd)
    return np.asarray(special.ndtr(-distance / sd), dtype=float), sd


def _strata(
    family: npt.NDArray[np.str_],
    judge_pass: npt.NDArray[np.float64],
    distance: npt.NDArray[np.float64],
    flipped: npt.NDArray[np.bool_],
) -> npt.NDArray[np.str_]:
    """``family | pass|fail | d=… | flip`` per answer; many distinct distances are binned."""
    values = np.unique(distance)
    if values.size > _MAX_DISTANCES:
        cuts = np.unique(np.quantile(distance, np.linspace(0, 1, 6)[1:-1]))
        bins = np.searchsorted(cuts, distance, side="right")
        label = np.char.add("d bin ", bins.astype(str))
    else:
        label = np.char.add("d=", np.char.mod("%g", distance))
    verdict = np.where(judge_pass == 1, "pass", "fail")
    out = np.char.add(np.char.add(np.char.add(family, " | "), verdict), " | ")
    out = np.char.add(out, label)
    return np.asarray(np.where(flipped, np.char.add(out, " | flips"), out), dtype=str)


def task_uncertainty(
    pred_pass: npt.ArrayLike, coef: npt.ArrayLike, task: npt.ArrayLike, *, n_tasks: int | None = None
) -> npt.NDArray[np.float64]:
    """``u_t = √(Σ_{i∈t} g_i² p_i(1 − p_i))``: the sd of what labelling task ``t`` corrects.

    Args:
        pred_pass: Predicted human pass probability per answer.
        coef: The answer's coefficient in the estimate (e.g. ``±1/N_f`` in the gap).
        task: Task code per answer, ``0..T−1``.
        n_tasks: ``T`` (default: the largest code + 1).

    Returns:
        One sd per task.

    Examples:
        >>> task_uncertainty([0.5, 0.9, 0.5], [1.0, -1.0, 1.0], [0, 0, 1]).round(3).tolist()
        [0.583, 0.5]
    """
    p = np.clip(np.asarray(pred_pass, dtype=float), _P_MARGIN, 1 - _P_MARGIN)
    g = np.asarray(coef, dtype=float)
    codes = np.asarray(task, dtype=np.intp)
    size = int(codes.max(initial=-1)) + 1 if n_tasks is None else n_tasks
    return np.sqrt(np.bincount(codes, weights=g**2 * p * (1 - p), minlength=size))


def sampling_probabilities(
    uncertainty: npt.ArrayLike,
    size: float,
    *,
    cost: npt.ArrayLike | None = None,
    floor: float = 0.25,
    fixed: npt.ArrayLike | None = None,
) -> npt.NDArray[np.float64]:
    """Probabilities of labelling each unit, ``π_t = min(1, γ·r + λ·u_t/√m_t)`` (module docstring).

    Args:
        uncertainty: ``u_t`` per unit (task).
        size: Expected labels of the batch, ``Σ m_t π_t`` over the units not ``fixed``.
        cost: Labels per unit ``m_t`` (its answers; default 1).
        floor: ``γ`` in (0, 1]: the share of the uniform rate every unit keeps (1: uniform).
            It must be positive: a unit that can never be drawn would leave the estimate
            resting on the prediction alone there.
        fixed: Units already labelled: probability 1, no cost, not counted in ``size``.

    Returns:
        One probability per unit. The free units' expected labels are exactly ``size`` (all of
        them when ``size`` is at least their labels), and none is below ``floor·size/Σm``.

    Raises:
        ValueError: On a negative size or uncertainty, or a floor outside (0, 1].

    Examples:
        >>> sampling_probabilities([1, 1, 2, 4], 2, floor=0.5).round(3).tolist()
        [0.375, 0.375, 0.5, 0.75]
    """
    u = np.asarray(uncertainty, dtype=float)
    m = np.ones_like(u) if cost is None else np.asarray(cost, dtype=float)
    done = np.zeros(u.shape, bool) if fixed is None else np.asarray(fixed, dtype=bool)
    if size < 0 or (u < 0).any() or not np.isfinite(u).all() or not 0 < floor <= 1:
        raise ValueError("sampling_probabilities: size and uncertainties must be non-negative, floor in (0, 1]")
    if u.shape != m.shape or u.shape != done.shape or (m <= 0).any():
        raise ValueError("sampling_probabilities: one positive cost and one flag per unit")
    pi = np.ones_like(u)
    free = ~done
    total = float(m[free].sum())
    if size >= total or not free.any():
        return pi
    rate = size / total
    a = u[free] / np.sqrt(m[free])
    if not (a > 0).any() or floor >= 1:
        pi[free] = rate
        return pi
    a = a + 1e-9 * a.max()  # every unit can reach 1, so any size up to the total is reachable
    base = floor * rate

    def spent(lam: float) -> float:
        return float((m[free] * np.minimum(1.0, base + lam * a)).sum()) - size

    hi = 1.0
    while spent(hi) < 0:
        hi *= 2
    lam = optimize.brentq(spent, 0.0, hi, xtol=1e-14 * hi, rtol=1e-14)
    pi[free] = np.minimum(1.0, base + lam * a)
    return pi
