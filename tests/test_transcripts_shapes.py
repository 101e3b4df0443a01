"""Malformed conversations through ``judgelab import answers`` (issue 52, point 13).

What the OpenAI and Anthropic APIs refuse is refused (exit 2, one line naming the file, row and
message, and the fix); the rest is imported as written with a warning the command prints and
counts. OpenAI's ``developer`` role is read as a system message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judgelab.labeler.store import Store
from tests.conftest import DATA, invoke

ASK = {"role": "user", "content": "Refund order 1042."}


def _call(cid: str, name: str = "lookup") -> dict[str, Any]:
    return {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}]}


def _result(cid: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": "found"}


DONE = {"role": "assistant", "content": "Refund started."}
GOOD = [ASK, _call("c1"), _result("c1"), DONE]


def _import(tmp_path: Path, *conversations: Any) -> tuple[Any, Path]:
    db = tmp_path / "t.duckdb"
    file = tmp_path / "answers.jsonl"
    file.write_text("".join(json.dumps({"task_id": f"t{i}", "prompt": "Refund order 1042.", "answer_id": f"a{i}",
                                        "family": "f", "model": "m", "messages": m}) + "\n"
                            for i, m in enumerate(conversations, start=1)))
    invoke("init", "--db", str(db))
    assert invoke("import", "rubric", str(DATA / "rubric.toml"), "--db", str(db)).exit_code == 0
    return invoke("import", "answers", str(file), "--db", str(db)), db


@pytest.mark.parametrize(("messages", "said"), [
    # A result whose id no call has: OpenAI answers 400 "tool_call_id ... not found".
    ([ASK, _call("c1"), _result("c9"), DONE], "message 3: a tool result for call 'c9', which no assistant turn makes"),
    # A result before its call.
    ([ASK, _result("c1"), _call("c1"), DONE], "message 2: a tool result before its call ('c1' is made in message 3)"),
    # The Anthropic form: a tool_result block before its tool_use.
    ([ASK, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "content": "x"}]},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "lookup", "input": {}}]},
      {"role": "user", "content": "go on"}, DONE],
     "message 2, block 1: a tool result before its call ('u1' is made in message 3)"),
    # A result with no id and no call at all.
    ([ASK, {"role": "tool", "content": "orphan"}, DONE], "message 2: a tool result with no call id and no tool call"),
])
def test_what_the_apis_refuse_is_refused_naming_row_and_message(tmp_path: Path, messages: list[Any],
                                                                said: str) -> None:
    result, db = _import(tmp_path, GOOD, messages)
    assert result.exit_code == 2
    problem, fix = result.stderr.strip().splitlines()  # the project's one error: the problem, then its fix
    assert "answers.jsonl, row 2, column 'messages'" in problem and said in problem, problem
    assert fix.startswith("Fix: ") and ("after" in fix or "id of the call" in fix), fix
    assert Store(db).answer_ids() == set()  # all or nothing


@pytest.mark.parametrize(("messages", "said"), [
    ([ASK, {"role": "assistant", "content": ""}, {"role": "user", "content": "hello?"}, DONE],
     "row 2, message 2: an empty assistant turn"),
    ([{"role": "assistant", "content": "How can I help?"}, ASK, DONE],
     "row 2, message 1: the conversation opens with the assistant"),
    ([ASK, DONE, {"role": "system", "content": "Be brief."}, {"role": "user", "content": "thanks"}, DONE],
     "row 2, message 3: a system message after the conversation began"),
    ([ASK, _call("c1", "refund"), DONE], "row 2, message 2 (refund): a tool call whose result never comes"),
])
def test_the_rest_is_imported_with_a_counted_warning(tmp_path: Path, messages: list[Any], said: str) -> None:
    result, db = _import(tmp_path, GOOD, messages)
    assert result.exit_code == 0, result.stderr
    first, *rest = result.stdout.strip().splitlines()
    assert "2 answers added" in first and first.endswith("1 warning (imported as written):"), first
    assert rest == [f"  warning: {said}" + rest[0].split(said, 1)[1]] and said in rest[0]
    assert Store(db).answer_ids() == {"a1", "a2"}


def test_a_clean_import_prints_no_warning(tmp_path: Path) -> None:
    result, _ = _import(tmp_path, GOOD, [ASK, DONE])
    assert result.exit_code == 0 and "warning" not in result.stdout, result.stdout


def test_the_developer_role_is_a_system_message(tmp_path: Path) -> None:
    result, db = _import(tmp_path, [{"role": "developer", "content": "You are a support agent."}, ASK, DONE])
    assert result.exit_code == 0 and "warning" not in result.stdout, result.output
    transcript = Store(db).query("SELECT transcript FROM answers WHERE answer_id = 'a1'")["transcript"].iloc[0]
    assert json.loads(transcript)[0] == {"role": "system", "content": "You are a support agent."}
