"""The human rule ``dawid-skene``: a model of the raters gives each answer its human score.

Dawid and Skene's model (:func:`judgelab.calibration.stats.dawid_skene`) is fitted to every rater's
current labels of the rubric, once for the pass verdict and once for the overall score (the
rubric's levels: two on ``binary``, five on ``likert5``), with one confusion matrix per rater and
the true levels' shares (class priors) per model family, so that a family's mean posterior is
unbiased for its true mean and the gap is not pulled towards zero by a pooled prior. It is read
as follows:

* **Residuals, the gap, PPI and the format diagnostics** use each answer's *posterior mean* on
  the scale (for pass verdicts: the posterior probability of a pass). It is what the residual
  needs: averaged over answers, judge minus posterior mean estimates judge minus the true label
  when the model holds, where a posterior mode would round every uncertain answer to one side.
* **Kappa** needs a category: the *posterior mode* (a tie to the lower category).
* **Intervals.** The task resampling carries each answer's posterior as it carries a mean of
  raters. For "raters like these" the raters' labels still give the spread of their leniency
  and each rater's share of the estimate is the mean rule's (``1/m`` per label): the model
  corrects part of a panel's leniency, so this errs wide. The fit itself moves every answer's
  score at once, which the linearised variance misses: the residuals and the gap refit the model
  on :data:`MODEL_REFITS` task resamples and add the spread beyond the design part
  (:mod:`judgelab.calibration.stats._model_variance`); ``bench/rater_model.py`` measures the coverage.
  PPI and an active design's figures do not have this term yet.

``numeric100`` is refused: a 101x101 confusion matrix per rater cannot be estimated from a
panel's labels, and binning the scale would be a choice the report should not make silently.
"""

from __future__ import annotations

import pandas as pd

from judgelab.calibration.calibrate._load import CalibrationData
from judgelab.calibration.stats import RaterModel, dawid_skene, human_scores
from judgelab.labeler.errors import InputError
from judgelab.labeler.scales import format_spec

__all__ = ["COLUMN_NAMES", "MODEL_REFITS", "fit_rater_models", "model_categories", "model_human_scores"]

MODEL_REFITS = 100
"""Task resamples the model is refitted on for its own variance in the residuals and the gap."""

COLUMN_NAMES: dict[str, str] = {"pass": "pass verdict", "overall": "overall score"}
"""The label column each model is fitted to, and its name in the report."""

MAX_LEVELS = 11
"""The most levels a scale may have for the model: a confusion matrix per rater has levels^2
cells, and a rater's few dozen labels cannot fill more (0-10 by 1 is the largest grid taken)."""


def fit_rater_models(data: CalibrationData) -> dict[str, RaterModel]:
    """Fit the model to the raters' current pass verdicts and overall scores of the rubric.

    Args:
        data: The loaded run (its :attr:`CalibrationData.labels`: raters only, never an adjudicator).

    Returns:
        ``{"pass": model, "overall": model}`` (``"overall"`` left out on a binary rubric, where it is
        the pass verdict; a column without labels is left out).

    Raises:
        InputError: On a scale the model cannot take (``numeric100``), or when no answer has
            labels from two raters (then a rater's confusion cannot be told from the answers').
    """
    scale = str(data.rubric.scale)
    if not 2 <= len(_levels(scale)) <= MAX_LEVELS:
        raise InputError(
            f"the human rule 'dawid-skene' estimates each rater's confusion between the rubric's levels; the rubric "
            f"{data.rubric.rubric_id!r} is on the {scale} scale ({_describe(scale)}), too many levels to estimate "
            "a confusion matrix per rater from their labels",
            fix=f"use --human-rule mean or majority with this rubric, or label on a scale of at most {MAX_LEVELS} "
                "levels (binary, likert5 or a declared grid).",
        )
    # A label that is already the mean of several people is not one rater's answer on the grid.
    single = [(int(r), str(a)) not in data.annotator_means
              for r, a in zip(data.labels["rater_id"], data.labels["answer_id"], strict=True)]
    labels = data.labels[single]
    out: dict[str, RaterModel] = {}
    columns = ["pass"] if scale == "binary" else ["pass", "overall"]
    for column in columns:
        rows = labels[labels[column].notna()]
        if rows.empty:
            continue
        try:
            out[column] = dawid_skene(rows["answer_id"].astype(str), rows["rater_id"].astype(str),
                                      rows[column].astype(float), categories=model_categories(scale, column),
                                      groups=rows["family"].astype(str))
        except ValueError as exc:
            raise InputError(
                f"the human rule 'dawid-skene' cannot be fitted to the {COLUMN_NAMES[column]}s: {exc}",
                fix="have some answers labelled by two or more raters (a design with overlap), or use "
                    "--human-rule mean.",
            ) from exc
    return out


def model_categories(scale: str, column: str) -> list[float]:
    """The model's categories: 0/1 for pass verdicts, the rubric's levels for the overall score."""
    return [0.0, 1.0] if column == "pass" else list(_levels(scale))


def _levels(scale: str) -> tuple[float, ...]:
    return format_spec(scale).levels


def _describe(scale: str) -> str:
    levels = _levels(scale)
    return f"{len(levels)} levels" if levels else "scores without a grid"


def model_human_scores(
    ratings: pd.DataFrame, model: RaterModel, *, kind: str = "mean"
) -> tuple[pd.Series, pd.DataFrame]:
    """The model's human score of each answer in ``ratings``, and the raters' rows behind it.

    Args:
        ratings: ``answer_id, rater_id, score``: the labels of the answers wanted.
        model: The model fitted to the same column.
        kind: ``"mean"`` (posterior mean on the scale) or ``"mode"`` (most probable category).

    Returns:
        The score per answer (index: answer id) and the per-rater table (``answer``, ``rater``,
        ``score``) for the raters' part of the intervals.
    """
    value = model.mean() if kind == "mean" else model.mode()
    per_item = pd.Series(value, index=pd.Index([str(i) for i in model.items]))
    hs = human_scores(ratings, rule="mean", score_col="score",
                      people_col="people" if "people" in ratings.columns else None)
    ids = [str(a) for a in hs.scores.index]
    scores = pd.Series(per_item.reindex(ids).to_numpy(dtype=float), index=hs.scores.index, name="human_score")
    if scores.isna().any():
        missing = scores.index[scores.isna()][:3].tolist()
        raise ValueError(f"the rater model has no posterior for answers {missing!r} (fitted on other labels)")
    return scores, hs.ratings
