"""What every probe shares: its inputs, the variants it needs, its result, and evidence helpers.

A probe is two functions: ``plan(ctx)`` turns the dataset into :class:`~judgelab.calibration.runner.
PlannedCall` objects (arms x both orders), and ``analyse(rows)`` turns the evidence rows of
those calls back into estimates. ``analyse`` reads only the evidence (a DataFrame of the JSONL
file), so a report can be re-run with other options without calling the judge again.

**Slot and target.** Every pairwise call records ``target_slot``: the shown slot (``"A"`` is
shown first) holding the answer the probe varies (the padded or decorated answer, the
own-family byline, or for the position probe the pair's ``answer_a``). The verdict from the
target's point of view is the slot verdict when the target is in slot A and its negation when
it is in slot B. Every pairwise design runs both orders, so ``order == "AB"`` puts the target
in slot A and ``"BA"`` in slot B.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from judgelab.calibration import perturb
from judgelab.calibration.datasets import PoolAnswer
from judgelab.calibration.judges._base import Format
from judgelab.calibration.judges._identity import new_tag, wire_id
from judgelab.calibration.probes._padding import AnthropicPadWriter, PadWriter
from judgelab.calibration.runner import PlannedCall
from judgelab.calibration.stats import Estimate, swap_average
from judgelab.calibration.stats._probes import Verdict
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Answer, Pair, Rubric
from judgelab.labeler.store import JudgeRole
from judgelab.labeler.transcripts import split_turn

# -- variants -------------------------------------------------------------------------------

@dataclass(frozen=True)
class PadModel:
    """The model that writes padded variants (the LLM rewrite of seed 000).

    Attributes:
        client: The judge's client: an ``anthropic.AsyncAnthropic`` (unless ``pad_writer``
            is given).
        model: The rewriting model id.
        price: ``(input_tokens, output_tokens) -> USD or None`` for the spend report (at the
            batch price when ``batch``).
        concurrency: Rewrites in flight at once.
        batch: Send the rewrites as one provider batch (half price, results within 24 h)
            instead of one request each.
        poll_interval: Seconds between the batch's status checks.
        pad_writer: How the rewrites are sent (default: the Messages API of ``client``,
            :class:`~judgelab.calibration.probes._padding.AnthropicPadWriter`); an
            :class:`~judgelab.calibration.probes._padding.OpenAIPadWriter` for an OpenAI-compatible
            endpoint.
        identity: What besides the model and prompt decides a rewrite (the endpoint, as in
            the judge's ``cache_identity``): folded into the rewrite cache key when not empty,
            so one model name on two servers never shares a stored rewrite.
    """

    client: Any
    model: str
    price: Callable[[int, int], float | None] = lambda i, o: None
    concurrency: int = 8
    batch: bool = False
    poll_interval: float = 30.0
    pad_writer: PadWriter | None = None
    identity: str = ""

    def writer(self) -> PadWriter:
        """How the rewrites are sent: :attr:`pad_writer`, else the Messages API of :attr:`client`."""
        if self.pad_writer is not None:
            return self.pad_writer
        return AnthropicPadWriter(self.client, self.model)


@dataclass
class RewriteSpend:
    """What preparing the padded variants cost.

    ``unpriced`` counts new rewrites by a model the price table does not know (a local model):
    their cost is unknown, not zero, and is left out of ``cost_usd``.
    """

    rewrites: int = 0
    reused: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0


NOT_FOR_CONVERSATIONS: dict[str, str] = {
    "truncated": "cutting sentences off the end of a trace cuts the final answer, not the work before it, "
                 "and what a judge misses in a trace is steps, not closing sentences",
    "markdown": "a trace's turns are drawn by role, not as one Markdown text; decorating them tests the "
                "rendering, not the agent",
    "tone": "a tone opener and closer belong to one reply; on a trace they would be a turn no agent wrote",
    "citations": "citations added to a trace's final turn would cite nothing its tool results hold",
}
"""Why the perturbations other than padding, a byline and the placebo do not run on conversations."""


class Variants:
    """Makes the perturbed texts a plan needs, the same way every time.

    Offline perturbations (:mod:`judgelab.calibration.perturb`) are deterministic and computed on the
    spot. When a :class:`PadModel` is given, padding is a model rewrite: plan once with
    ``recording=True`` to collect the texts to pad, ``await prepare()`` (reusing stored
    rewrites, writing new ones to the database), then plan again. Stored pool variants
    (``<answer id>~padded`` and so on, the texts raters audit) always win over new ones.

    Args:
        store: The project database (stored variants and the rewrite cache).
        pad_model: The model that pads; ``None`` pads offline.
        stored: ``{(parent answer id, variant): text}`` of variants already in the pool.
    """

    def __init__(
        self,
        *,
        store: JudgeRole | None = None,
        pad_model: PadModel | None = None,
        stored: dict[tuple[str, str], str] | None = None,
    ) -> None:
        self.store = store
        self.pad_model = pad_model
        self.stored = dict(stored or {})
        self.recording = False
        self.to_pad: dict[str, None] = {}
        self._padded: dict[str, perturb.Perturbed] = {}

    @classmethod
    def for_pool(
        cls, store: JudgeRole | None, pool: Sequence[PoolAnswer], *, pad_model: PadModel | None = None
    ) -> Variants:
        """Variants that reuse the pool's stored variants (``store`` may be ``None``)."""
        stored: dict[tuple[str, str], str] = {}
        if store is not None and any(a.from_store for a in pool):
            frame = store.answers()
            frame = frame[frame["parent_answer_id"].notna()]
            for row in frame.itertuples(index=False):
                stored[(str(row.parent_answer_id), str(row.variant))] = str(row.text)
        return cls(store=store, pad_model=pad_model, stored=stored)

    @property
    def pad_source(self) -> str:
        """How padding is produced, for the record."""
        return "offline" if self.pad_model is None else f"llm:{self.pad_model.model}"

    def make(
        self, variant: str, text: str, *, family: str | None = None, parent_id: str | None = None
    ) -> perturb.Perturbed:
        """The ``variant`` of ``text``, kept per parent so a variant is made once.

        ``variant`` is ``padded``, ``truncated``, ``markdown``, ``tone``, ``citations``,
        ``byline`` (needs ``family``) or ``placebo``.
        """
        if parent_id is not None and (parent_id, variant) in self.stored:
            kept = self.stored[(parent_id, variant)]
            return perturb.Perturbed(
                kept, variant, perturb.count_words(kept) / max(perturb.count_words(text), 1)
            )
        cut = split_turn(text)
        if cut is not None:
            return self._on_last_turn(variant, cut, family)
        if variant == "byline":
            if family is None:
                raise ValueError("Variants.make: a byline needs a family")
            return perturb.byline(text, family)
        if variant == "padded" and self.pad_model is not None:
            if self.recording:
                self.to_pad.setdefault(text)
                return perturb.Perturbed(text, "padded", 1.0)
            if text not in self._padded:
                raise RuntimeError("Variants.make: padded text requested before prepare()")
            return self._padded[text]
        if variant not in perturb.PERTURBATIONS:
            raise ValueError(f"Variants.make: unknown variant {variant!r}")
        return perturb.PERTURBATIONS[variant](text)

    def _on_last_turn(self, variant: str, cut: tuple[str, str, str], family: str | None) -> perturb.Perturbed:
        """A conversation's variant: the perturbation applied to its last assistant turn only.

        Padding, a byline and the placebo change what the agent finally says, which is what
        they measure; the other perturbations have no meaning on a trace and are refused
        with the reason (:data:`NOT_FOR_CONVERSATIONS`).
        """
        if variant in NOT_FOR_CONVERSATIONS:
            raise InputError(f"the {variant} variant does not apply to a conversation: "
                             f"{NOT_FOR_CONVERSATIONS[variant]}",
                             fix="probe conversations with --biases position,verbosity,byline, or leave the "
                                 "conversations out of the pool.")
        before, turn, after = cut
        done = self.make(variant, turn, family=family)
        return replace(done, text=before + done.text + after)

    def rewrite_key(self, text: str) -> str:
        """Cache key of a model padding of ``text``."""
        assert self.pad_model is not None
        # An Anthropic rewrite keeps the key it always had (stored rewrites stay valid).
        identity = f"{self.pad_model.identity}\0" if self.pad_model.identity else ""
        payload = f"padded\0{identity}{self.pad_model.model}\0{perturb.pad_prompt(text)}"
        return hashlib.sha256(payload.encode()).hexdigest()

    async def prepare(self) -> RewriteSpend:
        """Pad every recorded text with the model, reusing stored rewrites; stores new ones."""
        spend = RewriteSpend()
        texts = [t for t in self.to_pad if t not in self._padded]
        if self.pad_model is None or not texts:
            return spend
        model = self.pad_model
        keys = {t: self.rewrite_key(t) for t in texts}
        known = self.store.rewrites(keys.values()) if self.store is not None else {}
        todo = []
        for text in texts:
            hit = known.get(keys[text])
            if hit is None:
                todo.append(text)
                continue
            spend.reused += 1
            self._padded[text] = perturb.Perturbed(
                hit["text"], "padded", float(hit["length_ratio"]), tuple(hit["warnings"])
            )
        if model.batch and todo:
            # Through the batch, as the judge calls go; any rewrite it did not return is made
            # one by one below (a resume finds the batch again instead of paying for it twice).
            todo = await self._batch_pad(model, todo, keys, spend)
        gate = asyncio.Semaphore(model.concurrency)
        writer = model.writer()

        async def one(text: str) -> None:
            async with gate:
                result, tokens_in, tokens_out = await writer.one(text)
            await self._keep(model, text, keys[text], result, tokens_in, tokens_out, spend)

        await asyncio.gather(*(one(t) for t in todo))
        return spend

    async def _keep(
        self, model: PadModel, text: str, key: str, result: perturb.Perturbed, tokens_in: int,
        tokens_out: int, spend: RewriteSpend,
    ) -> None:
        """Count one new rewrite and store it as it arrives (an interruption never re-pays it)."""
        cost = model.price(tokens_in, tokens_out)
        spend.rewrites += 1
        spend.input_tokens += tokens_in
        spend.output_tokens += tokens_out
        spend.cost_usd += cost or 0.0
        spend.unpriced += cost is None
        self._padded[text] = result
        if self.store is not None:
            await asyncio.to_thread(
                self.store.add_rewrite, key, variant="padded", model=model.model,
                original=text, text=result.text, length_ratio=result.length_ratio,
                warnings=result.warnings, input_tokens=tokens_in, output_tokens=tokens_out,
                cost_usd=cost,
            )

    async def _batch_pad(
        self, model: PadModel, todo: list[str], keys: dict[str, str], spend: RewriteSpend
    ) -> list[str]:
        """Pad ``todo`` through one provider batch; returns the texts it did not rewrite.

        The intent is stored in the project's settings before the batch is created and its id
        as soon as it is known, keyed by the set of rewrites: a run interrupted while the
        batch works collects that batch on resume, and one interrupted before the id came back
        finds the batch upstream (:meth:`PadWriter.find <judgelab.calibration.probes._padding.PadWriter.find>`)
        instead of paying for it twice.
        """
        writer = model.writer()
        label = hashlib.sha256("\n".join(sorted(keys[t] for t in todo)).encode()).hexdigest()[:40]
        store = self.store
        batch_id = store.setting(_PAD_BATCH_SCOPE, label) if store is not None else None
        intent = store.setting(_PAD_BATCH_SCOPE, f"{label}:intent") if store is not None else None
        claimed = store.known_batch_ids() if store is not None else set()
        # The intent is "<moment>|<tag>": the tag, drawn for this intent alone, heads every custom
        # id, so a lost batch is found by what only this project wrote (never by size and time).
        moment, _, tag = (intent or "").partition("|")
        if batch_id is None and intent is not None and tag:
            ids = [wire_id(tag, keys[t]) for t in todo]
            batch_id = await writer.find(ids, since=datetime.fromisoformat(moment), exclude=claimed,
                                         poll_interval=model.poll_interval)
        if batch_id is None:
            since, tag = datetime.now(UTC), new_tag()
            if store is not None:
                await asyncio.to_thread(store.set_setting, _PAD_BATCH_SCOPE, f"{label}:intent",
                                        f"{since.isoformat()}|{tag}")
            batch_id = await writer.create({wire_id(tag, keys[t]): t for t in todo}, since=since, exclude=claimed,
                                           poll_interval=model.poll_interval)
        if store is not None:
            await asyncio.to_thread(store.set_setting, _PAD_BATCH_SCOPE, label, batch_id)
        while not await writer.ended(batch_id):
            await asyncio.sleep(model.poll_interval)
        # A batch recorded before tags existed was sent under the bare keys.
        by_id = {(wire_id(tag, keys[t]) if tag else keys[t]): t for t in todo}
        done: set[str] = set()
        for cid, (result, tokens_in, tokens_out) in (await writer.results(batch_id, by_id)).items():
            text = by_id[cid]
            await self._keep(model, text, keys[text], result, tokens_in, tokens_out, spend)
            done.add(text)
        return [t for t in todo if t not in done]


_PAD_BATCH_SCOPE = "padding_batch"
"""Settings scope of the provider batches that write padded variants (key: the set of rewrites)."""


# -- context, plan, result -----------------------------------------------------------------

@dataclass
class ProbeContext:
    """Everything a probe's plan depends on.

    Attributes:
        pairs: The chosen pairs, one trial each (trial ``i`` is ``pairs[i]``).
        pool: Answers scored on their own by pool-based probes.
        rubric: Rubric for pair-based probes.
        pool_rubric: Rubric for pool-based probes (the project's own when the pool is stored).
        variants: Where perturbed texts come from.
        judge_family: The judge's own model family (for the byline probe).
        other_family: The family the byline probe contrasts with it.
        formats: Pointwise formats for the format study.
        pairwise_format: The format of every pairwise call (a judge spec's own).
        pointwise_format: The format pool answers are scored in by the length probes.
    """

    pairs: list[Pair]
    pool: list[PoolAnswer]
    rubric: Rubric
    pool_rubric: Rubric
    variants: Variants
    judge_family: str | None = None
    other_family: str = "another model family"
    formats: tuple[Format, ...] = ("binary", "likert5", "numeric100")
    pairwise_format: Format = "pairwise5"
    pointwise_format: Format = "likert5"


@dataclass
class ProbePlan:
    """A probe's calls and the variant answers to store in the pool before judging them."""

    calls: list[PlannedCall] = field(default_factory=list)
    new_answers: list[Answer] = field(default_factory=list)

    def extend(self, other: ProbePlan) -> None:
        """Append another probe's calls and variant answers."""
        self.calls.extend(other.calls)
        self.new_answers.extend(other.new_answers)


@dataclass(frozen=True)
class BiasResult:
    """One probe's reading, as a row of the report card.

    Attributes:
        bias: The probe's name (``position``, ``verbosity``...).
        label: The row label (``"Position — first-shown win advantage"``).
        raw: The estimate from single-order judgements.
        mitigated: The estimate after swap-averaging (``None`` when not applicable).
        verdict_raw: PASS/WARN/FAIL of ``raw``.
        verdict_mitigated: PASS/WARN/FAIL of ``mitigated``.
        rule: How the verdict was read (thresholds in words).
        details: Further named estimates and figures (JSON-ready values or Estimates).
        notes: Sentences the card prints under the table for this probe.
        calls: Judgements in the probe.
        parse_failures: Replies that did not parse (recorded, left out of the figures).
        errors: Calls that failed after retries.
    """

    bias: str
    label: str
    raw: Estimate
    mitigated: Estimate | None
    verdict_raw: Verdict
    verdict_mitigated: Verdict | None
    rule: str
    details: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    calls: int = 0
    parse_failures: int = 0
    errors: int = 0

    def verdict_text(self, *, mitigate: bool) -> str:
        """``"FAIL → PASS"`` when mitigation changes the verdict, else the verdict shown."""
        if mitigate and self.verdict_mitigated is not None:
            if self.verdict_mitigated != self.verdict_raw:
                return f"{self.verdict_raw} → {self.verdict_mitigated}"
            return self.verdict_mitigated
        return self.verdict_raw

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "bias": self.bias,
            "label": self.label,
            "raw": self.raw.to_dict(),
            "mitigated": None if self.mitigated is None else self.mitigated.to_dict(),
            "verdict_raw": self.verdict_raw,
            "verdict_mitigated": self.verdict_mitigated,
            "rule": self.rule,
            "details": {k: _jsonable(v) for k, v in self.details.items()},
            "notes": list(self.notes),
            "calls": self.calls,
            "parse_failures": self.parse_failures,
            "errors": self.errors,
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, Estimate):
        return value.to_dict()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


