"""Section builders that read the judge against the human labels.

Per-family residuals and the self-preference gap, Cohen's kappa (judge vs humans),
Krippendorff's alpha (among raters) and prediction-powered pass rates. Each builder takes the
loaded :class:`~judgelab.calibration.calibrate._load.CalibrationData` and the analysis set (original
answers with a judge score and a human label, with their design weights) and returns its
section's model plus the reasons for whatever it could not compute.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from judgelab.calibration.active import ActiveData, ActiveFigures, active_residuals_and_gap, plan_options
from judgelab.calibration.calibrate._load import CalibrationData, first_judgement, isin
from judgelab.calibration.calibrate._model import (
    DesignNote,
    FamilyResidual,
    KappaRow,
    PPIRow,
    ReportOptions,
    ResidualSection,
    SelfPreferenceGap,
)
from judgelab.calibration.calibrate._rater_model import (
    MODEL_REFITS,
    fit_rater_models,
    model_categories,
    model_human_scores,
)
from judgelab.calibration.stats import (
    Estimate,
    ResidualScale,
    design_kappa,
    design_mean,
    design_ppi_mean,
    family_residuals,
    human_scores,
    krippendorff_alpha,
    level_for_scale,
    model_refit_spread,
    provenance_note,
    residuals_and_gap,
    with_model_variance,
)
from judgelab.labeler.models import Rubric
from judgelab.labeler.scales import FormatSpec

_NO_KAPPA = "kappa: no answer has both a judge verdict and a human label"


def analysis_set(data: CalibrationData, opts: ReportOptions | None = None) -> tuple[pd.DataFrame, DesignNote | None]:
    """Original answers with a parsed judge score and a human score under the rule, weighted.

    Returns:
        ``answer_id, task_id, family, value, pass, weight, stratum, cluster`` sorted by answer
        id, and the design note when a stored design supplied the weights. ``stratum`` is the
        design's stratum (``None`` without a design); ``cluster`` the sampling unit the
        variance is estimated from: the task, unless the design sampled answers one by one and a
        task's answers fall in different strata (then the answer).
    """
    columns = ["answer_id", "task_id", "family", "value", "pass", "weight", "stratum", "cluster"]
    empty = pd.DataFrame(columns=columns)
    if data.judge_format is None:
        return empty, None
    judged = first_judgement(data.pointwise, data.judge_format)
    labelled = set(data.reference_labels((opts or ReportOptions()).human_rule)["answer_id"])
    frame = judged[isin(judged["answer_id"], labelled)][["answer_id", "task_id", "family", "value", "pass"]]
    frame = frame.assign(weight=1.0, stratum=None, cluster=frame["task_id"].astype(str))
    note = None
    if data.design is not None and not frame.empty:
        design = data.design.set_index("answer_id")
        weights = design["weight"]
        inside = isin(frame["answer_id"], weights.index)
        if inside.any():
            frame = frame[inside].assign(weight=lambda f: f["answer_id"].map(weights).astype(float),
                                         stratum=lambda f: f["answer_id"].map(design["stratum"]).astype(str))
            if (frame.groupby("task_id")["stratum"].nunique() > 1).any():
                frame = frame.assign(cluster=frame["answer_id"].astype(str))
            w = frame["weight"].to_numpy(dtype=float)
            note = DesignNote(
                design_id=str(data.design_id),
                weighted=bool(not np.allclose(w, w[0])),
                n_in_design=int(inside.sum()),
                n_left_out=int((~inside).sum()),
                **_active_note(data),
            )
    return frame.sort_values("answer_id").reset_index(drop=True), note



def _active_note(data: CalibrationData) -> dict[str, Any]:
    """The design note's words for an active design (nothing for a stratified one)."""
    act = data.active
    if act is None:
        return {}
    p = act.params
    spend = "O'Brien-Fleming-type" if p["spending"] == "obf" else "Pocock-type"
    return {
        "estimator": "active AIPW",
        "interval": f"repeated {float(p['level']):.0%} confidence intervals of an {spend} alpha-spending plan",
        "active": (f"{act.looks} labelled batch(es) of {act.batches}, target ±{float(p['target_half_width']):g} pp on "
                   f"the gap, {'tasks' if p['paired'] else 'answers'} drawn one by one with probabilities that "
                   "grow with the judge's uncertainty"),
    }


