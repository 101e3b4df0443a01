"""Static proof that every back-end is what the runner takes it for (checked by mypy, never run).

The runner asks a judge for its requests, cache identity, spec and batch methods through the
protocols of :mod:`judgelab.calibration.judges._base`. Assigning each back-end to the protocols it
must satisfy makes mypy check every member's name and signature: a back-end that misspelled
``cache_identity`` (and so would silently share cached replies with another) fails the type
check here instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judgelab.calibration.judges._anthropic import AnthropicJudge
    from judgelab.calibration.judges._base import Judge
    from judgelab.calibration.judges._fake import FakeJudge
    from judgelab.calibration.judges._openai import OpenAIJudge
    from judgelab.calibration.judges._protocols import BatchJudge, BuildingJudge

    def _anthropic(judge: AnthropicJudge) -> tuple[Judge, BuildingJudge, BatchJudge]:
        return judge, judge, judge

    def _openai(judge: OpenAIJudge) -> tuple[Judge, BuildingJudge, BatchJudge]:
        return judge, judge, judge

    def _fake(judge: FakeJudge) -> tuple[Judge, BuildingJudge]:
        return judge, judge
