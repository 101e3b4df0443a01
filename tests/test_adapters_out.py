"""Out again: `judgelab export K --to hf|label-studio`, read back with `--from`, loses nothing it promises.

A small project (the bundled rubric, four answers, labels with a correction, criteria, a flag,
seconds and times, pointwise and pairwise judgements with replies, tokens and costs) is exported
in each tool's shape, imported into a fresh project with `--from`, and exported again in
judgelab's own schema: the two exports must be equal (Label Studio: in every column it can carry).
"""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.cli import main
from judgelab.labeler.exports import export_table
from judgelab.labeler.store import Store
from tests.conftest import DATA

ANSWERS = [
    {"task_id": "t1", "prompt": "How do I reset my password?", "answer_id": "t1-a", "family": "claude",
     "model": "m1", "text": "Use the reset link on the login page."},
    {"task_id": "t1", "prompt": "How do I reset my password?", "answer_id": "t1-b", "family": "gpt",
     "model": "m2", "text": "=Click 'Forgot password', then check your email.\nDone."},
    {"task_id": "t2", "prompt": "Can I get a refund?", "answer_id": "t2-a", "family": "claude", "model": "m1",
     "text": "Yes, within 30 days."},
    {"task_id": "t2", "prompt": "Can I get a refund?", "answer_id": "t2-b", "family": "gpt", "model": "m2",
     "text": "Refunds are handled by billing \u2028 (line separator inside)."},
]
CRIT = ("resolves", "accurate", "actionable", "tone", "clear")
LABELS = [
    {"label_id": 1, "rater": "ann", "answer_id": "t1-a", "score": 4, "pass": True, "comment": "fine",
     "seconds": 12.5, "created_at": "2026-01-02T03:04:05Z", **{f"criterion:{c}": 4 for c in CRIT}},
    {"label_id": 2, "supersedes": 1, "rater": "ann", "answer_id": "t1-a", "score": 5,
     "comment": "on second thought", "created_at": "2026-01-02T03:05:00Z", **{f"criterion:{c}": 5 for c in CRIT}},
    {"label_id": 3, "rater": "bob", "answer_id": "t1-b", "score": 2, "pass": False, "seconds": 30,
     "created_at": "2026-01-02T04:00:00Z"},
    {"label_id": 4, "rater": "bob", "answer_id": "t2-a", "flag_reason": "not a support question",
     "created_at": "2026-01-02T04:01:00Z"},
]
JUDGEMENTS = [
    {"judge_model": "judge-x", "judge_family": "claude", "format": "likert5", "answer_id": a, "score": s,
     "raw": f"Reasoning...\nVERDICT: {s}", "input_tokens": 100 + s, "output_tokens": 9, "cost_usd": 0.001 * s,
     "latency_s": 0.25, "run_id": "run-1", "call_id": f"call-{a}", "meta": {"seq": s}}
    for a, s in (("t1-a", 5), ("t1-b", 2), ("t2-a", 4), ("t2-b", 3))
] + [{"judge_model": "judge-x", "format": "pairwise5", "answer_id": "t1-a", "answer_b_id": "t1-b", "order": "BA",
      "score": 1, "raw": "B is better", "run_id": "run-1", "call_id": "pair-1"}]


def run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def project(tmp_path: Path, name: str) -> str:
    db = str(tmp_path / f"{name}.duckdb")
    run("import", "rubric", str(DATA / "rubric.toml"), "--db", db)
    return db


