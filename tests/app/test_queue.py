"""Queue order, counterbalancing, resume rules and masking: pure functions, no database."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgelab.labeler.blinding import REDACTED, detect_self_identifying, mask
from judgelab.labeler.queue import (
    QueueItem,
    choice_keys,
    counterbalance,
    criteria_after_overall,
    min_same_group_distance,
    next_position,
    previous_index,
    rater_rng,
    scale_choices,
    shown_index,
    spread_feasible,
    spread_order,
)

# -- spread_order: answers to one task are never close together ----------------------------

groups_strategy = st.lists(st.sampled_from("abcdefghij"), min_size=0, max_size=60)


@settings(max_examples=300, deadline=None)
@given(groups=groups_strategy, gap=st.integers(0, 4), seed=st.integers(0, 10**6))
def test_spread_order_keeps_same_task_apart_whenever_possible(
    groups: list[str], gap: int, seed: int
) -> None:
    order = spread_order(groups, rng=random.Random(seed), gap=gap)
    assert sorted(order) == list(range(len(groups)))  # a permutation: nothing lost or doubled
    shown = [groups[i] for i in order]
    distance = min_same_group_distance(shown)
    if spread_feasible(groups, gap):
        # gap other items between any two answers to one task
        assert distance is None or distance > gap


@settings(max_examples=200, deadline=None)
@given(
    groups=st.lists(st.sampled_from("abcd"), min_size=1, max_size=6),
    tail=st.lists(st.sampled_from("abcde"), max_size=3),
    gap=st.integers(1, 3),
    seed=st.integers(0, 10**6),
)
def test_spread_order_respects_the_existing_tail_when_any_order_can(
    groups: list[str], tail: list[str], gap: int, seed: int
) -> None:
    def ok(order: tuple[int, ...] | list[int]) -> bool:
        d = min_same_group_distance([*tail, *(groups[i] for i in order)])
        return d is None or d > gap

    order = spread_order(groups, rng=random.Random(seed), gap=gap, tail=tail)
    assert sorted(order) == list(range(len(groups)))
    if any(ok(p) for p in itertools.permutations(range(len(groups)))):  # brute force
        assert ok(order)


@settings(max_examples=200, deadline=None)
@given(groups=st.lists(st.sampled_from("abc"), min_size=1, max_size=7), gap=st.integers(0, 3))
def test_spread_feasible_matches_brute_force(groups: list[str], gap: int) -> None:
    exists = any(
        (d := min_same_group_distance([groups[i] for i in p])) is None or d > gap
        for p in itertools.permutations(range(len(groups)))
    )
    assert spread_feasible(groups, gap) == exists


def test_spread_order_is_seeded_per_rater_and_really_shuffles() -> None:
    groups = [f"t{i // 2}" for i in range(40)]  # 20 tasks, 2 answers each
    one = spread_order(groups, rng=rater_rng(7, 1))
    assert one == spread_order(groups, rng=rater_rng(7, 1))  # reproducible
    orders = {tuple(spread_order(groups, rng=rater_rng(7, r))) for r in range(30)}
    assert len(orders) == 30  # every rater gets their own order
    # Not "all first answers, then all second answers": in a real shuffle some task
    # has both answers in the same half of the queue.
    same_half = 0
    for r in range(30):
        order = spread_order(groups, rng=rater_rng(7, r))
        half = {groups[i] for i in order[:20]}
        same_half += sum(1 for t in half if [groups[i] for i in order[:20]].count(t) == 2)
    assert same_half > 0


# -- counterbalance ---------------------------------------------------------------------------


@given(n=st.integers(1, 12), seed=st.integers(0, 1000))
def test_counterbalance_flips_half(n: int, seed: int) -> None:
    flips = counterbalance(list(range(n)), rng=random.Random(seed))
    assert set(flips) == set(range(n))
    assert sum(flips.values()) in (n // 2, (n + 1) // 2)


def test_counterbalance_gives_flips_to_raters_with_fewer_so_far() -> None:
    flips = counterbalance([1, 2], rng=random.Random(0), balance={1: 3, 2: -3})
    assert flips == {1: False, 2: True}


# -- resume and navigation --------------------------------------------------------------------


def _item(n: int, *, done: bool = False, skip_order: int | None = None) -> QueueItem:
    return QueueItem(
        assignment_id=100 + n, kind="score", position=n + 1, item_id=f"i{n}",
        done_id=1 if done else None, skips=1 if skip_order else 0, last_skip_order=skip_order,
    )


def test_next_position_is_first_unlabelled_unskipped_then_oldest_skip() -> None:
    items = [_item(0, done=True), _item(1, skip_order=9), _item(2, skip_order=4), _item(3)]
    assert next_position(items) == 3
    items[3] = _item(3, done=True)
    assert next_position(items) == 2  # skipped longest ago comes back first
    assert next_position([_item(0, done=True)]) is None
    assert next_position([]) is None


def test_shown_and_previous_index() -> None:
    items = [_item(0, done=True), _item(1, done=True), _item(2)]
    assert shown_index(items, None) == 2
    assert shown_index(items, 100) == 0  # went back to the first
    assert shown_index(items, 999) == 2  # unknown assignment: resume
    assert previous_index(items, 2) == 1
    assert previous_index(items, 0) is None
    assert previous_index(items, None) == 2  # from the "all done" screen
    assert previous_index([], None) is None


# -- the rating form --------------------------------------------------------------------------


def test_scale_choices_and_keys() -> None:
    assert choice_keys(scale_choices("likert5")) == ["1", "2", "3", "4", "5"]
    assert choice_keys(scale_choices("binary")) == ["0", "1"]
    assert choice_keys(scale_choices("numeric100")) == ["1", "2", "3", "4", "5"]
    with pytest.raises(ValueError):
        scale_choices("stars")


def test_overall_defaults_only_untouched_criteria() -> None:
    after = criteria_after_overall(4.0, {"a": None, "b": 2.0, "c": 5.0}, {"b"})
    assert after == {"a": 4.0, "b": 2.0, "c": 4.0}


# -- masking ----------------------------------------------------------------------------------


def test_mask_replaces_spans_and_merges_overlaps() -> None:
    text = "As an AI developed by Zorblax, I think Zorblax is great."
    assert mask(text, []) == text
    assert mask(text, [(0, 29, "x"), (39, 46, "Zorblax", "name")]) == (
        f"{REDACTED}, I think {REDACTED} is great."
    )
    assert mask("abcdef", [(1, 3), (2, 5)]) == f"a{REDACTED}f"
    assert mask("abc", [(2, 99)]) == f"ab{REDACTED}"  # clipped to the text
    assert mask("abc", [(2, 2)]) == "abc"  # empty spans do nothing


def test_mask_with_detected_spans_removes_the_names() -> None:
    text = "As an AI developed by Zorblax, here is the fix. Zorblax-model-9 recommends it."
    spans = detect_self_identifying(text, extra_names=["Zorblax", "zorblax-model-9"])
    masked = mask(text, spans)
    assert "orblax" not in masked
    assert "here is the fix" in masked
