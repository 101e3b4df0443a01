"""Message Batches through the runner: never created twice, never a result lost, within the limits.

The judge is the real :class:`AnthropicJudge` (the real SDK over HTTP) against the local mock
API, and, for replies cut short, through the fault proxy of the reliability tests run in this
process. A run is made to die at each step of the batch path (an exception where a kill would
land, after everything before it was committed); the next run of the same plan must create no
second batch and end with every call answered once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from judgelab.calibration.judges import AnthropicJudge, OpenAIJudge
from judgelab.calibration.judges._identity import is_tagged, key_prefix, new_tag, wire_id
from judgelab.calibration.mockapi import MockAnthropic
from judgelab.calibration.runner import RunSummary, run_plan
from judgelab.calibration.runner._batch import MAX_BATCH_BYTES, MAX_BATCH_REQUESTS, batch_limits, split_batches
from judgelab.labeler.store import Store
from tests.reliability.fault_proxy import Proxy, read_log, served_in_thread
from tests.test_runner import RUBRIC, plan_of

CREATES = "POST /v1/messages/batches"


class Crash(Exception):
    """Where a kill would land."""


def judge_for(url: str, **kwargs: Any) -> AnthropicJudge:
    kwargs.setdefault("max_retries", 6)
    return AnthropicJudge("claude-sonnet-4-6", api_key="test", base_url=url, **kwargs)


def run(plan: list[Any], judge: AnthropicJudge, store: Store, **kwargs: Any) -> RunSummary:
    return run_plan(plan, judge, store, rubric=RUBRIC, judge_kind="anthropic", batch=True,
                    poll_interval=0.02, progress=False, **kwargs)


def crash_once(obj: Any, name: str, *, after: bool = False, on_call: int = 1) -> None:
    """Make ``obj.name`` raise :class:`Crash` on its ``on_call``-th call (after it ran, if ``after``)."""
    original = getattr(obj, name)
    calls = {"n": 0}

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == on_call and not after:
            raise Crash(name)
        out = original(*args, **kwargs)
        if calls["n"] == on_call and after:
            raise Crash(name)
        return out

    async def awrapped(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == on_call and not after:
            raise Crash(name)
        out = await original(*args, **kwargs)
        if calls["n"] == on_call and after:
            raise Crash(name)
        return out

    setattr(obj, name, awrapped if asyncio.iscoroutinefunction(original) else wrapped)


def _before_create(judge: AnthropicJudge, store: Store) -> None:
    crash_once(judge, "submit_batch")


def _after_create_before_id(judge: AnthropicJudge, store: Store) -> None:
    crash_once(store, "set_batch_id")


def _after_retrieve(judge: AnthropicJudge, store: Store) -> None:
    crash_once(judge, "poll_batch", after=True)


def _during_results(judge: AnthropicJudge, store: Store) -> None:
    crash_once(judge, "_judgement", on_call=3)


def _after_results_stored(judge: AnthropicJudge, store: Store) -> None:
    crash_once(store, "mark_batch_collected")


STEPS: dict[str, Callable[[AnthropicJudge, Store], None]] = {
    "before create": _before_create,
    "after create, before its id is stored": _after_create_before_id,
    "after retrieve": _after_retrieve,
    "during results": _during_results,
    "after results are stored, before the batch is marked collected": _after_results_stored,
}


@pytest.mark.parametrize("step", list(STEPS))
def test_a_run_dying_at_each_step_of_the_batch_path_creates_no_second_batch(
    tmp_path: Path, step: str
) -> None:
    plan = plan_of(4)  # 12 distinct requests
    store = Store(tmp_path / "p.duckdb")
    with MockAnthropic(batch_delay=0.05) as mock:
        judge = judge_for(mock.base_url)
        STEPS[step](judge, store)
        with pytest.raises(Crash):
            run(plan, judge, store)
        created_first = mock.count(CREATES)
        again = run(plan, judge_for(mock.base_url), store)  # a new process: a fresh judge
        creates = mock.count(CREATES)
        sent_alone = mock.count("POST /v1/messages")
    assert created_first == (0 if step == "before create" else 1)
    assert creates == 1, f"{step}: {creates} batches created for one plan"
    assert sent_alone == 0
    assert again.resumed and again.finished and again.errors == 0
    assert again.parsed + again.parse_failures == len(plan)
    rows = store.query("SELECT call_id, source FROM judgements WHERE run_id = ?", [again.run_id])
    assert rows["call_id"].is_unique, "a call was recorded twice"
    assert len(rows) == len(plan), "a result was lost"
    batches = store.run_batches(again.run_id)
    assert len(batches) == 1 and batches[0]["batch_id"] is not None
    if step.startswith("after results are stored"):
        # Every result was in: the second execution had nothing to do.
        assert again.issued == again.collected == 0
        return
    assert batches[0]["collected"]
    if step != "before create":
        # What the second execution did: it collected the batch the first one created.
        assert again.issued == 0 and again.collected == 12
        assert "collected 12 replies from a batch submitted earlier" in str(again)


@contextmanager
def fault_proxy(upstream: str, log: Path, **settings: Any) -> Iterator[str]:
    """The reliability tests' fault proxy, in a thread of this process."""
    proxy = Proxy(upstream, log=log, hang=settings.pop("hang", 1.0), retry_after=0.01, **settings)
    with served_in_thread(proxy) as url:
        yield url


