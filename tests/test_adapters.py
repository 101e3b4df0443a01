"""Other tools' files in: .json arrays, --map, and the --from adapters on real (sliced) exports.

The slices in tests/data/alpaca_eval and tests/data/mt_bench are the tools' own files (see
their NOTICE). Every adapter is run as a user types it (`judgelab import KIND FILE --from TOOL`)
and has a bad-file test: one clear error naming the file, row, column and fix, nothing written.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.cli import main
from judgelab.labeler.adapters import ADAPTERS, apply_map, import_from, parse_map
from judgelab.labeler.adapters.alpaca_eval import task_id
from judgelab.labeler.errors import InputError
from judgelab.labeler.examples import example_path
from judgelab.labeler.exports import export_table
from judgelab.labeler.importers import import_file, read_rows
from judgelab.labeler.store import Store

DATA = Path(__file__).parent / "data"
AE = DATA / "alpaca_eval"
AE_GPT4 = AE / "alpaca-7b.alpaca_eval_gpt4.annotations.json"
AE_WEIGHTED = AE / "FuseChat-Llama-3.2-1B-Instruct.weighted_alpaca_eval_gpt4_turbo.annotations.json"
MTB = DATA / "mt_bench"
LS = DATA / "label_studio"


def run(*args: str, ok: bool = True) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert (result.exit_code == 0) is ok, result.output
    return result.output


def n_rows(store: Store, kind: str) -> int:
    return len(export_table(store, kind))  # type: ignore[arg-type]


# -- .json arrays and --map ----------------------------------------------------------------------

ANSWERS = [
    {"task_id": "t1", "prompt": "How do I reset my password?", "answer_id": "t1-a", "family": "f1",
     "model": "m1", "text": "Use the reset link."},
    {"task_id": "t1", "prompt": "How do I reset my password?", "answer_id": "t1-b", "family": "f2",
     "model": "m2", "text": "Click Forgot password."},
]


def test_a_json_array_imports_like_json_lines(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(ANSWERS, indent=2))
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(r) for r in ANSWERS) + "\n")
    one, two = Store(tmp_path / "one.duckdb"), Store(tmp_path / "two.duckdb")
    import_file(one, "answers", tmp_path / "a.json")
    import_file(two, "answers", tmp_path / "a.jsonl")
    assert export_table(one, "answers").equals(export_table(two, "answers"))
    assert len(export_table(one, "answers")) == 2
    (tmp_path / "empty.json").write_text("[]")
    assert read_rows(tmp_path / "empty.json").rows == []


@pytest.mark.parametrize(("text", "row", "problem"), [
    ('{"task_id": "t1"}', None, "is a JSON dict, not an array of objects"),
    ('[{"task_id": "t1"}, 3]', 2, "is a JSON int, not an object"),
    ('[{"task_id": "t1"},', None, "is not valid JSON"),
])
def test_a_bad_json_array_names_the_element(tmp_path: Path, text: str, row: int | None, problem: str) -> None:
    (tmp_path / "bad.json").write_text(text)
    with pytest.raises(InputError) as info:
        read_rows(tmp_path / "bad.json")
    assert info.value.row == row and problem in info.value.problem and info.value.fix


def test_a_probe_dataset_may_be_a_json_array(tmp_path: Path) -> None:
    from judgelab.calibration.datasets import load_pairs

    (tmp_path / "pairs.json").write_text(json.dumps([{"prompt": "p", "answer_a": "x", "answer_b": "y"}]))
    assert [p.pair_id for p in load_pairs(tmp_path / "pairs.json")] == ["row1"]


def test_map_renames_fields_and_reaches_into_json_objects(tmp_path: Path) -> None:
    records = [{"id": r["answer_id"], "data": {"q": r["prompt"], "task": r["task_id"]}, "family": r["family"],
                "generator": r["model"], "response": r["text"]} for r in ANSWERS]
    (tmp_path / "hf.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    db = str(tmp_path / "p.duckdb")
    out = run("import", "answers", str(tmp_path / "hf.jsonl"), "--map", "answer_id=id", "--map", "prompt=data.q",
              "--map", "task_id=data.task", "--map", "model=generator", "--map", "text=response", "--db", db)
    assert "2 answers added" in out
    got = export_table(Store(db), "answers")
    assert got[["task_id", "prompt", "answer_id", "model", "text"]].to_dict("records") == [
        {k: r[k] for k in ("task_id", "prompt", "answer_id", "model", "text")} for r in ANSWERS]


def test_map_errors_name_the_problem(tmp_path: Path) -> None:
    rows = read_rows(_write(tmp_path / "x.json", [{"a": 1, "prompt": "p"}]))
    with pytest.raises(InputError, match=r"no row has; the file has \['a', 'prompt'\]"):
        apply_map(rows, {"text": "nope"})
    with pytest.raises(InputError, match="which the file already has"):
        apply_map(rows, {"prompt": "a"})
    with pytest.raises(InputError, match="is not judgelab_column=their_field"):
        parse_map(["prompt"])
    with pytest.raises(InputError, match="twice"):
        parse_map(["prompt=a", "prompt=b"])
    # An unmapped field the schema does not know is still refused, naming --ignore-columns.
    out = run("import", "answers", str(tmp_path / "x.json"), "--map", "text=a", "--db",
              str(tmp_path / "p.duckdb"), ok=False)
    assert "missing required column(s)" in out or "unknown column" in out


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text(json.dumps(records))
    return path


def test_import_help_lists_every_adapter() -> None:
    out = run("import", "--help")
    assert "--from" in out and "--map" in out
    for name in ADAPTERS:
        assert name in out


# -- AlpacaEval ----------------------------------------------------------------------------------


def alpaca_eval_win_rate(path: Path) -> tuple[float, float, int, int, int]:
    """AlpacaEval's get_winrate, written out: mean of preference - 1 with 0 (a draw) as 1.5."""
    prefs = pd.Series([e["preference"] for e in json.loads(path.read_text())], dtype=float).replace({0.0: 1.5}) - 1
    return (prefs.mean() * 100, prefs.sem() * 100, int((prefs > 0.5).sum()), int((prefs < 0.5).sum()),
            int((prefs == 0.5).sum()))


