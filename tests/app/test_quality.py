"""Rater quality (issue 36): gold items, attention checks, qualification, pauses, kept apart.

Real DuckDB files in tmp_path, the real store and the real CLI (click's runner).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.admin._quality import import_quality_file, quality_export, quality_table, rater_quality
from judgelab.cli import main
from judgelab.labeler.errors import ConflictError, InputError
from judgelab.labeler.quality import QualitySettings
from judgelab.labeler.store import Store
from judgelab.labeler.store._quality import PausedError
from tests.app.conftest import build_pool

GOLD_CSV = """id,kind,prompt,text,score,low,high,explanation
g1,gold,Ticket G1: refund twice charged,"Refund issued, apology, timeline given.",5,,,It answers everything.
g2,gold,Ticket G2: password reset,"Just google it.",1,,,Rude and unhelpful.
g3,gold,Ticket G3: slow app,"Clear cache, then reinstall; here is how.",,4,5,Helpful steps.
a1,attention,Ticket A1: attention,"Attention check: please give this answer the overall score 2.",2,,,It says 2.
"""


def _project(tmp_path: Path, *, n_tasks: int = 6) -> tuple[Store, Path]:
    pool = build_pool(tmp_path / "q.duckdb", n_tasks=n_tasks)
    gold = tmp_path / "gold.csv"
    gold.write_text(GOLD_CSV, encoding="utf-8")
    return pool.store, gold


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _assign(store: Store, *, k: int, seed: int) -> None:
    """Give every original answer to ``k`` of the raters."""
    raters = store.raters()
    store.assign_k(store.answers(variant="original")["answer_id"].tolist(), k,
                   raters.loc[raters["role"] == "rater", "rater_id"].tolist(), seed=seed)


def _label_all(store: Store, rater_id: int, *, gold_score: float | None = None, live: float = 4.0) -> None:
    """Label every visible score item: quality items with ``gold_score`` (else their correct score)."""
    items = store.quality_items().set_index("answer_id")
    by_item = {}
    for r in store.query("SELECT answer_id, item_id FROM quality_items").itertuples():
        by_item[r.item_id] = r.answer_id
    for item in store.rater_queue(rater_id):
        if item.done:
            continue
        if item.item_id in by_item:
            q = items.loc[by_item[item.item_id]]
            score = float(q["low"]) if gold_score is None else gold_score
        else:
            score = live
        store.add_label(rater_id, item.assignment_id, overall=score,
                        criteria={"correct": score, "complete": score, "tone": score})


def test_gold_import_mixes_items_into_queues_spread_and_blind(tmp_path: Path) -> None:
    store, gold = _project(tmp_path, n_tasks=10)
    ann, _ = store.add_rater("ann")
    _assign(store, k=1, seed=1)
    out = _cli("gold", "import", gold, "--rate", "0.2", "--db", store.path)
    assert "4 quality items added" in out
    queue = store.rater_queue(ann.rater_id)
    quality = set(store.query("SELECT item_id FROM quality_items")["item_id"])
    where = [i for i, item in enumerate(queue) if item.item_id in quality]
    # 20 live items at rate 0.2: 4 quality items, not at the start or bunched together.
    assert len(queue) == 24 and len(where) == 4
    assert max(b - a for a, b in itertools.pairwise(where)) > 1
    # The page's view of a gold item has the same shape as a live one's: opaque id, text, rubric.
    view = store.score_view(ann.rater_id, queue[where[0]].assignment_id)
    assert view.item.item_id.startswith("i") and len(view.item.item_id) == len(queue[0].item_id)
    assert "g1" not in repr(view) and "gold" not in repr(view).lower()
    # Running it again adds nothing (the queue already holds its share).
    assert store.mix_quality() == {}


def test_gold_file_errors_name_row_column_and_fix(tmp_path: Path) -> None:
    store, _ = _project(tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text("id,prompt,text,score\ng1,P,T,9\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        import_quality_file(store, bad)
    assert "row 1" in str(err.value) and "'score'" in str(err.value) and "Fix:" in str(err.value)
    clash = tmp_path / "clash.csv"
    clash.write_text(f"id,prompt,text,score\n{store.answers()['answer_id'][0]},P,T,3\n", encoding="utf-8")
    with pytest.raises(ConflictError):
        import_quality_file(store, clash)


def test_careless_rater_is_flagged_paused_and_excluded_and_gold_never_counts(tmp_path: Path) -> None:
    store, gold = _project(tmp_path, n_tasks=10)
    careful, _ = store.add_rater("careful")
    careless, _ = store.add_rater("careless")
    _assign(store, k=2, seed=3)
    _cli("gold", "import", gold, "--rate", "0.2", "--min-accuracy", "0.7", "--db", store.path)
    _label_all(store, careful.rater_id)
    _label_all(store, careless.rater_id, gold_score=3.0)  # every gold and attention item wrong
    report = {r.rater: r for r in rater_quality(store).raters}
    assert report["careful"].state == "ok" and report["careful"].accuracy.estimate == 1.0
    bad = report["careless"]
    assert bad.state == "warn" and bad.accuracy.estimate == 0.0 and bad.attention_failed == 1
    assert bad.accuracy.ci_high < 0.7 and "Wilson" in bad.accuracy.method
    out = _cli("raters", "quality", "--db", store.path)
    assert "careless" in out and "WARN gold accuracy 0%" in out and "attention check" in out
    # Gold and attention labels reach no analysis loader.
    quality_ids = set(store.quality_items()["answer_id"])
    assert not quality_ids & set(store.human_labels()["answer_id"])
    assert not quality_ids & set(store.current_labels()["answer_id"])
    assert not quality_ids & set(store.answer_labels()["answer_id"])
    rubric = store.rubric()
    assert rubric is not None
    assert not quality_ids & set(store.review_labels(rubric.rubric_id, rubric.version)["answer_id"])
    # Exported apart, marked.
    marked = quality_export(store)
    assert set(marked["quality"]) == {"gold", "attention"} and set(marked["answer_id"]) == quality_ids
    _cli("raters", "pause", "careless", "--exclude-labels", "--db", store.path)
    assert store.rater_hold(careless.rater_id).state == "paused"  # type: ignore[union-attr]
    # Not even the done quality items show: going Back through them alone would tell which were gold.
    assert store.rater_queue(careless.rater_id) == []
    assert "careless" not in set(store.human_labels()["rater_name"])
    assert "careless" in set(store.current_labels()["rater_name"])  # nothing deleted
    assert quality_table(rater_quality(store)).set_index("rater").loc["careless", "state"] == "paused"
    _cli("raters", "resume", "careless", "--db", store.path)
    assert "careless" in set(store.human_labels()["rater_name"])


def test_a_paused_rater_sees_no_live_items(tmp_path: Path) -> None:
    store, _ = _project(tmp_path)
    bob, _ = store.add_rater("bob")
    _assign(store, k=1, seed=1)
    before = len(store.rater_queue(bob.rater_id))
    first = store.rater_queue(bob.rater_id)[0]
    store.pause_rater("bob", reason="wrong on gold")
    assert store.rater_queue(bob.rater_id) == []
    # A page drawn before the pause cannot store a label either.
    with pytest.raises(PausedError, match="paused"):
        store.add_label(bob.rater_id, first.assignment_id, overall=4.0,
                        criteria={"correct": 4.0, "complete": 4.0, "tone": 4.0})
    store.resume_rater("bob")
    assert len(store.rater_queue(bob.rater_id)) == before


def test_qualification_holds_back_live_items_until_enough_gold_is_right(tmp_path: Path) -> None:
    store, gold = _project(tmp_path)
    new, _ = store.add_rater("new")
    _assign(store, k=1, seed=1)
    _cli("gold", "import", gold, "--qualify", "2", "--qualify-min", "1.0", "--db", store.path)
    queue = store.rater_queue(new.rater_id)
    assert len(queue) == 2  # only the two qualification items
    assert store.rater_hold(new.rater_id).state == "qualifying"  # type: ignore[union-attr]
    first = queue[0]
    store.add_label(new.rater_id, first.assignment_id, overall=1.0,
                    criteria={"correct": 1.0, "complete": 1.0, "tone": 1.0})
    assert len(store.rater_queue(new.rater_id)) == 2
    _label_all(store, new.rater_id)  # the second one right
    right = rater_quality(store).raters[0]
    held = store.rater_hold(new.rater_id)
    # Whether the first was right depends on which gold item came first: both outcomes are checked.
    if right.accuracy.estimate == 1.0:
        assert held is None and len(store.rater_queue(new.rater_id)) > 2
    else:
        assert held is not None and held.state == "not_qualified"
        assert len(store.rater_queue(new.rater_id)) == 2


def test_training_mode_tells_after_submit_and_silent_mode_tells_nothing(tmp_path: Path) -> None:
    store, gold = _project(tmp_path)
    ann, _ = store.add_rater("ann")
    _assign(store, k=1, seed=1)
    _cli("gold", "import", gold, "--qualify", "1", "--db", store.path)
    item = store.rater_queue(ann.rater_id)[0]
    label = store.add_label(ann.rater_id, item.assignment_id, overall=3.0,
                            criteria={"correct": 3.0, "complete": 3.0, "tone": 3.0})
    assert store.quality_feedback(ann.rater_id, label) is None
    store.set_quality_settings(QualitySettings(qualify_n=1, mode="training"))
    said = store.quality_feedback(ann.rater_id, label)
    assert said is not None and "expected score" in said and "you gave 3" in said


def test_too_fast_labels_are_flagged(tmp_path: Path) -> None:
    store, _ = _project(tmp_path)
    ann, _ = store.add_rater("ann")
    _assign(store, k=1, seed=1)
    for item in store.rater_queue(ann.rater_id):
        store.open_item(ann.rater_id, item.assignment_id)
        store.add_label(ann.rater_id, item.assignment_id, overall=4.0, seconds=0.5,
                        criteria={"correct": 4.0, "complete": 4.0, "tone": 4.0})
    rater = rater_quality(store).raters[0]
    assert rater.timed == rater.fast > 0 and rater.state == "warn"
    assert any("too fast" in w for w in rater.warnings)


def test_settings_are_validated(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="rate"):
        QualitySettings(rate=2.0)
    store, _ = _project(tmp_path)
    result = CliRunner().invoke(main, ["gold", "settings", "--rate", "-1", "--db", str(store.path)])
    assert result.exit_code == 2 and "rate" in result.output
    shown = json.loads(_cli("gold", "settings", "--json", "--db", store.path))
    assert shown["settings"]["rate"] == 0.0


def test_a_designs_cost_includes_the_quality_items(tmp_path: Path) -> None:
    from judgelab.calibration.design import draw_design

    store, gold = _project(tmp_path, n_tasks=12)
    plain = draw_design(store, n=10, strata=("family",), minutes_per_label=3.0, raters=2, seed=1).design
    assert plain.cost.quality_ratings == 0
    _cli("gold", "import", gold, "--rate", "0.25", "--qualify", "3", "--db", store.path)
    mixed = draw_design(store, n=10, strata=("family",), minutes_per_label=3.0, raters=2, seed=1).design
    extra = round(plain.cost.ratings * 0.25) + 3 * 2
    assert mixed.cost.quality_ratings == extra and mixed.cost.ratings == plain.cost.ratings + extra
    assert mixed.cost.person_hours == pytest.approx(mixed.cost.ratings * 3.0 / 60, abs=0.01)
    assert any("gold and attention" in n for n in mixed.notes)
    # A budget in person-hours pays for the quality items first: fewer live labels.
    budget = plain.cost.person_hours
    assert draw_design(store, budget_hours=budget, strata=("family",), minutes_per_label=3.0, raters=2,
                       overlap=0.2, seed=1).design.n_labels < plain.n_labels


def test_pull_mode_mixes_quality_items_in_and_qualification_needs_no_more_gold_than_exists(tmp_path: Path) -> None:
    store, gold = _project(tmp_path, n_tasks=10)
    puller, _ = store.add_rater("puller")
    _cli("gold", "import", gold, "--rate", "0.5", "--qualify", "9", "--db", store.path)
    # 3 gold items exist, so qualification asks for 3, not 9: they are in the queue at once.
    assert len(store.rater_queue(puller.rater_id)) == 3
    assert store.claim_next(puller.rater_id, 1) is not None
    assert len(store.rater_queue(puller.rater_id)) == 3  # the claimed answer waits behind them
    _label_all(store, puller.rater_id)
    assert store.rater_hold(puller.rater_id) is None
    for _ in range(3):
        store.claim_next(puller.rater_id, 1)
    quality = set(store.query("SELECT item_id FROM quality_items")["item_id"])
    mixed = [i for i in store.rater_queue(puller.rater_id) if i.item_id in quality]
    # 3 + round(0.5 x 4 live) = 5 wanted, but there are 4 quality items and none is given twice.
    assert len(mixed) == 4 and len({i.item_id for i in mixed}) == 4


def test_labels_per_answer_counts_no_quality_item(tmp_path: Path) -> None:
    store, gold = _project(tmp_path)
    store.add_rater("ann")
    _assign(store, k=1, seed=1)
    _cli("gold", "import", gold, "--rate", "0.5", "--db", store.path)
    assert len(store.query("SELECT * FROM assignments s JOIN quality_items USING (answer_id)")) > 0
    assert not set(store.quality_items()["answer_id"]) & set(store.labels_per_answer()["answer_id"])
