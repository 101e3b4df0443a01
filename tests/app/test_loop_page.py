"""The Judge loop admin page under AppTest: disagreements shown blind, a compare run, looks counted."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from judgelab.calibration.loop import held_out_summary
from judgelab.labeler.models import ImportedJudgement
from judgelab.labeler.store import Store
from tests.test_calibrate import SMALL_CELLS, build_store

PAGE = Path(__file__).resolve().parents[2] / "judgelab" / "views" / "admin_loop.py"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Store, str, str]:
    """Two imported judge versions on the same labelled answers; version B is one point harsher on every answer."""
    built = build_store(tmp_path / "loop.duckdb", SMALL_CELLS)
    store = built.store
    rows = store.run_rows(built.run_id)
    store.add_imported_judgements([
        ImportedJudgement(str(a), "judge-v2", max(1.0, float(v) - 1), None, "likert5", judge_family="claude")
        for a, v in zip(rows["answer_id"], rows["value"], strict=True)
    ])
    monkeypatch.setenv("JUDGELAB_DB", str(store.path))
    return store, built.run_id, "import:judge-v2"


def _open(token: str) -> AppTest:
    at = AppTest.from_file(str(PAGE), default_timeout=60)
    at.query_params["t"] = token
    return at.run()


def test_the_page_shows_disagreements_blind_compares_and_counts_held_out_looks(
    project: tuple[Store, str, str],
) -> None:
    store, run_a, run_b = project
    _, token = store.add_rater("boss", role="admin")
    at = _open(token)
    assert not at.exception and not at.error
    assert at.metric[0].value == "0"
    table = at.dataframe[0].value
    assert {"rank", "answer_id", "judge", "people", "distance", "raters"} <= set(table.columns)
    assert not {"family", "model", "variant"} & set(table.columns)
    assert list(table["distance"]) == sorted(table["distance"], reverse=True)
    at.checkbox(key="loop_unblind").check().run()
    assert "family" in at.dataframe[0].value.columns
    at.selectbox(key="loop_a").select(run_a)
    at.selectbox(key="loop_b").select(run_b)
    at.checkbox(key="loop_held_out").check()
    at.button(key="loop_compare").click().run()
    assert not at.exception and not at.error
    assert any("Verdict:" in m.value for m in at.markdown)
    assert held_out_summary(store)["looks"] == 1
    assert at.metric[0].value == "1"  # drawn after the compare: this look is counted
    history = next(d.value for d in at.dataframe if "compares" in d.value.columns)
    assert any("held-out" in c for c in history["compares"])


def test_raters_are_kept_out(project: tuple[Store, str, str]) -> None:
    store, _, _ = project
    _, token = store.add_rater("ann")
    at = _open(token)
    assert any("Access denied" in str(e.value) for e in at.error)


def test_the_overview_asks_for_a_compare_when_a_new_judge_version_came_after_the_last(
    project: tuple[Store, str, str],
) -> None:
    from judgelab.calibration.loop import compare_runs

    store, run_a, run_b = project
    _, token = store.add_rater("boss", role="admin")
    compare_runs(store, run_a, run_b, n_resamples=20)
    rows = store.run_rows(run_b)
    store.add_imported_judgements([ImportedJudgement(str(a), "judge-v3", float(v), None, "likert5")
                                   for a, v in zip(rows["answer_id"], rows["value"], strict=True)])
    at = AppTest.from_file(str(PAGE.with_name("admin_overview.py")), default_timeout=60)
    at.query_params["t"] = token
    at.run()
    warning = [str(w.value) for w in at.warning if "Re-validate the judge" in str(w.value)]
    assert warning and f"judgelab compare --judge-run {run_b} --judge-run import:judge-v3" in warning[0]
