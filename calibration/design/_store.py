"""Designs over the project database: read the pool, draw a design, give it to raters.

Everything here takes a :class:`judgelab.labeler.store.Store`; the planning itself is pure and lives in
the sibling modules. :func:`draw_design` is the one workflow both ``judgelab design`` and the
Assignments page call, so the two quote the same design, precision and person-hours for the
same database.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from judgelab.calibration.design._assign import plan_assignments
from judgelab.calibration.design._model import Allocation, Stratifier, planning_model
from judgelab.calibration.design._power import budget_labels
from judgelab.calibration.design._quality import quality_budget_hours, with_quality
from judgelab.calibration.design._sample import Design, design_sample, design_table, pairing_note
from judgelab.calibration.stats._bootstrap import RngLike
from judgelab.labeler.errors import InputError
from judgelab.labeler.queue import DEFAULT_GAP
from judgelab.labeler.timing import LabelTime, label_time

if TYPE_CHECKING:
    from judgelab.labeler.store import DesignRole

__all__ = ["DrawnDesign", "apply_design", "draw_design", "load_pool", "rubric_key"]


def load_pool(
    store: DesignRole,
    *,
    run_id: str | None = None,
    variant: str | None = "original",
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The pool to design over, from the project database.

    Args:
        store: The project database.
        run_id: Judge run whose latest pointwise score per answer bins the answers; ``None``
            takes the newest run with pointwise scores (none at all: every answer is
            ``unjudged``).
        variant: Only answers of this variant (probe rewrites are not what humans calibrate);
            ``None`` keeps all.

    Returns:
        ``(pool, info)``: one row per answer with ``answer_id``, ``task_id``, ``category``,
        ``family``, ``n_words``, ``judge_score``, ``judge_pass``, ``human_pass`` (mean current
        human pass verdict, ``nan`` when unlabelled); ``info`` holds ``run_id``,
        ``judge_family``, ``rubric_id``, ``rubric_version``, ``n_judged``, ``n_pilot``.
    """
    answers = store.answers(variant=variant)
    if answers.empty:
        raise InputError(
            "there are no answers to design a sample over"
            + (f" (variant {variant!r})" if variant else ""),
            fix="import answers first with `judgelab import answers FILE`.",
        )
    run = store.judge_run_info(run_id)
    pool = answers[["answer_id", "task_id", "category", "family", "model", "n_words"]].copy()
    if run is not None:
        scores = store.judge_scores(run["run_id"])
        pool = pool.merge(
            scores[["answer_id", "value", "passed"]].rename(
                columns={"value": "judge_score", "passed": "judge_pass"}),
            on="answer_id", how="left",
        )
        # A nullable boolean with gaps (answers the run did not score) -> 0/1/nan floats.
        pool["judge_pass"] = [np.nan if pd.isna(v) else float(v) for v in pool["judge_pass"]]
        pool["judge_score"] = pd.to_numeric(pool["judge_score"], errors="coerce").astype(float)
        if pool["judge_pass"].isna().any() and pool["judge_score"].notna().any():
            rubric = store.rubric(run["rubric_id"], run["rubric_version"]) if run["rubric_id"] \
                else None
            if rubric is not None:
                fill = pool["judge_score"].map(
                    lambda v: float(rubric.passes(v)) if pd.notna(v) else np.nan)
                pool["judge_pass"] = pool["judge_pass"].fillna(fill)
    else:
        pool["judge_score"] = np.nan
        pool["judge_pass"] = np.nan
    human = store.human_verdicts()
    pool = pool.merge(human[["answer_id", "human_pass"]], on="answer_id", how="left")
    info = {
        "run_id": None if run is None else run["run_id"],
        "judge_family": None if run is None else run["family"],
        "rubric_id": None if run is None else run["rubric_id"],
        "rubric_version": None if run is None else run["rubric_version"],
        "n_judged": int(pool["judge_score"].notna().sum()),
        "n_pilot": int(pool["human_pass"].notna().sum()),
    }
    return pool, info


def rubric_key(store: DesignRole, rubric: tuple[str, int] | None) -> tuple[str, int] | None:
    """``rubric``, else the newest stored rubric's ``(rubric_id, version)`` (``None`` when none is stored)."""
    if rubric is not None:
        return rubric
    newest = store.rubric()
    return None if newest is None else (newest.rubric_id, newest.version)


