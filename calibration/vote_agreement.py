"""Judge-human and human-human agreement on pairwise votes, as MT-Bench reports it.

FastChat's ``compute_agreement.py`` (Zheng et al. 2023, Table 5) compares a judge's pairwise
verdicts with human votes on the same question, turn and two models: the judge's two shown
orders make one vote (a tie unless both orders agree), a reply without a verdict in either
order drops the item (as FastChat's ``show_result.py`` drops ``error``), and the agreement is
counted per turn, with ties (S1) and without (S2), by
:func:`judgelab.calibration.stats.judge_rater_agreement` and :func:`judgelab.calibration.stats.rater_rater_agreement`.

Here the inputs are judgelab's own tables (``judgelab export judgements``, ``pair_labels`` and
``answers``), so any judge and any raters can be read this way, not only MT-Bench's. A turn is
read from an MT-Bench task id (``mtb-<question>-t<turn>``); other tasks count under ``all``.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pandas as pd

from judgelab.calibration.stats import combine_orders, judge_rater_agreement, rater_rater_agreement
from judgelab.calibration.stats._result import Estimate

_TURN = re.compile(r"-t(\d+)$")

Item = tuple[str, str]
"""Two answers, sorted: a vote of ``"a"`` prefers the first."""


@dataclass(frozen=True)
class AgreementRow:
    """One agreement figure: who against whom, on which turn, with or without ties.

    Attributes:
        turn: ``"1"``, ``"2"`` (MT-Bench turns) or ``"all"``.
        compared: ``"judge-human"`` or ``"human-human"``.
        ties: ``True`` for setup S1 (ties kept), ``False`` for S2.
        agreement: The share of comparisons that agree (``n`` comparisons, ``extra["agree"]``).
    """

    turn: str
    compared: str
    ties: bool
    agreement: Estimate

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"turn": self.turn, "compared": self.compared, "ties": self.ties,
                "agreement": self.agreement.to_dict()}

    def line(self) -> str:
        """One line for a terminal, in FastChat's words."""
        a = self.agreement
        ratio = "nan" if math.isnan(a.estimate) else f"{a.estimate:.4f}"
        return (f"turn {self.turn} {self.compared} {'with' if self.ties else 'without'} tie: "
                f"#total {a.n}, #agree {a.extra['agree']}, ratio {ratio} "
                f"({round(a.level * 100)}% CI {a.ci_low:.3f} to {a.ci_high:.3f})")


@dataclass(frozen=True)
class VoteAgreement:
    """Every figure, and what was left out.

    Attributes:
        rows: Per turn: judge-human with and without ties, then human-human with and without.
        judge_items: Items the judge gave a vote on (both orders combined).
        unparsed_items: Items left out because a judge reply had no verdict.
        human_votes: Human votes read (after the rater filter).
    """

    rows: tuple[AgreementRow, ...]
    judge_items: int
    unparsed_items: int
    human_votes: int

    def to_dict(self) -> dict[str, Any]:
        """The counts and every row, as ``judgelab agreement --json`` prints them (after the options)."""
        return {"judge_items": self.judge_items, "unparsed_items": self.unparsed_items,
                "human_votes": self.human_votes, "rows": [r.to_json() for r in self.rows]}

    def to_frame(self) -> pd.DataFrame:
        """One row per figure: ``turn``, ``compared``, ``ties``, then the agreement's estimate and interval."""
        frames = [pd.DataFrame({"turn": [r.turn], "compared": [r.compared], "ties": [r.ties]})
                  .join(r.agreement.to_frame()) for r in self.rows]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
            columns=["turn", "compared", "ties", "estimate", "ci_low", "ci_high", "n", "method", "units", "level"])

    def __repr__(self) -> str:
        """The counts, then one line per figure as ``judgelab agreement`` prints it."""
        head = (f"Vote agreement: {self.judge_items} judge items, {self.unparsed_items} left out, "
                f"{self.human_votes} human votes")
        return "\n".join([head, *(f"  {r.line()}" for r in self.rows)])


