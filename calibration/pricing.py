"""What judge calls cost, from the usage block each reply carries and a price table.

The table is ``calibration/prices.toml`` (list prices, US dollars per million tokens), or the
file ``$JUDGELAB_PRICES`` points to. A model that is not in the table has no price: every cost
function returns ``None`` for it rather than a guess, and reports show "unpriced".

Token kinds follow the Messages API usage block: ``input_tokens`` (uncached prompt),
``cache_creation_input_tokens`` (prompt written to the cache; 5-minute or 1-hour TTL),
``cache_read_input_tokens`` (prompt read from the cache) and ``output_tokens``. Message
Batches bill every kind at ``batch_discount`` (half) of the list price.

The API caches a prompt prefix only when it reaches the model's minimum cacheable length
(``min_cache_tokens`` in the table, 512 to 4,096 tokens); below it a ``cache_control``
breakpoint is silently ignored and every prompt token is billed as uncached.
:meth:`PriceTable.cache_applies` is the one rule the judge (where to put the breakpoint), the
estimate (how to price) and the mock server (what to cache) share.
"""

from __future__ import annotations

import functools
import math
import os
import re
import tomllib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgelab.calibration.perturb import PAD_INSTRUCTION
from judgelab.labeler.errors import InputError

if TYPE_CHECKING:
    # Only for annotations: the judges import this module to price their replies.
    from judgelab.calibration.judges._base import JudgeCall

__all__ = [
    "APPROX_METHOD",
    "EXACT_METHOD",
    "OUTPUT_TOKENS",
    "PRICES_ENV",
    "CostEstimate",
    "ModelPrice",
    "PlanEstimate",
    "PriceTable",
    "TokenUsage",
    "approx_tokens",
    "cost",
    "estimate",
    "estimate_calls",
    "estimate_plan",
    "load_prices",
]

PRICES_ENV = "JUDGELAB_PRICES"
"""Environment variable naming a replacement price table (same TOML layout)."""

_MTOK = 1_000_000

OUTPUT_TOKENS = 150
"""Completion tokens a judge reply is assumed to take in an estimate (a short reason and the
verdict line); real replies are recorded with their true counts."""

APPROX_METHOD = "approximate: ~4 characters per token (no API key or --base-url for exact counts)"
""":attr:`PlanEstimate.token_method` when prompt tokens are :func:`approx_tokens` counts."""

EXACT_METHOD = "exact prompt tokens from the API's count_tokens endpoint"
""":attr:`PlanEstimate.token_method` when the API counted the prompt tokens."""


def approx_tokens(text: str) -> int:
    """A rough token count (4 characters per token), for estimates made without the API.

    Use :meth:`AnthropicJudge.count_tokens <judgelab.calibration.judges.AnthropicJudge.count_tokens>`
    for the exact count of a real request.
    """
    return max(1, math.ceil(len(text) / 4)) if text else 0


@dataclass(frozen=True)
class TokenUsage:
    """The tokens one or more calls were billed for.

    Attributes:
        input_tokens: Uncached prompt tokens.
        output_tokens: Completion tokens.
        cache_write_tokens: Prompt tokens written to the cache with the 5-minute TTL.
        cache_write_1h_tokens: Prompt tokens written to the cache with the 1-hour TTL.
        cache_read_tokens: Prompt tokens read from the cache.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    cache_read_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Every prompt token of the request: uncached, cache writes and cache reads."""
        return (
            self.input_tokens
            + self.cache_write_tokens
            + self.cache_write_1h_tokens
            + self.cache_read_tokens
        )

    def __add__(self, other: TokenUsage) -> TokenUsage:
        """Token counts summed field by field."""
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cache_write_1h_tokens + other.cache_write_1h_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
        )

    @classmethod
    def from_api(cls, usage: Any) -> TokenUsage:
        """Read an API usage block (an SDK ``Usage`` object or its JSON dict).

        When the block splits cache writes by TTL (``cache_creation.ephemeral_1h_input_tokens``)
        the 1-hour part is priced at the 1-hour rate; otherwise all writes are 5-minute writes.
        """

        def get(obj: Any, name: str) -> Any:
            if obj is None:
                return None
            return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)

        writes = int(get(usage, "cache_creation_input_tokens") or 0)
        split = get(usage, "cache_creation")
        writes_1h = int(get(split, "ephemeral_1h_input_tokens") or 0)
        return cls(
            input_tokens=int(get(usage, "input_tokens") or 0),
            output_tokens=int(get(usage, "output_tokens") or 0),
            cache_write_tokens=max(writes - writes_1h, 0),
            cache_write_1h_tokens=writes_1h,
            cache_read_tokens=int(get(usage, "cache_read_input_tokens") or 0),
        )


