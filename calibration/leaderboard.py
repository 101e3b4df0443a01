"""Win rates of models against each other from pairwise judgements: a leaderboard's figures.

AlpacaEval's win rate (``alpaca_eval.metrics.get_winrate``) is the mean, over instructions, of
``preference − 1``: 1 when the model's output won, 0 when the baseline's did, 0.5 for a draw
and a fraction for a weighted annotator; its standard error is that mean's. judgelab reads the
same figure from any pairwise judgements: a judgement's score about one answer (``+1`` better,
``−1`` worse, ``0`` a tie; fractions kept; a stronger verdict such as ``+2`` counts as ``+1``)
becomes the win ``(score + 1) / 2`` clipped to ``[0, 1]``. Judgements of the same two answers
(both shown orders, or repeats) are averaged first, so a pair of answers is one item.

    >>> r = win_rate([1, 0, 0.5, 1])
    >>> round(r.estimate, 1), r.n, r.extra["discrete_win_rate"]
    (62.5, 4, 62.5)

**Length-controlled win rate.** AlpacaEval 2.0's LC (``alpaca_eval.metrics.glm_winrate``,
``length_controlled_v1``) fits, for each model, ``logit P(win) = θ_len·tanh(Δlen / sd) +
θ_diff·difficulty(instruction) + θ_0`` and averages the prediction at ``Δlen = 0``; the
instruction's difficulty is a fixed number per instruction, learnt once by a joint fit over the
whole leaderboard (``notebooks/instruction_difficulty.ipynb``: a slope and a bias per model and
a coefficient per instruction). :func:`leaderboard_length_controlled` does both steps on the
models imported against one baseline: AlpacaEval's GLM, refitted on those rows only, which every
figure says (``extra["estimand"]``, :data:`LEADERBOARD_NOTE`): it is not the published LC.
Two inputs of the published figures cannot be had here and are not faked: the difficulty
AlpacaEval actually uses (``instruction_difficulty.csv``, fitted in early 2024 on fewer models,
on the Hugging Face Hub) and the annotations of the two "gamed" baselines
(``gpt4_1106_preview_verbose``/``_concise``) it regularises each fit towards with weight 0.1
each; the fit here learns the difficulty from the models given and has no gamed rows. On the
56 AlpacaEval 2.0 models in ``tests/data/alpaca_eval_lc`` this lands a median 0.6 points from
the published LC, up to 16 (gpt4_gamed, the adversarial model the gamed rows are there for);
claude-2.1: 27.69 against 25.25. With fewer than :data:`MIN_LEADERBOARD_MODELS` models,
:func:`win_rates` fits length only (:func:`judgelab.calibration.stats.length_controlled_win_rate`): a
different estimand, a median 4.7 and up to 27 points from the published LC on those 56 models
(claude-2.1: 32.4).
"""

from __future__ import annotations

import inspect
import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import scipy.sparse as sparse
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from judgelab.calibration.stats import Estimate, length_controlled_win_rate

__all__ = ["LEADERBOARD_NOTE", "LENGTH_ONLY_NOTE", "MIN_LEADERBOARD_MODELS", "WinRateRow",
           "leaderboard_length_controlled", "win_rate", "win_rates"]

MIN_LEADERBOARD_MODELS = 5
"""Models against one baseline from which :func:`win_rates` learns the instructions' difficulty.

An instruction's difficulty is one coefficient fitted from one judgement per model: with a
handful of models it mostly re-fits the model's own judgements, so below this the length-only
fit is used and said to be a different estimand."""

# The same number of AlpacaEval 2.0 models, and how far each fit lands from the published LC
# there, as the docs and the length-only note say (tests/test_alpaca_eval_lc.py recomputes them).
LENGTH_ONLY_NOTE = ("length only, fitted on these {n} rows only: a different estimand from AlpacaEval's LC, which "
                    "also learns each instruction's difficulty across its leaderboard (import "
                    f"{MIN_LEADERBOARD_MODELS} or more models against this baseline to fit it); on 56 AlpacaEval 2.0 "
                    "models the two differ by a median 4.7 and up to 27 percentage points")
"""The estimand of a length-only fit (``{n}``: the model's judgements it was fitted on)."""

LEADERBOARD_NOTE = ("AlpacaEval 2.0's length-controlled GLM refitted on these {rows} rows only ({models} models "
                    "against this baseline, instruction difficulty learnt from them, no gamed-baseline rows): not "
                    "the leaderboard's fit, so not its published LC")
