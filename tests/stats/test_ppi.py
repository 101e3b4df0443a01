"""Tests for prediction-powered (PPI / PPI++) and classical means."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judgelab.calibration.stats._ppi import classical_mean, ppi_mean


def _draw(
    rng: np.random.Generator, n: int, big_n: int, flip: float, p: float = 0.6
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Human pass labels with rate ``p``; the judge flips each with probability ``flip``."""
    y = (rng.random(n + big_n) < p).astype(float)
    f = np.where(rng.random(n + big_n) < flip, 1 - y, y)
    return y[:n], f[:n], f[n:]


def test_lambda_zero_is_classical() -> None:
    y, f, fu = _draw(np.random.default_rng(0), 150, 2000, 0.2)
    ppi = ppi_mean(y, f, fu, lam=0)
    cls = classical_mean(y)
    assert (ppi.estimate, ppi.ci_low, ppi.ci_high) == pytest.approx((cls.estimate, cls.ci_low, cls.ci_high), abs=1e-12)
    assert ppi.method.startswith("classical mean (λ=0)")


def test_lambda_one_is_plain_ppi_formula() -> None:
    y, f, fu = _draw(np.random.default_rng(1), 150, 2000, 0.2)
    est = ppi_mean(y, f, fu, lam=1)
    # θ = mean(f̃) + mean(Y − f); var = Var(f̃)/N + Var(Y − f)/n; 95% z = 1.959964.
    theta = fu.mean() + (y - f).mean()
    se = math.sqrt(fu.var(ddof=1) / fu.size + (y - f).var(ddof=1) / y.size)
    assert est.estimate == pytest.approx(theta, abs=1e-12)
    assert est.ci_low == pytest.approx(theta - 1.959964 * se, abs=1e-6)
    assert est.extra["rectifier"] == pytest.approx((y - f).mean())
    assert est.method.startswith("PPI mean (λ=1)")


def test_tuned_lambda_formula_and_extras() -> None:
    y, f, fu = _draw(np.random.default_rng(2), 200, 3000, 0.15)
    est = ppi_mean(y, f, fu, units="pass rate")
    pooled = np.concatenate([f, fu])
    cov = np.mean((y - y.mean()) * (f - f.mean()))
    lam = cov / ((1 + 200 / 3000) * pooled.var(ddof=1))
    assert est.extra["lam"] == pytest.approx(float(np.clip(lam, 0, 1)))
    assert est.units == "pass rate" and est.n == 200 and est.extra["n_unlabeled"] == 3000
    assert est.extra["classical_estimate"] == pytest.approx(y.mean())
    assert est.extra["effective_n"] > 200
    assert "PPI++" in est.method


def test_coverage_and_width_against_human_only() -> None:
    # 1,000 seeded replications: 200 labels, 5,000 judged-only answers, a judge that agrees
    # with humans 85% of the time (correlation ~0.7). Both intervals should cover the true
    # pass rate 0.6 about 95% of the time, and PPI++ should be clearly narrower.
    rng = np.random.default_rng(3)
    reps, hits_ppi, hits_cls, widths = 1000, 0, 0, []
    for _ in range(reps):
        y, f, fu = _draw(rng, 200, 5000, 0.15)
        ppi, cls = ppi_mean(y, f, fu), classical_mean(y)
        hits_ppi += ppi.covers(0.6)
        hits_cls += cls.covers(0.6)
        widths.append(ppi.half_width / cls.half_width)
    assert 0.93 <= hits_ppi / reps <= 0.97
    assert 0.93 <= hits_cls / reps <= 0.97
    assert np.mean(widths) < 0.85


def test_useless_judge_falls_back_towards_classical() -> None:
    rng = np.random.default_rng(4)
    y = (rng.random(300) < 0.5).astype(float)
    f = (rng.random(300) < 0.5).astype(float)  # independent of y
    fu = (rng.random(3000) < 0.5).astype(float)
    est = ppi_mean(y, f, fu)
    assert est.extra["lam"] < 0.2
    assert est.half_width < 1.05 * classical_mean(y).half_width


