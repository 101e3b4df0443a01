"""How long one label takes: the one rule behind every person-hours figure.

The store records the seconds of each label from the server's clock
(:meth:`labeler.store.Store.label_seconds`); :func:`label_time` turns them into the
figures the app and the CLI quote, so the Overview, the Assignments page and
``judgelab design`` never disagree about the time a label takes:

* a label is **timed** when its seconds are known and not negative;
* **people's** timings are preferred: a simulated rater's seconds (its rater is flagged
  simulated, or the label's source is ``simulated``) say nothing about how long a
  person needs; the observed median falls back to them only when no person has a
  timed label, and says so;
* the **minutes to plan with** are the people's median once at least
  :data:`MIN_TIMED_LABELS` of their labels are timed, else
  :data:`DEFAULT_MINUTES_PER_LABEL`, unless the caller gives a figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from labeler.errors import InputError

__all__ = ["DEFAULT_MINUTES_PER_LABEL", "MIN_TIMED_LABELS", "LabelTime", "label_time"]

#: Minutes per label before anyone is timed: seed 000's "two to three minutes" each.
DEFAULT_MINUTES_PER_LABEL = 2.5

#: People's timed labels needed before their median replaces the default for planning.
MIN_TIMED_LABELS = 5


@dataclass(frozen=True)
class LabelTime:
    """How long a label takes, and what that rests on.

    Attributes:
        median_seconds: Median seconds of the timed labels: people's when any person has
            one, else simulated raters' (``nan`` when nothing is timed).
        n: Timed labels the median rests on.
        by_people: Whether those labels are people's.
        basis: The median's basis in words (``"12 timed labels by people"``).
        minutes: Minutes per label to plan with.
        source: Where ``minutes`` came from: ``"given"``,
            ``"measured median of N timed labels by people"`` or ``"assumed"``.
    """

    median_seconds: float
    n: int
    by_people: bool
    basis: str
    minutes: float
    source: str

    @property
    def measured(self) -> bool:
        """Whether ``minutes`` is the people's measured median."""
        return self.source.startswith("measured")


def label_time(
    seconds: pd.DataFrame,
    *,
    given: float | None = None,
    minimum: int = MIN_TIMED_LABELS,
) -> LabelTime:
    """The time a label takes, from the labels' recorded seconds.

    Args:
        seconds: One row per label with ``seconds`` and ``simulated`` (the rater's flag),
            and optionally ``source`` (:meth:`Store.label_seconds` gives these).
        given: Minutes per label to plan with instead of the measured figure.
        minimum: People's timed labels needed before their median is planned with.

    Returns:
        The :class:`LabelTime`; measured minutes are rounded to 0.01 minute (as printed),
        and are at least 0.01.

    Raises:
        InputError: If ``given`` is not a positive number.

    Examples:
        >>> frame = pd.DataFrame({"simulated": [True, False, False, False, False, False],
        ...                       "seconds": [1.0, 100.0, 120.0, 150.0, 180.0, 200.0]})
        >>> t = label_time(frame)
        >>> t.minutes, t.source
        (2.5, 'measured median of 5 timed labels by people')
        >>> label_time(frame.iloc[:3]).source
        'assumed'
    """
    if given is not None and not (given > 0 and math.isfinite(given)):
        raise InputError(
            f"minutes per label must be positive; got {given!r}",
            fix="e.g. --minutes-per-label 2.5.",
        )
    timed = seconds[seconds["seconds"].notna() & (seconds["seconds"] >= 0)]
    simulated = timed["simulated"].astype(bool)
    if "source" in timed.columns:
        simulated |= timed["source"].eq("simulated")
    people = timed.loc[~simulated, "seconds"]
    if len(people):
        median, n, by_people = float(people.median()), len(people), True
        basis = f"{n} timed labels by people"
    elif len(timed):
        median, n, by_people = float(timed["seconds"].median()), len(timed), False
        basis = f"{n} timed labels by simulated raters (no person has a timed label yet)"
    else:
        median, n, by_people, basis = math.nan, 0, False, "no timed labels yet"
    if given is not None:
        minutes, source = float(given), "given"
    elif by_people and n >= minimum:
        # Rounded as printed; never 0, which would make every budget infinite.
        minutes = max(round(median / 60, 2), 0.01)
        source = f"measured median of {n} timed labels by people"
    else:
        minutes, source = DEFAULT_MINUTES_PER_LABEL, "assumed"
    return LabelTime(median_seconds=median, n=n, by_people=by_people, basis=basis,
                     minutes=minutes, source=source)
