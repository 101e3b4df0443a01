"""Active designs over a project database: storage, batches, queues, status, CLI and the report."""

from __future__ import annotations

import itertools
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.calibration.active import active_status, apply_active_batch, draw_active_batch, reassign_active_batch
from judgelab.calibration.calibrate import calibrate
from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.probes import run_probes
from judgelab.cli import main
from judgelab.labeler.errors import InputError
from judgelab.labeler.store import JudgementRecord, Store
from tests.test_design import _fill, simulate_pool


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A judged pool of 300 tasks (two families), four raters and an admin; copied per test."""
    path = tmp_path_factory.mktemp("active") / "template.duckdb"
    store = Store(path)
    pool = simulate_pool(300, seed=3)
    # A 1-5 judge score that carries its doubt: 4 and 2 sit next to the pass boundary.
    gen = np.random.default_rng(0)
    pool["judge_score"] = np.where(pool["judge_pass"] == 1, np.where(gen.random(len(pool)) < 0.5, 5, 4),
                                   np.where(gen.random(len(pool)) < 0.5, 1, 2))
    _fill(store, pool, raters=4)
    store.release()
    pool.to_csv(path.with_suffix(".csv"), index=False)
    return path


@pytest.fixture
def store(template: Path, tmp_path: Path) -> Store:
    path = tmp_path / "active.duckdb"
    shutil.copyfile(template, path)
    return Store(path)


@pytest.fixture
def truth(template: Path) -> pd.Series:
    return pd.read_csv(template.with_suffix(".csv")).set_index("answer_id")["truth"]


def label_everything(store: Store, truth: pd.Series) -> int:
    """Every open score assignment of an active rater gets its label (the human truth, on 1-5)."""
    rows = store.query(
        "SELECT a.assignment_id, a.rater_id, a.answer_id FROM assignments a JOIN raters r USING (rater_id)"
        " WHERE a.kind = 'score' AND r.revoked_at IS NULL"
        " AND NOT EXISTS (SELECT 1 FROM labels l WHERE l.assignment_id = a.assignment_id)"
    )
    for r in rows.itertuples():
        score = 5.0 if truth[r.answer_id] else 2.0
        store.add_label(int(r.rater_id), int(r.assignment_id), overall=score, criteria={"helpful": score})
    return len(rows)


def test_the_judges_own_disagreements_mark_answers_and_raise_their_chance(store: Store) -> None:
    # The judge's model read some answers again: in another format (a pass turned fail) and in
    # pairs shown both ways round. An answer flips when its plain verdicts differ or a pair it is
    # in changes winner with the order; a probe's altered presentation and another model's runs
    # do not count.
    sure = store.query("SELECT answer_id FROM judgements WHERE run_id = 'run1' AND probe IS NULL"
                       " AND value = 5 ORDER BY answer_id")["answer_id"].tolist()
    a1, a2, a3, a4, a5, a6 = sure[:6]
    store.start_judge_run("run2", judge_kind="fake", model="claude-x", family="claude",
                          rubric_id="support", rubric_version=1)
    store.start_judge_run("run3", judge_kind="fake", model="gpt-x", family="gpt",
                          rubric_id="support", rubric_version=1)

    def pair(call: str, first: str, second: str, value: float) -> JudgementRecord:
        return JudgementRecord(run_id="run2", call_id=call, cache_key=call, kind="pairwise", format="pairwise",
                               answer_id=first, answer_b_id=second, value=value)

    store.add_judgements([
        JudgementRecord(run_id="run2", call_id="f1", cache_key="f1", kind="pointwise", format="numeric100",
                        answer_id=a1, value=40.0, passed=False),
        pair("p1", a2, a3, 1.0), pair("p2", a3, a2, 1.0),  # the first shown wins both times: a flip
        pair("p3", a4, a5, 1.0), pair("p4", a5, a4, -1.0),  # a4 wins both ways round
        JudgementRecord(run_id="run3", call_id="g1", cache_key="g1", kind="pointwise", format="likert5",
                        answer_id=a6, value=2.0, passed=False),
    ])
    assert store.judge_flips("run1")["answer_id"].tolist() == sorted([a1, a2, a3])
    batch = draw_active_batch(store, target_half_width=12.0, overlap=0.0, seed=1, run_id="run1")
    apply_active_batch(store, batch, 4)
    draws = store.active_design(batch.design_id)[2].set_index("answer_id")
    assert draws.index[draws["flipped"]].sort_values().tolist() == sorted([a1, a2, a3])
    # Same score and verdict: the flipped answers are likelier to be labelled than the steady ones.
    steady = draws.loc[[a4, a5, a6], "inclusion_prob"]
    assert draws.loc[[a1, a2, a3], "inclusion_prob"].min() > steady.max()


def test_the_format_study_is_a_second_reading_of_the_pool(store: Store, tmp_path: Path) -> None:
    # What a team runs: the judge's model scores the pool answers again in the format study
    # (`judgelab probe --biases format`). An answer whose pass verdict changes with the format
    # flips; the active design sees it. Brute force: every plain or format-study verdict per answer.
    judge = FakeJudge(seed=0, model="claude-x", family="claude", noise=0.6)
    result = run_probes(judge, store, n=300, biases="format", formats="binary,likert5",
                        evidence=tmp_path / "f.jsonl", progress=False)
    assert result.summary.finished
    verdicts = store.query(
        "SELECT j.answer_id, j.passed FROM judgements j JOIN judge_runs r USING (run_id)"
        " WHERE r.model = 'claude-x' AND j.kind = 'pointwise' AND j.passed IS NOT NULL"
        " AND (j.probe IS NULL OR j.probe = 'format')")
    assert (verdicts["answer_id"].value_counts() >= 3).sum() > 100  # the pool's answers, read again
    changed = verdicts.groupby("answer_id")["passed"].nunique()
    expected = sorted(changed.index[changed > 1])
    assert len(expected) > 10
    assert store.judge_flips("run1")["answer_id"].tolist() == expected
    batch = draw_active_batch(store, target_half_width=12.0, overlap=0.0, seed=1, run_id="run1")
    assert f"the judge disagreed with itself on {len(expected)} of 600 answers" in batch.notes[0]
    apply_active_batch(store, batch, 4)
    draws = store.active_design(batch.design_id)[2]
    assert sorted(draws.loc[draws["flipped"], "answer_id"]) == expected


def test_a_batch_stores_its_probabilities_with_the_floor_and_the_batch_size(store: Store) -> None:
    batch = draw_active_batch(store, target_half_width=12.0, overlap=0.2, seed=1)
    assert any("a format study (`judgelab probe --biases format`)" in n for n in batch.notes)  # no flips
    apply_active_batch(store, batch, 4)
    params, batches, draws = store.active_design(batch.design_id)
    assert params["target_half_width"] == 12.0 and list(batches["batch"]) == [1]
    assert len(draws) == 600 and set(draws["batch"]) == {1}
    free = draws[~draws["known"]]
    # Answers are the units here: the probabilities add up to the batch's expected labels.
    assert free["inclusion_prob"].sum() == pytest.approx(batches["expected_labels"].iloc[0])
    assert free["inclusion_prob"].min() >= batch.plan.floor - 1e-12
    assert free["inclusion_prob"].min() < free["inclusion_prob"].max()  # the judge's doubt shows
    near = free["judge_score"].isin([2, 4])
    assert free.loc[near, "inclusion_prob"].mean() > free.loc[~near, "inclusion_prob"].mean()
    items = store.design_items(batch.draw_id)
    assert set(items["answer_id"]) == set(draws.loc[draws["drawn"], "answer_id"])
    assert np.allclose(items["weight"], 1 / items["inclusion_prob"])


def test_the_batch_keeps_every_queue_guarantee(store: Store) -> None:
    batch = draw_active_batch(store, target_half_width=12.0, overlap=0.2, seed=2)
    made = apply_active_batch(store, batch, 4)
    rows = store.design_assignments(batch.draw_id)
    assert len(rows) == len(made) == int(batch.items["n_raters"].sum())
    # Exactly k: each answer has its n_raters distinct raters, no more.
    per_answer = rows.groupby("answer_id")["rater_id"].nunique()
    wanted = batch.items.set_index("answer_id")["n_raters"]
    assert (per_answer.reindex(wanted.index) == wanted).all()
    # Balanced families per rater: each family's answers spread over the raters within one (the
    # batch itself need not hold the families equally: it follows the judge's doubt).
    counts = rows.groupby(["rater", "family"]).size().unstack(fill_value=0)
    assert (counts.max() - counts.min() <= 1).all()
    # Spread: a rater never gets two answers of one task back to back.
    for _, queue in rows.sort_values("queue_pos").groupby("rater_id"):
        tasks = queue["task_id"].tolist()
        assert all(a != b for a, b in itertools.pairwise(tasks))
    assert "boss" not in set(rows["rater"])


def test_batches_wait_for_labels_then_learn_from_them_and_stop_at_the_target(store: Store, truth: pd.Series) -> None:
    first = draw_active_batch(store, target_half_width=12.0, seed=3)
    apply_active_batch(store, first, 4)
    status = active_status(store)
    assert status is not None and status.state == "labelling" and status.figures is None
    with pytest.raises(InputError, match="Batch 1"):
        draw_active_batch(store, seed=3)
    assert label_everything(store, truth) == first.n_new
    status = active_status(store)
    assert status is not None and status.state in ("ready", "reached")
    assert len(status.looks) == 1 and status.labels_collected == first.n_new
    for _ in range(6):
        if status.state != "ready":
            break
        assert status.labels_needed > 0 and "Draw the next batch" in status.message
        nxt = draw_active_batch(store, seed=3)
        assert nxt.plan.prediction.n_labelled >= first.n_new  # recomputed from the labels so far
        assert not np.allclose(nxt.plan.prediction.pred_pass, first.plan.prediction.pred_pass)
        apply_active_batch(store, nxt, 4)
        label_everything(store, truth)
        status = active_status(store)
        assert status is not None
    assert status.state == "reached" and status.reached
    assert "Target reached" in status.message and "may stop" in status.message
    assert status.looks["reached"].iloc[-1] and status.figures is not None and status.figures.gap is not None
    assert status.figures.gap.half_width <= 12.0
    with pytest.raises(InputError, match="Target reached"):
        draw_active_batch(store, seed=3)
    # The report names the estimator and the interval it used.
    report = calibrate(store)
    assert report.design is not None and report.design.active is not None
    assert "active AIPW" in report.design.text() and "alpha-spending" in report.design.text()
    gap = report.residuals["pass"].gap
    assert gap is not None and gap.interval.startswith("repeated CI")
    assert gap.estimate == pytest.approx(status.figures.gap.estimate)
    store.release()
    out = store.path.parent / "report.md"
    result = CliRunner().invoke(main, ["calibrate", "--db", str(store.path), "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "active AIPW" in result.stdout and "repeated 95% confidence intervals" in result.stdout
    assert "active AIPW" in out.read_text()


def test_a_small_first_batch_is_a_first_look_not_a_spent_plan(store: Store, truth: pd.Series) -> None:
    # Ten labels against a ±6 pp target are a few percent of the plan's information: the
    # O'Brien-Fleming-type plan spends ~1e-30 of its alpha there. That used to round to nothing
    # (1 − α/2 == 1.0), the look got no interval, and the Overview said the plan was spent.
    first = draw_active_batch(store, target_half_width=6.0, batch_size=10, seed=3)
    apply_active_batch(store, first, 4)
    label_everything(store, truth)
    status = active_status(store)
    assert status is not None and status.state == "ready", status.message
    tau, critical = float(status.looks["tau"].iloc[-1]), float(status.looks["critical"].iloc[-1])
    assert tau < 0.07 and math.isfinite(critical) and critical > 5
    assert "Draw the next batch" in status.message
    # With the default margin this look spends ~1e-315 (below the smallest double; its critical
    # value was then infinite); read as t on a handful of labels it came out astronomically wide
    # (issue 52: "±13,263,157,866,567 pp"), so it is no interval yet, in words, nowhere a number.
    assert "no interval yet" in status.message and "more than 200 pp" not in status.message, status.message
    assert status.looks["no_interval"].notna().all() and status.looks["half_width"].isna().all()
    nxt = draw_active_batch(store, seed=3)
    assert nxt.n_new > 0


def test_simulated_raters_get_no_active_batch(store: Store) -> None:
    store.add_rater("bot", simulated=True)
    batch = draw_active_batch(store, target_half_width=12.0, seed=4)
    with pytest.raises(InputError, match="simulated"):
        apply_active_batch(store, batch, ["rater0", "bot"])
    assert store.active_designs().empty


def test_a_new_design_needs_a_target(store: Store) -> None:
    with pytest.raises(InputError, match="target"):
        draw_active_batch(store, seed=0)


# -- the command line ------------------------------------------------------------------------------


def unlabelled_of(store: Store, rater: str) -> set[str]:
    """The answers a rater holds that nobody has labelled (brute force over the tables)."""
    held = store.query("SELECT s.answer_id FROM assignments s JOIN raters r USING (rater_id)"
                       " WHERE s.kind = 'score' AND r.name = ?", [rater])["answer_id"]
    labelled = set(store.query("SELECT DISTINCT answer_id FROM labels")["answer_id"])
    return set(held) - labelled


def test_a_rater_revoked_mid_batch_strands_answers_until_they_are_reassigned(store: Store, truth: pd.Series) -> None:
    batch = draw_active_batch(store, target_half_width=12.0, overlap=0.3, seed=4)
    made = apply_active_batch(store, batch, 4)
    leaver = str(made["rater"].value_counts().index[0])
    # Everyone labels but the leaver, who is revoked before labelling anything.
    for r in store.query("SELECT s.assignment_id, s.rater_id, s.answer_id FROM assignments s JOIN raters r"
                         " USING (rater_id) WHERE s.kind = 'score' AND r.name <> ?", [leaver]).itertuples():
        score = 5.0 if truth[r.answer_id] else 2.0
        store.add_label(int(r.rater_id), int(r.assignment_id), overall=score, criteria={"helpful": score})
    store.revoke_rater(leaver)
    stranded = unlabelled_of(store, leaver)
    assert stranded  # the leaver's answers, less the overlap ones a colleague labelled
    status = active_status(store)
    assert status is not None and status.state == "labelling"
    assert int(status.batches["stranded"].iloc[0]) == len(stranded)
    assert f"{len(stranded)} of its answers are in no active rater's queue" in status.message
    with pytest.raises(InputError, match="no active rater's queue"):
        draw_active_batch(store, seed=4)

    given = reassign_active_batch(store, 3)
    assert set(given["answer_id"]) == stranded and leaver not in set(given["rater"])
    # Exactly the batch's n_raters per stranded answer, none a rater who held it already.
    wanted = batch.items.set_index("answer_id")["n_raters"]
    assert (given.groupby("answer_id")["rater_id"].nunique() == wanted.reindex(sorted(stranded))).all()
    rows = store.design_assignments(batch.draw_id)
    assert not rows.duplicated(["rater_id", "answer_id"]).any()
    for _, queue in rows.sort_values("queue_pos").groupby("rater_id"):
        tasks = queue["task_id"].tolist()
        assert all(a != b for a, b in itertools.pairwise(tasks))
    assert reassign_active_batch(store, 3).empty  # nothing stranded is left
    status = active_status(store)
    assert status is not None and int(status.batches["stranded"].iloc[0]) == 0
    assert "when the batch is complete" in status.message and "no active rater" not in status.message

    label_everything(store, truth)
    status = active_status(store)
    # The batch is complete without the leaver's unanswered assignments; the draw is unchanged.
    assert status is not None and status.state in ("ready", "reached")
    assert status.labels_collected == batch.n_new
    draws = store.active_design(batch.design_id)[2]
    assert np.allclose(draws["inclusion_prob"], batch.draws()["inclusion_prob"])


def test_answers_in_a_revoked_raters_queue_are_drawn_for_the_batch(store: Store) -> None:
    # Before any design, a rater was given every answer and then left: nobody will label them,
    # so a batch that drew them must give them to someone.
    store.assign_k(store.query("SELECT answer_id FROM answers")["answer_id"].tolist(), 1, [1])
    store.revoke_rater("rater0")
    batch = draw_active_batch(store, target_half_width=12.0, overlap=0.0, seed=5)
    drawn = batch.draws()
    assert batch.n_new == int((drawn["drawn"] & ~drawn["known"]).sum()) > 0
    assert not any("already wait" in n for n in batch.notes)
    made = apply_active_batch(store, batch, 3)
    assert "rater0" not in set(made["rater"])


def test_cli_reassigns_a_revoked_raters_answers(store: Store) -> None:
    db = str(store.path)
    store.release()
    code, out, _ = run("--db", db, "--active", "--target-half-width", "12", "--apply", "--overlap", "0",
                       "--raters", "rater1")
    assert code == 0 and "Applied:" in out
    Store(db).revoke_rater("rater1")
    Store(db).release()
    code, out, _ = run("--db", db, "--active")
    assert code == 0 and "in no active rater's queue" in out
    code, out, _ = run("--db", db, "--active", "--apply", "--raters", "rater2")
    assert code == 0 and "Reassigned:" in out and "rater2" in out
    code, out, err = run("--db", db, "--active", "--apply", "--raters", "rater2")
    assert code == 2 and "finish labelling" in err


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["design", *args])
    return result.exit_code, result.stdout, result.stderr


def test_cli_draws_applies_reports_and_refuses_while_labelling(store: Store, truth: pd.Series) -> None:
    db = str(store.path)
    store.release()
    code, out, _ = run("--db", db, "--active", "--target-half-width", "12")
    assert code == 0 and "Next batch 1" in out and "Not applied" in out
    code, out, _ = run("--db", db, "--active", "--target-half-width", "12", "--apply", "--overlap", "0")
    assert code == 0 and "Active design" in out and "Applied:" in out and "alpha-spending" in out
    code, out, err = run("--db", db, "--active", "--apply")
    assert code == 2 and "Batch 1" in err and "finish labelling" in err
    label_everything(Store(db), truth)
    code, out, _ = run("--db", db, "--active", "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["status"]["state"] in ("ready", "reached")
    assert payload["status"]["looks"][0]["look"] == 1
    if payload["status"]["state"] == "ready":
        assert payload["batch"]["batch"] == 2
    code, out, err = run("--db", db, "--active", "--n", "5")
    assert code == 2 and "--active takes" in err


def test_the_pool_scored_with_judgelab_score_plans_designs_and_a_probe_run_does_not(store: Store) -> None:
    # What a team does: score the pool (`judgelab score`, two formats), run the format study, then
    # plan. The scoring run's calls sit in probe 'score' with the format as the arm: they are the
    # judge's plain scores, read in the rubric's scale. The format study came last but altered
    # nothing it scored; it must not become the run designs and the report default to.
    db = str(store.path)
    store.release()
    cli = CliRunner()
    scored = cli.invoke(main, ["score", "--db", db, "--judge", "fake", "--model", "claude-x",
                               "--formats", "likert5,numeric100"])
    assert scored.exit_code == 0, scored.stderr
    run_id = Store(db).latest_scored_run()
    probed = cli.invoke(main, ["probe", "--db", db, "--judge", "fake", "--model", "claude-x", "--biases", "format",
                               "--formats", "binary,likert5", "--n", "50", "--out", str(store.path.parent / "f.jsonl")])
    assert probed.exit_code == 0, probed.stderr
    again = Store(db)
    assert again.latest_scored_run() == run_id and again.judge_run_info()["run_id"] == run_id  # type: ignore[index]
    scores = again.judge_scores()
    assert len(scores) == 600 and set(scores["run_id"]) == {run_id}
    assert scores["value"].between(1, 5).all()  # likert5, not the 0-100 scores of the same run
    again.release()
    code, out, err = run("--db", db, "--n", "40")
    assert code == 0 and "(600 answers scored)" in out, err
    code, out, err = run("--db", db, "--active", "--target-half-width", "12")
    assert code == 0 and "Next batch 1" in out, err
    # The fake judge has no noise: the format study's verdicts agree with the scoring run's.
    assert "the judge never disagreed with itself on these answers" in out


def test_the_store_names_the_scoring_run_and_the_format_study_as_the_runner_does() -> None:
    # labeler cannot import calibration; the two names it reads judgements by must stay in step.
    from judgelab.calibration.probes.format_study import NAME
    from judgelab.calibration.scoring import SCORE_PROBE
    from judgelab.labeler.store._core import _READING_PROBES, _SCORING_PROBES

    assert _SCORING_PROBES == (SCORE_PROBE,) and _READING_PROBES == (NAME,)


def test_cli_says_what_it_drew_before_the_status_with_one_count(store: Store) -> None:
    """Issue 29 item 7: "Drew batch 1" comes first, and its count is the status's "answers drawn".

    Some answers already wait in a rater's queue: they are drawn to label but get no new
    assignment, which made "41 answers drawn" (status, printed first) and "34 answers to label"
    (the batch) disagree.
    """
    answers = store.query("SELECT answer_id FROM answers WHERE variant = 'original' ORDER BY answer_id")
    rater2 = int(store.query("SELECT rater_id FROM raters WHERE name = 'rater2'")["rater_id"].iloc[0])
    store.assign_k(answers["answer_id"].tolist()[::2], 1, [rater2])
    db = str(store.path)
    store.release()
    code, out, _ = run("--db", db, "--active", "--target-half-width", "12", "--apply", "--overlap", "0",
                       "--raters", "rater1")
    assert code == 0, out
    drew = out.index("Drew batch 1")
    assert drew < out.index("Status after this command") < out.index("  batch 1:"), out
    said = int(re.search(r"Drew batch 1 of \S+: (\d+) answers drawn to label", out).group(1))  # type: ignore[union-attr]
    listed = int(re.search(r"  batch 1: (\d+) answers drawn to label", out).group(1))  # type: ignore[union-attr]
    assert said == listed, out
    assert "already in a rater's queue" in out, out
    # Issue 32: the plan says what saving it expects, and when that holds, before the team commits.
    assert "Expected labels against simple random sampling: active" in out, out
    assert "holds only where the judge's score tells where people disagree with it" in out, out


def test_a_target_the_pool_cannot_reach_gets_one_piece_of_advice(store: Store, truth: pd.Series) -> None:
    """Issue 29 item 7: not "Draw the next batch" beside "Labels needed: more than the pool holds"."""
    from judgelab.admin import active_view

    first = draw_active_batch(store, target_half_width=0.5, batch_size=40, seed=3)
    apply_active_batch(store, first, 4)
    label_everything(store, truth)
    status = active_status(store)
    assert status is not None and status.state == "ready", status.message
    assert "Draw the next batch." not in status.message
    assert "out of reach" in status.message and "or stop here" in status.message, status.message
    view = active_view(store)
    assert view is not None and "out of reach" in view.needed, view.needed


def test_the_design_states_its_predicted_saving_before_and_after_its_first_look(store: Store,
                                                                                truth: pd.Series) -> None:
    # Issue 32: a team reads the saving the plan expects, with its basis, before it commits.
    from judgelab.calibration.active import active_saving

    first = draw_active_batch(store, target_half_width=12.0, seed=3)
    apply_active_batch(store, first, 4)
    before = active_saving(store)
    assert before is not None and before.labels_seen == 0 and math.isnan(before.measured_ratio)
    assert 0 < before.active_ratio <= 1.2 and 0 < before.stratified_ratio <= 1.2
    label_everything(store, truth)
    after = active_saving(store)
    assert after is not None and after.labels_seen == first.n_new
    assert math.isfinite(after.measured_ratio) and after.ratio >= after.active_ratio
    assert "predicted from" in after.basis and "holds while" in after.basis and "design effect" in after.basis


@pytest.mark.parametrize("errors", ["random", "near the threshold"])
def test_a_batch_falls_back_to_simple_random_sampling_when_the_labels_show_no_saving(
        store: Store, template: Path, errors: str) -> None:
    # Issue 43 (2): the labels so far decide. People disagree with the judge on 15% of the answers
    # at random, or on 45% of those its score puts next to the boundary (4 and 2) and never elsewhere.
    pool = pd.read_csv(template.with_suffix(".csv")).set_index("answer_id")
    gen = np.random.default_rng(5)
    near = pool["judge_score"].isin([2, 4]).to_numpy()
    flip = gen.random(len(pool)) < (0.15 if errors == "random" else np.where(near, 0.45, 0.0))
    human = pd.Series(np.where(flip, 1 - pool["judge_pass"], pool["judge_pass"]).astype(bool), index=pool.index)
    first = draw_active_batch(store, target_half_width=3.0, seed=3, batch_size=160)
    apply_active_batch(store, first, 4)
    assert label_everything(store, human) >= 100
    second = draw_active_batch(store, seed=4, batch_size=80)
    free = ~second.plan.known
    said = [n for n in second.notes if n.startswith("no saving expected")]
    if errors == "random":
        assert len(said) == 1 and "drawn by simple random sampling" in said[0] and "95% CI" in said[0]
        assert np.ptp(second.plan.prob[free]) == pytest.approx(0.0, abs=1e-12)  # every unit alike: SRS
    else:
        assert not said and np.ptp(second.plan.prob[free]) > 0.1


def test_cli_active_status_takes_interval_as_calibrate_does(store: Store, truth: pd.Series) -> None:
    # A two-rater refusal names `--interval panel` as its fix: `design --active` must take it.
    db = str(store.path)
    store.release()
    code, out, _ = run("--db", db, "--active", "--target-half-width", "12", "--apply", "--overlap", "0",
                       "--raters", "2")
    assert code == 0 and "to 2 raters" in out
    label_everything(Store(db), truth)
    scopes = {}
    for interval in ("raters", "panel"):
        code, out, _ = run("--db", db, "--active", "--json", "--interval", interval)
        assert code == 0
        gap = json.loads(out)["status"]["gap"]
        scopes[interval] = gap["extra"]["scope"]
        # An interval, one refused (two raters), or none yet (issue 52: wider than any gap can be).
        assert gap["ci_low"] is not None or "refused" in gap["extra"] or gap["extra"].get("no_interval")
    assert scopes["raters"].startswith("raters") and scopes["panel"] == "this panel only"


def test_cli_says_no_interval_yet_for_an_early_look_never_a_huge_number(store: Store, truth: pd.Series) -> None:
    # Issue 52 (16): an early look printed "±13,263,157,866,567 pp" (and 1.3e+16 in the table).
    db = str(store.path)
    store.release()
    code, out, err = run("--db", db, "--active", "--target-half-width", "6", "--batch-size", "10", "--apply",
                         "--raters", "4")
    assert code == 0, err
    label_everything(Store(db), truth)
    code, out, err = run("--db", db, "--active")
    assert code == 0, err
    assert "no interval yet" in out and "more than 200" not in out, out
    assert not re.search(r"e\+\d\d|\d{4,}\.\d", out), out  # no 1.3e+16, no 13375770000000000.00
    assert "nanx" not in out
    code, out, _ = run("--db", db, "--active", "--json")
    looks = json.loads(out)["status"]["looks"]
    assert looks[0]["half_width"] is None and looks[0]["no_interval"], looks
    gap = json.loads(out)["status"]["gap"]
    assert gap["ci_low"] is None and gap["extra"]["no_interval"]
