"""What the runner relies on a judge for, declared: :class:`BuildingJudge` and :class:`BatchJudge`.

The base :class:`~judgelab.calibration.judges.Judge` protocol (``score`` and ``compare``) is all a judge
must have. The runner asks more of the judges that have it: the exact request (for its cache
key), what else decides the reply, the spec the replies are read by, and the provider's batch
methods. Declared here (not looked up by name) so that mypy checks every back-end against them
(:mod:`judgelab.calibration.judges._conformance`). Apart from ``_base`` because the spec type they name
imports the formats, which import ``_base``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from judgelab.calibration.judges._base import Format, Judge, JudgeCall, Judgement, Kind
from judgelab.labeler.models import Rubric

if TYPE_CHECKING:
    from judgelab.calibration.spec import JudgeSpec

__all__ = ["BatchJudge", "BatchStatusLike", "BuildingJudge"]


@runtime_checkable
class BuildingJudge(Judge, Protocol):
    """A judge that writes its own requests: what the runner's cache keys and resumes rely on.

    The runner hashes the exact request a judge would send (:meth:`build`), folds in what else
    decides the reply (:meth:`cache_identity`), reads stored replies by the judge's spec and
    sends a prebuilt request (:meth:`run`). Declared here so that mypy checks every back-end
    against it (:mod:`judgelab.calibration.judges._conformance`): a back-end that misspelled
    ``cache_identity`` would otherwise have silently shared cached replies with another.

    Attributes:
        spec: The team's judge spec the requests are written from (``None``: the built-in prompt).
    """

    spec: JudgeSpec | None

    @property
    def params(self) -> dict[str, Any]:
        """Request parameters recorded in each call and its cache key."""
        ...

    def cache_identity(self) -> str:
        """What, besides the request, decides the reply (``""``: the request says it all).

        Folded into every cache key when not empty: an endpoint's host, a fake judge's hidden
        settings. Two judges whose replies may differ must not return the same identity.
        """
        ...

    def build(
        self, kind: Kind, fmt: Format, rubric: Rubric, prompt: str, answers: Sequence[str],
        *, task_id: str | None = None,
    ) -> JudgeCall:
        """The exact request this judge sends for one judgement."""
        ...

    async def run(self, call: JudgeCall, rubric: Rubric | None = None) -> Judgement:
        """Send a prebuilt call and parse its reply."""
        ...


class BatchStatusLike(Protocol):
    """What a batch's status says: whether it ended (the runner waits until it has)."""

    @property
    def ended(self) -> bool:
        """Whether results can be collected."""
        ...


@runtime_checkable
class BatchJudge(BuildingJudge, Protocol):
    """A judge that can send its calls as one provider batch (``--batch``), each batch once.

    The runner records each batch's intent (its custom ids, which carry a random tag drawn for
    it) before :meth:`submit_batch` and its id after, and after a crash asks :meth:`find_batch`
    for the batch of exactly those custom ids, so that no batch is created twice and no other
    run's batch is ever taken (:mod:`judgelab.calibration.runner._batch`,
    :mod:`judgelab.calibration.judges._identity`).
    """

    def batch_requests(self, calls: Sequence[JudgeCall] | Mapping[str, JudgeCall]) -> list[dict[str, Any]]:
        """The provider's batch request lines for ``calls`` (for sizing and submission)."""
        ...

    async def submit_batch(
        self,
        calls: Sequence[JudgeCall] | Mapping[str, JudgeCall],
        *,
        since: datetime | None = None,
        exclude: Collection[str] = (),
        poll_interval: float = 30.0,
    ) -> str:
        """Create the batch exactly once; its id."""
        ...

    async def find_batch(
        self, custom_ids: Collection[str], *, since: datetime, exclude: Collection[str] = (),
        poll_interval: float = 30.0, timeout: float | None = None,
    ) -> str | None:
        """The batch of exactly ``custom_ids`` created after ``since`` and not in ``exclude``, if any.

        Raises:
            BatchInDoubt: Same-size batches remain that cannot be told apart from it.
        """
        ...

    async def check_batch(self, batch_id: str, custom_ids: Collection[str], *, poll_interval: float = 30.0) -> None:
        """Refuse (:class:`~judgelab.calibration.judges._identity.BatchInDoubt`) a batch not exactly ``custom_ids``."""
        ...

    async def wait_batch(
        self, batch_id: str, *, poll_interval: float = 30.0, timeout: float | None = None
    ) -> BatchStatusLike:
        """Poll until the batch has ended."""
        ...

    async def collect_batch(
        self,
        batch_id: str,
        calls: Mapping[str, JudgeCall] | None = None,
        rubric: Rubric | None = None,
        *,
        skip_unknown: bool = False,
    ) -> dict[str, Judgement]:
        """Every result of an ended batch, as judgements keyed by custom id (none dropped)."""
        ...
