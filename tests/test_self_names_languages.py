"""Self-names in any spelling and language (issue 47, point 1), measured per language.

``tests/data/self_id/languages/<lang>.jsonl`` holds, per language raters read, answer
excerpts that name their own model or maker (``names``: what must not stay readable) and
ordinary sentences that use the same words otherwise (``names`` empty: nothing may change).
The names come from the packaged list ``labeler/self_names.toml``; these tests also check
that list is shipped, read, and refused with a clear message when malformed. The figures
print with ``-s``.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from judgelab.labeler.blinding import (
    REDACTED,
    SELF_NAMES_FILE,
    SelfNamesError,
    detect_self_identifying,
    load_self_names,
    mask,
    rendered_reading,
)

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "data" / "self_id" / "languages"
LANGUAGES = sorted(p.stem for p in CORPUS.glob("*.jsonl"))
#: The phrasings issue 47 found leaking: each must be in the corpus (and so masked).
ISSUE_PHRASINGS = [
    "C-l-a-u-d-e", "C l a u d e", "Je suis Le Chat de Mistral AI", "Zuckerberg's company's model",
    "o4-mini", "GPT\u20114o",
]


def _rows(lang: str) -> list[dict[str, Any]]:
    with (CORPUS / f"{lang}.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def readable(text: str, name: str) -> bool:
    """Whether ``name`` can be read, as a whole word, in ``text`` as a rater reads it."""
    read, wanted = rendered_reading(text)[0], rendered_reading(name)[0]
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(wanted)}(?![A-Za-z0-9])", read, re.IGNORECASE) is not None


def shown(row: dict[str, Any]) -> str:
    """The row's text as a rater is shown it: masked by the spans the write path finds."""
    return mask(row["text"], detect_self_identifying(row["text"], row.get("pool", [])))


def test_the_corpus_covers_the_issue_and_several_languages() -> None:
    texts = [r["text"] for lang in LANGUAGES for r in _rows(lang) if r["names"]]
    assert [p for p in ISSUE_PHRASINGS if not any(p in t for t in texts)] == []
    both = [lang for lang in LANGUAGES
            if any(r["names"] for r in _rows(lang)) and any(not r["names"] for r in _rows(lang))]
    assert {"en", "fr", "de", "es", "zh", "ja"} <= set(both)
    # Each leak's names are readable before masking, so a miss would show.
    unreadable = [(r["text"], n) for lang in LANGUAGES for r in _rows(lang) for n in r["names"]
                  if not readable(r["text"], n)]
    assert unreadable == []


@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_language_masks_its_leaks_and_keeps_its_ordinary_sentences(lang: str) -> None:
    rows = _rows(lang)
    leaks = [r for r in rows if r["names"]]
    ordinary = [r for r in rows if not r["names"]]
    missed = [(r["text"], shown(r)) for r in leaks if any(readable(shown(r), n) for n in r["names"])]
    changed = [(r["text"], shown(r)) for r in ordinary if shown(r) != r["text"]]
    print(f"\n{lang}: leaks masked {len(leaks) - len(missed)} of {len(leaks)}; "
          f"ordinary sentences changed {len(changed)} of {len(ordinary)}")
    assert missed == [], json.dumps(missed, ensure_ascii=False, indent=1)
    assert changed == [], json.dumps(changed, ensure_ascii=False, indent=1)
    # What a rater is shown holds nothing the detector would still mask.
    again = [s for r in leaks if detect_self_identifying((s := shown(r)).replace(REDACTED, "X"), r.get("pool", []))]
    assert again == []


def test_the_corpus_joined_into_one_answer_is_masked_line_by_line() -> None:
    # One answer of many lines (as an import brings them): a cue that opens a sentence
    # ("Soy", "Sono") opens any line, not only the text's first.
    rows = [r for lang in LANGUAGES for r in _rows(lang) if not r.get("pool")]
    text = "\n".join(r["text"].replace("\n", " ") for r in rows)
    lines = mask(text, detect_self_identifying(text)).split("\n")
    assert len(lines) == len(rows)
    missed = [(r["text"], line) for r, line in zip(rows, lines, strict=True)
              if any(readable(line, n) for n in r["names"])]
    changed = [line for r, line in zip(rows, lines, strict=True) if not r["names"] and line != r["text"]]
    assert missed == [] and changed == [], json.dumps([missed, changed], ensure_ascii=False, indent=1)


@pytest.mark.parametrize(
    ("text", "read"),
    [
        pytest.param("I'm C-l-a-u-d-e.", "I'm Claude.", id="hyphens"),
        pytest.param("I'm a C l a u d e", "I'm a Claude", id="spaces, the article stays a word"),
        pytest.param("C.l.a.u.d.e here", "Claude here", id="dots"),
        pytest.param("G-P-T-4o", "GPT-4o", id="letters then a version"),
        pytest.param("GPT\u20114o and GPT\u22124o", "GPT-4o and GPT-4o", id="non-breaking hyphen, minus sign"),
        pytest.param("\uff23\uff4c\uff41\uff55\uff44\uff45", "Claude", id="fullwidth"),
        pytest.param("Plan A or B", "Plan A or B", id="two single letters stay apart"),
        pytest.param("私はClaudeです", "私はClaudeです", id="kana voicing marks kept"),
        pytest.param("d\u00e9velopp\u00e9", "developpe", id="accents dropped"),
    ],
)
def test_the_reading_joins_spelled_out_names(text: str, read: str) -> None:
    assert rendered_reading(text)[0] == read


def test_spans_of_a_spelled_out_name_cover_its_raw_characters() -> None:
    text = "Hi, I'm C - l - a - u - d - e, how can I help?"
    assert detect_self_identifying(text) == [(8, 29, "C - l - a - u - d - e")]


def test_the_list_ships_in_the_wheel_and_loads() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert SELF_NAMES_FILE in pyproject["tool"]["setuptools"]["package-data"]["judgelab.labeler"]
    names = load_self_names()
    assert len(names.known) > 100
    assert {"Anthropic", "通义千问", "o[1-9](?:-(?:mini|pro|preview|high|low))?"} <= set(names.known)
    assert {"fr", "de", "es", "it", "pt", "zh", "ja"} <= set(names.languages)
    assert load_self_names(REPO / "labeler" / SELF_NAMES_FILE) == names


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("version = 1\n[names]\nmakers = ['Open(AI']\n",
                     r"names\.makers\[0\] 'Open\(AI' is not a valid regular expression", id="bad regex"),
        pytest.param("version = 1\n[names]\nproducts = 'Claude'\n", r"names\.products must be a list", id="not a list"),
        pytest.param("version = 2\n[names]\nmakers = ['x']\n", r"version must be 1", id="newer version"),
        pytest.param("version = 1\n", r"a \[names\] table", id="no names"),
        pytest.param("version = 1\n[names]\nmakers = ['x']\n[[ordinary]]\nsentence = ['wind']\n",
                     r"ordinary\[0\] needs a name", id="sense without a name"),
        pytest.param("version = 1\n[names]\nmakers = ['x']\n[languages.fr]\nfillers = ['un']\n",
                     r"languages\.fr\.fillers must be one string", id="fillers as a list"),
        pytest.param("version = [1\n", r"cannot read the self-names file", id="not TOML"),
    ],
)
def test_a_malformed_list_is_refused_naming_the_entry(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "names.toml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SelfNamesError, match=message) as err:
        load_self_names(path)
    assert str(path) in str(err.value)
