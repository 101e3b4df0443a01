"""The rater side of the store.

Exactly-k assignment under concurrency, append-only labels, server-clock timing, resume,
counterbalanced pairs, audits and masking.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from judgelab.labeler.errors import AccessError, InputError
from judgelab.labeler.queue import DEFAULT_GAP, min_same_group_distance
from judgelab.labeler.store import Store
from tests.app.conftest import FAMILIES, Pool, build_pool

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.both_backends
CRIT = {"correct": 4.0, "complete": 4.0, "tone": 4.0}


def _raters(store: Store, n: int, prefix: str = "r") -> list[int]:
    return [store.add_rater(f"{prefix}{i}")[0].rater_id for i in range(n)]


def _per_answer(store: Store) -> Counter[str]:
    frame = store.query("SELECT answer_id FROM assignments WHERE kind = 'score'")
    return Counter(str(a) for a in frame["answer_id"])


# -- assign_k -------------------------------------------------------------------------------


def test_assign_k_gives_each_answer_exactly_k_raters_and_spreads_tasks(db: Path | str) -> None:
    pool = build_pool(db, n_tasks=12)
    store = pool.store
    raters = _raters(store, 5)
    summary = store.assign_k(pool.originals, 3, raters, seed=11)
    assert summary.n_added == 3 * len(pool.originals)
    assert set(_per_answer(store).values()) == {3}
    # load is even (24 answers x 3 / 5 raters = 14.4 each)
    assert set(summary.added.values()) <= {14, 15}
    task_of = dict(store.query("SELECT answer_id, task_id FROM answers").itertuples(index=False))
    for r in raters:
        tasks = store.query(
            "SELECT answer_id FROM assignments WHERE rater_id = ? ORDER BY queue_pos", [r]
        )["answer_id"].map(task_of)
        d = min_same_group_distance(list(tasks))
        assert d is None or d > DEFAULT_GAP
    # Asking again changes nothing; asking for one more rater adds exactly one per answer.
    assert store.assign_k(pool.originals, 3, raters, seed=11).n_added == 0
    assert store.assign_k(pool.originals, 4, raters, seed=12).n_added == len(pool.originals)
    assert set(_per_answer(store).values()) == {4}


def test_assign_k_refuses_bad_requests(pool: Pool) -> None:
    raters = _raters(pool.store, 2)
    with pytest.raises(InputError, match="needs 3 raters"):
        pool.store.assign_k(pool.originals, 3, raters)
    with pytest.raises(InputError, match="not in the database"):
        pool.store.assign_k(["nope"], 1, raters)
    pool.store.revoke_rater("r0")
    with pytest.raises(InputError, match="unknown or revoked"):
        pool.store.assign_k(pool.originals, 1, raters)


# -- claim_next: exactly k under concurrency --------------------------------------------------


def _claim_all(path: str, rater_ids: list[int], k: int, barrier: threading.Barrier | None) -> int:
    store = Store(path)
    got = 0

    def work(rater_id: int) -> None:
        nonlocal got
        if barrier is not None:
            barrier.wait()
        while store.claim_next(rater_id, k) is not None:
            got += 1

    threads = [threading.Thread(target=work, args=(r,)) for r in rater_ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got


def test_twenty_threads_claiming_never_push_an_answer_past_k(db: Path | str) -> None:
    pool = build_pool(db, n_tasks=3)
    raters = _raters(pool.store, 20)
    _claim_all(str(pool.path), raters, 3, threading.Barrier(20))
    counts = _per_answer(pool.store)
    # 6 answers x 3 = 18 slots, 20 raters asking at once: every answer exactly 3.
    assert set(counts) == set(pool.originals)
    assert set(counts.values()) == {3}
    dupes = pool.store.query(
        "SELECT rater_id, answer_id, count(*) AS n FROM assignments GROUP BY rater_id, answer_id HAVING count(*) > 1"
    )
    assert dupes.empty  # nobody got the same answer twice


# A child process: claims with one thread per rater once the parent says go. Run as a
# plain subprocess, not multiprocessing: after an AppTest run `__main__` is the app
# script, which multiprocessing's spawn would re-run in the child.
_CHILD = """
import pathlib, sys, threading, time
from tests.app.test_labels_store import _claim_all
path, ids, k, go = sys.argv[1], [int(x) for x in sys.argv[2].split(",")], int(sys.argv[3]), sys.argv[4]
pathlib.Path(f"{go}.ready{ids[0]}").touch()
while not pathlib.Path(go).exists():
    time.sleep(0.002)
