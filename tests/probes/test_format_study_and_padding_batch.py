"""The format study runs every format (anchored and tournament too); padding goes through --batch."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from judgelab.calibration import pricing
from judgelab.calibration.datasets import PROBE_RUBRIC, choose, load_pairs, pool_from_pairs
from judgelab.calibration.judges import AnthropicJudge, FakeJudge
from judgelab.calibration.mockapi import MockAnthropic
from judgelab.calibration.probes import (
    ProbeContext,
    Variants,
    analyse_evidence,
    plan_probes,
    read_evidence,
    run_probes,
)
from judgelab.calibration.probes._workflow import parse_formats
from judgelab.labeler.errors import InputError
from judgelab.labeler.store import Store

ALL_FORMATS = "binary,likert5,numeric100,anchored,tournament"


def test_comparative_formats_are_planned_per_task() -> None:
    pairs = choose(load_pairs("sample"), 5, seed=0)
    ctx = ProbeContext(
        pairs=pairs, pool=pool_from_pairs(pairs), rubric=PROBE_RUBRIC, pool_rubric=PROBE_RUBRIC,
        variants=Variants(), formats=parse_formats(ALL_FORMATS),  # type: ignore[arg-type]
    )
    calls = plan_probes(ctx, ["format"]).calls
    by_format = Counter(c.format for c in calls)
    # 5 tasks with 2 answers each: one pointwise call per answer and format; anchored compares
    # each of a task's answers with its first (itself included); tournament each pair once.
    assert by_format == {"binary": 10, "likert5": 10, "numeric100": 10, "anchored": 10, "tournament": 5}
    anchored = [c for c in calls if c.format == "anchored"]
    assert all(c.kind == "pairwise" and c.answer_b is not None for c in anchored)
    first = {c.task_id: c.answer_id for c in anchored}
    assert all(c.answer_id == first[c.task_id] for c in anchored)  # the anchor is Response A
    assert len({c.call_id for c in calls}) == len(calls)
    with pytest.raises(InputError, match="pairwise5"):
        parse_formats("likert5,pairwise5")
    assert parse_formats(None) is None


def test_every_format_runs_and_reports_its_parse_rate(tmp_path: Path) -> None:
    judge = FakeJudge(seed=2, family="claude", parse_failure_rate=0.15)
    result = run_probes(judge, Store(tmp_path / "f.duckdb"), n=12, biases="format", formats=ALL_FORMATS,
                        evidence=tmp_path / "e.jsonl", progress=False)
    assert result.summary.finished
    analysis = analyse_evidence(read_evidence(tmp_path / "e.jsonl"))
    rows = {f.format: f for f in analysis.formats}
    assert list(rows) == ["binary", "likert5", "numeric100", "anchored", "tournament"]
    assert rows["anchored"].replies == 24 and rows["tournament"].replies == 12
    for f in rows.values():
        assert 0.5 < f.parse_rate.estimate < 1.0  # the injected parse failures are counted
    # Comparative scores are win probabilities derived from verdicts.
    assert 0.0 <= rows["anchored"].mean_score <= 1.0 and rows["tournament"].mean_score == pytest.approx(0.5)
    assert analysis.n_pairs == 0, "format-study comparisons are not probe pairs"


def test_padding_goes_through_the_batch_with_batch(tmp_path: Path) -> None:
    store = Store(tmp_path / "b.duckdb")
    with MockAnthropic(batch_delay=0.05) as mock:
        judge = AnthropicJudge(api_key="test", base_url=mock.base_url)
        result = run_probes(judge, store, n=3, biases="verbosity", batch=True, poll_interval=0.02,
                            progress=False)
        direct = mock.count("POST /v1/messages")
        batches = mock.count("POST /v1/messages/batches")
        asyncio.run(judge.aclose())
    assert result.summary.finished
    # Nothing went out one by one: one batch of rewrites, one of judge calls.
    assert direct == 0 and batches == 2
    spend = result.spend
    assert spend.rewrites == 6 and spend.reused == 0  # the 6 pool answers (pair targets among them)
    listed = pricing.cost(judge.model, pricing.TokenUsage(spend.input_tokens, spend.output_tokens))
    assert listed is not None and spend.cost_usd == pytest.approx(listed / 2)
    # The batch is remembered (its intent before it was created, its id after), so an
    # interrupted preparation would find or collect it, not pay again.
    kept = store.query("SELECT key, value FROM settings WHERE scope = 'padding_batch' ORDER BY key")
    assert len(kept) == 2 and kept["key"].iloc[1] == kept["key"].iloc[0] + ":intent"
    assert store.known_batch_ids() >= {kept["value"].iloc[0]}