@pytest.fixture
def original(tmp_path: Path) -> str:
    db = project(tmp_path, "original")
    for kind, rows in (("answers", ANSWERS), ("labels", LABELS), ("judgements", JUDGEMENTS)):
        (tmp_path / f"{kind}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        run("import", kind, str(tmp_path / f"{kind}.jsonl"), "--db", db)
    return db


def same(a: pd.DataFrame, b: pd.DataFrame, *, skip: tuple[str, ...] = ()) -> None:
    assert list(a.columns) == list(b.columns) and len(a) == len(b)
    for col in a.columns:
        if col not in skip:
            left = a[col].astype(object).where(a[col].notna(), None).tolist()
            right = b[col].astype(object).where(b[col].notna(), None).tolist()
            assert left == right, col


@pytest.mark.parametrize("suffix", ["jsonl", "parquet", "json"])
def test_hf_export_round_trips_without_loss(tmp_path: Path, original: str, suffix: str) -> None:
    back = project(tmp_path, "back")
    for kind in ("answers", "labels", "judgements"):
        out = tmp_path / f"hf_{kind}.{suffix}"
        assert f"for hf to {out}" in run("export", kind, "--to", "hf", "--out", str(out), "--db", original)
        run("import", kind, str(out), "--from", "hf", "--db", back)
    for kind in ("answers", "labels", "judgements"):
        same(export_table(Store(original), kind), export_table(Store(back), kind))  # type: ignore[arg-type]
    rows = pd.read_parquet(tmp_path / "hf_labels.parquet") if suffix == "parquet" else None
    if rows is not None:  # a dataset row carries its prompt and response, as on the Hub
        assert list(rows.columns[:3]) == ["id", "prompt", "response"]
        assert rows.loc[0, "response"] == ANSWERS[0]["text"]


def test_label_studio_export_round_trips_what_label_studio_carries(tmp_path: Path, original: str) -> None:
    back = project(tmp_path, "back")
    run("import", "answers", str(tmp_path / "answers.jsonl"), "--db", back)
    for kind in ("labels", "judgements"):
        out = tmp_path / f"ls_{kind}.json"
        run("export", kind, "--to", "label-studio", "--out", str(out), "--db", original)
        said = run("import", kind, str(out), "--from", "label-studio", "--db", back)
        assert "left out:" in said
    tasks = json.loads((tmp_path / "ls_labels.json").read_text())
    assert all(set(t["data"]) == {"answer_id", "task_id", "prompt", "text"} for t in tasks), "never family or model"
    assert [t["id"] for t in tasks] == list(range(1, len(tasks) + 1))
    # Label Studio reads a user id; the rater's name travels beside it as Label Studio's export writes it.
    people = {(a["completed_by"], a["created_username"]) for t in tasks for a in t["annotations"]}
    assert people == {(1, "ann, 1"), (2, "bob, 2")}
    for kind in ("labels", "judgements"):  # every result has its control, of its type, in the config beside
        config = ElementTree.parse(tmp_path / f"ls_{kind}.label_config.xml").getroot()
        controls = {c.get("name"): c.tag.lower() for c in config.iter() if c.get("toName") == "text"}
        for t in json.loads((tmp_path / f"ls_{kind}.json").read_text()):
            for item in (r for a in t["annotations"] + t["predictions"] for r in a["result"]):
                assert controls[item["from_name"]] == item["type"], item
    first = next(t for t in tasks if t["data"]["answer_id"] == "t1-a")
    assert [a["parent_annotation"] for a in first["annotations"]] == [None, 1]
    assert {"from_name": "score", "to_name": "text", "type": "rating", "value": {"rating": 4}} in \
        first["annotations"][0]["result"]
    same(export_table(Store(original), "labels"), export_table(Store(back), "labels"), skip=("source",))
    original_j = export_table(Store(original), "judgements")
    back_j = export_table(Store(back), "judgements")
    pointwise = original_j[original_j["answer_b_id"].isna()].reset_index(drop=True)
    kept = ["judge_model", "format", "answer_id", "score", "pass", "raw"]
    same(pointwise[kept], back_j[kept])


def test_label_studio_bad_files_name_the_task(tmp_path: Path, original: str) -> None:
    out = tmp_path / "ls.json"
    run("export", "judgements", "--to", "label-studio", "--out", str(out), "--db", original)
    tasks = json.loads(out.read_text())
    tasks[1]["predictions"][0]["result"] = [r for r in tasks[1]["predictions"][0]["result"]
                                            if r["from_name"] != "format"]
    out.write_text(json.dumps(tasks))
    result = CliRunner().invoke(main, ["import", "judgements", str(out), "--from", "label-studio", "--db", original])
    assert result.exit_code == 2 and "row 2" in result.stderr and "scoring format" in result.stderr
    tasks[1]["data"].pop("answer_id")
    tasks[1].pop("id")
    out.write_text(json.dumps(tasks))
    result = CliRunner().invoke(main, ["import", "labels", str(out), "--from", "label-studio", "--db", original])
    assert result.exit_code == 2 and "row 2" in result.stderr and "answer_id" in result.stderr


def test_export_to_refuses_what_the_tool_cannot_hold(tmp_path: Path, original: str) -> None:
    for args, problem in ((["pairs", "--to", "hf", "--out", "x.jsonl"], "not pairs"),
                          (["labels", "--to", "label-studio", "--out", "x.jsonl"], "JSON array of tasks"),
                          (["labels", "--to", "hf", "--out", "x.csv"], "JSON lines or Parquet")):
        result = CliRunner().invoke(main, ["export", *args, "--db", original])
        assert result.exit_code == 2 and problem in result.stderr, result.stderr
