"""Position statistics over pairs judged in both orders (judgelab.calibration.stats.position_statistics)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judgelab.calibration.stats import (
    clustered_rate,
    first_shown_advantage_by_pair,
    first_shown_advantage_from_verdicts,
    position_statistics,
    slot_decomposition,
    wilson_interval,
)

SWAP = {"a": "b", "b": "a", "tie": "tie", None: None}


def test_known_values_with_an_unparsed_pair() -> None:
    # pair 1: a in both orders (consistent, right); pair 2: the first shown wins (flip);
    # pair 3: b in both orders; pair 4: unparsed with b shown first.
    pairs = ["1", "1", "2", "2", "3", "3", "4", "4"]
    first = list("abababab")
    winners = ["a", "a", "a", "b", "b", "b", "a", None]
    s = position_statistics(pairs, first, winners, gold=["a"] * 8)
    assert (s.pairs, s.pairs_both_orders, s.replies, s.parse_failures) == (4, 4, 8, 1)
    # Consistent: pairs 1 and 3 of all 4 (pair 4 is in the denominator, as inconsistent).
    assert s.consistency.estimate == 0.5 and s.consistency.n == 4
    assert s.positional_agreement.estimate == 0.5  # one unparsed reply is not two
    # Decisions: 7; the first shown won in pair 1 (a first), pair 2 (twice), pair 3 (b first),
    # pair 4 (a first): 5 of 7.
    assert s.first_shown_advantage.estimate == pytest.approx(100 * (5 / 7 - 0.5))
    acc = s.accuracy
    assert acc["a_first"].estimate == 3 / 4 and acc["b_first"].estimate == 1 / 4
    assert acc["both_orders"].estimate == 1 / 4 == acc["swap_averaged"].estimate
    assert acc["mean_of_orders"].estimate == 4 / 8 and acc["mean_of_orders"].n == 8


def test_two_unparsed_replies_agree_only_by_llmbar_convention() -> None:
    s = position_statistics(["1", "1", "2", "2"], list("abab"), ["a", "a", None, None])
    assert s.consistency.estimate == 0.5 and s.positional_agreement.estimate == 1.0
    assert s.parse_failures == 2 and s.accuracy == {}
    assert s.to_json()["accuracy"] is None


def test_swap_averaging_differs_from_both_orders_when_gold_is_a_tie() -> None:
    # A flip is "no decision": right when gold is a tie, though neither order said tie.
    s = position_statistics(["1", "1"], ["a", "b"], ["a", "b"], gold=["tie", "tie"])
    assert s.accuracy["swap_averaged"].estimate == 1.0 and s.accuracy["both_orders"].estimate == 0.0


def test_pairs_judged_in_one_order_only_are_not_in_the_consistency() -> None:
    s = position_statistics(["1", "1", "2"], ["a", "b", "a"], ["a", "a", "b"], trials=[0, 0, 0])
    assert s.pairs == 2 and s.pairs_both_orders == 1 and s.consistency.n == 1
    # Repeats of a pair are units of their own, clustered by pair.
    r = position_statistics(["1"] * 4, list("abab"), ["a", "a", "a", "b"], trials=[0, 0, 1, 1])
    assert r.consistency.n == 2 and r.consistency.estimate == 0.5 and r.pairs == 1


def test_json_keys_are_the_issues() -> None:
    s = position_statistics(["1", "1"], ["a", "b"], ["a", "a"], gold=["a", "a"])
    payload = s.to_json()
    assert {"pairs", "pairs_both_orders", "parse_failures", "consistency", "first_shown_advantage",
            "accuracy"} <= set(payload)
    assert set(payload["accuracy"]) >= {"a_first", "b_first", "both_orders", "swap_averaged"}
    for stat in (payload["consistency"], payload["first_shown_advantage"], *payload["accuracy"].values()):
        assert set(stat) == {"value", "low", "high", "n"}


@pytest.mark.parametrize("seed", [0, 1])
def test_relabelling_the_answers_and_shuffling_the_rows_change_nothing(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 40
    pairs = np.repeat([f"p{i}" for i in range(n)], 2)
    first = np.tile(["a", "b"], n)
    winners = list(rng.choice(["a", "b", "tie", None], size=2 * n, p=[0.45, 0.35, 0.1, 0.1]))
    gold = list(np.repeat(rng.choice(["a", "b"], size=n), 2))
    s = position_statistics(pairs, first, winners, gold=gold)
    swapped = position_statistics(pairs, [SWAP[f] for f in first], [SWAP[w] for w in winners],
                                  gold=[SWAP[g] for g in gold])
    order = rng.permutation(2 * n)
    shuffled = position_statistics(pairs[order], first[order], [winners[i] for i in order],
                                   gold=[gold[i] for i in order])
    for other in (swapped, shuffled):
        assert other.consistency == s.consistency and other.first_shown_advantage == s.first_shown_advantage
        assert other.accuracy["both_orders"] == s.accuracy["both_orders"]
    assert swapped.accuracy["a_first"].estimate == s.accuracy["b_first"].estimate


def test_one_reply_per_pair_gives_exactly_wilsons_interval() -> None:
    est = clustered_rate([1, 1, 0, 1, 0, 1, 1], list("abcdefg"), method="x", units="share")
    assert (est.ci_low, est.ci_high) == wilson_interval(5, 7)
    assert math.isnan(clustered_rate([], [], method="x", units="share").estimate)


def test_the_clustered_advantage_is_as_narrow_as_the_slot_decomposition_says() -> None:
    # A judge that mostly follows quality, with a small pull to slot A: the two orders of a pair
    # move together, so the independent Wilson interval is several times too wide, and the
    # pair-clustered one agrees with 50 x the slot decomposition's b (same quantity, in points).
    rng = np.random.default_rng(3)
    n = 300
    prefers_x = rng.random(n) < 0.5
    keeps = rng.random((n, 2)) < 0.9
    # Slot-coded: forward shows x first, reverse shows y first; ties never.
    v_fwd = np.where(keeps[:, 0], np.where(prefers_x, 1.0, -1.0), 1.0)
    v_rev = np.where(keeps[:, 1], np.where(prefers_x, -1.0, 1.0), 1.0)
    pairs = np.r_[np.arange(n), np.arange(n)].astype(str)
    clustered = first_shown_advantage_by_pair(np.r_[v_fwd, v_rev], pairs)
    wilson = first_shown_advantage_from_verdicts(np.r_[v_fwd, v_rev])
    b = slot_decomposition(v_fwd, v_rev, n_resamples=2000, rng=0).b
    assert clustered.estimate == pytest.approx(wilson.estimate) == pytest.approx(50 * b.estimate)
    assert wilson.half_width > 2.5 * clustered.half_width  # 2.6x here; more the steadier the judge
    assert clustered.half_width == pytest.approx(50 * b.half_width, rel=0.15)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="shown_first must be 'a' or 'b'"):
        position_statistics(["1"], ["x"], ["a"])
    with pytest.raises(ValueError, match="one value per reply"):
        position_statistics(["1", "2"], ["a"], ["a"])
    with pytest.raises(ValueError, match="winners must be one of"):
        position_statistics(["1"], ["a"], ["left"])