def apply_design(
    store: DesignRole,
    design: Design,
    raters: int | Sequence[str],
    *,
    rng: RngLike = 0,
    spread: int = DEFAULT_GAP,
    rubric: tuple[str, int] | None = None,
) -> pd.DataFrame:
    """Store a design and give its answers to raters as ``score`` assignments.

    One transaction: the design and its items are saved (a no-op when already saved), the
    assignments planned by :func:`plan_assignments` are appended after each rater's existing
    queue, and the design is marked applied. Applying a design twice is refused.

    Args:
        store: The project database.
        design: The design to apply.
        raters: Rater names (each must exist and be active), or a count: that many active
            non-admin raters, those with the shortest queues first.
        rng: Seed or Generator for the deal and the queue shuffles.
        spread: See :func:`plan_assignments`.
        rubric: ``(rubric_id, version)`` the raters score against; ``None`` takes the newest
            stored rubric (none stored: the assignments name no rubric).

    Returns:
        The assignments created, with ``rater`` names.

    Raises:
        InputError: Unknown, revoked or too few raters, or the design was already applied.
    """
    with store.connection():
        rubric = rubric_key(store, rubric)
        ids = store.design_raters(raters)
        store.save_design(design.design_id, design.params, design.summary(), design.items)
        if store.design_applied(design.design_id):
            raise InputError(
                f"design {design.design_id} was applied already",
                fix="draw a new design (e.g. another --seed) to add more assignments.",
            )
        tails = store.queue_tails(ids, depth=spread)
        exclude = store.assigned_answers(ids, list(design.items["answer_id"]))
        plan = plan_assignments(design, ids, rng=rng, spread=spread, tails=tails, exclude=exclude)
        store.add_design_assignments(design.design_id, plan, rubric=rubric)
        names = store.raters().set_index("rater_id")["name"]
    return plan.assign(rater=plan["rater_id"].map(names))


@dataclass(frozen=True)
class DrawnDesign:
    """A design drawn over the project database, and what it was drawn from.

    Attributes:
        design: The :class:`Design`; its notes end with the pairing note when the other
            sampling unit would do better (:func:`pairing_note`).
        pool_info: What the pool was read from (see :func:`load_pool`).
        label_time: The time per label its cost rests on (:func:`judgelab.labeler.timing.label_time`).
    """

    design: Design
    pool_info: dict[str, Any]
    label_time: LabelTime

    @property
    def judge_rubric(self) -> tuple[str, int] | None:
        """``(rubric_id, version)`` the judge run scored against, if it names one."""
        rubric_id, version = self.pool_info.get("rubric_id"), self.pool_info.get("rubric_version")
        return None if rubric_id is None or version is None else (str(rubric_id), int(version))

    def to_dict(self) -> dict[str, Any]:
        """The design as ``judgelab design --json`` prints it (before ``--apply``).

        The summary (precision, cost, planning model, notes), the parameters, the judge run the
        pool was read with, and the per-stratum table, one record per row (``None`` where the
        table has no value).
        """
        table = design_table(self.design)
        records = table.astype(object).where(table.notna(), None).to_dict(orient="records")
        return {**self.design.summary(), "params": self.design.params, "judge_run": self.pool_info,
                "strata": records}


def _with_quality(design: Design, rate: float, qualify_n: int) -> Design:
    """The design with the gold items and attention checks its raters also label in its cost."""
    if rate <= 0 and qualify_n <= 0:
        return design
    cost = with_quality(design.cost, rate=rate, qualify_n=qualify_n)
    target = design.target
    if target is not None:
        target = dataclasses.replace(target, cost=with_quality(target.cost, rate=rate, qualify_n=qualify_n))
    note = (f"the cost includes {cost.quality_ratings} gold and attention label(s): {rate:g} per live label "
            f"and {qualify_n} qualification item(s) per rater")
    return dataclasses.replace(design, cost=cost, target=target, notes=(*design.notes, note))


