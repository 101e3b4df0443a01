"""Proportions and their intervals: Wilson score intervals and the Newcombe difference.

A pass rate is a binomial proportion, and the Wald interval (``p ± z·se``) is poor near 0 and 1,
where judge pass rates often sit. :func:`wilson_interval` delegates to SciPy's
``binomtest(k, n).proportion_ci(method="wilson")``; :func:`difference_of_proportions` combines two
Wilson intervals with Newcombe's hybrid score method (method 10 of Newcombe 1998,
doi:10.1002/(SICI)1097-0258(19980430)17:8<873::AID-SIM779>3.0.CO;2-I), which keeps good coverage
for small samples and rates near the edges.

These intervals assume independent trials. When answers cluster by task, use the task-clustered
bootstrap in :mod:`judgelab.calibration.stats._bootstrap` instead.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy import stats

from judgelab.calibration.stats._bootstrap import check_level
from judgelab.calibration.stats._result import Estimate

_NAN = float("nan")


def wilson_interval(k: int, n: int, *, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes in ``n`` trials.

    Args:
        k: Number of successes, ``0 <= k <= n``.
        n: Number of trials.
        level: Confidence level.

    Returns:
        ``(lo, hi)`` from ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``.
        Degenerate case: ``n == 0`` gives ``(nan, nan)`` (no trials, no information).

    Raises:
        ValueError: If ``k`` or ``n`` is negative or not an integer, ``k > n``, or ``level``
            is not in ``(0, 1)``.
    """
    func = "wilson_interval"
    check_level(func, level)
    k_int, n_int = _counts(func, k, n)
    if n_int == 0:
        return _NAN, _NAN
    ci = stats.binomtest(k_int, n_int).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def proportion(
    k_or_bool_array: int | npt.ArrayLike,
    *,
    n: int | None = None,
    level: float = 0.95,
) -> Estimate:
    """A proportion with its Wilson score interval.

    Args:
        k_or_bool_array: Either a count of successes (then pass ``n``) or an array of 0/1 or
            boolean outcomes, one per independent trial.
        n: Number of trials when the first argument is a count; must be ``None`` otherwise.
        level: Confidence level.

    Returns:
        An :class:`Estimate` in units ``"proportion"`` (``estimate`` in ``[0, 1]``), ``n`` the
        number of trials and ``extra["successes"]`` the count. Degenerate case: zero trials
        gives ``estimate``, ``ci_low`` and ``ci_high`` all ``nan``.

    Raises:
        ValueError: On outcomes other than 0/1 (``nan`` included: drop missing values first),
            a count without ``n``, or a bad ``level``.
    """
    func = "proportion"
    check_level(func, level)
    k, trials = _as_counts(func, k_or_bool_array, n)
    lo, hi = wilson_interval(k, trials, level=level)
    return Estimate(
        estimate=k / trials if trials else _NAN,
        ci_low=lo,
        ci_high=hi,
        n=trials,
        method="Wilson score interval (scipy.stats.binomtest)",
        units="proportion",
        level=level,
        extra={"successes": k},
    )


def difference_of_proportions(
    a: int | npt.ArrayLike | tuple[int, int],
    b: int | npt.ArrayLike | tuple[int, int],
    *,
    level: float = 0.95,
) -> Estimate:
    """Difference of two independent proportions, ``p_a - p_b``, with Newcombe's interval.

    The interval is Newcombe's hybrid score interval: with Wilson limits ``(l_a, u_a)`` and
    ``(l_b, u_b)`` at the same level, ``lo = d - sqrt((p_a - l_a)^2 + (u_b - p_b)^2)`` and
    ``hi = d + sqrt((u_a - p_a)^2 + (p_b - l_b)^2)``.

    Args:
        a: Outcomes of the first group: a 0/1 or boolean array, or a ``(successes, trials)``
            tuple.
        b: Outcomes of the second group, same forms as ``a``.
        level: Confidence level.

    Returns:
        An :class:`Estimate` in units ``"proportion"`` (a difference in ``[-1, 1]``), ``n`` the
        total number of trials, and ``extra`` holding each group's proportion and trials.
        Degenerate case: a group with zero trials makes the estimate and interval ``nan``.

    Raises:
        ValueError: On outcomes other than 0/1, malformed counts or a bad ``level``.
    """
    func = "difference_of_proportions"
    check_level(func, level)
    ka, na = _as_counts(func, *_split(a))
    kb, nb = _as_counts(func, *_split(b))
    extra = {"p_a": ka / na if na else _NAN, "n_a": na, "p_b": kb / nb if nb else _NAN, "n_b": nb}
    method = "Newcombe hybrid score interval (two Wilson intervals)"
    if na == 0 or nb == 0:
        return Estimate(_NAN, _NAN, _NAN, na + nb, method, "proportion", level, extra)
    pa, pb = ka / na, kb / nb
    la, ua = wilson_interval(ka, na, level=level)
    lb, ub = wilson_interval(kb, nb, level=level)
    d = pa - pb
    lo = d - math.sqrt((pa - la) ** 2 + (ub - pb) ** 2)
    hi = d + math.sqrt((ua - pa) ** 2 + (pb - lb) ** 2)
    return Estimate(d, lo, hi, na + nb, method, "proportion", level, extra)


def _split(x: int | npt.ArrayLike | tuple[int, int]) -> tuple[int | npt.ArrayLike, int | None]:
    if isinstance(x, tuple) and len(x) == 2 and all(_is_int(v) for v in x):
        return x[0], int(x[1])
    return x, None


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _counts(func: str, k: object, n: object) -> tuple[int, int]:
    if not (_is_int(k) and _is_int(n)):
        raise ValueError(f"{func}: k and n must be integers; got k={k!r}, n={n!r}")
    k_int, n_int = int(k), int(n)  # type: ignore[call-overload]
    if n_int < 0 or k_int < 0 or k_int > n_int:
        raise ValueError(f"{func}: need 0 <= k <= n; got k={k_int}, n={n_int}")
    return k_int, n_int


def _as_counts(func: str, x: int | npt.ArrayLike, n: int | None) -> tuple[int, int]:
    if _is_int(x):
        if n is None:
            raise ValueError(
                f"{func}: got a count of successes ({x!r}) without n; pass n=<trials> "
                "or an array of 0/1 outcomes"
            )
        return _counts(func, x, n)
    if n is not None:
        raise ValueError(f"{func}: n is only for a count of successes, not for an array")
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{func}: outcomes must be one-dimensional; got shape {arr.shape}")
    if arr.dtype == bool:
        return int(arr.sum()), int(arr.size)
    values = arr.astype(float)
    ok = (values == 0) | (values == 1)
    if not ok.all():
        bad = values[~ok][:3].tolist()
        raise ValueError(
            f"{func}: outcomes must be 0/1 or boolean; got {bad!r} (drop missing values first)"
        )
    return int(values.sum()), int(values.size)
