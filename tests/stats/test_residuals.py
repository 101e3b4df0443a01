"""Tests for per-family residuals, the self-preference gap, rater collapsing and provenance."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from calibration.stats._bootstrap import cluster_counts
from calibration.stats._residuals import (
    HumanScores,
    _collapse,
    _collapse_panels,
    _prepare,
    _residual_replicates,
    family_residuals,
    human_scores,
    provenance_note,
    residuals_and_gap,
    self_preference_gap,
)


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
    res = family_residuals(d["judge"], d["human"], d["family"], d["task"], rng=0)
    assert set(res) == {"claude", "gpt"}
    assert math.isclose(res["claude"].estimate, 8.0, abs_tol=1e-9)
    assert math.isclose(res["gpt"].estimate, -2.0, abs_tol=1e-9)
    assert res["claude"].units == "percentage points"
    assert res["claude"].n == 100
    assert res["claude"].extra["judge_mean"] == pytest.approx(79.0, abs=1e-9)
    assert res["claude"].extra["human_mean"] == pytest.approx(71.0, abs=1e-9)
    assert res["claude"].ci_low < 8.0 < res["claude"].ci_high
    assert "task-clustered" in res["claude"].method


def test_seed_gap_is_10_points() -> None:
    d = _seed_run()
    gap = self_preference_gap(d["judge"], d["human"], d["family"], d["task"], rng=0)
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
    res = family_residuals(judge, human, family, task, rng=0)
    assert res["claude"].estimate == pytest.approx(8.0) and res["gpt"].estimate == pytest.approx(8.0)
    gap = self_preference_gap(judge, human, family, task, rng=0)
    assert gap.estimate == pytest.approx(0.0, abs=1e-9)
    assert gap.covers(0.0)
    assert gap.ci_low < 0 < gap.ci_high


def test_int_seed_is_deterministic() -> None:
    d = _seed_run()
    a = self_preference_gap(d["judge"], d["human"], d["family"], d["task"], rng=11)
    b = self_preference_gap(d["judge"], d["human"], d["family"], d["task"], rng=11)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)


def test_more_than_two_families_uses_mean_of_others() -> None:
    rng = np.random.default_rng(2)
    n = 40
    fams = ["claude", "gpt", "gemini"]
    family = np.repeat(fams, n)
    task = np.tile(np.arange(n), 3)
    judge = rng.integers(0, 2, 3 * n).astype(float)
    human = rng.integers(0, 2, 3 * n).astype(float)
    res = family_residuals(judge, human, family, task, rng=0)
    gap = self_preference_gap(judge, human, family, task, own_family="gpt", rng=0)
    expected = res["gpt"].estimate - (res["claude"].estimate + res["gemini"].estimate) / 2
    assert gap.estimate == pytest.approx(expected, abs=1e-9)
    assert gap.extra["other_families"] == ["claude", "gemini"]
    assert "mean of the other families" in gap.method


def test_score_scale_reports_judge_scale_points() -> None:
    judge = np.array([4, 5, 3, 4, 2, 3], dtype=float)
    human = np.array([3, 4, 3, 4, 3, 3], dtype=float)
    family = ["claude", "claude", "claude", "gpt", "gpt", "gpt"]
    task = [1, 2, 3, 1, 2, 3]
    res = family_residuals(judge, human, family, task, scale="score", n_resamples=200, rng=0)
    assert res["claude"].estimate == pytest.approx(2 / 3)
    assert res["gpt"].estimate == pytest.approx(-1 / 3)
    assert res["gpt"].units == "judge scale points"
    gap = self_preference_gap(judge, human, family, task, scale="score", n_resamples=200, rng=0)
    assert gap.estimate == pytest.approx(1.0)


# --- design weights --------------------------------------------------------------------------


def test_weights_give_hajek_means() -> None:
    judge = np.array([1, 0, 1, 1], dtype=float)
    human = np.array([0, 0, 1, 0], dtype=float)
    w = np.array([3.0, 1.0, 1.0, 1.0])
    res = family_residuals(judge, human, ["a"] * 4, [1, 2, 3, 4], weights=w, rng=0)
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
        w_res = family_residuals(*args, weights=1 / pi[s], n_resamples=1, rng=0)
        u_res = family_residuals(*args, n_resamples=1, rng=0)
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


def _rater_data(n_tasks: int, n_raters: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    n = 2 * n_tasks
    ids = np.array([f"ans{i}" for i in range(n)])
    labels = pd.DataFrame(
        {
            "answer_id": np.repeat(ids, n_raters),
            "rater_id": np.tile(np.arange(n_raters), n),
            "score": (rng.random(n * n_raters) < 0.6).astype(float),
        }
    )
    return {
        "judge": (rng.random(n) < 0.7).astype(float),
        "family": np.array(["claude"] * n_tasks + ["gpt"] * n_tasks),
        "task": np.r_[np.arange(n_tasks), np.arange(n_tasks)],
        "ids": ids,
        "labels": labels,
    }


def test_two_stage_with_one_rater_equals_one_stage() -> None:
    d = _rater_data(50, 1, 4)
    hs = human_scores(d["labels"])
    human = hs.scores.loc[d["ids"]].to_numpy()
    one = self_preference_gap(d["judge"], human, d["family"], d["task"], rng=7)
    two = self_preference_gap(
        d["judge"],
        None,
        d["family"],
        d["task"],
        rater_level=hs.ratings,
        answer_ids=d["ids"],
        rng=7,
    )
    assert (one.estimate, one.ci_low, one.ci_high) == (two.estimate, two.ci_low, two.ci_high)
    assert "two-stage" in two.method


def test_two_stage_carries_rater_spread_into_interval() -> None:
    # A constant judge leaves only the human side to vary, so the rater spread dominates.
    d = _rater_data(80, 5, 5)
    d["judge"] = np.ones_like(d["judge"])
    hs = human_scores(d["labels"])
    human = hs.scores.loc[d["ids"]].to_numpy()
    one = self_preference_gap(d["judge"], human, d["family"], d["task"], rng=1)
    two = self_preference_gap(
        d["judge"],
        human,
        d["family"],
        d["task"],
        rater_level=hs.ratings,
        answer_ids=d["ids"],
        rng=1,
    )
    assert two.estimate == one.estimate
    assert (two.ci_high - two.ci_low) > 1.15 * (one.ci_high - one.ci_low)


def test_two_stage_majority_rule_and_positional_answers() -> None:
    d = _rater_data(30, 3, 6)
    hs = human_scores(d["labels"], rule="majority")
    pos = {a: i for i, a in enumerate(d["ids"])}
    ratings = hs.ratings.assign(answer=hs.ratings["answer"].map(pos))
    human = hs.scores.loc[d["ids"]].to_numpy()
    res = family_residuals(
        d["judge"],
        human,
        d["family"],
        d["task"],
        rater_level=ratings,
        rule="majority",
        n_resamples=300,
        rng=0,
    )
    assert np.isfinite(res["gpt"].ci_low) and "rule='majority'" in res["gpt"].method
    with pytest.raises(ValueError, match="disagree with rater_level"):
        family_residuals(d["judge"], human, d["family"], d["task"], rater_level=ratings, rule="mean")


def test_rater_level_must_cover_every_answer() -> None:
    d = _rater_data(10, 2, 7)
    partial = human_scores(d["labels"]).ratings.iloc[2:]
    with pytest.raises(ValueError, match="1 answer\\(s\\) have no rows"):
        family_residuals(d["judge"], None, d["family"], d["task"], rater_level=partial, answer_ids=d["ids"])


# --- the vectorised bootstrap against brute force -------------------------------------------


def _panel_data(n_tasks: int, seed: int) -> dict:
    """Two answers per task, 1-4 raters each on a 1-5 scale, unequal design weights."""
    rng = np.random.default_rng(seed)
    n = 2 * n_tasks
    rows = [(a, r, float(rng.integers(1, 6))) for a in range(n) for r in rng.choice(9, rng.integers(1, 5), False)]
    return {
        "judge": rng.integers(1, 6, n).astype(float),
        "family": np.tile(["claude", "gpt"], n_tasks),
        "task": np.repeat(np.arange(n_tasks), 2),
        "weights": rng.uniform(0.5, 2.0, n),
        "ratings": pd.DataFrame(rows, columns=["answer", "rater", "score"]),
    }


def _brute_two_stage(d: dict, rule: str, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Replicates the slow way: every drawn copy of an answer draws its raters anew."""
    panels = d["ratings"].groupby("answer")["score"].apply(np.asarray)
    fam = (d["family"] == "gpt").astype(int)
    out = np.empty((2, counts.shape[0]))
    for b, row in enumerate(counts):
        num, den = np.zeros(2), np.zeros(2)
        for a, task in enumerate(d["task"]):
            for _ in range(row[task]):
                drawn = panels[a][rng.integers(0, panels[a].size, panels[a].size)]
                values, freq = np.unique(drawn, return_counts=True)
                human = drawn.mean() if rule == "mean" else values[np.argmax(freq)]  # ties: lowest
                num[fam[a]] += d["weights"][a] * (d["judge"][a] - human)
                den[fam[a]] += d["weights"][a]
        out[:, b] = num / den
    return out


