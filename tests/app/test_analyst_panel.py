"""The Calibration page's "Panel of judges" section under AppTest: several runs read side by side."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from judgelab.calibration.panel import SimJudge, simulate_panel, to_scale
from judgelab.cli import main
from judgelab.labeler.store import Store
from tests.app.test_analyst_page import open_analyst
from tests.conftest import DATA
from tests.test_panel import MODELS, _write_panel


@pytest.fixture(scope="module")
def panel_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """Three judge runs over the same labelled answers, imported as a user would, and an admin."""
    tmp = tmp_path_factory.mktemp("panel_page")
    judges = [SimJudge("gpt-4o", "gpt", self_bias=0.8), SimJudge("claude-3-opus", "claude"),
              SimJudge("mistral-large", "mistral")]
    frame = to_scale(simulate_panel(judges, MODELS, n_tasks=20, rng=2), "likert5")
    db = str(tmp / "panel.duckdb")
    runner = CliRunner()
    assert runner.invoke(main, ["import", "rubric", str(DATA / "rubric.toml"), "--db", db]).exit_code == 0
    for kind, path in _write_panel(tmp, frame).items():
        assert runner.invoke(main, ["import", kind, str(path), "--db", db]).exit_code == 0
    _, admin = Store(db).add_rater("boss", role="admin")
    return db, admin


def test_admin_reads_the_runs_as_a_panel(panel_project: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    db, admin = panel_project
    monkeypatch.setenv("JUDGELAB_DB", db)
    at = open_analyst(admin)
    assert not at.exception, at.exception
    assert "Panel of judges" in [h.value for h in at.header]
    assert not any("Residual by judge and answer family" in str(c.proto.spec) for c in at.get("vega_lite_chart"))
    at.toggle(key="analyst_panel").set_value(True).run()
    assert not at.exception, at.exception
    specs = [str(c.proto.spec) for c in at.get("vega_lite_chart")]
    assert any("Residual by judge and answer family" in s for s in specs)
    table = next(d.value for d in at.dataframe if "self-bias" in d.value.columns)
    assert sorted(table["model"]) == ["claude-3-opus", "gpt-4o", "mistral-large"]
    gpt = table[table["model"] == "gpt-4o"].iloc[0]
    assert gpt["self-bias"] > 0 and gpt["self-bias 95% CI"].startswith("95% CI")
    assert table[table["model"] == "mistral-large"]["self-bias 95% CI"].iloc[0] == "n/a"
