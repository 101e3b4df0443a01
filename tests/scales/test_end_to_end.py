"""Custom scales end to end: import, judge through the spec against the mock API, calibrate, export, re-import.

A 0-2 rubric with annotator means is judged by an MT-Bench-style 1-10 judge spec (the real
``anthropic`` SDK against the mock API, whose fake judge answers "Rating: [[n]]"); ``calibrate``
refuses to subtract 1-10 from 0-2 until it is given a mapping, which the report states. A 1-7
Likert rubric judged on its own scale gets residuals in its points, weighted kappa over its seven
categories and ordinal alpha.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from judgelab.calibration.calibrate import calibrate
from judgelab.calibration.judges import AnthropicJudge, FakeJudge
from judgelab.calibration.mockapi import MockAnthropic
from judgelab.calibration.report import render_markdown
from judgelab.calibration.scoring import score_answers
from judgelab.calibration.spec import load_spec
from judgelab.labeler.errors import InputError
from judgelab.labeler.exports import export_table
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store
from tests.scales.fixtures import CORRECT3, LIKERT7, MT_BENCH_SPEC, answers_csv, write

pytestmark = pytest.mark.slow  # whole projects end to end: tens of seconds each

def _project(store: Store, tmp_path: Path, rubric: str) -> None:
    import_file(store, "rubric", write(tmp_path, "rubric.toml", rubric))
    import_file(store, "answers", write(tmp_path, "answers.csv", answers_csv()))


def test_a_1_to_10_judge_spec_on_a_0_to_2_rubric_with_annotator_means(store: Store, tmp_path: Path) -> None:
    _project(store, tmp_path, CORRECT3)
    # Expert means of three people on 0-2: the long answers mostly right, the short ones mostly wrong.
    rows = ["rater,answer_id,score,n_raters"]
    for t in range(1, 12):  # task 12 stays unlabelled: PPI has a judged answer to add per family
        rows += [f"experts,T{t}-c,{[2, 5 / 3, 4 / 3][t % 3]!r},3", f"experts,T{t}-g,{[0, 1 / 3, 2 / 3][t % 3]!r},3"]
    import_file(store, "labels", write(tmp_path, "means.csv", "\n".join(rows) + "\n"))
    spec = load_spec(write(tmp_path, "mt_bench.toml", MT_BENCH_SPEC))
    with MockAnthropic(responder=FakeJudge(seed=1, spec=spec).respond) as mock:
        judge = AnthropicJudge(spec.model or "m", api_key="test", base_url=mock.base_url, spec=spec)
        result = score_answers(judge, store, progress=False)
        bodies = [r.body for r in mock.received if r.path == "/v1/messages"]
    assert result.formats == ("mt10",) and result.summary.parse_failures == 0 and len(bodies) == 24
    assert all("on a scale of 1 to 10" in b["messages"][0]["content"] for b in bodies)
    judged = export_table(store, "judgements")
    assert set(judged["format"]) == {"mt10"}
    assert all(re.search(r"Rating: \[\[(\d+)\]\]$", raw) for raw in judged["raw"])
    assert set(judged["score"]) <= set(range(1, 11)) and judged["score"].nunique() > 2

    plain = calibrate(store, n_resamples=50)
    assert "score" not in plain.residuals
    assert any("judge scored in mt10, the humans in correct3" in s and "--scale-map" in s for s in plain.skipped)
    assert all(k.what == "pass verdict" for k in plain.kappas), "no score kappa across two scales"

    report = calibrate(store, n_resamples=200, scale_map="linear")
    note = "Judge scale: mt10 1-10 mapped linearly onto correct3 0-2 (1 -> 0, 10 -> 2)."
    assert note in report.notes
    section = report.residuals["score"]
    assert section.units == "scale points (0-2)"
    # Checked by hand: judge score mapped (v - 1) * 2 / 9, minus the experts' mean, per family.
    scores = judged.set_index("answer_id")["score"].astype(float)
    labels = export_table(store, "labels").set_index("answer_id")["score"]
    for fam, suffix in (("claude", "-c"), ("gpt", "-g")):
        ids = [f"T{t}{suffix}" for t in range(1, 12)]
        want = float(np.mean([(scores[i] - 1) * 2 / 9 - labels[i] for i in ids]))
        assert section.families[fam].estimate == pytest.approx(want)
    assert section.gap is not None and section.gap.units == "scale points (0-2)"
    assert section.gap.estimate == pytest.approx(section.families["claude"].estimate - section.families["gpt"].estimate)
    assert {row.family for row in report.ppi} == {"claude", "gpt"}  # pass rates under the rubric's threshold
    assert report.residuals["pass"].units == "percentage points"
    text = render_markdown(report)
    assert note in text and "scale points (0-2)" in text
    with pytest.raises(InputError, match="the judge level"):
        calibrate(store, n_resamples=50, scale_map="1=0,2=0,3=1")
    table = ",".join(f"{k}={0 if k <= 3 else 1 if k <= 7 else 2}" for k in range(1, 11))
    stated = calibrate(store, n_resamples=50, scale_map=table)
    kappa = [k for k in stated.kappas if k.scope == "all" and k.what == "overall score"]
    assert {k.result.weights for k in kappa} == {None, "quadratic"}
    mapped = np.array([0 if v <= 3 else 1 if v <= 7 else 2 for v in scores[labels.index]])
    human = np.round(labels.to_numpy(dtype=float)).astype(int)
    unweighted = next(k for k in kappa if k.result.weights is None)
    assert unweighted.result.kappa.estimate == pytest.approx(cohen_kappa_score(mapped, human, labels=[0, 1, 2]))

    # Export and re-import into a fresh project: labels (with n_raters) and judgements unchanged.
    other = Store(tmp_path / "other.duckdb")
    other.migrate()
    _project(other, tmp_path, CORRECT3)
    for kind in ("labels", "judgements"):
        path = tmp_path / f"{kind}.csv"
        export_table(store, kind).to_csv(path, index=False)
        import_file(other, kind, path)
    exported = pd.read_csv(tmp_path / "judgements.csv")
    assert set(exported["scale"]) == {'{"name": "mt10", "low": 1.0, "high": 10.0, "step": 1.0, "labels": []}'}
    assert [s.name for s in other.declared_scales()] == ["correct3", "mt10"]
    for kind in ("labels", "judgements"):
        a = export_table(store, kind).drop(columns=["label_id", "created_at"], errors="ignore")
        b = export_table(other, kind).drop(columns=["label_id", "created_at"], errors="ignore")
        keep = [c for c in a.columns if c in ("answer_id", "score", "n_raters", "format", "rater", "pass")]
        pd.testing.assert_frame_equal(a[keep].reset_index(drop=True), b[keep].reset_index(drop=True))


def test_a_1_to_7_likert_rubric_on_its_own_scale(store: Store, tmp_path: Path) -> None:
    _project(store, tmp_path, LIKERT7)
    rng = np.random.default_rng(3)
    rows = ["rater,answer_id,score"]
    for t in range(1, 13):
        for rater in ("ann", "bob", "cy"):
            rows += [f"{rater},T{t}-c,{int(rng.integers(5, 8))}", f"{rater},T{t}-g,{int(rng.integers(1, 4))}"]
    import_file(store, "labels", write(tmp_path, "labels.csv", "\n".join(rows) + "\n"))
    off = write(tmp_path, "off.csv", "rater,answer_id,score\ndee,T1-c,8\n")
    with pytest.raises(InputError, match="row 1"):
        import_file(store, "labels", off)
    # judgelab's built-in prompt on the declared scale, through the real SDK against the mock API.
    with MockAnthropic(responder=FakeJudge(seed=2).respond) as mock:
        judge = AnthropicJudge("claude-sonnet-4-6", api_key="test", base_url=mock.base_url)
        result = score_answers(judge, store, progress=False)
        bodies = [r.body for r in mock.received if r.path == "/v1/messages"]
    assert result.formats == ("likert7",) and result.summary.parse_failures == 0
    assert all("a single whole number from 1 to 7" in b["messages"][0]["content"] for b in bodies)
    judged = export_table(store, "judgements")
    assert set(judged["format"]) == {"likert7"} and set(judged["score"]) <= set(range(1, 8))
    report = calibrate(store, n_resamples=200)
    section = report.residuals["score"]
    assert section.units == "scale points (1-7)"
    labels = export_table(store, "labels")
    human = labels.groupby("answer_id")["score"].mean()
    scores = judged.set_index("answer_id")["score"].astype(float)
    want = float(np.mean([scores[f"T{t}-c"] - human[f"T{t}-c"] for t in range(1, 13)]))
    assert section.families["claude"].estimate == pytest.approx(want)
    kappa = {k.result.weights: k for k in report.kappas if k.scope == "all" and k.what == "overall score"}
    assert set(kappa) == {None, "quadratic"}
    assert "ordinal" in report.alphas["overall score"].method
    assert "scale points (1-7)" in render_markdown(report)


def test_design_active_panel_and_the_calibration_page_on_a_1_to_7_scale(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner
    from streamlit.testing.v1 import AppTest

    from judgelab.cli import main

    _project(store, tmp_path, LIKERT7.replace("pass_threshold = 5", "pass_threshold = 3"))
    db = str(store.path)
    runner = CliRunner()
    score_answers(FakeJudge(seed=2), store, progress=False)
    score_answers(FakeJudge(seed=4, model="other-judge"), store, progress=False)
    fixed = runner.invoke(main, ["design", "--n", "12", "--strata", "family,judge_bin", "--judge-bins", "3",
                                 "--db", db])
    assert fixed.exit_code == 0, fixed.output
    assert re.search(r"claude:score \d", fixed.output), fixed.output  # judge bins on the 1-7 scale
    store.add_rater("rita")
    active = runner.invoke(main, ["design", "--active", "--target-half-width", "20", "--batch-size", "10",
                                  "--overlap", "0", "--apply", "--db", db])
    assert active.exit_code == 0, active.output
    drawn = store.query("SELECT answer_id FROM assignments WHERE kind = 'score'")["answer_id"]
    assert len(drawn) > 0
    rows = ["rater,answer_id,score"] + [f"rita,{a},{6 if a.endswith('-c') else 2}" for a in drawn]
    import_file(store, "labels", write(tmp_path, "active.csv", "\n".join(rows) + "\n"))
    report = calibrate(store, n_resamples=50)
    assert report.residuals["score"].units == "scale points (1-7)"
    assert "active AIPW" in (report.design.estimator if report.design else "")
    assert [f.diagnostics.format_name for f in report.formats] == ["likert7"]
    panel = runner.invoke(main, ["panel", "--no-kappa", "--db", db])
    assert panel.exit_code == 0 and "Units: scale points (1-7)." in panel.output, panel.output

    _, admin = store.add_rater("boss", role="admin")
    monkeypatch.setenv("JUDGELAB_DB", db)
    page = Path(__file__).resolve().parents[2] / "judgelab" / "views" / "analyst.py"
    at = AppTest.from_file(str(page), default_timeout=120)
    at.session_state["analyst_resamples"] = 50
    at.query_params["t"] = admin
    at.run()
    assert not at.exception, at.exception
    assert "Overall score (scale points (1-7))" in [h.value for h in at.subheader]
