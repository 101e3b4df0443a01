"""Write ``openllmetry.jsonl``: an agent loop traced by OpenLLMetry's OpenAI instrumentation.

``python make_openllmetry.py OUT_FILE`` in an environment with ``opentelemetry-instrumentation-openai``
(OpenLLMetry, not a judgelab dependency), ``opentelemetry-sdk``,
``opentelemetry-exporter-otlp-json-file`` and ``openai``. The committed file was written by
0.62.4, 1.45.2, 0.66b1 and 3.63.0: a second, independent instrumentation, read by
``tests/test_adapters_otel.py``. Two model calls (a tool call, then the answer) inside one
application span and no agent span; the replies are scripted inside the SDK's HTTP client.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TRACELOOP_TRACE_CONTENT", "true")  # OpenLLMetry's content switch

import httpx2
import openai
from opentelemetry import trace
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


def _reply(n: int, message: dict[str, object], finish: str) -> dict[str, object]:
    return {"id": f"c{n}", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def main(out: Path) -> None:
    """Run the two-call loop and write its spans to ``out``."""
    call = {"id": "call_1", "type": "function",
            "function": {"name": "lookup_order", "arguments": json.dumps({"order_id": "1042"})}}
    replies = iter([_reply(1, {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"),
                    _reply(2, {"role": "assistant", "content": "Refund started."}, "stop")])
    with out.open("w", encoding="utf-8") as stream:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(stream=stream)))
        trace.set_tracer_provider(provider)
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=next(replies)))
        client = openai.OpenAI(api_key="test", base_url="http://agent.invalid/v1",
                               http_client=httpx2.Client(transport=transport))
        messages: list[dict[str, object]] = [{"role": "system", "content": "You are a support agent."},
                                             {"role": "user", "content": "Refund order 1042"}]
        tools = [{"type": "function", "function": {"name": "lookup_order", "parameters": {
            "type": "object", "properties": {"order_id": {"type": "string"}}}}}]
        with trace.get_tracer("support-app").start_as_current_span("handle ticket"):
            first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
            messages += [first.choices[0].message.model_dump(exclude_none=True),
                         {"role": "tool", "tool_call_id": "call_1", "content": "delivered"}]
            client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
        provider.shutdown()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
