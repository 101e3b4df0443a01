"""The admin pages under AppTest.

Admins get in, raters and strangers do not, and each page's main action works end to end
against a temporary database.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from judgelab import admin
from judgelab.labeler.models import Answer, Criterion, ImportedLabel, Rubric, Task
from judgelab.labeler.store import Store

PAGES = Path(__file__).resolve().parents[2] / "judgelab" / "views"
ADMIN_PAGES = [
    "admin_overview.py",
    "admin_raters.py",
    "admin_data.py",
    "admin_assignments.py",
    "admin_agreement.py",
]


@pytest.fixture
def db(store: Store, monkeypatch: pytest.MonkeyPatch) -> Store:
    """The test's store, served to the pages through ``$JUDGELAB_DB``."""
    monkeypatch.setenv("JUDGELAB_DB", str(store.path))
    return store


@pytest.fixture
def tokens(db: Store) -> dict[str, str]:
    """An admin's and a rater's invite tokens."""
    _, admin_token = db.add_rater("boss", role="admin")
    _, rater_token = db.add_rater("ann")
    return {"admin": admin_token, "rater": rater_token}


def open_page(name: str, token: str | None) -> AppTest:
    at = AppTest.from_file(str(PAGES / name), default_timeout=60)
    if token is not None:
        at.query_params["t"] = token
    return at.run()


def errors(at: AppTest) -> list[str]:
    return [str(e.value) for e in at.error]


def frame(at: AppTest, *columns: str) -> pd.DataFrame:
    """The first table on the page that has all of ``columns`` (tables carry no key)."""
    for element in at.dataframe:
        value = element.value
        if all(c in value.columns for c in columns):
            return value
    raise AssertionError(f"no table with columns {columns}")


def seed(store: Store) -> None:
    """Two tasks, four answers, a binary rubric and two raters' labels."""
    store.add_rubric(Rubric("bin", 1, "Binary", "binary", "accept", (Criterion("c", "C", "d"),)))
    store.add_pool(
        [Task("t1", "p1", "billing"), Task("t2", "p2", "account")],
        [Answer(f"{t}-{f}", t, f, f"{f}-model", "text") for t in ("t1", "t2") for f in ("fa", "fb")],
    )
    labels = []
    for rater, scores in (("ann", [1, 1, 0, 0]), ("bob", [1, 0, 0, 0])):
        ids = ["t1-fa", "t1-fb", "t2-fa", "t2-fb"]
        labels += [ImportedLabel(a, rater, s, s >= 1, {"c": s}) for a, s in zip(ids, scores,
                                                                                strict=True)]
    store.add_imported_labels(labels)


# -- access -------------------------------------------------------------------------------


@pytest.mark.parametrize("page", ADMIN_PAGES)
def test_admin_page_opens_for_an_admin(page: str, tokens: dict[str, str], db: Store) -> None:
    seed(db)
    at = open_page(page, tokens["admin"])
    assert not at.exception, at.exception
    assert not any("Access denied" in e for e in errors(at))
    assert at.title[0].value


@pytest.mark.parametrize("page", ADMIN_PAGES)
def test_admin_page_refuses_a_rater(page: str, tokens: dict[str, str], db: Store) -> None:
    seed(db)
    at = open_page(page, tokens["rater"])
    assert not at.exception
    assert errors(at) == ["Access denied: this page is for admins."]
    assert not at.title and not at.dataframe and not at.button


@pytest.mark.parametrize("page", ADMIN_PAGES)
def test_admin_page_refuses_a_missing_or_revoked_token(page: str, tokens: dict[str, str],
                                                       db: Store) -> None:
    assert "no invite token" in errors(open_page(page, None))[0]
    db.revoke_rater("boss")
    assert "revoked" in errors(open_page(page, tokens["admin"]))[0]


# -- overview -------------------------------------------------------------------------------


def test_overview_shows_labels_per_answer(tokens: dict[str, str], db: Store) -> None:
    seed(db)
    db.add_rater("sim-1", simulated=True)
    at = open_page("admin_overview.py", tokens["admin"])
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Done"] == "0 of 0"
    assert metrics["Person-hours left"] == "0.0 h"
    per_answer = frame(at, "labels", "answers")
    assert per_answer.values.tolist() == [[2, 4]]  # four answers with two labels each


# -- raters -------------------------------------------------------------------------------


