"""``--from otel``: conversations and agent runs from OpenTelemetry GenAI spans (issue 46).

The main files are written by the current releases (``tests/data/otel/make_traces.py``: the
OpenTelemetry SDK and its JSON file exporter, the official OpenAI instrumentation around the
real ``openai`` SDK, judgelab's mock as the server), in both of the instrumentation's content
modes: messages on the spans, and messages on log records tied to them. The older
per-message events, which current releases no longer write, come from a hand-built file in
the shape the conventions gave them (``tests/data/otel/older_events.jsonl``), and a second
instrumentation's current release wrote ``tests/data/otel/openllmetry.jsonl``.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.mockapi import MockAnthropic
from judgelab.cli import main
from judgelab.labeler.adapters import import_from
from judgelab.labeler.errors import InputError
from judgelab.labeler.exports import export_table
from judgelab.labeler.store import Store
from judgelab.labeler.transcripts import Transcript
from tests.conftest import DATA

OTEL = Path(__file__).parent / "data" / "otel"
AGENT_ASK = "I want a refund for order 1042."
FINAL = "Order 1042 arrived 3 days ago; I have started your refund."


def _reply(body: dict[str, Any]) -> str:
    """The mock's answers to the script's chats: the last user message decides."""
    last = str(body["messages"][-1]["content"])
    return {"What is the capital of France?": "Paris.", "Suggest a name for a bakery.": "Crumb & Co.",
            "Shorter, please.": "Crumb."}.get(last, "I cannot help with that.")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """OTLP JSON files the current releases wrote: ``span_only`` and ``event_only`` content capture."""
    out = tmp_path_factory.mktemp("otel")
    files = {mode: out / f"{mode}.jsonl" for mode in ("span_only", "event_only")}
    with MockAnthropic(responder=_reply) as mock:
        # Side by side: most of each run is importing the SDKs.
        runs = [subprocess.Popen([sys.executable, str(OTEL / "make_traces.py"), str(path), mock.openai_base_url, mode],
                                 cwd=out, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for mode, path in files.items()]
        for done in runs:
            stdout, stderr = done.communicate(timeout=120)
            assert done.returncode == 0, stderr[-3000:]
            assert "opentelemetry-instrumentation-openai-v2==" in stdout
        # The chats reached the mock's Chat Completions endpoint for real (the agent's calls are scripted).
        assert sum(r.path == "/v1/chat/completions" for r in mock.received) == 6
    return files


def _stored(store: Store) -> dict[str, tuple[Any, Transcript]]:
    """Each answer's row and transcript, by its first user message."""
    out = {}
    for r in store.answers().itertuples():
        t = Transcript.from_json(r.transcript)
        out[next(m.content for m in t.messages if m.role == "user")] = (r, t)
    return out


def run(*args: str, ok: bool = True) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert (result.exit_code == 0) is ok, result.output
    return result.output


# -- the current attributes, from the current releases ------------------------------------------


@pytest.mark.parametrize("mode", ["span_only", "event_only"])
def test_current_traces_give_an_agent_run_a_chat_and_a_conversation(
        store: Store, written: dict[str, Path], mode: str) -> None:
    result = import_from(store, "answers", written[mode], tool="otel")
    assert result.summary.added.get("answers") == 3
    got = _stored(store)
    row, agent = got[AGENT_ASK]
    # The agent run: its two model calls and the tool between them, one conversation.
    assert [m.role for m in agent.messages] == ["system", "user", "assistant", "tool", "assistant"]
    [call] = agent.messages[2].tool_calls
    assert call.name == agent.messages[3].name == "lookup_order" and agent.messages[3].tool_call_id == call.call_id
    assert json.loads(call.arguments) == {"order_id": "1042"}
    assert agent.messages[3].content == "order 1042: delivered 3 days ago"
    assert agent.messages[-1].content == FINAL
    # The model that answered (the response's, not the alias asked for), its family from the name.
    assert (row.model, row.family) == ("gpt-4o-mini-2024-07-18", "gpt")
    assert row.answer_id.startswith("otel-") and len(row.answer_id) == len("otel-") + 32  # the trace id
    # A lone chat, and a two-turn conversation whose first call is a step of the second.
    assert [(m.role, m.content) for m in got["What is the capital of France?"][1].messages] == [
        ("user", "What is the capital of France?"), ("assistant", "Paris.")]
    assert [m.content for m in got["Suggest a name for a bakery."][1].messages] == [
        "Suggest a name for a bakery.", "Crumb & Co.", "Shorter, please.", "Crumb."]
    said = " ".join(result.dropped)
    assert "execute_tool spans but for results" in said and "1 model call(s) whose conversation a later" in said
    # The system prompt names the model's maker: masked for raters.
    spans = store.self_identifying().set_index("answer_id").loc[row.answer_id, "spans"]
    assert {w for *_, w in spans} >= {"ChatGPT", "OpenAI"}
    assert import_from(store, "answers", written[mode], tool="otel").summary.added.get("answers", 0) == 0


