"""The runner: cache, resume, failures, evidence rows, bounded concurrency, batches, a killed run.

Judges here are the real ones: :class:`FakeJudge` (with a call counter and an optional delay,
to watch what the runner does) and :class:`AnthropicJudge` through the real SDK against the
local mock server (for failures after retries and the Message Batches path).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from judgelab.calibration.judges import AnthropicJudge, FakeJudge, Format, Judgement
from judgelab.calibration.mockapi import FaultPlan, MockAnthropic
from judgelab.calibration.runner import (
    EVIDENCE_FIELDS,
    PlannedCall,
    arun_plan,
    build_request,
    cache_key_for,
    evidence_status,
    plan_hash,
    run_plan,
    write_evidence,
)
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Criterion, Rubric
from judgelab.labeler.store import JudgementRecord, Store

REPO = Path(__file__).resolve().parent.parent

RUBRIC = Rubric(
    rubric_id="r", version=1, name="Test rubric", scale="likert5", pass_rule="4 or more passes",
    pass_threshold=4.0,
    criteria=(Criterion("helpful", "Helpful", "Answers the question."),),
)


class CountingJudge(FakeJudge):
    """The real fake judge, counting the calls it answers (and optionally slowed down)."""

    def __init__(self, *args: Any, delay: float = 0.0, **kwargs: Any) -> None:
        kwargs.setdefault("seed", 0)
        super().__init__(*args, **kwargs)
        self.delay = delay
        self.calls: list[tuple[str, ...]] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def _track(self, *texts: str) -> None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        self.calls.append(texts)

    async def score(self, prompt: str, answer: str, rubric: Rubric, fmt: Format = "likert5") -> Judgement:
        await self._track(prompt, answer)
        return await super().score(prompt, answer, rubric, fmt)

    async def compare(
        self, prompt: str, answer_a: str, answer_b: str, rubric: Rubric, fmt: Format = "pairwise5"
    ) -> Judgement:
        await self._track(prompt, answer_a, answer_b)
        return await super().compare(prompt, answer_a, answer_b, rubric, fmt)


def plan_of(n: int, *, prefix: str = "Question") -> list[PlannedCall]:
    """``n`` pairs in both orders plus one pointwise call each (3n distinct requests)."""
    plan = []
    for i in range(n):
        a = f"Restart the router {i}. Then check the cable."
        b = f"Unplug the router for 30 seconds, then update its firmware {i}. If drops continue, call us."
        for order, (x, y) in (("AB", (a, b)), ("BA", (b, a))):
            plan.append(PlannedCall(
                call_id=f"position/{i}/{order}", kind="pairwise", format="pairwise5",
                prompt=f"{prefix} {i}: my router drops.", answer=x, answer_b=y, probe="position",
                arm="pair", trial=i, order=order, task_id=f"p{i}",
                answer_id=f"p{i}:{'a' if x == a else 'b'}", answer_b_id=f"p{i}:{'b' if x == a else 'a'}",
                meta={"target_slot": "A" if order == "AB" else "B"},
            ))
        plan.append(PlannedCall(
            call_id=f"score/{i}", kind="pointwise", format="likert5", prompt=f"{prefix} {i}: my router drops.",
            answer=a, probe="verbosity", arm="original", trial=i, task_id=f"p{i}", answer_id=f"p{i}:a",
        ))
    return plan


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run(plan: list[PlannedCall], judge: Any, store: Store, **kwargs: Any) -> Any:
    kwargs.setdefault("progress", False)
    return run_plan(plan, judge, store, rubric=RUBRIC, judge_kind="test", **kwargs)


# -- the store side ------------------------------------------------------------------------


def test_store_records_runs_and_finds_unfinished(store: Store) -> None:
    store.start_judge_run("r1", judge_kind="fake", model="m", plan_hash="h1", n_planned=3)
    store.add_judgements([
        JudgementRecord("r1", "c1", "k1", "pairwise", "pairwise5", value=1.0, raw="x", cost_usd=0.5),
        JudgementRecord("r1", "c2", "k2", "pairwise", "pairwise5", error="boom"),
    ])
    unfinished = store.unfinished_runs("h1")
    assert unfinished["run_id"].tolist() == ["r1"]
    assert int(unfinished.iloc[0]["n_answered"]) == 1 and int(unfinished.iloc[0]["n_failed"]) == 1
    assert store.answered_calls("r1") == {"c1"}
    # A failure is not a reply, so only k1 can be served from the cache.
    assert set(store.cached_replies(["k1", "k2", "k3"])) == {"k1"}
    counts = store.run_counts("r1")
    assert (counts["parsed"], counts["errors"], counts["cost_usd"]) == (1, 1, 0.5)
    store.finish_judge_run("r1")
    assert store.unfinished_runs("h1").empty


def test_newest_row_per_call_wins(store: Store) -> None:
    store.start_judge_run("r1", judge_kind="fake", model="m", plan_hash="h", n_planned=1)
    store.add_judgements([JudgementRecord("r1", "c1", "k1", "pointwise", "likert5", error="timeout")])
    store.add_judgements([JudgementRecord("r1", "c1", "k1", "pointwise", "likert5", value=4.0, raw="VERDICT: 4")])
    frame = store.run_judgements("r1")
    assert frame["status"].tolist() == ["parsed"]
    assert store.run_counts("r1")["errors"] == 0


def test_padding_audit_result(store: Store) -> None:
    assert store.padding_audit_result()["share_adds_content"] is None
    with store.connection() as con:
        con.executemany(
            "INSERT INTO padding_audits (rater_id, original_id, rewrite_id, length_ratio, adds_content)"
            " VALUES (1, ?, ?, ?, ?)",
            [["a1", "a1~padded", 2.0, False], ["a2", "a2~padded", 1.8, True],
             ["a3", "a3~padded", 1.9, False], ["a4", "a4~padded", 2.1, False]],
        )
    result = store.padding_audit_result()
    assert (result["n_audits"], result["n_adds_content"]) == (4, 1)
    assert result["share_adds_content"] == pytest.approx(0.25)
    assert store.padding_audit_result(["a2~padded"])["share_adds_content"] == 1.0


def test_rewrites_cache_first_write_wins(store: Store) -> None:
    store.add_rewrite("k", variant="padded", model="m", original="a", text="a a", length_ratio=2.0,
                      warnings=["w"], input_tokens=3, output_tokens=4, cost_usd=0.1)
    store.add_rewrite("k", variant="padded", model="m", original="a", text="other", length_ratio=1.0)
    got = store.rewrites(["k", "missing"])
    assert list(got) == ["k"] and got["k"]["text"] == "a a" and got["k"]["warnings"] == ["w"]


# -- running ---------------------------------------------------------------------------------


def test_run_records_every_call_in_db_and_evidence(store: Store, tmp_path: Path) -> None:
    judge = CountingJudge(seed=3, position=0.2)
    plan = plan_of(5)
    out = tmp_path / "evidence.jsonl"
    summary = run(plan, judge, store, evidence=out)
    assert summary.finished and summary.planned == 15
    assert (summary.parsed, summary.parse_failures, summary.errors, summary.cached) == (15, 0, 0, 0)
    assert summary.issued == len(judge.calls) == 15
    rows = read_jsonl(out)
    assert [r["call_id"] for r in rows] == [c.call_id for c in plan]  # plan order
    for row in rows:
        assert set(EVIDENCE_FIELDS) <= set(row)
        assert row["model"] == "fake-judge" and row["cached"] is False and row["status"] == "parsed"
    first = rows[0]
    assert first["kind"] == "pairwise" and first["verdict"] in (-2, -1, 0, 1, 2)
    assert first["winner"] == ("A" if first["verdict"] > 0 else "B" if first["verdict"] < 0 else "tie")
    assert (first["order"], first["bias"], first["target_slot"], first["trial"]) == ("AB", "position", "A", 0)
    assert first["len_a"] == len(plan[0].answer) and first["words_b"] == len(plan[0].answer_b.split())
    assert first["input_tokens"] > 0 and first["reason"] is None and first["raw"].rstrip().endswith(
        f"VERDICT: {first['raw'].split('VERDICT: ')[-1].strip()}"
    )
    score = rows[2]
    assert score["kind"] == "pointwise" and 1 <= score["score"] <= 5 and score["verdict"] is None
    assert score["passed"] == (score["score"] >= 4)
    # The stored judgement is the one the judge returned, value for value.
    db = store.run_judgements(summary.run_id).set_index("call_id")
    assert db.loc["score/0", "value"] == score["score"]
    assert store.unfinished_runs().empty


def test_second_identical_run_makes_no_calls(store: Store, tmp_path: Path) -> None:
    plan = plan_of(4)
    run(plan, CountingJudge(seed=1), store)
    second = CountingJudge(seed=1)
    out = tmp_path / "again.jsonl"
    summary = run(plan, second, store, evidence=out)
    assert second.calls == []
    assert summary.issued == 0 and summary.cached == 12 and summary.cost_usd == 0
    assert not summary.resumed  # a finished run is not resumed: a new run, all cache hits
    rows = read_jsonl(out)
    assert all(r["cached"] and r["cost_usd"] == 0 and r["cached_from"] for r in rows)
    assert all(r["input_tokens"] == 0 for r in rows)


def test_the_cache_never_mixes_differently_configured_judges(store: Store) -> None:
    plan = plan_of(2)
    run(plan, CountingJudge(seed=1, position=0.4), store)
    other = CountingJudge(seed=1, position=0.0)
    run(plan, other, store)
    assert len(other.calls) == len(plan)  # the knobs are part of the request, so no reuse
    assert cache_key_for(FakeJudge(seed=1), RUBRIC, plan[0]) != cache_key_for(FakeJudge(seed=2), RUBRIC, plan[0])
    assert cache_key_for(FakeJudge(seed=1), RUBRIC, plan[0]) == build_request(
        FakeJudge(seed=1), RUBRIC, plan[0]
    ).cache_key


def test_identical_requests_in_one_plan_are_made_once(store: Store) -> None:
    base = plan_of(1)[0]
    twins = [base, PlannedCall(**{**base.__dict__, "call_id": "twin", "probe": "formatting"})]
    judge = CountingJudge()
    summary = run(twins, judge, store)
    assert len(judge.calls) == 1
    assert summary.cached == 1 and summary.parsed == 2


def test_parse_failures_are_recorded_not_scored(store: Store, tmp_path: Path) -> None:
    judge = CountingJudge(seed=2, parse_failure_rate=0.4)
    out = tmp_path / "e.jsonl"
    summary = run(plan_of(8), judge, store, evidence=out)
    rows = read_jsonl(out)
    garbled = [r for r in rows if r["status"] == "parse_failure"]
    assert summary.finished and summary.parse_failures == len(garbled) > 0
    assert summary.parsed + summary.parse_failures == 24
    assert all(r["verdict"] is None and r["score"] is None and r["winner"] is None for r in garbled)
    assert all(r["reason"] and r["raw"] is not None for r in garbled)


def test_resume_refuses_a_different_plan(store: Store) -> None:
    summary = run(plan_of(2), CountingJudge(), store)
    with pytest.raises(InputError, match="different plan"):
        run(plan_of(3), CountingJudge(), store, resume=summary.run_id)
    with pytest.raises(InputError, match="no judge run"):
        run(plan_of(2), CountingJudge(), store, resume="nope")


def test_a_run_thaws_what_it_froze_for_the_collector(store: Store) -> None:
    # The run freezes the objects alive at its start (the collector skips them) and must leave
    # the process as it found it, also when it fails.
    before = gc.get_freeze_count()
    seen: list[int] = []

    class Watching(CountingJudge):
        async def score(self, *args: Any, **kwargs: Any) -> Judgement:
            seen.append(gc.get_freeze_count())
            return await super().score(*args, **kwargs)

    summary = run(plan_of(2), Watching(), store)
    assert seen and min(seen) > before  # frozen while the calls were made
    assert gc.get_freeze_count() == before
    with pytest.raises(InputError, match="different plan"):
        run(plan_of(3), CountingJudge(), store, resume=summary.run_id)
    assert gc.get_freeze_count() == before


def test_concurrency_is_bounded(store: Store) -> None:
    judge = CountingJudge(delay=0.01)
    run(plan_of(20), judge, store, concurrency=3)
    assert judge.max_in_flight == 3


def test_plan_checks(store: Store) -> None:
    call = plan_of(1)[0]
    with pytest.raises(ValueError, match="appears twice"):
        run([call, call], CountingJudge(), store)
    with pytest.raises(ValueError, match="no Message Batches"):
        run([call], CountingJudge(), store, batch=True)


def test_write_evidence_rebuilds_from_the_database(store: Store, tmp_path: Path) -> None:
    summary = run(plan_of(2), CountingJudge(family="claude"), store)
    out = tmp_path / "rebuilt.jsonl"
    assert write_evidence(store, summary.run_id, out) == 6
    rows = read_jsonl(out)
    assert {r["model"] for r in rows} == {"fake-judge"} and {r["judge_family"] for r in rows} == {"claude"}


# -- the real SDK against the local server --------------------------------------------------------


def anthropic_judge(mock: MockAnthropic, **kwargs: Any) -> AnthropicJudge:
    kwargs.setdefault("max_retries", 0)
    return AnthropicJudge("claude-sonnet-4-6", api_key="test", base_url=mock.base_url, **kwargs)


def test_failures_after_retries_are_recorded_and_retried_by_a_rerun(store: Store, tmp_path: Path) -> None:
    plan = plan_of(6)
    out = tmp_path / "e.jsonl"
    with MockAnthropic(faults=FaultPlan(rate=0.35, kinds=("500", "529"), seed=4)) as mock:
        summary = run(plan, anthropic_judge(mock), store, evidence=out)
        assert summary.errors > 0 and not summary.finished
        assert summary.parsed + summary.errors == len(plan)  # nothing lost, nothing invented
        failed = [r for r in read_jsonl(out) if r["status"] == "error"]
        assert len(failed) == summary.errors
        assert all(r["verdict"] is None and r["score"] is None and r["reason"] for r in failed)
        mock.faults = FaultPlan()
        before = mock.count("POST /v1/messages")
        again = run(plan, anthropic_judge(mock), store, evidence=out)
        assert again.resumed and again.run_id == summary.run_id
        assert mock.count("POST /v1/messages") - before == summary.errors  # only the failures
        assert again.finished and again.errors == 0 and again.parsed == len(plan)
    assert len(read_jsonl(out)) == len(plan)  # one row per planned call, the newest result


def test_an_identical_call_fails_with_its_leader(store: Store, tmp_path: Path) -> None:
    first = plan_of(1)[-1]
    twin = PlannedCall(**{**first.__dict__, "call_id": "score/0-again"})  # the same request
    out = tmp_path / "e.jsonl"
    with MockAnthropic(faults=FaultPlan(rate=1.0, kinds=("500",))) as mock:
        summary = run([first, twin], anthropic_judge(mock), store, evidence=out)
        assert mock.count("POST /v1/messages") == 1  # made once, for both
    assert summary.errors == 2 and summary.issued == 1
    rows = {r["call_id"]: r for r in read_jsonl(out)}
    assert {r["status"] for r in rows.values()} == {"error"}
    leader = rows[first.call_id]["reason"]
    assert "HTTP 500" in leader
    assert rows[twin.call_id]["reason"] == f"identical call {first.call_id} failed: {leader}"


def test_evidence_status_reads_the_stored_columns() -> None:
    assert evidence_status({"error": "boom", "parse_error": "x", "value": None}) == ("error", "boom")
    assert evidence_status({"parse_error": "no VERDICT line", "value": 3.0}) == (
        "parse_failure", "no VERDICT line",
    )
    assert evidence_status({"value": float("nan")}) == (
        "parse_failure", "no value parsed from the reply",
    )
    assert evidence_status({"value": -1.0}) == ("parsed", None)


def test_retried_faults_lose_no_judgement(store: Store) -> None:
    plan = plan_of(6)
    faults = FaultPlan(rate=0.3, kinds=("429", "529", "500"), retry_after=0.01, seed=1)
    with MockAnthropic(faults=faults) as mock:
        summary = run(plan, anthropic_judge(mock, max_retries=8), store)
        assert sum(mock.count(f"fault:{k}") for k in ("429", "529", "500")) > 0
    assert summary.finished and summary.parsed == len(plan) and summary.errors == 0


def test_batch_path_records_the_same_results(store: Store, tmp_path: Path) -> None:
    plan = plan_of(5)
    out = tmp_path / "batch.jsonl"
    with MockAnthropic(batch_delay=0.05) as mock:
        summary = run(plan, anthropic_judge(mock), store, evidence=out, batch=True, poll_interval=0.02)
        assert mock.count("POST /v1/messages/batches") == 1 and mock.count("POST /v1/messages") == 0
        assert summary.finished and summary.parsed == len(plan) and summary.issued == len(plan)
        rows = read_jsonl(out)
        assert len(rows) == len(plan) and all(set(EVIDENCE_FIELDS) <= set(r) for r in rows)
        assert all(r["cost_usd"] is not None and r["cost_usd"] > 0 for r in rows)  # batch-priced
        run_row = store.judge_run(summary.run_id)
        assert run_row is not None and run_row["batches"][0]["collected"]
        again = run(plan, anthropic_judge(mock), store, batch=True, poll_interval=0.02)
        assert again.issued == 0 and mock.count("POST /v1/messages/batches") == 1


def test_batch_failures_are_errors_and_a_resume_resubmits_only_them(store: Store) -> None:
    plan = plan_of(8)
    faults = FaultPlan(rate=0.4, kinds=("500",), endpoints=("batches",), seed=2)
    with MockAnthropic(batch_delay=0.05, faults=faults) as mock:
        summary = run(plan, anthropic_judge(mock), store, batch=True, poll_interval=0.02)
        assert summary.errors > 0 and summary.parsed + summary.errors == len(plan)
        mock.faults = FaultPlan()
        again = run(plan, anthropic_judge(mock), store, batch=True, poll_interval=0.02)
        assert again.resumed and again.issued == summary.errors and again.finished
        assert mock.count("POST /v1/messages/batches") == 2


def test_an_interrupted_batch_is_collected_not_paid_twice(store: Store) -> None:
    plan = plan_of(4)
    with MockAnthropic(batch_delay=0.05) as mock:
        judge = anthropic_judge(mock)
        keys = {c.call_id: cache_key_for(judge, RUBRIC, c) for c in plan}

        async def submit_then_die() -> str:
            # What an execution killed while waiting for its batch leaves behind: a run with a
            # submitted, uncollected batch and no judgements.
            calls = {keys[c.call_id]: build_request(judge, RUBRIC, c) for c in plan}
            return await judge.submit_batch(calls)

        batch_id = asyncio.run(submit_then_die())
        store.start_judge_run("run-x", judge_kind="anthropic", model=judge.model,
                              plan_hash=plan_hash(plan, keys), n_planned=len(plan))
        batch_no, _ = store.plan_run_batch("run-x", sorted(set(keys.values())))
        store.set_batch_id("run-x", batch_no, batch_id)
        summary = run(plan, anthropic_judge(mock), store, batch=True, poll_interval=0.02)
        assert summary.run_id == "run-x" and summary.resumed and summary.finished
        assert summary.issued == 0 and summary.parsed == len(plan)
        assert mock.count("POST /v1/messages/batches") == 1  # collected, not resubmitted


def test_arun_plan_inside_an_event_loop(store: Store) -> None:
    async def main() -> int:
        summary = await arun_plan(plan_of(2), CountingJudge(), store, rubric=RUBRIC, judge_kind="test",
                                  progress=False)
        return summary.parsed

    assert asyncio.run(main()) == 6


# -- a killed run resumes without re-spending -------------------------------------------------

CHILD_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    sys.path.insert(0, {tests!r})
    from test_runner import CountingJudge, RUBRIC, plan_of
    from judgelab.calibration.runner import run_plan
    from judgelab.labeler.store import Store

    class Logged(CountingJudge):
        # Logs each reply it delivers; after `stop_after` replies it hangs, so the process is
        # killed with calls in flight that never answered.
        def __init__(self, log, stop_after):
            super().__init__(seed=5, delay=0.005)
            self.log, self.stop_after, self.started = log, stop_after, 0

        async def _track(self, *texts):
            # Counted before the first await, so exactly `stop_after` calls ever answer.
            self.started += 1
            if self.started > self.stop_after:
                await asyncio.sleep(3600)
            await super()._track(*texts)
            with open(self.log, "a") as fh:
                fh.write("\\t".join(texts).replace("\\n", " ") + "\\n")

    judge = Logged(sys.argv[2], int(sys.argv[3]))
    run_plan(plan_of(20), judge, Store(sys.argv[1]), rubric=RUBRIC, judge_kind="test",
             concurrency=4, progress=False, {run_kwargs})
    """
)
#: The killed run's writing: evidence as it goes, small database batches.
_BATCHED = "evidence=sys.argv[4], flush_interval=0.05"


