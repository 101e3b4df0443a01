"""Rendering the calibration report.

Markdown, strict JSON, a real PNG, and the shared tables and charts, including a report whose
sections could not be computed.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from judgelab.calibration.calibrate import CalibrationReport, calibrate
from judgelab.calibration.report import (
    combined_chart,
    render_json,
    render_markdown,
    render_png,
    report_charts,
    report_tables,
    residual_table,
    write_report,
)
from judgelab.labeler.models import ImportedJudgement
from tests.test_calibrate import (
    JUDGE,
    OWN,
    SMALL_CELLS,
    add_length_probe,
    add_position_probe,
    build_store,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> CalibrationReport:
    """Simulated labels, model-written references, length and position probes."""
    built = build_store(tmp_path_factory.mktemp("report") / "r.duckdb", SMALL_CELLS, simulated=True,
                        reference_author=("model", "claude-opus-5"), n_unlabelled=6)
    add_length_probe(built.store, JUDGE, 0.25, 0.5, n=20)
    add_position_probe(built.store, n_pairs=20)
    return calibrate(built.store, built.run_id, n_resamples=300)


@pytest.fixture(scope="module")
def bare_report(tmp_path_factory: pytest.TempPathFactory) -> CalibrationReport:
    """A judge run with no human labels at all: every human-anchored section is skipped."""
    built = build_store(tmp_path_factory.mktemp("bare") / "b.duckdb", SMALL_CELLS, n_unlabelled=0, raters=0)
    return calibrate(built.store, built.run_id, n_resamples=100)


def _strict(text: str) -> Any:
    def refuse(token: str) -> None:
        raise AssertionError(f"non-standard JSON constant {token}")

    return json.loads(text, parse_constant=refuse)


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


# -- markdown ----------------------------------------------------------------------------------


def test_markdown_opens_with_the_simulated_warning_and_carries_the_figures(report: CalibrationReport) -> None:
    md = render_markdown(report)
    first = md.splitlines()[0]
    assert first.startswith("> **SIMULATED LABELS: all 80 human labels")
    # SMALL_CELLS: own family judge 45%, humans 40% -> +5.0; other 40% / 40% -> 0.0; gap +5.0.
    assert "| claude | 45.0 | 40.0 | +5.0 |" in md
    assert "| gpt | 40.0 | 40.0 | +0.0 |" in md
    assert "**Self-preference gap** (own family `claude` minus `gpt`): **+5.0 percentage points**" in md
    assert "This is an **upper bound**" in md and "reference answer(s) by claude-opus-5" in md
    for heading in ("## Human labels", "## Judge minus human, per family", "## Provenance audit",
                    "### Cohen's kappa, judge vs humans", "### Krippendorff's alpha among raters",
                    "## Prediction-powered pass rates", "### Pointwise variant gaps",
                    "### Position (order-swapped comparisons)", "## Scoring formats",
                    "### What a judge-based pipeline should report (seed 001)"):
        assert heading in md, heading
    assert "Confusion matrices, pass verdict (rows: judge, columns: humans), overall and per family:" in md
    # Own family (SMALL_CELLS): judge fail & human fail 10, judge fail & human pass 1,
    # judge pass & human fail 2, both pass 7.
    assert "| claude | 0 | 10 | 1 |" in md and "| claude | 1 | 2 | 7 |" in md
    # 5 of 20 padded variants one point up, 10 of 20 truncated one point down.
    assert "| padded | likert5 |" in md and "+0.25" in md and "+0.50" in md
    assert "- verdict parse rate: 100.0% of" in md
    assert report.human_rule_text() in md


def test_markdown_without_labels_says_what_was_not_computed(bare_report: CalibrationReport) -> None:
    md = render_markdown(bare_report)
    assert not md.startswith("> **SIMULATED")
    assert "No residuals: see *Not computed* below." in md
    assert "## Not computed" in md
    assert "Not computed: kappa: no answer has both a judge verdict and a human label." in md
    # Format structure needs no labels: it is still reported.
    assert "| likert5 |" in md


# -- JSON --------------------------------------------------------------------------------------


def test_json_is_strict_and_simulated_comes_first(report: CalibrationReport, bare_report: CalibrationReport) -> None:
    for r in (report, bare_report):
        payload = _strict(render_json(r))
        assert payload == r.to_dict()
        assert next(iter(payload)) == "simulated_labels"
    payload = _strict(render_json(report))
    assert payload["simulated_labels"] is True and payload["notes"][0].startswith("SIMULATED LABELS")
    assert payload["residuals"]["pass"]["gap"]["extra"]["bound"] == "upper"
    assert payload["kappa"][0]["confusion"]["rows"] == "judge"
    assert sum(map(sum, payload["kappa"][0]["confusion"]["counts"])) == 40
    # Undefined figures are null, never NaN: the bare report's alpha section is absent, not NaN.
    assert _strict(render_json(bare_report))["alpha"] == {}


# -- tables and charts -------------------------------------------------------------------------


def test_tables_are_shared_by_every_form(report: CalibrationReport) -> None:
    tables = report_tables(report)
    assert {"residuals_pass", "residuals_score", "gap", "provenance", "kappa", "alpha", "ppi", "probe_gaps",
            "position", "formats"} <= set(tables)
    res = residual_table(report.residuals["pass"]).set_index("family")
    assert res.loc[OWN, "residual"] == pytest.approx(5.0) and res.loc[OWN, "tasks"] == 20
    assert tables["gap"].loc[0, "upper_bound"]
    assert tables["position"].loc[0, "b"] == pytest.approx(0.6)


def test_charts_embed_their_data_inline(report: CalibrationReport) -> None:
    charts = report_charts(report)
    assert set(charts) == {"residuals", "gap", "agreement", "ppi", "probes", "formats"}
    spec = combined_chart(report).to_dict()
    text = json.dumps(spec)
    # Inline data only: nothing to fetch, so vl-convert renders offline.
    assert '"url"' not in text
    assert "SIMULATED LABELS" in json.dumps(spec["title"])
    assert spec["datasets"] and all(isinstance(v, list) for v in spec["datasets"].values())


# -- PNG and files -----------------------------------------------------------------------------


def test_png_is_a_real_image(report: CalibrationReport, bare_report: CalibrationReport) -> None:
    data = render_png(report)
    width, height = _png_size(data)
    assert len(data) > 100_000 and width > 1000 and height > 1000
    bare = render_png(bare_report, scale=1)
    bw, bh = _png_size(bare)
    assert len(bare) > 5_000 and bw > 300 and bh > 100


def test_write_report_writes_all_three(report: CalibrationReport, tmp_path: Path) -> None:
    out = tmp_path / "nested" / "calibration.md"
    written = write_report(report, out, png=tmp_path / "c.png", json_path=tmp_path / "c.json")
    assert written == [out, tmp_path / "c.png", tmp_path / "c.json"]
    assert out.read_text() == render_markdown(report)
    assert (tmp_path / "c.png").read_bytes().startswith(PNG_MAGIC)
    assert _strict((tmp_path / "c.json").read_text()) == report.to_dict()


def test_parse_failures_count_against_the_parse_rate(tmp_path: Path) -> None:
    built = build_store(tmp_path / "pf.duckdb", SMALL_CELLS, n_unlabelled=0)
    # Two replies that did not parse: recorded with no value, never scored.
    built.store.add_imported_judgements([
        ImportedJudgement(f"{OWN}-{i:03d}", JUDGE, None, None, "numeric100", judge_family=OWN) for i in range(2)
    ] + [ImportedJudgement(f"{OWN}-{i:03d}", JUDGE, 60.0 + i, None, "numeric100", judge_family=OWN)
         for i in range(2, 20)])
    report = calibrate(built.store, built.run_id, n_resamples=100)
    numeric = next(f for f in report.formats if f.format == "numeric100")
    assert numeric.diagnostics.parse_rate.estimate == pytest.approx(18 / 20)
    assert "90.0% of 20 replies" in render_markdown(report)
    # Residuals still use the rubric's own scale (likert5), untouched by the failures.
    assert report.judge_format == "likert5"
