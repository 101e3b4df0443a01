"""Raw agreement on pairwise votes, as FastChat's ``compute_agreement.py`` counts it (MT-Bench).

A vote is ``"a"``, ``"b"`` or ``"tie"`` about one item (a question's turn and two models, in a
fixed order). Zheng et al. (2023, arXiv:2306.05685, Table 5) report two setups: S1 counts every
vote, ties included (an inconsistent judge verdict across the two shown orders counts as a tie),
and S2 drops every comparison in which either vote is a tie. FastChat counts

- judge against raters: each rater vote on an item the judge voted on is one comparison with the
  judge's single vote on that item;
- rater against rater: every unordered pair of votes on the same item is one comparison.

The agreement is the share of comparisons whose two votes are equal. FastChat reports no
interval; the Wilson interval here treats comparisons as independent, which they are not (one
judge vote meets every rater vote on its item), so read it as a lower bound on the uncertainty.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence

from judgelab.calibration.stats._binomial import proportion
from judgelab.calibration.stats._result import Estimate

VOTES = ("a", "b", "tie")
"""The votes a comparison can hold."""

_METHOD = ("FastChat compute_agreement.py counting ({what}; {ties}); Wilson interval treating "
           "comparisons as independent")


def _checked(func: str, items: Sequence[Hashable], votes: Sequence[str]) -> list[tuple[Hashable, str]]:
    if len(items) != len(votes):
        raise ValueError(f"{func}: {len(items)} items but {len(votes)} votes; pass one item per vote.")
    bad = sorted({str(v) for v in votes if v not in VOTES})
    if bad:
        raise ValueError(f"{func}: votes {bad} are not one of {list(VOTES)}; map a judge's inconsistent "
                         "verdict across orders to 'tie' first.")
    return list(zip(items, votes, strict=True))


def judge_rater_agreement(judge_items: Sequence[Hashable], judge_votes: Sequence[str],
                          rater_items: Sequence[Hashable], rater_votes: Sequence[str], *,
                          ties: bool = True, level: float = 0.95) -> Estimate:
    """The share of rater votes that equal the judge's vote on the same item.

    Args:
        judge_items: The item of each judge vote (one vote per item).
        judge_votes: ``"a"``, ``"b"`` or ``"tie"`` for each.
        rater_items: The item of each rater vote (any number per item).
        rater_votes: ``"a"``, ``"b"`` or ``"tie"`` for each.
        ties: ``True`` for setup S1 (every comparison); ``False`` for S2 (comparisons with a tie on
            either side dropped).
        level: Confidence level of the Wilson interval.

    Returns:
        An :class:`Estimate` in units ``"proportion"``, ``n`` the number of comparisons and
        ``extra["agree"]`` how many agreed. Items only one side voted on are left out. No
        comparison gives ``nan``.

    Raises:
        ValueError: Unequal lengths, a vote outside :data:`VOTES`, or two judge votes on one item.

    >>> judge_rater_agreement(["q1", "q2"], ["a", "tie"], ["q1", "q1", "q2"], ["a", "b", "tie"]).extra["agree"]
    2
    """
    func = "judge_rater_agreement"
    judge: dict[Hashable, str] = {}
    for item, vote in _checked(func, judge_items, judge_votes):
        if item in judge:
            raise ValueError(f"{func}: the judge has two votes on item {item!r}; combine its two orders "
                             "into one vote per item first.")
        judge[item] = vote
    agree = total = 0
    for item, vote in _checked(func, rater_items, rater_votes):
        if item not in judge or (not ties and "tie" in (vote, judge[item])):
            continue
        total += 1
        agree += vote == judge[item]
    est = proportion(agree, n=total, level=level)
    return Estimate(est.estimate, est.ci_low, est.ci_high, total,
                    _METHOD.format(what="each rater vote against the judge's vote on its item",
                                   ties="ties kept (S1)" if ties else "ties dropped (S2)"),
                    "proportion", level, {"agree": agree})


def rater_rater_agreement(items: Sequence[Hashable], votes: Sequence[str], *, ties: bool = True,
                          level: float = 0.95) -> Estimate:
    """The share of pairs of rater votes on the same item that are equal.

    Args:
        items: The item of each vote.
        votes: ``"a"``, ``"b"`` or ``"tie"`` for each.
        ties: ``True`` for setup S1; ``False`` for S2 (pairs with a tie dropped).
        level: Confidence level of the Wilson interval.

    Returns:
        As :func:`judge_rater_agreement`; ``n`` counts unordered pairs of votes on one item.

    Raises:
        ValueError: Unequal lengths or a vote outside :data:`VOTES`.

    >>> rater_rater_agreement(["q1", "q1", "q1"], ["a", "a", "b"]).extra["agree"]
    1
    """
    by_item: dict[Hashable, list[str]] = defaultdict(list)
    for item, vote in _checked("rater_rater_agreement", items, votes):
        by_item[item].append(vote)
    agree = total = 0
    for group in by_item.values():
        for i, first in enumerate(group):
            for second in group[i + 1:]:
                if not ties and "tie" in (first, second):
                    continue
                total += 1
                agree += first == second
    est = proportion(agree, n=total, level=level)
    return Estimate(est.estimate, est.ci_low, est.ci_high, total,
                    _METHOD.format(what="every pair of rater votes on one item",
                                   ties="ties kept (S1)" if ties else "ties dropped (S2)"),
                    "proportion", level, {"agree": agree})


def combine_orders(first: str, second: str) -> str:
    """One verdict from a judge's two shown orders, as MT-Bench does: a tie unless both agree.

    ``first`` and ``second`` are the votes (``"a"``, ``"b"``, ``"tie"``) already mapped to the
    same answers whatever order they were shown in.

    >>> combine_orders("a", "a"), combine_orders("a", "b"), combine_orders("tie", "tie")
    ('a', 'tie', 'tie')
    """
    for vote in (first, second):
        if vote not in VOTES:
            raise ValueError(f"combine_orders: vote {vote!r} is not one of {list(VOTES)}.")
    return first if first == second else "tie"

