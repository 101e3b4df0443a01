"""SQuALITY's human evaluation (tests/data/squality) as judgelab files, on the dataset's own scale.

Each response is rated 0-100 by three reviewers; the file also holds each response's mean of the
three. :func:`convert` writes the rubric (a declared ``squality100`` scale), the answers (family =
the system that wrote the summary), the reviewers' labels and the means (``n_raters = 3``).

    python -m tests.scales.squality tests/data/squality/all-responses.head2.jsonl OUT_DIR
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

RUBRIC = """\
id = "squality"
version = 1
name = "SQuALITY overall rating"
pass_rule = "An overall rating of 50 or more passes."
pass_threshold = 50
instructions = "Rate the summary's answer to the question about the story, overall, from 0 to 100."
author = { kind = "human", name = "SQuALITY authors (Wang et al. 2022)" }

[scale]
name = "squality100"
low = 0
high = 100
step = 1
labels = { 0 = "worst", 100 = "best" }

[[criteria]]
id = "overall"
name = "Overall"
description = "Correct, well selected and well written, as SQuALITY's reviewers rated it."
"""


def responses(raw: Path) -> list[dict[str, object]]:
    """One record per rated response: ids, system, text, the three reviews and the file's mean."""
    out: list[dict[str, object]] = []
    for line in raw.read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        for q, systems in doc["questions"].items():
            for system, item in systems.items():
                out.append({
                    "task_id": f"{doc['passage-id']}-q{q}", "answer_id": f"{doc['passage-id']}-q{q}-{system}",
                    "family": system, "text": item["response"],
                    "ratings": {f"reviewer{r['worker_id']}": r["overall-rating"] for r in item["reviews"]},
                    "mean": item["overall"]["overall-rating"],
                })
    return out


def convert(raw: Path, out: Path) -> dict[str, Path]:
    """Write rubric.toml, answers.csv, labels.csv (one row per review) and means.csv into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    items = responses(raw)
    paths = {name: out / name for name in ("rubric.toml", "answers.csv", "labels.csv", "means.csv")}
    paths["rubric.toml"].write_text(RUBRIC)
    with paths["answers.csv"].open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["task_id", "prompt", "answer_id", "family", "model", "text"])
        for it in items:
            prompt = f"SQuALITY story {str(it['task_id']).split('-')[0]}, question {str(it['task_id']).split('-q')[1]}"
            w.writerow([it["task_id"], prompt, it["answer_id"], it["family"], it["family"], it["text"]])
    with paths["labels.csv"].open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rater", "answer_id", "score"])
        for it in items:
            for rater, score in it["ratings"].items():  # type: ignore[attr-defined]
                w.writerow([rater, it["answer_id"], score])
    with paths["means.csv"].open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rater", "answer_id", "score", "n_raters"])
        for it in items:
            w.writerow(["squality-mean", it["answer_id"], repr(it["mean"]), len(it["ratings"])])  # type: ignore[arg-type]
    return paths


if __name__ == "__main__":
    for path in convert(Path(sys.argv[1]), Path(sys.argv[2])).values():
        print(path)
