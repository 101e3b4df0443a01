"""Files for the custom-scale end-to-end tests: a 0-2 rubric, a 1-7 Likert rubric, an MT-Bench-style 1-10 spec."""

from __future__ import annotations

from pathlib import Path

CORRECT3 = """\
id = "correct"
version = 1
name = "Correctness"
pass_rule = "Right (2) passes."
pass_threshold = 2
author = { kind = "human", name = "team" }

[scale]
name = "correct3"
low = 0
high = 2
step = 1
labels = { 0 = "wrong", 1 = "partly right", 2 = "right" }

[[criteria]]
id = "correct"
name = "Correct"
description = "The answer is right."
"""

LIKERT7 = """\
id = "helpful7"
version = 1
name = "Helpfulness"
pass_rule = "5 or more passes."
pass_threshold = 5
author = { kind = "human", name = "team" }

[scale]
name = "likert7"
low = 1
high = 7
step = 1
labels = { 1 = "useless", 4 = "so-so", 7 = "excellent" }

[[criteria]]
id = "helps"
name = "Helps"
description = "The answer helps the customer."
"""

MT_BENCH_SPEC = '''\
[judge]
name = "mt-bench-single"
model = "claude-sonnet-4-6"
family = "claude"

[[templates]]
kind = "pointwise"
system = "You are a helpful assistant."
user = """[Instruction]
Please act as an impartial judge and evaluate the quality of the response provided by an AI assistant to \
the user question displayed below. {criteria} After providing your explanation, you must rate the response \
on a scale of 1 to 10 by strictly following this format: "[[rating]]", for example: "Rating: [[5]]".

[Question]
{prompt}

[The Start of Assistant's Answer]
{answer}
[The End of Assistant's Answer]"""

[templates.verdict]
regex = 'Rating: \\[\\[(\\d+)\\]\\]'
scale = { name = "mt10", low = 1, high = 10, step = 1 }
samples = [
  { reply = "Good.\\nRating: [[7]]", expect = 7 },
  { reply = "Rating: [[11]]", expect_failure = true },
]
'''


def answers_csv(n_tasks: int = 12) -> str:
    """Two families' answers to ``n_tasks`` tasks; the longer ones read better to the fake judge."""
    rows = ["task_id,prompt,answer_id,family,model,text"]
    for t in range(1, n_tasks + 1):
        good = ("Open Settings, choose Security, then Reset password; the link arrives by email within "
                "five minutes and expires after one hour. " * (1 + t % 3)).strip()
        rows.append(f'T{t},"How do I reset my password, case {t}?",T{t}-c,claude,c1,"{good}"')
        rows.append(f"T{t},\"How do I reset my password, case {t}?\",T{t}-g,gpt,g1,Try again later.")
    return "\n".join(rows) + "\n"


def write(folder: Path, name: str, text: str) -> Path:
    """Write ``text`` to ``folder/name`` and return the path."""
    path = folder / name
    path.write_text(text)
    return path
