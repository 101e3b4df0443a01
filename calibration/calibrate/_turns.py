"""The per-turn view: judge minus human by where a turn sits in its conversation.

A rubric with ``turn = "each"`` has raters score every assistant turn (``turn_scores``) and the
judge score every turn in a call of its own (``judgelab score``, probe
:data:`~judgelab.calibration.calibrate._model.SCORE_TURN_PROBE`). Per turn, the human score is the mean
of its raters' turn scores, the judge score the turn's first parsed judgement in the rubric's own
scale; their difference is averaged over the turns at each position (first, middle, last) and
each turn number. Turns of one conversation are not independent (one rater, one judge reading,
one agent), so the interval is a percentile bootstrap over conversations
(:func:`judgelab.calibration.stats.cluster_bootstrap`), not over turns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgelab.calibration.calibrate._load import CalibrationData
from judgelab.calibration.calibrate._model import ReportOptions, TurnPosition, TurnRow, TurnSection
from judgelab.calibration.stats import Estimate, cluster_bootstrap, weighted_mean

__all__ = ["turn_position", "turn_section"]

_ORDER: tuple[TurnPosition, ...] = ("first", "middle", "last")


def turn_position(turn: int, n_turns: int) -> TurnPosition:
    """Where turn ``turn`` of ``n_turns`` sits; a lone turn is the conversation's last (its final answer).

    >>> [turn_position(t, 3) for t in (1, 2, 3)], turn_position(1, 1)
    (['first', 'middle', 'last'], 'last')
    """
    if turn >= n_turns:
        return "last"
    return "first" if turn == 1 else "middle"


def turn_section(data: CalibrationData, opts: ReportOptions) -> TurnSection:
    """The per-turn view of a run; empty with the reason when there is nothing to compare.

    Args:
        data: The loaded run (its per-turn judgements and the raters' turn scores).
        opts: Seed, resamples and confidence level of the bootstrap.

    Returns:
        A :class:`TurnSection`; ``reason`` says why it is empty (no per-turn labels, no per-turn
        judgements, judgements on another scale, none of the same turns).
    """
    rubric = data.rubric
    humans, judged = data.turn_labels, data.turn_judgements
    if rubric.turn != "each":
        return TurnSection(reason=f"the rubric rates turn = {rubric.turn!r}, not each turn: no per-turn labels")
    if humans.empty:
        return TurnSection(reason="no per-turn labels: no rater has scored the turns of a conversation yet")
    if judged.empty:
        return TurnSection(reason="the run has no per-turn judgements (`judgelab score` under this rubric makes them)")
    own = judged[judged["format"] == rubric.scale]
    if own.empty:
        return TurnSection(reason=f"the run's per-turn judgements are not on the rubric's scale {rubric.scale}")
    judge = (own.sort_values("judgement_id", kind="stable").drop_duplicates(["answer_id", "turn"])
             [["answer_id", "task_id", "turn", "n_turns", "value"]])
    human = humans.groupby(["answer_id", "turn"], as_index=False)["score"].mean()
    both = judge.merge(human, on=["answer_id", "turn"])
    if both.empty:
        return TurnSection(reason="no turn has both a judge score and a human score")
    both = both.assign(residual=both["value"].astype(float) - both["score"].astype(float),
                       position=[turn_position(int(t), int(n)) for t, n in zip(both["turn"], both["n_turns"],
                                                                             strict=True)])
    units = f"judge scale points ({rubric.scale})"
    method = (f"mean of judge − human over turns; {opts.level:.0%} percentile bootstrap over conversations "
              f"({opts.n_resamples} resamples, seed {opts.seed})")
    by_position = tuple(_row(str(p), both[both["position"] == p], units, opts) for p in _ORDER
                        if (both["position"] == p).any())
    by_number = tuple(_row(str(int(t)), both[both["turn"] == t], units, opts) for t in sorted(set(both["turn"])))
    return TurnSection(by_position=by_position, by_number=by_number, n_turns=len(both),
                       n_answers=int(both["answer_id"].nunique()), units=units, method=method)


def _row(position: str, rows: pd.DataFrame, units: str, opts: ReportOptions) -> TurnRow:
    """One position's mean residual with its conversation-clustered interval."""
    residual = rows["residual"].to_numpy(dtype=float)
    clusters = rows["answer_id"].astype(str).to_numpy()
    n_answers = len(set(clusters))
    if n_answers >= 2:
        lo, hi, _ = cluster_bootstrap(weighted_mean, clusters, residual, n_resamples=opts.n_resamples,
                                      level=opts.level, rng=opts.seed)
    else:  # one conversation carries no between-conversation spread: no interval
        lo, hi = float("nan"), float("nan")
    est = Estimate(float(np.mean(residual)), float(lo), float(hi), n=len(rows),
                   method=f"percentile bootstrap over {n_answers} conversation(s)", units=units, level=opts.level)
    return TurnRow(position=position, judge_mean=float(rows["value"].astype(float).mean()),
                   human_mean=float(rows["score"].astype(float).mean()), estimate=est, n_answers=n_answers)
