"""The report card's error rate: verdicts adjusted for the number of rows tested, and a placebo.

A card tests several biases at once. Read one by one at 95%, a judge with no bias at all would
FAIL *some* row in a large share of runs (seven rows, two readings each: about one run in four
on the bundled sample). :func:`control_errors` adjusts the verdicts for the number of rows tested:

* **The family.** Every verdict the card can print whose FAIL means "a bias was found": each
  row's raw reading and its reading after swap-averaging, and the pointwise padding gap, all
  tested together (the card with ``--mitigate`` prints both readings). The truncation rows are
  not in it: they read the other way (a FAIL there says the judge did *not* react to missing
  content), a sensitivity check with its own rule; nor is position after swap-averaging, which
  reads what the mitigation costs (the decisions it loses), not a bias.
* **The test.** Each reading's two-sided p-value for "no effect", read off its 95% interval
  (:func:`~judgelab.calibration.stats.p_value_from_interval`), adjusted across its family with Holm's
  step-down procedure (default; at most a 5% chance of any false FAIL whatever the dependence
  between rows) or Benjamini-Hochberg (5% false discovery rate). A FAIL needs the size rule as
  before *and* an adjusted p-value under 5%; a FAIL that does not survive becomes WARN ("a large
  bias the data do not resolve once the number of rows is accounted for"). PASS and WARN are
  not changed.
* **The placebo.** The baseline arm of the lift probes shows the target answer unchanged against
  the other one, both orders, the target alternating between the pair's answers: a reading with
  no decoration at all. Its lift over 50%, read with the decoration rule, is the empirical
  false-alarm check: how large a "bias" noise alone produces on this data with this judge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from judgelab.calibration.probes._base import BiasResult, target_verdicts
from judgelab.calibration.probes._lift import BASELINE
from judgelab.calibration.stats import (
    ADJUSTMENT_NAMES,
    Adjustment,
    Estimate,
    adjust_p_values,
    p_value_from_interval,
    pairwise_lift,
    verdict,
)
from judgelab.calibration.stats._probes import Verdict

__all__ = ["ErrorControl", "RowTest", "control_errors"]

Reading = Literal["raw", "after", "pointwise"]

#: Rows read as sensitivity checks (a FAIL there is not a bias found): outside the family.
SENSITIVITY_ROWS = frozenset({"truncation"})

#: Probes whose baseline arm is the placebo (the target answer unchanged).
_LIFT_PROBES = ("verbosity", "formatting", "tone", "citations", "truncation")


@dataclass(frozen=True)
class RowTest:
    """One reading's test in the card's family.

    Attributes:
        bias: The row.
        reading: ``"raw"``, ``"after"`` (swap-averaged) or ``"pointwise"`` (the padding gap).
        p_value: Two-sided p-value of "no effect", from the reading's interval.
        p_adjusted: The p-value adjusted across the reading's family.
        verdict: The verdict read on its own.
        adjusted: The verdict after the adjustment (a FAIL that does not survive is WARN).
    """

    bias: str
    reading: Reading
    p_value: float
    p_adjusted: float
    verdict: Verdict
    adjusted: Verdict

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``nan`` as ``None``)."""
        out = dict(self.__dict__)
        for key in ("p_value", "p_adjusted"):
            if isinstance(out[key], float) and math.isnan(out[key]):
                out[key] = None
        return out


@dataclass(frozen=True)
class ErrorControl:
    """How the card controls its error rate, and its empirical false-alarm check.

    Attributes:
        method: The adjustment (``holm``, ``bh`` or ``none``).
        alpha: The error rate controlled.
        tests: Every reading in the families, in card order.
        placebo: The placebo arm's lift over 50% (``None`` when no lift probe ran).
        placebo_verdict: The placebo read with the decoration rule: a FAIL is a false alarm
            the data produced on their own.
    """

    method: Adjustment
    alpha: float
    tests: tuple[RowTest, ...] = ()
    placebo: Estimate | None = None
    placebo_verdict: Verdict | None = None

    @property
    def method_name(self) -> str:
        """The adjustment in words."""
        return ADJUSTMENT_NAMES[self.method]

    @property
    def family_size(self) -> int:
        """Readings tested together (those with a p-value)."""
        return sum(1 for t in self.tests if not math.isnan(t.p_value))

    def changed(self) -> tuple[RowTest, ...]:
        """The readings whose verdict the adjustment changed."""
        return tuple(t for t in self.tests if t.adjusted != t.verdict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "method": self.method,
            "method_name": self.method_name,
            "alpha": self.alpha,
            "family_size": self.family_size,
            "tests": [t.to_dict() for t in self.tests],
            "placebo": None if self.placebo is None else self.placebo.to_dict(),
            "placebo_verdict": self.placebo_verdict,
        }


