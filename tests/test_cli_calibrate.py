"""``judgelab calibrate`` and ``judgelab formats`` end to end through the click group."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.cli import main
from tests.test_calibrate import SMALL_CELLS, Built, add_position_probe, build_store

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def simulated_db(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Simulated labels, one judge run with pointwise scores and an order-swapped probe."""
    built = build_store(tmp_path_factory.mktemp("cli") / "cli.duckdb", SMALL_CELLS, simulated=True, n_unlabelled=6)
    add_position_probe(built.store, n_pairs=20)
    return built


def test_calibrate_writes_markdown_png_and_json(simulated_db: Built, tmp_path: Path) -> None:
    out = tmp_path / "out" / "report.md"
    png = tmp_path / "out" / "report.png"
    code, stdout, _ = run("calibrate", "--db", str(simulated_db.store.path), "--out", str(out),
                          "--png", str(png), "--json", "--resamples", "300")
    assert code == 0
    md = out.read_text()
    assert md.startswith("> **SIMULATED LABELS: all 80 human labels")
    assert "## Judge minus human, per family" in md and "Self-preference gap" in md
    image = png.read_bytes()
    assert image.startswith(PNG_MAGIC) and len(image) > 50_000
    written = json.loads(out.with_suffix(".json").read_text())
    printed = json.loads(stdout)
    assert written == printed
    assert next(iter(printed)) == "simulated_labels" and printed["simulated_labels"] is True
    assert printed["run_id"] == simulated_db.run_id
    gap = printed["residuals"]["pass"]["gap"]
    # SMALL_CELLS: own family humans 8/20, judge 9/20 (+5 pp); other 8/20 and 8/20 (0): gap 5.
    assert gap["estimate"] == pytest.approx(5.0, abs=1e-9) and gap["units"] == "percentage points"
    assert printed["probes"]["position"][0]["n_both_orders"] == 20


