"""Loading: several judge runs and the human labels they are read against, as one long table.

Each run is read the way ``judgelab calibrate`` reads it
(:func:`judgelab.calibration.calibrate.load_calibration_data`): its first parsed pointwise judgement per
original answer, in the rubric's own scale; the human score of an answer is the mean of its
raters' current labels. A run that did not score in the rubric's scale cannot be subtracted from
the human score and is left out, with the reason in :attr:`PanelData.notes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from judgelab.calibration.calibrate import load_calibration_data
from judgelab.calibration.calibrate._load import first_judgement, isin
from judgelab.calibration.panel._stats import COLUMNS
from judgelab.calibration.stats import human_scores
from judgelab.labeler.errors import InputError
from judgelab.labeler.store import AnalystRole


@dataclass(frozen=True)
class PanelData:
    """The panel's long table and what the loader decided.

    Attributes:
        frame: One row per (judge run, answer) with :data:`judgelab.calibration.panel.COLUMNS`.
        scale: The rubric's scale.
        rubric: ``<id> v<version>`` of the rubric.
        runs: The run ids read, in order.
        notes: Runs left out and why.
    """

    frame: pd.DataFrame
    scale: str
    rubric: str
    runs: tuple[str, ...]
    notes: tuple[str, ...]


def load_panel(store: AnalystRole, run_ids: Sequence[str] | None = None) -> PanelData:
    """Read judge runs (default: every run with pointwise judgements) against the human labels.

    Args:
        store: The project store.
        run_ids: The runs; ``None`` or empty: every run of the project with pointwise judgements.

    Returns:
        A :class:`PanelData`.

    Raises:
        InputError: No such run, or no run with scores and human labels to read.
    """
    if not run_ids:
        runs = store.calibration_runs()
        run_ids = [str(r) for r in runs.loc[runs["n_pointwise"] > 0, "run_id"]][::-1]
        if not run_ids:
            raise InputError("no judge run with pointwise judgements in the database",
                             fix="import judgements (`judgelab import judgements FILE`) or run `judgelab score` first.")
    frames: list[pd.DataFrame] = []
    notes: list[str] = []
    scale = rubric_name = None
    for run_id in run_ids:
        data = load_calibration_data(store, run_id)
        scale = data.rubric.scale
        rubric_name = f"{data.rubric.rubric_id} v{data.rubric.version}"
        if data.judge_format != scale:
            notes.append(f"run {run_id} left out: it scored in {data.judge_format or 'no pointwise format'}, the "
                         f"people in {scale}; scores on different scales cannot be subtracted")
            continue
        judged = first_judgement(data.pointwise, scale)
        labels = data.reference_labels("mean")
        # The raters' mean, an imported annotator mean weighing as its number of people.
        human = human_scores(labels[labels["overall"].notna()], rater_col="rater_id", score_col="overall",
                             people_col="n_raters").scores
        judged = judged[isin(judged["answer_id"], human.index)]
        if judged.empty:
            notes.append(f"run {run_id} left out: none of its scored answers has a human score")
            continue
        models = data.answers.set_index("answer_id")["model"]
        frames.append(pd.DataFrame({
            "judge": run_id,
            "judge_model": str(data.run.get("model") or run_id),
            "judge_family": data.judge_family,
            "answer_id": judged["answer_id"].to_numpy(),
            "task_id": judged["task_id"].astype(str).to_numpy(),
            "answer_model": judged["answer_id"].map(models).to_numpy(),
            "answer_family": judged["family"].to_numpy(),
            "score": judged["value"].astype(float).to_numpy(),
            "human": judged["answer_id"].map(human).astype(float).to_numpy(),
        }))
    if not frames:
        raise InputError("no judge run has scores on the rubric's scale for answers with human labels: "
                         + "; ".join(notes),
                         fix="import human labels (`judgelab import labels FILE`) and judgements scored on the "
                             "rubric's scale.")
    frame = pd.concat(frames, ignore_index=True)[list(COLUMNS)]
    return PanelData(frame, str(scale), str(rubric_name), tuple(str(r) for r in run_ids), tuple(notes))
