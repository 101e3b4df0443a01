"""The probe workflow as library calls: run_probes and estimate_probes, without the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from judgelab.calibration import pricing
from judgelab.calibration.judges import AnthropicJudge, FakeJudge
from judgelab.calibration.mockapi import MockAnthropic
from judgelab.calibration.probes import (
    ProbeRunResult,
    arun_probes,
    dataset_label,
    estimate_probes,
    other_family,
    run_probes,
    setup_probes,
)
from judgelab.labeler.errors import InputError
from judgelab.labeler.examples import example_path
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store

DATA = example_path("rubric.toml").parent


def _evidence(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_run_probes_records_every_call_and_a_rerun_is_free(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    judge = FakeJudge(seed=0, position=0.4)
    result = run_probes(judge, store, n=4, biases="position,formatting", evidence=out)
    assert isinstance(result, ProbeRunResult)
    run = result.summary
    # 4 pairs x 2 orders for position; 4 trials x 2 arms x 2 orders for formatting.
    assert run.finished and run.planned == 8 + 16 == run.parsed and run.errors == 0
    rows = _evidence(out)
    assert len(rows) == run.planned and {r["dataset"] for r in rows} == {"sample"}
    assert {r["bias"] for r in rows} == {"position", "formatting"}
    recorded = store.judge_run(run.run_id)
    assert recorded is not None and recorded["judge_kind"] == "fake"
    assert recorded["params"] == {"pad": "offline"}
    payload = result.to_dict()
    assert payload["padding"] == {
        "rewrites": 0, "reused": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "unpriced": 0,
    }
    assert payload["run"]["run_id"] == run.run_id
    again = run_probes(judge, store, n=4, biases=["formatting", "position"], evidence=out,
                       params={"note": "rerun"})
    assert again.summary.issued == 0 and again.summary.cached == again.summary.planned


def test_fake_judge_cannot_pad_with_a_model(store: Store) -> None:
    with pytest.raises(InputError, match="--pad llm needs a model: the anthropic or openai judge"):
        run_probes(FakeJudge(seed=0), store, n=2, biases="position", pad="llm")


def test_pool_probes_take_the_projects_answers_and_store_their_variants(
    store: Store, tmp_path: Path
) -> None:
    import_file(store, "rubric", DATA / "rubric.toml")
    import_file(store, "answers", DATA / "answers.jsonl")
    setup = setup_probes(store, "sample", 3, seed=0, biases=("truncation",))
    assert setup.pool_source == "database" and len(setup.pool) == 6
    assert setup.pool_rubric == store.rubric()
    result = run_probes(FakeJudge(seed=0), store, n=3, biases="truncation", evidence=tmp_path / "r.jsonl")
    assert result.summary.finished
    truncated = store.answers(variant="truncated")
    assert sorted(truncated["parent_answer_id"]) == sorted(a.answer_id for a in setup.pool)


def test_the_anthropic_judge_pads_with_the_model_once(store: Store, tmp_path: Path) -> None:
    with MockAnthropic() as mock:
        judge = AnthropicJudge("claude-sonnet-4-6", api_key="test", base_url=mock.base_url)
        est = estimate_probes(judge, store, n=2, biases="verbosity").cost
        first = run_probes(judge, store, n=2, biases="verbosity", evidence=tmp_path / "a.jsonl",
                           progress=False)
        # One rewrite per pool answer (both answers of each pair), made before any judge call
        # and stored; the estimate foresaw the rewrites and the calls.
        assert first.spend.rewrites == est.padding_rewrites == 4 and first.spend.reused == 0
        assert first.spend.cost_usd > 0 and first.summary.finished
        assert first.summary.issued == est.calls
        recorded = store.judge_run(first.summary.run_id)
        assert recorded is not None and recorded["params"]["pad"] == "llm:claude-sonnet-4-6"
        again = run_probes(judge, store, n=2, biases="verbosity", evidence=tmp_path / "b.jsonl",
                           progress=False)
        assert again.spend.rewrites == 0 and again.spend.reused == 4
        assert again.summary.issued == 0


def test_estimate_counts_the_calls_the_run_makes(store: Store, tmp_path: Path) -> None:
    judge = FakeJudge(seed=0)
    before = estimate_probes(judge, store, n=3, biases="position,byline")
    cost = before.cost
    assert (before.dataset, before.biases, before.n_pairs) == ("sample", ("position", "byline"), 3)
    assert cost.planned_calls == cost.distinct_requests == cost.calls == 12
    assert cost.model == "fake-judge" and cost.padding_rewrites == 0
    run = run_probes(judge, store, n=3, biases="position,byline", evidence=tmp_path / "r.jsonl")
    assert run.summary.issued == cost.calls
    after = estimate_probes(judge, store, n=3, biases="position,byline").cost
    assert after.calls == 0 and after.already_cached == 12 and after.cost_usd == 0.0
    assert before.to_dict()["biases"] == ["position", "byline"]


def test_estimate_with_the_api_counts_tokens_and_prices_padding() -> None:
    with MockAnthropic() as mock:
        judge = AnthropicJudge("claude-sonnet-4-6", api_key="test", base_url=mock.base_url)
        exact = estimate_probes(judge, None, n=2, biases="verbosity", count_tokens=True)
        approx = estimate_probes(judge, None, n=2, biases="verbosity", batch=True)
        assert mock.count("POST /v1/messages") == 0  # nothing was judged
        # One per distinct request, and two for the rubric block (with it and without it).
        assert mock.count("POST /v1/messages/count_tokens") == 16 + 2
    assert exact.cost.token_method == pricing.EXACT_METHOD
    assert approx.cost.token_method == pricing.APPROX_METHOD and approx.cost.batch
    # 2 trials x 2 arms x 2 orders pairwise, 4 pool answers x 2 variants pointwise.
    assert exact.cost.calls == approx.cost.calls == 16
    assert exact.cost.padding_rewrites == 4 and exact.cost.padding_cost_usd is not None
    assert exact.pool == "pairs" and exact.pool_answers == 4


def test_small_helpers() -> None:
    assert dataset_label("sample") == "sample"
    assert dataset_label("/tmp/x/pairs.jsonl") == "pairs.jsonl"
    assert other_family(None, "gpt") == "claude"


def test_arun_probes_is_a_coroutine(store: Store) -> None:
    result = asyncio.run(arun_probes(FakeJudge(seed=0), store, n=1, biases="position"))
    assert result.summary.planned == 2 and result.summary.finished
