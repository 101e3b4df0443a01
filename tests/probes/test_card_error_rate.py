"""The report card controls its error rate: adjusted verdicts, the placebo, a null simulation.

The simulation is the issue's bar: a fake judge with no bias at all, 100 seeded runs of every
pairwise probe on the bundled sample (n = 20 pairs, the default), read as the card reads them.
Read row by row at 95%, about one card in four shows a FAIL somewhere; adjusted with Holm across
the readings tested together, at most one in twenty may.

100 runs, not the issue's 200 (``python bench/card_error_rate.py`` runs those and more): the
check still fails on the bug it guards. Unadjusted, 26 of these 100 cards show a FAIL (54 of
200), five times the bound of 5; adjusted, 4 do (9 of 200); the placebo arm FAILs on 6 (13 of
200) against a bound of 10 (measured 2026-12-08).
"""

from __future__ import annotations

import pandas as pd
import pytest

from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.probes import Analysis, BiasResult, analyse_evidence, simulate_evidence
from judgelab.calibration.probes._errors import control_errors
from judgelab.calibration.report_card import card_json, render_markdown
from judgelab.calibration.stats import Estimate

RUNS = 100


def _row(bias: str, est: float, lo: float, hi: float, verdict: str = "FAIL") -> BiasResult:
    raw = Estimate(est, lo, hi, 80, "", "percentage points")
    return BiasResult(bias, bias, raw, None, verdict, None, "")  # type: ignore[arg-type]


def test_a_fail_must_survive_the_adjustment_for_the_rows_tested() -> None:
    # Three readings: p ~ 0.0001, ~0.02 and ~0.5. Holm (m = 3): 0.0003 and 0.04 survive at 5%;
    # with one more clearly null row (m = 4) the second becomes 0.06 and reads WARN.
    rows = [
        _row("position", 30.0, 15.0, 45.0),
        _row("formatting", 15.0, 2.3, 27.7),
        _row("tone", 3.0, -6.0, 12.0, "WARN"),
    ]
    empty = pd.DataFrame({"bias": [], "arm": [], "kind": []})
    three, control = control_errors(rows, empty)
    assert [r.verdict_raw for r in three] == ["FAIL", "FAIL", "WARN"]
    assert control.family_size == 3 and control.placebo is None
    four, control = control_errors([*rows, _row("byline", 1.0, -9.0, 11.0, "WARN")], empty)
    assert [r.verdict_raw for r in four] == ["FAIL", "WARN", "WARN", "WARN"]
    assert [(t.bias, t.verdict, t.adjusted) for t in control.changed()] == [("formatting", "FAIL", "WARN")]
    assert four[1].details["p_values"]["raw"]["p_adjusted"] == pytest.approx(0.06, abs=0.005)
    # None keeps every verdict as read alone; a family of one is never changed.
    kept, _ = control_errors(rows, empty, method="none")
    assert [r.verdict_raw for r in kept] == ["FAIL", "FAIL", "WARN"]
    alone, _ = control_errors([rows[1]], empty)
    assert alone[0].verdict_raw == "FAIL"


def null_evidence(seed: int, n: int = 20, **knobs: float) -> pd.DataFrame:
    """Evidence rows of every card probe judged by a fake judge (no bias unless given)."""
    return simulate_evidence(FakeJudge(seed=seed, family="claude", **knobs), n=n, seed=seed)


def _fails(analysis: Analysis) -> tuple[bool, bool]:
    """(any FAIL the adjusted card prints, any FAIL had each reading been read alone)."""
    adjusted = any(
        "FAIL" in (r.verdict_raw, r.verdict_mitigated, r.details.get("pointwise_verdict"))
        for r in analysis.results
    )
    control = analysis.error_control
    assert control is not None
    alone = any(t.verdict == "FAIL" for t in control.tests) or any(
        "FAIL" in (r.verdict_raw, r.verdict_mitigated) for r in analysis.results if r.bias == "truncation"
    )
    return adjusted, alone


def test_the_card_states_its_adjustment_and_the_placebo() -> None:
    analysis = analyse_evidence(null_evidence(3))
    card = render_markdown(analysis, mitigate=True)
    assert "## Error rate" in card and "Holm (family-wise error rate)" in card
    assert "| Row | Reading | p | Adjusted p | Verdict alone | Verdict |" in card
    assert "**Placebo arm**" in card
    payload = card_json(analysis, mitigate=True)
    # 12 readings: position after swap-averaging reads a cost (decisions lost), outside the family.
    assert payload["error_control"]["method"] == "holm" and payload["error_control"]["family_size"] == 12
    assert "position" not in {t["bias"] for t in payload["error_control"]["tests"] if t["reading"] == "after"}
    assert payload["error_control"]["placebo"]["units"] == "percentage points"
    loose = render_markdown(analyse_evidence(null_evidence(3), adjust="none"), mitigate=False)
    assert "read at 95% on its own" in loose


@pytest.mark.slow
def test_a_judge_with_no_bias_fails_at_most_one_card_in_twenty() -> None:
    adjusted = alone = placebo_fails = 0
    for seed in range(RUNS):
        analysis = analyse_evidence(null_evidence(seed))
        got, would = _fails(analysis)
        adjusted += got
        alone += would
        assert analysis.error_control is not None
        placebo_fails += analysis.error_control.placebo_verdict == "FAIL"
    print(
        f"\n{RUNS} null runs (fake judge, no bias, n=20, every pairwise probe): any FAIL on "
        f"{adjusted} cards adjusted (Holm) vs {alone} read row by row; placebo arm FAIL in "
        f"{placebo_fails}"
    )
    assert adjusted <= 0.05 * RUNS
    assert alone >= 0.15 * RUNS, "the unadjusted card should show the problem the issue describes"
    # The placebo is one reading at 95%: it should false-alarm near 5% of the time, no more.
    assert placebo_fails <= 0.1 * RUNS
