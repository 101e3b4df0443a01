"""Position probe: each pair judged in both orders.

Raw reading: the first-shown win advantage, the share of decisions won by whichever answer was
shown first minus 50%, with a Wilson interval (the pairs are of similar quality, so a
position-neutral judge sits near 0). After swap-averaging (a win counts only when both orders
agree) "first shown" no longer picks out an answer: the advantage would be 0 by construction,
so the mitigation is read by its cost instead, the decisions it loses (pairs whose two orders
disagree become ties; :func:`swap_cost`), with the slot decomposition of seed 001 beside it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from judgelab.calibration.numbers import ci, num, pct
from judgelab.calibration.probes._base import (
    BiasResult,
    ProbeContext,
    ProbePlan,
    both_orders,
    counts,
    slot_verdicts,
    swapped,
)
from judgelab.calibration.stats import (
    Estimate,
    PositionStatistics,
    Thresholds,
    position_statistics,
    slot_decomposition,
    verdict,
)
from judgelab.calibration.stats._probes import Verdict
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import pair_of
from judgelab.labeler.scales import PAIRWISE_FORMATS
from judgelab.labeler.store import AnalystRole

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
    """The position row of the card from the probe's evidence rows.

    The first-shown advantage and the consistency come from
    :func:`judgelab.calibration.stats.position_statistics`: the advantage's interval is clustered by pair
    (a pair's two orders are not independent), and a pair with an unparsed reply in either
    order counts as inconsistent. The slot decomposition needs both verdicts, so it reads the
    pairs that have them.
    """
    n_calls, n_parse, n_err = counts(rows)
    stats = _evidence_statistics(rows)
    raw = stats.first_shown_advantage
    units = swapped(rows)
    complete = units.dropna(subset=["v_fwd", "v_rev"])
    consistency = stats.consistency
    # After swap-averaging "first shown" picks out no answer: the advantage is 0 by
    # construction, so it cannot be the reading. What the mitigation is judged by is its cost:
    # the pairs whose two orders disagree (or one did not parse) lose their decision to a tie.
    mitigated = swap_cost(consistency)
    details: dict[str, object] = {"consistency": consistency, "positional_agreement": stats.positional_agreement,
                                  "after_reading": "decisions lost to the swap"}
    if len(complete):
        decomposition = slot_decomposition(
            complete["v_fwd"], complete["v_rev"], clusters=complete["trial"], rng=0
        )
        details["slot_bias_b"] = decomposition.b
        details["candidate_preference_q"] = decomposition.q
    verdict_raw = verdict(raw, kind="position")
    rule = (f"position thresholds: WARN at 5 pp, FAIL at 10 pp with the interval excluding 0; after "
            f"swap-averaging, the decisions it loses: PASS under {SWAP_COST.warn:g}% with the interval under "
            f"{SWAP_COST.fail:g}%, FAIL at {SWAP_COST.fail:g}% or more (resolved) when the raw reading failed")
    notes = (
        "After swap-averaging, \"first shown\" picks out no answer (the advantage is 0 by construction), so "
        "the mitigation is judged by what it costs: "
        f"{pct(consistency.estimate, 0)} of {consistency.n} pairs gave the same outcome in both orders; the "
        f"other {pct(mitigated.estimate / 100, 0)} lose their decision to a tie (a pair with an unparsed reply "
        "counts as lost).",
    )
    return BiasResult(
        bias=NAME,
        label=LABEL,
        raw=raw,
        mitigated=mitigated,
        verdict_raw=verdict_raw,
        verdict_mitigated=swap_cost_verdict(mitigated, verdict_raw),
        rule=rule,
        details=details,
        notes=notes,
        calls=n_calls,
        parse_failures=n_parse,
        errors=n_err,
    )


SWAP_COST = Thresholds(warn=20.0, fail=40.0, units="percentage points")
"""Decisions swap-averaging may lose (pairs whose two orders disagree): PASS under 20%, FAIL at 40%."""


def swap_cost(consistency: Estimate) -> Estimate:
    """The share of pairs whose decision swap-averaging loses (1 - consistency), in percentage points.

    >>> e = swap_cost(Estimate(0.28, 0.12, 0.5, 20, "same winner in both orders", "share of pairs"))
    >>> round(e.estimate, 1), round(e.ci_low, 1), round(e.ci_high, 1), e.n
    (72.0, 50.0, 88.0, 20)
    """
    return Estimate(
        100 * (1 - consistency.estimate), 100 * (1 - consistency.ci_high), 100 * (1 - consistency.ci_low),
        consistency.n,
        "decisions lost to swap-averaging: pairs whose two orders disagree (or one did not parse) become a "
        "tie; 100% minus the consistency (" + consistency.method + ")",
        "percentage points", consistency.level,
        extra={"pairs": consistency.n, "kept": consistency.estimate},
    )


def swap_cost_verdict(cost: Estimate, raw_verdict: str) -> Verdict:
    """PASS, WARN or FAIL of the mitigation by what it costs.

    PASS when it loses few decisions (under 20%, the interval under 40%). FAIL when it loses
    40% or more, resolved, and the raw reading failed: the bias is "removed" only by throwing
    most decisions away. Otherwise WARN (a judge that flips on near-equal pairs without a
    position bias loses decisions too: costly, but not shown to be the position).

    >>> cost = swap_cost(Estimate(0.28, 0.12, 0.5, 20, "", "share of pairs"))
    >>> swap_cost_verdict(cost, "FAIL"), swap_cost_verdict(cost, "PASS")
    ('FAIL', 'WARN')
    """
    if math.isnan(cost.estimate):
        return "WARN"
    if cost.estimate < SWAP_COST.warn and cost.ci_high < SWAP_COST.fail:
        return "PASS"
    if raw_verdict == "FAIL" and cost.estimate >= SWAP_COST.fail and cost.ci_low > SWAP_COST.warn:
        return "FAIL"
    return "WARN"


def _evidence_statistics(rows: pd.DataFrame) -> PositionStatistics:
    """:func:`position_statistics` of the probe's rows: the target is answer a, AB shows it first."""
    replied = rows[rows["status"] != "error"]
    slot = slot_verdicts(replied)
    ab = (replied["order"] == "AB").to_numpy()
    candidate = np.where(ab, np.sign(slot), -np.sign(slot))
    winners = [None if math.isnan(c) else _SIDE[int(c)] for c in candidate]
    return position_statistics(replied["trial"].astype(str).to_numpy(), np.where(ab, "a", "b"), winners,
                               trials=replied["arm"].astype(str).to_numpy())


# --------------------------------------------------------------------------------------------
# position statistics of any stored run, the probe's own or imported


@dataclass(frozen=True)
class RunPosition:
    """The position statistics of one judge run's pairwise judgements.

    Attributes:
        run_id: The run.
        judge_model: Its judge model.
        formats: The pairwise formats read.
        errors: Calls that failed with no reply (left out: the judge never answered).
        statistics: The figures (:func:`judgelab.calibration.stats.position_statistics`).
    """

    run_id: str
    judge_model: str
    formats: tuple[str, ...]
    errors: int
    statistics: PositionStatistics

    def to_json(self) -> dict[str, Any]:
        """What ``judgelab position --json`` prints."""
        return {"run_id": self.run_id, "judge_model": self.judge_model, "formats": list(self.formats),
                "errors": self.errors, **self.statistics.to_json()}

    def lines(self) -> list[str]:
        """The figures as text lines, one statistic each (``judgelab position``)."""
        head = f"judge run {self.run_id} (judge {self.judge_model}; {', '.join(self.formats) or 'no'} format)"
        lines = statistics_lines(self.statistics)
        if self.errors:
            lines[0] += f"; {self.errors} calls failed with no reply (left out)"
        return [head, *lines]


def statistics_lines(s: PositionStatistics) -> list[str]:
    """Position statistics as text lines, one statistic each (the CLI and the calibration report)."""
    # A unit judged in both orders is a pair, or a pair and trial when pairs were judged repeatedly.
    units = "pairs" if s.consistency.n == s.pairs_both_orders else "pair-trials (a pair judged again counts again)"
    rows = [("consistency (same winner in both orders; unparsed counts as inconsistent)", s.consistency, units),
            ("positional agreement (LLMBar's `equal`: two unparsed replies agree)", s.positional_agreement,
             units)]
    rows += [(f"accuracy vs gold, {_ACCURACY_NAMES[k]}", e, "replies" if k == "mean_of_orders" else "pairs")
             for k, e in s.accuracy.items()]
    adv = s.first_shown_advantage
    out = [f"pairs: {s.pairs}, judged in both orders: {s.pairs_both_orders}; parse failures: "
           f"{s.parse_failures} of {s.replies} replies did not parse",
           *[f"{name}: {pct(e.estimate)} ({ci(e, 1, signed=False, percent=True)}; n = {e.n} {unit})"
             for name, e, unit in rows[:2]],
           f"first-shown advantage: {num(adv.estimate, 1, signed=True)} percentage points ({ci(adv, 1)}; "
           f"n = {adv.n} replies with a winner)",
           *[f"{name}: {pct(e.estimate)} ({ci(e, 1, signed=False, percent=True)}; n = {e.n} {unit})"
             for name, e, unit in rows[2:]]]
    if not s.accuracy:
        out.append("accuracy vs gold: no pair has gold")
    return out


_ACCURACY_NAMES = {"a_first": "answer a shown first", "b_first": "answer b shown first",
                   "both_orders": "right in both orders", "swap_averaged": "after swap-averaging",
                   "mean_of_orders": "mean of the two orders"}


def position_replies(rows: pd.DataFrame, gold: Mapping[str, str | None]) -> pd.DataFrame:
    """One row per pairwise reply of a run, in the pair's own terms.

    A reply's *pair* is the stored pair when its two answers are that pair's ``<id>:a`` and
    ``<id>:b`` (then ``a`` is the pair's answer a and the pair's gold applies); otherwise the
    two answers, with ``a`` the probe's target (``meta["target_id"]``) or else the first by id.
    Its *trial* is the probe, arm and trial it belongs to.

    Args:
        rows: The run's judgements (:meth:`judgelab.labeler.store.Store.run_rows`, pairwise).
        gold: Every stored pair's gold (:meth:`judgelab.labeler.store.Store.pair_gold`).

    Returns:
        Columns ``pair``, ``trial``, ``shown_first`` (``a``/``b``), ``winner`` (``a``, ``b``,
        ``tie``, or ``None`` when the reply did not parse) and ``gold``; failed calls left out.
    """
    ok = rows["format"].isin(PAIRWISE_FORMATS) & rows["answer_id"].notna() & rows["answer_b_id"].notna()
    rows = rows[ok & (rows["status"] != "error")]
    out: list[dict[str, Any]] = []
    keys = [tuple(sorted((str(a), str(b)))) for a, b in zip(rows["answer_id"], rows["answer_b_id"], strict=True)]
    for key, grp in rows.groupby(pd.Series(keys, index=rows.index, dtype=object), sort=True):
        x, y = key  # type: ignore[misc]  # the group key is the sorted pair of ids
        stored = pair_of(x, gold)
        pair_gold: str | None = None
        if stored is not None and {x, y} == {f"{stored}:a", f"{stored}:b"}:
            pair, a_id, pair_gold = stored, f"{stored}:a", gold[stored]
        else:
            targets = [str(m.get("target_id")) for m in grp["meta"] if isinstance(m, dict)]
            pair, a_id = f"{x} vs {y}", next((t for t in targets if t in key), x)
        for rec in grp.itertuples(index=False):
            first = "a" if rec.answer_id == a_id else "b"
            winner = None
            if rec.status == "parsed":
                slot = int(np.sign(float(rec.value)))  # type: ignore[arg-type]  # a parsed value is a number
                winner = _SIDE[slot if first == "a" else -slot]
            out.append({"pair": pair, "trial": f"{rec.probe}/{rec.arm}/{rec.trial}", "shown_first": first,
                        "winner": winner, "gold": pair_gold})
    return pd.DataFrame(out, columns=["pair", "trial", "shown_first", "winner", "gold"])


_SIDE = {1: "a", -1: "b", 0: "tie"}


def position_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The judgements the position figures read: the position probe's, when the run has any.

    One definition for the report card, ``judgelab position`` and ``judgelab calibrate``: the
    other probes' pairwise calls (an answer against its padded or decorated self) vary
    something else, so they are not position evidence. A run without a position probe
    (imported verdicts) is read whole.
    """
    if "probe" not in rows:
        return rows
    mine = rows["probe"] == NAME
    return rows[mine] if mine.any() else rows


def statistics_of_replies(replies: pd.DataFrame, *, level: float = 0.95) -> PositionStatistics:
    """:func:`judgelab.calibration.stats.position_statistics` of :func:`position_replies`."""
    return position_statistics(replies["pair"], replies["shown_first"], replies["winner"], trials=replies["trial"],
                               gold=replies["gold"], level=level)


def choose_position_run(store: AnalystRole, *, run_id: str | None = None, judge_model: str | None = None) -> str:
    """The run ``judgelab position`` reads: the one named, the newest of a judge, or the newest.

    Only runs with pairwise judgements qualify when the run is not named.

    Raises:
        InputError: Both options given, an unknown run, or no run with pairwise judgements.
    """
    if run_id is not None and judge_model is not None:
        raise InputError("give a judge run or a judge model, not both", fix="drop --judge-run or --judge-model.")
    runs = store.calibration_runs()
    if run_id is not None:
        if run_id not in set(runs["run_id"]):
            known = ", ".join(repr(r) for r in runs["run_id"].head(5))
            raise InputError(f"no judge run {run_id!r}", fix=f"pass one of the stored runs ({known or 'none'}).")
        return run_id
    paired = runs[runs["n_pairwise"] > 0]
    if judge_model is not None:
        mine = paired[paired["model"] == judge_model]
        if mine.empty:
            models = ", ".join(repr(m) for m in dict.fromkeys(paired["model"]))
            raise InputError(f"no run of judge {judge_model!r} has pairwise judgements",
                             fix=f"pass one of {models}." if models else _NO_PAIRWISE_FIX)
        return str(mine["run_id"].iloc[0])
    if paired.empty:
        raise InputError("no judge run with pairwise judgements in the database", fix=_NO_PAIRWISE_FIX)
    return str(paired["run_id"].iloc[0])


_NO_PAIRWISE_FIX = ("import verdicts (`judgelab import verdicts FILE`) or pairwise judgements, or run "
                    "`judgelab probe --biases position`.")


def run_position(
    store: AnalystRole, *, run_id: str | None = None, judge_model: str | None = None, level: float = 0.95
) -> RunPosition:
    """Position statistics of a stored run (see :func:`choose_position_run` for which run).

    A run of the position probe is read on that probe's calls alone, as the report card reads
    it (the same figure on both); a run without one (imported verdicts) on all its pairwise
    judgements.

    Raises:
        InputError: As :func:`choose_position_run`, or the run holds no pairwise judgements.
    """
    chosen = choose_position_run(store, run_id=run_id, judge_model=judge_model)
    rows = store.run_rows(chosen, "pairwise")
    if rows.empty:
        raise InputError(f"judge run {chosen!r} has no pairwise judgements",
                         fix="pick another run with --judge-run, or --judge-model.")
    info = store.judge_run(chosen) or {}
    replies = position_replies(position_rows(rows), store.pair_gold())
    formats = tuple(sorted(set(rows["format"]) & set(PAIRWISE_FORMATS)))
    return RunPosition(chosen, str(info.get("model")), formats, int((rows["status"] == "error").sum()),
                       statistics_of_replies(replies, level=level))
