"""The probe workflow behind ``judgelab probe`` and ``judgelab estimate``, as library calls.

:func:`arun_probes` chooses the pairs (and the pool, for pool-based probes), plans the chosen
probes, has the padded variants written by a model when the judge is a real one (through its
own back-end: Anthropic or OpenAI-compatible), stores
the new variant answers and runs the plan (:func:`~judgelab.calibration.runner.arun_plan`).
:func:`aestimate_probes` builds the same plan and prices it without calling the judge
(:func:`~judgelab.calibration.pricing.estimate_plan`). Both take a ready judge: the caller decides which
judge and key to use.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from judgelab.calibration import pricing
from judgelab.calibration.datasets import (
    PROBE_RUBRIC,
    PROJECT,
    SAMPLE,
    PoolAnswer,
    choose,
    load_pairs,
    pool_from_pairs,
    pool_from_store,
    project_pairs,
)
from judgelab.calibration.judges import AnthropicJudge, FakeJudge, Judge, JudgeCall, OpenAIJudge
from judgelab.calibration.probes._base import PadModel, ProbeContext, ProbePlan, RewriteSpend, Variants
from judgelab.calibration.probes._padding import OpenAIPadWriter, PadWriter
from judgelab.calibration.probes._plan import DEFAULT_BIASES, POOL_BIASES, parse_biases, plan_probes
from judgelab.calibration.probes.format_study import COMPARATIVE
from judgelab.calibration.runner import RunSummary, arun_plan, build_request, cache_key_for
from judgelab.calibration.spec import JudgeSpec, with_references
from judgelab.labeler.errors import InputError, JudgeError
from judgelab.labeler.models import Pair, Rubric
from judgelab.labeler.scales import POINTWISE_FORMATS, Format, declared_scales
from judgelab.labeler.store import JudgeRole

PadMode = Literal["llm", "offline"]
"""How padded variants are made: rewritten by a model (``llm``) or offline (``offline``)."""

PoolSource = Literal["pairs", "database"]
"""Where pool-based probes take their answers from."""


@dataclass(frozen=True)
class ProbeSetup:
    """What a probe plan is made from.

    Attributes:
        pairs: The chosen pairs, one trial each.
        pool: Answers pool-based probes score on their own (empty when none is chosen).
        pool_rubric: The rubric for pool answers (the project's own when they are stored).
        pool_source: ``"database"`` when the pool is the project's answers, else ``"pairs"``.
        pair_rubric: The rubric pair-based probes show (the project's own for ``--dataset project``).
    """

    pairs: list[Pair]
    pool: list[PoolAnswer]
    pool_rubric: Rubric
    pool_source: PoolSource
    pair_rubric: Rubric = PROBE_RUBRIC


def setup_probes(
    store: JudgeRole | None, dataset: str, n: int, *, seed: int, biases: Sequence[str]
) -> ProbeSetup:
    """Choose ``n`` pairs of ``dataset`` and, for pool-based probes, up to ``2n`` pool answers.

    The pool is the project's original answers when the database holds any, else both
    answers of each chosen pair.

    Raises:
        InputError: On a missing or malformed dataset, or ``n < 1``.
    """
    if dataset == PROJECT:
        if store is None:
            raise InputError("--dataset project needs the project database", fix="pass --db FILE.")
        pairs = choose(project_pairs(store), n, seed=seed)
        # The project's pairs are judged under the project's rubric, as its own judge would.
        pair_rubric = store.rubric() or PROBE_RUBRIC
    else:
        pairs = choose(load_pairs(dataset), n, seed=seed)
        pair_rubric = PROBE_RUBRIC
    if not POOL_BIASES & set(biases):
        return ProbeSetup(pairs, [], PROBE_RUBRIC, "pairs", pair_rubric)
    stored = pool_from_store(store, 2 * n, seed=seed) if store is not None else []
    if not stored:
        return ProbeSetup(pairs, pool_from_pairs(pairs), pair_rubric, "pairs", pair_rubric)
    rubric = (store.rubric() if store is not None else None) or PROBE_RUBRIC
    return ProbeSetup(pairs, stored, rubric, "database", pair_rubric)


def other_family(store: JudgeRole | None, own: str | None) -> str:
    """The family the byline probe contrasts with the judge's own.

    Another family in the pool, else a well-known one.

    >>> other_family(None, "claude")
    'gpt'
    """
    if store is not None:
        for family in store.families():
            if own is None or family.lower() != own.lower():
                return family
    return "gpt" if (own or "").lower() in ("claude", "anthropic") else "claude"


def dataset_label(dataset: str) -> str:
    """How evidence rows and reports name a ``--dataset`` value: ``sample`` or the file name.

    >>> dataset_label("runs/pairs.csv")
    'pairs.csv'
    """
    return dataset if dataset in (SAMPLE, PROJECT) else Path(dataset).name


def parse_formats(text: str | Sequence[str] | None, store: JudgeRole | None = None) -> tuple[Format, ...] | None:
    """Validate a ``--formats`` value for the format study (comma-separated or a list).

    ``None`` (or empty) keeps the default. Pointwise formats, the comparative ``anchored`` and
    ``tournament``, and any declared scale are accepted: one a stored rubric declares (read from
    ``store``), or a loaded judge spec's verdict scale (declared when the spec was loaded).

    >>> parse_formats("likert5, anchored,tournament")
    ('likert5', 'anchored', 'tournament')

    Raises:
        InputError: On an unknown format or ``pairwise5`` (the probes' own comparative format).
    """
    if text is None:
        return None
    if store is not None:
        store.declared_scales()  # a rubric's [scale] is known by its name from here on
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    # Catalogue names are read in any case, as before; a declared scale's name exactly as declared.
    names = [n.lower() if n.lower() in (*POINTWISE_FORMATS, *COMPARATIVE) else n for n in names]
    declared = [s.name for s in declared_scales() if s.kind == "pointwise"]
    allowed = (*POINTWISE_FORMATS, *COMPARATIVE, *declared)
    bad = [n for n in names if n not in allowed]
    if bad:
        raise InputError(f"the format study cannot run format {bad[0]!r}",
                         fix=f"pick from {', '.join(allowed)} (comma-separated); a scale of your own is "
                             "known once a rubric in the database or the judge spec declares it.")
    return tuple(dict.fromkeys(names)) or None  # type: ignore[arg-type]  # checked above


def _context(
    setup: ProbeSetup, variants: Variants, judge_family: str | None, other: str,
    spec: JudgeSpec | None = None, formats: tuple[Format, ...] | None = None,
) -> ProbeContext:
    ctx = ProbeContext(
        pairs=setup.pairs,
        pool=setup.pool,
        rubric=setup.pair_rubric,
        pool_rubric=setup.pool_rubric,
        variants=variants,
        judge_family=judge_family,
        other_family=other,
    )
    if spec is not None:
        # The team's judge is asked in its own formats: its comparative one, and for pool
        # answers its 1-5 scale when it has one.
        pairwise, pointwise = spec.formats("pairwise"), spec.formats("pointwise")
        if pairwise:
            ctx.pairwise_format = pairwise[0]
        if pointwise:
            ctx.pointwise_format = "likert5" if "likert5" in pointwise else pointwise[0]
        ctx.formats = pointwise
    if formats is not None:
        ctx.formats = formats
    return ctx


def reference_tasks(store: JudgeRole | None, pairs: Sequence[Pair] = ()) -> list[tuple[str, str, str | None]]:
    """``(task id, prompt, reference answer)`` of the dataset's pairs and the project's tasks.

    What a judge spec's ``{reference}`` is looked up in (:func:`judgelab.calibration.spec.bind_references`).
    """
    tasks: list[tuple[str, str, str | None]] = []
    if store is not None:
        for row in store.tasks().itertuples(index=False):
            ref = row.reference_answer
            tasks.append((str(row.task_id), str(row.prompt), ref if isinstance(ref, str) and ref else None))
    # A pair names no task: it takes the reference of the task with its prompt, when that is one
    # reference (two tasks sharing the prompt with different references leave the pair without).
    refs: dict[str, set[str]] = {}
    for _, prompt, ref in tasks:
        if ref is not None:
            refs.setdefault(prompt, set()).add(ref)
    pairs_refs = [(p.pair_id, p.prompt, next(iter(refs[p.prompt])) if len(refs.get(p.prompt, ())) == 1 else None)
                  for p in pairs]
    return pairs_refs + tasks


def _with_references(judge: Judge, spec: JudgeSpec | None, store: JudgeRole | None, pairs: Sequence[Pair]) -> Judge:
    """The judge with its spec's references bound (the tasks are read only when it shows any)."""
    if spec is None or not spec.uses("reference"):
        return judge
    return with_references(judge, reference_tasks(store, pairs))


def judge_spec(judge: Judge) -> JudgeSpec | None:
    """The judge spec a judge carries (``None``: judgelab's built-in prompt)."""
    spec = getattr(judge, "spec", None)
    return spec if isinstance(spec, JudgeSpec) else None


def spec_biases(spec: JudgeSpec | None, biases: Sequence[str]) -> tuple[str, ...]:
    """The probes that set up a pool, given what the judge spec can ask.

    Pairwise probes need a pairwise template and the format study a pointwise one (refused
    otherwise, before anything is spent). The length probes' pointwise arm is left out when the
    spec has no pointwise template: their pairwise reading still runs.

    Raises:
        InputError: Naming the probe and the template it needs.
    """
    if spec is None:
        return tuple(biases)
    for bias in biases:
        if bias == "format":
            spec.require("pointwise", "the format study scores answers one at a time")
        else:
            spec.require("pairwise", f"the {bias} probe compares two answers")
    if spec.formats("pointwise"):
        return tuple(biases)
    return tuple(b for b in biases if b not in POOL_BIASES)


def judge_kind_of(judge: Judge) -> str:
    """The name a run records for its judge back-end."""
    if isinstance(judge, FakeJudge):
        return "fake"
    if isinstance(judge, AnthropicJudge):
        return "anthropic"
    if isinstance(judge, OpenAIJudge):
        return "openai"
    return type(judge).__name__


def judge_endpoint(judge: Judge) -> str | None:
    """``"openai at api.openai.com"``: the provider and endpoint host of a real judge (``None``: offline)."""
    if isinstance(judge, AnthropicJudge | OpenAIJudge):
        return judge.endpoint
    return None


# -- probe -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProbeRunResult:
    """How a probe run went.

    Attributes:
        summary: The runner's summary of the judge calls.
        spend: What writing the padded variants cost (zero when padding offline).
    """

    summary: RunSummary
    spend: RewriteSpend

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``{"run": ..., "padding": ...}``."""
        return {"run": self.summary.to_dict(), "padding": dataclasses.asdict(self.spend)}


def _pad_model(
    judge: Judge, pad: PadMode | None, pad_model: str | None, *, needed: bool, concurrency: int,
    batch: bool = False, poll_interval: float = 30.0,
) -> PadModel | None:
    """The model that writes padded variants: the judge's own client, unless padding offline.

    The rewrites go through the back-end the run judges with (the Anthropic Messages API, or
    Chat Completions on the OpenAI-compatible endpoint), through that judge's client and so with
    its retries and rate governor. ``None`` (offline padding) also when the plan pads nothing
    (``needed`` is false). With ``batch`` the rewrites go out as one provider batch, at the
    batch price.
    """
    if not isinstance(judge, AnthropicJudge | OpenAIJudge):
        if pad == "llm":
            raise InputError("--pad llm needs a model: the anthropic or openai judge",
                             fix="drop --pad (the fake judge pads offline) or use --judge anthropic or "
                             "--judge openai.")
        return None
    if not needed or (pad or "llm") != "llm":
        return None
    table = pricing.load_prices()
    name = pad_model or judge.model
    writer: PadWriter | None = None
    identity = ""
    if isinstance(judge, OpenAIJudge):
        writer = OpenAIPadWriter(judge.client, name, host=judge.host, max_retries=judge.max_retries)
        identity = judge.cache_identity()
    return PadModel(
        client=judge.client, model=name,
        price=lambda i, o: table.cost(name, pricing.TokenUsage(i, o), batch=batch),
        concurrency=concurrency, batch=batch, poll_interval=poll_interval,
        pad_writer=writer, identity=identity,
    )


async def arun_probes(
    judge: Judge,
    store: JudgeRole,
    *,
    dataset: str = SAMPLE,
    n: int = 20,
    biases: str | Sequence[str] = DEFAULT_BIASES,
    seed: int = 0,
    evidence: str | os.PathLike[str] | None = None,
    judge_kind: str | None = None,
    other: str | None = None,
    pad: PadMode | None = None,
    pad_model: str | None = None,
    resume: str | None = None,
    concurrency: int = 16,
    batch: bool = False,
    progress: bool | None = None,
    poll_interval: float = 30.0,
    params: Mapping[str, Any] | None = None,
    formats: str | Sequence[str] | None = None,
    adopt_batches: Sequence[str] = (),
) -> ProbeRunResult:
    """Run the chosen probes with ``judge``: every pair in both orders, every result recorded.

    With a real judge (Anthropic or OpenAI-compatible) and the verbosity probe, padded variants
    are rewritten by a model through the judge's own back-end
    (``pad``): the plan is made once to collect the texts to pad, the rewrites are made (or
    reused from the database), and the plan is made again with them. New variant answers are
    stored in the pool before any call. Every judgement goes to ``store`` and to ``evidence``
    as it arrives; a run of the same plan that did not finish is continued.

    Args:
        judge: The judge back-end.
        store: The project database (cache, resume state, pool and results).
        dataset: ``"sample"`` or a pairs file (:func:`~judgelab.calibration.datasets.load_pairs`).
        n: Pairs to probe; pool-based probes score up to ``2n`` answers.
        biases: The probes (``--biases``: comma-separated or a list).
        seed: Seed for the choice of pairs and pool answers.
        evidence: The JSONL evidence file to write.
        judge_kind: Recorded with the run (default: ``"fake"``, ``"anthropic"`` or the judge's
            class name).
        other: The family the byline probe contrasts with the judge's own (default:
            another family in the pool, else a well-known one).
        pad: ``"llm"`` or ``"offline"`` (default: ``llm`` for the Anthropic and OpenAI judges,
            else ``offline``; ``llm`` needs one of them: the rewrites go through its back-end).
        pad_model: The model that pads (default: the judge's model).
        resume: Continue this run id.
        concurrency: Calls (and rewrites) in flight at once.
        batch: Submit the calls as one provider batch, and the padding rewrites as another.
        progress: Show a progress bar (default: when stderr is a terminal).
        poll_interval: Seconds between Message Batch status checks.
        params: The command's options, stored with the run (``pad`` is added).
        formats: The format study's formats (:func:`parse_formats`; default: the pointwise
            three, or the judge spec's).
        adopt_batches: Batch ids named as this run's (``--adopt-batch``) for a batch whose
            create reply was lost; each is checked before it is adopted.

    Returns:
        The run's :class:`ProbeRunResult`.

    Raises:
        InputError: On a bad ``biases``, dataset or ``resume``, or ``pad="llm"`` with a judge
            that cannot rewrite.
    """
    started = time.monotonic()  # the summary's elapsed time covers the padding rewrites
    chosen = parse_biases(biases)
    spec = judge_spec(judge)
    setup = setup_probes(store, dataset, n, seed=seed, biases=spec_biases(spec, chosen))
    judge = _with_references(judge, spec, store, setup.pairs)
    padder = _pad_model(
        judge, pad, pad_model, needed="verbosity" in chosen, concurrency=concurrency,
        batch=batch, poll_interval=poll_interval,
    )
    variants = Variants.for_pool(store, setup.pool, pad_model=padder)
    ctx = _context(setup, variants, judge.family, other or other_family(store, judge.family), spec,
                   parse_formats(formats, store))
    spend = RewriteSpend()
    if padder is not None:
        # First pass: only collect the texts to pad; the rewrites are made once, together.
        variants.recording = True
        plan_probes(ctx, chosen)
        variants.recording = False
        spend = await variants.prepare()
    plan = plan_probes(ctx, chosen)
    # The dataset's name (and the judge spec's) rides along in each evidence row (meta is not
    # part of any request, so neither the cache keys nor the plan hash change).
    extra: dict[str, Any] = {"dataset": dataset_label(dataset)}
    record = dict(params or {})
    endpoint = judge_endpoint(judge)
    if endpoint is not None:
        # The report card names the provider and host with the model (no request changes).
        extra["judge_endpoint"] = record["judge_endpoint"] = endpoint
    if spec is not None:
        extra["judge_spec"] = spec.card_line(model=judge.model, params=getattr(judge, "params", None))
        record["judge_spec"] = spec.describe(model=judge.model, params=getattr(judge, "params", None))
    plan.calls = [replace(c, meta={**c.meta, **extra}) for c in plan.calls]
    if plan.new_answers:
        store.add_pool([], plan.new_answers, source_file="judgelab probe (perturbed variants)")
    summary = await arun_plan(
        plan.calls, judge, store, rubric=PROBE_RUBRIC,
        judge_kind=judge_kind or judge_kind_of(judge), evidence=evidence, resume=resume,
        concurrency=concurrency, batch=batch, progress=progress,
        params={**record, "pad": variants.pad_source}, poll_interval=poll_interval, started=started,
        adopt_batches=adopt_batches,
    )
    return ProbeRunResult(summary, spend)


def run_probes(judge: Judge, store: JudgeRole, **kwargs: Any) -> ProbeRunResult:
    """Synchronous :func:`arun_probes` (same arguments)."""
    return asyncio.run(arun_probes(judge, store, **kwargs))


# -- estimate ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProbeEstimate:
    """A probe run's cost preview and what it was made from (``judgelab estimate``).

    Attributes:
        cost: Calls, tokens and dollars.
        dataset: The dataset's label (``sample`` or the file name).
        biases: The probes, in card order.
        n_pairs: Pairs chosen.
        pool_answers: Pool answers pool-based probes would score.
        pool: Where the pool comes from.
        judge_spec: The judge spec's card line (``None``: the built-in prompt).
    """

    cost: pricing.PlanEstimate
    dataset: str
    biases: tuple[str, ...]
    n_pairs: int
    pool_answers: int
    pool: PoolSource
    judge_spec: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the cost's fields, then the dataset's."""
        return {
            **self.cost.to_dict(),
            "dataset": self.dataset,
            "biases": list(self.biases),
            "n_pairs": self.n_pairs,
            "pool_answers": self.pool_answers,
            "pool": self.pool,
            "judge_spec": self.judge_spec,
        }


def padded_texts(plan: ProbePlan) -> dict[str, str]:
    """Answer id -> padded text, once per answer the plan pads (each is one model rewrite)."""
    out: dict[str, str] = {}
    for call in plan.calls:
        if call.meta.get("variant") != "padded":
            continue
        if call.kind == "pointwise":
            out.setdefault(call.answer_id or call.call_id, call.answer)
        else:
            slot_text = call.answer if call.meta.get("target_slot") == "A" else call.answer_b
            out.setdefault(str(call.meta.get("target_id")), slot_text or "")
    return out


async def aestimate_probes(
    judge: Judge,
    store: JudgeRole | None,
    *,
    dataset: str = SAMPLE,
    n: int = 20,
    biases: str | Sequence[str] = DEFAULT_BIASES,
    seed: int = 0,
    count_tokens: bool = False,
    output_tokens: int = pricing.OUTPUT_TOKENS,
    batch: bool = False,
    formats: str | Sequence[str] | None = None,
) -> ProbeEstimate:
    """Preview the calls, tokens and cost :func:`arun_probes` would spend. Spends nothing.

    Counts exactly the calls the run would make: identical requests once, and none that the
    database has already answered. Padded texts are estimated with the offline padding (about
    twice the original, like the model rewrite); with a real judge (Anthropic or OpenAI) the
    rewrites are priced too.

    Args:
        judge: The judge the run would use; it builds the requests (same parameters, same
            cache keys) and is never asked to answer one.
        store: The project database, if it exists (its pool, variants and cached replies).
        dataset: ``"sample"`` or a pairs file.
        n: Pairs to probe.
        biases: The probes.
        seed: Seed for the choice of pairs and pool answers.
        count_tokens: Ask the API's token counter (Anthropic judge only) instead of
            approximating ~4 characters per token.
        output_tokens: Completion tokens assumed per judge reply.
        batch: Whether the run would use Message Batches (the padding rewrites too).
        formats: The format study's formats, as for :func:`arun_probes`.

    Raises:
        InputError: On a bad ``biases``, dataset or format.
    """
    chosen = parse_biases(biases)
    spec = judge_spec(judge)
    setup = setup_probes(store, dataset, n, seed=seed, biases=spec_biases(spec, chosen))
    judge = _with_references(judge, spec, store, setup.pairs)
    other = other_family(store, judge.family)
    ctx = _context(setup, Variants.for_pool(store, setup.pool), judge.family, other, spec,
                   parse_formats(formats, store))
    plan = plan_probes(ctx, chosen)
    requests: dict[str, JudgeCall] = {}
    for planned in plan.calls:
        key = cache_key_for(judge, PROBE_RUBRIC, planned)
        requests.setdefault(key, build_request(judge, PROBE_RUBRIC, planned))
    cached = set(store.cached_replies(requests)) if store is not None else set()
    todo = [call for key, call in requests.items() if key not in cached]
    exact: int | None = None
    prefixes: dict[str, int] = {}
    unavailable = ""
    if count_tokens and isinstance(judge, AnthropicJudge) and todo:
        try:
            exact = int(sum(await asyncio.gather(*(_twice(judge.count_tokens, c) for c in todo))))
            # The rubric block's exact size decides whether the prompt cache applies.
            blocks = {c.system: c for c in todo}
            counts = await asyncio.gather(*(_twice(judge.count_prefix_tokens, c) for c in blocks.values()))
            prefixes = dict(zip(blocks, counts, strict=True))
        except JudgeError as exc:
            # An estimate spends nothing and must not fail for want of exact counts: it falls
            # back to the approximation and says why.
            exact, prefixes = None, {}
            unavailable = f" (the API's token counter failed: {exc})"
    pad_by_model = isinstance(judge, AnthropicJudge | OpenAIJudge)
    cost = pricing.estimate_plan(
        requests, model=judge.model, planned_calls=len(plan.calls), cached=cached,
        exact_prompt_tokens=exact, output_tokens=output_tokens,
        padded_texts=padded_texts(plan).values() if pad_by_model else (), batch=batch,
        prefix_tokens=prefixes, batch_cache_ttl=getattr(judge, "batch_cache_ttl", "1h"),
        # OpenAI caches prefixes on its own and bills no cache write: priced as its judge bills.
        provider="openai" if isinstance(judge, OpenAIJudge) else "anthropic",
    )
    if unavailable:
        cost = replace(cost, token_method=cost.token_method + unavailable)
    elif isinstance(judge, OpenAIJudge):
        # Not for want of a key: Chat Completions has no token-counting endpoint to ask.
        cost = replace(cost, token_method="approximate: ~4 characters per token (an OpenAI-compatible "
                       "endpoint has no token counter; the run's cost comes from each reply's usage)")
    return ProbeEstimate(
        cost=cost,
        dataset=dataset_label(dataset),
        biases=chosen,
        n_pairs=len(setup.pairs),
        pool_answers=len(setup.pool),
        pool=setup.pool_source,
        judge_spec=None if spec is None else spec.card_line(model=judge.model, params=getattr(judge, "params", None)),
    )


async def _twice(count: Callable[[JudgeCall], Awaitable[int]], call: JudgeCall) -> int:
    """``count(call)``, given a second round of retries when the first ran out (faults pass)."""
    try:
        return await count(call)
    except JudgeError:
        return await count(call)


def estimate_probes(judge: Judge, store: JudgeRole | None, **kwargs: Any) -> ProbeEstimate:
    """Synchronous :func:`aestimate_probes` (same arguments)."""
    return asyncio.run(aestimate_probes(judge, store, **kwargs))
