"""Who labels which sampled answer of a design, in which queue position (pure).

The queue order comes from :func:`judgelab.labeler.queue.spread_order`, the one orderer that keeps
answers to one task apart in every rater's queue (the store uses it for its own queues too).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from judgelab.calibration.design._sample import Design
from judgelab.calibration.stats._bootstrap import RngLike, as_rng
from judgelab.labeler.errors import InputError
from judgelab.labeler.queue import DEFAULT_GAP, spread_order

__all__ = ["assign_items", "plan_assignments"]


def plan_assignments(
    design: Design,
    raters: Sequence[int],
    *,
    rng: RngLike = 0,
    spread: int = DEFAULT_GAP,
    tails: Mapping[int, tuple[int, Sequence[str]]] | None = None,
    exclude: set[tuple[int, str]] | None = None,
) -> pd.DataFrame:
    """Who labels which sampled answer, in which queue position.

    Rules, in the order they are applied:

    * **Answers to one task go to the same rater(s).** Then a rater's own leniency cancels out
      of that task's within-family difference, which is what the paired design estimates. An
      overlap task goes to two raters, who both label all its answers.
    * **Families in equal measure.** Tasks are dealt largest (and overlap) first, each to the
      rater(s) holding the fewest answers of the task's families (ties broken at random), so
      every family's answers spread over the raters within ±1, and with a family-balanced
      design each rater's count of one family is within 1 of another's.
    * **Spread.** Each rater's queue is a seeded shuffle (:func:`judgelab.labeler.queue.spread_order`)
      in which no two answers of one task sit within ``spread`` positions of each other when
      that is possible (the rater should not read one prompt's answers back to back and
      compare them).

    Args:
        design: The design (its ``items``).
        raters: Rater ids, at least 2 when the design has an overlap.
        rng: Seed or Generator for the deal and the shuffles.
        spread: Minimum distance minus one between answers of one task in a queue.
        tails: Per rater, ``(next queue position, task ids of the last few queued answers)``:
            new positions start after the existing ones and keep away from their tasks.
        exclude: ``(rater_id, answer_id)`` pairs a rater already has; such a rater is skipped
            for that task.

    Returns:
        One row per assignment: ``rater_id``, ``answer_id``, ``task_id``, ``family``,
        ``queue_pos``, ``is_overlap``.

    Raises:
        InputError: With no raters, or fewer than two when the design has an overlap.
    """
    return assign_items(design.items, raters, rng=rng, spread=spread, tails=tails, exclude=exclude)


def assign_items(
    items: pd.DataFrame,
    raters: Sequence[int],
    *,
    rng: RngLike = 0,
    spread: int = DEFAULT_GAP,
    tails: Mapping[int, tuple[int, Sequence[str]]] | None = None,
    exclude: set[tuple[int, str]] | None = None,
) -> pd.DataFrame:
    """:func:`plan_assignments` for sampled answers given as a table (an active design's batch).

    Args:
        items: One row per sampled answer: ``answer_id``, ``task_id``, ``family``, ``n_raters``,
            ``is_overlap``.
        raters: See :func:`plan_assignments`.
        rng: See :func:`plan_assignments`.
        spread: See :func:`plan_assignments`.
        tails: See :func:`plan_assignments`.
        exclude: See :func:`plan_assignments`.

    Returns:
        As :func:`plan_assignments`.
    """
    gen = as_rng(rng)
    raters = list(dict.fromkeys(int(r) for r in raters))
    if not raters:
        raise InputError("a design needs at least one rater to apply",
                         fix="add raters with `judgelab raters add NAME`.")
    if len(items) and int(items["n_raters"].max()) > len(raters):
        raise InputError(
            f"the overlap needs two raters per item but only {len(raters)} rater(s) were given",
            fix="name at least two raters, or pass --overlap 0.",
        )
    given = _deal(items, raters, gen, set(exclude or ()))
    tails = dict(tails or {})
    rows = []
    for r in raters:
        start, recent = tails.get(r, (0, ()))
        entries = given[r]
        queue = spread_order([e[1] for e in entries], rng=_rater_random(gen), gap=spread,
                             tail=list(recent))
        for pos, i in enumerate(queue, start=start):
            answer_id, task_id, family, is_overlap = entries[i]
            rows.append((r, answer_id, task_id, family, pos, is_overlap))
    return pd.DataFrame(
        rows, columns=["rater_id", "answer_id", "task_id", "family", "queue_pos", "is_overlap"]
    )


_Entry = tuple[str, str, str, bool]
"""``(answer_id, task_id, family, is_overlap)`` of one answer dealt to a rater."""


def _deal(
    items: pd.DataFrame,
    raters: list[int],
    gen: np.random.Generator,
    exclude: set[tuple[int, str]],
) -> dict[int, list[_Entry]]:
    """Each rater's answers: whole tasks, largest (and overlap) first, to the least loaded."""
    families = sorted(items["family"].unique())
    load = {r: dict.fromkeys(families, 0) for r in raters}
    given: dict[int, list[_Entry]] = {r: [] for r in raters}
    groups = [g for _, g in items.groupby("task_id", sort=True)]
    order = gen.permutation(len(groups))
    groups = [groups[i] for i in order]
    groups.sort(key=lambda g: (-int(g["n_raters"].max()), -len(g)))
    for g in groups:
        need = int(g["n_raters"].max())
        fams = g["family"].value_counts()
        answers = set(g["answer_id"])
        noise = gen.random(len(raters))
        ranked = sorted(
            range(len(raters)),
            key=lambda i: (
                any((raters[i], a) in exclude for a in answers),
                sum(load[raters[i]][f] * c for f, c in fams.items()),
                sum(load[raters[i]].values()),
                noise[i],
            ),
        )
        for i in ranked[:need]:
            r = raters[i]
            for f, c in fams.items():
                load[r][f] += int(c)
            for row in g.itertuples(index=False):
                if (r, row.answer_id) not in exclude:
                    given[r].append(
                        (str(row.answer_id), str(row.task_id), str(row.family),
                         bool(row.is_overlap))
                    )
    return given


def _rater_random(gen: np.random.Generator) -> random.Random:
    """A generator for one rater's queue, seeded from the design's ``gen`` (reproducible)."""
    return random.Random(int(gen.integers(2**63)))
