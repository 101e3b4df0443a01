"""The report card: markdown, JSON and PNG from an evidence file alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
from judgelab.calibration.report_card import TITLE, card_json, render_markdown, render_png
from judgelab.calibration.runner import run_plan
from judgelab.labeler.errors import InputError
from judgelab.labeler.store import Store

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def evidence(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("card")
    pairs = choose(load_pairs("sample"), 16, seed=0)
    ctx = ProbeContext(
        pairs=pairs, pool=pool_from_pairs(pairs), rubric=PROBE_RUBRIC, pool_rubric=PROBE_RUBRIC,
        variants=Variants(), judge_family="claude", other_family="gpt",
    )
    biases = ["position", "verbosity", "formatting", "truncation", "byline", "format"]
    plan = plan_probes(ctx, biases)
    judge = FakeJudge(seed=21, position=0.45, verbosity=0.2, parse_failure_rate=0.05, family="claude")
    out = tmp / "results.jsonl"
    run_plan(plan.calls, judge, Store(tmp / "p.duckdb"), rubric=PROBE_RUBRIC, judge_kind="fake",
             evidence=out, progress=False)
    return out


@pytest.fixture(scope="module")
def analysis(evidence: Path) -> Analysis:
    return analyse_evidence(read_evidence(evidence))


def test_markdown_card_with_mitigation(analysis: Analysis) -> None:
    card = render_markdown(analysis, mitigate=True, source="results.jsonl")
    assert card.startswith(f"# {TITLE}")
    assert ("| Bias | Raw | After swap-avg | 95% CI (raw) | 95% CI (after) | Detectable at this n | Verdict |"
            in card)
    position = next(line for line in card.splitlines() if line.startswith("| Position"))
    # Position 0.45: the two orders rarely agree, so swap-averaging "removes" the bias only by
    # losing most decisions: judged by that cost, not PASS (issue 30).
    assert position.rstrip(" |").endswith("| FAIL") and "decisions lost to the swap" in position
    assert "FAIL → PASS" not in position and "+0.0 pp" not in position
    for label in ("Verbosity — longer-answer lift", "Formatting — markdown lift", "Truncation",
                  "Byline"):
        assert f"| {label}" in card
    assert "**Thresholds**" in card and "FAIL at 10 pp" in card
    assert "**Swap consistency**" in card
    assert f"**Parse failures**: {analysis.parse_failures} of {analysis.judgements:,}" in card
    assert analysis.parse_failures > 0
    assert "NOT self-preference" in card
    assert "## Pointwise gaps" in card and "Padding (padded − original)" in card
    assert "## Scoring formats" in card and "| numeric100 |" in card
    assert "judge: fake-judge (claude)" in card and "n=16 pairs" in card


def test_markdown_card_without_mitigation_has_no_after_column(analysis: Analysis) -> None:
    card = render_markdown(analysis, mitigate=False)
    assert "After swap-avg" not in card.split("\n\n")[2]  # the table
    assert "| Bias | Raw | 95% CI | n | Detectable at this n | Verdict |" in card
    position = next(line for line in card.splitlines() if line.startswith("| Position"))
    assert position.rstrip(" |").endswith("FAIL")


def test_json_card_is_strict_json_with_every_estimate(analysis: Analysis) -> None:
    payload = card_json(analysis, mitigate=True)
    text = json.dumps(payload, allow_nan=False)
    back = json.loads(text)
    rows = {r["bias"]: r for r in back["rows"]}
    assert list(rows) == ["position", "verbosity", "formatting", "truncation", "byline"]
    assert rows["position"]["verdict"] == "FAIL"
    for row in rows.values():
        for key in ("estimate", "ci_low", "ci_high", "n", "method", "units"):
            assert key in row["raw"]
    assert back["thresholds"]["decoration"] == {"warn": 5.0, "fail": 10.0, "units": "percentage points"}
    assert back["analysis"]["parse_failures"] == analysis.parse_failures
    assert {f["format"] for f in back["analysis"]["formats"]} == {"binary", "likert5", "numeric100"}


def test_png_card_is_a_real_image(analysis: Analysis, tmp_path: Path) -> None:
    path = render_png(analysis, tmp_path / "sub" / "card.png", mitigate=True)
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 30_000  # a rendered chart, not an empty canvas
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width > 1000 and height > 400


def test_report_reads_evidence_only(evidence: Path, tmp_path: Path) -> None:
    # Copy the evidence away from its database: the card is the same without it.
    copy = tmp_path / "copy.jsonl"
    copy.write_text(evidence.read_text())
    a = render_markdown(analyse_evidence(read_evidence(evidence)), mitigate=True, source="x")
    b = render_markdown(analyse_evidence(read_evidence(copy)), mitigate=True, source="x")
    assert a == b


def test_bad_evidence_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such evidence file"):
        read_evidence(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"bias": "position"}\nnot json\n')
    with pytest.raises(InputError, match=r"row 1, column 'kind'.*lacks the evidence field"):
        read_evidence(bad)
    bad.write_text(json.dumps({k: None for k in ("bias", "kind", "format", "status", "verdict",
                                                 "score", "order", "trial", "arm")}) + "\nnot json\n")
    with pytest.raises(InputError, match="row 2: is not valid JSON"):
        read_evidence(bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(InputError, match="empty"):
        read_evidence(empty)
