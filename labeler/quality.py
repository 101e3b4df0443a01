"""Rater quality: gold items, attention checks, qualification and too-fast labels (pure parts).

A **quality item** is an answer whose correct overall score (or range of scores) the admin
sets. It is mixed into raters' score queues and shown exactly like a live answer (same page,
opaque item id, same blinding); the store keeps it apart from the pool, so no analysis ever
counts it (:mod:`judgelab.labeler.store._quality`). Two kinds:

* ``gold``: measures each rater's accuracy (share of gold labels inside the range);
* ``attention``: its own text tells the rater what to score ("This is a check: score it 2");
  any other score is a failed attention check.

This module holds what needs no database: the file parser (:func:`parse_quality_items`), the
settings (:class:`QualitySettings`), the too-fast floor (:func:`seconds_floor`), where quality
items go in a queue (:func:`quality_positions`) and what counts as right (:func:`within`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Literal

from judgelab.labeler._rows import Checker, Rows
from judgelab.labeler.errors import InputError

__all__ = [
    "QUALITY_KINDS",
    "QualityItem",
    "QualityKind",
    "QualitySettings",
    "interleave",
    "parse_quality_items",
    "quality_positions",
    "seconds_floor",
    "within",
]

QualityKind = Literal["gold", "attention"]
QUALITY_KINDS: tuple[QualityKind, ...] = ("gold", "attention")

#: Settings scope of the quality settings in the ``settings`` table.
SCOPE = "quality"


@dataclass(frozen=True)
class QualityItem:
    """One gold item or attention check, as a file gives it.

    Attributes:
        answer_id: The item's id (never shown to raters; they see an opaque item id).
        kind: ``gold`` or ``attention``.
        prompt: The task the rater reads.
        text: The answer the rater scores (for an attention check, it says what to score).
        low: Lowest correct overall score.
        high: Highest correct overall score (``low`` for a single score).
        explanation: Why this is the answer; shown after submit in training mode.
    """

    answer_id: str
    kind: QualityKind
    prompt: str
    text: str
    low: float
    high: float
    explanation: str = ""


@dataclass(frozen=True)
class QualitySettings:
    """How quality items are mixed in and when a rater is warned about.

    Attributes:
        rate: Gold and attention items per live item in each queue (0.1: one per ten).
        qualify_n: Gold items a rater labels before any live item appears (0: none).
        qualify_min: Share of those ``qualify_n`` a rater must get right to see live items.
        mode: ``silent`` (the rater is told nothing) or ``training`` (after a quality item's
            submit the rater sees the expected score and the explanation).
        min_accuracy: Warn when a rater's gold accuracy is below this share.
        min_gold: Gold labels a rater needs before the accuracy warning can fire.
        max_attention_failures: Warn when a rater fails this many attention checks or more.
        words_per_second: Reading speed of the too-fast floor (10 words/s is 600 words a
            minute, skimming speed).
        min_seconds: Seconds the floor never goes under, however short the answer.
        max_fast_share: Warn when more than this share of a rater's timed labels is too fast.
        seed: Seeds where quality items go in each queue.
    """

    rate: float = 0.0
    qualify_n: int = 0
    qualify_min: float = 0.0
    mode: Literal["silent", "training"] = "silent"
    min_accuracy: float = 0.7
    min_gold: int = 3
    max_attention_failures: int = 1
    words_per_second: float = 10.0
    min_seconds: float = 2.0
    max_fast_share: float = 0.25
    seed: int = 0

    def __post_init__(self) -> None:
        """Refuse settings that make no sense, naming the setting and the fix."""
        checks = [
            ("rate", 0.0 <= self.rate <= 1.0, "a share between 0 and 1 (0.1 = one quality item per ten)"),
            ("qualify_n", self.qualify_n >= 0, "0 or more gold items"),
            ("qualify_min", 0.0 <= self.qualify_min <= 1.0, "a share between 0 and 1"),
            ("mode", self.mode in ("silent", "training"), "silent or training"),
            ("min_accuracy", 0.0 <= self.min_accuracy <= 1.0, "a share between 0 and 1"),
            ("min_gold", self.min_gold >= 1, "1 or more"),
            ("max_attention_failures", self.max_attention_failures >= 1, "1 or more"),
            ("words_per_second", self.words_per_second > 0, "a positive reading speed"),
            ("min_seconds", self.min_seconds >= 0, "0 or more seconds"),
            ("max_fast_share", 0.0 <= self.max_fast_share <= 1.0, "a share between 0 and 1"),
        ]
        for name, ok, fix in checks:
            if not ok:
                raise InputError(f"quality setting {name} = {getattr(self, name)!r} is not valid", fix=f"use {fix}.")

    def stored(self) -> dict[str, str]:
        """The settings as the ``settings`` table stores them (text)."""
        return {k: str(v) for k, v in asdict(self).items()}

    @classmethod
    def from_stored(cls, values: Mapping[str, str]) -> QualitySettings:
        """Settings from the ``settings`` table's text; missing keys take the defaults."""
        kwargs: dict[str, object] = {}
        for f in fields(cls):
            if f.name not in values:
                continue
            raw = values[f.name]
            default = getattr(cls(), f.name)
            kwargs[f.name] = raw if isinstance(default, str) else type(default)(float(raw))
        return cls(**kwargs)  # type: ignore[arg-type]


