"""Section builders for the probes a judge run holds.

Pointwise variant gaps (padding, truncation, any other variant judged against its original),
the before/after reading of a rubric change (``compare``), and the order-swapped comparisons of
each pairwise probe arm (slot decomposition, raw, swap-averaged and length-controlled lifts).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from judgelab.calibration.calibrate._load import CalibrationData, isna
from judgelab.calibration.calibrate._model import PositionResult, ProbeSection, ReportOptions, VariantGap
from judgelab.calibration.probes.position import position_replies, position_rows, statistics_of_replies
from judgelab.calibration.stats import (
    THRESHOLDS,
    Estimate,
    RunComparison,
    candidate_verdicts,
    compare_runs,
    first_shown_advantage_by_pair,
    length_controlled_win_rate,
    pairwise_lift,
    pointwise_gap,
    slot_decomposition,
    swap_average,
    truncation_gap,
    verdict,
)
from judgelab.labeler.scales import PAIRWISE_FORMATS, format_range, is_pointwise

# Refits for the length-controlled win rate: each resample is one logistic fit, so the count
# is capped to keep a report to seconds; the method string states the number used.
_LC_MAX_REFITS = 500
_NAN = float("nan")


def scale_unit(fmt: str) -> float:
    """A quarter of the format's range: thresholds written for 1-5 scale this way."""
    lo, hi = format_range(fmt) if is_pointwise(fmt) else format_range("likert5")
    return (hi - lo) / 4


def variant_gaps(data: CalibrationData, opts: ReportOptions) -> list[VariantGap]:
    """Pointwise gap of every judged variant against its original, per format."""
    point = data.pointwise
    parsed = point[(point["status"] == "parsed") & point["format"].map(is_pointwise).astype(bool)]
    variants = parsed[(parsed["variant"] != "original") & parsed["parent"].notna() & parsed["variant"].notna()]
    if variants.empty:
        return []
    means = parsed.groupby(["format", "answer_id"])["value"].mean()
    out: list[VariantGap] = []
    for (variant, fmt), rows in variants.groupby(["variant", "format"], sort=True):
        per = rows.groupby("answer_id").agg(value=("value", "mean"), parent=("parent", "first"),
                                             task=("task_id", "first"))
        base = [means.get((fmt, p), _NAN) for p in per["parent"]]
        args = {"clusters": per["task"].astype(str).to_numpy(), "level": opts.level,
                "n_resamples": opts.n_resamples, "rng": opts.seed}
        unit = scale_unit(str(fmt))
        if variant == "truncated":
            gap = truncation_gap(per["value"].to_numpy(dtype=float), np.asarray(base, dtype=float), **args)
            out.append(_variant_gap(str(variant), str(fmt), gap, None, None))
            continue
        gap = pointwise_gap(per["value"].to_numpy(dtype=float), np.asarray(base, dtype=float), **args)
        base_t = THRESHOLDS["pointwise_gap"]
        warn, fail = base_t.warn * unit, base_t.fail * unit
        call = "WARN" if math.isnan(gap.estimate) else verdict(gap, warn=warn, fail=fail)
        out.append(_variant_gap(str(variant), str(fmt), gap, call, (warn, fail)))
    return out


def _variant_gap(
    variant: str, fmt: str, gap: Estimate, call: str | None, thresholds: tuple[float, float] | None
) -> VariantGap:
    """The gap with its means and pair count read into typed fields (truncation: base minus truncated)."""
    x = gap.extra
    return VariantGap(variant, fmt, gap, call, thresholds, original_mean=float(x["base_mean"]),
                      variant_mean=float(x["truncated_mean" if variant == "truncated" else "variant_mean"]),
                      pairs=int(x["pairs"]))


def probe_section(data: CalibrationData, compare: CalibrationData | None, opts: ReportOptions) -> ProbeSection:
    """Variant gaps, order-swapped comparisons and, with ``compare``, the before/after reading."""
    gaps = tuple(variant_gaps(data, opts))
    position = tuple(position_results(data, opts))
    comparison = None
    reason = None
    if compare is not None:
        comparison, reason = _compare(compare, gaps, data, opts)
    replies = position_replies(position_rows(data.pairwise), data.pair_gold)
    statistics = statistics_of_replies(replies, level=opts.level) if len(replies) else None
    return ProbeSection(gaps, comparison, None if compare is None else compare.run_id, reason, position, statistics)


