"""Load: many raters labelling at once through the rate page's functions lose and duplicate nothing.

Streamlit serves each browser session on its own thread, so the raters here are threads
sharing one :class:`~judgelab.labeler.store.Store`, as the app's sessions share the cached one.
A second process labels at the same time (a second app server, or a CLI import), so the
store's cross-process file locking is exercised too. Every label is acknowledged only
after its unit of work returned; the checks compare the database with those acks.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from judgelab.labeler.store import Store
from tests.reliability._worker import Ack, run_labelers
from tests.reliability.conftest import add_raters, build_pool, worker

RATERS = 50
#: Labels per rater in the suite: 1,000 labels in all (``bench/load_labels.py`` runs the issue's
#: 200 each, 10,000 labels, in minutes). Every rater still races the other 49 from two processes
#: for every one of them: half the rounds of the 40 it was, for half the time (131 s on DuckDB in
#: the last full run, the suite's third slowest test).
PER_RATER = 20
K = 2
#: Raters whose sessions run in the second process.
OTHER_PROCESS = 10


def _collect(proc_out: str) -> tuple[list[Ack], list[str]]:
    acks, errors = [], []
    for line in proc_out.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "ack":
            r, a, label = (int(x) for x in rest.split())
            acks.append(Ack(r, a, label))
        elif kind == "error":
            errors.append(rest)
    return acks, errors


def _check_database(store: Store, acks: list[Ack], *, k: int) -> None:
    """Every acked label stored once, nothing extra, no answer past ``k`` raters."""
    labels = store.query(
        "SELECT label_id, rater_id, assignment_id, answer_id, supersedes FROM labels ORDER BY label_id"
    )
    acked = {a.label_id for a in acks}
    assert len(acked) == len(acks), "a label id was acknowledged twice"
    assert set(labels["label_id"].astype(int)) == acked, "stored labels differ from acknowledged ones"
    assert labels["supersedes"].isna().all(), "a first label superseded something"
    per_assignment = Counter(labels["assignment_id"].astype(int))
    assert max(per_assignment.values()) == 1, "an assignment got two labels"
    assignments = store.query("SELECT assignment_id, rater_id, answer_id FROM assignments WHERE kind = 'score'")
    owner = dict(zip(assignments["assignment_id"].astype(int), assignments["rater_id"].astype(int), strict=True))
    for row in labels.itertuples(index=False):
        assert owner[int(row.assignment_id)] == int(row.rater_id), "a label landed on another rater's item"
    raters_per_answer = labels.groupby("answer_id")["rater_id"].agg(["count", "nunique"])
    assert (raters_per_answer["count"] == raters_per_answer["nunique"]).all(), "a rater labelled an answer twice"
    assert raters_per_answer["count"].max() <= k, f"an answer got more than k={k} labels"
    assigned = assignments.groupby("answer_id").size()
    assert assigned.max() <= k, f"an answer was assigned to more than k={k} raters"


def fifty_raters_label(path: Path | str, *, per_rater: int) -> float:
    """50 raters label ``per_rater`` answers each from two processes; check the database; seconds taken.

    ``bench/load_labels.py`` runs it at the issue's 200 labels each (10,000 labels, minutes); the
    suite at :data:`PER_RATER`: the same 50 raters racing from two processes, fewer rounds.
    """
    # Exactly enough answers for every rater to get per_rater of them at k raters each.
    pool = build_pool(path, n_tasks=RATERS * per_rater // (2 * K), per_task=2)
    store = pool.store
    invited = add_raters(store, RATERS)
    raters = [r.rater_id for r, _ in invited]
    tokens = [t for _, t in invited]
    summary = store.assign_k(pool.answer_ids, K, raters, seed=7)
    assert summary.n_added == RATERS * per_rater
    assert set(summary.added.values()) == {per_rater}

    here, there = tokens[OTHER_PROCESS:], tokens[:OTHER_PROCESS]
    proc = worker(["label", str(pool.path)], tokens=there)
    started = time.perf_counter()
    try:
        acks = run_labelers(store, here, per_rater=per_rater, emit=False)
        out, err = proc.communicate(timeout=3000)
    finally:
        if proc.poll() is None:
            proc.kill()
    elapsed = time.perf_counter() - started
    other, errors = _collect(out)
    assert proc.returncode == 0, err
    assert not errors, errors
    acks += other

    assert len(acks) == RATERS * per_rater
    assert Counter(a.rater_id for a in acks) == dict.fromkeys(raters, per_rater)
    _check_database(store, acks, k=K)
    total = store.query("SELECT count(*) AS n FROM labels")["n"].iloc[0]
    assert int(total) == RATERS * per_rater
    for r in raters:
        progress = store.progress(r)
        assert (progress.done, progress.total) == (per_rater, per_rater)
        assert store.next_item(r) is None
    return elapsed


@pytest.mark.slow
@pytest.mark.both_backends
@pytest.mark.timeout(3600)
def test_fifty_raters_label_concurrently_from_two_processes(db: Path | str) -> None:
    elapsed = fifty_raters_label(db, per_rater=PER_RATER)
    print(f"{RATERS * PER_RATER} labels in {elapsed:.1f} s ({RATERS * PER_RATER / elapsed:.1f} labels/s)")


@pytest.mark.slow
@pytest.mark.both_backends
def test_pull_mode_never_gives_an_answer_more_than_k_raters(db: Path | str) -> None:
    # Scarce slots: 50 raters race for 20 answers x k=3 = 60 slots, from two processes.
    pool = build_pool(db, n_tasks=10, per_task=2)
    store = pool.store
    k = 3
    store.set_setting("project", "claim_k", str(k))  # what an admin sets for pull mode
    invited = add_raters(store, RATERS)
    raters = [r.rater_id for r, _ in invited]
    tokens = [t for _, t in invited]
    here, there = tokens[OTHER_PROCESS:], tokens[:OTHER_PROCESS]
    proc = worker(["label", str(pool.path)], tokens=there)
    try:
        acks = run_labelers(store, here, per_rater=10**6, emit=False)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    other, errors = _collect(out)
    assert proc.returncode == 0, err
    assert not errors, errors
    acks += other
    assert len(acks) == len(pool.answer_ids) * k
    _check_database(store, acks, k=k)
    per_answer = store.query("SELECT answer_id, count(*) AS n FROM labels GROUP BY answer_id")
    assert len(per_answer) == len(pool.answer_ids)
    assert set(per_answer["n"].astype(int)) == {k}, "every answer should have exactly k labels"
    assert all(store.claim_next(r, k) is None for r in raters[:5])