def test_clustered_variance_is_wider_for_correlated_tasks() -> None:
    rng = np.random.default_rng(5)
    n_tasks, per = 60, 5
    task_l = np.repeat(np.arange(n_tasks), per)
    task_u = np.repeat(np.arange(n_tasks), 40)
    effect_l = rng.normal(0, 1.0, n_tasks)
    y = effect_l[task_l] + rng.normal(0, 0.3, task_l.size)
    f = y + rng.normal(0, 0.5, y.size)
    fu = effect_l[task_u] + rng.normal(0, 0.6, task_u.size)
    flat = ppi_mean(y, f, fu, lam=1, units="judge scale points")
    clus = ppi_mean(y, f, fu, lam=1, clusters=(task_l, task_u), units="judge scale points")
    assert clus.estimate == flat.estimate
    assert clus.half_width > 1.5 * flat.half_width
    assert "cluster-robust" in clus.method
    cls = classical_mean(y, clusters=task_l)
    assert cls.half_width > 1.5 * classical_mean(y).half_width


def test_degenerate_constant_judge_gives_lambda_zero() -> None:
    y = np.array([1, 0, 1, 1, 0, 1], dtype=float)
    est = ppi_mean(y, np.ones(6), np.ones(50))
    assert est.extra["lam"] == 0.0 and "no information" in est.extra["reason"]
    assert est.estimate == pytest.approx(y.mean())


def test_degenerate_too_few_labels_gives_nan_interval() -> None:
    est = ppi_mean([1.0], [1.0], [1.0, 0.0, 1.0], lam=1)
    assert est.estimate == pytest.approx(1 + 2 / 3 - 1)
    assert math.isnan(est.ci_low) and math.isnan(est.ci_high)
    one = classical_mean([0.7])
    assert one.estimate == 0.7 and math.isnan(one.ci_low)
    same = classical_mean([1, 1, 1])
    assert same.ci_low == same.ci_high == 1.0  # zero-width; use proportion() for Wilson


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: ppi_mean([1], [1], []), "ppi_mean: need at least one labelled and one"),
        (lambda: ppi_mean([1, 0], [1], [1]), "yhat_labeled must match"),
        (lambda: ppi_mean([1, np.nan], [1, 0], [1]), "missing"),
        (lambda: ppi_mean([1, 0], [1, 0], [1], lam=math.inf), "lam must be a finite"),
        (lambda: ppi_mean([1, 0], [1, 0], [1], clusters=[1, 2]), "pair"),  # type: ignore[arg-type]
        (lambda: ppi_mean([1, 0], [1, 0], [1], level=2), "level"),
        (lambda: classical_mean([]), "classical_mean: no labels"),
        (lambda: classical_mean([1, 0], clusters=[1]), "one cluster id per row"),
    ],
)
def test_bad_input_raises(call, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=match):
        call()


# -- under a sample design ------------------------------------------------------------------------


def test_design_ppi_mean_formula_without_a_design() -> None:
    # λ = 1, no weights, each answer its own cluster: θ = mean(f over the pool) + mean(Y − f);
    # variance = Var(f_pool)/N + Var(Y − f)/n + 2·Cov through the labelled answers (also in the
    # pool), with the G/(G−1) factors; t interval on n − 1 df.
    from scipy import stats as sps

    from judgelab.calibration.stats import design_ppi_mean

    y, f, fu = _draw(np.random.default_rng(5), 150, 1000, 0.2)
    pool = np.r_[f, fu]
    ids_l, ids_p = np.arange(150), np.arange(pool.size)  # labelled answer i is pool answer i
    est = design_ppi_mean(y, f, pool, clusters=(ids_l, ids_p))
    rect = y - f
    assert est.estimate == pytest.approx(pool.mean() + rect.mean(), abs=1e-12)
    psi_r = (rect - rect.mean()) / 150
    psi_p = (pool - pool.mean()) / pool.size
    v = 150 / 149 * (psi_r**2).sum() + pool.size / (pool.size - 1) * (psi_p**2).sum() + 2 * (psi_r * psi_p[:150]).sum()
    q = sps.t.ppf(0.975, 149)
    assert est.ci_high - est.estimate == pytest.approx(q * math.sqrt(v), rel=1e-9)