def _compare(
    before: CalibrationData, after_gaps: Sequence[VariantGap], after: CalibrationData, opts: ReportOptions
) -> tuple[RunComparison | None, str | None]:
    before_gaps = variant_gaps(before, opts)

    def pick(gaps: Sequence[VariantGap], variant: str, fmt: str) -> Estimate | None:
        for g in gaps:
            if g.variant == variant and g.format == fmt and not math.isnan(g.gap.estimate):
                return g.gap
        return None

    shared = sorted({g.format for g in after_gaps} & {g.format for g in before_gaps},
                    key=lambda f: (f != after.rubric.scale, f))
    for fmt in shared:
        found = [pick(before_gaps, "padded", fmt), pick(after_gaps, "padded", fmt),
                 pick(before_gaps, "truncated", fmt), pick(after_gaps, "truncated", fmt)]
        if all(e is not None for e in found):
            pb, pa, tb, ta = (e for e in found if e is not None)
            return compare_runs(pb, pa, tb, ta, tolerance=0.1 * scale_unit(fmt), level=opts.level), None
    return None, (
        f"runs {before.run_id!r} and {after.run_id!r} do not both hold padded and truncated "
        "variants judged in one shared pointwise format"
    )


def _x_of_pair(a: str, b: str, rows: pd.DataFrame, judge_family: str | None) -> tuple[str, str]:
    """Which answer of a pair the win rates are for, and why."""
    first = rows.iloc[0]
    targets = [m.get("target_id") for m in rows["meta"] if isinstance(m, dict)]
    target = next((t for t in targets if t in (a, b)), None)
    if target is not None:
        variant = next((m.get("variant") for m in rows["meta"] if isinstance(m, dict) and m.get("variant")), None)
        return str(target), "the probe's target" + (f" ({variant})" if variant else "")
    var = {first["answer_id"]: first["variant_a"], first["answer_b_id"]: first["variant_b"]}
    fam = {first["answer_id"]: first["family_a"], first["answer_b_id"]: first["family_b"]}
    decorated = [x for x in (a, b) if isinstance(var.get(x), str) and var.get(x) != "original"]
    if len(decorated) == 1:
        return decorated[0], f"the {var[decorated[0]]} variant"
    if judge_family is not None and (fam.get(a) == judge_family) != (fam.get(b) == judge_family):
        return (a if fam.get(a) == judge_family else b), f"the judge's own family ({judge_family})"
    forward = rows[rows["order_shown"] == "AB"]
    if not forward.empty:
        return str(forward.iloc[0]["answer_id"]), "the answer listed first in the trial"
    return a, "the first answer by id"


