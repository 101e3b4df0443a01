"""Inter-rater agreement for the Agreement page."""


from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from judgelab.admin._common import display_name
from judgelab.calibration.stats import Estimate
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Rubric
from judgelab.labeler.scales import format_range
from judgelab.labeler.store import ReviewRole

if TYPE_CHECKING:
    pass


# -- agreement -----------------------------------------------------------------------


def label_criteria(frame: pd.DataFrame) -> pd.DataFrame:
    """Expand a ``criteria`` JSON column into one ``crit:<id>`` column per criterion."""
    parsed = [json.loads(c) if isinstance(c, str) and c else {} for c in frame["criteria"]]
    wide = pd.DataFrame(parsed, index=frame.index)
    wide.columns = [f"crit:{c}" for c in wide.columns]
    return frame.join(wide)


@dataclass(frozen=True)
class AgreementReport:
    """Agreement between raters under one rubric version.

    Attributes:
        rubric: The rubric the labels were given under.
        level: Krippendorff level of measurement chosen from the rubric's scale.
        overall: Krippendorff's alpha on the overall score.
        per_criterion: One row per criterion, then one for the pass verdict:
            ``criterion``, ``name``, ``level``, ``alpha``, ``ci_low``, ``ci_high``,
            ``n`` (units rated by two or more raters), ``reason`` (why ``alpha`` is
            ``nan``).
        kappas: Cohen's kappa per rater pair: ``rater_a``, ``rater_b`` (display
            names), ``kappa``, ``ci_low``, ``ci_high``, ``n``, ``percent_agreement``,
            ``reason``.
        kappa_basis: What the kappas compare, in words.
        leniency: Per rater: ``rater``, ``simulated``, ``leniency`` (mean of own
            overall score minus the others' mean on shared answers), ``ci_low``,
            ``ci_high``, ``n``, ``stands_out``, ``threshold``, ``mean_kappa`` (mean
            kappa with every other rater).
        units: What ``leniency`` is measured in.
        standouts: One sentence per rater whose leniency stands out.
        n_labels: Current, scored labels the report rests on.
        n_answers: Answers with at least one such label.
        n_raters: Raters with at least one such label.
        n_flagged: Current labels left out because the rater flagged the answer unrateable.
    """

    rubric: Rubric
    level: str
    overall: Estimate
    per_criterion: pd.DataFrame
    kappas: pd.DataFrame
    kappa_basis: str
    leniency: pd.DataFrame
    units: str
    standouts: list[str]
    n_labels: int
    n_answers: int
    n_raters: int
    n_flagged: int


def reliability_matrix(
    labels: pd.DataFrame, value_col: str, *, rater_col: str = "rater_id",
    item_col: str = "answer_id",
) -> tuple[pd.DataFrame, list[str]]:
    """Raters x answers matrix of ``value_col`` (``nan`` = not rated) and each answer's task.

    Returns:
        ``(matrix, tasks)``: the matrix's columns are answers in sorted order and
        ``tasks`` lists the task of each column (the cluster for bootstraps).
    """
    rows = labels.dropna(subset=[value_col])
    matrix = rows.pivot(index=rater_col, columns=item_col, values=value_col).astype(float)
    matrix = matrix.sort_index(axis=0).sort_index(axis=1)
    task_of = rows.groupby(item_col)["task_id"].first()
    return matrix, [str(task_of[a]) for a in matrix.columns]


_KappaWeights = Literal["linear", "quadratic"] | None


def _kappa_setup(scale: str) -> tuple[str, _KappaWeights, str]:
    """Which column kappa compares, its weighting and the basis sentence for a scale."""
    if scale == "binary":
        return "overall", None, "unweighted kappa on the accept/reject score"
    if scale == "likert5":
        return "overall", "quadratic", "quadratic-weighted kappa on the 1–5 overall score"
    # Kappa treats each of 101 values as its own category and weighs distance by rank
    # among the values seen, which is meaningless for a 0-100 score: compare verdicts.
    return "passed", None, "unweighted kappa on the pass verdict (0–100 scores are not categories)"


