"""A local Anthropic-compatible HTTP server for tests and dry runs.

:class:`MockAnthropic` speaks enough of the Messages API for the official ``anthropic`` SDK to
run against it unchanged (``base_url=mock.base_url``):

- ``POST /v1/messages``: a proper Message (id, content, model, stop_reason, usage with cache
  creation and cache read tokens). A ``cache_control`` breakpoint caches the prompt prefix up to
  it when the prefix reaches the model's minimum cacheable length (from the price table, as the
  real API): the first request with that prefix reports cache creation tokens, later ones cache
  reads; a shorter prefix is silently not cached.
- Rate limits (:class:`RateLimit`): a requests-per-minute and a tokens-per-minute budget,
  enforced as token buckets that refill continuously and hold ``burst_s`` seconds' worth (the
  real API also enforces its per-minute limits over shorter intervals). A request over budget
  gets a 429 ``rate_limit_error`` with ``retry-after``; every reply carries the
  ``anthropic-ratelimit-requests-*`` and ``-tokens-*`` headers (limit, remaining, reset).
- ``POST /v1/messages/count_tokens``.
- Message Batches: create, retrieve (``in_progress`` until ``batch_delay`` has passed, then
  ``ended`` with a ``results_url`` pointing back at this server), results as JSONL, list,
  cancel and delete.

The reply text comes from a pluggable ``responder(request_json) -> str``; the default is
:meth:`FakeJudge.respond <judgelab.calibration.judges.FakeJudge.respond>`, so a dry run gets sensible
verdicts. A :class:`FaultPlan` injects the failures a real judge run meets: 429 with
``retry-after``, 529 ``overloaded_error``, 500, a timeout (the server holds the request past the
client's timeout), and malformed replies (200 with text that does not parse as a verdict).

Token counts are estimates (:func:`judgelab.calibration.pricing.approx_tokens`), not the real tokenizer.
Models that reject sampling parameters (:func:`judgelab.calibration.judges.rejects_sampling_params`)
answer a request carrying ``temperature``, ``top_p`` or ``top_k`` with a 400, as the real API
does.

Inside the package: ``_faults`` (the fault plan and the rate limiter), ``_messages`` (the
Messages endpoints), ``_batches`` (Message Batches), ``_server`` (:class:`MockAnthropic` and its
HTTP handler) and ``_cli`` (``judgelab mock-api``).
"""

from judgelab.calibration.mockapi._cli import mock_api_command
from judgelab.calibration.mockapi._faults import FAULT_KINDS, MALFORMED_REPLY, FaultKind, FaultPlan, RateLimit
from judgelab.calibration.mockapi._messages import Responder
from judgelab.calibration.mockapi._server import MockAnthropic, ReceivedRequest

__all__ = [
    "FAULT_KINDS",
    "MALFORMED_REPLY",
    "FaultKind",
    "FaultPlan",
    "MockAnthropic",
    "RateLimit",
    "ReceivedRequest",
    "Responder",
    "mock_api_command",
]