@pytest.mark.parametrize("rule", ["mean", "majority"])
def test_two_stage_replicates_match_brute_force_in_distribution(rule: str) -> None:
    # Same task draws, independent rater draws: the replicate distributions must agree.
    d = _panel_data(25, 11)
    prep = _prepare(
        "t", d["judge"], None, d["family"], d["task"], "score", d["weights"], d["ratings"], None, rule, 0.95, 10
    )
    n_resamples = 3000
    fast = _residual_replicates(prep, n_resamples, np.random.default_rng(1))
    counts = cluster_counts(25, n_resamples, np.random.default_rng(1))
    slow = _brute_two_stage(d, rule, counts, np.random.default_rng(2))
    fast_gap, slow_gap = fast[0] - fast[1], slow[0] - slow[1]
    assert abs(fast_gap.mean() - slow_gap.mean()) < 0.01 * slow_gap.std()  # shared task draws
    assert fast_gap.std() == pytest.approx(slow_gap.std(), rel=0.04)
    for k in range(2):
        assert fast[k].std() == pytest.approx(slow[k].std(), rel=0.04)


def _panel_moments(scores: np.ndarray, rule: str) -> tuple[float, float]:
    """Exact mean and variance of one copy's collapsed score, over all m^m rater draws."""
    m = scores.size
    values = []
    for picks in itertools.product(range(m), repeat=m):
        drawn = scores[list(picks)]
        levels, freq = np.unique(drawn, return_counts=True)
        values.append(drawn.mean() if rule == "mean" else levels[np.argmax(freq)])
    return float(np.mean(values)), float(np.var(values))


