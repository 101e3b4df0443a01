"""Repeated confidence intervals: an alpha-spending plan over the looks of an active design.

A team that looks at an interval after every batch and stops when it is narrow enough is
running a sequential test; a fixed-sample 95% interval looked at five times covers less than
95% at the look where the team stops if the stopping depends on the estimate. The plan here
keeps the promise at *every* look, whatever the team decides at each: the looks' intervals
cover the truth all at once with probability at least ``1 − alpha`` (Jennison & Turnbull 1989,
"Interim analyses: the repeated confidence interval approach", JRSS B 51:305-361), so an
interval read at any look, and in particular where the team stopped, is a valid 95% interval.

How much of ``alpha`` each look may use is set by a **spending function** of the information
fraction ``τ`` (Lan & DeMets 1983, Biometrika 70:659-663): the looks need not be planned in
number or timing, only the function. ``"obf"`` spends almost nothing early (O'Brien-Fleming
type: each side spends ``2 − 2Φ(z_{1−α/4}/√τ)``), so the last looks' critical values stay close to the
fixed-sample 1.96; ``"pocock"`` spends evenly (``α ln(1 + (e − 1)τ)``).

The information fraction is measured against the **target**: a target half-width ``H`` is
reached at information ``(c/H)²`` for a critical value ``c``, and the plan's maximum
information is ``I_max = (c* / H)²`` with ``c* = margin · z_{1−α/2}``. The **last look** is the
first at which spending all the alpha left would give a half-width of at most ``H``
(``c_rest/√I ≤ H``): it spends it all and meets the target, and later looks spend nothing.
Which look that is depends on the information alone, as every choice of a spending plan must
(Lan & DeMets's plans stay valid for looks chosen that way; Jennison & Turnbull 2000, ch. 7),
so the looks' intervals still cover together. The looks before it spend by the function at
``τ = I/I_max``; ``I_max`` beyond the information the target needs makes them spend little (the
default margin 1.5 puts the target near ``τ = 0.44``, where the O'Brien-Fleming function has
spent 0.0015 of its 0.05), so the last look's critical value is 1.96-1.97 rather than 2.0-2.1; in
``bench/active_economy.py`` an active design at 85% agreement needed 13-17% fewer labels than
with a last look at ``τ = 1`` and a margin of 1.05. The margin also leaves room for a look read
as t on few degrees of freedom: with 1.3, 1.5% of the runs at 95% agreement reached ``τ = 1``
before their t value met the target, and such a plan is spent; with 1.5 none did. A look after
the plan's ``alpha`` is spent may spend nothing: its critical value is infinite, and the
interval to report is the last finite one.

The critical values come from the canonical joint distribution of the looks' z-statistics
(``corr(Z_j, Z_k) = √(I_j/I_k)``) by the recursive numerical integration of Armitage, McPherson
& Rowe (1969, JRSS A 132:235-244), as in Reboussin, DeMets, Kim & Lan (2000, Controlled
Clinical Trials 21:190-207), on a Simpson grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import optimize, special

from judgelab.calibration.stats._bootstrap import check_choice

__all__ = ["SPENDINGS", "Boundaries", "Spending", "spend", "spending_boundaries", "t_critical"]

Spending = Literal["obf", "pocock"]
"""The alpha-spending function: O'Brien-Fleming type (back-loaded) or Pocock type (even)."""

SPENDINGS: tuple[Spending, ...] = ("obf", "pocock")

#: Grid points per look for the numerical integration (Simpson's rule needs an odd count); more
#: when a look adds little information, so the grid stays finer than the increment's sd.
_GRID = 301
_MAX_GRID = 4001
#: A look that adds less than this share of the information so far is a repeat of the last one:
#: it may spend nothing (its alpha waits for the next look that adds information).
_MIN_GROWTH = 1e-4
#: A look that may spend nothing has an infinite critical value; its continuation region is
#: integrated over ±this many standard deviations of the score instead.
_WIDE = 9.0


