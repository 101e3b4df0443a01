"""Write real OTLP JSON traces of OpenAI SDK calls: ``python make_traces.py OUT_FILE BASE_URL [MODE]``.

The official instrumentation (``opentelemetry-instrumentation-openai-v2``) instruments the real
``openai`` SDK, the OpenTelemetry SDK exports the spans (and, in ``event_only`` mode, the log
records) with ``opentelemetry-exporter-otlp-json-file`` to ``OUT_FILE``, as an application would.
``MODE`` is the instrumentation's content capture (``span_only``, the default, or ``event_only``).

Three traces:

- **an agent run**: the GenAI utilities' ``invoke_agent`` span (``opentelemetry-util-genai``,
  what agent instrumentations build on) around two model calls and an ``execute_tool`` span:
  the model calls ``lookup_order``, reads its result and answers. Judgelab's mock cannot reply
  with a tool call, so these two calls are answered by a scripted transport inside the SDK's
  own HTTP client (``httpx2.MockTransport``; httpx2 is openai 3's HTTP library): the SDK and
  the instrumentation run as against a server. The system prompt names the model's maker,
  which a rater must not see.
- **a chat**: one question to judgelab's mock (``BASE_URL``, its Chat Completions endpoint).
- **a conversation**: two turns to the mock inside one application span, the second sending
  the first again (as every chat client does).

The script prints the versions that wrote the file. No network: the mock is local.
"""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import version
from pathlib import Path

MODE = sys.argv[3] if len(sys.argv) > 3 else "span_only"
# The current release records messages only on request; the opt-in selects the current conventions.
os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = MODE

import httpx2  # noqa: E402  (after the environment the instrumentation reads on import)
import openai  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.otlp.json.file import FileSpanExporter  # noqa: E402
from opentelemetry.exporter.otlp.json.file._log_exporter import FileLogExporter  # noqa: E402
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider  # noqa: E402
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402
from opentelemetry.util.genai.handler import TelemetryHandler  # noqa: E402
from opentelemetry.util.genai.types import InputMessage, OutputMessage, Text  # noqa: E402

SYSTEM = "You are ChatGPT, a support agent made by OpenAI."
ASK = "I want a refund for order 1042."
FINAL = "Order 1042 arrived 3 days ago; I have started your refund."
TOOLS = [{"type": "function", "function": {"name": "lookup_order", "description": "Look an order up.",
                                           "parameters": {"type": "object",
                                                          "properties": {"order_id": {"type": "string"}}}}}]


def _completion(message: dict[str, object], finish: str) -> dict[str, object]:
    return {"id": f"chatcmpl-{finish}", "object": "chat.completion", "created": 1_764_000_000,
            "model": "gpt-4o-mini-2024-07-18", "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}}


def _scripted() -> httpx2.Client:
    """An HTTP client whose server replies a tool call, then the final answer."""
    replies = iter([
        _completion({"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "lookup_order", "arguments": json.dumps({"order_id": "1042"})}}]}, "tool_calls"),
        _completion({"role": "assistant", "content": FINAL}, "stop"),
    ])
    return httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200, json=next(replies))))


def _agent(handler: TelemetryHandler) -> None:
    client = openai.OpenAI(api_key="test", base_url="http://agent.invalid/v1", http_client=_scripted())
    messages: list[dict[str, object]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": ASK}]
    with handler.invoke_local_agent(agent_name="support", request_model="gpt-4o-mini") as agent:
        agent.input_messages = [InputMessage(role="user", parts=[Text(content=ASK)])]
        first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        call = first.choices[0].message.tool_calls[0]
        messages.append(first.choices[0].message.model_dump(exclude_none=True))
        with handler.tool("lookup_order", tool_call_id=call.id, tool_type="function") as tool:
            tool.arguments = json.loads(call.function.arguments)
            tool.tool_result = "order 1042: delivered 3 days ago"
        messages.append({"role": "tool", "tool_call_id": call.id, "content": str(tool.tool_result)})
        final = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        answer = Text(content=str(final.choices[0].message.content))
        agent.output_messages = [OutputMessage(role="assistant", parts=[answer], finish_reason="stop")]


def _chats(base_url: str) -> None:
    client = openai.OpenAI(api_key="test", base_url=base_url)
    client.chat.completions.create(model="gpt-4o-mini", messages=[
        {"role": "user", "content": "What is the capital of France?"}])
    history: list[dict[str, str]] = [{"role": "user", "content": "Suggest a name for a bakery."}]
    with trace.get_tracer("bakery-app").start_as_current_span("conversation"):
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=history)
        history += [{"role": "assistant", "content": str(reply.choices[0].message.content)},
                    {"role": "user", "content": "Shorter, please."}]
        client.chat.completions.create(model="gpt-4o-mini", messages=history)


def main(out: Path, base_url: str) -> None:
    """Write the three traces to ``out``."""
    with out.open("a", encoding="utf-8") as stream:
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(BatchSpanProcessor(FileSpanExporter(stream=stream)))
        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(BatchLogRecordProcessor(FileLogExporter(stream=stream)))
        trace.set_tracer_provider(tracer_provider)
        OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
        _agent(TelemetryHandler(tracer_provider=tracer_provider, logger_provider=logger_provider))
        _chats(base_url)
        tracer_provider.shutdown()
        logger_provider.shutdown()
    print(" ".join(f"{p}=={version(p)}" for p in (
        "opentelemetry-sdk", "opentelemetry-exporter-otlp-json-file", "opentelemetry-instrumentation-openai-v2",
        "opentelemetry-util-genai", "openai")))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
