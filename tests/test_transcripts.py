"""Conversations and agent traces as answers (issue 46): both provider forms, one transcript."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from judgelab.labeler.adapters import import_from
from judgelab.labeler.errors import InputError
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store
from judgelab.labeler.transcripts import Transcript, parse_messages

DATA = Path(__file__).parent / "data" / "conversations"


def _stored(store: Store) -> dict[str, Transcript]:
    frame = store.answers()
    return {r.answer_id: Transcript.from_json(r.transcript) for r in frame.itertuples() if r.transcript}


def test_both_provider_forms_become_one_transcript(store: Store) -> None:
    import_file(store, "answers", DATA / "openai.jsonl")
    import_file(store, "answers", DATA / "anthropic.jsonl")
    got = _stored(store)
    oa, an = got["c-openai-1"], got["c-anthropic-1"]
    # The same trace in two forms: system, user, a tool call, its result, a final answer.
    assert [m.role for m in oa.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert [m.role for m in an.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert oa.messages[2].tool_calls[0].name == an.messages[2].tool_calls[0].name == "lookup_order"
    assert json.loads(oa.messages[2].tool_calls[0].arguments) == json.loads(an.messages[2].tool_calls[0].arguments)
    # A result carries the name of the tool whose call it answers (neither form writes it there).
    assert oa.messages[3].name == an.messages[3].name == "lookup_order"
    assert oa.messages[3].tool_call_id == "call_1" and an.messages[3].tool_call_id == "toolu_1"
    assert oa.rated_turn("last") == an.rated_turn("last") == 4
    # The answer text is the rendering, so self-name detection sees system prompts and tools.
    frame = store.self_identifying()
    assert set(frame["answer_id"]) >= {"c-openai-1", "c-anthropic-1"}
    assert "[tool lookup_order]" in store.answers().set_index("answer_id").loc["c-openai-1", "text"]


def test_json_and_parquet_import_the_same_transcript(store: Store, tmp_path: Path) -> None:
    row = json.loads((DATA / "openai.jsonl").read_text())
    (tmp_path / "a.json").write_text(json.dumps([row]))
    import_file(store, "answers", tmp_path / "a.json")
    want = _stored(store)["c-openai-1"]
    row["answer_id"] = "c-openai-pq"
    pd.DataFrame([row]).to_parquet(tmp_path / "a.parquet")
    import_file(store, "answers", tmp_path / "a.parquet")
    assert _stored(store)["c-openai-pq"] == want


def test_reimport_is_a_no_op(store: Store) -> None:
    import_file(store, "answers", DATA / "openai.jsonl")
    summary = import_file(store, "answers", DATA / "openai.jsonl")
    assert summary.added.get("answers", 0) == 0


@pytest.mark.parametrize(("messages", "words"), [
    ([{"role": "robot", "content": "x"}], "message 1: role 'robot'"),
    ([{"role": "user", "content": "only a question"}], "no assistant turn"),
    ([{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
      {"role": "assistant", "content": "a"}], "message 1, block 1: tool_use belongs in an assistant turn"),
    ("[not json", "not JSON"),
])
def test_bad_messages_name_file_row_field_and_import_nothing(
        store: Store, tmp_path: Path, messages: object, words: str) -> None:
    good = json.loads((DATA / "openai.jsonl").read_text())
    bad = {**good, "answer_id": "bad", "messages": messages}
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError) as err:
        import_file(store, "answers", path)
    text = str(err.value)
    assert "mixed.jsonl" in text and "row 2" in text and "messages" in text and words in text
    assert store.answers().empty


def test_a_rubric_declares_the_rated_turn(store: Store, tmp_path: Path) -> None:
    base = (Path(__file__).parents[1] / "labeler" / "examples" / "rubric.toml").read_text()
    (tmp_path / "r.toml").write_text('turn = "whole"\n' + base)
    import_file(store, "rubric", tmp_path / "r.toml")
    rubric = store.rubric()
    assert rubric is not None and rubric.turn == "whole"
    (tmp_path / "bad.toml").write_text('turn = "each-but-wrong"\n' + base.replace("version = 1", "version = 9"))
    with pytest.raises(InputError, match="turn 'each-but-wrong' is not one of last, whole"):
        import_file(store, "rubric", tmp_path / "bad.toml")


def test_parse_keeps_order_of_text_and_results_in_one_anthropic_turn() -> None:
    t = parse_messages([
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "search", "input": {"q": "x"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "found", "is_error": True},
                                     {"type": "text", "text": "and then?"}]},
        {"role": "assistant", "content": "done"},
    ])
    assert [(m.role, m.content) for m in t.messages] == [
        ("assistant", ""), ("tool", "[error] found"), ("user", "and then?"), ("assistant", "done")]


def test_an_inspect_agent_log_written_by_the_current_release_imports_as_a_trace(store: Store, tmp_path: Path) -> None:
    maker = Path(__file__).parent / "data" / "inspect" / "make_trace_log.py"
    done = subprocess.run([sys.executable, str(maker), str(tmp_path)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    import_from(store, "answers", Path(done.stdout.split()[-1]), tool="inspect")
    [t] = _stored(store).values()
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert t.messages[2].tool_calls[0].name == t.messages[3].name == "lookup_order"
    assert json.loads(t.messages[2].tool_calls[0].arguments) == {"order_id": "1042"}
    assert t.messages[-1].content == "Order 1042 arrived 3 days ago; refund started."
    # The system prompt names the model's maker: masked for raters wherever it stands.
    [spans] = store.self_identifying()["spans"]
    assert {w for *_, w in spans} >= {"Claude", "Anthropic"}


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_an_export_imports_back_to_the_same_transcripts(store: Store, tmp_path: Path, suffix: str) -> None:
    from judgelab.labeler.exports import export_table

    import_file(store, "answers", DATA / "openai.jsonl")
    import_file(store, "answers", DATA / "anthropic.jsonl")
    frame = export_table(store, "answers")
    path = tmp_path / f"out{suffix}"
    if suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True)
    elif suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    other = Store(tmp_path / "other.duckdb")
    import_file(other, "answers", path)
    assert _stored(other) == _stored(store)
    assert (other.answers()["text"].tolist() == store.answers()["text"].tolist())
