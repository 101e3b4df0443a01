"""Every probe through a team's judge spec, offline and through the real SDK against the mock API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgelab.calibration.judges import AnthropicJudge, FakeJudge
from judgelab.calibration.mockapi import MockAnthropic
from judgelab.calibration.probes import BIASES, analyse_evidence, estimate_probes, read_evidence, run_probes
from judgelab.calibration.report_card import render_markdown
from judgelab.calibration.spec import load_spec, parse_spec
from judgelab.labeler.errors import InputError
from judgelab.labeler.store import Store
from tests.conftest import DATA

SPEC = DATA / "judge_spec.toml"


def test_probes_through_the_spec_against_the_mock_api(store: Store, tmp_path: Path) -> None:
    spec = load_spec(SPEC)
    out = tmp_path / "e.jsonl"
    with MockAnthropic(responder=FakeJudge(seed=0, spec=spec, position=0.3).respond) as mock:
        judge = AnthropicJudge(spec.model or "m", api_key="test", base_url=mock.base_url, spec=spec,
                               temperature=spec.temperature, max_tokens=spec.max_tokens)
        result = run_probes(judge, store, n=4, biases=",".join(BIASES), evidence=out, pad="offline",
                            progress=False)
        bodies = [r.body for r in mock.received if r.path == "/v1/messages"]
    run = result.summary
    assert run.finished and run.parse_failures == 0 and run.errors == 0 and run.issued == len(bodies) > 0
    # Server side: every request carries the spec's text, never judgelab's built-in prompt.
    for body in bodies:
        system = body["system"][0]["text"]
        user = body["messages"][0]["content"]
        assert system.startswith("Act as an impartial judge") and "VERDICT" not in system + user
        assert "[The Start of Assistant A's Answer]" in user or "[The Start of Assistant's Answer]" in user
        assert body["temperature"] == 0.0 and body["max_tokens"] == 1024
    rows = read_evidence(out)
    assert set(rows["bias"]) == set(BIASES) and set(rows["format"]) == {"pairwise5", "likert5"}
    pairwise = rows[rows["kind"] == "pairwise"]
    assert {r.splitlines()[-1] for r in pairwise["raw"]} <= {"[[A]]", "[[B]]", "[[C]]"}
    assert set(pairwise["verdict"]) <= {2.0, -2.0, 0.0}, "verdicts read by the spec's mapping"
    pointwise = rows[rows["kind"] == "pointwise"]
    pairs = zip(pointwise["raw"], pointwise["score"], strict=True)
    assert all(raw.splitlines()[-1] == f"Rating: [[{int(score)}]]" for raw, score in pairs)
    assert set(rows["judge_spec"]) == {spec.card_line(model=judge.model, params=judge.params)}
    card = render_markdown(analyse_evidence(rows), mitigate=True)
    assert f"Prompt: judge spec support-judge-fastchat (judge_spec.toml, sha256 {spec.sha256[:12]})" in card
    assert "## Pointwise gaps, in the judge's own units (likert5, 1-5)" in card
    recorded = store.judge_run(run.run_id)
    assert recorded is not None and recorded["family"] == "claude"
    assert recorded["params"]["judge_spec"]["sha256"] == spec.sha256


def test_a_fake_judge_with_a_spec_shows_its_injected_position_bias(store: Store, tmp_path: Path) -> None:
    judge = FakeJudge(seed=0, position=0.4, spec=load_spec(SPEC))
    out = tmp_path / "e.jsonl"
    result = run_probes(judge, store, n=20, biases="position", evidence=out, progress=False)
    assert result.summary.parse_failures == 0
    position = analyse_evidence(read_evidence(out)).result("position")
    assert position is not None and position.raw.estimate > 20 and position.verdict_raw == "FAIL"


def test_a_spec_without_a_pairwise_template_refuses_pairwise_probes(store: Store, tmp_path: Path) -> None:
    doc = {"templates": [{"kind": "pointwise", "user": "{prompt}\n---\n{answer}",
                          "verdict": {"format": "likert5", "regex": r"Score: (\d)",
                                      "samples": [{"reply": "Score: 4", "expect": 4}]}}]}
    judge = FakeJudge(seed=0, spec=parse_spec(doc, name="pointwise-only"))
    with pytest.raises(InputError, match="has no pairwise template, and the position probe compares two answers"):
        run_probes(judge, store, n=2, biases="position")
    # The format study needs only the pointwise template.
    result = run_probes(judge, store, n=2, biases="format", evidence=tmp_path / "f.jsonl", progress=False)
    assert result.summary.finished and result.summary.parse_failures == 0


def test_estimate_prices_the_spec_prompt(tmp_path: Path) -> None:
    spec = load_spec(SPEC)
    plain = estimate_probes(AnthropicJudge("claude-sonnet-4-6", api_key="x"), None, n=5, biases="position")
    mine = estimate_probes(AnthropicJudge("claude-sonnet-4-6", api_key="x", spec=spec), None, n=5,
                           biases="position")
    assert mine.judge_spec is not None and mine.judge_spec.startswith("judge spec support-judge-fastchat")
    assert plain.judge_spec is None and mine.cost.calls == plain.cost.calls
    assert json.dumps(mine.to_dict())
