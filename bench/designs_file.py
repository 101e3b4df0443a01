"""How long ``judgelab export/import designs`` take on a large active design.

Run: ``python bench/designs_file.py`` (well under a minute; ``--tasks`` and ``--batches`` set the
size). A pool of ``--tasks`` tasks x 2 families is stored in a fresh database under
``--workdir``; a ``designs`` file with one active design of ``--batches`` batches (each batch
holds every pool answer's draw, as ``active_draws`` does, and an ordinary design with the drawn
answers) is written, imported (one transaction), imported again (nothing changes), and exported.
Figures: the file's size, wall time of each step. Printed, not asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._measure import WORKDIR, machine
from judgelab.labeler.exports import designs_json
from judgelab.labeler.importers import import_file
from judgelab.labeler.models import Answer, Task
from judgelab.labeler.store import Store


def designs_doc(answer_ids: list[str], batches: int, seed: int = 0) -> dict[str, Any]:
    """An active design of ``batches`` batches over ``answer_ids``, as ``judgelab export designs`` writes it."""
    gen = np.random.default_rng(seed)
    designs, active = [], []
    for b in range(1, batches + 1):
        prob = gen.uniform(0.01, 1, len(answer_ids))
        drawn = gen.random(len(answer_ids)) < prob
        draw_id = f"act-b{b}"
        designs.append({
            "design_id": draw_id, "params": {"active": "act", "batch": b, "kind": "active batch"},
            "summary": {"batch": b}, "created_at": f"2026-12-01 10:00:{b:02d}", "applied_at": None,
            "items": [{"answer_id": a, "stratum": f"active batch {b}", "inclusion_prob": float(p),
                       "weight": 1 / float(p), "n_raters": 1}
                      for a, p, d in zip(answer_ids, prob, drawn, strict=True) if d],
        })
        active.append({
            "batch": b, "draw_id": draw_id, "weight": 40.0 * b, "expected_labels": 40.0 * b,
            "summary": {"floor": 0.1}, "created_at": None,
            "draws": [{"answer_id": a, "unit": a, "inclusion_prob": float(p), "known": False, "drawn": bool(d),
                       "pred_pass": 0.5, "pred_score": None, "judge_pass": 1.0, "judge_score": 4.0,
                       "flipped": False} for a, p, d in zip(answer_ids, prob, drawn, strict=True)],
        })
    return {"designs": designs,
            "active_designs": [{"design_id": "act", "params": {"target_half_width": 5.0}, "created_at": None,
                                "batches": active}]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=4000, help="tasks; two answers each (default 4000)")
    parser.add_argument("--batches", type=int, default=10, help="batches of the active design (default 10)")
    parser.add_argument("--workdir", default=WORKDIR)
    args = parser.parse_args()
    folder = Path(args.workdir)
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "designs_bench.duckdb"
    db.unlink(missing_ok=True)
    store = Store(db)
    tasks = [Task(task_id=f"T{i:06d}", prompt="p", category="c") for i in range(args.tasks)]
    answers = [Answer(answer_id=f"T{i:06d}-{f}", task_id=f"T{i:06d}", family=f, model=f"{f}-1", text="word " * 50)
               for i in range(args.tasks) for f in ("own", "other")]
    store.add_pool(tasks, answers)
    path = folder / "designs_bench.json"
    path.write_text(json.dumps(designs_doc([a.answer_id for a in answers], args.batches)))
    print(machine())
    print(f"designs file: {path.stat().st_size / 1e6:.1f} MB, {len(answers) * args.batches:,} draws in "
          f"{args.batches} batches of {len(answers):,} answers")
    for step in ("import", "import again"):
        started = time.perf_counter()
        summary = import_file(store, "designs", path)
        print(f"{step}: {time.perf_counter() - started:.2f} s ({summary})")
    started = time.perf_counter()
    text, n = designs_json(store)
    print(f"export: {time.perf_counter() - started:.2f} s ({n} designs, {len(text) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