def test_design_ppi_is_unbiased_under_judge_stratified_labels_where_ppi_mean_is_not() -> None:
    # Labels oversample answers the judge failed (inclusion 0.5 vs 0.1). Weighted PPI with the
    # pool's judge mean recovers the human pass rate; labelled-vs-unlabelled PPI does not.
    from judgelab.calibration.stats import design_ppi_mean

    rng = np.random.default_rng(6)
    n_pop = 20_000
    human = (rng.random(n_pop) < 0.6).astype(float)
    judge = np.where(rng.random(n_pop) < 0.15, 1 - human, human)
    pi = np.where(judge == 1, 0.02, 0.1)
    design, plain = [], []
    for _ in range(40):
        s = rng.random(n_pop) < pi
        design.append(design_ppi_mean(human[s], judge[s], judge, weights=1 / pi[s]).estimate)
        plain.append(ppi_mean(human[s], judge[s], judge[~s], lam=1).estimate)
    truth = human.mean()
    assert abs(np.mean(design) - truth) < 0.01
    assert abs(np.mean(plain) - truth) > 0.03


def test_design_ppi_with_labels_that_all_agree_has_a_floor_not_a_point() -> None:
    from judgelab.calibration.stats._ppi import design_ppi_mean

    # 15 labelled tasks on which the humans agree with the judge everywhere, in a pool of 100.
    rng = np.random.default_rng(4)
    pool = (rng.random(100) < 0.7).astype(float)
    y = pool[:15]
    est = design_ppi_mean(y, y, pool, lam=1.0, interval="panel")
    assert est.estimate == pytest.approx(pool.mean())
    # The rectifier is 0 on every label: its variance is that of 1 disagreement in 15, not 0.
    v_pool = pool.var(ddof=1) / 100  # no covariance: the rectifier's deviations are all 0
    se = math.sqrt(1 / 15**2 + v_pool)
    assert est.extra["se"] == pytest.approx(se) and "as if 1 of 15 had disagreed" in est.method
    assert est.extra["interval"] == "t(14), floor of 1 in 15, panel"


@pytest.mark.slow
def test_design_ppi_holds_at_15_labelled_tasks_of_a_judge_that_rarely_disagrees() -> None:
    # A judge agreeing with people on 95% of answers (the active suite's pool model), 200 tasks
    # judged, 15 labelled at random: PPI covered 84% and 81% of the families' human pass rates
    # (no interval 7% of the time). With the floor of one disagreement: 97% and 97%.
    from judgelab.calibration.active import pool_model, simulate_pool
    from judgelab.calibration.stats._ppi import design_ppi_mean

    model = pool_model(0.95)
    big = simulate_pool(model, 100_000, np.random.default_rng(999))
    truth = {f: big.human_pass[big.pool.family == f].mean() for f in ("own", "other")}
    reps, hits = 300, {"own": 0, "other": 0}
    for rep in range(reps):
        gen = np.random.default_rng([61, rep, 15])
        sim = simulate_pool(model, 200, gen)
        pool = sim.pool
        labelled = np.isin(pool.task, gen.choice(200, 15, replace=False))
        task = pool.task_id[pool.task]
        for fam in hits:
            m = pool.family == fam
            est = design_ppi_mean(sim.human_pass[m & labelled], pool.judge_pass[m & labelled], pool.judge_pass[m],
                                  clusters=(task[m & labelled], task[m]), lam=None, interval="panel")
            hits[fam] += est.covers(truth[fam])
    coverage = {k: v / reps for k, v in hits.items()}
    assert min(coverage.values()) >= 0.93, coverage
