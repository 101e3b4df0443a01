"""The judge loop on the demo: a planted leniency on one family is found and its removal judged better.

One demo database per module (building it is the slow part): the demo's own fake-judge run is
version B; version A is the same judge with two and a half Likert points of leniency planted on
the ``gpt`` family's answers (enough to show on the held-out part's 26 answers too).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.cli import main


@dataclass(frozen=True)
class Loop:
    db: Path
    lenient: str
    fair: str


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Loop:
    from judgelab.demo import build_demo, run_demo_judge
    from judgelab.labeler.examples import example_path
    from judgelab.labeler.store import Store

    db = tmp_path_factory.mktemp("loop") / "demo.duckdb"
    store = Store(db)
    build_demo(store)
    fair = str(store.calibration_runs()["run_id"].iloc[0])
    truth = pd.read_csv(example_path("truth.csv"))
    lenient = run_demo_judge(store, truth, leniency={"gpt": 2.5}, model="fake-judge-lenient")
    return Loop(db, lenient, fair)


def test_compare_judges_the_version_without_the_leniency_better_on_the_tuning_part(loop: Loop) -> None:
    code, out, err = run("compare", "--db", str(loop.db), "--judge-run", loop.lenient, "--judge-run", loop.fair,
                         "--json", "--resamples", "400")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["part"] == "tuning" and payload["held_out_looks"] == 0
    assert payload["verdict"] == "B is better"
    gpt = next(f for f in payload["figures"] if f["name"] == "|residual| gpt")
    assert gpt["verdict"] == "B is better" and gpt["diff"]["ci_high"] < 0
    assert "judge scale points" in gpt["diff"]["units"]


def test_held_out_looks_are_counted_and_widen_the_intervals(loop: Loop) -> None:
    from judgelab.calibration.loop import held_out_summary
    from judgelab.labeler.store import Store

    base = ("compare", "--db", str(loop.db), "--judge-run", loop.lenient, "--judge-run", loop.fair, "--resamples",
            "200")
    before = held_out_summary(Store(loop.db))["looks"]
    code, out, err = run(*base, "--held-out")
    assert code == 0, err
    assert f"held-out look {before + 1}:" in out
    code, out, _ = run(*base, "--held-out", "--json")
    payload = json.loads(out)
    assert payload["held_out_looks"] == before + 2
    # Found on the held-out part as well, at the widened level.
    assert payload["verdict"] == "B is better"
    gpt = next(f for f in payload["figures"] if f["name"] == "|residual| gpt")
    assert gpt["verdict"] == "B is better" and gpt["diff"]["ci_high"] < 0
    assert payload["level"] == pytest.approx(1 - 0.05 / (before + 2))
    summary = held_out_summary(Store(loop.db))
    assert summary["looks"] == before + 2 and set(summary["runs"]) == {loop.lenient, loop.fair}
    # The two parts never share an answer, and a tuning look is not counted.
    code, out, _ = run(*base[:-2], "--resamples", "50", "--json")
    assert json.loads(out)["n_answers"] + payload["n_answers"] <= 88
    assert held_out_summary(Store(loop.db))["looks"] == before + 2


def test_compare_needs_exactly_two_runs(loop: Loop) -> None:
    code, _, err = run("compare", "--db", str(loop.db), "--judge-run", loop.fair)
    assert code == 2 and "exactly twice" in err


def test_calibrate_says_which_part_of_the_labels_it_read(loop: Loop, tmp_path: Path) -> None:
    run("compare", "--db", str(loop.db), "--judge-run", loop.lenient, "--judge-run", loop.fair, "--resamples", "20")
    code, out, err = run("calibrate", "--db", str(loop.db), "--judge-run", loop.fair, "--out", str(tmp_path / "r.md"),
                         "--resamples", "50")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("  labels read:"))
    assert "both parts of the held-out split (tuning" in line


def test_disagreements_list_the_lenient_family_first_blind_and_write_a_csv(loop: Loop, tmp_path: Path) -> None:
    from judgelab.labeler.store import Store

    csv = tmp_path / "d.csv"
    code, out, err = run("disagreements", "--db", str(loop.db), "--judge-run", loop.lenient, "--json",
                         "--csv", str(csv))
    assert code == 0, err
    payload = json.loads(out)
    assert payload["blind"] is True and payload["part"] == "tuning"
    answers = payload["answers"]
    assert not {"family", "model", "variant"} & set(answers[0])
    family = Store(loop.db).pool_answers().set_index("answer_id")["family"]
    ranked = [family[a["answer_id"]] for a in answers]
    # The planted family fills the head of the list (half the answers are gpt's) and ranks first on average.
    assert ranked[:10].count("gpt") >= 7, ranked[:10]
    mean_rank = {f: np.mean([i for i, g in enumerate(ranked) if g == f]) for f in ("gpt", "claude")}
    assert mean_rank["gpt"] < mean_rank["claude"] - 5, mean_rank
    # The judge's reply and the raters' labels come with each answer.
    assert answers[0]["judge_reply"] and answers[0]["raters"] and answers[0]["raters"][0]["overall"] is not None
    assert [a["distance"] for a in answers] == sorted((a["distance"] for a in answers), reverse=True)
    rates = payload["confusion"][0]["rates"]
    assert set(rates) == {"true pass rate", "true fail rate"}
    assert all(r["ci_low"] <= r["estimate"] <= r["ci_high"] for r in rates.values())
    assert len(pd.read_csv(csv)) == len(answers)
    code, out, _ = run("disagreements", "--db", str(loop.db), "--judge-run", loop.lenient, "--unblind", "--top", "3")
    assert code == 0 and "[gpt " in out
    # Unblinded, the families are ranked too: the planted one first, its judge above the people.
    code, out, _ = run("disagreements", "--db", str(loop.db), "--judge-run", loop.lenient, "--unblind", "--json")
    by_family = json.loads(out)["by_family"]
    assert by_family[0]["family"] == "gpt" and by_family[0]["mean_residual"] > by_family[1]["mean_residual"]


def test_a_new_judge_version_after_the_last_compare_is_flagged_by_calibrate(loop: Loop, tmp_path: Path) -> None:
    from judgelab.calibration.loop import revalidation_note
    from judgelab.demo import run_demo_judge
    from judgelab.labeler.examples import example_path
    from judgelab.labeler.store import Store

    run("compare", "--db", str(loop.db), "--judge-run", loop.lenient, "--judge-run", loop.fair, "--resamples", "20")
    store = Store(loop.db)
    assert revalidation_note(store, loop.fair) is None  # compared: its figures stand
    newer = run_demo_judge(store, pd.read_csv(example_path("truth.csv")), model="fake-judge-2")
    note = revalidation_note(store)
    assert note is not None and "model fake-judge -> fake-judge-2" in note
    code, out, err = run("calibrate", "--db", str(loop.db), "--out", str(tmp_path / "r.md"), "--resamples", "30")
    assert code == 0, err
    assert out.startswith("WARNING: ") or out.startswith("RE-VALIDATE: ")
    line = next(x for x in out.splitlines() if x.startswith("RE-VALIDATE: "))
    assert f"judgelab compare --judge-run {loop.fair} --judge-run {newer}" in line
    run("compare", "--db", str(loop.db), "--judge-run", loop.fair, "--judge-run", newer, "--resamples", "20")
    assert revalidation_note(store) is None
