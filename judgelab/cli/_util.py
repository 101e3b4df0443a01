"""Shared pieces of the ``judgelab`` command line: the ``--db`` option and error handling."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from labeler.errors import JudgelabError

F = TypeVar("F", bound=Callable[..., Any])


def db_option(func: F) -> F:
    """``--db PATH``: the project database (else ``$JUDGELAB_DB``, else ``./judgelab.duckdb``)."""
    return click.option(
        "--db",
        "db",
        type=click.Path(dir_okay=False),
        default=None,
        help="Project database file [default: $JUDGELAB_DB or ./judgelab.duckdb].",
    )(func)


def json_option(func: F) -> F:
    """``--json``: print the result as JSON on stdout instead of a table."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(func)


def echo_json(payload: Any) -> None:
    """Print ``payload`` as indented JSON (NaN becomes null)."""
    click.echo(json.dumps(payload, indent=2, default=str, allow_nan=False))


class JudgelabGroup(click.Group):
    """A click group that turns library errors into one readable line and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except JudgelabError as exc:
            click.echo(f"judgelab: error: {exc}", err=True)
            sys.exit(2)
