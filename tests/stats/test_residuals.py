"""Tests for per-family residuals, the self-preference gap, rater collapsing and provenance."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest
from scipy import stats as sps

from judgelab.calibration.stats import HumanScores, human_scores, provenance_note, rater_spread
from judgelab.calibration.stats._residuals import family_residuals, residuals_and_gap, self_preference_gap
from judgelab.calibration.stats._variance import cluster_design, design_variance


def _exact_passes(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    out = np.zeros(n)
    out[rng.permutation(n)[:k]] = 1.0
    return out


def _seed_run(judge_own: int = 79, judge_other: int = 66, seed: int = 0) -> dict:
    """Seed 000's probe: 100 tasks, one answer per family; humans pass 71 / 68."""
    rng = np.random.default_rng(seed)
    n = 100
    return {
        "judge": np.r_[_exact_passes(n, judge_own, rng), _exact_passes(n, judge_other, rng)],
        "human": np.r_[_exact_passes(n, 71, rng), _exact_passes(n, 68, rng)],
        "family": np.array(["claude"] * n + ["gpt"] * n),
        "task": np.r_[np.arange(n), np.arange(n)],
    }


# --- the seed's worked numbers ---------------------------------------------------------------


def test_seed_residuals_are_plus_8_and_minus_2_points() -> None:
    d = _seed_run()
    res = family_residuals(d["judge"], d["human"], d["family"], d["task"])
    assert set(res) == {"claude", "gpt"}
    assert math.isclose(res["claude"].estimate, 8.0, abs_tol=1e-9)
    assert math.isclose(res["gpt"].estimate, -2.0, abs_tol=1e-9)
    assert res["claude"].units == "percentage points"
    assert res["claude"].n == 100
    assert res["claude"].extra["judge_mean"] == pytest.approx(79.0, abs=1e-9)
    assert res["claude"].extra["human_mean"] == pytest.approx(71.0, abs=1e-9)
    assert res["claude"].ci_low < 8.0 < res["claude"].ci_high
    assert "100 task clusters" in res["claude"].method and "t interval" in res["claude"].method


def test_seed_gap_is_10_points() -> None:
    d = _seed_run()
    gap = self_preference_gap(d["judge"], d["human"], d["family"], d["task"])
    assert math.isclose(gap.estimate, 10.0, abs_tol=1e-9)
    assert gap.units == "percentage points"
    assert gap.n == 100
    assert "paired" in gap.method
    assert gap.extra["residual[claude]"] == pytest.approx(8.0, abs=1e-9)
    assert gap.extra["residual[gpt]"] == pytest.approx(-2.0, abs=1e-9)
    assert gap.extra["judge_mean[gpt]"] == pytest.approx(66.0, abs=1e-9)
    assert gap.extra["human_mean[claude]"] == pytest.approx(71.0, abs=1e-9)
    assert gap.ci_low < 10.0 < gap.ci_high


def test_judge_lenient_everywhere_has_no_gap() -> None:
    # The judge passes everything the humans pass plus 8 extra answers on each family.
    rng = np.random.default_rng(1)
    n = 100
    human = np.r_[_exact_passes(n, 71, rng), _exact_passes(n, 68, rng)]
    judge = human.copy()
    for start in (0, n):
        fails = np.flatnonzero(judge[start : start + n] == 0)[:8] + start
        judge[fails] = 1.0
    family = np.array(["claude"] * n + ["gpt"] * n)
    task = np.r_[np.arange(n), np.arange(n)]
    res = family_residuals(judge, human, family, task)
    assert res["claude"].estimate == pytest.approx(8.0) and res["gpt"].estimate == pytest.approx(8.0)
    gap = self_preference_gap(judge, human, family, task)
    assert gap.estimate == pytest.approx(0.0, abs=1e-9)
    assert gap.covers(0.0)
    assert gap.ci_low < 0 < gap.ci_high