def _vote(score: float) -> str:
    return "a" if score > 0 else "b" if score < 0 else "tie"


def _oriented(first: str, second: str, score: float) -> tuple[Item, str]:
    """The item of ``first`` against ``second`` and the vote on it (``score`` about ``first``)."""
    item: Item = (first, second) if first <= second else (second, first)
    vote = _vote(score if item[0] == first else -score)
    return item, vote


def vote_agreement(judgements: pd.DataFrame, pair_labels: pd.DataFrame, answers: pd.DataFrame, *,
                   judge_model: str, rater_prefix: str | None = None, level: float = 0.95) -> VoteAgreement:
    """Agreement of ``judge_model``'s pairwise verdicts with human pair labels, per turn (FastChat's counting).

    Args:
        judgements: As ``judgelab export judgements`` writes them (``score`` about ``answer_id``).
        pair_labels: As ``judgelab export pair_labels`` writes them (current rows are read).
        answers: As ``judgelab export answers`` writes them (for each answer's task).
        judge_model: The judge whose pairwise judgements are read.
        rater_prefix: Only raters whose name starts with this (MT-Bench: ``expert``, as
            ``compute_agreement.py`` reads ``expert_*`` votes as "human" and ``author_*`` apart).
        level: Confidence level of the Wilson intervals.
    """
    task_of = dict(zip(answers["answer_id"].astype(str), answers["task_id"].astype(str), strict=True))

    def turn_of(item: Item) -> str:
        match = _TURN.search(task_of.get(item[0], ""))
        return match.group(1) if match else "all"

    j = judgements[(judgements["judge_model"] == judge_model) & judgements["answer_b_id"].notna()]
    games: dict[Item, list[str | None]] = defaultdict(list)
    for first, second, score in zip(j["answer_id"].astype(str), j["answer_b_id"].astype(str), j["score"],
                                    strict=True):
        if score is None or (isinstance(score, float) and math.isnan(score)):
            item: Item = (first, second) if first <= second else (second, first)
            games[item].append(None)
        else:
            item, vote = _oriented(first, second, float(score))
            games[item].append(vote)
    judge: dict[Item, str] = {}
    unparsed = 0
    for item, votes in games.items():
        if any(v is None for v in votes):
            unparsed += 1
            continue
        combined = votes[0]
        for v in votes[1:]:
            combined = combine_orders(str(combined), str(v))
        judge[item] = str(combined)

    labels = pair_labels
    if "current" in labels.columns:
        labels = labels[labels["current"].astype(bool)]
    if rater_prefix is not None:
        labels = labels[labels["rater"].astype(str).str.startswith(rater_prefix)]
    human: list[tuple[Item, str]] = [
        _oriented(a, b, float(p)) for a, b, p in zip(labels["answer_a"].astype(str), labels["answer_b"].astype(str),
                                                     labels["preference"], strict=True)]

    turns = sorted({turn_of(i) for i in judge} | {turn_of(i) for i, _ in human})
    rows: list[AgreementRow] = []
    for turn in turns:
        j_items = [i for i in judge if turn_of(i) == turn]
        h = [(i, v) for i, v in human if turn_of(i) == turn]
        for ties in (True, False):
            rows.append(AgreementRow(turn, "judge-human", ties, judge_rater_agreement(
                j_items, [judge[i] for i in j_items], [i for i, _ in h], [v for _, v in h], ties=ties, level=level)))
        for ties in (True, False):
            rows.append(AgreementRow(turn, "human-human", ties, rater_rater_agreement(
                [i for i, _ in h], [v for _, v in h], ties=ties, level=level)))
    return VoteAgreement(tuple(rows), len(judge), unparsed, len(human))


__all__ = ["AgreementRow", "VoteAgreement", "vote_agreement"]
