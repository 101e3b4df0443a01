"""Who sees which item in which order.

Pure functions, no database: the assignment planner (:mod:`judgelab.labeler.planner`) and the
sample design (:func:`judgelab.calibration.design.plan_assignments`) call them when they place
new assignments, the store when it reads a rater's queue, and tests drive them directly.

* :func:`spread_order` is the per-rater seeded shuffle, the one orderer of every queue.
  Two answers to the same task are kept at least ``gap + 1`` positions apart (``gap``
  other items between them) so that raters score answers one at a time instead of
  comparing them.
* :func:`counterbalance` decides which raters see a pair as A/B and which as B/A:
  half each for every pair, and each rater's own flips stay balanced too.
* :func:`next_position` is the resume rule: the first assignment without a current
  label that was not skipped; skipped ones come back at the end, oldest skip first.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from judgelab.labeler.scales import format_spec, known_format

Kind = Literal["score", "pair", "audit"]
KINDS: tuple[Kind, ...] = ("score", "pair", "audit")

#: Other items that must sit between two answers to the same task in one queue.
DEFAULT_GAP = 3

#: How many seeded random draws :func:`spread_order` tries before the exact greedy.
_RANDOM_TRIES = 12


@dataclass(frozen=True)
class QueueItem:
    """One entry of a rater's queue, as pages see it: opaque ids only.

    Attributes:
        assignment_id: The assignment row (a sequence number; carries no pool data).
        kind: ``"score"``, ``"pair"`` or ``"audit"``.
        position: 1-based place in the rater's queue.
        item_id: Opaque id of the (left, or original) answer.
        item_b_id: Opaque id of the right answer (pairs) or the rewrite (audits).
        done_id: Id of the rater's current label / pair label / audit, if any.
        skips: How many times the rater skipped it.
        last_skip_order: Sequence number of the latest skip (orders skipped items).
        flagged: Whether the current label flags the item as unrateable.
    """

    assignment_id: int
    kind: Kind
    position: int
    item_id: str
    item_b_id: str | None = None
    done_id: int | None = None
    skips: int = 0
    last_skip_order: int | None = None
    flagged: bool = False

    @property
    def done(self) -> bool:
        """Whether the rater has a current label for it."""
        return self.done_id is not None

    @property
    def skipped(self) -> bool:
        """Skipped and not labelled since."""
        return not self.done and self.skips > 0


@dataclass(frozen=True)
class Progress:
    """How far a rater is through one kind of queue."""

    done: int
    total: int
    skipped: int = 0

    @property
    def fraction(self) -> float:
        """Share done, 0.0 for an empty queue."""
        return self.done / self.total if self.total else 0.0

    def __str__(self) -> str:
        """``done of total``."""
        return f"{self.done} of {self.total}"


def rater_rng(seed: int | str, rater_id: int, salt: str = "") -> random.Random:
    """A generator private to one rater: the same seed and rater give the same queue."""
    # str seeds go through SHA-512 in CPython, so this is stable across runs and platforms.
    return random.Random(f"judgelab:{seed}:{rater_id}:{salt}")


def min_same_group_distance(groups: Sequence[Hashable]) -> int | None:
    """Smallest distance between two equal entries of ``groups``; ``None`` if all differ."""
    last: dict[Hashable, int] = {}
    best: int | None = None
    for i, g in enumerate(groups):
        if g in last:
            d = i - last[g]
            best = d if best is None else min(best, d)
        last[g] = i
    return best


def spread_feasible(groups: Sequence[Hashable], gap: int = DEFAULT_GAP) -> bool:
    """Whether ``groups`` can be ordered with ``gap`` other items between equal entries.

    The classic cooldown-scheduling bound: with ``m`` the largest group size and
    ``t`` the number of groups of that size, an order exists exactly when
    ``len(groups) >= (m - 1) * (gap + 1) + t``.
    """
    if not groups:
        return True
    counts = Counter(groups)
    m = max(counts.values())
    t = sum(1 for c in counts.values() if c == m)
    return len(groups) >= (m - 1) * (gap + 1) + t


def spread_order(
    groups: Sequence[Hashable],
    *,
    rng: random.Random,
    gap: int = DEFAULT_GAP,
    tail: Sequence[Hashable] = (),
) -> list[int]:
    """A seeded shuffle of ``range(len(groups))`` that keeps equal groups apart.

    Args:
        groups: The group (task id) of each item, in any order.
        rng: The rater's generator (see :func:`rater_rng`).
        gap: How many other items must sit between two items of one group.
        tail: Groups of the items already at the end of the queue, oldest first; new
            items keep their distance from these too (used when a queue grows).

    Returns:
        A permutation of item indices. Whenever :func:`spread_feasible` holds (and the
        tail leaves room) every two equal groups are at least ``gap + 1`` apart; when
        no such order exists the order still holds every item, and the group that has
        waited longest goes next wherever the distance cannot be kept.
    """
    n = len(groups)
    if n == 0:
        return []
    members: dict[Hashable, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        members[g].append(i)
    keys = list(members)
    rng.shuffle(keys)
    for key in keys:
        rng.shuffle(members[key])
    # Random draws first (so the order is a real shuffle, not sorted by group size);
    # a draw that gets stuck is discarded. The exact greedy is the guarantee.
    for _ in range(_RANDOM_TRIES):
        order = _random_draw(groups, rng=rng, gap=gap, tail=tail)
        if order is not None:
            return order
    return _greedy_draw(members, keys, gap=gap, tail=tail)


class _Ready:
    """Items whose group is off cooldown: O(1) add, random pick and swap-removal."""

    def __init__(self) -> None:
        self.items: list[int] = []
        self._where: dict[int, int] = {}

    def add(self, items: Sequence[int]) -> None:
        for i in items:
            self._where[i] = len(self.items)
            self.items.append(i)

    def remove(self, i: int) -> None:
        j = self._where.pop(i)
        last = self.items.pop()
        if last != i:
            self.items[j] = last
            self._where[last] = j


def _tail_release(
    tail: Sequence[Hashable], gap: int, groups: Mapping[Hashable, list[int]]
) -> dict[int, list[Hashable]]:
    """Groups seen in the last ``gap`` places of ``tail``, keyed by the place they are free at."""
    release: dict[int, list[Hashable]] = defaultdict(list)
    cooling: set[Hashable] = set()
    for offset, g in enumerate(reversed(tail[-gap:] if gap else ())):
        if g in groups and g not in cooling:
            cooling.add(g)
            release[gap - offset].append(g)
    return release


def _random_draw(
    groups: Sequence[Hashable], *, rng: random.Random, gap: int, tail: Sequence[Hashable]
) -> list[int] | None:
    """One random pass of list scheduling with a cooldown of ``gap`` places per group.

    Each place takes an item uniformly at random from the items whose group is off
    cooldown (so a group is chosen in proportion to the items it has left: a uniform
    shuffle restricted to legal moves); its group's other items then sit out ``gap``
    places. Returns ``None`` when every remaining item is cooling down. The ready items
    are kept with swap-removal (:class:`_Ready`), so a pass costs O(sum of squared group
    sizes) rather than O(items x groups).
    """
    members: dict[Hashable, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        members[g].append(i)
    release = _tail_release(tail, gap, members)
    cooling = {g for waiting in release.values() for g in waiting}
    ready = _Ready()
    for g, items in members.items():
        if g not in cooling:
            ready.add(items)
    order: list[int] = []
    for place in range(len(groups)):
        for g in release.pop(place, ()):
            ready.add(members[g])
        if not ready.items:
            return None
        pick = ready.items[rng.randrange(len(ready.items))]
        g = groups[pick]
        for i in members[g]:
            ready.remove(i)
        members[g].remove(pick)
        order.append(pick)
        if members[g]:
            release[place + gap + 1].append(g)
    return order


def _greedy_draw(
    members: Mapping[Hashable, list[int]],
    keys: list[Hashable],
    *,
    gap: int,
    tail: Sequence[Hashable],
) -> list[int]:
    """List scheduling with a cooldown of ``gap`` places that never gives up.

    It always takes the available group with the most items left, which is optimal for
    cooldown scheduling; when nothing is available it takes the group that has waited
    longest (the order then cannot meet ``gap``).
    """
    left = {k: list(v) for k, v in members.items()}
    # Place (negative = in the tail) where each group was last seen.
    last_seen: dict[Hashable, int] = {}
    for offset, g in enumerate(reversed(tail[-gap:] if gap else ())):
        last_seen.setdefault(g, -1 - offset)
    order: list[int] = []
    total = sum(len(v) for v in left.values())
    for place in range(total):
        live = [k for k in keys if left[k]]
        ready = [k for k in live if place - last_seen.get(k, -(10**9)) > gap]
        if not ready:
            # Infeasible: take the group that has waited longest, breaking ties by size.
            soonest = min(last_seen.get(k, -(10**9)) for k in live)
            ready = [k for k in live if last_seen.get(k, -(10**9)) == soonest]
        most = max(len(left[k]) for k in ready)
        choice = next(k for k in ready if len(left[k]) == most)
        order.append(left[choice].pop())
        last_seen[choice] = place
    return order


def counterbalance(
    rater_ids: Sequence[int], *, rng: random.Random, balance: Mapping[int, int] | None = None
) -> dict[int, bool]:
    """Which raters see a pair flipped (B on the left): half of them, the rest A/B.

    Args:
        rater_ids: The raters the pair goes to.
        rng: Decides the odd rater out and ties.
        balance: Per rater, flips minus non-flips so far; raters who have seen more
            flipped pairs get this one unflipped, so each rater's sides stay balanced.

    Returns:
        ``{rater_id: flipped}`` with ``len // 2`` or ``(len + 1) // 2`` flips.
    """
    ids = list(rater_ids)
    rng.shuffle(ids)
    seen = balance or {}
    # Stable sort keeps the random order among equals.
    ids.sort(key=lambda r: seen.get(r, 0))
    n_flip = len(ids) // 2 + (len(ids) % 2 if rng.random() < 0.5 else 0)
    # The raters with the fewest flips so far take the flips.
    return {r: i < n_flip for i, r in enumerate(ids)}


def next_position(items: Sequence[QueueItem]) -> int | None:
    """Index (into ``items``, in queue order) of the item to show next, or ``None`` when done.

    The first item that is neither labelled nor skipped; when only skipped ones are
    left, the one skipped longest ago.
    """
    for i, item in enumerate(items):
        if not item.done and item.skips == 0:
            return i
    skipped = [(item.last_skip_order or 0, i) for i, item in enumerate(items) if not item.done]
    return min(skipped)[1] if skipped else None


def shown_index(items: Sequence[QueueItem], at: int | None) -> int | None:
    """Index of the item a page shows.

    The one the rater went back to (assignment ``at``) if it is still in the queue, else the resume
    position (:func:`next_position`).
    """
    if at is not None:
        for i, item in enumerate(items):
            if item.assignment_id == at:
                return i
    return next_position(items)


def previous_index(items: Sequence[QueueItem], index: int | None) -> int | None:
    """Where "Back" goes from ``index`` (``None`` = the finished screen): the item before it."""
    if not items:
        return None
    if index is None:
        return len(items) - 1
    return index - 1 if index > 0 else None


# -- the rating form ---------------------------------------------------------------------

#: Shortcut keys of the rating pages. Bare keys do not fire while a text box has focus
#: (Streamlit filters them), so typing a comment never scores; Ctrl+Enter does fire there.
KEYS = {"submit": "Ctrl+Enter", "skip": "S", "back": "B", "forward": "F"}


def scale_choices(scale: str) -> list[float]:
    """The overall-score buttons a scale offers.

    numeric100 gets five anchors; any whole number can still be typed.
    """
    if scale == "binary":
        return [0.0, 1.0]
    if scale == "likert5":
        return [1.0, 2.0, 3.0, 4.0, 5.0]
    if scale == "numeric100":
        return [0.0, 25.0, 50.0, 75.0, 100.0]
    if known_format(scale) and format_spec(scale).kind == "pointwise" and format_spec(scale).levels:
        levels = list(format_spec(scale).levels)
        if len(levels) <= MAX_BUTTONS:
            return levels
        # A fine scale (0-100 by 1) gets evenly spaced anchors on its grid, as numeric100 does.
        picks = sorted({round(i * (len(levels) - 1) / (MAX_BUTTONS - 1)) for i in range(MAX_BUTTONS)})
        return [levels[i] for i in picks]
    raise ValueError(f"unknown scale {scale!r}")


MAX_BUTTONS = 21
"""The most overall-score buttons a rater's form shows (they must fit one row at 1366 px)."""


