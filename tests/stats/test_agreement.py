"""Tests for Cohen's kappa, Krippendorff's alpha, pairwise kappas and rater leniency."""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from judgelab.calibration.stats._agreement import KappaResult, cohen_kappa, pairwise_kappas, rater_leniency
from judgelab.calibration.stats._alpha import (
    KrippendorffLevel,
    _alpha_degenerate,
    _alpha_from_coincidences,
    _cluster_coincidences,
    krippendorff_alpha,
    level_for_scale,
)
from judgelab.calibration.stats._bootstrap import cluster_bootstrap, cluster_counts, encode_clusters

# Krippendorff's worked example (3 coders x 15 units), as in the `krippendorff` docs:
# nominal alpha = 0.691358, interval alpha = 0.810845.
KRIPP_EXAMPLE = np.array(
    [
        [np.nan] * 5 + [3, 4, 1, 2, 1, 1, 3, 3, np.nan, 3],
        [1, np.nan, 2, 1, 3, 3, 4, 3] + [np.nan] * 7,
        [np.nan, np.nan, 2, 1, 3, 4, 4, np.nan, 2, 1, 1, 3, 3, np.nan, 4],
    ]
)


# --- Cohen's kappa ---------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    pairs=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=60),
    weights=st.sampled_from([None, "linear", "quadratic"]),
)
def test_kappa_point_equals_sklearn(pairs: list[tuple[int, int]], weights: str | None) -> None:
    a, b = (np.array(v) for v in zip(*pairs, strict=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns on 0/0 before returning nan
        ref = cohen_kappa_score(a, b, weights=weights)
    got = cohen_kappa(a, b, weights=weights, n_resamples=20, rng=0)  # type: ignore[arg-type]
    if math.isnan(ref):
        assert math.isnan(got.kappa.estimate) and got.reason is not None
    else:
        assert math.isclose(got.kappa.estimate, ref, abs_tol=1e-9)


def test_kappa_sklearn_doc_example_and_confusion() -> None:
    y1 = ["negative", "positive", "negative", "neutral", "positive"]
    y2 = ["negative", "positive", "negative", "neutral", "negative"]
    res = cohen_kappa(y1, y2, rng=0)
    assert isinstance(res, KappaResult)
    assert res.kappa.estimate == pytest.approx(0.6875, abs=1e-12)
    assert res.labels == ("negative", "neutral", "positive")
    assert res.confusion.loc["positive", "negative"] == 1
    assert int(res.confusion.to_numpy().sum()) == 5
    assert res.percent_agreement.estimate == pytest.approx(0.8)
    assert res.kappa.units == "kappa" and res.percent_agreement.units == "proportion"


def test_kappa_symmetric_and_invariant_to_item_order() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(1, 6, 80)
    b = np.clip(a + rng.integers(-1, 2, 80), 1, 5)
    perm = rng.permutation(80)
    for w in (None, "linear", "quadratic"):
        k = cohen_kappa(a, b, weights=w, n_resamples=10, rng=0).kappa.estimate  # type: ignore[arg-type]
        assert cohen_kappa(b, a, weights=w, n_resamples=10, rng=0).kappa.estimate == pytest.approx(k)  # type: ignore[arg-type]
        assert cohen_kappa(a[perm], b[perm], weights=w, n_resamples=10).kappa.estimate == pytest.approx(k)  # type: ignore[arg-type]
    # Renaming categories leaves unweighted kappa unchanged.
    names = np.array(["", "e", "d", "c", "b", "a"])
    k0 = cohen_kappa(a, b, n_resamples=10).kappa.estimate
    assert cohen_kappa(names[a], names[b], n_resamples=10).kappa.estimate == pytest.approx(k0)


def test_kappa_interval_is_deterministic_and_clusters_widen_it() -> None:
    rng = np.random.default_rng(1)
    n_tasks, per = 40, 5
    task = np.repeat(np.arange(n_tasks), per)
    # Agreement depends on the task: some tasks are easy for both, some split them.
    easy = rng.random(n_tasks)[task] < 0.5
    a = rng.integers(0, 2, task.size)
    b = np.where(easy, a, rng.integers(0, 2, task.size))
    one = cohen_kappa(a, b, clusters=task, rng=3)
    two = cohen_kappa(a, b, clusters=task, rng=3)
    assert (one.kappa.ci_low, one.kappa.ci_high) == (two.kappa.ci_low, two.kappa.ci_high)
    flat = cohen_kappa(a, b, rng=3)
    assert one.kappa.half_width > flat.kappa.half_width
    assert "task clusters" in one.kappa.method
    assert one.percent_agreement.covers(one.percent_agreement.estimate)
    assert "Wilson" in flat.percent_agreement.method


def test_kappa_drops_missing_pairs() -> None:
    res = cohen_kappa([1, 0, None, 1, 0], [1, 0, 1, np.nan, 1], n_resamples=50, rng=0)
    assert res.kappa.n == 3 and res.kappa.extra["n_dropped"] == 2
    assert res.kappa.estimate == pytest.approx(cohen_kappa_score([1, 0, 0], [1, 0, 1]))


def test_kappa_degenerate_one_category_is_nan_with_reason() -> None:
    res = cohen_kappa(["pass"] * 6, ["pass"] * 6, rng=0)
    assert math.isnan(res.kappa.estimate)
    assert "expected disagreement is zero" in (res.reason or "")
    assert res.kappa.extra["reason"] == res.reason
    assert res.percent_agreement.estimate == 1.0


def test_kappa_bad_input() -> None:
    with pytest.raises(ValueError, match="cohen_kappa: unsupported weights 'cubic'; expected"):
        cohen_kappa([1, 0], [1, 0], weights="cubic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no items were rated by both"):
        cohen_kappa([np.nan], [1])
    with pytest.raises(ValueError, match="not in labels"):
        cohen_kappa([1, 2], [1, 3], labels=[1, 2])
    with pytest.raises(ValueError, match="equally long"):
        cohen_kappa([1, 2], [1])


# --- Krippendorff's alpha --------------------------------------------------------------------


def test_alpha_reference_values() -> None:
    assert krippendorff_alpha(KRIPP_EXAMPLE, level="nominal", rng=0).estimate == pytest.approx(0.691358, abs=1e-6)
    assert krippendorff_alpha(KRIPP_EXAMPLE, level="interval", rng=0).estimate == pytest.approx(0.810845, abs=1e-6)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_point_equals_krippendorff(level: str) -> None:
    rng = np.random.default_rng(2)
    for _ in range(15):
        n_raters, n_units = rng.integers(2, 5), rng.integers(5, 40)
        truth = rng.integers(1, 6, n_units)
        data = np.clip(truth + rng.integers(-1, 2, (n_raters, n_units)), 1, 5).astype(float)
        data[rng.random(data.shape) < 0.2] = np.nan
        got = krippendorff_alpha(data, level=level, n_resamples=30, rng=0)  # type: ignore[arg-type]
        ref = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert math.isclose(got.estimate, ref, abs_tol=1e-9)


def test_alpha_interval_and_determinism() -> None:
    a = krippendorff_alpha(KRIPP_EXAMPLE, level="ordinal", n_resamples=300, rng=4)
    b = krippendorff_alpha(KRIPP_EXAMPLE, level="ordinal", n_resamples=300, rng=4)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    assert a.ci_low <= a.estimate <= a.ci_high
    assert a.units == "alpha" and a.n == 12 and a.extra["reason"] is None
    clustered = krippendorff_alpha(KRIPP_EXAMPLE, level="ordinal", clusters=np.arange(15) // 3, n_resamples=300, rng=4)
    assert "unit clusters" in clustered.method


def _alpha_data(seed: int, n_raters: int = 4, n_units: int = 60) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, n_units)
    data = np.clip(truth + rng.integers(-1, 2, (n_raters, n_units)), 1, 5).astype(float)
    data[rng.random(data.shape) < 0.3] = np.nan
    return data


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_of_a_resample_is_alpha_of_summed_coincidences(level: KrippendorffLevel) -> None:
    # The coincidence matrix of a resample is the multiplicity-weighted sum of the clusters'.
    data = _alpha_data(5)
    clusters = np.arange(data.shape[1]) // 3
    codes = encode_clusters(clusters, data.shape[1], func="test")
    domain = np.unique(data[~np.isnan(data)])
    per_cluster = _cluster_coincidences(data, codes, int(codes.max()) + 1, domain)
    counts = cluster_counts(int(codes.max()) + 1, 8, np.random.default_rng(1))
    o = (per_cluster.T @ counts.T.astype(float)).T.reshape(-1, domain.size, domain.size)
    got = _alpha_from_coincidences(o, domain, level)
    for b, row in enumerate(counts):
        units = np.concatenate([np.flatnonzero(codes == g) for g in np.repeat(np.arange(row.size), row)])
        ref = krippendorff.alpha(reliability_data=data[:, units], value_domain=domain, level_of_measurement=level)
        assert got[b] == pytest.approx(ref, rel=1e-12, abs=1e-12)
    ones = np.asarray(per_cluster.sum(axis=0)).reshape(1, domain.size, domain.size)
    full = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert _alpha_from_coincidences(ones, domain, level)[0] == pytest.approx(full, rel=1e-12)


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
def test_alpha_interval_equals_resampling_units_through_krippendorff(level: KrippendorffLevel) -> None:
    # Same seed, same cluster draws: the interval equals the one from calling
    # krippendorff.alpha on every resample (degenerate resamples left out by both).
    data = _alpha_data(6, n_units=40)
    data[:, :30] = np.where(np.isnan(data[:, :30]), np.nan, 3.0)  # many resamples near-constant
    clusters = np.arange(40) // 4
    domain = np.unique(data[~np.isnan(data)])

    def stat(units: np.ndarray) -> float:
        if _alpha_degenerate(units.T) is not None:
            return math.nan
        return float(krippendorff.alpha(reliability_data=units.T, value_domain=domain, level_of_measurement=level))

    lo, hi, _ = cluster_bootstrap(stat, clusters, data.T, n_resamples=300, rng=9, resample="rows")
    got = krippendorff_alpha(data, level=level, clusters=clusters, n_resamples=300, rng=9)
    assert (got.ci_low, got.ci_high) == pytest.approx((lo, hi), rel=1e-12, abs=1e-12)


def test_alpha_degenerate_cases() -> None:
    no_pairs = np.array([[1, np.nan, 2], [np.nan, 3, np.nan]])
    est = krippendorff_alpha(no_pairs, level="nominal")
    assert math.isnan(est.estimate) and "two raters" in est.extra["reason"] and est.n == 0
    same = np.array([[2, 2, 2], [2, 2, np.nan]])
    est = krippendorff_alpha(same, level="ordinal")
    assert math.isnan(est.estimate) and "expected disagreement is zero" in est.extra["reason"]


def test_alpha_bad_input() -> None:
    with pytest.raises(
        ValueError,
        match="krippendorff_alpha: unsupported level 'likert'; expected one of 'nominal'",
    ):
        krippendorff_alpha(KRIPP_EXAMPLE, level="likert")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="raters x units"):
        krippendorff_alpha([1, 2, 3])


def test_level_for_scale() -> None:
    assert level_for_scale("binary") == "nominal"
    assert level_for_scale("likert5") == "ordinal"
    assert level_for_scale("numeric100") == "interval"
    with pytest.raises(ValueError, match="level_for_scale: unsupported scale 'stars'"):
        level_for_scale("stars")


# --- many raters -----------------------------------------------------------------------------


def _long(wide: dict[str, list[float]]) -> pd.DataFrame:
    rows = [
        {"answer_id": i, "rater_id": r, "score": v}
        for r, values in wide.items()
        for i, v in enumerate(values)
        if not (isinstance(v, float) and math.isnan(v))
    ]
    return pd.DataFrame(rows)


def test_pairwise_kappas_match_sklearn_on_overlap() -> None:
    rng = np.random.default_rng(5)
    base = rng.integers(1, 6, 50).astype(float)
    raters = {r: np.clip(base + rng.integers(-1, 2, 50), 1, 5) for r in ("ann", "bob", "cy")}
    raters["cy"][:20] = np.nan
    out = pairwise_kappas(_long({k: list(v) for k, v in raters.items()}), weights="quadratic", rng=0)
    assert list(out[["rater_a", "rater_b"]].itertuples(index=False, name=None)) == [
        ("ann", "bob"),
        ("ann", "cy"),
        ("bob", "cy"),
    ]
    cats = np.unique(np.concatenate([v[~np.isnan(v)] for v in raters.values()]))
    row = out.iloc[1]
    keep = ~np.isnan(raters["cy"])
    ref = cohen_kappa_score(raters["ann"][keep], raters["cy"][keep], labels=cats, weights="quadratic")
    assert row["kappa"] == pytest.approx(ref, abs=1e-9)
    assert row["n"] == 30 and row["ci_low"] < row["kappa"] < row["ci_high"]


def test_pairwise_kappas_degenerate_no_overlap_and_one_rater() -> None:
    df = _long({"ann": [1, 0, np.nan, np.nan], "bob": [np.nan, np.nan, 1, 0]})
    out = pairwise_kappas(df, rng=0)
    assert out.loc[0, "n"] == 0 and math.isnan(out.loc[0, "kappa"])
    assert out.loc[0, "reason"] == "no items rated by both"
    assert pairwise_kappas(_long({"ann": [1, 0]})).empty


def test_labels_must_be_unique_per_rater_item() -> None:
    df = pd.DataFrame({"answer_id": [1, 1], "rater_id": ["a", "a"], "score": [1, 0]})
    with pytest.raises(ValueError, match="pairwise_kappas: rater 'a' labelled item 1 more"):
        pairwise_kappas(df)
    with pytest.raises(ValueError, match="rater_leniency: long_labels lack column"):
        rater_leniency(df.rename(columns={"score": "s"}))


def test_rater_leniency_flags_the_generous_rater() -> None:
    rng = np.random.default_rng(6)
    base = rng.integers(1, 5, 120).astype(float)
    wide = {r: list(base + rng.normal(0, 0.3, 120)) for r in ("ann", "bob", "cy", "dee")}
    wide["dee"] = list(np.array(wide["dee"]) + 0.8)  # a full point over the others' mean
    out = rater_leniency(_long(wide), rng=0).set_index("rater")
    assert out.loc["dee", "stands_out"]
    assert out.loc["dee", "leniency"] == pytest.approx(0.8, abs=0.15)
    assert not out.loc[["ann", "bob", "cy"], "stands_out"].any()
    assert out["threshold"].iloc[0] == pytest.approx(0.1 * np.ptp(np.concatenate(list(wide.values()))))


def test_rater_leniency_threshold_gates_small_effects() -> None:
    rng = np.random.default_rng(7)
    base = rng.integers(0, 2, 2000).astype(float)
    wide = {"ann": list(base), "bob": list(base), "cy": list(base)}
    cy = np.array(wide["cy"])
    cy[np.flatnonzero(cy == 0)[:60]] = 1.0  # ~3 points more generous: clear but small
    wide["cy"] = list(cy)
    out = rater_leniency(_long(wide), n_resamples=400, rng=0).set_index("rater")
    assert out.loc["cy", "ci_low"] > 0 and not out.loc["cy", "stands_out"]  # below 0.1
    out = rater_leniency(_long(wide), threshold=0.01, n_resamples=400, rng=0).set_index("rater")
    assert out.loc["cy", "stands_out"]


def test_rater_leniency_degenerate_rater_without_shared_items() -> None:
    df = _long({"ann": [1, 2, 3, np.nan], "bob": [2, 2, 4, np.nan], "cy": [np.nan] * 3 + [5]})
    out = rater_leniency(df, rng=0).set_index("rater")
    assert out.loc["cy", "n"] == 0 and math.isnan(out.loc["cy", "leniency"])
    assert not out.loc["cy", "stands_out"]
    # ann vs bob on items 0-2: 1-2, 2-2, 3-4 -> mean -2/3
    assert out.loc["ann", "leniency"] == pytest.approx(-2 / 3)


# --------------------------------------------------------------------------------------------
# Kappa under a sample design
# --------------------------------------------------------------------------------------------


def test_design_kappa_point_equals_sklearn_with_sample_weight() -> None:
    from judgelab.calibration.stats import design_kappa

    rng = np.random.default_rng(0)
    a = rng.integers(1, 6, 120)
    b = np.clip(a + rng.integers(-1, 2, 120), 1, 5)
    w = rng.uniform(0.5, 3.0, 120)
    for weights in (None, "linear", "quadratic"):
        res = design_kappa(a, b, weights=weights, sample_weight=w, clusters=np.arange(120) // 3)
        assert res.kappa.estimate == pytest.approx(
            cohen_kappa_score(a, b, weights=weights, sample_weight=w), abs=1e-12)
        assert res.kappa.ci_low < res.kappa.estimate < res.kappa.ci_high
        assert "jackknife" in res.kappa.method and "design-weighted" in res.kappa.method


def test_design_kappa_interval_is_the_jackknife_by_brute_force() -> None:
    # Delete each cluster in turn through sklearn itself; the variance of atanh(kappa) is
    # (G − 1)/G Σ (z_(c) − z̄)², the interval tanh(atanh(κ̂) ± t_{G−1} · se).
    from scipy import stats as sps

    from judgelab.calibration.stats import design_kappa

    rng = np.random.default_rng(1)
    n = 60
    a = rng.integers(0, 2, n)
    b = np.where(rng.random(n) < 0.8, a, 1 - a)
    cluster = np.arange(n) // 2
    w = np.where(cluster % 3 == 0, 2.0, 1.0)
    res = design_kappa(a, b, sample_weight=w, clusters=cluster)
    ids = np.unique(cluster)
    z = np.array([np.arctanh(cohen_kappa_score(a[cluster != c], b[cluster != c], sample_weight=w[cluster != c]))
                  for c in ids])
    var = (ids.size - 1) / ids.size * ((z - z.mean()) ** 2).sum()
    q = sps.t.ppf(0.975, ids.size - 1)
    centre = np.arctanh(res.kappa.estimate)
    assert res.kappa.ci_low == pytest.approx(np.tanh(centre - q * np.sqrt(var)), abs=1e-9)
    assert res.kappa.ci_high == pytest.approx(np.tanh(centre + q * np.sqrt(var)), abs=1e-9)


def test_design_kappa_degenerate_one_category() -> None:
    from judgelab.calibration.stats import design_kappa

    res = design_kappa([1, 1, 1], [1, 1, 1])
    assert math.isnan(res.kappa.estimate) and res.reason is not None


def test_design_kappa_without_a_disagreement_runs_to_the_rule_of_three() -> None:
    # 60 items in 30 tasks on which the judge and the humans agree everywhere: every jackknife
    # resample has kappa 1, and the interval was "+0.999 to +0.999" around a kappa of 1.000 (it
    # did not hold its own estimate). The data cannot tell that from 3 disagreements in 60 items.
    from judgelab.calibration.stats import design_kappa

    rng = np.random.default_rng(2)
    a = rng.integers(1, 6, 60)
    cluster = np.arange(60) // 2
    res = design_kappa(a, a, clusters=cluster)
    three = a.copy()
    three[:3] = np.where(a[:3] == 5, 4, a[:3] + 1)  # 3 disagreements by one category
    assert res.kappa.estimate == 1.0 and res.kappa.ci_high == 1.0
    # The lower end is kappa with the expected (chance) agreement of these data and 3 misses.
    expected = 1 - (np.bincount(a, minlength=6) ** 2).sum() / 60**2
    assert res.kappa.ci_low == pytest.approx(1 - (3 / 60) / expected)
    assert res.kappa.ci_low == pytest.approx(cohen_kappa_score(three, a), abs=0.02)
    assert "rule of three" in res.kappa.method and res.kappa.extra["interval"] == "rule of three, panel"
    agree = res.percent_agreement
    assert (agree.estimate, agree.ci_low, agree.ci_high) == (1.0, pytest.approx(0.95), 1.0)
    # A single disagreement is data: the jackknife's interval, with its estimate inside.
    one = design_kappa(three[:1].tolist() + a[1:].tolist(), a, clusters=cluster)
    assert one.kappa.ci_low < one.kappa.estimate < one.kappa.ci_high < 1 and "rule of three" not in one.kappa.method