def test_interval_is_the_t_interval_of_the_paired_task_totals() -> None:
    # The gap's influence per task is (r_own,t − r̄_own − (r_other,t − r̄_other)) / n: its variance
    # is the paired-difference variance / n, the interval t with n − 1 df.
    d = _seed_run()
    gap = self_preference_gap(d["judge"], d["human"], d["family"], d["task"])
    diff = 100 * ((d["judge"] - d["human"])[:100] - (d["judge"] - d["human"])[100:])
    se = diff.std(ddof=1) / math.sqrt(100)
    q = float(sps.t.ppf(0.975, 99))
    assert gap.ci_low == pytest.approx(diff.mean() - q * se) and gap.ci_high == pytest.approx(diff.mean() + q * se)
    assert gap.extra["df"] == pytest.approx(99) and gap.extra["se"] == pytest.approx(se)


def test_more_than_two_families_uses_mean_of_others() -> None:
    rng = np.random.default_rng(2)
    n = 40
    fams = ["claude", "gpt", "gemini"]
    family = np.repeat(fams, n)
    task = np.tile(np.arange(n), 3)
    judge = rng.integers(0, 2, 3 * n).astype(float)
    human = rng.integers(0, 2, 3 * n).astype(float)
    res = family_residuals(judge, human, family, task)
    gap = self_preference_gap(judge, human, family, task, own_family="gpt")
    expected = res["gpt"].estimate - (res["claude"].estimate + res["gemini"].estimate) / 2
    assert gap.estimate == pytest.approx(expected, abs=1e-9)
    assert gap.extra["other_families"] == ["claude", "gemini"]
    assert "mean of the other families" in gap.method


def test_score_scale_reports_judge_scale_points() -> None:
    judge = np.array([4, 5, 3, 4, 2, 3], dtype=float)
    human = np.array([3, 4, 3, 4, 3, 3], dtype=float)
    family = ["claude", "claude", "claude", "gpt", "gpt", "gpt"]
    task = [1, 2, 3, 1, 2, 3]
    res = family_residuals(judge, human, family, task, scale="score")
    assert res["claude"].estimate == pytest.approx(2 / 3)
    assert res["gpt"].estimate == pytest.approx(-1 / 3)
    assert res["gpt"].units == "judge scale points"
    gap = self_preference_gap(judge, human, family, task, scale="score")
    assert gap.estimate == pytest.approx(1.0)


# --- design weights --------------------------------------------------------------------------


def test_weights_give_hajek_means() -> None:
    judge = np.array([1, 0, 1, 1], dtype=float)
    human = np.array([0, 0, 1, 0], dtype=float)
    w = np.array([3.0, 1.0, 1.0, 1.0])
    res = family_residuals(judge, human, ["a"] * 4, [1, 2, 3, 4], weights=w)
    assert res["a"].estimate == pytest.approx(100 * (3 * 1 + 0 + 0 + 1) / 6)
    assert res["a"].extra["weighted"] is True
    assert res["a"].method.startswith("weighted (Hajek) mean")


def test_weighted_estimates_unbiased_under_judge_stratified_sampling() -> None:
    # Population: 20,000 answers in two families. The hand-label sample oversamples answers
    # the judge failed (inclusion 0.5) over those it passed (0.1), as a design that hunts for
    # disagreements would. The Hajek-weighted residual recovers the population residual;
    # the unweighted one is pulled toward the judge-fail stratum.
    rng = np.random.default_rng(3)
    n_pop = 20_000
    family = np.where(np.arange(n_pop) % 2 == 0, "claude", "gpt")
    task = np.arange(n_pop) // 2
    human = (rng.random(n_pop) < np.where(family == "claude", 0.7, 0.65)).astype(float)
    flip_up = rng.random(n_pop) < np.where(family == "claude", 0.3, 0.1)
    flip_down = rng.random(n_pop) < 0.1
    judge = np.where(human == 1, 1 - flip_down, flip_up).astype(float)
    truth = {f: 100 * float(np.mean((judge - human)[family == f])) for f in ("claude", "gpt")}
    pi = np.where(judge == 1, 0.1, 0.5)

    weighted, unweighted = [], []
    for _ in range(60):
        s = rng.random(n_pop) < pi
        args = (judge[s], human[s], family[s], task[s])
        w_res = family_residuals(*args, weights=1 / pi[s])
        u_res = family_residuals(*args)
        weighted.append([w_res[f].estimate for f in ("claude", "gpt")])
        unweighted.append([u_res[f].estimate for f in ("claude", "gpt")])
    w_mean = np.mean(weighted, axis=0)
    u_mean = np.mean(unweighted, axis=0)
    target = np.array([truth["claude"], truth["gpt"]])
    assert np.all(np.abs(w_mean - target) < 0.6)  # Monte Carlo error ~0.15 points
    assert np.all(np.abs(u_mean - target) > 3.0)


