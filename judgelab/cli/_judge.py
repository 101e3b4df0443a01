"""Building the judge a command runs: the ``--judge-spec`` option, the Anthropic, OpenAI and fake judges.

Shared by the verbs that call a judge (``estimate``, ``probe``, ``score``), so that the same
options make the same judge, and so the same requests and cache keys, whichever verb runs it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, NoReturn

import click

from judgelab.calibration.judges import DEFAULT_MODEL as JUDGE_DEFAULT_MODEL
from judgelab.calibration.judges import AnthropicJudge, FakeJudge, Judge, OpenAIJudge
from judgelab.calibration.runner._summary import RunInterrupted
from judgelab.calibration.spec import JudgeSpec, load_spec
from judgelab.cli._util import echo_json, interrupted_exit, quiet_option
from judgelab.labeler.errors import InputError, JudgeError

__all__ = [
    "DEFAULT_MODEL",
    "FAKE_FAMILY",
    "adopt_batch_option",
    "anthropic_judge",
    "api_key",
    "default_fake_judge",
    "have_api",
    "interrupted",
    "judge_spec_option",
    "make_judge",
    "openai_judge",
    "resolve_judge_spec",
    "resolve_provider",
    "spec_settings",
]

DEFAULT_MODEL = JUDGE_DEFAULT_MODEL
"""The judge model when ``--model`` is not given: the Anthropic judge's default (a current Sonnet
that still accepts ``temperature=0``, so verdicts are reproducible)."""

_NO_KEY = "judgelab-no-key"
# A stand-in key for an AnthropicJudge that only builds requests (estimates) or talks to a
# local --base-url server; a real endpoint would answer it with 401.

FAKE_FAMILY = "claude"
"""The fake judge's own family (so the byline probe has an own family to respond to)."""


def api_key() -> str:
    """``ANTHROPIC_API_KEY``, else a stand-in key (for request building or a local ``--base-url``)."""
    return os.environ.get("ANTHROPIC_API_KEY") or _NO_KEY


def have_api(base_url: str | None) -> bool:
    """Whether a judge could reach an API: a ``--base-url`` or ``ANTHROPIC_API_KEY`` is set."""
    return bool(base_url or os.environ.get("ANTHROPIC_API_KEY"))


def anthropic_judge(
    model: str, base_url: str | None, concurrency: int = 8, max_retries: int = 6,
    spec: JudgeSpec | None = None, timeout: float = 60.0,
) -> AnthropicJudge:
    """The real judge. The key comes from ``ANTHROPIC_API_KEY``.

    With only a ``--base-url`` (a local mock server) a stand-in key is sent. A judge ``spec``
    gives the prompt, the verdict rules and the family, temperature and reply budget.

    Raises:
        InputError: Neither ``ANTHROPIC_API_KEY`` nor ``base_url`` is set.
    """
    if not have_api(base_url):
        raise InputError(
            "the anthropic judge needs ANTHROPIC_API_KEY in the environment (or --base-url)",
            fix="export ANTHROPIC_API_KEY=..., or try the built-in fake: --judge fake.",
        )
    return AnthropicJudge(
        model, api_key=api_key(), base_url=base_url, max_concurrency=concurrency, max_retries=max_retries,
        timeout=timeout, **spec_settings(spec),
    )


def openai_judge(
    model: str, base_url: str | None, concurrency: int = 8, max_retries: int = 6,
    spec: JudgeSpec | None = None, timeout: float = 60.0,
) -> OpenAIJudge:
    """A judge on an OpenAI-compatible endpoint, through the ``openai`` SDK.

    The endpoint is ``--base-url``, else the spec's ``base_url``, else ``OPENAI_BASE_URL``,
    else OpenAI's; the key ``OPENAI_API_KEY`` (a local endpoint needs none). A judge ``spec``
    gives the prompt, the verdict rules and the family, temperature and reply budget.

    Raises:
        InputError: No key for OpenAI's own endpoint.
    """
    url = base_url or (spec.base_url if spec is not None else None)
    try:
        return OpenAIJudge(model, base_url=url, max_concurrency=concurrency, max_retries=max_retries,
                           timeout=timeout, **spec_settings(spec))
    except JudgeError as exc:
        raise InputError(
            "the openai judge needs OPENAI_API_KEY in the environment for OpenAI's own endpoint",
            fix="export OPENAI_API_KEY=..., or point --base-url (or OPENAI_BASE_URL) at your "
            "OpenAI-compatible server (vLLM, Ollama, Azure, Gemini), or try --judge fake.",
        ) from exc


