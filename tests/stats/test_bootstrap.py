"""Tests for the shared task-clustered bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from judgelab.calibration.stats._bootstrap import (
    as_rng,
    check_choice,
    cluster_bootstrap,
    cluster_count_blocks,
    cluster_counts,
    percentile_interval,
    weighted_mean,
)


def _clustered_data(n_tasks: int, per_task: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    tasks = np.repeat(np.arange(n_tasks), per_task)
    task_effect = rng.normal(0, 1, n_tasks)[tasks]
    return tasks, task_effect + rng.normal(0, 0.2, tasks.size)


def test_counts_rows_sum_to_number_of_clusters() -> None:
    counts = cluster_counts(7, 50, np.random.default_rng(0))
    assert counts.shape == (50, 7)
    assert (counts.sum(axis=1) == 7).all()


@pytest.mark.parametrize("max_cells", [1, 7, 50, 10_000])
def test_count_blocks_are_the_rows_of_cluster_counts(max_cells: int) -> None:
    # Drawn a block at a time, the draws are the same as all at once.
    whole = cluster_counts(7, 50, np.random.default_rng(4))
    blocks = list(cluster_count_blocks(7, 50, np.random.default_rng(4), max_cells=max_cells))
    assert blocks[0][0] == 0 and blocks[-1][1] == 50
    assert all(stop - start == counts.shape[0] for start, stop, counts in blocks)
    np.testing.assert_array_equal(np.concatenate([counts for _, _, counts in blocks]), whole)


def test_int_seed_is_deterministic() -> None:
    tasks, x = _clustered_data(30, 3, 0)
    a = cluster_bootstrap(weighted_mean, tasks, x, n_resamples=300, rng=5)
    b = cluster_bootstrap(weighted_mean, tasks, x, n_resamples=300, rng=5)
    assert a[:2] == b[:2]
    np.testing.assert_array_equal(a[2], b[2])


def test_weights_and_rows_modes_agree_exactly() -> None:
    # Same seed -> same cluster counts -> same multiset of rows -> same mean.
    tasks, x = _clustered_data(20, 4, 1)
    _, _, by_w = cluster_bootstrap(weighted_mean, tasks, x, n_resamples=200, rng=3)
    _, _, by_r = cluster_bootstrap(
        lambda v: v.mean(), tasks, x, n_resamples=200, rng=3, resample="rows"
    )
    np.testing.assert_allclose(by_w, by_r, atol=1e-12)


def test_clustering_widens_interval_for_correlated_rows() -> None:
    tasks, x = _clustered_data(40, 10, 2)
    lo_c, hi_c, _ = cluster_bootstrap(weighted_mean, tasks, x, rng=0)
    lo_i, hi_i, _ = cluster_bootstrap(weighted_mean, None, x, rng=0)
    assert (hi_c - lo_c) > 2 * (hi_i - lo_i)


def test_unclustered_matches_scipy_bootstrap() -> None:
    # With clusters=None this is the ordinary percentile bootstrap; compare with SciPy's.
    x = np.random.default_rng(4).exponential(size=200)
    lo, hi, _ = cluster_bootstrap(weighted_mean, None, x, n_resamples=4000, rng=0)
    ref = stats.bootstrap((x,), np.mean, n_resamples=4000, method="percentile", random_state=1)
    assert lo == pytest.approx(ref.confidence_interval.low, abs=0.02)
    assert hi == pytest.approx(ref.confidence_interval.high, abs=0.02)


def test_a_large_input_with_thousands_of_clusters() -> None:
    # How long it takes is measured by bench/cluster_bootstrap.py, not asserted here.
    rng = np.random.default_rng(0)
    tasks = rng.integers(0, 5000, 100_000)
    x = rng.normal(size=100_000)
    lo, hi, reps = cluster_bootstrap(weighted_mean, tasks, x, n_resamples=2000, rng=1)
    assert reps.shape == (2000,)
    assert lo < x.mean() < hi


def test_nan_replicates_are_ignored_by_interval() -> None:
    reps = np.array([np.nan, 1.0, 2.0, 3.0, np.nan])
    assert percentile_interval(reps, 0.5) == (1.5, 2.5)
    assert np.isnan(percentile_interval([np.nan], 0.95)[0])


def test_degenerate_single_cluster_gives_nan_interval() -> None:
    lo, hi, reps = cluster_bootstrap(weighted_mean, [7, 7, 7], [1.0, 2.0, 3.0], rng=0)
    assert np.isnan(lo) and np.isnan(hi)
    np.testing.assert_allclose(reps, 2.0)


def test_degenerate_no_rows_raises() -> None:
    with pytest.raises(ValueError, match="no rows"):
        cluster_bootstrap(weighted_mean, [], np.array([]))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"level": 1.5}, "level"),
        ({"n_resamples": 0}, "n_resamples"),
        ({"resample": "cells"}, "'cells'.*'weights', 'rows'"),
    ],
)
def test_bad_options_name_function_and_value(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=f"cluster_bootstrap.*{match}"):
        cluster_bootstrap(weighted_mean, None, [1.0, 2.0], **kwargs)


def test_unequal_lengths_raise() -> None:
    with pytest.raises(ValueError, match="first dimension"):
        cluster_bootstrap(lambda a, b, weights: weights @ a, None, [1.0, 2.0], [1.0])


def test_stat_fn_wrong_shape_raises() -> None:
    with pytest.raises(ValueError, match="one value per"):
        cluster_bootstrap(lambda a, weights: 1.0 + 0 * a, None, [1.0, 2.0, 3.0], n_resamples=5)


def test_as_rng_and_check_choice() -> None:
    g = np.random.default_rng(1)
    assert as_rng(g) is g
    assert as_rng(3).integers(100) == np.random.default_rng(3).integers(100)
    with pytest.raises(TypeError):
        as_rng("seed")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"f: unsupported scale 'x'; expected one of 'a', 'b'"):
        check_choice("f", "scale", "x", ("a", "b"))
