"""Several raters per answer collapsed into one human score: the mean, or the majority.

:func:`human_scores` turns a long label table into one human score per answer and keeps the
per-rater rows (:attr:`HumanScores.ratings`), which :func:`judgelab.calibration.stats.family_residuals`
reads to generalise its interval over raters (:mod:`judgelab.calibration.stats._raters`).

A row may already be the mean of several people (a public dataset's annotator mean, imported
with ``n_raters`` above 1): with ``people_col`` it counts as that many people, so the human score
of an answer with a mean of 3 people at 2.0 and one rater's 0 is (3·2 + 0)/4 = 1.5, the mean of
the four people, not 1.0, the mean of two rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from judgelab.calibration.stats._bootstrap import check_choice

HumanRule = Literal["mean", "majority"]
"""How several raters' scores of one answer become one human score.

``"mean"``: the raters' mean (a fraction for pass verdicts). ``"majority"``: the most frequent
score; **ties go to the lower score** (for pass verdicts an even split is a fail), so a split
panel never credits an answer the humans did not agree on.
"""

_RULES: tuple[str, ...] = ("mean", "majority")


@dataclass(frozen=True)
class HumanScores:
    """One human score per answer, with the per-rater rows behind it.

    Attributes:
        scores: Human score per answer (index: answer id), collapsed by ``rule``.
        n_raters: Number of raters per answer (with ``people_col``: people, an annotator
            mean counting as its number of people).
        spread: Population standard deviation of the raters' scores per answer (0 with one
            rater; with ``people_col`` each row weighted by its people), a quick look at how
            much the raters disagree.
        ratings: The long per-rater table actually used, columns ``answer``, ``rater``,
            ``score`` (missing scores dropped), and ``people`` with ``people_col``. Pass it as ``rater_level`` to
            :func:`family_residuals` / :func:`self_preference_gap` so the interval can speak for
            raters like these (:mod:`judgelab.calibration.stats._raters`).
        rule: The collapsing rule used.
    """

    scores: pd.Series
    n_raters: pd.Series
    spread: pd.Series
    ratings: pd.DataFrame
    rule: HumanRule


def human_scores(
    labels: pd.DataFrame,
    *,
    rule: HumanRule = "mean",
    answer_col: str = "answer_id",
    rater_col: str = "rater_id",
    score_col: str = "score",
    people_col: str | None = None,
) -> HumanScores:
    """Collapse several raters per answer into one human score per answer.

    Args:
        labels: Long table, one row per (answer, rater) label. Pass current labels only
            (superseded edits removed): a rater appearing twice on one answer is an error.
        rule: ``"mean"`` or ``"majority"`` (ties go to the lower score; see :data:`HumanRule`).
        answer_col: Column holding the answer id.
        rater_col: Column holding the rater id.
        score_col: Column holding the score (0/1 for pass verdicts).
        people_col: Optional column holding how many people each row's score is the mean of
            (missing: 1). The mean weights each row by it, the majority counts it as that many
            votes for the row's score.

    Returns:
        A :class:`HumanScores`. Rows with a missing score are dropped first. Degenerate case:
        an empty table (or one whose scores are all missing) gives empty series.

    Raises:
        ValueError: On a bad ``rule``, a missing column or a duplicated (answer, rater) pair.
    """
    func = "human_scores"
    check_choice(func, "rule", rule, _RULES)
    wanted = (answer_col, rater_col, score_col) + (() if people_col is None else (people_col,))
    missing = [c for c in wanted if c not in labels.columns]
    if missing:
        raise ValueError(
            f"{func}: labels lack column(s) {missing!r}; have {list(labels.columns)!r} "
            "(set answer_col=, rater_col=, score_col=, people_col=)"
        )
    ratings = pd.DataFrame(
        {
            "answer": labels[answer_col].to_numpy(),
            "rater": labels[rater_col].to_numpy(),
            "score": pd.to_numeric(labels[score_col], errors="raise").to_numpy(dtype=float),
        }
    )
    if people_col is not None:
        people = pd.to_numeric(labels[people_col], errors="raise").fillna(1).to_numpy(dtype=float)
        if (people < 1).any() or not np.equal(np.mod(people, 1), 0).all():
            raise ValueError(f"{func}: {people_col!r} must be whole numbers of people, 1 or more")
        ratings["people"] = people.astype(int)
    ratings = ratings[np.isfinite(ratings["score"].to_numpy())].reset_index(drop=True)
    dup = ratings.duplicated(["answer", "rater"])
    if dup.any():
        first = [v.item() if isinstance(v, np.generic) else v for v in ratings.loc[dup, ["answer", "rater"]].iloc[0]]
        raise ValueError(
            f"{func}: rater {first[1]!r} labelled answer {first[0]!r} more than once; "
            "pass current labels only (drop superseded edits)"
        )
    ratings = ratings.sort_values(["answer", "rater"], kind="stable").reset_index(drop=True)
    grouped = ratings.groupby("answer", sort=True)["score"]
    people = ratings["people"].to_numpy(dtype=float) if people_col is not None else None
    if people is None:
        n_raters = grouped.size().rename("n_raters")
        spread = grouped.std(ddof=0).rename("spread")
    else:
        by = ratings["answer"]
        total = ratings["people"].groupby(by, sort=True).sum()
        centre = (ratings["score"] * ratings["people"]).groupby(by, sort=True).sum() / total
        dev2 = (ratings["score"] - by.map(centre)) ** 2 * ratings["people"]
        n_raters = total.astype(int).rename("n_raters")
        spread = np.sqrt(dev2.groupby(by, sort=True).sum() / total).rename("spread")
    values = ratings["score"].to_numpy(dtype=float)
    answers = ratings["answer"].to_numpy()
    starts = np.flatnonzero(np.r_[True, answers[1:] != answers[:-1]])
    collapsed = np.empty(0)
    if values.size:
        collapsed = _collapse(values[None, :], starts, rule, np.unique(values), people)[0]
    scores = pd.Series(collapsed, index=n_raters.index, name="human_score")
    return HumanScores(scores=scores, n_raters=n_raters, spread=spread, ratings=ratings, rule=rule)


def _collapse(
    matrix: npt.NDArray[np.float64],
    starts: npt.NDArray[np.intp],
    rule: str,
    categories: npt.NDArray[np.float64],
    people: npt.NDArray[np.float64] | None = None,
) -> npt.NDArray[np.float64]:
    """Collapse ``(B, n_slots)`` rater scores grouped by ``starts`` into ``(B, n_answers)``.

    ``people`` (one per slot, default 1): how many people a slot's score is the mean of; the
    mean weights by it and the majority counts it as that many votes.
    """
    if people is None:
        sizes = np.diff(np.r_[starts, matrix.shape[1]])
        if rule == "mean":
            return np.add.reduceat(matrix, starts, axis=1) / sizes
        votes: npt.NDArray[np.float64] | None = None
    else:
        if rule == "mean":
            return np.add.reduceat(matrix * people, starts, axis=1) / np.add.reduceat(people, starts)
        votes = people
    # Majority: count each category (ascending); argmax takes the first maximum, so a tie goes
    # to the lowest score.
    counts = np.stack([np.add.reduceat((matrix == c) * (1 if votes is None else votes), starts, axis=1)
                       for c in categories])
    return np.asarray(categories[np.argmax(counts, axis=0)], dtype=float)