_Member = tuple[BiasResult, Reading, Estimate, Verdict]


def _family(results: list[BiasResult]) -> list[_Member]:
    members: list[_Member] = []
    for r in results:
        if r.bias in SENSITIVITY_ROWS:
            continue
        members.append((r, "raw", r.raw, r.verdict_raw))
        # Position after swap-averaging reads a cost (decisions lost), not "a bias was found":
        # it has its own rule, outside the family.
        if r.mitigated is not None and r.verdict_mitigated is not None and not r.details.get("after_reading"):
            members.append((r, "after", r.mitigated, r.verdict_mitigated))
        gap = r.details.get("pointwise_gap")
        if r.bias == "verbosity" and isinstance(gap, Estimate) and "pointwise_verdict" in r.details:
            members.append((r, "pointwise", gap, r.details["pointwise_verdict"]))
    return members


def _adjusted(tests: list[_Member], method: Adjustment, alpha: float) -> list[RowTest]:
    p = np.array([p_value_from_interval(est) for _, _, est, _ in tests], dtype=float)
    adjusted = adjust_p_values(p, method=method) if tests else p
    size = int(np.count_nonzero(~np.isnan(p)))
    out = []
    for (r, reading, _, before), p_raw, p_adj in zip(tests, p, adjusted, strict=True):
        after: Verdict = before
        # A family of one needs no adjustment (the verdict's own interval already decided).
        if before == "FAIL" and method != "none" and size > 1 and not p_adj < alpha:
            after = "WARN"
        out.append(RowTest(r.bias, reading, float(p_raw), float(p_adj), before, after))
    return out


def placebo_lift(rows: pd.DataFrame) -> Estimate | None:
    """The placebo (baseline) arm's target-side win rate minus 50%, in percentage points.

    Every lift probe shares one baseline arm (the same requests), so each (trial, order) is
    counted once. ``None`` when no lift probe ran.
    """
    base = rows[
        rows["bias"].isin(_LIFT_PROBES) & (rows["arm"] == BASELINE) & (rows["kind"] == "pairwise")
    ]
    if base.empty:
        return None
    base = base.drop_duplicates(subset=["trial", "order"])
    est = pairwise_lift(target_verdicts(base))
    return Estimate(
        est.estimate, est.ci_low, est.ci_high, est.n,
        "placebo arm (the target answer unchanged): target-side win rate minus 50%; " + est.method,
        est.units, est.level, est.extra,
    )


def control_errors(
    results: list[BiasResult], rows: pd.DataFrame, *, method: Adjustment = "holm", alpha: float = 0.05
) -> tuple[list[BiasResult], ErrorControl]:
    """Adjust the card's verdicts for the number of rows tested; measure the placebo.

    Args:
        results: The probes' rows, each read on its own.
        rows: The evidence rows (for the placebo arm).
        method: ``"holm"`` (default), ``"bh"`` or ``"none"``.
        alpha: The error rate to control.

    Returns:
        The rows with adjusted verdicts (``verdict_raw``, ``verdict_mitigated`` and the
        pointwise verdict; each row's ``details["p_values"]`` holds its readings' p-values),
        and the :class:`ErrorControl` that says how.
    """
    everything = _adjusted(_family(results), method, alpha)
    by_row: dict[str, list[RowTest]] = {}
    for t in everything:
        by_row.setdefault(t.bias, []).append(t)
    adjusted = []
    for r in results:
        row_tests = by_row.get(r.bias, [])
        if not row_tests:
            adjusted.append(r)
            continue
        got = {t.reading: t for t in row_tests}
        p_values = {t.reading: {"p": t.p_value, "p_adjusted": t.p_adjusted} for t in row_tests}
        details = {**r.details, "p_values": p_values}
        if "pointwise" in got:
            details["pointwise_verdict"] = got["pointwise"].adjusted
        raw = got["raw"].adjusted if "raw" in got else r.verdict_raw
        after = got["after"].adjusted if "after" in got else r.verdict_mitigated
        if r.details.get("after_reading") and after == "FAIL" and raw != "FAIL":
            # A costly mitigation fails only a judge whose raw reading failed (after adjustment).
            after = "WARN"
        adjusted.append(replace(r, verdict_raw=raw, verdict_mitigated=after, details=details))
    order = {r.bias: i for i, r in enumerate(results)}
    readings = ("raw", "after", "pointwise")
    ordered = tuple(sorted(everything, key=lambda t: (order.get(t.bias, 0), readings.index(t.reading))))
    placebo = placebo_lift(rows)
    placebo_verdict = None if placebo is None or math.isnan(placebo.estimate) else verdict(placebo, kind="decoration")
    return adjusted, ErrorControl(method, alpha, ordered, placebo, placebo_verdict)
