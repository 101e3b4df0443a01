"""The masking rule measured on corpora: self-identifying phrases masked, ordinary mentions kept.

``tests/data/self_id/self_identifying.jsonl`` holds answer excerpts that name their own
model or maker in many spellings (makers alone, products, other makers' models, markup,
character references, invisible characters, look-alike letters, short pool names);
``ordinary_mentions.jsonl`` holds third-person mentions and everyday words that must stay.
A phrase counts as caught when none of its names can be read in the masked text *as a
rater reads it* (:func:`judgelab.labeler.blinding.rendered_reading`), so a name left readable
through markup counts as a miss. The figures print with ``-s``.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from judgelab.labeler.blinding import REDACTED, detect_self_identifying, mask, rendered_reading, verbatim_html

DATA = Path(__file__).parent / "data" / "self_id"
#: Every self-identifying phrase in the corpus is masked (the rule was built against it, so
#: this is a regression floor rather than an estimate of recall on unseen text).
MIN_RECALL = 1.0
#: At most this share of ordinary mentions may lose anything to the mask.
MAX_FALSE_MASK = 0.02


def _rows(name: str) -> list[dict[str, Any]]:
    with (DATA / name).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


SELF_ID = _rows("self_identifying.jsonl")
ORDINARY = _rows("ordinary_mentions.jsonl")


def readable(text: str, name: str) -> bool:
    """Whether ``name`` can be read, as a whole word, in ``text`` as a rater reads it."""
    read, wanted = rendered_reading(text)[0], rendered_reading(name)[0]
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(wanted)}(?![A-Za-z0-9])", read, re.IGNORECASE) is not None


def shown(row: dict[str, Any]) -> str:
    """The row's text as the store would show it to a rater: masked by the detected spans."""
    return mask(row["text"], detect_self_identifying(row["text"], row.get("pool", [])))


def test_the_corpora_are_big_and_varied_enough() -> None:
    assert len(SELF_ID) >= 100 and len(ORDINARY) >= 80
    # Each row's names are really readable before masking (else a miss could not show).
    unreadable = [(r["text"], n) for r in SELF_ID for n in r["names"] if not readable(r["text"], n)]
    assert unreadable == []
    tricky = [r for r in SELF_ID if re.search(r"[*_`<&]|[^\x00-\x7f]", r["text"])]
    assert len(tricky) >= 20, "the corpus must exercise markup, references and look-alikes"


def test_recall_on_self_identifying_phrases() -> None:
    missed = [(r["text"], shown(r), [n for n in r["names"] if readable(shown(r), n)]) for r in SELF_ID]
    missed = [m for m in missed if m[2]]
    recall = 1 - len(missed) / len(SELF_ID)
    print(f"\nself-identifying phrases masked: {len(SELF_ID) - len(missed)} of {len(SELF_ID)} "
          f"(recall {recall:.3f})")
    assert recall >= MIN_RECALL, json.dumps(missed, ensure_ascii=False, indent=1)


def test_false_mask_rate_on_ordinary_mentions() -> None:
    masked = [(r["text"], shown(r)) for r in ORDINARY if detect_self_identifying(r["text"], r.get("pool", []))]
    rate = len(masked) / len(ORDINARY)
    print(f"\nordinary mentions changed by the mask: {len(masked)} of {len(ORDINARY)} (rate {rate:.3f})")
    assert rate <= MAX_FALSE_MASK, json.dumps(masked, ensure_ascii=False, indent=1)


@pytest.mark.parametrize("row", SELF_ID, ids=lambda r: r["text"][:40])
def test_masking_is_stable(row: dict[str, Any]) -> None:
    # What a rater is shown holds nothing the detector would still mask.
    once = shown(row)
    assert REDACTED in once
    assert detect_self_identifying(once.replace(REDACTED, "X"), row.get("pool", [])) == []


@pytest.mark.parametrize(
    ("text", "pool", "gone"),
    [
        pytest.param("I'm o3, a reasoning model", ["o3"], "o3", id="short pool name"),
        pytest.param("trained by Google", [], "Google", id="maker alone"),
        pytest.param("I was developed by Microsoft Research.", [], "Microsoft", id="maker with division"),
        pytest.param("As an Open AI assistant, I can't.", [], "Open AI", id="maker spelled apart"),
        pytest.param("Speaking as Sonnet 4.5, yes.", [], "Sonnet", id="product name"),
        pytest.param("I'm Kimi from Moonshot AI.", [], "Moonshot", id="other maker's model"),
        pytest.param("I'm Cl**aude**.", [], "Claude", id="emphasis inside the name"),
        pytest.param("I'm Cl&#97;ude.", [], "Claude", id="character reference"),
    ],
)
def test_the_issues_examples_reach_no_rater(text: str, pool: list[str], gone: str) -> None:
    out = mask(text, detect_self_identifying(text, pool))
    assert not readable(out, gone), out
    # ...and the page the rater gets carries it in no form either.
    assert gone.lower() not in rendered_reading(verbatim_html(out))[0].lower()


def test_a_long_answer_full_of_names_is_checked_in_seconds() -> None:
    # 25,000 names joined into one mention (an import's longest text): every name is masked,
    # in linear time (joining them pairwise took minutes).
    text = ("Claude Gemini Llama Qwen " * 4000)[:100_000]
    start = time.perf_counter()
    shown_text = mask(text, detect_self_identifying(text, ["claude"]))
    elapsed = time.perf_counter() - start
    assert set(shown_text.replace(REDACTED, "").split()) <= {"Qw"}  # the cut-off last word
    assert elapsed < 30, f"{elapsed:.1f} s"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm Cl**aude**.", "I'm [redacted]."),
        ("I'm Cl<b>aude</b>, hi", "I'm [redacted], hi"),
        ("I'm **Claude**, ok", "I'm **[redacted]**, ok"),
        ("I'm Cl&#97;ude.", "I'm [redacted]."),
        ("I'm Cl\u200baude.", "I'm [redacted]."),
    ],
)
def test_a_name_split_by_markup_is_masked_whole(text: str, expected: str) -> None:
    assert shown({"text": text}) == expected