@dataclass(frozen=True)
class ModelPrice:
    """One model's rates in US dollars per million tokens.

    Attributes:
        input: Uncached prompt tokens.
        output: Completion tokens.
        cache_write: 5-minute cache writes.
        cache_write_1h: 1-hour cache writes.
        cache_read: Cache reads.
        long_prompt: Rates for every token of a request whose prompt exceeds
            ``threshold_tokens``, if the model has such a tier.
        threshold_tokens: The long-prompt threshold.
        min_cache_tokens: The model's minimum cacheable prompt length (``None``: unknown).
    """

    input: float
    output: float
    cache_write: float
    cache_write_1h: float
    cache_read: float
    long_prompt: ModelPrice | None = None
    threshold_tokens: int | None = None
    min_cache_tokens: int | None = None

    def cost(self, usage: TokenUsage, *, discount: float = 1.0) -> float:
        """Dollars for ``usage`` at these rates times ``discount``."""
        rates = self
        if (
            self.long_prompt is not None
            and self.threshold_tokens is not None
            and usage.prompt_tokens > self.threshold_tokens
        ):
            rates = self.long_prompt
        dollars = (
            usage.input_tokens * rates.input
            + usage.output_tokens * rates.output
            + usage.cache_write_tokens * rates.cache_write
            + usage.cache_write_1h_tokens * rates.cache_write_1h
            + usage.cache_read_tokens * rates.cache_read
        ) / _MTOK
        return dollars * discount


@dataclass(frozen=True)
class PriceTable:
    """A loaded price table.

    Attributes:
        models: Model id -> :class:`ModelPrice`.
        batch_discount: Multiplier for Message Batches (0.5 = half price).
        source: The file it was read from.
    """

    models: Mapping[str, ModelPrice]
    batch_discount: float
    source: str

    def price(self, model: str) -> ModelPrice | None:
        """The model's rates, matching a dated snapshot id to its undated key; ``None`` if unknown."""
        if model in self.models:
            return self.models[model]
        head, _, tail = model.rpartition("-")
        if head and len(tail) == 8 and tail.isdigit():
            return self.models.get(head)
        # OpenAI dates its snapshots -YYYY-MM-DD ("gpt-4o-2024-08-06" is priced as "gpt-4o").
        dated = re.fullmatch(r"(.+)-\d{4}-\d{2}-\d{2}", model)
        return self.models.get(dated.group(1)) if dated else None

    def min_cache_tokens(self, model: str) -> int | None:
        """The model's minimum cacheable prompt length; ``None`` when the table does not say."""
        rates = self.price(model)
        return None if rates is None else rates.min_cache_tokens

    def cache_applies(self, model: str, prefix_tokens: int) -> bool | None:
        """Whether a cached prefix of ``prefix_tokens`` tokens is really cached on ``model``.

        ``None`` when the table has no minimum for the model (unknown: the API may or may not
        cache it).

        >>> table = load_prices()
        >>> table.cache_applies("claude-sonnet-4-6", 294), table.cache_applies("claude-opus-4-8", 1500)
        (False, True)
        """
        minimum = self.min_cache_tokens(model)
        return None if minimum is None else prefix_tokens >= minimum

    def cost(self, model: str, usage: TokenUsage | Any, *, batch: bool = False) -> float | None:
        """Dollars for ``usage`` on ``model``; ``None`` if the model is not in the table."""
        rates = self.price(model)
        if rates is None:
            return None
        if not isinstance(usage, TokenUsage):
            usage = TokenUsage.from_api(usage)
        return rates.cost(usage, discount=self.batch_discount if batch else 1.0)


