"""The calibration report: a judge run read against blind human labels.

:func:`load_calibration_data` reads one judge run and everything the report needs from the
project database; :func:`build_report` turns it into a frozen :class:`CalibrationReport` with
every figure carrying its interval, ``n``, method and units; :func:`calibrate` does both. The
statistics themselves live in :mod:`calibration.stats`; this module only decides which rows
go into them, and says so in the report.

Choices the report states rather than hides:

* **Which judge score.** Residuals use the run's pointwise judgements in one format (the
  rubric's own scale when the run has it), on original answers (not probe variants). An answer
  judged more than once in that format counts with its first parsed judgement.
* **Which human score.** Each rater's *current* label (edits supersede, flagged-unrateable
  labels are left out). Several raters of one answer are collapsed by the mean by default
  (``human_rule``); the raters are resampled inside the bootstrap so their spread widens the
  interval (:func:`calibration.stats.family_residuals`). Kappa needs one category per answer,
  so there the raters' majority is used, ties going to the lower category.
* **Design weights.** When the labelled answers came from a stored sample design
  (``design_items``), the analysis keeps the design's answers and every mean is a Hajek mean
  weighted by 1/inclusion probability; labelled answers outside the design are left out and
  counted, because their chance of being labelled is unknown.
* **Provenance.** If the rubric, few-shot examples or reference answers were written by the
  judge's own family (or by someone unknown), the self-preference gap is an upper bound
  (:func:`calibration.stats.provenance_note`).
* **Simulated labels.** Labels from simulated raters are counted and the report says so at
  the top of every form it takes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt
import pandas as pd
from threadpoolctl import threadpool_limits

from calibration.stats import (
    THRESHOLDS,
    Estimate,
    FormatDiagnostics,
    HumanRule,
    KappaResult,
    ProvenanceNote,
    ResidualScale,
    RunComparison,
    SlotDecomposition,
    candidate_verdicts,
    cluster_bootstrap,
    cohen_kappa,
    compare_runs,
    family_residuals,
    first_shown_advantage_from_verdicts,
    format_diagnostics,
    human_scores,
    krippendorff_alpha,
    length_controlled_win_rate,
    level_for_scale,
    pairwise_lift,
    pointwise_gap,
    ppi_mean,
    proportion,
    provenance_note,
    residuals_and_gap,
    slot_decomposition,
    swap_average,
    truncation_gap,
    verdict,
)
from labeler.errors import InputError
from labeler.models import Rubric
from labeler.scales import PAIRWISE_FORMATS, POINTWISE_FORMATS, format_range
from labeler.store import Store

# Refits for the length-controlled win rate: each resample is one logistic fit, so the count
# is capped to keep a report to seconds; the method string states the number used.
_LC_MAX_REFITS = 500
_NAN = float("nan")

Reference = str
"""What format diagnostics are measured against: ``"human"`` (the human score per answer) or
the name of another pointwise format judged in the same run."""


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelSummary:
    """How many human labels the report rests on, and how many of them are simulated.

    Attributes:
        n_labels: Current, scored labels (superseded edits and flagged items left out).
        n_answers: Answers with at least one such label.
        n_raters: Raters behind them.
        n_simulated_labels: Labels stored as simulated or given by a simulated rater.
        n_simulated_raters: Simulated raters among ``n_raters``.
        n_flagged: Current labels flagged unrateable (no score), left out.
        sources: Label count per ``source`` (``app``, ``import``, ``simulated``).
    """

    n_labels: int
    n_answers: int
    n_raters: int
    n_simulated_labels: int
    n_simulated_raters: int
    n_flagged: int
    sources: dict[str, int]

    @property
    def simulated(self) -> bool:
        """Whether any label the report uses is simulated."""
        return self.n_simulated_labels > 0

    def banner(self) -> str | None:
        """The sentence every form of the report opens with when labels are simulated."""
        if not self.simulated:
            return None
        share = "all" if self.n_simulated_labels == self.n_labels else f"{self.n_simulated_labels} of"
        return (
            f"SIMULATED LABELS: {share} {self.n_labels} human labels come from "
            f"{self.n_simulated_raters} simulated rater(s), not from people. Every figure that "
            "compares the judge with humans rests on them; collect real labels before trusting it."
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**dataclasses.asdict(self), "simulated": self.simulated}


@dataclass(frozen=True)
class DesignNote:
    """The stored sample design the labels came from, if any.

    Attributes:
        design_id: The design.
        weighted: Whether its weights differ between answers (equal weights change nothing).
        n_in_design: Labelled, judged answers inside the design (the ones analysed).
        n_left_out: Labelled, judged answers outside it, left out of the weighted analysis.
    """

    design_id: str
    weighted: bool
    n_in_design: int
    n_left_out: int

    def text(self) -> str:
        """One sentence for the report."""
        how = (
            "every mean is a Hajek mean weighted by 1/inclusion probability, so a sample "
            "stratified by judge score stays unbiased"
            if self.weighted
            else "its weights are all equal, so the means are unweighted"
        )
        left = (
            f"; {self.n_left_out} labelled answer(s) outside the design were left out, because "
            "their chance of being labelled is unknown"
            if self.n_left_out
            else ""
        )
        return f"Labels come from sample design {self.design_id!r} ({self.n_in_design} answers): {how}{left}."

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**dataclasses.asdict(self), "text": self.text()}


@dataclass(frozen=True)
class CalibrationData:
    """Everything one judge run's calibration report reads from the store.

    Attributes:
        run: The ``judge_runs`` row (``params`` decoded).
        rubric: The rubric the run was judged under (the newest one when the run names none).
        judge_format: The pointwise format the residuals use (``None`` when the run has no
            parsed pointwise judgement of an original answer).
        pointwise: The run's pointwise judgements (the row that counts per planned call,
            call errors left out) joined with ``family``, ``variant``, ``parent_answer_id``,
            ``n_chars`` of the answer.
        pairwise: The run's pairwise judgements, the same way; ``family_a``/``family_b``,
            ``variant_a``/``variant_b`` and ``chars_a``/``chars_b`` describe the two answers.
        labels: Current scored human labels: ``answer_id``, ``task_id``, ``family``,
            ``variant``, ``rater_id``, ``overall``, ``pass`` (0/1 or ``nan``), ``simulated``,
            ``source``.
        answers: Every answer of the pool (no text).
        design: Design weights of the chosen design (``answer_id``, ``weight``,
            ``inclusion_prob``, ``stratum``), or ``None``.
        design_id: The chosen design.
        provenance: ``(artifact, author_kind, author)`` records of the judge prompt.
        label_summary: Counts of the labels, simulated ones included.
        n_errors: Planned calls of the run that failed with no reply (not scores).
    """

    run: dict[str, Any]
    rubric: Rubric
    judge_format: str | None
    pointwise: pd.DataFrame
    pairwise: pd.DataFrame
    labels: pd.DataFrame
    answers: pd.DataFrame
    design: pd.DataFrame | None
    design_id: str | None
    provenance: tuple[tuple[str, str, str], ...]
    label_summary: LabelSummary
    n_errors: int

    @property
    def run_id(self) -> str:
        """The judge run's id."""
        return str(self.run["run_id"])

    @property
    def judge_family(self) -> str | None:
        """The judge's own family, when the run records it."""
        family = self.run.get("family")
        return None if family is None else str(family)


