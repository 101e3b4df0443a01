"""Ordinary least squares with a cluster-robust (CR1) sandwich variance, in numpy.

``β̂ = (X'X)⁻¹ X'y``; with residuals ``u = y − Xβ̂`` and cluster score sums ``s_g = Σ_{i∈g} x_i u_i``
the variance is

    V̂ = c · (X'X)⁻¹ (Σ_g s_g s_g') (X'X)⁻¹,   c = G/(G − 1) · (N − 1)/(N − K)

the CR1 small-sample factor of Stata's ``regress, vce(cluster)`` and of statsmodels'
``cov_type="cluster"`` (Cameron & Miller 2015, "A practitioner's guide to cluster-robust
inference", J. Human Resources 50(2), §VI.B). The interval is ``β̂ ± t_{G−1} √V̂``: with few
clusters the t with ``G − 1`` degrees of freedom is what keeps the coverage near nominal (ibid.,
§VI.C). With every row its own cluster this is HC1 (White's variance times ``N/(N − K)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import special

from judgelab.calibration.stats import Estimate

_NAN = float("nan")


@dataclass(frozen=True)
class ClusteredFit:
    """An OLS fit with its CR1 cluster-robust covariance.

    Attributes:
        names: The regressors' names, in the order of ``coef``.
        coef: The coefficients.
        cov: Their CR1 covariance (``nan`` when there are fewer than 2 clusters).
        n: Rows fitted.
        n_clusters: Clusters (tasks) they fall in.
    """

    names: tuple[str, ...]
    coef: npt.NDArray[np.float64]
    cov: npt.NDArray[np.float64]
    n: int
    n_clusters: int

    @property
    def df(self) -> int:
        """Degrees of freedom of the t interval: clusters − 1."""
        return max(self.n_clusters - 1, 0)

    def se(self, name: str) -> float:
        """The CR1 standard error of one coefficient."""
        i = self.names.index(name)
        return float(math.sqrt(self.cov[i, i])) if self.cov[i, i] >= 0 else _NAN

    def estimate(self, name: str, *, units: str, what: str, level: float = 0.95) -> Estimate:
        """One coefficient as an :class:`~judgelab.calibration.stats.Estimate` with its t interval.

        Args:
            name: The regressor.
            units: Units of the coefficient (those of ``y`` for an indicator).
            what: Words for the method line (what was regressed on what).
            level: Confidence level.
        """
        value = float(self.coef[self.names.index(name)])
        se = self.se(name)
        if self.df >= 1 and math.isfinite(se):
            half = float(special.stdtrit(self.df, 0.5 + level / 2)) * se
            lo, hi = value - half, value + half
        else:
            lo, hi = _NAN, _NAN
        method = (f"{what}; OLS, CR1 cluster-robust variance over {self.n_clusters} task clusters, "
                  f"t interval with {self.df} df")
        return Estimate(value, lo, hi, self.n, method, units, level,
                        {"se": se, "df": self.df, "n_clusters": self.n_clusters})


def clustered_ols(
    y: npt.ArrayLike,
    x: npt.ArrayLike,
    clusters: npt.ArrayLike,
    *,
    names: tuple[str, ...] | None = None,
) -> ClusteredFit:
    """OLS of ``y`` on the columns of ``x`` (include the intercept yourself), CR1-clustered.

    Args:
        y: Outcome per row.
        x: Design matrix, one row per observation.
        clusters: Cluster label per row (the task).
        names: Column names (default ``x0, x1, ...``).

    Returns:
        A :class:`ClusteredFit`.

    Raises:
        ValueError: On mismatched lengths, missing values, fewer rows than columns or a
            rank-deficient design.

    >>> fit = clustered_ols([1.0, 2.0, 3.0, 5.0], [[1, 0], [1, 1], [1, 2], [1, 3]], ["a", "a", "b", "b"])
    >>> [round(float(c), 2) for c in fit.coef]
    [0.8, 1.3]
    """
    yv = np.asarray(y, dtype=float)
    xm = np.asarray(x, dtype=float)
    if xm.ndim == 1:
        xm = xm[:, None]
    n, k = xm.shape
    if yv.shape != (n,) or len(clusters) != n:  # type: ignore[arg-type]
        raise ValueError(f"clustered_ols: y has {yv.size} rows, x {n}, clusters {len(clusters)}")  # type: ignore[arg-type]
    if not (np.isfinite(yv).all() and np.isfinite(xm).all()):
        raise ValueError("clustered_ols: y and x must have no missing values")
    if n <= k:
        raise ValueError(f"clustered_ols: {n} rows cannot fit {k} coefficients")
    xtx = xm.T @ xm
    if np.linalg.matrix_rank(xtx) < k:
        raise ValueError("clustered_ols: the design is rank-deficient (a regressor is constant or duplicated)")
    bread = np.linalg.inv(xtx)
    coef = bread @ (xm.T @ yv)
    u = yv - xm @ coef
    codes, uniques = pd.factorize(np.asarray(clusters), sort=False)
    g = len(uniques)
    scores = xm * u[:, None]
    sums = np.column_stack([np.bincount(codes, weights=scores[:, j], minlength=g) for j in range(k)])
    if g < 2:
        cov = np.full((k, k), _NAN)
    else:
        factor = g / (g - 1) * (n - 1) / (n - k)
        cov = factor * bread @ (sums.T @ sums) @ bread
    return ClusteredFit(tuple(names or (f"x{j}" for j in range(k))), coef, cov, n, g)


def clustered_mean(values: npt.ArrayLike, clusters: npt.ArrayLike, *, units: str, what: str,
                   level: float = 0.95) -> Estimate:
    """A mean with its CR1 task-clustered t interval (OLS on an intercept alone)."""
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        mean = float(v.mean()) if v.size else _NAN
        return Estimate(mean, _NAN, _NAN, int(v.size), f"{what}; fewer than 2 answers, no interval", units, level)
    fit = clustered_ols(v, np.ones((v.size, 1)), clusters, names=("mean",))
    return fit.estimate("mean", units=units, what=what, level=level)