@pytest.mark.parametrize("rule", ["mean", "majority"])
def test_copy_sums_have_the_exact_two_stage_moments(rule: str) -> None:
    # Given the task draws, every copy of an answer draws its raters independently, so the
    # copies' summed scores have mean sum(c*w*mu) and variance sum(c*w²*sigma²) per family. One
    # draw shared by an answer's copies would give sum(c²*w²*sigma²) (about twice as much), no
    # rater resampling zero.
    d = _panel_data(25, 11)
    prep = _prepare(
        "t", d["judge"], None, d["family"], d["task"], "score", d["weights"], d["ratings"], None, rule, 0.95, 10
    )
    assert prep.raters is not None
    panels = prep.raters.panels(
        np.flatnonzero(prep.raters.varying()), prep.task_codes, prep.fam_codes, prep.weights
    )
    assert sorted(p.scores.shape[1] for p in panels) == [2, 3, 4]
    counts = cluster_counts(25, 4000, np.random.default_rng(1))
    gen = np.random.default_rng(2)
    sums = np.zeros((4000, 2))
    mean = np.zeros((4000, 2))
    var = np.zeros((4000, 2))
    for p in panels:
        sums += p.copy_sums(counts, 2, gen)
        mu, sigma2 = np.array([_panel_moments(row, rule) for row in p.scores]).T
        onehot = np.eye(2)[p.fam]
        copies = counts[:, p.task]
        mean += (copies * p.weight * mu) @ onehot
        var += (copies * p.weight**2 * sigma2) @ onehot
    z = (sums - mean) / np.sqrt(var)
    assert np.abs(z.mean(axis=0)).max() < 0.06
    np.testing.assert_allclose(z.std(axis=0), 1.0, atol=0.05)