_RATE_KEYS = ("input", "output", "cache_write", "cache_write_1h", "cache_read")


def _rates(table: Mapping[str, Any], where: str, file: str) -> ModelPrice:
    missing = [k for k in _RATE_KEYS if k not in table]
    if missing:
        raise InputError(
            f"{where} lacks {', '.join(missing)}",
            file=file,
            fix="give input, output, cache_write, cache_write_1h and cache_read in USD per MTok",
        )
    values: dict[str, float] = {}
    for key in _RATE_KEYS:
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise InputError(f"{where}.{key} must be a number >= 0, got {value!r}", file=file)
        values[key] = float(value)
    long_prompt = None
    threshold = None
    if "long_prompt" in table:
        lp = table["long_prompt"]
        threshold = lp.get("threshold_tokens") if isinstance(lp, Mapping) else None
        if not isinstance(threshold, int) or threshold <= 0:
            raise InputError(f"{where}.long_prompt needs threshold_tokens > 0", file=file)
        long_prompt = _rates(lp, f"{where}.long_prompt", file)
    minimum = table.get("min_cache_tokens")
    if minimum is not None and (isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 0):
        raise InputError(f"{where}.min_cache_tokens must be a whole number >= 0, got {minimum!r}", file=file)
    return ModelPrice(
        **values, long_prompt=long_prompt, threshold_tokens=threshold, min_cache_tokens=minimum
    )


@functools.cache
def _bundled_prices() -> PriceTable:
    # Parsed once per process: the fake judge prices every reply, and re-reading the
    # TOML each time was about half of a fake run's time.
    bundled = resources.files("judgelab.calibration").joinpath("prices.toml")
    return _parse(bundled.read_text(encoding="utf-8"), "calibration/prices.toml")


def load_prices(path: str | os.PathLike[str] | None = None) -> PriceTable:
    """Load a price table.

    Args:
        path: A TOML file in the layout of the bundled ``prices.toml``. Default:
            ``$JUDGELAB_PRICES`` if set, else the bundled table.

    Raises:
        InputError: If the file is missing, not TOML, or a model's rates are incomplete.
    """
    chosen = path if path is not None else os.environ.get(PRICES_ENV) or None
    if chosen is None:
        return _bundled_prices()
    file = Path(chosen)
    try:
        stat = file.stat()
    except OSError as exc:
        raise InputError(
            f"price table not found ({exc.strerror})",
            file=str(file),
            fix=f"fix the path or unset {PRICES_ENV} to use the bundled table",
        ) from exc
    return _load_file(str(file.resolve()), stat.st_mtime_ns)


@lru_cache(maxsize=8)
def _load_file(file: str, mtime_ns: int) -> PriceTable:
    # Cached per (file, mtime): an edited table is picked up without a restart.
    return _parse(Path(file).read_text(encoding="utf-8"), file)


def _parse(text: str, file: str) -> PriceTable:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", file=file) from exc
    models = data.get("models")
    if not isinstance(models, Mapping) or not models:
        raise InputError("no [models.\"<id>\"] tables", file=file)
    discount = data.get("defaults", {}).get("batch_discount", 0.5)
    if isinstance(discount, bool) or not isinstance(discount, int | float) or not 0 < discount <= 1:
        raise InputError(f"defaults.batch_discount must be in (0, 1], got {discount!r}", file=file)
    parsed = {name: _rates(rates, f"models.{name!r}", file) for name, rates in models.items()}
    return PriceTable(models=parsed, batch_discount=float(discount), source=file)


