r"""Scoring-format diagnostics: effective granularity, ties, tie-aware agreement, parse rate.

A scoring format (binary, Likert-5, 0-100, comparative) fixes what a judge can express before
the judge says anything. Following "The Format is the Filter" (Gondara et al., arXiv
2610.17158), a pipeline that selects by judge score should report, per format:

- **effective granularity** :math:`D_\alpha = \exp(H_\alpha)`, the number of equally used
  levels with the same Rényi entropy as the emitted scores (:func:`effective_levels`);
  :math:`D_2 = 1/\sum p^2` is the inverse of the **tie probability** (:func:`tie_probability`);
- the **top-tied share**: prompts whose top score is shared, so selection among them is a coin
  flip (:func:`top_tied_share`);
- agreement with a reference that **counts ties against the judge**: :func:`tau_a`,
  :func:`somers_d` (as D(judge | reference)) and :func:`top1_agreement` under random
  tie-breaking. :func:`tau_b` is reported beside them because it is what people quote, and
  because it discounts exactly the ties a selector must break at random, it can rank a binary
  format best when the others rank it last;
- the **parse rate** of the judge's replies.

:func:`format_diagnostics` computes all of them at once. NaN scores are parse failures: they
count against the parse rate and are left out of every other figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from judgelab.calibration.stats._bootstrap import (
    RngLike,
    as_rng,
    check_level,
    check_resamples,
    cluster_bootstrap,
    weighted_mean,
)
from judgelab.calibration.stats._result import Estimate

FloatArray = npt.NDArray[np.float64]

# Within-prompt pairs are enumerated for prompts up to this many candidates, this many pairs at once.
_PAIRWISE_MAX = 256
_PAIR_CELLS = 1_000_000


# --------------------------------------------------------------------------------------------
# validation helpers


def _as_1d(func: str, name: str, values: npt.ArrayLike) -> FloatArray:
    """A 1-D float array, or ``ValueError`` naming the function and argument."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{func}: {name} must be one-dimensional; got shape {arr.shape}")
    return arr


def _same_length(func: str, **arrays: np.ndarray) -> int:
    lengths = {name: arr.shape[0] for name, arr in arrays.items()}
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{k}={v}" for k, v in lengths.items())
        raise ValueError(f"{func}: arguments must have the same length; got {listed}")
    return next(iter(lengths.values()))


def _group_codes(func: str, groups: npt.ArrayLike, n: int) -> npt.NDArray[np.intp]:
    ids = np.asarray(groups)
    if ids.ndim != 1 or ids.shape[0] != n:
        raise ValueError(f"{func}: groups must be one prompt id per score ({n}); got {ids.shape}")
    _, codes = np.unique(ids, return_inverse=True)
    return codes.astype(np.intp).ravel()


# --------------------------------------------------------------------------------------------
# effective granularity and ties


def _level_shares(func: str, scores: npt.ArrayLike) -> FloatArray:
    values = _as_1d(func, "scores", scores)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return np.empty(0)
    _, counts = np.unique(values, return_counts=True)
    return np.asarray(counts / counts.sum(), dtype=float)


def effective_levels(scores: npt.ArrayLike, *, alpha: float = 2.0) -> float:
    r"""Effective number of score levels, :math:`D_\alpha = \exp(H_\alpha)`.

    :math:`H_\alpha = \frac{1}{1-\alpha} \log \sum_k p_k^\alpha` is the Rényi entropy of
    order ``alpha`` of the empirical distribution of emitted scores, so :math:`D_\alpha` is the
    number of equally used levels with the same entropy. A 0-100 scale whose mass sits on 85,
    75, 45 and 65 has 101 nominal levels but only a handful of effective ones.

    Args:
        scores: Emitted scores (any numeric codes). ``nan`` marks a parse failure and is left
            out.
        alpha: Order of the entropy. ``0`` counts distinct values, ``1`` is the exponential of
            Shannon entropy (the limit, computed as such), ``2`` is :math:`1/\sum p^2` (the
            inverse tie probability), ``inf`` is :math:`1/\max p`. Larger orders weigh the
            most used levels more.

    Returns:
        :math:`D_\alpha` (between 1 and the number of distinct values); ``nan`` when no score
        is left.

    Examples:
        Shares 1/2, 1/4, 1/4 give :math:`\sum p^2 = 3/8`, so 8/3 effective levels:

        >>> round(effective_levels([1, 1, 2, 3]), 4)
        2.6667
        >>> effective_levels([10, 20, 30, 40], alpha=1)
        4.0

    Raises:
        ValueError: If ``alpha`` is negative or ``nan``, or ``scores`` is not 1-D.
    """
    func = "effective_levels"
    if not (isinstance(alpha, (int, float, np.floating)) and float(alpha) >= 0.0):
        raise ValueError(f"{func}: alpha must be a number >= 0 (or inf); got {alpha!r}")
    p = _level_shares(func, scores)
    if p.size == 0:
        return float("nan")
    a = float(alpha)
    if a == 0.0:
        return float(p.size)
    if a == 1.0:
        return float(np.exp(-np.sum(p * np.log(p))))
    if math.isinf(a):
        return float(1.0 / p.max())
    return float(np.sum(p**a) ** (1.0 / (1.0 - a)))