# --- several raters per answer ---------------------------------------------------------------


def _labels(scores: dict[str, list[float]]) -> pd.DataFrame:
    rows = [{"answer_id": a, "rater_id": f"r{i}", "score": s} for a, ss in scores.items() for i, s in enumerate(ss)]
    return pd.DataFrame(rows)


def test_human_scores_mean_and_spread() -> None:
    hs = human_scores(_labels({"a": [1, 0, 1], "b": [0, 0], "c": [1]}))
    assert isinstance(hs, HumanScores)
    assert hs.scores.to_dict() == pytest.approx({"a": 2 / 3, "b": 0.0, "c": 1.0})
    assert hs.n_raters.to_dict() == {"a": 3, "b": 2, "c": 1}
    assert hs.spread["b"] == 0.0 and hs.spread["a"] == pytest.approx(np.std([1, 0, 1]))
    assert list(hs.ratings.columns) == ["answer", "rater", "score"]


def test_majority_tie_goes_to_the_lower_score() -> None:
    hs = human_scores(
        _labels({"pass_tie": [1, 0], "pass_major": [1, 1, 0], "likert_tie": [4, 2, 4, 2, 5]}),
        rule="majority",
    )
    assert hs.scores["pass_tie"] == 0.0  # an even split is a fail
    assert hs.scores["pass_major"] == 1.0
    assert hs.scores["likert_tie"] == 2.0  # 2 and 4 tie on two votes each -> 2


def test_human_scores_drops_missing_and_rejects_duplicates() -> None:
    df = _labels({"a": [1, np.nan, 0]})
    assert human_scores(df).n_raters["a"] == 2
    dup = pd.DataFrame({"answer_id": ["a", "a"], "rater_id": ["r", "r"], "score": [1, 0]})
    with pytest.raises(ValueError, match="human_scores: rater 'r' labelled answer 'a'"):
        human_scores(dup)
    with pytest.raises(ValueError, match="lack column"):
        human_scores(df.rename(columns={"score": "verdict"}))
    with pytest.raises(ValueError, match="human_scores: unsupported rule 'median'"):
        human_scores(df, rule="median")  # type: ignore[arg-type]


def test_human_scores_degenerate_empty() -> None:
    hs = human_scores(pd.DataFrame({"answer_id": [], "rater_id": [], "score": []}))
    assert hs.scores.empty and hs.ratings.empty


def _panel(n_tasks: int, n_raters: int, per_answer: int, leniency: float, seed: int) -> dict:
    """Two families per task on a 1-5 scale; a panel of raters with persistent leniencies."""
    rng = np.random.default_rng(seed)
    n = 2 * n_tasks
    quality = 3 + rng.normal(0, 0.8, n_tasks)[np.arange(n) % n_tasks] + rng.normal(0, 0.5, n)
    lenient = rng.normal(0, leniency, n_raters)
    raters = np.argsort(rng.random((n, n_raters)), axis=1)[:, :per_answer]
    scores = np.clip(np.round(quality[:, None] + lenient[raters] + rng.normal(0, 0.5, raters.shape)), 1, 5)
    labels = pd.DataFrame({"answer": np.repeat(np.arange(n), per_answer), "rater": raters.ravel(),
                           "score": scores.ravel()})
    return {
        "judge": np.clip(np.round(quality + 0.3 + rng.normal(0, 0.5, n)), 1, 5),
        "family": np.array(["claude"] * n_tasks + ["gpt"] * n_tasks),
        "task": np.r_[np.arange(n_tasks), np.arange(n_tasks)],
        "labels": labels,
    }


