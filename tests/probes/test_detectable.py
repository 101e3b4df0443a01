"""What a card could have seen (issue 30, item 13): detectable effects per row, and `estimate --detect`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.probes import analyse_evidence, card_family_size, read_evidence, run_probes
from judgelab.calibration.report_card import card_json, render_markdown
from judgelab.calibration.stats import Estimate, detectable_effect, fail_power, pairs_to_detect, pairs_to_fail, verdict
from judgelab.cli import main
from judgelab.labeler.store import Store

ALL = "position,verbosity,formatting,tone,citations,truncation,byline"


def test_the_planned_pairs_detect_the_effect_with_the_power_asked() -> None:
    # Monte Carlo with a seeded generator: the first-shown share of 2n replies, true effect 10 pp.
    n = pairs_to_detect(10, reading="position")
    rng = np.random.default_rng(0)
    shares = rng.binomial(2 * n, 0.6, size=20_000) / (2 * n)
    se = np.sqrt(0.25 / (2 * n))
    power = float(np.mean(np.abs(shares - 0.5) / se > 1.959964))
    assert 0.77 < power < 0.83
    # The two functions agree: an interval of the planned width detects exactly the effect.
    se_lift = 50 / np.sqrt(pairs_to_detect(10, reading="lift"))
    d = detectable_effect(Estimate(0.0, -1.959964 * se_lift, 1.959964 * se_lift, 0, "", "percentage points"))
    assert d.effect == pytest.approx(10, abs=0.05)
    # The adjustment for the readings tested together asks for more pairs.
    assert pairs_to_detect(10, reading="lift", family_size=12) > pairs_to_detect(10, reading="lift")


def _fail_rate(effect: float, pairs: int, *, draws: int = 4000, seed: int = 1) -> tuple[float, float]:
    """Seeded Monte Carlo of a position reading at ``pairs``: the share significant, the share FAIL.

    Each draw is 2n replies whose first-shown share is 50% + ``effect``; its 95% interval is the
    normal one, and the verdict is the card's own function (FAIL at 10 pp, interval excluding 0).
    """
    rng = np.random.default_rng(seed)
    shares = rng.binomial(2 * pairs, 0.5 + effect / 100, size=draws) / (2 * pairs)
    se = 100 * np.sqrt(shares * (1 - shares) / (2 * pairs))
    est = 100 * shares - 50
    significant = np.mean(np.abs(est) / se > 1.959964)
    verdicts = [verdict(Estimate(e, e - 1.959964 * s, e + 1.959964 * s, pairs, "", "percentage points"),
                        kind="position") for e, s in zip(est, se, strict=True)]
    return float(significant), verdicts.count("FAIL") / draws


def test_the_pairs_for_fail_itself_give_fail_the_power_asked_and_the_test_power_is_not_fail_power() -> None:
    # Issue 42, point 4: at the --detect n a true 10 pp effect is significant 80% of the time but
    # marked FAIL only about half the time (FAIL also needs the estimate at 10 pp or more).
    n = pairs_to_detect(10, reading="position")
    significant, failed = _fail_rate(10, n)
    assert 0.77 < significant < 0.83
    assert fail_power(10, n, reading="position", threshold=10) == pytest.approx(0.5, abs=0.01)
    assert 0.46 < failed < 0.54
    # FAIL itself reaches 80% only for an effect past the threshold, at pairs_to_fail's n; at
    # least 80% (85.6% in this draw), since the plan takes the binomial variance at 50%, the
    # widest, where a 65% share varies less.
    assert pairs_to_fail(10, reading="position", threshold=10) is None
    n_fail = pairs_to_fail(15, reading="position", threshold=10)
    assert n_fail is not None
    _, failed = _fail_rate(15, n_fail)
    assert 0.79 < failed < 0.90
    _, fewer = _fail_rate(15, n_fail // 2)
    assert fewer < 0.75


def test_every_card_row_says_what_it_could_detect_and_a_warn_says_could_not_tell(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    run_probes(FakeJudge(seed=2), Store(tmp_path / "p.duckdb"), n=20, biases=ALL, evidence=out)
    analysis = analyse_evidence(read_evidence(out))
    card = render_markdown(analysis, mitigate=True)
    rows = [line for line in card.splitlines() if line.startswith("| ") and not line.startswith("| Bias")]
    rows = [line for line in rows if "—" in line.split("|")[1]]
    assert len(rows) == 7
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[-2].startswith("±") and cells[-2].endswith("pp"), line
        if cells[-1].endswith("WARN"):
            pytest.fail(f"a WARN at n = 20 must say whether the row could tell: {line}")
    assert "could not tell" in card and "**Detectable at this n**" in card
    payload = card_json(analysis, mitigate=True)
    control = analysis.error_control
    assert control is not None and control.family_size == card_family_size(ALL.split(","))
    for row in payload["rows"]:
        detectable = row["detectable"]
        assert detectable["power"] == 0.8 and detectable["effect"] > 10, "n = 20 cannot resolve 10 pp"
        assert detectable["family_size"] == (1 if row["bias"] == "truncation" else control.family_size)
        assert row["could_not_tell"] is True


def test_estimate_detect_prints_the_pairs_each_probe_needs_and_their_cost(tmp_path: Path) -> None:
    db = str(tmp_path / "e.duckdb")
    args = ["estimate", "--n", "20", "--detect", "10", "--db", db]
    result = CliRunner(env={"ANTHROPIC_API_KEY": ""}).invoke(main, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)["detect"]
    assert plan["family_size"] == 6 and plan["effect"] == 10
    need = {r["bias"]: r["pairs"] for r in plan["rows"]}
    assert need == {"position": pairs_to_detect(10, reading="position", family_size=6),
                    "verbosity": pairs_to_detect(10, reading="lift", family_size=6),
                    "formatting": pairs_to_detect(10, reading="lift", family_size=6)}
    assert all(r["cost_usd"] > 0 and r["cost_usd_batch"] == pytest.approx(r["cost_usd"] / 2) for r in plan["rows"])
    text = CliRunner(env={"ANTHROPIC_API_KEY": ""}).invoke(main, args, catch_exceptions=False).output
    assert f"position: {need['position']:,} pairs" in text and "the dataset has 34 pairs" in text
    # Which event has the 80%, how often FAIL itself happens there, and the pairs FAIL itself needs.
    assert all(r["fail_power"] == pytest.approx(0.5, abs=0.01) for r in plan["rows"])
    fail_n = pairs_to_fail(15, reading="position", threshold=10, family_size=6)
    assert plan["fail_effect"] == 15 and plan["rows"][0]["pairs_to_fail"] == fail_n
    assert "the chance the card's adjusted test finds the effect" in text
    assert "is marked FAIL about half the time at most" in text
    assert f"for FAIL itself with 80% power on a true 15 pp effect: position {fail_n:,} pairs" in text


def test_estimate_detect_gives_the_chance_of_fail_at_the_n_asked_for(tmp_path: Path) -> None:
    # Issue 52, point 10: the chance of FAIL was printed only at the pairs needed, not at the
    # --n the run would read; the dataset has 34 pairs, so --n 60 reads 34.
    db = str(tmp_path / "e.duckdb")
    runner = CliRunner(env={"ANTHROPIC_API_KEY": ""})
    for n, reads in ((20, 20), (60, 34)):
        args = ["estimate", "--n", str(n), "--detect", "15", "--biases", "position,verbosity", "--db", db]
        plan = json.loads(runner.invoke(main, [*args, "--json"], catch_exceptions=False).output)["detect"]
        family = plan["family_size"]
        for row in plan["rows"]:
            reading = "position" if row["bias"] == "position" else "lift"
            assert row["asked_pairs"] == reads
            assert row["fail_power_asked"] == pytest.approx(
                fail_power(15, reads, reading=reading, threshold=10, family_size=family))
        text = runner.invoke(main, args, catch_exceptions=False).output
        at = ", ".join(f"{r['fail_power_asked']:.0%} of the time ({r['bias']})" for r in plan["rows"])
        assert f"at the {reads} pairs this run reads (--n), a true 15 pp effect is marked FAIL {at}." in text
