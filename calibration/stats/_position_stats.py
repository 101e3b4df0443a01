"""Position statistics of a judge run: every pair judged with each of its answers shown first.

**Input.** One judge reply per element: the *pair* it judged (answers ``a`` and ``b``), which
answer was *shown first*, the *winner* in the pair's own terms (``"a"``, ``"b"``, ``"tie"``, or
``None`` when the reply did not parse), optionally a *trial* (repeats of a pair) and the pair's
*gold* winner. A *unit* is one pair and trial; it is *judged in both orders* when it has a reply
with ``a`` shown first and one with ``b`` shown first (parsed or not).

**Statistics** (every rate a fraction, the advantage in percentage points):

- *consistency*: share of units judged in both orders whose two replies name the same winner (a
  tie twice counts). A unit with an unparsed reply in either order is **inconsistent**, so the
  denominator is every unit judged in both orders and a judge cannot look steadier by failing
  to answer. Parse failures are counted on their own as well.
- *positional agreement*: the same, except that two unparsed replies agree with each other: the
  convention of LLMBar's ``equal`` (the paper's "Agr."), kept so published figures can be
  checked. It differs from consistency only on units unparsed in both orders.
- *first-shown advantage*: among replies with a winner (not a tie, parsed), the share won by
  the answer shown first, minus 50%.
- *accuracy* against gold (units whose pair has gold): with ``a`` shown first, with ``b`` shown
  first, right in both orders, after swap-averaging (a winner only when both orders agree, else
  "no decision": right only when gold is a tie), and pooled over both orders' replies (LLMBar's
  ``correct_average``, the paper's "Acc."). An unparsed reply is wrong.

**Intervals clustered by pair.** The two orders of one pair are not independent: a judge that
prefers one answer wins once as first shown and once as second, so the first-shown wins of a
pair move together and an interval that treats replies as independent is several times too
wide (about 4.5x on a consistent judge). Every interval here is a Wilson score interval with the
effective sample size of a pair-clustered ratio estimator: the design effect is the
between-pair variance of ``sum(y) / n`` (``sum_c (Y_c - p n_c)^2 / n^2``, no small-sample
correction) over the binomial variance ``p (1 - p) / n``, so with one element per pair the
interval is exactly Wilson's. When every pair contributes exactly its share (a judge that never
flips: 100 of 100 pairs consistent) the between-pair variance is 0 and the interval would be a
point; it is floored at the variance of 3 pairs off their share by one reply (the rule of three,
as the report's residuals), and the method says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from judgelab.calibration.stats._binomial import wilson_interval
from judgelab.calibration.stats._bootstrap import check_level
from judgelab.calibration.stats._result import Estimate

_CODE = {"a": 1.0, "b": -1.0, "tie": 0.0}
_NAN = float("nan")

Labels = npt.ArrayLike | Sequence[str | None]
"""Side labels, one per reply: ``"a"``, ``"b"``, ``"tie"``, or missing (``None``, ``nan``, empty)."""

ACCURACY_KEYS = ("a_first", "b_first", "both_orders", "swap_averaged", "mean_of_orders")
"""The accuracy figures, in the order they are reported."""

_RULE_OF_THREE = 3.0  # pseudo-events of the between-pair variance's floor (clustered_rate)
_CLUSTERED = ("Wilson score interval with the effective sample size of the pair-clustered variance "
              "(design effect {deff})")


def clustered_rate(
    successes: npt.ArrayLike, clusters: npt.ArrayLike, *, level: float = 0.95, method: str, units: str
) -> Estimate:
    """The mean of ``successes`` (each in ``[0, 1]``) with a Wilson interval clustered by ``clusters``.

    Args:
        successes: One value per element: 1 a success, 0 a failure (fractions allowed).
        clusters: The cluster (pair) of each element.
        level: Confidence level.
        method: What is counted, for the estimate's ``method`` (the interval's is appended).
        units: The estimate's units.

    Returns:
        An :class:`Estimate` of the share, ``n`` the number of elements, ``extra`` holding
        ``k`` (successes), ``clusters``, ``design_effect`` and ``floor`` (whether the
        between-pair variance was raised to the rule of three's). Degenerate cases: no elements give
        ``nan``; a share of 0 or 1 has no between-pair variance to measure and gets the plain
        Wilson interval.

    Examples:
        >>> e = clustered_rate([1, 0, 1, 0], ["p", "p", "q", "q"], method="first wins", units="share")
        >>> e.estimate, round(e.ci_low, 4), round(e.ci_high, 4)  # no spread seen: rule of three's floor
        (0.5, 0.0692, 0.9308)
        >>> e = clustered_rate([1, 1, 0, 1], ["p", "q", "r", "s"], method="x", units="share")
        >>> round(e.ci_low, 4), round(e.ci_high, 4)
        (0.3006, 0.9544)
    """
    y = np.asarray(successes, dtype=float)
    ids = np.asarray(clusters)
    n = int(y.size)
    if n == 0:
        return Estimate(_NAN, _NAN, _NAN, 0, method, units, level, {"k": 0, "clusters": 0, "design_effect": None})
    k = float(y.sum())
    p = k / n
    _, codes = np.unique(ids, return_inverse=True)
    per_cluster = np.bincount(codes, weights=y) - p * np.bincount(codes)
    n_clusters = int(codes.max()) + 1
    binomial = p * (1 - p) / n
    spread = float(np.sum(per_cluster**2))
    # Pairs that each contribute exactly their share (a judge that never flips: one first-shown
    # win per pair) show no between-pair variance, and the interval would be a point. The data
    # cannot tell that from 3 pairs off their share by one reply (the rule of three, as
    # judgelab.calibration.stats.rare_event_variance): the variance is floored there.
    floored = n_clusters < n and binomial > 0 and spread < _RULE_OF_THREE
    deff = float(max(spread, _RULE_OF_THREE) / n**2 / binomial) if floored else (
        float(spread / n**2 / binomial) if binomial > 0 else 1.0)
    if binomial == 0 or n_clusters == n:
        # Nothing to cluster (one element per pair), or no variance to measure: plain Wilson.
        lo, hi = wilson_interval(round(k), n, level=level) if float(k).is_integer() else _wilson(p, n, level)
    else:
        lo, hi = _wilson(p, n / deff, level)
    extra = {"k": int(k) if float(k).is_integer() else k, "clusters": n_clusters, "design_effect": deff,
             "floor": floored}
    text = f"{method}; " + _CLUSTERED.format(deff=f"{deff:.3g}")
    if floored:
        text += (f"; at the rule of three's floor: as if 3 of {n_clusters} pairs had been off their share by "
                 "one reply")
    return Estimate(p, lo, hi, n, text, units, level, extra)


def _wilson(p: float, n: float, level: float) -> tuple[float, float]:
    """Wilson's interval for a share ``p`` of ``n`` (a real, effective) trials."""
    z = float(stats.norm.ppf(0.5 + level / 2))
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class PositionStatistics:
    """Position statistics of one set of two-order judgements (see the module docstring).

    Attributes:
        pairs: Pairs with at least one reply.
        pairs_both_orders: Pairs with a unit judged in both orders.
        replies: Replies counted (one per unit and order).
        parse_failures: Replies that did not parse.
        consistency: Share of units judged in both orders with the same winner in both;
            unparsed in either order is inconsistent.
        positional_agreement: The same with two unparsed replies agreeing (LLMBar's ``equal``).
        first_shown_advantage: First-shown win rate among decisions minus 50%, in percentage points.
        accuracy: Against gold, keyed by :data:`ACCURACY_KEYS`; empty when no pair has gold.
    """

    pairs: int
    pairs_both_orders: int
    replies: int
    parse_failures: int
    consistency: Estimate
    positional_agreement: Estimate
    first_shown_advantage: Estimate
    accuracy: dict[str, Estimate] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The figures under the keys ``judgelab position --json`` prints.

        Each statistic is ``{"value", "low", "high", "n"}`` (``nan`` as ``None``); ``methods``
        says how each was computed.
        """
        named = {"consistency": self.consistency, "positional_agreement": self.positional_agreement,
                 "first_shown_advantage": self.first_shown_advantage}
        return {
            "pairs": self.pairs,
            "pairs_both_orders": self.pairs_both_orders,
            "replies": self.replies,
            "parse_failures": self.parse_failures,
            **{k: _stat(v) for k, v in named.items()},
            "accuracy": {k: _stat(v) for k, v in self.accuracy.items()} or None,
            "methods": {k: v.method for k, v in {**named, **self.accuracy}.items()},
        }


def _stat(e: Estimate) -> dict[str, Any]:
    def clean(x: float) -> float | None:
        return None if math.isnan(x) else float(x)

    return {"value": clean(e.estimate), "low": clean(e.ci_low), "high": clean(e.ci_high), "n": e.n}


def _codes(func: str, name: str, values: Labels, allowed: tuple[str, ...]) -> npt.NDArray[np.float64]:
    """``a``/``b``/``tie`` as +1/-1/0 and missing (``None``, ``nan``, empty) as ``nan``."""
    out = []
    for v in np.asarray(values, dtype=object):
        if v is None or v == "" or (isinstance(v, float) and math.isnan(v)):
            out.append(_NAN)
        elif isinstance(v, str) and v.lower() in allowed:
            out.append(_CODE[v.lower()])
        else:
            raise ValueError(f"{func}: {name} must be one of {allowed} or missing; got {v!r}")
    return np.asarray(out, dtype=float)


def _units(
    pairs: npt.ArrayLike, shown_first: npt.ArrayLike, winners: Labels,
    trials: npt.ArrayLike | None, gold: Labels | None,
) -> pd.DataFrame:
    """One row per reply (the first of a unit and order): pair, unit, first, candidate code, gold."""
    func = "position_statistics"
    pair = np.asarray(pairs, dtype=object)
    first = np.asarray(shown_first, dtype=object)
    n = pair.size
    if first.size != n or np.asarray(winners, dtype=object).size != n:
        raise ValueError(f"{func}: pairs, shown_first and winners need one value per reply")
    bad = sorted({str(f) for f in first if f not in ("a", "b")})
    if bad:
        raise ValueError(f"{func}: shown_first must be 'a' or 'b'; got {bad}")
    trial = np.full(n, None, dtype=object) if trials is None else np.asarray(trials, dtype=object)
    golds = np.full(n, _NAN) if gold is None else _codes(func, "gold", gold, ("a", "b", "tie"))
    if trial.size != n or golds.size != n:
        raise ValueError(f"{func}: trials and gold need one value per reply")
    frame = pd.DataFrame({
        "pair": pair, "unit": [f"{p!r}/{t!r}" for p, t in zip(pair, trial, strict=True)], "first": first,
        "code": _codes(func, "winners", winners, ("a", "b", "tie")), "gold": golds,
    })
    # One reply per unit and order: a duplicate (the same call recorded twice) would count twice.
    return frame.drop_duplicates(["unit", "first"], keep="first").reset_index(drop=True)


def position_statistics(
    pairs: npt.ArrayLike,
    shown_first: npt.ArrayLike,
    winners: Labels,
    *,
    trials: npt.ArrayLike | None = None,
    gold: Labels | None = None,
    level: float = 0.95,
) -> PositionStatistics:
    """Consistency, first-shown advantage and accuracy of pairs judged in both orders.

    Args:
        pairs: The pair of each reply.
        shown_first: ``"a"`` or ``"b"``: the pair's answer shown first.
        winners: ``"a"``, ``"b"``, ``"tie"``, or missing (``None``/empty) when the reply did not
            parse.
        trials: Optional repeat number of each reply; a unit is one pair and trial.
        gold: Optional gold winner of each reply's pair (``"a"``, ``"b"``, ``"tie"`` or missing).
        level: Confidence level.

    Returns:
        A :class:`PositionStatistics`. Degenerate cases: no unit judged in both orders gives
        ``nan`` consistency and agreement; no decision gives a ``nan`` advantage.

    Examples:
        LLMBar's convention check: pair 1 right in both orders, pair 2 flips with the first
        shown, pair 3 unparsed twice (inconsistent here, "equal" for LLMBar).

        >>> s = position_statistics(["1", "1", "2", "2", "3", "3"], list("ababab"),
        ...                         ["a", "a", "a", "b", None, None], gold=list("aaaaaa"))
        >>> s.consistency.estimate, s.positional_agreement.estimate, s.parse_failures
        (0.3333333333333333, 0.6666666666666666, 2)
        >>> s.accuracy["a_first"].estimate, s.accuracy["both_orders"].estimate
        (0.6666666666666666, 0.3333333333333333)
        >>> s.first_shown_advantage.estimate
        25.0

    Raises:
        ValueError: Mismatched lengths, a ``shown_first`` other than ``a``/``b``, a winner or gold
            off ``a``/``b``/``tie``, or a bad ``level``.
    """
    check_level("position_statistics", level)
    replies = _units(pairs, shown_first, winners, trials, gold)
    wide = replies.pivot_table(index="unit", columns="first", values="code", aggfunc="first", dropna=False)
    present = replies.pivot_table(index="unit", columns="first", values="pair", aggfunc="size", fill_value=0)
    for side in ("a", "b"):
        # A run with every pair shown one way only has no column for the other order.
        wide[side] = wide.get(side, _NAN)
        present[side] = present.get(side, 0)
    pair_of = replies.drop_duplicates("unit").set_index("unit")["pair"]
    gold_of = replies.drop_duplicates("unit").set_index("unit")["gold"]
    both = present.index[(present["a"] > 0) & (present["b"] > 0)]
    ca, cb = wide.loc[both, "a"].to_numpy(float), wide.loc[both, "b"].to_numpy(float)
    clusters = pair_of.loc[both].to_numpy()
    parsed = ~np.isnan(ca) & ~np.isnan(cb)
    same = parsed & (np.sign(ca) == np.sign(cb))
    consistency = clustered_rate(same, clusters, level=level, units="share of pairs",
                                 method="same winner in both orders; an unparsed reply in either order is "
                                 "inconsistent")
    agreement = clustered_rate(same | (np.isnan(ca) & np.isnan(cb)), clusters, level=level,
                               units="share of pairs", method="same winner in both orders, two unparsed "
                               "replies agreeing (LLMBar's equal)")
    return PositionStatistics(
        pairs=int(replies["pair"].nunique()),
        pairs_both_orders=int(pd.unique(clusters).size),
        replies=len(replies),
        parse_failures=int(replies["code"].isna().sum()),
        consistency=consistency,
        positional_agreement=agreement,
        first_shown_advantage=_advantage(replies, level),
        accuracy=_accuracy(replies, ca, cb, gold_of.loc[both].to_numpy(float), clusters, level),
    )


def _advantage(replies: pd.DataFrame, level: float) -> Estimate:
    code = replies["code"].to_numpy(float)
    slot = np.where(replies["first"].to_numpy() == "a", code, -code)
    return first_shown_advantage_by_pair(slot, replies["pair"].to_numpy(), level=level)


def first_shown_advantage_by_pair(
    slot_verdicts: npt.ArrayLike, pairs: npt.ArrayLike, *, level: float = 0.95
) -> Estimate:
    """First-shown win rate minus 50%, in percentage points, with an interval clustered by pair.

    The point estimate is :func:`judgelab.calibration.stats.first_shown_advantage_from_verdicts`'s; the
    interval treats the replies of one pair as one cluster (see the module docstring), which on
    a judge that prefers one answer whatever the order is several times narrower than the
    independent Wilson interval, and agrees with the slot decomposition's ``b``.

    Args:
        slot_verdicts: Slot-coded verdicts (+ the first-shown answer won, 0 a tie, ``nan``
            unparsed), one per reply.
        pairs: The pair of each reply.
        level: Confidence level.

    Returns:
        Estimate in ``"percentage points"``; ``n`` is the replies with a winner; ``extra`` holds
        ``ties``, ``unparsed``, ``k`` (first-shown wins), ``clusters`` and ``design_effect``.

    Examples:
        A judge that picks answer x in both orders of both pairs: no advantage, and no
        between-pair variation in it; the interval is the rule of three's (3 pairs flipped).

        >>> e = first_shown_advantage_by_pair([1, -1, -1, 1], ["p", "p", "q", "q"])
        >>> e.estimate, round(e.ci_low, 1), round(e.ci_high, 1), e.extra["floor"]
        (0.0, -43.1, 43.1, True)
    """
    v = np.asarray(slot_verdicts, dtype=float)
    ids = np.asarray(pairs)
    if v.shape != ids.shape:
        raise ValueError("first_shown_advantage_by_pair: one pair per verdict needed")
    decided = ~np.isnan(v) & (v != 0)
    share = clustered_rate(v[decided] > 0, ids[decided], level=level, units="share", method="")
    return Estimate(100 * (share.estimate - 0.5), 100 * (share.ci_low - 0.5), 100 * (share.ci_high - 0.5),
                    share.n, "first-shown win rate among replies with a winner, minus 50%" + share.method,
                    "percentage points", level,
                    {**share.extra, "ties": int((v == 0).sum()), "unparsed": int(np.isnan(v).sum())})


def _accuracy(
    replies: pd.DataFrame, ca: npt.NDArray[np.float64], cb: npt.NDArray[np.float64],
    gold_units: npt.NDArray[np.float64], clusters: npt.NDArray[Any], level: float,
) -> dict[str, Estimate]:
    """Accuracy against gold: each order, both orders, swap-averaged and pooled (empty without gold)."""
    known = replies[replies["gold"].notna()]
    if known.empty:
        return {}
    right = (known["code"] == known["gold"]).to_numpy(bool)  # nan (unparsed) is never equal: wrong
    first = known["first"].to_numpy()
    pair = known["pair"].to_numpy()
    g = ~np.isnan(gold_units)
    ca, cb, gu, cl = ca[g], cb[g], gold_units[g], clusters[g]
    swap = np.where(np.sign(ca) == np.sign(cb), np.sign(ca), 0.0)
    swap[np.isnan(ca) | np.isnan(cb)] = _NAN
    unit = "share of pairs"
    return {
        "a_first": clustered_rate(right[first == "a"], pair[first == "a"], level=level, units=unit,
                                  method="right with answer a shown first; unparsed is wrong"),
        "b_first": clustered_rate(right[first == "b"], pair[first == "b"], level=level, units=unit,
                                  method="right with answer b shown first; unparsed is wrong"),
        "both_orders": clustered_rate((ca == gu) & (cb == gu), cl, level=level, units=unit,
                                      method="right in both orders"),
        "swap_averaged": clustered_rate(swap == gu, cl, level=level, units=unit,
                                        method="the swap-averaged verdict (a winner only when both orders agree, "
                                        "else no decision) is right"),
        "mean_of_orders": clustered_rate(right, pair, level=level, units="share of replies",
                                         method="right, over the replies of both orders"),
    }
