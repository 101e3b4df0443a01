"""What the probes judge: the bundled ``sample`` pairs, a user's pairs file, or the project pool.

Pair-based probes (position, pairwise padding/truncation, decoration, byline) take pairs in the
judge-probe format: ``prompt, answer_a, answer_b`` with optional ``id`` and ``gold``, from a
``.csv`` or ``.jsonl`` file, or the bundled ``sample`` (``pairs.jsonl`` of :mod:`judgelab.labeler.examples`:
similar-quality answer pairs on technical questions, so a fair judge lands near 50/50 and any systematic
preference is bias).

``project`` takes the project's own data instead: the pairs imported with ``judgelab import
pairs``, or, when there are none, pairs made of two original answers to one task (the
project's answers); pair-based probes then judge them under the project's rubric.

Pool-based probes (pointwise padding/truncation, the format study) score single answers. They
take the original answers in the project database when it has any, else the answers of the
pairs (both sides of each pair).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgelab.labeler.errors import InputError
from judgelab.labeler.examples import example_path
from judgelab.labeler.importers import parse_pairs, read_rows
from judgelab.labeler.models import Criterion, Pair, Rubric
from judgelab.labeler.store.roles import PoolView

__all__ = [
    "DATASET_SUFFIXES",
    "PROBE_RUBRIC",
    "PROJECT",
    "SAMPLE",
    "PoolAnswer",
    "choose",
    "load_pairs",
    "pool_from_pairs",
    "pool_from_store",
    "project_pairs",
    "sample_path",
]

SAMPLE = "sample"
"""The ``--dataset`` value naming the bundled pairs."""

PROJECT = "project"
"""The ``--dataset`` value naming the project's own pairs (or answers) in the database."""

DATASET_SUFFIXES = (".csv", ".jsonl", ".json", ".parquet")

PROBE_RUBRIC = Rubric(
    rubric_id="judgelab-probe",
    version=1,
    name="Answer quality (probe rubric)",
    scale="likert5",
    pass_rule="An overall score of 4 or 5 passes.",
    pass_threshold=4.0,
    instructions=(
        "Judge how well the answer serves the person who asked. Judge the content, not the "
        "presentation: length, formatting, tone and citations earn nothing by themselves."
    ),
    criteria=(
        Criterion("helpfulness", "Helpfulness", "Addresses what was asked and lets the reader act."),
        Criterion("correctness", "Correctness", "Every claim and step is accurate."),
        Criterion("completeness", "Completeness", "Covers the steps, caveats and the "
                  "recommendation the question needs."),
        Criterion("clarity", "Clarity", "Easy to follow; nothing the reader must decode."),
    ),
    author_kind="human",
    author="judgelab maintainers",
)
"""The rubric pair-based probes give the judge (the four criteria of seed 001's pointwise
prompt). Probes that use the project pool use the project's own rubric instead."""


def sample_path() -> Path:
    """The bundled ``sample`` pairs file (installed with the package).

    Raises:
        InputError: The installation lost it.
    """
    return example_path("pairs.jsonl")


def load_pairs(dataset: str | Path) -> list[Pair]:
    """Load ``sample`` or a pairs file, validated.

    Args:
        dataset: ``"sample"`` or a path to a ``.csv``/``.jsonl`` file with columns ``prompt,
            answer_a, answer_b`` and optional ``id`` (default ``row<N>``) and ``gold``
            (``A``, ``B`` or ``tie``).

    Returns:
        The pairs, in file order.

    Raises:
        InputError: Naming the file, row and column of the first problem: a missing file or
            column, an empty field, a duplicate id, a bad ``gold``, or another file type.
    """
    if str(dataset) == SAMPLE:
        path = sample_path()
    else:
        path = Path(dataset)
        if path.suffix.lower() not in DATASET_SUFFIXES:
            raise InputError(
                f"unsupported dataset type {path.suffix or '(none)'!r}",
                file=str(path),
                fix="use 'sample', or a .csv, .jsonl, .json (array) or .parquet file with columns prompt, answer_a, "
                "answer_b (optional id, gold).",
            )
    return parse_pairs(read_rows(path))