"""The estimand of :func:`leaderboard_length_controlled` (what was fitted, and that it is not the published LC).

AlpacaEval's published LC comes from its difficulty vector fitted once on its whole leaderboard
and two gamed baselines (Hugging Face Hub only); the same GLM refitted on other rows lands near it
but not on it (claude-2.1: 27.69 against the published 25.25 on the 56 models of
``tests/data/alpaca_eval_lc``), so every figure says which fit it is."""

_METHOD = ("mean of per-item wins (1 win, 0 loss, 0.5 tie, fractions as given); t interval on the standard "
           "error of the mean (AlpacaEval's standard_error)")


def win_rate(wins: npt.ArrayLike, *, level: float = 0.95) -> Estimate:
    """The win rate, in percent, of soft wins in ``[0, 1]``, as AlpacaEval computes it.

    Args:
        wins: One value per item: 1 a win, 0 a loss, 0.5 a tie, any fraction between.
        level: Confidence level of the interval.

    Returns:
        Estimate in percent with ``n`` items; ``extra`` holds ``standard_error`` (percent),
        ``n_wins`` (above 0.5), ``n_losses``, ``n_draws`` and ``discrete_win_rate`` (each item
        rounded to a win, a loss or a draw first, as AlpacaEval's ``discrete_win_rate``).

    Raises:
        ValueError: No items, or a value outside ``[0, 1]``.
    """
    w = np.asarray(wins, dtype=float)
    if w.ndim != 1 or w.size == 0:
        raise ValueError("win_rate: wins must be a non-empty 1-D array")
    if not np.all((w >= 0) & (w <= 1)):
        raise ValueError("win_rate: wins must lie in [0, 1] (1 win, 0 loss, 0.5 tie)")
    mean = float(w.mean()) * 100
    sem = float(stats.sem(w)) * 100 if w.size > 1 else math.nan
    if w.size > 1 and sem > 0:
        low, high = stats.t.interval(level, w.size - 1, loc=mean, scale=sem)
    else:
        low, high = (mean, mean) if w.size > 1 else (math.nan, math.nan)
    discrete = np.where(w > 0.5, 1.0, np.where(w < 0.5, 0.0, 0.5))
    return Estimate(mean, float(low), float(high), int(w.size), _METHOD, "percent", level, extra={
        "standard_error": sem, "n_wins": int((w > 0.5).sum()), "n_losses": int((w < 0.5).sum()),
        "n_draws": int((w == 0.5).sum()), "discrete_win_rate": float(discrete.mean()) * 100,
    })


@dataclass(frozen=True)
class WinRateRow:
    """One model's win rate against one opponent under one judge.

    Attributes:
        judge_model: The judge.
        model: The model whose answers the win rate is about.
        opponent: The model they were compared with (the baseline).
        win_rate: The win rate (:func:`win_rate`).
        unparsed: Judgements of these two models with no verdict (left out, as AlpacaEval does).
        length_controlled: The length-controlled win rate, when asked for.
    """

    judge_model: str
    model: str
    opponent: str
    win_rate: Estimate
    unparsed: int
    length_controlled: Estimate | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"judge_model": self.judge_model, "model": self.model, "opponent": self.opponent,
                "win_rate": self.win_rate.to_dict(), "unparsed": self.unparsed,
                "length_controlled": None if self.length_controlled is None else self.length_controlled.to_dict()}

    def line(self) -> str:
        """One line for a terminal."""
        wr = self.win_rate
        text = (f"{self.model} vs {self.opponent} (judge {self.judge_model}): win rate {wr.estimate:.2f}% "
                f"± {wr.extra['standard_error']:.2f} (SE; {round(wr.level * 100)}% CI {wr.ci_low:.2f} to "
                f"{wr.ci_high:.2f}), n={wr.n}: {wr.extra['n_wins']} wins, {wr.extra['n_losses']} losses, "
                f"{wr.extra['n_draws']} draws; discrete {wr.extra['discrete_win_rate']:.2f}%")
        if self.unparsed:
            text += f"; {self.unparsed} without a verdict left out"
        if self.length_controlled is not None:
            lc = self.length_controlled
            text += (f"; length-controlled win rate {lc.estimate:.2f}% ({round(lc.level * 100)}% CI {lc.ci_low:.2f} "
                     f"to {lc.ci_high:.2f}; {lc.extra['estimand']})")
        return text


