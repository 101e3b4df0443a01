"""``judgelab score``: the judge scores every answer of a chosen set, as a run calibrate reads.

::

    judgelab score --judge-spec examples/judge_spec.toml --all      # the team's judge, whole pool
    judgelab score --judge anthropic --model M --design D-1 --batch  # built-in prompt, a design
    judgelab score --judge fake --labelled                           # offline, labelled answers
    judgelab score --judge openai --model gpt-4.1 --all              # any OpenAI-compatible endpoint

Each answer is judged once per format (``--formats``; default: the spec's pointwise formats,
else the rubric's scale). Identical requests come from the cache, a re-run continues an
interrupted run, ``--batch`` uses Message Batches. ``judgelab calibrate --judge-run RUN`` then
reads the run against the human labels.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from judgelab.calibration.judges import Judge
from judgelab.calibration.scoring import score_answers
from judgelab.cli._judge import (
    DEFAULT_MODEL,
    interrupted,
    judge_spec_option,
    make_judge,
    resolve_judge_spec,
    resolve_provider,
    run_options,
    runner_kwargs,
)
from judgelab.cli._util import db_option, echo_json, finishing, json_option
from judgelab.labeler.store import JudgeRole, Store


@click.command("score")
@click.option("--judge", "judge_kind", type=click.Choice(["anthropic", "openai", "fake"]), default="anthropic",
              show_default=True,
              help="'anthropic' (needs ANTHROPIC_API_KEY or --base-url), 'openai' (any OpenAI-compatible "
              "endpoint: OPENAI_API_KEY, --base-url or OPENAI_BASE_URL; needs --model) or the built-in "
              "fake [default: the judge spec's provider, else anthropic].")
@click.option("--model", default=DEFAULT_MODEL, show_default=True,
              help="Judge model [default with --judge-spec: the spec's].")
@judge_spec_option
@click.option("--all", "every", is_flag=True, help="Score every answer in the pool (the default).")
@click.option("--design", default=None, metavar="ID", help="Score the answers of this stored sample design.")
@click.option("--labelled", is_flag=True, help="Score the answers that have human labels.")
@click.option("--formats", default=None,
              help="Comma-separated pointwise formats [default: the spec's, else the rubric's scale].")
@click.option("--out", default=None, type=click.Path(dir_okay=False), help="Also write a JSONL evidence file.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the fake judge.")
@run_options
@db_option
@json_option
def score_command(**opts: Any) -> None:
    """Score every answer of a set with the judge, once per format, as a judge run.

    The set is --all (default), --design ID or --labelled. Every judgement goes to the
    database as it arrives; re-running the same command spends nothing new and continues an
    interrupted run. `judgelab calibrate` reads the run.
    """
    if opts["every"] + (opts["design"] is not None) + opts["labelled"] > 1:
        raise click.UsageError("choose one answer set: --all, --design ID or --labelled")
    store: JudgeRole = Store(opts["db"])
    spec, opts["model"] = resolve_judge_spec(opts["judge_spec"], opts["model"])
    opts["judge_kind"], opts["model"] = resolve_provider(opts["judge_kind"], spec, opts["model"])
    judge: Judge = make_judge(opts["judge_kind"], opts["model"], opts["base_url"], concurrency=opts["concurrency"],
                              max_retries=opts["max_retries"], spec=spec, seed=opts["seed"], timeout=opts["timeout"])
    try:
        result = score_answers(judge, store, design=opts["design"], labelled=opts["labelled"], formats=opts["formats"],
                               **runner_kwargs(opts))
    except KeyboardInterrupt as exc:
        interrupted(exc, as_json=opts["as_json"])
    summary = result.summary
    with finishing():  # Ctrl-C now: the summary still prints whole, then exit 130
        if opts["as_json"]:
            echo_json(result.to_dict())
        else:
            each = f" and their {result.turns} assistant turns one by one" if result.turns else ""
            click.echo(f"scored {result.answer_set}{each} in {', '.join(result.formats)} with {judge.model}"
                       + (f"\n  prompt: {result.judge_spec}" if result.judge_spec else " (judgelab's built-in prompt)"))
            click.echo(str(summary))
            if summary.finished:
                click.echo(f"next: judgelab calibrate --judge-run {summary.run_id} --out report.md")
    # EXIT_CODES: 0 finished, 3 finished with errors, 4 not finished (scripts and CI notice).
    sys.exit(summary.exit_code)


COMMANDS: list[click.Command] = [score_command]
