"""Each turn judged through the mock Messages API and calibrated by turn position (turn = "each", issue 46).

Twelve three-turn conversations; every turn says its quality ``q=Q`` (2 to 4). Raters score each
turn: one at Q, one a point above or below it, as many above as below at each position (so the
raters' mean is Q there and the injected +1 is exactly the truth to recover); the judge (the real
``anthropic`` SDK against the mock server) reads Q and adds one point on the conversation's last turn only. The per-turn
view must find +1 on the last turn and nothing on the first and middle ones; a reply without a
verdict is one turn's parse failure, never a score.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from judgelab.calibration import formats
from judgelab.calibration.mockapi import MockAnthropic
from judgelab.cli import main
from judgelab.labeler.store import Store
from judgelab.labeler.transcripts import last_turn
from tests.conftest import DATA

N, TURNS = 12, 3
UNREADABLE = "t5: turn 2 q="  # the judge gives no verdict on this one turn


@pytest.fixture(autouse=True)
def _no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _pool(tmp_path: Path) -> tuple[str, dict[tuple[str, int], int]]:
    """The database (rubric rating each turn, the conversations) and each turn's quality."""
    rng = random.Random(1)
    quality: dict[tuple[str, int], int] = {}
    rows = []
    for i in range(N):
        msgs: list[dict[str, Any]] = []
        for k in range(1, TURNS + 1):
            q = quality[(f"c{i}", k)] = rng.randint(2, 4)
            final = " FINAL" if k == TURNS else ""
            msgs += [{"role": "user", "content": f"ask {k}"},
                     {"role": "assistant", "content": f"t{i}: turn {k} q={q}{final}"}]
        rows.append({"task_id": f"t{i}", "prompt": f"Case {i}", "answer_id": f"c{i}",
                     "family": ("north", "south")[i % 2], "model": "m", "messages": msgs})
    (tmp_path / "conv.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rubric = tmp_path / "each.toml"
    rubric.write_text('turn = "each"\n' + (DATA / "rubric.toml").read_text())
    db = str(tmp_path / "p.duckdb")
    assert invoke("import", "rubric", str(rubric), "--db", db).exit_code == 0
    assert invoke("import", "answers", str(tmp_path / "conv.jsonl"), "--db", db).exit_code == 0
    return db, quality


def _label(db: str, quality: dict[tuple[str, int], int]) -> None:
    """Two raters score every turn through the rater's write path."""
    store = Store(db)
    rubric = store.rubric()
    assert rubric is not None
    raters = [store.add_rater(name)[0] for name in ("ann", "bo")]
    store.assign_k([f"c{i}" for i in range(N)], 2, [r.rater_id for r in raters],
                   rubric=(rubric.rubric_id, rubric.version))
    for rater, noisy in zip(raters, (False, True), strict=True):
        for item in store.rater_queue(rater.rater_id):
            answer = store.score_view(rater.rater_id, item.assignment_id).transcript
            assert answer is not None
            conv = answer.messages[1].content.split(":")[0].replace("t", "c")
            i = int(conv[1:])
            turns = {k: float(quality[(conv, k)] + (((i + k) % 2) * 2 - 1 if noisy else 0))
                     for k in range(1, TURNS + 1)}
            store.add_turn_label(rater.rater_id, item.assignment_id, overall=3, turns=turns,
                                 criteria={c.criterion_id: 3.0 for c in rubric.criteria})


def _judge(request: dict[str, Any]) -> str:
    """Q of the turn the call rates, plus one on a conversation's final turn; no verdict on one turn."""
    read = formats.read_call(request["messages"][-1]["content"])
    assert read is not None
    turn = last_turn(read.answers[0])
    if turn.startswith(UNREADABLE):
        return "I would rather not say."
    q = int(re.search(r"q=(\d)", turn).group(1))  # type: ignore[union-attr]
    return f"Read against the rubric.\nVERDICT: {q + (1 if 'FINAL' in turn else 0)}"


def test_each_turn_is_judged_and_the_last_turn_s_plus_one_is_recovered(tmp_path: Path) -> None:
    db, quality = _pool(tmp_path)
    _label(db, quality)
    with MockAnthropic(responder=_judge) as mock:
        scored = invoke("score", "--base-url", mock.base_url, "--all", "--db", db)
        bodies = [r.body["messages"][-1]["content"] for r in mock.received if r.path == "/v1/messages"]
    assert scored.exit_code == 0, scored.output
    assert "parse failures 1" in scored.output  # the unreadable turn, counted
    assert "scored all 12 answers and their 36 assistant turns one by one in likert5" in scored.output
    assert len(bodies) == N + N * TURNS  # each conversation whole, then each of its turns
    # A middle turn's call shows the conversation up to that turn: nothing said after it.
    middle = next(b for b in bodies if "t0: turn 2" in b and "t0: turn 3" not in b)
    assert "t0: turn 1" in middle
    run_id = Store(db).calibration_runs()["run_id"].iloc[0]
    rows = Store(db).run_rows(str(run_id))
    turn_rows = rows[rows["probe"] == "score-turn"]
    assert (turn_rows["status"] == "parse_failure").sum() == 1  # counted, never a score
    assert turn_rows["value"].notna().sum() == N * TURNS - 1

    out = invoke("calibrate", "--judge-run", str(run_id), "--out", str(tmp_path / "c.md"), "--resamples", "400",
                 "--json", "--db", db)
    assert out.exit_code == 0, out.output
    turns = json.loads(out.stdout)["turns"]
    by = {r["position"]: r for r in turns["by_position"]}
    assert turns["units"] == "judge scale points (likert5)" and turns["n_turns"] == N * TURNS - 1
    last, first, mid = by["last"], by["first"], by["middle"]
    assert last["estimate"] == pytest.approx(1.0) and 0.5 < last["ci_low"] <= 1.0 <= last["ci_high"] < 1.5
    assert first["estimate"] == pytest.approx(0.0) and first["ci_low"] <= 0 <= first["ci_high"]
    # The middle turns lost one turn to the parse failure: one whose raters' mean sat half a point
    # above Q (a residual of -0.5), so the eleven left average +0.5 / 11.
    assert mid["estimate"] == pytest.approx(0.5 / 11) and mid["ci_low"] <= 0 <= mid["ci_high"]
    assert (first["n"], mid["n"], last["n"]) == (N, N - 1, N)  # the unparsed turn is left out
    assert [r["position"] for r in turns["by_number"]] == ["1", "2", "3"]
    text = invoke("calibrate", "--judge-run", str(run_id), "--out", str(tmp_path / "c.md"), "--resamples", "400",
                  "--db", db).output
    assert "per turn (35 turns of 12 conversations; judge − human in judge scale points (likert5)):" in text
    assert re.search(r"  last: \+\d\.\d\d \(95% CI ", text), text
    assert "## Judge minus human, per turn" in (tmp_path / "c.md").read_text()
    print(text)  # the figures, for whoever reads the run with -s


def test_no_per_turn_labels_is_said_plainly(tmp_path: Path) -> None:
    db, _ = _pool(tmp_path)
    with MockAnthropic(responder=_judge) as mock:
        invoke("score", "--base-url", mock.base_url, "--all", "--db", db)
    run_id = str(Store(db).calibration_runs()["run_id"].iloc[0])
    labels = tmp_path / "labels.csv"
    labels.write_text("answer_id,rater,score\n" + "".join(f"c{i},ann,3\n" for i in range(N)))
    assert invoke("import", "labels", str(labels), "--db", db).exit_code == 0
    out = invoke("calibrate", "--judge-run", run_id, "--out", str(tmp_path / "c.md"), "--resamples", "50",
                 "--db", db)
    assert out.exit_code == 0, out.output
    assert "per turn: none (no per-turn labels: no rater has scored the turns of a conversation yet)" in out.output
    assert "No per-turn view: no per-turn labels" in (tmp_path / "c.md").read_text()
