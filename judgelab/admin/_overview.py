"""Labelling progress for the Overview page."""


from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from judgelab.admin._common import display_name
from judgelab.labeler.store import AssignmentRole, ScreenFigures
from judgelab.labeler.store.roles import ScreenView
from judgelab.labeler.timing import label_time

# -- overview ------------------------------------------------------------------------


@dataclass(frozen=True)
class Overview:
    """Labelling progress and the work left.

    Attributes:
        per_rater: One row per rater with assignments or labels: ``rater`` (display
            name), ``simulated``, ``active``, ``assigned``, ``done``, ``remaining``,
            ``share_done`` (0-1; ``nan`` with nothing assigned), ``labels`` (current
            score labels, assigned or not), plus ``assigned_<kind>``/``done_<kind>``
            for each assignment kind present (``score``, ``pair``, ``audit``).
        assigned: Assigned items over all raters and kinds.
        done: Of those, the ones answered (see :mod:`judgelab.labeler.store._admin`).
        labels_per_answer: ``labels`` (distinct raters who labelled an answer) ->
            ``answers`` (how many answers have that many), over answers that are
            assigned or labelled.
        median_seconds: Median seconds per label (``nan`` when no label has a time).
        seconds_basis: Which labels the median rests on, in words.
        minutes_per_label: The minutes per label hours left are planned with, as the design
            planner plans (:func:`judgelab.labeler.timing.label_time`: people's median once enough
            labels are timed, never below the floor; the default before that).
        minutes_source: Where ``minutes_per_label`` comes from, in words.
        person_hours_left: Remaining items x ``minutes_per_label`` / 60.
    """

    per_rater: pd.DataFrame
    assigned: int
    done: int
    labels_per_answer: pd.DataFrame
    median_seconds: float
    seconds_basis: str
    minutes_per_label: float
    minutes_source: str
    person_hours_left: float

    @property
    def remaining(self) -> int:
        """Assigned items not yet answered."""
        return self.assigned - self.done

    @property
    def share_done(self) -> float:
        """Share of assigned items answered (``nan`` when nothing is assigned)."""
        return self.done / self.assigned if self.assigned else math.nan


def median_seconds(seconds: pd.DataFrame) -> tuple[float, str]:
    """The median seconds per label and what it rests on (:func:`judgelab.labeler.timing.label_time`).

    People's timings are preferred: a simulated rater's seconds say nothing about
    how long a person needs. Only when no person has a timed label yet are the
    simulated ones used, and the basis says so.

    Args:
        seconds: :meth:`Store.label_seconds` (``simulated``, ``seconds``).

    Returns:
        ``(median, basis)``; ``(nan, "no timed labels yet")`` when there are none.
    """
    time = label_time(seconds)
    return time.median_seconds, time.basis


def overview(store: AssignmentRole) -> Overview:
    """Progress per rater and overall, labels per answer, time per label and time left."""
    per_rater = _progress_per_rater(store.assignment_progress(), store.labels_by_rater())
    assigned = int(per_rater["assigned"].sum()) if len(per_rater) else 0
    done = int(per_rater["done"].sum()) if len(per_rater) else 0

    counts = store.labels_per_answer()
    dist = (
        counts.groupby("labelled").size().rename("answers").reset_index()
        .rename(columns={"labelled": "labels"})
        if len(counts)
        else pd.DataFrame({"labels": pd.Series(dtype="int64"), "answers": pd.Series(dtype="int64")})
    )

    # The planner's figure, not the raw median: a few hurried labels (a median of 0 s) would
    # promise the remaining work in no time.
    time = label_time(store.label_seconds())
    hours = (assigned - done) * time.minutes / 60
    return Overview(
        per_rater=per_rater,
        assigned=assigned,
        done=done,
        labels_per_answer=dist,
        median_seconds=time.median_seconds,
        seconds_basis=time.basis,
        minutes_per_label=time.minutes,
        minutes_source=time.source,
        person_hours_left=hours,
    )


def _progress_per_rater(progress: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    columns = ["rater_id", "rater", "simulated", "active", "assigned", "done", "remaining",
               "share_done", "labels"]
    keys = ["rater_id", "name", "role", "simulated", "active"]
    if progress.empty and labels.empty:
        return pd.DataFrame(columns=columns)
    totals = progress.groupby(keys, as_index=False)[["assigned", "done"]].sum()
    # Raters with labels but no assignments (imported, simulated) show with 0 assigned.
    out = totals.merge(labels[[*keys, "labels"]], on=keys, how="outer")
    if not progress.empty:
        wide = progress.pivot_table(
            index="rater_id", columns="kind", values=["assigned", "done"], aggfunc="sum",
            fill_value=0,
        )
        wide.columns = [f"{pair[0]}_{pair[1]}" for pair in wide.columns.tolist()]
        out = out.merge(wide.reset_index(), on="rater_id", how="left")
    counts = [c for c in out.columns if c in ("assigned", "done", "labels")
              or c.startswith(("assigned_", "done_"))]
    out[counts] = out[counts].fillna(0).astype("int64")
    out["rater"] = [display_name(n, bool(s)) for n, s in zip(out["name"], out["simulated"],
                                                               strict=True)]
    out["remaining"] = out["assigned"] - out["done"]
    # Share done is undefined (nan) for a rater with nothing assigned.
    out["share_done"] = out["done"] / out["assigned"].where(out["assigned"] > 0)
    extra = sorted(c for c in out.columns if c.startswith(("assigned_", "done_")))
    return out[[*columns, *extra]].sort_values("rater_id").reset_index(drop=True)


def screen_summary(store: ScreenView) -> str | None:
    """The author screen's figures in one sentence for the Overview (``None``: never run).

    Screened, flagged, cleared (and masked) by the admin, withheld now, parse failures, and what the
    screen's calls cost (``judgelab screen``; :class:`~judgelab.labeler.store.ScreenFigures`).
    """
    f: ScreenFigures = store.screen_figures()
    if not f.screened:
        return None
    cost = "cost not recorded" if f.cost_usd is None else f"cost ${f.cost_usd:,.4f}"
    failed = f"; {f.parse_failures} replies did not parse (no verdict)" if f.parse_failures else ""
    return (f"Author screen: {f.screened} answers screened, {f.flagged} flagged as revealing their author, "
            f"{f.cleared} cleared and {f.masked} masked by an admin, {f.withheld} withheld now{failed}; {cost}.")