def load_calibration_data(store: Store, run_id: str | None = None) -> CalibrationData:
    """Read one judge run and the labels, design and provenance its report needs.

    Args:
        store: The project store.
        run_id: The judge run; default: the newest run with pointwise judgements.

    Returns:
        A :class:`CalibrationData`.

    Raises:
        InputError: No such run, no run with pointwise judgements, or no rubric.
    """
    if run_id is None:
        run_id = store.latest_scored_run()
        if run_id is None:
            raise InputError(
                "no judge run with pointwise judgements in the database",
                fix="run a probe (`judgelab probe ...`) or import judgements "
                "(`judgelab import judgements FILE`) first.",
            )
    run = store.run_info(run_id)
    if run is None:
        known = ", ".join(repr(r) for r in store.calibration_runs()["run_id"].head(5))
        raise InputError(
            f"no judge run {run_id!r}",
            fix=f"pass one of the stored runs ({known or 'none stored'}) to --judge-run.",
        )
    rubric = store.rubric(run.get("rubric_id"), _opt_int(run.get("rubric_version")))
    if rubric is None and run.get("rubric_id") is not None:
        rubric = store.rubric()
    if rubric is None:
        raise InputError(
            "no rubric in the database to read judge and human scores against",
            fix="import one with `judgelab import rubric FILE`.",
        )

    answers = store.pool_answers()
    info = answers.set_index("answer_id")
    point = store.run_rows(run_id, "pointwise")
    pair = store.run_rows(run_id, "pairwise")
    n_errors = int((point["status"] == "error").sum() + (pair["status"] == "error").sum())
    point = point[point["status"] != "error"].reset_index(drop=True)
    pair = pair[pair["status"] != "error"].reset_index(drop=True)
    point = _join_answer(point, info, "answer_id", "")
    point["in_pool"] = _isin(point["answer_id"], info.index)
    # Probe answers built from judge-probe pairs are not pool answers; their calls still say
    # which variant they are and of which parent, which is all a variant gap needs.
    for col, key in (("variant", "variant"), ("parent", "parent_answer_id")):
        from_meta = pd.Series([m.get(key) for m in point["meta"]], index=point.index, dtype=object)
        point[col] = point[col].where(point["in_pool"], from_meta)
    pair = _join_answer(_join_answer(pair, info, "answer_id", "_a"), info, "answer_b_id", "_b")
    point["pass"] = [_judge_pass(rubric, f, v, p) for f, v, p in
                     zip(point["format"], point["value"], point["passed"], strict=True)]

    raw = store.human_labels(rubric.rubric_id, rubric.version)
    flagged = raw["flag_reason"].notna()
    labels = raw[~flagged].copy()
    labels["pass"] = [_human_pass(rubric, o, p) for o, p in zip(labels["overall"], labels["passed"], strict=True)]
    labels = labels[labels["overall"].notna() | labels["pass"].notna()]
    # One label per rater and answer: a label given under the rubric wins over an unversioned
    # (imported) one, then the newest; two would count one person twice.
    labels = (labels.assign(_versioned=labels["rubric_id"].notna())
              .sort_values(["_versioned", "label_id"], ascending=[False, False])
              .drop_duplicates(["rater_id", "answer_id"]).sort_values(["answer_id", "rater_id"])
              .reset_index(drop=True))
    labels["simulated"] = (labels["source"] == "simulated") | labels["rater_simulated"].astype(bool)
    labels = labels[["answer_id", "task_id", "family", "variant", "rater_id", "rater_name", "overall",
                     "pass", "simulated", "source"]]
    summary = LabelSummary(
        n_labels=len(labels),
        n_answers=int(labels["answer_id"].nunique()),
        n_raters=int(labels["rater_id"].nunique()),
        n_simulated_labels=int(labels["simulated"].sum()),
        n_simulated_raters=int(labels.loc[labels["simulated"], "rater_id"].nunique()),
        n_flagged=int(flagged.sum()),
        sources={str(k): int(v) for k, v in labels["source"].value_counts().sort_index().items()},
    )

    judge_format = _choose_format(point, rubric)
    design_id, design = _choose_design(store.label_design_items(), set(labels["answer_id"]))
    records = _provenance_records(store, run, rubric, point, labels)
    return CalibrationData(
        run=run,
        rubric=rubric,
        judge_format=judge_format,
        pointwise=point,
        pairwise=pair,
        labels=labels,
        answers=answers,
        design=design,
        design_id=design_id,
        provenance=records,
        label_summary=summary,
        n_errors=n_errors,
    )


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _join_answer(frame: pd.DataFrame, info: pd.DataFrame, key: str, suffix: str) -> pd.DataFrame:
    out = frame.copy()
    ids = out[key]
    for col, name in (("family", "family"), ("variant", "variant"), ("parent_answer_id", "parent"),
                      ("n_chars", "chars")):
        mapped = ids.map(info[col]) if len(ids) else pd.Series([], dtype=object)
        out[f"{name}{suffix}"] = mapped.to_numpy()
    return out


def _judge_pass(rubric: Rubric, fmt: str, value: Any, passed: Any) -> float:
    """The judge's pass verdict (1/0) for one pointwise judgement, ``nan`` when undefined."""
    if value is None or _isnan(value):
        return _NAN
    if passed is not None and not _isnan(passed):
        return float(bool(passed))
    if fmt == rubric.scale:
        return float(rubric.passes(float(value)))
    if fmt == "binary":
        return float(float(value) >= 1)
    return _NAN


def _human_pass(rubric: Rubric, overall: Any, passed: Any) -> float:
    if passed is not None and not _isnan(passed):
        return float(bool(passed))
    if overall is not None and not _isnan(overall):
        return float(rubric.passes(float(overall)))
    return _NAN


def _isnan(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _choose_format(point: pd.DataFrame, rubric: Rubric) -> str | None:
    """The rubric's own scale when judged on originals, else binary, else the commonest."""
    usable = point[(point["status"] == "parsed") & (point["variant"] == "original") & point["in_pool"]
                   & point["format"].isin(POINTWISE_FORMATS)]
    if usable.empty:
        return None
    counts = usable["format"].value_counts()
    for preferred in (rubric.scale, "binary"):
        if preferred in counts.index:
            return str(preferred)
    return str(counts.index[0])


def _choose_design(items: pd.DataFrame, labelled: set[str]) -> tuple[str | None, pd.DataFrame | None]:
    """The stored design covering the most labelled answers (newest applied first on ties)."""
    if items.empty or not labelled:
        return None, None
    inside = items[_isin(items["answer_id"], labelled)]
    if inside.empty:
        return None, None
    order = list(dict.fromkeys(items["design_id"]))  # newest first, as the query sorts
    counts = inside["design_id"].value_counts()
    best = max(order, key=lambda d: (int(counts.get(d, 0)), -order.index(d)))
    chosen = items[items["design_id"] == best][["answer_id", "weight", "inclusion_prob", "stratum"]]
    return str(best), chosen.reset_index(drop=True)


def _provenance_records(
    store: Store, run: Mapping[str, Any], rubric: Rubric, point: pd.DataFrame, labels: pd.DataFrame
) -> tuple[tuple[str, str, str], ...]:
    """Who wrote each artifact of the judge prompt: rubric, few-shot examples, references."""
    records: list[tuple[str, str, str]] = [
        (f"rubric {rubric.rubric_id} v{rubric.version}", rubric.author_kind, rubric.author)
    ]
    params = run.get("params") or {}
    shots = params.get("few_shot") or params.get("few_shot_examples")
    if shots:
        kind = str(params.get("few_shot_author_kind") or "unknown")
        records.append(("few-shot examples", kind, str(params.get("few_shot_author") or "unknown")))
    tasks = set(point["task_id"].dropna()) | set(labels["task_id"].dropna())
    refs = store.reference_provenance(tasks)
    groups: dict[tuple[str, str], int] = {}
    for kind, author in zip(refs["reference_author_kind"], refs["reference_author"], strict=True):
        key = (str(kind) if not _isnan(kind) else "unknown", str(author) if not _isnan(author) else "unknown")
        groups[key] = groups.get(key, 0) + 1
    for (kind, author), n in sorted(groups.items()):
        records.append((f"{n} reference answer(s) by {author}", kind, author))
    return tuple(records)


# --------------------------------------------------------------------------------------------
# Report sections
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResidualSection:
    """Judge-minus-human residuals on one scale, per family, and the self-preference gap.

    Attributes:
        scale: ``"pass"`` (percentage points) or ``"score"`` (rubric scale points).
        units: Units of every figure.
        families: Residual per family (``extra`` holds ``judge_mean``, ``human_mean``,
            ``n_answers``, ``weighted``).
        gap: Own-family residual minus the other families', or ``None`` with ``gap_reason``.
        gap_reason: Why there is no gap.
        n_answers: Answers analysed.
    """

    scale: ResidualScale
    units: str
    families: dict[str, Estimate]
    gap: Estimate | None
    gap_reason: str | None
    n_answers: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "scale": self.scale,
            "units": self.units,
            "n_answers": self.n_answers,
            "families": {k: v.to_dict() for k, v in self.families.items()},
            "gap": None if self.gap is None else self.gap.to_dict(),
            "gap_reason": self.gap_reason,
        }


