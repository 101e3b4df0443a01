"""Evidence from a fake judge without the runner: for Monte Carlo checks of the report card.

:func:`simulate_evidence` plans the chosen probes on a dataset, asks a judge for every call and
returns the evidence rows ``judgelab probe`` would write (the same :func:`~judgelab.calibration.runner.
evidence_row`), without a database or a file: hundreds of cards a minute, for the card's
false-alarm rate under a judge with no bias and its power against injected ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pandas as pd

from judgelab.calibration.datasets import PROBE_RUBRIC, SAMPLE, choose, load_pairs, pool_from_pairs
from judgelab.calibration.judges import Judge, Judgement
from judgelab.calibration.probes._base import ProbeContext, Variants
from judgelab.calibration.probes._plan import plan_probes
from judgelab.calibration.runner import PlannedCall, evidence_row, record_for

CARD_PROBES: tuple[str, ...] = (
    "position", "verbosity", "formatting", "tone", "citations", "truncation", "byline",
)
"""Every probe with a row on the card (the format study has none)."""


async def _ask(judge: Judge, call: PlannedCall) -> Judgement:
    rubric = call.rubric or PROBE_RUBRIC
    if call.kind == "pairwise":
        assert call.answer_b is not None  # planned pairwise calls always have one
        return await judge.compare(call.prompt, call.answer, call.answer_b, rubric, call.format)
    return await judge.score(call.prompt, call.answer, rubric, call.format)


def simulate_evidence(
    judge: Judge,
    *,
    n: int = 20,
    seed: int = 0,
    biases: Sequence[str] = CARD_PROBES,
    dataset: str = SAMPLE,
    other_family: str = "gpt",
) -> pd.DataFrame:
    """The evidence rows of one probe run, judged in this process (offline padding).

    Args:
        judge: The judge (typically a :class:`~judgelab.calibration.judges.FakeJudge`).
        n: Pairs to choose from the dataset.
        seed: Seed for the choice of pairs.
        biases: The probes.
        dataset: ``"sample"`` or a pairs file.
        other_family: The family the byline probe contrasts with the judge's own.
    """
    pairs = choose(load_pairs(dataset), n, seed=seed)
    ctx = ProbeContext(
        pairs=pairs, pool=pool_from_pairs(pairs), rubric=PROBE_RUBRIC, pool_rubric=PROBE_RUBRIC,
        variants=Variants(), judge_family=judge.family, other_family=other_family,
    )
    plan = plan_probes(ctx, biases).calls

    async def judged() -> list[dict[str, Any]]:
        rows = []
        for call in plan:
            reply = await _ask(judge, call)
            record = record_for("simulated", call, reply)
            rows.append(evidence_row(record.__dict__, model=judge.model, judge_family=judge.family))
        return rows

    return pd.DataFrame(asyncio.run(judged()))