@pytest.mark.parametrize(("path", "baseline", "model", "judge"), [
    (AE_GPT4, "text_davinci_003", "alpaca-7b", "alpaca_eval_gpt4"),
    (AE_WEIGHTED, "gpt4_1106_preview", "FuseChat-Llama-3.2-1B-Instruct", "weighted_alpaca_eval_gpt4_turbo"),
])
def test_alpaca_eval_annotations_give_alpaca_eval_win_rate(
    tmp_path: Path, path: Path, baseline: str, model: str, judge: str
) -> None:
    db = str(tmp_path / "ae.duckdb")
    n = len(json.loads(path.read_text()))
    out = run("import", "answers", str(path), "--from", "alpaca-eval", "--db", db)
    assert f"{2 * n} answers added" in out and "left out: the model families" in out
    out = run("import", "judgements", str(path), "--from", "alpaca-eval", "--db", db)
    assert f"{n} judgements added" in out and "left out: which output the judge saw first" in out
    assert "already present" in run("import", "judgements", str(path), "--from", "alpaca-eval", "--db", db)
    [row] = json.loads(run("winrate", "--baseline", baseline, "--json", "--db", db))
    assert (row["model"], row["opponent"], row["judge_model"]) == (model, baseline, judge)
    rate, sem, wins, losses, draws = alpaca_eval_win_rate(path)
    got = row["win_rate"]
    assert got["estimate"] == pytest.approx(rate, rel=1e-12) and got["n"] == n
    assert got["extra"]["standard_error"] == pytest.approx(sem, rel=1e-12)
    assert (got["extra"]["n_wins"], got["extra"]["n_losses"], got["extra"]["n_draws"]) == (wins, losses, draws)
    assert got["ci_low"] < rate < got["ci_high"] and got["units"] == "percent"


def test_alpaca_eval_empty_outputs_and_the_baseline_against_itself_import(tmp_path: Path) -> None:
    # AlpacaEval's own files (see NOTICE): gemma-2b-it wrote nothing for 22 of 805 instructions (three
    # here), and the baseline's file compares gpt4_1106_preview's outputs with themselves.
    gemma, itself = AE / "gemma-2b-it.weighted_alpaca_eval_gpt4_turbo.excerpt.annotations.json", \
        AE / "gpt4_1106_preview.weighted_alpaca_eval_gpt4_turbo.excerpt.annotations.json"
    db = str(tmp_path / "ae.duckdb")
    said = run("import", "answers", str(gemma), "--from", "alpaca-eval", "--db", db)
    assert "10 answers added" in said and "3 empty output(s) imported as empty answers (3 by gemma-2b-it " \
        "(element(s) 1, 3, 4))" in said
    assert "3 empty output(s)" in run("import", "pairs", str(gemma), "--from", "alpaca-eval", "--db", db)
    run("import", "judgements", str(gemma), "--from", "alpaca-eval", "--db", db)
    answers = export_table(Store(db), "answers").set_index("answer_id")
    empty = [e for e in json.loads(gemma.read_text()) if e["output_2"] == ""]
    assert [answers.loc[f"{task_id(e['instruction'])}:gemma-2b-it", "text"] for e in empty] == ["", "", ""]
    assert sorted(export_table(Store(db), "pairs")["answer_b"].tolist())[:3] == ["", "", ""]
    said = run("import", "answers", str(itself), "--from", "alpaca-eval", "--db", db)
    assert "5 answers already present" in said and "5 element(s) compare an output with itself" in said
    said = run("import", "judgements", str(itself), "--from", "alpaca-eval", "--db", db)
    assert "5 judgements added" in said and "AlpacaEval scores these a draw (1.5)" in said
    rows = {r["model"]: r["win_rate"] for r in json.loads(run("winrate", "--baseline", "gpt4_1106_preview",
                                                              "--json", "--db", db))}
    # As AlpacaEval's get_winrate: the empty answers count (two losses, one win), the baseline is 50.
    assert rows["gemma-2b-it"]["estimate"] == pytest.approx(alpaca_eval_win_rate(gemma)[0], rel=1e-12)
    assert rows["gpt4_1106_preview"]["estimate"] == 50.0 and rows["gpt4_1106_preview"]["n"] == 5


def test_alpaca_eval_pairs_keep_both_outputs(store: Store) -> None:
    done = import_from(store, "pairs", AE_GPT4, tool="alpaca-eval")
    pairs = export_table(store, "pairs").set_index("prompt")
    records = json.loads(AE_GPT4.read_text())
    assert len(pairs) == len(records) == 41 and done.dropped
    for rec in records:
        assert pairs.loc[rec["instruction"], ["answer_a", "answer_b"]].tolist() == [rec["output_1"], rec["output_2"]]


