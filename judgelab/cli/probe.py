r"""``judgelab estimate``, ``probe`` and ``report``: the judge-probe workflow.

The three verbs and their flags follow judge-probe (seed 002), so its quickstart runs as
written with ``judgelab`` in place of ``judgeprobe``::

    judgelab estimate --dataset sample --n 20
    judgelab probe --judge fake --fake-position 0.4 --fake-verbosity 0.3 \
                   --dataset sample --n 25 --out results.jsonl
    judgelab report results.jsonl --mitigate --out report_card.md --png report_card.png

``estimate`` spends nothing. ``probe`` writes every judgement to the project database (the
cache and resume state) and to the JSONL evidence file. ``report`` reads only the evidence file
(and, when the database exists, the raters' padding audits) and never calls the judge.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from calibration import pricing
from calibration.datasets import (
    PROBE_RUBRIC,
    SAMPLE,
    PoolAnswer,
    choose,
    load_pairs,
    pool_from_pairs,
    pool_from_store,
)
from calibration.judges import DEFAULT_MODEL as JUDGE_DEFAULT_MODEL
from calibration.judges import AnthropicJudge, FakeJudge, Judge, JudgeCall
from calibration.mockapi import mock_api_command
from calibration.probes import (
    DEFAULT_BIASES,
    POOL_BIASES,
    PadModel,
    ProbeContext,
    ProbePlan,
    RewriteSpend,
    Variants,
    analyse_evidence,
    parse_biases,
    plan_probes,
    read_evidence,
)
from calibration.report_card import card_json, render_markdown, render_png
from calibration.runner import RunSummary, arun_plan, build_request, cache_key_for
from judgelab.cli._util import db_option, echo_json, json_option
from labeler.errors import InputError
from labeler.models import Pair, Rubric
from labeler.store import Store, resolve_db_path

DEFAULT_MODEL = JUDGE_DEFAULT_MODEL
"""The judge model when ``--model`` is not given: the Anthropic judge's default (a current Sonnet
that still accepts ``temperature=0``, so verdicts are reproducible)."""

_NO_KEY = "judgelab-no-key"
# A stand-in key for an AnthropicJudge that only builds requests (estimates) or talks to a
# local --base-url server; a real endpoint would answer it with 401.

FAKE_FAMILY = "claude"
"""The fake judge's own family (so the byline probe has an own family to respond to)."""

OUTPUT_TOKENS = 150
"""Completion tokens a judge reply is assumed to take in an estimate (a short reason and the
verdict line); real replies are recorded with their true counts."""


def _other_family(store: Store | None, own: str | None) -> str:
    """The family the byline probe contrasts with the judge's own.

    Another family in the pool, else a well-known one.
    """
    if store is not None:
        for family in store.families():
            if own is None or family.lower() != own.lower():
                return family
    return "gpt" if (own or "").lower() in ("claude", "anthropic") else "claude"


@dataclass
class _Setup:
    """Everything a plan depends on, shared by ``estimate`` and ``probe``."""

    pairs: list[Pair]
    pool: list[PoolAnswer]
    pool_rubric: Rubric
    pool_source: str


def _setup(store: Store | None, dataset: str, n: int, seed: int, biases: Sequence[str]) -> _Setup:
    pairs = choose(load_pairs(dataset), n, seed=seed)
    pool: list[PoolAnswer] = []
    pool_rubric, source = PROBE_RUBRIC, "pairs"
    if POOL_BIASES & set(biases):
        stored = pool_from_store(store, 2 * n, seed=seed) if store is not None else []
        if stored:
            pool, source = stored, "database"
            pool_rubric = (store.rubric() if store is not None else None) or PROBE_RUBRIC
        else:
            pool = pool_from_pairs(pairs)
    return _Setup(pairs, pool, pool_rubric, source)


def _context(setup: _Setup, variants: Variants, judge_family: str | None, other: str) -> ProbeContext:
    return ProbeContext(
        pairs=setup.pairs,
        pool=setup.pool,
        rubric=PROBE_RUBRIC,
        pool_rubric=setup.pool_rubric,
        variants=variants,
        judge_family=judge_family,
        other_family=other,
    )


