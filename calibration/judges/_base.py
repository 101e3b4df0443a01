"""The judge protocol and the judgement record every back-end returns."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from labeler.models import Rubric
from labeler.scales import Format, Kind


@dataclass(frozen=True)
class JudgeCall:
    """Everything that determines a judge's reply; its hash is the cache key.

    Attributes:
        kind: ``"pointwise"`` (one answer) or ``"pairwise"`` (answer A vs answer B).
        format: The scoring format (see :mod:`calibration.formats`).
        model: The judge model id.
        system: The system prompt (the rubric block, shared across calls).
        user: The user message (task and answer(s) and the format line).
        params: Sampling and other request parameters (``max_tokens``, ``temperature``...).
    """

    kind: Kind
    format: Format
    model: str
    system: str
    user: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def cache_key(self) -> str:
        """sha256 of the model, prompt and parameters: identical calls share it."""
        payload = json.dumps(
            [self.kind, self.format, self.model, self.system, self.user, self.params],
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Judgement:
    """One judge call's result. ``value`` is ``None`` exactly when the reply did not parse.

    Attributes:
        kind: ``"pointwise"`` or ``"pairwise"``.
        format: The scoring format.
        model: The judge model that answered.
        cache_key: :attr:`JudgeCall.cache_key` of the call.
        raw: The reply text, verbatim.
        value: The parsed score (pointwise) or verdict (pairwise, +2 A much better .. -2 B
            much better); ``None`` when unparsed.
        passed: The pass verdict the rubric gives ``value`` (pointwise only).
        parse_error: Why the reply did not parse; ``None`` when it did.
        input_tokens: Prompt tokens billed (including cache writes).
        output_tokens: Completion tokens billed.
        cache_read_tokens: Prompt tokens read from the prompt cache.
        cost_usd: Money spent on this call at list price (``None`` if the model is not
            in the price table).
        latency_s: Wall-clock seconds the call took, retries included.
        attempts: How many HTTP attempts the call needed.
    """

    kind: Kind
    format: Format
    model: str
    cache_key: str
    raw: str
    value: float | None
    passed: bool | None = None
    parse_error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float | None = None
    latency_s: float = 0.0
    attempts: int = 1

    @property
    def parsed(self) -> bool:
        return self.parse_error is None and self.value is not None


@runtime_checkable
class Judge(Protocol):
    """A judge back-end. Both calls are ``async`` so the runner can bound concurrency.

    Attributes:
        model: The model id recorded with each judgement.
        family: The judge's own model family (for the self-preference gap), if known.
    """

    model: str
    family: str | None

    async def score(
        self, prompt: str, answer: str, rubric: Rubric, fmt: Format = "likert5"
    ) -> Judgement:
        """Judge one answer to ``prompt`` under ``rubric`` in a pointwise format."""
        ...

    async def compare(
        self, prompt: str, answer_a: str, answer_b: str, rubric: Rubric, fmt: Format = "pairwise5"
    ) -> Judgement:
        """Judge answer A (shown first) against answer B in a pairwise format."""
        ...
