"""Fixtures for the rater app: a small blinded pool in a tmp_path database.

Family, model and variant names are distinctive strings so that tests can search
everything a page produced for them (and fail if one ever leaks).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from judgelab.labeler.models import Answer, Criterion, Rubric, Task
from judgelab.labeler.store import Rater, Store

#: Strings that must never reach a rater's browser.
FAMILIES = ("zorblaxfam", "quintarafam")
MODELS = {"zorblaxfam": "zorblax-model-9", "quintarafam": "quintara-model-3"}
SECRET_VARIANT = "paddedvariantx"

SCRIPT_TEXT = "Try this: <script>alert(1)</script> and <b>x</b> then restart."

RUBRIC = Rubric(
    rubric_id="support",
    version=1,
    name="Support reply quality",
    scale="likert5",
    pass_rule="overall >= 4",
    pass_threshold=4.0,
    instructions="Score the reply as the customer would experience it.",
    criteria=(
        Criterion("correct", "Correct", "Every factual claim and step is right."),
        Criterion("complete", "Complete", "Answers everything the customer asked."),
        Criterion("tone", "Tone", "Polite and plain."),
    ),
)


@dataclass(frozen=True)
class Pool:
    """What :func:`build_pool` stored."""

    store: Store
    #: The database file, or the PostgreSQL URL (a both_backends test's PostgreSQL run).
    path: Path | str
    tasks: list[str]
    originals: list[str]
    padded: list[tuple[str, str]]

    def secrets(self) -> list[str]:
        """Every family, model and variant string in the pool (what must never leak)."""
        return [*FAMILIES, *MODELS.values(), SECRET_VARIANT]


def build_pool(path: Path | str, *, n_tasks: int = 6) -> Pool:
    """A pool of ``n_tasks`` tasks, one answer per family each, plus padded rewrites.

    Answer ids embed family names on purpose (users' ids often do), so a test that
    finds no family string in a page also shows answer ids never reached it.
    """
    store = Store(path)
    store.add_rubric(RUBRIC)
    tasks = [
        Task(f"t{i:02d}", f"Ticket {i}: my router keeps dropping the connection (case {i}).")
        for i in range(n_tasks)
    ]
    answers: list[Answer] = []
    originals: list[str] = []
    padded: list[tuple[str, str]] = []
    for i, task in enumerate(tasks):
        for fam in FAMILIES:
            aid = f"{fam}-{task.task_id}"
            text = f"Answer to case {i}: restart the router, then update its firmware."
            if i == 0 and fam == FAMILIES[0]:
                text = SCRIPT_TEXT
            answers.append(Answer(aid, task.task_id, fam, MODELS[fam], text))
            originals.append(aid)
        pad_id = f"{FAMILIES[0]}-{task.task_id}-{SECRET_VARIANT}"
        answers.append(
            Answer(
                pad_id, task.task_id, FAMILIES[0], MODELS[FAMILIES[0]],
                f"Answer to case {i}: restart the router, then update its firmware. "
                "Many customers find that restarting helps, and keeping firmware current "
                "is generally a good idea for a wide range of reasons.",
                variant=SECRET_VARIANT, parent_answer_id=f"{FAMILIES[0]}-{task.task_id}",
            )
        )
        padded.append((f"{FAMILIES[0]}-{task.task_id}", pad_id))
    store.add_pool(tasks, answers)
    return Pool(store, path, [t.task_id for t in tasks], originals, padded)


@pytest.fixture
def pool(tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> Pool:
    """A fresh pool database under ``tmp_path`` (or on PostgreSQL, for a both_backends test's run there)."""
    return build_pool(request.getfixturevalue("db") if backend == "postgres" else tmp_path / "pool.duckdb")


@pytest.fixture
def rater(pool: Pool) -> tuple[Rater, str]:
    """One rater and their invite token."""
    return pool.store.add_rater("alice")