def _dataset_label(dataset: str) -> str:
    return "sample" if dataset == SAMPLE else Path(dataset).name


# -- judges ------------------------------------------------------------------------------------

def _fake_judge(opts: dict[str, Any]) -> FakeJudge:
    return FakeJudge(
        seed=opts["seed"],
        position=opts["fake_position"],
        verbosity=opts["fake_verbosity"],
        formatting=opts["fake_formatting"],
        tone=opts["fake_tone"],
        citations=opts["fake_citations"],
        byline=opts["fake_byline"],
        noise=opts["fake_noise"],
        parse_failure_rate=opts["fake_parse_failure"],
        family=opts["fake_family"],
    )


def _anthropic_judge(
    model: str, base_url: str | None, concurrency: int = 8, max_retries: int = 6
) -> AnthropicJudge:
    """The real judge. The key comes from ``ANTHROPIC_API_KEY``.

    With only a ``--base-url`` (a local mock server) a stand-in key is sent.
    """
    key = os.environ.get("ANTHROPIC_API_KEY") or (_NO_KEY if base_url else None)
    return AnthropicJudge(
        model, api_key=key, base_url=base_url, max_concurrency=concurrency, max_retries=max_retries
    )


def _have_api(base_url: str | None) -> bool:
    return bool(base_url or os.environ.get("ANTHROPIC_API_KEY"))


# -- shared options ----------------------------------------------------------------------------

def _dataset_options(func: Any) -> Any:
    func = click.option(
        "--biases", default=",".join(DEFAULT_BIASES), show_default=True,
        help="Comma-separated probes: position, verbosity, formatting, tone, citations, "
        "truncation, byline, format (the format study).",
    )(func)
    func = click.option(
        "--n", "n", type=click.IntRange(min=1), default=20, show_default=True,
        help="Pairs to probe (trials); pool-based probes score up to 2n answers.",
    )(func)
    func = click.option(
        "--dataset", default=SAMPLE, show_default=True,
        help="'sample' (bundled pairs) or a .csv/.jsonl with prompt, answer_a, answer_b "
        "(optional id, gold).",
    )(func)
    func = click.option("--seed", type=int, default=0, show_default=True,
                        help="Seed for the choice of pairs and the fake judge.")(func)
    return func


# -- estimate ------------------------------------------------------------------------------------

@click.command("estimate")
@_dataset_options
@click.option("--model", default=DEFAULT_MODEL, show_default=True, help="Judge model to price.")
@click.option("--judge", "judge_kind", type=click.Choice(["anthropic", "fake"]),
              default="anthropic", show_default=True, help="Judge the run would use.")
@click.option("--batch", is_flag=True, help="Also price the run as a Message Batch (half price).")
@click.option("--base-url", default=None, help="Anthropic-compatible API URL (for token counts).")
@click.option("--output-tokens", type=click.IntRange(min=1), default=OUTPUT_TOKENS,
              show_default=True, help="Completion tokens assumed per judge reply.")