def test_raters_interval_adds_the_panels_leniency_and_says_so() -> None:
    d = _panel(60, 5, 1, 0.6, 1)
    args = (d["judge"], None, d["family"], d["task"])
    panel = family_residuals(*args, scale="score", rater_level=d["labels"], interval="panel")
    raters = family_residuals(*args, scale="score", rater_level=d["labels"])
    for fam in panel:
        assert raters[fam].estimate == panel[fam].estimate
        assert raters[fam].half_width > 1.2 * panel[fam].half_width
        assert raters[fam].extra["scope"].startswith("raters like these (5 raters")
        assert panel[fam].extra["scope"] == "this panel only"
        assert raters[fam].extra["interval"].endswith("raters") and "raters like these" in raters[fam].method


def test_leniency_cancels_in_the_gap_of_a_fully_crossed_panel() -> None:
    # Every rater labels every answer of both families: a rater's leniency moves both residuals
    # alike, so the gap's rater share is zero and the two intervals coincide.
    d = _panel(40, 4, 4, 0.6, 2)
    args = (d["judge"], None, d["family"], d["task"])
    panel = self_preference_gap(*args, scale="score", rater_level=d["labels"], interval="panel")
    raters = self_preference_gap(*args, scale="score", rater_level=d["labels"])
    assert raters.ci_low == pytest.approx(panel.ci_low) and raters.ci_high == pytest.approx(panel.ci_high)
    fam = family_residuals(*args, scale="score", rater_level=d["labels"])["claude"]
    fam_panel = family_residuals(*args, scale="score", rater_level=d["labels"], interval="panel")["claude"]
    assert fam.half_width > fam_panel.half_width  # ... but not in each family's residual


def test_one_rater_cannot_generalise_and_says_so() -> None:
    d = _panel(30, 1, 1, 0.0, 3)
    res = family_residuals(d["judge"], None, d["family"], d["task"], scale="score", rater_level=d["labels"])
    assert "one rater" in res["claude"].extra["scope"]
    plain = family_residuals(d["judge"], None, d["family"], d["task"], scale="score", rater_level=d["labels"],
                             interval="panel")
    assert res["claude"].ci_low == plain["claude"].ci_low


def test_rater_spread_within_answers_matches_least_squares() -> None:
    # Brute force: the two-way fixed-effects fit by lstsq on dummy columns; the rater effects'
    # spread minus their estimation noise s² tr(C⁺), over R − 1.
    d = _panel(40, 5, 2, 0.5, 4)
    lab = d["labels"]
    spread = rater_spread(lab["answer"], lab["rater"], lab["score"])
    n_ans, n_rat = lab["answer"].max() + 1, 5
    x = np.zeros((len(lab), n_ans + n_rat - 1))
    x[np.arange(len(lab)), lab["answer"]] = 1
    for r in range(1, n_rat):
        x[lab["rater"].to_numpy() == r, n_ans + r - 1] = 1
    coef, *_ = np.linalg.lstsq(x, lab["score"].to_numpy(float), rcond=None)
    beta = np.r_[0.0, coef[n_ans:]]
    resid = lab["score"].to_numpy(float) - x @ coef
    dfe = len(lab) - np.linalg.matrix_rank(x)
    s2 = (resid**2).sum() / dfe
    cov = s2 * np.linalg.pinv(x.T @ x)[n_ans:, n_ans:]
    full = np.zeros((n_rat, n_rat))
    full[1:, 1:] = cov
    centre = np.eye(n_rat) - 1 / n_rat
    noise = np.trace(centre @ full @ centre) / (n_rat - 1)
    expected = ((beta - beta.mean()) ** 2).sum() / (n_rat - 1) - noise
    assert spread.how == "within answers"
    assert spread.variance == pytest.approx(max(expected, 0.0), rel=1e-9)


