"""Loading: judge runs and the people's labels, per answer, on one part of the held-out split.

A run is read the way ``judgelab calibrate`` reads it (:func:`judgelab.calibration.calibrate.load_calibration_data`):
its first parsed pointwise judgement per original answer, on the rubric's scale. The people's
score of an answer is the mean of its raters' current labels (an imported annotator mean weighs
as its number of people); their category (kappa) and pass (agreement) are the majority, a tie
going to the lower.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgelab.calibration.calibrate import CalibrationData, load_calibration_data
from judgelab.calibration.calibrate._load import first_judgement
from judgelab.calibration.loop._split import HELD_OUT, Part, Split, project_split
from judgelab.calibration.stats import human_scores
from judgelab.labeler.errors import InputError
from judgelab.labeler.scales import format_spec
from judgelab.labeler.store import LoopRole


@dataclass(frozen=True)
class RunScores:
    """One judge run's scores of the labelled answers.

    Attributes:
        data: What ``calibrate`` reads of the run.
        frame: One row per labelled original answer the run scored: ``answer_id``, ``task_id``,
            ``family``, ``score``, ``pass``, ``judgement_id``.
    """

    data: CalibrationData
    frame: pd.DataFrame


def people(data: CalibrationData) -> pd.DataFrame:
    """The people's score, majority category and majority pass per labelled answer.

    Returns:
        ``answer_id`` (index), ``human``, ``human_category``, ``human_pass`` (``nan`` without
        pass verdicts), ``n_raters``.
    """
    labels = data.reference_labels("mean")
    scored = labels[labels["overall"].notna()]
    mean = human_scores(scored, rater_col="rater_id", score_col="overall", people_col="n_raters").scores
    major = human_scores(scored, rule="majority", rater_col="rater_id", score_col="overall",
                         people_col="n_raters").scores
    passed = labels[labels["pass"].notna()]
    verdict = human_scores(passed, rule="majority", rater_col="rater_id", score_col="pass",
                           people_col="n_raters").scores
    out = pd.DataFrame({"human": mean, "human_category": major})
    out["human_pass"] = verdict.reindex(out.index)
    out["n_raters"] = scored.groupby("answer_id")["rater_id"].nunique().reindex(out.index)
    out.index.name = "answer_id"
    return out


def run_scores(store: LoopRole, run_id: str) -> RunScores:
    """One run's scores of original pool answers on the rubric's scale.

    Raises:
        InputError: No such run, or it scored on another scale than the rubric's.
    """
    data = load_calibration_data(store, run_id)
    scale = data.rubric.scale
    if data.judge_format != scale:
        raise InputError(
            f"judge run {data.run_id} scored in {data.judge_format or 'no pointwise format'}, the people in {scale}",
            fix="compare runs that scored the answers on the rubric's scale (`judgelab score --labelled`).",
        )
    judged = first_judgement(data.pointwise, scale)
    frame = pd.DataFrame({
        "answer_id": judged["answer_id"].astype(str).to_numpy(),
        "task_id": judged["task_id"].astype(str).to_numpy(),
        "family": judged["family"].astype(str).to_numpy(),
        "score": judged["value"].astype(float).to_numpy(),
        "pass": judged["pass"].astype(float).to_numpy(),
        "judgement_id": judged["judgement_id"].to_numpy(),
    })
    return RunScores(data, frame)


@dataclass(frozen=True)
class PairedData:
    """Two runs on the same labelled answers of one part.

    Attributes:
        frame: One row per answer both runs scored and the people labelled: ``answer_id``,
            ``task_id``, ``family``, ``human``, ``human_category``, ``human_pass``, ``score_a``,
            ``pass_a``, ``score_b``, ``pass_b``.
        run_a: Run A's id.
        run_b: Run B's id.
        part: The part read.
        split: The project's split.
        levels: The rubric scale's levels.
        judge_family: The judges' own family when both runs record the same one.
        rubric: ``<id> v<version>``.
        notes: What the loader decided.
    """

    frame: pd.DataFrame
    run_a: str
    run_b: str
    part: Part
    split: Split
    levels: tuple[float, ...]
    judge_family: str | None
    rubric: str
    notes: tuple[str, ...]


def labelled_split(store: LoopRole, data: CalibrationData, *, seed: int = 0) -> Split:
    """The project's split, made from these labelled original answers if there is none yet."""
    who = people(data)
    answers = data.answers[data.answers["answer_id"].isin(who.index) & (data.answers["variant"] == "original")]
    return project_split(store, answers[["answer_id", "family"]], seed=seed)


def load_paired(store: LoopRole, run_a: str, run_b: str, *, part: Part = "tuning", seed: int = 0) -> PairedData:
    """Runs A and B on the labelled answers of ``part`` that both scored.

    Args:
        store: The project store.
        run_a: The first (older) version's run.
        run_b: The second version's run.
        part: ``"tuning"`` (default), ``"held-out"`` or ``"all"``.
        seed: Seed of the split if the project has none yet.

    Raises:
        InputError: A run is missing or off the rubric's scale, the runs were judged under different
            rubrics, or no labelled answer of the part was scored by both.
    """
    a, b = run_scores(store, run_a), run_scores(store, run_b)
    ra, rb = a.data.rubric, b.data.rubric
    if (ra.rubric_id, ra.version) != (rb.rubric_id, rb.version):
        raise InputError(f"runs {run_a} and {run_b} were judged under different rubrics "
                         f"({ra.rubric_id} v{ra.version}, {rb.rubric_id} v{rb.version})",
                         fix="compare two runs of the same rubric version; the people's labels differ between them.")
    who = people(a.data)
    split = labelled_split(store, a.data, seed=seed)
    keep = set(split.select(who.index, part))
    merged = (a.frame.merge(b.frame[["answer_id", "score", "pass"]], on="answer_id", suffixes=("_a", "_b"))
              .merge(who, left_on="answer_id", right_index=True))
    merged = merged[merged["answer_id"].isin(keep)].sort_values("answer_id").reset_index(drop=True)
    if merged.empty:
        raise InputError(f"no labelled answer of the {part} part was scored by both runs {run_a} and {run_b}",
                         fix="score the labelled answers with both judge versions (`judgelab score --labelled`).")
    fa, fb = a.data.judge_family, b.data.judge_family
    notes = []
    if fa != fb:
        notes.append(f"the runs record different judge families ({fa}, {fb}): no self-preference gap compared")
    if part == HELD_OUT:
        notes.append("held-out part: this look is recorded")
    levels = format_spec(ra.scale).levels
    return PairedData(merged, run_a, run_b, part, split, levels, fa if fa == fb else None,
                      f"{ra.rubric_id} v{ra.version}", tuple(notes))


def as_arrays(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """The columns of a paired frame as the arrays :func:`compare_judges` takes."""
    return {
        "human": frame["human"].to_numpy(float), "score_a": frame["score_a"].to_numpy(float),
        "score_b": frame["score_b"].to_numpy(float), "human_pass": frame["human_pass"].to_numpy(float),
        "pass_a": frame["pass_a"].to_numpy(float), "pass_b": frame["pass_b"].to_numpy(float),
        "human_category": frame["human_category"].to_numpy(float), "family": frame["family"].to_numpy(str),
        "tasks": frame["task_id"].to_numpy(str),
    }
