"""The judge loop's store side on both back-ends: the split, the looks, the history, the raters' notes."""

from __future__ import annotations

import pytest

from judgelab.calibration.loop import compare_history, compare_runs, disagreements, held_out_summary, stored_split
from judgelab.labeler.models import Answer, ImportedJudgement, ImportedLabel, Task
from judgelab.labeler.store import Store
from tests.test_calibrate import rubric


def _project(store: Store) -> None:
    store.add_rubric(rubric())
    tasks = [Task(f"t{i:02d}", f"Ticket {i}", None) for i in range(30)]
    answers = [Answer(f"{fam}-{i:02d}", f"t{i:02d}", fam, f"{fam}-model", f"Answer {i} by {fam}.")
               for fam in ("claude", "gpt") for i in range(30)]
    store.add_pool(tasks, answers)
    labels, judgements = [], []
    for a in answers:
        i = int(a.answer_id[-2:])
        truth = 1 + i % 5
        for r in range(2):
            labels.append(ImportedLabel(a.answer_id, f"rater{r}", float(truth), truth >= 4, {"correct": float(truth)},
                                        comment=f"note {a.answer_id} {r}"))
        lean = 2.0 if a.family == "gpt" else 0.0
        judgements.append(ImportedJudgement(a.answer_id, "old", min(5.0, truth + lean), None, "likert5",
                                            judge_family="claude"))
        judgements.append(ImportedJudgement(a.answer_id, "new", float(truth), None, "likert5", judge_family="claude"))
    store.add_imported_labels(labels, source="import")
    store.add_imported_judgements(judgements)


@pytest.mark.both_backends
def test_the_split_looks_history_and_notes_are_kept_in_the_project(store: Store) -> None:
    _project(store)
    report = compare_runs(store, "import:old", "import:new", n_resamples=100)
    assert report.comparison.verdict == "B is better"
    split = stored_split(store)
    assert split is not None and split.counts() == {"tuning": 42, "held-out": 18}
    again = Store(store.location)  # another process's view: the same parts
    assert stored_split(again) == split
    compare_runs(again, "import:old", "import:new", part="held-out", n_resamples=50)
    compare_runs(again, "import:old", "import:new", part="held-out", n_resamples=50)
    assert held_out_summary(store)["looks"] == 2
    assert [h["part"] for h in compare_history(store)] == ["tuning", "held-out", "held-out"]
    notes = store.label_notes(["gpt-03", "claude-04"])
    assert sorted(notes["comment"]) == ["note claude-04 0", "note claude-04 1", "note gpt-03 0", "note gpt-03 1"]
    result = disagreements(store, "import:old")
    top = result.rows.iloc[0]
    assert top["answer_id"].startswith("gpt-") and top["raters"][0]["comment"].startswith("note gpt-")