def win_rates(
    judgements: pd.DataFrame, answers: pd.DataFrame, *, judge_model: str | None = None,
    baseline: str | None = None, length_controlled: bool = False, n_resamples: int = 1000,
    rng: int | np.random.Generator | None = 0,
) -> list[WinRateRow]:
    """Each model's win rate against each opponent from pairwise judgements.

    Args:
        judgements: Rows as ``judgelab export judgements`` writes them (``score`` about
            ``answer_id``, whichever was shown first).
        answers: Rows as ``judgelab export answers`` writes them (``answer_id``, ``model``, ``text``).
        judge_model: Only this judge's judgements (default: every judge, each on its own rows).
        baseline: Report every model against this one (judgements are turned to face it);
            default: each judgement as stored, the model of ``answer_id`` against that of
            ``answer_b_id``.
        length_controlled: Also give the length-controlled win rate, in percent: AlpacaEval's GLM
            refitted on these rows (:func:`leaderboard_length_controlled`; not the published LC)
            when :data:`MIN_LEADERBOARD_MODELS` or more models were judged against the same
            opponent by the same judge; else the length-only fit
            (:func:`judgelab.calibration.stats.length_controlled_win_rate`, a bootstrap of ``n_resamples``
            fits). Each figure's ``extra["estimand"]`` says which it is.
        n_resamples: Bootstrap resamples for the length-only interval.
        rng: Seed or generator for that bootstrap.

    Returns:
        One row per judge, model and opponent, sorted by judge then falling win rate.
    """
    j = judgements[judgements["answer_b_id"].notna()]
    if judge_model is not None:
        j = j[j["judge_model"] == judge_model]
    model_of = dict(zip(answers["answer_id"], answers["model"], strict=True))
    task_of = dict(zip(answers["answer_id"], answers["task_id"], strict=True))
    length_of = {a: len(str(t)) for a, t in zip(answers["answer_id"], answers["text"], strict=True)}
    items, unparsed = _wins(j, model_of, baseline)
    groups: dict[tuple[str, str, str], list[tuple[float, float, str]]] = {}
    for (judge, m, o, a, b), wins in items.items():
        groups.setdefault((judge, m, o), []).append(
            (float(np.mean(wins)), length_of[a] - length_of[b], str(task_of[a])))
    lcs = _length_controlled(groups, n_resamples=n_resamples, rng=rng) if length_controlled else {}
    rows = [WinRateRow(judge, m, o, win_rate([p[0] for p in pairs]), unparsed.get((judge, m, o), 0),
                       lcs.get((judge, m, o))) for (judge, m, o), pairs in groups.items()]
    return sorted(rows, key=lambda r: (r.judge_model, -r.win_rate.estimate, r.model))


def _wins(
    j: pd.DataFrame, model_of: dict[str, str], baseline: str | None,
) -> tuple[dict[tuple[str, str, str, str, str], list[float]], dict[tuple[str, str, str], int]]:
    """Soft wins per (judge, model, opponent, answer, opponent's answer), and verdict-less calls per model pair."""
    items: dict[tuple[str, str, str, str, str], list[float]] = {}
    unparsed: dict[tuple[str, str, str], int] = {}
    for rec in j.to_dict("records"):
        a, b = str(rec["answer_id"]), str(rec["answer_b_id"])
        if a not in model_of or b not in model_of:
            continue  # a stored pair's anonymous answers: no model to rank
        score = rec["score"]
        win = None if score is None or (isinstance(score, float) and math.isnan(score)) else \
            min(1.0, max(0.0, (float(score) + 1) / 2))
        if baseline is not None and model_of[a] == baseline:
            a, b, win = b, a, None if win is None else 1 - win
        if baseline is not None and model_of[b] != baseline:
            continue
        key = (str(rec["judge_model"]), model_of[a], model_of[b])
        if win is None:
            unparsed[key] = unparsed.get(key, 0) + 1
            continue
        items.setdefault((*key, a, b), []).append(win)
    return items, unparsed


def _length_controlled(
    groups: dict[tuple[str, str, str], list[tuple[float, float, str]]], *, n_resamples: int,
    rng: int | np.random.Generator | None,
) -> dict[tuple[str, str, str], Estimate]:
    """The length-controlled win rate of each (judge, model, opponent) from its (win, Δlen, task) items.

    AlpacaEval's leaderboard GLM where enough models share a judge and an opponent; else length only.
    """
    out: dict[tuple[str, str, str], Estimate] = {}
    for judge, o in {(j, o) for j, _, o in groups}:
        models = [(m, groups[(j, m, oo)]) for j, m, oo in groups if (j, oo) == (judge, o) and m != o]
        if len(models) >= MIN_LEADERBOARD_MODELS:
            flat = [(m, *item) for m, its in models for item in its]
            fitted = leaderboard_length_controlled(
                [f[1] for f in flat], [f[2] for f in flat], [f[0] for f in flat], [f[3] for f in flat])
            out.update({(judge, m, o): est for m, est in fitted.items()})
            continue
        for m, its in models:
            share = length_controlled_win_rate([i[0] for i in its], [i[1] for i in its], n_resamples=n_resamples,
                                               rng=rng)
            out[(judge, m, o)] = _in_percent(share, LENGTH_ONLY_NOTE.format(n=len(its)))
    return out


