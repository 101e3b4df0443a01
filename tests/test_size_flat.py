"""What ``bench/size_flat.py`` changed gives the same answers as before (issue 53, point 2).

The Overview's "done" test became two EXISTS instead of one with an OR inside (the OR kept the
subquery correlated: one scan of every label per assignment), and the quality table reads every
rater's hold at once. Both are checked here against the rule as it was, on both back-ends.
"""

from __future__ import annotations

import pandas as pd
import pytest

from judgelab.labeler.store import Store
from judgelab.labeler.store._synthetic import fill_synthetic

pytestmark = pytest.mark.both_backends

#: The "done" test as it was before (one EXISTS with an OR inside), per kind.
OLD_DONE = """
    CASE a.kind
        WHEN 'score' THEN EXISTS (SELECT 1 FROM labels l WHERE l.assignment_id = a.assignment_id
            OR (l.assignment_id IS NULL AND l.rater_id = a.rater_id AND l.answer_id = a.answer_id
                AND l.source <> 'adjudicated'))
        WHEN 'pair' THEN EXISTS (
            SELECT 1 FROM pair_labels p
            WHERE p.assignment_id = a.assignment_id
               OR (p.assignment_id IS NULL AND p.rater_id = a.rater_id
                   AND ((p.shown_left = a.answer_id AND p.shown_right = a.answer_b_id)
                     OR (p.shown_left = a.answer_b_id AND p.shown_right = a.answer_id))))
        ELSE EXISTS (
            SELECT 1 FROM padding_audits d
            WHERE d.assignment_id = a.assignment_id
               OR (d.assignment_id IS NULL AND d.rater_id = a.rater_id
                   AND d.original_id = a.answer_id AND d.rewrite_id = a.answer_b_id))
    END
"""


def _edges(store: Store) -> None:
    """Rows that are done only by the second way (no assignment id), or must not count."""
    with store.connection() as con:
        # Rater 1's items 9 and 10 are not labelled in the app: an import labels item 9 (counts), an
        # adjudication item 10 (does not: it is the admin's, not the rater's).
        for pos, source in ((9, "import"), (10, "adjudicated")):
            con.execute(
                "INSERT INTO labels (rater_id, rater_name, answer_id, overall, source)"
                " SELECT rater_id, 'rater-1', answer_id, 3, $2 FROM assignments WHERE rater_id = 1 AND queue_pos = $1",
                [pos, source],
            )
        # Pairs: one done in the app, one imported the other way round, one not done; audits likewise.
        for n, (a, b) in enumerate((("a00000001", "a00000002"), ("a00000003", "a00000004"),
                                    ("a00000005", "a00000006"))):
            con.execute("INSERT INTO assignments (assignment_id, rater_id, kind, answer_id, answer_b_id, queue_pos)"
                        " VALUES ($1, 2, 'pair', $2, $3, $4), ($5, 2, 'audit', $2, $3, $4)",
                        [1000 + n, a, b, n + 1, 2000 + n])
        con.execute("INSERT INTO pair_labels (rater_id, rater_name, shown_left, shown_right, preference, assignment_id)"
                    " VALUES (2, 'rater-2', 'a00000001', 'a00000002', 1, 1000),"
                    " (2, 'rater-2', 'a00000004', 'a00000003', -1, NULL)")
        con.execute("INSERT INTO padding_audits (rater_id, original_id, rewrite_id, length_ratio, adds_content,"
                    " assignment_id) VALUES (2, 'a00000001', 'a00000002', 1.5, true, 2000),"
                    " (2, 'a00000003', 'a00000004', 1.2, false, NULL)")


def test_progress_counts_what_the_old_done_test_counted(store: Store) -> None:
    built = fill_synthetic(store, answers=40, queue=10, done=8)
    assert (built.raters, built.labels, built.judgements) == (5, 40, 40)
    _edges(store)
    new = store.assignment_progress().sort_values(["rater_id", "kind"]).reset_index(drop=True)
    old = store.query(
        f"SELECT a.rater_id, a.kind, count(*) AS assigned, sum(CASE WHEN {OLD_DONE} THEN 1 ELSE 0 END) AS done"
        " FROM assignments a GROUP BY a.rater_id, a.kind ORDER BY a.rater_id, a.kind"
    )
    pd.testing.assert_frame_equal(new[["rater_id", "kind", "assigned", "done"]].astype({"done": "int64"}),
                                  old.astype({"assigned": "int64", "done": "int64"}), check_dtype=False)
    got = new.set_index(["rater_id", "kind"])["done"].to_dict()
    # Rater 1: 8 app labels and the imported one; the adjudication is not theirs.
    assert got[(1, "score")] == 9 and got[(3, "score")] == 8
    assert got[(2, "pair")] == 2 and got[(2, "audit")] == 2


def test_every_raters_hold_read_at_once_is_each_raters_hold(store: Store) -> None:
    from judgelab.labeler.quality import QualityItem, QualitySettings

    fill_synthetic(store, answers=20, queue=5, done=4)
    store.add_quality_items([QualityItem(answer_id=f"g{i}", kind="gold", prompt="Ticket", text=f"Gold {i}",
                                         low=4.0, high=5.0) for i in range(2)])
    store.set_quality_settings(QualitySettings(qualify_n=2, qualify_min=1.0))
    with store.connection() as con:
        # Rater 1 got both gold items right, rater 2 one wrong, rater 3 one only (still qualifying).
        for rater, scores in ((1, (4, 5)), (2, (4, 2)), (3, (5,))):
            for i, score in enumerate(scores):
                con.execute("INSERT INTO labels (rater_id, rater_name, answer_id, overall, source)"
                            " VALUES ($1, 'r', $2, $3, 'app')", [rater, f"g{i}", score])
    store.pause_rater("rater-4", reason="too fast")
    store.pause_rater("rater-1", reason="")
    store.resume_rater("rater-1")
    ids = [1, 2, 3, 4]
    each = {r: store.rater_hold(r) for r in ids}
    assert store.rater_holds(ids) == each
    assert [None if h is None else h.state for h in each.values()] == [None, "not_qualified", "qualifying", "paused"]
    assert store.rater_holds([]) == {}
