"""The ``judgelab`` command line: one module per verb group, each imported only when used.

The CLI only parses options and prints; the work is done by library functions in
:mod:`labeler`, :mod:`calibration` and :mod:`judgelab`. Library code raises
:class:`~judgelab.labeler.errors.JudgelabError`; :class:`~judgelab.cli._util.JudgelabGroup`
turns it into one line on stderr and exit code 2.

The verbs are loaded lazily (click's lazy-group pattern): importing every verb module pulls in
pandas, DuckDB, SciPy, Altair and the Anthropic SDK, seconds of CPU that ``--version``,
``--help`` and a light verb never use. :data:`VERBS` names each verb's module and its one-line
help, so ``judgelab --help`` lists them without importing any (a test keeps those lines equal
to the commands' own).
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from judgelab import __version__
from judgelab.cli._util import JudgelabGroup
from judgelab.labeler._actor import acting_as, os_user

__all__ = ["VERBS", "LazyGroup", "main"]

#: Every verb: its name -> (``module:attribute`` of the click command, one-line help).
VERBS: dict[str, tuple[str, str]] = {
    "admins": ("judgelab.cli.admins:admins",
        "The admin list for signing in (e-mails, groups), and how long a sign-in lasts."),
    "agreement": ("judgelab.cli.agreement:agreement",
        "Agreement of a judge's pairwise verdicts with human pair labels, per turn, with and without ties."),
    "assign": ("judgelab.cli.assign:assign",
        "Give each selected answer to exactly K raters (running it again adds only what is missing)."),
    "audit": ("judgelab.cli.audit:audit",
        "The audit trail: who imported, assigned, revoked, adjudicated, paused, exported or changed settings."),
    "calibrate": ("judgelab.cli.calibrate:calibrate_command",
        "Write the calibration report of a judge run."),
    "compare": ("judgelab.cli.loop:compare_command",
        "Compare two judge versions on the same labelled answers, paired."),
    "crowd": ("judgelab.cli.crowd:crowd",
        "Crowd studies: a study link for Prolific, MTurk or others, and its participants."),
    "db": ("judgelab.cli.db:db",
        "The project database as a whole: copy a project to another database (DuckDB or PostgreSQL)."),
    "demo": ("judgelab.cli.serve:demo",
        "Build a fresh demo database from the bundled examples and start the app on it."),
    "design": ("judgelab.cli.design:design",
        "Plan the hand-label sample: strata, allocation, precision, hours; --apply assigns it."),
    "disagreements": ("judgelab.cli.loop:disagreements_command",
        "The answers where a judge run and the people part most, and its confusion matrices."),
    "estimate": ("judgelab.cli.probe:estimate_command",
        "Preview a probe's calls, tokens and cost at list and batch price."),
    "examples": ("judgelab.cli.examples:examples",
        "Write the bundled examples (rubric, answers, pairs, judge spec) into a folder."),
    "export": ("judgelab.cli.data:export",
        "Export one kind in the file schema ``judgelab import`` reads (the rubric as TOML, the designs as JSON)."),
    "formats": ("judgelab.cli.calibrate:formats_command",
        "Format diagnostics of a judge run."),
    "gold": ("judgelab.cli.gold:gold",
        "Gold items and attention checks: import them, set how they are mixed in, export their labels."),
    "import": ("judgelab.cli.data:import_",
        "Import a rubric (TOML), answers, pairs, labels, pair_labels, audits, judgements, verdicts or designs (JSON)."),
    "init": ("judgelab.cli.data:init",
        "Create the project database (or bring an existing one up to date)."),
    "mock-api": ("judgelab.cli.probe:mock_api_command",
        "Serve a local Anthropic- and OpenAI-compatible API backed by the fake judge, for dry runs."),
    "panel": ("judgelab.cli.panel:panel_command",
        "Read a panel of judges against the same human labels."),
    "position": ("judgelab.cli.position:position",
        "Consistency, first-shown advantage and accuracy against gold of a run's pairwise judgements."),
    "probe": ("judgelab.cli.probe:probe_command",
        "Run the probes: judge each pair in both orders across the chosen biases."),
    "raters": ("judgelab.cli.raters:raters",
        "Invite, list and revoke raters; their quality on gold items; pause and resume them."),
    "report": ("judgelab.cli.probe:report_command",
        "Render the report card from an evidence file."),
    "score": ("judgelab.cli.score:score_command",
        "Score every answer of a set with the judge, once per format, as a judge run."),
    "screen": ("judgelab.cli.screen:screen_command",
        "Ask the judge whether each answer reveals which model or company wrote it; withhold those it flags."),
    "serve": ("judgelab.cli.serve:serve",
        "Start the rater app on the project database."),
    "winrate": ("judgelab.cli.winrate:winrate",
        "Win rate of each model against another, as AlpacaEval reports it, from pairwise judgements."),
}


class LazyGroup(JudgelabGroup):
    """A group whose subcommands are imported on first use (click's documented lazy-loading pattern)."""

    def __init__(self, *args: Any, lazy_subcommands: dict[str, tuple[str, str]] | None = None,
                 **kwargs: Any) -> None:
        """Take ``lazy_subcommands``: name -> (``module:attribute``, one-line help)."""
        super().__init__(*args, **kwargs)
        self.lazy_subcommands = dict(lazy_subcommands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every verb name, sorted, without importing any."""
        return sorted({*super().list_commands(ctx), *self.lazy_subcommands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The verb ``cmd_name``, importing its module now if it is a lazy one."""
        if cmd_name in self.lazy_subcommands:
            return self._load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def _load(self, cmd_name: str) -> click.Command:
        path, _ = self.lazy_subcommands[cmd_name]
        module_name, attribute = path.split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{path} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The ``Commands:`` list of ``--help`` from the stored one-line helps (no verb is imported)."""
        names = self.list_commands(ctx)
        if not names:
            return
        # Click's own layout: each help cut to the width left beside the longest name.
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in self.lazy_subcommands:
                # A stand-in command cuts the stored line exactly as the real one would be cut.
                stand_in = click.Command(name, help=self.lazy_subcommands[name][1])
                rows.append((name, stand_in.get_short_help_str(limit)))
            elif not (command := self.commands[name]).hidden:
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, lazy_subcommands=VERBS)
@click.version_option(__version__, prog_name="judgelab")
def main() -> None:
    """judgelab: instrument an LLM judge before anyone trusts it."""
    # Every admin action a command does goes into the audit trail as this OS user's (judgelab.labeler._actor).
    click.get_current_context().with_resource(acting_as(f"cli:{os_user()}"))
