"""``judgelab screen``: the team's judge reads every answer for a sign of who wrote it (issue 54).

::

    judgelab screen --judge-spec examples/judge_spec.toml --estimate   # what it would cost; spends nothing
    judgelab screen --judge-spec examples/judge_spec.toml --batch      # the team's judge, half price
    judgelab screen --judge fake                                       # offline

The blinding rules are the free first pass; the screen is optional. An answer the judge reads
as revealing its author is withheld from raters (as a rater's W key does) until an admin masks or
clears it on the Withheld page; a reply that does not parse is counted, never a verdict. The
calls go through the runner: cache, journal, resume and retries as for ``judgelab score``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from judgelab.calibration.judges import AnthropicJudge, Judge, OpenAIJudge
from judgelab.calibration.screen import estimate_screen, screen_answers
from judgelab.calibration.spec import JudgeSpec
from judgelab.cli._judge import (
    DEFAULT_MODEL,
    api_key,
    default_fake_judge,
    interrupted,
    judge_spec_option,
    make_judge,
    resolve_judge_spec,
    resolve_provider,
    run_options,
    runner_kwargs,
    spec_settings,
)
from judgelab.cli._util import db_option, echo_json, finishing, json_option
from judgelab.labeler.store import JudgeRole, Store


def _building_judge(kind: str, model: str, base_url: str | None, spec: JudgeSpec | None, seed: int) -> Judge:
    """The judge the screen would use, to build its requests only: an estimate sends none, so needs no key."""
    if kind == "fake":
        return default_fake_judge(seed, spec)
    if kind == "openai":
        return OpenAIJudge(model, api_key=os.environ.get("OPENAI_API_KEY") or "judgelab-no-key",
                           base_url=base_url or (spec.base_url if spec else None), **spec_settings(spec))
    return AnthropicJudge(model, api_key=api_key(), base_url=base_url, **spec_settings(spec))


def _money(x: float | None) -> str:
    return "unpriced" if x is None else f"${x:,.4f}"


@click.command("screen")
@click.option("--judge", "judge_kind", type=click.Choice(["anthropic", "openai", "fake"]), default="anthropic",
              show_default=True,
              help="'anthropic' (needs ANTHROPIC_API_KEY or --base-url), 'openai' (any OpenAI-compatible "
              "endpoint; needs --model) or the built-in fake [default: the judge spec's provider, else anthropic].")
@click.option("--model", default=DEFAULT_MODEL, show_default=True,
              help="Judge model [default with --judge-spec: the spec's].")
@judge_spec_option
@click.option("--estimate", "only_estimate", is_flag=True,
              help="Say what the screen would cost (calls, tokens, list and batch price) and stop. Spends nothing.")
@click.option("--out", default=None, type=click.Path(dir_okay=False), help="Also write a JSONL evidence file.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the fake judge.")
@run_options
@db_option
@json_option
def screen_command(**opts: Any) -> None:
    """Ask the judge whether each answer reveals which model or company wrote it; withhold those it flags.

    Every answer of the pool is asked once (answers already asked come from the cache, free).
    Flagged answers wait on the admin's Withheld page; their reason is the judge's. Run with
    --estimate first to see the cost.
    """
    store: JudgeRole = Store(opts["db"])
    spec, opts["model"] = resolve_judge_spec(opts["judge_spec"], opts["model"])
    opts["judge_kind"], opts["model"] = resolve_provider(opts["judge_kind"], spec, opts["model"])
    # The spec names the team's judge (provider, model, endpoint); the screen asks its own question, not the
    # spec's grading templates, which ask for a score of the answer.
    if spec is not None and opts["judge_kind"] == "openai" and opts["base_url"] is None:
        opts["base_url"] = spec.base_url
    if opts["only_estimate"]:
        c = estimate_screen(_building_judge(opts["judge_kind"], opts["model"], opts["base_url"], None, opts["seed"]),
                            store, batch=opts["batch"])
        if opts["as_json"]:
            echo_json(c.to_dict())
            return
        click.echo(f"screen estimate for {c.model}: {c.calls:,} judge calls ({c.planned_calls:,} answers; "
                   f"{c.already_cached:,} already answered in the database, free)")
        click.echo(f"  tokens: {c.prompt_tokens:,} prompt + {c.output_tokens:,} output ({c.token_method})")
        click.echo(f"  cost at list price:  {_money(c.cost_usd)}" + ("" if opts["batch"] else "  <- this run"))
        click.echo(f"  cost at batch price: {_money(c.cost_usd_batch)} (50% off)" + (
            "  <- this run (--batch)" if opts["batch"] else ""))
        click.echo("  nothing was spent.")
        return
    judge: Judge = make_judge(opts["judge_kind"], opts["model"], opts["base_url"], concurrency=opts["concurrency"],
                              max_retries=opts["max_retries"], spec=None, seed=opts["seed"], timeout=opts["timeout"])
    try:
        result = screen_answers(judge, store, **runner_kwargs(opts, "only_estimate"))
    except KeyboardInterrupt as exc:
        interrupted(exc, as_json=opts["as_json"])
    summary = result.summary
    with finishing():  # Ctrl-C now: the summary still prints whole, then exit 130
        if opts["as_json"]:
            echo_json(result.to_dict())
        else:
            f = result.figures
            click.echo(f"screened {result.answers} answers with {judge.model}"
                       + (f" (the judge of {opts['judge_spec']})" if spec is not None else "")
                       + "; question: does the answer reveal which model or company wrote it?")
            click.echo(f"  flagged {result.flagged} as revealing their author ({result.withheld_now} withheld now); "
                       f"{result.parse_failures} replies did not parse (no verdict; asked again next time)")
            click.echo(f"  project: {f.screened} screened, {f.flagged} flagged, {f.cleared} cleared, {f.masked} "
                       f"masked, {f.withheld} withheld now; screen cost {_money(f.cost_usd)}")
            click.echo(str(summary))
            if f.withheld:
                click.echo("next: an admin masks or clears the withheld answers on the app's Withheld page")
    # EXIT_CODES: 0 finished, 3 finished with errors, 4 not finished (scripts and CI notice).
    sys.exit(summary.exit_code)


COMMANDS: list[click.Command] = [screen_command]
