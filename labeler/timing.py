"""How long one label takes: the one rule behind every person-hours figure.

The store records the seconds of each label from the server's clock
(:meth:`judgelab.labeler.store.Store.label_seconds`); :func:`label_time` turns them into the
figures the app and the CLI quote, so the Overview, the Assignments page and
``judgelab design`` never disagree about the time a label takes:

* a label is **timed** when its seconds are known and not negative;
* **people's** timings are preferred: a simulated rater's seconds (its rater is flagged
  simulated, or the label's source is ``simulated``) say nothing about how long a
  person needs; the observed median falls back to them only when no person has a
  timed label, and says so;
* the **minutes to plan with** are the people's median once at least
  :data:`MIN_TIMED_LABELS` of their labels are timed, else
  :data:`DEFAULT_MINUTES_PER_LABEL`, unless the caller gives a figure; a measured median
  is never below :data:`FLOOR_MINUTES_PER_LABEL` (a handful of hurried labels must not
  make a plan of "0.0 min per label"), and the source says how many labels it rests on;
* the app records **active** seconds: the time an item was on screen in the rater's
  session, without a hidden tab or idle stretches beyond :data:`IDLE_CAP_SECONDS`;
  :func:`rater_times` gives each rater's median and the share of labels above the cap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from judgelab.labeler.errors import InputError

__all__ = [
    "DEFAULT_MINUTES_PER_LABEL",
    "FLOOR_MINUTES_PER_LABEL",
    "IDLE_CAP_SECONDS",
    "MIN_TIMED_LABELS",
    "LabelTime",
    "label_time",
    "rater_times",
]

#: Minutes per label before anyone is timed: seed 000's "two to three minutes" each.
DEFAULT_MINUTES_PER_LABEL = 2.5

#: People's timed labels needed before their median replaces the default for planning.
MIN_TIMED_LABELS = 5

#: The least minutes per label a plan uses from measured labels: reading a ticket and its
#: answer and scoring every criterion takes at least this long.
FLOOR_MINUTES_PER_LABEL = 0.5

#: Seconds without a key, click, scroll or pointer move after which the app stops counting
#: a rater's time on an item (until the next input).
IDLE_CAP_SECONDS = 120


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
            ``"measured median of N timed labels by people"`` (with ``", at least the
            floor of 0.5 min"`` when the floor applied) or ``"assumed (...)"``.
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
        and are at least :data:`FLOOR_MINUTES_PER_LABEL`.

    Raises:
        InputError: If ``given`` is not a positive number.

    Examples:
        >>> frame = pd.DataFrame({"simulated": [True, False, False, False, False, False],
        ...                       "seconds": [1.0, 100.0, 120.0, 150.0, 180.0, 200.0]})
        >>> t = label_time(frame)
        >>> t.minutes, t.source
        (2.5, 'measured median of 5 timed labels by people')
        >>> label_time(frame.iloc[:3]).source
        'assumed (2 timed labels by people; 5 needed)'
        >>> quick = pd.DataFrame({"simulated": [False] * 6, "seconds": [2.0] * 6})
        >>> t = label_time(quick)
        >>> t.minutes, t.source
        (0.5, 'measured median of 6 timed labels by people, at least the floor of 0.5 min')
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
        # Rounded as printed; never below the floor, which would make budgets fantasy.
        measured = round(median / 60, 2)
        minutes = max(measured, FLOOR_MINUTES_PER_LABEL)
        source = f"measured median of {n} timed labels by people" + (
            f", at least the floor of {FLOOR_MINUTES_PER_LABEL:g} min" if measured < FLOOR_MINUTES_PER_LABEL else "")
    else:
        minutes = DEFAULT_MINUTES_PER_LABEL
        source = "assumed" + (f" ({n} timed labels by people; {minimum} needed)" if by_people else "")
    return LabelTime(median_seconds=median, n=n, by_people=by_people, basis=basis,
                     minutes=minutes, source=source)


def rater_times(seconds: pd.DataFrame, *, cap: float = IDLE_CAP_SECONDS) -> pd.DataFrame:
    """Each rater's median active seconds per label and the share of labels above ``cap``.

    Args:
        seconds: One row per label with ``rater_id`` and ``seconds``
            (:meth:`Store.label_seconds`).
        cap: Seconds above which a label counts as long (the idle cap by default: a
            label above it took longer than the app counts an idle stretch).

    Returns:
        ``rater_id``, ``timed`` (labels with a time), ``median_seconds`` and
        ``share_above_cap`` (``nan`` for a rater without timed labels), one row per
        rater in ``seconds``.

    Examples:
        >>> frame = pd.DataFrame({"rater_id": [1, 1, 1, 2], "seconds": [20.0, 40.0, 300.0, None]})
        >>> rater_times(frame).to_dict("records")  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
        [{'rater_id': 1, 'timed': 3, 'median_seconds': 40.0, 'share_above_cap': 0.333...},
         {'rater_id': 2, 'timed': 0, 'median_seconds': nan, 'share_above_cap': nan}]
    """
    frame = seconds[["rater_id", "seconds"]].copy()
    frame["timed"] = frame["seconds"].notna() & (frame["seconds"] >= 0)
    frame["above"] = frame["timed"] & (frame["seconds"] > cap)
    timed = frame[frame["timed"]]
    out = pd.DataFrame({"rater_id": sorted(frame["rater_id"].unique())})
    out["timed"] = out["rater_id"].map(timed.groupby("rater_id").size()).fillna(0).astype("int64")
    out["median_seconds"] = out["rater_id"].map(timed.groupby("rater_id")["seconds"].median()).astype(float)
    out["share_above_cap"] = (out["rater_id"].map(timed.groupby("rater_id")["above"].sum()).astype(float)
                              / out["timed"].where(out["timed"] > 0))
    return out