def project_pairs(store: PoolView) -> list[Pair]:
    """The project's own pairs: those imported (``judgelab import pairs``), else made of its answers.

    Without imported pairs, each task with two or more original answers gives one pair: its
    first two answers by family then id, so that two families meet where the task has them
    (id ``<task id>``, answer a the first). Gold is unknown for those.

    Raises:
        InputError: If the database holds neither pairs nor a task with two original answers.
    """
    stored = store.pairs()
    if not stored.empty:
        return [Pair(str(r.pair_id), str(r.prompt), str(r.answer_a), str(r.answer_b),
                     None if r.gold is None or (isinstance(r.gold, float) and r.gold != r.gold) else str(r.gold))
                for r in stored.itertuples(index=False)]
    answers = store.answers(variant="original")
    out: list[Pair] = []
    if not answers.empty:
        prompts = dict(zip(store.tasks()["task_id"], store.tasks()["prompt"], strict=True))
        for task_id, grp in answers.sort_values(["task_id", "family", "answer_id"]).groupby("task_id", sort=True):
            picked = _two_families(grp)
            if picked is not None:
                out.append(Pair(str(task_id), str(prompts[task_id]), picked[0], picked[1]))
    if not out:
        raise InputError(
            "the project database holds no pairs and no task with two answers",
            fix="import pairs (`judgelab import pairs FILE`) or answers from two models (`judgelab import answers "
            "FILE`), or pass --dataset sample or a pairs file.",
        )
    return out


def _two_families(grp: Any) -> tuple[str, str] | None:
    """The texts of a task's first answer and its first answer from another family (else its second)."""
    if len(grp) < 2:
        return None
    first = grp.iloc[0]
    others = grp[grp["family"] != first["family"]]
    second = others.iloc[0] if not others.empty else grp.iloc[1]
    return str(first["text"]), str(second["text"])


def choose(pairs: list[Pair], n: int, *, seed: int = 0) -> list[Pair]:
    """``n`` pairs in a seeded random order (all of them when ``n`` is larger).

    A pair is never repeated to reach ``n``: a second judgement of an identical request is a
    cache hit, not new evidence, and repeating it would only narrow the intervals falsely.

    Raises:
        InputError: If ``n < 1`` or there are no pairs.
    """
    if n < 1:
        raise InputError(f"--n must be at least 1; got {n}", fix="pass --n 20, say.")
    if not pairs:
        raise InputError("the dataset has no pairs", fix="add rows to the file.")
    order = list(pairs)
    random.Random(seed).shuffle(order)
    return order[:n]


@dataclass(frozen=True)
class PoolAnswer:
    """One answer a pool-based probe scores on its own.

    Attributes:
        answer_id: The answer's id (a project answer id, or ``<pair id>:a`` / ``:b``).
        task_id: Its task (or pair) id.
        prompt: The task prompt.
        text: The answer text.
        family: The model family that wrote it (``"unknown"`` for dataset pairs).
        model: The model that wrote it.
        from_store: Whether it is an answer stored in the project database.
        transcript: The conversation it is, as stored (``Transcript.to_json``), when it is one.
    """

    answer_id: str
    task_id: str
    prompt: str
    text: str
    family: str = "unknown"
    model: str = "unknown"
    from_store: bool = False
    transcript: str | None = None


def pool_from_pairs(pairs: list[Pair]) -> list[PoolAnswer]:
    """Both answers of each pair as pool answers."""
    out = []
    for p in pairs:
        out.append(PoolAnswer(f"{p.pair_id}:a", p.pair_id, p.prompt, p.answer_a))
        out.append(PoolAnswer(f"{p.pair_id}:b", p.pair_id, p.prompt, p.answer_b))
    return out


def pool_from_store(store: PoolView, n: int, *, seed: int = 0) -> list[PoolAnswer]:
    """Up to ``n`` original answers from the project database, in a seeded random order.

    Returns:
        The answers (empty when the database holds no original answers).
    """
    frame = store.answers(variant="original")
    if frame.empty:
        return []
    tasks = store.tasks()
    prompts = dict(zip(tasks["task_id"], tasks["prompt"], strict=True))
    rows = list(frame.itertuples(index=False))
    random.Random(seed).shuffle(rows)
    return [
        PoolAnswer(
            answer_id=str(r.answer_id),
            task_id=str(r.task_id),
            prompt=str(prompts[r.task_id]),
            text=str(r.text),
            family=str(r.family),
            model=str(r.model),
            from_store=True,
        )
        for r in rows[:n]
    ]
