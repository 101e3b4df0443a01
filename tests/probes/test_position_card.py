"""One position figure on one run, and a swap-averaged judge read by what it costs (issue 30, items 12, 17)."""

from __future__ import annotations

from pathlib import Path

from judgelab.calibration.calibrate import load_calibration_data
from judgelab.calibration.calibrate._model import ReportOptions
from judgelab.calibration.calibrate._probes import probe_section
from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.probes import analyse_evidence, read_evidence, run_position, run_probes
from judgelab.calibration.report_card import render_markdown
from judgelab.calibration.stats import Estimate
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store
from tests.conftest import DATA


def test_position_and_the_card_give_one_figure_on_a_run_with_other_pairwise_probes(
        store: Store, tmp_path: Path) -> None:
    import_file(store, "rubric", DATA / "rubric.toml")
    out = tmp_path / "r.jsonl"
    run_probes(FakeJudge(seed=3, position=0.15), store, n=20, biases="position,verbosity", evidence=out)
    card = analyse_evidence(read_evidence(out)).result("position")
    assert card is not None
    position = run_position(store)
    s = position.statistics
    assert s.pairs == s.pairs_both_orders == 20 and s.replies == 40, "the padding probe's pairs are not pooled"
    assert s.first_shown_advantage == card.raw
    assert s.consistency == card.details["consistency"]
    text = "\n".join(position.lines())
    assert f"n = {s.consistency.n} pairs)" in text and "n = 40 replies with a winner" in text
    report = probe_section(load_calibration_data(store, position.run_id), None, ReportOptions())
    assert report.statistics is not None and report.statistics.first_shown_advantage == card.raw


def test_a_judge_whose_orders_rarely_agree_is_not_passed_by_swap_averaging(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    run_probes(FakeJudge(seed=5, position=0.4), Store(tmp_path / "p.duckdb"), n=20, biases="position",
               evidence=out)
    analysis = analyse_evidence(read_evidence(out))
    position = analysis.result("position")
    assert position is not None and position.mitigated is not None
    consistency = position.details["consistency"]
    # Seed 5's replies: the fake judge's knobs (its style function's module path among them) are in
    # every cache key, so the one namespace (judgelab.calibration) drew a new stream: 3 of 20 agree.
    assert consistency.estimate == 0.15, "the two orders agree on 3 of the 20 pairs"
    assert position.verdict_mitigated == "FAIL"
    row = next(line for line in render_markdown(analysis, mitigate=True).splitlines() if line.startswith("| Position"))
    assert "PASS" not in row and "decisions lost to the swap" in row
    assert f"{round(100 * (1 - consistency.estimate))}% decisions lost" in row


def test_the_mitigation_is_read_by_the_decisions_it_loses() -> None:
    from judgelab.calibration.probes.position import swap_cost, swap_cost_verdict

    def share(p: float, lo: float, hi: float) -> Estimate:
        return Estimate(p, lo, hi, 20, "same winner in both orders", "share of pairs")

    assert [swap_cost_verdict(swap_cost(share(0.28, 0.12, 0.50)), raw) for raw in ("FAIL", "WARN", "PASS")] == [
        "FAIL", "WARN", "WARN"]
    assert swap_cost_verdict(swap_cost(share(0.95, 0.76, 0.99)), "FAIL") == "PASS"
    assert swap_cost_verdict(swap_cost(share(0.75, 0.53, 0.89)), "FAIL") == "WARN"
