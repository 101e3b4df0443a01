"""The judge protocol and the judgement record every back-end returns."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from judgelab.labeler.models import Rubric
from judgelab.labeler.scales import Format, Kind

if TYPE_CHECKING:  # the spec module imports the formats, which import this package
    pass

FailureKind = Literal["api_error", "batch_error", "parse_failure"]
"""Why a judge call has no value.

* ``api_error``: the request failed for good (after the SDK's retries, or not retryable); there
  is no reply.
* ``batch_error``: a Message Batches request came back without a reply (errored, expired,
  canceled, or missing from the results file).
* ``parse_failure``: a reply arrived but did not parse.

The first two are failures a resume retries; a parse failure is a recorded reply.
"""


@dataclass(frozen=True)
class Failure:
    """A judge call's failure: its kind and the human-readable reason.

    Attributes:
        kind: What failed.
        reason: Why, in words (what the console, the database and the evidence file show).
    """

    kind: FailureKind
    reason: str

    @property
    def no_reply(self) -> bool:
        """Whether there is no reply at all (an API or batch error): a resume retries it."""
        return self.kind != "parse_failure"


@dataclass(frozen=True)
class JudgeCall:
    """Everything that determines a judge's reply; its hash is the cache key.

    Attributes:
        kind: ``"pointwise"`` (one answer) or ``"pairwise"`` (answer A vs answer B).
        format: The scoring format (see :mod:`judgelab.calibration.formats`).
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

    @functools.cached_property
    def cache_key(self) -> str:
        """sha256 of the model, prompt and parameters: identical calls share it.

        Computed once per call (a frozen call's content does not change; the runner and the
        judges ask for it several times per request).
        """
        # ``json.dumps([kind, format, model, system, user, params], sort_keys=True)`` piece by
        # piece (the same text, the keys stored in databases must not change): the system block
        # is the same long text for every call of a run, so its encoding is done once.
        payload = "[" + ", ".join((
            json.dumps(self.kind), json.dumps(self.format), json.dumps(self.model),
            _encoded_block(self.system), json.dumps(self.user), json.dumps(self.params, sort_keys=True),
        )) + "]"
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=64)
def _encoded_block(text: str) -> str:
    """``json.dumps(text)``, remembered for the few system blocks a process sends."""
    return json.dumps(text)


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
        parse_error: Why the reply did not parse (or, for a batch request without a reply,
            why there is none); ``None`` when it parsed.
        input_tokens: Prompt tokens billed (including cache writes).
        output_tokens: Completion tokens billed.
        cache_read_tokens: Prompt tokens read from the prompt cache.
        cache_write_tokens: Prompt tokens written to the prompt cache (part of
            ``input_tokens``).
        cost_usd: Money spent on this call at list price (``None`` if the model is not
            in the price table).
        latency_s: Wall-clock seconds the call took, retries included.
        attempts: How many HTTP attempts the call needed.
        failure_kind: Why there is no value, beside ``parse_error``: ``"parse_failure"``
            (filled in whenever the reply did not parse and no other kind is given) or
            ``"batch_error"`` (a batch request that got no reply); ``None`` when it parsed.
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
    failure_kind: FailureKind | None = None
    cache_write_tokens: int = 0

    def __post_init__(self) -> None:
        """Fill in ``failure_kind`` for a reply that did not parse (the kind no judge need name)."""
        if self.failure_kind is None and not self.parsed:
            object.__setattr__(self, "failure_kind", "parse_failure")

    @property
    def parsed(self) -> bool:
        """Whether the reply parsed into a value."""
        return self.parse_error is None and self.value is not None

    @property
    def failure(self) -> Failure | None:
        """The failure with its reason, or ``None`` when the reply parsed."""
        if self.failure_kind is None:
            return None
        return Failure(self.failure_kind, self.parse_error or "no value parsed from the reply")


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

