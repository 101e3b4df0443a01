"""Write real Inspect AI logs with the installed ``inspect_ai``: ``python make_logs.py OUT_DIR``.

A tiny task (three questions) is answered by Inspect's ``mockllm/model`` and graded by
``model_graded_qa`` with a second mock model, ``mockllm/grader``, whose replies are scripted: a
correct grade, an incorrect one, and a reply with no ``GRADE:`` that Inspect records as unscored
(``value`` NaN, ``reason`` ``grader_failed``). A ``match()`` scorer makes no model call. The run
is written twice, as Inspect's default ``.eval`` (zip) and as ``--log-format json``; the script
prints the two paths (JSON first) and Inspect's version.

``tests/test_adapters.py`` runs it in a subprocess, so each test run reads logs the current
release wrote. No network: token usage is set on the outputs, so Inspect never counts tokens
with tiktoken (which would download its encoding).
"""

from __future__ import annotations

import sys
from pathlib import Path

from inspect_ai import Task, __version__
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import match, model_graded_qa
from inspect_ai.solver import generate

ANSWERS = ("Paris is the capital of France.", "Berlin.", "I am not sure.")
GRADES = ("The submission names Paris.\nGRADE: C", "Berlin is not the capital of France.\nGRADE: I",
          "I cannot tell from this.")  # no GRADE: a reply Inspect cannot read


def _output(model: str, text: str, input_tokens: int) -> ModelOutput:
    out = ModelOutput.from_content(model, text)
    out.usage = ModelUsage(input_tokens=input_tokens, output_tokens=len(text.split()),
                           total_tokens=input_tokens + len(text.split()))
    return out


def write(out_dir: Path, fmt: str) -> Path:
    """Run the task once and write its log in ``fmt`` (``eval`` or ``json``) under ``out_dir``."""
    answerer = get_model("mockllm/model", custom_outputs=[_output("mockllm/model", a, 12) for a in ANSWERS])
    grader = get_model("mockllm/grader", memoize=False,
                       custom_outputs=[_output("mockllm/grader", g, 200 + k) for k, g in enumerate(GRADES)])
    samples = [Sample(id="q1", input="What is the capital of France?", target="Paris"),
               Sample(id="q2", input="What is the capital of France?", target="Paris"),
               Sample(id="q3", input=[ChatMessageSystem(content="Answer briefly."),
                                      ChatMessageUser(content="Name the capital of France.")], target="Paris")]
    task = Task(dataset=samples, solver=generate(), scorer=[model_graded_qa(model=grader), match()],
                name="capitals")
    # One sample at a time, so the scripted replies meet the samples in order.
    [log] = inspect_eval(task, model=answerer, log_dir=str(out_dir / fmt), log_format=fmt, display="none",
                         max_samples=1, max_tasks=1)
    if log.status != "success":
        raise SystemExit(f"inspect eval did not succeed: {log.status}: {log.error}")
    return Path(log.location)


if __name__ == "__main__":
    target = Path(sys.argv[1])
    print(write(target, "json"))
    print(write(target, "eval"))
    print(__version__)
