"""Probe designs: arms x both orders, alternating targets, pool variants, the rewrite cache."""

from __future__ import annotations

import asyncio

import anthropic
import pytest

from judgelab.calibration import perturb
from judgelab.calibration.datasets import (
    PROBE_RUBRIC,
    choose,
    load_pairs,
    pool_from_pairs,
    pool_from_store,
)
from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.mockapi import MockAnthropic
from judgelab.calibration.probes import (
    BIASES,
    DEFAULT_BIASES,
    PadModel,
    ProbeContext,
    Variants,
    parse_biases,
    plan_probes,
)
from judgelab.calibration.runner import cache_key_for
from judgelab.labeler.errors import InputError
from judgelab.labeler.examples import example_path
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store

DATA = example_path("rubric.toml").parent


def context(n: int = 6, variants: Variants | None = None) -> ProbeContext:
    pairs = choose(load_pairs("sample"), n, seed=0)
    return ProbeContext(
        pairs=pairs, pool=pool_from_pairs(pairs), rubric=PROBE_RUBRIC, pool_rubric=PROBE_RUBRIC,
        variants=variants or Variants(), judge_family="claude", other_family="gpt",
    )


def test_parse_biases_orders_and_validates() -> None:
    assert parse_biases("formatting, position") == ("position", "formatting")
    assert parse_biases(",".join(DEFAULT_BIASES)) == DEFAULT_BIASES
    assert set(parse_biases(",".join(BIASES))) == set(BIASES)
    with pytest.raises(InputError, match="unknown bias 'verbose'"):
        parse_biases("position,verbose")
    with pytest.raises(InputError, match="empty"):
        parse_biases(" , ")


def test_position_runs_every_pair_in_both_orders() -> None:
    ctx = context()
    calls = plan_probes(ctx, ["position"]).calls
    assert len(calls) == 2 * len(ctx.pairs)
    for trial, pair in enumerate(ctx.pairs):
        ab, ba = (c for c in calls if c.trial == trial)
        assert (ab.order, ab.answer, ab.answer_b, ab.meta["target_slot"]) == ("AB", pair.answer_a, pair.answer_b, "A")
        assert (ba.order, ba.answer, ba.answer_b, ba.meta["target_slot"]) == ("BA", pair.answer_b, pair.answer_a, "B")


@pytest.mark.parametrize(
    ("bias", "variant"),
    [("verbosity", "padded"), ("truncation", "truncated"), ("formatting", "markdown"),
     ("tone", "tone"), ("citations", "citations")],
)
def test_lift_design_alternates_the_decorated_side(bias: str, variant: str) -> None:
    ctx = context()
    calls = [c for c in plan_probes(ctx, [bias]).calls if c.kind == "pairwise"]
    assert len(calls) == 4 * len(ctx.pairs)  # two arms x two orders
    for trial, pair in enumerate(ctx.pairs):
        target = pair.answer_a if trial % 2 == 0 else pair.answer_b
        other = pair.answer_b if trial % 2 == 0 else pair.answer_a
        mine = {(c.arm, c.order): c for c in calls if c.trial == trial}
        decorated_text = perturb.PERTURBATIONS[variant](target).text
        for (arm, order), call in mine.items():
            shown_target = call.answer if order == "AB" else call.answer_b
            shown_other = call.answer_b if order == "AB" else call.answer
            assert call.meta["target_slot"] == ("A" if order == "AB" else "B")
            assert shown_other == other
            assert shown_target == (target if arm == "baseline" else decorated_text)
        assert mine[("decorated", "AB")].meta["target_col"] == ("a" if trial % 2 == 0 else "b")


def test_baseline_arm_shares_requests_with_the_position_probe() -> None:
    ctx = context()
    plan = plan_probes(ctx, ["position", "formatting"]).calls
    judge = FakeJudge(seed=0)
    position = {cache_key_for(judge, PROBE_RUBRIC, c) for c in plan if c.probe == "position"}
    baseline = {cache_key_for(judge, PROBE_RUBRIC, c) for c in plan if c.arm == "baseline"}
    # The placebo arm is the pair as it is, so the runner answers it from the position calls.
    assert baseline == position
    assert len({c.call_id for c in plan}) == len(plan)


