"""The assignment policy (:mod:`judgelab.labeler.planner`): pure functions, no database."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from judgelab.labeler.planner import (
    Plan,
    claim_limit,
    deal_audits,
    deal_k,
    deal_pairs,
    pick_claim,
    queue_rows,
)
from judgelab.labeler.queue import min_same_group_distance

TASK_OF = {f"{fam}-t{t}": f"t{t}" for t in range(12) for fam in ("a", "b", "c")}


def _per_answer(plan: Plan) -> Counter[str]:
    return Counter(item[0] for rows in plan.rows.values() for item in rows)


# -- exactly k --------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 4), extra=st.integers(0, 3), seed=st.integers(0, 10**6),
       held=st.lists(st.tuples(st.sampled_from(sorted(TASK_OF)), st.integers(1, 7)),
                     max_size=20))
def test_deal_k_tops_every_answer_up_to_exactly_k(
    k: int, extra: int, seed: int, held: list[tuple[str, int]]
) -> None:
    raters = list(range(1, k + extra + 1))
    holders: dict[str, set[int]] = {}
    for answer, r in held:
        if r in raters and len(holders.setdefault(answer, set())) < k:
            holders[answer].add(r)
    before = {a: set(rs) for a, rs in holders.items()}
    plan = deal_k(TASK_OF, k, raters, holders=holders, load={}, seed=seed)
    new = _per_answer(plan)
    for answer in TASK_OF:
        assert len(before.get(answer, set())) + new[answer] == k
    for r, rows in plan.rows.items():
        assert not any(r in before.get(a, set()) for a, _, _ in rows)  # never twice
    assert plan.already == sum(len(rs) for rs in before.values())
    assert holders == before  # inputs are not changed
    assert plan.summary().n_added == sum(new.values())


def test_deal_k_spreads_load_and_keeps_one_task_with_different_raters() -> None:
    plan = deal_k(TASK_OF, 1, [1, 2, 3], holders={}, load={}, seed=0)
    sizes = sorted(len(rows) for rows in plan.rows.values())
    assert sizes == [12, 12, 12]
    # Three answers per task and three raters: nobody gets two answers to one task.
    for rows in plan.rows.values():
        tasks = [t for _, _, t in rows]
        assert len(tasks) == len(set(tasks))
    again = deal_k(TASK_OF, 1, [1, 2, 3], holders={}, load={}, seed=0)
    assert again == plan  # seeded


def test_deal_k_prefers_the_least_loaded_rater() -> None:
    plan = deal_k({"a-t0": "t0"}, 1, [1, 2, 3], holders={}, load={1: 5, 2: 0, 3: 9}, seed=0)
    assert plan.rows == {2: [("a-t0", None, "t0")]}


# -- pairs and audits -----------------------------------------------------------------------------


def test_deal_pairs_counterbalances_sides_and_counts_a_reversed_pair_once() -> None:
    pairs = [(f"a-t{t}", f"b-t{t}") for t in range(10)]
    plan = deal_pairs([*pairs, ("b-t0", "a-t0")], [1, 2, 3, 4], k=4, task_of=TASK_OF,
                      holders={}, balance={}, load={}, seed=1)
    assert plan.items == 11 and plan.already == 4  # the reversed repeat finds four holders
    shown = Counter((left, right) for rows in plan.rows.values() for left, right, _ in rows)
    for a, b in pairs:
        assert shown[(a, b)] + shown[(b, a)] == 4
        assert shown[(a, b)] == 2  # half of the raters see each side on the left
    for rows in plan.rows.values():
        flips = sum(1 if left > str(right) else -1 for left, right, _ in rows)
        assert abs(flips) <= 2  # each rater's own sides stay balanced


def test_deal_audits_gives_k_raters_and_keeps_existing_ones() -> None:
    audits = [(f"a-t{t}", f"a-t{t}-padded") for t in range(6)]
    plan = deal_audits(audits, [1, 2, 3], k=2, task_of=TASK_OF,
                       holders={audits[0]: {3}}, load={}, seed=0)
    per = Counter((o, r) for rows in plan.rows.values() for o, r, _ in rows)
    assert per[audits[0]] == 1 and all(per[a] == 2 for a in audits[1:])
    assert audits[0] not in [(o, r) for o, r, _ in plan.rows.get(3, [])]  # 3 holds it already
    assert plan.already == 1


# -- queue order ----------------------------------------------------------------------------------


def test_queue_rows_append_after_the_queue_and_keep_tasks_apart() -> None:
    plan = deal_k(TASK_OF, 2, [1, 2], holders={}, load={}, seed=0)
    tails = {1: ["t0", "t1", "t2"], 2: []}
    placed = queue_rows(plan, kind="score", seed=0, tops={1: 7}, tails=tails, gap=3)
    assert placed == queue_rows(plan, kind="score", seed=0, tops={1: 7}, tails=tails, gap=3)
    for rater, start in ((1, 7), (2, 0)):
        mine = sorted((pos, TASK_OF[a]) for r, a, _, pos in placed if r == rater)
        assert [pos for pos, _ in mine] == list(range(start + 1, start + 37))
        distance = min_same_group_distance([*tails[rater], *(t for _, t in mine)])
        assert distance is not None and distance > 3


# -- pull mode ------------------------------------------------------------------------------------


def test_pick_claim_takes_the_fewest_raters_then_a_task_not_seen_lately() -> None:
    assert pick_claim([], recent=set()) is None
    candidates = [("a1", "t1", 0), ("a2", "t1", 0), ("a3", "t2", 0), ("a4", "t3", 1)]
    assert pick_claim(candidates, recent=set()) == "a1"
    assert pick_claim(candidates, recent={"t1"}) == "a3"
    assert pick_claim(candidates, recent={"t1", "t2"}) == "a1"  # fewer raters beats recency


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from("abcdef"), st.integers(0, 2)), max_size=30),
       recent=st.sets(st.sampled_from("abcdef"), max_size=3))
def test_claim_limit_reads_enough_candidates_to_find_the_choice(
    rows: list[tuple[str, int]], recent: set[str]
) -> None:
    # The store reads candidates ordered by (raters so far, pseudo-random order) and stops at
    # claim_limit(answers in recent tasks): the choice must be the same as over all of them.
    candidates = sorted(
        ((f"x{i}", task, n) for i, (task, n) in enumerate(rows)), key=lambda c: c[2]
    )
    near = sum(1 for _, task, _ in candidates if task in recent)
    head = candidates[: claim_limit(near)]
    assert pick_claim(head, recent=recent) == pick_claim(candidates, recent=recent)
