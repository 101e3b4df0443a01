"""Active designs over the project database: draw a batch, give it to raters, read where it stands.

:func:`draw_active_batch` and :func:`apply_active_batch` are what ``judgelab design --active``
and the Assignments page call; :func:`active_status` is what the Overview page and
``judgelab calibrate`` read. The pool is fixed by the first batch (its answers, the judge's
verdicts and scores the plan used); later batches are planned over the same answers from the
labels so far, and may be drawn only once every earlier batch is labelled, because an estimate
needs every drawn answer's label.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from judgelab.calibration.active._estimate import (
    DEFAULT_MARGIN,
    ActiveDraws,
    ActiveFigures,
    active_residuals_and_gap,
)
from judgelab.calibration.active._plan import (
    DEFAULT_FLOOR,
    GROWTH,
    ActivePool,
    BatchPlan,
    SavingForecast,
    batch_floor,
    expected_population_variance,
    labels_still_needed,
    next_batch_size,
    next_batch_variance,
    plan_batch,
    planned_labels,
    predicted_saving,
)
from judgelab.calibration.active._spending import SPENDINGS, Spending
from judgelab.calibration.design._assign import assign_items
from judgelab.calibration.design._model import planning_model
from judgelab.calibration.design._power import budget_labels
from judgelab.calibration.design._store import load_pool, rubric_key
from judgelab.calibration.stats._bootstrap import RngLike, check_choice
from judgelab.calibration.stats._raters import RaterScope
from judgelab.labeler.errors import InputError
from judgelab.labeler.queue import DEFAULT_GAP
from judgelab.labeler.timing import label_time

if TYPE_CHECKING:
    from judgelab.labeler.store import DesignRole
    from judgelab.labeler.store.roles import DesignView

__all__ = [
    "ActiveBatch",
    "ActiveData",
    "ActiveState",
    "ActiveStatus",
    "active_figures",
    "active_status",
    "apply_active_batch",
    "draw_active_batch",
    "load_active",
]

ActiveState = Literal["labelling", "ready", "reached", "budget spent", "plan spent", "pool labelled"]
"""Where an active design stands: a batch is being labelled; the next batch may be drawn; the
target is reached; the budget, the plan's error rate or the pool's answers are used up."""

#: How to give a batch's stranded answers (their raters were revoked) to others.
#: How a "ready" status says the target cannot be met with the answers left (the Overview reads it).
OUT_OF_REACH = "is out of reach"
STRANDED_FIX = "`judgelab design --active --apply`, or Reassign on the Assignments page"


@dataclass(frozen=True)
class ActiveBatch:
    """The next batch of an active design, drawn but not yet stored or assigned.

    Attributes:
        design_id: The active design (new when ``batch`` is 1).
        batch: The batch number.
        params: The design's inputs (stored with its first batch).
        pool: The pool (fixed by the first batch).
        plan: The batch's probabilities and predictions.
        drawn: Per sampling unit, whether it was drawn (known units always are).
        items: The answers to give to raters: ``answer_id``, ``task_id``, ``family``,
            ``stratum``, ``inclusion_prob``, ``weight``, ``n_raters``, ``is_overlap``.
        labels_so_far: Answers the design's earlier batches had labelled.
        notes: What a reader should know.
    """

    design_id: str
    batch: int
    params: dict[str, Any]
    pool: ActivePool
    plan: BatchPlan
    drawn: np.ndarray
    items: pd.DataFrame
    labels_so_far: int
    notes: tuple[str, ...] = field(default=())
    #: Drawn answers that already wait in a rater's queue: to label, but no new assignment.
    queued: int = 0

    @property
    def draw_id(self) -> str:
        """The ordinary design holding the batch's sampled answers."""
        return f"{self.design_id}-b{self.batch}"

    @property
    def n_new(self) -> int:
        """Answers the batch asks raters to label."""
        return len(self.items)

    def draws(self) -> pd.DataFrame:
        """One row per pool answer, as ``active_draws`` stores it."""
        pool, plan = self.pool, self.plan
        unit_name = pool.task_id[pool.task] if pool.paired else pool.answer_id
        return pd.DataFrame({
            "answer_id": pool.answer_id, "unit": unit_name, "inclusion_prob": plan.prob[pool.unit],
            "known": plan.known[pool.unit], "drawn": self.drawn[pool.unit],
            "pred_pass": plan.prediction.pred_pass, "pred_score": plan.prediction.pred_score,
            "judge_pass": pool.judge_pass, "judge_score": pool.judge_score, "flipped": pool.flipped,
        })

    def summary(self) -> dict[str, Any]:
        """JSON-ready facts about the batch (stored with it)."""
        free = ~self.plan.known
        prob = self.plan.prob[free]
        return {
            "batch": self.batch,
            "expected_labels": round(self.plan.expected_labels, 2),
            "new_labels": self.n_new,
            "units_free": int(free.sum()),
            "units_known": int(self.plan.known.sum()),
            "floor": self.plan.floor,
            "prob_min": float(prob.min()) if prob.size else None,
            "prob_max": float(prob.max()) if prob.size else None,
            "planned_variance_pp2": self.plan.planned_variance,
            "prior_sd": None if not math.isfinite(self.plan.prediction.prior_sd) else self.plan.prediction.prior_sd,
            "labels_learnt_from": self.plan.prediction.n_labelled,
            "notes": list(self.notes),
        }


