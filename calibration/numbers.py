"""How every figure is printed: a number, a share as a percentage, an estimate with its interval.

One module so that the markdown report, the report card, the CLI and the app pages print the
same figure the same way. A value that is missing (``None``) or undefined (``nan``) is always
spelled :data:`MISSING`, and an interval that is undefined (one cluster, a single pair) is
always spelled :data:`NO_INTERVAL`: never ``nan``, never a dash.

>>> num(0.1234)
'0.12'
>>> num(5.0, 1, signed=True, unit="percentage points")
'+5.0 percentage points'
>>> num(float("nan"), signed=True)
'n/a'
>>> pct(0.9)
'90.0%'
"""

from __future__ import annotations

import math
from typing import Any, Protocol

__all__ = ["MISSING", "NO_INTERVAL", "HasInterval", "ci", "estimate", "interval", "is_missing", "num", "pct"]

MISSING = "n/a"
"""How a missing or undefined number is printed."""

NO_INTERVAL = "no interval"
"""How an undefined interval is printed (the estimate itself may exist)."""


class HasInterval(Protocol):
    """Anything with an estimate, its interval, ``n``, units and confidence level.

    :class:`judgelab.calibration.stats.Estimate` and the report's typed results (a family's residual, the
    self-preference gap) all qualify.
    """

    @property
    def estimate(self) -> float:
        """The point estimate."""
        ...

    @property
    def ci_low(self) -> float:
        """Lower end of the interval (``nan`` when undefined)."""
        ...

    @property
    def ci_high(self) -> float:
        """Upper end of the interval (``nan`` when undefined)."""
        ...

    @property
    def n(self) -> int:
        """Units the estimate rests on."""
        ...

    @property
    def units(self) -> str:
        """What the number is measured in."""
        ...

    @property
    def level(self) -> float:
        """Confidence level of the interval."""
        ...


def is_missing(value: Any) -> bool:
    """Whether ``value`` is ``None`` or a float ``nan`` (printed as :data:`MISSING`).

    >>> is_missing(None), is_missing(float("nan")), is_missing(0.0)
    (True, True, False)
    """
    return value is None or (isinstance(value, float) and math.isnan(value))


def num(value: float | None, digits: int = 2, *, signed: bool = False, unit: str = "") -> str:
    """A number with ``digits`` decimals, a sign when ``signed``, then ``unit`` if given.

    Args:
        value: The number (``None`` or ``nan`` print as :data:`MISSING`, without the unit).
        digits: Decimals.
        signed: Print ``+`` before a positive number (for differences: residuals, gaps).
        unit: Appended after a space (e.g. ``"pp"``, ``"percentage points"``).

    Returns:
        The text.

    >>> num(3.14159, 3)
    '3.142'
    >>> num(-0.5, 1, signed=True, unit="pp")
    '-0.5 pp'
    >>> num(None, unit="pp")
    'n/a'
    """
    if value is None or math.isnan(value):
        return MISSING
    text = f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    return f"{text} {unit}" if unit else text


def pct(share: float | None, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage.

    >>> pct(0.25)
    '25.0%'
    >>> pct(2 / 3, 0)
    '67%'
    >>> pct(float("nan"))
    'n/a'
    """
    if share is None or math.isnan(share):
        return MISSING
    return f"{100 * share:.{digits}f}%"


def interval(
    low: float | None, high: float | None, digits: int = 2, *, signed: bool = True, percent: bool = False
) -> str:
    """An interval ``low to high``, or :data:`NO_INTERVAL` when either end is undefined.

    Args:
        low: Lower end.
        high: Upper end.
        digits: Decimals.
        signed: Print ``+`` before positive ends (differences); ``False`` for levels.
        percent: The ends are shares in [0, 1]: print each as a percentage (as :func:`pct`).

    Returns:
        The text.

    >>> interval(-0.1, 0.35)
    '-0.10 to +0.35'
    >>> interval(0.25, 0.5, 1, percent=True)
    '25.0% to 50.0%'
    >>> interval(float("nan"), 1.0)
    'no interval'
    """
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return NO_INTERVAL
    if percent:
        return f"{pct(low, digits)} to {pct(high, digits)}"
    sign = "+" if signed else ""
    return f"{low:{sign}.{digits}f} to {high:{sign}.{digits}f}"


def ci(est: HasInterval, digits: int = 2, *, signed: bool = True, percent: bool = False) -> str:
    """The interval with its level, ``95% CI low to high``, or :data:`NO_INTERVAL`.

    Args:
        est: The estimate.
        digits: Decimals.
        signed: As in :func:`interval`.
        percent: As in :func:`interval`.

    Returns:
        The text.

    >>> from judgelab.calibration.stats import Estimate
    >>> ci(Estimate(5.0, 1.0, 9.0, 20, "bootstrap", "percentage points"), 1)
    '95% CI +1.0 to +9.0'
    >>> ci(Estimate(0.9, 0.8, 0.95, 20, "Wilson", "share", level=0.9), 1, percent=True)
    '90% CI 80.0% to 95.0%'
    >>> ci(Estimate(5.0, float("nan"), float("nan"), 1, "bootstrap", "percentage points"))
    'no interval'
    """
    text = interval(est.ci_low, est.ci_high, digits, signed=signed, percent=percent)
    return text if text == NO_INTERVAL else f"{round(100 * est.level)}% CI {text}"


def estimate(est: HasInterval | None, digits: int = 1, *, signed: bool = True) -> str:
    """An estimate in its units with its interval and ``n``, or :data:`MISSING` when undefined.

    Args:
        est: The estimate (``None``, or a ``nan`` estimate, prints as :data:`MISSING`).
        digits: Decimals of the estimate and its interval.
        signed: As in :func:`num`.

    Returns:
        The text.

    >>> from judgelab.calibration.stats import Estimate
    >>> estimate(Estimate(5.0, 1.0, 9.0, 20, "bootstrap", "percentage points"))
    '+5.0 percentage points (95% CI +1.0 to +9.0; n=20)'
    >>> estimate(Estimate(0.4, float("nan"), float("nan"), 1, "t", "kappa"), 3)
    '+0.400 kappa (no interval; n=1)'
    >>> estimate(None)
    'n/a'
    """
    if est is None or math.isnan(est.estimate):
        return MISSING
    return f"{num(est.estimate, digits, signed=signed, unit=est.units)} ({ci(est, digits, signed=signed)}; n={est.n})"
