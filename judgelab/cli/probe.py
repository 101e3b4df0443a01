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
from pathlib import Path
from typing import Any

import click

from judgelab.calibration import pricing
from judgelab.calibration.datasets import SAMPLE
from judgelab.calibration.judges import AnthropicJudge, FakeJudge, Judge, OpenAIJudge
from judgelab.calibration.mockapi import mock_api_command
from judgelab.calibration.probes import (
    DEFAULT_BIASES,
    DetectionPlan,
    ProbeEstimate,
    adetection_plan,
    analyse_evidence,
    estimate_probes,
    read_evidence,
    run_probes,
)
from judgelab.calibration.report_card import card_json, render_markdown, render_png
from judgelab.calibration.spec import JudgeSpec
from judgelab.calibration.stats import ADJUSTMENTS, Adjustment
from judgelab.cli._judge import (
    DEFAULT_MODEL,
    FAKE_FAMILY,
    api_key,
    default_fake_judge,
    have_api,
    interrupted,
    judge_spec_option,
    make_judge,
    resolve_judge_spec,
    resolve_provider,
    run_options,
    runner_kwargs,
    spec_settings,
)
from judgelab.cli._util import echo_json, finishing, json_option, new_db_option, png_option
from judgelab.labeler.store import JudgeRole, Store, resolve_db_path

OUTPUT_TOKENS = pricing.OUTPUT_TOKENS
"""Completion tokens a judge reply is assumed to take in an estimate (a short reason and the
verdict line); real replies are recorded with their true counts."""


# -- judges ------------------------------------------------------------------------------------

def _fake_judge(opts: dict[str, Any], spec: JudgeSpec | None = None) -> FakeJudge:
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
        family=(spec.family if spec is not None else None) or opts["fake_family"],
        spec=spec,
    )


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
        help="'sample' (bundled pairs), 'project' (the pairs imported into --db, else pairs of two "
        "answers to one task there; judged under the project's rubric) or a .csv/.jsonl with prompt, "
        "answer_a, answer_b (optional id, gold).",
    )(func)
    func = click.option("--seed", type=int, default=0, show_default=True,
                        help="Seed for the choice of pairs and the fake judge.")(func)
    func = click.option(
        "--formats", default=None,
        help="Formats the format study (--biases format) runs, comma-separated: binary, likert5, "
        "numeric100, anchored, tournament, or a declared scale's name (the rubric's [scale] or the "
        "judge spec's) [default: the three pointwise ones, or the judge spec's].",
    )(func)
    return func


# -- estimate ------------------------------------------------------------------------------------

@click.command("estimate")
@_dataset_options
@click.option("--model", default=DEFAULT_MODEL, show_default=True, help="Judge model to price.")
@click.option("--judge", "judge_kind", type=click.Choice(["anthropic", "openai", "fake"]),
              default="anthropic", show_default=True,
              help="Judge the run would use ('openai': any OpenAI-compatible endpoint; needs --model) "
              "[default: the judge spec's provider, else anthropic].")
@click.option("--batch", is_flag=True, help="Also price the run as a Message Batch (half price).")
@click.option("--base-url", default=None,
              help="API URL: Anthropic-compatible (for token counts), or the OpenAI-compatible endpoint.")
@click.option("--output-tokens", type=click.IntRange(min=1), default=OUTPUT_TOKENS,
              show_default=True, help="Completion tokens assumed per judge reply.")
@click.option("--detect", "detect", type=click.FloatRange(min=0, max=100, min_open=True, max_open=True),
              default=None, metavar="PP",
              help="Also print the pairs each probe needs to detect an effect of PP percentage points "
                   "(80% power, after the card's adjustment for the readings tested together) and their cost.")
