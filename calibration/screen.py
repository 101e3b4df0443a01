"""The author screen: the team's judge reads each answer for what the blinding rules cannot (issue 54).

The rules (:mod:`judgelab.labeler.blinding`) are the free first pass; they trail what people and models
write. ``judgelab screen`` asks the configured judge (the same judges, providers and specs as
``judgelab score``) one binary question per answer, :data:`~judgelab.calibration.judges.SCREEN_QUESTION`,
in any language. The calls go through :func:`judgelab.calibration.runner.arun_plan`, so the runner's
guarantees hold: an answer already read costs nothing (the cache), an interrupted screen
continues where it stopped and bills nothing twice (the journal), ``batch=True`` uses the
provider's batches at half price, a failed call is retried by the next run.

What a reading becomes (:meth:`judgelab.labeler.store.Store.record_screen`): ACCEPT withholds the answer
(the same state as a rater's W key: dealt to nobody, pending items wait) with the judge's reply as
the reason, until the admin masks or clears it on the Withheld page; REJECT is a clear reading; a
reply that does not parse is recorded and counted as a parse failure, never a verdict, and is asked
again by the next screen. An answer the admin has masked or cleared keeps the admin's decision.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from judgelab.calibration import pricing
from judgelab.calibration.judges import SCREEN_QUESTION, Judge, JudgeCall
from judgelab.calibration.probes import judge_kind_of, judge_spec
from judgelab.calibration.runner import PlannedCall, RunSummary, arun_plan, build_request, cache_key_for
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Criterion, Rubric
from judgelab.labeler.store import SCREEN_RUBRIC_ID, JudgeRole, ScreenFigures

__all__ = [
    "SCREEN_PROBE",
    "SCREEN_RUBRIC",
    "ScreenResult",
    "ascreen_answers",
    "estimate_screen",
    "plan_screen",
    "screen_answers",
]

SCREEN_PROBE = "author-screen"
"""The ``probe`` a screen's judgements are recorded under (its arm ``screen`` is no plain score)."""

SCREEN_RUBRIC = Rubric(
    rubric_id=SCREEN_RUBRIC_ID,
    version=2,
    name=SCREEN_QUESTION,
    scale="binary",
    pass_rule=(
        "ACCEPT when the answer reveals which model or company wrote it; REJECT when it does not. It reveals its "
        "author when it names, in any language, script or spelling (split letters, look-alike characters, "
        "leetspeak included), the model, its maker or the maker's chat product as the one speaking or having "
        "written it; when it describes the maker in words ('a search company from Mountain View'); or when it "
        "carries a byline, a signature, a generated-by note, a link to a chat product. Naming a company or a "
        "model as a topic (a person's former employer, a product the user asks about) reveals nothing. Text "
        "already hidden from the raters reads '[redacted]': it reveals nothing."
    ),
    criteria=(Criterion("reveals", "Reveals its author", SCREEN_QUESTION),),
    instructions=(
        "You are screening answers before human raters read them blind. Read the whole answer. Before the "
        "verdict line, say in one short sentence what in the answer tells who wrote it (quote it), or that "
        "nothing does."
    ),
    author_kind="human",
    author="judgelab",
)
"""The question the judge is asked, as a rubric (shown to the judge only, never stored as the project's)."""

#: Longest reason kept from a reply (the admin's list shows it).
REASON_CHARS = 300


def plan_screen(answers: pd.DataFrame) -> list[PlannedCall]:
    """One binary call per answer (call ids ``screen/<answer id>``), its ``text`` as the judge reads it.

    ``answers`` holds the text a blind rater would read (:func:`_pool`): the screen looks for what
    the rules left readable, so an answer whose name the rules already mask is not withheld again.
    """
    return [
        PlannedCall(
            call_id=f"screen/{r.answer_id}", kind="pointwise", format="binary", prompt=str(r.prompt),
            answer=str(r.text), probe=SCREEN_PROBE, arm="screen", trial=i, task_id=str(r.task_id),
            answer_id=str(r.answer_id), rubric=SCREEN_RUBRIC,
        )
        for i, r in enumerate(answers.itertuples(index=False))
    ]


def _pool(store: JudgeRole) -> pd.DataFrame:
    """Every answer of the pool with its task's prompt and its blinded text, by task and answer id."""
    answers = store.answers()
    if answers.empty:
        raise InputError("there are no answers to screen",
                         fix="import answers first with `judgelab import answers FILE`.")
    tasks = store.tasks()
    prompts = dict(zip(tasks["task_id"], tasks["prompt"], strict=True))
    blind = store.blind_texts()
    return answers.assign(
        prompt=[prompts[t] for t in answers["task_id"]], text=[blind[a] for a in answers["answer_id"]],
    ).sort_values(["task_id", "answer_id"])


@dataclass(frozen=True)
class ScreenResult:
    """How a screen went.

    Attributes:
        summary: The runner's summary (calls, cache, cost, failures; its exit code).
        answers: Answers in the screen's plan.
        flagged: Answers this run read as revealing their author.
        withheld_now: Of those, answers this run withheld (not withheld before, not decided by an admin).
        parse_failures: Answers whose reply did not parse (no verdict; asked again next time).
        figures: The project's screen figures after the run (as the admin's Overview shows them).
        judge_spec: The judge spec's card line (``None``: the built-in prompt).
    """

    summary: RunSummary
    answers: int
    flagged: int
    withheld_now: int
    parse_failures: int
    figures: ScreenFigures
    judge_spec: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        f = self.figures
        return {"run": self.summary.to_dict(), "answers": self.answers, "flagged": self.flagged,
                "withheld_now": self.withheld_now, "parse_failures": self.parse_failures,
                "judge_spec": self.judge_spec,
                "project": {"screened": f.screened, "flagged": f.flagged, "parse_failures": f.parse_failures,
                            "cleared": f.cleared, "masked": f.masked, "withheld": f.withheld,
                            "cost_usd": f.cost_usd}}


