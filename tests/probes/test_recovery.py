"""Injected biases are recovered inside their intervals; swap-averaging removes only order effects.

Each test runs the real probes through the real runner against :class:`FakeJudge` with known
knobs on the bundled sample pairs (34 of them). The expected value of each figure is computed
from the fake judge's own model (its :meth:`~FakeJudge.preference` log-odds and latent scores,
no noise), for the exact texts the probe showed it, so the tests check the probes' arithmetic
and design rather than a rule of thumb. Answer quality is held equal (``quality_of``) where a
test isolates one knob; the truncation test uses the judge's content-based quality.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from judgelab.calibration import perturb
from judgelab.calibration.datasets import PROBE_RUBRIC, choose, load_pairs, pool_from_pairs
from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.probes import (
    Analysis,
    ProbeContext,
    Variants,
    analyse_evidence,
    plan_probes,
    read_evidence,
)
from judgelab.calibration.runner import PlannedCall, run_plan
from judgelab.calibration.stats import Estimate
from judgelab.labeler.store import Store

N_PAIRS = 34


def equal_quality(text: str) -> float:
    """Every answer equally good: only the injected knob separates them."""
    return 0.5


@dataclass
class Probed:
    judge: FakeJudge
    calls: list[PlannedCall]
    analysis: Analysis
    evidence: Path


def probe(tmp: Path, judge: FakeJudge, biases: list[str]) -> Probed:
    pairs = choose(load_pairs("sample"), N_PAIRS, seed=0)
    ctx = ProbeContext(
        pairs=pairs, pool=pool_from_pairs(pairs), rubric=PROBE_RUBRIC, pool_rubric=PROBE_RUBRIC,
        variants=Variants(), judge_family=judge.family, other_family="gpt",
    )
    plan = plan_probes(ctx, biases)
    out = tmp / "evidence.jsonl"
    run_plan(plan.calls, judge, Store(tmp / "p.duckdb"), rubric=PROBE_RUBRIC, judge_kind="fake",
             evidence=out, progress=False)
    return Probed(judge, plan.calls, analyse_evidence(read_evidence(out)), out)


def p_target(judge: FakeJudge, call: PlannedCall) -> float:
    """Probability the varied answer wins this call (no ties, no noise)."""
    assert call.answer_b is not None
    p_a = 1 / (1 + math.exp(-judge.preference(call.answer, call.answer_b)))
    return p_a if call.meta["target_slot"] == "A" else 1 - p_a


def expected_lift(run: Probed, bias: str, *, swapped: bool = False) -> float:
    """Expected decorated-minus-placebo lift (pp), raw or after swap-averaging."""
    arms: dict[str, list[float]] = {"baseline": [], "decorated": []}
    calls = [c for c in run.calls if c.probe == bias and c.kind == "pairwise"]
    for trial in sorted({c.trial for c in calls}):
        for arm in arms:
            ab, ba = (p_target(run.judge, c) for c in calls if c.trial == trial and c.arm == arm)
            if swapped:
                # Win both orders -> 1, lose both -> 0, a flip -> half (independent draws).
                both, neither = ab * ba, (1 - ab) * (1 - ba)
                arms[arm].append(both + 0.5 * (1 - both - neither))
            else:
                arms[arm] += [ab, ba]
    return 100 * (np.mean(arms["decorated"]) - np.mean(arms["baseline"]))


def covers(est: Estimate, value: float) -> bool:
    return est.ci_low <= value <= est.ci_high


# -- position ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def position_run(tmp_path_factory: pytest.TempPathFactory) -> Probed:
    judge = FakeJudge(seed=11, position=0.4, quality_of=equal_quality, family="claude")
    return probe(tmp_path_factory.mktemp("position"), judge, ["position", "verbosity"])


def test_position_bias_is_recovered_and_swap_averaging_removes_it(position_run: Probed) -> None:
    result = position_run.analysis.result("position")
    assert result is not None
    # position=0.4: the first-shown answer wins 90% of decisions between equal answers.
    assert covers(result.raw, 40.0) and result.raw.ci_low > 10
    assert result.verdict_raw == "FAIL"
    consistency = result.details["consistency"]
    # Both orders agree only when the 10% underdog wins once: about 2 x 0.9 x 0.1 = 18%.
    assert covers(consistency, 0.18)
    # Swap-averaging removes the advantage only by turning ~82% of decisions into ties: judged by
    # that cost, the mitigation fails too (issue 30: never PASS at this consistency).
    assert result.mitigated is not None and result.mitigated.estimate == pytest.approx(100 * (1 - consistency.estimate))
    assert result.verdict_mitigated == "FAIL" and result.verdict_text(mitigate=True) == "FAIL"
    assert result.details["slot_bias_b"].ci_low > 0.5  # the slot, not the answer, decides


def test_a_pure_position_bias_is_no_verbosity_bias(position_run: Probed) -> None:
    result = position_run.analysis.result("verbosity")
    assert result is not None and result.mitigated is not None
    assert covers(result.raw, 0.0) and covers(result.mitigated, 0.0)
    assert abs(expected_lift(position_run, "verbosity")) < 1e-9
    assert result.verdict_raw != "FAIL" and result.verdict_mitigated != "FAIL"


# -- verbosity (padding) -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def verbosity_run(tmp_path_factory: pytest.TempPathFactory) -> Probed:
    judge = FakeJudge(seed=12, verbosity=0.3, quality_of=equal_quality, family="claude")
    return probe(tmp_path_factory.mktemp("verbosity"), judge, ["verbosity"])


def test_verbosity_lift_is_recovered(verbosity_run: Probed) -> None:
    result = verbosity_run.analysis.result("verbosity")
    assert result is not None
    expected = expected_lift(verbosity_run, "verbosity")
    assert expected > 15  # the padding is long enough to expose most of the 30-point knob
    assert covers(result.raw, expected) and result.raw.ci_low > 0
    assert result.verdict_raw == "FAIL"


def test_pointwise_padding_gap_is_recovered_in_judge_units(verbosity_run: Probed) -> None:
    result = verbosity_run.analysis.result("verbosity")
    assert result is not None
    gap = result.details["pointwise_gap"]
    judge = verbosity_run.judge
    pairs = {}
    for call in verbosity_run.calls:
        if call.kind == "pointwise":
            pairs.setdefault(call.meta["parent_answer_id"], {})[call.arm] = call.answer
    # Latent score moves by `verbosity` per doubling of length (clipped at 4x either way).
    expected = np.mean([judge.latent(p["padded"]) - judge.latent(p["original"]) for p in pairs.values()])
    assert 0.2 < expected < 0.45
    assert covers(gap, expected) and gap.units == "judge scale points"
    ratio = result.details["length_ratio"]
    assert ratio == pytest.approx(
        np.mean([perturb.count_words(p["padded"]) for p in pairs.values()])
        / np.mean([perturb.count_words(p["original"]) for p in pairs.values()]), rel=0.05,
    )
    assert ratio > 1.6 and not any("under" in n for n in result.notes)


# -- swap-averaging keeps a real content preference ---------------------------------------------


def test_verbosity_survives_swap_averaging_while_position_collapses(tmp_path: Path) -> None:
    judge = FakeJudge(seed=13, position=0.2, verbosity=0.3, quality_of=equal_quality, family="claude")
    run = probe(tmp_path, judge, ["position", "verbosity"])
    position = run.analysis.result("position")
    verbosity = run.analysis.result("verbosity")
    assert position is not None and verbosity is not None and verbosity.mitigated is not None
    assert covers(position.raw, 20.0) and position.mitigated is not None
    # Position after swap-averaging reads what it costs: the decisions lost (1 - consistency).
    assert position.mitigated.estimate == pytest.approx(100 * (1 - position.details["consistency"].estimate))
    expected_after = expected_lift(run, "verbosity", swapped=True)
    assert expected_after > 15
    # The content preference survives: the swap-averaged lift stays large and matches what the
    # judge's model predicts. (With 34 pairs its
    # interval is about +-20 points wide, so "survives" is read off the estimate.)
    assert covers(verbosity.mitigated, expected_after)
    assert verbosity.mitigated.estimate > 10 and verbosity.mitigated.ci_high > 20


# -- decorations and the byline ------------------------------------------------------------------


@pytest.fixture(scope="module")
def decoration_run(tmp_path_factory: pytest.TempPathFactory) -> Probed:
    judge = FakeJudge(seed=14, formatting=0.3, tone=0.25, citations=0.2, byline=0.3,
                      quality_of=equal_quality, family="claude")
    return probe(tmp_path_factory.mktemp("decoration"), judge, ["formatting", "tone", "citations", "byline"])


@pytest.mark.parametrize("bias", ["formatting", "tone", "citations"])
def test_decoration_lifts_are_recovered(decoration_run: Probed, bias: str) -> None:
    result = decoration_run.analysis.result(bias)
    assert result is not None
    expected = expected_lift(decoration_run, bias)
    assert expected > 10
    assert covers(result.raw, expected) and result.raw.ci_low > 0
    assert result.raw.units == "percentage points"


def test_byline_response_is_measured_and_never_called_self_preference(decoration_run: Probed) -> None:
    result = decoration_run.analysis.result("byline")
    assert result is not None
    # byline=0.3 between two copies of one answer: the own-family byline wins 80%.
    assert covers(result.raw, 30.0) and result.raw.ci_low > 0
    assert "NOT self-preference" in result.label
    assert any("NOT self-preference" in note for note in result.notes)
    assert result.details["own_family"] == ["claude"] and result.details["other_family"] == ["gpt"]


# -- truncation, format study, parse failures -----------------------------------------------------


@pytest.fixture(scope="module")
def content_run(tmp_path_factory: pytest.TempPathFactory) -> Probed:
    judge = FakeJudge(seed=15, noise=0.3, parse_failure_rate=0.1, family="claude")
    return probe(tmp_path_factory.mktemp("content"), judge, ["truncation", "format"])


def test_truncation_is_noticed(content_run: Probed) -> None:
    result = content_run.analysis.result("truncation")
    assert result is not None
    gap = result.details["pointwise_gap"]
    # A judge that reads content marks truncated answers down: a positive truncation gap.
    assert gap.ci_low > 0 and result.details["pointwise_verdict"] == "PASS"
    assert result.raw.estimate < 0  # and the truncated side loses head to head
    assert result.details["length_ratio"] < 1


def test_parse_failures_are_counted_and_left_out(content_run: Probed) -> None:
    analysis = content_run.analysis
    frame = read_evidence(content_run.evidence)
    failed = frame[frame["status"] == "parse_failure"]
    assert analysis.parse_failures == len(failed) > 0 and analysis.errors == 0
    assert failed["verdict"].isna().all() and failed["score"].isna().all()
    result = analysis.result("truncation")
    assert result is not None and result.parse_failures > 0
    # The lift rests on the parsed pairwise replies only.
    pairwise = frame[(frame["bias"] == "truncation") & (frame["kind"] == "pairwise")]
    assert result.raw.n == int((pairwise["status"] == "parsed").sum()) < len(pairwise)


def test_format_study_reports_each_format(content_run: Probed) -> None:
    rows = {f.format: f for f in content_run.analysis.formats}
    assert list(rows) == ["binary", "likert5", "numeric100"]
    for row in rows.values():
        assert row.replies == 2 * N_PAIRS
        assert 0.75 < row.parse_rate.estimate < 1.0  # parse_failure_rate=0.1
    assert rows["binary"].distinct_values <= 2
    assert rows["numeric100"].distinct_values > rows["likert5"].distinct_values
    assert rows["numeric100"].d2 > rows["likert5"].d2 >= rows["binary"].d2
    assert rows["likert5"].tie_probability > rows["numeric100"].tie_probability
