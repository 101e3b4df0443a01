"""`compare_judges` against an independent paired computation written here with pandas and numpy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from judgelab.calibration.loop import bonferroni_level, compare_judges, make_split, mcnemar_exact

LEVELS = np.arange(1.0, 6.0)


def _data(seed: int = 0, n_tasks: int = 40, lean: float = 1.0) -> pd.DataFrame:
    """Two answers per task (families x and y); judge A is `lean` points lenient on family y."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_tasks):
        for fam in ("x", "y"):
            truth = rng.integers(1, 6)
            base = truth + rng.normal(0, 0.6)
            a = base + (lean if fam == "y" else 0.0)
            rows.append({"task": f"T{t}", "family": fam, "human": float(truth),
                         "a": float(np.clip(np.rint(a), 1, 5)), "b": float(np.clip(np.rint(base), 1, 5))})
    frame = pd.DataFrame(rows)
    for col in ("human", "a", "b"):
        frame[f"pass_{col}"] = (frame[col] >= 4).astype(float)
    return frame


def _compare(frame: pd.DataFrame, **kw: object) -> object:
    return compare_judges(frame["human"], frame["a"], frame["b"], human_pass=frame["pass_human"],
                          pass_a=frame["pass_a"], pass_b=frame["pass_b"], human_category=frame["human"],
                          family=frame["family"], tasks=frame["task"], levels=LEVELS, judge_family="x",
                          rng=3, **kw)  # type: ignore[arg-type]


def _kappa(judge: pd.Series, human: pd.Series) -> float:
    """Quadratic-weighted kappa from a pandas crosstab (the textbook formula)."""
    table = pd.crosstab(judge, human).reindex(index=LEVELS, columns=LEVELS, fill_value=0).to_numpy(float)
    table = table / table.sum()
    expected = np.outer(table.sum(1), table.sum(0))
    w = (LEVELS[:, None] - LEVELS[None, :]) ** 2 / 16
    return float(1 - (w * table).sum() / (w * expected).sum())


def _stats(frame: pd.DataFrame) -> dict[str, float]:
    """Every figure of one (resampled) frame, B minus A, computed with pandas."""
    agree = ((frame["pass_b"] == frame["pass_human"]).mean() - (frame["pass_a"] == frame["pass_human"]).mean())
    res = frame.assign(ra=frame["a"] - frame["human"], rb=frame["b"] - frame["human"])
    by_fam = res.groupby("family")[["ra", "rb"]].mean()
    out = {"agreement": 100 * agree,
           "kappa": _kappa(frame["b"], frame["human"]) - _kappa(frame["a"], frame["human"])}
    for fam, row in by_fam.iterrows():
        out[f"|residual| {fam}"] = abs(row["rb"]) - abs(row["ra"])
    gap = by_fam.loc["x"] - by_fam.loc["y"]
    out["|gap|"] = abs(gap["rb"]) - abs(gap["ra"])
    return out


def test_point_estimates_and_mcnemar_equal_an_independent_paired_computation() -> None:
    frame = _data()
    result = _compare(frame, n_resamples=200)
    expected = _stats(frame)
    assert [f.name for f in result.figures] == ["agreement", "kappa", "|residual| x", "|residual| y", "|gap|"]
    for fig in result.figures:
        assert fig.diff.estimate == pytest.approx(expected[fig.name], abs=1e-12), fig.name
    # McNemar's exact p from the binomial distribution of the discordant answers, by hand.
    right_a = frame["pass_a"] == frame["pass_human"]
    right_b = frame["pass_b"] == frame["pass_human"]
    b_only, a_only = int((right_b & ~right_a).sum()), int((right_a & ~right_b).sum())
    n = b_only + a_only
    p = min(1.0, 2 * binom.cdf(min(b_only, a_only), n, 0.5))
    assert result.mcnemar is not None
    assert (result.mcnemar.b_only, result.mcnemar.a_only) == (b_only, a_only)
    assert result.mcnemar.p_value == pytest.approx(p)


