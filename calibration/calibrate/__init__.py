"""The calibration report: a judge run read against blind human labels.

:func:`load_calibration_data` reads one judge run and everything the report needs from the
project database; :func:`build_report` turns it into a frozen :class:`CalibrationReport` with
every figure carrying its interval, ``n``, method and units; :func:`calibrate` does both. The
statistics themselves live in :mod:`judgelab.calibration.stats`; this module only decides which rows
go into them, and says so in the report.

Choices the report states rather than hides:

* **Which judge score.** Residuals use the run's pointwise judgements in one format (the
  rubric's own scale when the run has it), on original answers (not probe variants). An answer
  judged more than once in that format counts with its first parsed judgement.
* **Which human score.** Each rater's *current* label (edits supersede, flagged-unrateable
  labels are left out). Several raters of one answer are collapsed by the mean by default
  (``human_rule``); under ``dawid-skene`` a model of the raters (each rater's confusion and the
  true labels estimated jointly, :mod:`judgelab.calibration.calibrate._rater_model`) gives the posterior
  mean, and its mode for kappa. Kappa needs one category per answer, so there the raters' majority is used,
  ties going to the lower category (for pass verdicts: fail), and the report says so next to
  kappa with the number of tied answers.
* **Which raters the intervals speak for.** By default (``interval="raters"``) the residuals,
  the gap and PPI speak for raters like these: their intervals add the spread of the raters'
  persistent leniency, estimated from the labels (:mod:`judgelab.calibration.stats._raters`), as if
  another panel from the same population had labelled. ``interval="panel"`` speaks for this
  panel only. Kappa always speaks for the panel. Every line names its interval method
  (``t(df), raters``) and marks an interval unreliable below 15 tasks or 3 degrees of freedom.
  With two raters a residual's or PPI's interval for raters like these is refused (``none (2
  raters)``: their leniency spread rests on 1 df), and the line names ``interval="panel"`` or a
  third rater (:func:`judgelab.calibration.stats._raters.two_rater_refusal`).
* **Intervals.** Design-based: the variance is linearised and estimated from task totals within
  the design's strata (kappa: jackknifed over tasks, strata left out, which errs wide), and the
  interval is t with the design's degrees of freedom (:mod:`judgelab.calibration.stats._variance`); it
  holds from 15 tasks up in the coverage suite (``bench/coverage.py``).
* **Adjudication.** Under the rule ``adjudicated`` an admin's adjudicated label, where an answer
  has one, replaces its raters' labels in every human score
  (:meth:`CalibrationData.reference_labels`); the report says how many answers were adjudicated.
  Agreement among raters (alpha) never counts an adjudicator.
* **Design weights.** When the labelled answers came from a stored sample design
  (``design_items``), the analysis keeps the design's answers and every mean is a Hajek mean
  weighted by 1/inclusion probability; labelled answers outside the design are left out and
  counted, because their chance of being labelled is unknown.
* **Provenance.** If the rubric, few-shot examples or reference answers were written by the
  judge's own family (or by someone unknown), the self-preference gap is an upper bound
  (:func:`judgelab.calibration.stats.provenance_note`).
* **Simulated labels.** Labels from simulated raters are counted and the report says so at
  the top of every form it takes.

Layout: ``_load`` reads the store into :class:`CalibrationData`; ``_model`` holds the frozen
report model (it imports neither the builders nor the renderer, :mod:`judgelab.calibration.report`);
``_human``, ``_probes`` and ``_formats`` build the sections (``_rater_model`` fits the model of the
raters for the rule ``dawid-skene``); ``_build`` runs them in order.
"""

from judgelab.calibration.calibrate._build import build_report, calibrate
from judgelab.calibration.calibrate._formats import Reference, format_rows
from judgelab.calibration.calibrate._load import CalibrationData, load_calibration_data
from judgelab.calibration.calibrate._model import (
    HUMAN_SCORE_RULES,
    SCORE_TURN_PROBE,
    CalibrationReport,
    DesignNote,
    FamilyResidual,
    FormatRow,
    HumanScoreRule,
    KappaRow,
    LabelSummary,
    PositionResult,
    PPIRow,
    ProbeSection,
    ReportOptions,
    ResidualSection,
    SelfPreferenceGap,
    TurnRow,
    TurnSection,
    VariantGap,
    jsonable,
)
from judgelab.calibration.calibrate._probes import position_results, variant_gaps
from judgelab.calibration.calibrate._scalemap import ScaleMap, apply_scale_map, parse_scale_map

__all__ = [
    "HUMAN_SCORE_RULES",
    "SCORE_TURN_PROBE",
    "CalibrationData",
    "CalibrationReport",
    "DesignNote",
    "FamilyResidual",
    "FormatRow",
    "HumanScoreRule",
    "KappaRow",
    "LabelSummary",
    "PPIRow",
    "PositionResult",
    "ProbeSection",
    "Reference",
    "ReportOptions",
    "ResidualSection",
    "ScaleMap",
    "SelfPreferenceGap",
    "TurnRow",
    "TurnSection",
    "VariantGap",
    "apply_scale_map",
    "build_report",
    "calibrate",
    "format_rows",
    "jsonable",
    "load_calibration_data",
    "parse_scale_map",
    "position_results",
    "variant_gaps",
]
