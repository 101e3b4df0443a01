"""What gold items and attention checks add to a design's labelling cost.

Quality items (:mod:`judgelab.labeler.quality`) are mixed into every rater's queue at a rate per live
label, and a new rater labels ``qualify_n`` gold items first. They are labels people spend time
on, so a design's ratings, person-hours and calendar days include them, and a budget in
person-hours buys correspondingly fewer live labels.
"""

from __future__ import annotations

import dataclasses
import math

from judgelab.calibration.design._power import Cost

__all__ = ["quality_budget_hours", "with_quality"]


def with_quality(cost: Cost, *, rate: float, qualify_n: int) -> Cost:
    """``cost`` with the quality items its raters will also label.

    ``round(rate x ratings)`` spread among the live labels plus ``qualify_n`` qualification items
    per rater, at the same minutes per label.

    >>> from judgelab.calibration.design import cost_of
    >>> c = with_quality(cost_of(100, overlap=0.0, minutes_per_label=1.0, raters=2), rate=0.1, qualify_n=5)
    >>> c.ratings, c.quality_ratings, c.person_hours
    (120, 20, 2.0)
    """
    extra = round(cost.ratings * rate) + qualify_n * cost.raters
    if extra <= 0:
        return cost
    ratings = cost.ratings + extra
    hours = ratings * cost.minutes_per_label / 60
    days = math.ceil(hours / (cost.raters * cost.hours_per_rater_per_day) - 1e-9) if hours > 0 else 0
    return dataclasses.replace(cost, ratings=ratings, person_hours=round(hours, 2), calendar_days=days,
                               quality_ratings=cost.quality_ratings + extra)


def quality_budget_hours(budget_hours: float, *, rate: float, qualify_n: int, raters: int,
                         minutes_per_label: float) -> float:
    """The person-hours of a budget left for live labels once the quality items are paid for.

    >>> round(quality_budget_hours(12.0, rate=0.1, qualify_n=6, raters=10, minutes_per_label=1.0), 6)
    10.0
    """
    left = budget_hours - qualify_n * max(raters, 1) * minutes_per_label / 60
    return max(left, 0.0) / (1.0 + rate)