def tie_probability(scores: npt.ArrayLike) -> float:
    r"""Probability that two scores drawn at random (with replacement) are equal: :math:`\sum p^2`.

    Equals ``1 / effective_levels(scores, alpha=2)``.

    Args:
        scores: Emitted scores; ``nan`` (parse failures) left out.

    Returns:
        The tie probability; ``nan`` when no score is left.
    """
    p = _level_shares("tie_probability", scores)
    if p.size == 0:
        return float("nan")
    return float(np.sum(p**2))


def _sorted_by_group(
    codes: npt.NDArray[np.intp], *arrays: FloatArray
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], list[FloatArray]]:
    """Rows sorted by group: (sorted codes, group start offsets, sorted arrays)."""
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    return sorted_codes, starts, [a[order] for a in arrays]


def _top_counts(
    scores: FloatArray, codes: npt.NDArray[np.intp]
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Per group (in code order of groups present): size and number of candidates at the top."""
    _, starts, (s,) = _sorted_by_group(codes, scores)
    sizes = np.diff(np.r_[starts, s.size])
    top = np.maximum.reduceat(s, starts)
    at_top = (s == np.repeat(top, sizes)).astype(np.intp)
    return sizes.astype(np.intp), np.add.reduceat(at_top, starts)


def top_tied_share(scores: npt.ArrayLike, groups: npt.ArrayLike) -> float:
    """Share of prompts whose top score is shared by two or more candidates.

    On those prompts a top-1 selector picks at random among the tied candidates.

    Args:
        scores: One judge score per candidate; ``nan`` (parse failure) drops the candidate.
        groups: One prompt id per candidate.

    Returns:
        The share of prompts with a tied top score, among prompts with at least two scored
        candidates (a prompt with one candidate involves no choice and is left out); ``nan``
        when no prompt has two.
    """
    func = "top_tied_share"
    s = _as_1d(func, "scores", scores)
    codes = _group_codes(func, groups, s.shape[0])
    keep = ~np.isnan(s)
    if not keep.any():
        return float("nan")
    sizes, n_top = _top_counts(s[keep], codes[keep])
    eligible = sizes >= 2
    if not eligible.any():
        return float("nan")
    return float(np.mean(n_top[eligible] >= 2))


# --------------------------------------------------------------------------------------------
# rank agreement


def _count_inversions(values: npt.NDArray[np.int64]) -> int:
    """Number of pairs ``i < j`` with ``values[i] > values[j]`` (strictly).

    Bottom-up merge sort, vectorised per level: at width ``w`` the array is sorted within
    blocks of ``w``; for each element of a right block we count the elements of its left
    partner that are strictly larger (two ``searchsorted`` calls on globally offset keys), then
    sort within blocks of ``2w``. ``O(n log^2 n)`` with a handful of numpy calls per level.
    """
    a = np.asarray(values, dtype=np.int64).copy()
    n = a.shape[0]
    if n < 2:
        return 0
    span = int(a.max()) + 1
    idx = np.arange(n)
    total = 0
    width = 1
    while width < n:
        pair = idx // (2 * width)
        right = (idx // width) % 2 == 1
        keys = pair * span + a
        left_keys = keys[~right]  # sorted: blocks in order, each sorted
        r_keys = keys[right]
        r_pair = pair[right]
        block_end = np.searchsorted(left_keys, (r_pair + 1) * span, side="left")
        not_greater = np.searchsorted(left_keys, r_keys, side="right")
        total += int(np.sum(block_end - not_greater))
        a = a[np.argsort(keys, kind="stable")]
        width *= 2
    return total


def _tied_pairs(values: FloatArray) -> int:
    _, counts = np.unique(values, return_counts=True)
    return int(np.sum(counts * (counts - 1) // 2))


def tau_a(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    r"""Kendall's :math:`\tau_a = (C - D) / \binom{n}{2}`; ties count in the denominator.

    Unlike :math:`\tau_b`, every pair is in the denominator, so a pair the reference orders but
    the judge ties counts as a failure to order it, which is what a selector that breaks ties
    at random experiences. SciPy has no :math:`\tau_a`; this is Knight's :math:`O(n \log n)`
    construction: sort by ``(x, y)``, count strict inversions of ``y`` (the discordant pairs
    :math:`D`), then :math:`C = \binom{n}{2} - T_x - T_y + T_{xy} - D` from the tied-pair
    counts.

    Args:
        x: First ranking (e.g. judge scores).
        y: Second ranking (e.g. reference scores), same length. Symmetric in ``x`` and ``y``.

    Returns:
        :math:`\tau_a \in [-1, 1]`; ``nan`` when fewer than two pairs are complete (rows with
        ``nan`` in either input are dropped).

    Examples:
        A binary judge that never misorders but ties within each half: 4 of 6 pairs ordered.

        >>> round(tau_a([0, 0, 1, 1], [1, 2, 3, 4]), 4)
        0.6667

    Raises:
        ValueError: If the inputs are not 1-D of equal length.
    """
    func = "tau_a"
    xa, ya = _as_1d(func, "x", x), _as_1d(func, "y", y)
    _same_length(func, x=xa, y=ya)
    keep = ~(np.isnan(xa) | np.isnan(ya))
    xa, ya = xa[keep], ya[keep]
    n = xa.shape[0]
    if n < 2:
        return float("nan")
    n0 = n * (n - 1) // 2
    order = np.lexsort((ya, xa))
    y_ranks = np.unique(ya, return_inverse=True)[1].ravel()
    discordant = _count_inversions(y_ranks[order].astype(np.int64))
    joint = np.unique(np.column_stack([xa, ya]), axis=0, return_counts=True)[1]
    t_xy = int(np.sum(joint * (joint - 1) // 2))
    concordant = n0 - _tied_pairs(xa) - _tied_pairs(ya) + t_xy - discordant
    return (concordant - discordant) / n0


def tau_b(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    r"""Kendall's :math:`\tau_b` (``scipy.stats.kendalltau(x, y, variant="b")``).

    :math:`\tau_b = (C - D) / \sqrt{(n_0 - T_x)(n_0 - T_y)}` removes tied pairs from the
    denominator, which flatters a format that ties a lot: see :func:`tau_a`.

    Args:
        x: First ranking.
        y: Second ranking, same length.

    Returns:
        :math:`\tau_b`; ``nan`` when either input is constant or fewer than two complete
        pairs remain (rows with ``nan`` dropped).
    """
    func = "tau_b"
    xa, ya = _as_1d(func, "x", x), _as_1d(func, "y", y)
    _same_length(func, x=xa, y=ya)
    keep = ~(np.isnan(xa) | np.isnan(ya))
    if keep.sum() < 2:
        return float("nan")
    return float(stats.kendalltau(xa[keep], ya[keep], variant="b").statistic)


def somers_d(judge: npt.ArrayLike, reference: npt.ArrayLike) -> float:
    r"""Somers' :math:`D(\text{judge} \mid \text{reference})`, via ``scipy.stats.somersd``.

    Direction: the **reference is the independent variable**. Among the pairs the reference
    orders, it is the share the judge orders the same way minus the share it orders the other
    way; a pair the reference orders and the judge ties counts as neither, so it stays in the
    denominator and pulls :math:`D` toward 0. This is the direction in which a coarse format is
    penalised for its ties (the other direction, :math:`D(\text{reference} \mid
    \text{judge})`, drops judge-tied pairs and flatters it like :math:`\tau_b`). It equals
    ``scipy.stats.somersd(reference, judge).statistic``.

    Args:
        judge: Judge scores.
        reference: Reference scores (human labels or a trusted grader), same length.

    Examples:
        >>> round(somers_d([0, 0, 1, 1], [1, 2, 3, 4]), 4)
        0.6667

    Returns:
        :math:`D \in [-1, 1]`; 0 when the judge ties every candidate; ``nan`` when the
        reference is constant or fewer than two complete pairs remain (rows with ``nan``
        dropped).
    """
    func = "somers_d"
    ja, ra = _as_1d(func, "judge", judge), _as_1d(func, "reference", reference)
    _same_length(func, judge=ja, reference=ra)
    keep = ~(np.isnan(ja) | np.isnan(ra))
    if keep.sum() < 2 or np.unique(ra[keep]).size < 2:
        return float("nan")
    if np.unique(ja[keep]).size < 2:
        # A judge that ties every candidate orders none of the pairs the reference orders:
        # D = 0 by the definition above. (scipy refuses a one-column table, and dropping the
        # prompt instead would flatter exactly the coarse formats this statistic penalises.)
        return 0.0
    return float(stats.somersd(ra[keep], ja[keep]).statistic)


# --------------------------------------------------------------------------------------------
# top-1 under random tie-breaking


def _top1_per_group(
    judge: FloatArray, reference: FloatArray, codes: npt.NDArray[np.intp]
) -> tuple[FloatArray, npt.NDArray[np.intp]]:
    """Exact per-prompt top-1 hit probability and group sizes (groups present, code order).

    With ``T`` the judge's top-scored candidates and ``R`` the reference's, a pick uniform
    over ``T`` lands in ``R`` with probability ``|T ∩ R| / |T|``.
    """
    _, starts, (j, r) = _sorted_by_group(codes, judge, reference)
    sizes = np.diff(np.r_[starts, j.size])
    j_top = j == np.repeat(np.maximum.reduceat(j, starts), sizes)
    r_top = r == np.repeat(np.maximum.reduceat(r, starts), sizes)
    hits = np.add.reduceat((j_top & r_top).astype(float), starts)
    n_top = np.add.reduceat(j_top.astype(float), starts)
    return hits / n_top, sizes.astype(np.intp)


def _top1_simulated(
    judge: FloatArray,
    reference: FloatArray,
    codes: npt.NDArray[np.intp],
    n_draws: int,
    gen: np.random.Generator,
) -> FloatArray:
    """Monte Carlo per-prompt top-1 hit rate: break judge ties by random jitter, ``n_draws`` times."""
    _, starts, (j, r) = _sorted_by_group(codes, judge, reference)
    sizes = np.diff(np.r_[starts, j.size])
    r_top = r == np.repeat(np.maximum.reduceat(r, starts), sizes)
    out = np.empty(starts.size)
    for g, (start, size) in enumerate(zip(starts, sizes, strict=True)):
        scores = j[start : start + size]
        # rank by score, then by a uniform random key: the pick is uniform among the top tie
        keys = gen.random((n_draws, size))
        picks = np.lexsort((keys, np.broadcast_to(scores, (n_draws, size))), axis=1)[:, -1]
        out[g] = np.mean(r_top[start : start + size][picks])
    return out


def top1_agreement(
    judge: npt.ArrayLike,
    reference: npt.ArrayLike,
    groups: npt.ArrayLike,
    *,
    exact: bool = True,
    n_draws: int = 1000,
    rng: RngLike = None,
) -> float:
    r"""Mean over prompts of the chance the judge's top pick is a reference-top candidate.

    Per prompt, the judge's pick is its top-scored candidate with ties broken uniformly at
    random (what a top-1 selector does); it is a hit when the reference also scores it highest
    (ties at the reference top all count). With ``exact=True`` the per-prompt probability is
    the exact expectation :math:`|T \cap R| / |T|` (``T`` judge-top, ``R`` reference-top
    candidates), so no simulation noise; ``exact=False`` simulates ``n_draws`` tie-breaks per
    prompt instead (kept to check the expectation against).

    Args:
        judge: One judge score per candidate; rows with ``nan`` (in either input) are dropped.
        reference: One reference score per candidate.
        groups: One prompt id per candidate.
        exact: Exact expectation (default) or Monte Carlo.
        n_draws: Tie-breaks per prompt when ``exact=False``.
        rng: Generator, int seed or ``None``; used only when ``exact=False``.

    Returns:
        Top-1 agreement in ``[0, 1]`` over prompts with at least two complete candidates (a
        single candidate is no choice); ``nan`` when there are none. A prompt whose
        reference scores are all tied is a certain hit.

    Raises:
        ValueError: On mismatched lengths or ``n_draws < 1``.
    """
    func = "top1_agreement"
    ja, ra = _as_1d(func, "judge", judge), _as_1d(func, "reference", reference)
    n = _same_length(func, judge=ja, reference=ra)
    codes = _group_codes(func, groups, n)
    if not exact and (isinstance(n_draws, bool) or not isinstance(n_draws, int) or n_draws < 1):
        raise ValueError(f"{func}: n_draws must be a positive int; got {n_draws!r}")
    keep = ~(np.isnan(ja) | np.isnan(ra))
    if not keep.any():
        return float("nan")
    ja, ra, codes = ja[keep], ra[keep], codes[keep]
    per_group, sizes = _top1_per_group(ja, ra, codes)
    if not exact:
        per_group = _top1_simulated(ja, ra, codes, n_draws, as_rng(rng))
    eligible = sizes >= 2
    if not eligible.any():
        return float("nan")
    return float(np.mean(per_group[eligible]))


# --------------------------------------------------------------------------------------------
# all at once


@dataclass(frozen=True)
class FormatDiagnostics:
    r"""Everything "The Format is the Filter" asks a pipeline to report about one format.

    Attributes:
        format_name: The scoring format (e.g. ``"numeric100"``).
        n: Candidates with a parsed score and a reference score (the rows analysed).
        n_prompts: Prompts among them.
        distinct_values: Distinct scores emitted.
        d1: Effective levels at :math:`\alpha=1` (exponentiated Shannon entropy).
        d2: Effective levels at :math:`\alpha=2` (inverse tie probability).
        tie_probability: :math:`\sum p^2`.
        top_tied_share: Share of prompts (with 2+ candidates) whose top score is tied.
        tau_a: Mean within-prompt :math:`\tau_a`, bootstrap CI over prompts;
            ``extra["pooled"]`` has the pooled value.
        tau_b: Mean within-prompt :math:`\tau_b` over prompts where it is defined (not all
            judge or all reference scores tied), CI as above; ``extra["pooled"]`` pooled.
        somers_d: Mean within-prompt Somers' D(judge | reference) (the paper's Table 5
            figure) over prompts where the reference is not constant; ``extra["pooled"]``.
        top1: Mean exact top-1 agreement under random tie-breaking, bootstrap CI over prompts.
        parse_rate: Share of all judge replies that parsed, Wilson interval.
        n_scored: Candidates with a parsed score, with or without a reference (what
            ``distinct_values``, D1, D2 and the tie probability are counted over).
    """

    format_name: str
    n: int
    n_prompts: int
    distinct_values: int
    d1: float
    d2: float
    tie_probability: float
    top_tied_share: float
    tau_a: Estimate
    tau_b: Estimate
    somers_d: Estimate
    top1: Estimate
    parse_rate: Estimate
    n_scored: int = -1

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``nan`` becomes ``None``; estimates become nested dicts)."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, Estimate):
                out[name] = value.to_dict()
            elif isinstance(value, float) and math.isnan(value):
                out[name] = None
            else:
                out[name] = value
        return out


def _within_prompt(
    judge: FloatArray, reference: FloatArray, codes: npt.NDArray[np.intp]
) -> dict[str, FloatArray]:
    """Per-prompt tau_a, tau_b and Somers' D (``nan`` where undefined).

    A prompt holds a handful of candidates, so its pairs are enumerated outright, every prompt
    of one size at once, and counted (concordant, discordant, tied on either side); the three
    statistics are then the integer formulas :func:`tau_a`, :func:`tau_b` and :func:`somers_d`
    evaluate, with the same floating-point steps, so the values are identical to calling them
    per prompt (as the tests check). Prompts larger than ``_PAIRWISE_MAX`` call those functions
    (``O(n log n)`` instead of ``n²`` pairs).
    """
    _, starts, (j, r) = _sorted_by_group(codes, judge, reference)
    sizes = np.diff(np.r_[starts, j.size])
    out = {name: np.full(starts.size, np.nan) for name in ("tau_a", "tau_b", "somers_d")}
    for size in np.unique(sizes[sizes >= 2]):
        groups = np.flatnonzero(sizes == size)
        if size > _PAIRWISE_MAX:
            for g in groups:
                jg, rg = j[starts[g] : starts[g] + size], r[starts[g] : starts[g] + size]
                out["tau_a"][g], out["tau_b"][g], out["somers_d"][g] = tau_a(jg, rg), tau_b(jg, rg), somers_d(jg, rg)
            continue
        first, second = np.triu_indices(int(size), 1)
        step = max(1, _PAIR_CELLS // first.size)
        for lo in range(0, groups.size, step):
            at = groups[lo : lo + step]
            left, right = starts[at][:, None] + first, starts[at][:, None] + second
            for name, values in _pair_statistics(j[left] - j[right], r[left] - r[right]).items():
                out[name][at] = values
    return out


def _pair_statistics(dj: FloatArray, dr: FloatArray) -> dict[str, FloatArray]:
    """tau_a, tau_b and Somers' D(judge | reference) from within-prompt pair differences.

    Args:
        dj: Judge score differences, one row per prompt, one column per pair.
        dr: Reference score differences, same shape.
    """
    n0 = dj.shape[1]
    agree = np.sign(dj) * np.sign(dr)
    net = (agree > 0).sum(axis=1) - (agree < 0).sum(axis=1)  # concordant - discordant
    untied_j = n0 - (dj == 0).sum(axis=1)
    untied_r = n0 - (dr == 0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        # scipy.stats.kendalltau: nan if either side is all ties; (C - D) / sqrt / sqrt, clipped.
        tau_b = np.clip(net / np.sqrt(untied_j) / np.sqrt(untied_r), -1.0, 1.0)
        # somers_d: (C - D) over the pairs the reference orders; 0 for a judge that ties
        # them all, nan only when the reference orders none.
        somers = net / untied_r
    defined = (untied_j > 0) & (untied_r > 0)
    return {
        "tau_a": net / n0,
        "tau_b": np.where(defined, tau_b, np.nan),
        "somers_d": np.where(untied_r > 0, somers, np.nan),
    }


def _mean_over_prompts(
    values: FloatArray,
    *,
    pooled: float | None,
    units: str,
    what: str,
    n_resamples: int,
    level: float,
    gen: np.random.Generator,
    step: FloatArray,
    bounds: tuple[float, float] = (-1.0, 1.0),
) -> Estimate:
    """Mean of the per-prompt values, with a percentile bootstrap over prompts.

    ``step`` is how far one pair the other way moves each prompt's value (``2/pairs`` for the
    tau and D statistics, 1 for top-1): the size of the rule-of-three floor when the bootstrap
    interval collapses to a point.
    """
    ok = np.isfinite(values)
    defined = values[ok]
    extra: dict[str, Any] = {"prompts_defined": int(defined.size), "prompts": int(values.size), "floor": False}
    if pooled is not None:
        extra["pooled"] = pooled
    method = f"mean of within-prompt {what}; percentile bootstrap over prompts, {n_resamples} resamples"
    if defined.size == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, method, units, level, extra)
    lo, hi, _ = cluster_bootstrap(
        weighted_mean, None, defined, n_resamples=n_resamples, level=level, rng=gen
    )
    mean = float(defined.mean())
    if hi - lo <= 1e-12:
        # Every prompt gave the same value (a judge that orders every pair as the reference does:
        # +1.000 on each), so every resample does and the interval is a point. The data cannot
        # tell that from 3 of the prompts having one pair the other way (the rule of three, as the
        # kappa floor in judgelab.calibration.stats._agreement.design_kappa): the interval runs to there.
        events = min(3, int(defined.size))
        shift = events * float(step[ok].mean()) / defined.size
        lo, hi = max(mean - shift, bounds[0]), min(mean + shift, bounds[1])
        extra["floor"] = True
        method += (f"; every prompt gave {mean:+.3f}, so the interval runs to {events} of {defined.size} "
                   "prompts with one pair the other way (rule of three)")
    return Estimate(mean, lo, hi, int(defined.size), method, units, level, extra)


def format_diagnostics(
    scores: npt.ArrayLike,
    reference: npt.ArrayLike,
    groups: npt.ArrayLike,
    *,
    parsed: npt.ArrayLike | None = None,
    format_name: str = "unnamed",
    n_resamples: int = 2000,
    level: float = 0.95,
    rng: RngLike = None,
) -> FormatDiagnostics:
    r"""The four quantities a judge-based selection pipeline should report, for one format.

    Agreement is measured **within prompt** (a selector compares candidates for the same
    prompt, never across prompts): :math:`\tau_a`, :math:`\tau_b` and Somers' D are computed
    per prompt and averaged over the prompts where each is defined (the paper's "mean
    within-prompt Somers' D"); the pooled value over all candidates is kept in each
    estimate's ``extra["pooled"]``. Intervals resample prompts (percentile bootstrap).

    Args:
        scores: One judge score per candidate; ``nan`` marks a reply that did not parse.
        reference: One reference score per candidate (human or trusted grader).
        groups: One prompt id per candidate.
        parsed: Optional boolean per candidate, ``True`` where the judge reply parsed. Defaults
            to ``~isnan(scores)``. Rows not parsed are counted in the parse rate only.
        format_name: Name of the format, carried into the result.
        n_resamples: Bootstrap resamples for the agreement intervals.
        level: Confidence level of every interval.
        rng: Generator, int seed (deterministic) or ``None``.

    Returns:
        A :class:`FormatDiagnostics`. Degenerate cases: structural figures are ``nan`` when no
        score parsed; an agreement estimate is ``nan`` with ``n=0`` when it is defined on no
        prompt.

    Raises:
        ValueError: On mismatched lengths, a bad ``level`` or ``n_resamples``, or no rows.
    """
    func = "format_diagnostics"
    check_level(func, level)
    check_resamples(func, n_resamples)
    s, ref = _as_1d(func, "scores", scores), _as_1d(func, "reference", reference)
    n_total = _same_length(func, scores=s, reference=ref)
    if n_total == 0:
        raise ValueError(f"{func}: no scores")
    codes = _group_codes(func, groups, n_total)
    if parsed is None:
        ok = ~np.isnan(s)
    else:
        ok = np.asarray(parsed, dtype=bool)
        if ok.shape != s.shape:
            raise ValueError(f"{func}: parsed must be one flag per score; got {ok.shape}")
        ok = ok & ~np.isnan(s)
    gen = as_rng(rng)

    k_parsed = int(ok.sum())
    ci = stats.binomtest(k_parsed, n_total).proportion_ci(confidence_level=level, method="wilson")
    parse_rate = Estimate(
        k_parsed / n_total,
        float(ci.low),
        float(ci.high),
        n_total,
        "share of judge replies parsed; Wilson score interval",
        "share of replies",
        level,
        {"parsed": k_parsed, "failed": n_total - k_parsed},
    )

    use = ok & ~np.isnan(ref)
    j, r, c = s[use], ref[use], codes[use]
    within = _within_prompt(j, r, c) if j.size else {}
    empty = np.empty(0)
    per_prompt_n = np.unique(c, return_counts=True)[1].astype(float) if j.size else empty
    # One pair the other way moves a prompt's tau-a by 2/pairs (tau-b and D by about as much).
    pair_step = 2.0 / np.maximum(per_prompt_n * (per_prompt_n - 1) / 2, 1.0)

    def agreement(name: str, pooled: float, units: str, what: str) -> Estimate:
        return _mean_over_prompts(
            within.get(name, empty),
            pooled=pooled,
            units=units,
            what=what,
            n_resamples=n_resamples,
            level=level,
            gen=gen,
            step=pair_step,
        )

    if j.size:
        per_prompt, sizes = _top1_per_group(j, r, c)
        top1_values = np.where(sizes >= 2, per_prompt, np.nan)
    else:
        top1_values = empty
    top1 = _mean_over_prompts(
        top1_values,
        pooled=None,
        units="top-1 agreement",
        what="exact top-1 hit probability (judge ties broken uniformly at random)",
        n_resamples=n_resamples,
        level=level,
        gen=gen,
        step=np.ones(top1_values.size),
        bounds=(0.0, 1.0),
    )
    return FormatDiagnostics(
        format_name=format_name,
        n=int(j.size),
        n_prompts=int(np.unique(c).size),
        distinct_values=int(np.unique(s[ok]).size),
        d1=effective_levels(s[ok], alpha=1.0),
        d2=effective_levels(s[ok], alpha=2.0),
        tie_probability=tie_probability(s[ok]),
        top_tied_share=top_tied_share(s[ok], codes[ok]) if k_parsed else math.nan,
        tau_a=agreement("tau_a", tau_a(j, r), "Kendall tau-a", "Kendall tau-a"),
        tau_b=agreement("tau_b", tau_b(j, r), "Kendall tau-b", "Kendall tau-b (scipy)"),
        somers_d=agreement(
            "somers_d", somers_d(j, r), "Somers' D", "Somers' D(judge | reference) (scipy)"
        ),
        top1=top1,
        parse_rate=parse_rate,
        n_scored=k_parsed,
    )