@dataclass(frozen=True)
class KappaRow:
    """Cohen's kappa between the judge and the humans on one scope.

    Attributes:
        scope: ``"all"`` or a family.
        what: ``"pass verdict"`` or ``"overall score"``.
        result: The kappa, percent agreement and confusion matrix (rows: judge, columns:
            humans).
    """

    scope: str
    what: str
    result: KappaResult

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; the confusion matrix as labels plus nested lists."""
        cm = self.result.confusion
        return {
            "scope": self.scope,
            "what": self.what,
            "weights": self.result.weights or "unweighted",
            "kappa": self.result.kappa.to_dict(),
            "percent_agreement": self.result.percent_agreement.to_dict(),
            "confusion": {
                "rows": "judge",
                "columns": "humans",
                "labels": [_plain(v) for v in self.result.labels],
                "counts": [[int(x) for x in row] for row in cm.to_numpy()],
            },
            "reason": self.result.reason,
        }


@dataclass(frozen=True)
class PPIRow:
    """A family's human-level pass rate, prediction-powered beside human-only.

    Attributes:
        family: The family.
        ppi: The estimate from the judge's verdicts on the whole pool plus the human labels.
        human_only: The same from the human labels alone.
        n_labelled: Answers with human labels (and a judge verdict).
        n_unlabelled: Answers with a judge verdict only.
    """

    family: str
    ppi: Estimate
    human_only: Estimate
    n_labelled: int
    n_unlabelled: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "family": self.family,
            "ppi": self.ppi.to_dict(),
            "human_only": self.human_only.to_dict(),
            "n_labelled": self.n_labelled,
            "n_unlabelled": self.n_unlabelled,
        }


@dataclass(frozen=True)
class VariantGap:
    """A pointwise probe: judge score of a variant minus (or, for truncation, under) its original.

    Attributes:
        variant: The variant (``padded``, ``truncated``, ``markdown``...).
        format: The pointwise format.
        gap: The gap in the format's scale points (truncation: original minus truncated).
        verdict: PASS/WARN/FAIL for a bias (``None`` for truncation, where a large gap is
            the judge noticing missing content, not a bias).
        thresholds: The thresholds ``verdict`` used, in the gap's units.
    """

    variant: str
    format: str
    gap: Estimate
    verdict: str | None
    thresholds: tuple[float, float] | None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "variant": self.variant,
            "format": self.format,
            "gap": self.gap.to_dict(),
            "verdict": self.verdict,
            "thresholds": None if self.thresholds is None else {"warn": self.thresholds[0], "fail": self.thresholds[1]},
        }


@dataclass(frozen=True)
class PositionResult:
    """Order-swapped comparisons of one probe arm in one comparative format.

    Attributes:
        probe: The probe (``judgements.probe``; ``"pairwise"`` when unnamed).
        arm: The probe arm (may be empty).
        format: The comparative format.
        candidate: Which answer of each pair the win rates are for ("X").
        n_pairs: Pairs of answers compared.
        n_both_orders: Pairs judged in both orders (the decomposition uses these).
        first_shown: First-shown win advantage over all judgements (percentage points).
        decomposition: Candidate preference ``q`` and slot bias ``b``, with consistency.
        raw_lift: X's single-order win rate minus 50% (percentage points).
        swap_lift: X's swap-averaged win rate minus 50% (a win counts when both orders agree).
        length_controlled: X's swap-averaged win rate with the length difference regressed
            out (a share), or ``None`` with ``length_reason``.
        length_reason: Why there is no length-controlled win rate.
    """

    probe: str
    arm: str
    format: str
    candidate: str
    n_pairs: int
    n_both_orders: int
    first_shown: Estimate
    decomposition: SlotDecomposition | None
    raw_lift: Estimate
    swap_lift: Estimate | None
    length_controlled: Estimate | None
    length_reason: str | None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "probe": self.probe,
            "arm": self.arm,
            "format": self.format,
            "candidate": self.candidate,
            "n_pairs": self.n_pairs,
            "n_both_orders": self.n_both_orders,
            "first_shown": self.first_shown.to_dict(),
            "decomposition": None if self.decomposition is None else self.decomposition.to_dict(),
            "raw_lift": self.raw_lift.to_dict(),
            "swap_lift": None if self.swap_lift is None else self.swap_lift.to_dict(),
            "length_controlled": None if self.length_controlled is None else self.length_controlled.to_dict(),
            "length_reason": self.length_reason,
        }


@dataclass(frozen=True)
class FormatRow:
    """Format diagnostics for one scoring format, and the four quantities seed 001 asks for.

    Attributes:
        diagnostics: Distinct values, D1, D2, tie probability, top-tied share, tau-a/b,
            Somers' D, top-1 agreement and parse rate (share of every reply in the run).
        kind: ``"pointwise"`` or ``"comparative"``.
        score_rule: How a candidate's score is read from the judgements.
        decoding_rule: The decoding parameters and the parsing rule.
        slot_handling: For comparative formats: whether orders were swapped, and the slot bias.
        reference: What agreement is measured against.
    """

    diagnostics: FormatDiagnostics
    kind: str
    score_rule: str
    decoding_rule: str
    slot_handling: str
    reference: str

    @property
    def format(self) -> str:
        """The scoring format these diagnostics describe."""
        return self.diagnostics.format_name

    def four_quantities(self) -> dict[str, str]:
        """The four things a curation pipeline should report about its format (seed 001)."""
        d = self.diagnostics
        pr = d.parse_rate
        return {
            "format and decoding rule": f"{self.format}; {self.decoding_rule}",
            "tie probability / D2": (
                f"tie probability {_f(d.tie_probability, 3)}, D2 {_f(d.d2, 2)} effective levels "
                f"({d.distinct_values} distinct values over {d.n} scored candidates)"
            ),
            "comparative slot handling and bias": self.slot_handling,
            "verdict parse rate": (
                f"{_pct(pr.estimate)} of {pr.n} replies (95% CI {_pct(pr.ci_low)} to {_pct(pr.ci_high)})"
            ),
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "format": self.format,
            "kind": self.kind,
            "score_rule": self.score_rule,
            "decoding_rule": self.decoding_rule,
            "slot_handling": self.slot_handling,
            "reference": self.reference,
            "diagnostics": self.diagnostics.to_dict(),
            "four_quantities": self.four_quantities(),
        }


@dataclass(frozen=True)
class ProbeSection:
    """Probe results found in the run.

    Attributes:
        gaps: Pointwise variant gaps (padding, truncation and any other variant judged).
        comparison: The before/after reading of padding and truncation gaps (with
            ``--compare-run``), or ``None``.
        comparison_run: The "before" run.
        comparison_reason: Why there is no comparison although one was asked for.
        position: Order-swapped pairwise results.
    """

    gaps: tuple[VariantGap, ...] = ()
    comparison: RunComparison | None = None
    comparison_run: str | None = None
    comparison_reason: str | None = None
    position: tuple[PositionResult, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "gaps": [g.to_dict() for g in self.gaps],
            "comparison": None if self.comparison is None else {
                "before_run": self.comparison_run, **self.comparison.to_dict()},
            "comparison_reason": self.comparison_reason,
            "position": [p.to_dict() for p in self.position],
        }


@dataclass(frozen=True)
class CalibrationReport:
    """The calibration report of one judge run (see the module docstring for its choices).

    Attributes:
        run_id: The judge run.
        judge_model: The judge model.
        judge_family: The judge's own family (from ``judge_runs.family``).
        rubric: ``rubric_id``, ``version``, ``scale``, ``name``.
        judge_format: The pointwise format the residuals and kappa use.
        human_rule: How several raters of one answer are collapsed.
        labels: Label counts, simulated ones included.
        design: The sample design the labels came from, or ``None``.
        provenance: Whether the gap is an upper bound, and why.
        provenance_records: What was checked: ``(artifact, author_kind, author)``.
        residuals: Per scale (``"pass"``, ``"score"``), the residual section.
        kappas: Judge-vs-human Cohen's kappa rows, overall then per family.
        alphas: Krippendorff's alpha among raters (``"overall score"``, ``"pass verdict"``).
        ppi: Prediction-powered pass rates per family.
        probes: Probe results.
        formats: Format diagnostics per format.
        notes: Sentences the reader needs before the numbers (simulated labels first).
        skipped: Sections that could not be computed, each with the reason.
        seed: Seed of every bootstrap.
        n_resamples: Bootstrap resamples.
        level: Confidence level of every interval.
        n_errors: Planned calls that failed with no reply (not scores).
    """

    run_id: str
    judge_model: str
    judge_family: str | None
    rubric: dict[str, Any]
    judge_format: str | None
    human_rule: HumanRule
    labels: LabelSummary
    design: DesignNote | None
    provenance: ProvenanceNote | None
    provenance_records: tuple[tuple[str, str, str], ...]
    residuals: dict[str, ResidualSection]
    kappas: tuple[KappaRow, ...]
    alphas: dict[str, Estimate]
    ppi: tuple[PPIRow, ...]
    probes: ProbeSection
    formats: tuple[FormatRow, ...]
    notes: tuple[str, ...]
    skipped: tuple[str, ...]
    seed: int
    n_resamples: int
    level: float
    n_errors: int = 0
    compare_run_id: str | None = field(default=None)

    @property
    def simulated(self) -> bool:
        """Whether any human label behind the report is simulated."""
        return self.labels.simulated

    def human_rule_text(self) -> str:
        """How the human score of an answer is defined, in one sentence."""
        rule = (
            "the mean of the raters' current labels (a pass rate for pass verdicts)"
            if self.human_rule == "mean"
            else "the raters' most frequent current label, ties going to the lower score"
        )
        return (
            f"Human score per answer: {rule}; raters are resampled within answers in the "
            "bootstrap, so their spread widens the intervals. Kappa uses the raters' majority "
            "category (ties to the lower)."
        )

    def to_dict(self) -> dict[str, Any]:
        """The whole report as JSON-ready data (``nan`` becomes ``None``)."""
        out: dict[str, Any] = {
            "simulated_labels": self.simulated,
            "notes": list(self.notes),
            "run_id": self.run_id,
            "compare_run_id": self.compare_run_id,
            "judge_model": self.judge_model,
            "judge_family": self.judge_family,
            "rubric": self.rubric,
            "judge_format": self.judge_format,
            "human_rule": self.human_rule,
            "human_rule_text": self.human_rule_text(),
            "labels": self.labels.to_dict(),
            "design": None if self.design is None else self.design.to_dict(),
            "provenance": None if self.provenance is None else {
                "bound": self.provenance.bound,
                "reason": self.provenance.reason,
                "own_family_artifacts": list(self.provenance.own_family_artifacts),
                "unknown_artifacts": list(self.provenance.unknown_artifacts),
                "records": [list(r) for r in self.provenance_records],
            },
            "residuals": {k: v.to_dict() for k, v in self.residuals.items()},
            "kappa": [k.to_dict() for k in self.kappas],
            "alpha": {k: v.to_dict() for k, v in self.alphas.items()},
            "ppi": [p.to_dict() for p in self.ppi],
            "probes": self.probes.to_dict(),
            "formats": [f.to_dict() for f in self.formats],
            "skipped": list(self.skipped),
            "n_errors": self.n_errors,
            "seed": self.seed,
            "n_resamples": self.n_resamples,
            "level": self.level,
        }
        return jsonable(out)


# --------------------------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------------------------


def calibrate(
    store: Store,
    run_id: str | None = None,
    *,
    compare_run: str | None = None,
    human_rule: HumanRule = "mean",
    seed: int = 0,
    n_resamples: int = 2000,
    level: float = 0.95,
) -> CalibrationReport:
    """Load a judge run (and optionally a "before" run) and build its calibration report.

    Args:
        store: The project store.
        run_id: The judge run (default: the newest with pointwise judgements). With
            ``compare_run`` this is the run *after* the change.
        compare_run: A run *before* a rubric change, for the padding/truncation comparison.
        human_rule: ``"mean"`` (default) or ``"majority"``.
        seed: Seed of every bootstrap (the same seed gives the same report).
        n_resamples: Bootstrap resamples per interval.
        level: Confidence level.

    Returns:
        A :class:`CalibrationReport`.

    Raises:
        InputError: As :func:`load_calibration_data`.
    """
    data = load_calibration_data(store, run_id)
    before = load_calibration_data(store, compare_run) if compare_run is not None else None
    return build_report(
        data, compare=before, human_rule=human_rule, seed=seed, n_resamples=n_resamples, level=level
    )


def build_report(
    data: CalibrationData,
    *,
    compare: CalibrationData | None = None,
    human_rule: HumanRule = "mean",
    seed: int = 0,
    n_resamples: int = 2000,
    level: float = 0.95,
) -> CalibrationReport:
    """Compute every section of the calibration report from loaded data.

    A section that cannot be computed (no labels, one family, no pairwise judgements...) is
    left empty and listed in ``skipped`` with the reason; it never becomes a made-up number.

    Args:
        data: The run (the "after" run when ``compare`` is given).
        compare: The "before" run for the padding/truncation comparison.
        human_rule: How several raters of one answer are collapsed.
        seed: Seed of every bootstrap.
        n_resamples: Bootstrap resamples.
        level: Confidence level.

    Returns:
        A :class:`CalibrationReport`.
    """
    if human_rule not in ("mean", "majority"):
        raise InputError(f"unknown human rule {human_rule!r}", fix="use 'mean' or 'majority'.")
    if not (isinstance(n_resamples, int) and n_resamples >= 10):
        raise InputError(f"resamples must be a whole number of at least 10; got {n_resamples!r}")
    opts = ReportOptions(human_rule=human_rule, seed=seed, n_resamples=n_resamples, level=level)
    skipped: list[str] = []
    rubric = data.rubric
    analysis, design_note = _analysis_set(data)

    prov = provenance_note(data.provenance, judge_family=data.judge_family) if data.judge_family else None

    residuals: dict[str, ResidualSection] = {}
    scales: list[ResidualScale] = ["pass", "score"]
    for scale in scales:
        got = _guarded(f"residuals ({scale})", skipped, partial(_residual_section, data, analysis, scale, opts))
        section, reason = got if got is not None else (None, None)
        if section is not None:
            residuals[scale] = section
        if reason:
            skipped.append(reason)

    kappas: list[KappaRow] = []
    got_kappa = _guarded("kappa", skipped, partial(_kappa_rows, data, analysis, opts))
    if got_kappa is not None:
        kappas, reason = got_kappa
        if reason:
            skipped.append(reason)
    alphas: dict[str, Estimate] = {}
    got_alpha = _guarded("Krippendorff's alpha", skipped, partial(_alphas, data, opts))
    if got_alpha is not None:
        alphas, reasons = got_alpha
        skipped += reasons
    ppi: list[PPIRow] = []
    got_ppi = _guarded("PPI", skipped, partial(_ppi_rows, data, analysis, opts))
    if got_ppi is not None:
        ppi, reasons = got_ppi
        skipped += reasons
    probes = _guarded("probes", skipped, partial(_probe_section, data, compare, opts)) or ProbeSection()
    if not probes.gaps and not probes.position:
        skipped.append("probes: the run holds no probe variants (padded, truncated...) and no "
                       "order-swapped pairwise judgements")
    if probes.comparison_reason:
        skipped.append(f"run comparison: {probes.comparison_reason}")
    formats: list[FormatRow] = []
    got_formats = _guarded("format diagnostics", skipped, partial(format_rows, data, probes=probes, opts=opts))
    if got_formats is not None:
        formats, reasons = got_formats
        skipped += reasons

    notes: list[str] = []
    banner = data.label_summary.banner()
    if banner:
        notes.append(banner)
    if prov is not None and prov.bound == "upper":
        notes.append(f"The self-preference gap is an UPPER BOUND: {prov.reason}.")
    if design_note is not None:
        notes.append(design_note.text())
    if data.n_errors:
        notes.append(f"{data.n_errors} judge call(s) failed with no reply; they are left out (never scored).")

    return CalibrationReport(
        run_id=data.run_id,
        judge_model=str(data.run.get("model")),
        judge_family=data.judge_family,
        rubric={"rubric_id": rubric.rubric_id, "version": rubric.version, "scale": rubric.scale,
                "name": rubric.name},
        judge_format=data.judge_format,
        human_rule=human_rule,
        labels=data.label_summary,
        design=design_note,
        provenance=prov,
        provenance_records=data.provenance,
        residuals=residuals,
        kappas=tuple(kappas),
        alphas=alphas,
        ppi=tuple(ppi),
        probes=probes,
        formats=tuple(formats),
        notes=tuple(notes),
        skipped=tuple(skipped),
        seed=seed,
        n_resamples=n_resamples,
        level=level,
        n_errors=data.n_errors,
        compare_run_id=None if compare is None else compare.run_id,
    )


_T = TypeVar("_T")


def _guarded(section: str, skipped: list[str], compute: Callable[[], _T]) -> _T | None:
    """Run one section, or skip it with the statistic's own message.

    Data the statistics reject (e.g. every weight zero) skips the section (``None``) instead
    of failing the whole report.
    """
    try:
        return compute()
    except ValueError as exc:
        skipped.append(f"{section}: {exc}")
        return None


@dataclass(frozen=True)
class ReportOptions:
    """How every section is computed.

    Attributes:
        human_rule: How several raters of one answer are collapsed.
        seed: Seed of every bootstrap (each statistic is seeded with it, so sections do not
            shift when another section is added).
        n_resamples: Bootstrap resamples.
        level: Confidence level.
    """

    human_rule: HumanRule = "mean"
    seed: int = 0
    n_resamples: int = 2000
    level: float = 0.95


def _first_judgement(point: pd.DataFrame, fmt: str) -> pd.DataFrame:
    """One row per original answer: its first parsed judgement in ``fmt``."""
    rows = point[(point["format"] == fmt) & (point["status"] == "parsed") & (point["variant"] == "original")
                 & point["in_pool"]]
    return rows.sort_values("judgement_id", kind="stable").drop_duplicates("answer_id").reset_index(drop=True)


def _analysis_set(data: CalibrationData) -> tuple[pd.DataFrame, DesignNote | None]:
    """Original answers with a parsed judge score and at least one human label, weighted.

    Returns:
        ``answer_id, task_id, family, value, pass, weight`` sorted by answer id, and the design
        note when a stored design supplied the weights.
    """
    empty = pd.DataFrame(columns=["answer_id", "task_id", "family", "value", "pass", "weight"])
    if data.judge_format is None:
        return empty, None
    judged = _first_judgement(data.pointwise, data.judge_format)
    labelled = set(data.labels["answer_id"])
    frame = judged[_isin(judged["answer_id"], labelled)][["answer_id", "task_id", "family", "value", "pass"]]
    frame = frame.assign(weight=1.0)
    note = None
    if data.design is not None and not frame.empty:
        weights = data.design.set_index("answer_id")["weight"]
        inside = _isin(frame["answer_id"], weights.index)
        if inside.any():
            frame = frame[inside].assign(weight=lambda f: f["answer_id"].map(weights).astype(float))
            w = frame["weight"].to_numpy(dtype=float)
            note = DesignNote(
                design_id=str(data.design_id),
                weighted=bool(not np.allclose(w, w[0])),
                n_in_design=int(inside.sum()),
                n_left_out=int((~inside).sum()),
            )
    return frame.sort_values("answer_id").reset_index(drop=True), note


def _isin(column: pd.Series, values: Iterable[Any]) -> npt.NDArray[np.bool_]:
    """``column.isin(values)`` as a boolean array, by one hash lookup.

    On an Arrow-backed string column ``Series.isin`` turns every value into a pyarrow scalar in
    Python, a few microseconds each: seconds per call with 100,000 labels.
    """
    lookup = pd.Index(list(values) if isinstance(values, (set, frozenset)) else values).unique()
    return np.asarray(lookup.get_indexer(column) >= 0)


def _ratings(data: CalibrationData, ids: Sequence[str], column: str) -> pd.DataFrame:
    labels = data.labels[_isin(data.labels["answer_id"], ids)]
    return labels[labels[column].notna()][["answer_id", "rater_id", column]].rename(columns={column: "score"})


def _residual_section(
    data: CalibrationData, analysis: pd.DataFrame, scale: ResidualScale, opts: ReportOptions
) -> tuple[ResidualSection | None, str | None]:
    rubric = data.rubric
    if analysis.empty:
        return None, (
            f"residuals ({scale}): no original answer has both a parsed pointwise judgement "
            "and a current human label"
        )
    if scale == "score":
        if rubric.scale == "binary":
            return None, None  # the score residual on a binary rubric is the pass residual
        if data.judge_format != rubric.scale:
            return None, (
                f"residuals (score): the judge scored in {data.judge_format}, the humans in "
                f"{rubric.scale}; scores on different scales cannot be subtracted"
            )
        judge_col, label_col = "value", "overall"
    else:
        judge_col, label_col = "pass", "pass"
    frame = analysis[analysis[judge_col].notna()]
    ratings = _ratings(data, list(frame["answer_id"]), label_col)
    frame = frame[_isin(frame["answer_id"], ratings["answer_id"])].reset_index(drop=True)
    if frame.empty:
        return None, f"residuals ({scale}): no answer has both a judge {judge_col} and a human {label_col}"
    hs = human_scores(ratings, rule=opts.human_rule, score_col="score")
    human = hs.scores.reindex(frame["answer_id"]).to_numpy(dtype=float)
    common: dict[str, Any] = {
        "scale": scale,
        "weights": frame["weight"].to_numpy(dtype=float),
        "rater_level": hs.ratings,
        "answer_ids": frame["answer_id"].to_numpy(),
        "rule": opts.human_rule,
        "n_resamples": opts.n_resamples,
        "level": opts.level,
        "rng": opts.seed,
    }
    judge = frame[judge_col].to_numpy(dtype=float)
    fams = frame["family"].astype(str).to_numpy()
    tasks = frame["task_id"].astype(str).to_numpy()
    present = sorted(set(fams))
    gap: Estimate | None = None
    reason: str | None = None
    own = data.judge_family
    if own is None:
        reason = "the run records no judge family (judge_runs.family), so there is no 'own' family"
    elif own not in present:
        reason = f"no labelled answers from the judge's own family {own!r} (families: {present})"
    elif len(present) < 2:
        reason = "only one family has labelled answers"
    if reason is None:
        # One set of bootstrap replicates serves the families and the gap.
        families, gap = residuals_and_gap(
            judge, human, fams, tasks, own_family=str(own), provenance=data.provenance, **common
        )
    else:
        families = family_residuals(judge, human, fams, tasks, **common)
    units = next(iter(families.values())).units
    return ResidualSection(scale, units, families, gap, reason, len(frame)), (
        f"self-preference gap ({scale}): {reason}" if reason else None
    )


def _kappa_rows(
    data: CalibrationData, analysis: pd.DataFrame, opts: ReportOptions
) -> tuple[list[KappaRow], str | None]:
    if analysis.empty:
        return [], "kappa: no answer has both a judge verdict and a human label"
    rows: list[KappaRow] = []
    specs: list[tuple[str, str, str, list[Any], Literal["quadratic"] | None]] = [
        ("pass verdict", "pass", "pass", [0, 1], None)
    ]
    scale = data.rubric.scale
    if scale == "likert5" and data.judge_format == "likert5":
        levels = [1, 2, 3, 4, 5]
        specs += [("overall score", "value", "overall", levels, None),
                  ("overall score", "value", "overall", levels, "quadratic")]
    for what, judge_col, label_col, cats, weights in specs:
        frame = analysis[analysis[judge_col].notna()]
        ratings = _ratings(data, list(frame["answer_id"]), label_col)
        if ratings.empty:
            continue
        major = human_scores(ratings, rule="majority", score_col="score").scores
        frame = frame[_isin(frame["answer_id"], major.index)]
        judge = frame[judge_col].to_numpy(dtype=float).round().astype(int)
        human = major.reindex(frame["answer_id"]).to_numpy(dtype=float).round().astype(int)
        fam = frame["family"].astype(str).to_numpy()
        tasks = frame["task_id"].astype(str).to_numpy()
        for scope in ["all", *sorted(set(fam))]:
            sel = np.ones(len(fam), bool) if scope == "all" else fam == scope
            if not sel.any():
                continue
            result = cohen_kappa(
                judge[sel], human[sel], weights=weights, labels=cats, clusters=tasks[sel],
                n_resamples=opts.n_resamples, level=opts.level, rng=opts.seed,
            )
            rows.append(KappaRow(scope, what, result))
    return rows, None if rows else "kappa: no answer has both a judge verdict and a human label"


def _alphas(data: CalibrationData, opts: ReportOptions) -> tuple[dict[str, Estimate], list[str]]:
    out: dict[str, Estimate] = {}
    reasons: list[str] = []
    labels = data.labels
    specs = [("overall score", "overall", level_for_scale(data.rubric.scale)), ("pass verdict", "pass", "nominal")]
    if data.rubric.scale == "binary":
        specs = specs[1:]
    for name, column, level in specs:
        rows = labels[labels[column].notna()]
        if rows.empty:
            continue
        matrix = rows.pivot_table(index="rater_id", columns="answer_id", values=column, aggfunc="first")
        tasks = rows.groupby("answer_id")["task_id"].first().reindex(matrix.columns).astype(str).to_numpy()
        est = krippendorff_alpha(
            matrix.to_numpy(dtype=float), level=level, n_resamples=opts.n_resamples,  # type: ignore[arg-type]
            confidence=opts.level, clusters=tasks, rng=opts.seed,
        )
        out[name] = est
        if math.isnan(est.estimate):
            reasons.append(f"Krippendorff's alpha ({name}): {est.extra.get('reason')}")
    if not out:
        reasons.append("Krippendorff's alpha: no human labels")
    return out, reasons


def _ppi_rows(data: CalibrationData, analysis: pd.DataFrame, opts: ReportOptions) -> tuple[list[PPIRow], list[str]]:
    if data.judge_format is None:
        return [], ["PPI: the run has no pointwise judgements of original answers"]
    judged = _first_judgement(data.pointwise, data.judge_format)
    judged = judged[judged["pass"].notna()]
    if judged.empty:
        return [], [f"PPI: judgements in {data.judge_format} carry no pass verdict under this rubric"]
    labelled = analysis[analysis["pass"].notna()]
    ratings = _ratings(data, list(labelled["answer_id"]), "pass")
    if ratings.empty:
        return [], ["PPI: no human pass verdicts"]
    human = human_scores(ratings, rule=opts.human_rule, score_col="score").scores
    labelled = labelled[_isin(labelled["answer_id"], human.index)]
    weighted = not np.allclose(labelled["weight"], 1.0) if len(labelled) else False
    rows: list[PPIRow] = []
    reasons: list[str] = []
    # Answers outside the analysis (unlabelled, or labelled outside the design) are the pool.
    for fam in sorted(set(judged["family"].astype(str))):
        lab = labelled[labelled["family"].astype(str) == fam]
        pool = judged[(judged["family"].astype(str) == fam) & ~_isin(judged["answer_id"], lab["answer_id"])]
        if lab.empty:
            reasons.append(f"PPI ({fam}): no human labels on this family")
            continue
        y = human.reindex(lab["answer_id"]).to_numpy(dtype=float)
        f = lab["pass"].to_numpy(dtype=float)
        fu = pool["pass"].to_numpy(dtype=float)
        if fu.size == 0:
            reasons.append(f"PPI ({fam}): every judged answer is labelled, so the judge adds nothing")
            continue
        tl, tu = lab["task_id"].astype(str).to_numpy(), pool["task_id"].astype(str).to_numpy()
        if weighted and not lab["weight"].sum() > 0:
            reasons.append(f"PPI ({fam}): the design gives this family's labelled answers zero total weight")
            continue
        if weighted:
            est, classical = _weighted_ppi(y, f, fu, lab["weight"].to_numpy(dtype=float), tl, tu, opts)
        else:
            res = ppi_mean(y, f, fu, lam=None, level=opts.level, clusters=(tl, tu))
            est = _percent(res)
            x = res.extra
            classical = Estimate(
                100 * x["classical_estimate"], 100 * x["classical_ci_low"], 100 * x["classical_ci_high"],
                res.n, "classical mean of the human labels, normal interval, task-cluster-robust SE",
                "percent", opts.level,
            )
        rows.append(PPIRow(fam, est, classical, int(y.size), int(fu.size)))
    return rows, reasons


def _percent(est: Estimate) -> Estimate:
    extra = {k: v for k, v in est.extra.items() if k in ("lam", "n_unlabeled", "effective_n", "reason")}
    return Estimate(100 * est.estimate, 100 * est.ci_low, 100 * est.ci_high, est.n, est.method,
                    "percent", est.level, extra)


def _weighted_ppi(
    y: np.ndarray, f: np.ndarray, fu: np.ndarray, w: np.ndarray, tl: np.ndarray, tu: np.ndarray, opts: ReportOptions
) -> tuple[Estimate, Estimate]:
    """PPI (λ = 1) under a stratified label sample.

    The judge's pass rate on the whole pool plus the Hajek-weighted mean of (human − judge) on the
    labels; task-clustered bootstrap.
    """
    n_l = y.size
    values = np.r_[f, fu]
    is_lab = np.r_[np.ones(n_l), np.zeros(fu.size)]
    design_w = np.r_[w, np.zeros(fu.size)]
    rect = np.r_[y - f, np.zeros(fu.size)]
    human = np.r_[y, np.zeros(fu.size)]
    tasks = np.r_[tl, tu]

    def ppi_stat(v: np.ndarray, lab: np.ndarray, dw: np.ndarray, r: np.ndarray, *, weights: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            pool_mean = (weights @ v) / weights.sum(axis=1)
            ww = weights * dw
            return np.asarray(100 * (pool_mean + (ww @ r) / ww.sum(axis=1)))

    def human_stat(h: np.ndarray, dw: np.ndarray, *, weights: np.ndarray) -> np.ndarray:
        ww = weights * dw
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(100 * (ww @ h) / ww.sum(axis=1))

    point = 100 * (values.mean() + (w @ (y - f)) / w.sum())
    lo, hi, _ = cluster_bootstrap(ppi_stat, tasks, values, is_lab, design_w, rect,
                                  n_resamples=opts.n_resamples, level=opts.level, rng=opts.seed)
    h_point = 100 * (w @ y) / w.sum()
    h_lo, h_hi, _ = cluster_bootstrap(human_stat, tasks, human, design_w,
                                      n_resamples=opts.n_resamples, level=opts.level, rng=opts.seed)
    n_tasks = int(np.unique(tasks).size)
    method = (
        "PPI mean (λ=1): judge pass rate on the whole pool + design-weighted (Hajek) mean of "
        f"human − judge on the labels; task-clustered percentile bootstrap, {opts.n_resamples} resamples"
    )
    est = Estimate(float(point), lo, hi, n_l, method, "percent", opts.level,
                   {"lam": 1.0, "n_unlabeled": int(fu.size), "n_tasks": n_tasks})
    classical = Estimate(
        float(h_point), h_lo, h_hi, n_l,
        f"design-weighted (Hajek) mean of the human labels; task-clustered percentile bootstrap, "
        f"{opts.n_resamples} resamples", "percent", opts.level,
    )
    return est, classical


# -- probes ------------------------------------------------------------------------------------


def _scale_unit(fmt: str) -> float:
    """A quarter of the format's range: thresholds written for 1-5 scale this way."""
    lo, hi = format_range(fmt) if fmt in POINTWISE_FORMATS else format_range("likert5")
    return (hi - lo) / 4


