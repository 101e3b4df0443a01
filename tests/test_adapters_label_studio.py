"""`judgelab export K --to label-studio` on every scale shape and on conversation answers, read back.

Each rubric scale judgelab knows (binary, likert5, a declared 1-7 Likert, a declared 0-2 ordinal
with labels, numeric100) gets a project with a plain and a conversation answer, labels with
criteria and an empty comment, and judgements with a reply that did not parse. The export must be
strict JSON (no NaN), its config must hold each score on the rubric's scale (not the highest score
seen), the raters' ids must be written beside it, the left-out replies counted, and the tasks must
import back to the same labels. Label Studio's own reader (label-studio-sdk's LabelInterface and
Converter, through tests/data/label_studio/label_studio_tool.py) checks the files when an
interpreter with the SDK is given in JUDGELAB_LABEL_STUDIO_SDK_PYTHON (the SDK pins NumPy below
2.3, so it lives in its own venv: see the NOTICE there; `.ci/run` makes one and CI always checks).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner

from judgelab.cli import main
from judgelab.labeler.exports import export_table
from judgelab.labeler.store import Store
from tests.conftest import DATA as EXAMPLES
from tests.scales.fixtures import CORRECT3, LIKERT7

DATA = Path(__file__).parent / "data"
TOOL = DATA / "label_studio" / "label_studio_tool.py"
CONVERSATION = json.loads((DATA / "conversations" / "openai.jsonl").read_text().splitlines()[0])
RUBRIC = (EXAMPLES / "rubric.toml").read_text()


def _rubric(scale: str, threshold: float) -> str:
    return RUBRIC.replace('scale = "likert5"', f'scale = "{scale}"').replace(
        "pass_threshold = 4 ", f"pass_threshold = {threshold:g} ")


# name, rubric TOML, the two raters' scores, the criterion's id, the control Label Studio gets, its attributes
SCALES: list[tuple[str, str, tuple[float, float], str, str, dict[str, str]]] = [
    ("binary", _rubric("binary", 1), (0, 1), "resolves", "choices", {}),
    ("likert5", RUBRIC, (2, 4), "resolves", "rating", {"maxRating": "5"}),
    ("likert7", LIKERT7, (3, 6), "helps", "rating", {"maxRating": "7"}),  # the 1-7 rubric
    ("correct3", CORRECT3, (0, 2), "correct", "choices", {}),
    ("numeric100", _rubric("numeric100", 70), (35.5, 80), "resolves", "number", {"min": "0", "max": "100"}),
]
LEVELS = {"binary": ["0", "1"], "correct3": ["0", "1", "2"]}


def run(*args: str) -> CliRunner:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def strict_json(path: Path) -> Any:
    def no_nan(name: str) -> None:
        raise AssertionError(f"{path.name} holds {name}, which is not JSON")
    return json.loads(path.read_text(encoding="utf-8"), parse_constant=no_nan)


def other(scale: str) -> str:
    """A judgement format other than the rubric's scale."""
    return "numeric100" if scale == "likert5" else "likert5"


def project(tmp_path: Path, name: str, rubric: str, scores: tuple[float, float], criterion: str) -> str:
    db = str(tmp_path / f"{name}.duckdb")
    (tmp_path / "rubric.toml").write_text(rubric)
    run("import", "rubric", str(tmp_path / "rubric.toml"), "--db", db)
    plain = {"task_id": "t-pw", "prompt": "How do I reset my password?", "answer_id": "plain-1", "family": "claude",
             "model": "m1", "text": "Use the reset link on the login page."}
    (tmp_path / "answers.jsonl").write_text(json.dumps(plain) + "\n" + json.dumps(CONVERSATION) + "\n")
    run("import", "answers", str(tmp_path / "answers.jsonl"), "--db", db)
    conv = CONVERSATION["answer_id"]
    labels = [{"rater": "ann", "answer_id": conv, "score": scores[0], f"criterion:{criterion}": scores[1],
               "seconds": 12.5},
              {"rater": "bob", "answer_id": conv, "score": scores[1], "comment": "checked the order"},
              {"rater": "bob", "answer_id": "plain-1", "score": scores[0]}]
    (tmp_path / "labels.jsonl").write_text("\n".join(json.dumps(r) for r in labels) + "\n")
    run("import", "labels", str(tmp_path / "labels.jsonl"), "--db", db)
    judgements = [{"judge_model": "judge-x", "format": name, "answer_id": conv, "score": scores[1],
                   "raw": f"VERDICT: {scores[1]:g}"},
                  {"judge_model": "judge-x", "format": other(name), "answer_id": "plain-1", "score": 3,
                   "raw": "VERDICT: 3"},
                  {"judge_model": "judge-x", "format": name, "answer_id": "plain-1", "score": None,
                   "parse_error": "no verdict", "raw": "I cannot decide."}]
    (tmp_path / "judgements.jsonl").write_text("\n".join(json.dumps(r) for r in judgements) + "\n")
    run("import", "judgements", str(tmp_path / "judgements.jsonl"), "--db", db)
    return db


