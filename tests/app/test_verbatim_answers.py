"""What raters see is what the judge reads: answers are shown verbatim on every rater page.

Under AppTest: the text a page sends for an answer is the answer's characters, escaped as
HTML and nothing else (no Markdown element is made of it), on Rate and on Compare.
"""

from __future__ import annotations

import html
import re

import pytest

from judgelab.labeler.blinding import verbatim_html
from judgelab.labeler.models import Answer, Task
from tests.app.conftest import FAMILIES, MODELS, Pool
from tests.app.test_rate import open_app, served, shown_texts

__all__ = ["served"]  # the fixture, imported for these tests

#: Answers whose characters Markdown would change: dashes, prices, single newlines, flags,
#: indented code, tags, emphasis, numbered lists, headings, maths, emoji codes, images.
TRICKY = (
    "Run it -- then pass --flag and -x.\nPrices: $5 and $10, or $x$ and $$y$$.\nline two\nline three",
    "def f():\n    return 1  # indented code\n\n\tand a tab\n    spaces   kept",
    "<script>alert(1)</script> & &amp; <b>not bold</b> *not italic* __nor this__ `code`",
    "1. one\n1. two\n7) seven\n# not a heading\n> not a quote\n- [ ] not a box\n---\nafter",
    "```\nfenced\n```\n:smile: :red[not red] ![image](https://x.example/p.png) [link](javascript:alert(1))",
    "Trailing spaces  \nand a backslash \\* and \\\\ and a non-breaking\u00a0space.",
)


def _add(pool: Pool, texts: tuple[str, ...]) -> list[str]:
    task = Task("verbatim-task", "Tricky prompt -- with $3 and\na newline")
    answers = [Answer(f"verbatim-{i}", task.task_id, FAMILIES[i % 2], MODELS[FAMILIES[i % 2]], text)
               for i, text in enumerate(texts)]
    pool.store.add_pool([task], answers)
    return [a.answer_id for a in answers]


def test_the_rate_page_shows_each_answer_character_for_character(served: Pool) -> None:
    ids = _add(served, TRICKY)
    rater, token = served.store.add_rater("vera")
    served.store.assign_k(ids, 1, [rater.rater_id], seed=3)
    seen: set[str] = set()
    for item in served.store.rater_queue(rater.rater_id):
        at = open_app(token)
        texts = shown_texts(at)
        assert "Tricky prompt -- with $3 and\na newline" in texts  # the task too
        seen.update(t for t in texts if t in TRICKY)
        # No Markdown element carries answer text: it is not read as Markdown anywhere.
        assert not any(t[:12] in str(m.value) for m in at.markdown for t in TRICKY)
        served.store.add_label(rater.rater_id, item.assignment_id, overall=3,
                               criteria={"correct": 3, "complete": 3, "tone": 3})
    assert seen == set(TRICKY)


def test_the_compare_page_shows_both_answers_verbatim(served: Pool) -> None:
    ids = _add(served, TRICKY[:2])
    rater, token = served.store.add_rater("walt")
    served.store.assign_pairs([(ids[0], ids[1])], [rater.rater_id])
    texts = shown_texts(open_app(token, "pairwise.py"))
    assert set(TRICKY[:2]) <= set(texts)


@pytest.mark.parametrize("text", TRICKY)
def test_verbatim_html_escapes_everything_and_nothing_more(text: str) -> None:
    body = verbatim_html(text)
    inner = body[body.index(">") + 1 : -len("</div>")]
    assert html.unescape(inner) == text
    assert "<" not in inner and ">" not in inner


def test_a_conversation_is_drawn_verbatim_and_its_tool_names_read_as_text(served: Pool) -> None:
    from judgelab.labeler.transcripts import parse_messages, render

    tricky_tool = "**bold**_[link](javascript:alert(1))"
    t = parse_messages([{"role": "user", "content": TRICKY[2]},
                        {"role": "assistant", "content": TRICKY[0], "tool_calls": [
                            {"id": "c", "function": {"name": tricky_tool, "arguments": '{"q": "<b>x</b>"}'}}]},
                        {"role": "tool", "tool_call_id": "c", "content": TRICKY[4]},
                        {"role": "assistant", "content": TRICKY[3]}])
    task = Task("conv-task", "A conversation")
    served.store.add_pool([task], [Answer("conv-1", task.task_id, FAMILIES[0], MODELS[FAMILIES[0]], render(t),
                                          transcript=t)])
    rater, token = served.store.add_rater("xena")
    served.store.assign_k(["conv-1"], 1, [rater.rater_id], seed=3)
    at = open_app(token)
    texts = shown_texts(at)
    # Each message, each argument, each result: its characters exactly, in its own box.
    assert {TRICKY[2], TRICKY[0], TRICKY[4], TRICKY[3], '{"q": "<b>x</b>"}'} <= set(texts)
    assert not any(t[:12] in str(m.value) for m in at.markdown for t in TRICKY)
    # A tool's name is Markdown in an expander's label: written so that it reads as typed.
    labels = [e.label for e in at.expander]
    read = [re.sub(r"\\(.)", r"\1", label) for label in labels]  # as Markdown shows an escaped label
    assert "Tool call: " + tricky_tool in read and any(r.startswith("Tool result: " + tricky_tool) for r in read)
    assert not any(re.search(r"(?<!\\)[*_\[\]()]", label) for label in labels), labels  # every mark escaped