def resolve_provider(judge_kind: str, spec: JudgeSpec | None, model: str) -> tuple[str, str]:
    """The back-end and model a command runs: ``--judge`` (else the spec's provider) and ``--model``.

    Reads the click context to tell options given on the command line from their defaults:
    a spec's ``provider`` stands unless ``--judge`` was given. The OpenAI-compatible judge has
    no default model (judgelab's default is a Claude model).

    Raises:
        click.UsageError: ``--judge openai`` with no ``--model`` and no model in the spec.
    """
    ctx = click.get_current_context()
    given = ctx.get_parameter_source("judge_kind") not in (None, click.core.ParameterSource.DEFAULT)
    kind = judge_kind if given or spec is None or spec.provider is None else spec.provider
    model_given = ctx.get_parameter_source("model") not in (None, click.core.ParameterSource.DEFAULT)
    if kind == "openai" and not model_given and (spec is None or spec.model is None):
        raise click.UsageError("--judge openai needs --model (the model id the endpoint serves, e.g. gpt-4.1)")
    return kind, model


def make_judge(
    kind: str, model: str, base_url: str | None, *, concurrency: int = 8, max_retries: int = 6,
    spec: JudgeSpec | None = None, timeout: float = 60.0, seed: int = 0,
) -> Judge:
    """The judge ``--judge KIND`` names: ``anthropic``, ``openai`` or the default ``fake``."""
    if kind == "openai":
        return openai_judge(model, base_url, concurrency, max_retries, spec, timeout)
    if kind == "anthropic":
        return anthropic_judge(model, base_url, concurrency, max_retries, spec, timeout)
    return default_fake_judge(seed, spec)


def default_fake_judge(seed: int, spec: JudgeSpec | None = None) -> FakeJudge:
    """The built-in fake judge without injected biases: the spec's family, else :data:`FAKE_FAMILY`."""
    return FakeJudge(seed=seed, family=(spec.family if spec else None) or FAKE_FAMILY, spec=spec)


def spec_settings(spec: JudgeSpec | None) -> dict[str, Any]:
    """The Anthropic judge's settings a judge spec sets (only those it names)."""
    if spec is None:
        return {}
    named = {"temperature": spec.temperature, "max_tokens": spec.max_tokens, "family": spec.family}
    return {"spec": spec, **{k: v for k, v in named.items() if v is not None}}


def resolve_judge_spec(path: str | None, model: str) -> tuple[JudgeSpec | None, str]:
    """The ``--judge-spec`` file loaded, and the model: ``--model`` when given, else the spec's.

    Reads the current click context to tell a ``--model`` given on the command line from its
    default, so call it from inside a command.
    """
    if path is None:
        return None, model
    spec = load_spec(path)
    source = click.get_current_context().get_parameter_source("model")
    given = source is not None and source is not click.core.ParameterSource.DEFAULT
    return spec, model if given or spec.model is None else spec.model


def judge_spec_option(func: Any) -> Any:
    """``--judge-spec PATH``: run the team's judge spec instead of judgelab's built-in prompt."""
    return click.option(
        "--judge-spec", "judge_spec", default=None, type=click.Path(dir_okay=False),
        help="A judge spec (TOML: the team's prompt, examples, references, verdict format; see "
        "`judgelab examples DIR`'s judge_spec.toml) to run instead of judgelab's built-in prompt.",
    )(func)


