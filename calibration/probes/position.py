"""Position probe: each pair judged in both orders.

Raw reading: the first-shown win advantage, the share of decisions won by whichever answer was
shown first minus 50%, with a Wilson interval (the pairs are of similar quality, so a
position-neutral judge sits near 0). After swap-averaging (a win counts only when both orders
agree) "first shown" no longer picks out an answer, so the advantage is recomputed on the
swap-averaged decisions and is 0 by construction; what remains informative is the consistency
rate (how often the verdict survived the swap) and the slot decomposition of seed 001.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from calibration.numbers import pct
from calibration.probes._base import (
    BiasResult,
    ProbeContext,
    ProbePlan,
    both_orders,
    counts,
    slot_verdicts,
    swapped,
)
from calibration.stats import (
    Estimate,
    consistency_rate,
    first_shown_advantage_from_verdicts,
    slot_decomposition,
    verdict,
)

NAME = "position"
LABEL = "Position — first-shown win advantage"


def plan(ctx: ProbeContext) -> ProbePlan:
    """Every pair in both orders: ``answer_a`` first (AB), then ``answer_b`` first (BA)."""
    out = ProbePlan()
    for trial, pair in enumerate(ctx.pairs):
        out.calls += both_orders(
            bias=NAME, arm="pair", trial=trial, pair=pair,
            target=(f"{pair.pair_id}:a", pair.answer_a),
            other=(f"{pair.pair_id}:b", pair.answer_b),
            rubric=ctx.rubric, fmt=ctx.pairwise_format,
        )
    return out


def analyse(rows: pd.DataFrame) -> BiasResult:
    """The position row of the card from the probe's evidence rows."""
    n_calls, n_parse, n_err = counts(rows)
    raw = first_shown_advantage_from_verdicts(slot_verdicts(rows))
    units = swapped(rows)
    complete = units.dropna(subset=["v_fwd", "v_rev"])
    decided = complete["swap"].to_numpy(float)
    n_decided = int(np.count_nonzero(decided))
    # Each swap-averaged decision was shown first once and second once, so it adds exactly one
    # first-shown win and one second-shown win: the recomputed advantage is 0 with no sampling
    # error at all (a Wilson interval here would describe noise that cannot exist).
    mitigated = Estimate(
        0.0 if n_decided else math.nan,
        0.0 if n_decided else math.nan,
        0.0 if n_decided else math.nan,
        n_decided,
        "first-shown advantage of swap-averaged decisions: 0 by construction (each decision "
        "was shown first once and second once)",
        "percentage points",
        extra={"decided_items": n_decided, "items": len(complete)},
    )
    consistency = consistency_rate(complete["v_fwd"], complete["v_rev"])
    details: dict[str, object] = {"consistency": consistency}
    if len(complete):
        decomposition = slot_decomposition(
            complete["v_fwd"], complete["v_rev"], clusters=complete["trial"], rng=0
        )
        details["slot_bias_b"] = decomposition.b
        details["candidate_preference_q"] = decomposition.q
    rule = "position thresholds: WARN at 5 pp, FAIL at 10 pp with the interval excluding 0"
    notes = (
        "After swap-averaging, \"first shown\" is undefined: the residual is 0 by construction; "
        f"the swap consistency rate ({pct(consistency.estimate, 0)} of "
        f"{consistency.n} pairs gave the same outcome in both orders) is the diagnostic that "
        "stays meaningful.",
    )
    return BiasResult(
        bias=NAME,
        label=LABEL,
        raw=raw,
        mitigated=mitigated,
        verdict_raw=verdict(raw, kind="position"),
        verdict_mitigated=verdict(mitigated, kind="position"),
        rule=rule,
        details=details,
        notes=notes,
        calls=n_calls,
        parse_failures=n_parse,
        errors=n_err,
    )