def variant_gaps(data: CalibrationData, opts: ReportOptions) -> list[VariantGap]:
    """Pointwise gap of every judged variant against its original, per format."""
    point = data.pointwise
    parsed = point[(point["status"] == "parsed") & point["format"].isin(POINTWISE_FORMATS)]
    variants = parsed[(parsed["variant"] != "original") & parsed["parent"].notna() & parsed["variant"].notna()]
    if variants.empty:
        return []
    means = parsed.groupby(["format", "answer_id"])["value"].mean()
    out: list[VariantGap] = []
    for (variant, fmt), rows in variants.groupby(["variant", "format"], sort=True):
        per = rows.groupby("answer_id").agg(value=("value", "mean"), parent=("parent", "first"),
                                             task=("task_id", "first"))
        base = [means.get((fmt, p), _NAN) for p in per["parent"]]
        args = {"clusters": per["task"].astype(str).to_numpy(), "level": opts.level,
                "n_resamples": opts.n_resamples, "rng": opts.seed}
        unit = _scale_unit(str(fmt))
        if variant == "truncated":
            gap = truncation_gap(per["value"].to_numpy(dtype=float), np.asarray(base, dtype=float), **args)
            out.append(VariantGap(str(variant), str(fmt), gap, None, None))
            continue
        gap = pointwise_gap(per["value"].to_numpy(dtype=float), np.asarray(base, dtype=float), **args)
        base_t = THRESHOLDS["pointwise_gap"]
        warn, fail = base_t.warn * unit, base_t.fail * unit
        call = "WARN" if math.isnan(gap.estimate) else verdict(gap, warn=warn, fail=fail)
        out.append(VariantGap(str(variant), str(fmt), gap, call, (warn, fail)))
    return out