def test_raters_invite_shows_the_link_once_and_it_works(tokens: dict[str, str],
                                                        db: Store) -> None:
    at = open_page("admin_raters.py", tokens["admin"])
    at.text_input(key="invite_name").set_value("carol")
    at.button(key="invite_submit").click().run()
    assert not at.exception
    links = [c.value for c in at.code]
    assert len(links) == 1 and links[0].startswith("http://localhost:8501/?t=")
    assert db.authenticate(links[0].split("?t=")[1]).name == "carol"
    table = frame(at, "rater", "status")
    assert "carol" in table["rater"].tolist() and "token_hash" not in table.columns
    at.run()  # any later run: the link is gone
    assert not at.code


def test_raters_duplicate_name_is_an_error(tokens: dict[str, str], db: Store) -> None:
    at = open_page("admin_raters.py", tokens["admin"])
    at.text_input(key="invite_name").set_value("ann")
    at.button(key="invite_submit").click().run()
    assert any("already exists" in e for e in errors(at))
    assert not at.code


def test_raters_revoke_and_new_link(tokens: dict[str, str], db: Store) -> None:
    at = open_page("admin_raters.py", tokens["admin"])
    at.selectbox(key="revoke_name").set_value("ann").run()
    at.button(key="revoke_button").click().run()
    assert [s.value for s in at.success] == ["Revoked ann."]
    table = frame(at, "rater", "status").set_index("rater")
    assert table.loc["ann", "status"] == "revoked"
    at.selectbox(key="reissue_name").set_value("ann").run()
    at.button(key="reissue_button").click().run()
    link = at.code[0].value
    assert db.authenticate(link.split("?t=")[1]).name == "ann"
    with pytest.raises(Exception, match="not valid"):
        db.authenticate(tokens["rater"])


def test_raters_admin_cannot_revoke_self(tokens: dict[str, str], db: Store) -> None:
    at = open_page("admin_raters.py", tokens["admin"])
    at.selectbox(key="revoke_name").set_value("boss").run()
    at.button(key="revoke_button").click().run()
    assert any("your own link" in e for e in errors(at))
    assert db.authenticate(tokens["admin"]).name == "boss"


# -- data ---------------------------------------------------------------------------------

RUBRIC = b"""\
id = "support"
version = 2
name = "Support"
scale = "likert5"
pass_rule = "4 or 5"
[author]
kind = "human"
name = "QA"
[[criteria]]
id = "correct"
name = "Correct"
description = "Nothing false."
"""


def upload(at: AppTest, kind: str, name: str, data: bytes) -> AppTest:
    at.selectbox(key="upload_kind").set_value(kind)
    at.file_uploader(key="upload_file").set_value((name, data, "application/octet-stream"))
    return at.button(key="upload_submit").click().run()


def test_data_upload_imports_and_lists_the_rubric(tokens: dict[str, str], db: Store) -> None:
    at = open_page("admin_data.py", tokens["admin"])
    upload(at, "rubric", "support.toml", RUBRIC)
    assert not at.exception
    assert [s.value for s in at.success] == ["support.toml: 1 rubrics added"]
    versions = frame(at, "rubric_id", "version")
    assert versions[["rubric_id", "version"]].values.tolist() == [["support", 2]]


def test_data_bad_upload_shows_the_error_and_imports_nothing(tokens: dict[str, str],
                                                             db: Store) -> None:
    at = open_page("admin_data.py", tokens["admin"])
    bad = b"task_id,prompt,answer_id,family,model,text\nT1,p,T1-a,f,m,ok\nT1,p,T1-b,f,m,\n"
    upload(at, "answers", "pool.csv", bad)
    assert not at.exception
    assert errors(at) and errors(at)[0].startswith("pool.csv, row 2, column 'text':")
    assert db.answers().empty