def test_both_content_modes_give_the_same_conversations(tmp_path: Path, written: dict[str, Path]) -> None:
    seen = []
    for mode in ("span_only", "event_only"):
        store = Store(tmp_path / f"{mode}.duckdb")
        import_from(store, "answers", written[mode], tool="otel")
        seen.append({prompt: (row.model, row.family, t) for prompt, (row, t) in _stored(store).items()})
    assert seen[0] == seen[1]


def test_the_cli_imports_a_trace_file_and_says_what_it_left_out(tmp_path: Path, written: dict[str, Path]) -> None:
    db = str(tmp_path / "p.duckdb")
    forgot = run("import", "answers", str(written["span_only"]), "--db", db, ok=False)
    assert "add --from otel" in forgot
    out = run("import", "answers", str(written["span_only"]), "--from", "otel", "--db", db)
    assert "3 answers added" in out and "left out" in out and "execute_tool" in out


def test_one_json_document_and_base64_ids_read_as_the_lines_do(tmp_path: Path, written: dict[str, Path]) -> None:
    lines = [json.loads(line) for line in written["span_only"].read_text().splitlines()]
    spans = [s for doc in lines for rs in doc.get("resourceSpans", []) for ss in rs["scopeSpans"] for s in ss["spans"]]
    (tmp_path / "one.json").write_text(json.dumps(
        {"resourceSpans": [rs for doc in lines for rs in doc.get("resourceSpans", [])]}, indent=2))
    for s in spans:  # protobuf's own JSON mapping writes the ids as base64, as some exporters do
        for key in ("traceId", "spanId", "parentSpanId"):
            if s.get(key):
                s[key] = base64.b64encode(bytes.fromhex(s[key])).decode()
    (tmp_path / "b64.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines))
    ids = []
    for name in ("one.json", "b64.jsonl"):
        store = Store(tmp_path / f"{name}.duckdb")
        import_from(store, "answers", tmp_path / name, tool="otel")
        ids.append(sorted(store.answers()["answer_id"]))
    reference = Store(tmp_path / "lines.duckdb")
    import_from(reference, "answers", written["span_only"], tool="otel")
    assert ids[0] == ids[1] == sorted(reference.answers()["answer_id"])


def test_a_loop_traced_by_openllmetry_reads_as_one_conversation(store: Store) -> None:
    # Another instrumentation's current release (OpenLLMetry 0.62.4, tests/data/otel/make_openllmetry.py):
    # two calls under an application span, no agent span; the first call is a step of the second.
    result = import_from(store, "answers", OTEL / "openllmetry.jsonl", tool="otel")
    [(row, t)] = _stored(store).values()
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert t.messages[2].tool_calls[0].name == t.messages[3].name == "lookup_order"
    assert t.messages[-1].content == "Refund started."
    assert (row.model, row.family) == ("gpt-4o-mini-2024-07-18", "gpt")
    assert any("1 model call(s) whose conversation a later call" in d for d in result.dropped)


# -- the older per-message events ---------------------------------------------------------------


def test_older_events_as_log_records_and_span_events_give_the_conversations(store: Store) -> None:
    result = import_from(store, "answers", OTEL / "older_events.jsonl", tool="otel")
    assert result.summary.added.get("answers") == 2
    got = _stored(store)
    row, flight = got["Find me a flight to Lisbon on Friday."]
    # Log records tied to the span, their fields in the body (gen_ai.system.message ... gen_ai.choice).
    assert [m.role for m in flight.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert flight.messages[2].tool_calls[0].name == flight.messages[3].name == "search_flights"
    assert flight.messages[-1].content == "TP 1351 leaves at 09:40 on Friday; shall I book it?"
    assert (row.model, row.family) == ("gpt-4o-2024-08-06", "gpt")
    # Span events, fields in attributes; a span of the conventions before gen_ai.operation.name.
    row, weather = got["Is Lisbon warm in March?"]
    assert [(m.role, m.content) for m in weather.messages] == [
        ("user", "Is Lisbon warm in March?"), ("assistant", "Mild: around 18 °C by day.")]
    assert (row.model, row.family) == ("claude-3-5-sonnet-20241022", "claude")


def _call(trace: str, span: str, parent: str | None, ask: str, answer: str, *, op: str = "chat") -> dict[str, Any]:
    """A span of the current conventions, built by hand: one question, one answer."""
    attrs = {"gen_ai.operation.name": op, "gen_ai.provider.name": "gcp.gemini",
             "gen_ai.request.model": "gemini-2.5-flash",
             "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": ask}]}]),
             "gen_ai.output.messages": json.dumps([{"role": "model", "parts": [
                 {"type": "reasoning", "content": "thinking..."}, {"type": "text", "content": answer}]}])}
    return {"traceId": trace, "spanId": span, "parentSpanId": parent or "", "name": f"{op} {span}",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}