def _probe_section(data: CalibrationData, compare: CalibrationData | None, opts: ReportOptions) -> ProbeSection:
    gaps = tuple(variant_gaps(data, opts))
    position = tuple(position_results(data, opts))
    comparison = None
    reason = None
    if compare is not None:
        comparison, reason = _compare(compare, gaps, data, opts)
    return ProbeSection(gaps, comparison, None if compare is None else compare.run_id, reason, position)


def _compare(
    before: CalibrationData, after_gaps: Sequence[VariantGap], after: CalibrationData, opts: ReportOptions
) -> tuple[RunComparison | None, str | None]:
    before_gaps = variant_gaps(before, opts)

    def pick(gaps: Sequence[VariantGap], variant: str, fmt: str) -> Estimate | None:
        for g in gaps:
            if g.variant == variant and g.format == fmt and not math.isnan(g.gap.estimate):
                return g.gap
        return None

    shared = sorted({g.format for g in after_gaps} & {g.format for g in before_gaps},
                    key=lambda f: (f != after.rubric.scale, f))
    for fmt in shared:
        found = [pick(before_gaps, "padded", fmt), pick(after_gaps, "padded", fmt),
                 pick(before_gaps, "truncated", fmt), pick(after_gaps, "truncated", fmt)]
        if all(e is not None for e in found):
            pb, pa, tb, ta = (e for e in found if e is not None)
            return compare_runs(pb, pa, tb, ta, tolerance=0.1 * _scale_unit(fmt), level=opts.level), None
    return None, (
        f"runs {before.run_id!r} and {after.run_id!r} do not both hold padded and truncated "
        "variants judged in one shared pointwise format"
    )


