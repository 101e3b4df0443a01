"""The Calibration page shows the per-turn view (rubric turn = "each", issue 46), under AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgelab.calibration.mockapi import MockAnthropic
from judgelab.labeler.store import Store
from tests.app.test_analyst_page import open_analyst
from tests.test_turns_calibrate import _judge, _label, _pool, invoke


def test_the_calibration_page_shows_judge_minus_human_by_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    db, quality = _pool(tmp_path)
    _label(db, quality)
    with MockAnthropic(responder=_judge) as mock:
        assert invoke("score", "--base-url", mock.base_url, "--all", "--db", db).exit_code == 0
    _, admin = Store(db).add_rater("boss", role="admin")
    monkeypatch.setenv("JUDGELAB_DB", db)
    at = open_analyst(admin)
    assert not at.exception, at.exception
    assert "Judge minus human, per turn" in [h.value for h in at.header]
    by_position = next(df.value for df in at.dataframe
                       if "turn" in df.value and list(df.value["turn"]) == ["first", "middle", "last"])
    assert by_position.set_index("turn").loc["last", "judge − human"] == pytest.approx(1.0)
    assert any("judge scale points (likert5)" in str(c.value) for c in at.caption)