def test_a_bad_alpaca_eval_file_is_refused_whole(store: Store, tmp_path: Path) -> None:
    records = json.loads(AE_GPT4.read_text())[:5]
    import_from(store, "answers", _write(tmp_path / "ok.json", records), tool="alpaca-eval")
    records[3]["preference"] = 3
    with pytest.raises(InputError) as info:
        import_from(store, "judgements", _write(tmp_path / "bad.json", records), tool="alpaca-eval")
    assert (info.value.row, info.value.column) == (4, "preference") and "1 (output_1 better)" in str(info.value.fix)
    assert n_rows(store, "judgements") == 0
    records[3]["preference"] = 2
    del records[1]["output_2"]
    with pytest.raises(InputError) as info:
        import_from(store, "answers", _write(tmp_path / "bad.json", records), tool="alpaca-eval")
    assert (info.value.row, info.value.column, info.value.problem) == (2, "output_2", "is empty")
    for rec in records:
        rec.pop("output_2", None)
    with pytest.raises(InputError, match=r"is not AlpacaEval annotations.*\['output_2'\]"):
        import_from(store, "judgements", _write(tmp_path / "bad.json", records), tool="alpaca-eval")
    with pytest.raises(InputError, match="not verdicts"):
        import_from(store, "verdicts", AE_GPT4, tool="alpaca-eval")


# -- MT-Bench -------------------------------------------------------------------------------------


def test_mt_bench_answers_and_single_judgements(tmp_path: Path) -> None:
    db = str(tmp_path / "mtb.duckdb")
    out = run("import", "answers", str(MTB / "model_answer" / "granite-7b-lab.jsonl"), "--from", "mt-bench",
              "--db", db)
    assert "10 tasks added, 10 answers added" in out
    out = run("import", "judgements", str(MTB / "model_judgment" / "gpt-4_single.jsonl"), "--from", "mt-bench",
              "--db", db)
    assert "10 judgements added" in out and "rating × 10" in out
    got = export_table(Store(db), "judgements").set_index("answer_id")
    records = [json.loads(line) for line in (MTB / "model_judgment" / "gpt-4_single.jsonl").read_text().splitlines()]
    for rec in records:
        row = got.loc[f"mtb-{rec['question_id']}-t{rec['turn']}:granite-7b-lab"]
        assert row["judge_model"] == "gpt-4" and row["format"] == "numeric100" and row["raw"] == rec["judgment"]
        if rec["score"] == -1:
            assert pd.isna(row["score"]) and "no [[rating]]" in row["parse_error"]
        else:
            assert row["score"] == 10 * rec["score"] and json.loads(row["meta"])["mt_bench_score"] == rec["score"]
    answers = export_table(Store(db), "answers").set_index("answer_id")
    turn2 = answers.loc["mtb-89-t2:granite-7b-lab"]
    assert "[User, turn 2]" in turn2["prompt"] and "[Assistant, turn 1]" in turn2["text"]


def _pair_record(qid: int, g1: str, g2: str) -> dict:
    # The shape of FastChat common.py play_a_match_pair's result for a pairwise judge.
    return {"question_id": qid, "model_1": "granite-7b-lab", "model_2": "other", "g1_winner": g1, "g2_winner": g2,
            "judge": ["gpt-4", "pair-v2"], "g1_user_prompt": "...", "g1_judgment": f"[[{g1}]]",
            "g2_user_prompt": "...", "g2_judgment": f"[[{g2}]]", "turn": 1, "tstamp": 1.0}


def test_mt_bench_pair_judgements_keep_both_orders_and_ties(tmp_path: Path) -> None:
    layout = tmp_path / "mt_bench"
    shutil.copytree(MTB, layout)
    other = [json.loads(line) for line in (MTB / "model_answer" / "granite-7b-lab.jsonl").read_text().splitlines()]
    (layout / "model_answer" / "other.jsonl").write_text("\n".join(json.dumps(r) for r in other[:2]) + "\n")
    qids = [r["question_id"] for r in other[:2]]
    pair = layout / "model_judgment" / "gpt-4_pair.jsonl"
    pair.write_text("\n".join(json.dumps(r) for r in (_pair_record(qids[0], "model_1", "tie"),
                                                      _pair_record(qids[1], "model_2", "error"))) + "\n")
    store = Store(tmp_path / "p.duckdb")
    for model in ("granite-7b-lab", "other"):
        import_from(store, "answers", layout / "model_answer" / f"{model}.jsonl", tool="mt-bench")
    import_from(store, "judgements", pair, tool="mt-bench")
    got = export_table(store, "judgements")
    got = got.sort_values(["answer_id", "order"]).reset_index(drop=True)
    assert got["order"].tolist() == ["AB", "BA", "AB", "BA"]
    assert got["score"].fillna(9).tolist() == [1.0, 0.0, -1.0, 9]
    assert "no [[A]], [[B]] or [[C]]" in got["parse_error"].iloc[3]
    assert got["answer_id"].str.endswith(":granite-7b-lab").all() and got["answer_b_id"].str.endswith(":other").all()
    [row] = json.loads(run("winrate", "--json", "--db", str(tmp_path / "p.duckdb")))
    # Question 1: a win and a tie, swap-averaged to 0.75; question 2: a loss (the unparsed game left out).
    assert row["win_rate"]["estimate"] == pytest.approx(37.5) and row["unparsed"] == 1 and row["win_rate"]["n"] == 2


