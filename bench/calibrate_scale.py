"""``judgelab calibrate`` on 100,000 human labels with 2,000 bootstrap resamples.

Run: ``python bench/calibrate_scale.py`` (the calibration itself is timed in a fresh child
process; building the database the first time takes a few minutes and is kept in
``--workdir`` for later runs).

The database: 50,000 answers from two model families to 25,000 tasks, each labelled by two of
ten simulated raters (100,000 labels, :func:`judgelab.labeler.simulate.simulated_labels` around a
known quality), and one judge run scoring every answer (a
:class:`~judgelab.calibration.judges.FakeJudge` that knows the quality and leans towards its own
family, run through :func:`judgelab.calibration.runner.run_plan` as the demo does). The figure is the
wall time and peak memory of :func:`judgelab.calibration.calibrate.calibrate` plus writing the
markdown, JSON and PNG report, exactly what ``judgelab calibrate --out ... --png ...`` does.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._measure import WORKDIR, built_once, child, emit, machine
from judgelab.labeler.models import Answer, Criterion, Rubric, Task
from judgelab.labeler.simulate import SimulatedRater, simulated_labels
from judgelab.labeler.store import Store

RUBRIC = Rubric(
    rubric_id="bench", version=1, name="Bench rubric", scale="likert5", pass_rule="overall >= 4",
    pass_threshold=4.0,
    criteria=(Criterion("correct", "Correct", "Right."), Criterion("complete", "Complete", "All of it.")),
)
FAMILIES = ("claude", "othermodel")
RATERS = [SimulatedRater(f"sim-{i:02d}", leniency=0.1 * (i - 5), noise=0.6) for i in range(10)]


def build(path: Path, *, labels: int) -> None:
    """Answers, two simulated labels per answer (``labels`` in all) and one judge run."""
    from judgelab.calibration.judges import FakeJudge
    from judgelab.calibration.runner import PlannedCall, run_plan

    store = Store(path)
    store.add_rubric(RUBRIC)
    n_answers = labels // 2
    rng = np.random.default_rng(0)
    quality = rng.integers(1, 6, size=n_answers)
    tasks = [Task(f"t{i:06d}", f"Ticket {i}: I was charged twice this month.") for i in range(n_answers // 2)]
    answers = [
        Answer(f"a{i:06d}", f"t{i // 2:06d}", FAMILIES[i % 2], f"{FAMILIES[i % 2]}-model",
               f"Answer {i}: we refunded the second charge; it shows within {int(quality[i])} days.")
        for i in range(n_answers)
    ]
    store.add_pool(tasks, answers)
    truth = pd.DataFrame({"answer_id": [a.answer_id for a in answers], "quality": quality})
    made = simulated_labels(truth, RUBRIC, raters=RATERS, raters_per_answer=2, rng=0)
    store.add_imported_labels(made, source_file="bench", source="simulated")
    by_text = {a.text: float(q) for a, q in zip(answers, quality, strict=True)}
    family_of = {a.text: a.family for a in answers}
    judge = FakeJudge(
        seed=0, family="claude", model="fake-judge", noise=0.5,
        quality_of=lambda text: (by_text.get(text, 3.0) - 1) / 4,
        style_of=lambda text: family_of.get(text),
        family_style={"claude": 0.3},
    )
    prompts = {t.task_id: t.prompt for t in tasks}
    plan = [
        PlannedCall(call_id=f"pool:{a.answer_id}", kind="pointwise", format="likert5",
                    prompt=prompts[a.task_id], answer=a.text, probe="pool", arm="original",
                    task_id=a.task_id, answer_id=a.answer_id)
        for a in answers
    ]
    run_plan(plan, judge, store, rubric=RUBRIC, judge_kind="fake", progress=False, concurrency=64)


def measure(db: str, resamples: int) -> dict[str, float]:
    from judgelab.calibration.calibrate import calibrate
    from judgelab.calibration.report import write_report

    store = Store(db)
    start = time.perf_counter()
    report = calibrate(store, n_resamples=resamples, seed=0)
    computed = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        write_report(report, Path(tmp, "calibration.md"), png=Path(tmp, "calibration.png"),
                     json_path=Path(tmp, "calibration.json"))
    total = time.perf_counter() - start
    return {"compute_s": computed, "total_s": total, "skipped": len(report.skipped)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--labels", type=int, default=100_000)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--workdir", default=WORKDIR)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        emit(measure(args.db, args.resamples))
        return

    db = Path(args.workdir) / f"calibrate-{args.labels}.duckdb"
    print(f"calibrate · {args.labels:,} labels · {args.resamples:,} bootstrap resamples · {db}")
    print(f"  {machine()}")
    built_once(db, "the database", lambda path: build(path, labels=args.labels))
    fig = child("calibrate_scale.py", ["--db", str(db), "--resamples", str(args.resamples)], timeout=3600)
    print(f"  calibrate: {fig['compute_s']:.1f} s to compute, {fig['total_s']:.1f} s with markdown, "
          f"JSON and PNG written; peak memory {fig['peak_rss_mb']:.0f} MiB; "
          f"{fig['skipped']} section(s) skipped")


if __name__ == "__main__":
    main()
