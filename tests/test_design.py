"""Tests for the hand-label sample design (:mod:`judgelab.calibration.design`) and its store tables."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import judgelab.calibration.design._model
import judgelab.calibration.design._power
from judgelab.calibration.design import (
    PlanningModel,
    allocate,
    allocation_scores,
    apply_design,
    budget_labels,
    cost_of,
    design_sample,
    design_table,
    kappa_se,
    load_pool,
    paired_sample_size,
    plan_assignments,
    planning_model,
    stratify_pool,
)
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Answer, Criterion, Rubric, Task
from judgelab.labeler.store import Store
from judgelab.labeler.store._judgements import JudgementRecord
from judgelab.labeler.timing import label_time

# -- simulated pools ------------------------------------------------------------------------------


def simulate_pool(
    n_tasks: int = 150,
    *,
    seed: int = 0,
    own_bias: float = 0.6,
    task_judge_sd: float = 0.8,
    families: tuple[str, ...] = ("claude", "gpt"),
    categories: int = 4,
) -> pd.DataFrame:
    """A pool with the human truth for every answer (``truth``) and a judge that flatters ``families[0]``.

    Latent model: an answer's quality is ``z = 0.8 + u_task + e``; humans pass it when
    ``z + noise > 0``; the judge passes it when ``z + bias + v_task + noise > 0``, where
    ``v_task`` is the judge misreading the task for every family alike (this is what makes the
    residuals of one task's answers correlate).
    """
    rng = np.random.default_rng(seed)
    u = rng.normal(0, 1, n_tasks)
    v = rng.normal(0, task_judge_sd, n_tasks)
    rows = []
    for t in range(n_tasks):
        for f in families:
            z = 0.8 + u[t] + rng.normal()
            human = float(z + rng.normal(0, 0.5) > 0)
            bias = own_bias if f == families[0] else 0.0
            judge = float(z + bias + v[t] + rng.normal(0, 0.5) > 0)
            rows.append({
                "answer_id": f"{f}-{t}", "task_id": f"t{t:04d}", "family": f,
                "category": f"c{t % categories}", "n_words": int(rng.integers(40, 400)),
                "judge_score": 1 + 4 * judge, "judge_pass": judge, "truth": human,
            })
    return pd.DataFrame(rows)


# -- allocation formulas --------------------------------------------------------------------------


def test_docstring_examples() -> None:
    attempted = 0
    for module in (judgelab.calibration.design._model, judgelab.calibration.design._power):
        result = doctest.testmod(module)
        assert result.failed == 0
        attempted += result.attempted
    assert attempted >= 3


def test_proportional_allocation_is_proportional_to_stratum_sizes() -> None:
    # N = 10, 20, 30 and n = 12: 12 * (1/6, 2/6, 3/6) = 2, 4, 6.
    a = allocation_scores("proportional", sizes=[10, 20, 30])
    assert allocate(a, 12, capacity=[10, 20, 30]).tolist() == [2, 4, 6]


def test_neyman_allocation_follows_size_times_sd() -> None:
    # N = 100, 100 and S = 1, 3: c_h = (N_h/N)² S_h² = 0.25, 2.25 -> sqrt = 0.5, 1.5,
    # so n = 40 splits 10 / 30 (n_h ∝ N_h S_h).
    n_h = np.array([100, 100])
    s_h = np.array([1.0, 3.0])
    coef = (n_h / n_h.sum()) ** 2 * s_h**2
    a = allocation_scores("neyman", sizes=n_h, total_coef=coef)
    assert allocate(a, 40, capacity=n_h).tolist() == [10, 30]


def test_gap_allocation_weights_families_by_residual_sd_not_pool_size() -> None:
    # Family A: strata N = 60, 40 (sd 0.2, 0.4); family B: one stratum N = 50 (sd 0.4).
    # c_h = (N_h/N_f)² S_h²: (0.6·0.2)², (0.4·0.4)², (1·0.4)² -> sqrt = 0.12, 0.16, 0.40.
    # n = 68: 68 · (0.12, 0.16, 0.40) / 0.68 = 12, 16, 40. Family B, with half of A's pool,
    # gets more labels than A (40 vs 28): its residual sd is larger.
    w = np.array([0.6, 0.4, 1.0])
    s = np.array([0.2, 0.4, 0.4])
    a = allocation_scores("gap", sizes=[60, 40, 50], gap_coef=(w * s) ** 2)
    assert allocate(a, 68, capacity=[60, 40, 50]).tolist() == [12, 16, 40]


def test_cost_per_label_enters_the_optimum_as_a_square_root() -> None:
    # Two strata with equal c_h but 1 and 4 labels per unit: n_h ∝ sqrt(c/m) = 1, 1/2.
    a = allocation_scores("gap", sizes=[50, 50], gap_coef=[1.0, 1.0], unit_labels=[1, 4])
    assert allocate(a, 30, capacity=[50, 50]).tolist() == [20, 10]


def test_allocate_respects_capacity_and_minimum_and_sums_to_n() -> None:
    # Shares 8·(1, 1, 8)/10 = 0.8, 0.8, 6.4; cap the third at 3, re-share 5 as 2.5 / 2.5;
    # largest remainder gives the tie to the first stratum.
    assert allocate([1, 1, 8], 8, capacity=[10, 10, 3]).tolist() == [3, 2, 3]
    # A minimum of 2 lifts the small strata; the rest goes to the big one.
    assert allocate([1, 1, 98], 20, capacity=[50, 50, 50], minimum=2).tolist() == [2, 2, 16]
    with pytest.raises(ValueError, match="outside"):
        allocate([1, 1], 30, capacity=[10, 10])


def test_unpaired_design_allocations_match_hand_computed_splits() -> None:
    # 240 answers of the judge's family, 60 of the other, all passed by the judge: one
    # stratum per family with the same modelled sd. Proportional gives 80% / 20% of 50 labels;
    # equal and gap give 25 / 25 (gap: shares ∝ Σ_h (N_h/N_f) S_h, the same for both).
    rng = np.random.default_rng(3)
    pool = pd.DataFrame({
        "answer_id": [f"a{i}" for i in range(300)],
        "task_id": [f"t{i}" for i in range(300)],
        "family": ["own"] * 240 + ["other"] * 60,
        "judge_pass": 1.0,
        "n_words": rng.integers(10, 100, 300),
    })
    counts = {}
    for method in ("proportional", "equal", "neyman", "gap"):
        d = design_sample(pool, n=50, allocation=method, strata=["family"], paired=False,
                          own_family="own", rng=0)
        counts[method] = d.strata.set_index("stratum")["n_units"].to_dict()
    assert counts["proportional"] == {"own": 40, "other": 10}
    assert counts["neyman"] == {"own": 40, "other": 10}
    assert counts["equal"] == {"own": 25, "other": 25}
    assert counts["gap"] == {"own": 25, "other": 25}


def test_gap_allocation_beats_proportional_on_gap_variance() -> None:
    # Analytic: with S equal, proportional 40/10 gives V ∝ 1/40 + 1/10 = 0.125, gap 25/25
    # gives 0.08. Simulated: the gap estimator's variance over repeated draws agrees. The pool
    # is large so the finite-population correction the plan leaves out stays below 2%.
    rng = np.random.default_rng(5)
    n_own, n_other = 2400, 600
    truth = rng.random(n_own + n_other) < 0.75
    judge = np.where(rng.random(n_own + n_other) < 0.2, ~truth, truth)
    pool = pd.DataFrame({
        "answer_id": [f"a{i}" for i in range(n_own + n_other)],
        "task_id": [f"t{i}" for i in range(n_own + n_other)],
        "family": ["own"] * n_own + ["other"] * n_other,
        "judge_pass": judge.astype(float),
    })
    resid = pd.Series(judge.astype(float) - truth, index=pool["answer_id"])
    variances = {}
    analytic = {}
    for method in ("proportional", "gap"):
        d = design_sample(pool, n=50, allocation=method, strata=["family"],
                          paired=False, own_family="own", overlap=0, rng=0)
        est = []
        for seed in range(600):
            items = d.redraw(seed)
            r = items["answer_id"].map(resid)
            means = r.groupby(items["family"]).mean()
            est.append(means["own"] - means["other"])
        variances[method] = float(np.var(est, ddof=1))
        analytic[method] = d.precision.gap_se
    ratio = analytic["gap"] ** 2 / analytic["proportional"] ** 2
    assert ratio == pytest.approx(0.08 / 0.125, rel=0.02)
    # The ratio of two variances from 600 draws each has a relative sd of about 8%.
    assert variances["gap"] < variances["proportional"]
    assert variances["gap"] / variances["proportional"] == pytest.approx(ratio, rel=0.2)


# -- inclusion probabilities and weights --------------------------------------------------------


@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize("allocation", ["proportional", "neyman", "gap", "equal"])
def test_inclusion_probabilities_sum_to_the_sample_size(paired: bool, allocation: str) -> None:
    pool = simulate_pool(120, seed=1)
    d = design_sample(pool, n=90, allocation=allocation, paired=paired,  # type: ignore[arg-type]
                      own_family="claude", rng=2)
    # Over the pool's sampling units π sums to the units drawn; over its answers (every task
    # has one answer per family) to the answers labelled.
    units = d.strata
    assert (units["N_units"] * units["inclusion_prob"]).sum() == pytest.approx(
        units["n_units"].sum())
    assert d.inclusion["inclusion_prob"].sum() == pytest.approx(len(d.items))
    assert len(d.items) == pytest.approx(90, abs=2)
    # Horvitz-Thompson: the weights of a stratum's sampled answers add up to its pool size.
    ht = d.items.groupby("stratum")["weight"].sum()
    pool_size = units.set_index("stratum")["N_answers"]
    pd.testing.assert_series_equal(ht, pool_size.loc[ht.index].astype(float),
                                   check_names=False)
    assert (d.items["weight"] == 1 / d.items["inclusion_prob"]).all()


def test_paired_design_labels_both_families_of_every_sampled_task() -> None:
    pool = simulate_pool(100, seed=2)
    d = design_sample(pool, n=60, own_family="claude", rng=0)
    per_task = d.items.groupby("task_id")["family"].nunique()
    assert (per_task == 2).all()
    # Answers of one task share their task's inclusion probability.
    assert (d.items.groupby("task_id")["inclusion_prob"].nunique() == 1).all()


def test_overlap_share_and_whole_tasks() -> None:
    pool = simulate_pool(100, seed=2)
    d = design_sample(pool, n=80, overlap=0.25, own_family="claude", rng=0)
    assert d.items["is_overlap"].mean() == pytest.approx(0.25, abs=0.03)
    assert (d.items.groupby("task_id")["is_overlap"].nunique() == 1).all()
    assert (d.items.loc[d.items["is_overlap"], "n_raters"] == 2).all()
    assert d.cost.ratings == len(d.items) + int(d.items["is_overlap"].sum())


def test_a_small_budget_coarsens_the_strata_instead_of_leaving_them_empty() -> None:
    # 4 categories x 4 judge-verdict profiles = 16 task strata need 32 tasks; 30 labels draw 15.
    pool = simulate_pool(200, seed=2)
    d = design_sample(pool, n=30, own_family="claude", rng=0)
    assert d.params["strata_used"] == ["family", "judge_bin"]
    assert any("dropped 'category'" in note for note in d.notes)
    assert (d.strata["n_units"] >= 2).all()
    assert d.inclusion["inclusion_prob"].gt(0).all()  # every answer can be drawn


def test_redraw_keeps_the_strata_counts() -> None:
    pool = simulate_pool(100, seed=2)
    d = design_sample(pool, n=60, own_family="claude", rng=0)
    again = d.redraw(1)
    tasks = again.drop_duplicates("task_id").groupby("stratum").size()
    expected = d.strata.set_index("stratum")["n_units"]
    pd.testing.assert_series_equal(tasks, expected[expected > 0], check_names=False)
    assert set(again["answer_id"]) != set(d.items["answer_id"])


def test_weighted_estimates_are_unbiased_where_unweighted_are_not() -> None:
    # The judge fails answers reliably (humans agree 98%) but passes them loosely (humans
    # disagree 40%); Neyman over judge-verdict strata, planned from a pilot, oversamples the
    # pass stratum. The unweighted mean residual is then pulled towards the pass stratum's
    # +0.4; the Hajek mean with weights 1/π is not.
    rng = np.random.default_rng(11)
    n = 600
    judge = (rng.random(n) < 0.5).astype(float)
    flip = rng.random(n) < np.where(judge == 1, 0.4, 0.02)
    truth = np.where(flip, 1 - judge, judge)
    pool = pd.DataFrame({
        "answer_id": [f"a{i}" for i in range(n)], "task_id": [f"t{i}" for i in range(n)],
        "family": np.where(np.arange(n) % 2 == 0, "own", "other"),
        "judge_pass": judge, "human_pass": truth,
    })
    resid = pd.Series(judge - truth, index=pool["answer_id"])
    true_mean = float(resid.mean())
    weighted, plain = [], []
    d = design_sample(pool, n=100, allocation="neyman", strata=["judge_bin"], paired=False,
                      own_family="own", overlap=0, rng=0)
    for seed in range(400):
        items = d.redraw(seed)
        r = items["answer_id"].map(resid)
        weighted.append(float(np.average(r, weights=items["weight"])))
        plain.append(float(r.mean()))
    share_pass = d.items["judge_bin"].eq("pass").mean()
    assert share_pass > 0.7  # the design really is disproportionate
    se = np.std(weighted, ddof=1) / math.sqrt(len(weighted))
    assert abs(np.mean(weighted) - true_mean) < 3 * se + 0.002
    assert np.mean(plain) - true_mean > 0.08


# -- power and precision ---------------------------------------------------------------------------


def test_paired_sample_size_matches_the_research_notes_example() -> None:
    # σ² = 0.2 per family, Δ = 0.10, ρ = 0: (1.96 + 0.8416)² · 0.4 / 0.01 = 313.96 -> 314.
    assert paired_sample_size(0.10, sd_own=0.2**0.5, sd_other=0.2**0.5) == 314
    # Positive within-task correlation shrinks it by (1 − ρ) for equal sds.
    assert paired_sample_size(0.10, sd_own=0.2**0.5, sd_other=0.2**0.5, rho=0.5) == 157


def test_analytic_sample_size_gives_simulated_power_near_080() -> None:
    # Population residual sds, within-task correlation and gap of the latent model, from a
    # large draw; then 2000 experiments of the analytic number of tasks, each a two-sided
    # paired z-test at 0.05 with the sd estimated from the sample.
    big = simulate_pool(40_000, seed=7, own_bias=0.25)
    big["r"] = big["judge_pass"] - big["truth"]
    wide = big.pivot(index="task_id", columns="family", values="r")
    sd_own, sd_other = wide["claude"].std(), wide["gpt"].std()
    rho = wide["claude"].corr(wide["gpt"])
    gap = wide["claude"].mean() - wide["gpt"].mean()
    assert rho > 0.1  # the model does correlate residuals within a task
    n = paired_sample_size(gap, sd_own=sd_own, sd_other=sd_other, rho=rho)
    d = (wide["claude"] - wide["gpt"]).to_numpy()
    rng = np.random.default_rng(8)
    draws = d[rng.integers(0, len(d), size=(2000, n))]
    z = draws.mean(axis=1) / (draws.std(axis=1, ddof=1) / math.sqrt(n))
    power = float((np.abs(z) > sps.norm.ppf(0.975)).mean())
    assert power == pytest.approx(0.8, abs=0.035)


def test_design_target_agrees_with_the_closed_form_in_one_stratum() -> None:
    pool = simulate_pool(200, seed=4)
    model = PlanningModel(disagreement=0.2, rho=0.3)
    d = design_sample(pool, n=100, strata=[], own_family="claude", model=model, min_gap=10,
                      rng=0)
    share = {f: pool.loc[pool["family"] == f, "judge_pass"].mean() for f in ("claude", "gpt")}
    tasks = paired_sample_size(
        0.10, sd_own=model.residual_sd(share["claude"]), sd_other=model.residual_sd(share["gpt"]),
        rho=0.3,
    )
    assert d.target is not None
    # The design plans for the report's t test on (tasks − 1) df, the closed form for a z test:
    # ((t.975 + t.8) / (z.975 + z.8))² ≈ 1.0085 at 200 df, two tasks more.
    df = d.target.units_needed - 1
    ratio = ((sps.t.ppf(0.975, df) + sps.t.ppf(0.8, df)) / (sps.norm.ppf(0.975) + sps.norm.ppf(0.8))) ** 2
    assert d.target.units_needed == pytest.approx(tasks * ratio, abs=1)
    assert d.target.labels_needed == pytest.approx(2 * tasks * ratio, abs=2)


def test_a_design_of_the_labels_a_target_needs_meets_the_target() -> None:
    pool = simulate_pool(600, seed=9)
    d = design_sample(pool, n=100, own_family="claude", target_half_width=9, rng=0)
    assert d.target is not None and d.target.fits_pool
    again = design_sample(pool, n=d.target.labels_needed, own_family="claude", rng=0)
    assert again.precision.gap_half_width <= 9 * 1.05
    assert d.precision.gap_half_width > 9  # 100 labels were not enough


def test_stratifying_by_judge_verdict_narrows_the_interval() -> None:
    # Modelled residual variance: d inside mixed strata vs d(1 − d) inside verdict strata.
    pool = simulate_pool(300, seed=3)
    coarse = design_sample(pool, n=200, strata=["category"], own_family="claude", rng=0,
                           model=PlanningModel())
    fine = design_sample(pool, n=200, strata=["category", "judge_bin"], own_family="claude",
                         rng=0, model=PlanningModel())
    assert fine.precision.gap_half_width < coarse.precision.gap_half_width


def test_kappa_se_formula_against_simulation() -> None:
    # Two raters with prevalence 0.5 and kappa 0.6: P(both pass) = p² + κ p(1 − p).
    kappa, p, n = 0.6, 0.5, 120
    both = p * p + kappa * p * (1 - p)
    probs = [both, p - both, p - both, 1 - 2 * p + both]
    rng = np.random.default_rng(1)
    cells = rng.multinomial(n, probs, size=4000) / n
    po = cells[:, 0] + cells[:, 3]
    pa, pb = cells[:, 0] + cells[:, 1], cells[:, 0] + cells[:, 2]
    pe = pa * pb + (1 - pa) * (1 - pb)
    kappas = (po - pe) / (1 - pe)
    assert kappa_se(n, kappa=kappa, prevalence=p) == pytest.approx(kappas.std(), rel=0.1)
    assert math.isnan(kappa_se(0, kappa=0.6, prevalence=0.5))
    assert math.isnan(kappa_se(50, kappa=0.6, prevalence=1.0))


def test_cost_and_budget() -> None:
    # 300 labels, 20% twice, 2.5 min: 360 ratings = 900 min = 15 h; 5 raters at 2 h/day -> 2 days.
    c = cost_of(300, overlap=0.2, minutes_per_label=2.5, raters=5, hours_per_rater_per_day=2)
    assert (c.ratings, c.person_hours, c.calendar_days) == (360, 15.0, 2)
    assert budget_labels(15, minutes_per_label=2.5, overlap=0.2) == 300
    with pytest.raises(InputError):
        budget_labels(0, minutes_per_label=2.5, overlap=0.2)


def test_planning_model_reads_a_pilot() -> None:
    pool = simulate_pool(300, seed=6)
    assert planning_model(pool).source == "assumed"
    pilot = pool.assign(human_pass=pool["truth"])
    m = planning_model(pilot)
    resid = pilot["judge_pass"] - pilot["truth"]
    assert m.disagreement == pytest.approx(resid.abs().mean())
    assert m.rho > 0.1 and "pilot of 600 labels" in m.source
    assert planning_model(pilot, rho=0.0).rho == 0.0


def test_stratify_pool_bins_and_errors() -> None:
    pool = simulate_pool(30, seed=1).drop(columns=["judge_pass"])
    pool.loc[0, "judge_score"] = np.nan
    out = stratify_pool(pool, judge_bins=3)
    assert out.loc[0, "judge_bin"] == "unjudged"
    assert out["judge_bin"].nunique() >= 2
    assert out["length_bin"].nunique() == 3
    with pytest.raises(InputError, match="family"):
        stratify_pool(pool.drop(columns=["family"]))
    with pytest.raises(InputError, match="no answers"):
        stratify_pool(pool.iloc[:0])


def test_design_table_has_a_total_row_and_the_hours() -> None:
    pool = simulate_pool(80, seed=1)
    d = design_sample(pool, n=60, own_family="claude", rng=0, minutes_per_label=3)
    t = design_table(d)
    assert t.iloc[-1]["stratum"] == "total"
    assert t.iloc[-1]["sampled_answers"] == len(d.items)
    assert t.iloc[:-1]["hours"].sum() == pytest.approx(d.cost.person_hours, abs=0.05)
    assert t.iloc[-1]["half_width_pp"] == pytest.approx(d.precision.gap_half_width, abs=0.05)


def test_design_is_reproducible_from_its_seed() -> None:
    pool = simulate_pool(80, seed=1)
    a = design_sample(pool, n=40, own_family="claude", rng=3)
    b = design_sample(pool, n=40, own_family="claude", rng=3)
    c = design_sample(pool, n=40, own_family="claude", rng=4)
    assert a.design_id == b.design_id
    assert list(a.items["answer_id"]) == list(b.items["answer_id"])
    assert a.design_id != c.design_id


# -- assignment (pure) ---------------------------------------------------------------------------


def _check_queues(plan: pd.DataFrame, spread: int = 3) -> None:
    for _, q in plan.groupby("rater_id"):
        q = q.sort_values("queue_pos")
        assert q["queue_pos"].is_unique
        gaps = q.groupby("task_id")["queue_pos"].apply(lambda s: s.diff().min()).dropna()
        assert (gaps > spread).all(), gaps[gaps <= spread]


def test_plan_assignments_balances_families_and_spreads_tasks() -> None:
    pool = simulate_pool(150, seed=5)
    d = design_sample(pool, n=140, own_family="claude", overlap=0.2, rng=1)
    plan = plan_assignments(d, [11, 12, 13, 14, 15], rng=0)
    counts = plan.groupby(["rater_id", "family"]).size().unstack()
    assert (counts.max() - counts.min() <= 1).all()          # each family spread ±1
    assert ((counts["claude"] - counts["gpt"]).abs() <= 1).all()  # both families equally
    per_answer = plan.groupby("answer_id")["rater_id"].nunique()
    overlap = set(d.items.loc[d.items["is_overlap"], "answer_id"])
    assert (per_answer[list(overlap)] == 2).all()
    assert (per_answer.drop(list(overlap)) == 1).all()
    assert len(plan) == d.cost.ratings
    _check_queues(plan)


def test_plan_assignments_is_seeded_and_orders_with_the_queue_orderer() -> None:
    pool = simulate_pool(60, seed=5)
    d = design_sample(pool, n=60, own_family="claude", overlap=0.2, rng=1)
    one = plan_assignments(d, [1, 2, 3], rng=0)
    pd.testing.assert_frame_equal(one, plan_assignments(d, [1, 2, 3], rng=0))
    assert not one.equals(plan_assignments(d, [1, 2, 3], rng=1))
    # Existing queues: new positions follow them and keep away from their last tasks.
    first = one[one["rater_id"] == 1].sort_values("queue_pos")
    recent = first["task_id"].tolist()[-3:]
    single = design_sample(pool, n=30, own_family="claude", overlap=0, rng=2)
    more = plan_assignments(single, [1], rng=2, tails={1: (len(first), recent)})
    assert more["queue_pos"].min() == len(first)
    tasks = [*recent, *more.sort_values("queue_pos")["task_id"]]
    gaps = pd.Series(range(len(tasks))).groupby(pd.Series(tasks)).diff().dropna()
    assert (gaps > 3).all()


def test_plan_assignments_unpaired_and_unbalanced_design() -> None:
    pool = simulate_pool(150, seed=5)
    d = design_sample(pool, n=97, own_family="claude", paired=False, allocation="proportional",
                      overlap=0.1, rng=1)
    plan = plan_assignments(d, [1, 2, 3], rng=2)
    counts = plan.groupby(["rater_id", "family"]).size().unstack()
    assert (counts.max() - counts.min() <= 1).all()
    _check_queues(plan)


def test_plan_assignments_needs_two_raters_for_an_overlap() -> None:
    pool = simulate_pool(40, seed=5)
    d = design_sample(pool, n=20, own_family="claude", overlap=0.2, rng=1)
    with pytest.raises(InputError, match="two raters"):
        plan_assignments(d, [1])


# -- the store --------------------------------------------------------------------------------------


def _rubric() -> Rubric:
    return Rubric(
        rubric_id="support", version=1, name="Support answer", scale="likert5",
        pass_rule="4 or 5", pass_threshold=4.0,
        criteria=(Criterion("helpful", "Helpful", "Solves the problem."),),
    )


def _fill(store: Store, pool: pd.DataFrame, *, raters: int = 4) -> None:
    tasks = {
        t: Task(task_id=t, prompt=f"prompt {t}", category=c)
        for t, c in zip(pool["task_id"], pool["category"], strict=True)
    }
    answers = [
        Answer(answer_id=r.answer_id, task_id=r.task_id, family=r.family, model=r.family + "-1",
               text=" ".join(["word"] * int(r.n_words)))
        for r in pool.itertuples()
    ]
    store.add_rubric(_rubric())
    store.add_pool(list(tasks.values()), answers)
    store.start_judge_run("run1", judge_kind="fake", model="claude-x", family="claude",
                          rubric_id="support", rubric_version=1)
    records = [
        JudgementRecord(run_id="run1", call_id=f"c{i}", cache_key=f"k{i}", kind="pointwise",
                        format="likert5", task_id=r.task_id, answer_id=r.answer_id,
                        value=float(r.judge_score), passed=bool(r.judge_pass))
        for i, r in enumerate(pool.itertuples())
    ]
    # A probe's padded presentation of the first answer must not count as its score.
    first = pool.iloc[0]
    records.append(JudgementRecord(
        run_id="run1", call_id="probe", cache_key="kp", kind="pointwise", format="likert5",
        task_id=first["task_id"], answer_id=first["answer_id"], probe="padding", arm="padded",
        value=3.0 if first["judge_pass"] else 5.0, passed=not bool(first["judge_pass"]),
    ))
    store.add_judgements(records)
    for i in range(raters):
        store.add_rater(f"rater{i}")
    store.add_rater("boss", role="admin")


def test_load_pool_reads_judge_scores_and_family(store: Store) -> None:
    pool = simulate_pool(30, seed=2)
    _fill(store, pool)
    loaded, info = load_pool(store)
    assert info["run_id"] == "run1" and info["judge_family"] == "claude"
    assert info["n_judged"] == len(pool) and info["n_pilot"] == 0
    merged = loaded.merge(pool[["answer_id", "judge_pass"]], on="answer_id", suffixes=("", "_x"))
    assert (merged["judge_pass"] == merged["judge_pass_x"]).all()
    with pytest.raises(InputError, match="no judge run"):
        load_pool(store, run_id="nope")


def test_answers_the_judge_did_not_score_are_unjudged(store: Store) -> None:
    pool = simulate_pool(20, seed=2)
    _fill(store, pool)
    store.add_pool([Task(task_id="extra", prompt="p", category="c0")],
                   [Answer(answer_id="extra-a", task_id="extra", family="gpt", model="gpt-1",
                           text="an answer")])
    loaded, info = load_pool(store)
    assert info["n_judged"] == len(pool)
    assert math.isnan(loaded.set_index("answer_id").loc["extra-a", "judge_pass"])
    d = design_sample(loaded, n=len(loaded), own_family="claude", rng=0, paired=False)
    assert d.items.set_index("answer_id").loc["extra-a", "judge_bin"] == "unjudged"


def test_apply_design_gives_balanced_spread_queues(store: Store) -> None:
    pool = simulate_pool(60, seed=3)
    _fill(store, pool, raters=4)
    loaded, info = load_pool(store)
    d = design_sample(loaded, n=80, own_family=info["judge_family"], overlap=0.2, rng=0)
    made = apply_design(store, d, 4, rng=0)
    rows = store.design_assignments(d.design_id)
    assert len(rows) == len(made) == d.cost.ratings
    assert "boss" not in set(rows["rater"])
    counts = rows.groupby(["rater", "family"]).size().unstack()
    assert (counts.max() - counts.min() <= 1).all()
    assert ((counts["claude"] - counts["gpt"]).abs() <= 1).all()
    per_answer = rows.groupby("answer_id")["rater_id"].nunique()
    overlap = rows.loc[rows["is_overlap"], "answer_id"].unique()
    assert (per_answer[overlap] == 2).all()
    assert (per_answer.drop(overlap) == 1).all()
    for _, q in rows.groupby("rater_id"):
        assert q["queue_pos"].tolist() == list(range(len(q)))  # 0-based, contiguous
    _check_queues(rows)
    stored = store.design_items(d.design_id)
    assert len(stored) == len(d.items)
    assert stored["weight"].sum() == pytest.approx(d.items["weight"].sum())
    assert store.design_applied(d.design_id)
    record = store.design_record(d.design_id)
    assert record["summary"]["labels"] == len(d.items)
    with pytest.raises(InputError, match="applied already"):
        apply_design(store, d, 4)
    # The rubric the judge used is the one the raters get.
    rub = store.query("SELECT DISTINCT rubric_id, rubric_version FROM assignments")
    assert rub.values.tolist() == [["support", 1]]


def test_a_second_design_appends_after_existing_positions(store: Store) -> None:
    pool = simulate_pool(60, seed=3)
    _fill(store, pool, raters=3)
    loaded, _ = load_pool(store)
    first = design_sample(loaded, n=30, own_family="claude", overlap=0, rng=0)
    apply_design(store, first, ["rater0", "rater1"])
    rest = loaded[~loaded["answer_id"].isin(first.items["answer_id"])]
    second = design_sample(rest, n=30, own_family="claude", overlap=0, rng=1)
    apply_design(store, second, ["rater0", "rater1"])
    a = store.design_assignments(first.design_id)
    b = store.design_assignments(second.design_id)
    for rid in (a["rater_id"].unique()):
        assert b.loc[b["rater_id"] == rid, "queue_pos"].min() == (
            a.loc[a["rater_id"] == rid, "queue_pos"].max() + 1)


def test_apply_design_refuses_unknown_or_too_few_raters(store: Store) -> None:
    pool = simulate_pool(20, seed=3)
    _fill(store, pool, raters=2)
    loaded, _ = load_pool(store)
    d = design_sample(loaded, n=10, own_family="claude", rng=0)
    with pytest.raises(InputError, match="2 active non-admin"):
        apply_design(store, d, 3)
    with pytest.raises(InputError, match="no active rater named 'zed'"):
        apply_design(store, d, ["rater0", "zed"])
    store.revoke_rater("rater1")
    with pytest.raises(InputError, match="rater1"):
        apply_design(store, d, ["rater0", "rater1"])
    assert store.designs().empty or not store.design_applied(d.design_id)


def test_pilot_labels_and_timing_feed_the_next_design(store: Store) -> None:
    pool = simulate_pool(30, seed=4)
    _fill(store, pool, raters=2)
    loaded, _ = load_pool(store)
    assert not label_time(store.label_seconds()).measured
    d = design_sample(loaded, n=12, own_family="claude", overlap=0, rng=0)
    apply_design(store, d, 2)
    rows = store.design_assignments(d.design_id)
    rid = int(rows["rater_id"].iloc[0])
    mine = store.query(
        "SELECT assignment_id, answer_id FROM assignments WHERE rater_id = ? ORDER BY queue_pos",
        [rid],
    )
    for k, row in enumerate(mine.itertuples()):
        store.open_item(rid, int(row.assignment_id))
        store.add_label(rid, int(row.assignment_id), overall=5.0 if k % 2 else 2.0,
                        criteria={"helpful": 3.0})
    human = store.human_verdicts()
    assert len(human) == len(mine)
    assert set(human["human_pass"]) == {0.0, 1.0}
    timing = label_time(store.label_seconds(), minimum=5)
    assert timing.measured and timing.n == len(mine) and timing.median_seconds >= 0
    _, info = load_pool(store)
    assert info["n_pilot"] == len(mine)


# -- issue 15: allocations that coincide, bin names ------------------------------------------------


def test_without_a_pilot_the_allocations_coincide_and_the_design_says_so() -> None:
    pool = simulate_pool(200, seed=1)
    assumed = design_sample(pool, n=120, own_family="claude", rng=0)
    note = next(n for n in assumed.notes if "draw the same sample" in n)
    assert "'proportional'" in note and "'neyman'" in note and "without pilot labels" in note
    # With a pilot the strata's residual sds differ and 'gap' is a different design from
    # 'proportional' (neyman may still coincide: the gap's and the mean's optimum can agree).
    piloted = design_sample(pool.assign(human_pass=pool["truth"]), n=120, own_family="claude", rng=0)
    assert piloted.model.source.startswith("pilot")
    assert not any("'proportional'" in n for n in piloted.notes)


def test_score_bins_are_named_by_the_scores_they_hold() -> None:
    # Quantile cuts on whole scores are (lo, hi]: a bin (3, 4] holds only 4 and is "score 4".
    scores = np.repeat([1, 2, 3, 4, 5], [10, 10, 40, 30, 10]).astype(float)
    pool = pd.DataFrame({"answer_id": [f"a{i}" for i in range(100)], "task_id": [f"t{i}" for i in range(100)],
                         "family": "claude", "judge_score": scores})
    bins = stratify_pool(pool, judge_bins=3)
    held = bins.groupby("judge_bin")["judge_score"].agg(["min", "max"])
    for name, (lo, hi) in held.iterrows():
        assert name == (f"score {lo:g}" if lo == hi else f"score {lo:g}–{hi:g}")
