"""Subprocess workers for the reliability tests, and the rater cycle they share with threads.

Run as ``python -m tests.reliability._worker MODE DB ...`` from the repository root. Every
write a worker makes is acknowledged on stdout (one line, flushed) only after the unit of
work that made it has committed, so the parent test knows exactly which writes the tool
promised to keep.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from judgelab.labeler.models import Answer, Task
from judgelab.labeler.store import ScoreView, Store

#: Environment variable carrying the ``label`` worker's invite tokens, comma-separated.
TOKENS_ENV = "JUDGELAB_WORKER_TOKENS"

#: The overall score each simulated rater gives; criteria get the same score.
SCORE = 4.0


@dataclass(frozen=True)
class Ack:
    """One acknowledged label: the tool returned its id after the commit."""

    rater_id: int
    assignment_id: int
    label_id: int


def label_one(store: Store, token: str) -> Ack | None:
    """One rater submit, calling what ``judgelab/app.py`` and ``judgelab/views/rate.py`` call.

    A page run authenticates the ``?t=`` token (the entry point and the page each do),
    renders the rater's screen (:meth:`~judgelab.labeler.store.Store.screen`: queue, item, open
    event and blinded view in one unit); when nothing is left and the project labels in
    pull mode (setting ``claim_k``), it claims one more answer that still needs raters and
    renders again. The submit callback then appends the label.

    Args:
        store: The project store (shared by every session thread, as the app's is).
        token: The rater's invite token.

    Returns:
        The acknowledged label, or ``None`` when the rater has nothing left to label.
    """
    rater_id = store.authenticate(token).rater_id
    store.authenticate(token)
    screen = store.screen(rater_id, "score", None)
    claim_k = store.setting("project", "claim_k") if screen.index is None else None
    if claim_k and store.claim_next(rater_id, int(claim_k)) is not None:
        screen = store.screen(rater_id, "score", None)
    if screen.index is None or not isinstance(screen.view, ScoreView):
        return None
    item = screen.queue[screen.index]
    criteria = {c.criterion_id: SCORE for c in screen.view.rubric.criteria}
    label_id = store.add_label(rater_id, item.assignment_id, overall=SCORE, criteria=criteria)
    return Ack(rater_id, item.assignment_id, label_id)


def _emit(line: str) -> None:
    # One write per line, flushed at once: the parent may SIGKILL us right after.
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def run_labelers(
    store: Store, tokens: Sequence[str], *, per_rater: int, emit: bool = True
) -> list[Ack]:
    """Label ``per_rater`` items for each rater (by token), one thread each, acknowledging each."""
    acks: list[Ack] = []
    errors: list[BaseException] = []
    guard = threading.Lock()

    def work(token: str) -> None:
        try:
            for _ in range(per_rater):
                ack = label_one(store, token)
                if ack is None:
                    return
                with guard:
                    acks.append(ack)
                    if emit:
                        _emit(f"ack {ack.rater_id} {ack.assignment_id} {ack.label_id}")
        except BaseException as exc:  # reported to the parent, which fails the test
            with guard:
                errors.append(exc)
                if emit:
                    _emit(f"error {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=work, args=(t,)) for t in tokens]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return acks


def add_batches(store: Store, *, batches: int, size: int) -> None:
    """Import ``batches`` pools of ``size`` answers, each in one unit, acknowledging each."""
    for b in range(batches):
        tasks = [Task(f"bulk{b:03d}", f"Bulk ticket {b}")]
        answers = [
            Answer(f"bulk{b:03d}-{i:05d}", tasks[0].task_id, "bulkfam", "bulk-model", f"Bulk answer {i}.")
            for i in range(size)
        ]
        store.add_pool(tasks, answers)
        _emit(f"batch {b}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tests.reliability._worker")
    sub = parser.add_subparsers(dest="mode", required=True)
    lab = sub.add_parser("label", help="label items for raters, one thread each")
    lab.add_argument("db")
    lab.add_argument("--per-rater", type=int, default=10**9)
    bulk = sub.add_parser("bulk", help="import batches of answers, one unit each")
    bulk.add_argument("db")
    bulk.add_argument("--batches", type=int, required=True)
    bulk.add_argument("--size", type=int, required=True)
    args = parser.parse_args(argv)
    store = Store(args.db)
    _emit("ready")
    if args.mode == "label":
        # Tokens come through the environment: one may start with "-", and argv is public.
        run_labelers(store, os.environ[TOKENS_ENV].split(","), per_rater=args.per_rater)
    else:
        add_batches(store, batches=args.batches, size=args.size)
    _emit("done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
