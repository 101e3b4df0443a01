"""Rater round trip at 100,000 answers and 50 raters: submit -> next item ready.

Run: ``python bench/rater_roundtrip.py`` (about three minutes once the database exists; building
it the first time takes about five more and is kept in ``--workdir`` for later runs).

A round trip is what the server does between a rater pressing Submit and the next answer
being ready to draw, calling what ``judgelab/views/rate.py`` calls in its order: the submit
callback checks the ``?t=`` token (:meth:`~judgelab.labeler.store.Store.authenticate`, once per script
run) and stores the label (:meth:`~judgelab.labeler.store.Store.add_label`), then the fragment's rerun
reads the screen (:meth:`~judgelab.labeler.store.Store.screen`: queue, item, open event and blinded
view in one unit of work). Streamlit's own rendering and the network are not included.

The pool: 100,000 answers to 50,000 tasks, each assigned to one of 50 raters (2,000 each)
with :meth:`~judgelab.labeler.store.Store.assign_k`. Two figures, each from a fresh child process:

* **alone**: one rater, nobody else using the app (the floor);
* **50 at a human pace**: all 50 raters, each reading for an exponentially distributed time
  (mean ``--think`` seconds, 20 by default: 2.5 labels/s in all) before each submit: what a
  labelling team sees;
* **50 at once**: all 50 raters submitting back to back with no pause (saturation); the
  round trip then includes waiting for the other sessions' units of work, and the total
  rate is the most labels per second one app process can store.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._measure import WORKDIR, built_once, child, emit, machine, percentiles
from judgelab.labeler.models import Answer, Criterion, Rubric, Task
from judgelab.labeler.queue import QueueItem
from judgelab.labeler.store import Rater, Store

TOKENS_ENV = "JUDGELAB_BENCH_TOKENS"

RUBRIC = Rubric(
    rubric_id="bench", version=1, name="Bench rubric", scale="likert5", pass_rule="overall >= 4",
    pass_threshold=4.0,
    criteria=(Criterion("correct", "Correct", "Right."), Criterion("complete", "Complete", "All of it.")),
)


def build(path: Path, *, answers: int, raters: int) -> None:
    """A pool of ``answers`` answers (two per task), each assigned to one of ``raters`` raters."""
    store = Store(path)
    store.add_rubric(RUBRIC)
    n_tasks = answers // 2
    tasks = [Task(f"t{i:06d}", f"Ticket {i}: the invoice shows the wrong address.") for i in range(n_tasks)]
    pool = [
        Answer(f"{fam}-{i:06d}", f"t{i:06d}", fam, f"{fam}-model",
               f"Answer from {fam} to ticket {i}: update the address under Billing, then reissue.")
        for i in range(n_tasks) for fam in ("famA", "famB")
    ]
    store.add_pool(tasks, pool)
    ids = [r.rater_id for r, _ in (store.add_rater(f"bench-rater-{i:02d}") for i in range(raters))]
    store.assign_k([a.answer_id for a in pool], 1, ids, seed=1)


def render(store: Store, rater: Rater) -> QueueItem:
    """The fragment's rerun for a rater: the screen (its token was checked by the callback)."""
    screen = store.screen(rater.rater_id, "score", None)
    if screen.index is None:
        raise SystemExit(f"{rater.name} has nothing left to label; delete --workdir to rebuild")
    return screen.queue[screen.index]


def round_trips(store: Store, token: str, n: int, out: list[float], *, think: float = 0.0) -> None:
    """``n`` submit -> next-item-ready round trips for one rater, seconds appended to ``out``.

    ``think``: mean seconds of reading before each submit (exponential; 0 submits at once).
    """
    rater = store.authenticate(token)
    item = render(store, rater)
    pace = random.Random(token)
    for _ in range(n):
        if think:
            time.sleep(pace.expovariate(1 / think))
        start = time.perf_counter()
        rater = store.authenticate(token)
        store.add_label(rater.rater_id, item.assignment_id, overall=4,
                        criteria={"correct": 4, "complete": 4})
        item = render(store, rater)
        out.append(time.perf_counter() - start)


def measure(db: str, tokens: list[str], per_rater: int, think: float) -> dict[str, float]:
    store = Store(db)
    times: list[float] = []
    guard = threading.Lock()

    def work(token: str) -> None:
        mine: list[float] = []
        round_trips(store, token, per_rater, mine, think=think)
        with guard:
            times.extend(mine)

    start = time.perf_counter()
    threads = [threading.Thread(target=work, args=(t,)) for t in tokens]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    p50, p95 = percentiles(times)
    return {"round_trips": len(times), "p50_s": p50, "p95_s": p95, "seconds": elapsed,
            "labels_per_s": len(times) / elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--answers", type=int, default=100_000)
    parser.add_argument("--raters", type=int, default=50)
    parser.add_argument("--alone", type=int, default=30, help="round trips of the lone rater")
    parser.add_argument("--each", type=int, default=3, help="round trips per rater when all work at once")
    parser.add_argument("--think", type=float, default=20.0, help="mean reading seconds at a human pace")
    parser.add_argument("--workdir", default=WORKDIR)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--per-rater", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        # Tokens come through the environment: one may start with "-", and argv is public.
        emit(measure(args.db, os.environ[TOKENS_ENV].split(","), args.per_rater, args.think))
        return

    db = Path(args.workdir) / f"roundtrip-{args.answers}-{args.raters}.duckdb"
    print(f"rater round trip · {args.answers:,} answers · {args.raters} raters · {db}")
    print(f"  {machine()}")
    built_once(db, "the pool and queues", lambda path: build(path, answers=args.answers, raters=args.raters))
    store = Store(db)
    names = [f"bench-rater-{i:02d}" for i in range(args.raters)]
    tokens = [store.reissue_token(n) for n in names]
    labels = int(store.query("SELECT count(*) AS n FROM labels")["n"].iloc[0])
    print(f"  {labels:,} labels stored before this run")
    runs = (
        ("alone", tokens[:1], args.alone, 0.0),
        (f"{args.raters}, human pace", tokens, args.each, args.think),
        (f"{args.raters} at once", tokens, args.each, 0.0),
    )
    for label, chosen, n, think in runs:
        fig = child("rater_roundtrip.py", ["--db", str(db), "--per-rater", str(n), "--think", str(think)],
                    timeout=1800, env={TOKENS_ENV: ",".join(chosen)})
        print(f"  {label:16s} p50 {fig['p50_s'] * 1000:7.0f} ms  p95 {fig['p95_s'] * 1000:7.0f} ms  "
              f"({fig['round_trips']} round trips, {fig['labels_per_s']:.2f} labels/s stored; "
              f"peak memory {fig['peak_rss_mb']:.0f} MiB)")


if __name__ == "__main__":
    main()
