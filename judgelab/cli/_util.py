"""Shared pieces of the ``judgelab`` command line: the ``--db`` option and error handling."""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

import click

from judgelab.labeler.errors import InputError, JudgelabError

F = TypeVar("F", bound=Callable[..., Any])


def db_option(func: F) -> F:
    """``--db PATH`` for a verb that reads a project: the database must exist already.

    Without this check a mistyped path (or a forgotten ``--db``) would open a new, empty
    database and the verb would report nothing, or export an empty file, as if that were so.
    """
    return _db_option(func, must_exist=True)


def new_db_option(func: F) -> F:
    """``--db PATH`` for a verb that may start a project (init, import, probe, ...): created if absent."""
    return _db_option(func, must_exist=False)


def _db_option(func: F, *, must_exist: bool) -> F:
    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        # Imported here: the store pulls in DuckDB and pandas, which `judgelab --help` never needs.
        from judgelab.labeler.store import is_postgres, resolve_db_path

        if is_postgres(value or os.environ.get("JUDGELAB_DB")):
            return value  # a server's database: the store says if it cannot be reached
        path = resolve_db_path(value)
        if must_exist and not path.exists():
            raise InputError(
                f"there is no project database at {path}",
                fix="pass --db FILE (or set JUDGELAB_DB) to the project's database, or start one with "
                    "`judgelab init` (or `judgelab demo`).",
            )
        return value

    return click.option(
        "--db",
        "db",
        type=click.Path(dir_okay=False),
        default=None,
        callback=check,
        help="Project database file, or a postgresql:// URL [default: $JUDGELAB_DB or ./judgelab.duckdb].",
    )(func)


def png_option(help_text: str) -> Callable[[F], F]:
    """``--png FILE``, refused at once when the PNG renderer (the ``png`` extra) is not installed.

    Checked while the options are read, so a missing renderer costs no run and no waiting.
    """

    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is not None:
            from judgelab.calibration.png import png_renderer

            png_renderer()
        return value

    def decorate(func: F) -> F:
        return click.option("--png", "png", type=click.Path(dir_okay=False), default=None, callback=check,
                            help=f"{help_text} Needs the png extra (pip install 'judgelab[png]').")(func)

    return decorate


#: The one help of ``--json``, the same on every command.
JSON_HELP = "Print the result as one JSON document on stdout; messages and progress go to stderr."


def json_option(func: F) -> F:
    """``--json``: the result as one JSON document on stdout, every other line on stderr.

    Every command takes it (a test walks them all), so a script reads any command's stdout with
    one ``json.loads``. Errors stay one line on stderr and exit code 2, as without ``--json``.
    """
    return click.option("--json", "as_json", is_flag=True, help=JSON_HELP)(func)


#: The one help of ``--quiet``, on every command that shows a progress bar.
QUIET_HELP = "No progress bar (there is none either when stderr is not a terminal)."


def quiet_option(func: F) -> F:
    """``--quiet``/``-q``: no progress bar on a command that shows one."""
    return click.option("--quiet", "-q", "quiet", is_flag=True, help=QUIET_HELP)(func)


def echo_json(payload: Any) -> None:
    """Print ``payload`` as indented JSON (NaN becomes null)."""
    click.echo(json.dumps(payload, indent=2, default=str, allow_nan=False))


def say(text: str, *, as_json: bool) -> None:
    """A line for people: on stdout, or on stderr when stdout carries the ``--json`` document."""
    click.echo(text, err=as_json)


class JudgelabGroup(click.Group):
    """A click group that turns library and database errors into a readable message and exit code 2.

    The store already says read-only files and full disks in words
    (:class:`~judgelab.labeler.errors.StoreError`); any other DuckDB error (a corrupt file, an I/O error
    mid-command) still reaches the user as its message and what to do, not a traceback.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            # Ctrl-C before a run began (start-up) or outside one: 130, as during a run, never
            # click's "Aborted!" and exit 1.
            interrupted_exit()
        except JudgelabError as exc:
            click.echo(f"judgelab: error: {exc}", err=True)
            sys.exit(2)
        except Exception as exc:
            # duckdb is named only once it is loaded: --help and --version must not import it.
            duckdb = sys.modules.get("duckdb")
            if duckdb is None or not isinstance(exc, duckdb.Error):
                if isinstance(exc, OSError):
                    _os_error(exc)
                raise
            click.echo(f"judgelab: error: the database failed: {exc}\n{_DB_FIX}", err=True)
            sys.exit(2)


#: The exit code of a command stopped by Ctrl-C (``judgelab.calibration.runner.EXIT_CODES["interrupted"]``).
INTERRUPTED = 130


def interrupted_exit(summary: str | None = None) -> NoReturn:
    """Say that Ctrl-C stopped the command, after the run's ``summary`` when there is one; exit 130."""
    if summary:
        click.echo(summary)
    click.echo("\ninterrupted: the replies received so far are saved. Run the same command again "
               "to continue where it stopped.", err=True)
    sys.exit(INTERRUPTED)


@contextmanager
def finishing() -> Iterator[None]:
    """Print a finished run's summary whole even if Ctrl-C comes meanwhile; then, if it came, exit 130.

    The run is over and saved: a Ctrl-C while its summary prints is honoured (exit 130) once the
    summary is out, rather than cutting it short with click's "Aborted!" and exit 1.
    """
    caught: list[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    except ValueError:  # not the main thread (an embedding caller): nothing to defer
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        interrupted_exit()


def _os_error(exc: OSError) -> None:
    """A full disk or a folder judgelab may not write, as words and exit code 2 (else nothing)."""
    if exc.errno in (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT):
        click.echo(f"judgelab: error: {exc.strerror or exc}: {exc.filename or ''}\n"
                   "Fix: free space, or write to a folder you may write (pass another path).", err=True)
        sys.exit(2)


#: What to do about a database error the store does not name itself.
_DB_FIX = ("Fix: changes of the failed command were rolled back. Check the disk (free space, permissions), "
           "then run it again; if the file itself is damaged, restore it from a copy or an export.")