def test_rater_spread_between_raters_is_the_one_way_anova() -> None:
    d = _panel(60, 4, 1, 0.5, 5)
    lab = d["labels"]
    spread = rater_spread(lab["answer"], lab["rater"], lab["score"])
    groups = [g.to_numpy(float) for _, g in lab.groupby("rater")["score"]]
    n = np.array([g.size for g in groups])
    grand = lab["score"].mean()
    msb = sum(g.size * (g.mean() - grand) ** 2 for g in groups) / 3
    msw = sum(((g - g.mean()) ** 2).sum() for g in groups) / (n.sum() - 4)
    n0 = (n.sum() - (n**2).sum() / n.sum()) / 3
    assert spread.how == "between raters"
    assert spread.variance == pytest.approx(max((msb - msw) / n0, 0.0), rel=1e-9)


_SIZES, _POOL = np.array([5, 8, 12]), np.array([100.0, 300.0, 600.0])


def _stratified_sample() -> tuple[npt.NDArray[np.float64], npt.NDArray[np.intp], npt.NDArray[np.float64], float]:
    """``(y, stratum, weight, Hajek mean)``: 5, 8 and 12 units drawn from strata of 100, 300, 600."""
    rng = np.random.default_rng(6)
    y = np.concatenate([rng.normal(h, 1 + h, n) for h, n in enumerate(_SIZES)])
    stratum = np.repeat(np.arange(3), _SIZES)
    w = (_POOL / _SIZES)[stratum]
    return y, stratum, w, float((w @ y) / w.sum())


def test_stratified_variance_is_the_textbook_stratified_mean_variance() -> None:
    # Units sampled within strata, weight N_h / n_h: the Hajek mean is Σ W_h ȳ_h and its variance
    # Σ W_h² s_h² / n_h (no finite-population correction), W_h = N_h / N.
    y, stratum, w, mean = _stratified_sample()
    sizes, big = _SIZES, _POOL
    v, df, g, h = design_variance(w * (y - mean) / w.sum(), cluster_design(np.arange(y.size), stratum))
    share = big / big.sum()
    textbook = sum(share[k] ** 2 * y[stratum == k].var(ddof=1) / sizes[k] for k in range(3))
    assert v == pytest.approx(textbook, rel=1e-9)
    assert (g, h) == (25, 3) and 1 <= df <= 22


def test_with_weights_the_pool_shares_add_the_two_phase_between_strata_term() -> None:
    # Double sampling for stratification (Cochran 1977, §12.2): the pool is a sample of the
    # population, so its stratum shares vary too; the within-stratum part of that is already in
    # the with-replacement term, the between-strata part is Σ_h W_h (ȳ_h − ȳ)² / N.
    y, stratum, w, mean = _stratified_sample()
    big = _POOL
    psi = w * (y - mean) / w.sum()
    plain, _, _, _ = design_variance(psi, cluster_design(np.arange(y.size), stratum))
    v, _, _, _ = design_variance(psi, cluster_design(np.arange(y.size), stratum, weights=w))
    share = big / big.sum()
    between = sum(share[k] * (y[stratum == k].mean() - mean) ** 2 for k in range(3)) / big.sum()
    assert v == pytest.approx(plain + between, rel=1e-9)
    # One stratum: the Hajek mean's influence values sum to zero, so nothing is added.
    one, _, _, _ = design_variance(psi, cluster_design(np.arange(y.size), np.zeros(y.size), weights=w))
    none, _, _, _ = design_variance(psi, cluster_design(np.arange(y.size)))
    assert one == pytest.approx(none, rel=1e-12)


