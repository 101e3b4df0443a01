"""The admin functions behind the admin pages, on small databases checked by hand."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest

from judgelab import admin
from judgelab.labeler.errors import AccessError, InputError
from judgelab.labeler.models import Answer, Criterion, ImportedLabel, Rubric, Task
from judgelab.labeler.store import MASK_DEFAULT, MASK_KEY, Store
from judgelab.labeler.timing import DEFAULT_MINUTES_PER_LABEL, FLOOR_MINUTES_PER_LABEL

RUBRIC_TOML = """\
id = "support"
version = 1
name = "Support answers"
scale = "likert5"
pass_threshold = 4
pass_rule = "overall 4 or 5"
[author]
kind = "human"
name = "QA"
[[criteria]]
id = "correct"
name = "Correct"
description = "Says nothing false."
"""
ANSWERS_CSV = (
    "task_id,prompt,category,answer_id,family,model,text\n"
    "T1,Reset my password?,account,T1-a,fam1,model-1,Use the reset link.\n"
    "T1,Reset my password?,account,T1-b,fam2,model-2,Click Forgot password.\n"
)


def binary_store(store: Store) -> Store:
    """Four answers (one per task), a binary rubric, two raters' imported labels.

    ann: 1 1 0 0, bob: 1 0 0 0 (answers a1..a4).
    """
    store.add_rubric(Rubric("bin", 1, "Binary", "binary", "accept", (Criterion("c", "C", "d"),)))
    store.add_pool(
        [Task(f"t{i}", f"prompt {i}", "cat") for i in range(1, 5)],
        [Answer(f"a{i}", f"t{i}", "fam", "model", f"text {i}") for i in range(1, 5)],
    )
    labels = []
    for rater, scores in (("ann", [1, 1, 0, 0]), ("bob", [1, 0, 0, 0])):
        for i, score in enumerate(scores, start=1):
            labels.append(ImportedLabel(f"a{i}", rater, score, score >= 1, {"c": score}))
    store.add_imported_labels(labels)
    return store


# -- raters ----------------------------------------------------------------------------


def test_invite_link_uses_env_base_url(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGELAB_BASE_URL", "https://label.example.org/")
    invite = admin.invite_rater(store, "ann")
    assert invite.link.startswith("https://label.example.org/?t=")
    token = invite.link.split("?t=", 1)[1]
    assert store.authenticate(token).name == "ann"
    assert not invite.rater.is_admin


def test_invite_link_defaults_to_localhost(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUDGELAB_BASE_URL", raising=False)
    invite = admin.invite_rater(store, "boss", admin=True)
    assert invite.link.startswith("http://localhost:8501/?t=")
    assert invite.rater.is_admin


def test_reissue_replaces_the_old_link_and_revoke_stops_it(store: Store) -> None:
    old = admin.invite_rater(store, "ann").link.split("?t=")[1]
    new = admin.reissue_link(store, "ann").split("?t=")[1]
    assert new != old
    with pytest.raises(AccessError):
        store.authenticate(old)
    assert store.authenticate(new).name == "ann"
    admin.revoke_rater(store, "ann")
    with pytest.raises(AccessError, match="revoked"):
        store.authenticate(new)
    # A new link lets a revoked rater in again.
    again = admin.reissue_link(store, "ann").split("?t=")[1]
    assert store.authenticate(again).name == "ann"


def test_an_admin_cannot_revoke_themselves(store: Store) -> None:
    boss = admin.invite_rater(store, "boss", admin=True).rater
    with pytest.raises(InputError, match="your own link"):
        admin.revoke_rater(store, "boss", acting=boss)
    assert admin.rater_table(store).set_index("name").loc["boss", "status"] == "active"


def test_rater_table_never_shows_tokens_and_marks_simulated(store: Store) -> None:
    invite = admin.invite_rater(store, "ann")
    store.add_rater("sim-1", simulated=True)
    admin.revoke_rater(store, "ann")
    table = admin.rater_table(store)
    assert "token_hash" not in table.columns
    token = invite.link.split("?t=")[1]
    text = table.to_csv()
    assert token not in text
    stored_hashes = store.query("SELECT token_hash FROM raters")["token_hash"]
    assert not any(h in text for h in stored_hashes)
    assert table["rater"].tolist() == ["ann", "sim-1 (simulated)"]
    assert table["status"].tolist() == ["revoked", "active"]


# -- uploads ---------------------------------------------------------------------------


def test_upload_imports_through_the_validated_importer(store: Store) -> None:
    summary = admin.import_upload(store, "rubric", "support.toml", RUBRIC_TOML.encode())
    assert summary.added == {"rubrics": 1}
    summary = admin.import_upload(store, "answers", "pool.csv", ANSWERS_CSV.encode())
    assert summary.added == {"tasks": 1, "answers": 2}
    assert sorted(store.answers()["answer_id"]) == ["T1-a", "T1-b"]
    versions = admin.rubric_versions(store)
    assert versions[["rubric_id", "version", "criteria"]].values.tolist() == [["support", 1, 1]]


def test_bad_upload_names_the_uploaded_file_and_imports_nothing(store: Store) -> None:
    broken = ANSWERS_CSV + "T2,Second,account,T2-a,fam1,model-1,\n"  # empty text in row 3
    with pytest.raises(InputError) as caught:
        admin.import_upload(store, "answers", "my pool.csv", broken.encode())
    err = caught.value
    assert err.file == "my pool.csv" and err.row == 3 and err.column == "text"
    assert str(err).startswith("my pool.csv, row 3, column 'text':")
    assert "judgelab-upload" not in str(err)
    assert store.answers().empty and store.tasks().empty


def test_upload_keeps_the_suffix_so_the_reader_matches(store: Store) -> None:
    rows = [
        {"task_id": "T9", "prompt": "p", "answer_id": "T9-a", "family": "f", "model": "m",
         "text": "hello"},
    ]
    jsonl = "\n".join(json.dumps(r) for r in rows).encode()
    assert admin.import_upload(store, "answers", "x.jsonl", jsonl).added["answers"] == 1
    with pytest.raises(InputError, match=r"unsupported file type '\.xlsx'"):
        admin.import_upload(store, "answers", "x.xlsx", b"PK\x03\x04")


def test_unknown_import_kind_is_refused(store: Store) -> None:
    with pytest.raises(InputError, match="unknown import kind 'rubrics'"):
        admin.import_upload(store, "rubrics", "r.toml", b"")  # type: ignore[arg-type]


# -- self-identifying text and masking -----------------------------------------------------


def test_self_identifying_table_and_masking_settings(store: Store, tmp_path: Path) -> None:
    admin.import_upload(store, "rubric", "support.toml", RUBRIC_TOML.encode())
    csv = (
        "task_id,prompt,answer_id,family,model,text\n"
        "T1,Help?,T1-a,fam1,model-1,As an AI developed by OpenAI I cannot browse.\n"
        "T1,Help?,T1-b,fam2,model-2,Click the reset link.\n"
    )
    admin.import_upload(store, "answers", "pool.csv", csv.encode())
    table = admin.self_identifying_table(store)
    assert table["answer_id"].tolist() == ["T1-a"]
    assert "OpenAI" in table["matches"].iloc[0]
    assert "[[" in table["excerpt"].iloc[0] and "]]" in table["excerpt"].iloc[0]

    assert admin.mask_scopes(store) == ["project", "rubric:support"]
    assert admin.masking_state(store) == {"project": None, "rubric:support": None}
    default = "masked" if MASK_DEFAULT else "shown"
    assert admin.masking_table(store)["raters see"].tolist() == [default, default]
    admin.set_masking(store, "project", True)
    admin.set_masking(store, "rubric:support", False)
    assert admin.masking_state(store) == {"project": True, "rubric:support": False}
    assert store.setting("project", MASK_KEY) == "true"
    assert store.setting("rubric:support", MASK_KEY) == "false"
    table = admin.masking_table(store).set_index("scope")
    # The rubric's "shown" wins over the project's "masked" for raters of that rubric.
    assert table.loc["rubric:support"].tolist() == ["shown", "shown"]
    assert table.loc["project"].tolist() == ["masked", "masked"]
    assert store.mask_self_id("support") is False
    with pytest.raises(InputError, match="unknown masking scope"):
        admin.set_masking(store, "rubric:nope", True)


# -- export ----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", admin.EXPORT_FORMATS)
def test_export_labels_round_trips(store: Store, fmt: admin.ExportFormat) -> None:
    binary_store(store)
    download = admin.export_labels(store, fmt)
    assert download.file_name == f"labels.{fmt}"
    if fmt == "csv":
        back = pd.read_csv(io.BytesIO(download.data))
    elif fmt == "jsonl":
        back = pd.read_json(io.BytesIO(download.data), lines=True)
    else:
        back = pd.read_parquet(io.BytesIO(download.data))
    assert len(back) == 8
    assert sorted(back["rater"].unique()) == ["ann", "bob"]
    assert back["current"].all()


def test_csv_export_neutralises_formulas(store: Store) -> None:
    store.add_pool([Task("t1", "p")], [Answer("a1", "t1", "f", "m", "x")])
    store.add_imported_labels([ImportedLabel("a1", "ann", 1, True, comment="=HYPERLINK(1)")])
    text = admin.export_labels(store, "csv").data.decode()
    assert "'=HYPERLINK(1)" in text


# -- answer selection -------------------------------------------------------------------------


def _catalog_store(store: Store) -> Store:
    tasks = [Task(f"t{i}", "p", "billing" if i % 2 else "account") for i in (1, 2, 3, 10)]
    answers = []
    for t in tasks:
        for fam in ("fa", "fb"):
            answers.append(Answer(f"{t.task_id}-{fam}", t.task_id, fam, f"{fam}-m", "x"))
        answers.append(Answer(f"{t.task_id}-fa-pad", t.task_id, "fa", "fa-m", "x x", "padded",
                              f"{t.task_id}-fa"))
    store.add_pool(tasks, answers)
    return store


def test_select_answers_by_category_variant_family_and_task_range(store: Store) -> None:
    _catalog_store(store)
    catalog = store.answer_catalog()
    assert len(catalog) == 12
    assert admin.task_order(store) == ["t1", "t2", "t3", "t10"]  # natural order, not t1, t10
    originals = admin.select_answers(catalog, variants=["original"])
    assert len(originals) == 8
    billing_fa = admin.select_answers(catalog, categories=["billing"], families=["fa"])
    assert sorted(billing_fa["answer_id"]) == ["t1-fa", "t1-fa-pad", "t3-fa", "t3-fa-pad"]
    middle = admin.select_answers(catalog, task_range=("t2", "t10"), variants=["original"])
    assert sorted(set(middle["task_id"])) == ["t10", "t2", "t3"] and len(middle) == 6
    assert admin.subset_summary(middle).values.tolist() == [["fa", "original", 3],
                                                            ["fb", "original", 3]]
    with pytest.raises(InputError, match="after its end"):
        admin.select_answers(catalog, task_range=("t10", "t2"))
    with pytest.raises(InputError, match="unknown task 'zz'"):
        admin.select_answers(catalog, task_range=("t1", "zz"))


def test_assign_each_to_k_checks_its_inputs(store: Store) -> None:
    with pytest.raises(InputError, match="no answers selected"):
        admin.assign_each_to_k(store, [], 2, [1, 2])
    with pytest.raises(InputError, match="k must be at least 1"):
        admin.assign_each_to_k(store, ["a"], 0, [1, 2])
    with pytest.raises(InputError, match="only 1 are chosen"):
        admin.assign_each_to_k(store, ["a"], 2, [1, 1])


# -- overview (imported labels only; assignment progress is tested with the rater app) ----


def test_median_seconds_prefers_people_over_simulated_raters() -> None:
    frame = pd.DataFrame({"simulated": [True, True, False, False, False],
                          "seconds": [1.0, 1.0, 30.0, 50.0, 40.0]})
    assert admin.median_seconds(frame) == (40.0, "3 timed labels by people")
    only_sim = frame[frame["simulated"]]
    median, basis = admin.median_seconds(only_sim)
    assert median == 1.0 and "simulated" in basis
    median, basis = admin.median_seconds(frame.iloc[:0])
    assert math.isnan(median) and basis == "no timed labels yet"


def test_hours_left_never_rest_on_hurried_seconds(store: Store) -> None:
    # Seen on the demo: six labels clicked through in about a second each gave a median of
    # 0 s and "0.0 h" left for 25 items. Hours left are planned as the design planner plans.
    store.add_rubric(Rubric("bin", 1, "Binary", "binary", "accept", (Criterion("c", "C", "d"),)))
    store.add_pool([Task(f"t{i}", f"prompt {i}") for i in range(8)],
                   [Answer(f"a{i}", f"t{i}", "fam", "model", f"text {i}") for i in range(8)])
    store.add_imported_labels([ImportedLabel(f"a{i}", "ann", 1, True, {"c": 1}, seconds=0.4 + i / 10)
                               for i in range(6)])
    cy, _ = store.add_rater("cy")
    admin.assign_each_to_k(store, [f"a{i}" for i in range(8)], 1, [cy.rater_id])
    view = admin.overview(store)
    assert view.median_seconds < 1
    assert view.minutes_per_label == FLOOR_MINUTES_PER_LABEL
    assert view.minutes_source.endswith(f"at least the floor of {FLOOR_MINUTES_PER_LABEL:g} min")
    assert view.person_hours_left == pytest.approx(8 * FLOOR_MINUTES_PER_LABEL / 60)


def test_overview_counts_labels_per_answer(store: Store) -> None:
    binary_store(store)
    store.add_imported_labels([ImportedLabel("a1", "cy", 1, True)])
    view = admin.overview(store)
    # a1 has 3 raters (ann, bob, cy); a2..a4 have 2.
    assert view.labels_per_answer.values.tolist() == [[2, 3], [3, 1]]
    assert view.assigned == 0 and view.person_hours_left == 0.0
    assert math.isnan(view.share_done)
    # Raters who came with imported labels show, with their labels and nothing assigned.
    rows = view.per_rater.set_index("rater")
    assert rows["labels"].to_dict() == {"ann": 4, "bob": 4, "cy": 1}
    assert rows["assigned"].tolist() == [0, 0, 0] and rows["share_done"].isna().all()


# -- agreement ---------------------------------------------------------------------------------


def test_agreement_on_a_hand_worked_binary_example(store: Store) -> None:
    binary_store(store)
    report = admin.agreement_report(store, n_resamples=200)
    # Coincidences: o11 = 2, o10 = o01 = 1, o00 = 4; n0 = 5, n1 = 3, n = 8.
    # D_o = 2/8; D_e = 2*5*3 / (8*7) = 30/56; alpha = 1 - (2/8)/(30/56) = 16/30.
    assert report.level == "nominal"
    assert math.isclose(report.overall.estimate, 16 / 30, abs_tol=1e-12)
    assert report.overall.n == 4
    crit = report.per_criterion.set_index("criterion")
    assert math.isclose(crit.loc["c", "alpha"], 16 / 30, abs_tol=1e-12)
    assert math.isclose(crit.loc["passed", "alpha"], 16 / 30, abs_tol=1e-12)
    # Kappa: p_o = 3/4, p_e = (2/4)(1/4) + (2/4)(3/4) = 1/2, kappa = (3/4 - 1/2)/(1/2) = 1/2.
    assert report.kappas[["rater_a", "rater_b"]].values.tolist() == [["ann", "bob"]]
    assert math.isclose(report.kappas["kappa"].iloc[0], 0.5, abs_tol=1e-12)
    assert math.isclose(report.kappas["percent_agreement"].iloc[0], 0.75, abs_tol=1e-12)
    # Leniency: ann - bob per answer = 0, 1, 0, 0 -> +0.25; bob -0.25.
    lenient = report.leniency.set_index("rater")["leniency"]
    assert lenient.to_dict() == pytest.approx({"ann": 0.25, "bob": -0.25})
    assert (report.n_labels, report.n_answers, report.n_raters, report.n_flagged) == (8, 4, 2, 0)
    assert report.kappa_basis.startswith("unweighted kappa")


def test_agreement_on_likert_uses_ordinal_alpha_and_names_a_lenient_rater(store: Store) -> None:
    store.add_rubric(Rubric("lk", 1, "Likert", "likert5", "4+",
                            (Criterion("c1", "C1", "d"), Criterion("c2", "C2", "d"))))
    n = 30
    store.add_pool([Task(f"t{i}", "p") for i in range(n)],
                   [Answer(f"a{i}", f"t{i}", "f", "m", "x") for i in range(n)])
    rng = np.random.default_rng(3)
    truth = rng.integers(1, 5, size=n)  # 1..4, so +1 stays on the scale
    labels = []
    for rater, bias in (("ann", 0), ("bob", 0), ("cy", 0), ("dee", 1)):
        for i in range(n):
            score = int(truth[i] + bias)
            labels.append(ImportedLabel(f"a{i}", rater, score, score >= 4,
                                        {"c1": score, "c2": int(truth[i])}))
    store.add_imported_labels(labels)
    store.add_rater("sim", simulated=True)
    report = admin.agreement_report(store, "lk", 1, n_resamples=200)
    matrix = np.array([[truth[i] + b for i in range(n)] for b in (0, 0, 0, 1)], dtype=float)
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
    assert report.level == "ordinal"
    assert math.isclose(report.overall.estimate, expected, abs_tol=1e-12)
    crit = report.per_criterion.set_index("criterion")
    assert crit.loc["c2", "alpha"] == 1.0  # everyone gave c2 the same score
    assert math.isclose(crit.loc["c1", "alpha"], expected, abs_tol=1e-12)
    # dee is +1 on every answer: +1 - 0 against the others' mean -> leniency exactly +1.
    lenient = report.leniency.set_index("rater")
    assert lenient.loc["dee", "leniency"] == pytest.approx(1.0)
    assert lenient.loc["ann", "leniency"] == pytest.approx(-1 / 3)
    assert bool(lenient.loc["dee", "stands_out"])
    assert any(s.startswith("dee is more lenient") for s in report.standouts)
    assert len(report.kappas) == 6 and report.kappa_basis.startswith("quadratic")


def test_agreement_leaves_out_flagged_labels_and_survives_one_rater(store: Store) -> None:
    store.add_rubric(Rubric("n", 1, "Numeric", "numeric100", "70+", (Criterion("c", "C", "d"),)))
    store.add_pool([Task("t1", "p")], [Answer("a1", "t1", "f", "m", "x")])
    store.add_imported_labels([ImportedLabel("a1", "ann", 80, True)])
    report = admin.agreement_report(store)
    assert report.level == "interval"
    assert math.isnan(report.overall.estimate)
    assert "two raters" in str(report.overall.extra["reason"])
    assert report.kappas.empty
    assert report.kappa_basis.startswith("unweighted kappa on the pass verdict")


def test_agreement_without_a_rubric_says_what_to_do(store: Store) -> None:
    with pytest.raises(InputError, match="import a rubric"):
        admin.agreement_report(store)


def test_overview_progress_follows_real_assignments_and_labels(store: Store) -> None:
    store.add_rubric(Rubric("lk", 1, "Likert", "likert5", "4+", (Criterion("c", "C", "d"),)))
    store.add_pool([Task(f"t{i}", "p") for i in range(3)],
                   [Answer(f"a{i}{f}", f"t{i}", f, "m", "x") for i in range(3) for f in "xy"])
    ann, _ = store.add_rater("ann")
    bob, _ = store.add_rater("bob")
    sim, _ = store.add_rater("sim", simulated=True)
    ids = [f"a{i}{f}" for i in range(3) for f in "xy"]
    summary = admin.assign_each_to_k(store, ids, 2, [ann.rater_id, bob.rater_id, sim.rater_id])
    assert summary.n_added == 12  # 6 answers x 2 raters

    # ann labels two items, skips one, and edits the first (the edit is not a new item).
    queue = store.rater_queue(ann.rater_id)
    first, second, third = queue[0], queue[1], queue[2]
    for item in (first, second):
        store.open_item(ann.rater_id, item.assignment_id)
        store.add_label(ann.rater_id, item.assignment_id, overall=4, criteria={"c": 4})
    store.skip_item(ann.rater_id, third.assignment_id)
    store.open_item(ann.rater_id, first.assignment_id)
    store.add_label(ann.rater_id, first.assignment_id, overall=2, criteria={"c": 2})
    # bob flags one item unrateable: answered, so done.
    flagged = store.rater_queue(bob.rater_id)[0]
    store.open_item(bob.rater_id, flagged.assignment_id)
    store.add_label(bob.rater_id, flagged.assignment_id, overall=None,
                    flag_reason="empty answer")

    view = admin.overview(store)
    rows = view.per_rater.set_index("rater")
    assert set(rows.index) == {"ann", "bob", "sim (simulated)"}
    assert int(rows["assigned"].sum()) == 12 == view.assigned
    assert rows.loc["ann", "done"] == 2 and rows.loc["bob", "done"] == 1
    assert rows.loc["sim (simulated)", "done"] == 0
    assert view.done == 3 and view.remaining == 9
    assert rows.loc["ann", "share_done"] == pytest.approx(2 / rows.loc["ann", "assigned"])
    assert rows.loc["ann", "done"] == store.progress(ann.rater_id).done  # the rater's own count
    # ann's edit replaced her first label: two current labels, not three.
    assert rows["labels"].to_dict() == {"ann": 2, "bob": 1, "sim (simulated)": 0}
    # Labels per answer: ann labelled two answers, bob one (which may be one of ann's);
    # the other assigned answers have none. Every assigned answer is counted.
    current = store.current_labels()
    per_answer = current.groupby("answer_id")["rater_id"].nunique()
    assert sorted(current["rater_name"]) == ["ann", "ann", "bob"]
    expected = {0: 6 - len(per_answer)}
    for n in per_answer:
        expected[int(n)] = expected.get(int(n), 0) + 1
    dist = dict(zip(view.labels_per_answer["labels"], view.labels_per_answer["answers"],
                    strict=True))
    assert dist == expected and sum(dist.values()) == 6
    # Time: every opened-then-labelled item carries server-clock seconds (edits too);
    # hours left = 9 remaining x the planner's minutes per label: four timed labels are too few
    # to plan with (five are needed), so the default stands, and says so.
    seconds = store.export_frame("labels")["seconds"].dropna()
    assert len(seconds) == 4
    assert view.median_seconds == pytest.approx(float(seconds.median()))
    assert view.seconds_basis == "4 timed labels by people"
    assert view.minutes_per_label == DEFAULT_MINUTES_PER_LABEL
    assert view.minutes_source == "assumed (4 timed labels by people; 5 needed)"
    assert view.person_hours_left == pytest.approx(9 * DEFAULT_MINUTES_PER_LABEL / 60)


def test_raters_from_imports_have_no_link_until_one_is_issued(store: Store) -> None:
    binary_store(store)  # creates ann and bob through imported labels
    status = admin.rater_table(store).set_index("name")["status"]
    assert status.to_dict() == {"ann": "no link (imported)", "bob": "no link (imported)"}
    link = admin.reissue_link(store, "ann")
    assert store.authenticate(link.split("?t=")[1]).name == "ann"
    admin.revoke_rater(store, "ann")
    status = admin.rater_table(store).set_index("name")["status"]
    assert status.to_dict() == {"ann": "revoked", "bob": "no link (imported)"}


def test_agreement_with_no_labels_is_empty_not_an_error(store: Store) -> None:
    store.add_rubric(Rubric("lk", 1, "Likert", "likert5", "4+", (Criterion("c", "C", "d"),)))
    report = admin.agreement_report(store, n_resamples=50)
    assert report.n_labels == 0 and report.kappas.empty and report.leniency.empty
    assert math.isnan(report.overall.estimate)
    assert report.per_criterion["criterion"].tolist() == ["c", "passed"]


def test_agreement_prefers_a_raters_app_label_over_their_imported_one(store: Store) -> None:
    binary_store(store)
    # ann also labels a1 in the app, under the rubric, as 0 (her import said 1).
    ann = store.rater_id_for("ann")
    store.reissue_token("ann")  # an imported rater needs a link to be assigned work
    store.assign_k(["a1"], 1, [ann])
    item = store.rater_queue(ann)[0]
    store.add_label(ann, item.assignment_id, overall=0, criteria={"c": 0})
    report = admin.agreement_report(store, n_resamples=50)
    assert report.n_labels == 8  # still one label per rater and answer
    # ann: 0 1 0 0, bob: 1 0 0 0 -> no unit agrees on a 1: o10 = o01 = 2, o00 = 4, n0 = 6,
    # n1 = 2; D_o = 4/8, D_e = 2*6*2/(8*7) = 24/56; alpha = 1 - (4/8)/(24/56) = -1/6.
    assert math.isclose(report.overall.estimate, -1 / 6, abs_tol=1e-12)


# -- pairwise and audit assignments ---------------------------------------------------------


def test_family_pairs_pair_answers_to_the_same_task(store: Store) -> None:
    _catalog_store(store)
    originals = admin.select_answers(store.answer_catalog(), variants=["original"])
    pairs = admin.family_pairs(originals, "fa", "fb")
    assert pairs == [("t1-fa", "t1-fb"), ("t2-fa", "t2-fb"), ("t3-fa", "t3-fb"),
                     ("t10-fa", "t10-fb")]
    only_fa = admin.select_answers(store.answer_catalog(), families=["fa"])
    assert admin.family_pairs(only_fa, "fa", "fb") == []
    with pytest.raises(InputError, match="two different families"):
        admin.family_pairs(originals, "fa", "fa")
    with pytest.raises(InputError, match="no pairs to assign"):
        admin.assign_pairwise(store, [], 1, [1])


def test_pairwise_assignment_counterbalances_sides(store: Store) -> None:
    _catalog_store(store)
    ann, _ = store.add_rater("ann")
    bob, _ = store.add_rater("bob")
    originals = admin.select_answers(store.answer_catalog(), variants=["original"])
    summary = admin.assign_pairwise(store, admin.family_pairs(originals, "fa", "fb"), 2,
                                    [ann.rater_id, bob.rater_id])
    assert summary.n_added == 8 and summary.items == 4
    progress = store.assignment_progress()
    assert progress["kind"].unique().tolist() == ["pair"]
    # Two raters per pair: one sees it one way round and one the other.
    for rater in (ann, bob):
        assert len(store.rater_queue(rater.rater_id, "pair")) == 4
    rows = store.query(
        "SELECT answer_id AS left_id, answer_b_id AS right_id FROM assignments WHERE kind = 'pair'"
    )
    for _, both in rows.groupby(rows.apply(lambda r: tuple(sorted(r)), axis=1)):
        assert len(both) == 2
        assert set(both["left_id"]) == set(both["right_id"])  # opposite sides


def test_audit_sample_takes_n_seeded_rewrites(store: Store) -> None:
    _catalog_store(store)
    ann, _ = store.add_rater("ann")
    catalog = store.answer_catalog()
    assert admin.rewrite_variants(catalog) == ["padded"]
    summary = admin.assign_audit_sample(store, "padded", 3, 1, [ann.rater_id], seed=7)
    assert summary.n_added == 3 and summary.items == 3
    again = admin.assign_audit_sample(store, "padded", 3, 1, [ann.rater_id], seed=7)
    assert again.n_added == 0 and again.already == 3  # same seed, same sample: nothing new
    everything = admin.assign_audit_sample(store, "padded", 99, 1, [ann.rater_id])
    assert everything.items == 4  # all four padded answers name their original
    with pytest.raises(InputError, match="no 'truncated' answer"):
        admin.assign_audit_sample(store, "truncated", 3, 1, [ann.rater_id])
