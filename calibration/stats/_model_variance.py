"""The rater model's own variance in the residuals: refit it on task resamples, widen the interval.

Under a model of the raters (:func:`judgelab.calibration.stats.dawid_skene`) every answer's human score
comes from confusions and class priors estimated from the same labels, so the scores of all
answers move together when those estimates move. The residuals' linearised variance treats each
answer's score as fixed and misses that: with 30 tasks and five raters the own family's residual
varied with a standard deviation of 16.6 points against a linearised 13.1, and the gap's intervals
held the truth in 83% of datasets (``bench/rater_model.py``).

:func:`model_refit_spread` resamples whole tasks (within strata when the design has them), refits
the model on each resample from the full fit's posteriors (warm start) and returns the standard
deviation of each figure over the refits. :func:`with_model_variance` adds to an estimate's
variance the part of that spread its design part does not already carry::

    se² ← se² + max(0, sd²_refit − se²_design)

so the interval keeps its raters' part ("raters like these") and its degrees of freedom.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import special

from judgelab.calibration.stats._bootstrap import RngLike, as_rng
from judgelab.calibration.stats._dawid_skene import _em, _Labels
from judgelab.calibration.stats._result import Estimate

__all__ = ["model_refit_spread", "with_model_variance"]

_FACTOR = {"pass": 100.0, "score": 1.0}


def model_refit_spread(
    labels: pd.DataFrame,
    *,
    answer_ids: npt.ArrayLike,
    judge: npt.ArrayLike,
    family: npt.ArrayLike,
    task: npt.ArrayLike,
    categories: npt.ArrayLike,
    own_family: str | None = None,
    weights: npt.ArrayLike | None = None,
    strata: npt.ArrayLike | None = None,
    scale: str = "pass",
    smoothing: float = 0.01,
    n_refits: int = 100,
    seed: RngLike = 0,
) -> dict[str, float]:
    """Standard deviation of each family's residual (and the gap) over refits on task resamples.

    Args:
        labels: ``answer, rater, score``: the labels of the analysed answers (rows with a
            ``people`` above 1, annotator means, are left out).
        answer_ids: The analysed answers, one per row of ``judge``.
        judge: The judge's verdict or score per answer.
        family: Each answer's family (also the model's prior group, as in the report).
        task: Each answer's sampling cluster.
        categories: The scale's levels.
        own_family: The judge's family, for the gap (own minus the mean of the others).
        weights: Design weights (Hajek means), or ``None``.
        strata: Design strata of the answers (tasks are resampled within them), or ``None``.
        scale: ``"pass"`` (percentage points) or ``"score"``.
        smoothing: The model's pseudo-count.
        n_refits: Task resamples.
        seed: Seed or generator.

    Returns:
        ``{family: sd, ..., "gap": sd}`` in the figures' units (``gap`` only with ``own_family``
        and two or more families).
    """
    if "people" in labels.columns:
        # A mean of several people (an imported annotator mean) is no rater's label: the model is
        # fitted to single raters' labels (judgelab.calibration.calibrate.fit_rater_models), refits too.
        labels = labels[pd.to_numeric(labels["people"]).fillna(1) <= 1]
    ids = pd.Index(np.asarray(answer_ids).astype(str))
    j = np.asarray(judge, dtype=float)
    fam_names, fam = np.unique(np.asarray(family).astype(str), return_inverse=True)
    w = np.ones(ids.size) if weights is None else np.asarray(weights, dtype=float)
    cats = np.unique(np.asarray(categories, dtype=float))
    row = ids.get_indexer(labels["answer"].astype(str).to_numpy())
    keep = row >= 0
    row = row[keep]
    rater = np.unique(labels["rater"].astype(str).to_numpy()[keep], return_inverse=True)[1].ravel()
    lab = np.searchsorted(cats, labels["score"].to_numpy(dtype=float)[keep])
    n_raters = int(rater.max()) + 1
    full = _Labels(row, rater, lab, ids.size, n_raters, cats.size, fam.ravel(), fam_names.size)
    votes = np.zeros((ids.size, cats.size))
    np.add.at(votes, (row, lab), 1.0)
    start = _em(full, votes / np.maximum(votes.sum(axis=1, keepdims=True), 1), smoothing=smoothing,
                max_iter=500, tol=1e-8).posterior
    tasks = np.unique(np.asarray(task).astype(str), return_inverse=True)[1].ravel()
    answers_of = [np.flatnonzero(tasks == t) for t in range(int(tasks.max()) + 1)]
    labels_of = [np.flatnonzero(row == a) for a in range(ids.size)]
    groups = _strata_of_tasks(strata, tasks, len(answers_of))
    gen = as_rng(seed)
    figures: list[dict[str, float]] = []
    for _ in range(n_refits):
        drawn = np.concatenate([gen.choice(members, size=members.size) for members in groups])
        ans = np.concatenate([answers_of[t] for t in drawn])
        lab_rows = [labels_of[a] for a in ans]
        item = np.repeat(np.arange(ans.size), [x.size for x in lab_rows])
        src = np.concatenate(lab_rows)
        data = _Labels(item, rater[src], lab[src], ans.size, n_raters, cats.size, fam.ravel()[ans], fam_names.size)
        fit = _em(data, start[ans], smoothing=smoothing, max_iter=200, tol=1e-6)
        human = fit.posterior @ cats
        figures.append(_figures(j[ans] - human, fam.ravel()[ans], w[ans], fam_names, own_family, _FACTOR[scale]))
    frame = pd.DataFrame(figures)
    return {str(k): float(v) for k, v in frame.std(ddof=1).items()}


def _strata_of_tasks(strata: npt.ArrayLike | None, tasks: npt.NDArray[np.intp], n_tasks: int) -> list[Any]:
    """The task codes of each stratum (one stratum of every task without a design)."""
    if strata is None:
        return [np.arange(n_tasks)]
    st = np.asarray(strata).astype(str)
    first = np.zeros(n_tasks, dtype=object)
    first[tasks] = st
    return [np.flatnonzero(first == s) for s in np.unique(first)]


def _figures(
    diff: npt.NDArray[np.float64], fam: npt.NDArray[np.intp], w: npt.NDArray[np.float64],
    names: npt.NDArray[Any], own: str | None, factor: float,
) -> dict[str, float]:
    total = np.bincount(fam, weights=w, minlength=names.size)
    res = factor * np.bincount(fam, weights=w * diff, minlength=names.size) / np.where(total > 0, total, np.nan)
    out = {str(n): float(r) for n, r in zip(names, res, strict=True)}
    if own is not None and own in out and names.size > 1:
        others = [out[str(n)] for n in names if str(n) != own]
        out["gap"] = out[own] - float(np.mean(others))
    return out


def with_model_variance(estimate: Estimate, design: Estimate, refit_sd: float, n_refits: int) -> Estimate:
    """``estimate`` with the model's variance beyond its design part added (module docstring).

    Args:
        estimate: The figure with its full interval (e.g. for raters like these).
        design: The same figure with the interval for this panel only (its ``se`` is the design part).
        refit_sd: :func:`model_refit_spread`'s standard deviation of the figure.
        n_refits: The refits behind it (for the method line).

    Returns:
        The estimate with ``se``, the interval and the method widened; ``extra`` gains
        ``model_sd`` and ``model_added`` (the variance added).
    """
    se, df = float(estimate.extra.get("se", math.nan)), float(estimate.extra.get("df", math.nan))
    se_design = float(design.extra.get("se", math.nan))
    if not (math.isfinite(se) and math.isfinite(se_design) and math.isfinite(refit_sd)):
        return estimate
    added = max(0.0, refit_sd**2 - se_design**2)
    new_se = math.sqrt(se**2 + added)
    q = float(special.stdtrit(max(df, 1.0) if math.isfinite(df) else 1.0, 0.5 + estimate.level / 2))
    extra = {**estimate.extra, "se": new_se, "model_sd": refit_sd, "model_added": added,
             "interval": f"{estimate.extra.get('interval', '')}, model refit"}
    method = (f"{estimate.method}; the rater model's own variance: refitted on {n_refits} task resamples (sd "
              f"{refit_sd:.3g}), {'added beyond' if added > 0 else 'within'} the design part")
    return dataclasses.replace(estimate, ci_low=estimate.estimate - q * new_se, ci_high=estimate.estimate + q * new_se,
                               method=method, extra=extra)
