"""The runner: cache, resume, failures, evidence rows, bounded concurrency, a killed run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from calibration.formats import build_call, parse
from calibration.judges import Format, Judgement
from calibration.runner import (
    EVIDENCE_FIELDS,
    PlannedCall,
    cache_key_for,
    run_plan,
    write_evidence,
)
from labeler.errors import InputError, JudgeError
from labeler.models import Rubric
from labeler.store import Store
from labeler.store._judgements import JudgementRecord

REPO = Path(__file__).resolve().parent.parent

RUBRIC = Rubric(
    rubric_id="r", version=1, name="Test rubric", scale="likert5", pass_rule="4 or more passes",
    criteria=(),
)


class LengthJudge:
    """A judge written for these tests: prefers the longer answer, scores by length.

    It replies in the real format text and parses with the real strict parser, so parse
    failures and values go through the same code as every other judge. ``fail_on`` answers
    raise :class:`JudgeError` (a back-end that gave up) until ``heal()``; ``garble`` answers get
    an unparseable reply.
    """

    family = "testfam"

    def __init__(
        self, *, model: str = "length-judge", delay: float = 0.0, fail_on: tuple[str, ...] = (),
        garble: tuple[str, ...] = (), identity: str = "",
    ) -> None:
        self.model = model
        self.delay = delay
        self.fail_on = set(fail_on)
        self.garble = set(garble)
        self.identity = identity
        self.calls: list[tuple[str, ...]] = []
        self.in_flight = 0
        self.max_in_flight = 0

    def cache_identity(self) -> str:
        return self.identity

    def heal(self) -> None:
        self.fail_on = set()

    async def _reply(self, kind: str, fmt: Format, prompt: str, answers: list[str], reply: str) -> Judgement:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        self.calls.append((prompt, *answers))
        if any(a in self.fail_on for a in answers):
            raise JudgeError("HTTP 529 overloaded after 4 attempts")
        if any(a in self.garble for a in answers):
            reply = "I cannot decide."
        call = build_call(kind, fmt, self.model, RUBRIC, prompt, answers)  # type: ignore[arg-type]
        result = parse(fmt, reply)
        return Judgement(
            kind=kind, format=fmt, model=self.model, cache_key=call.cache_key, raw=reply,  # type: ignore[arg-type]
            value=result.value, parse_error=result.error, input_tokens=100, output_tokens=5,
            cost_usd=0.001,
        )

    async def score(self, prompt: str, answer: str, rubric: Rubric, fmt: Format = "likert5") -> Judgement:
        value = 1 + len(answer) % 5
        return await self._reply("pointwise", fmt, prompt, [answer], f"Fine.\nVERDICT: {value}")

    async def compare(
        self, prompt: str, answer_a: str, answer_b: str, rubric: Rubric, fmt: Format = "pairwise5"
    ) -> Judgement:
        verdict = "A better" if len(answer_a) >= len(answer_b) else "B better"
        return await self._reply("pairwise", fmt, prompt, [answer_a, answer_b], f"VERDICT: {verdict}")


def plan_of(n: int, *, prefix: str = "q") -> list[PlannedCall]:
    """``n`` pairs in both orders plus one pointwise call each."""
    plan = []
    for i in range(n):
        a, b = f"short {i}", f"a much longer answer {i}"
        for order, (x, y) in (("AB", (a, b)), ("BA", (b, a))):
            plan.append(PlannedCall(
                call_id=f"position/{i}/{order}", kind="pairwise", format="pairwise5",
                prompt=f"{prefix} {i}", answer=x, answer_b=y, probe="position", arm="pair",
                trial=i, order=order, task_id=f"p{i}", answer_id=f"p{i}:{'a' if x == a else 'b'}",
                answer_b_id=f"p{i}:{'b' if x == a else 'a'}",
                meta={"target_slot": "A" if order == "AB" else "B"},
            ))
        plan.append(PlannedCall(
            call_id=f"score/{i}", kind="pointwise", format="likert5", prompt=f"{prefix} {i}",
            answer=a, probe="verbosity", arm="original", trial=i, task_id=f"p{i}",
            answer_id=f"p{i}:a",
        ))
    return plan


def read_jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


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


# -- running ---------------------------------------------------------------------------------


def test_run_records_every_call_in_db_and_evidence(store: Store, tmp_path: Path) -> None:
    judge = LengthJudge()
    plan = plan_of(5)
    out = tmp_path / "evidence.jsonl"
    summary = run_plan(plan, judge, store, rubric=RUBRIC, judge_kind="test", evidence=out, progress=False)
    assert summary.finished and summary.planned == 15
    assert (summary.parsed, summary.parse_failures, summary.errors, summary.cached) == (15, 0, 0, 0)
    assert summary.issued == len(judge.calls) == 15
    assert summary.cost_usd == pytest.approx(0.015)
    rows = read_jsonl(out)
    assert len(rows) == 15
    assert {r["call_id"] for r in rows} == {c.call_id for c in plan}
    for row in rows:
        assert set(EVIDENCE_FIELDS) <= set(row)
    first = next(r for r in rows if r["call_id"] == "position/0/AB")
    # "short 0" vs the longer answer: the longer one (slot B) wins.
    assert (first["verdict"], first["winner"], first["order"], first["bias"]) == (-1.0, "B", "AB", "position")
    assert (first["len_a"], first["words_a"], first["target_slot"]) == (7, 2, "A")
    assert first["cached"] is False and first["status"] == "parsed" and first["reason"] is None
    score = next(r for r in rows if r["call_id"] == "score/0")
    assert score["score"] == 1 + len("short 0") % 5 and score["verdict"] is None
    assert store.unfinished_runs().empty


def test_second_identical_run_makes_no_calls(store: Store, tmp_path: Path) -> None:
    plan = plan_of(4)
    first = LengthJudge()
    run_plan(plan, first, store, rubric=RUBRIC, judge_kind="test", progress=False)
    second = LengthJudge()
    out = tmp_path / "again.jsonl"
    summary = run_plan(plan, second, store, rubric=RUBRIC, judge_kind="test", evidence=out, progress=False)
    assert second.calls == []
    assert summary.issued == 0 and summary.cached == 12 and summary.cost_usd == 0
    assert not summary.resumed  # a finished run is not resumed: this is a new run, all cache hits
    rows = read_jsonl(out)
    assert all(r["cached"] and r["cost_usd"] == 0 and r["cached_from"] for r in rows)
    assert all(r["input_tokens"] == 0 for r in rows)


def test_identical_requests_in_one_plan_are_made_once(store: Store) -> None:
    base = plan_of(1)[0]
    twins = [base, PlannedCall(**{**base.__dict__, "call_id": "twin", "probe": "formatting"})]
    judge = LengthJudge()
    summary = run_plan(twins, judge, store, rubric=RUBRIC, judge_kind="test", progress=False)
    assert len(judge.calls) == 1
    assert summary.cached == 1 and summary.parsed == 2


def test_cache_separates_judge_identities(store: Store) -> None:
    plan = plan_of(2)
    run_plan(plan, LengthJudge(identity="position=0.4"), store, rubric=RUBRIC, judge_kind="fake", progress=False)
    other = LengthJudge(identity="position=0.0")
    run_plan(plan, other, store, rubric=RUBRIC, judge_kind="fake", progress=False)
    assert len(other.calls) == len(plan)  # differently configured judges never share replies
    assert cache_key_for(LengthJudge(identity="x"), RUBRIC, plan[0]) != cache_key_for(
        LengthJudge(identity="y"), RUBRIC, plan[0]
    )


def test_failures_are_recorded_and_retried_by_a_rerun(store: Store, tmp_path: Path) -> None:
    plan = plan_of(4)
    judge = LengthJudge(fail_on=("short 2",))
    out = tmp_path / "e.jsonl"
    summary = run_plan(plan, judge, store, rubric=RUBRIC, judge_kind="test", evidence=out, progress=False)
    # "short 2" appears in three calls (two orders and its pointwise score).
    assert summary.errors == 3 and summary.parsed == 9 and not summary.finished
    assert "529" in summary.error_samples[0]
    rows = read_jsonl(out)
    failed = [r for r in rows if r["status"] == "error"]
    assert len(failed) == 3 and all(r["verdict"] is None and r["score"] is None for r in failed)
    assert all("529" in str(r["reason"]) for r in failed)
    judge.heal()
    judge.calls.clear()
    again = run_plan(plan, judge, store, rubric=RUBRIC, judge_kind="test", evidence=out, progress=False)
    assert again.resumed and again.run_id == summary.run_id
    assert len(judge.calls) == 3  # only the failed calls are re-issued
    assert again.finished and again.errors == 0 and again.parsed == 12
    assert len(read_jsonl(out)) == 12  # one row per planned call, the newest result


def test_parse_failures_are_recorded_not_scored(store: Store, tmp_path: Path) -> None:
    judge = LengthJudge(garble=("short 1",))
    out = tmp_path / "e.jsonl"
    summary = run_plan(plan_of(3), judge, store, rubric=RUBRIC, judge_kind="test", evidence=out, progress=False)
    assert summary.parse_failures == 3 and summary.parsed == 6 and summary.finished
    garbled = [r for r in read_jsonl(out) if r["status"] == "parse_failure"]
    assert len(garbled) == 3
    assert all(r["verdict"] is None and r["score"] is None and r["winner"] is None for r in garbled)
    assert all("VERDICT" in str(r["reason"]) and r["raw"] == "I cannot decide." for r in garbled)


def test_resume_refuses_a_different_plan(store: Store) -> None:
    judge = LengthJudge(fail_on=("short 0",))
    summary = run_plan(plan_of(2), judge, store, rubric=RUBRIC, judge_kind="test", progress=False)
    with pytest.raises(InputError, match="different plan"):
        run_plan(plan_of(3), judge, store, rubric=RUBRIC, judge_kind="test", resume=summary.run_id,
                 progress=False)
    with pytest.raises(InputError, match="no judge run"):
        run_plan(plan_of(2), judge, store, rubric=RUBRIC, judge_kind="test", resume="nope", progress=False)


def test_concurrency_is_bounded(store: Store) -> None:
    judge = LengthJudge(delay=0.01)
    run_plan(plan_of(20), judge, store, rubric=RUBRIC, judge_kind="test", concurrency=3, progress=False)
    assert judge.max_in_flight == 3


def test_plan_checks(store: Store) -> None:
    call = plan_of(1)[0]
    with pytest.raises(ValueError, match="appears twice"):
        run_plan([call, call], LengthJudge(), store, rubric=RUBRIC, judge_kind="test", progress=False)
    with pytest.raises(ValueError, match="no Message Batches"):
        run_plan([call], LengthJudge(), store, rubric=RUBRIC, judge_kind="test", batch=True, progress=False)


def test_write_evidence_rebuilds_from_the_database(store: Store, tmp_path: Path) -> None:
    summary = run_plan(plan_of(2), LengthJudge(), store, rubric=RUBRIC, judge_kind="test", progress=False)
    out = tmp_path / "rebuilt.jsonl"
    assert write_evidence(store, summary.run_id, out) == 6
    rows = read_jsonl(out)
    assert {r["model"] for r in rows} == {"length-judge"} and {r["judge_family"] for r in rows} == {"testfam"}


# -- a killed run resumes without re-spending -------------------------------------------------

_CHILD = textwrap.dedent(
    """
    import asyncio, sys
    sys.path.insert(0, {tests!r})
    from test_runner import LengthJudge, RUBRIC, plan_of
    from calibration.runner import run_plan
    from labeler.store import Store

    class Logged(LengthJudge):
        # Logs each reply it delivers; after `stop_after` replies it hangs, so the process
        # is killed with calls in flight that never answered.
        def __init__(self, log, stop_after):
            super().__init__(delay=0.005)
            self.log, self.stop_after, self.started = log, stop_after, 0

        async def _reply(self, kind, fmt, prompt, answers, reply):
            # Counted before the first await, so exactly `stop_after` calls ever answer.
            self.started += 1
            if self.started > self.stop_after:
                await asyncio.sleep(3600)
            result = await super()._reply(kind, fmt, prompt, answers, reply)
            with open(self.log, "a") as fh:
                fh.write(result.cache_key + "\\n")
            return result

    judge = Logged(sys.argv[2], int(sys.argv[3]))
    run_plan(plan_of(20), judge, Store(sys.argv[1]), rubric=RUBRIC, judge_kind="test",
             evidence=sys.argv[4], concurrency=4, progress=False, flush_interval=0.05)
    """
)


def test_killed_run_resumes_without_respending(tmp_path: Path) -> None:
    db, log, out = tmp_path / "kill.duckdb", tmp_path / "calls.log", tmp_path / "e.jsonl"
    script = tmp_path / "child.py"
    script.write_text(_CHILD.format(tests=str(REPO / "tests")))
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

    class Logging(LengthJudge):
        async def _reply(self, kind, fmt, prompt, answers, reply):  # type: ignore[no-untyped-def]
            result = await super()._reply(kind, fmt, prompt, answers, reply)
            with log.open("a") as fh:
                fh.write(result.cache_key + "\n")
            return result

    summary = run_plan(plan_of(20), Logging(), store, rubric=RUBRIC, judge_kind="test",
                       evidence=out, progress=False)
    assert summary.resumed and summary.answered_before == 25 and summary.finished
    made = log.read_text().split()
    assert len(made) == 60 == summary.planned  # every planned call made exactly once in total
    assert len(set(made)) == 60
    assert len(read_jsonl(out)) == 60
