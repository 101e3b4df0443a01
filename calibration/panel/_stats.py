"""A panel of judges read against the same human scores: bias per judge, the matrix, the juries.

Input is one long table, one row per (judge, answer): the judge's score, the answer's human
score (raters collapsed), and who wrote the answer and who the judge is. Everything here is a
pure function of that table.

* **Self- and family-bias.** Per judge, OLS of its score on an intercept, the human score,
  ``own`` (the answer was written by the judge's own model) and ``sibling`` (by another model of
  the judge's family). Controlling for the human score means a family whose answers are really
  better is not counted as favoured; the intercept and slope absorb the judge's leniency and how
  it tracks people. ``self_bias`` is the ``own`` coefficient, ``family_bias`` the ``sibling``
  one, both against answers of other families of the same human score, in the rubric's scale
  points. Intervals: CR1 cluster-robust over tasks (:mod:`judgelab.calibration.panel._ols`). The human
  score is itself noisy (a mean of few raters): its slope is attenuated, and where families
  differ in true quality, the unreliable share of that difference can leak into the biases (the
  published pooled estimator, :func:`judgelab.calibration.panel.pooled_self_bias`, shares this).
* **Simple gap.** Mean residual (judge − human) on the judge's family minus on the others, as
  ``judgelab calibrate`` reports it, with the same task-clustered interval.
* **Matrix.** Mean residual per judge and answer family.
* **Juries.** ``jury (mean)``: the mean of every judge's score per answer; ``jury (other
  families)``: for each answer the mean of the judges not of the answer's family (an answer
  whose family is every judge's has none and is left out of that jury). Its judges change with
  the answer's family, so when judges differ in leniency its per-family residuals and gaps mix
  that leniency in: read them beside each judge's mean residual.
* **Agreement.** Weighted (quadratic) Cohen's kappa by :func:`judgelab.calibration.stats.design_kappa`
  (sklearn's ``cohen_kappa_score`` point, jackknife over tasks) and the residual spread (the
  standard deviation of judge − human, linearised task-clustered interval).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import special

from judgelab.calibration.panel._ols import clustered_mean, clustered_ols
from judgelab.calibration.stats import Estimate, design_kappa
from judgelab.labeler.scales import FORMAT_SPECS, format_spec, is_pointwise

_NAN = float("nan")
COLUMNS = ("judge", "judge_model", "judge_family", "answer_id", "task_id", "answer_model", "answer_family",
           "score", "human")
"""The columns :func:`panel_analysis` reads."""
JURY_MEAN = "jury (mean)"
JURY_OTHERS = "jury (other families)"
#: Above this many categories kappa reads the scale in bins of ten points (else its jackknife
#: holds a confusion matrix of 101 x 101 cells per task).
_MAX_KAPPA_CATEGORIES = 21


@dataclass(frozen=True)
class JudgeBias:
    """One judge's self- and family-bias, with the simple gap beside them.

    Attributes:
        judge: The judge's name in the panel (its run id).
        judge_model: The judge's model.
        judge_family: The judge's family (``None`` when not recorded).
        n: Answers the judge scored that have a human score.
        self_bias: The ``own`` coefficient, or ``None`` (then ``self_reason`` says why).
        family_bias: The ``sibling`` coefficient, or ``None`` (then ``family_reason``).
        gap: Mean residual on its own family minus on the others, or ``None`` (``gap_reason``).
        slope: How many scale points the judge moves per human scale point.
        self_reason: Why there is no self-bias row.
        family_reason: Why there is no family-bias row.
        gap_reason: Why there is no gap.
    """

    judge: str
    judge_model: str
    judge_family: str | None
    n: int
    self_bias: Estimate | None
    family_bias: Estimate | None
    gap: Estimate | None
    slope: Estimate | None
    self_reason: str | None = None
    family_reason: str | None = None
    gap_reason: str | None = None


@dataclass(frozen=True)
class Agreement:
    """How one judge (or jury) agrees with people.

    Attributes:
        judge: The judge's or jury's name.
        n: Answers compared.
        mean_residual: Mean judge − human (leniency), task-clustered interval.
        spread: Standard deviation of judge − human, task-clustered interval.
        kappa: Quadratic-weighted kappa against the humans' rounded score, or ``None``.
        kappa_reason: Why there is no kappa.
        spread_vs_best: This judge's residual spread minus the judge with the smallest one, on the
            answers both scored (paired, task-clustered); ``None`` for that judge and the juries.
    """

    judge: str
    n: int
    mean_residual: Estimate
    spread: Estimate
    kappa: Estimate | None
    kappa_reason: str | None = None
    spread_vs_best: Estimate | None = None


@dataclass(frozen=True)
class JuryGap:
    """One family's residual minus the other families', for each judge of that family and each jury.

    Attributes:
        family: The answer family.
        judges: The gap of each panel judge of this family (their own-family gap).
        juries: The same gap read off each jury.
    """

    family: str
    judges: dict[str, Estimate]
    juries: dict[str, Estimate]


@dataclass(frozen=True)
class PanelResult:
    """Everything ``judgelab panel`` reports.

    Attributes:
        scale: The rubric's scale both judges and people scored on.
        units: Units of every residual and bias.
        judges: Self- and family-bias per judge.
        matrix: Mean residual per (judge or jury, answer family).
        agreement: Agreement with people per judge and jury.
        jury_gaps: Per answer family with a judge in the panel, its judges' and the juries' gaps.
        best_kappa: The judge (not a jury) with the highest kappa.
        best_spread: The judge with the smallest residual spread.
        notes: What was left out and why.
    """

    scale: str
    units: str
    judges: tuple[JudgeBias, ...]
    matrix: dict[str, dict[str, Estimate]]
    agreement: tuple[Agreement, ...]
    jury_gaps: tuple[JuryGap, ...]
    best_kappa: str | None
    best_spread: str | None
    notes: tuple[str, ...] = field(default_factory=tuple)


def panel_analysis(frame: pd.DataFrame, *, scale: str, level: float = 0.95, kappa: bool = True) -> PanelResult:
    """Read a panel of judges against the human scores.

    Args:
        frame: One row per (judge, answer) with :data:`COLUMNS`; ``score`` and ``human`` on ``scale``.
        scale: ``binary``, ``likert5`` or ``numeric100``.
        level: Confidence level of every interval.
        kappa: Compute kappa (the slowest part; off in the speed bench's second pass).

    Returns:
        A :class:`PanelResult`.

    Raises:
        ValueError: On missing columns, an unknown scale, or no rows.
    """
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"panel_analysis: missing columns {missing}")
    if scale not in ("binary", "likert5", "numeric100") and not is_pointwise(scale):
        raise ValueError(f"panel_analysis: unknown scale {scale!r}")
    data = frame[frame["score"].notna() & frame["human"].notna()].reset_index(drop=True)
    if data.empty:
        raise ValueError("panel_analysis: no answer has both a judge score and a human score")
    units = format_spec(scale).units
    notes: list[str] = []
    judges_meta = data.drop_duplicates("judge").set_index("judge")[["judge_model", "judge_family"]]
    biases = tuple(judge_bias(data[data["judge"] == j], str(j), units=units, level=level) for j in judges_meta.index)
    juries = _juries(data)
    rows = pd.concat([data, juries], ignore_index=True)
    matrix = {str(name): _family_row(g, units, level) for name, g in rows.groupby("judge", sort=False)}
    agreement = tuple(_agreement(g, str(name), scale, units, level, kappa)
                      for name, g in rows.groupby("judge", sort=False))
    jury_gaps = _jury_gaps(rows, biases, units, level)
    solo = [a for a in agreement if a.judge not in (JURY_MEAN, JURY_OTHERS)]
    with_kappa = [a for a in solo if a.kappa is not None and math.isfinite(a.kappa.estimate)]
    best_kappa = max(with_kappa, key=lambda a: a.kappa.estimate).judge if with_kappa else None  # type: ignore[union-attr]
    best_spread = min(solo, key=lambda a: a.spread.estimate).judge if solo else None
    if best_spread is not None:
        agreement = tuple(_versus_best(a, rows, best_spread, units, level) for a in agreement)
    n_mean = int((juries["judge"] == JURY_MEAN).sum())
    n_others = int((juries["judge"] == JURY_OTHERS).sum())
    if n_others < n_mean:
        notes.append(f"jury (other families) leaves out {n_mean - n_others} answer(s) whose family is every judge's")
    return PanelResult(scale, units, biases, matrix, agreement, jury_gaps, best_kappa, best_spread, tuple(notes))


def judge_bias(rows: pd.DataFrame, judge: str, *, units: str, level: float = 0.95) -> JudgeBias:
    """One judge's self- and family-bias regression and simple gap.

    Args:
        rows: The judge's rows of the panel table (:data:`COLUMNS`), scored and human-scored.
        judge: The judge's name in the panel.
        units: Units of the scores.
        level: Confidence level.
    """
    model = str(rows["judge_model"].iloc[0])
    fam_value = rows["judge_family"].iloc[0]
    family = None if fam_value is None or (isinstance(fam_value, float) and math.isnan(fam_value)) else str(fam_value)
    y = rows["score"].to_numpy(dtype=float)
    human = rows["human"].to_numpy(dtype=float)
    own = (rows["answer_model"] == model).to_numpy()
    same_family = (rows["answer_family"] == family).to_numpy() if family is not None else np.zeros(len(rows), bool)
    sibling = same_family & ~own
    tasks = rows["task_id"].to_numpy()
    names, cols = ["intercept", "human"], [np.ones(len(rows)), human]
    self_reason = family_reason = None
    if not own.any():
        self_reason = f"the judge's model {model} wrote no answer in the pool, so it has no self-bias"
    elif own.all():
        self_reason = f"every answer is by the judge's model {model}: nothing to compare with"
    else:
        names.append("own")
        cols.append(own.astype(float))
    if family is None:
        family_reason = "the run does not record the judge's family"
    elif not sibling.any():
        family_reason = f"no answer is by another model of the judge's family {family}"
    elif (same_family).all():
        family_reason = f"every answer is of the judge's family {family}: nothing to compare with"
    else:
        names.append("sibling")
        cols.append(sibling.astype(float))
    self_bias = family_bias = slope = None
    try:
        fit = clustered_ols(y, np.column_stack(cols), tasks, names=tuple(names))
    except ValueError as exc:
        self_reason = self_reason or f"regression not possible: {exc}"
        family_reason = family_reason or f"regression not possible: {exc}"
    else:
        what = "judge score on intercept, human score, own model, other model of own family"
        if "own" in names:
            self_bias = fit.estimate("own", units=units, what=f"own-model coefficient of {what}", level=level)
        if "sibling" in names:
            family_bias = fit.estimate("sibling", units=units, what=f"same-family coefficient of {what}", level=level)
        slope = fit.estimate("human", units=f"judge points per human point ({units})",
                             what=f"human-score coefficient of {what}", level=level)
    gap, gap_reason = _gap(rows, family, units, level)
    return JudgeBias(judge, model, family, len(rows), self_bias, family_bias, gap, slope,
                     self_reason, family_reason, gap_reason)


def _gap(rows: pd.DataFrame, family: str | None, units: str, level: float) -> tuple[Estimate | None, str | None]:
    """Mean residual on ``family``'s answers minus on the others, task-clustered."""
    if family is None:
        return None, "the run does not record the judge's family"
    inside = (rows["answer_family"] == family).to_numpy()
    if not inside.any() or inside.all():
        return None, f"the answers are {'all' if inside.all() else 'none'} of family {family}"
    resid = rows["score"].to_numpy(dtype=float) - rows["human"].to_numpy(dtype=float)
    try:
        fit = clustered_ols(resid, np.column_stack([np.ones(len(rows)), inside.astype(float)]),
                            rows["task_id"].to_numpy(), names=("intercept", "gap"))
    except ValueError as exc:
        return None, f"gap not possible: {exc}"
    return fit.estimate("gap", units=units, level=level,
                        what=f"mean residual (judge - human) on family {family} minus on the others"), None


def _juries(data: pd.DataFrame) -> pd.DataFrame:
    """The two juries' rows, in the panel's columns."""
    keys = ["answer_id", "task_id", "answer_model", "answer_family", "human"]
    mean = data.groupby("answer_id", sort=False).agg(score=("score", "mean"))
    others = data[data["judge_family"].astype(object) != data["answer_family"].astype(object)]
    other_mean = others.groupby("answer_id", sort=False).agg(score=("score", "mean"))
    base = data.drop_duplicates("answer_id").set_index("answer_id")[keys[1:]]
    out = []
    for name, scores in ((JURY_MEAN, mean), (JURY_OTHERS, other_mean)):
        part = base.join(scores, how="inner").reset_index()
        out.append(part.assign(judge=name, judge_model=name, judge_family=None))
    return pd.concat(out, ignore_index=True)[list(COLUMNS)]


def _family_row(rows: pd.DataFrame, units: str, level: float) -> dict[str, Estimate]:
    """Mean residual per answer family for one judge or jury."""
    out: dict[str, Estimate] = {}
    for fam, g in rows.groupby("answer_family", sort=True):
        resid = g["score"].to_numpy(dtype=float) - g["human"].to_numpy(dtype=float)
        out[str(fam)] = clustered_mean(resid, g["task_id"].to_numpy(), units=units, level=level,
                                       what=f"mean residual (judge - human) on family {fam}")
    return out


def residual_spread(residuals: npt.ArrayLike, clusters: npt.ArrayLike, *, units: str,
                    level: float = 0.95) -> Estimate:
    """Standard deviation of the residuals with a linearised, task-clustered t interval.

    ``s = √(mean (r − r̄)²)``; its influence values ``ψ_i = ((r_i − r̄)² − s²) / (2 s N)`` are
    summed per cluster and ``V̂ = G/(G − 1) Σ_g z_g²`` (the delta method on the variance, clustered
    as :func:`judgelab.calibration.stats.design_variance` does); t interval with ``G − 1`` df.

    Args:
        residuals: Judge − human per answer.
        clusters: Task per answer.
        units: Units of the residuals.
        level: Confidence level.

    >>> round(residual_spread([1.0, -1.0, 1.0, -1.0], ["a", "b", "c", "d"], units="points").estimate, 3)
    1.0
    """
    r = np.asarray(residuals, dtype=float)
    n = r.size
    s = float(r.std()) if n else _NAN
    codes, uniques = pd.factorize(np.asarray(clusters))
    g = len(uniques)
    if n < 2 or g < 2 or s <= 0:
        return Estimate(s, _NAN, _NAN, n, "standard deviation of judge - human; too few tasks for an interval",
                        units, level)
    psi = ((r - r.mean()) ** 2 - s**2) / (2 * s * n)
    z = np.bincount(codes, weights=psi, minlength=g)
    se = math.sqrt(g / (g - 1) * float((z**2).sum()))
    half = float(special.stdtrit(g - 1, 0.5 + level / 2)) * se
    method = (f"standard deviation of judge - human; linearised variance over {g} task clusters, "
              f"t interval with {g - 1} df")
    return Estimate(s, max(s - half, 0.0), s + half, n, method, units, level, {"se": se, "df": g - 1})


def spread_difference(residuals_a: npt.ArrayLike, residuals_b: npt.ArrayLike, clusters: npt.ArrayLike, *,
                      units: str, level: float = 0.95) -> Estimate:
    """``SD(a) − SD(b)`` of two judges' residuals on the same answers, paired and task-clustered.

    The influence values of the two standard deviations (as in :func:`residual_spread`) are
    subtracted per answer before summing per task, so what the two judges share (a hard task,
    a mislabelled answer) cancels; t interval with ``G − 1`` df.

    >>> round(spread_difference([2.0, -2.0, 2.0, -2.0], [1.0, -1.0, 1.0, -1.0], list("abcd"),
    ...                         units="points").estimate, 3)
    1.0
    """
    a, b = np.asarray(residuals_a, dtype=float), np.asarray(residuals_b, dtype=float)
    codes, uniques = pd.factorize(np.asarray(clusters))
    g, n = len(uniques), a.size
    sa, sb = float(a.std()), float(b.std())
    if n < 2 or g < 2 or sa <= 0 or sb <= 0:
        return Estimate(sa - sb, _NAN, _NAN, n, "difference of residual SDs; too few tasks for an interval", units,
                        level)
    psi = ((a - a.mean()) ** 2 - sa**2) / (2 * sa * n) - ((b - b.mean()) ** 2 - sb**2) / (2 * sb * n)
    z = np.bincount(codes, weights=psi, minlength=g)
    se = math.sqrt(g / (g - 1) * float((z**2).sum()))
    half = float(special.stdtrit(g - 1, 0.5 + level / 2)) * se
    method = (f"difference of residual SDs on the same answers; paired linearised variance over {g} task "
              f"clusters, t interval with {g - 1} df")
    return Estimate(sa - sb, sa - sb - half, sa - sb + half, n, method, units, level, {"se": se, "df": g - 1})


def _versus_best(agreement: Agreement, rows: pd.DataFrame, best: str, units: str, level: float) -> Agreement:
    """The agreement with its spread compared, answer by answer, with the best judge's."""
    if agreement.judge in (best, JURY_MEAN, JURY_OTHERS):
        return agreement
    mine = rows[rows["judge"] == agreement.judge].set_index("answer_id")
    theirs = rows[rows["judge"] == best].set_index("answer_id")
    common = mine.index.intersection(theirs.index)
    diff = spread_difference(mine.loc[common, "score"] - mine.loc[common, "human"],
                             theirs.loc[common, "score"] - theirs.loc[common, "human"],
                             mine.loc[common, "task_id"], units=units, level=level)
    return dataclasses.replace(agreement, spread_vs_best=diff)


def kappa_categories(values: npt.ArrayLike, scale: str) -> tuple[npt.NDArray[np.float64], str]:
    """Scores as kappa's categories: rounded to the scale's step; 0-100 read in bins of ten.

    Returns:
        The categories and the words saying how they were formed.
    """
    v = np.asarray(values, dtype=float)
    if scale == "numeric100":
        return np.clip(np.floor(v / 10.0), 0, 9), "0-100 scores in ten bins of ten points (90-100 the last)"
    if scale not in FORMAT_SPECS:
        # A declared scale: each level is a category, numbered 0..k-1; a mean between levels counts as the nearer.
        spec = format_spec(scale)
        step = spec.step or 1.0
        return (np.clip(np.round((v - spec.low) / step), 0, len(spec.levels) - 1),
                f"scores as the {scale} scale's {len(spec.levels)} levels (nearest level)")
    low, high = FORMAT_SPECS[scale].range  # type: ignore[index]
    return np.clip(np.round(v), low, high), "scores rounded to the scale's whole points"


def _agreement(rows: pd.DataFrame, name: str, scale: str, units: str, level: float, with_kappa: bool) -> Agreement:
    resid = rows["score"].to_numpy(dtype=float) - rows["human"].to_numpy(dtype=float)
    tasks = rows["task_id"].to_numpy()
    mean = clustered_mean(resid, tasks, units=units, level=level, what="mean residual (judge - human)")
    spread = residual_spread(resid, tasks, units=units, level=level)
    if not with_kappa:
        return Agreement(name, len(rows), mean, spread, None, "kappa not computed (--no-kappa)")
    judge_cat, how = kappa_categories(rows["score"], scale)
    human_cat, _ = kappa_categories(rows["human"], scale)
    low, high = ((0, 9) if scale == "numeric100" else FORMAT_SPECS[scale].range  # type: ignore[index]
                 if scale in FORMAT_SPECS else (0, len(format_spec(scale).levels) - 1))
    labels = np.arange(low, high + 1, dtype=float)
    result = design_kappa(judge_cat, human_cat, weights="quadratic", labels=labels, clusters=tasks, level=level)
    kappa = result.kappa
    kappa = Estimate(kappa.estimate, kappa.ci_low, kappa.ci_high, kappa.n, f"{kappa.method}; {how}", kappa.units,
                     level, kappa.extra)
    return Agreement(name, len(rows), mean, spread, kappa, result.reason)


def _jury_gaps(rows: pd.DataFrame, biases: Sequence[JudgeBias], units: str, level: float) -> tuple[JuryGap, ...]:
    """Per family of the panel: its judges' own-family gaps beside each jury's gap for that family."""
    out = []
    for family in sorted({b.judge_family for b in biases if b.judge_family is not None}):
        judges = {b.judge: b.gap for b in biases if b.judge_family == family and b.gap is not None}
        juries: dict[str, Estimate] = {}
        for jury in (JURY_MEAN, JURY_OTHERS):
            gap, _ = _gap(rows[rows["judge"] == jury], family, units, level)
            if gap is not None:
                juries[jury] = gap
        if judges or juries:
            out.append(JuryGap(family, judges, juries))
    return tuple(out)