def adopt_batch_option(func: Any) -> Any:
    """``--adopt-batch ID``: the batch that is this run's, when its create reply was lost and judgelab cannot tell."""
    return click.option(
        "--adopt-batch", "adopt_batches", multiple=True, metavar="BATCH_ID",
        help="With --batch: the provider batch that is this run's, when a run says a batch is 'in doubt' (its "
        "create reply was lost and judgelab cannot tell it from another project's). It is adopted only if it "
        "holds exactly this run's requests. Repeatable.",
    )(func)


def run_options(func: Any) -> Any:
    """The runner's options, the same on every command that calls a judge (``probe``, ``score``, ``screen``).

    ``--batch``, ``--concurrency``, ``--max-retries``, ``--timeout``, ``--poll-interval``,
    ``--base-url``, ``--resume``, ``--adopt-batch`` and ``--quiet`` (``--progress/--no-progress``, hidden).
    """
    options: list[Callable[[Any], Any]] = [
        click.option("--batch", is_flag=True, help="Submit the calls as one batch (half price)."),
        click.option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True,
                     help="Calls in flight at once."),
        click.option("--max-retries", type=click.IntRange(min=0), default=6, show_default=True,
                     help="Retries per request on 429/529/5xx/timeouts and undecodable replies "
                     "(backoff honours retry-after)."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
                     help="Seconds per HTTP attempt before it is abandoned and retried."),
        click.option("--poll-interval", type=click.FloatRange(min=0.01), default=30.0, show_default=True,
                     help="Seconds between batch status checks (--batch)."),
        click.option("--base-url", default=None,
                     help="API URL: Anthropic-compatible, or with --judge openai the OpenAI-compatible endpoint "
                     "(e.g. http://localhost:11434/v1 for Ollama, a local mock's /v1)."),
        click.option("--resume", "resume", default=None, metavar="RUN_ID",
                     help="Continue this interrupted run (a re-run of the same command does it too)."),
        adopt_batch_option,
        quiet_option,
        # The older spelling, kept working for scripts (--no-progress is --quiet; --progress draws
        # the bar even when stderr is not a terminal); --quiet is the one the help shows.
        click.option("--progress/--no-progress", default=None, hidden=True,
                     help="Progress bar [default: when stderr is a terminal]."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


#: Options that steer one execution of a run and are not stored with it (the rest are, for the record).
_STEERING = ("as_json", "progress", "quiet", "db", "resume", "concurrency", "out", "poll_interval", "max_retries",
             "timeout", "adopt_batches")


def run_params(opts: dict[str, Any], *also: str) -> dict[str, Any]:
    """The command's options stored with its run: all but :data:`_STEERING` and ``also``."""
    return {k: v for k, v in opts.items() if k not in _STEERING and k not in also}


def runner_kwargs(opts: dict[str, Any], *also: str) -> dict[str, Any]:
    """The keyword arguments every run function takes from the command's options.

    ``score_answers``, ``screen_answers`` and ``run_probes`` each take :func:`run_options`'
    values, ``--out``, ``--judge`` and the options stored with the run (:func:`run_params`).
    """
    return {"evidence": opts["out"], "judge_kind": opts["judge_kind"], "resume": opts["resume"],
            "concurrency": opts["concurrency"], "batch": opts["batch"],
            "progress": False if opts.get("quiet") else opts["progress"],
            "poll_interval": opts["poll_interval"], "adopt_batches": opts["adopt_batches"],
            "params": run_params(opts, *also)}


def interrupted(exc: BaseException | None = None, *, as_json: bool = False) -> NoReturn:
    """Print the interrupted run's summary (when ``exc`` carries one), say it lost nothing, exit 130.

    See ``EXIT_CODES``; :class:`~judgelab.calibration.runner.RunInterrupted` carries the summary.
    """
    summary = exc.summary if isinstance(exc, RunInterrupted) else None
    if summary is not None and as_json:
        echo_json({"run": summary.to_dict()})
        interrupted_exit()
    interrupted_exit(None if summary is None else str(summary))