def choice_keys(choices: Sequence[float]) -> list[str]:
    """Shortcut key per overall-score button.

    The digit shown on it when every level is a digit (binary, likert5, a 1-7 scale); ``0`` for
    10 on a 1-10 scale; ``1``..``n`` (``0`` for the tenth) for up to ten other buttons (the
    numeric100 anchors); beyond ten, two keys typed one after the other: the level itself when
    levels are whole numbers below 100 (``1`` then ``0`` for 10 on 0-10), else its position
    (``01``..``21``).

        >>> choice_keys([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0])
        ['1', '2', '3', '4', '5', '6', '7', '8', '9', '0']
        >>> choice_keys([float(v) for v in range(11)])[-3:]
        ['8', '9', '10']
    """
    if all(float(c).is_integer() and 0 <= c <= 9 for c in choices):
        return [str(int(c)) for c in choices]
    if [float(c) for c in choices] == [float(v) for v in range(1, 11)]:
        return [*(str(v) for v in range(1, 10)), "0"]
    if len(choices) <= 10:
        return [str(i % 10) for i in range(1, len(choices) + 1)]
    if all(float(c).is_integer() and 0 <= c <= 99 for c in choices):
        return [str(int(c)) for c in choices]
    return [f"{i:02d}" for i in range(1, len(choices) + 1)]


