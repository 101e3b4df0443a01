"""Choosing answers and assigning them to raters (Assignments page)."""


from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from judgelab.admin._common import display_name
from judgelab.labeler.errors import InputError
from judgelab.labeler.store import AssignmentRole, AssignSummary

if TYPE_CHECKING:
    pass


# -- assignments ---------------------------------------------------------------------


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders ``t2`` before ``t10``."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part)
        for part in re.split(r"(\d+)", text) if part
    )


def task_order(store: AssignmentRole) -> list[str]:
    """Task ids in natural order, for choosing a task range."""
    return sorted((str(t) for t in store.tasks()["task_id"]), key=natural_key)


def select_answers(
    catalog: pd.DataFrame,
    *,
    categories: Iterable[str] | None = None,
    variants: Iterable[str] | None = None,
    families: Iterable[str] | None = None,
    task_range: tuple[str, str] | None = None,
    tasks_in_order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The rows of :meth:`Store.answer_catalog` that match every given filter.

    Args:
        catalog: The answer catalog.
        categories: Keep these task categories (``None`` or empty: all).
        variants: Keep these variants (``None`` or empty: all).
        families: Keep these families (``None`` or empty: all).
        task_range: ``(first, last)`` task ids, inclusive, in natural order.
        tasks_in_order: The order ``task_range`` refers to (default: the natural
            order of the catalog's task ids).

    Raises:
        InputError: A ``task_range`` end is not a known task, or comes after the other.
    """
    keep = pd.Series(True, index=catalog.index)
    for column, wanted in (("category", categories), ("variant", variants),
                           ("family", families)):
        chosen = list(wanted or [])
        if chosen:
            keep &= catalog[column].astype("string").isin(chosen).fillna(False).astype(bool)
    if task_range is not None:
        order = list(tasks_in_order) if tasks_in_order is not None else sorted(
            {str(t) for t in catalog["task_id"]}, key=natural_key
        )
        first, last = task_range
        for end in (first, last):
            if end not in order:
                raise InputError(f"unknown task {end!r}", fix="pick tasks from the list.")
        lo, hi = order.index(first), order.index(last)
        if lo > hi:
            raise InputError(
                f"the task range starts at {first!r}, after its end {last!r}",
                fix="swap the two ends.",
            )
        keep &= catalog["task_id"].astype(str).isin(order[lo:hi + 1])
    return catalog[keep].reset_index(drop=True)


def subset_summary(selected: pd.DataFrame) -> pd.DataFrame:
    """Answers in a selection per family x variant, for the admin to check before assigning."""
    if selected.empty:
        return pd.DataFrame(columns=["family", "variant", "answers"])
    return (
        selected.groupby(["family", "variant"], dropna=False).size().rename("answers")
        .reset_index()
    )


def assign_each_to_k(
    store: AssignmentRole,
    answer_ids: Sequence[str],
    k: int,
    rater_ids: Sequence[int],
    *,
    seed: int = 0,
    rubric: tuple[str, int] | None = None,
) -> AssignSummary:
    """Give each of ``answer_ids`` to exactly ``k`` of ``rater_ids`` (:meth:`Store.assign_k`).

    Answers that already have raters under the rubric keep them and only get the
    missing ones, so running this twice never pushes an answer past ``k``.

    Args:
        store: The project store.
        answer_ids: The selected answers (see :func:`select_answers`).
        k: Raters per answer.
        rater_ids: Raters to choose from.
        seed: Makes the choice of raters and the queue orders reproducible.
        rubric: ``(rubric_id, version)`` to label against; the newest when ``None``.

    Raises:
        InputError: Nothing selected, ``k`` below 1, or fewer raters than ``k``
            (and whatever :meth:`Store.assign_k` refuses).
    """
    if not answer_ids:
        raise InputError("no answers selected", fix="widen the filters.")
    if k < 1:
        raise InputError(f"k must be at least 1, got {k}", fix="choose k >= 1.")
    if len(set(rater_ids)) < k:
        raise InputError(
            f"each answer needs {k} raters but only {len(set(rater_ids))} are chosen",
            fix=f"choose at least {k} raters, or lower k.",
        )
    return store.assign_k(list(answer_ids), k, list(rater_ids), seed=seed, rubric=rubric)


def family_pairs(selected: pd.DataFrame, first: str, second: str) -> list[tuple[str, str]]:
    """Pairs of answers to the same task, one from each of two families.

    Within a task, the families' answers are paired in ``answer_id`` order (the
    first ``first`` answer with the first ``second`` answer, and so on); tasks that
    lack either family give no pair.

    Args:
        selected: Rows of the answer catalog (typically one variant).
        first: One family.
        second: The other family.

    Raises:
        InputError: ``first`` and ``second`` are the same family.
    """
    if first == second:
        raise InputError(
            f"both sides are family {first!r}", fix="choose two different families."
        )
    pairs: list[tuple[str, str]] = []
    for _, group in selected.groupby("task_id", sort=False):
        left = sorted(str(a) for a in group.loc[group["family"] == first, "answer_id"])
        right = sorted(str(a) for a in group.loc[group["family"] == second, "answer_id"])
        pairs += list(zip(left, right, strict=False))
    return sorted(pairs, key=lambda p: natural_key(p[0]))


def assign_pairwise(
    store: AssignmentRole,
    pairs: Sequence[tuple[str, str]],
    k: int,
    rater_ids: Sequence[int],
    *,
    seed: int = 0,
) -> AssignSummary:
    """Give each pair to ``k`` raters for a side-by-side preference (:meth:`Store.assign_pairs`).

    Sides are counterbalanced across the raters of a pair; the shown order is stored.

    Raises:
        InputError: No pairs, or ``k`` outside 1..number of raters.
    """
    if not pairs:
        raise InputError("no pairs to assign", fix="choose two families that answer the same tasks.")
    return store.assign_pairs(list(pairs), list(rater_ids), k=k, seed=seed)


def rewrite_variants(catalog: pd.DataFrame) -> list[str]:
    """Variants other than ``original`` (the rewrites a padding audit can compare)."""
    return sorted({str(v) for v in catalog["variant"].dropna()} - {"original"})


def assign_audit_sample(
    store: AssignmentRole,
    variant: str,
    n: int,
    k: int,
    rater_ids: Sequence[int],
    *,
    seed: int = 0,
) -> AssignSummary:
    """Give a seeded sample of ``n`` original/rewrite pairs of ``variant`` to ``k`` raters each.

    Seed 000 asks for about fifteen padded answers read side by side with their
    originals; all of them are taken when fewer exist.

    Raises:
        InputError: No rewrite of ``variant`` names its original, ``n`` below 1, or
            ``k`` outside 1..number of raters.
    """
    if n < 1:
        raise InputError(f"n must be at least 1, got {n}", fix="choose n >= 1.")
    candidates = store.padding_audit_pairs(variant)
    if not candidates:
        raise InputError(
            f"no {variant!r} answer names the original it rewrites",
            fix="import rewrites with parent_answer_id set, or pick another variant.",
        )
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(candidates), size=min(n, len(candidates)), replace=False))
    return store.assign_audits([candidates[int(i)] for i in picked], list(rater_ids), k=k,
                               seed=seed)


def active_raters(store: AssignmentRole, *, include_admins: bool = False) -> pd.DataFrame:
    """Raters who can be assigned work: active (and by default not admins), with display names."""
    frame = store.raters()
    frame = frame[frame["active"].astype(bool)]
    if not include_admins:
        frame = frame[frame["role"] == "rater"]
    frame = frame.copy()
    frame["rater"] = [display_name(n, bool(s)) for n, s in zip(frame["name"], frame["simulated"],
                                                                 strict=True)]
    return frame[["rater_id", "name", "rater", "role", "simulated"]].reset_index(drop=True)