def active_figures_from(
    act: ActiveData,
    human: np.ndarray,
    *,
    scale: ResidualScale,
    rater_level: pd.DataFrame,
    own: str | None,
    interval: str,
    critical: list[float] | None = None,
) -> ActiveFigures:
    """:func:`judgelab.calibration.active.active_residuals_and_gap` under the design's own plan."""
    return active_residuals_and_gap(act.draws, human, scale=scale, own_family=own, critical=critical,
                                    rater_level=rater_level, interval=interval,  # type: ignore[arg-type]
                                    **plan_options(act.params))


def _active_section(
    data: CalibrationData, scale: ResidualScale, opts: ReportOptions
) -> tuple[ResidualSection | None, list[str]]:
    """Residuals and the gap from the active design's batches (the AIPW estimator, repeated intervals)."""
    act = data.active
    assert act is not None
    ids = act.draws.answer_id

    def humans(column: str) -> tuple[np.ndarray, pd.DataFrame]:
        ratings = _ratings(data, list(ids), column, opts)
        scores, rater_rows, _ = rule_scores(data, ratings, column, opts)
        return scores.reindex(ids).to_numpy(dtype=float), rater_rows

    own = data.judge_family
    common: dict[str, Any] = {"interval": opts.interval}
    human, raters = humans("pass")
    figures = active_figures_from(act, human, scale="pass", rater_level=raters, own=own, **common)
    if scale == "score":
        human, raters = humans("overall")
        critical = [float(c) for c in figures.looks["boundary"]]
        figures = active_figures_from(act, human, scale="score", rater_level=raters, own=own, critical=critical,
                                      **common)
    families = {fam: FamilyResidual.from_estimate(fam, est) for fam, est in figures.families.items()}
    gap = None
    reason = _no_gap_reason(own, sorted(families))
    if figures.gap is not None and reason is None:
        extra = dict(figures.gap.extra)
        if data.provenance and own is not None:
            note = provenance_note(data.provenance, judge_family=own)
            extra |= {"bound": note.bound, "bound_reason": note.reason}
        gap = SelfPreferenceGap.from_estimate(dataclasses.replace(figures.gap, extra=extra))
    units = next(iter(families.values())).units
    n = int(np.isfinite(human).sum())
    return ResidualSection(scale, units, families, gap, reason, n), [f"self-preference gap ({scale}): {reason}"] \
        if reason else []


def _ratings(data: CalibrationData, ids: Sequence[str], column: str, opts: ReportOptions) -> pd.DataFrame:
    """The per-rater scores behind the human score of ``ids`` (see :meth:`CalibrationData.reference_labels`)."""
    labels = data.reference_labels(opts.human_rule)
    labels = labels[isin(labels["answer_id"], ids)]
    labels = labels[labels[column].notna()]
    # An adjudicated label is the answer's settled score, not a rater's: without a rater it stays
    # out of the raters' spread (judgelab.calibration.stats._raters), which one adjudication used to switch
    # (the admin read as one more rater connecting the panel).
    rater = labels["rater_id"].astype(object).where(labels["source"] != "adjudicated", None)
    # An imported annotator mean weighs as its number of people in the answer's human score, and
    # is no one rater's label (the stats leave a row of more than one person out of the spread).
    people = labels["n_raters"].fillna(1) if "n_raters" in labels else pd.Series(1, labels.index)
    return pd.DataFrame({"answer_id": labels["answer_id"].to_numpy(), "rater_id": rater.to_numpy(),
                         "score": labels[column].to_numpy(), "people": people.to_numpy(dtype=int)})


