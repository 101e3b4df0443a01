"""Dawid-Skene: checked against a direct likelihood computation and raters of known confusion."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from judgelab.calibration.stats import RaterModel, compare_rules, dawid_skene, family_residuals, simulate_raters
from judgelab.calibration.stats._rater_sim import DEFAULT_PANEL


def _draw(
    confusion: np.ndarray, priors: np.ndarray, n_items: int, per_item: int, seed: int
) -> tuple[pd.DataFrame, np.ndarray]:
    """Labels from raters of known ``confusion[r, true, label]``; each item labelled by ``per_item`` raters."""
    gen = np.random.default_rng(seed)
    truth = gen.choice(priors.size, size=n_items, p=priors)
    rows = []
    for i in range(n_items):
        for r in gen.choice(confusion.shape[0], size=per_item, replace=False):
            rows.append((f"i{i}", f"r{r}", int(gen.choice(priors.size, p=confusion[r, truth[i]]))))
    return pd.DataFrame(rows, columns=["item", "rater", "label"]), truth


def _log_likelihood(labels: pd.DataFrame, model: RaterModel) -> float:
    """The labels' log-likelihood under the model's parameters, item by item with plain loops."""
    cats = list(model.categories)
    raters = list(model.raters)
    total = 0.0
    for _, rows in labels.groupby("item"):
        per_class = []
        for k in range(len(cats)):
            p = model.priors[k]
            for rater, label in zip(rows["rater"], rows["label"], strict=True):
                p *= model.confusion[raters.index(rater), k, cats.index(float(label))]
            per_class.append(p)
        total += math.log(sum(per_class))
    return total


CONFUSION = np.array([
    [[0.90, 0.08, 0.02], [0.05, 0.90, 0.05], [0.02, 0.08, 0.90]],  # careful
    [[0.60, 0.30, 0.10], [0.05, 0.60, 0.35], [0.00, 0.10, 0.90]],  # lenient
    [[0.95, 0.05, 0.00], [0.40, 0.55, 0.05], [0.10, 0.40, 0.50]],  # harsh
    [[0.40, 0.30, 0.30], [0.30, 0.40, 0.30], [0.30, 0.30, 0.40]],  # careless
])
PRIORS = np.array([0.3, 0.5, 0.2])


def test_the_posterior_is_the_direct_bayes_computation() -> None:
    labels, _ = _draw(CONFUSION, PRIORS, 40, 3, seed=1)
    model = dawid_skene(labels["item"], labels["rater"], labels["label"])
    raters = list(model.raters)
    for row, (item, rows) in enumerate(labels.groupby("item", sort=True)):
        assert model.items[row] == item
        joint = np.array([
            model.priors[k] * np.prod([model.confusion[raters.index(r), k, int(lab)]
                                       for r, lab in zip(rows["rater"], rows["label"], strict=True)])
            for k in range(3)
        ])
        np.testing.assert_allclose(model.posterior[row], joint / joint.sum(), atol=1e-12)


def test_the_fit_is_a_maximum_of_the_likelihood() -> None:
    labels, _ = _draw(CONFUSION, PRIORS, 60, 3, seed=2)
    model = dawid_skene(labels["item"], labels["rater"], labels["label"], smoothing=0.0, tol=1e-12, max_iter=5000)
    assert model.converged
    best = _log_likelihood(labels, model)
    assert model.log_likelihood == pytest.approx(best, abs=1e-8)
    gen = np.random.default_rng(0)
    for _ in range(30):
        # Move the parameters a little (rows stay distributions): the likelihood can only fall.
        conf = model.confusion * np.exp(gen.normal(0, 0.05, model.confusion.shape))
        pri = model.priors * np.exp(gen.normal(0, 0.05, 3))
        moved = RaterModel(model.categories, model.items, model.raters, model.posterior,
                           conf / conf.sum(axis=2, keepdims=True), pri / pri.sum(), model.n_labels,
                           0.0, 0, True, 0.0, "")
        assert _log_likelihood(labels, moved) <= best + 1e-9


def test_known_confusions_and_priors_are_recovered() -> None:
    labels, truth = _draw(CONFUSION, PRIORS, 1500, 3, seed=3)
    model = dawid_skene(labels["item"], labels["rater"], labels["label"])
    assert model.raters == ("r0", "r1", "r2", "r3") and sum(model.n_labels) == 4500
    assert np.abs(model.confusion - CONFUSION).max() < 0.07
    assert np.abs(model.priors - PRIORS).max() < 0.03
    true_accuracy = np.diagonal(CONFUSION, axis1=1, axis2=2) @ PRIORS
    np.testing.assert_allclose(model.accuracy(), true_accuracy, atol=0.04)
    majority = labels.groupby("item")["label"].agg(lambda s: s.value_counts().sort_index().idxmax())
    truth_by_item = pd.Series(truth, index=[f"i{i}" for i in range(truth.size)])
    mode = pd.Series(model.mode(), index=list(model.items))
    wrong_mode = (mode != truth_by_item.reindex(mode.index)).mean()
    assert wrong_mode < (majority != truth_by_item.reindex(majority.index)).mean()


def test_posterior_mean_and_mode_on_the_scale() -> None:
    model = dawid_skene([1, 1, 2, 2], ["a", "b", "a", "b"], [2, 2, 5, 5], categories=[1, 2, 3, 4, 5])
    assert model.categories == (1.0, 2.0, 3.0, 4.0, 5.0)
    assert model.mode().tolist() == [2.0, 5.0]
    np.testing.assert_allclose(model.mean(), model.posterior @ np.arange(1, 6))
    assert model.posterior.shape == (2, 5) and model.confusion.shape == (2, 5, 5)
    assert model.to_dict()["raters"][0]["confusion"][1][1] == pytest.approx(model.confusion[0, 1, 1])


def test_extra_starts_are_seeded_and_never_worse() -> None:
    labels, _ = _draw(CONFUSION, PRIORS, 50, 2, seed=4)
    args = (labels["item"], labels["rater"], labels["label"])
    one = dawid_skene(*args)
    a = dawid_skene(*args, n_starts=4, seed=11)
    b = dawid_skene(*args, n_starts=4, seed=11)
    np.testing.assert_array_equal(a.posterior, b.posterior)
    # Kept by the penalised likelihood, so the plain one may differ by the convergence tolerance.
    assert a.log_likelihood >= one.log_likelihood - 1e-3


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"item": [1, 2], "rater": ["a"], "label": [0, 1]}, "one entry per label"),
        ({"item": [1, 1], "rater": ["a", "b"], "label": [0, 7], "categories": [0, 1]}, "label 7 is not one"),
        ({"item": [1, 1], "rater": ["a", "a"], "label": [0, 1]}, "labelled one item twice"),
        ({"item": [1, 2], "rater": ["a", "b"], "label": [0, 1]}, "two or more raters"),
        ({"item": [1, 1], "rater": ["a", "b"], "label": [0, float("nan")]}, "finite"),
        ({"item": [1, 1], "rater": ["a", "b"], "label": [0, 1], "max_iter": 0}, "max_iter"),
        ({"item": [1, 1], "rater": ["a", "b"], "label": [0, 1], "smoothing": -1.0}, "smoothing"),
    ],
)
def test_bad_input_is_named(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        dawid_skene(**kwargs)  # type: ignore[arg-type]


def test_residuals_take_a_models_scores_with_the_raters_labels_for_the_spread() -> None:
    # A model's score is no collapse of the labels: rule="model" takes it as given; the labels
    # still give the raters' spread ("raters like these").
    sim = simulate_raters(n_tasks=30, seed=5)
    model = dawid_skene(sim.labels["answer_id"], sim.labels["rater_id"], sim.labels["score"], categories=[0, 1])
    ids = sim.answers["answer_id"].to_numpy()
    human = pd.Series(model.mean(), index=list(model.items)).reindex(ids).to_numpy()
    ratings = sim.labels.rename(columns={"answer_id": "answer", "rater_id": "rater"})
    args = (sim.answers["judge"], human, sim.answers["family"], sim.answers["task_id"])
    est = family_residuals(*args, rater_level=ratings, answer_ids=ids, rule="model")
    assert "raters like these (5 raters" in est["own"].extra["scope"]
    expected = 100 * (sim.answers["judge"] - human)[sim.answers["family"] == "own"].mean()
    assert est["own"].estimate == pytest.approx(expected)
    with pytest.raises(ValueError, match="disagree with rater_level"):
        family_residuals(*args, rater_level=ratings, answer_ids=ids, rule="mean")
    with pytest.raises(ValueError, match="not with rule='model'"):
        family_residuals(args[0], None, *args[2:], rater_level=ratings, answer_ids=ids, rule="model")


def test_the_model_finds_the_truth_better_than_the_majority_on_raters_of_known_confusion() -> None:
    sim = simulate_raters(n_tasks=300, seed=0)
    assert sim.labels["rater_id"].nunique() == len(DEFAULT_PANEL) and len(sim.labels) == 3 * 600
    readings = compare_rules(sim)
    ds, major = readings["dawid-skene"], readings["majority"]
    assert ds.error_rate < major.error_rate - 0.02
    assert ds.squared_error < major.squared_error
    # The careful rater and the careless one are told apart, and their confusions found.
    assert ds.model is not None
    np.testing.assert_allclose(ds.model.confusion, sim.confusion, atol=0.1)
    assert ds.model.accuracy().argmax() == 0 and ds.model.accuracy().argmin() == 4


def test_the_simulation_truths_are_the_models() -> None:
    # The closed-form residuals match the answers' own judge-minus-truth over a large draw.
    sim = simulate_raters(n_tasks=20000, labels_per_answer=2, seed=1)
    a = sim.answers
    for family in ("own", "other"):
        observed = 100 * (a["judge"] - a["truth"])[a["family"] == family].mean()
        assert observed == pytest.approx(sim.residuals[family], abs=1.0)
    with pytest.raises(ValueError, match="labels per answer"):
        simulate_raters(n_tasks=10, labels_per_answer=6)


def test_every_category_combination_of_two_raters_gives_a_distribution() -> None:
    # Small exhaustive check: every (label a, label b) pair on a 3-level scale gives a proper posterior.
    pairs = list(itertools.product(range(3), repeat=2))
    items = [i for i, _ in enumerate(pairs) for _ in range(2)]
    raters = ["a", "b"] * len(pairs)
    labels = [v for p in pairs for v in p]
    model = dawid_skene(items, raters, labels)
    np.testing.assert_allclose(model.posterior.sum(axis=1), 1.0)
    assert (model.posterior >= 0).all() and np.isfinite(model.log_likelihood)


# -- rater flags --------------------------------------------------------------------------------


def _likert_panel(seed: int, n: int = 150) -> tuple[list[int], list[str], list[int]]:
    """Four raters right 70% of the time (else one level off), one random (uniform 1-5), one always 3."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, n)
    names = ["g1", "g2", "g3", "g4", "random", "always3"]
    item, rater, label = [], [], []
    for i in range(n):
        for r in rng.choice(len(names), 3, replace=False):
            off = 0 if rng.random() < 0.7 else int(rng.choice([-1, 1]))
            given = {"random": int(rng.integers(1, 6)), "always3": 3}.get(names[r], int(np.clip(truth[i] + off, 1, 5)))
            item.append(i)
            rater.append(names[r])
            label.append(given)
    return item, rater, label


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_random_and_an_always_3_rater_are_flagged_and_the_careful_ones_are_not(seed: int) -> None:
    item, rater, label = _likert_panel(seed)
    m = dawid_skene(item, rater, label, categories=[1, 2, 3, 4, 5], seed=seed)
    flags = dict(zip(m.raters, m.warnings(), strict=True))
    kappa = dict(zip(m.raters, m.agreement, strict=True))
    assert [r for r, w in flags.items() if w] == ["always3", "random"]
    # The always-3 rater's confusion has every row on 3: exactly chance, with no spread.
    assert kappa["always3"].estimate == pytest.approx(0.0, abs=1e-9)
    assert "gives 3 on 100% of their labels" in flags["always3"][0]
    assert "gives" not in flags["random"][0] and "no better than chance" in flags["random"][0]
    # 60 such panels: the random rater's kappa 0.03 on average (-0.13 to 0.24), the careful ones' 0.70 (0.41 to 0.98).
    assert kappa["random"].ci_low < 0.1 and kappa["random"].estimate < 0.2
    assert all(kappa[g].estimate > 0.4 and kappa[g].ci_low > 0.2 for g in ("g1", "g2", "g3", "g4"))
    for est in kappa.values():
        assert est.units == "kappa" and "bootstrap" in est.method and 50 < est.n <= 150
    js = m.to_dict()["raters"]
    assert [r["rater"] for r in js if r["warnings"]] == ["always3", "random"]
    assert all(r["agreement"]["n"] > 0 for r in js)


def test_too_few_shared_answers_are_not_judged() -> None:
    # The docstring's panel: the always-1 rater shares 6 answers, fewer than MIN_SHARED.
    item = [i for i in range(6) for _ in range(4)]
    label = [v for t in [0, 1, 0, 1, 1, 0] for v in (t, t, t, 1)]
    m = dawid_skene(item, ["a", "b", "c", "d"] * 6, label)
    assert m.agreement[3].estimate == pytest.approx(0.0, abs=1e-9) and m.agreement[3].n == 6
    assert m.warnings() == ((), (), (), ())
    assert m.warnings(min_shared=5)[3] and not m.warnings(min_shared=5)[0]