def test_stratified_variance_matches_the_spread_over_fresh_pools() -> None:
    # Checked against what it claims to estimate: a population -> a pool of 400 -> 25 drawn from
    # each of two strata whose means differ. Over fresh pools the estimate's variance around the
    # population mean is what the interval must cover; without the pool's term the estimated
    # variance falls short of it by about 30% here.
    rng = np.random.default_rng(7)
    n_pool, n_h, reps = 400, 50, 4000
    estimates, with_pool, without = np.empty(reps), np.empty(reps), np.empty(reps)
    for r in range(reps):
        high = rng.random(n_pool) < 0.3
        y_pool = rng.normal(np.where(high, 3.0, 0.0), 1.0)
        picks = [rng.choice(np.flatnonzero(high == s), n_h, replace=False) for s in (False, True)]
        rows = np.concatenate(picks)
        stratum = np.repeat([0, 1], n_h)
        w = np.repeat([(~high).sum() / n_h, high.sum() / n_h], n_h)
        y = y_pool[rows]
        est = (w @ y) / w.sum()
        psi = w * (y - est) / w.sum()
        estimates[r] = est
        with_pool[r] = design_variance(psi, cluster_design(np.arange(2 * n_h), stratum, weights=w))[0]
        without[r] = design_variance(psi, cluster_design(np.arange(2 * n_h), stratum))[0]
    truth = 0.3 * 3.0
    actual = float(np.mean((estimates - truth) ** 2))
    assert with_pool.mean() / actual == pytest.approx(1.0, abs=0.06)
    assert without.mean() / actual < 0.8


def test_clusters_must_nest_in_strata() -> None:
    with pytest.raises(ValueError, match="cluster 1 spans more than one stratum"):
        family_residuals([1, 0, 1], [1, 1, 0], ["a", "a", "a"], [1, 1, 2], strata=["x", "y", "y"])


def test_majority_rule_and_positional_answers() -> None:
    d = _panel(30, 3, 3, 0.0, 6)
    lab = d["labels"].assign(score=(d["labels"]["score"] >= 4).astype(float))
    human = lab.groupby("answer")["score"].agg(lambda s: float(s.sum() > s.size / 2)).to_numpy()
    judge = (d["judge"] >= 4).astype(float)
    res = family_residuals(judge, human, d["family"], d["task"], rater_level=lab, rule="majority")
    assert np.isfinite(res["gpt"].ci_low)
    with pytest.raises(ValueError, match="disagree with rater_level"):
        family_residuals(judge, human, d["family"], d["task"], rater_level=lab, rule="mean")


def test_rater_level_must_cover_every_answer() -> None:
    d = _panel(10, 2, 2, 0.0, 7)
    partial = d["labels"].iloc[2:]
    with pytest.raises(ValueError, match="1 answer\\(s\\) have no rows"):
        family_residuals(d["judge"], None, d["family"], d["task"], scale="score", rater_level=partial)


@pytest.mark.parametrize("interval", ["raters", "panel"])
def test_residuals_and_gap_equal_the_two_functions(interval: str) -> None:
    d = _panel(30, 4, 2, 0.4, 8)
    w = np.random.default_rng(8).uniform(0.5, 2.0, d["judge"].size)
    common: dict[str, Any] = {"scale": "score", "weights": w, "rater_level": d["labels"], "interval": interval}
    args = (d["judge"], None, d["family"], d["task"])
    families, gap = residuals_and_gap(*args, own_family="claude", **common)
    assert families == family_residuals(*args, **common)
    assert gap == self_preference_gap(*args, own_family="claude", **common)
    with pytest.raises(ValueError, match="residuals_and_gap: own_family 'mistral' has no answers"):
        residuals_and_gap(*args, own_family="mistral", **common)


# --- degenerate cases and validation ---------------------------------------------------------


def test_degenerate_single_task_gives_nan_interval() -> None:
    res = family_residuals([1, 0], [0, 0], ["claude", "gpt"], ["t", "t"])
    assert res["claude"].estimate == 100.0 and math.isnan(res["claude"].ci_low)
    gap = self_preference_gap([1, 0], [0, 0], ["claude", "gpt"], ["t", "t"])
    assert gap.estimate == 100.0 and math.isnan(gap.ci_low) and math.isnan(gap.ci_high)