def _pool_frame(store: DesignRole, params: dict[str, Any]) -> pd.DataFrame:
    """The judged answers of the pool, with the judge's self-disagreement."""
    pool, _ = load_pool(store, run_id=params["run_id"], variant=params["variant"])
    judged = pool[pool["judge_pass"].notna()].copy()
    if judged.empty:
        raise InputError("no answer in the pool has a judge verdict to plan an active design from",
                         fix="score the pool first with `judgelab score` (or import judgements).")
    flips = store.judge_flips(params["run_id"])
    judged["flipped"] = judged["answer_id"].isin(set(flips["answer_id"]))
    return judged


def _stored_pool(draws: pd.DataFrame, paired: bool) -> ActivePool:
    """The pool as the first batch fixed it."""
    first = draws[draws["batch"] == draws["batch"].min()]
    return ActivePool.from_frame(first[["answer_id", "task_id", "family", "judge_pass", "judge_score", "flipped"]],
                                 paired=paired)


def _labels(store: DesignView, pool: ActivePool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pool answer: human pass share, human score (``nan`` when unlabelled), flagged only."""
    labels = store.answer_labels().set_index("answer_id").reindex(pool.answer_id)
    flagged = labels["flagged_only"].fillna(False).to_numpy(dtype=bool)
    return (labels["human_pass"].to_numpy(dtype=float), labels["human_score"].to_numpy(dtype=float), flagged)


def _open_design(store: DesignView) -> tuple[str, dict[str, Any]] | None:
    designs = store.active_designs()
    if designs.empty:
        return None
    row = designs.iloc[0]
    return str(row["design_id"]), json.loads(row["params"])


def draw_active_batch(
    store: DesignRole,
    *,
    target_half_width: float | None = None,
    budget_hours: float | None = None,
    batch_size: int | None = None,
    run_id: str | None = None,
    variant: str | None = "original",
    paired: bool = False,
    overlap: float = 0.0,
    floor: float = DEFAULT_FLOOR,
    disagreement: float | None = None,
    minutes_per_label: float | None = None,
    level: float = 0.95,
    spending: Spending = "obf",
    new: bool = False,
    seed: int = 0,
) -> ActiveBatch:
    """The next batch of the open active design, or the first batch of a new one.

    The newest active design continues unless it is finished (target reached, budget or plan
    spent, pool labelled) or ``new`` is given; a new design needs ``target_half_width``. The
    options other than ``batch_size`` and ``seed`` apply to a new design only (a design keeps the
    plan it started with).

    Args:
        store: The project database.
        target_half_width: The 95% half-width of the gap (pass verdicts, percentage points) at
            which the team may stop.
        budget_hours: Person-hours at most (overlap included); ``None``: no limit but the pool.
        batch_size: Labels per batch at most; ``None``: a pilot first, then what the current
            rate says the next look needs, growing step by step
            (:func:`judgelab.calibration.active.next_batch_size`).
        run_id: The judge run whose verdicts and scores the plan uses (newest by default).
        variant: Answer variant of the pool.
        paired: Sample whole tasks (every family's answer) instead of single answers.
        overlap: Share of drawn units labelled by two raters.
        floor: See :func:`judgelab.calibration.active.sampling_probabilities`.
        disagreement: Planning disagreement rate (else the pilot's, else 0.2).
        minutes_per_label: Minutes per label instead of the measured figure.
        level: Confidence level of the plan.
        spending: The alpha-spending function.
        new: Start a new design even if one is open.
        seed: Seed of the draw (combined with the batch number).

    Raises:
        InputError: When the open design's last batch is not labelled yet, it is finished and no
            target is given for a new one, or options are out of range.
    """
    check_choice("draw_active_batch", "spending", spending, SPENDINGS)
    open_design = None if new else _open_design(store)
    if open_design is not None:
        status = active_status(store, open_design[0])
        assert status is not None
        if status.state == "labelling":
            raise InputError(status.message, fix="finish labelling the batch, then draw the next one.")
        if status.state == "ready":
            if target_half_width is not None and target_half_width != status.target_half_width:
                raise InputError(
                    f"active design {status.design_id} runs with a target of ±{status.target_half_width:g} pp",
                    fix="continue it without --target-half-width, or pass --new to start another.",
                )
            return _next_batch(store, status, batch_size=batch_size, seed=seed)
        if target_half_width is None:
            raise InputError(status.message, fix="stop, or start a new design with --target-half-width.")
    if target_half_width is None or not target_half_width > 0:
        raise InputError("an active design needs a positive target half-width of the gap",
                         fix="e.g. --target-half-width 5 (percentage points).")
    return _first_batch(store, target_half_width=target_half_width, budget_hours=budget_hours, batch_size=batch_size,
                        run_id=run_id, variant=variant, paired=paired, overlap=overlap, floor=floor,
                        disagreement=disagreement, minutes_per_label=minutes_per_label, level=level,
                        spending=spending, seed=seed)


def _first_batch(store: DesignRole, *, target_half_width: float, budget_hours: float | None, batch_size: int | None,
                 seed: int, **options: Any) -> ActiveBatch:
    if not 0 <= options["overlap"] <= 1 or not 0 < options["floor"] <= 1:
        raise InputError("overlap must be in [0, 1] and floor in (0, 1]", fix="e.g. --overlap 0.2.")
    info = store.judge_run_info(options["run_id"])
    if info is None:
        raise InputError("no judge run has scores to plan an active design from",
                         fix="score the pool first with `judgelab score`.")
    time = label_time(store.label_seconds(), given=options["minutes_per_label"])
    params: dict[str, Any] = {
        **options, "run_id": info["run_id"], "own_family": info["family"], "target_half_width": target_half_width,
        "budget_hours": budget_hours, "batch_size": batch_size, "seed": seed, "margin": DEFAULT_MARGIN,
        "last_look": "target",
        "minutes_per_label": time.minutes, "minutes_source": time.source, "prior_labels": 5.0,
    }
    frame = _pool_frame(store, params)
    pool = ActivePool.from_frame(frame, paired=options["paired"])
    human, human_score, flagged = _labels(store, pool)
    model = planning_model(frame, disagreement=options["disagreement"])
    params["disagreement"] = model.disagreement
    params["disagreement_source"] = model.source
    params["budget_labels"] = None if budget_hours is None else budget_labels(
        budget_hours, minutes_per_label=time.minutes, overlap=options["overlap"])
    planned = planned_labels(pool, target_half_width=target_half_width, human_pass=human,
                             own_family=info["family"], floor=options["floor"], disagreement=model.disagreement,
                             level=options["level"])
    params["planned_labels"] = planned
    notes = []
    if planned is None:
        notes.append(f"even labelling the whole pool is not expected to reach ±{target_half_width:g} pp: "
                     "the judge's behaviour beyond this pool is that uncertain")
    flips = int(pool.flipped.sum())
    if flips:
        notes.append(f"the judge disagreed with itself on {flips} of {pool.flipped.size} answers "
                     "(formats or orders): they start as doubtful")
    else:
        notes.append("the judge never disagreed with itself on these answers: a format study "
                     "(`judgelab probe --biases format`) reads them again, and the design labels first where it does")
    capacity = _capacity(pool, human, params)
    size = batch_size or next_batch_size(0, needed=planned, left=capacity)
    existing = len(store.active_designs())
    digest = hashlib.sha256(json.dumps([params, pool.answer_id.tolist(), existing], default=str).encode())
    design_id = "a" + digest.hexdigest()[:11]
    if info["family"] is None:
        notes.append("the judge run records no family: the stopping rule watches the first family's residual")
    return _draw(store, design_id, 1, params, pool, (human, human_score, flagged), min(size, capacity), 0,
                 seed, tuple(notes))


def _capacity(pool: ActivePool, human: np.ndarray, params: dict[str, Any], used: int = 0) -> int:
    """Labels left: unlabelled answers, within the budget."""
    left = int((~np.isfinite(human)).sum())
    if params.get("budget_labels") is not None:
        left = min(left, int(params["budget_labels"]) - used)
    return max(left, 0)


def _next_batch(store: DesignRole, status: ActiveStatus, *, batch_size: int | None, seed: int) -> ActiveBatch:
    params = status.params
    _, _, draws = store.active_design(status.design_id)
    pool = _stored_pool(draws, params["paired"])
    labels = _labels(store, pool)
    capacity = _capacity(pool, labels[0], params, status.labels_collected)
    needed = status.labels_needed_next
    size = next_batch_size(status.labels_collected, needed=needed, left=capacity)
    notes: tuple[str, ...] = ()
    if size < needed:
        what = "all of it" if size >= capacity else f"{size} expected labels, at most {GROWTH:g}x the labels so far"
        reach = "does not reach the target within what is left" if not math.isfinite(needed) else \
            f"asks for {int(needed)} more labels"
        notes = (f"the current rate {reach}: this batch takes {what}",)
    cap = batch_size or params.get("batch_size")
    if cap and int(cap) < size:
        size, notes = int(cap), ()
    return _draw(store, status.design_id, status.n_batches + 1, params, pool, labels, min(size, capacity),
                 status.labels_collected, seed, notes)


def _draw(
    store: DesignRole,
    design_id: str,
    batch: int,
    params: dict[str, Any],
    pool: ActivePool,
    labels: tuple[np.ndarray, np.ndarray, np.ndarray],
    size: int,
    so_far: int,
    seed: int,
    notes: tuple[str, ...],
) -> ActiveBatch:
    human, human_score, flagged = labels
    if size < 1:
        raise InputError("there is nothing left to label within the pool and the budget",
                         fix="raise --budget-hours, or stop: the status says what was reached.")
    # A flagged-unrateable answer has no verdict and never will: it counts as known.
    seen = np.where(flagged, 0.5, human)
    # The forecast from the labels so far (none before the first batch is stored) joins the gate.
    forecast = active_saving(store, design_id) if batch > 1 else None
    gate = batch_floor(pool, human_pass=seen, floor=params["floor"], disagreement=params["disagreement"],
                       prior_labels=params["prior_labels"], forecast=forecast)
    floor = gate.floor
    if gate.note is not None:
        notes = (*notes, gate.note)
    plan = plan_batch(pool, size=float(size), human_pass=seen, human_score=human_score,
                      own_family=params["own_family"], floor=floor, disagreement=params["disagreement"],
                      prior_labels=params["prior_labels"])
    gen = np.random.default_rng([int(params.get("seed", seed)), seed, batch])
    drawn = (gen.random(pool.n_units) < plan.prob) | plan.known
    wanted = drawn[pool.unit] & ~plan.known[pool.unit] & ~np.isfinite(seen)
    # The overlap is drawn by task: a task's answers go to the same rater(s) (plan_assignments).
    new_tasks = np.unique(pool.task[wanted])
    overlap_tasks = gen.permutation(new_tasks)[: round(params["overlap"] * new_tasks.size)]
    assigned = _assigned_answers(store, pool.answer_id[wanted])
    rows = np.flatnonzero(wanted & ~np.isin(pool.answer_id, list(assigned)))
    prob = plan.prob[pool.unit[rows]]
    is_overlap = np.isin(pool.task[rows], overlap_tasks)
    items = pd.DataFrame({
        "answer_id": pool.answer_id[rows], "task_id": pool.task_id[pool.task[rows]], "family": pool.family[rows],
        "stratum": f"active batch {batch}", "inclusion_prob": prob, "weight": 1.0 / prob,
        "n_raters": np.where(is_overlap, 2, 1), "is_overlap": is_overlap,
    })
    extra: tuple[str, ...] = ()
    if assigned:
        extra = (f"{len(assigned)} drawn answer(s) already wait in a rater's queue: they count when labelled",)
    return ActiveBatch(design_id=design_id, batch=batch, params=params, pool=pool, plan=plan, drawn=drawn,
                       items=items, labels_so_far=so_far, notes=notes + extra, queued=len(assigned))


def _assigned_answers(store: DesignView, answer_ids: np.ndarray) -> set[str]:
    """Of these answers, those waiting in an active rater's queue (someone will label them).

    A revoked rater's unanswered assignment does not count: nobody will answer it.
    """
    if answer_ids.size == 0:
        return set()
    holders = store.score_holders(answer_ids.tolist())
    return {str(a) for a in holders.loc[holders["active"] & ~holders["done"], "answer_id"]}


def apply_active_batch(
    store: DesignRole,
    batch: ActiveBatch,
    raters: int | list[str],
    *,
    rng: int = 0,
    spread: int = DEFAULT_GAP,
    rubric: tuple[str, int] | None = None,
) -> pd.DataFrame:
    """Store a drawn batch (and its design, for a first batch) and give its answers to raters.

    One transaction, with the same guarantees as :func:`judgelab.calibration.design.apply_design`: answers
    of one task go to the same rater(s), families are dealt evenly, each queue is spread by task
    and blind, and an answer gets exactly its ``n_raters`` raters.

    Returns:
        The assignments created, with ``rater`` names.

    Raises:
        InputError: Unknown, revoked or too few raters, or the batch is no longer the next one.
    """
    with store.connection():
        ids = _people(store, raters)
        if batch.batch == 1:
            store.save_active_design(batch.design_id, batch.params)
        params = {"active": batch.design_id, "batch": batch.batch, "kind": "active batch"}
        store.save_design(batch.draw_id, params, batch.summary(), batch.items)
        store.add_active_batch(batch.design_id, batch.batch, draw_id=batch.draw_id, weight=batch.plan.weight,
                               expected_labels=batch.plan.expected_labels, summary=batch.summary(),
                               draws=batch.draws())
        return _give(store, batch.draw_id, batch.items, ids, rng=rng, spread=spread, rubric=rubric,
                     write=store.add_design_assignments)


def reassign_active_batch(
    store: DesignRole,
    raters: int | list[str],
    *,
    rng: int = 0,
    spread: int = DEFAULT_GAP,
    rubric: tuple[str, int] | None = None,
) -> pd.DataFrame:
    """Give the open batch's stranded answers to active raters.

    An answer is stranded when the batch drew it, it has no label and no active rater holds it:
    its rater was revoked before labelling it, so the batch could never complete. Each goes to
    as many raters as the batch planned for it (two for the overlap), with the guarantees of
    :func:`apply_active_batch` (whole tasks to one rater, families dealt evenly, queues spread and
    blind), in one transaction; the revoked raters' assignments stay, unanswered, and no longer
    count. The answers keep their probabilities: who labels an answer does not change the draw.

    Returns:
        The assignments created, with ``rater`` names (none when nothing is stranded).

    Raises:
        InputError: No active design, or unknown, revoked, simulated or too few raters.
    """
    with store.connection():
        stored = _read(store, None)
        if stored is None:
            raise InputError("there is no active design to reassign",
                             fix="start one with `judgelab design --active --target-half-width H --apply`.")
        open_batches = stored.progress[~stored.progress["complete"] & (stored.progress["stranded"] > 0)]
        if open_batches.empty:
            return pd.DataFrame(columns=["rater_id", "answer_id", "task_id", "family", "queue_pos", "is_overlap",
                                         "rater"])
        batch = int(open_batches["batch"].iloc[0])
        draw_id = str(open_batches["draw_id"].iloc[0])
        d = stored.draws
        handled = stored.pool.answer_id[np.isfinite(stored.human) | stored.flagged]
        rows = d[(d["batch"] == batch) & d["drawn"] & ~d["known"]
                 & ~d["answer_id"].isin(set(handled.tolist()) | stored.waiting)]
        planned = store.design_items(draw_id).set_index("answer_id")["n_raters"]
        n_raters = rows["answer_id"].map(planned).fillna(1).astype(int).to_numpy()
        items = pd.DataFrame({"answer_id": rows["answer_id"].to_numpy(), "task_id": rows["task_id"].to_numpy(),
                              "family": rows["family"].to_numpy(), "n_raters": n_raters, "is_overlap": n_raters > 1})
        return _give(store, draw_id, items, _people(store, raters), rng=np.random.default_rng([rng, batch]),
                     spread=spread, rubric=rubric, write=store.add_reassignments)


def _give(store: DesignRole, draw_id: str, items: pd.DataFrame, ids: list[int], *, rng: RngLike, spread: int,
          rubric: tuple[str, int] | None, write: Callable[..., int]) -> pd.DataFrame:
    """Deal ``items`` to the raters ``ids`` (``assign_items``) and ``write`` them to the design ``draw_id``."""
    tails = store.queue_tails(ids, depth=spread)
    exclude = store.assigned_answers(ids, list(items["answer_id"]))
    plan = assign_items(items, ids, rng=rng, spread=spread, tails=tails, exclude=exclude)
    write(draw_id, plan, rubric=rubric_key(store, rubric))
    names = store.raters().set_index("rater_id")["name"]
    return plan.assign(rater=plan["rater_id"].map(names))


def _people(store: DesignRole, raters: int | list[str]) -> list[int]:
    """The chosen raters' ids; refuses simulated raters, who never label in the app."""
    ids = store.design_raters(raters)
    simulated = store.raters().set_index("rater_id")["simulated"]
    fake = [int(i) for i in ids if bool(simulated.get(i, False))]
    if fake:
        raise InputError(
            f"{len(fake)} of the chosen raters are simulated: they never label in the app, so the batch "
            "would never be complete",
            fix="give active batches to people (e.g. --raters alice,bob).",
        )
    return ids


# -- where a design stands ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActiveStatus:
    """Where an active design stands, and what the team should do next.

    Attributes:
        design_id: The design.
        params: Its inputs.
        batches: One row per batch: ``batch``, ``draw_id``, ``expected_labels``, ``new_labels``,
            ``assigned``, ``done``, ``complete``, ``created_at``.
        looks: One row per labelled batch (see :class:`judgelab.calibration.active.ActiveFigures`).
        figures: The residuals and the gap at the last labelled batch (``None`` before it).
        state: See :data:`ActiveState`.
        message: What to do, in plain words.
        labels_collected: Answers labelled through the design's labelled batches.
        labels_needed: Labels the current rate says are still needed for the target (``nan``
            before the first look; 0 once met; ``inf`` when the rest cannot get there).
        labels_needed_next: The next batch's size that rate asks for (aiming a little under the
            target so that one look usually does).
        minutes_per_label: Minutes per label for the hours.
        pool_answers: Answers in the pool.
        excluded: Drawn answers every rater flagged unrateable (left out of the estimate).
    """

    design_id: str
    params: dict[str, Any]
    batches: pd.DataFrame
    looks: pd.DataFrame
    figures: ActiveFigures | None
    state: ActiveState
    message: str
    labels_collected: int
    labels_needed: float
    labels_needed_next: float
    minutes_per_label: float
    pool_answers: int
    excluded: int = 0

    @property
    def target_half_width(self) -> float:
        """The target half-width of the gap, percentage points."""
        return float(self.params["target_half_width"])

    @property
    def n_batches(self) -> int:
        """Batches drawn."""
        return len(self.batches)

    @property
    def hours_needed(self) -> float:
        """Person-hours for :attr:`labels_needed` (overlap included)."""
        return self.labels_needed * (1 + float(self.params.get("overlap", 0.0))) * self.minutes_per_label / 60

    @property
    def reached(self) -> bool:
        """Whether the target is reached: the team may stop."""
        return self.state == "reached"


def active_status(
    store: DesignRole, design_id: str | None = None, *, interval: RaterScope = "raters"
) -> ActiveStatus | None:
    """Where the newest (or the given) active design stands.

    Args:
        store: The project database.
        design_id: The design; ``None`` takes the newest.
        interval: Which raters the intervals speak for (as ``judgelab calibrate``'s default).

    Returns:
        The :class:`ActiveStatus`, or ``None`` when there is no active design.
    """
    stored = _read(store, design_id)
    if stored is None:
        return None
    params, pool, human, flagged, batches = stored.params, stored.pool, stored.human, stored.flagged, stored.progress
    base: dict[str, Any] = {"design_id": stored.design_id, "params": params, "batches": batches,
                            "minutes_per_label": float(params["minutes_per_label"]),
                            "pool_answers": int(pool.answer_id.size), "excluded": int(flagged.sum())}
    data = _labelled(stored)
    if data is None:
        return _before_first_look(base, batches)
    figures = active_figures(store, data, scale="pass", interval=interval)
    known = np.where(flagged, 0.5, human)
    model = {"own_family": params["own_family"], "disagreement": params["disagreement"],
             "prior_labels": params["prior_labels"]}
    future = next_batch_variance(pool, human_pass=known, floor=params["floor"], **model)
    population = expected_population_variance(pool, human_pass=known, **model)
    return _judge_state(base, figures, batches, data.looks, (human, flagged, pool),
                        (future, float(data.draws.weight.sum()), population))


def active_saving(store: DesignRole, design_id: str | None = None) -> SavingForecast | None:
    """The saving the newest (or the given) active design predicts for itself, from its labels so far.

    What a team reads before it commits to the design (:func:`judgelab.calibration.active.predicted_saving`:
    the active and the stratified design against simple random sampling, with the basis and the
    condition it holds under in ``basis``); after a look the design effect its draws measure is
    included.

    Returns:
        The :class:`judgelab.calibration.active.SavingForecast`, or ``None`` without an active design.
    """
    stored = _read(store, design_id)
    if stored is None:
        return None
    params, pool = stored.params, stored.pool
    known = np.where(stored.flagged, 0.5, stored.human)
    model = {"own_family": params["own_family"], "disagreement": params["disagreement"],
             "prior_labels": params["prior_labels"], "floor": params["floor"]}
    data = _labelled(stored)
    if data is None:
        return predicted_saving(pool, target_half_width=float(params["target_half_width"]), human_pass=known,
                                level=float(params["level"]), **model)
    figures = active_figures(store, data, scale="pass", interval="panel")
    # The draws list their answers in their own order: the labels follow them there.
    in_draws = pd.Series(stored.human, index=pool.answer_id).reindex(data.draws.answer_id).to_numpy(float)
    return predicted_saving(pool, target_half_width=float(params["target_half_width"]), human_pass=known,
                            level=float(params["level"]), draws=data.draws,
                            design_variance=float(figures.statistics.design[-1]), human_in_draws=in_draws, **model)


def _batch_progress(batches: pd.DataFrame, draws: pd.DataFrame, pool: ActivePool, handled: np.ndarray,
                    waiting: set[str]) -> pd.DataFrame:
    """Per batch: answers drawn to label (``new_labels``), of those labelled so far, and whether complete.

    Complete means every drawn answer has a label (or is flagged unrateable by its raters) and
    every live assignment of the batch is answered (an overlap's second label included; a revoked
    rater's unanswered one is not live). ``stranded`` counts the drawn answers without a label
    that no active rater holds (their raters were revoked): the batch cannot complete until they
    are given to others (:func:`reassign_active_batch`).
    """
    out = batches[["batch", "draw_id", "expected_labels", "assigned", "done", "created_at"]].copy()
    labelled = set(pool.answer_id[handled].tolist())
    new, have, stranded = [], [], []
    for b in out["batch"]:
        rows = draws[(draws["batch"] == b) & draws["drawn"] & ~draws["known"]]
        new.append(len(rows))
        is_labelled = rows["answer_id"].isin(labelled)
        have.append(int(is_labelled.sum()))
        stranded.append(int((~is_labelled & ~rows["answer_id"].isin(waiting)).sum()))
    out["new_labels"] = new
    out["labelled"] = have
    out["stranded"] = stranded
    out["complete"] = (out["labelled"] >= out["new_labels"]).to_numpy() & (out["done"] >= out["assigned"]).to_numpy()
    return out


def _progress(row: Any) -> str:
    """``"12 of 20 drawn answers labelled"`` (and the overlap's second labels when they lag)."""
    text = f"{int(row['labelled'])} of {int(row['new_labels'])} drawn answers labelled"
    if int(row["labelled"]) >= int(row["new_labels"]) and int(row["done"]) < int(row["assigned"]):
        text += f", {int(row['assigned']) - int(row['done'])} second label(s) to come"
    return text


def _interval_waits(row: Any) -> str:
    """What the batch waits for: its labels, or first its answers stranded by revoked raters."""
    stranded = int(row["stranded"])
    if not stranded:
        return "the interval updates when it is complete."
    return (f"{stranded} of its answers are in no active rater's queue (their raters were revoked): give them to "
            f"others ({STRANDED_FIX}), or the interval never updates.")


def _before_first_look(base: dict[str, Any], batches: pd.DataFrame) -> ActiveStatus:
    params = base["params"]
    row = batches.iloc[0]
    planned = params.get("planned_labels")
    message = f"Batch 1: {_progress(row)}. The gap's interval appears when the batch is complete."
    if int(row["stranded"]):
        message = f"Batch 1: {_progress(row)}; {_interval_waits(row)}"
    return ActiveStatus(**base, looks=pd.DataFrame(), figures=None, state="labelling", message=message,
                        labels_collected=0, labels_needed=float(planned) if planned else math.nan,
                        labels_needed_next=math.nan)


def _judge_state(base: dict[str, Any], figures: ActiveFigures, batches: pd.DataFrame, n_looks: int,
                 labels: tuple[np.ndarray, np.ndarray, ActivePool],
                 projection: tuple[Callable[[float], float], float, float]) -> ActiveStatus:
    params = base["params"]
    human, flagged, pool = labels
    target = float(params["target_half_width"])
    looks = figures.looks
    collected = int(looks["labels"].iloc[-1])
    gap = figures.gap if figures.gap is not None else next(iter(figures.families.values()))
    half = gap.half_width
    capacity = _capacity(pool, np.where(flagged, 0.5, human), params, collected)
    common = plan_options(params)
    common |= {"next_variance": projection[0], "weight_total": projection[1], "population": projection[2]}
    needed = labels_still_needed(figures.statistics, capacity=math.inf, **common)
    needed_next = labels_still_needed(figures.statistics, capacity=max(capacity, 0), **common)
    what = "gap" if figures.gap is not None else f"{next(iter(figures.families))} residual"
    now = f"the {what}'s interval is {gap.estimate:+.1f} ± {half:.1f} pp (look {int(gap.extra['look'])})"
    if gap.extra.get("no_interval"):
        now = (f"the {what} is {gap.estimate:+.1f} pp, no interval yet (look {int(gap.extra['look'])}: "
               f"{gap.extra['no_interval']})")
    elif gap.extra.get("refused"):
        now = (f"the {what} is {gap.estimate:+.1f} pp with no interval (look {int(gap.extra['look'])}: "
               f"{gap.extra['refused']})")
    state: ActiveState
    if figures.stopped_at is not None:
        state = "reached"
        message = (f"Target reached: {now}, within the target of ±{target:g} pp. The team may stop labelling; "
                   "this interval stays valid however often it was looked at.")
    elif float(looks["tau"].iloc[-1]) >= 1:
        # Only a look at the plan's full information has spent its alpha; one with no interval
        # before that (it added no information) leaves the rest for the next look.
        state = "plan spent"
        message = (f"The plan's error rate is spent and the target of ±{target:g} pp was not met: {now}. Stop here; "
                   "a new design would start a new plan.")
    elif n_looks < len(batches):
        state = "labelling"
        row = batches.iloc[n_looks]
        message = (f"Not yet: {now}, target ±{target:g} pp. Batch {int(row['batch'])}: {_progress(row)}; "
                   f"{_interval_waits(row)}")
    elif capacity <= 0:
        state = "budget spent" if params.get("budget_labels") is not None and (~np.isfinite(human)).any() \
            else "pool labelled"
        message = f"Nothing left to label ({state}): {now}, short of the target of ±{target:g} pp."
    else:
        state = "ready"
        left = f"the {capacity} answers left{' within the budget' if params.get('budget_labels') else ''}"
        if needed <= capacity:
            message = (f"Not yet: {now}; the target of ±{target:g} pp needs about {int(needed)} more labels at the "
                       "current rate. Draw the next batch.")
        else:
            # One piece of advice, not "draw" beside "out of reach" (issue 29): say the target is out
            # of reach, and what another batch still buys.
            message = (f"Not yet: {now}. The target of ±{target:g} pp {OUT_OF_REACH}: it would need more labels "
                       f"than {left}. Draw the next batch only to narrow the interval further; or stop here and "
                       "report the interval as it is.")
    return ActiveStatus(**base, looks=looks, figures=figures, state=state, message=message, labels_collected=collected,
                        labels_needed=needed, labels_needed_next=needed_next)


@dataclass(frozen=True)
class ActiveData:
    """An active design's labelled batches, read for an estimate.

    Attributes:
        design_id: The design.
        params: Its inputs.
        draws: The draws of its labelled batches (answers every rater flagged unrateable left out).
        batches: Batches drawn (the last may still be labelled).
        excluded: Drawn answers left out as unrateable.
    """

    design_id: str
    params: dict[str, Any]
    draws: ActiveDraws
    batches: int
    excluded: int

    @property
    def looks(self) -> int:
        """Labelled batches: the looks the estimate has."""
        return self.draws.n_batches

    def ever_drawn(self) -> pd.Series:
        """Per pool answer drawn (or known) in some labelled batch: its chance of that, ``1 − Π(1 − π_b)``."""
        d = self.draws
        hit = np.asarray(d.drawn.any(axis=0), dtype=bool)
        chance = 1 - np.prod(1 - d.prob, axis=0)
        keep = hit[d.unit]
        return pd.Series(chance[d.unit][keep], index=d.answer_id[keep], name="inclusion_prob")


def load_active(store: DesignView, design_id: str | None = None) -> ActiveData | None:
    """The newest (or the given) active design's labelled batches; ``None`` before the first is labelled.

    A batch counts when every answer it drew is labelled (or flagged unrateable), and so do the
    batches before it.
    """
    stored = _read(store, design_id)
    return None if stored is None else _labelled(stored)


@dataclass(frozen=True)
class _Stored:
    """An active design as stored, with its pool's labels and each batch's progress (read once)."""

    design_id: str
    params: dict[str, Any]
    batches: pd.DataFrame
    draws: pd.DataFrame
    pool: ActivePool
    human: np.ndarray
    flagged: np.ndarray
    progress: pd.DataFrame
    waiting: set[str]


def _read(store: DesignView, design_id: str | None) -> _Stored | None:
    """The newest (or the given) active design and the labels so far; ``None`` without one."""
    if design_id is None:
        opened = _open_design(store)
        if opened is None:
            return None
        design_id = opened[0]
    params, batches, draws = store.active_design(design_id)
    pool = _stored_pool(draws, params["paired"])
    human, _, flagged = _labels(store, pool)
    handled = np.isfinite(human) | flagged
    waiting = _assigned_answers(store, pool.answer_id[~handled])
    return _Stored(design_id=design_id, params=params, batches=batches, draws=draws, pool=pool, human=human,
                   flagged=flagged, progress=_batch_progress(batches, draws, pool, handled, waiting), waiting=waiting)


def _labelled(stored: _Stored) -> ActiveData | None:
    """The labelled batches of ``stored`` (every batch up to the first incomplete one)."""
    done = stored.progress["complete"].to_numpy(dtype=bool)
    looks = int(np.argmin(done)) if not done.all() else len(done)
    if looks == 0:
        return None
    draws, batches = stored.draws, stored.batches
    keep = ~draws["answer_id"].isin(set(stored.pool.answer_id[stored.flagged].tolist())).to_numpy()
    frame = draws[keep & (draws["batch"] <= looks).to_numpy()]
    weights = batches[batches["batch"] <= looks][["batch", "weight"]]
    return ActiveData(design_id=stored.design_id, params=stored.params,
                      draws=ActiveDraws.from_frame(frame, weights), batches=len(batches),
                      excluded=int(stored.flagged.sum()))


def active_figures(
    store: DesignRole,
    data: ActiveData,
    *,
    scale: Literal["pass", "score"] = "pass",
    interval: RaterScope = "raters",
    human: np.ndarray | None = None,
    rater_level: pd.DataFrame | None = None,
    critical: list[float] | None = None,
) -> ActiveFigures:
    """The design's residuals and gap on one scale, at its last labelled batch.

    Args:
        store: The project database (for the labels when ``human`` is not given).
        data: The design's labelled batches (:func:`load_active`).
        scale: ``"pass"`` or ``"score"`` (the caller checks that the judge's and the humans'
            scores are on one scale).
        interval: Which raters the intervals speak for.
        human: The human score per pool answer (``data.draws.answer_id`` order); default: the
            mean of the current labels.
        rater_level: Per-rater labels (``answer`` id, ``rater``, ``score``); default: the
            current labels.
        critical: The plan's (normal) critical values of the looks from the pass-scale gap (its
            ``boundary``), for the score scale.

    Returns:
        The :class:`judgelab.calibration.active.ActiveFigures`.
    """
    params, active = data.params, data.draws
    if human is None:
        labels = store.answer_labels().set_index("answer_id").reindex(active.answer_id)
        human = labels["human_pass" if scale == "pass" else "human_score"].to_numpy(dtype=float)
    if rater_level is None and interval == "raters":
        rows = store.rater_labels(active.answer_id)
        column = "passed" if scale == "pass" else "overall"
        rows = rows[rows[column].notna()]
        rater_level = pd.DataFrame({"answer": rows["answer_id"].astype(str), "rater": rows["rater_id"].astype(str),
                                    "score": rows[column].astype(float), "people": rows["people"].astype(int)})
    return active_residuals_and_gap(active, human, scale=scale, own_family=params.get("own_family"), critical=critical,
                                    rater_level=rater_level, interval=interval, **plan_options(params))


def plan_options(params: dict[str, Any]) -> dict[str, Any]:
    """The stored design's plan as keyword options of the estimator (:func:`active_residuals_and_gap`).

    A design stored before plans named their last look (no ``last_look``) keeps the one it was
    started with, ``"tau"`` (:data:`judgelab.calibration.active.LastLook`).
    """
    return {"target_half_width": float(params["target_half_width"]), "level": float(params["level"]),
            "spending": params["spending"], "margin": float(params["margin"]),
            "last_look": params.get("last_look", "tau")}
