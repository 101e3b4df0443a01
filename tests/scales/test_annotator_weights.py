"""An imported annotator mean weighs as its number of people in the human score of its answer.

A label imported with ``n_raters = 3`` is the mean of three people. Beside one rater's own label
on the same answer, the human score is the mean of the four people ((3·2 + 0)/4 = 1.5), not of
the two rows (1.0): in the calibration report (residuals, pass rates, kappa's majority, PPI), the
formats' human reference, the judge panel, the design's pilot and the active design's labels. The
mean is no one rater's label: the raters' spread and alpha leave it out.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgelab.calibration.calibrate import calibrate
from judgelab.calibration.design import load_pool
from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.panel import load_panel
from judgelab.calibration.report import render_markdown
from judgelab.calibration.scoring import score_answers
from judgelab.calibration.stats import family_residuals, human_scores
from judgelab.labeler.exports import export_table
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store
from tests.scales.fixtures import CORRECT3, answers_csv, write

MEANS = [2.0, 5 / 3, 4 / 3]  # the experts' means of three people, by task
OWN = [0, 1, 2]  # one rater's own label, by task


def test_a_mean_of_three_people_beside_one_rater_weighs_three_to_one() -> None:
    labels = pd.DataFrame({"answer_id": ["a", "a", "b"], "rater_id": ["experts", "ann", "ann"],
                           "score": [2.0, 0.0, 1.0], "n_raters": [3, 1, 1]})
    hs = human_scores(labels, people_col="n_raters")
    assert hs.scores.to_dict() == {"a": 1.5, "b": 1.0}
    assert hs.n_raters.to_dict() == {"a": 4, "b": 1}
    assert hs.spread["a"] == pytest.approx(np.std([2, 2, 2, 0]))
    assert human_scores(labels, rule="majority", people_col="n_raters").scores["a"] == 2.0  # three votes to one
    assert human_scores(labels).scores["a"] == 1.0  # rows unweighted, as before, without people_col
    # The residuals read the same weights from the raters' table (and check a given human score against them).
    est = family_residuals([2.0, 1.0], None, ["x", "y"], ["t1", "t2"], scale="score", rater_level=hs.ratings,
                           answer_ids=["a", "b"])
    assert est["x"].estimate == pytest.approx(0.5)
    family_residuals([2.0, 1.0], hs.scores.to_numpy(), ["x", "y"], ["t1", "t2"], scale="score",
                     rater_level=hs.ratings, answer_ids=["a", "b"])
    with pytest.raises(ValueError, match="whole numbers of people"):
        human_scores(labels.assign(n_raters=[0.5, 1, 1]), people_col="n_raters")


def _mixed_project(store: Store, tmp_path: Path, n_tasks: int = 9) -> pd.DataFrame:
    """A 0-2 project where every answer has the experts' mean of three and ann's own label; judged."""
    store.migrate()
    import_file(store, "rubric", write(tmp_path, "rubric.toml", CORRECT3))
    import_file(store, "answers", write(tmp_path, "answers.csv", answers_csv(n_tasks)))
    rows = []
    for t in range(1, n_tasks):  # the last task stays unlabelled: PPI has judged answers to add
        for suffix, shift in (("-c", 0), ("-g", 1)):
            mean = MEANS[(t + shift) % 3] - (4 / 3 if suffix == "-g" else 0)
            rows += [{"rater": "experts", "answer_id": f"T{t}{suffix}", "score": max(mean, 0.0), "n_raters": 3},
                     {"rater": "ann", "answer_id": f"T{t}{suffix}", "score": float(OWN[(t + shift) % 3]),
                      "n_raters": 1}]
    frame = pd.DataFrame(rows)
    path = tmp_path / "labels.csv"
    frame.to_csv(path, index=False)
    import_file(store, "labels", path)
    score_answers(FakeJudge(seed=0), store, progress=False)
    return frame


def _expected(frame: pd.DataFrame) -> pd.DataFrame:
    """Per answer, the four people's mean score and pass share (pass: 2 on the 0-2 scale), by hand."""
    people = frame["n_raters"].astype(float)
    by = frame["answer_id"]
    total = people.groupby(by).sum()
    return pd.DataFrame({"human": (frame["score"] * people).groupby(by).sum() / total,
                         "human_pass": ((frame["score"] >= 2) * people).groupby(by).sum() / total})


def test_the_report_panel_pilot_and_active_labels_weigh_an_annotator_mean_by_its_people(
    store: Store, tmp_path: Path
) -> None:
    frame = _mixed_project(store, tmp_path)
    want = _expected(frame)
    assert not np.allclose(want["human"], frame.groupby("answer_id")["score"].mean())  # the rows' mean differs
    judge = export_table(store, "judgements").set_index("answer_id")["score"].astype(float)
    want["judge"] = judge.reindex(want.index)
    want["family"] = ["claude" if a.endswith("-c") else "gpt" for a in want.index]

    report = calibrate(store, n_resamples=100)
    for fam, rows in want.groupby("family"):
        score = report.residuals["score"].families[str(fam)]
        assert score.estimate == pytest.approx((rows["judge"] - rows["human"]).mean())
        passed = report.residuals["pass"].families[str(fam)]
        assert passed.estimate == pytest.approx(100 * ((rows["judge"] >= 2).astype(float) - rows["human_pass"]).mean())
    # The experts' means are no rater's labels: one rater (ann) is left for the spread and alpha.
    assert "2 raters" not in report.residuals["score"].families["claude"].scope
    assert report.labels.n_annotator_means == len(want)
    assert all(np.isnan(a.estimate) or a.extra.get("n_raters") == 1 for a in report.alphas.values())
    text = render_markdown(report)
    assert f"{len(want)} labels are already the mean of several people" in text and "gives 1.5" in text

    # The judge panel, the design's pilot and the active design's labels read the same human score.
    panel = load_panel(store).frame.set_index("answer_id")
    assert panel["human"].to_dict() == pytest.approx(want["human"].to_dict())
    pool, _ = load_pool(store)
    pilot = pool.set_index("answer_id")["human_pass"].dropna()
    assert pilot.to_dict() == pytest.approx(want["human_pass"].to_dict())
    active = store.answer_labels().set_index("answer_id")
    assert active["human_score"].to_dict() == pytest.approx(want["human"].to_dict())
    assert active["human_pass"].to_dict() == pytest.approx(want["human_pass"].to_dict())
    assert set(store.rater_labels(want.index)["people"]) == {1, 3}