@judge_spec_option
@new_db_option
@json_option
def estimate_command(
    dataset: str, n: int, biases: str, seed: int, formats: str | None, model: str, judge_kind: str,
    batch: bool, base_url: str | None, output_tokens: int, detect: float | None, judge_spec: str | None,
    db: str | None, as_json: bool,
) -> None:
    """Preview a probe's calls, tokens and cost at list and batch price. Spends nothing.

    Counts exactly the calls `judgelab probe` with the same options would make (identical
    requests once; with an existing --db, requests already answered are free). Tokens come
    from the API's token counter when a key or --base-url is available, else ~4 characters
    per token; the output says which.
    """
    path = resolve_db_path(db)
    store = Store(path) if path.exists() else None
    spec, model = resolve_judge_spec(judge_spec, model)
    judge_kind, model = resolve_provider(judge_kind, spec, model)
    judge: Judge
    if judge_kind == "fake":
        judge = default_fake_judge(seed, spec)
    elif judge_kind == "openai":
        # Builds the requests `probe` would send; an estimate sends none, so needs no key.
        judge = OpenAIJudge(model, api_key=os.environ.get("OPENAI_API_KEY") or "judgelab-no-key",
                            base_url=base_url or (spec.base_url if spec else None), **spec_settings(spec))
    else:
        # Builds exactly the requests `probe` would send (same params, same cache keys); with
        # no key it is never asked to send anything.
        judge = AnthropicJudge(model, api_key=api_key(), base_url=base_url, **spec_settings(spec))
    estimate = estimate_probes(
        judge, store, dataset=dataset, n=n, biases=biases, seed=seed,
        count_tokens=have_api(base_url), output_tokens=output_tokens, batch=batch,
        formats=formats,
    )
    plan = None
    if detect is not None:
        plan = asyncio.run(adetection_plan(
            judge, store, effect=detect, dataset=dataset, biases=biases, seed=seed,
            count_tokens=have_api(base_url), output_tokens=output_tokens, n=n,
        ))
    if as_json:
        echo_json({**estimate.to_dict(), **({"detect": plan.to_dict()} if plan is not None else {})})
        return
    click.echo(_estimate_text(estimate))
    if plan is not None:
        click.echo(_detect_text(plan))


def _detect_text(plan: DetectionPlan) -> str:
    """The pairs each probe needs to detect ``plan.effect``, and their cost."""
    lines = [f"to detect a {plan.effect:g} pp effect with {plan.power:.0%} power, after adjusting for the "
             f"{plan.family_size} readings the card tests together (each at alpha {plan.alpha_per_reading:.3g}):"]
    for r in plan.rows:
        cost = ("unpriced" if r.cost_usd is None else
                f"{_money(r.cost_usd)} at list price, {_money(r.cost_usd_batch)} as a batch")
        short = (f"; the dataset has {r.available} pairs: add pairs (`judgelab import pairs`, --dataset project) "
                 f"or the probe cannot reach it (cost scaled from {r.scaled_from})" if r.scaled_from else "")
        lines.append(f"  {r.bias}: {r.pairs:,} pairs, ~{r.calls:,} judge calls, {cost}{short}")
    lines.append(f"  method: {plan.method}")
    t = plan.fail_threshold
    lines.append(
        f"  what the {plan.power:.0%} is: the chance the card's adjusted test finds the effect (significant). "
        f"A FAIL also needs the estimate at {t:g} pp or more, so at these pairs a true {plan.effect:g} pp "
        "effect is marked FAIL "
        + ", ".join(f"{r.fail_power:.0%} of the time ({r.bias})" for r in plan.rows) + "."
    )
    asked = [r for r in plan.rows if r.asked_pairs is not None and r.fail_power_asked is not None]
    if asked:
        lines.append(
            f"  at the {asked[0].asked_pairs:,} pairs this run reads (--n), a true {plan.effect:g} pp effect is "
            "marked FAIL " + ", ".join(f"{r.fail_power_asked:.0%} of the time ({r.bias})" for r in asked) + "."
        )
    if plan.effect <= t:
        lines.append(f"  a true effect at or below the {t:g} pp FAIL threshold is marked FAIL about half the time "
                     "at most, whatever the pairs.")
    lines.append(
        f"  for FAIL itself with {plan.power:.0%} power on a true {plan.fail_effect:g} pp effect: "
        + ", ".join(f"{r.bias} {r.pairs_to_fail:,} pairs" for r in plan.rows) + "."
    )
    return "\n".join(lines)


def _money(x: float | None) -> str:
    return "unpriced" if x is None else f"${x:,.4f}"


