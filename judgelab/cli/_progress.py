"""The progress bar of a command that can take a while (import, export, calibrate, design, ...).

The same look as a judge run's bar (:func:`judgelab.calibration.runner.progress_bar`: rich, on stderr),
without its calls and money columns. The library reports steps through a plain callable,
``progress(step, done, total)``; only this module knows about rich.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: What library functions take as ``progress``: ``progress(step, done, total)``.
ProgressHook = Callable[[str, int, int], None]


def shows_progress(quiet: bool) -> bool:
    """Whether to draw a bar: not with ``--quiet``, and only when stderr is a terminal."""
    return not quiet and sys.stderr.isatty()


@contextmanager
def progress_bar(quiet: bool, description: str = "") -> Iterator[ProgressHook | None]:
    """A bar on stderr while the block runs, as the hook to hand the library; ``None`` when quiet.

    ``None`` (rather than a hook that draws nothing) lets the library skip even counting.
    """
    if not shows_progress(quiet):
        yield None
        return
    # Imported here: rich is only needed when a bar is drawn.
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("ETA"),
        TimeRemainingColumn(), TimeElapsedColumn(), console=Console(stderr=True), transient=True,
    ) as bar:
        task = bar.add_task(description, total=None)

        def hook(step: str, done: int, total: int) -> None:
            text = f"{description}: {step}" if description else step
            bar.update(task, description=text, completed=done, total=total or None)

        yield hook