def agreement_report(
    store: ReviewRole,
    rubric_id: str | None = None,
    version: int | None = None,
    *,
    include_unversioned: bool = True,
    n_resamples: int = 1000,
    seed: int = 0,
) -> AgreementReport:
    """Agreement between raters, from every rater's current label.

    Krippendorff's alpha (overall, per criterion, pass verdict), Cohen's kappa per rater
    pair and each rater's leniency.

    The level of measurement follows the rubric's scale (binary → nominal, likert5 →
    ordinal, numeric100 → interval); the pass verdict is always nominal. Each rater
    counts once per answer: a label under the rubric wins over an imported
    unversioned one, then the newest. Intervals
    are percentile bootstraps that resample tasks, so answers to one task move
    together. Labels flagged unrateable carry no score and are left out (counted in
    ``n_flagged``).

    Args:
        store: The project store.
        rubric_id: The rubric (default: the newest).
        version: Its version (default: the newest of ``rubric_id``).
        include_unversioned: Count labels with no rubric (imported) under this rubric.
        n_resamples: Bootstrap resamples per figure.
        seed: Seed for the bootstraps, so the page shows the same figures on reload.

    Raises:
        InputError: No such rubric.
    """
    rubric, labels = load_agreement_data(store, rubric_id, version, include_unversioned=include_unversioned)
    return build_agreement(rubric, labels, n_resamples=n_resamples, seed=seed)


def load_agreement_data(
    store: ReviewRole, rubric_id: str | None = None, version: int | None = None, *, include_unversioned: bool = True,
) -> tuple[Rubric, pd.DataFrame]:
    """What :func:`agreement_report` reads from the store: the rubric and the current labels.

    Two short units of work; the figures are :func:`build_agreement` of them, a pure function
    the app runs in its worker process (:func:`judgelab.admin.agreement_kept`).

    Raises:
        InputError: No such rubric.
    """
    rubric = store.rubric(rubric_id, version)
    if rubric is None:
        raise InputError(
            "no rubric to compute agreement under" if rubric_id is None
            else f"no rubric {rubric_id!r}" + (f" version {version}" if version else ""),
            fix="import a rubric on the Data page or with `judgelab import rubric FILE`.",
        )
    labels = store.current_labels(
        rubric.rubric_id, rubric.version, include_unversioned=include_unversioned
    )
    return rubric, labels