def _estimate_text(e: ProbeEstimate) -> str:
    c = e.cost
    lines = [
        f"estimate for {c.model} · dataset {e.dataset} · n={e.n_pairs} pairs"
        + (f" · {e.pool_answers} pool answers ({e.pool})" if e.pool_answers else "")
        + f" · biases {', '.join(e.biases)}",
        *([f"  prompt: {e.judge_spec}"] if e.judge_spec else []),
        f"  calls: {c.calls:,} judge calls ({c.planned_calls:,} planned judgements; "
        f"{c.planned_calls - c.distinct_requests:,} identical requests reuse one reply"
        + (f"; {c.already_cached:,} already answered in the database" if c.already_cached
           else "") + ")",
        f"  tokens: {c.prompt_tokens:,} prompt + {c.output_tokens:,} output "
        f"({c.output_tokens_per_call} per reply assumed; set --output-tokens)",
        f"  token count: {c.token_method}",
        _cache_line(c),
    ]
    if not c.model_priced:
        lines.append(
            f"  cost: unknown model {c.model!r}: it is not in the price table "
            f"({c.price_table}); add it there to price the run."
        )
    else:
        chosen = "  <- this run (--batch)" if c.batch else ""
        lines.append(f"  cost at list price:  {_money(c.cost_usd)}" + ("" if c.batch else
                                                                   "  <- this run"))
        lines.append(f"  cost at batch price: {_batch_money(c)} (50% off){chosen}")
        if c.cost_usd_batch_high is not None and c.cost_usd_batch != c.cost_usd_batch_high:
            lines.append(
                "    a range: cache hits in a batch are best effort, from the rubric block read from "
                "the cache after its first use, to no cache hit at all (OpenAI charges no cache write)"
                if c.provider == "openai" else
                "    a range: cache hits in a batch are best effort, from one write of the rubric "
                "block and reads after it, to every request writing it at the 1-hour rate "
                "(batches send a 1-hour cache TTL)"
            )
    if c.padding_rewrites:
        lines.append(
            f"  padding: {c.padding_rewrites} model rewrites, ~{c.padding_input_tokens:,}"
            f" + {c.padding_output_tokens:,} tokens, {_money(c.padding_cost_usd)}"
            + ("" if c.padding_cost_usd is None else " through the batch (50% off)" if c.batch else " at list price")
            + " (rewrites already stored are reused)"
        )
    lines.append("  nothing was spent.")
    return "\n".join(lines)


def _batch_money(c: pricing.PlanEstimate) -> str:
    """The batch price, a range when cache hits (best effort in a batch) make a difference."""
    low, high = c.cost_usd_batch, c.cost_usd_batch_high
    if low is None or high is None or low == high:
        return _money(low)
    return f"{_money(low)} to {_money(high)}"


def _cache_line(c: pricing.PlanEstimate) -> str:
    """Whether the rubric block is prompt-cached, and so how it was priced."""
    if c.provider == "openai":
        return _openai_cache_line(c)
    block = f"the {c.cache_prefix_tokens:,}-token rubric block" + (
        " (counted by the API)" if c.prefix_method == "exact" else " (~4 characters per token)"
    )
    minimum = f"{c.model}'s {c.cache_min_tokens:,}-token minimum" if c.cache_min_tokens is not None else ""
    if c.prompt_cache == "applies":
        return f"  prompt cache: applies ({block} reaches {minimum}): written once, then read"
    if c.prompt_cache == "below minimum":
        return (f"  prompt cache: does not apply ({block} is below {minimum}; the API would "
                "ignore the breakpoint): every prompt token priced as uncached")
    if c.prompt_cache == "unknown minimum":
        return (f"  prompt cache: unknown ({c.model} has no minimum cacheable length in the price "
                "table): priced as uncached, an upper bound")
    return "  prompt cache: no calls to make"


def _openai_cache_line(c: pricing.PlanEstimate) -> str:
    """The prompt-cache line for an OpenAI-compatible endpoint: automatic prefix caching, no write charge."""
    block = f"the {c.cache_prefix_tokens:,}-token rubric block (~4 characters per token)"
    minimum = f"{c.cache_min_tokens:,}" if c.cache_min_tokens is not None else ""
    if c.prompt_cache == "applies":
        return (f"  prompt cache: automatic ({block} reaches the {minimum}-token minimum from which OpenAI "
                "caches a prompt prefix): its first use priced as plain input (no cache write charge), "
                "later uses at the cached-input price")
    if c.prompt_cache == "below minimum":
        return (f"  prompt cache: does not apply ({block} is below the {minimum}-token minimum from which "
                "OpenAI caches a prompt prefix): every prompt token priced as uncached")
    if c.prompt_cache == "unknown minimum":
        return (f"  prompt cache: unknown ({c.model} has no minimum cacheable length in the price table; "
                "OpenAI caches prefixes automatically from 1,024 tokens, other servers by their own "
                "rules): priced as uncached, an upper bound")
    return "  prompt cache: no calls to make"


# -- probe ---------------------------------------------------------------------------------------

