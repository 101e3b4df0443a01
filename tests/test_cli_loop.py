"""The judge loop on the demo: a planted leniency on one family is found and its removal judged better.

One demo database per module (building it is the slow part): the demo's own fake-judge run is
version B; version A is the same judge with one Likert point and a half of leniency planted on
the ``gpt`` family's answers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

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
    from labeler.examples import example_path
    from labeler.store import Store

    db = tmp_path_factory.mktemp("loop") / "demo.duckdb"
    store = Store(db)
    build_demo(store)
    fair = str(store.calibration_runs()["run_id"].iloc[0])
    truth = pd.read_csv(example_path("truth.csv"))
    lenient = run_demo_judge(store, truth, leniency={"gpt": 1.5}, model="fake-judge-lenient")
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
    from calibration.loop import held_out_summary
    from labeler.store import Store

    base = ("compare", "--db", str(loop.db), "--judge-run", loop.lenient, "--judge-run", loop.fair, "--resamples",
            "200")
    before = held_out_summary(Store(loop.db))["looks"]
    code, out, err = run(*base, "--held-out")
    assert code == 0, err
    assert f"held-out look {before + 1}:" in out
    code, out, _ = run(*base, "--held-out", "--json")
    payload = json.loads(out)
    assert payload["held_out_looks"] == before + 2
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
