"""Stratified sample designs drafted and applied from the Assignments page."""


from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from judgelab.admin._overview import median_seconds
from labeler.errors import InputError
from labeler.store import Store

if TYPE_CHECKING:
    from calibration.design import Design


# -- sample designs ------------------------------------------------------------------


@dataclass(frozen=True)
class DesignDraft:
    """A drawn sample design, before it is applied.

    Attributes:
        design: The :class:`calibration.design.Design`.
        table: Its per-stratum table (:func:`calibration.design.design_table`).
        pool_info: What the pool was read from (judge run, pilot labels).
        minutes_per_label: The time per label the cost rests on.
        minutes_source: Where that figure came from.
    """

    design: Design
    table: pd.DataFrame
    pool_info: dict[str, object]
    minutes_per_label: float
    minutes_source: str


def draft_design(
    store: Store,
    *,
    n: int,
    allocation: str = "gap",
    overlap: float = 0.2,
    raters: int = 1,
    seed: int = 0,
) -> DesignDraft:
    """Draw a stratified hand-label sample over the pool's original answers.

    The time per label is the median of people's timed labels when there are any
    (measured), else the design's default (assumed).

    Raises:
        InputError: No answers, or options the design refuses.
    """
    from calibration.design import design_sample, design_table, load_pool

    pool, info = load_pool(store)
    median, basis = median_seconds(store.label_seconds())
    kwargs: dict[str, object] = {}
    if not math.isnan(median) and "people" in basis:
        kwargs = {"minutes_per_label": median / 60, "minutes_source": f"measured: {basis}"}
    design = design_sample(
        pool, n=n, allocation=allocation, overlap=overlap,  # type: ignore[arg-type]
        raters=max(raters, 1), rng=seed, **kwargs,  # type: ignore[arg-type]
    )
    return DesignDraft(
        design=design,
        table=design_table(design),
        pool_info=dict(info),
        minutes_per_label=float(design.cost.minutes_per_label),
        minutes_source=str(kwargs.get("minutes_source", "assumed (no person has a timed label)")),
    )


def apply_sample_design(
    store: Store,
    draft: DesignDraft,
    rater_names: Sequence[str],
    *,
    seed: int = 0,
    rubric: tuple[str, int] | None = None,
) -> pd.DataFrame:
    """Save a drafted design and give its answers to the named raters.

    Returns:
        The assignments made (``rater``, ``answer_id``, ``queue_pos``, ...).

    Raises:
        InputError: No raters chosen, too few for the overlap, or the design was
            applied before.
    """
    from calibration.design import apply_design

    if not rater_names:
        raise InputError("no raters chosen", fix="choose the raters who will label the sample.")
    return apply_design(store, draft.design, list(rater_names), rng=seed, rubric=rubric)