def reason_of(raw: object) -> str:
    r"""The judge's words before its verdict line, cut to :data:`REASON_CHARS`.

    Examples:
        >>> reason_of("It signs as a Gemini helper.\nVERDICT: ACCEPT")
        'It signs as a Gemini helper.'
    """
    text = "" if raw is None or (isinstance(raw, float) and pd.isna(raw)) else str(raw)
    lines = [line for line in text.strip().splitlines() if line.strip()]
    body = " ".join(lines[:-1] if len(lines) > 1 else lines).strip()
    return body if len(body) <= REASON_CHARS else body[: REASON_CHARS - 1] + "…"


async def ascreen_answers(
    judge: Judge,
    store: JudgeRole,
    *,
    evidence: str | os.PathLike[str] | None = None,
    judge_kind: str | None = None,
    resume: str | None = None,
    concurrency: int = 16,
    batch: bool = False,
    progress: bool | None = None,
    poll_interval: float = 30.0,
    params: Mapping[str, Any] | None = None,
    adopt_batches: Sequence[str] = (),
) -> ScreenResult:
    """Ask the judge of every answer whether it reveals its author; withhold what it flags.

    Args are :func:`judgelab.calibration.scoring.ascore_answers`'s (the judge's spec, if any, needs a
    ``binary`` template). Readings are recorded for the calls that have a reply; a call that
    failed is left for the next run (the run is then unfinished: its exit code says so).

    Raises:
        InputError: No answers, or a judge spec without a binary pointwise template.
    """
    spec = judge_spec(judge)
    line = None
    record: dict[str, Any] = {**(params or {}), "screen": SCREEN_QUESTION}
    if spec is not None:
        spec.require("pointwise", "the author screen asks one answer at a time")
        spec.template("pointwise", "binary")  # refuses a spec that cannot ask a yes/no question, naming it
        record["judge_spec"] = spec.describe(model=judge.model, params=getattr(judge, "params", None))
        line = spec.card_line(model=judge.model, params=getattr(judge, "params", None))
    plan = plan_screen(_pool(store))
    summary = await arun_plan(
        plan, judge, store, rubric=SCREEN_RUBRIC, judge_kind=judge_kind or judge_kind_of(judge),
        evidence=evidence, resume=resume, concurrency=concurrency, batch=batch, progress=progress,
        params=record, poll_interval=poll_interval, adopt_batches=adopt_batches,
    )
    rows: list[tuple[str, bool | None, str, str | None, float | None]] = []
    for r in store.screen_readings(summary.run_id).itertuples(index=False):
        if isinstance(r.error, str) and r.error:
            continue  # failed after retries: no reading; the next run asks again
        parsed = r.value is not None and not pd.isna(r.value) and not (isinstance(r.parse_error, str) and r.parse_error)
        cost = None if r.cost_usd is None or pd.isna(r.cost_usd) else float(r.cost_usd)
        rows.append((str(r.answer_id), bool(float(r.value) >= 0.5) if parsed else None,
                     reason_of(r.raw), None if parsed else str(r.parse_error or "no verdict"), cost))
    withheld_now = store.record_screen(summary.run_id, rows, judge=judge.model)
    return ScreenResult(
        summary=summary, answers=len(plan), flagged=sum(1 for r in rows if r[1]), withheld_now=withheld_now,
        parse_failures=sum(1 for r in rows if r[1] is None), figures=store.screen_figures(), judge_spec=line,
    )


def screen_answers(judge: Judge, store: JudgeRole, **kwargs: Any) -> ScreenResult:
    """Synchronous :func:`ascreen_answers` (same arguments)."""
    return asyncio.run(ascreen_answers(judge, store, **kwargs))


def estimate_screen(
    judge: Judge, store: JudgeRole, *, batch: bool = False, output_tokens: int = 60,
) -> pricing.PlanEstimate:
    """What :func:`screen_answers` would spend, before it runs: calls, tokens and cost. Spends nothing.

    Builds exactly the requests the screen would send (same parameters, same cache keys); those the
    database has answered already cost nothing. Tokens are ~4 characters per token.

    Args:
        judge: The judge the screen would use (never asked anything).
        store: The project database.
        batch: Whether the screen would use batches (the batch price is always given too).
        output_tokens: Completion tokens assumed per reply (one sentence and the verdict line).
    """
    plan = plan_screen(_pool(store))
    requests: dict[str, JudgeCall] = {}
    for planned in plan:
        requests.setdefault(cache_key_for(judge, SCREEN_RUBRIC, planned), build_request(judge, SCREEN_RUBRIC, planned))
    cached = set(store.cached_replies(requests))
    provider = "openai" if type(judge).__name__ == "OpenAIJudge" else "anthropic"
    return pricing.estimate_plan(
        requests, model=judge.model, planned_calls=len(plan), cached=cached, output_tokens=output_tokens,
        batch=batch, batch_cache_ttl=getattr(judge, "batch_cache_ttl", "1h"), provider=provider,
    )