def within(score: float | None, low: float, high: float) -> bool:
    """Whether a rater's overall score is a right answer to a quality item (``None``: no).

    >>> within(4.0, 4.0, 5.0), within(3.0, 4.0, 5.0), within(None, 1.0, 1.0)
    (True, False, False)
    """
    return score is not None and low - 1e-9 <= float(score) <= high + 1e-9


def seconds_floor(n_words: int, *, words_per_second: float = 10.0, min_seconds: float = 2.0) -> float:
    """Fewest active seconds a label of an answer of ``n_words`` words can honestly take.

    Reading the answer at ``words_per_second`` (10 words/s = 600 a minute, skimming), and
    never under ``min_seconds``: a label under this floor is flagged as too fast.

    >>> seconds_floor(300), seconds_floor(5)
    (30.0, 2.0)
    """
    return max(float(min_seconds), n_words / float(words_per_second))


def quality_positions(
    live_positions: Sequence[int], n_spread: int, n_front: int, *, rng: random.Random
) -> tuple[list[int], list[int]]:
    """Queue positions for quality items: ``n_front`` before every live item, ``n_spread`` among them.

    The spread ones are placed by a uniformly random interleaving: every order of the live and
    the quality items is equally likely (``rng.sample`` draws which of the ``n_live + n_spread``
    places are quality items). So nothing a rater can count tells them apart: no period, no
    distance since the last one, no place after a submit. (Cutting the queue into equal stretches
    with one item in each, as before, made them alternate exactly with live items at rate 1, and
    kept them apart at any rate.) Two may follow each other, as chance has it. An item takes
    the position of the live item before it and sorts right after it (the store orders equal
    positions by assignment id); one drawn before every live item goes just before the first.

    Args:
        live_positions: The queue positions already taken (any order).
        n_spread: Items to spread among them.
        n_front: Items to put first (the qualification items), in order.
        rng: The rater's generator.

    Returns:
        ``(front, spread)`` positions, ``spread`` in queue order.

    >>> quality_positions([1, 2, 3, 4], 2, 1, rng=random.Random(0))
    ([0], [3, 4])
    """
    ordered = sorted(live_positions)
    first = ordered[0] if ordered else 1
    front = [first - n_front + i for i in range(n_front)]
    if not ordered or n_spread <= 0:
        # With no live items there is nothing to spread among: the items simply follow the front.
        return front, [first + i for i in range(max(n_spread, 0))] if not ordered else []
    gaps = interleave(len(ordered), n_spread, rng=rng)
    return front, [ordered[g - 1] if g else first - 1 for g in gaps]


def interleave(n_live: int, n_quality: int, *, rng: random.Random) -> list[int]:
    """A uniformly random interleaving: how many live items come before each quality item.

    ``n_quality`` of the ``n_live + n_quality`` places are drawn without replacement, so each of
    the ``C(n_live + n_quality, n_quality)`` orders is equally likely.

    Returns:
        One count per quality item, ascending (0: before every live item; ``n_live``: after all).

    >>> interleave(3, 2, rng=random.Random(1))
    [0, 0]
    """
    places = sorted(rng.sample(range(n_live + n_quality), n_quality))
    return [place - i for i, place in enumerate(places)]


def parse_quality_items(rows: Rows, *, scale: tuple[float, float] | None = None) -> list[QualityItem]:
    """Gold items and attention checks from a CSV, JSONL, JSON or Parquet file.

    Columns: ``id``, ``prompt``, ``text``, and either ``score`` or ``low`` and ``high``;
    optional ``kind`` (``gold``, the default, or ``attention``) and ``explanation``.

    Args:
        rows: The file's rows (:func:`judgelab.labeler._rows.read_rows`).
        scale: The rubric's lowest and highest score; scores outside are refused.

    Raises:
        InputError: Naming file, row, column and the fix.
    """
    ck = Checker(rows)
    ck.require_columns("id", "prompt", "text", one_of=("score", "low"))
    lo, hi = scale if scale is not None else (None, None)
    items = []
    for i in range(1, len(rows.rows) + 1):
        kind = ck.choice(i, "kind", QUALITY_KINDS) if ck.has("kind") else None
        score = ck.number(i, "score", lo=lo, hi=hi, required=False) if ck.has("score") else None
        if score is not None:
            low = high = score
        else:
            low_v = ck.number(i, "low", lo=lo, hi=hi, required=not ck.has("score"))
            high_v = ck.number(i, "high", lo=lo, hi=hi) if ck.has("high") else low_v
            if low_v is None or high_v is None:
                raise ck.fail("has no correct score", row=i, column="score",
                              fix="give the correct overall score in `score`, or a range in `low` and `high`.")
            low, high = low_v, high_v
        if low > high:
            raise ck.fail(f"low {low:g} is above high {high:g}", row=i, column="low",
                          fix="swap them: low is the lowest correct score.")
        items.append(QualityItem(
            answer_id=str(ck.text(i, "id", is_id=True)),
            kind=kind or "gold",  # type: ignore[arg-type]
            prompt=str(ck.text(i, "prompt")),
            text=str(ck.text(i, "text")),
            low=low, high=high,
            explanation=(ck.free_text(i, "explanation") or "") if ck.has("explanation") else "",
        ))
    ck.unique("id", [q.answer_id for q in items])
    if not items:
        raise InputError("has no rows", file=rows.file, fix="add one gold item or attention check per row.")
    return items