def _x_of_pair(a: str, b: str, rows: pd.DataFrame, judge_family: str | None) -> tuple[str, str]:
    """Which answer of a pair the win rates are for, and why."""
    first = rows.iloc[0]
    targets = [m.get("target_id") for m in rows["meta"] if isinstance(m, dict)]
    target = next((t for t in targets if t in (a, b)), None)
    if target is not None:
        variant = next((m.get("variant") for m in rows["meta"] if isinstance(m, dict) and m.get("variant")), None)
        return str(target), "the probe's target" + (f" ({variant})" if variant else "")
    var = {first["answer_id"]: first["variant_a"], first["answer_b_id"]: first["variant_b"]}
    fam = {first["answer_id"]: first["family_a"], first["answer_b_id"]: first["family_b"]}
    decorated = [x for x in (a, b) if isinstance(var.get(x), str) and var.get(x) != "original"]
    if len(decorated) == 1:
        return decorated[0], f"the {var[decorated[0]]} variant"
    if judge_family is not None and (fam.get(a) == judge_family) != (fam.get(b) == judge_family):
        return (a if fam.get(a) == judge_family else b), f"the judge's own family ({judge_family})"
    forward = rows[rows["order_shown"] == "AB"]
    if not forward.empty:
        return str(forward.iloc[0]["answer_id"]), "the answer listed first in the trial"
    return a, "the first answer by id"