def test_data_self_identifying_list_and_masking(tokens: dict[str, str], db: Store) -> None:
    db.add_rubric(Rubric("bin", 1, "Binary", "binary", "accept", (Criterion("c", "C", "d"),)))
    db.add_pool([Task("t1", "p")], [
        Answer("t1-a", "t1", "fa", "m", "As an AI developed by OpenAI, I can help.",
               self_id_spans=((0, 37, "As an AI developed by OpenAI"),)),
    ])
    at = open_page("admin_data.py", tokens["admin"])
    assert frame(at, "answer_id", "matches")["answer_id"].tolist() == ["t1-a"]
    at.selectbox(key="mask_scope").set_value("rubric:bin")
    at.radio(key="mask_choice").set_value("masked")
    at.button(key="mask_save").click().run()
    assert not at.exception
    assert db.setting("rubric:bin", "mask_self_id") == "true"
    assert [s.value for s in at.success] == [
        "Self-identifying spans are now masked for raters (rubric:bin)."]
    state = frame(at, "scope", "setting").set_index("scope")
    assert state.loc["rubric:bin", "setting"] == "masked"
    assert state.loc["project", "setting"] == "not set"
    at.selectbox(key="mask_scope").set_value("rubric:bin")
    at.radio(key="mask_choice").set_value("shown")
    at.button(key="mask_save").click().run()
    assert db.setting("rubric:bin", "mask_self_id") == "false"
    assert not db.mask_self_id("bin")
    assert frame(at, "scope", "setting").set_index("scope").loc["rubric:bin", "raters see"] == \
        "shown"


def test_data_offers_label_exports(tokens: dict[str, str], db: Store) -> None:
    seed(db)
    at = open_page("admin_data.py", tokens["admin"])
    labels = sorted(b.label for b in at.get("download_button"))
    assert labels == ["designs.json", "labels.csv", "labels.jsonl", "labels.parquet"]


def test_data_exports_every_kind_and_imports_with_ignored_columns(tokens: dict[str, str], db: Store) -> None:
    seed(db)
    at = open_page("admin_data.py", tokens["admin"])
    assert list(at.selectbox(key="export_kind").options) == list(admin.EXPORT_KINDS)
    at.selectbox(key="export_kind").set_value("audits").run()
    assert not at.exception, at.exception
    assert sorted(b.label for b in at.get("download_button")) == ["audits.csv", "audits.jsonl", "audits.parquet",
                                                                  "designs.json"]
    assert at.text_input(key="upload_ignore") is not None


# -- agreement ----------------------------------------------------------------------------


def test_agreement_page_shows_alpha_kappa_and_leniency(tokens: dict[str, str],
                                                       db: Store) -> None:
    seed(db)
    at = open_page("admin_agreement.py", tokens["admin"])
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    # Same data as the hand-worked test in test_admin_functions: alpha = 16/30.
    assert metrics["Krippendorff's alpha, overall score"] == "0.53"
    kappas = frame(at, "rater_a", "rater_b")
    assert kappas[["rater_a", "rater_b"]].values.tolist() == [["ann", "bob"]]
    assert kappas["kappa"].iloc[0] == pytest.approx(0.5)
    alpha = frame(at, "criterion", "alpha")
    assert alpha["criterion"].tolist() == ["c", "passed"]


# -- assignments --------------------------------------------------------------------------


def test_assignments_gives_the_filtered_subset_to_k_raters(tokens: dict[str, str],
                                                          db: Store) -> None:
    seed(db)
    db.add_rater("cy")
    at = open_page("admin_assignments.py", tokens["admin"])
    at.multiselect(key="assign_families").set_value(["fa"]).run()
    assert frame(at, "family", "variant", "answers").values.tolist() == [["fa", "original", 2]]
    at.number_input(key="assign_k_value").set_value(2)
    at.button(key="assign_submit").click().run()
    assert not at.exception, at.exception
    assert errors(at) == []
    assert at.success[0].value.startswith("4 assignments added over 2 items")
    progress = db.assignment_progress()
    assert set(progress["name"]) == {"ann", "cy"}  # the active non-admin raters
    assert int(progress["assigned"].sum()) == 4
    per_answer = db.labels_per_answer().set_index("answer_id")["assigned"]
    assert per_answer.loc[["t1-fa", "t2-fa"]].tolist() == [2, 2]
    # Again: each answer already has k raters, so nothing more is added.
    at.button(key="assign_submit").click().run()
    assert at.success[0].value.startswith("0 assignments added")
    assert int(db.assignment_progress()["assigned"].sum()) == 4


def test_assignments_refuses_k_above_the_raters_chosen(tokens: dict[str, str],
                                                       db: Store) -> None:
    seed(db)
    at = open_page("admin_assignments.py", tokens["admin"])
    at.multiselect(key="assign_raters").set_value([db.authenticate(tokens["rater"]).rater_id])
    at.number_input(key="assign_k_value").set_value(1)
    at.button(key="assign_submit").click().run()
    assert at.success[0].value.startswith("4 assignments added over 4 items")


