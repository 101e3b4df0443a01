"""Padding rewrites by a model through the OpenAI-compatible judge's own back-end (``--pad llm``).

As for the Anthropic judge (tests/probes/test_workflow.py, test_format_study_and_padding_batch.py):
the rewrites go through the real ``openai`` SDK over HTTP to the local mock (Chat Completions one
by one, or with ``--batch`` one Batch API batch of their own at the batch price), are stored and
reused, are priced from each reply's usage (a local model honestly unpriced), and a rewrite made
on one endpoint is never reused for the same model name on another.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.calibration import perturb, pricing
from judgelab.calibration.judges import OpenAIJudge
from judgelab.calibration.mockapi import MockAnthropic
from judgelab.calibration.probes import PadModel, Variants, estimate_probes, run_probes
from judgelab.calibration.probes._padding import OpenAIPadWriter
from judgelab.cli import main
from judgelab.labeler.store import Store

MODEL = "gpt-4.1-mini"


def _judge(url: str, model: str = MODEL) -> OpenAIJudge:
    return OpenAIJudge(model, api_key="sk-test", base_url=url)


def _pad_requests(mock: MockAnthropic) -> list[dict[str, object]]:
    """The Chat Completions bodies that asked for a padding rewrite."""
    return [r.body for r in mock.received
            if r.path == "/v1/chat/completions" and "<answer_to_pad>" in json.dumps(r.body)]


def test_the_openai_judge_pads_with_the_model_through_chat_completions_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "o.duckdb")
    with MockAnthropic() as mock:
        judge = _judge(mock.openai_base_url)
        est = estimate_probes(judge, store, n=2, biases="verbosity").cost
        first = run_probes(judge, store, n=2, biases="verbosity", evidence=tmp_path / "a.jsonl", progress=False)
        pads = _pad_requests(mock)
        again = run_probes(judge, store, n=2, biases="verbosity", evidence=tmp_path / "b.jsonl", progress=False)
        pads_after = len(_pad_requests(mock))
        anthropic_posts = mock.count("POST /v1/messages")
        asyncio.run(judge.aclose())
    # One rewrite per pool answer (both answers of each pair), through the openai SDK, none
    # through the Messages API; the estimate foresaw them.
    assert first.spend.rewrites == est.padding_rewrites == len(pads) == 4 and first.spend.reused == 0
    assert anthropic_posts == 0
    assert all(b["model"] == MODEL and b["max_tokens"] == 4096 and "temperature" not in b for b in pads)
    assert first.summary.finished and first.summary.issued == est.calls
    # The mock's model padded them (about twice as long, nothing new), and each rewrite is stored.
    stored = store.query("SELECT model, length_ratio, warnings FROM rewrites")
    assert len(stored) == 4 and set(stored["model"]) == {MODEL}
    assert (stored["length_ratio"] >= perturb.MIN_PAD_RATIO).all()
    # Priced from each reply's usage at the list price.
    listed = pricing.cost(MODEL, pricing.TokenUsage(first.spend.input_tokens, first.spend.output_tokens))
    assert listed is not None and first.spend.cost_usd == pytest.approx(listed) and first.spend.unpriced == 0
    recorded = store.judge_run(first.summary.run_id)
    assert recorded is not None and recorded["params"]["pad"] == f"llm:{MODEL}"
    # A rerun reuses the stored rewrites and sends nothing.
    assert again.spend.rewrites == 0 and again.spend.reused == 4 and pads_after == 4
    assert again.summary.issued == 0


def test_openai_padding_goes_through_a_batch_of_its_own_at_the_batch_price(tmp_path: Path) -> None:
    store = Store(tmp_path / "b.duckdb")
    with MockAnthropic(batch_delay=0.05) as mock:
        judge = _judge(mock.openai_base_url)
        result = run_probes(judge, store, n=3, biases="verbosity", batch=True, poll_interval=0.02, progress=False)
        direct = mock.count("POST /v1/chat/completions")
        batches = mock.count("POST /v1/batches")
        asyncio.run(judge.aclose())
    assert result.summary.finished and result.summary.errors == 0
    # Nothing went out one by one: one batch of rewrites, one of judge calls.
    assert direct == 0 and batches == 2
    spend = result.spend
    assert spend.rewrites == 6 and spend.reused == 0
    listed = pricing.cost(MODEL, pricing.TokenUsage(spend.input_tokens, spend.output_tokens))
    assert listed is not None and spend.cost_usd == pytest.approx(listed / 2)
    # The batch is remembered (its intent before it was created, its id after), so an
    # interrupted preparation would find or collect it, not pay again.
    kept = store.query("SELECT key, value FROM settings WHERE scope = 'padding_batch' ORDER BY key")
    assert len(kept) == 2 and kept["key"].iloc[1] == kept["key"].iloc[0] + ":intent"
    assert kept["value"].iloc[0].startswith("batch_") and store.known_batch_ids() >= {kept["value"].iloc[0]}


def test_an_openai_padding_batch_whose_id_was_lost_is_found_again_not_paid_twice(tmp_path: Path) -> None:
    store = Store(tmp_path / "lost.duckdb")
    with MockAnthropic(batch_delay=0.05) as mock:
        judge = _judge(mock.openai_base_url)
        first = run_probes(judge, store, n=2, biases="verbosity", batch=True, poll_interval=0.02, progress=False)
        # Forget the rewrites and the batch id, keep the intent: as if the process died after
        # the create went out and before its reply (the id) was stored.
        key = store.query("SELECT key FROM settings WHERE scope = 'padding_batch' AND key NOT LIKE '%:intent'")
        with store.connection() as con:
            con.execute("DELETE FROM rewrites")
            con.execute("DELETE FROM settings WHERE scope = 'padding_batch' AND key = ?", [key["key"].iloc[0]])
        creates = mock.count("POST /v1/batches")
        second = run_probes(judge, store, n=2, biases="verbosity", batch=True, poll_interval=0.02, progress=False)
        created_again = mock.count("POST /v1/batches") - creates
        asyncio.run(judge.aclose())
    assert first.spend.rewrites == second.spend.rewrites == 4
    # The rewrites' batch was found upstream by judgelab's marker and collected; no new one.
    assert created_again == 0


def test_a_rewrite_on_one_endpoint_is_not_reused_for_the_same_model_name_on_another() -> None:
    text = "Restart the router. Then sign in again."
    here = Variants(pad_model=PadModel(None, "llama3.1:8b", identity="openai-chat 127.0.0.1:8000"))
    there = Variants(pad_model=PadModel(None, "llama3.1:8b", identity="openai-chat 127.0.0.1:11434"))
    claude = Variants(pad_model=PadModel(None, "claude-sonnet-4-6"))
    assert here.rewrite_key(text) != there.rewrite_key(text)
    # The Anthropic key is the one it always was: rewrites stored before stay valid.
    import hashlib

    old = hashlib.sha256(f"padded\0claude-sonnet-4-6\0{perturb.pad_prompt(text)}".encode()).hexdigest()
    assert claude.rewrite_key(text) == old


def test_a_reasoning_model_is_given_max_completion_tokens_and_a_cut_rewrite_is_warned() -> None:
    writer = OpenAIPadWriter(None, "o3")
    assert "max_completion_tokens" in writer.body("Some answer.") and "max_tokens" not in writer.body("x")
    completion = {"choices": [{"message": {"content": "Some answer, restated"}, "finish_reason": "length"}],
                  "usage": {"prompt_tokens": 300, "completion_tokens": 4096}}
    result, tokens_in, tokens_out = OpenAIPadWriter.read("Some answer.", completion)
    assert (tokens_in, tokens_out) == (300, 4096)
    assert any("cut off at max_tokens=4096" in w for w in result.warnings)


def test_cli_pads_with_a_local_model_through_the_openai_endpoint_unpriced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with MockAnthropic() as mock:
        result = CliRunner().invoke(main, [
            "probe", "--judge", "openai", "--model", "llama3.1:8b", "--base-url", mock.openai_base_url,
            "--pad", "llm", "--n", "2", "--biases", "verbosity", "--db", str(tmp_path / "l.duckdb"),
            "--out", str(tmp_path / "l.jsonl"), "--no-progress",
        ], catch_exceptions=False)
        pads = len(_pad_requests(mock))
    assert result.exit_code == 0, result.output
    # A model the price table does not know: its rewrites' cost is unknown, never "$0".
    assert "padding: 4 model rewrites (unpriced), 0 reused" in result.output and pads == 4
