"""`judgelab` subcommands (see :mod:`calibration.cli`)."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