def test_calibrate_text_summary_warns_and_lists_files(simulated_db: Built, tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    code, stdout, _ = run("calibrate", "--db", str(simulated_db.store.path), "--judge-run", simulated_db.run_id,
                          "--out", str(out), "--resamples", "100", "--human-rule", "majority")
    assert code == 0
    lines = stdout.splitlines()
    assert lines[0].startswith("WARNING: SIMULATED LABELS")
    assert any(line.startswith("  self-preference gap [pass]: +5.0 percentage points") for line in lines)
    assert lines[-1] == f"wrote {out}"
    assert not out.with_suffix(".json").exists() and not (tmp_path / "r.png").exists()
    assert "ties going to the lower score" in out.read_text()


def test_formats_prints_the_four_quantities(simulated_db: Built) -> None:
    code, stdout, _ = run("formats", "--db", str(simulated_db.store.path), "--resamples", "100")
    assert code == 0
    assert stdout.startswith("WARNING: SIMULATED LABELS")
    assert "likert5 (pointwise" in stdout and "pairwise5 (comparative" in stdout
    for key in ("format and decoding rule", "tie probability / D2", "comparative slot handling and bias",
                "verdict parse rate"):
        assert f"    {key}: " in stdout
    assert "slot-A bias b = +0.60" in stdout


def test_formats_json(simulated_db: Built) -> None:
    code, stdout, _ = run("formats", "--db", str(simulated_db.store.path), "--json", "--resamples", "100")
    assert code == 0
    payload = json.loads(stdout)
    assert payload["simulated_labels"] is True
    formats = {f["format"]: f for f in payload["formats"]}
    assert set(formats) == {"likert5", "pairwise5"}
    assert formats["likert5"]["diagnostics"]["parse_rate"]["estimate"] == 1.0
    assert formats["likert5"]["diagnostics"]["distinct_values"] == 4


def test_errors_are_one_problem_line_and_one_fix_line_and_exit_2(simulated_db: Built, tmp_path: Path) -> None:
    code, _, err = run("calibrate", "--db", str(simulated_db.store.path), "--judge-run", "nope",
                       "--out", str(tmp_path / "r.md"))
    assert code == 2 and err.startswith("judgelab: error: no judge run 'nope'") and err.count("\n") == 2
    assert err.splitlines()[1].startswith("Fix: ")
    assert run("init", "--db", str(tmp_path / "empty.duckdb"))[0] == 0  # a project with no judge run yet
    code, _, err = run("calibrate", "--db", str(tmp_path / "empty.duckdb"), "--out", str(tmp_path / "r.md"))
    assert code == 2 and "no judge run with pointwise judgements" in err
    code, _, err = run("formats", "--db", str(simulated_db.store.path), "--reference", "vibes")
    assert code == 2 and "unknown reference 'vibes'" in err
    assert not (tmp_path / "r.md").exists()


@pytest.mark.slow
def test_calibrate_on_the_demo_database_writes_all_three(tmp_path: Path) -> None:
    """The demo carries simulated labels and a fake-judge run: the report comes out in every form."""
    from judgelab.demo import build_demo
    from judgelab.labeler.store import Store

    db = tmp_path / "demo.duckdb"
    build_demo(Store(db))
    out = tmp_path / "report.md"
    code, stdout, _ = run("calibrate", "--db", str(db), "--out", str(out), "--png", str(tmp_path / "report.png"),
                          "--json", "--resamples", "300")
    assert code == 0
    payload = json.loads(stdout)
    assert payload["simulated_labels"] is True and payload["judge_family"]
    assert payload["residuals"]["pass"]["gap"]["estimate"] is not None
    # The demo labels a sample of tickets, so the judge's scores on the rest feed PPI.
    assert {row["family"] for row in payload["ppi"]} == {"claude", "gpt"}
    assert all(row["ppi"]["estimate"] is not None and row["n_unlabelled"] > 0 for row in payload["ppi"])
    assert out.read_text().startswith("> **SIMULATED LABELS")
    assert (tmp_path / "report.png").read_bytes().startswith(PNG_MAGIC)
    assert json.loads(out.with_suffix(".json").read_text()) == payload


def test_every_summary_line_names_its_interval_and_kappa_its_tie_rule(simulated_db: Built, tmp_path: Path) -> None:
    code, stdout, _ = run("calibrate", "--db", str(simulated_db.store.path), "--out", str(tmp_path / "r.md"),
                          "--resamples", "100", "--interval", "panel")
    assert code == 0
    lines = stdout.splitlines()
    assert any("intervals: this panel of raters only" in line for line in lines)
    figures = [line for line in lines if line.startswith(("  residual", "  self-preference", "  kappa"))]
    assert figures and all(("t(" in line and line.rstrip().endswith(("panel]", "panel]  (upper bound)")))
                           or "UNRELIABLE" in line for line in figures)
    assert any("a tie goes to the lower category" in line for line in lines if line.startswith("  kappa"))


def test_two_raters_get_no_residual_interval_for_raters_like_these_and_the_line_names_the_fix(
    simulated_db: Built, tmp_path: Path
) -> None:
    # SMALL_CELLS has two raters on every answer: a family's residual moves with their mean
    # leniency, whose spread rests on 1 df (issue 43). The gap, where it cancels, keeps its interval.
    out = tmp_path / "r.md"
    code, stdout, _ = run("calibrate", "--db", str(simulated_db.store.path), "--out", str(out), "--resamples", "100")
    assert code == 0
    residuals = [line for line in stdout.splitlines() if line.startswith("  residual [")]
    assert len(residuals) == 4
    for line in residuals:
        assert "(no interval; n=20) [none (2 raters), raters; NO INTERVAL: only 2 raters" in line
        assert "this panel's own interval (±" in line and "is `--interval panel`, or add a third rater]" in line
    assert any(line.startswith("  self-preference gap [score]:") and "95% CI" in line for line in stdout.splitlines())
    assert "> **No interval (claude):** only 2 raters" in out.read_text()
    code, stdout, _ = run("calibrate", "--db", str(simulated_db.store.path), "--out", str(out), "--resamples", "100",
                          "--interval", "panel", "--json")
    assert code == 0
    families = json.loads(stdout)["residuals"]["score"]["families"]
    for fam in families.values():
        assert fam["ci_low"] < fam["estimate"] < fam["ci_high"] and fam["extra"]["unreliable"] is None


def test_labels_on_answers_that_reveal_their_author_are_set_apart_and_reported(tmp_path: Path) -> None:
    built = build_store(tmp_path / "apart.duckdb", SMALL_CELLS, simulated=True, n_unlabelled=0)
    store = built.store
    labelled = sorted(set(store.human_labels()["answer_id"]))[:3]
    out = tmp_path / "r.md"
    args = ("calibrate", "--db", str(store.path), "--judge-run", built.run_id, "--out", str(out), "--resamples", "50")
    before = json.loads(run(*args, "--json")[1])["labels"]
    assert before["n_set_apart"] == 0
    # The screen (or a rater's W key) finds three labelled answers reveal their author: their labels are set apart.
    store.record_screen("screen-1", [(a, True, "signs with its maker's name", None, None) for a in labelled],
                        judge="fake")
    after = json.loads(run(*args, "--json")[1])["labels"]
    assert (after["n_set_apart"], after["n_set_apart_answers"]) == (6, 3)  # two raters labelled each
    assert after["n_labels"] == before["n_labels"] - 6 and after["n_answers"] == before["n_answers"] - 3
    code, stdout, _ = run(*args)
    assert code == 0
    assert "  set apart: 6 labels on 3 answers that reveal their author (left out of every figure)" in stdout
    assert "Set apart: 6 labels on 3 answers that reveal their author" in out.read_text()
    # Cleared by the admin (nothing unblinds): the labels count again.
    for answer in labelled:
        store.clear_answer(answer, admin="root")
    assert json.loads(run(*args, "--json")[1])["labels"]["n_labels"] == before["n_labels"]


def test_calibrate_reports_each_section_to_a_plain_progress_callable(simulated_db: Built) -> None:
    from judgelab.calibration.calibrate import calibrate

    steps: list[tuple[str, int, int]] = []
    calibrate(simulated_db.store, n_resamples=10, progress=lambda *step: steps.append(step))
    assert steps[0] == ("loading the run", 0, steps[0][2]) and steps[-1][1] == steps[-1][2] == steps[0][2]
    assert [done for _, done, _ in steps] == list(range(len(steps)))  # one step at a time, none skipped
    assert "kappa" in [name for name, *_ in steps]