def test_several_answers_in_a_trace_are_named_by_span_and_a_sub_agent_is_a_step(store: Store, tmp_path: Path) -> None:
    one, two = "1" * 32, "2" * 32
    spans = [_call(one, "a" * 16, None, "Name a red fruit.", "A cherry."),
             _call(one, "b" * 16, None, "Name a green fruit.", "A lime."),
             _call(two, "c" * 16, None, "Plan a trip.", "Lisbon, three days.", op="invoke_agent"),
             _call(two, "d" * 16, "c" * 16, "Plan a trip.", "Lisbon, three days."),
             _call(two, "e" * 16, "c" * 16, "Find hotels.", "Two hotels.", op="invoke_agent"),
             _call(two, "f" * 16, "e" * 16, "Find hotels.", "Two hotels."),
             {**_call(one, "9" * 16, None, "Name a blue fruit.", ""), "status": {"code": 2, "message": "429"}}]
    # A framework's chat span around the provider's (two instrumentations): one call, read once.
    spans.append(_call(one, "7" * 16, None, "Name a red fruit.", "A cherry."))
    spans[0]["parentSpanId"] = "7" * 16
    unasked = _call(one, "8" * 16, None, "", "Good morning.")  # a call with only a system prompt: no task
    greet = [_parts("system", {"type": "text", "content": "Greet."})]
    unasked["attributes"][3]["value"]["stringValue"] = json.dumps(greet)  # gen_ai.input.messages
    spans.append(unasked)
    (tmp_path / "t.jsonl").write_text(_doc(*spans) + "\n")
    result = import_from(store, "answers", tmp_path / "t.jsonl", tool="otel")
    got = {r.answer_id: (r.family, [(m.role, m.content) for m in Transcript.from_json(r.transcript).messages])
           for r in store.answers().itertuples()}
    assert got == {f"otel-{one}-{'a' * 16}": ("gemini", [("user", "Name a red fruit."), ("assistant", "A cherry.")]),
                   f"otel-{one}-{'b' * 16}": ("gemini", [("user", "Name a green fruit."), ("assistant", "A lime.")]),
                   f"otel-{two}": ("gemini", [("user", "Plan a trip."), ("assistant", "Lisbon, three days.")])}
    said = " ".join(result.dropped)
    assert "1 agent(s) run by another agent" in said and "'reasoning'" in said and "1 model call(s) or agent" in said
    assert "1 run(s) or call(s) with no user message" in said and "1 model-call span(s) around another" in said