def position_results(data: CalibrationData, opts: ReportOptions) -> list[PositionResult]:
    """Slot decomposition, swap-averaged and length-controlled win rates per probe arm."""
    pair = data.pairwise
    if pair.empty:
        return []
    pair = pair[pair["format"].isin(PAIRWISE_FORMATS) & pair["answer_id"].notna() & pair["answer_b_id"].notna()]
    out: list[PositionResult] = []
    keys = [pair["probe"].fillna("pairwise"), pair["arm"].fillna(""), pair["format"]]
    for (probe, arm, fmt), rows in pair.groupby(keys, sort=True):
        rows = rows.assign(
            key=[tuple(sorted((str(a), str(b)))) for a, b in zip(rows["answer_id"], rows["answer_b_id"], strict=True)]
        )
        items: list[dict[str, Any]] = []
        candidate_desc: dict[str, int] = {}
        for key, grp in rows.groupby("key", sort=True):
            x, why = _x_of_pair(key[0], key[1], grp, data.judge_family)
            candidate_desc[why] = candidate_desc.get(why, 0) + 1
            parsed = grp[grp["status"] == "parsed"]
            fwd = parsed[parsed["answer_id"] == x]
            rev = parsed[parsed["answer_b_id"] == x]
            y = key[1] if x == key[0] else key[0]
            items.append({
                "task": str(grp["task_id"].iloc[0]),
                "v_fwd": float(fwd["value"].mean()) if len(fwd) else _NAN,
                "v_rev": float(rev["value"].mean()) if len(rev) else _NAN,
                "len_diff": _len_diff(grp, x, y),
            })
        frame = pd.DataFrame(items)
        parsed_rows = rows[rows["status"] == "parsed"]
        # Clustered by pair: the two orders of one pair are not independent.
        first = first_shown_advantage_by_pair(np.sign(parsed_rows["value"].to_numpy(dtype=float)),
                                              parsed_rows["key"].astype(str).to_numpy(), level=opts.level)
        x_of = {k: _x_of_pair(k[0], k[1], g, data.judge_family)[0] for k, g in rows.groupby("key", sort=True)}
        parsed = rows[rows["status"] == "parsed"]
        in_a = np.array([x_of[k] == a for k, a in zip(parsed["key"], parsed["answer_id"], strict=True)])
        orders = np.where(in_a, "AB", "BA")
        cand = candidate_verdicts(np.sign(parsed["value"].to_numpy(dtype=float)), orders)
        balanced = abs(int(in_a.sum()) - int((~in_a).sum())) <= max(1, 0.1 * len(in_a))
        raw = pairwise_lift(cand, orders=orders if balanced else None,
                            clusters=parsed["task_id"].astype(str).to_numpy(),
                            level=opts.level, n_resamples=opts.n_resamples, rng=opts.seed)
        both = frame.dropna(subset=["v_fwd", "v_rev"])
        decomposition = swap = lc = None
        lc_reason: str | None = "no pair was judged in both orders"
        if not both.empty:
            tasks = both["task"].to_numpy()
            decomposition = slot_decomposition(both["v_fwd"], both["v_rev"], clusters=tasks,
                                               n_resamples=opts.n_resamples, level=opts.level, rng=opts.seed)
            sa = swap_average(both["v_fwd"], both["v_rev"])
            swap = pairwise_lift(sa, clusters=tasks, level=opts.level, n_resamples=opts.n_resamples, rng=opts.seed)
            wins = np.where(sa > 0, 1.0, np.where(sa < 0, 0.0, 0.5))
            diffs = both["len_diff"].to_numpy(dtype=float)
            ok = np.isfinite(diffs)
            if ok.sum() < 3:
                lc_reason = "the answers' lengths are not known for three or more pairs"
            else:
                # Each refit is a tiny L-BFGS problem; a multi-threaded BLAS spends ~10x the
                # work on thread hand-offs there (measured: 110 ms vs 8 ms per fit on 2 cores).
                with threadpool_limits(limits=1, user_api="blas"):
                    lc = length_controlled_win_rate(wins[ok], diffs[ok], clusters=tasks[ok],
                                                    n_resamples=min(opts.n_resamples, _LC_MAX_REFITS),
                                                    level=opts.level, rng=opts.seed)
                lc_reason = None
        desc = "; ".join(f"{why} ({n} pairs)" for why, n in sorted(candidate_desc.items()))
        out.append(PositionResult(
            probe=str(probe), arm=str(arm), format=str(fmt), candidate=desc, n_pairs=len(frame),
            n_both_orders=len(both), first_shown=first, decomposition=decomposition, raw_lift=raw,
            swap_lift=swap, length_controlled=lc, length_reason=lc_reason,
        ))
    return out


def _len_diff(grp: pd.DataFrame, x: str, y: str) -> float:
    """Characters of X minus characters of Y, from the pool or from the call's design facts."""
    first = grp.iloc[0]
    chars = {first["answer_id"]: first["chars_a"], first["answer_b_id"]: first["chars_b"]}
    if not (isna(chars.get(x)) or isna(chars.get(y))):
        return float(chars[x]) - float(chars[y])
    for row in grp.itertuples(index=False):
        meta = row.meta if isinstance(row.meta, dict) else {}
        la, lb = meta.get("len_a"), meta.get("len_b")
        if la is None or lb is None:
            continue
        return float(la) - float(lb) if row.answer_id == x else float(lb) - float(la)
    return _NAN