def spend(tau: npt.ArrayLike, *, alpha: float = 0.05, spending: Spending = "obf") -> npt.NDArray[np.float64]:
    """Cumulative two-sided alpha spent by information fraction ``tau`` (clipped to [0, 1]).

    Examples:
        >>> round(float(spend(1.0)), 6), round(float(spend(0.5)), 6)
        (0.05, 0.003051)
        >>> round(float(spend(0.5, spending="pocock")), 6)
        0.031006
    """
    check_choice("spend", "spending", spending, SPENDINGS)
    t = np.clip(np.asarray(tau, dtype=float), 0.0, 1.0)
    if spending == "pocock":
        return np.asarray(alpha * np.log1p((math.e - 1) * t), dtype=float)
    # Each side spends alpha/2 with the one-sided O'Brien-Fleming-type function, as rpact and
    # gsDesign do for a symmetric two-sided plan (a little more back-loaded than spending
    # 2 − 2Φ(z_{1−α/2}/√τ) over both sides at once).
    z = float(special.ndtri(1 - alpha / 4))
    with np.errstate(divide="ignore"):
        out = 4 * special.ndtr(-z / np.sqrt(t))  # the lower tail: 1 − Φ(x) cancels to 0 for x above ~8
    return np.asarray(np.where(t > 0, out, 0.0), dtype=float)


def t_critical(critical: npt.ArrayLike, df: npt.ArrayLike | None) -> npt.NDArray[np.float64]:
    """Normal critical values as Student t ones with the same tail probability.

    The plan's critical values come from the normal joint distribution of the looks; an estimate
    whose variance comes from ``df + 1`` clusters is wider-tailed, and a look read with the normal
    value covers less on a small sample. Jennison & Turnbull (2000, ch. 11) read each look of a
    group sequential t-test at the t quantile of the normal boundary's tail probability; so do
    the looks here. ``df`` of ``None``, ``nan`` or ``inf`` leaves a value as it is.

    Examples:
        >>> t_critical([1.96, 2.5], 9).round(3).tolist()
        [2.262, 3.115]
        >>> t_critical([1.96, float("inf")], None).tolist()
        [1.96, inf]
    """
    c = np.asarray(critical, dtype=float)
    if df is None:
        return c.copy()
    d = np.broadcast_to(np.asarray(df, dtype=float), c.shape)
    usable = np.isfinite(d) & (d > 0)
    nu = np.where(usable, d, 1.0)
    log_tail = special.log_ndtr(-np.where(np.isfinite(c), c, 0.0))
    with np.errstate(invalid="ignore", over="ignore"):
        # From the lower tail: 1 − Φ(c) keeps its precision where Φ(c) rounds to 1.
        t = -special.stdtrit(nu, np.exp(log_tail))
        # An early look of an O'Brien-Fleming plan can spend less than the smallest double; there
        # the t tail's power law, P(T > t) ≈ K ν^((ν−1)/2) t^(−ν), inverts in logs.
        log_k = special.gammaln((nu + 1) / 2) - special.gammaln(nu / 2) - 0.5 * np.log(nu * math.pi)
        far = np.exp((log_k + (nu - 1) / 2 * np.log(nu) - log_tail) / nu)
    t = np.where(np.isfinite(t) & (log_tail > -600), t, far)
    return np.asarray(np.where(usable & np.isfinite(c), t, c), dtype=float)


def _normal_for(t: float, df: float) -> float:
    """The normal critical value that :func:`t_critical` reads as ``t`` with ``df`` (its inverse)."""
    if not (math.isfinite(df) and df > 0):
        return t
    return float(-special.ndtri(special.stdtr(df, -t)))