def test_one_stage_replicates_are_weighted_means_of_the_drawn_tasks() -> None:
    d = _panel_data(20, 12)
    human = d["ratings"].groupby("answer")["score"].mean().to_numpy()
    prep = _prepare(
        "t", d["judge"], human, d["family"], d["task"], "score", d["weights"], None, None, "mean", 0.95, 10
    )
    reps = _residual_replicates(prep, 200, np.random.default_rng(3))
    rows = cluster_counts(20, 200, np.random.default_rng(3))[:, d["task"]] * d["weights"]
    for k, fam in enumerate(["claude", "gpt"]):
        w = rows * (d["family"] == fam)
        np.testing.assert_allclose(reps[k], w @ (d["judge"] - human) / w.sum(axis=1), rtol=0, atol=1e-12)


def test_agreeing_raters_leave_the_one_stage_interval_unchanged() -> None:
    # Raters who agree give the same score however they are resampled: no extra draws.
    d = _rater_data(40, 3, 9)
    d["labels"]["score"] = np.repeat(d["judge"], 3)[::-1].copy()
    hs = human_scores(d["labels"])
    human = hs.scores.loc[d["ids"]].to_numpy()
    one = family_residuals(d["judge"], human, d["family"], d["task"], rng=5)
    two = family_residuals(
        d["judge"], None, d["family"], d["task"], rater_level=hs.ratings, answer_ids=d["ids"], rng=5
    )
    for fam in one:
        assert (one[fam].estimate, one[fam].ci_low, one[fam].ci_high) == (
            two[fam].estimate, two[fam].ci_low, two[fam].ci_high
        )


@pytest.mark.parametrize("rule", ["mean", "majority"])
def test_residuals_and_gap_equal_the_two_functions(rule: str) -> None:
    d = _panel_data(30, 13)
    common: dict[str, Any] = {
        "scale": "score", "weights": d["weights"], "rater_level": d["ratings"], "rule": rule,
        "n_resamples": 400, "rng": 8,
    }
    families, gap = residuals_and_gap(d["judge"], None, d["family"], d["task"], own_family="claude", **common)
    assert families == family_residuals(d["judge"], None, d["family"], d["task"], **common)
    assert gap == self_preference_gap(d["judge"], None, d["family"], d["task"], own_family="claude", **common)
    with pytest.raises(ValueError, match="residuals_and_gap: own_family 'mistral' has no answers"):
        residuals_and_gap(d["judge"], None, d["family"], d["task"], own_family="mistral", **common)


@pytest.mark.parametrize("m", [1, 2, 3, 5])
@pytest.mark.parametrize("rule", ["mean", "majority"])
def test_panel_collapse_equals_grouped_collapse(m: int, rule: str) -> None:
    panels = np.random.default_rng(m).integers(0, 4, (2000, m)).astype(float)
    grouped = _collapse(panels.reshape(1, -1), np.arange(0, panels.size, m), rule, np.unique(panels))[0]
    np.testing.assert_array_equal(_collapse_panels(panels, rule), grouped)


# --- degenerate cases and validation ---------------------------------------------------------


def test_degenerate_single_task_gives_nan_interval() -> None:
    res = family_residuals([1, 0], [0, 0], ["claude", "gpt"], ["t", "t"], rng=0)
    assert res["claude"].estimate == 100.0 and math.isnan(res["claude"].ci_low)
    gap = self_preference_gap([1, 0], [0, 0], ["claude", "gpt"], ["t", "t"], rng=0)
    assert gap.estimate == 100.0 and math.isnan(gap.ci_low) and math.isnan(gap.ci_high)


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
        n_resamples=50,
        rng=0,
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
        gap = self_preference_gap(judge, human, family, task, n_resamples=500, rng=rng)
        hits += gap.covers(truth)
    coverage = hits / reps
    print(f"coverage of the 95% gap interval: {coverage:.3f}")
    assert 0.93 <= coverage <= 0.97