def test_mt_bench_real_pair_judgments_give_both_games_and_the_swap_averaged_win_rate(tmp_path: Path) -> None:
    # A real FastChat pair judgment file (phi-3 vs phi-3-dpo, GPT-4 judge, pair-v2): see tests/data/mt_bench/NOTICE.
    db = str(tmp_path / "pair.duckdb")
    for model in ("phi-3", "phi-3-dpo"):
        out = run("import", "answers", str(MTB / "model_answer" / f"{model}.jsonl"), "--from", "mt-bench", "--db", db)
        assert "14 answers added" in out  # 7 questions, 2 turns each
    pair = MTB / "model_judgment" / "gpt-4_pair.jsonl"
    records = [json.loads(line) for line in pair.read_text().splitlines()]
    out = run("import", "judgements", str(pair), "--from", "mt-bench", "--db", db)
    assert f"{2 * len(records)} judgements added" in out and len(records) == 7
    got = export_table(Store(db), "judgements").set_index("call_id")
    points = {"model_1": 1.0, "model_2": -1.0, "tie": 0.0}
    for rec in records:
        for game, order in (("g1", "AB"), ("g2", "BA")):
            row = got.loc[f"{rec['question_id']}:phi-3-vs-phi-3-dpo:t1:{game}"]
            assert (row["answer_id"], row["answer_b_id"], row["order"], row["judge_model"], row["format"]) == (
                f"mtb-{rec['question_id']}-t1:phi-3", f"mtb-{rec['question_id']}-t1:phi-3-dpo", order, "gpt-4",
                "pairwise5")
            assert row["raw"] == rec[f"{game}_judgment"] and json.loads(row["meta"])["judge_prompt"] == rec["judge"][1]
            if rec[f"{game}_winner"] == "error":
                assert pd.isna(row["score"]) and "no [[A]], [[B]] or [[C]]" in row["parse_error"]
            else:
                assert row["score"] == points[rec[f"{game}_winner"]]
    # The win rate, written out from the raw file: per question the mean over its parsed games of
    # 1 (phi-3 won), 0.5 (tie) or 0, then the mean over questions.
    share = {"model_1": 1.0, "tie": 0.5, "model_2": 0.0}
    per_question = [np.mean([share[rec[g]] for g in ("g1_winner", "g2_winner") if rec[g] != "error"])
                    for rec in records]
    [row] = json.loads(run("winrate", "--baseline", "phi-3-dpo", "--json", "--db", db))
    assert (row["model"], row["opponent"], row["judge_model"]) == ("phi-3", "phi-3-dpo", "gpt-4")
    assert row["win_rate"]["estimate"] == pytest.approx(100 * np.mean(per_question))
    assert row["win_rate"]["n"] == 7 and row["unparsed"] == 1


