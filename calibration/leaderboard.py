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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from calibration.stats import Estimate, length_controlled_win_rate

__all__ = ["WinRateRow", "win_rate", "win_rates"]

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
            text += f"; length-controlled {lc.estimate * 100:.2f}% ({lc.ci_low * 100:.2f} to {lc.ci_high * 100:.2f})"
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
        length_controlled: Also fit :func:`calibration.stats.length_controlled_win_rate` (the
            length difference in characters regressed out; a bootstrap of ``n_resamples`` fits).
        n_resamples: Bootstrap resamples for the length-controlled interval.
        rng: Seed or generator for that bootstrap.

    Returns:
        One row per judge, model and opponent, sorted by judge then falling win rate.
    """
    j = judgements[judgements["answer_b_id"].notna()]
    if judge_model is not None:
        j = j[j["judge_model"] == judge_model]
    model_of = dict(zip(answers["answer_id"], answers["model"], strict=True))
    length_of = {a: len(str(t)) for a, t in zip(answers["answer_id"], answers["text"], strict=True)}
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
    groups: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for (judge, m, o, a, b), wins in items.items():
        groups.setdefault((judge, m, o), []).append((float(np.mean(wins)), length_of[a] - length_of[b]))
    rows = []
    for (judge, m, o), pairs in groups.items():
        wins_arr, diffs = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs], dtype=float)
        lc = length_controlled_win_rate(wins_arr, diffs, n_resamples=n_resamples, rng=rng) \
            if length_controlled else None
        rows.append(WinRateRow(judge, m, o, win_rate(wins_arr), unparsed.get((judge, m, o), 0), lc))
    return sorted(rows, key=lambda r: (r.judge_model, -r.win_rate.estimate, r.model))