def test_pointwise_length_calls_and_format_study() -> None:
    ctx = context(4)
    plan = plan_probes(ctx, ["verbosity", "truncation", "format"])
    point = [c for c in plan.calls if c.kind == "pointwise"]
    verbosity = [c for c in point if c.probe == "verbosity"]
    assert len(verbosity) == 2 * len(ctx.pool)
    padded = [c for c in verbosity if c.arm == "padded"]
    assert all(c.answer_id.endswith("~padded") and c.meta["parent_answer_id"] for c in padded)
    assert all(c.format == "likert5" for c in verbosity)
    study = [c for c in point if c.probe == "format"]
    assert sorted({c.format for c in study}) == ["binary", "likert5", "numeric100"]
    assert len(study) == 3 * len(ctx.pool)
    assert plan.new_answers == []  # dataset answers are not pool answers: nothing to store


def test_byline_probe_signs_the_same_answer_twice() -> None:
    ctx = context(4)
    calls = plan_probes(ctx, ["byline"]).calls
    assert len(calls) == 2 * len(ctx.pairs)
    for call in calls:
        own = call.answer if call.order == "AB" else call.answer_b
        other = call.answer_b if call.order == "AB" else call.answer
        assert own.endswith("generated by claude.") and other.endswith("generated by gpt.")
        assert perturb.BYLINE.sub("", own) == perturb.BYLINE.sub("", other)


def test_store_pool_variants_are_stored_and_reused(store: Store) -> None:
    import_file(store, "rubric", DATA / "rubric.toml")
    import_file(store, "answers", DATA / "answers.jsonl")
    pool = pool_from_store(store, 6, seed=1)
    assert len(pool) == 6 and all(a.from_store for a in pool)
    rubric = store.rubric()
    assert rubric is not None
    ctx = ProbeContext(
        pairs=choose(load_pairs("sample"), 2), pool=pool, rubric=PROBE_RUBRIC, pool_rubric=rubric,
        variants=Variants.for_pool(store, pool),
    )
    plan = plan_probes(ctx, ["verbosity", "truncation"])
    ids = sorted(a.answer_id for a in plan.new_answers)
    assert ids == sorted([f"{a.answer_id}~padded" for a in pool] + [f"{a.answer_id}~truncated" for a in pool])
    assert all(a.parent_answer_id and a.variant in ("padded", "truncated") for a in plan.new_answers)
    assert all(c.rubric == rubric for c in plan.calls if c.kind == "pointwise")
    store.add_pool([], plan.new_answers)
    # A stored variant (the text raters audit) wins over a newly made one.
    first = pool[0]
    stored_text = store.answers(variant="padded").set_index("answer_id").loc[f"{first.answer_id}~padded", "text"]
    again = Variants.for_pool(store, pool)
    assert again.make("padded", first.text, parent_id=first.answer_id).text == stored_text
    assert again.stored[(first.answer_id, "padded")] == stored_text


def test_model_padding_is_prepared_once_and_cached(store: Store) -> None:
    ctx_pairs = choose(load_pairs("sample"), 3, seed=0)

    async def prepare(base_url: str) -> tuple[int, int, list[str]]:
        client = anthropic.AsyncAnthropic(api_key="test", base_url=base_url, max_retries=0)
        variants = Variants(store=store, pad_model=PadModel(client, "claude-sonnet-4-6"))
        ctx = ProbeContext(pairs=ctx_pairs, pool=pool_from_pairs(ctx_pairs), rubric=PROBE_RUBRIC,
                           pool_rubric=PROBE_RUBRIC, variants=variants)
        variants.recording = True
        plan_probes(ctx, ["verbosity"])
        variants.recording = False
        spend = await variants.prepare()
        plan = plan_probes(ctx, ["verbosity"])
        texts = [c.answer for c in plan.calls if c.kind == "pointwise" and c.arm == "padded"]
        await client.close()
        return spend.rewrites, spend.reused, texts

    with MockAnthropic() as mock:
        made, reused, texts = asyncio.run(prepare(mock.base_url))
        # Every pool answer (both sides of 3 pairs) is padded once, through the API.
        assert (made, reused) == (6, 0) and mock.count("POST /v1/messages") == 6
        assert all(perturb.count_words(t) > 1.6 * 20 for t in texts)
        made2, reused2, texts2 = asyncio.run(prepare(mock.base_url))
        assert (made2, reused2) == (0, 6) and mock.count("POST /v1/messages") == 6
        assert texts2 == texts


def test_planning_needs_prepare_before_model_padding() -> None:
    variants = Variants(pad_model=PadModel(client=None, model="m"))
    with pytest.raises(RuntimeError, match="before prepare"):
        variants.make("padded", "Some answer. It has words.")
