"""Importers: every bad file gives one clear error with its place, and nothing is imported."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from judgelab.labeler.errors import ConflictError, InputError
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store

BAD = Path(__file__).parent / "bad_inputs"

GOOD_RUBRIC = """\
id = "good"
version = 1
name = "Good rubric"
scale = "likert5"
pass_threshold = 4
pass_rule = "overall 4 or 5"
[author]
kind = "human"
name = "QA"
[[criteria]]
id = "a"
name = "A"
description = "d"
"""
GOOD_ANSWERS = (
    "task_id,prompt,category,answer_id,family,model,text\n"
    'G1,How do I reset my password?,account,G1-a,fam1,model-1,"Use the reset link on the login page."\n'
    'G1,How do I reset my password?,account,G1-b,fam2,model-2,"Click Forgot password, then check your email."\n'
)


@pytest.fixture
def seeded(store: Store, tmp_path: Path) -> Store:
    (tmp_path / "good.toml").write_text(GOOD_RUBRIC)
    (tmp_path / "good.csv").write_text(GOOD_ANSWERS)
    import_file(store, "rubric", tmp_path / "good.toml")
    import_file(store, "answers", tmp_path / "good.csv")
    return store


def _counts(store: Store) -> dict[str, int]:
    tables = ["rubrics", "rubric_criteria", "tasks", "answers", "pairs", "labels", "pair_labels",
              "judgements", "judge_runs", "raters"]
    return {t: int(store.query(f"SELECT count(*) AS n FROM {t}")["n"][0]) for t in tables}


# (file, kind, words the message must contain, row, column)
CASES = [
    ("answers_missing_column.csv", "answers", "missing required column(s) ['text']", None, None),
    ("answers_duplicate_id.csv", "answers", "duplicate id 'T1-a' (first seen in row 1)", 2, "answer_id"),
    ("answers_empty.csv", "answers", "the file is empty", None, None),
    ("answers_ragged_row.csv", "answers", "has 8 fields but the header has 7", 1, None),
    ("answers_formula_injection.csv", "answers", "spreadsheet formula", 1, "text"),
    ("answers_formula_plus.csv", "answers", "spreadsheet formula", 1, "prompt"),
    ("answers_empty_text.csv", "answers", "is empty", 1, "text"),
    ("answers_task_conflict.csv", "answers", "different prompt", 2, "prompt"),
    ("answers_bad_id.csv", "answers", "is not a valid id", 1, "answer_id"),
    ("answers_unknown_parent.csv", "answers", "parent answer 'T1-zzz'", 1, "parent_answer_id"),
    ("answers_bad_reference_author.csv", "answers", "is not a provenance", 1, "reference_author"),
    ("answers_duplicate_header.csv", "answers", "duplicate column name", None, None),
    ("answers_unclosed_quote.csv", "answers", "is not valid CSV: unexpected end of data", 1, None),
    ("answers_unsupported.xlsx", "answers", "unsupported file type '.xlsx'", None, None),
    ("answers_missing_family.jsonl", "answers", "is empty", 1, "family"),
    ("answers_bad_json.jsonl", "answers", "is not valid JSON", 1, None),
    ("answers_array_line.jsonl", "answers", "is a JSON list, not an object", 1, None),
    ("answers_wrong_type.jsonl", "answers", "expected text, got dict", 1, "text"),
    ("answers_latin1.csv", "answers", "not valid UTF-8", None, None),
    ("answers_not_parquet.parquet", "answers", "not a readable Parquet file", None, None),
    ("answers_enormous_field.csv", "answers", "characters long (limit 100,000)", 1, "text"),
    ("pairs_missing_answer_b.csv", "pairs", "missing required column(s) ['answer_b']", None, None),
    ("pairs_bad_gold.jsonl", "pairs", "gold 'C' is not A, B or tie", 1, "gold"),
    ("pairs_duplicate_id.jsonl", "pairs", "duplicate id 'P1'", 2, "id"),
    ("labels_score_out_of_range.csv", "labels", "outside the allowed range 1 to 5", 1, "score"),
    ("labels_not_number.csv", "labels", "'four' is not a number", 1, "score"),
    ("labels_unknown_answer.csv", "labels", "not in the database: 'NOPE-1'", None, "answer_id"),
    ("labels_duplicate.csv", "labels", "twice (first in row 1)", 2, "answer_id"),
    ("labels_no_score_or_pass.csv", "labels", "neither a score nor a pass", 1, "score"),
    ("labels_bad_bool.csv", "labels", "'maybe' is not a yes/no value", 1, "pass"),
    ("labels_missing_rater.csv", "labels", "missing required column(s) ['rater']", None, None),
    ("judgements_unknown_format.csv", "judgements", "unknown format 'stars10'", 1, "format"),
    ("judgements_bad_order.csv", "judgements", "order 'first' is not AB or BA", 1, "order"),
    ("judgements_out_of_range.csv", "judgements", "outside the allowed range 1 to 5", 1, "score"),
    ("conflict_reimport.csv", "answers", "already stored with different text", None, "answer_id"),
    ("rubric_bad_toml.toml", "rubric", "is not valid TOML", None, None),
    ("rubric_unknown_scale.toml", "rubric", "unknown scale 'stars10'", None, "scale"),
    ("rubric_no_criteria.toml", "rubric", "has no criteria", None, "criteria"),
    ("rubric_threshold_out_of_range.toml", "rubric", "outside the likert5 scale", None, "pass_threshold"),
    ("rubric_missing_author.toml", "rubric", "missing key 'author'", None, "author"),
    ("rubric_duplicate_criterion.toml", "rubric", "invalid or repeated", 2, "criteria.id"),
    ("rubric_bad_author_kind.toml", "rubric", "is not 'human' or 'model'", None, "author.kind"),
    ("rubric_conflict.toml", "rubric", "already stored with different content", None, None),
    # Issue 13: nothing dropped silently, history and verdicts checked.
    ("labels_unknown_column.csv", "labels", "unknown column(s) ['passed']", None, "passed"),
    ("labels_bad_supersedes.csv", "labels", "supersedes 5, which is not the label_id", 2, "supersedes"),
    ("labels_unknown_criterion.csv", "labels", "'zzz' is not a criterion", 1, "criterion:zzz"),
    ("pair_labels_bad_preference.csv", "pair_labels", "outside the allowed range -2 to 2", 1, "preference"),
    ("audits_unknown_answer.csv", "audits", "not in the database: 'NOPE'", None, "original_id"),
    ("judgements_pairwise_without_b.csv", "judgements", "answer_b_id is empty", 1, "answer_b_id"),
    ("verdicts_unknown_pair.csv", "verdicts", "pair 'P1' is not in the database", 1, "pair_id"),
    ("rubric_unknown_key.toml", "rubric", "unknown key(s) ['langauge']", None, "langauge"),
]


def test_corpus_is_complete() -> None:
    assert {c[0] for c in CASES} == {p.name for p in BAD.iterdir()}
    assert len(CASES) >= 30


@pytest.mark.parametrize(("name", "kind", "words", "row", "column"), CASES, ids=[c[0] for c in CASES])
def test_bad_file_gives_one_clear_error_and_imports_nothing(
    seeded: Store, name: str, kind: str, words: str, row: int | None, column: str | None
) -> None:
    before = _counts(seeded)
    with pytest.raises(InputError) as info:
        import_file(seeded, kind, BAD / name)  # type: ignore[arg-type]
    err = info.value
    assert words in str(err)
    assert name in str(err), "the message names the file"
    assert err.row == row
    assert err.column == column
    assert err.fix, "every error says how to fix it"
    assert _counts(seeded) == before


def test_good_import_is_idempotent(seeded: Store, tmp_path: Path) -> None:
    before = _counts(seeded)
    summary = import_file(seeded, "answers", tmp_path / "good.csv")
    assert summary.added == {"tasks": 0, "answers": 0}
    assert summary.unchanged == {"tasks": 1, "answers": 2}
    assert import_file(seeded, "rubric", tmp_path / "good.toml").unchanged == {"rubrics": 1}
    assert _counts(seeded) == before


def test_conflicting_reimport_is_an_error_not_an_overwrite(seeded: Store) -> None:
    with pytest.raises(ConflictError):
        import_file(seeded, "answers", BAD / "conflict_reimport.csv")
    text = seeded.answers().set_index("answer_id").loc["G1-a", "text"]
    assert text == "Use the reset link on the login page."


def test_half_bad_file_imports_nothing(seeded: Store, tmp_path: Path) -> None:
    rows = [GOOD_ANSWERS.splitlines()[0]] + [
        f"N{i},Prompt {i},billing,N{i}-a,fam1,model-1,Answer {i}" for i in range(50)
    ] + ["N99,Prompt,billing,N99-a,fam1,model-1,=cmd|' /C calc'!A0"]
    (tmp_path / "half.csv").write_text("\n".join(rows) + "\n")
    with pytest.raises(InputError) as info:
        import_file(seeded, "answers", tmp_path / "half.csv")
    assert info.value.row == 51
    assert len(seeded.answers()) == 2


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_three_formats_import_the_same_pool(store: Store, tmp_path: Path, suffix: str) -> None:
    frame = pd.read_csv(pd.io.common.StringIO(GOOD_ANSWERS))
    path = tmp_path / f"pool{suffix}"
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path, index=False)
    summary = import_file(store, "answers", path)
    assert summary.added == {"tasks": 1, "answers": 2}
    stored = store.answers()
    assert list(stored["answer_id"]) == ["G1-a", "G1-b"]
    assert stored["item_id"].str.match(r"^i[0-9a-f]{16}$").all(), "opaque item ids"


def test_self_identifying_text_is_detected_at_import(store: Store, tmp_path: Path) -> None:
    rows = [
        {"task_id": "T1", "prompt": "p", "answer_id": "T1-a", "family": "claude", "model": "claude-x",
         "text": "As an AI assistant developed by Anthropic, I can't see your account."},
        {"task_id": "T1", "prompt": "p", "answer_id": "T1-b", "family": "gpt", "model": "gpt-x",
         "text": "Please reset your password from the login page."},
    ]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    import_file(store, "answers", tmp_path / "a.jsonl")
    found = store.self_identifying()
    assert list(found["answer_id"]) == ["T1-a"]
    assert found["spans"][0][0][2] == "As an AI assistant developed by Anthropic"


def test_imported_labels_and_judgements(seeded: Store, tmp_path: Path) -> None:
    (tmp_path / "labels.csv").write_text(
        "answer_id,rater,score,criterion:a,comment\nG1-a,alice,4,4,fine\nG1-b,alice,2,2,\nG1-a,bob,5,5,\n"
    )
    (tmp_path / "judge.csv").write_text(
        "answer_id,judge_model,judge_family,format,score\nG1-a,judge-x,fam1,likert5,5\nG1-b,judge-x,fam1,likert5,3\n"
    )
    assert import_file(seeded, "labels", tmp_path / "labels.csv").added == {"labels": 3}
    assert import_file(seeded, "judgements", tmp_path / "judge.csv").added == {"judgements": 2}
    # twice: nothing changes
    assert import_file(seeded, "labels", tmp_path / "labels.csv").added == {"labels": 0}
    assert import_file(seeded, "judgements", tmp_path / "judge.csv").added == {"judgements": 0}
    labels = seeded.export_frame("labels")
    assert sorted(labels["overall"]) == [2, 4, 5]
    assert list(labels.sort_values("overall")["passed"]) == [False, True, True]  # rubric threshold 4
    judgements = seeded.export_frame("judgements")
    assert set(judgements["judge_family"]) == {"fam1"}
    # imported raters exist but cannot log in
    assert not seeded.raters().set_index("name").loc["alice", "active"]


def test_bulk_insert_keeps_nulls_booleans_and_row_order(store: Store) -> None:
    from judgelab.labeler.store._bulk import insert_rows, staged

    n = 5000  # several vectors and Arrow chunks' worth, so a parallel insert could reorder
    rows = [
        [f"r{i % 7}", f"a{i}", None if i % 3 == 0 else float(i % 5), [True, False, None][i % 3],
         json.dumps({"a": i % 5}), None if i % 2 else 1]
        for i in range(n)
    ]
    columns = ("rater_name", "answer_id", "overall", "passed", "criteria", "rubric_version")
    with store.connection() as con:
        ids = insert_rows(con, "labels", ("rater_id", *columns), [[1, *r] for r in rows],
                          id_from=("label_id", "seq_label"))
        with staged(con, "labels", columns, []) as empty:
            assert con.execute(f"SELECT count(*) FROM {empty}").fetchone() == (0,)
        assert insert_rows(con, "labels", columns, []) == []
    assert ids == sorted(ids) and len(set(ids)) == n
    stored = store.query(
        "SELECT label_id, answer_id, overall, passed, criteria, rubric_version, typeof(rubric_version) AS t"
        " FROM labels ORDER BY label_id"
    )
    assert list(stored["answer_id"]) == [f"a{i}" for i in range(n)], "ids follow row order"
    assert list(stored["label_id"]) == ids
    assert stored["overall"].isna().sum() == len(range(0, n, 3))
    assert [None if pd.isna(p) else bool(p) for p in stored["passed"][:3]] == [True, False, None]
    assert stored["rubric_version"].isna().sum() == n // 2
    assert set(stored["t"]) == {"INTEGER"}
    assert json.loads(stored["criteria"][4]) == {"a": 4}


def test_reimport_against_stored_rows_skips_same_and_refuses_changed(seeded: Store, tmp_path: Path) -> None:
    (tmp_path / "labels.csv").write_text("answer_id,rater,score\nG1-a,alice,4\nG1-b,alice,2\nG1-a,bob,5\n")
    (tmp_path / "prefs.csv").write_text("answer_a,answer_b,rater,preference\nG1-a,G1-b,carol,1\nG1-b,G1-a,carol,-1\n")
    (tmp_path / "judge.csv").write_text("answer_id,judge_model,format,score\nG1-a,j1,likert5,5\nG1-b,j2,likert5,3\n")
    (tmp_path / "pairs.csv").write_text("id,prompt,answer_a,answer_b,gold\np1,P,x,y,A\np2,P,x,z,\n")
    seeded.add_rater("bob")
    for kind, name in [("labels", "labels.csv"), ("labels", "prefs.csv"), ("judgements", "judge.csv"),
                       ("pairs", "pairs.csv")]:
        first = import_file(seeded, kind, tmp_path / name)  # type: ignore[arg-type]
        again = import_file(seeded, kind, tmp_path / name)  # type: ignore[arg-type]
        assert sum(first.added.values()) == 2 + (kind == "labels" and name == "labels.csv")
        assert sum(again.added.values()) == 0
        assert sum(again.unchanged.values()) == sum(first.added.values())
    raters = seeded.raters().set_index("name")
    assert bool(raters.loc["bob", "active"]), "an invited rater is reused, not recreated"
    assert not raters.loc["alice", "active"] and not raters.loc["carol", "active"]
    assert seeded.query("SELECT count(*) AS n FROM judge_runs")["n"][0] == 2
    before = _counts(seeded)
    changed = [
        ("labels", "labels.csv", "answer_id,rater,score\nG1-b,bob,1\nG1-b,alice,3\n", "'alice'"),
        ("labels", "prefs.csv", "answer_a,answer_b,rater,preference\nG1-a,G1-b,dan,2\nG1-a,G1-b,carol,2\n",
         "'carol'"),
        ("judgements", "judge.csv", "answer_id,judge_model,format,score\nG1-a,j3,likert5,4\nG1-b,j2,likert5,4\n",
         "'j2'"),
        ("pairs", "pairs.csv", "id,prompt,answer_a,answer_b,gold\np3,P,x,y,A\np2,P,x,z,B\n", "'p2'"),
    ]
    for kind, name, text, who in changed:
        (tmp_path / name).write_text(text)
        with pytest.raises(ConflictError, match=who):
            import_file(seeded, kind, tmp_path / name)  # type: ignore[arg-type]
    assert _counts(seeded) == before, "a conflict anywhere in a file writes nothing, not even new raters or runs"


def test_pool_import_settles_repeats_and_conflicts(store: Store) -> None:
    from judgelab.labeler.models import Answer, Task

    tasks = [Task("T1", "p"), Task("T1", "p"), Task("T2", "q")]
    answers = [Answer("a1", "T1", "f", "m", "x"), Answer("a1", "T1", "f", "m", "x"), Answer("a2", "T2", "f", "m", "y")]
    summary = store.add_pool(tasks, answers)
    assert summary.added == {"tasks": 2, "answers": 2}
    assert summary.unchanged == {"tasks": 1, "answers": 1}
    again = store.add_pool([Task("T2", "q"), Task("T3", "r")], [Answer("a2", "T2", "f", "m", "y")])
    assert again.added == {"tasks": 1, "answers": 0} and again.unchanged == {"tasks": 1, "answers": 1}
    with pytest.raises(ConflictError, match="'a1'"):
        store.add_pool([Task("T4", "s")], [Answer("a3", "T4", "f", "m", "z"), Answer("a1", "T1", "f", "m", "X")])
    with pytest.raises(ConflictError, match="'T1'"):
        store.add_pool([Task("T1", "p", category="c")], [])
    with pytest.raises(ConflictError, match="'a9'"):
        store.add_pool([], [Answer("a9", "T1", "f", "m", "x"), Answer("a9", "T1", "f", "m", "y")])
    assert len(store.tasks()) == 3 and len(store.answers()) == 2
    stored = store.answers().set_index("answer_id")
    assert stored.loc["a1", "n_words"] == 1 and stored.loc["a1", "n_chars"] == 1
