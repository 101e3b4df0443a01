"""Probes: controlled experiments that vary one property and read the judge's gap as its size.

Each probe family is one module: :mod:`~judgelab.calibration.probes.position`,
:mod:`~judgelab.calibration.probes.length` (verbosity/padding and truncation),
:mod:`~judgelab.calibration.probes.decoration` (formatting, tone, citations),
:mod:`~judgelab.calibration.probes.byline` and :mod:`~judgelab.calibration.probes.format_study`. A probe plans
calls (arms x both orders) with :func:`plan_probes`, the runner executes them, and
:func:`analyse_evidence` turns the evidence rows back into estimates, so a report never calls
the judge. :func:`run_probes` and :func:`estimate_probes` are the whole workflow of
``judgelab probe`` and ``judgelab estimate``.
"""

from judgelab.calibration.probes._base import (
    BiasResult,
    PadModel,
    ProbeContext,
    ProbePlan,
    RewriteSpend,
    Variants,
)
from judgelab.calibration.probes._detect import DetectionPlan, DetectRow, adetection_plan, card_family_size
from judgelab.calibration.probes._evidence import Analysis, analyse_evidence, read_evidence
from judgelab.calibration.probes._plan import BIASES, DEFAULT_BIASES, POOL_BIASES, parse_biases, plan_probes
from judgelab.calibration.probes._simulate import CARD_PROBES, simulate_evidence
from judgelab.calibration.probes._workflow import (
    PadMode,
    PoolSource,
    ProbeEstimate,
    ProbeRunResult,
    ProbeSetup,
    aestimate_probes,
    arun_probes,
    dataset_label,
    estimate_probes,
    judge_endpoint,
    judge_kind_of,
    judge_spec,
    other_family,
    padded_texts,
    reference_tasks,
    run_probes,
    setup_probes,
    spec_biases,
)
from judgelab.calibration.probes.format_study import FormatRow
from judgelab.calibration.probes.position import (
    RunPosition,
    choose_position_run,
    position_replies,
    run_position,
    statistics_of_replies,
)

__all__ = [
    "BIASES",
    "CARD_PROBES",
    "DEFAULT_BIASES",
    "POOL_BIASES",
    "Analysis",
    "BiasResult",
    "DetectRow",
    "DetectionPlan",
    "FormatRow",
    "PadMode",
    "PadModel",
    "PoolSource",
    "ProbeContext",
    "ProbeEstimate",
    "ProbePlan",
    "ProbeRunResult",
    "ProbeSetup",
    "RewriteSpend",
    "RunPosition",
    "Variants",
    "adetection_plan",
    "aestimate_probes",
    "analyse_evidence",
    "arun_probes",
    "card_family_size",
    "choose_position_run",
    "dataset_label",
    "estimate_probes",
    "judge_endpoint",
    "judge_kind_of",
    "judge_spec",
    "other_family",
    "padded_texts",
    "parse_biases",
    "plan_probes",
    "position_replies",
    "read_evidence",
    "reference_tasks",
    "run_position",
    "run_probes",
    "setup_probes",
    "simulate_evidence",
    "spec_biases",
    "statistics_of_replies",
]