def build_agreement(
    rubric: Rubric, labels: pd.DataFrame, *, n_resamples: int = 1000, seed: int = 0
) -> AgreementReport:
    """:func:`agreement_report`'s figures from the rubric and its current labels (no store).

    Args:
        rubric: The rubric the labels were given under.
        labels: :meth:`~judgelab.labeler.store.Store.current_labels` under it. Annotator means
            (``n_raters`` above 1) are left out: they are no one rater's label.
        n_resamples: Bootstrap resamples per figure.
        seed: Seed for the bootstraps.
    """
    from judgelab.calibration.stats import (
        krippendorff_alpha,
        level_for_scale,
        pairwise_kappas,
        rater_leniency,
    )

    level = level_for_scale(rubric.scale)
    # One label per rater and answer: a rater may hold an imported (unversioned) label
    # and an app label under the rubric for the same answer; the app one is theirs now.
    labels = (
        labels.assign(_versioned=labels["rubric_id"].notna())
        .sort_values(["_versioned", "created_at", "label_id"])
        .drop_duplicates(["rater_id", "answer_id"], keep="last")
        .drop(columns="_versioned")
    )
    # A label that is already the mean of several people (imported with n_raters above 1) is not
    # one rater's: agreement among raters leaves it out, as the calibration report's alpha does.
    if "n_raters" in labels.columns:
        labels = labels[pd.to_numeric(labels["n_raters"]).fillna(1) <= 1]
    flagged = labels["flag_reason"].notna()
    labels = label_criteria(labels[~flagged & labels["overall"].notna()].reset_index(drop=True))
    labels["passed"] = labels["passed"].astype("float")
    names = {
        int(r): display_name(str(n), bool(s))
        for r, n, s in zip(labels["rater_id"], labels["rater_name"], labels["simulated"],
                           strict=True)
    }
    rng = np.random.default_rng(seed)

    def alpha(column: str, lvl: str) -> Estimate:
        if column not in labels.columns:
            return krippendorff_alpha(np.empty((0, 0)), level=lvl)  # type: ignore[arg-type]
        matrix, tasks = reliability_matrix(labels, column)
        return krippendorff_alpha(
            matrix.to_numpy(), level=lvl, clusters=tasks,  # type: ignore[arg-type]
            n_resamples=n_resamples, rng=rng,
        )

    overall = alpha("overall", level)
    rows = []
    for crit in rubric.criteria:
        est = alpha(f"crit:{crit.criterion_id}", level)
        rows.append(_alpha_row(crit.criterion_id, crit.name, level, est))
    rows.append(_alpha_row("passed", "pass verdict", "nominal", alpha("passed", "nominal")))
    per_criterion = pd.DataFrame(rows)

    kappa_col, weights, basis = _kappa_setup(rubric.scale)
    kappas = pairwise_kappas(
        labels.dropna(subset=[kappa_col]), value_col=kappa_col, weights=weights,
        n_resamples=n_resamples, rng=rng,
    )
    leniency = rater_leniency(
        labels, value_col="overall", cluster_col="task_id", n_resamples=n_resamples, rng=rng
    )
    leniency = _with_mean_kappa(leniency, kappas)
    leniency.insert(1, "simulated", [bool(labels.loc[labels["rater_id"] == r, "simulated"].iloc[0])
                                     for r in leniency["rater"]])
    units = _leniency_units(rubric.scale)
    standouts = [
        _standout_sentence(names[int(r["rater"])], float(r["leniency"]), float(r["ci_low"]),
                           float(r["ci_high"]), int(r["n"]), units)
        for r in leniency.to_dict("records") if bool(r["stands_out"])
    ]
    leniency["rater"] = [names[int(r)] for r in leniency["rater"]]
    kappas["rater_a"] = [names[int(r)] for r in kappas["rater_a"]]
    kappas["rater_b"] = [names[int(r)] for r in kappas["rater_b"]]
    return AgreementReport(
        rubric=rubric,
        level=level,
        overall=overall,
        per_criterion=per_criterion,
        kappas=kappas,
        kappa_basis=basis,
        leniency=leniency,
        units=units,
        standouts=standouts,
        n_labels=len(labels),
        n_answers=int(labels["answer_id"].nunique()),
        n_raters=int(labels["rater_id"].nunique()),
        n_flagged=int(flagged.sum()),
    )


def _alpha_row(criterion: str, name: str, level: str, est: Estimate) -> dict[str, object]:
    return {
        "criterion": criterion,
        "name": name,
        "level": level,
        "alpha": est.estimate,
        "ci_low": est.ci_low,
        "ci_high": est.ci_high,
        "n": est.n,
        "reason": est.extra.get("reason"),
    }


def _with_mean_kappa(leniency: pd.DataFrame, kappas: pd.DataFrame) -> pd.DataFrame:
    both = pd.concat([
        kappas[["rater_a", "kappa"]].rename(columns={"rater_a": "rater"}),
        kappas[["rater_b", "kappa"]].rename(columns={"rater_b": "rater"}),
    ])
    mean = both.groupby("rater")["kappa"].mean()
    out = leniency.copy()
    out["mean_kappa"] = [float(mean.get(r, math.nan)) for r in out["rater"]]
    return out


def _leniency_units(scale: str) -> str:
    if scale == "binary":
        return "accept rate (0–1)"
    lo, hi = format_range(scale)
    return f"points on the {lo:g}–{hi:g} scale"


def _standout_sentence(
    name: str, effect: float, lo: float, hi: float, n: int, units: str
) -> str:
    direction = "more lenient" if effect > 0 else "stricter"
    return (
        f"{name} is {direction} than the other raters: {effect:+.2f} {units} on average "
        f"(95% CI {lo:+.2f} to {hi:+.2f}, {n} shared answers)."
    )