def cost(
    model: str,
    usage: TokenUsage | Any,
    batch: bool = False,
    *,
    prices: PriceTable | None = None,
) -> float | None:
    """Dollars one call (or a sum of calls) cost at list price.

    Args:
        model: The model id billed.
        usage: A :class:`TokenUsage`, an SDK ``Usage`` object or its JSON dict.
        batch: Whether the calls ran through Message Batches (discounted).
        prices: A loaded table (default: :func:`load_prices`).

    Returns:
        US dollars, or ``None`` when the model is not in the table.
    """
    table = prices if prices is not None else load_prices()
    return table.cost(model, usage, batch=batch)


@dataclass(frozen=True)
class CostEstimate:
    """A cost preview for a set of calls, before spending anything.

    Attributes:
        model: The model priced.
        calls: Number of calls.
        usage: Token totals the estimate assumes.
        usd: Dollars, or ``None`` when the model is not in the table.
        batch: Whether Batch pricing was applied.
        method: How tokens were counted, in words.
    """

    model: str
    calls: int
    usage: TokenUsage
    usd: float | None
    batch: bool
    method: str


def estimate(
    model: str,
    *,
    calls: int,
    input_tokens: int,
    output_tokens: int,
    cached_prefix_tokens: int = 0,
    batch: bool = False,
    prices: PriceTable | None = None,
) -> CostEstimate:
    """Preview the cost of ``calls`` similar calls.

    Args:
        model: The judge model.
        calls: How many calls.
        input_tokens: Prompt tokens per call (cached prefix included).
        output_tokens: Completion tokens expected per call.
        cached_prefix_tokens: Tokens of the prompt-cached prefix per call (the rubric system
            block): written once, then read by the other ``calls - 1`` calls. ``0`` prices
            every prompt token as uncached. The API skips caching silently below a model's
            minimum prefix length (:meth:`PriceTable.cache_applies`): pass the prefix only
            when it reaches it.
        batch: Price at the Message Batches rate.
        prices: A loaded table (default: :func:`load_prices`).

    Raises:
        InputError: If a count is negative or the prefix is longer than the prompt.
    """
    if min(calls, input_tokens, output_tokens, cached_prefix_tokens) < 0:
        raise InputError("estimate: token and call counts must be >= 0")
    if cached_prefix_tokens > input_tokens:
        raise InputError("estimate: cached_prefix_tokens cannot exceed input_tokens")
    writes = cached_prefix_tokens if calls else 0
    usage = TokenUsage(
        input_tokens=calls * (input_tokens - cached_prefix_tokens),
        output_tokens=calls * output_tokens,
        cache_write_tokens=writes,
        cache_read_tokens=max(calls - 1, 0) * cached_prefix_tokens,
    )
    table = prices if prices is not None else load_prices()
    method = "given token counts" + (", prompt cache on the prefix" if cached_prefix_tokens else "")
    return CostEstimate(model, calls, usage, table.cost(model, usage, batch=batch), batch, method)


def estimate_calls(
    calls: Iterable[Any],
    *,
    output_tokens: int = 150,
    batch: bool = False,
    cache: bool | None = None,
    prices: PriceTable | None = None,
    prefix_tokens: Mapping[str, int] | None = None,
) -> CostEstimate:
    """Preview the cost of a list of :class:`~judgelab.calibration.judges.JudgeCall` objects.

    Tokens are :func:`approx_tokens` of the system and user text, or for a system block the
    exact count in ``prefix_tokens`` when given. When the system block is prompt-cached, the
    first call per distinct system block writes it to the cache and later calls read it.

    Args:
        calls: The calls (all for one model).
        output_tokens: Completion tokens expected per call.
        batch: Price at the Message Batches rate.
        cache: ``None`` (default): cache a system block only when it reaches the model's
            minimum cacheable length (:meth:`PriceTable.cache_applies`; an unknown minimum
            counts as not cached); ``True``: assume every system block is cached; ``False``:
            none is.
        prices: A loaded table (default: :func:`load_prices`).
        prefix_tokens: Exact tokens of system blocks, by their text (from the API's token
            counter); they decide whether a block reaches the model's minimum cacheable length.

    Raises:
        InputError: If the calls name more than one model.
    """
    table = prices if prices is not None else load_prices()
    exact = prefix_tokens or {}
    seen: set[str] = set()
    usage = TokenUsage()
    models: set[str] = set()
    n = 0
    for call in calls:
        n += 1
        models.add(call.model)
        system, user = exact.get(call.system, approx_tokens(call.system)), approx_tokens(call.user)
        cached = cache if cache is not None else bool(table.cache_applies(call.model, system))
        if not cached:
            usage += TokenUsage(input_tokens=system + user, output_tokens=output_tokens)
        elif call.system in seen:
            usage += TokenUsage(
                input_tokens=user, output_tokens=output_tokens, cache_read_tokens=system
            )
        else:
            seen.add(call.system)
            usage += TokenUsage(
                input_tokens=user, output_tokens=output_tokens, cache_write_tokens=system
            )
    if len(models) > 1:
        raise InputError(f"estimate_calls: calls name several models: {sorted(models)}")
    model = models.pop() if models else ""
    usd = table.cost(model, usage, batch=batch) if model else 0.0
    counted = "exact rubric-block tokens, ~4 characters per token for the rest" if exact else "~4 characters per token"
    method = f"{counted}, {output_tokens} output tokens per call" + (
        ", system block prompt-cached" if usage.cache_write_tokens or usage.cache_read_tokens else ""
    )
    return CostEstimate(model, n, usage, usd, batch, method)