def _in_percent(share: Estimate, estimand: str) -> Estimate:
    """A win rate given as a share in ``[0, 1]``, in percent like every other figure of the leaderboard."""
    return Estimate(share.estimate * 100, share.ci_low * 100, share.ci_high * 100, share.n, share.method,
                    "percent", share.level, extra={**share.extra, "estimand": estimand})


# -- AlpacaEval's length-controlled GLM -------------------------------------------------------------

# AlpacaEval's fit_LogisticRegressionCV: L1, liblinear, no intercept (the bias is a column),
# random_state 123, C chosen from LogisticRegressionCV's default grid by 5-fold CV on the soft
# log loss; the joint difficulty fit is run at its non-CV default C=100 (a CV over it would
# refit ~1,000 columns 50 times).
_CS = np.logspace(-4, 4, 10)
_JOINT_C = 100.0
_FOLDS = 5
_LC_METHOD = ("AlpacaEval's length_controlled_v1 GLM: per model, L1 logistic (liblinear, C by 5-fold CV) of the soft "
              "win on tanh(length difference / its sd), the instruction's difficulty and a bias, predicted at zero "
              "length difference and averaged over the model's instructions; difficulty learnt jointly over {n} "
              "models against the same baseline (per-model slope and bias, one coefficient per instruction; L1, "
              "C=100); no gamed-baseline rows. Interval: ±t × AlpacaEval's lc_standard_error (the standard error "
              "of the per-instruction predictions; it leaves out the fit's own uncertainty)")


def _l1_logistic(c: float) -> LogisticRegression:
    """An L1 logistic regression as AlpacaEval fits it, on scikit-learn before and after ``penalty`` went."""
    # scikit-learn 1.8 deprecated `penalty` for `l1_ratio` (its default became "deprecated").
    if inspect.signature(LogisticRegression).parameters["penalty"].default == "deprecated":
        return LogisticRegression(C=c, l1_ratio=1.0, solver="liblinear", fit_intercept=False, random_state=123,
                                  max_iter=1000)
    return LogisticRegression(C=c, penalty="l1", solver="liblinear", fit_intercept=False,  # pragma: no cover
                              random_state=123, max_iter=1000)


def _soft_fit(x: Any, wins: npt.NDArray[np.float64], c: float) -> npt.NDArray[np.float64]:
    """Coefficients of an L1 logistic fit on soft labels: each item once as a win (weight p), once as a loss."""
    n = len(wins)
    both = sparse.vstack([x, x]).tocsr() if sparse.issparse(x) else np.vstack([x, x])
    model = _l1_logistic(c)
    with warnings.catch_warnings():
        # liblinear warns when an L1 path stops at its iteration cap on a near-separable fold.
        warnings.simplefilter("ignore", category=UserWarning)
        model.fit(both, np.r_[np.ones(n), np.zeros(n)], sample_weight=np.r_[wins, 1 - wins])
    return np.asarray(model.coef_[0], dtype=float)


def _soft_log_loss(x: npt.NDArray[np.float64], wins: npt.NDArray[np.float64], coef: npt.NDArray[np.float64]) -> float:
    p = np.clip(1 / (1 + np.exp(-(x @ coef))), 1e-15, 1 - 1e-15)
    return float(-np.mean(wins * np.log(p) + (1 - wins) * np.log(1 - p)))


def _cv_fit(x: npt.NDArray[np.float64], wins: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], float]:
    """AlpacaEval's per-model fit: C by 5-fold CV (items as groups) on the soft log loss, then a refit."""
    if len(wins) < 2 * _FOLDS:
        return _soft_fit(x, wins, _JOINT_C), _JOINT_C
    folds = list(GroupKFold(n_splits=_FOLDS).split(x, groups=np.arange(len(wins))))
    losses = [sum(_soft_log_loss(x[test], wins[test], _soft_fit(x[train], wins[train], c)) for train, test in folds)
              for c in _CS]
    best = float(_CS[int(np.argmin(losses))])
    return _soft_fit(x, wins, best), best