@pytest.mark.slow
def test_killed_run_resumes_without_respending(tmp_path: Path) -> None:
    db, log, out = tmp_path / "kill.duckdb", tmp_path / "calls.log", tmp_path / "e.jsonl"
    script = tmp_path / "child.py"
    script.write_text(CHILD_SCRIPT.format(tests=str(REPO / "tests"), run_kwargs=_BATCHED))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, str(script), str(db), str(log), "25", str(out)], env=env, cwd=tmp_path
    )
    try:
        deadline = time.monotonic() + 60
        # Wait until 25 replies were delivered and written (the evidence file grows per batch).
        while time.monotonic() < deadline:
            if out.exists() and len(out.read_text().splitlines()) >= 25:
                break
            assert child.poll() is None, "the child run ended before it was killed"
            time.sleep(0.05)
        else:
            pytest.fail("the child run never reached 25 recorded calls")
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
    store = Store(db)
    unfinished = store.unfinished_runs()
    assert len(unfinished) == 1 and int(unfinished.iloc[0]["n_answered"]) == 25

    class Logging(CountingJudge):
        async def _track(self, *texts: str) -> None:
            await super()._track(*texts)
            with log.open("a") as fh:
                fh.write("\t".join(texts).replace("\n", " ") + "\n")

    summary = run(plan_of(20), Logging(seed=5), store, evidence=out)
    assert summary.resumed and summary.answered_before == 25 and summary.finished
    made = log.read_text().splitlines()
    assert len(made) == 60 == summary.planned  # every planned call made exactly once in total
    assert len(set(made)) == 60  # no request made twice
    assert len(read_jsonl(out)) == 60


def test_an_sdk_judge_sends_the_request_the_run_built_for_its_cache_key(store: Store) -> None:
    """Each request is built (and hashed) once per run, not again when it is sent."""
    built: list[str] = []

    class Counting(AnthropicJudge):
        def build(self, *args: Any, **kwargs: Any) -> Any:
            call = super().build(*args, **kwargs)
            built.append(call.user)
            return call

    with MockAnthropic() as mock:
        judge = Counting("claude-sonnet-4-6", api_key="test", base_url=mock.base_url, max_retries=0)
        summary = run(plan_of(2), judge, store)  # 6 distinct requests, pairwise and pointwise
    assert summary.finished and summary.issued == 6 and summary.parsed + summary.parse_failures == 6
    assert len(built) == 6 == len(set(built))
    rows = store.run_judgements(summary.run_id)
    assert rows["cache_key"].nunique() == 6
