"""Assignment policy: who gets which item, and where it joins their queue.

Pure functions over plain ids and counts; the store (:mod:`judgelab.labeler.store`) executes them.
For every assignment call the store reads what the database already holds, asks a function
here for the plan, and writes it, all inside one transaction, so no other writer can come
between the check and the write: that is what keeps *exactly k* true when raters, the app
and the CLI assign at once. Nothing here touches a database.

* :func:`deal_k` gives each answer to exactly ``k`` raters for scoring, preferring raters
  with fewer answers to the same task, then the least loaded.
* :func:`deal_pairs` gives each pair to ``k`` raters with its sides counterbalanced
  (:func:`judgelab.labeler.queue.counterbalance`).
* :func:`deal_audits` gives each original/rewrite audit to ``k`` raters, the least loaded.
* :func:`queue_rows` places each rater's new items after their queue, in a seeded order
  that keeps answers to one task apart (:func:`judgelab.labeler.queue.spread_order`).
* :func:`pick_claim` is pull mode: the answer a rater pulls next.

Every choice is seeded (:func:`judgelab.labeler.queue.rater_rng`), so the same call on the same
database makes the same plan.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from judgelab.labeler.queue import counterbalance, rater_rng, spread_order

__all__ = [
    "AssignSummary",
    "Plan",
    "PlannedItem",
    "claim_limit",
    "deal_audits",
    "deal_k",
    "deal_pairs",
    "pick_claim",
    "queue_rows",
]

PlannedItem = tuple[str, str | None, str]
"""``(answer_id, answer_b_id, task_id)`` of one new assignment.