@db_option
@json_option
def estimate_command(
    dataset: str, n: int, biases: str, seed: int, model: str, judge_kind: str, batch: bool,
    base_url: str | None, output_tokens: int, db: str | None, as_json: bool,
) -> None:
    """Preview a probe's calls, tokens and cost at list and batch price. Spends nothing.

    Counts exactly the calls `judgelab probe` with the same options would make (identical
    requests once; with an existing --db, requests already answered are free). Tokens come
    from the API's token counter when a key or --base-url is available, else ~4 characters
    per token; the output says which.
    """
    chosen = parse_biases(biases)
    path = resolve_db_path(db)
    store = Store(path) if path.exists() else None
    setup = _setup(store, dataset, n, seed, chosen)
    family = FAKE_FAMILY if judge_kind == "fake" else "claude"
    other = _other_family(store, family)
    # Padded texts are estimated with the offline padding (about 2x, like the model rewrite).
    ctx = _context(setup, Variants.for_pool(store, setup.pool), family, other)
    plan = plan_probes(ctx, chosen)
    judge: Any
    if judge_kind == "fake":
        judge = FakeJudge(seed=seed, family=FAKE_FAMILY)
        model = judge.model
    else:
        # Builds exactly the requests `probe` would send (same params, same cache keys); with
        # no key it is never asked to send anything.
        key = os.environ.get("ANTHROPIC_API_KEY") or _NO_KEY
        judge = AnthropicJudge(model, api_key=key, base_url=base_url)
    report = asyncio.run(
        _estimate(plan, judge, store, base_url=base_url, output_tokens=output_tokens,
                  count=judge_kind == "anthropic" and _have_api(base_url), model=model,
                  pad_llm=judge_kind == "anthropic", batch=batch)
    )
    report.update({"dataset": _dataset_label(dataset), "biases": list(chosen), "n_pairs":
                   len(setup.pairs), "pool_answers": len(setup.pool), "pool": setup.pool_source})
    if as_json:
        echo_json(report)
        return
    click.echo(_estimate_text(report))


async def _estimate(
    plan: ProbePlan, judge: Any, store: Store | None, *, base_url: str | None, output_tokens: int,
    count: bool, model: str, pad_llm: bool, batch: bool,
) -> dict[str, Any]:
    calls: dict[str, JudgeCall] = {}
    for planned in plan.calls:
        key = cache_key_for(judge, PROBE_RUBRIC, planned)
        calls.setdefault(key, build_request(judge, PROBE_RUBRIC, planned))
    cached = set(store.cached_replies(calls)) if store is not None else set()
    todo = [call for key, call in calls.items() if key not in cached]
    method = "approximate: ~4 characters per token (no API key or --base-url for exact counts)"
    input_tokens: int | None = None
    if count and todo:
        counts = await asyncio.gather(*(judge.count_tokens(c) for c in todo))
        input_tokens = int(sum(counts))
        method = "exact prompt tokens from the API's count_tokens endpoint"
    priced = pricing.estimate_calls(todo, output_tokens=output_tokens, cache=True)
    prompt = input_tokens if input_tokens is not None else priced.usage.prompt_tokens
    table = pricing.load_prices()
    known = table.price(model) is not None
    usage = priced.usage
    if input_tokens is not None and priced.usage.prompt_tokens:
        # Scale the cached/uncached split of the approximation to the exact prompt total.
        factor = input_tokens / priced.usage.prompt_tokens
        usage = pricing.TokenUsage(
            input_tokens=round(usage.input_tokens * factor),
            output_tokens=usage.output_tokens,
            cache_write_tokens=round(usage.cache_write_tokens * factor),
            cache_read_tokens=round(usage.cache_read_tokens * factor),
        )
    pads = _pad_requests(plan) if pad_llm else 0
    pad_usage = pricing.TokenUsage(
        input_tokens=_pad_prompt_tokens(plan) if pad_llm else 0,
        output_tokens=_pad_output_tokens(plan) if pad_llm else 0,
    )
    list_usd = table.cost(model, usage) if known else None
    batch_usd = table.cost(model, usage, batch=True) if known else None
    pad_usd = table.cost(model, pad_usage) if known and pads else (0.0 if known else None)
    return {
        "model": model,
        "model_priced": known,
        "price_table": table.source,
        "planned_calls": len(plan.calls),
        "distinct_requests": len(calls),
        "already_cached": len(calls) - len(todo),
        "calls": len(todo),
        "prompt_tokens": prompt,
        "output_tokens": usage.output_tokens,
        "token_method": method,
        "output_tokens_per_call": output_tokens,
        "cost_usd": list_usd,
        "cost_usd_batch": batch_usd,
        "batch": batch,
        "padding_rewrites": pads,
        "padding_tokens": {"input": pad_usage.input_tokens, "output": pad_usage.output_tokens},
        "padding_cost_usd": pad_usd,
        "spent": 0.0,
    }