def rule_scores(
    data: CalibrationData, ratings: pd.DataFrame, column: str, opts: ReportOptions, *, kind: str = "mean"
) -> tuple[pd.Series, pd.DataFrame, str]:
    """The human score per answer under the report's rule, the raters' rows, and the stats rule.

    Args:
        data: The run (for the rater model under ``dawid-skene``).
        ratings: ``answer_id, rater_id, score, people`` from :func:`_ratings`.
        column: The label column the scores come from (``"pass"`` or ``"overall"``).
        opts: The report options.
        kind: Under ``dawid-skene``: ``"mean"`` (posterior mean) or ``"mode"``.

    Returns:
        Scores (index: answer id), the per-rater table for ``rater_level``, and the ``rule`` to
        pass to the residual functions (``"model"`` for a model's scores).
    """
    if opts.human_rule == "dawid-skene":
        models = opts.rater_models or fit_rater_models(data)
        model = models.get(column) or models["pass"]  # binary rubric: the overall score is the verdict
        scores, raters = model_human_scores(ratings, model, kind=kind)
        return scores, raters, "model"
    hs = human_scores(ratings, rule=opts.collapse, score_col="score", people_col="people")
    return hs.scores, hs.ratings, opts.collapse


def residual_section(
    data: CalibrationData, analysis: pd.DataFrame, scale: ResidualScale, opts: ReportOptions
) -> tuple[ResidualSection | None, list[str]]:
    """Residuals per family on one scale, and the self-preference gap when the families allow it.

    Returns:
        The section (``None`` when it cannot be computed) and the reasons for what was not.
    """
    rubric = data.rubric
    if analysis.empty:
        return None, [
            f"residuals ({scale}): no original answer has both a parsed pointwise judgement "
            "and a current human label"
        ]
    if scale == "score":
        if rubric.scale == "binary":
            return None, []  # the score residual on a binary rubric is the pass residual
        if data.judge_format != rubric.scale:
            return None, [
                f"residuals (score): the judge scored in {data.judge_format}, the humans in "
                f"{rubric.scale}; scores on different scales cannot be subtracted (pass --scale-map to state how "
                "the judge's scale reads on the rubric's)"
            ]
        judge_col, label_col = "value", "overall"
    else:
        judge_col, label_col = "pass", "pass"
    if data.active is not None:
        active, why = _active_section(data, scale, opts)
        return _section_in_points(active, rubric, scale), why
    frame = analysis[analysis[judge_col].notna()]
    ratings = _ratings(data, list(frame["answer_id"]), label_col, opts)
    frame = frame[isin(frame["answer_id"], ratings["answer_id"])].reset_index(drop=True)
    if frame.empty:
        return None, [f"residuals ({scale}): no answer has both a judge {judge_col} and a human {label_col}"]
    scores, rater_level, rule = rule_scores(data, ratings, label_col, opts)
    human = scores.reindex(frame["answer_id"]).to_numpy(dtype=float)
    common: dict[str, Any] = {
        "scale": scale,
        "weights": frame["weight"].to_numpy(dtype=float),
        "strata": _strata(frame),
        "rater_level": rater_level,
        "answer_ids": frame["answer_id"].to_numpy(),
        "rule": rule,
        "interval": opts.interval,
        "level": opts.level,
    }
    judge = frame[judge_col].to_numpy(dtype=float)
    fams = frame["family"].astype(str).to_numpy()
    tasks = frame["cluster"].astype(str).to_numpy()
    reason = _no_gap_reason(data.judge_family, sorted(set(fams)))
    gap: SelfPreferenceGap | None = None
    gap_estimate: Estimate | None = None

    def compute(**options: Any) -> tuple[dict[str, Estimate], Estimate | None]:
        if reason is None:
            return residuals_and_gap(judge, human, fams, tasks, own_family=str(data.judge_family),
                                     provenance=data.provenance, **options)
        return family_residuals(judge, human, fams, tasks, **options), None

    estimates, gap_estimate = compute(**common)
    if rule == "model":
        # The model's scores move together when its fit moves: refit on task resamples and widen.
        design, design_gap = compute(**{**common, "interval": "panel"})
        sd = model_refit_spread(rater_level, answer_ids=frame["answer_id"].to_numpy(), judge=judge, family=fams,
                                task=tasks, categories=model_categories(str(rubric.scale), label_col),
                                own_family=None if reason else str(data.judge_family), weights=common["weights"],
                                strata=common["strata"], scale=scale, n_refits=MODEL_REFITS, seed=opts.seed)
        estimates = {f: with_model_variance(e, design[f], sd[f], MODEL_REFITS) for f, e in estimates.items()}
        if gap_estimate is not None and design_gap is not None:
            gap_estimate = with_model_variance(gap_estimate, design_gap, sd["gap"], MODEL_REFITS)
    if gap_estimate is not None:
        gap = SelfPreferenceGap.from_estimate(_in_points(gap_estimate, rubric, scale))
    families = {fam: FamilyResidual.from_estimate(fam, _in_points(est, rubric, scale))
                for fam, est in estimates.items()}
    units = next(iter(families.values())).units
    section = ResidualSection(scale, units, families, gap, reason, len(frame))
    return section, [f"self-preference gap ({scale}): {reason}"] if reason else []