def _route(attempt: dict[str, Any]) -> str:
    path = attempt["path"].split("?", 1)[0]
    if path.endswith("/results"):
        return "results"
    if path.endswith("/batches"):
        return "create" if attempt["method"] == "POST" else "list"
    return "retrieve"


def test_cut_replies_on_every_batch_endpoint_are_retried_and_create_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 35% of batch-endpoint attempts answered by a cut, empty or HTML 200, a reset or a 500;
    # over these seeds the faults fall on create, list, retrieve and the results file. The
    # proxy draws its faults from the request bodies, so the batch tag (random in use) is fixed.
    from judgelab.calibration.runner import _batch

    monkeypatch.setattr(_batch, "new_tag", lambda: "jl0123456789ab")
    faulted: set[str] = set()
    for seed in (3, 4):
        plan = plan_of(4)
        store = Store(tmp_path / f"p{seed}.duckdb")
        log = tmp_path / f"attempts{seed}.jsonl"
        with MockAnthropic(batch_delay=0.05) as mock, fault_proxy(
            mock.base_url, log, rate=0.35, kinds=("cut", "empty", "html", "reset", "500"), seed=seed,
            endpoints=("batches",),
        ) as url:
            summary = run(plan, judge_for(url, timeout=2.0), store)
            creates = mock.count(CREATES)
        faulted |= {_route(a) for a in read_log(log) if a["fault"]}
        assert summary.finished and summary.errors == 0
        assert summary.parsed + summary.parse_failures == len(plan)
        assert creates == 1, f"seed {seed}: {creates} batches created"
    assert faulted == {"create", "list", "retrieve", "results"}


def test_cut_create_replies_are_found_again_not_created_twice(tmp_path: Path) -> None:
    # Every create reply is cut (the upstream created the batch each time it was reached).
    plan = plan_of(3)
    log = tmp_path / "attempts.jsonl"
    with MockAnthropic(batch_delay=0.05) as mock, fault_proxy(
        mock.base_url, log, rate=1.0, kinds=("cut",), seed=0, endpoints=("batches",),
    ) as url:
        judge = judge_for(url, max_retries=2)

        async def submit() -> str:
            from judgelab.calibration.runner import build_request
            calls = {f"c{i}": build_request(judge, RUBRIC, c) for i, c in enumerate(plan)}
            async with judge:
                return await judge.submit_batch(calls)

        with pytest.raises(Exception, match="batch list"):
            # Every list reply is cut too: the judge cannot tell, and says so (no second create).
            asyncio.run(submit())
        assert mock.count(CREATES) == 1


def test_split_batches_keeps_every_batch_within_both_limits() -> None:
    sizes = [(f"c{i}", 100 + i) for i in range(25)]
    parts = split_batches(sizes, max_requests=10, max_bytes=10**9)
    assert [len(p) for p in parts] == [10, 10, 5]
    parts = split_batches(sizes, max_requests=10**6, max_bytes=600)
    assert sum(len(p) for p in parts) == 25 and [c for p in parts for c in p] == [c for c, _ in sizes]
    assert all(sum(100 + int(c[1:]) + 2 for c in p) + 16 <= 600 for p in parts)
    with pytest.raises(ValueError, match="more than a whole batch"):
        split_batches([("big", 700)], max_bytes=600)


