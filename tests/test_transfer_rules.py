"""The rules of moving data in and out.

What the app wrote re-imports with its history, CSV cells neutralised against formulas come back
as written, nothing unknown is dropped silently, and history that does not fit is refused.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab import admin
from judgelab.cli import main
from judgelab.labeler.errors import ConflictError, InputError
from judgelab.labeler.exports import export_table, rubric_toml, table_bytes
from judgelab.labeler.importers import import_file
from judgelab.labeler.models import ImportedLabel
from judgelab.labeler.schemas import SCHEMAS
from judgelab.labeler.store import Store
from tests.app.conftest import build_pool
from tests.conftest import DATA

REPO = Path(__file__).resolve().parent.parent
CRIT_SCORES = {"correct": 4.0, "complete": 3.0, "tone": 5.0}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


# -- what the app wrote --------------------------------------------------------------------------


def test_app_labels_edits_preferences_and_audits_move_to_another_database(tmp_path: Path) -> None:
    pool = build_pool(tmp_path / "app.duckdb", n_tasks=2)
    store = pool.store
    alice, _ = store.add_rater("alice")
    bob, _ = store.add_rater("bob")
    store.assign_k(pool.originals, 2, [alice.rater_id, bob.rater_id], seed=1)
    for rater in (alice.rater_id, bob.rater_id):
        first, second = store.rater_queue(rater)[:2]
        store.add_label(rater, first.assignment_id, overall=4, criteria=CRIT_SCORES, comment="=SUM(A1)")
        store.add_label(rater, first.assignment_id, overall=2, criteria=CRIT_SCORES, comment="changed my mind")
        store.add_label(rater, second.assignment_id, overall=None, flag_reason="not in English")
    store.assign_pairs([(pool.originals[0], pool.originals[1])], [alice.rater_id])
    pair_item = store.rater_queue(alice.rater_id, "pair")[0]
    store.add_pair_label(alice.rater_id, pair_item.assignment_id, 2, comment="+1 obvious")
    store.add_pair_label(alice.rater_id, pair_item.assignment_id, -1)
    store.assign_audits(pool.padded[:1], [bob.rater_id])
    audit_item = store.rater_queue(bob.rater_id, "audit")[0]
    store.add_audit(bob.rater_id, audit_item.assignment_id, True, note="@mention")
    store.add_audit(bob.rater_id, audit_item.assignment_id, False)
    boss, _ = store.add_rater("boss", role="admin")
    store.adjudicate(boss.rater_id, pool.originals[0], rubric_id="support", version=1, overall=3, comment="=verdict")
    store.adjudicate(boss.rater_id, pool.originals[0], rubric_id="support", version=1, overall=4,
                     comment="second look")

    other = Store(tmp_path / "other.duckdb")
    for kind, suffix in (("answers", "jsonl"), ("labels", "csv"), ("pair_labels", "parquet"), ("audits", "csv")):
        path = tmp_path / f"{kind}.{suffix}"
        path.write_bytes(table_bytes(export_table(store, kind), suffix))  # type: ignore[arg-type]
        if kind == "answers":
            (tmp_path / "r.toml").write_text(rubric_toml(store.rubric()))  # type: ignore[arg-type]
            import_file(other, "rubric", tmp_path / "r.toml")
        import_file(other, kind, path)
        before, after = export_table(store, kind), export_table(other, kind)
        id_col = SCHEMAS[kind].columns[0].name
        if id_col.endswith("_id") and kind != "answers":
            # App rows are stored as imports; the history is the same with the new ids.
            before = before.assign(source=before["source"].replace("app", "import"))
            for frame in (before, after):
                ids = {old: i for i, old in enumerate(frame[id_col])}
                frame[id_col] = range(len(frame))
                frame["supersedes"] = [None if pd.isna(s) else ids[s] for s in frame["supersedes"]]
        pd.testing.assert_frame_equal(before, after, check_dtype=False)
        assert sum(import_file(store, kind, path).added.values()) == 0, "its own export changes nothing"
    labels = other.export_frame("labels")
    assert sorted(labels["comment"]) == ["", "", "=SUM(A1)", "=SUM(A1)", "=verdict", "changed my mind",
                                         "changed my mind", "second look"]
    assert labels["current"].sum() == 5 and labels["flag_reason"].notna().sum() == 2
    # The admin's adjudication stays an adjudication, with its history.
    adjudicated = labels[labels["source"] == "adjudicated"]
    assert list(adjudicated["overall"]) == [3, 4]
    assert adjudicated["supersedes"].iloc[1] == adjudicated["label_id"].iloc[0]
    # The command line exports the kinds it used to refuse (audits) the same way.
    for kind, rows in (("audits", 2), ("pair_labels", 2)):
        code, out, _ = run("export", kind, "--out", str(tmp_path / f"cli-{kind}.jsonl"), "--db", str(pool.path))
        assert code == 0 and out.startswith(f"wrote {rows} {kind} rows")
        assert (tmp_path / f"cli-{kind}.jsonl").read_bytes() == table_bytes(export_table(store, kind), "jsonl")
    code, _, _ = run("export", "rubric", "--out", str(tmp_path / "cli.toml"), "--db", str(pool.path))
    assert code == 0 and (tmp_path / "cli.toml").read_text() == rubric_toml(store.rubric())  # type: ignore[arg-type]


# -- neutralised cells -----------------------------------------------------------------------------


def test_a_neutralised_cell_comes_back_as_written_and_a_live_formula_is_refused(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    import_file(store, "rubric", DATA / "rubric.toml")
    import_file(store, "answers", DATA / "answers.jsonl")
    store.add_imported_labels([ImportedLabel("T001-a", "ann", 4, True, comment="=HYPERLINK(1)"),
                               ImportedLabel("T001-b", "ann", 2, False, comment="'quoted")],
                              rubric=("support-reply", 1))
    text = admin.export_labels(store, "csv").data.decode()
    assert "'=HYPERLINK(1)" in text and "''quoted" in text
    fresh = Store(tmp_path / "fresh.duckdb")
    import_file(fresh, "rubric", DATA / "rubric.toml")
    import_file(fresh, "answers", DATA / "answers.jsonl")
    (tmp_path / "labels.csv").write_text(text)
    import_file(fresh, "labels", tmp_path / "labels.csv")
    assert sorted(fresh.export_frame("labels")["comment"]) == ["'quoted", "=HYPERLINK(1)"]
    (tmp_path / "live.csv").write_text("answer_id,rater,score,comment\nT002-a,ann,4,=HYPERLINK(1)\n")
    with pytest.raises(InputError, match="spreadsheet formula"):
        import_file(fresh, "labels", tmp_path / "live.csv")


# -- no silent drops -------------------------------------------------------------------------------


def test_unknown_columns_are_named_and_can_be_ignored_explicitly(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    run("import", "rubric", str(DATA / "rubric.toml"), "--db", db)
    run("import", "answers", str(DATA / "answers.jsonl"), "--db", db)
    (tmp_path / "l.csv").write_text("answer_id,rater,score,tool_id,Score\nT001-a,ann,4,x,4\n")
    code, _, err = run("import", "labels", str(tmp_path / "l.csv"), "--db", db)
    assert code == 2 and "unknown column(s) ['tool_id', 'Score']" in err and "'criterion:<id>'" in err
    assert "--ignore-columns tool_id,Score" in err
    code, out, _ = run("import", "labels", str(tmp_path / "l.csv"), "--ignore-columns", "tool_id,Score", "--db", db)
    assert code == 0 and "1 labels added" in out
    code, _, err = run("import", "labels", str(tmp_path / "l.csv"), "--ignore-columns", "nope", "--db", db)
    assert code == 2 and "['nope'], which the file does not have" in err
    (tmp_path / "c.csv").write_text("answer_id,rater,score,criterion:speed\nT002-a,ann,4,3\n")
    code, _, err = run("import", "labels", str(tmp_path / "c.csv"), "--db", db)
    assert code == 2 and "'speed' is not a criterion of rubric 'support-reply'" in err
    (tmp_path / "r.toml").write_text("language = 'en'\n" + (DATA / "rubric.toml").read_text())
    code, _, err = run("import", "rubric", str(tmp_path / "r.toml"), "--db", db)
    assert code == 2 and "unknown key(s) ['language']" in err
    assert run("import", "rubric", str(tmp_path / "r.toml"), "--ignore-columns", "language", "--db", db)[0] == 0


# -- history that does not fit ---------------------------------------------------------------------


@pytest.fixture
def labelled(tmp_path: Path) -> Store:
    store = Store(tmp_path / "p.duckdb")
    import_file(store, "rubric", DATA / "rubric.toml")
    import_file(store, "answers", DATA / "answers.jsonl")
    (tmp_path / "h.csv").write_text("label_id,supersedes,rater,answer_id,score\n7,,ann,T001-a,4\n8,7,ann,T001-a,2\n")
    assert import_file(store, "labels", tmp_path / "h.csv").added == {"labels": 2}
    return store


@pytest.mark.parametrize(("text", "words", "error"), [
    ("label_id,supersedes,rater,answer_id,score\n1,,ann,T002-a,4\n2,9,ann,T002-a,2\n",
     "supersedes 9, which is not the label_id of an earlier row", InputError),
    ("label_id,supersedes,rater,answer_id,score\n1,,ann,T002-a,4\n2,1,bob,T002-a,2\n",
     "a label of another rater or item", InputError),
    ("label_id,supersedes,rater,answer_id,score\n1,,ann,T002-a,4\n2,1,ann,T002-a,2\n3,1,ann,T002-a,3\n",
     "label_id 1 is already superseded by row 2", InputError),
    ("label_id,supersedes,rater,answer_id,score,current\n1,,ann,T002-a,4,true\n2,1,ann,T002-a,2,true\n",
     "says current = True but row 2 supersedes it", InputError),
    # The stored history is 4 -> 2; a file that edits the 4 differently would fork it.
    ("label_id,supersedes,rater,answer_id,score\n1,,ann,T001-a,4\n2,1,ann,T001-a,5\n",
     "already superseded by a different edit", ConflictError),
    ("rater,answer_id,score\nann,T001-a,3\n", "already has a different imported label", ConflictError),
])
def test_history_that_does_not_fit_is_refused(labelled: Store, tmp_path: Path, text: str, words: str,
                                             error: type[Exception]) -> None:
    (tmp_path / "bad.csv").write_text(text)
    before = len(labelled.export_frame("labels"))
    with pytest.raises(error, match=words):
        import_file(labelled, "labels", tmp_path / "bad.csv")
    assert len(labelled.export_frame("labels")) == before


def test_an_edit_of_a_stored_history_is_added_to_it(labelled: Store, tmp_path: Path) -> None:
    (tmp_path / "more.csv").write_text(
        "label_id,supersedes,rater,answer_id,score\n7,,ann,T001-a,4\n8,7,ann,T001-a,2\n9,8,ann,T001-a,3\n")
    assert import_file(labelled, "labels", tmp_path / "more.csv").added == {"labels": 1}
    frame = labelled.export_frame("labels")
    assert list(frame["overall"]) == [4, 2, 3] and list(frame["current"]) == [False, False, True]
    assert frame["supersedes"].iloc[2] == frame["label_id"].iloc[1]


# -- verdicts and judgements -----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "words", "column"), [
    ("pair_id,judge_model,shown_first,winner\nP9,j,a,a\n", "pair 'P9' is not in the database", "pair_id"),
    ("pair_id,judge_model,shown_first,winner\nP1,j,first,a\n", "'first' is not one of a, b", "shown_first"),
    ("pair_id,judge_model,shown_first,winner\nP1,j,a,c\n", "'c' is not one of a, b, tie", "winner"),
    ("pair_id,judge_model,shown_first,winner,parse_error\nP1,j,a,a,oops\n", "a winner and a parse_error",
     "parse_error"),
    ("pair_id,judge_model,shown_first,winner\nP1,j,a,a\nP1,j,a,a\n",
     "judged twice with answer a shown first \\(rows 1 and 2\\), with the same verdict", "shown_first"),
    ("pair_id,judge_model,shown_first,winner\nP1,j,a,a\nP1,j,a,b\n",
     "rows disagree: row 1 says winner a, row 2 winner b", "winner"),
])
def test_bad_verdicts_are_refused_with_their_place(tmp_path: Path, text: str, words: str, column: str) -> None:
    store = Store(tmp_path / "p.duckdb")
    (tmp_path / "pairs.csv").write_text("id,prompt,answer_a,answer_b,gold\nP1,q,x,y,A\n")
    import_file(store, "pairs", tmp_path / "pairs.csv")
    (tmp_path / "v.csv").write_text(text)
    with pytest.raises(InputError, match=words) as info:
        import_file(store, "verdicts", tmp_path / "v.csv")
    assert info.value.column == column and info.value.fix
    assert store.export_frame("judgements").empty


def test_a_repeated_verdict_row_and_a_conflicting_one_get_different_fixes(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    (tmp_path / "pairs.csv").write_text("id,prompt,answer_a,answer_b,gold\nManual/0,q,x,y,A\n")
    import_file(store, "pairs", tmp_path / "pairs.csv")
    fixes = []
    for text in ("pair_id,judge_model,shown_first,winner\nManual/0,j,a,a\nManual/0,j,a,a\n",
                 "pair_id,judge_model,shown_first,winner\nManual/0,j,a,a\nManual/0,j,a,tie\n"):
        (tmp_path / "v.csv").write_text(text)
        with pytest.raises(InputError) as info:
            import_file(store, "verdicts", tmp_path / "v.csv")
        assert "with a shown first" not in str(info.value) and "answer a shown first" in str(info.value)
        fixes.append(info.value.fix or "")
    assert "trial column" in fixes[0] and "delete the repeated row" in fixes[0]
    assert "keep the row that is right" in fixes[1] and "not for a correction" in fixes[1]


def test_a_corrected_verdicts_file_is_refused_naming_row_and_order_and_a_new_run_id_stores_it(
        tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    (tmp_path / "pairs.csv").write_text("id,prompt,answer_a,answer_b,gold\nManual/0,q,x,y,A\nManual/1,q2,u,v,B\n")
    import_file(store, "pairs", tmp_path / "pairs.csv")
    head = "pair_id,judge_model,shown_first,winner\n"
    (tmp_path / "v.csv").write_text(head + "Manual/0,j,a,a\nManual/0,j,b,a\nManual/1,j,a,b\n")
    import_file(store, "verdicts", tmp_path / "v.csv")
    (tmp_path / "v.csv").write_text(head + "Manual/0,j,a,a\nManual/0,j,b,b\nManual/1,j,a,b\n")
    with pytest.raises(ConflictError) as info:
        import_file(store, "verdicts", tmp_path / "v.csv")
    message = str(info.value)
    assert "row 2: pair 'Manual/0', answer b shown first (judge 'j', run 'import:j') was imported before" in message
    assert "Manual/0:b" not in message, "no internal answer id"
    assert "new run_id" in (info.value.fix or "") and "'j-corrected'" in (info.value.fix or "")
    (tmp_path / "v2.csv").write_text("run_id," + head.replace("\n", "") + "\n"
                                     + "j-corrected,Manual/0,j,a,a\nj-corrected,Manual/0,j,b,b\n")
    assert import_file(store, "verdicts", tmp_path / "v2.csv").added == {"judgements": 2}


def test_judgement_rows_must_fit_their_format(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    import_file(store, "answers", DATA / "answers.jsonl")
    cases = [
        ("answer_id,judge_model,format,score\nT001-a,j,pairwise5,1\n", "answer_b_id is empty"),
        ("answer_id,answer_b_id,judge_model,format,score\nT001-a,T001-b,j,likert5,4\n", "is for pairwise formats"),
        ("answer_id,judge_model,format,score,parse_error\nT001-a,j,likert5,4,why\n", "a result and a parse_error"),
        ("answer_id,judge_model,format,score,call_id\nT001-a,j,likert5,4,c1\nT001-b,j,likert5,4,c1\n",
         "appears twice"),
    ]
    for text, words in cases:
        (tmp_path / "j.csv").write_text(text)
        with pytest.raises(InputError, match=words):
            import_file(store, "judgements", tmp_path / "j.csv")
    (tmp_path / "ok.csv").write_text("answer_id,judge_model,format,parse_error,raw\nT001-a,j,likert5,no score,hmm\n")
    assert import_file(store, "judgements", tmp_path / "ok.csv").added == {"judgements": 1}
    assert store.run_counts("import:j")["parse_failures"] == 1


# -- the admin page and the documentation ----------------------------------------------------------


@pytest.mark.parametrize("kind", admin.EXPORT_KINDS)
def test_the_data_page_exports_every_kind_in_its_schema(labelled: Store, kind: str) -> None:
    download = admin.export_data(labelled, kind, "csv")  # type: ignore[arg-type]
    assert download.file_name == f"{kind}.csv" and download.mime == "text/csv"
    header = pd.read_csv(io.BytesIO(download.data), nrows=0).columns
    names = SCHEMAS[kind].names  # type: ignore[index]
    assert [c for c in header if c in names] == list(names)


