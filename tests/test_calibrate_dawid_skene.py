"""``--human-rule dawid-skene``: a model of the raters gives each answer its human score.

The fixture database holds a simulation of raters with known confusion
(:func:`judgelab.calibration.stats.simulate_raters`: one careful rater, two lenient, one harsh, one
careless, three per answer) on a binary rubric, imported the way a team's labels arrive. The
report under the rule must give exactly the figures the simulation's own reading gives
(:func:`judgelab.calibration.stats.compare_rules`), and show each rater's estimated confusion.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.calibration.calibrate import calibrate, load_calibration_data
from judgelab.calibration.calibrate._rater_model import fit_rater_models
from judgelab.calibration.report import rater_model_table, render_markdown
from judgelab.calibration.stats import RaterSimulation, compare_rules, simulate_raters
from judgelab.cli import main
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Answer, Criterion, ImportedJudgement, ImportedLabel, Rubric, Task
from judgelab.labeler.scales import declare_scale, register_scale
from judgelab.labeler.store import Store
from tests.app.test_analyst_page import open_analyst
from tests.test_calibrate import Built, build_store, report_of

N_RESAMPLES = 100
JUDGE = "judge-x"


def store_from(path: Path, sim: RaterSimulation) -> Built:
    """The simulation as a project: a binary rubric, the pool, the raters' labels, the judge's verdicts."""
    store = Store(path)
    store.add_rubric(Rubric("verdict", 1, "Pass or fail", "binary", "overall = 1",
                            (Criterion("correct", "Correct", "Every step is right."),), author="support team"))
    a = sim.answers
    tasks = sorted(set(a["task_id"]))
    store.add_pool([Task(t, f"Ticket {t}", None) for t in tasks],
                   [Answer(r.answer_id, r.task_id, r.family, f"{r.family}-model", f"Answer {r.answer_id}.")
                    for r in a.itertuples(index=False)])
    store.add_imported_labels([ImportedLabel(r.answer_id, r.rater_id, float(r.score), bool(r.score),
                                             {"correct": float(r.score)}) for r in sim.labels.itertuples(index=False)])
    store.add_imported_judgements([ImportedJudgement(r.answer_id, JUDGE, float(r.judge), bool(r.judge), "binary",
                                                     judge_family="own") for r in a.itertuples(index=False)])
    return Built(store, f"import:{JUDGE}", tasks)


@pytest.fixture(scope="module")
def sim() -> RaterSimulation:
    return simulate_raters(n_tasks=80, seed=3)


@pytest.fixture(scope="module")
def built(sim: RaterSimulation, tmp_path_factory: pytest.TempPathFactory) -> Built:
    return store_from(tmp_path_factory.mktemp("ds") / "ds.duckdb", sim)


def test_the_report_reads_the_models_human_truth(built: Built, sim: RaterSimulation) -> None:
    report = calibrate(built.store, built.run_id, human_rule="dawid-skene", n_resamples=N_RESAMPLES)
    expected = compare_rules(sim)["dawid-skene"]
    section = report.residuals["pass"]
    for family in ("own", "other"):
        got, want = section.families[family], expected.residuals[family]
        assert got.estimate == pytest.approx(want.estimate, abs=1e-6)
        assert (got.ci_low, got.ci_high) == pytest.approx((want.ci_low, want.ci_high), abs=1e-6)
        assert "raters like these (5 raters" in got.scope and got.interval.endswith(", model refit")
    assert section.gap is not None and section.gap.estimate == pytest.approx(expected.gap.estimate, abs=1e-6)
    # The majority reads another human truth from the same labels.
    majority = calibrate(built.store, built.run_id, human_rule="majority", n_resamples=N_RESAMPLES)
    assert majority.residuals["pass"].families["own"].estimate == pytest.approx(
        compare_rules(sim)["majority"].residuals["own"].estimate, abs=1e-6)
    assert majority.residuals["pass"].families["own"].estimate != pytest.approx(section.families["own"].estimate)


def test_each_raters_confusion_is_in_every_form_of_the_report(built: Built) -> None:
    report = calibrate(built.store, built.run_id, human_rule="dawid-skene", n_resamples=N_RESAMPLES)
    assert list(report.rater_models) == ["pass"]  # binary rubric: the overall score is the verdict
    table = rater_model_table(report)
    assert len(table) == 5 and table["n_labels"].sum() == 3 * 160
    assert list(table.columns) == ["labels of", "rater", "rater_id", "n_labels", "accuracy", "kappa",
                                   "fail→fail", "pass→pass"]
    # The careless rater (r5, close to a coin) is found the least accurate; 96 labels each are too few
    # to rank the others reliably (tests/stats/test_dawid_skene.py does it on 360 each).
    by_rater = table.set_index("rater")["accuracy"]
    assert by_rater.idxmin() == "r5" and by_rater["r5"] < 0.65 < by_rater["r1"]
    md = render_markdown(report)
    assert "### The model of the raters (Dawid-Skene)" in md and "| pass verdict | r1 | " in md
    assert "(rule `dawid-skene`)" in md and "Kappa uses the model's most probable category" in md
    js = report.to_dict()["rater_model"]["pass"]
    assert js["categories"] == [0.0, 1.0] and len(js["raters"]) == 5
    assert all(len(r["confusion"]) == 2 and sum(r["confusion"][0]) == pytest.approx(1.0) for r in js["raters"])
    assert sorted(r["name"] for r in js["raters"]) == ["r1", "r2", "r3", "r4", "r5"]
    # Under the other rules there is no model and no table.
    assert report_of(built).rater_models == {} and rater_model_table(report_of(built)).empty


def test_agreeing_raters_leave_the_seed_figures_as_they_are(tmp_path: Path) -> None:
    # The seed's raters give the same verdict on every answer: the model's human pass rate is theirs.
    seed = build_store(tmp_path / "seed.duckdb")
    report = report_of(seed, human_rule="dawid-skene")
    section = report.residuals["pass"]
    assert section.families["claude"].estimate == pytest.approx(8.0, abs=0.01)
    assert section.families["gpt"].estimate == pytest.approx(-2.0, abs=0.01)
    assert set(report.rater_models) == {"pass", "overall"}
    assert report.rater_models["overall"].categories == (1.0, 2.0, 3.0, 4.0, 5.0)
    assert "residuals (score)" not in " ".join(report.skipped)
    assert report.formats and "Dawid-Skene" in report.formats[0].reference


def test_numeric100_is_refused_with_the_fix(built: Built) -> None:
    data = load_calibration_data(built.store, built.run_id)
    numeric = dataclasses.replace(data, rubric=dataclasses.replace(data.rubric, scale="numeric100"))
    with pytest.raises(InputError, match="numeric100 scale") as err:
        fit_rater_models(numeric)
    assert "--human-rule mean or majority" in str(err.value.fix)


def test_one_rater_per_answer_is_refused_with_the_fix(tmp_path: Path) -> None:
    lone = simulate_raters(n_tasks=20, labels_per_answer=1, seed=1)
    b = store_from(tmp_path / "lone.duckdb", lone)
    with pytest.raises(InputError, match="two or more raters") as err:
        calibrate(b.store, b.run_id, human_rule="dawid-skene", n_resamples=N_RESAMPLES)
    assert "--human-rule mean" in str(err.value.fix)


def test_the_cli_takes_the_rule(built: Built, tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    result = CliRunner().invoke(main, ["calibrate", "--db", str(built.store.path), "--out", str(out), "--json",
                                       "--resamples", "100", "--human-rule", "dawid-skene"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["human_rule"] == "dawid-skene" and len(printed["rater_model"]["pass"]["raters"]) == 5
    assert "The model of the raters" in out.read_text()
    result = CliRunner().invoke(main, ["calibrate", "--db", str(built.store.path), "--out", str(out), "--resamples",
                                       "100", "--human-rule", "dawid-skene"], catch_exceptions=False)
    line = next(x for x in result.stdout.splitlines() if x.startswith("  rater model [pass]: estimated accuracy "))
    assert all(f"r{k} 0." in line for k in range(1, 6))
    # The careless rater (close to a coin) is flagged as `raters quality` flags a rater: in the text,
    # the JSON and the report; the careful one is not.
    warns = [x for x in result.stdout.splitlines() if x.startswith("    WARN ")]
    assert len(warns) == 1 and warns[0].startswith("    WARN rater r5 (pass verdicts): labels tell the true level no "
                                                   "better than chance: kappa ")
    assert "is below 0.20" in warns[0] and "answers shared with other raters" in warns[0]
    assert printed["rater_warnings"] == [warns[0].removeprefix("    WARN ")]
    by_name = {r["name"]: r for r in printed["rater_model"]["pass"]["raters"]}
    assert by_name["r5"]["warnings"] and not by_name["r1"]["warnings"]
    assert by_name["r5"]["agreement"]["units"] == "kappa" and by_name["r5"]["agreement"]["estimate"] < 0.2
    assert f"- **WARN** {printed['rater_warnings'][0]}" in out.read_text()


def test_the_calibration_page_shows_the_raters_confusion(built: Built, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGELAB_DB", str(built.store.path))
    _, token = built.store.add_rater("boss", role="admin")
    at = open_analyst(token)
    at.radio(key="analyst_rule").set_value("dawid-skene").run()
    assert not at.exception, at.exception
    assert "The model of the raters (Dawid-Skene)" in [s.value for s in at.subheader]
    table = next(df.value for df in at.dataframe if "pass→pass" in df.value.columns)
    assert sorted(table["rater"]) == ["r1", "r2", "r3", "r4", "r5"]


def test_a_declared_scale_takes_its_own_levels_and_leaves_annotator_means_out(built: Built) -> None:
    """The model's categories are a declared grid's levels; a mean of several people is not one rater's label."""
    data = load_calibration_data(built.store, built.run_id)
    register_scale(declare_scale("ds_pass3", low=0, high=2, step=1))
    labels = data.labels.assign(overall=data.labels["overall"].astype(float) * 2)
    mean_row = (int(labels["rater_id"].iloc[0]), str(labels["answer_id"].iloc[0]))
    labels.loc[0, "overall"] = 5 / 3  # between levels: an imported annotator mean
    three = dataclasses.replace(data, rubric=dataclasses.replace(data.rubric, scale="ds_pass3"), labels=labels,
                                annotator_means=frozenset({mean_row}))
    models = fit_rater_models(three)
    assert models["overall"].categories == (0.0, 1.0, 2.0)
    per_rater = {name: dict(zip(m.raters, m.n_labels, strict=True)) for name, m in models.items()}
    given = int((labels["rater_id"].astype(int) == mean_row[0]).sum())
    assert per_rater["overall"][str(mean_row[0])] == per_rater["pass"][str(mean_row[0])] == given - 1
    eleven = dataclasses.replace(data, rubric=dataclasses.replace(data.rubric, scale="ds_twelve"))
    register_scale(declare_scale("ds_twelve", low=0, high=11, step=1))
    with pytest.raises(InputError, match="12 levels"):
        fit_rater_models(eleven)
