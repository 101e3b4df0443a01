"""A public human-annotated dataset on its own scale: SQuALITY's 0-100 reviews (tests/data/squality).

Imported on a declared ``squality100`` scale (three reviewers per response, and separately the
file's own means with ``n_raters = 3``), judged by the fake judge on that scale, calibrated; the
report's human means, residuals and Krippendorff's alpha are checked against a computation of
our own from the raw JSON lines.
"""

from __future__ import annotations

from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest

from judgelab.calibration.calibrate import calibrate
from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.scoring import score_answers
from judgelab.labeler.exports import export_table
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store
from tests.scales.squality import convert, responses

pytestmark = pytest.mark.slow  # whole projects end to end: tens of seconds each

@pytest.fixture(scope="module")
def raw() -> Path:
    """The raw slice (its path does not depend on where the examples package is installed)."""
    path = Path(__file__).resolve().parents[1] / "data" / "squality" / "all-responses.head2.jsonl"
    assert path.is_file()
    return path


def test_squality_on_its_own_scale_matches_a_computation_from_the_raw_file(raw: Path, tmp_path: Path) -> None:
    files = convert(raw, tmp_path)
    items = responses(raw)
    # The raw file's own means are the means of its three reviews.
    for it in items:
        assert np.mean(list(it["ratings"].values())) == pytest.approx(it["mean"])  # type: ignore[attr-defined]

    store = Store(tmp_path / "reviews.duckdb")
    store.migrate()
    for kind, name in (("rubric", "rubric.toml"), ("answers", "answers.csv"), ("labels", "labels.csv")):
        import_file(store, kind, files[name])
    score_answers(FakeJudge(seed=0), store, progress=False)
    report = calibrate(store, n_resamples=200)

    judge = export_table(store, "judgements").set_index("answer_id")["score"].astype(float)
    assert set(export_table(store, "judgements")["format"]) == {"squality100"}
    frame = pd.DataFrame([{"answer_id": it["answer_id"], "family": it["family"], "human": it["mean"],
                           "human_pass": np.mean([r >= 50 for r in it["ratings"].values()])}  # type: ignore[attr-defined]
                          for it in items])
    frame["judge"] = frame["answer_id"].map(judge)
    score = report.residuals["score"]
    assert score.units == "scale points (0-100)"
    for fam, rows in frame.groupby("family"):
        assert score.families[str(fam)].estimate == pytest.approx((rows["judge"] - rows["human"]).mean())
        assert score.families[str(fam)].n == len(rows) == 10
        passed = 100 * ((rows["judge"] >= 50).astype(float) - rows["human_pass"]).mean()
        assert report.residuals["pass"].families[str(fam)].estimate == pytest.approx(passed)

    # Alpha among the reviewers, on the raw reviews: ordinal, as the declared scale is.
    raters = sorted({r for it in items for r in it["ratings"]})  # type: ignore[attr-defined]
    matrix = np.array([[it["ratings"].get(r, np.nan) for it in items] for r in raters], dtype=float)  # type: ignore[attr-defined]
    own = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
    alpha = report.alphas["overall score"]
    assert alpha.estimate == pytest.approx(own) and "ordinal" in alpha.method

    # The file's means, imported with their number of raters, give the same score residuals.
    means = Store(tmp_path / "means.duckdb")
    means.migrate()
    for kind, name in (("rubric", "rubric.toml"), ("answers", "answers.csv"), ("labels", "means.csv")):
        import_file(means, kind, files[name])
    score_answers(FakeJudge(seed=0), means, progress=False)
    again = calibrate(means, n_resamples=200)
    for fam, est in score.families.items():
        assert again.residuals["score"].families[fam].estimate == pytest.approx(est.estimate)
    exported = export_table(means, "labels")
    assert set(exported["n_raters"]) == {3}
    # The means are human scores, not one rater's ratings: alpha among raters leaves them out.
    assert again.alphas == {}
    assert any("30 label(s) that are already the mean of several people" in s for s in again.skipped)