def _numpy_stats(h: np.ndarray, a: np.ndarray, b: np.ndarray, fam: np.ndarray) -> dict[str, float]:
    """The same figures as :func:`_stats` with plain numpy (fast enough to bootstrap 1500 times)."""
    hp, pa, pb = h >= 4, a >= 4, b >= 4

    def kappa(j: np.ndarray) -> float:
        table = np.zeros((5, 5))
        np.add.at(table, (j.astype(int) - 1, h.astype(int) - 1), 1.0)
        table /= table.sum()
        w = (LEVELS[:, None] - LEVELS[None, :]) ** 2 / 16
        return float(1 - (w * table).sum() / (w * np.outer(table.sum(1), table.sum(0))).sum())

    out = {"agreement": 100 * ((pb == hp).mean() - (pa == hp).mean()), "kappa": kappa(b) - kappa(a)}
    res = {}
    for f in ("x", "y"):
        m = fam == f
        res[f] = ((a - h)[m].mean(), (b - h)[m].mean())
        out[f"|residual| {f}"] = abs(res[f][1]) - abs(res[f][0])
    out["|gap|"] = abs(res["x"][1] - res["y"][1]) - abs(res["x"][0] - res["y"][0])
    return out


def test_paired_intervals_match_a_task_resampling_bootstrap_written_with_numpy() -> None:
    frame = _data(seed=1)
    result = _compare(frame, n_resamples=1500)
    h, a, b = (frame[c].to_numpy(float) for c in ("human", "a", "b"))
    fam = frame["family"].to_numpy(str)
    assert _numpy_stats(h, a, b, fam) == pytest.approx(_stats(frame))
    rng = np.random.default_rng(11)
    n_tasks = frame["task"].nunique()  # rows are task-major, two answers per task
    reps = []
    for _ in range(1500):
        rows = (2 * rng.integers(0, n_tasks, n_tasks)[:, None] + np.arange(2)).ravel()
        reps.append(_numpy_stats(h[rows], a[rows], b[rows], fam[rows]))
    boot = pd.DataFrame(reps)
    for fig in result.figures:
        lo, hi = boot[fig.name].quantile([0.025, 0.975])
        width = hi - lo
        # Two independent bootstraps of 1500 resamples: the ends agree to an eighth of the width.
        assert fig.diff.ci_low == pytest.approx(lo, abs=0.125 * width), fig.name
        assert fig.diff.ci_high == pytest.approx(hi, abs=0.125 * width), fig.name


def test_a_planted_leniency_is_found_and_no_difference_is_not_called_better() -> None:
    lenient = _compare(_data(seed=2, lean=1.0), n_resamples=500)
    assert lenient.figure("|residual| y").verdict == "B is better"
    assert lenient.figure("|residual| x").verdict == "no difference shown"
    assert lenient.verdict == "B is better"
    same = _compare(_data(seed=2, lean=0.0), n_resamples=500)
    assert same.verdict == "no difference shown"
    assert all(f.diff.estimate == 0 for f in same.figures)


def test_held_out_looks_widen_the_interval_by_bonferroni() -> None:
    frame = _data(seed=4)
    one, three = _compare(frame, n_resamples=400), _compare(frame, n_resamples=400, looks=3)
    assert three.level == pytest.approx(bonferroni_level(0.95, 3)) == pytest.approx(1 - 0.05 / 3)
    for f1, f3 in zip(one.figures, three.figures, strict=True):
        assert f3.diff.ci_low <= f1.diff.ci_low and f3.diff.ci_high >= f1.diff.ci_high
    assert three.mcnemar is not None and one.mcnemar is not None
    assert three.mcnemar.p_value == pytest.approx(min(1.0, 3 * one.mcnemar.p_value))


def test_mcnemar_without_discordant_answers_and_bad_lengths() -> None:
    assert mcnemar_exact([True, False], [True, False]).p_value == 1.0
    with pytest.raises(ValueError, match="one length"):
        mcnemar_exact([True], [True, False])


def test_the_split_holds_out_the_same_share_of_every_stratum_and_is_seeded() -> None:
    ids = [f"a{i}" for i in range(100)]
    strata = ["x"] * 60 + ["y"] * 40
    parts = make_split(ids, strata, fraction=0.3, rng=5)
    held = [a for a, p in parts.items() if p == "held-out"]
    assert sum(1 for a in held if int(a[1:]) < 60) == 18 and len(held) == 30
    assert parts == make_split(ids, strata, fraction=0.3, rng=5)
    assert parts != make_split(ids, strata, fraction=0.3, rng=6)
