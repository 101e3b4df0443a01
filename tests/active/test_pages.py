"""Active labelling on the admin pages and the rater's queue, under AppTest."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from judgelab.calibration.active import active_status, apply_active_batch, draw_active_batch
from judgelab.labeler.store import Store
from judgelab.labeler.store._judgements import JudgementRecord
from tests.app.conftest import FAMILIES, RUBRIC, Pool, build_pool
from tests.app.test_rate import assert_blind, open_app

PAGES = Path(__file__).resolve().parents[2] / "judgelab" / "views"


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Pool, dict[str, str]]:
    """A blinded pool of 40 tasks judged on 1-5 (the judge's family first), a rater and an admin."""
    pool = build_pool(tmp_path / "active.duckdb", n_tasks=40)
    store = pool.store
    gen = np.random.default_rng(0)
    store.start_judge_run("r1", judge_kind="fake", model="judge-m", family=FAMILIES[0], rubric_id=RUBRIC.rubric_id,
                          rubric_version=RUBRIC.version)
    scores = gen.integers(1, 6, len(pool.originals)).astype(float)
    store.add_judgements([
        JudgementRecord(run_id="r1", call_id=f"c{i}", cache_key=f"k{i}", kind="pointwise", format="likert5",
                        task_id=a.split("-")[1], answer_id=a, value=s, passed=bool(s >= 4))
        for i, (a, s) in enumerate(zip(pool.originals, scores, strict=True))
    ])
    _, admin = store.add_rater("boss", role="admin")
    _, ann = store.add_rater("ann")
    monkeypatch.setenv("JUDGELAB_DB", str(pool.path))
    return pool, {"admin": admin, "ann": ann}


def page(name: str, token: str) -> AppTest:
    at = AppTest.from_file(str(PAGES / name), default_timeout=60)
    at.query_params["t"] = token
    at.run()
    assert not at.exception, at.exception
    return at


def label_all(store: Store) -> None:
    rows = store.query("SELECT assignment_id, rater_id FROM assignments a WHERE kind = 'score' AND NOT EXISTS"
                       " (SELECT 1 FROM labels l WHERE l.assignment_id = a.assignment_id)")
    gen = np.random.default_rng(1)
    for r in rows.itertuples():
        score = float(gen.integers(1, 6))
        store.add_label(int(r.rater_id), int(r.assignment_id), overall=score,
                        criteria={c.criterion_id: score for c in RUBRIC.criteria})


def test_the_admin_starts_active_labelling_and_the_overview_follows_it(served: tuple[Pool, dict[str, str]]) -> None:
    pool, tokens = served
    at = page("admin_assignments.py", tokens["admin"])
    at.number_input(key="active_target").set_value(40.0)
    at.multiselect(key="active_raters").set_value(["ann"])
    at.button(key="active_draw").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("Batch 1 of design" in c.value for c in at.caption)
    at.button(key="active_apply").click().run()
    assert any("assignments made for batch 1" in s.value for s in at.success)

    overview = page("admin_overview.py", tokens["admin"])
    assert any(h.value == "Active labelling" for h in overview.subheader)
    assert any("Batch 1" in i.value and "appears when the batch is complete" in i.value for i in overview.info)

    label_all(pool.store)
    for _ in range(5):  # label batch after batch until the page says the team may stop
        overview = page("admin_overview.py", tokens["admin"])
        status = active_status(pool.store)
        assert status is not None
        if status.state != "ready":
            break
        assert any("Draw the next batch" in i.value for i in overview.info)
        apply_active_batch(pool.store, draw_active_batch(pool.store, seed=1), ["ann"])
        label_all(pool.store)
    assert overview.get("vega_lite_chart"), "the gap's interval chart is missing"
    if status.state == "reached":
        assert any("Target reached" in s.value and "may stop" in s.value for s in overview.success)
    else:
        assert any(status.message == w.value for w in overview.warning)


def test_an_active_batch_reaches_the_rater_blind(served: tuple[Pool, dict[str, str]]) -> None:
    pool, tokens = served
    batch = draw_active_batch(pool.store, target_half_width=40.0, seed=0)
    apply_active_batch(pool.store, batch, ["ann"])
    at = open_app(tokens["ann"], "rate.py")
    assert_blind(at, pool)


def test_the_admin_reassigns_a_revoked_raters_batch_and_the_new_rater_sees_it(
    served: tuple[Pool, dict[str, str]],
) -> None:
    pool, tokens = served
    _, bea = pool.store.add_rater("bea")
    apply_active_batch(pool.store, draw_active_batch(pool.store, target_half_width=40.0, seed=0), ["ann"])
    pool.store.revoke_rater("ann")
    at = page("admin_assignments.py", tokens["admin"])
    assert any("no active rater's queue" in i.value for i in at.info)
    at.multiselect(key="active_raters").set_value(["bea"])
    at.button(key="active_reassign").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("assignments made for the stranded answers (bea:" in s.value for s in at.success)
    assert not any("no active rater's queue" in i.value for i in at.info)  # the page shows the new state
    assert not [b for b in at.button if b.key == "active_reassign"]
    status = active_status(pool.store)
    assert status is not None and int(status.batches["stranded"].sum()) == 0
    # Bea's queue holds the batch, blind.
    assert_blind(open_app(bea, "rate.py"), pool)


def test_the_overview_tells_one_story_of_labels_intervals_and_stranded_items(
    served: tuple[Pool, dict[str, str]],
) -> None:
    """Issue 29 items 7 and 9: one story of labels, intervals and stranded items on the Overview.

    The labels the interval reads against all labels, why it is not the Calibration page's
    interval, and the Remaining items a revoked rater holds.
    """
    pool, tokens = served
    store = pool.store
    ann = store.authenticate(tokens["ann"])
    # Labels from outside the design: ann labels six answers first.
    store.assign_k(pool.originals[:6], 1, [ann.rater_id])
    label_all(store)
    apply_active_batch(store, draw_active_batch(store, target_half_width=40.0, seed=0), ["ann"])
    label_all(store)
    status = active_status(store)
    assert status is not None and status.figures is not None
    total = int(store.query("SELECT count(*) AS n FROM labels")["n"].iloc[0])
    assert total > status.labels_collected
    # A rater who leaves with work in the queue.
    _, bob_token = store.add_rater("bob")
    bob = store.authenticate(bob_token)
    store.assign_k(pool.originals[-3:], 1, [bob.rater_id])
    store.revoke_rater("bob")
    at = page("admin_overview.py", tokens["admin"])
    shown = " ".join(str(e.value) for e in (*at.caption, *at.markdown))
    assert f"only the {status.labels_collected} labels of the design's finished batches" in shown, shown
    assert f"from all {total} labels" in shown and "Calibration page" in shown
    assert f"{total} labels in the project in all" in shown
    assert any(m.label == "Labels in the design's finished batches" for m in at.metric)
    assert "of which 3 held by revoked rater(s)" in shown, shown


def test_the_overview_reruns_without_recomputing_the_active_status(
    served: tuple[Pool, dict[str, str]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 29 item 9: the status (an estimate over every batch) is kept until the data moves.

    Recomputed on every rerun, it kept the page's charts greyed out meanwhile.
    """
    import judgelab.views._active_section as section

    pool, tokens = served
    apply_active_batch(pool.store, draw_active_batch(pool.store, target_half_width=40.0, seed=0), ["ann"])
    label_all(pool.store)
    calls: list[int] = []
    real = section.active_view

    def counted(store: Store) -> object:
        calls.append(1)
        return real(store)

    monkeypatch.setattr(section, "active_view", counted)
    at = page("admin_overview.py", tokens["admin"])
    at.run()
    assert not at.exception and len(calls) == 1, calls
    label_all(pool.store)  # nothing left to label: the data did not move
    ann = pool.store.authenticate(tokens["ann"])
    pool.store.assign_k(pool.originals[-1:], 1, [ann.rater_id])  # the data moved: recomputed
    at.run()
    assert len(calls) == 2
