"""Padding (verbosity) and its mirror, truncation: the two length probes of seed 000.

**Padding.** An answer rewritten to about twice its length with no new information. Read two
ways: pairwise, the padded side's win-rate lift over the placebo arm (both orders, padded side
alternating A/B); and pointwise, original and padded scored separately on a 1-5 scale, the mean
paired gap in the judge's own units. Mean lengths and the achieved length ratio are reported
beside it (a ratio under 1.6x under-delivers and shrinks the effect), with the share of padded
rewrites that raters' padding audits say added content, and a flag when the rubric has a "does
not repeat itself" clause that can hide a length preference.

**Truncation.** The same against variants missing load-bearing content (a step, a caveat, the
recommendation). Here the judge *should* react: the truncated side should lose (negative lift)
and score lower (positive truncation gap). Its verdict reads sensitivity: PASS when the penalty
is resolved, FAIL when the data rule out a meaningful penalty (the judge does not notice missing
content). Run together, the two probes separate "stopped rewarding empty words" from "stopped
noticing length" (:func:`judgelab.calibration.stats.compare_runs`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from judgelab.calibration import perturb
from judgelab.calibration.judges._base import Format
from judgelab.calibration.probes._base import (
    BiasResult,
    ProbeContext,
    ProbePlan,
    counts,
    variant_answer,
)
from judgelab.calibration.probes._lift import DECORATION_RULE, lift_estimates
from judgelab.calibration.runner import PlannedCall
from judgelab.calibration.stats import Estimate, pointwise_gap, truncation_gap, verdict
from judgelab.calibration.stats._probes import Verdict

#: bias name -> perturbation variant
VARIANTS = {"verbosity": "padded", "truncation": "truncated"}

LABELS = {
    "verbosity": "Verbosity — longer-answer lift",
    "truncation": "Truncation — truncated-side lift (should be negative)",
}

POINTWISE_FORMAT: Format = "likert5"
"""The format pool answers are scored in (:attr:`ProbeContext.pointwise_format`'s default)."""

# Below this padded/original word ratio the padding under-delivers (seed 000, perturb).
MIN_RATIO = perturb.MIN_PAD_RATIO

# Smallest penalty (percentage points / 1-5 scale points) a judge must be able to show for
# missing content before the truncation probe stops failing it.
TRUNCATION_MARGIN_PP = 5.0
TRUNCATION_MARGIN_POINTS = 0.1

TRUNCATION_RULE = (
    "sensitivity rule: PASS when the truncated side's penalty is resolved (interval below 0), "
    f"FAIL when the interval rules out a penalty of {TRUNCATION_MARGIN_PP:g} pp "
    f"({TRUNCATION_MARGIN_POINTS:g} scale points pointwise), WARN otherwise"
)


def plan(ctx: ProbeContext, bias: str) -> ProbePlan:
    """Pairwise lift calls on the pairs, pointwise original/variant scores on the pool."""
    from judgelab.calibration.probes._lift import plan_lift

    variant = VARIANTS[bias]
    out = plan_lift(ctx, bias, variant)
    clause = perturb.repetition_clause(ctx.pool_rubric)
    for trial, parent in enumerate(ctx.pool):
        result = ctx.variants.make(
            variant, parent.text, parent_id=parent.answer_id if parent.from_store else None
        )
        if parent.from_store:
            out.new_answers.append(variant_answer(parent, result))
        base_meta: dict[str, Any] = {
            "parent_answer_id": parent.answer_id,
            "pool": "store" if parent.from_store else "pairs",
            "family": parent.family,
            "rubric_repetition_clause": clause,
        }
        for arm, text, answer_id, extra in (
            ("original", parent.text, parent.answer_id, {}),
            (variant, result.text, f"{parent.answer_id}~{variant}",
             {"length_ratio": round(result.length_ratio, 4),
              "variant_warnings": list(result.warnings)}),
        ):
            out.calls.append(
                PlannedCall(
                    call_id=f"{bias}/score/{parent.answer_id}/{arm}",
                    kind="pointwise",
                    format=ctx.pointwise_format,
                    prompt=parent.prompt,
                    answer=text,
                    probe=bias,
                    arm=arm,
                    trial=trial,
                    task_id=parent.task_id,
                    answer_id=answer_id,
                    meta={**base_meta, "variant": arm, **extra},
                    rubric=ctx.pool_rubric,
                )
            )
    return out


def sensitivity_verdict(est: Estimate, *, margin: float, penalty_sign: int) -> Verdict:
    """PASS/WARN/FAIL for a probe where the judge *should* react (truncation).

    Args:
        est: The estimate.
        margin: Smallest penalty that counts as noticing, in the estimate's units.
        penalty_sign: ``-1`` when a penalty is a negative number (a lift), ``+1`` when it is
            positive (a truncation gap).
    """
    lo, hi = sorted((penalty_sign * est.ci_low, penalty_sign * est.ci_high))
    if math.isnan(est.estimate) or math.isnan(lo):
        return "WARN"
    if lo > 0:
        return "PASS"
    if hi < margin:
        return "FAIL"
    return "WARN"


def _pointwise(rows: pd.DataFrame, bias: str) -> dict[str, Any]:
    """Pointwise gap, lengths and ratio from the pointwise rows of a length probe."""
    variant = VARIANTS[bias]
    point = rows[rows["kind"] == "pointwise"]
    if point.empty:
        return {}
    score = pd.to_numeric(point["score"], errors="coerce").where(point["status"] == "parsed")
    point = point.assign(_score=score, _words=pd.to_numeric(point["words_a"], errors="coerce"))
    wide = point.pivot_table(
        index=["parent_answer_id", "task_id"], columns="arm", values=["_score", "_words"],
        aggfunc="first",
    )
    if ("_score", "original") not in wide or ("_score", variant) not in wide:
        return {}
    original = wide[("_score", "original")].to_numpy(float)
    varied = wide[("_score", variant)].to_numpy(float)
    tasks = wide.index.get_level_values("task_id").to_numpy()
    gap_fn = pointwise_gap if bias == "verbosity" else truncation_gap
    gap = gap_fn(varied, original, clusters=tasks, rng=0)
    words_o = float(np.nanmean(wide[("_words", "original")].to_numpy(float)))
    words_v = float(np.nanmean(wide[("_words", variant)].to_numpy(float)))
    out: dict[str, Any] = {
        "pointwise_gap": gap,
        "pointwise_format": str(point["format"].iloc[0]),
        "original_mean_score": gap.extra.get("base_mean"),
        f"{variant}_mean_score": gap.extra.get("variant_mean", gap.extra.get("truncated_mean")),
        "mean_words_original": words_o,
        f"mean_words_{variant}": words_v,
        "length_ratio": words_v / words_o if words_o else math.nan,
        "pool": sorted(set(point["pool"].dropna())),
        "answers": len(wide),
    }
    clause = next((c for c in point["rubric_repetition_clause"].dropna()), None)
    out["rubric_repetition_clause"] = clause
    warned = point[point["arm"] == variant]["variant_warnings"].dropna()
    out["variants_with_warnings"] = int(sum(1 for w in warned if len(w)))
    return out


def analyse(rows: pd.DataFrame, bias: str, *, audits: dict[str, Any] | None = None) -> BiasResult:
    """The card row of a length probe, with its pointwise reading in ``details``.

    Args:
        rows: The probe's evidence rows.
        bias: ``"verbosity"`` or ``"truncation"``.
        audits: :meth:`~judgelab.labeler.store.Store.padding_audit_result` for this probe's padded
            rewrites, when a database has them.
    """
    n_calls, n_parse, n_err = counts(rows)
    pairwise = rows[rows["kind"] == "pairwise"]
    raw, after = lift_estimates(pairwise)
    details = _pointwise(rows, bias)
    if bias == "verbosity":
        verdicts = (verdict(raw, kind="decoration"), verdict(after, kind="decoration"))
        rule = DECORATION_RULE
    else:
        verdicts = (
            sensitivity_verdict(raw, margin=TRUNCATION_MARGIN_PP, penalty_sign=-1),
            sensitivity_verdict(after, margin=TRUNCATION_MARGIN_PP, penalty_sign=-1),
        )
        rule = TRUNCATION_RULE
    notes: list[str] = []
    gap = details.get("pointwise_gap")
    if isinstance(gap, Estimate) and not math.isnan(gap.estimate):
        if bias == "verbosity":
            details["pointwise_verdict"] = verdict(gap, kind="pointwise_gap")
        else:
            details["pointwise_verdict"] = sensitivity_verdict(
                gap, margin=TRUNCATION_MARGIN_POINTS, penalty_sign=+1
            )
    ratio = details.get("length_ratio")
    if bias == "verbosity" and isinstance(ratio, float) and ratio < MIN_RATIO:
        notes.append(
            f"Padded answers are only {ratio:.2f}x the originals' length (under {MIN_RATIO}x): "
            "the padding under-delivers, so the verbosity effect reads too small."
        )
    clause = details.get("rubric_repetition_clause")
    if bias == "verbosity" and clause:
        notes.append(
            f"The rubric penalises repetition or length (\"{clause}\"): that pushes the "
            "padding gap down and can hide a real length preference."
        )
    if bias == "verbosity" and audits and audits.get("n_audits"):
        details["padding_audits"] = audits
        share = audits["share_adds_content"]
        notes.append(
            f"Padding audits: {audits['n_adds_content']} of {audits['n_audits']} audits "
            f"({100 * share:.0f}%) found that the rewrite added content"
            + (" — those variants are genuinely better, so the gap overstates the bias."
               if audits["n_adds_content"] else ".")
        )
    return BiasResult(
        bias=bias,
        label=LABELS[bias],
        raw=raw,
        mitigated=after,
        verdict_raw=verdicts[0],
        verdict_mitigated=verdicts[1],
        rule=rule,
        details=details,
        notes=tuple(notes),
        calls=n_calls,
        parse_failures=n_parse,
        errors=n_err,
    )
