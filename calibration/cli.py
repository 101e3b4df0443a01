"""The judge-side subcommands of ``judgelab`` (estimate, probe, report, calibrate, formats, design)."""

from __future__ import annotations

import click


def commands() -> list[click.Command]:
    """Every judge-side command, for :func:`labeler.cli.main` to register."""
    from calibration import cli_calibrate, cli_design, cli_probe

    return [*cli_probe.COMMANDS, *cli_calibrate.COMMANDS, *cli_design.COMMANDS]