def keys_text(choices: Sequence[float], keys: Sequence[str]) -> str:
    """The overall-score keys as the key line names them.

    >>> keys_text([1.0, 2.0, 3.0], ["1", "2", "3"])
    '1–3'
    >>> ten = [float(v) for v in range(1, 11)]
    >>> keys_text(ten, choice_keys(ten))
    '1–9, 0 = 10'
    >>> eleven = [float(v) for v in range(11)]
    >>> keys_text(eleven, choice_keys(eleven))
    '0–10 (two digits: 1 then 0 = 10)'
    """
    if any(len(k) > 1 for k in keys):
        two = next(k for k in keys if len(k) > 1)
        return f"{keys[0]}–{keys[-1]} (two digits: {two[0]} then {two[1]} = {two})"
    if len(keys) == 10 and keys[-1] == "0":
        return f"1–9, 0 = {format_score(choices[-1])}"
    return f"{keys[0]}–{keys[-1]}"


def criteria_after_overall(
    overall: float, criteria: Mapping[str, float | None], touched: Sequence[str] | set[str]
) -> dict[str, float | None]:
    """Criterion scores after the rater picks an overall score.

    The ones they set by hand stay, every other one takes the overall score as its default.
    """
    return {c: (v if c in touched else overall) for c, v in criteria.items()}


def format_score(value: float) -> str:
    """A score as the rater typed it (``4``, not ``4.0``)."""
    return f"{value:g}"


__all__ = [
    "DEFAULT_GAP",
    "KEYS",
    "KINDS",
    "MAX_BUTTONS",
    "Kind",
    "Progress",
    "QueueItem",
    "choice_keys",
    "counterbalance",
    "criteria_after_overall",
    "format_score",
    "keys_text",
    "min_same_group_distance",
    "next_position",
    "previous_index",
    "rater_rng",
    "scale_choices",
    "shown_index",
    "spread_feasible",
    "spread_order",
]
