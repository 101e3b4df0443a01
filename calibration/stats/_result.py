"""The frozen result every statistic in :mod:`judgelab.calibration.stats` returns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its interval, sample size, method and units.

    Attributes:
        estimate: The point estimate.
        ci_low: Lower end of the confidence interval (``nan`` when undefined).
        ci_high: Upper end of the confidence interval (``nan`` when undefined).
        n: Number of independent units the estimate rests on (items, pairs or
            clusters, as ``method`` says).
        method: How the estimate and interval were computed, in words a reader
            can check (e.g. ``"task-clustered percentile bootstrap, 2000 resamples"``).
        units: What the number is measured in (``"percentage points"``,
            ``"judge scale points"``, ``"win rate"``, ``"kappa"``...).
        level: Confidence level of the interval.
        extra: Further named figures that belong with this estimate.
    """

    estimate: float
    ci_low: float
    ci_high: float
    n: int
    method: str
    units: str
    level: float = 0.95
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def half_width(self) -> float:
        """Half the interval's width (``nan`` when the interval is undefined)."""
        return (self.ci_high - self.ci_low) / 2

    def covers(self, value: float) -> bool:
        """Whether ``value`` lies inside the closed interval."""
        return self.ci_low <= value <= self.ci_high

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``nan`` becomes ``None``)."""

        def clean(x: Any) -> Any:
            if isinstance(x, float) and math.isnan(x):
                return None
            return x

        out = {
            "estimate": clean(self.estimate),
            "ci_low": clean(self.ci_low),
            "ci_high": clean(self.ci_high),
            "n": self.n,
            "method": self.method,
            "units": self.units,
            "level": self.level,
        }
        if self.extra:
            out["extra"] = {k: clean(v) for k, v in self.extra.items()}
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row: :meth:`to_dict`'s figures as columns (``extra`` figures prefixed ``extra.``).

        Example:
            >>> Estimate(0.25, 0.1, 0.4, 40, "t interval", "percentage points").to_frame()
               estimate  ci_low  ci_high   n      method              units  level
            0      0.25     0.1      0.4  40  t interval  percentage points   0.95
        """
        row = {k: v for k, v in self.to_dict().items() if k != "extra"}
        row |= {f"extra.{k}": v for k, v in self.extra.items()}
        return pd.DataFrame([row])

    def __str__(self) -> str:
        pct = round(self.level * 100)
        return (
            f"{self.estimate:+.3g} {self.units} "
            f"({pct}% CI {self.ci_low:+.3g} to {self.ci_high:+.3g}; n={self.n}; {self.method})"
        )
