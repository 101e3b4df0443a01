"""What a run is asked to do: the :class:`PlannedCall` list, each call's request and their hashes.

A call's cache key is the hash of the exact request the judge would send for it (plus the
judge's hidden settings, if it has any); a plan's hash covers every call id and key, so any
change of content makes a different plan.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from judgelab.calibration.formats import build_call
from judgelab.calibration.judges._base import Format, Judge, JudgeCall, Kind
from judgelab.calibration.judges._protocols import BuildingJudge
from judgelab.labeler.models import Rubric

__all__ = [
    "Order",
    "PlannedCall",
    "build_request",
    "cache_key_for",
    "check_plan",
    "judge_identity",
    "plan_hash",
    "reading_of",
]

Order = Literal["AB", "BA"]


@dataclass(frozen=True)
class PlannedCall:
    """One judge call a probe wants made, with the design facts needed to analyse it.

    Attributes:
        call_id: Stable id of the call within its plan (same options -> same ids).
        kind: ``"pointwise"`` (score ``answer``) or ``"pairwise"`` (``answer`` shown first,
            ``answer_b`` second).
        format: The scoring format.
        prompt: The task the answers respond to.
        answer: The answer scored, or the answer shown first (slot A).
        answer_b: The answer shown second (slot B); ``None`` for pointwise calls.
        probe: The probe (bias) the call belongs to.
        arm: The probe arm (``"baseline"``, ``"decorated"``, ``"original"``, ``"padded"``...).
        trial: Trial number within the probe (calls of one trial are compared together).
        order: ``"AB"`` or ``"BA"``: which presentation order of the trial's two answers.
        task_id: The task or pair the call judges.
        answer_id: Id of ``answer``.
        answer_b_id: Id of ``answer_b``.
        meta: Further design facts for the evidence row (JSON-serialisable), e.g.
            ``target_slot``: the shown slot holding the answer the probe varies.
        rubric: The rubric for this call; ``None`` uses the run's rubric.
    """

    call_id: str
    kind: Kind
    format: Format
    prompt: str
    answer: str
    answer_b: str | None = None
    probe: str = ""
    arm: str = ""
    trial: int = 0
    order: Order | None = None
    task_id: str | None = None
    answer_id: str | None = None
    answer_b_id: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    rubric: Rubric | None = None

    def design_meta(self) -> dict[str, Any]:
        """``meta`` plus the lengths of the answers shown (characters and words)."""
        out = dict(self.meta)
        out.setdefault("len_a", len(self.answer))
        out.setdefault("words_a", len(self.answer.split()))
        if self.answer_b is not None:
            out.setdefault("len_b", len(self.answer_b))
            out.setdefault("words_b", len(self.answer_b.split()))
        return out


# -- requests and their keys ------------------------------------------------------------

_BUILDS: dict[type, bool] = {}


def building(judge: Judge) -> BuildingJudge | None:
    """``judge`` as a :class:`~judgelab.calibration.judges.BuildingJudge`, or ``None`` when it builds no requests.

    A judge that has a ``build`` method but lacks another member of the protocol (a misspelled
    ``cache_identity``) is refused rather than treated as a plain judge: its requests and cache
    keys would silently be someone else's. mypy checks the bundled back-ends statically
    (:mod:`judgelab.calibration.judges._conformance`); this catches the others at run time.

    Raises:
        TypeError: Naming the missing members.
    """
    kind = type(judge)
    known = _BUILDS.get(kind)
    if known is None:
        known = isinstance(judge, BuildingJudge)
        if not known and hasattr(judge, "build"):
            missing = [m for m in ("cache_identity", "params", "spec", "run", "build") if not hasattr(judge, m)]
            raise TypeError(
                f"judge {kind.__name__} builds its own requests but lacks {', '.join(missing)} of the "
                "BuildingJudge protocol (judgelab.calibration.judges): without them its cache keys could be another "
                "judge's. Add them (cache_identity() returns '' when the request alone decides the reply)."
            )
        _BUILDS[kind] = known
    return judge if known else None  # type: ignore[return-value]  # checked by isinstance above

def judge_identity(judge: Judge) -> str:
    """What, besides the request, decides a judge's reply.

    A real model is identified by its model id, which is already in the request. A judge
    that builds its own requests (:class:`~judgelab.calibration.judges.BuildingJudge`) declares what
    else decides its reply as :meth:`~judgelab.calibration.judges.BuildingJudge.cache_identity` (an
    OpenAI-compatible endpoint's host: one model name on two servers is two judges); it is
    folded into the cache key so that such judges never share cached replies.
    """
    builder = building(judge)
    return builder.cache_identity() if builder is not None else ""


def build_request(judge: Judge, rubric: Rubric, call: PlannedCall) -> JudgeCall:
    """The exact request ``judge`` would send for ``call`` (for its cache key and for batches).

    A judge that builds its own requests (a :class:`~judgelab.calibration.judges.BuildingJudge`, as
    the fake, Anthropic and OpenAI judges are) is asked; otherwise the request is
    :func:`judgelab.calibration.formats.build_call` with no parameters.
    """
    answers = [call.answer] if call.answer_b is None else [call.answer, call.answer_b]
    chosen = call.rubric or rubric
    builder = building(judge)
    if builder is not None:
        # The task id picks a judge spec's reference answer (two tasks may share a prompt).
        if call.task_id is None:
            return builder.build(call.kind, call.format, chosen, call.prompt, answers)
        return builder.build(call.kind, call.format, chosen, call.prompt, answers, task_id=call.task_id)
    return build_call(call.kind, call.format, judge.model, chosen, call.prompt, answers, {})


def cache_key_for(judge: Judge, rubric: Rubric, call: PlannedCall) -> str:
    """The content hash the cache is keyed on: the request's hash plus the judge's identity."""
    base = build_request(judge, rubric, call).cache_key
    identity = judge_identity(judge)
    if not identity:
        return base
    return hashlib.sha256(f"{base}\n{identity}".encode()).hexdigest()


def plan_hash(plan: Sequence[PlannedCall], keys: Mapping[str, str], *, reading: str = "") -> str:
    """Hash of a plan: its call ids and the cache key of each (so any change of content shows).

    ``reading`` is how the replies are read (a judge spec's verdict rules, :func:`reading_of`):
    not part of any cache key, yet a run read by another rule is another run.
    """
    digest = hashlib.sha256()
    for call in plan:
        digest.update(f"{call.call_id}\t{keys[call.call_id]}\n".encode())
    if reading:
        digest.update(f"reading\t{reading}\n".encode())
    return digest.hexdigest()


def reading_of(judge: Judge, plan: Sequence[PlannedCall]) -> str:
    """The verdict rules a judge's spec reads the plan's replies by (``""`` without a spec)."""
    builder = building(judge)
    spec = builder.spec if builder is not None else None
    if spec is None:
        return ""
    kinds = sorted({(call.kind, call.format) for call in plan})
    return json.dumps([[kind, fmt, spec.request_params(kind, fmt)] for kind, fmt in kinds], sort_keys=True)


def check_plan(plan: Sequence[PlannedCall]) -> None:
    """Refuse a plan with a repeated call id or a pairwise call without its second answer."""
    seen: set[str] = set()
    for call in plan:
        if call.call_id in seen:
            raise ValueError(f"run_plan: call_id {call.call_id!r} appears twice in the plan")
        seen.add(call.call_id)
        if call.kind == "pairwise" and call.answer_b is None:
            raise ValueError(f"run_plan: pairwise call {call.call_id!r} has no answer_b")
