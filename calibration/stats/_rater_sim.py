"""Raters of known confusion: does a model of the raters find the truth better than their majority?

The simulator (:func:`simulate_raters`) draws pass/fail answers whose true verdict is known, a
judge with a self-preference, and a panel of raters each with a known 2x2 confusion matrix; each
answer is labelled by a few raters of the panel drawn at random. :func:`compare_rules` reads one
dataset three ways (the raters' majority, their mean, Dawid-Skene's posterior) and says how far
each human truth is from the known one and whether each rule's residual and gap intervals cover
the known residuals. ``bench/rater_model.py`` runs it over many datasets; the tests run a few.

The model (pass verdicts, two families answering every task):

* task difficulty ``u ~ N(0, 1)``; an answer of family ``f`` truly passes with probability
  ``expit(a_f + u)``, ``a = 0.4`` for the judge's own family and ``0.0`` for the other;
* the judge passes a true pass with probability 0.85 and a true fail with 0.20 on the other
  family, 0.35 on its own (the self-preference to find);
* the default panel (:data:`DEFAULT_PANEL`): one careful rater, two lenient ones (they pass
  half the true fails), one harsh one and one careless one (close to a coin), so the majority of
  three leans lenient and counts the careless rater's coin as a full vote.

The truths are the model's, in closed form up to Gauss-Hermite quadrature over ``u``: the residual
of family ``f`` is ``E[judge − truth]`` over its answers, in percentage points.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy.special import expit

from judgelab.calibration.stats._bootstrap import RngLike, as_rng
from judgelab.calibration.stats._dawid_skene import RaterModel, dawid_skene
from judgelab.calibration.stats._humans import human_scores
from judgelab.calibration.stats._model_variance import model_refit_spread, with_model_variance
from judgelab.calibration.stats._residuals import residuals_and_gap
from judgelab.calibration.stats._result import Estimate

__all__ = ["DEFAULT_PANEL", "RULES_COMPARED", "RaterSimulation", "RuleReading", "compare_rules", "simulate_raters"]

_A = {"own": 0.4, "other": 0.0}
_SENSITIVITY = 0.85
_FALSE_PASS = {"own": 0.35, "other": 0.20}

DEFAULT_PANEL: tuple[tuple[float, float], ...] = (
    (0.95, 0.95),  # careful
    (0.95, 0.50),  # lenient
    (0.90, 0.45),  # lenient
    (0.60, 0.95),  # harsh
    (0.55, 0.50),  # careless: close to a coin
)
"""``(sensitivity, specificity)`` of each rater: P(pass | true pass), P(fail | true fail)."""

RULES_COMPARED: tuple[str, ...] = ("majority", "mean", "dawid-skene")


@dataclass(frozen=True)
class RaterSimulation:
    """One simulated dataset with its known truths.

    Attributes:
        answers: ``answer_id, task_id, family, truth, judge`` (0/1 verdicts), one row per answer.
        labels: ``answer_id, rater_id, score``: the raters' 0/1 labels.
        confusion: ``(n_raters, 2, 2)`` known confusion matrices (rows: truth fail, pass;
            columns: label fail, pass), in the order of the rater ids ``r1, r2, ...``.
        residuals: The true residual per family (percentage points).
        gap: The true self-preference gap (own minus other, percentage points).
    """

    answers: pd.DataFrame
    labels: pd.DataFrame
    confusion: npt.NDArray[np.float64]
    residuals: dict[str, float]
    gap: float


@dataclass(frozen=True)
class RuleReading:
    """One rule's human truth on one dataset, against the known truth.

    Attributes:
        rule: ``majority``, ``mean`` or ``dawid-skene``.
        error_rate: Share of answers whose human category (majority; the mean rounded, ties to
            fail; Dawid-Skene's posterior mode) differs from the true verdict.
        squared_error: Mean of ``(human score − truth)²`` (the score the residuals use: majority
            0/1, where it equals ``error_rate``; the raters' pass rate; Dawid-Skene's posterior
            probability of a pass, where it is the Brier score).
        residuals: The residual estimate per family, with its interval.
        gap: The self-preference gap estimate.
        covered: Per figure (``own``, ``other``, ``gap``): does its interval cover the known truth?
        model: The fitted :class:`RaterModel` (Dawid-Skene only).
    """

    rule: str
    error_rate: float
    squared_error: float
    residuals: dict[str, Estimate]
    gap: Estimate
    covered: dict[str, bool]
    model: RaterModel | None = field(default=None, repr=False)


def _true_pass_rate(a: float) -> float:
    """``E[expit(a + u)]`` for ``u ~ N(0, 1)`` by Gauss-Hermite quadrature."""
    x, w = np.polynomial.hermite_e.hermegauss(60)
    return float((w * expit(a + x)).sum() / w.sum())


def _true_residual(family: str) -> float:
    p = _true_pass_rate(_A[family])
    return 100.0 * (p * (_SENSITIVITY - 1.0) + (1.0 - p) * _FALSE_PASS[family])


def simulate_raters(
    *,
    n_tasks: int = 60,
    labels_per_answer: int = 3,
    panel: tuple[tuple[float, float], ...] = DEFAULT_PANEL,
    seed: RngLike = 0,
) -> RaterSimulation:
    """Draw one dataset from the model in the module docstring.

    Args:
        n_tasks: Tasks; each has one answer per family.
        labels_per_answer: Raters per answer, drawn from the panel without replacement.
        panel: ``(sensitivity, specificity)`` per rater (:data:`DEFAULT_PANEL`).
        seed: Seed or generator.

    Returns:
        A :class:`RaterSimulation`.

    Raises:
        ValueError: On fewer than 2 tasks, or more labels per answer than raters.
    """
    if n_tasks < 2 or not 1 <= labels_per_answer <= len(panel):
        raise ValueError(f"simulate_raters: need 2+ tasks and 1..{len(panel)} labels per answer; got "
                         f"{n_tasks} and {labels_per_answer}")
    gen = as_rng(seed)
    families = np.array(["own", "other"])
    task = np.repeat(np.arange(n_tasks), 2)
    family = np.tile(families, n_tasks)
    u = gen.normal(size=n_tasks)[task]
    a = np.where(family == "own", _A["own"], _A["other"])
    truth = (gen.random(task.size) < expit(a + u)).astype(int)
    false_pass = np.where(family == "own", _FALSE_PASS["own"], _FALSE_PASS["other"])
    judge = (gen.random(task.size) < np.where(truth == 1, _SENSITIVITY, false_pass)).astype(int)
    sens = np.array([s for s, _ in panel])
    spec = np.array([c for _, c in panel])
    n = task.size
    raters = np.argsort(gen.random((n, len(panel))), axis=1)[:, :labels_per_answer]
    p_pass = np.where(truth[:, None] == 1, sens[raters], 1.0 - spec[raters])
    scores = (gen.random(raters.shape) < p_pass).astype(int)
    answer_id = np.array([f"a{i:05d}" for i in range(n)])
    answers = pd.DataFrame({"answer_id": answer_id, "task_id": [f"t{t:04d}" for t in task], "family": family,
                            "truth": truth, "judge": judge})
    labels = pd.DataFrame({"answer_id": np.repeat(answer_id, labels_per_answer),
                           "rater_id": [f"r{r + 1}" for r in raters.ravel()], "score": scores.ravel()})
    confusion = np.stack([[[c, 1 - c], [1 - s, s]] for s, c in panel]).astype(float)
    residuals = {f: _true_residual(f) for f in ("own", "other")}
    return RaterSimulation(answers, labels, confusion, residuals, residuals["own"] - residuals["other"])


def compare_rules(
    sim: RaterSimulation, *, level: float = 0.95, n_refits: int = 100, seed: RngLike = 0
) -> dict[str, RuleReading]:
    """Read one dataset under each rule of :data:`RULES_COMPARED` against its known truth.

    The intervals are the calibration report's (:func:`judgelab.calibration.stats.residuals_and_gap`,
    speaking for raters like these, with the labels as ``rater_level``); Dawid-Skene is fitted as
    the report fits it (class priors per family).

    Args:
        sim: A dataset from :func:`simulate_raters`.
        level: Confidence level.
        n_refits: Under Dawid-Skene, refits on task resamples for the model's own variance
            (:mod:`judgelab.calibration.stats._model_variance`; 0 leaves it out, as the report did before).
        seed: Seed of those resamples.

    Returns:
        ``{rule: RuleReading}``.
    """
    ans = sim.answers
    ids = ans["answer_id"].to_numpy()
    truth = ans["truth"].to_numpy(dtype=float)
    out: dict[str, RuleReading] = {}
    for rule in RULES_COMPARED:
        model = None
        if rule == "dawid-skene":
            family = ans.set_index("answer_id")["family"].reindex(sim.labels["answer_id"]).to_numpy()
            model = dawid_skene(sim.labels["answer_id"], sim.labels["rater_id"], sim.labels["score"],
                                categories=[0, 1], groups=family)
            post = pd.Series(model.mean(), index=list(model.items))
            human = post.reindex(ids).to_numpy(dtype=float)
            category = pd.Series(model.mode(), index=list(model.items)).reindex(ids).to_numpy(dtype=float)
            ratings = human_scores(sim.labels, score_col="score").ratings
            collapse = "model"
        else:
            hs = human_scores(sim.labels, rule="majority" if rule == "majority" else "mean", score_col="score")
            human = hs.scores.reindex(ids).to_numpy(dtype=float)
            category = human if rule == "majority" else (human > 0.5).astype(float)
            ratings = hs.ratings
            collapse = "majority" if rule == "majority" else "mean"
        args = (ans["judge"].to_numpy(dtype=float), human, ans["family"].to_numpy(), ans["task_id"].to_numpy())
        common: dict[str, Any] = {"own_family": "own", "scale": "pass", "rater_level": ratings, "answer_ids": ids,
                                  "rule": collapse, "level": level}
        estimates, gap = residuals_and_gap(*args, **common)
        if model is not None and n_refits:
            design, design_gap = residuals_and_gap(*args, **common, interval="panel")
            sd = model_refit_spread(ratings, answer_ids=ids, judge=args[0], family=args[2], task=args[3],
                                    categories=[0, 1], own_family="own", n_refits=n_refits, seed=seed)
            estimates = {f: with_model_variance(e, design[f], sd[f], n_refits) for f, e in estimates.items()}
            gap = with_model_variance(gap, design_gap, sd["gap"], n_refits)
        covered = {f: bool(estimates[f].ci_low <= sim.residuals[f] <= estimates[f].ci_high) for f in ("own", "other")}
        covered["gap"] = bool(gap.ci_low <= sim.gap <= gap.ci_high)
        out[rule] = RuleReading(rule, float((category != truth).mean()), float(((human - truth) ** 2).mean()),
                                estimates, gap, covered, model)
    return out
