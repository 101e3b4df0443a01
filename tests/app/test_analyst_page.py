"""The analyst page "Calibration" under AppTest: an admin sees the figures, a rater never does."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.test_calibrate import SMALL_CELLS, Built, add_position_probe, build_store

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "judgelab" / "views" / "analyst.py"
APP = REPO / "judgelab" / "app.py"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Built, dict[str, str]]:
    """Simulated labels, a judge run with an order-swapped probe, an admin and a rater."""
    built = build_store(tmp_path_factory.mktemp("analyst") / "a.duckdb", SMALL_CELLS, simulated=True,
                        n_unlabelled=6)
    add_position_probe(built.store, n_pairs=20)
    _, admin = built.store.add_rater("boss", role="admin")
    _, rater = built.store.add_rater("ann")
    return built, {"admin": admin, "rater": rater}


@pytest.fixture
def served(db: tuple[Built, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> tuple[Built, dict[str, str]]:
    monkeypatch.setenv("JUDGELAB_DB", str(db[0].store.path))
    return db


def open_analyst(token: str | None) -> AppTest:
    """The Calibration page as ``token``'s browser opens it (``JUDGELAB_DB`` names the database)."""
    at = AppTest.from_file(str(PAGE), default_timeout=120)
    at.session_state["analyst_resamples"] = 300  # the page's lightest setting keeps tests quick
    if token is not None:
        at.query_params["t"] = token
    return at.run()


def charts(at: AppTest) -> list[str]:
    """The Vega-Lite specs (JSON text) of every chart on the page."""
    return [str(el.proto.spec) for el in at.get("vega_lite_chart")]


def test_admin_sees_the_figures(served: tuple[Built, dict[str, str]]) -> None:
    built, tokens = served
    at = open_analyst(tokens["admin"])
    assert not at.exception, at.exception
    assert at.title[0].value == "Calibration"
    # The simulated-label warning is the first thing under the title, before any figure.
    first, second = list(at.main.children.values())[:2]
    assert first.type == "title" and second.type == "warning"
    assert str(getattr(second, "value", "")).startswith("SIMULATED LABELS")
    assert at.warning[0].value.startswith("SIMULATED LABELS: all 80 human labels")
    gaps = {m.label: m.value for m in at.metric}
    assert gaps["Self-preference gap, pass"] == "+5.0 percentage points"
    headers = [h.value for h in at.header]
    for section in ("Judge minus human, per family", "Agreement", "Prediction-powered pass rates", "Probes",
                    "Scoring formats"):
        assert section in headers
    specs = charts(at)
    assert len(specs) >= 5  # residuals, gap, agreement, ppi, formats
    for title in ("Residual, pass rate", "Self-preference gap, pass", "Agreement (kappa, alpha)",
                  "PPI vs human only", "Effective levels"):
        assert any(title in spec for spec in specs), title
    # Residuals (pass, score), provenance, kappa, confusion, alpha, PPI, position, formats.
    assert len(at.dataframe) >= 8
    residuals = next(df.value for df in at.dataframe if "residual" in df.value.columns)
    assert set(residuals["family"]) == {"claude", "gpt"}
    assert residuals.set_index("family").loc["claude", "residual"] == pytest.approx(5.0)
    assert built.run_id in at.selectbox(key="analyst_run").options[0]


def test_admin_can_switch_the_human_rule(served: tuple[Built, dict[str, str]]) -> None:
    _, tokens = served
    at = open_analyst(tokens["admin"])
    at.radio(key="analyst_rule").set_value("majority").run()
    assert not at.exception, at.exception
    assert any("ties going to the lower score" in c.value for c in at.caption)


@pytest.mark.parametrize("who", ["rater", None])
def test_rater_and_stranger_are_refused(served: tuple[Built, dict[str, str]], who: str | None) -> None:
    _, tokens = served
    at = open_analyst(tokens[who] if who else None)
    assert not at.exception, at.exception
    assert any("Access denied" in e.value for e in at.error)
    assert not charts(at) and not at.dataframe and not at.metric
    text = " ".join(str(m.value) for m in at.markdown) + " ".join(str(c.value) for c in at.caption)
    assert "claude" not in text and "gpt" not in text


def test_navigation_offers_calibration_to_admins_only(served: tuple[Built, dict[str, str]]) -> None:
    _, tokens = served
    rater = AppTest.from_file(str(APP), default_timeout=120)
    rater.query_params["t"] = tokens["rater"]
    rater.run()
    assert not rater.exception, rater.exception
    # The rater's navigation does not register the page, so it cannot be switched to.
    with pytest.raises(ValueError, match=r"Could not find a navigation page.*analyst\.py"):
        rater.switch_page("views/analyst.py")
    admin = AppTest.from_file(str(APP), default_timeout=120)
    admin.query_params["t"] = tokens["admin"]
    admin.session_state["analyst_resamples"] = 300
    admin.run()
    admin.switch_page("views/analyst.py").run()
    assert not admin.exception, admin.exception
    assert admin.title[0].value == "Calibration" and admin.metric


def test_chart_rows_are_labelled_whole_and_never_share_a_line(db: tuple[Built, dict[str, str]]) -> None:
    from judgelab.calibration.calibrate import calibrate
    from judgelab.calibration.report import report_charts

    built, _ = db
    report = calibrate(built.store, n_resamples=200, seed=0)
    charts = report_charts(report)
    ppi = charts["ppi"].to_dict()
    layer = ppi["layer"][-1]
    assert layer["encoding"]["y"]["axis"]["labelLimit"] == 0  # "kappa pass verdict ...", not cut
    assert "yOffset" not in layer["encoding"]  # each family and method on its own labelled row
    assert ppi["height"] == {"step": 22}
    rows = [r["label"] for r in ppi["datasets"][next(iter(ppi["datasets"]))]]
    families = sorted({p.family for p in report.ppi})
    assert rows == [f"{f} · {m}" for f in families for m in ("PPI", "human only")]
    agreement = charts["agreement"].to_dict()
    assert agreement["layer"][-1]["encoding"]["y"]["axis"]["labelLimit"] == 0


def test_a_visitors_clear_cache_does_not_make_the_report_recompute(
    served: tuple[Built, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29 item 11: Streamlit's clear-cache message (any visitor may send it) keeps the report.

    It empties st.cache_data and st.cache_resource; the report lives elsewhere, so the next run
    reads it again instead of loading and bootstrapping anew.
    """
    import streamlit as st

    import judgelab.admin._kept as kept_module
    import judgelab.calibration.calibrate._build as build_module

    loads: list[str] = []
    real = build_module.load_calibration_data

    def counted(*args: object, **kwargs: object) -> object:
        loads.append("load")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(build_module, "load_calibration_data", counted)
    monkeypatch.setattr(kept_module, "load_calibration_data", counted, raising=False)
    _, tokens = served
    at = open_analyst(tokens["admin"])
    assert not at.exception, at.exception
    first = len(loads)
    st.cache_data.clear()  # what the clear-cache message does (AppSession._handle_clear_cache_request)
    st.cache_resource.clear()
    at.run()
    assert not at.exception, at.exception
    assert len(loads) == first, "the report was computed again after a clear-cache"
    assert at.title[0].value == "Calibration" and at.metric