def leaderboard_length_controlled(
    wins: npt.ArrayLike, len_diff: npt.ArrayLike, model: npt.ArrayLike, instruction: npt.ArrayLike, *,
    level: float = 0.95,
) -> dict[str, Estimate]:
    """AlpacaEval 2.0's length-controlled win rate of every model, in percent, the difficulty learnt across them.

    Args:
        wins: Per item, the model's soft win against the baseline in ``[0, 1]`` (AlpacaEval's
            ``preference − 1``; a draw 0.5).
        len_diff: Per item, the model's output length minus the baseline's (characters).
        model: Per item, the model.
        instruction: Per item, the instruction (one baseline output each; the difficulty is per
            instruction).
        level: Confidence level of the intervals.

    Returns:
        Per model, an Estimate in percent over ``n`` instructions; ``extra`` holds
        ``lc_standard_error`` (percent), the coefficients (``length``, ``difficulty``, ``bias``),
        the CV's ``C``, ``n_models`` and ``estimand``.

    Raises:
        ValueError: Arrays of different lengths, wins outside ``[0, 1]``, non-finite lengths, or
            fewer than two models.
    """
    w = np.asarray(wins, dtype=float)
    d = np.asarray(len_diff, dtype=float)
    m = np.asarray(model, dtype=object).astype(str)
    ins = np.asarray(instruction, dtype=object).astype(str)
    func = "leaderboard_length_controlled"
    if not (w.ndim == 1 and w.shape == d.shape == m.shape == ins.shape):
        raise ValueError(f"{func}: wins, len_diff, model and instruction must be 1-D of one length")
    if not np.all((w >= 0) & (w <= 1)) or not np.isfinite(d).all():
        raise ValueError(f"{func}: wins must lie in [0, 1] and lengths be finite")
    models, mi = np.unique(m, return_inverse=True)
    if len(models) < 2:
        raise ValueError(f"{func}: the difficulty is learnt across models; got {len(models)}")
    instructions, ii = np.unique(ins, return_inverse=True)
    # Δlen / sd within each model (pandas' sd, ddof=1, as AlpacaEval); a model whose outputs are
    # all as long as the baseline's has nothing to control.
    z = np.zeros_like(d)
    for k in range(len(models)):
        sel = mi == k
        sd = float(np.std(d[sel], ddof=1)) if sel.sum() > 1 else 0.0
        z[sel] = d[sel] / sd if sd > 0 else 0.0
    t = np.tanh(z)
    n, rows = len(w), np.arange(len(w))
    # Joint fit: a slope and a bias per model, one coefficient per instruction (the first is the
    # reference, 0, as patsy's treatment coding in AlpacaEval's notebook).
    keep = ii > 0
    x_joint = sparse.hstack([
        sparse.csr_matrix((t, (rows, mi)), shape=(n, len(models))),
        sparse.csr_matrix((np.ones(n), (rows, mi)), shape=(n, len(models))),
        sparse.csr_matrix((np.ones(keep.sum()), (rows[keep], ii[keep] - 1)), shape=(n, len(instructions) - 1)),
    ]).tocsr()
    difficulty = np.r_[0.0, _soft_fit(x_joint, w, _JOINT_C)[2 * len(models):]]
    out: dict[str, Estimate] = {}
    for k, name in enumerate(models):
        sel = mi == k
        x = np.c_[t[sel], difficulty[ii[sel]], np.ones(sel.sum())]
        ws = w[sel]
        if ws.min() == ws.max():  # all wins or all losses: nothing to fit
            coef, c = np.array([0.0, 0.0, 0.0]), math.nan
            p0 = np.full(sel.sum(), ws[0])
        else:
            coef, c = _cv_fit(x, ws)
            p0 = 1 / (1 + np.exp(-(coef[1] * difficulty[ii[sel]] + coef[2])))
        est = float(p0.mean()) * 100
        se = float(stats.sem(p0)) * 100 if p0.size > 1 else math.nan
        half = float(stats.t.ppf(0.5 + level / 2, p0.size - 1)) * se if p0.size > 1 else math.nan
        out[str(name)] = Estimate(est, est - half, est + half, int(p0.size), _LC_METHOD.format(n=len(models)),
                                  "percent", level, extra={
                                      "lc_standard_error": se, "length": float(coef[0]), "difficulty": float(coef[1]),
                                      "bias": float(coef[2]), "C": c, "n_models": len(models),
                                      "estimand": LEADERBOARD_NOTE.format(rows=n, models=len(models))})
    return out