def _parts(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def test_an_agent_whose_calls_send_only_what_is_new_still_reads_as_one_conversation(
        store: Store, tmp_path: Path) -> None:
    trace, system = "3" * 32, _parts("system", {"type": "text", "content": "Be brief."})
    call = {"type": "tool_call", "id": "t1", "name": "weather", "arguments": {"city": "Oslo"}}

    def span(span_id: str, parent: str, op: str, given: list[dict[str, Any]], out: list[dict[str, Any]]) -> dict:
        attrs = {"gen_ai.operation.name": op, "gen_ai.request.model": "claude-sonnet-4-5",
                 "gen_ai.input.messages": json.dumps(given), "gen_ai.output.messages": json.dumps(out)}
        return {"traceId": trace, "spanId": span_id, "parentSpanId": parent, "name": op,
                "startTimeUnixNano": str(int(span_id[0], 16)),
                "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}

    ask = _parts("user", {"type": "text", "content": "Umbrella in Oslo?"})
    first = span("1" * 16, "a" * 16, "chat", [system, ask], [_parts("assistant", call)])
    # The second call sends the system prompt again and the tool's result only (the state lives server-side).
    result = _parts("tool", {"type": "tool_call_response", "id": "t1", "response": {"rain": True}})
    yes = _parts("assistant", {"type": "text", "content": "Yes."})
    second = span("2" * 16, "a" * 16, "chat", [system, result], [yes])
    agent = span("a" * 16, "", "invoke_agent", [ask], [])
    (tmp_path / "t.jsonl").write_text(_doc(agent, second, first) + "\n")
    import_from(store, "answers", tmp_path / "t.jsonl", tool="otel")
    [row] = store.answers().itertuples()
    t = Transcript.from_json(row.transcript)
    assert [(m.role, m.content) for m in t.messages] == [
        ("system", "Be brief."), ("user", "Umbrella in Oslo?"), ("assistant", ""), ("tool", '{"rain": true}'),
        ("assistant", "Yes.")]
    assert t.messages[2].tool_calls[0].name == t.messages[3].name == "weather"
    assert (row.answer_id, row.family) == (f"otel-{trace}", "claude")


def test_a_run_that_ends_on_a_tool_call_takes_the_result_from_the_tool_span(store: Store, tmp_path: Path) -> None:
    trace = "4" * 32
    handoff = {"type": "tool_call", "id": "h1", "name": "transfer_to_billing", "arguments": {"reason": "refund"}}

    def span(span_id: str, parent: str, **attrs: str) -> dict[str, Any]:
        return {"traceId": trace, "spanId": span_id, "parentSpanId": parent, "name": attrs["gen_ai.operation.name"],
                "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}

    ask = _parts("user", {"type": "text", "content": "I was charged twice."})
    spans = [span("a" * 16, "", **{"gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "gpt-4.1"}),
             span("1" * 16, "a" * 16, **{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4.1",
                                          "gen_ai.input.messages": json.dumps([ask]),
                                          "gen_ai.output.messages": json.dumps([_parts("assistant", handoff)])}),
             span("2" * 16, "a" * 16, **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": "h1",
                                          "gen_ai.tool.name": "transfer_to_billing",
                                          "gen_ai.tool.call.result": "Billing will reply within a day."})]
    (tmp_path / "t.jsonl").write_text(_doc(*spans) + "\n")
    result = import_from(store, "answers", tmp_path / "t.jsonl", tool="otel")
    [(_, t)] = _stored(store).values()
    assert [(m.role, m.content) for m in t.messages] == [
        ("user", "I was charged twice."), ("assistant", ""), ("tool", "Billing will reply within a day.")]
    assert t.messages[2].name == "transfer_to_billing" and t.messages[2].tool_call_id == "h1"
    assert any("execute_tool spans but for results" in d for d in result.dropped)


# -- bad files ------------------------------------------------------------------------------------


def _span(**attrs: str) -> dict[str, Any]:
    return {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "chat x",
            "attributes": [{"key": k.replace("__", "."), "value": {"stringValue": v}}
                           for k, v in attrs.items()]}


def _doc(*spans: dict[str, Any]) -> str:
    return json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": list(spans)}]}]})


_NO_CONTENT = _doc(_span(gen_ai__operation__name="chat", gen_ai__provider__name="openai"))


@pytest.mark.parametrize(("second", "words"), [
    ('{"resourceSpans": [', "line 2 is not JSON"),
    ('{"resource_metrics_typo": []}', "line 2 is not an OTLP export request"),
    (_doc({**_span(gen_ai__operation__name="chat"), "traceId": "xyz"}), "traceId 'xyz' is not an id of 32 hex"),
    (_doc({k: v for k, v in _span(gen_ai__operation__name="chat").items() if k != "spanId"}),
     "line 2: a span has no spanId"),
    (_NO_CONTENT, "line 2, span eee19b7ec3c1b174 (chat x): a chat span whose messages were not recorded"),
    (_doc(_span(gen_ai__operation__name="chat", gen_ai__input__messages='[{"role": "robot", "parts": []}]')),
     "line 2, span eee19b7ec3c1b174 (chat x): its messages are not a conversation"),
])
def test_a_bad_line_names_file_line_span_and_fix_and_nothing_is_imported(
        store: Store, tmp_path: Path, written: dict[str, Path], second: str, words: str) -> None:
    good = written["span_only"].read_text().splitlines()[0]
    path = tmp_path / "mixed.jsonl"
    path.write_text(good + "\n" + second + "\n")
    with pytest.raises(InputError) as err:
        import_from(store, "answers", path, tool="otel")
    assert "mixed.jsonl" in str(err.value) and words in str(err.value) and err.value.fix
    assert store.answers().empty


# The older events without content capture: written all the same, with no content in them.
_NO_CONTENT_EVENTS = _doc({**_span(gen_ai__system="openai"), "events": [
    {"name": "gen_ai.user.message", "attributes": [{"key": "gen_ai.system", "value": {"stringValue": "openai"}}]},
    {"name": "gen_ai.choice", "attributes": [{"key": "index", "value": {"intValue": "0"}},
                                             {"key": "finish_reason", "value": {"stringValue": "stop"}}]}]})


@pytest.mark.parametrize("line", [_NO_CONTENT, _NO_CONTENT_EVENTS])
def test_no_content_says_how_to_turn_capture_on(store: Store, tmp_path: Path, line: str) -> None:
    (tmp_path / "t.jsonl").write_text(line + "\n")
    with pytest.raises(InputError, match="OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only"):
        import_from(store, "answers", tmp_path / "t.jsonl", tool="otel")


def test_a_file_without_genai_spans_says_what_it_expected(store: Store, tmp_path: Path) -> None:
    (tmp_path / "http.jsonl").write_text(_doc({**_span(http__method="GET"), "name": "GET /"}) + "\n")
    with pytest.raises(InputError) as err:
        import_from(store, "answers", tmp_path / "http.jsonl", tool="otel")
    assert "has no GenAI span" in err.value.problem and "gen_ai.operation.name" in err.value.problem
    assert err.value.fix is not None and "opentelemetry-instrumentation-openai-v2" in err.value.fix
    assert store.answers().empty


# -- rated and judged ---------------------------------------------------------------------------


def test_the_rater_page_draws_the_imported_agent_run_blind(
        tmp_path: Path, written: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.app.test_rate import everything, open_app, shown_texts

    db = tmp_path / "app.duckdb"
    run("import", "rubric", str(DATA / "rubric.toml"), "--db", str(db))
    run("import", "answers", str(written["span_only"]), "--from", "otel", "--db", str(db))
    store = Store(db)
    row, _ = _stored(store)[AGENT_ASK]
    rater, token = store.add_rater("otto")
    store.assign_k([row.answer_id], 1, [rater.rater_id], seed=1)
    monkeypatch.setenv("JUDGELAB_DB", str(db))
    at = open_app(token)
    texts = shown_texts(at)
    assert {AGENT_ASK, FINAL, "order 1042: delivered 3 days ago"} <= set(texts)
    labels = [re.sub(r"\\(.)", r"\1", e.label) for e in at.expander]  # as Markdown shows an escaped label
    assert "Tool call: lookup_order" in labels and any(x.startswith("Tool result: lookup_order") for x in labels)
    received = everything(at)
    for secret in ("ChatGPT", "OpenAI", row.model, row.answer_id):
        assert secret not in received, secret


def test_the_mock_judge_scores_the_imported_conversations(tmp_path: Path, written: dict[str, Path],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    db = str(tmp_path / "j.duckdb")
    run("import", "rubric", str(DATA / "rubric.toml"), "--db", db)
    run("import", "answers", str(written["span_only"]), "--from", "otel", "--db", db)
    with MockAnthropic(responder=FakeJudge(seed=0).respond) as mock:
        out = run("score", "--base-url", mock.base_url, "--all", "--db", db)
        bodies = [json.dumps(r.body) for r in mock.received if r.path == "/v1/messages"]
    assert len(bodies) == 3, out
    agent = next(b for b in bodies if "lookup_order" in b)
    assert "-> tool call lookup_order" in agent and "[tool lookup_order]" in agent and "started your refund" in agent
    assert len(export_table(Store(db), "judgements")) == 3