def test_assignments_draws_shows_and_applies_a_design(tokens: dict[str, str],
                                                      db: Store) -> None:
    db.add_rubric(Rubric("bin", 1, "Binary", "binary", "accept", (Criterion("c", "C", "d"),)))
    db.add_pool(
        [Task(f"t{i}", f"p{i}", "billing" if i % 2 else "account") for i in range(10)],
        [Answer(f"t{i}-{f}", f"t{i}", f, f"{f}-m", "x") for i in range(10) for f in ("fa", "fb")],
    )
    db.add_rater("cy")
    at = open_page("admin_assignments.py", tokens["admin"])
    at.number_input(key="design_n").set_value(8)
    at.button(key="design_draw").click().run()
    assert not at.exception, at.exception
    table = frame(at, "stratum", "sampled_answers")
    assert table["stratum"].tolist()[-1] == "total"
    assert int(table["sampled_answers"].iloc[-1]) == 8
    at.button(key="design_apply").click().run()
    assert not at.exception, at.exception
    assert errors(at) == []
    assert "assignments made for design" in at.success[0].value
    progress = db.assignment_progress()
    assert set(progress["name"]) == {"ann", "cy"}
    assert db.query("SELECT count(*) AS n FROM designs WHERE applied_at IS NOT NULL")["n"][0] == 1


# -- through the entry point ----------------------------------------------------------------


def test_admin_pages_are_in_the_navigation_for_admins_only(tokens: dict[str, str],
                                                           db: Store) -> None:
    seed(db)
    app = str(PAGES.parent / "app.py")
    at = AppTest.from_file(app, default_timeout=60)
    at.query_params["t"] = tokens["admin"]
    at.run()
    assert not at.exception, at.exception
    for page, title in (("admin_overview.py", "Overview"), ("admin_raters.py", "Raters"),
                        ("admin_data.py", "Data"), ("admin_assignments.py", "Assignments"),
                        ("admin_agreement.py", "Agreement"), ("admin_audit.py", "Audit trail")):
        at.switch_page(f"views/{page}").run()
        assert not at.exception, (page, at.exception)
        assert at.title[0].value == title
        assert at.query_params["t"] == tokens["admin"]  # a reload stays signed in
    rater = AppTest.from_file(app, default_timeout=60)
    rater.query_params["t"] = tokens["rater"]
    rater.run()
    assert not rater.exception and rater.title[0].value == "Rate"
    # Not in a rater's navigation at all (and the page itself refuses them, tested above).
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        rater.switch_page("views/admin_raters.py")


def test_assignments_pairs_and_audits(tokens: dict[str, str], db: Store) -> None:
    db.add_rubric(Rubric("bin", 1, "Binary", "binary", "accept", (Criterion("c", "C", "d"),)))
    tasks = [Task(f"t{i}", f"p{i}") for i in range(3)]
    answers = [Answer(f"t{i}-{f}", f"t{i}", f, "m", "x") for i in range(3) for f in ("fa", "fb")]
    answers += [Answer(f"t{i}-pad", f"t{i}", "fa", "m", "x x", "padded", f"t{i}-fa")
                for i in range(3)]
    db.add_pool(tasks, answers)
    at = open_page("admin_assignments.py", tokens["admin"])
    at.button(key="pair_submit").click().run()
    assert not at.exception, at.exception
    assert at.success[0].value.startswith("3 assignments added over 3 items")
    at.number_input(key="audit_n").set_value(2)
    at.button(key="audit_submit").click().run()
    assert at.success[0].value.startswith("2 assignments added over 2 items")
    kinds = db.assignment_progress().set_index("kind")["assigned"].to_dict()
    assert kinds == {"audit": 2, "pair": 3}


def test_the_raters_table_shows_no_raw_none(tokens: dict[str, str], db: Store) -> None:
    """A rater never revoked shows a dash where the revoke time would be, not Streamlit's ``None``."""
    seed(db)
    at = open_page("admin_raters.py", tokens["admin"])
    table = frame(at, "rater", "status", "revoked_at")
    assert not table.map(lambda v: v is None or v == "None" or (not isinstance(v, str) and pd.isna(v))).any().any()
    assert set(table.loc[table["status"] == "active", "revoked_at"]) == {"—"}
