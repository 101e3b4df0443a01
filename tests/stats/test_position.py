"""Tests for position statistics: first-shown advantage, swap-averaging, slot decomposition."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from judgelab.calibration.stats._position import (
    candidate_verdicts,
    consistency_rate,
    first_shown_advantage,
    first_shown_advantage_from_verdicts,
    length_controlled_win_rate,
    slot_decomposition,
    swap_average,
)


def judge_items(
    rng: np.random.Generator, n: int, *, slot: float = 0.0, candidate: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Simulated ±1 verdicts with an injected slot-A push and a push toward candidate X.

    P(slot A wins) = 0.5 + slot + candidate when X is in slot A, and 0.5 + slot - candidate when
    X is in slot B. Expected values: E[v_fwd] = 2(slot + candidate), E[v_rev] = 2(slot -
    candidate), so b = 2 * slot and q = 2 * candidate.
    """
    v_fwd = np.where(rng.random(n) < 0.5 + slot + candidate, 1.0, -1.0)
    v_rev = np.where(rng.random(n) < 0.5 + slot - candidate, 1.0, -1.0)
    return v_fwd, v_rev


# ----------------------------------------------------------------------------- coding


def test_candidate_verdicts_and_order_validation() -> None:
    got = candidate_verdicts([1, -1, 0, 1], ["AB", "AB", "BA", "BA"])
    assert got.tolist() == [1, -1, 0, -1]
    with pytest.raises(ValueError) as err:
        candidate_verdicts([1], ["XY"])
    msg = str(err.value)
    assert "candidate_verdicts" in msg and "'XY'" in msg and "'AB'" in msg and "'BA'" in msg


def test_swap_average_counts_a_win_only_when_orders_agree() -> None:
    v_fwd = [1, 1, -1, 0, 0, 2, np.nan]
    v_rev = [-1, 1, 1, 0, -1, -1, 1]
    # X won both; flip (slot A both times); Y won both; tie twice; tie once; graded agree; missing
    out = swap_average(v_fwd, v_rev)
    assert out[:6].tolist() == [1, 0, -1, 0, 0, 1]
    assert math.isnan(out[6])


def test_consistency_rate_known_value() -> None:
    # stable: X both, Y both, tie both; unstable: slot A both times, tie vs win
    est = consistency_rate([1, -1, 0, 1, 0, np.nan], [-1, 1, 0, 1, 1, 1])
    assert est.estimate == 3 / 5 and est.n == 5 and est.extra["dropped"] == 1
    ci = stats.binomtest(3, 5).proportion_ci(method="wilson")
    assert math.isclose(est.ci_low, ci.low) and math.isclose(est.ci_high, ci.high)
    assert est.units == "share of items"


# ----------------------------------------------------------------------------- first shown


def test_first_shown_advantage_known_value() -> None:
    est = first_shown_advantage(61, 100)
    assert math.isclose(est.estimate, 11.0)
    ci = stats.binomtest(61, 100).proportion_ci(method="wilson")
    assert math.isclose(est.ci_low, 100 * (ci.low - 0.5))
    assert math.isclose(est.ci_high, 100 * (ci.high - 0.5))
    assert est.units == "percentage points" and est.n == 100
    assert math.isnan(first_shown_advantage(0, 0).estimate)
    with pytest.raises(ValueError, match="first_shown_advantage"):
        first_shown_advantage(5, 3)


def test_first_shown_advantage_from_verdicts_leaves_out_ties() -> None:
    est = first_shown_advantage_from_verdicts([1, 1, 1, -1, 0, 0, np.nan])
    assert math.isclose(est.estimate, 25.0)  # 3 of 4 decisions
    assert est.extra == {"first_wins": 3, "win_rate": 0.75, "ties": 2, "missing": 1}


def test_injected_position_bias_is_recovered_and_swap_averaging_removes_it() -> None:
    rng = np.random.default_rng(20)
    v_fwd, v_rev = judge_items(rng, 2000, slot=0.15)  # first shown wins 65%: +15 points
    raw = first_shown_advantage_from_verdicts(np.r_[v_fwd, v_rev])
    assert raw.covers(15.0)
    assert raw.ci_low > 10
    averaged = swap_average(v_fwd, v_rev)
    se = averaged.std() / math.sqrt(averaged.size)
    assert abs(averaged.mean()) < 3 * se + 1e-12  # no candidate preference left
    # a pure order effect makes most verdicts flip: 0.65^2 + 0.35^2 of items are unstable
    assert consistency_rate(v_fwd, v_rev).covers(2 * 0.65 * 0.35)


# ----------------------------------------------------------------------------- decomposition


def test_slot_decomposition_exact_cases() -> None:
    ones = np.ones(10)
    pure_slot = slot_decomposition(ones, ones, n_resamples=50, rng=0)
    assert pure_slot.b.estimate == 1.0 and pure_slot.q.estimate == 0.0
    assert pure_slot.consistency.estimate == 0.0
    pure_candidate = slot_decomposition(ones, -ones, n_resamples=50, rng=0)
    assert pure_candidate.q.estimate == 1.0 and pure_candidate.b.estimate == 0.0
    # q changes sign when the candidates swap roles; b stays with the slot
    v_fwd = np.array([2, 1, 0, -1, 2, 1])
    v_rev = np.array([1, -2, 0, 1, 2, -1])
    fwd = slot_decomposition(v_fwd, v_rev, n_resamples=50, rng=0)
    rev = slot_decomposition(v_rev, v_fwd, n_resamples=50, rng=0)
    assert math.isclose(fwd.q.estimate, -rev.q.estimate)
    assert math.isclose(fwd.b.estimate, rev.b.estimate)
    assert math.isclose(fwd.q.estimate, np.mean((v_fwd - v_rev) / 2))
    assert math.isclose(fwd.b.estimate, np.mean((v_fwd + v_rev) / 2))


