"""The ``judgelab`` command line: one module per verb group.

The CLI only parses options and prints; the work is done by library functions in
:mod:`labeler`, :mod:`calibration` and :mod:`judgelab`. Library code raises
:class:`~labeler.errors.JudgelabError`; :class:`~judgelab.cli._util.JudgelabGroup`
turns it into one line on stderr and exit code 2.
"""

from __future__ import annotations

import click

from judgelab.cli import assign, calibrate, data, design, panel, position, probe, raters, score, serve, winrate
from judgelab.cli._util import JudgelabGroup

__all__ = ["main"]


@click.group(cls=JudgelabGroup)
@click.version_option(package_name="judgelab")
def main() -> None:
    """judgelab: instrument an LLM judge before anyone trusts it."""


for _module in (data, raters, assign, serve, probe, score, calibrate, design, position, winrate, panel):
    for _command in _module.COMMANDS:
        main.add_command(_command)