def draw_design(
    store: DesignRole,
    *,
    n: int | None = None,
    budget_hours: float | None = None,
    run_id: str | None = None,
    variant: str | None = "original",
    minutes_per_label: float | None = None,
    allocation: Allocation = "gap",
    strata: Sequence[Stratifier] = ("family", "category", "judge_bin"),
    paired: bool = True,
    overlap: float = 0.2,
    judge_bins: int = 2,
    length_bins: int = 3,
    disagreement: float | None = None,
    rho: float | None = None,
    kappa: float = 0.6,
    raters: int = 1,
    hours_per_rater_per_day: float = 2.0,
    target_half_width: float | None = None,
    min_gap: float | None = None,
    seed: int = 0,
) -> DrawnDesign:
    """Draw a design over the database's pool, costed with the measured time per label.

    The judge run's family is the gap's own family; the planning model is measured on the
    pool's pilot labels (:func:`planning_model`); the minutes per label follow
    :func:`judgelab.labeler.timing.label_time` over :meth:`Store.label_seconds`.

    Args:
        store: The project database.
        n: Label budget (distinct answers); give this or ``budget_hours``.
        budget_hours: Budget in person-hours instead (overlap and minutes per label included).
        run_id: Judge run whose scores bin the answers (see :func:`load_pool`).
        variant: Answer variant to sample; ``None`` for all.
        minutes_per_label: Minutes per label instead of the measured figure.
        allocation: See :func:`design_sample`.
        strata: See :func:`design_sample`.
        paired: See :func:`design_sample`.
        overlap: See :func:`design_sample`.
        judge_bins: See :func:`design_sample`.
        length_bins: See :func:`design_sample`.
        disagreement: Planning disagreement rate (else the pilot's, else 0.2).
        rho: Planning within-task residual correlation (else the pilot's, else 0).
        kappa: Expected inter-rater kappa.
        raters: Raters sharing the work (for calendar days).
        hours_per_rater_per_day: Labelling hours a rater gives a day.
        target_half_width: See :func:`design_sample`.
        min_gap: See :func:`design_sample`.
        seed: Seed for the draw (and for the comparison draw of :func:`pairing_note`).

    Raises:
        InputError: Neither or both budgets, a budget too small for one label, no answers, an
            unknown judge run, or options the design refuses.
    """
    if (n is None) == (budget_hours is None):
        raise InputError("give exactly one of a label budget or a budget in person-hours",
                         fix="pass --n or --budget-hours.")
    time = label_time(store.label_seconds(), given=minutes_per_label)
    quality = store.quality_settings()
    if n is None:
        assert budget_hours is not None
        # Gold items and attention checks are paid from the same budget (judgelab.calibration.design._quality).
        live_hours = quality_budget_hours(budget_hours, rate=quality.rate, qualify_n=quality.qualify_n,
                                          raters=raters, minutes_per_label=time.minutes)
        n = budget_labels(live_hours, minutes_per_label=time.minutes, overlap=overlap)
        if n < 1:
            raise InputError(
                f"{budget_hours:g} person-hours do not pay for one label at {time.minutes:g} min",
                fix="raise --budget-hours.",
            )
    pool, info = load_pool(store, run_id=run_id, variant=variant)
    allocation, fallback = stratified_gate(pool, allocation)
    design = design_sample(
        pool, n=n, allocation=allocation, strata=strata, paired=paired, overlap=overlap,
        own_family=info.get("judge_family"),
        model=planning_model(pool, disagreement=disagreement, rho=rho, kappa=kappa),
        judge_bins=judge_bins, length_bins=length_bins, minutes_per_label=time.minutes,
        minutes_source=time.source, raters=max(raters, 1),
        hours_per_rater_per_day=hours_per_rater_per_day, target_half_width=target_half_width,
        min_gap=min_gap, rng=seed,
    )
    note = pairing_note(pool, design, rng=seed)
    if note is not None:
        design = dataclasses.replace(design, notes=(*design.notes, note))
    if fallback is not None:
        design = dataclasses.replace(design, notes=(*design.notes, fallback))
    design = _with_quality(design, quality.rate, quality.qualify_n)
    return DrawnDesign(design=design, pool_info=info, label_time=time)


def stratified_gate(pool: pd.DataFrame, allocation: Allocation) -> tuple[Allocation, str | None]:
    """The allocation to draw with: ``proportional`` when the pilot labels show no saving, with the note why.

    The active design's gate (:func:`judgelab.calibration.active.batch_floor`, the same evidence:
    ``score_tells_errors`` on the pool's labels so far). An allocation that leans on the judge's
    verdicts (``gap``, ``neyman``) saves labels only where they tell where people disagree with the
    judge; when the pilot shows no link between the judge's score and its errors, the design falls
    back to proportional allocation (simple random sampling within the strata) and says so. With
    fewer than 20 pilot labels, or another allocation, nothing changes.

    Args:
        pool: :func:`load_pool`'s frame (``answer_id``, ``task_id``, ``family``, ``judge_pass``,
            optional ``judge_score`` and ``human_pass``, the pilot).
        allocation: The allocation asked for.
    """
    if allocation not in ("gap", "neyman") or "human_pass" not in pool.columns:
        return allocation, None
    # Imported here: judgelab.calibration.active imports this module (its store draws through load_pool).
    from judgelab.calibration.active._plan import ActivePool, score_tells_errors

    judged = pool[pool["judge_pass"].notna()].sort_values("answer_id")
    if judged.empty:
        return allocation, None
    evidence = score_tells_errors(ActivePool.from_frame(judged),
                                  human_pass=judged["human_pass"].to_numpy(dtype=float))
    if evidence is None or evidence.ci_low > 0:
        return allocation, None
    return "proportional", (
        f"no saving expected from the {allocation!r} allocation: in the pilot's {evidence.n} labels people disagreed "
        f"with the judge no more often where its score says they would ({evidence.estimate:+.1f} pp, 95% CI "
        f"{evidence.ci_low:+.1f} to {evidence.ci_high:+.1f}); drawn with proportional allocation instead (simple "
        "random sampling within the strata)")
