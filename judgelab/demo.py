"""The demo: a fresh database where every page has something real to show.

The bundled data, a demo rater and admin, simulated labels and a fake-judge run.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from judgelab.labeler.errors import InputError
from judgelab.labeler.examples import example_path
from judgelab.labeler.importers import import_file
from judgelab.labeler.simulate import add_simulated_labels
from judgelab.labeler.store import JudgeRole, Store, remove_database

#: How many tickets the demo rater gets (both answers of each), so a newcomer can finish.
DEMO_TICKETS = 12
#: Tickets whose two answers the demo rater compares side by side, and how many padded
#: rewrites (made offline, deterministically) the demo rater audits.
DEMO_PAIRS = 6
DEMO_AUDITS = 5
#: Tickets whose answers the simulated raters label: a sample, so the judge's scores on
#: the rest of the pool carry information (prediction-powered estimates need that).
DEMO_LABELLED_TICKETS = 44
#: The fake judge's family and its injected preference for that family's style (Likert points).
DEMO_JUDGE_FAMILY = "claude"
DEMO_SELF_STYLE = 0.5


@dataclass(frozen=True)
class DemoResult:
    """What :func:`build_demo` made."""

    rater_url: str
    admin_url: str
    summary_lines: list[str] = field(default_factory=list)


def run_demo_judge(
    store: JudgeRole, truth: pd.DataFrame, *, seed: int = 0, family_style: Mapping[str, float] | None = None,
    leniency: Mapping[str, float] | None = None, model: str = "fake-judge",
) -> str:
    """Score the whole pool with a fake judge that leans towards its own family's style.

    Args:
        store: The demo's store.
        truth: The bundled quality of each answer.
        seed: The fake judge's seed.
        family_style: Likert points the judge adds to each family's answers (default: a
            :data:`DEMO_SELF_STYLE` lean to its own family); another judge version, e.g. one
            another lean, for the judge loop's examples and tests.
        leniency: Likert points added to each named family's answers before the noise (a
            planted leniency the judge loop's disagreements and compare should find).
        model: The judge's model name; another version needs another name, since the runner
            reuses cached replies of identical calls.

    Returns the judge run id.
    """
    from judgelab.calibration.judges import FakeJudge
    from judgelab.calibration.runner import PlannedCall, run_plan

    rubric = store.rubric()
    if rubric is None:
        raise InputError("the demo needs a rubric",
                         fix="import the bundled rubric.toml first (`judgelab examples DIR` writes it).")
    quality = dict(zip(truth["answer_id"], truth["quality"], strict=True))
    answers = store.answers(variant="original")
    tasks = store.tasks().set_index("task_id")["prompt"]
    by_text = {row.text: quality.get(row.answer_id, 3.0) for row in answers.itertuples()}
    families = dict(zip(answers["text"], answers["family"], strict=True))
    lean = dict(leniency or {})
    judge = FakeJudge(
        seed=seed,
        family=DEMO_JUDGE_FAMILY,
        model=model,
        noise=0.5,
        # The demo's judge "knows" the bundled quality labels, then adds its own-family lean.
        # A planted leniency lifts the quality the judge reads (the top of the scale stays the top).
        quality_of=lambda text: min(1.0, (by_text.get(text, 3.0) - 1 + lean.get(str(families.get(text)), 0.0)) / 4),
        style_of=lambda text: families.get(text),
        family_style=dict(family_style) if family_style is not None else {DEMO_JUDGE_FAMILY: DEMO_SELF_STYLE},
    )
    plan = [
        PlannedCall(
            call_id=f"pool:{row.answer_id}",
            kind="pointwise",
            format="likert5",
            prompt=str(tasks[row.task_id]),
            answer=str(row.text),
            probe="pool",
            arm="original",
            task_id=str(row.task_id),
            answer_id=str(row.answer_id),
        )
        for row in answers.itertuples()
    ]
    summary = run_plan(plan, judge, store, rubric=rubric, judge_kind="fake", progress=False)
    return summary.run_id


def _demo_pairs_and_audits(store: Store, answers: pd.DataFrame, rater_id: int) -> list[str]:
    """Give the demo rater cross-family pairs and padding audits of offline-padded answers."""
    from judgelab.admin import family_pairs
    from judgelab.calibration import perturb
    from judgelab.labeler.models import Answer

    tasks = sorted(answers["task_id"].unique())
    pair_tasks = tasks[DEMO_TICKETS : DEMO_TICKETS + DEMO_PAIRS]
    families = sorted(answers["family"].unique())
    pairs = family_pairs(answers[answers["task_id"].isin(pair_tasks)], families[0], families[1])
    lines = [f"demo-rater pairs: {store.assign_pairs(pairs, [rater_id], seed=0)}"]
    audit_tasks = tasks[DEMO_TICKETS + DEMO_PAIRS : DEMO_TICKETS + DEMO_PAIRS + DEMO_AUDITS]
    padded = []
    for row in answers[answers["task_id"].isin(audit_tasks)].groupby("task_id").head(1).itertuples():
        result = perturb.pad(str(row.text))
        padded.append(
            Answer(
                answer_id=f"{row.answer_id}~padded",
                task_id=str(row.task_id),
                family=str(row.family),
                model=str(row.model),
                text=result.text,
                variant="padded",
                parent_answer_id=str(row.answer_id),
            )
        )
    store.add_pool([], padded, source_file="demo padding (offline)")
    audits = [(a.parent_answer_id, a.answer_id) for a in padded if a.parent_answer_id]
    lines.append(f"demo-rater padding audits: {store.assign_audits(audits, [rater_id], seed=0)}")
    return lines


def tasks_of(truth: pd.DataFrame) -> pd.Series:
    """The task id of each bundled answer id (``T001-a`` -> ``T001``)."""
    return truth["answer_id"].str.rsplit("-", n=1).str[0]


def build_demo(store: Store, *, base_url: str = "http://localhost:8501") -> DemoResult:
    """Load the bundled data, invite a demo rater and admin, and give the analyst pages data.

    Adds: the demo rater's queue (both answers of the first :data:`DEMO_TICKETS` tickets),
    simulated labels from four simulated raters (marked simulated everywhere), and a
    fake-judge run over the whole pool with a known lean towards its own family.
    """
    from judgelab.admin import invite_link

    lines = []
    for kind, name in (("rubric", "rubric.toml"), ("answers", "answers.jsonl"), ("pairs", "pairs.jsonl")):
        lines.append(f"{name}: {import_file(store, kind, example_path(name))}")  # type: ignore[arg-type]
    rater, rater_token = store.add_rater("demo-rater")
    _, admin_token = store.add_rater("demo-admin", role="admin")
    answers = store.answers(variant="original")
    first = sorted(answers["task_id"].unique())[:DEMO_TICKETS]
    mine = answers[answers["task_id"].isin(first)]["answer_id"].tolist()
    lines.append(f"demo-rater queue: {store.assign_k(mine, 1, [rater.rater_id], seed=0)}")
    lines += _demo_pairs_and_audits(store, answers, rater.rater_id)
    truth = pd.read_csv(example_path("truth.csv"))
    labelled = pd.Series(tasks_of(truth)).drop_duplicates().sample(
        n=DEMO_LABELLED_TICKETS, random_state=0
    )
    sample = truth[tasks_of(truth).isin(labelled)]
    lines.append(f"simulated labels on {DEMO_LABELLED_TICKETS} of 70 tickets: {add_simulated_labels(store, sample)}")
    run_id = run_demo_judge(store, truth)
    lines.append(f"fake judge run {run_id}: {len(answers)} answers scored (likert5)")
    return DemoResult(
        rater_url=invite_link(rater_token, base_url),
        admin_url=invite_link(admin_token, base_url),
        summary_lines=lines,
    )


def build_demo_file(path: Path, *, base_url: str, remove_folder: Path | None = None) -> DemoResult:
    """:func:`build_demo` into a new database at ``path``; a build that fails leaves nothing behind.

    On any failure (an error, Ctrl+C) the database and every file it made beside it (write-ahead
    log, lock files, the judge's journals) are removed, and so is ``remove_folder`` (a temporary
    folder made for it), before the error goes on: a half-built demo must not be mistaken for one.

    Args:
        path: Where the database goes; it must not exist yet.
        base_url: The app's address, for the printed links.
        remove_folder: A folder made only for this demo, removed whole on failure.
    """
    if path.exists():
        raise InputError(f"{path} already exists", fix="give a new --db path, or leave --db out for a temporary one.")
    journals = path.with_name(path.name + ".journal")
    had_journals = journals.exists()
    try:
        return build_demo(Store(path), base_url=base_url)
    except BaseException:
        remove_database(path)
        if not had_journals:
            shutil.rmtree(journals, ignore_errors=True)
        if remove_folder is not None:
            shutil.rmtree(remove_folder, ignore_errors=True)
        raise
