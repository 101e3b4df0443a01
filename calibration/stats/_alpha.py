"""Krippendorff's alpha with a bootstrap interval over units (optionally clustered by task).

The point value is ``krippendorff.alpha``, always called with an explicit
``level_of_measurement`` (that package defaults to ``"interval"``). The package gives no
interval, so the interval is a percentile bootstrap over units, or unit clusters, drawn with
the shared cluster draws of :mod:`judgelab.calibration.stats._bootstrap`. Alpha is a function of the
coincidence matrix, which adds up over units, so a resample's matrix is the per-cluster
matrices weighted by how often each cluster was drawn: one matrix product per block of
resamples instead of a library call per resample (checked against ``krippendorff.alpha`` on
resamples in the tests).
"""

from __future__ import annotations

from typing import Any, Literal

import krippendorff
import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import sparse

from judgelab.calibration.stats._bootstrap import (
    RngLike,
    as_rng,
    check_choice,
    check_level,
    check_resamples,
    cluster_count_blocks,
    encode_clusters,
    percentile_interval,
)
from judgelab.calibration.stats._result import Estimate

__all__ = ["KrippendorffLevel", "krippendorff_alpha", "level_for_scale"]

KrippendorffLevel = Literal["nominal", "ordinal", "interval", "ratio"]
"""Level of measurement for Krippendorff's alpha. ``"nominal"`` for pass/fail verdicts,
``"ordinal"`` for Likert-style ratings, ``"interval"`` for 0–100 scores."""

_LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")
_SCALE_LEVELS: dict[str, KrippendorffLevel] = {
    "binary": "nominal",
    "likert5": "ordinal",
    "pairwise5": "ordinal",
    "anchored": "ordinal",
    "numeric100": "interval",
    "tournament": "interval",
}
_NAN = float("nan")


def level_for_scale(scale: str) -> KrippendorffLevel:
    """The Krippendorff level of measurement that fits a scoring format.

    ``binary`` → ``nominal``; ``likert5``, ``pairwise5`` and ``anchored`` (ordered verdicts)
    → ``ordinal``; ``numeric100`` and ``tournament`` (a mean win probability) → ``interval``.

    Raises:
        ValueError: For an unknown scale, listing the known ones.
    """
    check_choice("level_for_scale", "scale", scale, tuple(_SCALE_LEVELS))
    return _SCALE_LEVELS[scale]


