"""Active labelling: label where the judge is least trustworthy, and stop when the interval is narrow.

Hand labels are the expensive ingredient, and a fixed plan either over-labels or stops with an
interval too wide to act on. An **active design** labels the pool in batches. Before each batch,
every unlabelled answer gets a probability of being labelled that grows with how likely the human
and the judge disagree on it (the judge's score distance to the pass threshold, the judge
disagreeing with itself between orders or formats, and the labels so far by stratum), with a
floor, scaled to the batch (:mod:`judgelab.calibration.active._model`). Each figure (each family's
residual and the self-preference gap, on pass verdicts and on scores) is estimated by inverse-
probability weighting around the judge's prediction, an AIPW / prediction-powered estimator that
stays unbiased under the stored probabilities (:mod:`judgelab.calibration.active._estimate`; Zrnic &
Candès 2024, "Active Statistical Inference", arXiv:2403.03208). After each batch its interval is
a **repeated confidence interval** of a stated alpha-spending plan
(:mod:`judgelab.calibration.active._spending`): valid at every look at once, so the team may look after
every batch and stop at the first one whose interval meets the target.

What it buys depends on how much the judge's score says about where humans disagree
(``bench/active_economy.py``, 200 simulated pools per cell, target ±5 pp, 4,000 tasks). At 85%
agreement the active design with its stopping rule used 0.83x the labels a simple random sample
needs at its best fixed size on a 1-5 judge and 0.75x on a 0-100 judge (0.73x and 0.65x of a
random sample under the same stopping rule); at 95%, 0.97x and 0.60x; at 70%, 0.95x. Its final
interval covered 95-97%. Today's stratified design at its best fixed size used 0.75-0.95x but has
no stopping rule. The bound is one Neyman-optimal batch that knows each answer's chance of
passing given the judge's score: 0.63x and 0.52x at 85% agreement (no design reading only the
judge's score reaches 0.6x there on a 1-5 judge); the rest of the distance is the pilot drawn
before anything is learnt, the floor and stopping at a look. Batches start with a pilot and at
most double (:func:`next_batch_size`): a first batch sized from the default disagreement rate of 0.2
used 1.30x and 0.97x at 95% agreement. Simple random samples looked at every 20 labels covered
only 74.5-77% at 95% agreement, and 75.5-78% under the repeated intervals, 94.5-96% with the
rule-of-three floor under each look's variance (:func:`rare_event_variance`). A judge that
disagrees with itself as LLMBar's judges do (:data:`LLMBAR_REREADING`) shows the design where to
label: at 85% agreement 0.76x (1-5) and 0.68x (0-100), 9-10% fewer labels than the same judge
read once; its bound falls to 0.53x and 0.47x.

The modules:

* ``_model``: predicted human labels (:func:`predict_humans`), the uncertainty a label would
  correct (:func:`task_uncertainty`) and the probabilities (:func:`sampling_probabilities`);
* ``_spending``: the spending functions and the looks' critical values
  (:func:`spending_boundaries`);
* ``_estimate``: the draws (:class:`ActiveDraws`), the estimate and variance at each look
  (:func:`look_statistics`), the intervals (:func:`repeated_intervals`, with an optional floor
  under the variance, :func:`rare_event_variance`) and the report's figures
  (:func:`active_residuals_and_gap`);
* ``_plan``: the pool (:class:`ActivePool`), each batch's plan (:func:`plan_batch`) and size
  (:func:`next_batch_size`), the labels a target needs (:func:`planned_labels`,
  :func:`labels_still_needed`, projected with :func:`next_batch_variance` and
  :func:`expected_population_variance`), and the gate that sends a batch to simple random sampling
  when the labels show no saving (:func:`batch_floor`, the store's and the simulator's one path);
* ``_simulate``: simulated pools with a known truth and the whole procedure run on them
  (:func:`run_active`), for the tests, ``bench/active_economy.py`` and ``bench/forecast_realised.py``;
* ``_store``: the only part that touches the project database: start a design, draw the next
  batch, give a batch's answers to new raters when theirs were revoked
  (:func:`reassign_active_batch`), read where it stands (:func:`active_status`).

Every module but ``_store`` is pure; randomness is injected through ``rng``.
"""

from judgelab.calibration.active._estimate import (
    DEFAULT_MARGIN,
    GAP_RANGE,
    ActiveDraws,
    ActiveFigures,
    LastLook,
    LookStatistics,
    RepeatedIntervals,
    active_residuals_and_gap,
    estimand_coefficients,
    look_statistics,
    rare_event_variance,
    repeated_intervals,
)
from judgelab.calibration.active._model import HumanPrediction, predict_humans, sampling_probabilities, task_uncertainty
from judgelab.calibration.active._plan import (
    DEFAULT_FLOOR,
    ActivePool,
    BatchFloor,
    BatchPlan,
    SavingForecast,
    batch_floor,
    expected_population_variance,
    labels_still_needed,
    next_batch_size,
    next_batch_variance,
    plan_batch,
    planned_labels,
    planning_critical,
    predicted_saving,
    stack_draws,
)
from judgelab.calibration.active._simulate import (
    LLMBAR_REREADING,
    ActiveRun,
    PoolModel,
    SimulatedPool,
    pool_model,
    run_active,
    simulate_pool,
)
from judgelab.calibration.active._spending import (
    SPENDINGS,
    Boundaries,
    Spending,
    spend,
    spending_boundaries,
    t_critical,
)
from judgelab.calibration.active._store import (
    OUT_OF_REACH,
    ActiveBatch,
    ActiveData,
    ActiveState,
    ActiveStatus,
    active_figures,
    active_saving,
    active_status,
    apply_active_batch,
    draw_active_batch,
    load_active,
    plan_options,
    reassign_active_batch,
)

__all__ = [
    "DEFAULT_FLOOR",
    "DEFAULT_MARGIN",
    "GAP_RANGE",
    "LLMBAR_REREADING",
    "OUT_OF_REACH",
    "SPENDINGS",
    "ActiveBatch",
    "ActiveData",
    "ActiveDraws",
    "ActiveFigures",
    "ActivePool",
    "ActiveRun",
    "ActiveState",
    "ActiveStatus",
    "BatchFloor",
    "BatchPlan",
    "Boundaries",
    "HumanPrediction",
    "LastLook",
    "LookStatistics",
    "PoolModel",
    "RepeatedIntervals",
    "SavingForecast",
    "SimulatedPool",
    "Spending",
    "active_figures",
    "active_residuals_and_gap",
    "active_saving",
    "active_status",
    "apply_active_batch",
    "batch_floor",
    "draw_active_batch",
    "estimand_coefficients",
    "expected_population_variance",
    "labels_still_needed",
    "load_active",
    "look_statistics",
    "next_batch_size",
    "next_batch_variance",
    "plan_batch",
    "plan_options",
    "planned_labels",
    "planning_critical",
    "pool_model",
    "predict_humans",
    "predicted_saving",
    "rare_event_variance",
    "reassign_active_batch",
    "repeated_intervals",
    "run_active",
    "sampling_probabilities",
    "simulate_pool",
    "spend",
    "spending_boundaries",
    "stack_draws",
    "t_critical",
    "task_uncertainty",
]
