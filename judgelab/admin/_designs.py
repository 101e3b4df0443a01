"""Stratified sample designs drafted and applied from the Assignments page."""


from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from judgelab.labeler.errors import InputError
from judgelab.labeler.store import DesignRole

if TYPE_CHECKING:
    from judgelab.calibration.design import Design


# -- sample designs ------------------------------------------------------------------


@dataclass(frozen=True)
class DesignDraft:
    """A drawn sample design, before it is applied.

    Attributes:
        design: The :class:`judgelab.calibration.design.Design`.
        table: Its per-stratum table (:func:`judgelab.calibration.design.design_table`).
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
    store: DesignRole,
    *,
    n: int,
    allocation: str = "gap",
    overlap: float = 0.2,
    raters: int = 1,
    seed: int = 0,
) -> DesignDraft:
    """Draw a stratified hand-label sample over the pool's original answers.

    The same workflow as ``judgelab design`` (:func:`judgelab.calibration.design.draw_design`), so
    both quote the same design and person-hours for the same database: the time per label
    is people's measured median once enough of their labels are timed, else the default
    (:func:`judgelab.labeler.timing.label_time`).

    Raises:
        InputError: No answers, or options the design refuses.
    """
    from judgelab.calibration.design import design_table, draw_design

    drawn = draw_design(
        store, n=n, allocation=allocation, overlap=overlap,  # type: ignore[arg-type]
        raters=max(raters, 1), seed=seed,
    )
    return DesignDraft(
        design=drawn.design,
        table=design_table(drawn.design),
        pool_info=dict(drawn.pool_info),
        minutes_per_label=drawn.label_time.minutes,
        minutes_source=drawn.label_time.source,
    )


def apply_sample_design(
    store: DesignRole,
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
    from judgelab.calibration.design import apply_design

    if not rater_names:
        raise InputError("no raters chosen", fix="choose the raters who will label the sample.")
    return apply_design(store, draft.design, list(rater_names), rng=seed, rubric=rubric)