# -- planning helpers -------------------------------------------------------------------------

def target_column(trial: int) -> str:
    """Which answer of a pair a probe varies on ``trial``: ``a`` on even trials, ``b`` on odd.

    Alternating keeps the two answers' intrinsic quality out of the lift: across trials each
    column is the decorated one half the time.
    """
    return "a" if trial % 2 == 0 else "b"


def both_orders(
    *,
    bias: str,
    arm: str,
    trial: int,
    pair: Pair,
    target: tuple[str, str],
    other: tuple[str, str],
    rubric: Rubric,
    meta: dict[str, Any] | None = None,
    fmt: Format = "pairwise5",
) -> list[PlannedCall]:
    """The two pairwise calls of one (trial, arm): target shown first (AB), then second (BA).

    Args:
        bias: The probe.
        arm: The arm.
        trial: The trial number.
        pair: The pair the trial uses.
        target: ``(answer id, text)`` of the answer the probe varies.
        other: ``(answer id, text)`` of the answer it is compared with.
        rubric: The rubric.
        meta: Further design facts for both calls.
        fmt: The comparative format asked.
    """
    calls = []
    for order, first, second, slot in (("AB", target, other, "A"), ("BA", other, target, "B")):
        calls.append(
            PlannedCall(
                call_id=f"{bias}/{trial}/{arm}/{order}",
                kind="pairwise",
                format=fmt,
                prompt=pair.prompt,
                answer=first[1],
                answer_b=second[1],
                probe=bias,
                arm=arm,
                trial=trial,
                order=order,  # type: ignore[arg-type]  # the literal pair above
                task_id=pair.pair_id,
                answer_id=first[0],
                answer_b_id=second[0],
                meta={"target_slot": slot, "target_id": target[0], **(meta or {})},
                rubric=rubric,
            )
        )
    return calls


