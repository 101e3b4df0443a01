"""In Chromium: self-names in any spelling and language never reach the rater (issue 47, point 1).

Every line of the per-language corpora (``tests/data/self_id/languages/``) that needs no
particular pool goes into one answer file: the leaks (issue 47's phrasings among them:
``C-l-a-u-d-e``, ``C l a u d e``, "Je suis Le Chat de Mistral AI", "Zuckerberg's company's
model", ``o4-mini``, ``GPT‑4o`` with a non-breaking hyphen, in eight languages) and the
ordinary sentences. It is imported with ``judgelab import answers`` into a pool whose
families and models name none of them (the hardest case: nothing is masked because the
pool holds it), and a rater opens the Rate page. Line by line, the answer box must show
each leak with none of its names readable (as a rater reads it: spelled-out letters,
look-alikes and compatibility forms undone) and each ordinary sentence exactly as written;
and nothing the browser received (websocket frames, HTML, DOM) may hold a leaked name
outside the ordinary sentences.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from judgelab.labeler.blinding import REDACTED, rendered_reading
from tests.browser.conftest import LAPTOP, expect_text, judgelab, open_page, serve

pytestmark = pytest.mark.browser

CORPUS = Path(__file__).resolve().parents[1] / "data" / "self_id" / "languages"
BOXES = "[data-testid='stMain'] [data-testid='stHtml'] div[style*='pre-wrap']"
PROMPT = "Please tell me who you are, then help with my refund."
#: The pool: families and models that name none of the corpus's makers or products.
POOL = [("fam-north", "model-north-1"), ("fam-south", "model-south-2")]


def _readable(name: str, read: str) -> list[str]:
    """Excerpts of ``read`` where ``name`` (as a rater reads it) stands as a whole word."""
    wanted = re.escape(rendered_reading(name)[0])
    return [read[max(0, m.start() - 40) : m.end() + 40]
            for m in re.finditer(rf"(?<![A-Za-z0-9]){wanted}(?![A-Za-z0-9])", read, re.IGNORECASE)][:2]


def test_no_self_name_in_any_language_reaches_the_rate_page(tmp_path: Path, browser: Any) -> None:
    rows = [json.loads(line) for path in sorted(CORPUS.glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if not r.get("pool")]
    # One answer holds every row, one row a line: a row whose name is broken by a hyphen across a
    # line ("Anthro-\npic") would be joined into another spelling ("Anthro- pic"); those rows are
    # read by the per-language test (tests/test_self_names_languages.py), through the same write path.
    # A maker's e-mail domain ("Co-Authored-By: Claude <noreply@anthropic.com>") is a known miss of
    # the rules (docs/raters.md): the row names only its model, and the domain would show here.
    leaks = [r for r in rows if r["names"] and "-\n" not in r["text"] and "@" not in r["text"]]
    ordinary = [r["text"] for r in rows if not r["names"]]
    assert len(leaks) >= 60 and len(ordinary) >= 30
    lines = [r["text"].replace("\n", " ") for r in leaks] + ordinary
    # One answer holds every line; the other family's answer is a plain reply.
    answers = [
        {"task_id": "t-names", "prompt": PROMPT, "answer_id": "a-names", "family": POOL[0][0], "model": POOL[0][1],
         "text": "\n".join(lines)},
        {"task_id": "t-names", "prompt": PROMPT, "answer_id": "a-plain", "family": POOL[1][0], "model": POOL[1][1],
         "text": "Your refund is on its way; it takes 5-10 business days."},
    ]
    file = tmp_path / "answers.jsonl"
    file.write_text("".join(json.dumps(a, ensure_ascii=False) + "\n" for a in answers), encoding="utf-8")
    db = tmp_path / "names.duckdb"
    from judgelab.labeler.examples import example_path

    judgelab(db, "init")
    judgelab(db, "import", "rubric", str(example_path("rubric.toml")))
    judgelab(db, "import", "answers", str(file))
    from judgelab.labeler.store import Store

    store = Store(db)
    rater, token = store.add_rater("rhea")
    store.assign_k(["a-names"], 1, [rater.rater_id], seed=1)
    server = serve(db)
    try:
        page, rec = open_page(browser, f"{server.url}/?t={token}", viewport=LAPTOP)
        expect_text(page, PROMPT)
        boxes = page.locator(BOXES).evaluate_all("els => els.map(e => e.textContent)")
        shown = [b for b in boxes if PROMPT not in b]
        received = rec.received(page)
        page.close()
    finally:
        server.stop()

    assert len(shown) == 1, boxes
    shown_lines = shown[0].split("\n")
    assert len(shown_lines) == len(lines), "the answer box lost or gained lines"
    # Each leak line: masked, and none of its names readable in it.
    leaked = {r["text"]: (line, [n for n in r["names"] if _readable(n, rendered_reading(line)[0])])
              for r, line in zip(leaks, shown_lines, strict=False)}
    assert {t: v for t, v in leaked.items() if v[1] or REDACTED not in v[0]} == {}
    # Each ordinary sentence: exactly as written.
    assert shown_lines[len(leaks):] == ordinary

    # Nothing the browser received names a leaked name outside the ordinary sentences.
    read = rendered_reading(received)[0]
    assert read.count(REDACTED) >= len(leaks)
    assert rendered_reading(ordinary[0])[0] in read, "the recorder saw no answer text; it would miss a leak too"
    for sentence in ordinary:
        read = read.replace(rendered_reading(sentence)[0], " ")
    names = sorted({n for r in leaks for n in r["names"]} | {f for pair in POOL for f in pair})
    found = {n: hits for n in names if (hits := _readable(n, read))}
    assert found == {}, json.dumps(found, ensure_ascii=False, indent=1)
    # ...nor, character for character, one of the phrasings (raw and HTML-escaped).
    raw = received
    for sentence in ordinary:
        raw = raw.replace(sentence, " ").replace(html.escape(sentence), " ")
    present = [p for p in ("C-l-a-u-d-e", "C l a u d e", "Le Chat", "Mistral AI", "Zuckerberg's company", "o4-mini",
                           "GPT\u20114o") if p in raw or html.escape(p) in raw]
    assert present == []