def position_results(data: CalibrationData, opts: ReportOptions) -> list[PositionResult]:
    """Slot decomposition, swap-averaged and length-controlled win rates per probe arm."""
    pair = data.pairwise
    if pair.empty:
        return []
    pair = pair[pair["format"].isin(PAIRWISE_FORMATS) & pair["answer_id"].notna() & pair["answer_b_id"].notna()]
    out: list[PositionResult] = []
    keys = [pair["probe"].fillna("pairwise"), pair["arm"].fillna(""), pair["format"]]
    for (probe, arm, fmt), rows in pair.groupby(keys, sort=True):
        rows = rows.assign(
            key=[tuple(sorted((str(a), str(b)))) for a, b in zip(rows["answer_id"], rows["answer_b_id"], strict=True)]
        )
        items: list[dict[str, Any]] = []
        candidate_desc: dict[str, int] = {}
        for key, grp in rows.groupby("key", sort=True):
            x, why = _x_of_pair(key[0], key[1], grp, data.judge_family)
            candidate_desc[why] = candidate_desc.get(why, 0) + 1
            parsed = grp[grp["status"] == "parsed"]
            fwd = parsed[parsed["answer_id"] == x]
            rev = parsed[parsed["answer_b_id"] == x]
            y = key[1] if x == key[0] else key[0]
            items.append({
                "task": str(grp["task_id"].iloc[0]),
                "v_fwd": float(fwd["value"].mean()) if len(fwd) else _NAN,
                "v_rev": float(rev["value"].mean()) if len(rev) else _NAN,
                "len_diff": _len_diff(grp, x, y),
            })
        frame = pd.DataFrame(items)
        slot_values = rows.loc[rows["status"] == "parsed", "value"].to_numpy(dtype=float)
        first = first_shown_advantage_from_verdicts(np.sign(slot_values), level=opts.level)
        x_of = {k: _x_of_pair(k[0], k[1], g, data.judge_family)[0] for k, g in rows.groupby("key", sort=True)}
        parsed = rows[rows["status"] == "parsed"]
        in_a = np.array([x_of[k] == a for k, a in zip(parsed["key"], parsed["answer_id"], strict=True)])
        orders = np.where(in_a, "AB", "BA")
        cand = candidate_verdicts(np.sign(parsed["value"].to_numpy(dtype=float)), orders)
        balanced = abs(int(in_a.sum()) - int((~in_a).sum())) <= max(1, 0.1 * len(in_a))
        raw = pairwise_lift(cand, orders=orders if balanced else None,
                            clusters=parsed["task_id"].astype(str).to_numpy(),
                            level=opts.level, n_resamples=opts.n_resamples, rng=opts.seed)
        both = frame.dropna(subset=["v_fwd", "v_rev"])
        decomposition = swap = lc = None
        lc_reason: str | None = "no pair was judged in both orders"
        if not both.empty:
            tasks = both["task"].to_numpy()
            decomposition = slot_decomposition(both["v_fwd"], both["v_rev"], clusters=tasks,
                                               n_resamples=opts.n_resamples, level=opts.level, rng=opts.seed)
            sa = swap_average(both["v_fwd"], both["v_rev"])
            swap = pairwise_lift(sa, clusters=tasks, level=opts.level, n_resamples=opts.n_resamples, rng=opts.seed)
            wins = np.where(sa > 0, 1.0, np.where(sa < 0, 0.0, 0.5))
            diffs = both["len_diff"].to_numpy(dtype=float)
            ok = np.isfinite(diffs)
            if ok.sum() < 3:
                lc_reason = "the answers' lengths are not known for three or more pairs"
            else:
                # Each refit is a tiny L-BFGS problem; a multi-threaded BLAS spends ~10x the
                # work on thread hand-offs there (measured: 110 ms vs 8 ms per fit on 2 cores).
                with threadpool_limits(limits=1, user_api="blas"):
                    lc = length_controlled_win_rate(wins[ok], diffs[ok], clusters=tasks[ok],
                                                    n_resamples=min(opts.n_resamples, _LC_MAX_REFITS),
                                                    level=opts.level, rng=opts.seed)
                lc_reason = None
        desc = "; ".join(f"{why} ({n} pairs)" for why, n in sorted(candidate_desc.items()))
        out.append(PositionResult(
            probe=str(probe), arm=str(arm), format=str(fmt), candidate=desc, n_pairs=len(frame),
            n_both_orders=len(both), first_shown=first, decomposition=decomposition, raw_lift=raw,
            swap_lift=swap, length_controlled=lc, length_reason=lc_reason,
        ))
    return out


def _len_diff(grp: pd.DataFrame, x: str, y: str) -> float:
    """Characters of X minus characters of Y, from the pool or from the call's design facts."""
    first = grp.iloc[0]
    chars = {first["answer_id"]: first["chars_a"], first["answer_b_id"]: first["chars_b"]}
    if not (_isnan(chars.get(x)) or _isnan(chars.get(y))):
        return float(chars[x]) - float(chars[y])
    for row in grp.itertuples(index=False):
        meta = row.meta if isinstance(row.meta, dict) else {}
        la, lb = meta.get("len_a"), meta.get("len_b")
        if la is None or lb is None:
            continue
        return float(la) - float(lb) if row.answer_id == x else float(lb) - float(la)
    return _NAN


# -- formats -----------------------------------------------------------------------------------