@pytest.mark.parametrize(
    ("slot", "candidate"),
    [(0.2, 0.0), (0.0, 0.2), (-0.1, 0.15)],
    ids=["pure_slot", "pure_candidate", "both"],
)
def test_slot_decomposition_recovers_injected_effects(slot: float, candidate: float) -> None:
    rng = np.random.default_rng(21)
    v_fwd, v_rev = judge_items(rng, 3000, slot=slot, candidate=candidate)
    dec = slot_decomposition(v_fwd, v_rev, n_resamples=500, rng=1)
    assert dec.b.covers(2 * slot), dec.b
    assert dec.q.covers(2 * candidate), dec.q
    assert dec.b.half_width < 0.05 and dec.q.half_width < 0.05
    # 50 * b is the first-shown advantage (no ties)
    raw = first_shown_advantage_from_verdicts(np.r_[v_fwd, v_rev])
    assert math.isclose(50 * dec.b.estimate, raw.estimate)


def test_slot_decomposition_clusters_determinism_and_missing() -> None:
    rng = np.random.default_rng(22)
    tasks = np.repeat(np.arange(40), 10)
    task_slot = rng.normal(scale=0.2, size=40)[tasks]  # slot bias varies by task
    v_fwd = np.where(rng.random(400) < 0.5 + np.clip(task_slot, -0.45, 0.45), 1.0, -1.0)
    v_rev = np.where(rng.random(400) < 0.5 + np.clip(task_slot, -0.45, 0.45), 1.0, -1.0)
    v_fwd[0] = np.nan
    clustered = slot_decomposition(v_fwd, v_rev, clusters=tasks, n_resamples=400, rng=5)
    again = slot_decomposition(v_fwd, v_rev, clusters=tasks, n_resamples=400, rng=5)
    by_item = slot_decomposition(v_fwd, v_rev, n_resamples=400, rng=5)
    assert clustered == again
    assert clustered.b.n == 40 and by_item.b.n == 399 and clustered.b.extra["dropped"] == 1
    assert clustered.b.half_width > by_item.b.half_width  # correlated items: wider
    json.dumps(clustered.to_dict())
    with pytest.raises(ValueError, match="slot_decomposition: v_fwd and v_rev"):
        slot_decomposition([1, 1], [1])


# ----------------------------------------------------------------------------- length control


def test_length_controlled_win_rate_removes_a_pure_length_preference() -> None:
    rng = np.random.default_rng(23)
    n = 400
    len_diff = rng.normal(300, 200, size=n)  # the candidate is usually longer
    sd = len_diff.std()
    # no quality difference at all: the win depends on length only
    p_win = 1 / (1 + np.exp(-2.0 * np.tanh(len_diff / sd)))
    wins = (rng.random(n) < p_win).astype(float)
    est = length_controlled_win_rate(wins, len_diff, n_resamples=150, rng=0)
    assert est.extra["raw_win_rate"] > 0.75
    assert est.covers(0.5), est
    assert est.extra["length_coefficient"] > 1
    assert est.units == "win rate" and est.n == n
    assert est == length_controlled_win_rate(wins, len_diff, n_resamples=150, rng=0)


def test_length_controlled_win_rate_without_length_effect_matches_raw() -> None:
    rng = np.random.default_rng(24)
    n = 300
    len_diff = rng.normal(0, 100, size=n)
    wins = (rng.random(n) < 0.7).astype(float)
    wins[:20] = 0.5  # ties are soft labels
    tasks = np.repeat(np.arange(60), 5)
    est = length_controlled_win_rate(
        wins, len_diff, transform="linear", clusters=tasks, n_resamples=100, rng=0
    )
    assert abs(est.estimate - wins.mean()) < 0.03
    assert est.n == 60 and "clusters" in est.method


def test_length_controlled_win_rate_degenerate_and_validation() -> None:
    all_wins = length_controlled_win_rate(np.ones(20), np.arange(20.0), n_resamples=20, rng=0)
    assert all_wins.estimate == 1.0
    const = length_controlled_win_rate(
        np.r_[np.ones(15), np.zeros(5)], np.zeros(20), n_resamples=20, rng=0
    )
    assert abs(const.estimate - 0.75) < 0.01  # nothing to control: the fitted mean
    with pytest.raises(ValueError) as err:
        length_controlled_win_rate([1, 0], [1, 2], transform="log")  # type: ignore[arg-type]
    assert "length_controlled_win_rate" in str(err.value) and "'log'" in str(err.value)
    assert "'tanh'" in str(err.value)
    with pytest.raises(ValueError, match=r"wins must lie in \[0, 1\]"):
        length_controlled_win_rate([2, 0], [1, 2])