def variant_answer(parent: PoolAnswer, result: perturb.Perturbed) -> Answer:
    """The pool answer that stores a variant of a stored answer (id ``<parent>~<variant>``)."""
    return Answer(
        answer_id=f"{parent.answer_id}~{result.variant}",
        task_id=parent.task_id,
        family=parent.family,
        model=parent.model,
        text=result.text,
        variant=result.variant,
        parent_answer_id=parent.answer_id,
    )


# -- analysis helpers -------------------------------------------------------------------------

def parsed_mask(rows: pd.DataFrame) -> pd.Series:
    """Rows whose reply parsed."""
    return rows["status"] == "parsed"


def slot_verdicts(rows: pd.DataFrame) -> np.ndarray:
    """Slot-coded verdicts (+ favours slot A), ``nan`` where the reply did not parse."""
    v = pd.to_numeric(rows["verdict"], errors="coerce").to_numpy(dtype=float, copy=True)
    v[~parsed_mask(rows).to_numpy()] = np.nan
    return v


def target_verdicts(rows: pd.DataFrame) -> np.ndarray:
    """Verdicts from the target's point of view (+ favours the varied answer)."""
    v = slot_verdicts(rows)
    flip = (rows["target_slot"] == "B").to_numpy()
    return np.where(flip, -v, v)