def _decoding_rule(run: Mapping[str, Any]) -> str:
    params = run.get("params") or {}
    nested = params.get("judge_params")
    source = {**params, **(nested if isinstance(nested, Mapping) else {})}
    decoding = {k: source[k] for k in ("temperature", "top_p", "top_k") if source.get(k) is not None}
    if "temperature" in decoding and float(decoding["temperature"]) == 0:
        head = "greedy decoding (temperature 0)"
    elif decoding:
        head = "sampling with " + ", ".join(f"{k}={v}" for k, v in decoding.items())
    elif run.get("judge_kind") == "fake":
        head = "fake judge (no sampling: scores are a seeded function of the answer)"
    elif run.get("judge_kind") == "import":
        head = "imported judgements (decoding not recorded)"
    else:
        head = "decoding parameters not recorded in the run"
    return head + "; strict parse, the last VERDICT line wins, an unparsed reply is a recorded failure"


def format_rows(
    data: CalibrationData,
    *,
    reference: Reference = "human",
    probes: ProbeSection | None = None,
    opts: ReportOptions | None = None,
    seed: int = 0,
    n_resamples: int = 2000,
    level: float = 0.95,
    human_rule: HumanRule = "mean",
) -> tuple[list[FormatRow], list[str]]:
    """Format diagnostics for every scoring format the run used, against a reference score.

    Args:
        data: The run.
        reference: ``"human"`` (default: the human score per answer, collapsed by
            ``human_rule``) or a pointwise format of the same run whose scores are the
            reference (e.g. ``"numeric100"``).
        probes: The run's probe section (for the comparative formats' slot bias).
        opts: Bootstrap options (else built from ``seed``, ``n_resamples``, ``level``,
            ``human_rule``).
        seed: Seed of the bootstraps.
        n_resamples: Bootstrap resamples.
        level: Confidence level.
        human_rule: How several raters are collapsed into the human reference.

    Returns:
        ``(rows, skipped)``: one :class:`FormatRow` per format, and reasons for formats (or
        the whole section) that could not be computed.

    Raises:
        InputError: On an unknown ``reference``.
    """
    opts = opts or ReportOptions(human_rule=human_rule, seed=seed, n_resamples=n_resamples, level=level)
    if probes is None:
        probes = ProbeSection(position=tuple(position_results(data, opts)))
    ref, ref_name = _reference_scores(data, reference, opts)
    decoding = _decoding_rule(data.run)
    rows: list[FormatRow] = []
    skipped: list[str] = []
    point, pair = data.pointwise, data.pairwise
    for fmt in [f for f in POINTWISE_FORMATS if f in set(point["format"])]:
        sub = point[(point["format"] == fmt) & (point["variant"].fillna("original") == "original")]
        n_replies, n_parsed = len(sub), int((sub["status"] == "parsed").sum())
        per = (sub.assign(ok=sub["status"] == "parsed").sort_values(["answer_id", "ok", "judgement_id"],
                                                                     ascending=[True, False, True])
               .drop_duplicates("answer_id"))
        scores = per["value"].where(per["ok"]).to_numpy(dtype=float)
        reference_values = per["answer_id"].map(ref).to_numpy(dtype=float)
        diag = format_diagnostics(scores, reference_values, per["task_id"].astype(str).to_numpy(),
                                  format_name=fmt, n_resamples=opts.n_resamples, level=opts.level,
                                  rng=opts.seed)
        diag = dataclasses.replace(diag, parse_rate=_parse_rate(n_parsed, n_replies, opts.level))
        rows.append(FormatRow(diag, "pointwise", "the parsed score of each original answer (first parse "
                              "when judged more than once)", decoding, "not comparative (one answer per call)",
                              ref_name))
    for fmt in [f for f in PAIRWISE_FORMATS if f in set(pair["format"])]:
        sub = pair[pair["format"] == fmt]
        row = _comparative_row(sub, fmt, ref, ref_name, decoding, probes, opts)
        if row is None:
            skipped.append(f"format {fmt}: no candidate has a parsed comparison")
        else:
            rows.append(row)
    if not rows:
        skipped.append("format diagnostics: the run holds no judgements in a known format")
    return rows, skipped


def _parse_rate(k: int, n: int, level: float) -> Estimate:
    est = proportion(k, n=n, level=level)
    return Estimate(est.estimate, est.ci_low, est.ci_high, n, "share of every judge reply that parsed; "
                    "Wilson score interval", "share of replies", level, {"parsed": k, "failed": n - k})


def _reference_scores(data: CalibrationData, reference: Reference, opts: ReportOptions) -> tuple[pd.Series, str]:
    if reference == "human":
        rated = data.labels[data.labels["overall"].notna()]
        if rated.empty:
            return pd.Series(dtype=float), "human score (no labels yet)"
        hs = human_scores(rated.rename(columns={"overall": "score"}), rule=opts.human_rule, score_col="score")
        return hs.scores, f"human score per answer ({opts.human_rule} of the raters' current overall labels)"
    if reference not in POINTWISE_FORMATS:
        raise InputError(
            f"unknown reference {reference!r}",
            fix=f"use 'human' or a pointwise format of the run ({', '.join(POINTWISE_FORMATS)}).",
        )
    judged = _first_judgement(data.pointwise, reference)
    if judged.empty:
        raise InputError(
            f"the run has no parsed {reference} judgements to use as the reference",
            fix="use --reference human, or a format the run judged.",
        )
    return judged.set_index("answer_id")["value"].astype(float), f"the judge's own {reference} score"


def _comparative_row(
    sub: pd.DataFrame, fmt: str, ref: pd.Series, ref_name: str, decoding: str, probes: ProbeSection, opts: ReportOptions
) -> FormatRow | None:
    from calibration.formats import tournament_scores

    matches = [
        (str(a), str(b), None if s != "parsed" else float(v))
        for a, b, v, s in zip(sub["answer_id"], sub["answer_b_id"], sub["value"], sub["status"], strict=True)
    ]
    scored = tournament_scores(matches)
    if not any(math.isfinite(s.score) for s in scored.values()):
        return None
    task_of: dict[str, str] = {}
    for a, b, t in zip(sub["answer_id"], sub["answer_b_id"], sub["task_id"], strict=True):
        task_of.setdefault(str(a), str(t))
        task_of.setdefault(str(b), str(t))
    ids = list(scored)
    scores = np.array([scored[c].score for c in ids], dtype=float)
    reference_values = pd.Series(ids).map(ref).to_numpy(dtype=float)
    diag = format_diagnostics(scores, reference_values, np.array([task_of[c] for c in ids]), format_name=fmt,
                              n_resamples=opts.n_resamples, level=opts.level, rng=opts.seed)
    diag = dataclasses.replace(diag, parse_rate=_parse_rate(int((sub["status"] == "parsed").sum()), len(sub),
                                                            opts.level))
    slots = [p for p in probes.position if p.format == fmt]
    if slots:
        n_pairs = sum(p.n_pairs for p in slots)
        n_both = sum(p.n_both_orders for p in slots)
        parts = [f"both orders judged for {n_both} of {n_pairs} pairs"]
        for p in slots:
            if p.decomposition is not None:
                b = p.decomposition.b
                parts.append(f"slot-A bias b = {b.estimate:+.2f} (95% CI {b.ci_low:+.2f} to {b.ci_high:+.2f}; "
                             f"{p.probe}{'/' + p.arm if p.arm else ''})")
        slot_text = "; ".join(parts)
    else:
        slot_text = "order handling unknown"
    return FormatRow(diag, "comparative", "each candidate's mean win probability over its comparisons "
                     "((v + 2)/4 from its own slot; tournament scoring)", decoding, slot_text, ref_name)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def jsonable(value: Any) -> Any:
    """Deep copy of ``value`` made JSON-ready.

    NumPy scalars to Python, ``nan``/``inf`` to ``None``, tuples to lists, DataFrames to lists of
    records.
    """
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, pd.DataFrame):
        return jsonable(value.to_dict(orient="records"))
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    value = _plain(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _f(value: float, digits: int) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _pct(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{100 * value:.1f}%"


__all__ = [
    "CalibrationData",
    "CalibrationReport",
    "DesignNote",
    "FormatRow",
    "KappaRow",
    "LabelSummary",
    "PPIRow",
    "PositionResult",
    "ProbeSection",
    "ReportOptions",
    "ResidualSection",
    "VariantGap",
    "build_report",
    "calibrate",
    "format_rows",
    "jsonable",
    "load_calibration_data",
    "position_results",
    "variant_gaps",
]