def plain_rows(frame: Any) -> list[list[Any]]:
    return frame.astype(object).where(frame.notna(), None).to_numpy().tolist()  # type: ignore[no-any-return]


def sdk_check(tasks: Path, config: Path) -> None:
    """label-studio-sdk's LabelInterface and Converter on the files, when an interpreter with the SDK is given."""
    python = os.environ.get("JUDGELAB_LABEL_STUDIO_SDK_PYTHON")
    if not python:
        # CI always reads the files back with the SDK (.ci/run installs it beside the project).
        assert os.environ.get("CI") != "true", "CI needs JUDGELAB_LABEL_STUDIO_SDK_PYTHON (.ci/run sets it)"
        return
    done = subprocess.run([python, str(TOOL), "check", str(tasks), str(config)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "errors none" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize(("name", "rubric", "scores", "criterion", "control", "attrs"), SCALES,
                         ids=[s[0] for s in SCALES])
def test_label_studio_export_holds_every_scale_and_conversation_and_reads_back(
    tmp_path: Path, name: str, rubric: str, scores: tuple[float, float], criterion: str, control: str,
    attrs: dict[str, str],
) -> None:
    db = project(tmp_path, name, rubric, scores, criterion)
    for kind in ("labels", "judgements", "answers"):
        out = tmp_path / f"ls_{kind}.json"
        result = run("export", kind, "--to", "label-studio", "--out", str(out), "--db", db)
        tasks = strict_json(out)
        config = ElementTree.parse(out.with_suffix(".label_config.xml")).getroot()
        controls = {c.get("name"): c for c in config.iter() if c.get("toName") == "text"}
        # The score's control comes from the rubric's scale, not from the scores seen.
        score = controls["score"]
        assert score.tag.lower() == control and all(score.get(k) == v for k, v in attrs.items()), \
            (kind, ElementTree.tostring(score))
        if name in LEVELS:
            assert [c.get("value") for c in score.iter("Choice")] == LEVELS[name]
        if name == "correct3":
            assert [c.get("hint") for c in score.iter("Choice")] == ["wrong", "partly right", "right"]
        for t in tasks:  # every result has its control, of its type, with its value among the choices
            assert isinstance(t["data"]["text"], str) and "family" not in t["data"] and "model" not in t["data"]
            for item in (r for a in t["annotations"] + t["predictions"] for r in a["result"]):
                assert controls[item["from_name"]].tag.lower() == item["type"], item
                if item["type"] == "choices":
                    allowed = [c.get("value") for c in controls[item["from_name"]].iter("Choice")]
                    assert set(item["value"]["choices"]) <= set(allowed), (item, allowed)
        conv = next(t for t in tasks if t["data"]["answer_id"] == CONVERSATION["answer_id"])
        assert "lookup_order" in conv["data"]["text"] and conv["data"]["messages"]  # the transcript, rendered
        sdk_check(out, out.with_suffix(".label_config.xml"))
        if kind == "labels":
            assert strict_json(out.with_suffix(".users.json")) == {"ann": 1, "bob": 2}
            assert "users.json" in result.output
        if kind == "judgements":
            assert "left out: 1 judge repl(ies) that did not parse" in result.stderr
            names = {r["from_name"] for t in tasks for p in t["predictions"] for r in p["result"]}
            assert f"score_{other(name)}" in names and "score" in names  # another format has its own control
    # Read back into a project with the same rubric: the answers (the conversation too), the labels, the judgements.
    back = str(tmp_path / "back.duckdb")
    run("import", "rubric", str(tmp_path / "rubric.toml"), "--db", back)
    said = run("import", "answers", str(tmp_path / "ls_answers.json"), "--from", "label-studio", "--family", "acme",
               "--db", back).output
    assert "2 answers added" in said and "'unknown'" not in said and "family 'acme'" in said
    got = export_table(Store(back), "answers").set_index("answer_id")
    want = export_table(Store(db), "answers").set_index("answer_id")
    assert got.loc[CONVERSATION["answer_id"], "messages"] == want.loc[CONVERSATION["answer_id"], "messages"]
    assert got.loc["plain-1", "text"] == want.loc["plain-1", "text"]
    # A comment box left empty, as Label Studio may write it: no comment, not "".
    tasks = strict_json(tmp_path / "ls_labels.json")
    for a in (a for t in tasks for a in t["annotations"]):
        if not any(r["from_name"] == "comment" for r in a["result"]):
            a["result"].append({"from_name": "comment", "to_name": "text", "type": "textarea", "value": {"text": [""]}})
    (tmp_path / "ls_labels.json").write_text(json.dumps(tasks))
    run("import", "labels", str(tmp_path / "ls_labels.json"), "--from", "label-studio", "--db", back)
    run("import", "judgements", str(tmp_path / "ls_judgements.json"), "--from", "label-studio", "--db", back)
    cols = ["rater", "answer_id", "score", f"criterion:{criterion}", "comment", "seconds"]
    before, after = export_table(Store(db), "labels"), export_table(Store(back), "labels")
    assert plain_rows(after[cols]) == plain_rows(before[cols])
    assert after["comment"].isna().sum() == 2
    jb, ja = export_table(Store(db), "judgements"), export_table(Store(back), "judgements")
    kept = ["judge_model", "format", "answer_id", "score", "raw"]
    assert sorted(map(tuple, ja[kept].astype(str).to_numpy().tolist())) == \
        sorted(map(tuple, jb[jb["score"].notna()][kept].astype(str).to_numpy().tolist()))


def test_the_users_map_takes_label_studio_ids_for_the_next_export(tmp_path: Path) -> None:
    # Label Studio keeps completed_by only when it is a member's id: the user puts the raters' ids in the map.
    db = project(tmp_path, "likert5", RUBRIC, (2, 4), "resolves")
    out = tmp_path / "ls.json"
    run("export", "labels", "--to", "label-studio", "--out", str(out), "--db", db)
    users = out.with_suffix(".users.json")
    assert strict_json(users) == {"ann": 1, "bob": 2}
    users.write_text(json.dumps({"ann": 17, "carol": 4}))
    run("export", "labels", "--to", "label-studio", "--out", str(out), "--db", db)
    people = {(a["completed_by"], a["created_username"]) for t in strict_json(out) for a in t["annotations"]}
    assert people == {(17, "ann, 17"), (18, "bob, 18")} and strict_json(users) == {"ann": 17, "bob": 18}
    back = str(tmp_path / "back.duckdb")
    run("import", "rubric", str(tmp_path / "rubric.toml"), "--db", back)
    run("import", "answers", str(tmp_path / "answers.jsonl"), "--db", back)
    run("import", "labels", str(out), "--from", "label-studio", "--db", back)
    assert sorted(export_table(Store(back), "labels")["rater"]) == ["ann", "bob", "bob"]
    users.write_text(json.dumps({"ann": "ann@example.com"}))
    result = CliRunner().invoke(main, ["export", "labels", "--to", "label-studio", "--out", str(out), "--db", db])
    assert result.exit_code == 2 and "'ann' is not a Label Studio user id" in result.stderr
