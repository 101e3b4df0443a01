"""Fixtures for the reliability tests: pools of any size, raters, and subprocess workers.

Family, model and variant names are distinctive strings, so a test can search any file
or byte stream for them and fail if one ever leaks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from judgelab.labeler.models import Answer, Criterion, Rubric, Task
from judgelab.labeler.store import Rater, Store
from tests.reliability._worker import TOKENS_ENV

REPO = Path(__file__).resolve().parents[2]

FAMILIES = ("vexillofam", "parthenofam")
MODELS = {"vexillofam": "vexillo-model-7", "parthenofam": "partheno-model-2"}

RUBRIC = Rubric(
    rubric_id="rel",
    version=1,
    name="Reliability rubric",
    scale="likert5",
    pass_rule="overall >= 4",
    pass_threshold=4.0,
    criteria=(
        Criterion("correct", "Correct", "Every claim is right."),
        Criterion("complete", "Complete", "Answers everything asked."),
    ),
)


@dataclass(frozen=True)
class Pool:
    """What :func:`build_pool` stored."""

    store: Store
    #: The database file, or the PostgreSQL URL (a both_backends test's PostgreSQL run).
    path: Path | str
    answer_ids: list[str]


def build_pool(path: Path | str, *, n_tasks: int, per_task: int = 2) -> Pool:
    """``n_tasks`` tasks with ``per_task`` original answers each, alternating families."""
    store = Store(path)
    store.add_rubric(RUBRIC)
    tasks = [Task(f"t{i:05d}", f"Ticket {i}: the printer prints blank pages.") for i in range(n_tasks)]
    answers = []
    for i, task in enumerate(tasks):
        for j in range(per_task):
            fam = FAMILIES[j % len(FAMILIES)]
            answers.append(
                Answer(
                    f"{fam}-{task.task_id}-{j}", task.task_id, fam, MODELS[fam],
                    f"Answer {j} to ticket {i}: clean the print head, then print a test page.",
                )
            )
    store.add_pool(tasks, answers)
    return Pool(store, path, [a.answer_id for a in answers])


def add_raters(store: Store, n: int, *, prefix: str = "rater") -> list[tuple[Rater, str]]:
    """``n`` raters and their invite tokens."""
    return [store.add_rater(f"{prefix}-{i:03d}") for i in range(n)]


def worker(args: Sequence[str], *, tokens: Sequence[str] = (), **popen: object) -> subprocess.Popen[str]:
    """Start ``python -m tests.reliability._worker ARGS`` from the repository root.

    ``tokens`` (the raters a ``label`` worker labels for) travel in the environment.
    """
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", TOKENS_ENV: ",".join(tokens)}
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "tests.reliability._worker", *args],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen,
    )


class Lines:
    """Collects a child's stdout lines on a thread, so a test can wait for some and then kill it."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._done = False
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._done = True
            self._cond.notify_all()

    def wait_for(self, count: int, prefix: str, *, timeout: float = 120.0) -> list[str]:
        """Block until ``count`` lines starting with ``prefix`` arrived (or the child ended)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [x for x in self.lines if x.startswith(prefix)]
                if len(found) >= count or self._done:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"waited {timeout:g} s for {count} {prefix!r} lines; got {len(found)}")
                self._cond.wait(left)

    def finish(self, timeout: float = 30.0) -> list[str]:
        """Every line the child wrote, after it has exited."""
        self.proc.wait(timeout)
        self._thread.join(timeout)
        with self._cond:
            return list(self.lines)