@click.command("probe")
@click.option("--judge", "judge_kind", type=click.Choice(["anthropic", "openai", "fake"]),
              default="anthropic", show_default=True,
              help="'anthropic' (needs ANTHROPIC_API_KEY or --base-url), 'openai' (any OpenAI-compatible "
              "endpoint: OPENAI_API_KEY, --base-url or OPENAI_BASE_URL; needs --model) or the built-in "
              "fake [default: the judge spec's provider, else anthropic].")
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
              help="How padded variants are made: rewritten by a model through the judge's own back-end "
              "(anthropic or openai; with --batch as a batch of their own), or offline "
              "[default: llm for anthropic and openai, offline for fake].")
@click.option("--pad-model", default=None, help="Model that writes padded variants [default: --model].")
@run_options
@judge_spec_option
@new_db_option
@json_option
def probe_command(**opts: Any) -> None:
    """Run the probes: judge each pair in both orders across the chosen biases.

    Every judgement goes to the database and to --out as it arrives. Identical requests are
    answered once and reused from the cache, so re-running costs nothing new; an interrupted
    run continues where it stopped (same command, or --resume RUN_ID).
    """
    store: JudgeRole = Store(opts["db"])
    spec, opts["model"] = resolve_judge_spec(opts["judge_spec"], opts["model"])
    opts["judge_kind"], opts["model"] = resolve_provider(opts["judge_kind"], spec, opts["model"])
    judge = (
        _fake_judge(opts, spec) if opts["judge_kind"] == "fake"
        else make_judge(opts["judge_kind"], opts["model"], opts["base_url"], concurrency=opts["concurrency"],
                        max_retries=opts["max_retries"], spec=spec, timeout=opts["timeout"])
    )
    try:
        result = run_probes(
            judge, store, dataset=opts["dataset"], n=opts["n"], biases=opts["biases"], seed=opts["seed"],
            other=opts["other_family"], pad=opts["pad_mode"], pad_model=opts["pad_model"], formats=opts["formats"],
            **runner_kwargs(opts),
        )
    except KeyboardInterrupt as exc:
        # Every reply that arrived is already in the database: nothing is lost or re-spent.
        interrupted(exc, as_json=opts["as_json"])
    summary, spend = result.summary, result.spend
    with finishing():  # Ctrl-C now: the summary still prints whole, then exit 130
        if opts["as_json"]:
            echo_json(result.to_dict())
        else:
            click.echo(str(summary))
            if spend.rewrites or spend.reused:
                # A model the price table does not know (a local one) is unpriced, never $0.
                paid = ("unpriced" if spend.rewrites and spend.unpriced == spend.rewrites
                        else f"${spend.cost_usd:.4f}" + (f", {spend.unpriced} unpriced" if spend.unpriced else ""))
                click.echo(
                    f"  padding: {spend.rewrites} model rewrites ({paid}), "
                    f"{spend.reused} reused from earlier runs"
                )
            if summary.finished:
                click.echo(f"next: judgelab report {opts['out']} --mitigate --out report_card.md "
                           "--png report_card.png")
    # Scripts and CI must notice a run that did not get every reply (EXIT_CODES): 3 when calls
    # ended in errors, 4 when some have no result yet. The failures are recorded with their
    # reasons either way, and running the same command again retries only them.
    sys.exit(summary.exit_code)


# -- report --------------------------------------------------------------------------------------

@click.command("report")
@click.argument("results", type=click.Path(dir_okay=False))
@click.option("--mitigate", is_flag=True,
              help="Add the after-swap-averaging column (and its verdict change).")
@click.option("--out", "out", default=None, type=click.Path(dir_okay=False),
              help="Write the markdown card here [default: print it].")
@png_option("Also save the card as a PNG chart.")
@click.option("--adjust", type=click.Choice(list(ADJUSTMENTS)), default="holm", show_default=True,
              help="How verdicts are adjusted for the number of rows tested: holm (at most a 5% "
              "chance of any false FAIL), bh (Benjamini-Hochberg) or none.")
@new_db_option
@json_option
def report_command(
    results: str, mitigate: bool, out: str | None, png: str | None, adjust: Adjustment,
    db: str | None, as_json: bool,
) -> None:
    """Render the report card from an evidence file. Never calls the judge.

    One row per bias: the raw reading, with --mitigate the reading after swap-averaging, a 95%
    interval each, and PASS/WARN/FAIL, adjusted for the number of rows tested (--adjust), with
    the placebo arm's lift as the empirical false-alarm check. When the project database exists, the raters' padding
    audits of the padded variants are reported too.
    """
    rows = read_evidence(results)
    audits = _audits(db, rows)
    analysis = analyse_evidence(rows, audits=audits, adjust=adjust)
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
