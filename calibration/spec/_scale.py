"""The scales a text asks a judge for ("from 1 to 10", "an integer between 1 and 5")."""

from __future__ import annotations

import re

# A scale is named after a word that introduces one, then "LO to HI" / "LO-HI" / "between LO
# and HI", each end possibly followed by a gloss: "1 (worst) to 5 (best)".
_SCALE = re.compile(
    r"\b(?:scale|score|scores|scored|rating|rate|grade|number|integer|from|between|out\s+of)\b"
    r"[^.\n\d]{0,30}?"
    r"\b(?P<lo>[01])\s*(?:\([^()\n]{0,20}\)\s*)?(?:to|-|\u2013|\u2014|and|through)\s*(?P<hi>\d{1,3})\b",
    re.IGNORECASE,
)


def asked_scales(text: str) -> list[tuple[int, int, str]]:
    """Each whole-number scale ``text`` names: ``(lowest, highest, the words that name it)``.

    Only scales from 0 or 1 count, after a word that introduces a scale, so "in 2 to 3
    sentences" is not read as one.

    >>> asked_scales("Rate the reply on a scale of 1 to 10.")
    [(1, 10, 'Rate the reply on a scale of 1 to 10')]
    >>> asked_scales("Overall: a whole number from 1 (worst) to 5 (best).")
    [(1, 5, 'number from 1 (worst) to 5')]
    >>> asked_scales("Explain in 2 to 3 sentences, then the verdict.")
    []
    """
    out: list[tuple[int, int, str]] = []
    for m in _SCALE.finditer(text):
        lo, hi = int(m.group("lo")), int(m.group("hi"))
        if hi > lo:
            out.append((lo, hi, " ".join(m.group(0).split())))
    return out


def scale_words(scale: tuple[int, int]) -> str:
    """``1-10``."""
    return f"{scale[0]}-{scale[1]}"
