"""``judgelab estimate --judge openai``: OpenAI's prompt caching said and priced as OpenAI bills it.

OpenAI caches a prompt prefix on its own from 1,024 tokens and charges nothing to write it (the
first use is plain input, later uses cached input); there is no breakpoint to ignore and no
1-hour write rate. The estimate prices what the OpenAI judge will bill (its replies report
``cached_tokens`` and never a cache write), whatever the table's cache-write rates say.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from judgelab.calibration import pricing
from judgelab.calibration.judges import JudgeCall
from judgelab.cli import main
from tests.conftest import DATA

MODEL = "gpt-4.1-mini"


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", pricing.PRICES_ENV):
        monkeypatch.delenv(name, raising=False)


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def _long_spec(tmp_path: Path) -> Path:
    """The bundled judge spec for GPT with a dozen times the few-shot examples: a rubric block over 1,024 tokens."""
    text = (DATA / "judge_spec.toml").read_text().replace(
        'model = "claude-sonnet-4-6"\nfamily = "claude"', f'provider = "openai"\nmodel = "{MODEL}"\nfamily = "gpt"')
    start = text.index("items = [\n") + len("items = [\n")
    end = text.index("]\n\n[references]")
    path = tmp_path / "long_spec.toml"
    path.write_text(text[:start] + text[start:end] * 12 + text[end:])
    return path


def _cache_lines(output: str) -> list[str]:
    return [line.strip() for line in output.splitlines() if "prompt cache" in line or "a range:" in line]


def test_the_openai_estimate_says_what_openai_caches_and_charges(tmp_path: Path) -> None:
    args = ("--n", "4", "--biases", "position,verbosity", "--batch")
    long = invoke("estimate", "--judge-spec", str(_long_spec(tmp_path)), *args).output
    assert _cache_lines(long) == [
        "prompt cache: automatic (the 1,886-token rubric block (~4 characters per token) reaches the 1,024-token "
        "minimum from which OpenAI caches a prompt prefix): its first use priced as plain input (no cache write "
        "charge), later uses at the cached-input price",
        "a range: cache hits in a batch are best effort, from the rubric block read from the cache after its "
        "first use, to no cache hit at all (OpenAI charges no cache write)",
    ]
    short = invoke("estimate", "--judge", "openai", "--model", MODEL, *args).output
    assert _cache_lines(short) == [
        "prompt cache: does not apply (the 295-token rubric block (~4 characters per token) is below the "
        "1,024-token minimum from which OpenAI caches a prompt prefix): every prompt token priced as uncached",
    ]
    local = invoke("estimate", "--judge", "openai", "--model", "llama3.1:8b", *args).output
    assert _cache_lines(local) == [
        "prompt cache: unknown (llama3.1:8b has no minimum cacheable length in the price table; OpenAI caches "
        "prefixes automatically from 1,024 tokens, other servers by their own rules): priced as uncached, "
        "an upper bound",
    ]
    assert "padding: 8 model rewrites, ~2,693 + 2,015 tokens, unpriced (rewrites" in local
    for text in (long, short, local):
        assert "breakpoint" not in text and "1-hour" not in text
    # The Anthropic wording is unchanged for the Anthropic judge.
    claude = invoke("estimate", *args).output
    assert "the API would ignore the breakpoint" in _cache_lines(claude)[0]
    as_json = json.loads(invoke("estimate", "--judge-spec", str(_long_spec(tmp_path)), *args, "--json").stdout)
    assert as_json["provider"] == "openai" and as_json["prompt_cache"] == "applies"


def test_the_openai_estimate_never_prices_a_cache_write() -> None:
    # A table whose cache-write rates differ from input: OpenAI bills no write, so they must not count.
    rates = pricing.ModelPrice(input=1.0, output=4.0, cache_write=3.0, cache_write_1h=5.0, cache_read=0.25,
                               min_cache_tokens=1024)
    table = pricing.PriceTable(models={"m": rates}, batch_discount=0.5, source="test")
    system = "rubric " * 1000  # 1,750 tokens at ~4 characters per token: cached
    calls = {str(i): JudgeCall("pointwise", "likert5", "m", system, f"answer {i}") for i in range(10)}
    block, user = pricing.approx_tokens(system), pricing.approx_tokens("answer 0")
    openai = pricing.estimate_plan(calls, model="m", planned_calls=10, prices=table, provider="openai",
                                   output_tokens=100)
    claude = pricing.estimate_plan(calls, model="m", planned_calls=10, prices=table, output_tokens=100)
    assert openai.prompt_cache == claude.prompt_cache == "applies" and openai.provider == "openai"
    # First use at the input rate, nine reads at the cached rate; no write rate anywhere.
    first, reads = pricing.TokenUsage(input_tokens=block + 10 * user, output_tokens=1000), 9 * block
    assert openai.cost_usd == pytest.approx(table.cost("m", first + pricing.TokenUsage(cache_read_tokens=reads)))
    assert openai.cost_usd_batch == pytest.approx(openai.cost_usd / 2)
    # No hit at all in a batch: every prompt token at the input rate.
    assert openai.cost_usd_batch_high == pytest.approx(
        table.cost("m", first + pricing.TokenUsage(input_tokens=reads), batch=True))
    # The Anthropic judge pays its write (1-hour rate in a batch): dearer than OpenAI's first use.
    assert claude.cost_usd is not None and claude.cost_usd > openai.cost_usd
