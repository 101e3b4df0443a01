"""Write a real Inspect AI agent log with the installed ``inspect_ai``: ``python make_trace_log.py OUT_DIR``.

One sample: Inspect's ``mockllm/model`` calls a ``lookup_order`` tool, reads its result and
answers; the system prompt names the model's maker, which a rater must not see. The log is
written as ``--log-format json`` and its path printed. ``tests/test_transcripts.py`` runs it in
a subprocess, so the test reads a log the current release wrote.
"""

from __future__ import annotations

import sys
from pathlib import Path

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ModelOutput, ModelUsage, get_model
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import Tool, tool


@tool
def lookup_order() -> Tool:
    async def execute(order_id: str) -> str:
        """Look an order up.

        Args:
            order_id: The order's number.
        """
        return f"order {order_id}: delivered 3 days ago"

    return execute


def _usage(out: ModelOutput) -> ModelOutput:
    # Token usage set on the outputs, so Inspect never counts tokens with tiktoken (a download).
    out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return out


def write(out_dir: Path) -> Path:
    """Run the one-sample agent task and write its JSON log under ``out_dir``."""
    outputs = [_usage(ModelOutput.for_tool_call("mockllm/model", "lookup_order", {"order_id": "1042"})),
               _usage(ModelOutput.from_content("mockllm/model", "Order 1042 arrived 3 days ago; refund started."))]
    model = get_model("mockllm/model", custom_outputs=outputs)
    sample = Sample(id="refund", target="refund", input=[
        ChatMessageSystem(content="You are Claude, a support agent made by Anthropic."),
        ChatMessageUser(content="I want a refund for order 1042.")])
    task = Task(dataset=[sample], solver=[use_tools(lookup_order()), generate()], name="support")
    [log] = inspect_eval(task, model=model, log_dir=str(out_dir), log_format="json", display="none")
    if log.status != "success":
        raise SystemExit(f"inspect eval did not succeed: {log.status}: {log.error}")
    return Path(log.location)


if __name__ == "__main__":
    print(write(Path(sys.argv[1])))