def krippendorff_alpha(
    reliability_data: npt.ArrayLike,
    *,
    level: KrippendorffLevel = "nominal",
    n_resamples: int = 1000,
    confidence: float = 0.95,
    clusters: npt.ArrayLike | None = None,
    rng: RngLike = None,
) -> Estimate:
    """Krippendorff's alpha with a bootstrap interval over units.

    Args:
        reliability_data: Raters × units array of numeric values, ``nan`` = not rated.
        level: Level of measurement: ``"nominal"``, ``"ordinal"``, ``"interval"`` or
            ``"ratio"`` (see :func:`level_for_scale`). Always passed to ``krippendorff``.
        n_resamples: Bootstrap resamples (units, or unit clusters, drawn with replacement).
        confidence: Confidence level of the interval.
        clusters: Optional cluster id per unit (e.g. task id) for a clustered bootstrap.
        rng: Generator, int seed (deterministic) or ``None``.

    Returns:
        An :class:`Estimate` (units ``"alpha"``) whose point equals
        ``krippendorff.alpha(reliability_data, level_of_measurement=level)``; ``n`` is the
        number of pairable units (rated by at least two raters). Degenerate cases, each
        ``nan`` with ``extra["reason"]``: no unit rated by two raters, or every pairable
        value the same (zero expected disagreement). Resamples that hit either are ignored.

    Raises:
        ValueError: On a bad ``level``, ``confidence`` or ``n_resamples``, or data that is not
            a 2-D numeric array.
    """
    func = "krippendorff_alpha"
    check_choice(func, "level", level, _LEVELS)
    check_level(func, confidence)
    check_resamples(func, n_resamples)
    try:
        data = np.asarray(reliability_data, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{func}: reliability_data must be numeric (nan = missing)") from err
    if data.ndim != 2:
        raise ValueError(f"{func}: reliability_data must be raters x units; got {data.shape}")
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    n_pairable = int(pairable.sum())
    method = (
        f"Krippendorff's alpha ({level}; krippendorff.alpha), percentile bootstrap over "
        f"{'units' if clusters is None else 'unit clusters'}, {n_resamples} resamples"
    )
    extra: dict[str, Any] = {"n_raters": int(data.shape[0]), "n_units": int(data.shape[1])}
    reason = _alpha_degenerate(data)
    if reason is not None:
        extra["reason"] = reason
        return Estimate(_NAN, _NAN, _NAN, n_pairable, method, "alpha", confidence, extra)
    point = float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    lo, hi = _alpha_interval(data, level, clusters, n_resamples, confidence, as_rng(rng))
    extra["reason"] = None
    return Estimate(point, lo, hi, n_pairable, method, "alpha", confidence, extra)


def _alpha_interval(
    data: npt.NDArray[np.float64],
    level: KrippendorffLevel,
    clusters: npt.ArrayLike | None,
    n_resamples: int,
    confidence: float,
    gen: np.random.Generator,
) -> tuple[float, float]:
    """Percentile interval of alpha over resampled units (or unit clusters).

    Alpha is a function of the coincidence matrix, and the coincidence matrix of a resample is
    the sum of its units' coincidence matrices, each counted as often as the unit was drawn.
    So the per-unit matrices are summed per cluster once (sparse: a unit with ``m`` values
    touches at most ``m²`` cells), and a block of resamples is one product of cluster
    multiplicities with that matrix. The multiplicities are the ones
    :func:`~judgelab.calibration.stats._bootstrap.cluster_bootstrap` draws from the same generator.
    """
    n_units = data.shape[1]
    codes = encode_clusters(clusters, n_units, func="krippendorff_alpha")
    n_clusters = int(codes.max()) + 1
    domain = np.unique(data[~np.isnan(data)])
    per_cluster = _cluster_coincidences(data, codes, n_clusters, domain)
    k = domain.size
    replicates = np.empty(n_resamples)
    # Bound the dense (resamples x k²) block of coincidence matrices as well as the draws.
    max_cells = max(1, 2_000_000 * n_clusters // max(n_clusters, k * k))
    for start, stop, counts in cluster_count_blocks(n_clusters, n_resamples, gen, max_cells=max_cells):
        o = np.asarray(per_cluster.T @ counts.T.astype(float)).T.reshape(-1, k, k)
        replicates[start:stop] = _alpha_from_coincidences(o, domain, level)
    if n_clusters < 2:
        return _NAN, _NAN
    return percentile_interval(replicates, confidence)


def _cluster_coincidences(
    data: npt.NDArray[np.float64], codes: npt.NDArray[np.intp], n_clusters: int, domain: npt.NDArray[np.float64]
) -> sparse.csr_array:
    """Coincidence matrices summed per cluster, flattened: sparse ``(n_clusters, k²)``.

    A unit rated ``n_c`` times with value ``c`` (``m`` values in all, ``m >= 2``) adds
    ``n_c·n_d / (m − 1)`` to cell ``(c, d)`` for ``c != d`` and ``n_c·(n_c − 1) / (m − 1)`` to
    ``(c, c)`` (Krippendorff's ``o_cd``, as ``krippendorff.alpha`` computes it).
    """
    k = domain.size
    rater, unit = np.nonzero(~np.isnan(data))
    m = np.bincount(unit, minlength=data.shape[1])
    keep = m[unit] >= 2
    cell = pd.DataFrame({"unit": unit[keep], "value": np.searchsorted(domain, data[rater[keep], unit[keep]])})
    counts = cell.groupby(["unit", "value"], sort=False).size().rename("n").reset_index()
    pairs = counts.merge(counts, on="unit", suffixes=("_c", "_d"))
    same = (pairs["value_c"] == pairs["value_d"]).to_numpy()
    n_c, n_d = pairs["n_c"].to_numpy(dtype=float), pairs["n_d"].to_numpy(dtype=float)
    units = pairs["unit"].to_numpy()
    weight = (n_c * n_d - np.where(same, n_c, 0.0)) / (m[units] - 1)
    flat = pairs["value_c"].to_numpy() * k + pairs["value_d"].to_numpy()
    return sparse.csr_array((weight, (codes[units], flat)), shape=(n_clusters, k * k))


def _alpha_from_coincidences(
    o: npt.NDArray[np.float64], domain: npt.NDArray[np.float64], level: KrippendorffLevel
) -> npt.NDArray[np.float64]:
    """Alpha for a stack of coincidence matrices ``(B, k, k)``: ``1 − (n − 1)·Σo·δ / Σ n_c·n_d·δ``.

    ``nan`` where alpha is undefined: no pairable value, or a single value used (zero expected
    disagreement), the cases :func:`_alpha_degenerate` names.
    """
    n_c = o.sum(axis=1)
    n = n_c.sum(axis=1)
    delta = _distances(domain, n_c, level)
    observed = (o * delta).sum(axis=(1, 2))
    expected = (n_c[:, :, None] * n_c[:, None, :] * delta).sum(axis=(1, 2)) / (n - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = 1.0 - observed / expected
    out[(n_c > 0).sum(axis=1) < 2] = _NAN
    return out


def _distances(
    domain: npt.NDArray[np.float64], n_c: npt.NDArray[np.float64], level: KrippendorffLevel
) -> npt.NDArray[np.float64]:
    """Squared distances δ²(c, d) between domain values, Krippendorff (2011), as ``krippendorff`` defines them.

    Returns ``(k, k)``, or ``(B, k, k)`` for ``"ordinal"``, whose distance depends on how often
    each value was used (``n_c``, shape ``(B, k)``): the number of values ranked between ``c``
    and ``d`` inclusive, minus half of ``n_c + n_d``, squared.
    """
    v = domain
    if level == "nominal":
        return (v[:, None] != v[None, :]).astype(float)
    if level == "interval":
        return (v[:, None] - v[None, :]) ** 2
    if level == "ratio":
        total = v[:, None] + v[None, :]
        ratio = np.divide(v[:, None] - v[None, :], total, out=np.zeros(total.shape), where=total != 0)
        return ratio**2
    cum = np.concatenate([np.zeros((n_c.shape[0], 1)), np.cumsum(n_c, axis=1)], axis=1)
    idx = np.arange(v.size)
    lo, hi = np.minimum(idx[:, None], idx[None, :]), np.maximum(idx[:, None], idx[None, :])
    between = cum[:, hi + 1] - cum[:, lo]
    return (between - (n_c[:, lo] + n_c[:, hi]) / 2) ** 2


def _alpha_degenerate(data: np.ndarray) -> str | None:
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    if not pairable.any():
        return "no unit was rated by at least two raters"
    values = data[:, pairable]
    if np.unique(values[~np.isnan(values)]).size < 2:
        return "every pairable rating has the same value: expected disagreement is zero"
    return None