_claim_all(path, ids, k, threading.Barrier(len(ids)))
"""


def test_two_processes_claiming_never_push_an_answer_past_k(tmp_path: Path, db: Path | str) -> None:
    pool = build_pool(db, n_tasks=3)
    raters = _raters(pool.store, 6)
    go = tmp_path / "go"
    # k = 4 with 3 raters per process: neither process can fill an answer alone, so
    # both compete for the same answers at the same time.
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(pool.path), ",".join(map(str, ids)), "4", str(go)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )
        for ids in (raters[:3], raters[3:])
    ]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("go.ready*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()  # both are waiting: start together
    for p in procs:
        out, _ = p.communicate(timeout=240)
        assert p.returncode == 0, out.decode()
    counts = _per_answer(pool.store)
    assert set(counts) == set(pool.originals)
    assert set(counts.values()) == {4}


def test_claim_next_prefers_emptiest_answers_and_stops_when_full(pool: Pool) -> None:
    a, b = _raters(pool.store, 2)
    first = {pool.store.claim_next(a, 2) for _ in range(len(pool.originals))}
    assert None not in first
    assert pool.store.claim_next(a, 2) is None  # a has every answer once
    # b fills the second slot of each answer, then nothing is left at k = 2.
    while pool.store.claim_next(b, 2) is not None:
        pass
    assert set(_per_answer(pool.store).values()) == {2}
    assert pool.store.claim_next(b, 3) is None  # b already has them all


def test_a_revoked_raters_unanswered_items_go_to_others_and_their_labels_still_count(pool: Pool) -> None:
    # A rater who leaves mid-queue: what they labelled keeps its slot, what they did not is
    # given to someone else by exactly-k (assign) and by pull mode (claim), never twice.
    leaver, stays, newcomer, puller = _raters(pool.store, 4)
    pool.store.assign_k(pool.originals, 1, [leaver], seed=1)
    done = pool.store.query("SELECT assignment_id, answer_id FROM assignments WHERE rater_id = ?"
                            " ORDER BY queue_pos LIMIT 3", [leaver])
    for r in done.itertuples():
        pool.store.add_label(leaver, int(r.assignment_id), overall=4.0, criteria=CRIT)
    pool.store.revoke_rater("r0")
    open_answers = set(pool.originals) - set(done["answer_id"])
    summary = pool.store.assign_k(pool.originals, 1, [stays, newcomer], seed=2)
    assert summary.n_added == len(open_answers)
    held = pool.store.query("SELECT answer_id FROM assignments WHERE rater_id IN (?, ?)", [stays, newcomer])
    assert set(held["answer_id"]) == open_answers  # the labelled ones keep the leaver
    assert pool.store.assign_k(pool.originals, 1, [stays, newcomer], seed=2).n_added == 0
    catalog = pool.store.answer_catalog().set_index("answer_id")
    assert (catalog.loc[pool.originals, "assigned"] == 1).all()
    # Pull mode at k = 2: every answer gets one more live rater, the leaver's open ones not two.
    while pool.store.claim_next(puller, 2) is not None:
        pass
    pulled = pool.store.query("SELECT answer_id FROM assignments WHERE rater_id = ?", [puller])
    assert len(pulled) == len(pool.originals)


# -- labels: append-only, own only, validated -------------------------------------------------


@pytest.fixture
def assigned(pool: Pool) -> tuple[Pool, int, int]:
    alice, bob = _raters(pool.store, 2, prefix="x")
    pool.store.assign_k(pool.originals, 2, [alice, bob], seed=3)
    return pool, alice, bob


def test_an_edit_supersedes_and_nothing_is_overwritten(assigned: tuple[Pool, int, int]) -> None:
    pool, alice, bob = assigned
    store = pool.store
    item = store.next_item(alice)
    assert item is not None
    first = store.add_label(alice, item.assignment_id, overall=4, criteria=CRIT)
    second = store.add_label(
        alice, item.assignment_id, overall=2, criteria={**CRIT, "correct": 1}, comment="wrong fix"
    )
    rows = store.query("SELECT label_id, overall, passed, supersedes FROM labels ORDER BY label_id")
    assert rows["label_id"].tolist() == [first, second]
    assert rows["overall"].tolist() == [4.0, 2.0]  # the old row is untouched
    assert rows["passed"].tolist() == [True, False]  # verdict from the rubric (pass >= 4)
    assert int(rows["supersedes"].iloc[1]) == first
    current = store.rater_current_labels(alice)
    assert current["label_id"].tolist() == [second]
    assert json.loads(current["criteria"].iloc[0])["correct"] == 1.0
    assert store.rater_current_labels(bob).empty  # never another rater's labels


def test_a_rater_cannot_touch_another_raters_item(assigned: tuple[Pool, int, int]) -> None:
    pool, alice, bob = assigned
    theirs = pool.store.rater_queue(bob)[0].assignment_id
    with pytest.raises(AccessError):
        pool.store.add_label(alice, theirs, overall=3, criteria=CRIT)
    with pytest.raises(AccessError):
        pool.store.score_view(alice, theirs)
    with pytest.raises(AccessError):
        pool.store.skip_item(alice, theirs)
    with pytest.raises(AccessError):
        pool.store.open_item(alice, theirs)
    # A forged "go back to" id is ignored: the rater sees their own next item.
    screen = pool.store.screen(alice, "score", at=theirs)
    assert screen.view is not None and screen.view.item.assignment_id != theirs
    assert screen.view.item.assignment_id in {i.assignment_id for i in pool.store.rater_queue(alice)}


def test_scores_must_fit_the_rubric(assigned: tuple[Pool, int, int]) -> None:
    pool, alice, _ = assigned
    aid = pool.store.rater_queue(alice)[0].assignment_id
    for kwargs, message in [
        ({"overall": 6, "criteria": CRIT}, "not on the likert5 scale"),
        ({"overall": 3.5, "criteria": CRIT}, "not on the likert5 scale"),
        ({"overall": 3, "criteria": {"correct": 3}}, "have no score"),
        ({"overall": 3, "criteria": {**CRIT, "speed": 3}}, "'speed' is not a criterion"),
        ({"overall": None, "criteria": CRIT}, "overall score is required"),
        ({"overall": None, "flag_reason": "  "}, "needs a reason"),
    ]:
        with pytest.raises(InputError, match=message):
            pool.store.add_label(alice, aid, **kwargs)  # type: ignore[arg-type]
    flagged = pool.store.add_label(alice, aid, overall=None, flag_reason="not in English")
    row = pool.store.query("SELECT overall, passed, flag_reason FROM labels WHERE label_id = ?",
                           [flagged])
    assert row["flag_reason"].iloc[0] == "not in English"
    assert row["overall"].isna().all()
    assert pool.store.progress(alice).done == 1  # unrateable counts as done


# -- progress, resume, skip -------------------------------------------------------------------


def test_progress_resume_and_skips_come_back_last(assigned: tuple[Pool, int, int]) -> None:
    pool, alice, _ = assigned
    store = pool.store
    queue = store.rater_queue(alice)
    total = len(queue)
    assert str(store.progress(alice)) == f"0 of {total}"
    store.add_label(alice, queue[0].assignment_id, overall=5, criteria=CRIT)
    store.skip_item(alice, queue[1].assignment_id)
    store.add_label(alice, queue[2].assignment_id, overall=3, criteria=CRIT)
    assert str(store.progress(alice)) == f"2 of {total}"
    assert store.progress(alice).skipped == 1
    # "Restart the server": a fresh Store on the same file resumes at the same place.
    again = Store(pool.path)
    nxt = again.next_item(alice)
    assert nxt is not None and nxt.assignment_id == queue[3].assignment_id
    for item in queue[3:]:
        again.add_label(alice, item.assignment_id, overall=4, criteria=CRIT)
    back = again.next_item(alice)
    assert back is not None and back.assignment_id == queue[1].assignment_id  # the skipped one
    again.add_label(alice, back.assignment_id, overall=4, criteria=CRIT)
    assert again.next_item(alice) is None
    assert str(again.progress(alice)) == f"{total} of {total}"


#: The queue as one query with grouping joins (what ``_queue`` ran until it became three
#: plain reads merged in Python): the reference the merge must agree with.
_QUEUE_REFERENCE_SQL = """
    WITH cur AS (
        SELECT d.assignment_id, max(d.label_id) AS done_id, bool_or(d.flag_reason IS NOT NULL) AS flagged
        FROM labels d
        WHERE d.rater_id = $1 AND d.assignment_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM labels s WHERE s.supersedes = d.label_id)
        GROUP BY d.assignment_id),
    sk AS (
        SELECT assignment_id, count(*) AS skips, max(event_id) AS last_skip
        FROM queue_events WHERE rater_id = $1 AND event = 'skip'
        GROUP BY assignment_id)
    SELECT s.assignment_id, cur.done_id, coalesce(cur.flagged, false), coalesce(sk.skips, 0), sk.last_skip
    FROM assignments s
    LEFT JOIN cur ON cur.assignment_id = s.assignment_id
    LEFT JOIN sk ON sk.assignment_id = s.assignment_id
    WHERE s.rater_id = $1 AND s.kind = 'score'
    ORDER BY s.queue_pos, s.assignment_id
