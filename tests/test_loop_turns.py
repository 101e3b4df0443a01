"""``judgelab disagreements --per-turn``: a planted error on one turn of one trace is ranked first (issue 55).

Two three-turn conversations under a rubric rating each turn; every assistant turn says its quality
``q=Q``. Two raters score each turn at Q; the judge (the real ``anthropic`` SDK against the mock
server) reads Q, except on turn 2 of ``c1`` where it says three points more. That (answer, turn)
must come first, at distance 3, with the judge's own reply and both raters' turn scores, blind.
"""

from __future__ import annotations

import csv
import json
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

TURNS = 3
QUALITY = {("c0", 1): 2, ("c0", 2): 4, ("c0", 3): 3, ("c1", 1): 3, ("c1", 2): 2, ("c1", 3): 4}
PLANTED = "t1: turn 2 q="  # the judge's one error: three points too high on this turn


@pytest.fixture(autouse=True)
def _no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _judge(request: dict[str, Any]) -> str:
    read = formats.read_call(request["messages"][-1]["content"])
    assert read is not None
    turn = last_turn(read.answers[0])
    q = int(re.search(r"q=(\d)", turn).group(1))  # type: ignore[union-attr]
    return f"Turn read: {turn}.\nVERDICT: {q + (3 if turn.startswith(PLANTED) else 0)}"


def _project(tmp_path: Path, *, each: bool) -> str:
    """Two conversations under a rubric rating each turn (or only the whole), scored by the mock judge."""
    rows = []
    for i in range(2):
        msgs: list[dict[str, Any]] = []
        for k in range(1, TURNS + 1):
            msgs += [{"role": "user", "content": f"ask {k}"},
                     {"role": "assistant", "content": f"t{i}: turn {k} q={QUALITY[(f'c{i}', k)]}"}]
        rows.append({"task_id": f"t{i}", "prompt": f"Case {i}", "answer_id": f"c{i}", "family": ("north", "south")[i],
                     "model": "m", "messages": msgs})
    (tmp_path / "conv.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(('turn = "each"\n' if each else "") + (DATA / "rubric.toml").read_text())
    db = str(tmp_path / "p.duckdb")
    assert invoke("import", "rubric", str(rubric), "--db", db).exit_code == 0
    assert invoke("import", "answers", str(tmp_path / "conv.jsonl"), "--db", db).exit_code == 0
    store = Store(db)
    if each:  # two raters score every turn at its quality, through the rater's write path
        spec = store.rubric()
        assert spec is not None
        raters = [store.add_rater(name)[0] for name in ("ann", "bo")]
        store.assign_k(["c0", "c1"], 2, [r.rater_id for r in raters], rubric=(spec.rubric_id, spec.version))
        for rater in raters:
            for item in store.rater_queue(rater.rater_id):
                view = store.score_view(rater.rater_id, item.assignment_id).transcript
                assert view is not None
                conv = view.messages[1].content.split(":")[0].replace("t", "c")
                store.add_turn_label(rater.rater_id, item.assignment_id, overall=3,
                                     turns={k: float(QUALITY[(conv, k)]) for k in range(1, TURNS + 1)},
                                     criteria={c.criterion_id: 3.0 for c in spec.criteria})
    else:
        labels = tmp_path / "labels.csv"
        labels.write_text("answer_id,rater,score\nc0,ann,3\nc1,ann,4\n")
        assert invoke("import", "labels", str(labels), "--db", db).exit_code == 0
    with MockAnthropic(responder=_judge) as mock:
        scored = invoke("score", "--base-url", mock.base_url, "--all", "--db", db)
    assert scored.exit_code == 0, scored.output
    return db


def test_per_turn_disagreements_put_the_planted_turn_first(tmp_path: Path) -> None:
    db = _project(tmp_path, each=True)
    base = ("disagreements", "--db", db, "--all-labels", "--per-turn")
    out = invoke(*base, "--json")
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    turns = payload["turns"]
    assert len(turns) == 2 * TURNS and payload["blind"]
    first = turns[0]
    assert (first["rank"], first["answer_id"], first["turn"], first["n_turns"]) == (1, "c1", 2, TURNS)
    assert (first["judge"], first["people"], first["distance"]) == (5.0, 2.0, 3.0)
    assert "t1: turn 2 q=2" in first["judge_reply"] and "VERDICT: 5" in first["judge_reply"]
    assert first["raters"] == [{"rater": "ann", "score": 2.0}, {"rater": "bo", "score": 2.0}]
    assert all(t["distance"] == 0 for t in turns[1:])
    assert not {"family", "model", "variant"} & set(first)  # blind, as the answer-level view
    text = invoke(*base, "--top", "2", "--csv", str(tmp_path / "turns.csv"))
    assert text.exit_code == 0, text.output
    assert "per turn: 6 turns of 2 conversations, farthest first; blind" in text.output
    assert "    1. c1 turn 2 of 3 (task t1): judge 5, people 2, |judge - people| 3" in text.output
    assert "       ann: 2, bo: 2" in text.output
    with open(tmp_path / "turns.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert (rows[0]["answer_id"], rows[0]["turn"], rows[0]["raters"]) == ("c1", "2", "ann: 2 | bo: 2")
    unblind = json.loads(invoke(*base, "--unblind", "--json").stdout)["turns"][0]
    assert unblind["family"] == "south"
    print(text.output)


def test_per_turn_without_per_turn_judgements_says_so(tmp_path: Path) -> None:
    db = _project(tmp_path, each=False)
    out = invoke("disagreements", "--db", db, "--all-labels", "--per-turn")
    assert out.exit_code == 2, out.output
    error = out.stderr.splitlines()[0]  # one line, then the project's usual "Fix:" line
    assert error.startswith("judgelab: error: judge run ") and "has no per-turn judgements" in error
    assert invoke("disagreements", "--db", db, "--all-labels").exit_code == 0  # the answer-level view still runs


def test_the_judge_loop_page_shows_the_turns_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    db = _project(tmp_path, each=True)
    _, token = Store(db).add_rater("boss", role="admin")
    monkeypatch.setenv("JUDGELAB_DB", db)
    page = Path(__file__).resolve().parents[1] / "judgelab" / "views" / "admin_loop.py"
    at = AppTest.from_file(str(page), default_timeout=60)
    at.query_params["t"] = token
    at.run()
    assert not at.exception and not at.error
    at.checkbox(key="loop_per_turn").check().run()
    assert not at.exception and not at.error
    turns = next(d.value for d in at.dataframe if "turn" in d.value.columns)
    assert {"answer_id", "turn", "n_turns", "judge", "people", "distance", "raters"} <= set(turns.columns)
    assert not {"family", "model", "variant"} & set(turns.columns)  # blind unless unblinded
    assert list(turns["distance"]) == sorted(turns["distance"], reverse=True) and len(turns) % TURNS == 0
