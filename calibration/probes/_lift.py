"""The pairwise lift design shared by the decoration, padding and truncation probes.

For trial ``i`` with pair ``(a, b)`` the *target* is ``a`` on even trials and ``b`` on odd ones
(so each answer's intrinsic quality is on the target side half the time). Two arms, each in
both orders:

* ``baseline``: the target unchanged (the placebo arm) against the other answer;
* ``decorated``: the target's variant (padded, truncated, markdown...) against the other answer.

Raw reading: the target's win rate in the decorated arm minus its win rate in the placebo arm
(Newcombe interval for a difference of proportions, ties as half-wins), in percentage points.
The placebo arm's target wins are what the target earns on quality and noise alone, so the
difference is attributable to the variant. After swap-averaging each arm's two orders (a win
counts only when both agree), the same difference is recomputed on the swap-averaged decisions:
a genuine content preference survives it, an order effect does not.
"""

from __future__ import annotations

import pandas as pd

from judgelab.calibration.probes._base import (
    BiasResult,
    ProbeContext,
    ProbePlan,
    both_orders,
    counts,
    nan_estimate,
    swapped,
    target_column,
    target_verdicts,
)
from judgelab.calibration.stats import Estimate, lift_difference, verdict

BASELINE = "baseline"
DECORATED = "decorated"

DECORATION_RULE = (
    "decoration thresholds: WARN at 5 pp, FAIL at 10 pp with the interval excluding 0"
)


def plan_lift(ctx: ProbeContext, bias: str, variant: str) -> ProbePlan:
    """Both arms of the lift design for ``variant``, every trial in both orders."""
    out = ProbePlan()
    for trial, pair in enumerate(ctx.pairs):
        col = target_column(trial)
        other_col = "b" if col == "a" else "a"
        text = pair.answer_a if col == "a" else pair.answer_b
        other = pair.answer_b if col == "a" else pair.answer_a
        target_id, other_id = f"{pair.pair_id}:{col}", f"{pair.pair_id}:{other_col}"
        varied = ctx.variants.make(variant, text, parent_id=None)
        meta = {"target_col": col}
        out.calls += both_orders(
            bias=bias, arm=BASELINE, trial=trial, pair=pair, target=(target_id, text),
            other=(other_id, other), rubric=ctx.rubric, fmt=ctx.pairwise_format,
            meta={**meta, "variant": "original"},
        )
        out.calls += both_orders(
            bias=bias, arm=DECORATED, trial=trial, pair=pair,
            target=(f"{target_id}~{variant}", varied.text), other=(other_id, other),
            rubric=ctx.rubric, fmt=ctx.pairwise_format,
            meta={**meta, "variant": variant, "length_ratio": round(varied.length_ratio, 4),
                  "variant_warnings": list(varied.warnings)},
        )
    return out


def lift_estimates(rows: pd.DataFrame) -> tuple[Estimate, Estimate]:
    """``(raw, swap-averaged)`` lift of the decorated arm over the placebo arm."""
    units = "percentage points"
    arms = {arm: rows[rows["arm"] == arm] for arm in (BASELINE, DECORATED)}
    if any(frame.empty for frame in arms.values()):
        empty = nan_estimate("no judgements in one of the arms", units)
        return empty, empty
    raw = lift_difference(target_verdicts(arms[DECORATED]), target_verdicts(arms[BASELINE]))
    swaps = {arm: swapped(frame)["swap"].to_numpy(float) for arm, frame in arms.items()}
    after = lift_difference(swaps[DECORATED], swaps[BASELINE])
    after = Estimate(
        after.estimate, after.ci_low, after.ci_high, after.n,
        "swap-averaged decisions (a win only when both orders agree); " + after.method,
        after.units, after.level, after.extra,
    )
    return raw, after


def analyse_lift(rows: pd.DataFrame, *, bias: str, label: str, notes: tuple[str, ...] = ()) -> BiasResult:
    """A card row for a lift probe, read with the decoration thresholds."""
    n_calls, n_parse, n_err = counts(rows)
    raw, after = lift_estimates(rows)
    return BiasResult(
        bias=bias,
        label=label,
        raw=raw,
        mitigated=after,
        verdict_raw=verdict(raw, kind="decoration"),
        verdict_mitigated=verdict(after, kind="decoration"),
        rule=DECORATION_RULE,
        details={
            "decorated_win_rate": raw.extra.get("arm_win_rate"),
            "placebo_win_rate": raw.extra.get("placebo_win_rate"),
        },
        notes=notes,
        calls=n_calls,
        parse_failures=n_parse,
        errors=n_err,
    )
