"""Tests for scoring-format diagnostics (seed 001, "The Format is the Filter")."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from judgelab.calibration.stats._formats import (
    _PAIRWISE_MAX,
    FormatDiagnostics,
    _count_inversions,
    _sorted_by_group,
    _within_prompt,
    effective_levels,
    format_diagnostics,
    somers_d,
    tau_a,
    tau_b,
    tie_probability,
    top1_agreement,
    top_tied_share,
)

# ----------------------------------------------------------------------------- brute force


def brute_renyi(values: list[float], alpha: float) -> float:
    """D_alpha straight from the definition, one level at a time."""
    counts = Counter(values)
    total = sum(counts.values())
    p = [c / total for c in counts.values()]
    if alpha == 0:
        return float(len(p))
    if alpha == 1:
        return math.exp(-sum(pk * math.log(pk) for pk in p))
    if math.isinf(alpha):
        return 1 / max(p)
    return sum(pk**alpha for pk in p) ** (1 / (1 - alpha))


def brute_tie_probability(values: list[float]) -> float:
    """Share of ordered draws (i, j), with replacement, that tie."""
    n = len(values)
    ties = sum(values[i] == values[j] for i in range(n) for j in range(n))
    return ties / (n * n)


def brute_tau_a(x: list[float], y: list[float]) -> float:
    n = len(x)
    s = 0
    for i in range(n):
        for j in range(i + 1, n):
            s += np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])
    return s / (n * (n - 1) / 2)


def brute_top1(judge: list[float], reference: list[float]) -> float:
    """Enumerate every order in which a random tie-break can rank the candidates.

    A uniformly random permutation used as the tie-break key picks uniformly among the judge's
    top-scored candidates; averaging the hit over all permutations is the exact expectation.
    """
    k = len(judge)
    ref_top = max(reference)
    hits = 0
    perms = list(itertools.permutations(range(k)))
    for perm in perms:
        pick = max(range(k), key=lambda i: (judge[i], perm[i]))
        hits += reference[pick] == ref_top
    return hits / len(perms)


def random_scores(rng: np.random.Generator, n: int, levels: int) -> np.ndarray:
    return rng.integers(0, levels, size=n).astype(float)


# ----------------------------------------------------------------------------- effective levels


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0, 2.0, 3.0, math.inf])
def test_effective_levels_matches_definition(alpha: float) -> None:
    rng = np.random.default_rng(1)
    for _ in range(50):
        values = random_scores(rng, int(rng.integers(1, 40)), int(rng.integers(1, 7)))
        got = effective_levels(values, alpha=alpha)
        assert math.isclose(got, brute_renyi(values.tolist(), alpha), rel_tol=1e-12)


def test_tie_probability_matches_pair_count_and_inverse_d2() -> None:
    rng = np.random.default_rng(2)
    for _ in range(50):
        values = random_scores(rng, int(rng.integers(1, 30)), int(rng.integers(1, 6)))
        tp = tie_probability(values)
        assert math.isclose(tp, brute_tie_probability(values.tolist()), rel_tol=1e-12)
        assert math.isclose(effective_levels(values, alpha=2), 1 / tp, rel_tol=1e-12)


def test_effective_levels_known_values() -> None:
    # k equally used levels: D_alpha = k for every alpha
    uniform = np.repeat([10.0, 20.0, 30.0, 40.0], 5)
    for alpha in (0, 0.5, 1, 2, math.inf):
        assert math.isclose(effective_levels(uniform, alpha=alpha), 4.0, rel_tol=1e-12)
    # p = (1/2, 1/4, 1/4): sum p^2 = 3/8, D2 = 8/3; D1 = exp(1.5 log 2) = 2^1.5
    skewed = [1, 1, 2, 3]
    assert math.isclose(effective_levels(skewed), 8 / 3, rel_tol=1e-12)
    assert math.isclose(effective_levels(skewed, alpha=1), 2**1.5, rel_tol=1e-12)
    # D_alpha is non-increasing in alpha
    ds = [effective_levels(skewed, alpha=a) for a in (0, 0.5, 1, 2, 5, math.inf)]
    assert all(a >= b - 1e-12 for a, b in itertools.pairwise(ds))


def test_effective_levels_degenerate_and_parse_failures() -> None:
    assert effective_levels([3, 3, 3]) == 1.0
    assert math.isnan(effective_levels([]))
    assert math.isnan(effective_levels([np.nan, np.nan]))
    assert math.isnan(tie_probability([np.nan]))
    # nan is a parse failure: left out, not a level
    assert effective_levels([1, 2, np.nan]) == 2.0
    with pytest.raises(ValueError, match="effective_levels: alpha"):
        effective_levels([1, 2], alpha=-1)


# ----------------------------------------------------------------------------- ties at the top


def test_top_tied_share_known_value() -> None:
    scores = [5, 5, 3, 4, 2, 1, 9]
    groups = ["a", "a", "a", "b", "b", "b", "c"]
    # a: top 5 twice (tied); b: top 4 once; c: one candidate, no choice, left out
    assert top_tied_share(scores, groups) == 0.5
    assert math.isnan(top_tied_share([1, 2], ["x", "y"]))


# ----------------------------------------------------------------------------- tau and Somers


def test_count_inversions_against_double_loop() -> None:
    rng = np.random.default_rng(3)
    for n in [0, 1, 2, 3, 5, 8, 13, 31, 64, 100]:
        a = rng.integers(0, 6, size=n)
        expected = sum(a[i] > a[j] for i in range(n) for j in range(i + 1, n))
        assert _count_inversions(a) == expected


def test_tau_a_matches_brute_force_with_ties() -> None:
    rng = np.random.default_rng(4)
    for _ in range(200):
        n = int(rng.integers(2, 35))
        x = random_scores(rng, n, int(rng.integers(1, 5)))
        y = random_scores(rng, n, int(rng.integers(1, 6)))
        assert math.isclose(tau_a(x, y), brute_tau_a(x.tolist(), y.tolist()), abs_tol=1e-12)


def test_tau_a_large_input_against_vectorised_pairs() -> None:
    rng = np.random.default_rng(5)
    x = rng.integers(0, 20, size=3000).astype(float)
    y = x + rng.integers(-5, 6, size=3000)
    s = 0.0
    for start in range(0, 3000, 500):  # vectorised O(n^2), in blocks of rows
        dx = np.sign(x[start : start + 500, None] - x[None, :])
        dy = np.sign(y[start : start + 500, None] - y[None, :])
        s += float(np.sum(dx * dy))
    expected = s / 2 / (3000 * 2999 / 2)
    assert math.isclose(tau_a(x, y), expected, abs_tol=1e-12)


def test_tau_a_without_ties_equals_scipy_tau_b() -> None:
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=300), rng.normal(size=300)
    assert math.isclose(tau_a(x, y), stats.kendalltau(x, y).statistic, abs_tol=1e-12)


def test_tau_a_degenerate() -> None:
    assert math.isnan(tau_a([1.0], [2.0]))
    assert tau_a([1, 1, 1], [1, 2, 3]) == 0.0  # all pairs tied in x: none ordered
    assert math.isclose(tau_a([1, 2, np.nan], [1, 2, 3]), 1.0)  # incomplete row dropped


def test_tau_b_and_somers_d_match_scipy() -> None:
    rng = np.random.default_rng(7)
    for _ in range(30):
        n = int(rng.integers(3, 60))
        judge = random_scores(rng, n, 3)
        ref = random_scores(rng, n, 6)
        if np.unique(judge).size < 2 or np.unique(ref).size < 2:
            continue
        assert math.isclose(
            tau_b(judge, ref), stats.kendalltau(judge, ref, variant="b").statistic, abs_tol=1e-9
        )
        assert math.isclose(
            somers_d(judge, ref), stats.somersd(ref, judge).statistic, abs_tol=1e-9
        )


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # scipy's p-value of a constant judge
def test_within_prompt_equals_per_prompt_scipy_calls() -> None:
    # Prompts of 1..8 candidates (ties, constant judges and references among them) and three
    # past the pairwise limit; every value must be exactly what the per-prompt calls give.
    rng = np.random.default_rng(12)
    sizes = np.r_[rng.integers(1, 9, 1500), _PAIRWISE_MAX, _PAIRWISE_MAX + 1, 400]
    codes = rng.permutation(np.repeat(np.arange(sizes.size), sizes))
    judge = rng.integers(0, 3, codes.size).astype(float)
    ref = rng.integers(0, 5, codes.size).astype(float)
    judge[codes % 7 == 0] = 2.0  # a constant judge on some prompts
    got = _within_prompt(judge, ref, codes)
    _, starts, (j, r) = _sorted_by_group(codes, judge, ref)
    for g, (lo, hi) in enumerate(zip(starts, np.r_[starts[1:], j.size], strict=True)):
        jg, rg = j[lo:hi], r[lo:hi]
        if hi - lo < 2:
            assert all(math.isnan(got[name][g]) for name in got)
            continue
        assert got["tau_a"][g] == tau_a(jg, rg)
        tb = stats.kendalltau(jg, rg, variant="b").statistic
        assert got["tau_b"][g] == tb or (math.isnan(got["tau_b"][g]) and math.isnan(tb))
        sd = somers_d(jg, rg)
        assert got["somers_d"][g] == sd or (math.isnan(got["somers_d"][g]) and math.isnan(sd))
    assert np.isnan(got["somers_d"]).sum() > 100  # constant references were exercised
    assert (got["somers_d"] == 0).sum() > 100  # and constant judges


def test_somers_d_direction_penalises_judge_ties() -> None:
    judge = [0, 0, 1, 1]  # binary: ties within each half
    reference = [1, 2, 3, 4]
    # reference orders all 6 pairs; judge agrees on the 4 cross-half pairs, ties 2: D = 4/6
    assert math.isclose(somers_d(judge, reference), 4 / 6, rel_tol=1e-12)
    # the other direction drops the judge-tied pairs and would report a perfect 1
    assert math.isclose(stats.somersd(judge, reference).statistic, 1.0)
    assert math.isnan(somers_d([1, 2, 3], [5, 5, 5]))  # constant reference: undefined
    # a judge that ties everything orders none of the reference's pairs: 0, not dropped
    assert somers_d([3, 3, 3], [1, 2, 3]) == 0.0


def test_tau_b_ranks_binary_best_while_tau_a_ranks_it_last() -> None:
    # The seed's point, on ten candidates with reference ranks 1..10.
    reference = np.arange(1.0, 11.0)
    # binary judge: accepts the top half, never wrong about which half.
    # tau_a = 25/45 = 0.556; tau_b = 25 / sqrt(25 * 45) = 0.745
    binary = (reference > 5).astype(float)
    # fine-grained judge: no ties, 3 + 4 = 7 discordant pairs (C=38, D=7):
    # tau_a = tau_b = 31/45 = 0.689
    numeric = np.array([4, 1, 2, 3, 5, 10, 6, 7, 8, 9], dtype=float) * 10
    assert math.isclose(tau_a(binary, reference), 25 / 45)
    assert math.isclose(tau_b(binary, reference), 25 / math.sqrt(25 * 45))
    assert math.isclose(tau_a(numeric, reference), 31 / 45)
    assert math.isclose(tau_b(numeric, reference), 31 / 45)
    assert tau_b(binary, reference) > tau_b(numeric, reference)  # tau_b: binary wins
    assert tau_a(binary, reference) < tau_a(numeric, reference)  # tau_a: binary loses


# ----------------------------------------------------------------------------- top-1


def test_top1_exact_matches_enumeration() -> None:
    rng = np.random.default_rng(8)
    judge_all, ref_all, groups, expected = [], [], [], []
    for g in range(40):
        k = int(rng.integers(2, 6))
        j = random_scores(rng, k, 3).tolist()
        r = random_scores(rng, k, 3).tolist()
        judge_all += j
        ref_all += r
        groups += [g] * k
        expected.append(brute_top1(j, r))
        one = top1_agreement(j, r, [0] * k)
        assert math.isclose(one, expected[-1], abs_tol=1e-12)
    got = top1_agreement(judge_all, ref_all, groups)
    assert math.isclose(got, float(np.mean(expected)), abs_tol=1e-12)


def test_top1_exact_agrees_with_monte_carlo() -> None:
    rng = np.random.default_rng(9)
    groups = np.repeat(np.arange(60), 4)
    judge = random_scores(rng, 240, 2)  # binary: many ties to break
    ref = random_scores(rng, 240, 4)
    exact = top1_agreement(judge, ref, groups)
    simulated = top1_agreement(judge, ref, groups, exact=False, n_draws=4000, rng=0)
    # 60 prompts x 4000 draws: Monte Carlo sd of the mean is below 0.004
    assert abs(exact - simulated) < 0.01
    assert simulated == top1_agreement(judge, ref, groups, exact=False, n_draws=4000, rng=0)


def test_top1_known_values_and_degenerate() -> None:
    # judge ties 3 at the top, one of them is the reference's best: 1/3
    assert math.isclose(top1_agreement([1, 1, 1, 0], [1, 2, 3, 4], [0] * 4), 0.0)
    assert math.isclose(top1_agreement([1, 1, 1, 0], [4, 2, 3, 1], [0] * 4), 1 / 3)
    assert math.isnan(top1_agreement([1, 2], [1, 2], ["a", "b"]))  # no prompt with a choice
    with pytest.raises(ValueError, match="top1_agreement: n_draws"):
        top1_agreement([1, 2], [1, 2], [0, 0], exact=False, n_draws=0)


# ----------------------------------------------------------------------------- all at once


def simulated_pool(rng: np.random.Generator, n_prompts: int = 300, k: int = 4) -> dict:
    """One latent quality per candidate; a reference and three formats that read it noisily."""
    groups = np.repeat(np.arange(n_prompts), k)
    quality = rng.normal(size=n_prompts * k)
    reference = np.round(quality * 2 + rng.normal(scale=0.5, size=quality.size), 1)
    noisy = quality + rng.normal(scale=0.6, size=quality.size)
    binary = (noisy > -0.3).astype(float)  # ACCEPT for most: the top ties a lot
    likert5 = np.clip(np.round(3 + noisy), 1, 5)
    # numeric100 with the judge's habit of landing on multiples of five
    numeric100 = np.clip(np.round((60 + 15 * noisy) / 5) * 5, 0, 100)
    return {
        "groups": groups,
        "reference": reference,
        "binary": binary,
        "likert5": likert5,
        "numeric100": numeric100,
    }


def test_binary_ties_more_and_resolves_less_than_numeric100() -> None:
    pool = simulated_pool(np.random.default_rng(10))
    diags = {
        name: format_diagnostics(
            pool[name], pool["reference"], pool["groups"], format_name=name,
            n_resamples=300, rng=0,
        )
        for name in ("binary", "likert5", "numeric100")
    }
    b, lk, num = diags["binary"], diags["likert5"], diags["numeric100"]
    assert b.top_tied_share > num.top_tied_share + 0.3
    assert b.d2 < lk.d2 < num.d2
    assert b.distinct_values == 2 and b.d2 <= 2
    # the structural quantities agree with their stand-alone functions
    assert num.d2 == effective_levels(pool["numeric100"])
    assert math.isclose(num.tie_probability * num.d2, 1.0)
    # the tie-aware measures rank binary last
    assert b.tau_a.estimate < num.tau_a.estimate
    assert b.somers_d.estimate < num.somers_d.estimate
    assert b.top1.estimate < num.top1.estimate
    for e in (b.tau_a, b.top1, num.somers_d):
        assert e.ci_low <= e.estimate <= e.ci_high
        assert e.n == 300


def test_format_diagnostics_parse_rate_pooled_and_determinism() -> None:
    pool = simulated_pool(np.random.default_rng(11), n_prompts=50)
    scores = pool["likert5"].copy()
    scores[:10] = np.nan  # ten replies did not parse
    d1 = format_diagnostics(scores, pool["reference"], pool["groups"], n_resamples=200, rng=3)
    d2 = format_diagnostics(scores, pool["reference"], pool["groups"], n_resamples=200, rng=3)
    assert d1 == d2
    assert isinstance(d1, FormatDiagnostics)
    assert d1.n == 190 and d1.parse_rate.n == 200
    assert d1.parse_rate.estimate == 0.95
    ci = stats.binomtest(190, 200).proportion_ci(method="wilson")
    assert math.isclose(d1.parse_rate.ci_low, ci.low) and math.isclose(d1.parse_rate.ci_high, ci.high)
    ok = ~np.isnan(scores)
    assert math.isclose(
        d1.tau_b.extra["pooled"], tau_b(scores[ok], pool["reference"][ok]), abs_tol=1e-12
    )
    # the within-prompt mean is what is reported
    per_prompt = [
        tau_a(scores[(pool["groups"] == g) & ok], pool["reference"][(pool["groups"] == g) & ok])
        for g in range(50)
    ]
    assert math.isclose(d1.tau_a.estimate, float(np.nanmean(per_prompt)), abs_tol=1e-12)
    # explicit parsed flags mark further failures
    parsed = ok.copy()
    parsed[10:20] = False
    d3 = format_diagnostics(
        scores, pool["reference"], pool["groups"], parsed=parsed, n_resamples=50, rng=0
    )
    assert d3.n == 180 and d3.parse_rate.extra["failed"] == 20
    json.dumps(d1.to_dict())


def test_format_diagnostics_degenerate_and_validation() -> None:
    all_failed = format_diagnostics(
        [np.nan, np.nan], [1.0, 2.0], [0, 0], n_resamples=10, rng=0
    )
    assert all_failed.parse_rate.estimate == 0.0
    assert math.isnan(all_failed.d2) and all_failed.top1.n == 0
    assert all_failed.to_dict()["d2"] is None
    with pytest.raises(ValueError, match="format_diagnostics: level"):
        format_diagnostics([1.0], [1.0], [0], level=95)
    with pytest.raises(ValueError, match="format_diagnostics: arguments must have the same length"):
        format_diagnostics([1.0, 2.0], [1.0], [0, 0])


def test_scored_candidates_count_every_parsed_score_not_only_those_with_a_reference() -> None:
    # No human labels yet: three distinct scores over six scored candidates, none compared.
    d = format_diagnostics([1, 2, 3, 1, 2, 3], [np.nan] * 6, [0, 0, 0, 1, 1, 1], n_resamples=10, rng=0)
    assert (d.distinct_values, d.n_scored, d.n) == (3, 6, 0)