def test_a_bad_mt_bench_file_is_refused_whole(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    import_from(store, "answers", MTB / "model_answer" / "granite-7b-lab.jsonl", tool="mt-bench")
    lines = (MTB / "model_judgment" / "gpt-4_single.jsonl").read_text().splitlines()
    bad = json.loads(lines[4])
    bad["score"] = 42
    path = tmp_path / "gpt-4_single.jsonl"
    path.write_text("\n".join([*lines[:4], json.dumps(bad), *lines[5:]]) + "\n")
    with pytest.raises(InputError) as info:
        import_from(store, "judgements", path, tool="mt-bench")
    assert (info.value.row, info.value.column) == (5, "score") and "-1" in str(info.value.fix)
    pair = tmp_path / "gpt-4_pair.jsonl"
    pair.write_text(json.dumps(_pair_record(89, "model_3", "tie")) + "\n")
    with pytest.raises(InputError) as info:
        import_from(store, "judgements", pair, tool="mt-bench")
    assert (info.value.row, info.value.column) == (1, "g1_winner")
    lone = tmp_path / "lone" / "granite-7b-lab.jsonl"
    lone.parent.mkdir()
    shutil.copy(MTB / "model_answer" / "granite-7b-lab.jsonl", lone)
    with pytest.raises(InputError, match=r"no question\.jsonl"):
        import_from(store, "answers", lone, tool="mt-bench")
    assert n_rows(store, "judgements") == 0


def test_the_slices_are_small_and_licensed() -> None:
    for folder in (AE, MTB, LS, DATA / "inspect", DATA / "promptfoo", ARGILLA, DATA / "hf"):
        files = [p for p in folder.rglob("*") if p.is_file()]
        assert sum(p.stat().st_size for p in files) < 150_000
        assert "Apache-2.0" in (folder / "NOTICE").read_text() or "MIT" in (folder / "NOTICE").read_text()


# -- Label Studio ---------------------------------------------------------------------------------


def test_label_studio_reads_its_own_export_shape(tmp_path: Path) -> None:
    # Label Studio's own sample, as exported, refused with the reason: its only result is a class choice.
    with pytest.raises(InputError) as info:
        import_from(Store(tmp_path / "p.duckdb"), "labels", LS / "previous_export.json", tool="label-studio")
    assert (info.value.row, info.value.column) == (1, "annotations") and "choices 'label'" in info.value.problem
    # The same task with a rating: rater from completed_by's email, answer from the task id, lead time, time.
    task = json.loads((LS / "previous_export.json").read_text())
    task["annotations"][0]["result"] = [{"from_name": "score", "to_name": "text", "type": "rating",
                                         "value": {"rating": 4}}]
    task["data"] = {"prompt": "How do I reset my password?", "text": "Use the link.", "model": "m1"}
    path = _write(tmp_path / "task.json", [task])
    store = Store(tmp_path / "p.duckdb")
    import_file(store, "rubric", example_path("rubric.toml"))
    assert import_from(store, "answers", path, tool="label-studio").summary.added == {"tasks": 1, "answers": 1}
    import_from(store, "labels", path, tool="label-studio")
    [label] = export_table(store, "labels").to_dict("records")
    assert (label["rater"], label["answer_id"], label["score"], label["seconds"]) == (
        "annotator_from_past_project.com", "ls-task-1234", 4, 346193.271)
    assert str(label["created_at"]).startswith("2021-07-06")


def test_label_studio_predictions_need_a_judge_and_a_format(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    with pytest.raises(InputError, match="the task has no id and its data no answer_id"):
        import_from(store, "judgements", LS / "text_with_2_predictions.json", tool="label-studio")
    tasks = json.loads((LS / "text_with_2_predictions.json").read_text())
    tasks[0]["id"] = 7
    with pytest.raises(InputError) as info:
        import_from(store, "judgements", _write(tmp_path / "t.json", tasks), tool="label-studio")
    assert "predictions[1] has no score or pass verdict" in info.value.problem and "choices 'text_class'" in \
        info.value.problem


def test_label_studio_yes_no_questions_are_not_a_pass_verdict_unless_mapped(tmp_path: Path) -> None:
    # Label Studio's "Chatbot Model Assessment" template, annotated by label-studio-sdk (see NOTICE):
    # eleven Yes/No questions (hallucination, fails_to_follow, ...), none of them "the answer passes".
    path = str(LS / "chatbot_assessment.json")
    task = json.loads((LS / "chatbot_assessment.json").read_text())[0]
    db = str(tmp_path / "c.duckdb")
    run("import", "rubric", str(example_path("rubric.toml")), "--db", db)
    said = run("import", "answers", path, "--from", "label-studio", "--db", db)
    assert "1 answers added" in said and "they are 'unknown'" in said  # no model/family in data: not refused
    [answer] = export_table(Store(db), "answers").to_dict("records")
    assert (answer["family"], answer["model"]) == ("unknown", "unknown")
    assert answer["text"] == task["data"]["messages"][-1]["content"]  # the last assistant turn
    result = CliRunner().invoke(main, ["import", "labels", path, "--from", "label-studio", "--db", db])
    assert result.exit_code == 2 and "choices 'hallucination'" in result.stderr and "--map pass=" in result.stderr
    assert n_rows(Store(db), "labels") == 0
    said = run("import", "labels", path, "--from", "label-studio", "--map", "pass=satisfies_constraint", "--db", db)
    assert "2 labels added" in said and "'hallucination'" in said.split("left out: the choices result(s)")[1]
    want = {a["created_username"].split(",")[0].replace("@", "_"):
            next(r["value"]["choices"][0] == "Yes" for r in a["result"] if r["from_name"] == "satisfies_constraint")
            for a in task["annotations"]}
    got = {r["rater"]: r["pass"] for r in export_table(Store(db), "labels").to_dict("records")}
    assert got == want and set(got) == {"ann_example.com", "bob_example.com"}
    # Or the user says which family wrote them.
    other = str(tmp_path / "f.duckdb")
    run("import", "answers", path, "--from", "label-studio", "--family", "claude", "--db", other)
    [answer] = export_table(Store(other), "answers").to_dict("records")
    assert (answer["family"], answer["model"]) == ("claude", "claude")


# -- Hugging Face dataset-style tables and Argilla --------------------------------------------------


def test_hf_rows_with_other_names_import_as_answers_and_labels(tmp_path: Path) -> None:
    rows = [{"id": "q1-m1", "instruction": "Say hi.", "output": "Hi!", "generator": "m1", "annotator": "ann",
             "rating": 5},
            {"id": "q1-m2", "instruction": "Say hi.", "output": "Hello there.", "generator": "m2",
             "annotator": "ann", "rating": 3}]
    path = tmp_path / "ds.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    store = Store(tmp_path / "p.duckdb")
    import_file(store, "rubric", example_path("rubric.toml"))
    done = import_from(store, "answers", path, tool="hf")  # the rating is left out, and said
    assert done.summary.added == {"tasks": 1, "answers": 2} and "family is the model's name" in done.dropped[0]
    assert "['annotator', 'rating']" in done.dropped[1]
    done = import_from(store, "labels", path, tool="hf")
    labels = export_table(store, "labels")
    assert labels[["answer_id", "rater", "score"]].values.tolist() == [["q1-m1", "ann", 5], ["q1-m2", "ann", 3]]
    assert "belong to the answer" in done.dropped[0]
    rows[1].pop("generator")
    path.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(InputError) as info:
        import_from(Store(tmp_path / "q.duckdb"), "answers", path, tool="hf")
    assert (info.value.row, info.value.column) == (2, "generator") and "--map model=" in str(info.value.fix)


def argilla_records() -> list[dict]:
    # The shape of Argilla 2.x's records.to_list(flatten=True) / to_datasets() (its own unit test:
    # tests/unit/.../test_export_records: "q1.responses", "q1.responses.users", "q1.responses.status").
    return [
        {"id": "rec-1", "status": "completed", "_server_id": None, "prompt": "Say hi.", "response": "Hi!",
         "model": "m1", "quality.responses": [4, 2], "quality.responses.users": ["u-a", "u-b"],
         "quality.responses.status": ["submitted", "draft"], "tone.responses": [5],
         "tone.responses.users": ["u-a"], "tone.responses.status": ["submitted"],
         "note.responses": ["short"], "note.responses.users": ["u-a"], "note.responses.status": ["submitted"],
         "quality.suggestion": 3, "quality.suggestion.score": None, "quality.suggestion.agent": "gpt-4"},
    ]


def test_argilla_records_import_as_answers_and_labels(tmp_path: Path) -> None:
    path = _write(tmp_path / "records.json", argilla_records())
    store = Store(tmp_path / "p.duckdb")
    import_file(store, "rubric", example_path("rubric.toml"))  # has a criterion "tone"
    import_from(store, "answers", path, tool="argilla")
    done = import_from(store, "labels", path, tool="argilla")
    [label] = export_table(store, "labels").to_dict("records")
    assert (label["rater"], label["answer_id"], label["score"], label["criterion:tone"], label["comment"]) == (
        "u-a", "rec-1", 4, 5, "note: short")
    assert any("1 draft or discarded" in d for d in done.dropped)
    bad = argilla_records()
    bad[0]["quality.responses.users"] = ["u-a"]
    with pytest.raises(InputError) as info:
        import_from(store, "labels", _write(tmp_path / "bad.json", bad), tool="argilla")
    assert (info.value.row, info.value.column) == (1, "quality.responses") and "different lengths" in \
        info.value.problem


ARGILLA = DATA / "argilla"


@pytest.mark.parametrize("name", ["records.jsonl", "records.parquet"])
def test_argilla_export_written_by_argilla_imports_as_answers_and_submitted_labels(tmp_path: Path, name: str) -> None:
    # Written by Argilla 2.8.0's own Dataset.records.to_datasets() code: see tests/data/argilla/NOTICE.
    path, db = ARGILLA / name, str(tmp_path / "ar.duckdb")
    raw = [json.loads(line) for line in (ARGILLA / "records.jsonl").read_text().splitlines()]
    if name.endswith(".parquet"):  # the same records, as to_hub uploads them
        assert pd.read_parquet(path)["id"].tolist() == [r["id"] for r in raw]
    run("import", "rubric", str(example_path("rubric.toml")), "--db", db)
    assert "4 tasks added, 8 answers added" in run("import", "answers", str(path), "--from", "argilla", "--db", db)
    out = run("import", "labels", str(path), "--from", "argilla", "--db", db)
    assert "2 draft or discarded response(s)" in out and "the suggestions" in out
    answers = export_table(Store(db), "answers").set_index("answer_id")
    for rec in raw:
        assert answers.loc[rec["id"], ["prompt", "text", "model"]].tolist() == [rec["prompt"], rec["response"],
                                                                                 rec["model"]]
    want = {}
    for rec in raw:
        for value, user, status in zip(rec["rating.responses"], rec["rating.responses.users"],
                                       rec["rating.responses.status"], strict=True):
            if status == "submitted":
                want[(user, rec["id"])] = (value, None)
        for note, user, status in zip(rec["comment.responses"] or [], rec["comment.responses.users"] or [],
                                      rec["comment.responses.status"] or [], strict=True):
            if status == "submitted":
                want[(user, rec["id"])] = (want[(user, rec["id"])][0], f"comment: {note}")
    labels = export_table(Store(db), "labels")
    got = {(r["rater"], r["answer_id"]): (r["score"], r["comment"] or None) for r in labels.to_dict("records")}
    assert got == want and len(labels) == 14 and len({r for r, _ in got}) == 2


@pytest.mark.parametrize(("kind", "path", "tool"), [
    ("answers", AE_GPT4, "alpaca-eval"),
    ("judgements", MTB / "model_judgment" / "gpt-4_single.jsonl", "mt-bench"),
    ("labels", LS / "text_with_2_predictions.json", "label-studio"),
    ("judgements", MTB / "model_judgment" / "gpt-4_pair.jsonl", "mt-bench"),
    ("labels", ARGILLA / "records.parquet", "argilla"),
])
def test_a_known_tools_file_without_from_says_which_from(tmp_path: Path, kind: str, path: Path, tool: str) -> None:
    result = CliRunner().invoke(main, ["import", kind, str(path), "--db", str(tmp_path / "p.duckdb")])
    assert result.exit_code == 2 and f"add --from {tool}" in result.stderr, result.stderr


# -- Inspect AI -----------------------------------------------------------------------------------

INSPECT = DATA / "inspect" / "input-task.json"


def test_inspect_log_gives_the_answer_and_its_model_graded_score(tmp_path: Path) -> None:
    db = str(tmp_path / "i.duckdb")
    assert "1 answers added" in run("import", "answers", str(INSPECT), "--from", "inspect", "--db", db)
    assert "1 judgements added" in run("import", "judgements", str(INSPECT), "--from", "inspect", "--db", db)
    log = json.loads(INSPECT.read_text())
    sample = log["samples"][0]
    [answer] = export_table(Store(db), "answers").to_dict("records")
    assert (answer["model"], answer["family"], answer["text"]) == (
        "openai/gpt-4o-mini", "openai", sample["output"]["choices"][0]["message"]["content"])
    [judged] = export_table(Store(db), "judgements").to_dict("records")
    grade = sample["scores"]["model_graded_fact"]
    assert (judged["judge_model"], judged["format"], judged["score"], judged["raw"]) == (
        "openai/gpt-4o-mini", "binary", 1.0, grade["explanation"])
    assert judged["answer_id"] == answer["answer_id"] and judged["input_tokens"] == 221
    assert json.loads(judged["meta"]) == {"inspect_value": "C", "inspect_scorer": "model_graded_fact"}


def test_inspect_bad_logs_are_refused(tmp_path: Path) -> None:
    log = json.loads(INSPECT.read_text())
    log["samples"][0]["scores"]["model_graded_fact"]["value"] = "maybe"
    with pytest.raises(InputError) as info:
        import_from(Store(tmp_path / "p.duckdb"), "judgements", _write(tmp_path / "bad.json", log), tool="inspect")
    assert (info.value.row, info.value.column) == (1, "scores") and "'maybe'" in info.value.problem
    with pytest.raises(InputError, match="needs eval and samples"):
        import_from(Store(tmp_path / "p.duckdb"), "answers", _write(tmp_path / "x.json", [log]), tool="inspect")
    # A scorer that made no model call is not a judge; a log with no judge at all is refused, not "nothing".
    log["samples"][0]["events"] = [e for e in log["samples"][0]["events"] if e.get("event") != "model"]
    log["samples"][0]["scores"]["model_graded_fact"]["value"] = "C"
    with pytest.raises(InputError) as info:
        import_from(Store(tmp_path / "q.duckdb"), "judgements", _write(tmp_path / "m.json", log), tool="inspect")
    assert "['model_graded_fact'] made no model call" in info.value.problem and "as answers only" in info.value.fix
    assert n_rows(Store(tmp_path / "q.duckdb"), "judgements") == 0


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A .json and a .eval log written by the installed (current) Inspect AI: tests/data/inspect/make_logs.py."""
    out = tmp_path_factory.mktemp("inspect")
    done = subprocess.run([sys.executable, str(DATA / "inspect" / "make_logs.py"), str(out)], cwd=out,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    json_log, eval_log, _version = done.stdout.split()
    return {"json": Path(json_log), "eval": Path(eval_log)}


@pytest.mark.parametrize("fmt", ["json", "eval"])
def test_current_inspect_logs_give_grades_and_count_a_failed_grader(
    tmp_path: Path, inspect_logs: dict[str, Path], fmt: str
) -> None:
    log, db = str(inspect_logs[fmt]), str(tmp_path / "i.duckdb")
    assert "3 answers added" in run("import", "answers", log, "--from", "inspect", "--db", db)
    said = run("import", "judgements", log, "--from", "inspect", "--db", db)
    assert "3 judgements added" in said and "1 judge reply did not parse" in said
    assert "left out: the scorer(s) ['match']: they made no model call" in said
    answers = export_table(Store(db), "answers")
    assert answers["text"].tolist() == ["Paris is the capital of France.", "Berlin.", "I am not sure."]
    assert answers["prompt"].tolist()[2] == "Name the capital of France."  # the user's turn of a chat input
    assert set(answers["model"]) == {"mockllm/model"}
    judged = export_table(Store(db), "judgements").sort_values("answer_id").to_dict("records")
    # The judge is the grader's own call (mockllm/grader), not the model under test.
    assert [(j["judge_model"], j["format"], j["input_tokens"]) for j in judged] == [
        ("mockllm/grader", "binary", 200), ("mockllm/grader", "binary", 201), ("mockllm/grader", "binary", 202)]
    assert [j["score"] for j in judged[:2]] == [1.0, 0.0]
    failed = judged[2]  # grader_failed: a counted parse failure with the grader's words, never a score
    assert pd.isna(failed["score"]) and failed["parse_error"] == "Inspect recorded no grade (grader_failed)"
    assert failed["raw"] == "I cannot tell from this."
    assert json.loads(failed["meta"])["inspect_reason"] == "grader_failed"
    assert "already present" in run("import", "judgements", log, "--from", "inspect", "--db", db)


def test_an_eval_log_reads_the_same_from_its_zip_as_through_inspect(
    tmp_path: Path, inspect_logs: dict[str, Path]
) -> None:
    from judgelab.labeler.adapters.inspect_ai import read_eval_zip

    # The zip reader (used where inspect_ai is not installed) against Inspect's own reader, on one file.
    as_json = tmp_path / "from_zip.json"
    as_json.write_text(json.dumps(read_eval_zip(inspect_logs["eval"])))  # NaN stays NaN, as Inspect writes it
    one, two = str(tmp_path / "one.duckdb"), str(tmp_path / "two.duckdb")
    for path, db in ((inspect_logs["eval"], one), (as_json, two)):
        for kind in ("answers", "judgements"):
            run("import", kind, str(path), "--from", "inspect", "--db", db)
    for kind in ("answers", "judgements"):
        left, right = export_table(Store(one), kind), export_table(Store(two), kind)  # type: ignore[arg-type]
        assert left.drop(columns=["imported_at"], errors="ignore").equals(
            right.drop(columns=["imported_at"], errors="ignore")), kind


def test_an_inspect_log_with_grader_calls_never_imports_nothing_quietly(
    tmp_path: Path, inspect_logs: dict[str, Path]
) -> None:
    log = json.loads(inspect_logs["json"].read_text())
    # Spans judgelab cannot follow (here: removed): the calls are there, so the import refuses.
    for sample in log["samples"]:
        sample["events"] = [e for e in sample["events"] if e["event"] not in ("span_begin", "span_end")]
    bad = tmp_path / "no_spans.json"
    bad.write_text(json.dumps(log))
    result = CliRunner().invoke(main, ["import", "judgements", str(bad), "--from", "inspect",
                                       "--db", str(tmp_path / "p.duckdb")])
    assert result.exit_code == 2 and "6 model call(s) outside any span" in result.stderr, result.stderr
    # A .eval log without --from says which --from.
    result = CliRunner().invoke(main, ["import", "answers", str(inspect_logs["eval"]),
                                       "--db", str(tmp_path / "p.duckdb")])
    assert result.exit_code == 2 and "add --from inspect" in result.stderr, result.stderr


def test_win_rate_faces_the_baseline_and_refuses_what_is_not_a_win(tmp_path: Path) -> None:
    from judgelab.calibration.leaderboard import win_rate

    db = str(tmp_path / "ae.duckdb")
    for kind in ("answers", "judgements"):
        run("import", kind, str(AE_GPT4), "--from", "alpaca-eval", "--db", db)
    [model] = json.loads(run("winrate", "--baseline", "text_davinci_003", "--json", "--db", db))
    [flipped] = json.loads(run("winrate", "--baseline", "alpaca-7b", "--json", "--db", db))
    assert (flipped["model"], flipped["opponent"]) == ("text_davinci_003", "alpaca-7b")
    assert flipped["win_rate"]["estimate"] == pytest.approx(100 - model["win_rate"]["estimate"])
    assert flipped["win_rate"]["extra"]["n_wins"] == model["win_rate"]["extra"]["n_losses"]
    result = CliRunner().invoke(main, ["winrate", "--baseline", "nobody", "--db", db])
    assert result.exit_code == 2 and "against 'nobody'" in result.stderr
    with pytest.raises(ValueError, match="non-empty"):
        win_rate([])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        win_rate([0.5, 1.5])
    one = win_rate([1.0])
    assert one.estimate == 100 and one.n == 1 and np.isnan(one.ci_low)


# -- promptfoo ------------------------------------------------------------------------------------

PROMPTFOO = DATA / "promptfoo" / "sample-export.slice.json"


def test_promptfoo_export_gives_answers_and_llm_rubric_grades(tmp_path: Path) -> None:
    db = str(tmp_path / "pf.duckdb")
    assert "2 answers added" in run("import", "answers", str(PROMPTFOO), "--from", "promptfoo", "--db", db)
    said = run("import", "judgements", str(PROMPTFOO), "--from", "promptfoo", "--db", db)
    assert "2 judgements added" in said and "['contains', 'cost', 'latency']" in said and "promptfoo-default" in said
    results = json.loads(PROMPTFOO.read_text())["results"]["results"]
    answers = export_table(Store(db), "answers").set_index("answer_id")
    judged = export_table(Store(db), "judgements").set_index("answer_id")
    for result in results:
        [answer_id] = answers.index[answers["text"] == result["response"]["output"]]
        assert answers.loc[answer_id, "model"] == "openai:gpt-5-mini" and answers.loc[answer_id, "family"] == "openai"
        [grade] = [c for c in result["gradingResult"]["componentResults"] if c["assertion"]["type"] == "llm-rubric"]
        row = judged.loc[answer_id]
        assert (row["format"], row["score"], row["pass"], row["raw"]) == ("binary", grade["score"], grade["pass"],
                                                                          grade["reason"])
        assert json.loads(row["meta"])["rubric"] == grade["assertion"]["value"]


def test_promptfoo_grader_named_in_the_config_is_the_judge_and_bad_scores_are_refused(tmp_path: Path) -> None:
    doc = json.loads(PROMPTFOO.read_text())
    doc["config"]["defaultTest"]["options"] = {"provider": "anthropic:messages:claude-sonnet-4"}
    store = Store(tmp_path / "p.duckdb")
    import_from(store, "answers", _write(tmp_path / "a.json", doc), tool="promptfoo")
    done = import_from(store, "judgements", _write(tmp_path / "a.json", doc), tool="promptfoo")
    assert set(export_table(store, "judgements")["judge_model"]) == {"anthropic:messages:claude-sonnet-4"}
    assert not any("promptfoo-default" in d for d in done.dropped)
    doc["results"]["results"][1]["gradingResult"]["componentResults"][2]["score"] = 7
    with pytest.raises(InputError) as info:
        import_from(Store(tmp_path / "q.duckdb"), "judgements", _write(tmp_path / "b.json", doc), tool="promptfoo")
    assert (info.value.row, info.value.column) == (2, "gradingResult") and "not a number in 0..1" in \
        info.value.problem
    with pytest.raises(InputError, match="is not a promptfoo eval export"):
        import_from(store, "answers", _write(tmp_path / "c.json", [doc]), tool="promptfoo")


def test_hf_files_written_by_the_datasets_library_import_as_answers_and_judgements(tmp_path: Path) -> None:
    # Written by Hugging Face `datasets` 5.2.0's own to_json / to_parquet (tests/data/hf/make_files.py.txt)
    # from real MT-Bench texts and FastChat single-v1 ratings: its JSON lines escape "/" as "\/", its Parquet
    # keeps a missing rating as null. Checked against the files read independently here.
    hf = DATA / "hf"
    db = str(tmp_path / "hf.duckdb")
    out = run("import", "answers", str(hf / "answers.jsonl"), "--from", "hf", "--db", db)
    raw = [json.loads(line) for line in (hf / "answers.jsonl").read_text().splitlines()]
    assert f"{len(raw)} answers added" in out
    answers = export_table(Store(db), "answers").set_index("answer_id")
    for rec in raw:
        row = answers.loc[rec["id"]]
        assert row["text"] == rec["response"] and row["prompt"] == rec["prompt"] and row["model"] == rec["model"]
    out = run("import", "judgements", str(hf / "judgements.parquet"), "--from", "hf", "--db", db)
    table = pd.read_parquet(hf / "judgements.parquet")
    assert f"{len(table)} judgements added" in out
    got = export_table(Store(db), "judgements").set_index("answer_id")
    for rec in table.to_dict("records"):
        row = got.loc[rec["id"]]
        assert row["judge_model"] == rec["judge"] and row["raw"] == rec["raw"]
        if rec["rating"] is None or pd.isna(rec["rating"]):
            assert pd.isna(row["score"]) and row["parse_error"] == rec["parse_error"]
        else:
            assert row["score"] == rec["rating"]