"""


def test_the_queue_agrees_with_one_query_after_random_labels_edits_flags_and_skips(
    assigned: tuple[Pool, int, int],
) -> None:
    import random

    pool, alice, bob = assigned
    store = pool.store
    rng = random.Random(5)
    for _ in range(60):
        rater = rng.choice([alice, bob])
        item = rng.choice(store.rater_queue(rater))
        what = rng.random()
        if what < 0.25:
            store.skip_item(rater, item.assignment_id)
        elif what < 0.4:
            store.add_label(rater, item.assignment_id, overall=None, flag_reason="not English")
        else:  # a first label or an edit (a new row superseding the current one)
            store.add_label(rater, item.assignment_id, overall=rng.randint(1, 5), criteria=CRIT)
    for rater in (alice, bob):
        expected = [tuple(None if pd.isna(v) else v for v in row)
                    for row in store.query(_QUEUE_REFERENCE_SQL, [rater]).itertuples(index=False)]
        got = [(i.assignment_id, i.done_id, i.flagged, i.skips, i.last_skip_order)
               for i in store.rater_queue(rater)]
        assert got == expected
        assert any(i.skips for i in store.rater_queue(rater))
        assert any(i.flagged for i in store.rater_queue(rater))


# -- seconds from the server's clock ----------------------------------------------------------


def test_seconds_run_from_the_first_open_on_the_servers_clock(
    assigned: tuple[Pool, int, int],
) -> None:
    pool, alice, _ = assigned
    store = pool.store
    aid = store.rater_queue(alice)[0].assignment_id
    assert store.open_item(alice, aid) is True
    time.sleep(0.6)
    assert store.open_item(alice, aid) is False  # a rerun does not restart the clock
    restarted = Store(pool.path)  # and neither does a server restart
    time.sleep(0.3)
    lid = restarted.add_label(alice, aid, overall=4, criteria=CRIT)
    seconds = float(store.query("SELECT seconds FROM labels WHERE label_id = ?", [lid]).iloc[0, 0])
    assert 0.9 <= seconds < 10
    # Going back to edit starts a new clock at the new open.
    assert store.open_item(alice, aid) is True
    time.sleep(0.2)
    edit = store.add_label(alice, aid, overall=3, criteria=CRIT)
    again = float(store.query("SELECT seconds FROM labels WHERE label_id = ?", [edit]).iloc[0, 0])
    assert 0.2 <= again < seconds


def test_a_skip_restarts_the_clock_and_no_open_means_no_seconds(
    assigned: tuple[Pool, int, int],
) -> None:
    pool, alice, _ = assigned
    store = pool.store
    first, second = (i.assignment_id for i in store.rater_queue(alice)[:2])
    store.open_item(alice, first)
    time.sleep(0.5)
    store.skip_item(alice, first)
    assert store.open_item(alice, first) is True  # back after the skip: a fresh open
    lid = store.add_label(alice, first, overall=4, criteria=CRIT)
    secs = float(store.query("SELECT seconds FROM labels WHERE label_id = ?", [lid]).iloc[0, 0])
    assert secs < 0.5
    unopened = store.add_label(alice, second, overall=4, criteria=CRIT)
    assert pd.isna(store.query("SELECT seconds FROM labels WHERE label_id = ?", [unopened]).iloc[0, 0])


# -- many writers -----------------------------------------------------------------------------


def _label_everything(store: Store, rater_ids: list[int], edits: int = 0) -> None:
    def work(rater_id: int) -> None:
        for item in store.rater_queue(rater_id):
            store.add_label(rater_id, item.assignment_id, overall=3, criteria=CRIT)
            for _ in range(edits):
                store.add_label(rater_id, item.assignment_id, overall=4, criteria=CRIT)

    threads = [threading.Thread(target=work, args=(r,)) for r in rater_ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_twenty_threads_appending_labels_lose_nothing(db: Path | str) -> None:
    pool = build_pool(db, n_tasks=3)
    raters = _raters(pool.store, 20)
    pool.store.assign_k(pool.originals[:3], 20, raters, seed=1)  # 3 answers each
    _label_everything(pool.store, raters)
    assert int(pool.store.query("SELECT count(*) FROM labels").iloc[0, 0]) == 60
    assert pool.store.query("SELECT DISTINCT supersedes FROM labels")["supersedes"].isna().all()


@pytest.mark.slow
def test_twenty_threads_appending_two_thousand_labels(db: Path | str) -> None:
    pool = build_pool(db, n_tasks=50)
    raters = _raters(pool.store, 20)
    pool.store.assign_k(pool.originals, 20, raters, seed=1)  # 100 answers each
    _label_everything(pool.store, raters)
    assert int(pool.store.query("SELECT count(*) FROM labels").iloc[0, 0]) == 2000
    assert all(len(pool.store.rater_current_labels(r)) == 100 for r in raters)


def test_concurrent_edits_of_one_item_form_one_chain(assigned: tuple[Pool, int, int]) -> None:
    pool, alice, _ = assigned
    aid = pool.store.rater_queue(alice)[0].assignment_id

    def edit(n: int) -> None:
        for i in range(3):  # each edit changes the comment: an unchanged one would write nothing
            pool.store.add_label(alice, aid, overall=3, criteria=CRIT, comment=f"edit {n}.{i}")

    threads = [threading.Thread(target=edit, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = pool.store.query("SELECT label_id, supersedes FROM labels ORDER BY label_id")
    assert len(rows) == 24
    superseded = rows["supersedes"].dropna().astype(int).tolist()
    assert len(superseded) == len(set(superseded)) == 23  # a chain: no label replaced twice
    assert len(pool.store.rater_current_labels(alice)) == 1


# -- pairs and audits -------------------------------------------------------------------------


def test_pairs_are_counterbalanced_and_the_shown_order_is_stored(pool: Pool) -> None:
    store = pool.store
    raters = _raters(store, 4)
    pairs = [(f"{FAMILIES[0]}-{t}", f"{FAMILIES[1]}-{t}") for t in pool.tasks]
    store.assign_pairs(pairs, raters, seed=5)
    rows = store.query("SELECT rater_id, answer_id, answer_b_id FROM assignments WHERE kind='pair'")
    for a, b in pairs:
        mine = rows[((rows.answer_id == a) & (rows.answer_b_id == b))
                    | ((rows.answer_id == b) & (rows.answer_b_id == a))]
        assert len(mine) == 4
        assert (mine.answer_id == a).sum() == 2  # half see it A/B, half B/A
    for r in raters:
        mine = rows[rows.rater_id == r]
        flipped = (mine.answer_id > mine.answer_b_id).sum()
        assert abs(2 * flipped - len(mine)) <= 2  # each rater's own sides stay balanced
    item = store.next_item(raters[0], "pair")
    assert item is not None
    left, right = store.query(
        "SELECT answer_id, answer_b_id FROM assignments WHERE assignment_id = ?",
        [item.assignment_id],
    ).iloc[0]
    view = store.pair_view(raters[0], item.assignment_id)
    texts = dict(store.query("SELECT answer_id, text FROM answers").itertuples(index=False))
    assert (view.left_text, view.right_text) == (texts[left], texts[right])
    first = store.add_pair_label(raters[0], item.assignment_id, 2, comment="left is clearer")
    second = store.add_pair_label(raters[0], item.assignment_id, -1)
    got = store.query("SELECT * FROM pair_labels ORDER BY pair_label_id")
    assert got["shown_left"].tolist() == [left, left]
    assert got["shown_right"].tolist() == [right, right]
    assert got["preference"].tolist() == [2, -1]
    assert int(got["supersedes"].iloc[1]) == first and second > first
    with pytest.raises(InputError):
        store.add_pair_label(raters[0], item.assignment_id, 3)


def test_padding_audits_store_the_ratio_and_supersede(pool: Pool) -> None:
    store = pool.store
    (r,) = _raters(store, 1)
    summary = store.assign_audits(pool.padded, [r], seed=2)
    assert summary.n_added == len(pool.padded)
    item = store.next_item(r, "audit")
    assert item is not None
    view = store.audit_view(r, item.assignment_id)
    assert view.length_ratio == pytest.approx(len(view.rewrite_text.split())
                                              / len(view.original_text.split()))
    first = store.add_audit(r, item.assignment_id, False)
    store.add_audit(r, item.assignment_id, True, note="adds a firmware tip")
    rows = store.query("SELECT adds_content, note, supersedes, length_ratio FROM padding_audits")
    assert rows["adds_content"].tolist() == [False, True]
    assert int(rows["supersedes"].iloc[1]) == first
    assert rows["length_ratio"].iloc[0] == pytest.approx(view.length_ratio)
    assert str(store.progress(r, "audit")) == f"1 of {len(pool.padded)}"


# -- blinding ---------------------------------------------------------------------------------


def test_views_carry_no_family_model_variant_or_answer_id(assigned: tuple[Pool, int, int]) -> None:
    pool, alice, _ = assigned
    store = pool.store
    store.assign_pairs([(pool.originals[0], pool.originals[1])], [alice])
    store.assign_audits(pool.padded[:1], [alice])
    shown = []
    for kind in ("score", "pair", "audit"):
        for item in store.rater_queue(alice, kind):  # type: ignore[arg-type]
            shown.append(repr(item))
            screen = store.screen(alice, kind, at=item.assignment_id)  # type: ignore[arg-type]
            shown.append(repr(screen.view))
    everything = "\n".join(shown)
    for secret in [*pool.secrets(), *pool.originals]:
        assert secret not in everything


def test_masking_follows_the_rubric_over_the_project(db: Path | str) -> None:
    pool = build_pool(db, n_tasks=1)
    store = pool.store
    from judgelab.labeler.blinding import detect_self_identifying
    from judgelab.labeler.models import Answer

    text = "As an AI developed by Zorblax, I suggest restarting the router."
    store.add_pool([], [Answer("self-id", pool.tasks[0], FAMILIES[0], "m", text,
                               self_id_spans=tuple(detect_self_identifying(text)))])
    (r,) = _raters(store, 1)
    store.assign_k(["self-id"], 1, [r])
    aid = store.rater_queue(r)[0].assignment_id
    assert "[redacted]" in store.score_view(r, aid).text  # masked by default
    store.set_setting("project", "mask_self_id", "false")
    assert store.score_view(r, aid).text == text
    store.set_setting("rubric:support", "mask_self_id", "true")  # the rubric wins
    view = store.score_view(r, aid)
    assert "Zorblax" not in view.text and view.masked == 1
    store.set_setting("project", "mask_self_id", "true")
    store.set_setting("rubric:support", "mask_self_id", "false")
    assert store.score_view(r, aid).text == text


def test_a_project_imported_by_an_older_detector_is_masked_by_todays_rule(db: Path | str) -> None:
    # A database written before the rule learnt a spelling stores no span for it: what the
    # rater sees is read again with today's rule, so the stored spans cannot unblind.
    pool = build_pool(db, n_tasks=1)
    store = pool.store
    from judgelab.labeler.models import Answer

    text = "I'm Kimi from Moonshot AI. Restart the router."
    store.add_pool([], [Answer("old-import", pool.tasks[0], FAMILIES[0], "m", text)])
    with store.connection() as con:  # as an older judgelab stored it: no spans found
        con.execute("UPDATE answers SET self_id_spans = '[]' WHERE answer_id = 'old-import'")
    (r,) = _raters(store, 1)
    store.assign_k(["old-import"], 1, [r])
    aid = store.rater_queue(r)[0].assignment_id
    view = store.score_view(r, aid)
    assert "Kimi" not in view.text and "Moonshot" not in view.text
    assert view.masked >= 1 and view.text.endswith("Restart the router.")