def _in_points(est: Estimate, rubric: Rubric, scale: ResidualScale) -> Estimate:
    """A score residual on a declared scale, in its points ("scale points (0-2)"); others as they are."""
    if scale != "score" or rubric.declared_scale is None:
        return est
    return dataclasses.replace(est, units=rubric.declared_scale.units)


def _section_in_points(
    section: ResidualSection | None, rubric: Rubric, scale: ResidualScale
) -> ResidualSection | None:
    """An (active) score section on a declared scale, in its points; any other as it is."""
    if section is None or scale != "score" or rubric.declared_scale is None:
        return section
    units = rubric.declared_scale.units
    families = {f: dataclasses.replace(r, units=units) for f, r in section.families.items()}
    gap = None if section.gap is None else dataclasses.replace(section.gap, units=units)
    return dataclasses.replace(section, units=units, families=families, gap=gap)


def _strata(frame: pd.DataFrame) -> np.ndarray | None:
    """The design strata of the analysed answers (``None``: no design, a simple random sample)."""
    if frame["stratum"].isna().all():
        return None
    return frame["stratum"].astype(str).to_numpy()


def _no_gap_reason(own: str | None, present: list[str]) -> str | None:
    """Why the families present allow no self-preference gap (``None``: they allow one)."""
    if own is None:
        return ("the run records no judge family, so there is no 'own' family: pass --judge-family FAMILY to "
                "`judgelab calibrate` (imported judgements: or add a judge_family column to the file; a judge spec: "
                "[judge] family)")
    if own not in present:
        return f"no labelled answers from the judge's own family {own!r} (families: {present})"
    if len(present) < 2:
        return "only one family has labelled answers"
    return None


