"""Hand-label sample designs: strata, allocation, inclusion probabilities, power and cost.

Hand labels are the expensive ingredient of a judge calibration (300 answers at two to three
minutes each is ten to fifteen person-hours; seed 000), so *which* answers get labelled matters
more than how many. This module plans that sample for the quantity judgelab cares most about,
the **self-preference gap**: the judge-minus-human residual on the judge's own family minus the
residual on the other family (with several other families, minus their unweighted mean, as in
:func:`judgelab.calibration.stats.self_preference_gap`). Residuals are on pass verdicts, so every
precision figure is in percentage points.

The plan, in order:

1. **Strata.** Each answer gets a family, a category, a judge-score bin (the judge's pass
   verdict by default) and optionally a length bin (:func:`stratify_pool`).
2. **Sampling unit.** By default whole *tasks* are sampled (the **paired-by-task** design):
   when a task is drawn, every family's answer to it is labelled. The gap is then a mean of
   within-task differences, so whatever makes a task hard for the judge and the humans alike
   cancels (the variance of a difference is ``S_own² + S_other² − 2ρ S_own S_other``, smaller
   than the unpaired ``S_own² + S_other²`` whenever the residuals of one task's answers are
   positively correlated, ρ > 0). The cost is in the inclusion probabilities: an answer's
   probability is its *task's*, ``n_h / N_h`` over the task stratum ``h``, so every answer of a
   task shares one probability and one weight, and family becomes a balanced-by-construction
   property of the sample rather than a stratifier. Task strata are built from the category
   and the *profile* of the task's answers (e.g. ``billing | A:pass B:fail``). ``paired=False``
   samples answers instead, with family as a stratifier.
3. **Allocation** of the label budget over strata (:func:`allocate`, :data:`Allocation`):
   ``proportional``, ``equal`` (equal per family, then proportional), ``neyman`` (for the
   overall mean residual) or ``gap`` (for the self-preference gap). See :func:`allocation_scores`
   for the derivation.
4. **Sampling** without replacement inside each stratum; each sampled answer records its
   inclusion probability π and weight 1/π, so calibration can use Hajek means. A share of the
   sample (the *overlap*) is labelled by two raters for inter-rater reliability.
5. **Precision and cost** from a :class:`PlanningModel` (assumed, or measured on a pilot of
   existing labels): the expected half-width of each family's residual and of the gap, the
   labels a target needs, the standard error of Cohen's kappa on the overlap, person-hours and
   calendar days.

The pool stands for the answers the judge will see in use, so no finite-population correction
is applied anywhere: the intervals are for the judge's behaviour, not for this particular pool
(and the report's variance adds the part that comes from the strata's shares being measured on
this pool, :mod:`judgelab.calibration.stats._variance`).

The modules, in the order of the plan:

* ``_model``: the :class:`PlanningModel` and the allocation rules (:func:`allocation_scores`,
  :func:`allocate`);
* ``_strata``: the bins (:func:`stratify_pool`), sampling units and strata, and each stratum's
  variance terms;
* ``_power``: precision, power and cost (:func:`paired_sample_size`, :func:`kappa_se`,
  :func:`cost_of`);
* ``_sample``: :func:`design_sample`, the :class:`Design` it returns, :func:`design_table` and
  :func:`pairing_note`;
* ``_assign``: :func:`plan_assignments`, who labels what in which order;
* ``_store``: the only part that touches the project database, through
  :class:`judgelab.labeler.store.Store`: :func:`load_pool`, :func:`draw_design` (the workflow behind
  ``judgelab design`` and the Assignments page) and :func:`apply_design`.

Every module but ``_store`` is pure: a pool DataFrame in, frozen dataclasses out, randomness
injected through ``rng``.
"""

from judgelab.calibration.design._assign import plan_assignments
from judgelab.calibration.design._model import (
    ALLOCATIONS,
    STRATIFIERS,
    Allocation,
    PlanningModel,
    Stratifier,
    allocate,
    allocation_scores,
    planning_model,
)
from judgelab.calibration.design._power import (
    Cost,
    Precision,
    Target,
    budget_labels,
    cost_of,
    kappa_se,
    paired_sample_size,
)
from judgelab.calibration.design._sample import Design, design_sample, design_table, pairing_note
from judgelab.calibration.design._store import DrawnDesign, apply_design, draw_design, load_pool, stratified_gate
from judgelab.calibration.design._strata import stratify_pool

__all__ = [
    "ALLOCATIONS",
    "STRATIFIERS",
    "Allocation",
    "Cost",
    "Design",
    "DrawnDesign",
    "PlanningModel",
    "Precision",
    "Stratifier",
    "Target",
    "allocate",
    "allocation_scores",
    "apply_design",
    "budget_labels",
    "cost_of",
    "design_sample",
    "design_table",
    "draw_design",
    "kappa_se",
    "load_pool",
    "paired_sample_size",
    "pairing_note",
    "plan_assignments",
    "planning_model",
    "stratified_gate",
    "stratify_pool",
]
