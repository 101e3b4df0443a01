"""The three defects of issue 13, each a test written before its fix.

1. ``judgelab export labels`` wrote ``overall``/``passed``, which ``judgelab import labels``
   refused; judgements the same.
2. Unknown columns were dropped silently (a ``passed`` column lost every pass verdict), and a
   label's score was not checked when no rubric existed yet.
3. External pairwise verdicts with ``order = BA`` were stored as if ``answer_id`` had been shown
   first, so a judge that picked the same answer in both orders read as +50 pp first-shown
   advantage and "both orders judged for 0 pairs"; an unparsed reply could not be imported.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.calibration.calibrate import ReportOptions, load_calibration_data, position_results
from judgelab.cli import main
from judgelab.labeler.errors import InputError
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store
from tests.conftest import DATA


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _pool(db: str) -> None:
    assert run("import", "rubric", str(DATA / "rubric.toml"), "--db", db)[0] == 0
    assert run("import", "answers", str(DATA / "answers.jsonl"), "--db", db)[0] == 0


# -- 1. exports re-import ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_exported_labels_and_judgements_reimport(tmp_path: Path, fmt: str) -> None:
    old, new = str(tmp_path / "old.duckdb"), str(tmp_path / "new.duckdb")
    _pool(old)
    _pool(new)
    (tmp_path / "labels.csv").write_text(
        "answer_id,rater,score,pass\nT001-a,ann,4,true\nT001-b,ann,2,false\nT002-a,bob,5,true\n"
    )
    (tmp_path / "judge.csv").write_text(
        "answer_id,judge_model,format,score\nT001-a,judge-x,likert5,4\nT001-b,judge-x,likert5,1\n"
    )
    assert run("import", "labels", str(tmp_path / "labels.csv"), "--db", old)[0] == 0
    assert run("import", "judgements", str(tmp_path / "judge.csv"), "--db", old)[0] == 0
    for kind in ("labels", "judgements"):
        out = tmp_path / f"{kind}.{fmt}"
        assert run("export", kind, "--out", str(out), "--db", old)[0] == 0
        code, _, err = run("import", kind, str(out), "--db", new)
        assert code == 0, err
    before, after = Store(old).export_frame("labels"), Store(new).export_frame("labels")
    keep = ["rater", "answer_id", "overall", "passed", "criteria", "comment"]
    assert before[keep].to_dict("records") == after[keep].to_dict("records")
    keep = ["judge_model", "format", "answer_id", "value", "passed"]
    before, after = Store(old).export_frame("judgements"), Store(new).export_frame("judgements")
    assert before[keep].to_dict("records") == after[keep].to_dict("records")


# -- 2. no silent drops --------------------------------------------------------------------


def test_an_unknown_column_is_an_error_that_names_it(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    import_file(store, "rubric", DATA / "rubric.toml")
    import_file(store, "answers", DATA / "answers.jsonl")
    (tmp_path / "labels.csv").write_text("answer_id,rater,score,passed\nT001-a,ann,4,true\n")
    with pytest.raises(InputError) as info:
        import_file(store, "labels", tmp_path / "labels.csv")
    message = str(info.value)
    assert "'passed'" in message and "'pass'" in message, message
    assert store.export_frame("labels").empty


def test_labels_are_refused_when_no_rubric_can_check_their_scale(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    import_file(store, "answers", DATA / "answers.jsonl")
    (tmp_path / "labels.csv").write_text("answer_id,rater,score\nT001-a,ann,9\n")
    with pytest.raises(InputError, match="rubric") as info:
        import_file(store, "labels", tmp_path / "labels.csv")
    assert "judgelab import rubric" in (info.value.fix or "")
    assert store.export_frame("labels").empty


# -- 3. verdicts shown in either order -----------------------------------------------------


def test_pairwise_judgements_shown_in_both_orders_read_as_position_neutral(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    import_file(store, "rubric", DATA / "rubric.toml")
    import_file(store, "answers", DATA / "answers.jsonl")
    # The judge picked the first-listed answer in both orders, for two pairs: no position bias,
    # every pair judged in both orders.
    (tmp_path / "judge.csv").write_text(
        "answer_id,answer_b_id,judge_model,format,order,score\n"
        "T001-a,T001-b,judge-x,pairwise5,AB,1\n"
        "T001-a,T001-b,judge-x,pairwise5,BA,1\n"
        "T002-a,T002-b,judge-x,pairwise5,AB,-1\n"
        "T002-a,T002-b,judge-x,pairwise5,BA,-1\n"
    )
    import_file(store, "judgements", tmp_path / "judge.csv")
    data = load_calibration_data(store, "import:judge-x")
    (result,) = position_results(data, ReportOptions(n_resamples=50))
    assert result.n_pairs == 2 and result.n_both_orders == 2
    assert result.first_shown.estimate == pytest.approx(0.0)
    assert result.decomposition is not None
    assert result.decomposition.consistency.estimate == pytest.approx(1.0)


def test_an_unparsed_pairwise_reply_can_be_imported_and_counts(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    import_file(store, "rubric", DATA / "rubric.toml")
    import_file(store, "answers", DATA / "answers.jsonl")
    (tmp_path / "judge.csv").write_text(
        "answer_id,answer_b_id,judge_model,format,order,score,parse_error,raw\n"
        "T001-a,T001-b,judge-x,pairwise5,AB,1,,A\n"
        'T001-a,T001-b,judge-x,pairwise5,BA,,no verdict line,"I cannot decide"\n'
    )
    import_file(store, "judgements", tmp_path / "judge.csv")
    judged = store.export_frame("judgements")
    assert len(judged) == 2
    failed = judged[judged["value"].isna()]
    assert list(failed["parse_error"]) == ["no verdict line"]
    assert list(failed["raw"]) == ["I cannot decide"]
    assert pd.notna(judged["value"]).sum() == 1