def kappa_rows(
    data: CalibrationData, analysis: pd.DataFrame, opts: ReportOptions
) -> tuple[list[KappaRow], list[str]]:
    """Cohen's kappa, judge vs the raters' majority (the adjudicated label under that rule), overall and per family.

    Pass verdicts always; on a likert5 rubric judged in likert5, the overall score too
    (unweighted and quadratic-weighted).
    """
    if analysis.empty:
        return [], [_NO_KAPPA]
    rows: list[KappaRow] = []
    reasons: list[str] = []
    specs: list[tuple[str, str, str, list[Any], Literal["quadratic"] | None]] = [
        ("pass verdict", "pass", "pass", [0, 1], None)
    ]
    scale = data.rubric.scale
    if scale == "likert5" and data.judge_format == "likert5":
        levels = [1, 2, 3, 4, 5]
        specs += [("overall score", "value", "overall", levels, None),
                  ("overall score", "value", "overall", levels, "quadratic")]
    declared = data.rubric.declared_scale
    if declared is not None and data.judge_format == scale:
        # A declared scale's categories are its levels, numbered 0..k-1 (0-10 by 0.5 has 21).
        levels = list(range(len(declared.levels)))
        specs += [("overall score", "value", "overall", levels, None),
                  ("overall score", "value", "overall", levels, "quadratic")]
    for what, judge_col, label_col, cats, weights in specs:
        frame = analysis[analysis[judge_col].notna()]
        ratings = _ratings(data, list(frame["answer_id"]), label_col, opts)
        if ratings.empty:
            continue
        if opts.human_rule == "dawid-skene":
            major = rule_scores(data, ratings, label_col, opts, kind="mode")[0]
        else:
            major = human_scores(ratings, rule="majority", score_col="score", people_col="people").scores
        frame = frame[isin(frame["answer_id"], major.index)]
        judge = _categories(frame[judge_col].to_numpy(dtype=float), declared if judge_col == "value" else None)
        human = _categories(major.reindex(frame["answer_id"]).to_numpy(dtype=float),
                            declared if judge_col == "value" else None)
        fam = frame["family"].astype(str).to_numpy()
        tasks = frame["cluster"].astype(str).to_numpy()
        w = frame["weight"].to_numpy(dtype=float)
        tied = tied_majorities(ratings).reindex(frame["answer_id"]).fillna(False).to_numpy(dtype=bool)
        if opts.human_rule == "dawid-skene":
            tied = np.zeros(len(frame), bool)  # the model's mode, not a vote: no tie was broken by rule
        for scope in ["all", *sorted(set(fam))]:
            sel = np.ones(len(fam), bool) if scope == "all" else fam == scope
            if not sel.any():
                continue
            if not w[sel].sum() > 0:
                reasons.append(f"kappa ({what}, {scope}): the design gives these answers zero total weight")
                continue
            result = design_kappa(
                judge[sel], human[sel], weights=weights, labels=cats, sample_weight=w[sel], clusters=tasks[sel],
                level=opts.level,
            )
            rows.append(KappaRow(scope, what, result, ties_to_lower=int(tied[sel].sum())))
    return rows, reasons if rows else [*reasons, _NO_KAPPA]


def _categories(values: np.ndarray, scale: FormatSpec | None) -> np.ndarray:
    """Kappa's categories: the value rounded, or on a declared scale the nearest level's index.

    A mean of several raters, or a judge score mapped linearly, may lie between two levels; it
    counts as the nearer one (kappa needs categories).
    """
    if scale is None:
        return values.round().astype(int)
    return np.clip(np.round((values - scale.low) / (scale.step or 1.0)), 0, len(scale.levels) - 1).astype(int)


def tied_majorities(ratings: pd.DataFrame) -> pd.Series:
    """Per answer: did its raters' most frequent category tie (so the lower one was taken)?

    An annotator mean (``people`` above 1) counts as that many votes, as in the majority itself.
    """
    keys = ["answer_id", "score"]
    counts = ratings.groupby(keys)["people"].sum() if "people" in ratings else ratings.groupby(keys).size()
    top = counts.groupby(level="answer_id").transform("max")
    return (counts == top).groupby(level="answer_id").sum() > 1


def alphas(data: CalibrationData, opts: ReportOptions) -> tuple[dict[str, Estimate], list[str]]:
    """Krippendorff's alpha among the raters, on the overall score and the pass verdict.

    Raters only: an adjudicated label is never a rater's, whatever the human rule.
    """
    out: dict[str, Estimate] = {}
    reasons: list[str] = []
    labels = data.labels
    if data.annotator_means:
        # A mean of several people is not one rater's rating: agreement among raters leaves it out.
        keys = list(zip(labels["rater_id"].astype(int), labels["answer_id"].astype(str), strict=True))
        mean = np.array([k in data.annotator_means for k in keys], dtype=bool)
        labels = labels[~mean]
        reasons.append(f"Krippendorff's alpha: {int(mean.sum())} label(s) that are already the mean of several "
                       "people (n_raters above 1) are left out: alpha is agreement among single raters")
    # A declared scale is ordinal (its levels are ordered; the distances between them are not promised).
    overall_level = "ordinal" if data.rubric.declared_scale is not None else level_for_scale(data.rubric.scale)
    specs = [("overall score", "overall", overall_level), ("pass verdict", "pass", "nominal")]
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


