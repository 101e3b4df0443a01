"""A model of the raters: Dawid and Skene's confusion matrices and true labels, estimated jointly.

Each answer has one true category ``z`` (a level of the rubric's scale) drawn with the class
priors ``p_k``; each rater ``r`` gives label ``l`` with probability ``π_r[z, l]``, their
*confusion matrix* (rows: the true category, columns: the label they give), independently of the
other raters given ``z`` (Dawid & Skene 1979, *Applied Statistics* 28:20-28). EM alternates the
posterior of every answer's true category (E) with the priors and confusions those posteriors
imply (M), from the raters' vote shares as the first posterior (the paper's start, which also
fixes which category is which: the model is unchanged by renaming the categories).

A rater who is lenient, harsh or careless shows it in their confusion matrix, and the posterior
reads their labels through it: a rater who says "5" for every true 4 moves an answer less than
one who only says "5" for a 5. The categories are nominal (the model does not know that 4 is next
to 5); on an ordinal scale the confusion matrices learn it from the labels.

**Smoothing.** ``smoothing`` is a pseudo-count added to every cell of every rater's confusion
counts and to every class count (a symmetric Dirichlet prior; EM then finds the posterior mode of
the parameters). Without it a rater who never gave some label for some category "can never" give
it, and one such label rules the category out for that answer whatever the other raters said.

**Groups.** With ``groups`` (e.g. the answer's model family) each group has its own class
priors. A family's mean posterior is then unbiased for the family's true mean when the model holds
(the tower rule), where one pooled prior pulls every family's posteriors towards the pooled share
and biases a difference between families towards zero (``bench/rater_model.py`` showed 2-3
percentage points on the gap with 300 answers per family). The confusions stay one per rater.

**Extra starts.** EM finds a local maximum. ``n_starts > 1`` adds starts that mix the vote shares
with random posteriors drawn from ``seed`` (half and half, so every start keeps the categories'
names) and keeps the fit with the highest penalised log-likelihood.

Why hand-written: ``crowd-kit`` 1.4.2 (the well-kept library with this model) installs and runs on
pandas 3 and NumPy 2 without a downgrade, but requires ``transformers`` and ``nltk`` at install time
(17 more packages, a tokenizer and a model hub client, for an EM of a few array lines), warns on
every fit that pandas 4 removes the ``inplace``/``copy`` keywords its EM uses, has no pseudo-count
and took 25-30 times as long per fit (about 2.4 s against 0.09 s on 480 pass/fail labels), which
the refits of :mod:`judgelab.calibration.stats._model_variance` and the simulations cannot afford.

**What was compared with crowd-kit** (``bench/dawid_skene_crowdkit.py``, crowd-kit 1.4.2, one
prior for all answers, both from the vote shares, the log-likelihood computed by this module's
formula at each fit's own parameters). crowd-kit stops on its per-label evidence lower bound
(``tol=1e-5``, and also whenever that bound falls), often before the likelihood's maximum: on 3
pass/fail panels (480 labels) its fit ended up to 0.00026 per label below this EM's without a
pseudo-count, and on 3 likert5 panels with a random and an always-3 rater (450 labels) up to
0.012 per label below, where its posteriors differ from this EM's by up to 1.0 (the posterior
mode differs on 39 of 450 answers). Run until its likelihood equals this EM's (``n_iter=5000,
tol=1e-12`` on the datasets where it gets there, within 1e-6 per label), the posteriors differ by
at most 0.0003 (pass/fail) and 0.009 (likert5). The default pseudo-count 0.01 is a different
estimate (a posterior mode of the parameters): up to 0.0014 per label below the maximum
likelihood, posteriors up to 0.99 apart on single answers of the likert5 panels (a rater's
never-given label no longer rules a level out). The model here is checked in the tests against a
direct likelihood computation and against simulated raters of known confusion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from judgelab.calibration.stats._bootstrap import RngLike, as_rng, percentile_interval
from judgelab.calibration.stats._result import Estimate

__all__ = ["AGREEMENT_RESAMPLES", "MIN_KAPPA", "MIN_SHARED", "RaterModel", "dawid_skene"]

MIN_KAPPA = 0.2
"""A rater whose chance-corrected accuracy (kappa) under the model is below this is flagged (Landis
and Koch's "slight agreement" ends at 0.2)."""

MIN_SHARED = 10
"""Answers a rater must share with other raters before their agreement is judged."""

AGREEMENT_RESAMPLES = 1000
"""Bootstrap resamples of a rater's shared answers for their agreement's interval."""

_AGREEMENT_METHOD = ("chance-corrected accuracy (kappa) of the rater's confusion under the model, on their answers "
                     "shared with other raters, chance at the rater's own label rates; percentile bootstrap over "
                     f"those answers with the posteriors held, {AGREEMENT_RESAMPLES} resamples")


@dataclass(frozen=True, eq=False)
class RaterModel:
    """Dawid-Skene estimates: each answer's posterior over the true category, each rater's confusion.

    Attributes:
        categories: The categories (the scale's levels), ascending.
        items: Item (answer) ids, in the order of ``posterior``'s rows.
        raters: Rater ids, in the order of ``confusion``.
        posterior: ``(n_items, n_categories)``: each item's posterior over its true category.
        confusion: ``(n_raters, K, K)``: ``confusion[r, k, l]`` is the estimated probability that
            rater ``r`` gives label ``categories[l]`` to an item whose true category is
            ``categories[k]`` (each row sums to 1).
        priors: ``(K,)``: estimated share of each true category among the items.
        groups: The groups of ``group_priors`` (``()`` without ``groups``).
        group_priors: ``(n_groups, K)``: each group's class priors (``None`` without ``groups``).
        n_labels: Labels per rater, in the order of ``raters``.
        log_likelihood: Log-likelihood of the labels at the estimates (without the smoothing).
        iterations: EM iterations of the kept fit.
        converged: Whether the kept fit met ``tol`` within ``max_iter``.
        smoothing: The pseudo-count used.
        method: The method in words, for report lines.
    """

    categories: tuple[float, ...]
    items: tuple[Any, ...]
    raters: tuple[Any, ...]
    posterior: npt.NDArray[np.float64]
    confusion: npt.NDArray[np.float64]
    priors: npt.NDArray[np.float64]
    n_labels: tuple[int, ...]
    log_likelihood: float
    iterations: int
    converged: bool
    smoothing: float
    method: str
    groups: tuple[Any, ...] = ()
    group_priors: npt.NDArray[np.float64] | None = None
    agreement: tuple[Estimate, ...] = ()
    top_label: tuple[tuple[float, float], ...] = ()

    def warnings(self, *, min_kappa: float = MIN_KAPPA, min_shared: int = MIN_SHARED) -> tuple[tuple[str, ...], ...]:
        """Per rater (in the order of ``raters``), why their labels should not be trusted.

        A rater is flagged as ``judgelab raters quality`` flags a rater below the gold accuracy:
        when their chance-corrected accuracy under the model (``agreement``: kappa of their
        confusion at their own label rates, :func:`_agreement`) is below ``min_kappa`` on at least
        ``min_shared`` answers shared with other raters. A random rater and one who always gives
        the same level both sit near 0 there, however their estimated accuracy reads.

        Args:
            min_kappa: The kappa below which a rater is flagged (0.2: Landis and Koch's
                "slight").
            min_shared: Answers shared with other raters needed before a rater is judged.

        Returns:
            One tuple of sentences per rater (empty: no flag).
        """
        out: list[tuple[str, ...]] = []
        for est, (level, share) in zip(self.agreement, self.top_label, strict=True):
            if est.n < min_shared or not math.isfinite(est.estimate) or est.estimate >= min_kappa:
                out.append(())
                continue
            same = f"; gives {level:g} on {share:.0%} of their labels" if share >= 0.9 else ""
            out.append((f"labels tell the true level no better than chance: kappa {_two(est.estimate)} "
                        f"(95% CI {_two(est.ci_low)} to {_two(est.ci_high)}, n = {est.n} answers shared with other "
                        f"raters) is below {min_kappa:.2f}{same}",))
        return tuple(out)

    def mode(self) -> npt.NDArray[np.float64]:
        """Each item's most probable true category (a tie goes to the lower category)."""
        return np.asarray(self.categories, dtype=float)[np.argmax(self.posterior, axis=1)]

    def mean(self) -> npt.NDArray[np.float64]:
        """Each item's posterior mean on the scale: ``Σ_k P(z = k) · category_k``."""
        return self.posterior @ np.asarray(self.categories, dtype=float)

    def accuracy(self) -> npt.NDArray[np.float64]:
        """Each rater's chance of giving the true category, ``Σ_k p_k · π_r[k, k]`` (prior-weighted diagonal)."""
        diagonal = np.diagonal(self.confusion, axis1=1, axis2=2)
        return diagonal @ self.priors

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: categories, priors, fit, and per rater its labels, accuracy and confusion matrix."""
        acc = self.accuracy()
        return {
            "method": self.method,
            "categories": list(self.categories),
            "priors": self.priors.tolist(),
            "group_priors": None if self.group_priors is None else {
                str(_plain(g)): p.tolist() for g, p in zip(self.groups, self.group_priors, strict=True)},
            "iterations": self.iterations,
            "converged": self.converged,
            "log_likelihood": self.log_likelihood,
            "smoothing": self.smoothing,
            "raters": [
                {"rater": _plain(r), "n_labels": n, "accuracy": float(a), "confusion": c.tolist(),
                 "agreement": g.to_dict() if g is not None else None, "warnings": list(w)}
                for r, n, a, c, g, w in zip(self.raters, self.n_labels, acc, self.confusion,
                                            self.agreement or (None,) * len(self.raters),
                                            self.warnings() or ((),) * len(self.raters), strict=True)
            ],
        }


def dawid_skene(
    item: npt.ArrayLike,
    rater: npt.ArrayLike,
    label: npt.ArrayLike,
    *,
    categories: npt.ArrayLike | None = None,
    groups: npt.ArrayLike | None = None,
    smoothing: float = 0.01,
    max_iter: int = 500,
    tol: float = 1e-8,
    n_starts: int = 1,
    seed: RngLike = 0,
) -> RaterModel:
    """Fit Dawid and Skene's model of the raters by EM (module docstring).

    Args:
        item: Item (answer) id of each label.
        rater: Rater id of each label.
        label: The label (a level of the scale; 0/1 for pass verdicts).
        categories: The scale's levels (default: the labels seen). Every label must be one.
        groups: Optional group of each label's item (one group per item), for class priors per
            group (module docstring).
        smoothing: Pseudo-count added to each confusion cell and class count (> 0 keeps every
            label possible for every category; 0 is plain maximum likelihood).
        max_iter: EM iterations at most, per start.
        tol: Stop when the penalised log-likelihood improves by less than ``tol`` times its size.
        n_starts: Starts: the vote shares, plus ``n_starts − 1`` perturbed by random posteriors.
        seed: Seed (or generator) of the perturbed starts.

    Returns:
        A :class:`RaterModel`.

    Raises:
        ValueError: On unequal lengths, missing values, a label outside ``categories``, a rater
            labelling one item twice, an item in two groups, bad options, or no item labelled by
            two or more raters
            (with one label per item a rater's confusion cannot be told from the items').

    Examples:
        >>> # Three careful raters and one who always says 1: the model finds it out.
        >>> item = [i for i in range(6) for _ in range(4)]
        >>> truth = [0, 1, 0, 1, 1, 0]
        >>> label = [v for t in truth for v in (t, t, t, 1)]
        >>> m = dawid_skene(item, ["a", "b", "c", "d"] * 6, label)
        >>> m.mode().tolist()
        [0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
        >>> [round(float(a), 2) for a in m.accuracy()]
        [1.0, 1.0, 1.0, 0.5]
    """
    func = "dawid_skene"
    items, i_idx = _codes(func, "item", item)
    raters, r_idx = _codes(func, "rater", rater)
    y = np.asarray(label, dtype=float).ravel()
    if not (i_idx.size == r_idx.size == y.size):
        raise ValueError(f"{func}: item, rater and label must have one entry per label; got "
                         f"{i_idx.size}, {r_idx.size}, {y.size}")
    if y.size == 0 or not np.isfinite(y).all():
        raise ValueError(f"{func}: labels must be present and finite (drop unlabelled rows first)")
    cats = np.unique(y) if categories is None else np.unique(np.asarray(categories, dtype=float))
    l_idx = np.searchsorted(cats, y)
    bad = (l_idx >= cats.size) | (cats[np.minimum(l_idx, cats.size - 1)] != y)
    if bad.any():
        raise ValueError(f"{func}: label {y[bad][0]:g} is not one of the categories {cats.tolist()}")
    _check_options(func, smoothing, max_iter, tol, n_starts)
    pair = i_idx.astype(np.int64) * len(raters) + r_idx
    if np.unique(pair).size < pair.size:
        raise ValueError(f"{func}: a rater labelled one item twice; pass each rater's current label only")
    per_item = np.bincount(i_idx, minlength=len(items))
    if per_item.max() < 2:
        raise ValueError(f"{func}: no item has labels from two or more raters, so a rater's confusion cannot be "
                         "told from the items' categories; have some items labelled by several raters")
    group_names, item_group = _item_groups(func, groups, i_idx, len(items))
    data = _Labels(i_idx, r_idx, l_idx, len(items), len(raters), cats.size, item_group, len(group_names))
    votes = np.zeros((data.n_items, data.k))
    np.add.at(votes, (i_idx, l_idx), 1.0)
    votes /= votes.sum(axis=1, keepdims=True)
    rng = as_rng(seed)
    best: _Fit | None = None
    for start in range(n_starts):
        init = votes if start == 0 else 0.5 * votes + 0.5 * rng.dirichlet(np.ones(data.k), size=data.n_items)
        fit = _em(data, init, smoothing=smoothing, max_iter=max_iter, tol=tol)
        if best is None or fit.objective > best.objective + 1e-9 * abs(best.objective):
            best = fit
    assert best is not None
    agreement, top = _agreement(data, best, cats, rng)
    method = (f"Dawid-Skene EM (pseudo-count {smoothing:g}, {best.iterations} iterations, "
              f"{'converged' if best.converged else 'NOT converged'}; {n_starts} start(s))")
    return RaterModel(
        categories=tuple(float(c) for c in cats),
        items=tuple(_plain(v) for v in items),
        raters=tuple(_plain(v) for v in raters),
        posterior=best.posterior,
        confusion=best.confusion,
        priors=best.posterior.mean(axis=0) if groups is not None else best.priors[0],
        n_labels=tuple(int(n) for n in np.bincount(r_idx, minlength=len(raters))),
        log_likelihood=best.log_likelihood,
        iterations=best.iterations,
        converged=best.converged,
        smoothing=float(smoothing),
        method=method + (f"; class priors per group ({len(group_names)} groups)" if groups is not None else ""),
        groups=tuple(_plain(g) for g in group_names) if groups is not None else (),
        group_priors=best.priors if groups is not None else None,
        agreement=agreement,
        top_label=top,
    )


def _item_groups(
    func: str, groups: npt.ArrayLike | None, i_idx: npt.NDArray[np.intp], n_items: int
) -> tuple[npt.NDArray[Any], npt.NDArray[np.intp]]:
    """The group names and each item's group code (one group, ``0``, without ``groups``)."""
    if groups is None:
        return np.array([None], dtype=object), np.zeros(n_items, np.intp)
    names, g_idx = _codes(func, "group", groups)
    if g_idx.size != i_idx.size:
        raise ValueError(f"{func}: groups must have one entry per label; got {g_idx.size} for {i_idx.size} labels")
    item_group = np.full(n_items, -1, np.intp)
    item_group[i_idx] = g_idx
    if (item_group[i_idx] != g_idx).any():
        raise ValueError(f"{func}: an item has labels in two groups; give each item one group")
    return names, item_group


@dataclass(frozen=True)
class _Labels:
    """The labels as integer codes."""

    item: npt.NDArray[np.intp]
    rater: npt.NDArray[np.intp]
    label: npt.NDArray[np.intp]
    n_items: int
    n_raters: int
    k: int
    group: npt.NDArray[np.intp]  # each item's group
    n_groups: int


@dataclass(frozen=True)
class _Fit:
    posterior: npt.NDArray[np.float64]
    confusion: npt.NDArray[np.float64]
    priors: npt.NDArray[np.float64]  # (n_groups, K)
    log_likelihood: float
    objective: float
    iterations: int
    converged: bool


def _m_step(
    data: _Labels, posterior: npt.NDArray[np.float64], smoothing: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Priors and confusion matrices that the posteriors imply (with the pseudo-counts)."""
    # counts[r, k, l] = Σ posterior[item, k] over the labels l that rater r gave (one bincount per k).
    flat = data.rater * data.k + data.label
    size = data.n_raters * data.k
    counts = np.stack([np.bincount(flat, weights=posterior[data.item, k], minlength=size).reshape(data.n_raters, data.k)
                       for k in range(data.k)], axis=1) + smoothing
    totals = counts.sum(axis=2, keepdims=True)
    # A rater with no weight on a category (possible only without smoothing) gets a uniform row.
    confusion = np.divide(counts, totals, out=np.full_like(counts, 1.0 / data.k), where=totals > 0)
    priors = np.stack([np.bincount(data.group, weights=posterior[:, k], minlength=data.n_groups)
                       for k in range(data.k)], axis=1) + smoothing
    return priors / priors.sum(axis=1, keepdims=True), confusion


def _log_joint(
    data: _Labels, priors: npt.NDArray[np.float64], confusion: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``log p(z = k, labels of the item)`` per item and category, and each label's ``log π_r[k, l]`` term."""
    with np.errstate(divide="ignore"):
        log_conf = np.log(confusion)
        log_joint = np.log(priors)[data.group]
    per_label = log_conf[data.rater, :, data.label]
    for k in range(data.k):
        log_joint[:, k] += np.bincount(data.item, weights=per_label[:, k], minlength=data.n_items)
    return log_joint, per_label


def _normalise(log_joint: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Rows of probabilities from rows of log weights, and each row's log normaliser."""
    # log Σ_k exp(·) per row, shifted by the row maximum (scipy's logsumexp costs more than the EM step).
    top = log_joint.max(axis=1, keepdims=True)
    norm = top + np.log(np.exp(log_joint - top).sum(axis=1, keepdims=True))
    return np.exp(log_joint - norm), norm


def _e_step(
    data: _Labels, priors: npt.NDArray[np.float64], confusion: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.float64], float]:
    """Each item's posterior over its true category, and the log-likelihood of the labels."""
    posterior, norm = _normalise(_log_joint(data, priors, confusion)[0])
    return posterior, float(norm.sum())


def _agreement(
    data: _Labels, fit: _Fit, cats: npt.NDArray[np.float64], rng: np.random.Generator
) -> tuple[tuple[Estimate, ...], tuple[tuple[float, float], ...]]:
    """Each rater's chance-corrected accuracy under the model, and their most given label with its share.

    For rater ``r``, on the answers they share with another rater: their confusion ``π`` from
    their labels and the fit's posteriors (the M step), the true categories' shares ``p`` (the
    posteriors' mean there), accuracy ``p_o = Σ_k p_k π[k, k]`` and the accuracy ``p_e = Σ_k p_k
    m_k`` of a rater who gives labels at ``r``'s rates ``m = p π`` whatever the answer:
    ``kappa = (p_o − p_e) / (1 − p_e)``. A random rater's rows of ``π`` are alike and one who always
    says 3 has every row on 3: both give 0, whatever their accuracy reads (the share of the category
    they happen to favour). The interval is a percentile bootstrap over ``r``'s shared answers
    (:data:`AGREEMENT_RESAMPLES`), the posteriors held at the fit's.
    """
    shared = np.bincount(data.item, minlength=data.n_items)[data.item] > 1
    out: list[Estimate] = []
    top: list[tuple[float, float]] = []
    for r in range(data.n_raters):
        mine = data.rater == r
        counts = np.bincount(data.label[mine], minlength=data.k)
        top.append((float(cats[int(np.argmax(counts))]), float(counts.max() / max(counts.sum(), 1))))
        rows = mine & shared
        n = int(rows.sum())
        if n < 2:
            out.append(Estimate(float("nan"), float("nan"), float("nan"), n, _AGREEMENT_METHOD, "kappa"))
            continue
        post = fit.posterior[data.item[rows]]
        onehot = np.eye(data.k)[data.label[rows]]
        kappa = _kappa(np.ones((1, n)), post, onehot)[0]
        # Each resample as counts of the answers it draws: (resamples x n), not (resamples x n x K).
        picks = rng.integers(0, n, size=(AGREEMENT_RESAMPLES, n))
        weights = np.zeros((AGREEMENT_RESAMPLES, n))
        np.add.at(weights, (np.arange(AGREEMENT_RESAMPLES)[:, None], picks), 1.0)
        lo, hi = percentile_interval(_kappa(weights, post, onehot), 0.95)
        out.append(Estimate(float(kappa), lo, hi, n, _AGREEMENT_METHOD, "kappa"))
    return tuple(out), tuple(top)


def _kappa(weights: npt.NDArray[np.float64], post: npt.NDArray[np.float64],
           onehot: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Kappa of the confusion each row of ``weights`` (how often each answer counts) implies (:func:`_agreement`)."""
    # joint[b, k, l] = Σ_i w_bi · post[i, k] · 1[label_i = l]: the M step's counts, per resample.
    joint = np.einsum("bi,ik,il->bkl", weights, post, onehot, optimize=True)
    shares = joint.sum(axis=2)  # Σ_i w_bi · post[i, k]
    total = shares.sum(axis=1)
    p_o = np.trace(joint, axis1=1, axis2=2) / total
    p_e = (shares * joint.sum(axis=1)).sum(axis=1) / total**2
    with np.errstate(invalid="ignore", divide="ignore"):
        # p_e = 1: every answer in one category and the rater always saying it; no evidence either way.
        return np.where(p_e < 1 - 1e-12, (p_o - p_e) / (1 - p_e), 0.0)


def _em(data: _Labels, init: npt.NDArray[np.float64], *, smoothing: float, max_iter: int, tol: float) -> _Fit:
    """EM from one starting posterior, until the penalised log-likelihood stops improving."""
    previous = -np.inf
    converged = False
    iterations = 0
    priors, confusion = _m_step(data, init, smoothing)
    objective = -np.inf
    while iterations < max_iter and not converged:
        iterations += 1
        posterior, log_lik = _e_step(data, priors, confusion)
        priors, confusion = _m_step(data, posterior, smoothing)
        # The Dirichlet prior's log density (up to a constant): what MAP-EM climbs besides the likelihood.
        with np.errstate(divide="ignore"):
            penalty = float(np.log(confusion).sum()) + float(np.log(priors).sum()) if smoothing else 0.0
        objective = log_lik + smoothing * penalty
        converged = abs(objective - previous) <= tol * max(1.0, abs(objective))
        previous = objective
    # The posterior that goes with the final parameters.
    posterior, log_lik = _e_step(data, priors, confusion)
    return _Fit(posterior, confusion, priors, log_lik, objective, iterations, converged)


def _codes(func: str, name: str, values: npt.ArrayLike) -> tuple[npt.NDArray[Any], npt.NDArray[np.intp]]:
    arr = np.asarray(values).ravel()
    if arr.dtype == object and any(v is None or (isinstance(v, float) and v != v) for v in arr):
        raise ValueError(f"{func}: {name} ids must not be missing")
    uniques, codes = np.unique(arr.astype(str) if arr.dtype == object else arr, return_inverse=True)
    return uniques, codes.ravel().astype(np.intp)


def _check_options(func: str, smoothing: float, max_iter: int, tol: float, n_starts: int) -> None:
    if not (np.isfinite(smoothing) and smoothing >= 0):
        raise ValueError(f"{func}: smoothing must be a non-negative number; got {smoothing!r}")
    for name, value in (("max_iter", max_iter), ("n_starts", n_starts)):
        if not (isinstance(value, int) and value >= 1):
            raise ValueError(f"{func}: {name} must be a whole number of at least 1; got {value!r}")
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"{func}: tol must be a positive number; got {tol!r}")


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _two(x: float) -> str:
    """``x`` to two decimals, never ``-0.00``."""
    return f"{round(x, 2) + 0.0:.2f}"
