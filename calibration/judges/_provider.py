"""What the SDK-backed judges (Anthropic, OpenAI) share on top of their own :meth:`run` and batches.

Each back-end writes its requests, sends them and reads its provider's batches; what is left is
the same for both: the judge protocol's ``score`` and ``compare`` as one built call sent with
``run``, the per-event-loop client's life (:class:`~judgelab.calibration.judges._loops.PerLoop`), and
waiting for a batch to end by polling it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, Self, TypeVar

from judgelab.calibration import formats
from judgelab.calibration.judges._base import Format, JudgeCall, Judgement, Kind
from judgelab.calibration.judges._loops import PerLoop
from judgelab.labeler.errors import JudgeError
from judgelab.labeler.models import Rubric

if TYPE_CHECKING:
    from judgelab.calibration.spec import JudgeSpec

__all__ = ["ProviderJudge"]


class _Status(Protocol):
    @property
    def ended(self) -> bool: ...

    @property
    def processing_status(self) -> str: ...


S = TypeVar("S", bound=_Status)


class ProviderJudge(Generic[S]):
    """The part of an SDK-backed judge that does not depend on the provider.

    A subclass sets ``model``, ``spec`` and ``_loops`` and provides ``params``, :meth:`run` and
    :meth:`poll_batch` (``S``: its batch status).
    """

    model: str
    spec: JudgeSpec | None
    _loops: PerLoop[Any]

    @property
    def params(self) -> dict[str, Any]:
        """Request parameters recorded in each call and its cache key."""
        raise NotImplementedError

    async def run(self, call: JudgeCall, rubric: Rubric | None = None) -> Judgement:
        """Send a prebuilt call and parse the reply."""
        raise NotImplementedError

    async def poll_batch(self, batch_id: str) -> S:
        """The batch's status now."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the running loop's HTTP client (the next call in this loop opens a new one)."""
        await self._loops.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def build(
        self, kind: Kind, fmt: Format, rubric: Rubric, prompt: str, answers: Sequence[str],
        *, task_id: str | None = None,
    ) -> JudgeCall:
        """The :class:`JudgeCall` this judge makes (see :func:`judgelab.calibration.formats.build_call`)."""
        return formats.build_call(kind, fmt, self.model, rubric, prompt, answers, self.params, spec=self.spec,
                                  task_id=task_id)

    async def score(self, prompt: str, answer: str, rubric: Rubric, fmt: Format = "likert5") -> Judgement:
        """Judge one answer in a pointwise format."""
        return await self.run(self.build("pointwise", fmt, rubric, prompt, [answer]), rubric)

    async def compare(
        self, prompt: str, answer_a: str, answer_b: str, rubric: Rubric, fmt: Format = "pairwise5"
    ) -> Judgement:
        """Judge answer A (shown first) against answer B in a comparative format."""
        return await self.run(self.build("pairwise", fmt, rubric, prompt, [answer_a, answer_b]), rubric)

    async def wait_batch(self, batch_id: str, *, poll_interval: float = 30.0, timeout: float | None = None) -> S:
        """Poll until the batch ends (or ``timeout`` seconds pass).

        Raises:
            JudgeError: If ``timeout`` passes first (the batch keeps running; poll again later).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            status = await self.poll_batch(batch_id)
            if status.ended:
                return status
            if deadline is not None and time.monotonic() >= deadline:
                raise JudgeError(f"batch {batch_id} is still {status.processing_status} after {timeout:g} s")
            await asyncio.sleep(poll_interval)