def test_a_sample_with_no_disagreement_gets_the_rule_of_three_not_nan() -> None:
    # 30 tasks on which the judge and the human agree on every answer: the old interval was
    # "+nan to +nan ... over 0 paired task clusters". The data cannot tell a disagreement rate of
    # 0 from 3 in 30, so the variance is that of 3 disagreements by one verdict in 30 units.
    rng = np.random.default_rng(5)
    human = (rng.random(60) < 0.6).astype(float)
    family = np.array(["claude", "gpt"] * 30)
    task = np.repeat(np.arange(30), 2)
    gap = self_preference_gap(human, human, family, task)
    se = math.sqrt(3 * 100**2 / 30**2)
    q = float(sps.t.ppf(0.975, 29))
    assert gap.estimate == 0 and gap.ci_low == pytest.approx(-q * se) and gap.ci_high == pytest.approx(q * se)
    assert "over 30 paired task clusters (at the rule of three's floor: as if 3 of 30 had disagreed)" in gap.method
    res = family_residuals(human, human, family, task)
    assert res["gpt"].ci_high == pytest.approx(q * se) and "over 30 task clusters" in res["gpt"].method
    # Scores: by one scale point.
    score = family_residuals(human + 3, human + 3, family, task, scale="score")
    assert score["claude"].ci_high == pytest.approx(q * math.sqrt(3 / 30**2))
    # Disagreements as large as those seen: half a verdict where two raters' labels are averaged.
    half = np.where(np.arange(60) == 0, 0.5, human)
    assert family_residuals(human, half, family, task)["claude"].extra["se"] == pytest.approx(se / 2)


def test_a_floor_the_data_exceed_changes_nothing() -> None:
    d = _seed_run()
    gap = self_preference_gap(d["judge"], d["human"], d["family"], d["task"])
    assert "floor" not in gap.method


@pytest.mark.slow
def test_a_judge_that_rarely_disagrees_gets_intervals_that_hold_on_a_small_sample() -> None:
    # A judge agreeing with people on 95% of answers, 30 tasks fully labelled (the active suite's
    # pool model, one human per answer). Before the floor: the gap covered 91.5%, the own family's
    # residual 88.0% and the other's 61.0%, with no interval at all for 25% of the residuals.
    # With it (1,000 runs): 98.8%, 99.7%, 99.7%; at 100 tasks 94.7%, 96.7%, 97.2%.
    from judgelab.calibration.active import pool_model, simulate_pool

    model = pool_model(0.95)
    truth = model.truths()
    reps = 1000
    hits = {"gap": 0, "own": 0, "other": 0}
    for rep in range(reps):
        sim = simulate_pool(model, 30, np.random.default_rng([51, rep, 30]))
        pool = sim.pool
        task = pool.task_id[pool.task]
        families, gap = residuals_and_gap(pool.judge_pass, sim.human_pass, pool.family, task, own_family="own",
                                          interval="panel")
        hits["gap"] += gap.covers(truth["gap (pass)"])
        for name in ("own", "other"):
            hits[name] += families[name].covers(truth[f"residual {name} (pass)"])
    coverage = {k: v / reps for k, v in hits.items()}
    assert min(coverage.values()) >= 0.95, coverage


def test_gap_needs_own_and_other_family() -> None:
    with pytest.raises(ValueError, match="own_family 'claude' has no answers"):
        self_preference_gap([1, 0], [1, 0], ["gpt", "gemini"], [1, 2])
    with pytest.raises(ValueError, match="at least one family besides"):
        self_preference_gap([1, 0], [1, 0], ["claude", "claude"], [1, 2])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"scale": "likert"}, "family_residuals: unsupported scale 'likert'; expected one of"),
        ({"judge": [1, 0.5, 0]}, "0/1"),
        ({"judge": [1, np.nan, 0]}, "drop unscored"),
        ({"human": [1, 2, 0]}, r"\[0, 1\]"),
        ({"weights": [1, -1, 1]}, "non-negative"),
        ({"weights": [0, 1, 1]}, "zero total weight"),
        ({"task": [1, 2]}, "one entry per answer"),
        ({"human": None}, "rater_level"),
        ({"level": 0}, "level"),
    ],
)
def test_bad_input_raises(kwargs: dict, match: str) -> None:
    args = {"judge": [1, 0, 1], "human": [1, 0, 0], "family": ["a", "b", "b"], "task": [1, 2, 3]}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        family_residuals(args.pop("judge"), args.pop("human"), args.pop("family"), args.pop("task"), **args)