def _padded_texts(plan: ProbePlan) -> dict[str, str]:
    """Original text -> offline padded text for every padded variant in the plan."""
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


def _pad_requests(plan: ProbePlan) -> int:
    return len(_padded_texts(plan))


def _pad_prompt_tokens(plan: ProbePlan) -> int:
    # The rewrite prompt holds the original (about half the padded text) plus the instruction.
    from calibration.perturb import PAD_INSTRUCTION

    instruction = pricing.approx_tokens(PAD_INSTRUCTION)
    return sum(instruction + pricing.approx_tokens(t) // 2 for t in _padded_texts(plan).values())


def _pad_output_tokens(plan: ProbePlan) -> int:
    return sum(pricing.approx_tokens(t) for t in _padded_texts(plan).values())


def _money(x: float | None) -> str:
    return "unpriced" if x is None else f"${x:,.4f}"


def _estimate_text(r: dict[str, Any]) -> str:
    lines = [
        f"estimate for {r['model']} · dataset {r['dataset']} · n={r['n_pairs']} pairs"
        + (f" · {r['pool_answers']} pool answers ({r['pool']})" if r["pool_answers"] else "")
        + f" · biases {', '.join(r['biases'])}",
        f"  calls: {r['calls']:,} judge calls ({r['planned_calls']:,} planned judgements; "
        f"{r['planned_calls'] - r['distinct_requests']:,} identical requests reuse one reply"
        + (f"; {r['already_cached']:,} already answered in the database" if r["already_cached"]
           else "") + ")",
        f"  tokens: {r['prompt_tokens']:,} prompt + {r['output_tokens']:,} output "
        f"({r['output_tokens_per_call']} per reply assumed)",
        f"  token count: {r['token_method']}",
    ]
    if not r["model_priced"]:
        lines.append(
            f"  cost: unknown model {r['model']!r}: it is not in the price table "
            f"({r['price_table']}); add it there to price the run."
        )
    else:
        chosen = "  <- this run (--batch)" if r["batch"] else ""
        lines.append(f"  cost at list price:  {_money(r['cost_usd'])}" + ("" if r["batch"] else
                                                                        "  <- this run"))
        lines.append(f"  cost at batch price: {_money(r['cost_usd_batch'])} (50% off){chosen}")
    if r["padding_rewrites"]:
        lines.append(
            f"  padding: {r['padding_rewrites']} model rewrites, ~{r['padding_tokens']['input']:,}"
            f" + {r['padding_tokens']['output']:,} tokens, {_money(r['padding_cost_usd'])}"
            " (rewrites already stored are reused)"
        )
    lines.append("  nothing was spent.")
    return "\n".join(lines)


# -- probe ---------------------------------------------------------------------------------------

@click.command("probe")
@click.option("--judge", "judge_kind", type=click.Choice(["anthropic", "fake"]),
              default="anthropic", show_default=True,
              help="'anthropic' (needs ANTHROPIC_API_KEY or --base-url) or the built-in fake.")
@click.option("--model", default=DEFAULT_MODEL, show_default=True, help="Judge model.")
@_dataset_options
@click.option("--out", "out", default="results.jsonl", show_default=True,
              type=click.Path(dir_okay=False), help="JSONL evidence file (one row per judgement).")
@click.option("--fake-position", type=float, default=0.0, show_default=True,
              help="Fake judge: first-shown win-rate lift (0.4 = 90% first-shown wins).")
@click.option("--fake-verbosity", type=float, default=0.0, show_default=True,
              help="Fake judge: longer-answer win-rate lift (and Likert points per doubling).")
@click.option("--fake-formatting", type=float, default=0.0, show_default=True,
              help="Fake judge: markdown lift.")
@click.option("--fake-tone", type=float, default=0.0, show_default=True,
              help="Fake judge: confident-framing lift.")
@click.option("--fake-citations", type=float, default=0.0, show_default=True,
              help="Fake judge: citation-line lift.")
@click.option("--fake-byline", type=float, default=0.0, show_default=True,
              help="Fake judge: lift for a byline naming its own family.")
@click.option("--fake-noise", type=float, default=0.0, show_default=True,
              help="Fake judge: noise (standard deviation, Likert points).")
@click.option("--fake-parse-failure", type=float, default=0.0, show_default=True,
              help="Fake judge: share of replies that do not parse.")
@click.option("--fake-family", default=FAKE_FAMILY, show_default=True,
              help="Fake judge: its own model family.")
@click.option("--other-family", default=None,
              help="Byline probe: the family contrasted with the judge's own.")
@click.option("--pad", "pad_mode", type=click.Choice(["llm", "offline"]), default=None,
              help="How padded variants are made [default: llm for anthropic, offline for fake].")
@click.option("--pad-model", default=None, help="Model that writes padded variants [default: --model].")
@click.option("--batch", is_flag=True, help="Submit the calls as one Message Batch (half price).")
@click.option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True,
              help="Calls in flight at once.")
