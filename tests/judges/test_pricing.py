"""Price table loading and cost arithmetic."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgelab.calibration import formats, pricing
from judgelab.calibration.judges import JudgeCall
from judgelab.calibration.perturb import PAD_INSTRUCTION
from judgelab.calibration.pricing import TokenUsage
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Rubric


def test_bundled_table_prices_known_models_and_not_unknown_ones() -> None:
    table = pricing.load_prices()
    assert table.batch_discount == 0.5
    assert table.price("fake-judge") is not None
    assert table.price("claude-sonnet-4-5-20250929") == table.price("claude-sonnet-4-5")
    assert pricing.cost("no-such-model", TokenUsage(input_tokens=10)) is None
    for family in ("opus", "sonnet", "haiku"):
        assert any(family in name for name in table.models)


def test_cost_arithmetic_by_token_kind() -> None:
    # claude-sonnet-4-5: input 3, output 15, cache write 3.75, 1h write 6, cache read 0.30 per MTok.
    # 1000*3 + 200*15 + 400*3.75 + 100*6 + 2000*0.3 = 3000 + 3000 + 1500 + 600 + 600 = 8700 / 1e6
    usage = TokenUsage(
        input_tokens=1000,
        output_tokens=200,
        cache_write_tokens=400,
        cache_write_1h_tokens=100,
        cache_read_tokens=2000,
    )
    assert pricing.cost("claude-sonnet-4-5", usage) == pytest.approx(0.0087)
    assert pricing.cost("claude-sonnet-4-5", usage, batch=True) == pytest.approx(0.00435)
    assert pricing.cost("fake-judge", usage) == 0.0


def test_usage_from_api_block_splits_one_hour_writes() -> None:
    block = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 40,
        "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 200},
    }
    assert TokenUsage.from_api(block) == TokenUsage(10, 5, 100, 200, 40)
    assert TokenUsage.from_api({"input_tokens": 3, "output_tokens": 1}) == TokenUsage(3, 1)


def test_long_prompt_tier_applies_to_every_token() -> None:
    # claude-haiku-5-5 above 100k prompt tokens: input 0.50, output 2.50 per MTok.
    small = TokenUsage(input_tokens=100_000, output_tokens=1000)
    large = TokenUsage(input_tokens=100_001, output_tokens=1000)
    assert pricing.cost("claude-haiku-5-5", small) == pytest.approx((100_000 * 0.1 + 1000 * 0.5) / 1e6)
    assert pricing.cost("claude-haiku-5-5", large) == pytest.approx((100_001 * 0.5 + 1000 * 2.5) / 1e6)


def test_estimate_with_cached_prefix() -> None:
    # 10 calls of 1200 prompt tokens, 1000 of them a cached rubric prefix, 100 output tokens.
    # claude-opus-4-8: uncached 10*200*5 + write 1000*6.25 + reads 9*1000*0.5 + out 10*100*25
    # = 10000 + 6250 + 4500 + 25000 = 45750 / 1e6
    est = pricing.estimate(
        "claude-opus-4-8", calls=10, input_tokens=1200, output_tokens=100, cached_prefix_tokens=1000
    )
    assert est.usd == pytest.approx(0.04575)
    assert est.usage.cache_read_tokens == 9000
    with pytest.raises(InputError):
        pricing.estimate("m", calls=1, input_tokens=10, output_tokens=1, cached_prefix_tokens=11)


def test_estimate_calls_groups_cache_writes_by_system_block(rubric: Rubric, task: str, answer: str) -> None:
    calls = [formats.build_call("pointwise", "likert5", "claude-haiku-4-5", rubric, task, answer)] * 3
    # cache=True: assume the block is cached whatever its length (the grouping is the subject).
    est = pricing.estimate_calls(calls, output_tokens=50, cache=True)
    system = pricing.approx_tokens(calls[0].system)
    assert est.calls == 3
    assert est.usage.cache_write_tokens == system and est.usage.cache_read_tokens == 2 * system
    assert est.usd is not None and est.usd > 0
    uncached = pricing.estimate_calls(calls, output_tokens=50, cache=False)
    assert uncached.usage.cache_read_tokens == 0 and uncached.usd is not None
    with pytest.raises(InputError, match="several models"):
        other = formats.build_call("pointwise", "likert5", "fake-judge", rubric, task, answer)
        pricing.estimate_calls([calls[0], other])


def test_prices_env_points_at_a_user_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "prices.toml"
    mine.write_text(
        '[defaults]\nbatch_discount = 0.4\n[models."my-judge"]\n'
        "input = 1\noutput = 2\ncache_write = 1\ncache_write_1h = 1\ncache_read = 0.5\n"
    )
    monkeypatch.setenv(pricing.PRICES_ENV, str(mine))
    assert pricing.cost("my-judge", TokenUsage(input_tokens=1_000_000)) == pytest.approx(1.0)
    assert pricing.cost("my-judge", TokenUsage(output_tokens=1_000_000), batch=True) == pytest.approx(0.8)
    assert pricing.cost("claude-opus-4-8", TokenUsage(input_tokens=1)) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("not toml [", "not valid TOML", id="bad_toml"),
        pytest.param("[defaults]\n", "no [models", id="no_models"),
        pytest.param('[models."m"]\ninput = 1\n', "lacks output", id="missing_rate"),
        pytest.param(
            '[models."m"]\ninput = -1\noutput = 1\ncache_write = 1\ncache_write_1h = 1\ncache_read = 1\n',
            "must be a number >= 0",
            id="negative_rate",
        ),
    ],
)
def test_bad_price_tables_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    with pytest.raises(InputError, match=r"bad\.toml") as info:
        pricing.load_prices(bad)
    assert message in str(info.value)


def test_missing_price_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        pricing.load_prices(tmp_path / "nope.toml")


def _call(user: str, *, model: str = "claude-sonnet-4-5", system: int = 4400) -> JudgeCall:
    # system: 4,400 characters = 1,100 approximate tokens, above claude-sonnet-4-5's 1,024-token
    # minimum cacheable length; user: 80 characters = 20.
    return JudgeCall("pointwise", "likert5", model, "s" * system, user)


def test_estimate_plan_prices_only_the_uncached_requests() -> None:
    requests = {k: _call(k * 80) for k in ("a", "b", "c")}
    est = pricing.estimate_plan(
        requests, model="claude-sonnet-4-5", planned_calls=5, cached={"c"}, output_tokens=150
    )
    assert (est.planned_calls, est.distinct_requests, est.already_cached, est.calls) == (5, 3, 1, 2)
    # Two calls: users 2*20 uncached, the system block written once (1100) and read once (1100),
    # 2*150 output. claude-sonnet-4-5: 40*3 + 1100*3.75 + 1100*0.30 + 300*15 = 9075 / 1e6.
    assert est.prompt_tokens == 2240 and est.output_tokens == 300
    assert est.cost_usd == pytest.approx(0.009075)
    # A batch sends a 1-hour TTL: its one write costs the 1-hour rate (6.00), half price.
    assert est.cost_usd_batch == pytest.approx((40 * 3 + 1100 * 6 + 1100 * 0.30 + 300 * 15) / 1e6 / 2)
    assert (est.prompt_cache, est.cache_prefix_tokens, est.cache_min_tokens) == ("applies", 1100, 1024)
    assert est.token_method == pricing.APPROX_METHOD and est.model_priced
    assert est.padding_rewrites == 0 and est.padding_cost_usd == 0.0 and est.spent == 0.0


def test_estimate_plan_scales_the_split_to_an_exact_count() -> None:
    requests = {k: _call(k * 80) for k in ("a", "b")}
    est = pricing.estimate_plan(
        requests, model="claude-sonnet-4-5", planned_calls=2, exact_prompt_tokens=4480
    )
    # The API counted twice the approximation: every prompt kind doubles, output does not.
    # 80*3 + 2200*3.75 + 2200*0.30 + 300*15 = 13650 / 1e6.
    assert est.prompt_tokens == 4480 and est.token_method == pricing.EXACT_METHOD
    assert est.cost_usd == pytest.approx(0.01365)


def test_a_batch_prices_cache_writes_at_the_one_hour_rate_and_its_hits_as_a_range() -> None:
    # Issue 30, item 11: batches send a 1-hour cache TTL, but were priced at the 5-minute write
    # rate; and cache hits in a batch are best effort, so one figure claimed too much.
    requests = {k: _call(k * 80) for k in ("a", "b", "c")}
    est = pricing.estimate_plan(requests, model="claude-sonnet-4-5", planned_calls=3, batch=True)
    # claude-sonnet-4-5: input 3, cache_write_1h 6, cache_read 0.30, output 15; batch half price.
    low = (60 * 3 + 1100 * 6 + 2 * 1100 * 0.30 + 450 * 15) / 1e6 / 2
    high = (60 * 3 + 3 * 1100 * 6 + 450 * 15) / 1e6 / 2
    assert est.cost_usd_batch == pytest.approx(low)
    assert est.cost_usd_batch_high == pytest.approx(high)
    five_minutes = pricing.estimate_plan(
        requests, model="claude-sonnet-4-5", planned_calls=3, batch=True, batch_cache_ttl="5m"
    )
    assert five_minutes.cost_usd_batch == pytest.approx((60 * 3 + 1100 * 3.75 + 2 * 1100 * 0.30 + 450 * 15) / 2e6)


def test_exact_rubric_block_counts_decide_the_cache_not_four_characters_per_token() -> None:
    # 4,400 characters read as 1,100 tokens (above claude-sonnet-4-5's 1,024 minimum), but the
    # API counted 900: the block would not be cached, and the estimate must not price it so.
    requests = {k: _call(k * 80) for k in ("a", "b")}
    approx = pricing.estimate_plan(requests, model="claude-sonnet-4-5", planned_calls=2)
    exact = pricing.estimate_plan(
        requests, model="claude-sonnet-4-5", planned_calls=2, prefix_tokens={"s" * 4400: 900},
        exact_prompt_tokens=2 * (900 + 25),
    )
    assert approx.prompt_cache == "applies"
    assert (exact.prompt_cache, exact.cache_prefix_tokens, exact.prefix_method) == ("below minimum", 900, "exact")
    assert exact.prompt_tokens == 1850
    assert exact.cost_usd == pytest.approx((1850 * 3 + 300 * 15) / 1e6)
    above = pricing.estimate_plan(
        requests, model="claude-sonnet-4-5", planned_calls=2, prefix_tokens={"s" * 4400: 1500},
        exact_prompt_tokens=2 * (1500 + 25),
    )
    # One write and one read of the exact 1,500 tokens; the rest of the count is uncached input.
    assert above.prompt_cache == "applies"
    assert above.cost_usd == pytest.approx((50 * 3 + 1500 * 3.75 + 1500 * 0.30 + 300 * 15) / 1e6)


def test_estimate_plan_prices_no_cache_below_the_models_minimum() -> None:
    # A 100-token rubric block is below claude-sonnet-4-5's 1,024-token minimum: the API would
    # ignore the breakpoint, so every prompt token is priced as uncached.
    requests = {k: _call(k * 80, system=400) for k in ("a", "b")}
    est = pricing.estimate_plan(requests, model="claude-sonnet-4-5", planned_calls=2)
    # 2 * (100 + 20) * 3 + 300 * 15 = 5220 / 1e6.
    assert est.cost_usd == pytest.approx(0.00522)
    assert (est.prompt_cache, est.cache_prefix_tokens, est.cache_min_tokens) == ("below minimum", 100, 1024)
    table = pricing.load_prices()
    assert table.cache_applies("claude-sonnet-4-5", 100) is False
    assert table.cache_applies("claude-sonnet-4-5", 1024) is True
    assert table.cache_applies("my-own-model", 10**6) is None


def test_every_claude_model_states_its_minimum_cacheable_length() -> None:
    table = pricing.load_prices()
    claude = [m for m in table.models if m.startswith("claude-")]
    assert claude and all(table.min_cache_tokens(m) in (512, 1024, 2048, 4096) for m in claude)
    # A dated snapshot id finds its model's minimum too.
    assert table.min_cache_tokens("claude-opus-4-6-20260101") == 4096


def test_unknown_minimum_prices_as_uncached(tmp_path: Path) -> None:
    mine = tmp_path / "prices.toml"
    mine.write_text(
        '[models."my-judge"]\ninput = 1\noutput = 0\ncache_write = 1\ncache_write_1h = 1\n'
        "cache_read = 0.1\n"
    )
    table = pricing.load_prices(mine)
    requests = {k: _call(k * 80, model="my-judge") for k in ("a", "b")}
    est = pricing.estimate_plan(requests, model="my-judge", planned_calls=2, prices=table)
    assert est.prompt_cache == "unknown minimum" and est.cache_min_tokens is None
    assert est.cost_usd == pytest.approx(2 * 1120 / 1e6)
    bad = tmp_path / "bad.toml"
    bad.write_text(mine.read_text() + "min_cache_tokens = -1\n")
    with pytest.raises(InputError, match="min_cache_tokens"):
        pricing.load_prices(bad)


def test_padding_through_the_batch_is_priced_at_the_batch_rate() -> None:
    padded = ["p" * 400]
    listed = pricing.estimate_plan({}, model="claude-sonnet-4-5", planned_calls=0, padded_texts=padded)
    batched = pricing.estimate_plan(
        {}, model="claude-sonnet-4-5", planned_calls=0, padded_texts=padded, batch=True
    )
    assert listed.padding_cost_usd is not None and batched.padding_cost_usd is not None
    assert batched.padding_cost_usd == pytest.approx(listed.padding_cost_usd / 2)


def test_estimate_plan_prices_padding_rewrites() -> None:
    padded = ["p" * 400, "q" * 800]  # 100 and 200 approximate tokens
    est = pricing.estimate_plan(
        {}, model="claude-sonnet-4-5", planned_calls=0, padded_texts=padded
    )
    instruction = pricing.approx_tokens(PAD_INSTRUCTION)
    # A rewrite reads the instruction and the original (half the padded text), writes the padding.
    assert est.padding_rewrites == 2
    assert (est.padding_input_tokens, est.padding_output_tokens) == (2 * instruction + 150, 300)
    assert est.padding_cost_usd == pytest.approx(((2 * instruction + 150) * 3 + 300 * 15) / 1e6)
    assert est.calls == 0 and est.cost_usd == 0.0


def test_estimate_plan_leaves_an_unknown_model_unpriced() -> None:
    est = pricing.estimate_plan(
        {"a": _call("a", model="my-own-model")}, model="my-own-model", planned_calls=1,
        padded_texts=["x"],
    )
    assert not est.model_priced
    assert est.cost_usd is None and est.cost_usd_batch is None and est.padding_cost_usd is None
    payload = est.to_dict()
    assert payload["padding_tokens"] == {
        "input": est.padding_input_tokens, "output": est.padding_output_tokens
    }
    assert "padding_input_tokens" not in payload
    assert list(payload)[-3:] == ["padding_tokens", "padding_cost_usd", "spent"]