@dataclass(frozen=True)
class Boundaries:
    """Critical values of the looks of a sequential plan.

    Attributes:
        information: Information at each look (the caller's estimates, made non-decreasing).
        tau: Information fraction of each look, ``min(I_k / I_max, 1)``.
        spent: Cumulative alpha spent by each look.
        critical: Critical value ``c_k`` of each look (``inf`` where a look may spend nothing,
            e.g. one that adds no information): the look's interval is ``estimate ± c_k · se``.
    """

    information: npt.NDArray[np.float64]
    tau: npt.NDArray[np.float64]
    spent: npt.NDArray[np.float64]
    critical: npt.NDArray[np.float64]


def spending_boundaries(
    information: npt.ArrayLike,
    *,
    max_information: float,
    alpha: float = 0.05,
    spending: Spending = "obf",
    target_half_width: float | None = None,
    df: npt.ArrayLike | None = None,
) -> Boundaries:
    """Two-sided critical values for looks at the given information levels.

    Args:
        information: Information (1 / variance of the estimate) at each look so far, in order.
            A level below an earlier one is raised to it (information cannot shrink between
            looks); a look that adds (almost) none spends nothing.
        max_information: The plan's maximum information (``τ = 1``).
        alpha: Total two-sided error of the plan.
        spending: See :data:`Spending`.
        target_half_width: The plan's target: the first look at which spending all the alpha
            left gives a half-width ``c/√I`` of at most this is the plan's last; it spends it all
            (later looks spend nothing). ``None``: only a look at ``τ ≥ 1`` spends the rest.
        df: Degrees of freedom of each look's variance: with a target, a look meets it when its
            critical value read as a t one (:func:`t_critical`) does.

    Returns:
        The :class:`Boundaries`. The looks' intervals ``θ̂_k ± c_k/√I_k`` cover ``θ`` at every
        look at once with probability ``1 − spent[-1]`` (at least ``1 − alpha``).

    Raises:
        ValueError: On no looks, non-positive information or bad options.

    Examples:
        >>> b = spending_boundaries([1, 2, 3, 4, 5], max_information=5)
        >>> [round(float(c), 2) for c in b.critical]
        [4.88, 3.36, 2.68, 2.29, 2.03]
    """
    check_choice("spending_boundaries", "spending", spending, SPENDINGS)
    if not 0 < alpha < 1:
        raise ValueError(f"spending_boundaries: alpha must be in (0, 1); got {alpha!r}")
    info = np.asarray(information, dtype=float).ravel()
    if info.size == 0 or not np.isfinite(info).all() or (info <= 0).any() or not max_information > 0:
        raise ValueError("spending_boundaries: information levels must be positive and finite")
    info = np.maximum.accumulate(info)
    tau = np.minimum(info / max_information, 1.0)
    allowed = spend(tau, alpha=alpha, spending=spending)
    allowed[tau >= 1.0] = alpha
    critical = np.full(info.size, np.inf)
    spent = np.zeros(info.size)
    goal = math.inf if target_half_width is None else float(target_half_width)
    dfs = np.broadcast_to(np.nan if df is None else np.asarray(df, dtype=float), info.shape)

    def meets(c: float, k: int) -> bool:
        return math.isfinite(goal) and float(t_critical(c, dfs[k])) <= goal * math.sqrt(info[k])

    critical[0] = _first(float(allowed[0])) if allowed[0] > 0 or spending != "obf" else \
        _first_obf(float(tau[0]), alpha)
    if meets(_first(alpha), 0):
        critical[0], allowed[:] = _first(alpha), alpha
    spent[0] = allowed[0] if math.isfinite(critical[0]) else 0.0
    grid, density = _start(info[0], critical[0])
    last = float(info[0])  # information at the last look that added some
    for k in range(1, info.size):
        spent[k] = spent[k - 1]
        if info[k] <= last * (1 + _MIN_GROWTH) or spent[k - 1] >= alpha:
            continue
        sd = math.sqrt(info[k] - last)
        rest = alpha - float(spent[k - 1])
        # The look that can meet the target by spending the rest ends the plan (it depends on the
        # information only, as every spending decision must). The rest's critical value is at
        # most the largest that meets the target exactly when the paths beyond that one carry at
        # most the rest: one exit probability, not a second root search, on each look.
        if allowed[k] < alpha and math.isfinite(goal):
            widest = float(_normal_for(goal * math.sqrt(info[k]), dfs[k]))
            if _exit(grid, density, sd, widest * math.sqrt(info[k])) <= rest:
                allowed[k:] = alpha
        critical[k] = _next_critical(grid, density, sd, info[k], float(allowed[k] - spent[k - 1]))
        spent[k] = allowed[k] if math.isfinite(critical[k]) else spent[k - 1]
        grid, density = _propagate(grid, density, sd, info[k], critical[k])
        last = float(info[k])
    return Boundaries(information=info, tau=tau, spent=spent, critical=critical)


