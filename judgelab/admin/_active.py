"""Active labelling on the admin pages: draw and apply batches (Assignments), watch the gap (Overview).

The statistics and the workflow are :mod:`judgelab.calibration.active`; the pages only wire widgets to
the functions here, which the CLI's ``judgelab design --active`` shares.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import altair as alt
import pandas as pd

from judgelab.labeler.errors import InputError
from judgelab.labeler.store import DesignRole

if TYPE_CHECKING:
    from judgelab.calibration.active import ActiveBatch, ActiveStatus

__all__ = ["ActiveView", "active_chart", "active_view", "apply_active_draft", "draft_active_batch",
           "reassign_stranded"]


def draft_active_batch(
    store: DesignRole,
    *,
    target_half_width: float | None,
    budget_hours: float | None = None,
    overlap: float = 0.0,
    batch_size: int | None = None,
    paired: bool = False,
    new: bool = False,
    seed: int = 0,
) -> ActiveBatch:
    """The next batch of the open active design, or the first of a new one (not stored yet).

    Raises:
        InputError: When the last batch is still being labelled, the design is finished and no
            target is given, or the options are refused (see
            :func:`judgelab.calibration.active.draw_active_batch`).
    """
    from judgelab.calibration.active import draw_active_batch

    return draw_active_batch(store, target_half_width=target_half_width, budget_hours=budget_hours,
                             overlap=overlap, batch_size=batch_size, paired=paired, new=new, seed=seed)


def apply_active_draft(
    store: DesignRole, batch: ActiveBatch, rater_names: Sequence[str], *, seed: int = 0
) -> pd.DataFrame:
    """Store a drafted batch and give its answers to the named raters.

    Raises:
        InputError: No raters chosen, too few for the overlap, or the batch is stale (another
            batch was drawn since).
    """
    from judgelab.calibration.active import apply_active_batch

    if not rater_names:
        raise InputError("no raters chosen", fix="choose the raters who will label the batch.")
    return apply_active_batch(store, batch, list(rater_names), rng=seed)


def reassign_stranded(store: DesignRole, rater_names: Sequence[str], *, seed: int = 0) -> pd.DataFrame:
    """Give the open batch's answers whose raters were revoked to the named raters.

    Raises:
        InputError: No raters chosen, or the raters are refused (see
            :func:`judgelab.calibration.active.reassign_active_batch`).
    """
    from judgelab.calibration.active import reassign_active_batch

    if not rater_names:
        raise InputError("no raters chosen", fix="choose the raters who will label the stranded answers.")
    return reassign_active_batch(store, list(rater_names), rng=seed)


@dataclass(frozen=True)
class ActiveView:
    """What the Overview shows about the open active design.

    Attributes:
        status: Where the design stands (:class:`judgelab.calibration.active.ActiveStatus`).
        interval: The gap's latest interval (``"+6.1 ± 4.8 pp"``; ``"—"`` before the first).
        headline: The gap's latest interval in words (``"+6.1 ± 4.8 pp after 312 labels"``),
            or what the first interval waits for.
        needed: The labels the current rate says are still needed, in words.
        stop: Whether the team may stop (the target is reached).
        done: Whether nothing more can be gained (target reached, or the budget, the plan or the
            pool used up).
    """

    status: ActiveStatus
    interval: str
    headline: str
    needed: str
    stop: bool
    done: bool

    @property
    def message(self) -> str:
        """What to do, in plain words."""
        return self.status.message

    @property
    def stranded(self) -> int:
        """Answers of the batch being labelled that no active rater holds (their raters were revoked)."""
        if self.status.state != "labelling":
            return 0
        return int(self.status.batches["stranded"].sum())


def active_view(store: DesignRole) -> ActiveView | None:
    """The open active design as the Overview shows it; ``None`` without one."""
    from judgelab.calibration.active import OUT_OF_REACH, active_status

    status = active_status(store)
    if status is None:
        return None
    figures = status.figures
    if figures is None:
        interval = "—"
        headline = "no interval yet: it appears when batch 1 is labelled"
    else:
        est = figures.gap if figures.gap is not None else next(iter(figures.families.values()))
        refused = est.extra.get("refused")
        if est.extra.get("no_interval"):
            interval = f"{est.estimate:+.1f} pp, no interval yet"
            headline = f"{interval} after {status.labels_collected} labels: {est.extra['no_interval']}"
        elif refused:
            # Two raters: the estimate stands, its interval is refused with the reason (never "± nan").
            interval = f"{est.estimate:+.1f} pp, no interval"
            headline = f"{interval} after {status.labels_collected} labels: {refused}"
        else:
            interval = f"{est.estimate:+.1f} ± {est.half_width:.1f} pp"
            headline = f"{interval} after {status.labels_collected} labels"
    if status.state == "reached":
        needed = "none: the target is reached"
    elif not math.isfinite(status.labels_needed) or (status.state == "ready" and OUT_OF_REACH in status.message):
        needed = ("more than the answers left can give: the target is out of reach with this pool"
                  if status.labels_needed > 0 else "not known yet")
    else:
        what = "still needed at the current rate" if figures is not None else "the plan expects in all"
        needed = (f"about {status.labels_needed:.0f} {what} "
                  f"(≈ {status.hours_needed:.1f} person-hours at {status.minutes_per_label:g} min per label)")
    return ActiveView(status=status, interval=interval, headline=headline, needed=needed,
                      stop=status.state == "reached", done=status.state not in ("labelling", "ready"))


def active_chart(status: ActiveStatus) -> alt.VConcatChart | None:
    """The gap's repeated interval against the labels collected, and its half-width against the target.

    Returns:
        Two stacked charts, or ``None`` before the first labelled batch.
    """
    from judgelab.calibration.active import GAP_RANGE

    looks = status.looks
    if looks.empty:
        return None
    target = status.target_half_width
    frame = looks.assign(
        look=looks["look"].astype(int), labels=looks["labels"].astype(int),
        status=["met the target" if r else "wider than the target" for r in looks["reached"]],
    )
    frame = frame[frame["half_width"].map(math.isfinite)]
    # The first looks of a plan that spends almost nothing early can be astronomically wide; the
    # chart shows them up to the widest a gap can be, so the later looks stay readable.
    frame = frame.assign(ci_low=frame["ci_low"].clip(lower=-GAP_RANGE), ci_high=frame["ci_high"].clip(upper=GAP_RANGE),
                         half_width=frame["half_width"].clip(upper=GAP_RANGE))
    colours = alt.Scale(domain=["met the target", "wider than the target"], range=["#2a9d55", "#c0392b"])
    x = alt.X("labels:Q", title="labels collected", scale=alt.Scale(zero=True))
    base = alt.Chart(frame).encode(x=x)
    tips = [alt.Tooltip("look:Q"), alt.Tooltip("labels:Q"), alt.Tooltip("estimate:Q", format="+.1f"),
            alt.Tooltip("ci_low:Q", format="+.1f"), alt.Tooltip("ci_high:Q", format="+.1f"),
            alt.Tooltip("critical:Q", format=".2f")]
    bars = base.mark_rule(strokeWidth=3).encode(
        y=alt.Y("ci_low:Q", title="self-preference gap (pp)"), y2="ci_high:Q",
        color=alt.Color("status:N", scale=colours, title=None), tooltip=tips)
    points = base.mark_point(filled=True, size=80, color="#222").encode(y="estimate:Q", tooltip=tips)
    zero = alt.Chart(pd.DataFrame({"y": [0.0]})).mark_rule(color="#888", strokeDash=[4, 4]).encode(y="y:Q")
    top = alt.layer(zero, bars, points).properties(
        title="The gap's repeated 95% interval after each labelled batch", width=560, height=220)
    line = base.mark_line(point=True, color="#444").encode(
        y=alt.Y("half_width:Q", title="half-width (pp)", scale=alt.Scale(zero=True)), tooltip=tips)
    goal = alt.Chart(pd.DataFrame({"y": [target], "label": [f"target ±{target:g} pp"]}))
    goal_rule = goal.mark_rule(color="#2a9d55", strokeDash=[6, 3]).encode(y="y:Q")
    goal_text = goal.mark_text(align="left", dx=4, dy=-6, color="#2a9d55").encode(
        y="y:Q", text="label:N", x=alt.value(0))
    bottom = alt.layer(line, goal_rule, goal_text).properties(
        title="Half-width against the target", width=560, height=160)
    return alt.vconcat(top, bottom)