def test_each_provider_batch_is_split_at_its_own_apis_limits() -> None:
    # OpenAI's Batch API takes 50,000 requests and a 200 MB input file; Anthropic's Message
    # Batches 100,000 and 256 MB. A run sized by Anthropic's limits sent 50,001-100,000
    # requests to OpenAI as one batch, which the API refuses: every call failed.
    openai_judge = OpenAIJudge("gpt-4.1-mini", api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    anthropic_judge = AnthropicJudge("claude-sonnet-4-6", api_key="sk-ant-test")
    assert batch_limits(openai_judge) == (50_000, 200 * 1024 * 1024)
    assert batch_limits(anthropic_judge) == (MAX_BATCH_REQUESTS, MAX_BATCH_BYTES) == (100_000, 256 * 1024 * 1024)
    sizes = [(f"c{i}", 10) for i in range(50_001)]
    assert [len(p) for p in split_batches(sizes, max_requests=batch_limits(openai_judge)[0])] == [50_000, 1]


def test_a_run_past_the_limits_goes_out_as_several_batches_all_collected(tmp_path: Path) -> None:
    from judgelab.calibration.runner import _batch

    plan = plan_of(5)  # 15 distinct requests
    store = Store(tmp_path / "p.duckdb")
    with MockAnthropic(batch_delay=0.05) as mock:
        original = _batch.MAX_BATCH_REQUESTS
        try:
            _batch.MAX_BATCH_REQUESTS = 4
            summary = run_plan(plan, judge_for(mock.base_url), store, rubric=RUBRIC, judge_kind="anthropic",
                               batch=True, poll_interval=0.02, progress=False)
        finally:
            _batch.MAX_BATCH_REQUESTS = original
        creates = mock.count(CREATES)
    assert creates == 4
    assert summary.finished and summary.parsed + summary.parse_failures == len(plan) and summary.issued == 15
    batches = store.run_batches(summary.run_id)
    assert [b["n_requests"] for b in batches] == [4, 4, 4, 3]
    assert all(b["collected"] and b["batch_id"] for b in batches)
    # Each batch's custom ids are its own tag and the calls' cache keys (cut to 64 characters).
    assert all(is_tagged(b["custom_ids"]) for b in batches)
    assert len({b["custom_ids"][0][:14] for b in batches}) == 4, "two batches share a tag"
    assert sorted(key_prefix(c) for b in batches for c in b["custom_ids"]) == sorted(
        k[:49] for k in store.query("SELECT cache_key FROM judgements WHERE run_id = ?", [summary.run_id])["cache_key"]
    )


# -- the verdict rule is how replies are read, not what is sent -------------------------------

def _spec(regex: str, sample: str, expect: int) -> Any:
    from judgelab.calibration.spec import parse_spec

    return parse_spec({
        "judge": {"name": "t", "family": "claude"},
        "templates": [
            {"kind": "pointwise", "system": "{rubric}", "user": "Q: {prompt}\nAnswer:\n{answer}\nEnd of answer.",
             "verdict": {"format": "likert5", "regex": regex, "samples": [{"reply": sample, "expect": expect}]}},
        ],
    })


def test_editing_only_the_verdict_rule_rereads_stored_replies_instead_of_buying_them(tmp_path: Path) -> None:
    from judgelab.calibration.judges import FakeJudge

    plan = [call for call in plan_of(6) if call.kind == "pointwise"]
    store = Store(tmp_path / "p.duckdb")
    wide = _spec(r"VERDICT: ([1-5])", "VERDICT: 4", 4)
    # The API's stand-in reads the spec's templates and answers "VERDICT: n".
    with MockAnthropic(responder=FakeJudge(seed=0, spec=wide).respond) as mock:
        first = run_plan(plan, judge_for(mock.base_url, spec=wide), store,
                         rubric=RUBRIC, judge_kind="anthropic", progress=False)
        bought = mock.count("POST /v1/messages")
        narrow = _spec(r"VERDICT: ([2-5])", "VERDICT: 2", 2)  # the same prompt, another rule
        second = run_plan(plan, judge_for(mock.base_url, spec=narrow), store, rubric=RUBRIC,
                          judge_kind="anthropic", progress=False)
        again = mock.count("POST /v1/messages")
    assert bought == len(plan) and first.parsed == len(plan)
    assert again == bought, "editing only the verdict rule bought the replies again"
    assert second.run_id != first.run_id and second.cached == len(plan) and second.issued == 0
    rows = store.run_judgements(second.run_id)
    raws = dict(zip(rows["call_id"], rows["raw"], strict=True))
    digits = {call_id: int(raw.rstrip()[-1]) for call_id, raw in raws.items()}
    assert min(digits.values()) < 2 <= max(digits.values()), "the replies must straddle the new rule"
    for call_id, value, error in zip(rows["call_id"], rows["value"], rows["parse_error"], strict=True):
        digit = digits[call_id]
        if digit >= 2:
            assert value == digit and pd.isna(error)
        else:
            assert isinstance(error, str) and pd.isna(value)  # no value under the new rule


def test_cut_bodies_on_every_endpoint_the_runner_calls_are_retried_never_a_crash(tmp_path: Path) -> None:
    # Issue 30, item 1: a 200 whose JSON is cut short, from count_tokens, messages, batch
    # create, retrieve, list or the results file, is a transient fault retried like a 5xx.
    from judgelab.calibration.runner import build_request

    plan = [c for c in plan_of(3) if c.kind == "pointwise"]
    log = tmp_path / "attempts.jsonl"
    with MockAnthropic(batch_delay=0.05) as mock, fault_proxy(
        # The first attempt at every request is cut (each retrieve poll and list page is a
        # request: only the first of them), so every endpoint meets a cut body.
        mock.base_url, log, rate=1.0, kinds=("cut",), seed=4, endpoints=("messages", "count_tokens", "batches"),
        first_only=True,
    ) as url:
        judge = judge_for(url)
        tag = new_tag()  # custom ids only this submission writes: a lost create is found by them
        calls = {wire_id(tag, f"{i:02d}"): build_request(judge, RUBRIC, c) for i, c in enumerate(plan)}

        async def every_endpoint() -> tuple[list[int], list[Any], str | None, int]:
            async with judge:
                counted = [await judge.count_tokens(c) for c in calls.values()]
                judged = [await judge.run(c, RUBRIC) for c in calls.values()]
                since = datetime.now(UTC)
                batch_id = await judge.submit_batch(calls, since=since)
                await judge.wait_batch(batch_id, poll_interval=0.02)
                results = await judge.collect_batch(batch_id, calls=calls)
                found = await judge.find_batch(list(calls), since=since, poll_interval=0.02)
                return counted, judged, found if found == batch_id else None, len(results)

        counted, judged, found, n_results = asyncio.run(every_endpoint())
        creates = mock.count(CREATES)
    cuts = {_route(a) if a["endpoint"] == "batches" else a["endpoint"] for a in read_log(log) if a["fault"] == "cut"}
    assert cuts == {"count_tokens", "messages", "create", "retrieve", "list", "results"}, cuts
    assert all(n > 0 for n in counted) and all(j.parsed for j in judged)
    assert found is not None and n_results == len(calls) and creates == 1


def test_the_mock_lists_batches_a_page_at_a_time_newest_first(tmp_path: Path) -> None:
    import anthropic

    async def main(url: str) -> tuple[list[str], list[str], bool]:
        client = anthropic.AsyncAnthropic(api_key="test", base_url=url)
        made = []
        for i in range(3):
            request = {"custom_id": f"c{i}", "params": {"model": "m", "max_tokens": 5,
                                                         "messages": [{"role": "user", "content": "hi"}]}}
            made.append((await client.messages.batches.create(requests=[request])).id)  # type: ignore[list-item]
        page = await client.messages.batches.list(limit=2)
        listed = [b.id async for b in client.messages.batches.list(limit=2)]
        await client.close()
        return made, listed, page.has_more

    with MockAnthropic() as mock:
        made, listed, more = asyncio.run(main(mock.base_url))
    assert listed == made[::-1] and more


def test_several_batches_whose_ids_were_all_lost_are_found_again_each_for_its_own_calls(tmp_path: Path) -> None:
    # Split into batches of 4, 4, 4 and 3 requests; no id is ever stored (as if each reply was
    # lost), then the run dies. The next run finds all four upstream, the two of equal size
    # each for its own calls (the oldest match for the earliest intent), and creates none.
    from judgelab.calibration.runner import _batch

    plan = plan_of(5)
    store = Store(tmp_path / "p.duckdb")
    with MockAnthropic(batch_delay=0.05) as mock:
        original = _batch.MAX_BATCH_REQUESTS
        try:
            _batch.MAX_BATCH_REQUESTS = 4
            judge = judge_for(mock.base_url)
            store.set_batch_id = lambda *args: None  # type: ignore[method-assign]
            crash_once(judge, "wait_batch")
            with pytest.raises(Crash):
                run(plan, judge, store)
            del store.set_batch_id
            assert [b["batch_id"] for b in store.run_batches(store.unfinished_runs()["run_id"].iloc[0])] == [None] * 4
            again = run(plan, judge_for(mock.base_url), store)
        finally:
            _batch.MAX_BATCH_REQUESTS = original
        creates = mock.count(CREATES)
    assert creates == 4
    assert again.finished and again.errors == 0 and again.collected == 15 and again.issued == 0
    assert [b["n_requests"] for b in store.run_batches(again.run_id)] == [4, 4, 4, 3]


# -- the same guarantees for an OpenAI-compatible judge (files upload, batches create/retrieve) --

OPENAI_CREATES = "POST /v1/batches"


def _openai_judge(url: str, **kwargs: Any) -> Any:
    from judgelab.calibration.judges import OpenAIJudge

    kwargs.setdefault("max_retries", 6)
    return OpenAIJudge("gpt-4.1-mini", api_key="test", base_url=url + "/v1", **kwargs)


OPENAI_STEPS: dict[str, Callable[[Any, Store], None]] = {
    **{name: step for name, step in STEPS.items() if name != "during results"},
    "during results": lambda judge, store: crash_once(judge, "judgement", on_call=3),
}


@pytest.mark.parametrize("step", list(OPENAI_STEPS))
def test_an_openai_run_dying_at_each_step_of_the_batch_path_creates_no_second_batch(
    tmp_path: Path, step: str
) -> None:
    plan = plan_of(4)  # 12 distinct requests
    store = Store(tmp_path / "p.duckdb")
    with MockAnthropic(batch_delay=0.05) as mock:
        judge = _openai_judge(mock.base_url)
        OPENAI_STEPS[step](judge, store)
        with pytest.raises(Crash):
            run(plan, judge, store)
        created_first = mock.count(OPENAI_CREATES)
        again = run(plan, _openai_judge(mock.base_url), store)  # a new process: a fresh judge
        creates = mock.count(OPENAI_CREATES)
        sent_alone = mock.count("POST /v1/chat/completions")
    assert created_first == (0 if step == "before create" else 1)
    assert creates == 1, f"{step}: {creates} batches created for one plan"
    assert sent_alone == 0
    assert again.resumed and again.finished and again.errors == 0
    assert again.parsed + again.parse_failures == len(plan)
    rows = store.query("SELECT call_id FROM judgements WHERE run_id = ?", [again.run_id])
    assert rows["call_id"].is_unique and len(rows) == len(plan)
    batches = store.run_batches(again.run_id)
    assert len(batches) == 1 and batches[0]["batch_id"] is not None
    if step.startswith("after results are stored"):
        assert again.issued == again.collected == 0
    elif step != "before create":
        assert again.issued == 0 and again.collected == 12


# -- issue 42: two projects on one key; a lost batch is this run's only by what this run wrote ------

def _upstream_batches(url: str) -> list[Any]:
    """Every batch the key's workspace holds, through the real SDK (what was billed)."""
    import anthropic

    async def main() -> list[Any]:
        client = anthropic.AsyncAnthropic(api_key="test", base_url=url)
        try:
            return [b async for b in client.messages.batches.list(limit=100)]
        finally:
            await client.close()

    return asyncio.run(main())


@pytest.mark.parametrize("loss", ["cut create reply", "killed before its id is stored"])
def test_two_projects_on_one_key_each_collect_only_their_own_same_size_batch(tmp_path: Path, loss: str) -> None:
    # Project B (its own database) runs the very same plan on the same key first: a batch of the
    # same size, created a moment before project A's. A's create reply is then lost; before
    # issue 42 A took B's batch (the oldest same-size batch of the last 5 minutes).
    plan = plan_of(4)  # 12 distinct requests per batch
    store_a, store_b = Store(tmp_path / "a.duckdb"), Store(tmp_path / "b.duckdb")
    log = tmp_path / "attempts.jsonl"
    with MockAnthropic(batch_delay=0.3) as mock:
        b = run(plan, judge_for(mock.base_url), store_b)
        if loss == "cut create reply":
            # Every batch endpoint's first attempt is cut: the create (which the API carried
            # out), then the first list and results reads of the search for it.
            with fault_proxy(mock.base_url, log, rate=1.0, kinds=("cut",), seed=1, endpoints=("batches",),
                             first_only=True) as url:
                a = run(plan, judge_for(url), store_a)
            assert any(a_["fault"] == "cut" and _route(a_) == "create" for a_ in read_log(log))
        else:
            judge = judge_for(mock.base_url)
            crash_once(store_a, "set_batch_id")
            with pytest.raises(Crash):
                run(plan, judge, store_a)
            # A third same-size batch, of another project, created after A's intent and before
            # A looks again: newer and older ones alike are not A's.
            run(plan, judge_for(mock.base_url), Store(tmp_path / "c.duckdb"))
            a = run(plan, judge_for(mock.base_url), store_a)
        upstream = _upstream_batches(mock.base_url)
        creates = mock.count(CREATES)
    projects = 2 if loss == "cut create reply" else 3
    assert creates == projects, f"{creates} batches created for {projects} projects: one was paid twice"
    assert sum(sum(x.request_counts.model_dump().values()) for x in upstream) == 12 * projects
    assert a.finished and b.finished and a.errors == b.errors == 0
    id_a = store_a.run_batches(a.run_id)[0]["batch_id"]
    id_b = store_b.run_batches(b.run_id)[0]["batch_id"]
    assert id_a != id_b, "project A collected project B's batch"
    for store, summary in ((store_a, a), (store_b, b)):
        rows = store.run_judgements(summary.run_id)
        assert len(rows) == len(plan) and rows["error"].isna().all(), "a verdict is missing or failed"
        assert (rows["source"] == "judge").all()
    # What A's summary says it paid for: its own 12 requests, once.
    assert (a.batch_requests_created + a.collected) == 12
    assert a.exit_code == 0 and "finished (exit code 0)" in str(a)


def test_a_lost_batch_that_cannot_be_told_apart_is_left_in_doubt_then_adopted_by_name(tmp_path: Path) -> None:
    # An intent written before batch tags existed (bare cache keys as custom ids) whose create
    # reply was lost, while another project's same-size batch exists too: the run must not
    # guess. It sends nothing again, stays unfinished (exit 4) and names --adopt-batch; the
    # user's choice is checked (another project's batch refused), then the right one adopted.
    from judgelab.calibration.runner import build_request

    plan = plan_of(3)
    store = Store(tmp_path / "a.duckdb")
    with MockAnthropic(batch_delay=0.05) as mock:
        other = run(plan, judge_for(mock.base_url), Store(tmp_path / "b.duckdb"))
        id_b = str(Store(tmp_path / "b.duckdb").run_batches(other.run_id)[0]["batch_id"])
        judge = judge_for(mock.base_url)
        crash_once(judge, "submit_batch")
        with pytest.raises(Crash):
            run(plan, judge, store)
        rid = str(store.unfinished_runs()["run_id"].iloc[0])
        [entry] = store.run_batches(rid)
        store.drop_batch_intent(rid, entry["batch_no"])
        bare = {c.cache_key: c for c in (build_request(judge, RUBRIC, p) for p in plan)}
        store.plan_run_batch(rid, sorted(bare))  # as judgelab wrote intents before issue 42

        async def old_create() -> str:  # the create whose reply never came back
            async with judge_for(mock.base_url) as j:
                return await j.submit_batch(bare)

        id_a = asyncio.run(old_create())
        before = mock.count(CREATES)
        doubt = run(plan, judge_for(mock.base_url), store)
        assert mock.count(CREATES) == before, "a batch in doubt was sent again"
        assert doubt.outcome == "not finished" and doubt.exit_code == 4 and doubt.done == 0
        assert id_a in str(doubt) and f"--adopt-batch {id_a}" in str(doubt)
        wrong = run(plan, judge_for(mock.base_url), store, adopt_batches=[id_b])
        assert wrong.exit_code == 4 and "not this run's" in str(wrong) and wrong.done == 0
        right = run(plan, judge_for(mock.base_url), store, adopt_batches=[id_a])
        creates = mock.count(CREATES)
    assert creates == before, "adopting a named batch created another"
    assert right.exit_code == 0 and right.finished and right.collected == len(bare)
    assert store.run_batches(right.run_id)[0]["batch_id"] == id_a


def test_two_projects_on_one_key_each_collect_only_their_own_openai_batch(tmp_path: Path) -> None:
    # The same on OpenAI's Batch API: B's same-plan, same-size batch first; A's file upload,
    # batch create, list, retrieve and output-file replies cut on their first attempt.
    plan = plan_of(4)
    store_a, store_b = Store(tmp_path / "a.duckdb"), Store(tmp_path / "b.duckdb")
    log = tmp_path / "attempts.jsonl"
    with MockAnthropic(batch_delay=0.1) as mock:
        b = run(plan, _openai_judge(mock.base_url), store_b)
        with fault_proxy(mock.base_url, log, rate=1.0, kinds=("cut",), seed=1, endpoints=("batches",),
                         first_only=True) as url:
            a = run(plan, _openai_judge(url), store_a)
        creates = mock.count(OPENAI_CREATES)
    cut = {(x["method"], x["path"].split("?")[0].split("/")[2]) for x in read_log(log) if x["fault"] == "cut"}
    assert {("POST", "files"), ("POST", "batches"), ("GET", "batches"), ("GET", "files")} <= cut, cut
    assert creates == 2, f"{creates} batches created for two projects"
    assert a.exit_code == b.exit_code == 0
    id_a = store_a.run_batches(a.run_id)[0]["batch_id"]
    id_b = store_b.run_batches(b.run_id)[0]["batch_id"]
    assert id_a != id_b, "project A collected project B's batch"
    for store, summary in ((store_a, a), (store_b, b)):
        rows = store.run_judgements(summary.run_id)
        assert len(rows) == len(plan) and rows["error"].isna().all()
    assert a.batch_requests_created == 12 and a.collected == 0


def test_a_cut_reply_asked_again_is_counted_billed_each_time(tmp_path: Path) -> None:
    # Issue 42, point 3: the first reply to every judging request is cut on the way (the API
    # answered and billed it); each call is asked again. The summary counts both replies.
    plan = plan_of(3)  # 9 distinct requests
    log = tmp_path / "attempts.jsonl"
    with MockAnthropic() as mock, fault_proxy(mock.base_url, log, rate=1.0, kinds=("cut",), seed=0,
                                              endpoints=("messages",), first_only=True) as url:
        summary = run_plan(plan, judge_for(url), Store(tmp_path / "p.duckdb"), rubric=RUBRIC,
                           judge_kind="anthropic", progress=False)
        reached = mock.count("POST /v1/messages")
    cuts = sum(1 for a in read_log(log) if a["fault"] == "cut")
    assert cuts == 9 and reached == 18
    assert summary.exit_code == 0 and summary.done == 9 and summary.issued == 9
    assert summary.billed_replies == reached == 18 and summary.billed_retries == cuts
    assert "billed: 18 replies (9 of them cut short on the way and asked again" in str(summary)


# -- issue 52: an output file cut at a line break; a server that keeps no batch metadata ---------


@pytest.mark.parametrize("cut_reads", [1, None])
def test_an_openai_output_file_cut_at_a_line_break_is_read_again_never_called_missing(
    tmp_path: Path, cut_reads: int | None
) -> None:
    # Each download of the output file leaves out its last 3 whole lines (it still decodes).
    # Cut once: the second read is whole. Cut every time: the run stays unfinished with the
    # 9 results it read, the other 3 neither "missing" nor sent again; the next run, the file
    # whole, reads the same batch. Every request billed once (before: 3 recorded as missing,
    # exit 3, and paid again in a second batch).
    plan = plan_of(4)  # 12 distinct requests
    store = Store(tmp_path / "p.duckdb")
    with MockAnthropic(batch_delay=0.05, short_output=3, short_output_reads=cut_reads) as mock:
        first = run(plan, _openai_judge(mock.base_url), store)
        creates_first = mock.count(OPENAI_CREATES)
        mock.short_output = 0
        again = run(plan, _openai_judge(mock.base_url), store)
        billed, creates = mock.batch_requests_billed, mock.count(OPENAI_CREATES)
        cuts = mock.count("fault:short_output")
    rows = store.run_judgements(again.run_id)
    assert not rows["error"].fillna("").str.contains("missing").any(), "a result the batch answered was called missing"
    assert creates_first == creates == 1 and billed == 12, f"{billed} billed in {creates} batches for 12 requests"
    assert again.exit_code == 0 and again.done == 12 and len(rows) == 12
    if cut_reads == 1:
        assert cuts == 1
        assert first.exit_code == 0 and first.done == 12 and first.errors == 0
        assert again.issued == again.collected == 0
        return
    assert cuts == 4  # read four times, then left for the next run
    assert first.exit_code == 4 and first.outcome == "not finished" and first.errors == 0 and first.done == 9
    [why] = first.uncollected
    assert "name 9 of the 12 requests it answered" in why and "run the same command again" in why
    assert "neither recorded as missing nor sent again" in str(first)
    assert again.issued == 0 and again.collected == 3


def test_a_message_batch_results_file_cut_at_a_line_break_is_left_for_the_next_run(tmp_path: Path) -> None:
    # The same on the Message Batches API: read max_retries + 1 times, still 3 short of what
    # the batch holds; before, the 3 were recorded as "batch result missing" and paid again.
    plan = plan_of(4)
    store = Store(tmp_path / "p.duckdb")
    with MockAnthropic(batch_delay=0.05, short_output=3) as mock:
        first = run(plan, judge_for(mock.base_url, max_retries=2), store)
        cuts = mock.count("fault:short_output")
        mock.short_output = 0
        again = run(plan, judge_for(mock.base_url), store)
        billed, creates = mock.batch_requests_billed, mock.count(CREATES)
    assert cuts == 3 and first.exit_code == 4 and first.errors == 0 and first.done == 9
    assert "names 9 of its 12 requests after 3 reads" in str(first)
    assert creates == 1 and billed == 12
    assert again.exit_code == 0 and again.issued == 0 and again.collected == 3 and again.done == 12


def _openai_ids(url: str) -> list[Any]:
    """Every OpenAI batch the key's workspace holds, through the real SDK."""
    import openai

    async def main() -> list[Any]:
        client = openai.AsyncOpenAI(api_key="test", base_url=url + "/v1")
        try:
            return [b async for b in client.batches.list(limit=100)]
        finally:
            await client.close()

    return asyncio.run(main())


@pytest.mark.parametrize("loss", ["cut create reply", "killed before its id is stored"])
def test_a_lost_openai_batch_on_a_server_without_metadata_is_found_by_its_input_file(
    tmp_path: Path, loss: str
) -> None:
    # The server keeps no batch metadata. Project B's same-plan, same-size batch exists first;
    # A's create reply is then lost (cut, or the process killed before the id was stored).
    # Before: A found no marked batch and created a second one (24 billed for 12), exit 0.
    plan = plan_of(4)
    store_a, store_b = Store(tmp_path / "a.duckdb"), Store(tmp_path / "b.duckdb")
    with MockAnthropic(batch_delay=0.05, drop_metadata=True) as mock:
        b = run(plan, _openai_judge(mock.base_url), store_b)
        if loss == "cut create reply":
            mock.cut_creates = 1
            a = run(plan, _openai_judge(mock.base_url), store_a)
            assert mock.count("fault:cut_create") == 1
        else:
            judge = _openai_judge(mock.base_url)
            crash_once(store_a, "set_batch_id")
            with pytest.raises(Crash):
                run(plan, judge, store_a)
            a = run(plan, _openai_judge(mock.base_url), store_a)
        billed, creates = mock.batch_requests_billed, mock.count(OPENAI_CREATES)
        upstream = _openai_ids(mock.base_url)
    assert all(x.metadata is None for x in upstream)
    assert creates == 2 and billed == 24, f"{billed} billed in {creates} batches for two projects of 12"
    assert a.exit_code == b.exit_code == 0 and a.done == 12
    id_a, id_b = (s.run_batches(r.run_id)[0]["batch_id"] for s, r in ((store_a, a), (store_b, b)))
    assert id_a != id_b, "project A collected project B's batch"
    assert a.batch_requests_created + a.collected == 12  # what A's summary says it paid for


def test_a_lost_openai_batch_whose_input_cannot_be_read_is_left_in_doubt_then_adopted(tmp_path: Path) -> None:
    # No metadata, and the server neither serves batch input files nor keeps their names: the
    # lost batch cannot be proven this run's. The run creates nothing blind: exit 4 with the
    # candidate named; --adopt-batch (checked against the batch's output) settles it.
    plan = plan_of(3)
    store = Store(tmp_path / "a.duckdb")
    with MockAnthropic(batch_delay=0.05, drop_metadata=True, hide_batch_inputs=True) as mock:
        judge = _openai_judge(mock.base_url)
        crash_once(store, "set_batch_id")
        with pytest.raises(Crash):
            run(plan, judge, store)
        [lost] = [str(x.id) for x in _openai_ids(mock.base_url)]
        doubt = run(plan, _openai_judge(mock.base_url), store)
        assert mock.count(OPENAI_CREATES) == 1, "a batch in doubt was created again"
        assert doubt.exit_code == 4 and doubt.done == 0 and doubt.issued == 0
        assert lost in str(doubt) and f"--adopt-batch {lost}" in str(doubt) and "keeps no batch metadata" in str(doubt)
        right = run(plan, _openai_judge(mock.base_url), store, adopt_batches=[lost])
        billed, creates = mock.batch_requests_billed, mock.count(OPENAI_CREATES)
    assert creates == 1 and billed == 9
    assert right.exit_code == 0 and right.collected == 9
    assert store.run_batches(right.run_id)[0]["batch_id"] == lost