@dataclass(frozen=True)
class PlanEstimate:
    """What a plan of judge calls would cost, before anything is spent (``judgelab estimate``).

    Attributes:
        model: The judge model priced.
        model_priced: Whether the model is in the price table (else every cost is ``None``).
        price_table: The price table's file.
        planned_calls: Judgements in the plan.
        distinct_requests: Distinct requests among them (identical ones share one reply).
        already_cached: Distinct requests the project database has already answered (free).
        calls: Judge calls still to make: ``distinct_requests - already_cached``.
        prompt_tokens: Prompt tokens of those calls (cache writes and reads included).
        output_tokens: Completion tokens of those calls.
        token_method: How the prompt tokens were counted, in words.
        output_tokens_per_call: Completion tokens assumed per reply.
        cost_usd: The calls at list price (``None`` when unpriced).
        cost_usd_batch: The calls as a Message Batch, cache hits as in a live run: one write
            of the rubric block (at the 1-hour rate: batches send a 1-hour TTL), then reads
            (``None`` when unpriced). The low end of a range: in a batch, cache hits are best
            effort.
        cost_usd_batch_high: The calls as a Message Batch with no cache hit at all: every
            request writes the rubric block at the 1-hour rate (the high end).
        batch: Whether the run would use Message Batches.
        provider: Whose prompt-caching rules priced the cache: ``"anthropic"`` (the judge marks
            the rubric block with a breakpoint; writes billed at the cache-write rates) or
            ``"openai"`` (an OpenAI-compatible endpoint caches prefixes automatically and bills
            no write: a block's first use is plain input, later uses are cached input).
        prompt_cache: Whether the rubric block is prompt-cached: ``"applies"`` (it reaches the
            model's minimum cacheable length: written once, then read), ``"below minimum"``
            (every prompt token priced as uncached, as the API bills it), ``"unknown
            minimum"`` (the table has none for the model: priced as uncached, an upper bound)
            or ``"no calls"``.
        cache_prefix_tokens: Tokens of the longest rubric (system) block, the cached prefix.
        prefix_method: How the rubric block's tokens were counted (``"exact"`` from the API's
            token counter, or ``"approximate"``); they decide whether the cache applies.
        cache_min_tokens: The model's minimum cacheable prompt length (``None``: unknown).
        padding_rewrites: Model rewrites the padded variants need (0 when padding offline).
        padding_input_tokens: Prompt tokens of the rewrites.
        padding_output_tokens: Completion tokens of the rewrites.
        padding_cost_usd: The rewrites at the price the run would pay: list price, or the
            batch price with ``batch`` (rewrites go through the batch too); ``None`` when
            unpriced.
        spent: Money the estimate itself spent: always 0.
    """

    model: str
    model_priced: bool
    price_table: str
    planned_calls: int
    distinct_requests: int
    already_cached: int
    calls: int
    prompt_tokens: int
    output_tokens: int
    token_method: str
    output_tokens_per_call: int
    cost_usd: float | None
    cost_usd_batch: float | None
    cost_usd_batch_high: float | None
    batch: bool
    provider: str
    prompt_cache: str
    cache_prefix_tokens: int
    prefix_method: str
    cache_min_tokens: int | None
    padding_rewrites: int
    padding_input_tokens: int
    padding_output_tokens: int
    padding_cost_usd: float | None
    spent: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the padding tokens nested as ``{"input", "output"}``)."""
        out: dict[str, Any] = {}
        for name, value in self.__dict__.items():
            if name == "padding_input_tokens":
                out["padding_tokens"] = {
                    "input": self.padding_input_tokens, "output": self.padding_output_tokens,
                }
            elif name != "padding_output_tokens":
                out[name] = value
        return out


def estimate_plan(
    requests: Mapping[str, JudgeCall],
    *,
    model: str,
    planned_calls: int,
    cached: Collection[str] = frozenset(),
    exact_prompt_tokens: int | None = None,
    output_tokens: int = OUTPUT_TOKENS,
    padded_texts: Iterable[str] = (),
    batch: bool = False,
    prices: PriceTable | None = None,
    prefix_tokens: Mapping[str, int] | None = None,
    batch_cache_ttl: str = "1h",
    provider: str = "anthropic",
) -> PlanEstimate:
    """Price a plan's judge calls and its padding rewrites.

    Prompt tokens are :func:`approx_tokens` counts. The rubric block is priced as prompt-cached
    only when it reaches the model's minimum cacheable length (:meth:`PriceTable.cache_applies`),
    as the judge then marks it and the API then caches it; otherwise every prompt token is
    uncached (:func:`estimate_calls`). When the API counted the prompt (``exact_prompt_tokens``),
    its total replaces the approximation and the cached/uncached split is scaled to it.

    Args:
        requests: The plan's distinct requests by cache key.
        model: The judge model to price (also the model that writes padded variants).
        planned_calls: Judgements in the plan (identical requests counted each time).
        cached: Cache keys already answered in the project database; they cost nothing.
        exact_prompt_tokens: The API's count of the uncached requests' prompt tokens, if known.
        output_tokens: Completion tokens assumed per judge reply.
        padded_texts: One offline-padded text per model rewrite the run would need; a rewrite
            reads its original (about half the padded length) plus :data:`~calibration.
            perturb.PAD_INSTRUCTION` and writes about the padded length.
        batch: Whether the run would use Message Batches (the batch price is always shown;
            the padding rewrites are priced at it, as they go through the batch too).
        prices: A loaded table (default: :func:`load_prices`).
        prefix_tokens: Exact tokens of the rubric (system) blocks, by their text, from the
            API's token counter: they decide whether the cache applies (instead of ~4
            characters per token) and are priced as counted.
        batch_cache_ttl: The cache TTL batch requests carry (``"1h"``, the judge's default:
            their cache writes are priced at the 1-hour rate; ``"5m"``).
        provider: ``"anthropic"`` or ``"openai"``: whose caching rules apply. OpenAI caches a
            prompt prefix automatically and charges nothing to write it, so the rubric block's
            first use is priced as uncached input (whatever the table's cache-write rates), as
            the OpenAI judge bills its replies (``cached_tokens`` read, no write).

    Returns:
        The :class:`PlanEstimate`; every cost is ``None`` when ``model`` is not in the table.

    Raises:
        InputError: If the requests name more than one model.
    """
    table = prices if prices is not None else load_prices()
    todo = [call for key, call in requests.items() if key not in cached]
    exact_prefix = dict(prefix_tokens or {})
    priced = estimate_calls(todo, output_tokens=output_tokens, prices=table, prefix_tokens=exact_prefix)
    prefix = max((exact_prefix.get(call.system, approx_tokens(call.system)) for call in todo), default=0)
    applies = table.cache_applies(model, prefix)
    prompt_cache = (
        "no calls" if not todo
        else "unknown minimum" if applies is None
        else "applies" if applies
        else "below minimum"
    )
    usage = priced.usage
    method = APPROX_METHOD
    if exact_prompt_tokens is not None:
        method = EXACT_METHOD
        if exact_prefix and all(call.system in exact_prefix for call in todo):
            # The cached part is exact already; the rest of the count is uncached input.
            cached_part = usage.cache_write_tokens + usage.cache_read_tokens
            usage = replace(usage, input_tokens=max(exact_prompt_tokens - cached_part, 0))
        elif usage.prompt_tokens:
            usage = _scaled_prompt(usage, exact_prompt_tokens / usage.prompt_tokens)
    if provider == "openai":
        # No cache write charge: the block's first use is billed as plain input.
        usage = replace(usage, input_tokens=usage.input_tokens + usage.cache_write_tokens, cache_write_tokens=0)
    # A batch sends the cache TTL the judge sets (1 hour by default): its writes cost the
    # 1-hour rate. Its cache hits are best effort: from the live run's one write and reads
    # (low) to every request writing the block (high).
    if provider == "openai":
        # Nothing to write: no hit at all bills the reads as plain input.
        writes_low, writes_high = TokenUsage(), TokenUsage(input_tokens=usage.cache_read_tokens)
    elif batch_cache_ttl == "1h":
        writes_low = TokenUsage(cache_write_1h_tokens=usage.cache_write_tokens)
        writes_high = TokenUsage(cache_write_1h_tokens=usage.cache_write_tokens + usage.cache_read_tokens)
    else:
        writes_low = TokenUsage(cache_write_tokens=usage.cache_write_tokens)
        writes_high = TokenUsage(cache_write_tokens=usage.cache_write_tokens + usage.cache_read_tokens)
    base = TokenUsage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
    batch_low = base + writes_low + TokenUsage(cache_read_tokens=usage.cache_read_tokens)
    batch_high = base + writes_high
    known = table.price(model) is not None
    padded = list(padded_texts)
    instruction = approx_tokens(PAD_INSTRUCTION)
    pad_usage = TokenUsage(
        input_tokens=sum(instruction + approx_tokens(t) // 2 for t in padded),
        output_tokens=sum(approx_tokens(t) for t in padded),
    )
    pad_usd = (
        table.cost(model, pad_usage, batch=batch) if known and padded else (0.0 if known else None)
    )
    return PlanEstimate(
        model=model,
        model_priced=known,
        price_table=table.source,
        planned_calls=planned_calls,
        distinct_requests=len(requests),
        already_cached=len(requests) - len(todo),
        calls=len(todo),
        prompt_tokens=(
            exact_prompt_tokens if exact_prompt_tokens is not None else priced.usage.prompt_tokens
        ),
        cost_usd_batch_high=table.cost(model, batch_high, batch=True) if known else None,
        prefix_method="exact" if exact_prefix else "approximate",
        output_tokens=usage.output_tokens,
        token_method=method,
        output_tokens_per_call=output_tokens,
        cost_usd=table.cost(model, usage) if known else None,
        cost_usd_batch=table.cost(model, batch_low, batch=True) if known else None,
        batch=batch,
        provider=provider,
        prompt_cache=prompt_cache,
        cache_prefix_tokens=prefix,
        cache_min_tokens=table.min_cache_tokens(model),
        padding_rewrites=len(padded),
        padding_input_tokens=pad_usage.input_tokens,
        padding_output_tokens=pad_usage.output_tokens,
        padding_cost_usd=pad_usd,
    )


def _scaled_prompt(usage: TokenUsage, factor: float) -> TokenUsage:
    """``usage`` with its uncached, cache-write and cache-read prompt tokens times ``factor``."""
    return TokenUsage(
        input_tokens=round(usage.input_tokens * factor),
        output_tokens=usage.output_tokens,
        cache_write_tokens=round(usage.cache_write_tokens * factor),
        cache_read_tokens=round(usage.cache_read_tokens * factor),
    )