@click.option("--max-retries", type=click.IntRange(min=0), default=6, show_default=True,
              help="Retries per request on 429/529/5xx/timeouts (backoff honours retry-after).")
@click.option("--poll-interval", type=click.FloatRange(min=0.01), default=30.0, show_default=True,
              help="Seconds between Message Batch status checks (--batch).")
@click.option("--base-url", default=None, help="Anthropic-compatible API URL (e.g. a local mock).")
@click.option("--resume", "resume", default=None, metavar="RUN_ID",
              help="Continue this interrupted run (a re-run of the same command does it too).")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar [default: when stderr is a terminal].")
@db_option
@json_option
def probe_command(**opts: Any) -> None:
    """Run the probes: judge each pair in both orders across the chosen biases.

    Every judgement goes to the database and to --out as it arrives. Identical requests are
    answered once and reused from the cache, so re-running costs nothing new; an interrupted
    run continues where it stopped (same command, or --resume RUN_ID).
    """
    try:
        summary, spend = asyncio.run(_probe(opts))
    except KeyboardInterrupt:
        # Every reply that arrived is already in the database: nothing is lost or re-spent.
        click.echo(
            "\ninterrupted: the replies received so far are saved. Run the same command again "
            "to continue where it stopped.",
            err=True,
        )
        sys.exit(130)
    if opts["as_json"]:
        echo_json({"run": summary.to_dict(), "padding": spend.__dict__})
    else:
        click.echo(str(summary))
        if spend.rewrites or spend.reused:
            click.echo(
                f"  padding: {spend.rewrites} model rewrites (${spend.cost_usd:.4f}), "
                f"{spend.reused} reused from earlier runs"
            )
        if summary.finished:
            click.echo(f"next: judgelab report {opts['out']} --mitigate --out report_card.md "
                       "--png report_card.png")
    if not summary.finished:
        # Failed calls are recorded and reported; a non-zero exit tells scripts to re-run.
        sys.exit(1)