def ppi_rows(data: CalibrationData, analysis: pd.DataFrame, opts: ReportOptions) -> tuple[list[PPIRow], list[str]]:
    """Per family, the prediction-powered pass rate beside the human-only one.

    Both under the labels' design (:func:`judgelab.calibration.stats.design_ppi_mean`,
    :func:`judgelab.calibration.stats.design_mean`): the judge's pass rate on every judged answer of the
    family plus the (design-weighted) mean human correction on the labelled ones; λ is
    power-tuned (PPI++) without design weights and 1 with them.
    """
    if data.judge_format is None:
        return [], ["PPI: the run has no pointwise judgements of original answers"]
    judged = first_judgement(data.pointwise, data.judge_format)
    judged = judged[judged["pass"].notna()]
    if judged.empty:
        return [], [f"PPI: judgements in {data.judge_format} carry no pass verdict under this rubric"]
    labelled = analysis[analysis["pass"].notna()]
    ratings = _ratings(data, list(labelled["answer_id"]), "pass", opts)
    if ratings.empty:
        return [], ["PPI: no human pass verdicts"]
    scores, rater_table, _ = rule_scores(data, ratings, "pass", opts)
    labelled = labelled[isin(labelled["answer_id"], scores.index)]
    weighted = not np.allclose(labelled["weight"], 1.0) if len(labelled) else False
    rows: list[PPIRow] = []
    reasons: list[str] = []
    for fam in sorted(set(judged["family"].astype(str))):
        lab = labelled[labelled["family"].astype(str) == fam].reset_index(drop=True)
        pool = judged[judged["family"].astype(str) == fam]
        n_unlabelled = int((~isin(pool["answer_id"], lab["answer_id"])).sum())
        if lab.empty:
            reasons.append(f"PPI ({fam}): no human labels on this family")
            continue
        if n_unlabelled == 0:
            reasons.append(f"PPI ({fam}): every judged answer is labelled, so the judge adds nothing")
            continue
        if weighted and not lab["weight"].sum() > 0:
            reasons.append(f"PPI ({fam}): the design gives this family's labelled answers zero total weight")
            continue
        y = scores.reindex(lab["answer_id"]).to_numpy(dtype=float)
        position = pd.Series(np.arange(len(lab)), index=lab["answer_id"])
        rater_level = rater_table[isin(rater_table["answer"], lab["answer_id"])]
        rater_level = rater_level.assign(answer=rater_level["answer"].map(position).to_numpy())
        strata = _strata(lab)
        common: dict[str, Any] = {"weights": lab["weight"].to_numpy(dtype=float), "strata": strata,
                                  "rater_level": rater_level, "interval": opts.interval, "level": opts.level}
        est = design_ppi_mean(
            y, lab["pass"].to_numpy(dtype=float), pool["pass"].to_numpy(dtype=float),
            clusters=(lab["cluster"].astype(str).to_numpy(), _pool_clusters(pool, lab)),
            lam=1.0 if weighted else None, **common,
        )
        human_only = design_mean(y, clusters=lab["cluster"].astype(str).to_numpy(), **common)
        rows.append(PPIRow(fam, _percent(est), _percent(human_only), int(y.size), n_unlabelled))
    return rows, reasons


def _pool_clusters(pool: pd.DataFrame, lab: pd.DataFrame) -> np.ndarray:
    """The pool answers' clusters, matching the labelled answers' (task, or answer when unpaired)."""
    unpaired = bool((lab["cluster"].astype(str) != lab["task_id"].astype(str)).any())
    return (pool["answer_id"] if unpaired else pool["task_id"]).astype(str).to_numpy()


def _percent(est: Estimate) -> Estimate:
    keep = ("lam", "n_pool", "effective_n", "reason", "se", "df", "interval", "scope", "unreliable")
    extra = {k: (100 * v if k == "se" else v) for k, v in est.extra.items() if k in keep}
    return Estimate(100 * est.estimate, 100 * est.ci_low, 100 * est.ci_high, est.n, est.method,
                    "percent", est.level, extra)