def swapped(rows: pd.DataFrame, keys: Sequence[str] = ("trial", "arm")) -> pd.DataFrame:
    """One row per unit (trial, arm) with its two orders side by side.

    Returns:
        Columns ``keys + [v_fwd, v_rev, swap]``: ``v_fwd`` is the slot verdict with the target
        in slot A (order AB), ``v_rev`` with the target in slot B, and ``swap`` the
        swap-averaged verdict for the target (+1 won both orders, -1 lost both, 0 a flip or a
        tie; ``nan`` when either order is missing or did not parse). Units with only one order
        recorded get ``nan``.
    """
    # A plain pass over the rows: pivot_table cost most of a report's time (the null-judge
    # simulation analyses hundreds of cards). Same result: the first parsed verdict per unit and
    # order, units with no parsed verdict in either order left out, sorted by the keys.
    verdicts = slot_verdicts(rows)
    units: dict[tuple[Any, ...], list[float]] = {}
    columns = [rows[k].to_numpy() for k in keys]
    for i, order in enumerate(rows["order"].to_numpy()):
        if order not in ("AB", "BA") or math.isnan(verdicts[i]):
            continue
        pair = units.setdefault(tuple(col[i] for col in columns), [math.nan, math.nan])
        slot = 0 if order == "AB" else 1
        if math.isnan(pair[slot]):
            pair[slot] = float(verdicts[i])
    ordered = sorted(units)
    out = pd.DataFrame(ordered, columns=list(keys)) if ordered else pd.DataFrame(columns=list(keys))
    out["v_fwd"] = np.array([units[k][0] for k in ordered], dtype=float)
    out["v_rev"] = np.array([units[k][1] for k in ordered], dtype=float)
    out["swap"] = swap_average(out["v_fwd"].to_numpy(float), out["v_rev"].to_numpy(float))
    return out


def counts(rows: pd.DataFrame) -> tuple[int, int, int]:
    """``(calls, parse failures, errors)`` of some evidence rows."""
    status = rows["status"]
    return len(rows), int((status == "parse_failure").sum()), int((status == "error").sum())


def nan_estimate(method: str, units: str) -> Estimate:
    """An estimate with nothing to estimate from (a probe whose every reply failed)."""
    return Estimate(math.nan, math.nan, math.nan, 0, method, units)