def _first(increment: float) -> float:
    # From the lower tail: an early look spends so little (4e-56 at τ = 0.02) that 1 − α/2 rounds to 1.
    return float(-special.ndtri(increment / 2)) if increment > 0 else math.inf


def _first_obf(tau: float, alpha: float) -> float:
    """A first look's critical value where its O'Brien-Fleming spending underflows to 0.

    Ten labels against a target that needs thousands (``τ`` = 0.003) spend ``4Φ(−38)``, below
    the smallest double; in logs the look still gets its (very wide) interval, not "no interval".
    """
    if tau <= 0:
        return math.inf
    z = float(special.ndtri(1 - alpha / 4))
    # Each side spends half of 4Φ(−z/√τ): the critical value is −Φ⁻¹(2Φ(−z/√τ)).
    return float(-special.ndtri_exp(math.log(2.0) + special.log_ndtr(-z / math.sqrt(tau))))


def _simpson(lo: float, hi: float, sd: float = math.inf) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Simpson nodes and weights on [lo, hi], spaced at most a quarter of ``sd`` where that allows."""
    points = _GRID if not math.isfinite(sd) else int(min(max(_GRID, 4 * (hi - lo) / sd + 1), _MAX_GRID))
    points += 1 - points % 2
    x = np.linspace(lo, hi, points)
    w = np.ones(points)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return x, w * (hi - lo) / (points - 1) / 3


def _half_range(info: float, critical: float) -> float:
    """The continuation region of the score ``S = Z√I`` is ``(−b, b)`` with ``b`` this."""
    return min(critical, _WIDE) * math.sqrt(info)


def _start(info: float, critical: float) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Grid and (weighted) sub-density of the score at look 1 on its continuation region."""
    b = _half_range(info, critical)
    x, w = _simpson(-b, b)
    sd = math.sqrt(info)
    return x, w * np.exp(-0.5 * (x / sd) ** 2) / (sd * math.sqrt(2 * math.pi))


def _exit(grid: npt.NDArray[np.float64], density: npt.NDArray[np.float64], sd: float, b: float) -> float:
    """P(still going at the last look and |S_k| ≥ b at this one)."""
    return float(density @ (special.ndtr((-b - grid) / sd) + special.ndtr((grid - b) / sd)))


def _next_critical(
    grid: npt.NDArray[np.float64], density: npt.NDArray[np.float64], sd: float, info: float, increment: float
) -> float:
    if increment <= 0:
        return math.inf
    remaining = float(density.sum())
    if increment >= remaining:  # everything still going may be spent: any interval at all
        return 0.0
    root = math.sqrt(info)
    lo, hi = 1e-6, _WIDE * root
    if _exit(grid, density, sd, hi) >= increment:
        return hi / root
    b = optimize.brentq(lambda v: _exit(grid, density, sd, v) - increment, lo, hi, xtol=1e-10)
    return float(b / root)


def _propagate(
    grid: npt.NDArray[np.float64], density: npt.NDArray[np.float64], sd: float, info: float, critical: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The score's sub-density at the new look, on its continuation region."""
    b = _half_range(info, critical)
    x, w = _simpson(-b, b, sd)
    kernel = np.exp(-0.5 * ((x[:, None] - grid[None, :]) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
    return x, w * (kernel @ density)
