"""``--human-rule adjudicated``: an adjudicated label, where one exists, is the answer's human score.

SMALL_CELLS, own family: humans pass 8 of 20 answers (40%), the judge 9 (45%), residual +5 pp;
the other family 8 and 8, residual 0; gap +5. Adjudicating the two own-family answers the judge
passed and the raters failed (own-008, own-009) as passes makes the human pass rate 50% under the
rule: residual −5 pp, gap −5. The raters' labels are untouched, so the default rule still reads
+5 and agreement among raters does not move.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.calibration.calibrate import calibrate, format_rows, load_calibration_data
from judgelab.cli import main
from judgelab.labeler.errors import InputError
from tests.app.test_analyst_page import open_analyst
from tests.test_calibrate import OWN, SMALL_CELLS, Built, build_store

N_RESAMPLES = 100
SETTLED = (f"{OWN}-008", f"{OWN}-009")


@pytest.fixture(scope="module")
def adjudicated(tmp_path_factory: pytest.TempPathFactory) -> Built:
    built = build_store(tmp_path_factory.mktemp("adj") / "adj.duckdb", SMALL_CELLS, n_unlabelled=6)
    admin, _ = built.store.add_rater("boss", role="admin")
    for answer in SETTLED:
        built.store.adjudicate(admin.rater_id, answer, rubric_id="support", version=1, overall=5,
                               comment="the raters missed that the steps are right")
    return built


def test_the_adjudicated_rule_recovers_the_injected_difference(adjudicated: Built) -> None:
    mean = calibrate(adjudicated.store, adjudicated.run_id, n_resamples=N_RESAMPLES)
    rule = calibrate(adjudicated.store, adjudicated.run_id, human_rule="adjudicated", n_resamples=N_RESAMPLES)
    for report, own, gap in ((mean, 5.0, 5.0), (rule, -5.0, -5.0)):
        section = report.residuals["pass"]
        assert section.families[OWN].estimate == pytest.approx(own, abs=1e-9)
        assert section.gap is not None and section.gap.estimate == pytest.approx(gap, abs=1e-9)
    # Score scale: the raters gave 2 and 3 on own-009 (mean 2.5) and 2 and 2 on own-008; now 5 and 5.
    shift = rule.residuals["score"].families[OWN].estimate - mean.residuals["score"].families[OWN].estimate
    assert shift == pytest.approx(-(3 + 2.5) / 20, abs=1e-9)
    # Kappa reads the adjudicated verdicts; alpha stays among the two raters.
    kappa = {k.what: k.result.kappa.estimate for k in rule.kappas if k.scope == OWN}
    kappa_mean = {k.what: k.result.kappa.estimate for k in mean.kappas if k.scope == OWN}
    assert kappa["pass verdict"] > kappa_mean["pass verdict"]
    assert rule.alphas["pass verdict"].estimate == pytest.approx(mean.alphas["pass verdict"].estimate)
    assert rule.alphas["pass verdict"].n == mean.alphas["pass verdict"].n
    assert rule.labels.n_raters == mean.labels.n_raters == 2
    assert rule.labels.n_labels == mean.labels.n_labels == 80


def test_the_report_states_the_rule_and_how_many_answers_were_adjudicated(adjudicated: Built) -> None:
    rule = calibrate(adjudicated.store, adjudicated.run_id, human_rule="adjudicated", n_resamples=N_RESAMPLES)
    text = rule.human_rule_text()
    assert "(rule `adjudicated`)" in text and "2 answers adjudicated" in text and "never counted as a rater" in text
    assert rule.to_dict()["human_rule"] == "adjudicated" and rule.to_dict()["labels"]["n_adjudicated"] == 2
    mean = calibrate(adjudicated.store, adjudicated.run_id, n_resamples=N_RESAMPLES)
    assert "(rule `mean`)" in mean.human_rule_text() and "2 answers have an adjudicated label" in mean.human_rule_text()
    with pytest.raises(InputError, match="unknown human rule"):
        calibrate(adjudicated.store, adjudicated.run_id, human_rule="median", n_resamples=N_RESAMPLES)  # type: ignore[arg-type]


def test_format_diagnostics_read_the_adjudicated_reference(adjudicated: Built) -> None:
    data = load_calibration_data(adjudicated.store, adjudicated.run_id)
    assert sorted(data.adjudicated["answer_id"]) == list(SETTLED)
    reference = data.reference_labels("adjudicated")
    assert reference[reference["answer_id"].isin(SETTLED)][["rater_id", "overall", "source"]].values.tolist() == [
        [data.adjudicated["rater_id"].iloc[0], 5.0, "adjudicated"]] * 2
    assert len(data.reference_labels("mean")) == 80 and len(reference) == 78
    rows, _ = format_rows(data, human_rule="adjudicated", n_resamples=N_RESAMPLES)
    assert "adjudicated overall label" in rows[0].reference


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


def test_cli_calibrate_takes_the_adjudicated_rule(adjudicated: Built, tmp_path: Path) -> None:
    db = str(adjudicated.store.path)
    out = tmp_path / "r.md"
    code, stdout = run("calibrate", "--db", db, "--out", str(out), "--resamples", "100", "--human-rule", "adjudicated")
    assert code == 0
    assert "  human score: rule adjudicated; 2 answer(s) adjudicated" in stdout.splitlines()
    assert any(line.startswith("  residual [pass] claude: -5.0") for line in stdout.splitlines()), stdout
    assert "2 answers adjudicated" in out.read_text()
    code, stdout = run("calibrate", "--db", db, "--out", str(out), "--resamples", "100", "--json",
                       "--human-rule", "adjudicated")
    printed = json.loads(stdout)
    assert printed["human_rule"] == "adjudicated"
    assert printed["residuals"]["pass"]["gap"]["estimate"] == pytest.approx(-5.0, abs=1e-9)
    code, stdout = run("formats", "--db", db, "--human-rule", "adjudicated", "--resamples", "100")
    assert code == 0 and "adjudicated overall label" in stdout
    result = CliRunner().invoke(main, ["calibrate", "--db", db, "--out", str(out), "--human-rule", "median"])
    assert result.exit_code == 2 and "'adjudicated'" in result.stderr


def test_the_analyst_page_offers_the_adjudicated_rule(adjudicated: Built, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGELAB_DB", str(adjudicated.store.path))
    _, token = adjudicated.store.add_rater("analyst", role="admin")
    at = open_analyst(token)
    assert "adjudicated" in at.radio(key="analyst_rule").options
    at.radio(key="analyst_rule").set_value("adjudicated").run()
    assert not at.exception, at.exception
    assert any("2 answers adjudicated" in c.value for c in at.caption)
    residuals = next(df.value for df in at.dataframe if "residual" in df.value.columns)
    assert residuals.set_index("family").loc[OWN, "residual"] == pytest.approx(-5.0)


def test_one_adjudication_does_not_count_the_admin_as_a_rater(tmp_path: Path) -> None:
    """The adjudicated label settles its answer's score but never enters the raters' spread model.

    Issue 29 item 5: the admin read as a third rater, which switched the spread estimate (and
    moved a family's interval a long way) after one adjudication.
    """
    built = build_store(tmp_path / "one.duckdb", SMALL_CELLS, n_unlabelled=6)
    before = calibrate(built.store, built.run_id, human_rule="adjudicated", n_resamples=N_RESAMPLES)
    admin, _ = built.store.add_rater("boss", role="admin")
    built.store.adjudicate(admin.rater_id, SETTLED[0], rubric_id="support", version=1, overall=5)
    after = calibrate(built.store, built.run_id, human_rule="adjudicated", n_resamples=N_RESAMPLES)
    for scale in ("pass", "score"):
        old, new = before.residuals[scale], after.residuals[scale]
        for family in old.families:
            scope = new.families[family].scope
            assert scope == old.families[family].scope, (scale, family)
            assert "2 raters" in scope
        assert old.gap is not None and new.gap is not None
        assert new.gap.scope == old.gap.scope
    # The adjudication did move the human score it settles.
    assert after.residuals["pass"].families[OWN].estimate < before.residuals["pass"].families[OWN].estimate


def test_the_report_says_how_many_adjudications_were_not_blind(tmp_path: Path) -> None:
    """An adjudication given after revealing the family is counted and said in the report."""
    built = build_store(tmp_path / "rev.duckdb", SMALL_CELLS, n_unlabelled=6)
    admin, _ = built.store.add_rater("boss", role="admin")
    built.store.adjudicate(admin.rater_id, SETTLED[0], rubric_id="support", version=1, overall=5)
    built.store.adjudicate(admin.rater_id, SETTLED[1], rubric_id="support", version=1, overall=5, revealed=True)
    rule = calibrate(built.store, built.run_id, human_rule="adjudicated", n_resamples=N_RESAMPLES)
    assert rule.labels.n_adjudicated == 2 and rule.labels.n_revealed == 1
    assert "1 of them given after revealing the answer's family, not blind" in rule.human_rule_text()
    assert rule.to_dict()["labels"]["n_revealed"] == 1
