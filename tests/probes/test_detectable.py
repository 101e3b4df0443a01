"""What a card could have seen (issue 30, item 13): detectable effects per row, and `estimate --detect`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from calibration.judges import FakeJudge
from calibration.probes import analyse_evidence, card_family_size, read_evidence, run_probes
from calibration.report_card import card_json, render_markdown
from calibration.stats import Estimate, detectable_effect, pairs_to_detect
from judgelab.cli import main
from labeler.store import Store

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