# --- provenance ------------------------------------------------------------------------------


def test_provenance_human_written_is_not_a_bound() -> None:
    note = provenance_note([("rubric", "human", "alice"), ("few-shot 1", "model", "gpt-4o")], judge_family="claude")
    assert note.bound is None and note.own_family_artifacts == ()


def test_provenance_own_family_reference_makes_upper_bound() -> None:
    note = provenance_note(
        [("rubric", "human", "alice"), ("reference answer 3", "model", "Claude-Opus-5")],
        judge_family="claude",
    )
    assert note.bound == "upper"
    assert note.own_family_artifacts == ("reference answer 3",)
    assert "upper bound" in note.reason


def test_provenance_unknown_author_and_mapping_records() -> None:
    note = provenance_note([{"artifact": "rubric", "author_kind": "unknown", "author": ""}], judge_family="claude")
    assert note.bound == "upper" and note.unknown_artifacts == ("rubric",)
    # "claudette" is not the claude family
    assert provenance_note([("r", "model", "claudette")], judge_family="claude").bound is None


def test_provenance_degenerate_no_records_is_unchecked() -> None:
    note = provenance_note([], judge_family="claude")
    assert note.bound == "upper" and "not checked" in note.reason


def test_provenance_bad_kind_and_gap_field() -> None:
    with pytest.raises(ValueError, match="provenance_note: unsupported author_kind 'robot'"):
        provenance_note([("rubric", "robot", "x")], judge_family="claude")
    d = _seed_run()
    gap = self_preference_gap(
        d["judge"],
        d["human"],
        d["family"],
        d["task"],
        provenance=[("rubric", "model", "claude-sonnet")],
    )
    assert gap.extra["bound"] == "upper" and "rubric" in gap.extra["bound_reason"]


# --- coverage --------------------------------------------------------------------------------


@pytest.mark.slow
def test_gap_interval_coverage_is_nominal() -> None:
    # 2,000 seeded replications x 150 tasks (one answer per family), 500 bootstrap resamples
    # each. Per task a shared difficulty u ~ U(-0.2, 0.2); humans pass with probability
    # 0.70 + u (claude) and 0.65 + u (gpt). The judge turns a human fail into a pass with
    # probability q0 and a human pass into a fail with q1: claude (0.30, 0.05), gpt (0.10, 0.10).
    # True residual = (1 - p) q0 - p q1 (linear in p, so the mean over u is exact):
    # claude 0.3*0.3 - 0.7*0.05 = 0.055, gpt 0.35*0.1 - 0.65*0.1 = -0.03; true gap 8.5 points.
    rng = np.random.default_rng(0)
    n_tasks, reps = 150, 2000
    truth = 100 * ((0.3 * 0.3 - 0.7 * 0.05) - (0.35 * 0.1 - 0.65 * 0.1))
    family = np.array(["claude"] * n_tasks + ["gpt"] * n_tasks)
    task = np.r_[np.arange(n_tasks), np.arange(n_tasks)]
    q0 = np.where(family == "claude", 0.30, 0.10)
    q1 = np.where(family == "claude", 0.05, 0.10)
    base = np.where(family == "claude", 0.70, 0.65)
    hits = 0
    for _ in range(reps):
        u = rng.uniform(-0.2, 0.2, n_tasks)[task]
        human = (rng.random(2 * n_tasks) < base + u).astype(float)
        flip = rng.random(2 * n_tasks) < np.where(human == 1, q1, q0)
        judge = np.where(flip, 1 - human, human)
        gap = self_preference_gap(judge, human, family, task)
        hits += gap.covers(truth)
    coverage = hits / reps
    print(f"coverage of the 95% gap interval: {coverage:.3f}")
    assert 0.93 <= coverage <= 0.97