``answer_b_id`` is the right answer of a pair (the left one is ``answer_id``) or the rewrite
of an audit; ``None`` for a score item. ``task_id`` is what the queue keeps apart.
"""


@dataclass(frozen=True)
class AssignSummary:
    """What an assignment call wrote.

    Attributes:
        added: New assignments per rater id.
        already: Assignments that existed before and were kept.
        items: How many items (answers, pairs or audits) the call covered.
    """

    added: dict[int, int]
    already: int
    items: int

    @property
    def n_added(self) -> int:
        """Assignments written in total."""
        return sum(self.added.values())

    def __str__(self) -> str:
        """``N assignments added over M items (rater 1: n, ...); K already assigned``."""
        return self.describe()

    def describe(self, names: Mapping[int, str] | None = None) -> str:
        """``N assignments added over M items (ann: n, ...); K already assigned``.

        Args:
            names: Rater id -> name; raters without one are ``rater <id>``.
        """
        names = names or {}
        per = ", ".join(f"{names.get(r, f'rater {r}')}: {n}" for r, n in sorted(self.added.items()))
        text = f"{self.n_added} assignments added over {self.items} items"
        if per:
            text += f" ({per})"
        if self.already:
            text += f"; {self.already} already assigned"
        return text


@dataclass(frozen=True)
class Plan:
    """New assignments for one call.

    Attributes:
        rows: Per rater id, the new items in the order they were dealt (raters in the order
            they first got one).
        already: Assignments that existed before and are kept.
        items: Distinct items (answers, pairs or audits) the call covered.
    """

    rows: dict[int, list[PlannedItem]]
    already: int
    items: int

    def summary(self) -> AssignSummary:
        """What writing this plan adds, per rater."""
        added = {r: len(rows) for r, rows in self.rows.items() if rows}
        return AssignSummary(added=added, already=self.already, items=self.items)


def deal_k(
    task_of: Mapping[str, str],
    k: int,
    raters: Sequence[int],
    *,
    holders: Mapping[str, Collection[int]],
    load: Mapping[int, int],
    seed: int | str = 0,
) -> Plan:
    """Give each answer to exactly ``k`` raters for scoring.

    Answers are taken in a seeded shuffle. An answer keeps the raters it has and gets only the
    missing ones: the raters holding the fewest answers to its task (so one rater does not see
    the same prompt twice when others could), then the least loaded, ties at random.

    Args:
        task_of: The answers to deal, each with its task.
        k: Raters per answer.
        raters: The raters to choose from (distinct, active).
        holders: Raters already holding each answer under the same rubric (any answers).
        load: Score assignments each rater holds so far.
        seed: Makes the deal reproducible.

    Returns:
        The plan; answers already at ``k`` raters add nothing.
    """
    # Only the dealt answers are copied: `holders` may cover the whole database.
    have = {a: set(holders.get(a, ())) for a in task_of}
    counts: Counter[int] = Counter(load)
    # Assignments per (task, rater), kept per task so the sort key below is two dict
    # look-ups (it runs once per rater per answer).
    per_task: dict[str, Counter[int]] = defaultdict(Counter)
    for a, rs in have.items():
        per_task[task_of[a]].update(rs)
    rng = rater_rng(seed, 0, "assign_k")
    order = list(task_of)
    rng.shuffle(order)
    rows: dict[int, list[PlannedItem]] = defaultdict(list)
    already = 0
    for answer in order:
        held = have[answer]
        already += len(held)
        need = k - len(held)
        if need <= 0:
            continue
        task = task_of[answer]
        mine = per_task[task]
        free = [r for r in raters if r not in held]
        rng.shuffle(free)
        free.sort(key=lambda r: (mine[r], counts[r]))
        for r in free[:need]:
            rows[r].append((answer, None, task))
            counts[r] += 1
            mine[r] += 1
            held.add(r)
    return Plan(rows=dict(rows), already=already, items=len(task_of))


def deal_pairs(
    pairs: Sequence[tuple[str, str]],
    raters: Sequence[int],
    *,
    k: int,
    task_of: Mapping[str, str],
    holders: Mapping[frozenset[str], Collection[int]],
    balance: Mapping[int, int],
    load: Mapping[int, int],
    seed: int | str = 0,
) -> Plan:
    """Give each pair to ``k`` raters, half seeing it as A/B and half as B/A.

    A pair (in either order) keeps the raters it has; the missing ones are the least loaded,
    ties at random. Sides are decided by :func:`judgelab.labeler.queue.counterbalance` from the
    canonical (sorted) order, so flips are comparable across calls and each rater's own
    flips stay balanced.

    Args:
        pairs: ``(answer_a, answer_b)``; repeats are dealt once.
        raters: The raters to choose from.
        k: Raters per pair.
        task_of: The task of every answer in ``pairs``.
        holders: Raters already holding each pair (as an unordered set of its two answers).
        balance: Per rater, flipped minus unflipped pairs so far.
        load: Pair assignments each rater holds so far.
        seed: Makes the deal and the sides reproducible.

    Returns:
        The plan; each item is ``(left, right, task)`` in the order the rater sees it.
    """
    have: dict[frozenset[str], set[int]] = {}
    flipped: Counter[int] = Counter(balance)
    counts: Counter[int] = Counter(load)
    rng = rater_rng(seed, 0, "assign_pairs")
    rows: dict[int, list[PlannedItem]] = defaultdict(list)
    already = 0
    unique = list(dict.fromkeys((a, b) for a, b in pairs))
    for a, b in unique:
        key = frozenset((a, b))
        held = have.setdefault(key, set(holders.get(key, ())))
        already += len(held)
        need = k - len(held)
        if need <= 0:
            continue
        free = [r for r in raters if r not in held]
        rng.shuffle(free)
        free.sort(key=lambda r: counts[r])
        chosen = free[:need]
        first, second = sorted((a, b))
        flips = counterbalance(chosen, rng=rng, balance=flipped)
        for r in chosen:
            left, right = (second, first) if flips[r] else (first, second)
            rows[r].append((left, right, task_of[a]))
            flipped[r] += 1 if flips[r] else -1
            counts[r] += 1
            held.add(r)
    return Plan(rows=dict(rows), already=already, items=len(unique))


def deal_audits(
    audits: Sequence[tuple[str, str]],
    raters: Sequence[int],
    *,
    k: int,
    task_of: Mapping[str, str],
    holders: Mapping[tuple[str, str], Collection[int]],
    load: Mapping[int, int],
    seed: int | str = 0,
) -> Plan:
    """Give each ``(original_id, rewrite_id)`` audit to ``k`` raters, the least loaded first.

    Args:
        audits: The originals and their rewrites; repeats are dealt once.
        raters: The raters to choose from.
        k: Raters per audit.
        task_of: The task of every original.
        holders: Raters already holding each audit.
        load: Audit assignments each rater holds so far.
        seed: Makes the deal reproducible.

    Returns:
        The plan; each item is ``(original_id, rewrite_id, task)``.
    """
    counts: Counter[int] = Counter(load)
    rng = rater_rng(seed, 0, "assign_audits")
    rows: dict[int, list[PlannedItem]] = defaultdict(list)
    already = 0
    unique = list(dict.fromkeys(audits))
    for original, rewrite in unique:
        held = set(holders.get((original, rewrite), ()))
        already += len(held)
        free = [r for r in raters if r not in held]
        rng.shuffle(free)
        free.sort(key=lambda r: counts[r])
        for r in free[: max(k - len(held), 0)]:
            rows[r].append((original, rewrite, task_of[original]))
            counts[r] += 1
            held.add(r)
    return Plan(rows=dict(rows), already=already, items=len(unique))


def queue_rows(
    plan: Plan,
    *,
    kind: str,
    seed: int | str,
    tops: Mapping[int, int],
    tails: Mapping[int, Sequence[str]],
    gap: int,
) -> list[tuple[int, str, str | None, int]]:
    """Where each new item joins its rater's queue.

    A rater's new items go after their last position (``tops``; queue positions of a kind
    are 1-based), in a seeded order (:func:`judgelab.labeler.queue.rater_rng` of the seed, the rater,
    the kind and the old end) that keeps items of one task ``gap`` items apart, from each
    other and from the rater's last items already queued (``tails``).

    Args:
        plan: The new assignments.
        kind: ``"score"``, ``"pair"`` or ``"audit"``: each kind is its own queue.
        seed: The call's seed.
        tops: Per rater, the highest queue position of this kind so far (absent: 0).
        tails: Per rater, the tasks of their last ``gap`` items of this kind, oldest first.
        gap: Other items required between two items of one task.

    Returns:
        ``(rater_id, answer_id, answer_b_id, queue_pos)``, rater by rater in the plan's order.
    """
    out: list[tuple[int, str, str | None, int]] = []
    for r, rows in plan.rows.items():
        if not rows:
            continue
        start = tops.get(r, 0)
        rng = rater_rng(seed, r, f"{kind}:{start}")
        order = spread_order([task for _, _, task in rows], rng=rng, gap=gap,
                             tail=tails.get(r, ()))
        out += [(r, rows[i][0], rows[i][1], start + n + 1) for n, i in enumerate(order)]
    return out


def claim_limit(recent_answers: int) -> int:
    """Candidates :func:`pick_claim` needs to see, given the answers to the rater's recent tasks.

    Candidates arrive ordered by (raters so far, the rater's pseudo-random order). Among the
    fewest-raters ones, at most ``recent_answers`` belong to recent tasks, so the first one
    that does not is among the first ``recent_answers + 1``: the store can stop reading there,
    however large the pool.
    """
    return max(recent_answers, 0) + 1


def pick_claim(
    candidates: Sequence[tuple[str, str, int]], *, recent: Collection[str]
) -> str | None:
    """Pull mode: the answer a rater pulls next.

    Fewest raters first (so answers fill up evenly), then an answer whose task is not among
    the rater's last few items (``recent``), then the candidates' own order.

    Args:
        candidates: ``(answer_id, task_id, raters so far)`` of answers that need another rater
            and that this rater does not hold, ordered by raters so far and then the rater's
            pseudo-random order (the store's per-rater hash of the answer id); the first
            :func:`claim_limit` of them are enough.
        recent: Tasks of the rater's last few queue items.

    Returns:
        The answer id, or ``None`` when there is no candidate.

    Examples:
        >>> pick_claim([("a1", "t1", 0), ("a2", "t2", 0), ("a3", "t3", 1)], recent={"t1"})
        'a2'
        >>> pick_claim([("a1", "t1", 0), ("a3", "t3", 1)], recent={"t1"})
        'a1'
    """
    best = min(candidates, key=lambda c: (c[2], c[1] in recent), default=None)
    return None if best is None else best[0]