async def _probe(opts: dict[str, Any]) -> tuple[RunSummary, RewriteSpend]:
    chosen = parse_biases(opts["biases"])
    store = Store(opts["db"])
    setup = _setup(store, opts["dataset"], opts["n"], opts["seed"], chosen)
    judge: Judge
    pad_model: PadModel | None = None
    if opts["judge_kind"] == "fake":
        judge = _fake_judge(opts)
        if opts["pad_mode"] == "llm":
            raise InputError("--pad llm needs the anthropic judge",
                             fix="drop --pad (the fake judge pads offline) or use --judge anthropic.")
    else:
        if not _have_api(opts["base_url"]):
            raise InputError(
                "the anthropic judge needs ANTHROPIC_API_KEY in the environment (or --base-url)",
                fix="export ANTHROPIC_API_KEY=..., or try the built-in fake: --judge fake.",
            )
        real = _anthropic_judge(
            opts["model"], opts["base_url"], opts["concurrency"], opts["max_retries"]
        )
        judge = real
        if (opts["pad_mode"] or "llm") == "llm" and "verbosity" in chosen:
            table = pricing.load_prices()
            pad_name = opts["pad_model"] or opts["model"]
            pad_model = PadModel(
                client=real.client, model=pad_name,
                price=lambda i, o: table.cost(pad_name, pricing.TokenUsage(i, o)),
                concurrency=opts["concurrency"],
            )
    other = opts["other_family"] or _other_family(store, judge.family)
    variants = Variants.for_pool(store, setup.pool, pad_model=pad_model)
    ctx = _context(setup, variants, judge.family, other)
    spend = RewriteSpend()
    if pad_model is not None:
        variants.recording = True
        plan_probes(ctx, chosen)
        variants.recording = False
        spend = await variants.prepare()
    plan = plan_probes(ctx, chosen)
    # The dataset's name rides along in each evidence row (meta is not part of any request, so
    # neither the cache keys nor the plan hash change).
    label = _dataset_label(opts["dataset"])
    plan.calls = [replace(c, meta={**c.meta, "dataset": label}) for c in plan.calls]
    if plan.new_answers:
        store.add_pool([], plan.new_answers, source_file="judgelab probe (perturbed variants)")
    params = {
        k: v for k, v in opts.items()
        if k not in ("as_json", "progress", "db", "resume", "concurrency", "out", "poll_interval",
                     "max_retries")
    }
    params["pad"] = variants.pad_source
    summary = await arun_plan(
        plan.calls, judge, store, rubric=PROBE_RUBRIC, judge_kind=opts["judge_kind"],
        evidence=opts["out"], resume=opts["resume"], concurrency=opts["concurrency"],
        batch=opts["batch"], progress=opts["progress"], params=params,
        poll_interval=opts["poll_interval"],
    )
    return summary, spend


# -- report --------------------------------------------------------------------------------------

@click.command("report")
@click.argument("results", type=click.Path(dir_okay=False))
@click.option("--mitigate", is_flag=True,
              help="Add the after-swap-averaging column (and its verdict change).")
@click.option("--out", "out", default=None, type=click.Path(dir_okay=False),
              help="Write the markdown card here [default: print it].")
@click.option("--png", "png", default=None, type=click.Path(dir_okay=False),
              help="Also save the card as a PNG chart.")
@db_option
@json_option
def report_command(
    results: str, mitigate: bool, out: str | None, png: str | None, db: str | None, as_json: bool
) -> None:
    """Render the report card from an evidence file. Never calls the judge.

    One row per bias: the raw reading, with --mitigate the reading after swap-averaging, a 95%
    interval each, and PASS/WARN/FAIL. When the project database exists, the raters' padding
    audits of the padded variants are reported too.
    """
    rows = read_evidence(results)
    audits = _audits(db, rows)
    analysis = analyse_evidence(rows, audits=audits)
    names = rows["dataset"].dropna().unique().tolist() if "dataset" in rows else []
    source = ", ".join(map(str, names)) if names else Path(results).name
    markdown = render_markdown(analysis, mitigate=mitigate, source=source)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(markdown, encoding="utf-8")
    if png:
        render_png(analysis, png, mitigate=mitigate, source=source)
    if as_json:
        payload = card_json(analysis, mitigate=mitigate, source=source)
        payload["files"] = {"markdown": out, "png": png}
        echo_json(json.loads(json.dumps(payload, default=str)))
        return
    if out:
        click.echo(f"wrote {out}")
    else:
        click.echo(markdown, nl=False)
    if png:
        click.echo(f"wrote {png}")


def _audits(db: str | None, rows: Any) -> dict[str, Any] | None:
    """Padding audits of this evidence's padded answers, when the database file exists.

    Only an existing file is read: a report never creates a database.
    """
    path = resolve_db_path(db)
    if not path.exists() or "answer_id" not in rows:
        return None
    padded = {str(a) for a in rows["answer_id"].dropna() if str(a).endswith("~padded")}
    if not padded:
        return None
    return Store(path).padding_audit_result(padded)


COMMANDS: list[click.Command] = [estimate_command, probe_command, report_command, mock_api_command]
