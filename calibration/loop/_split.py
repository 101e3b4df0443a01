"""The honest held-out split: the labelled answers cut once into a tuning part and a held-out part.

A team that edits its judge prompt while looking at the disagreements, then reports agreement on
the same labels, reports a figure it has tuned to. The split is made once per project (seeded,
stratified by answer family and design stratum) and stored with the project's settings, so every
later command reads the same parts. Answers labelled after the split are placed by a seeded hash
of their id, so they too land in one part for good.

Every look at the held-out part is recorded with the runs looked at: the held-out intervals are
widened (Bonferroni) for the number of looks, since picking the best of several versions on the
held-out part is tuning on it again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import pandas as pd

from judgelab.calibration.stats import RngLike
from judgelab.calibration.stats._bootstrap import as_rng
from judgelab.labeler.store import LoopRole
from judgelab.labeler.store.roles import SettingReader

Part = Literal["tuning", "held-out", "all"]
PARTS: tuple[str, ...] = ("tuning", "held-out", "all")
TUNING = "tuning"
HELD_OUT = "held-out"
SPLIT_KEY = "judge_loop.split"
LOOKS_KEY = "judge_loop.held_out_looks"
DEFAULT_FRACTION = 0.3
_SCOPE = "project"


@dataclass(frozen=True)
class Split:
    """The project's split of the labelled answers.

    Attributes:
        parts: ``answer_id -> "tuning" | "held-out"`` of the answers split when it was made.
        seed: The seed it was made with (also the hash key for answers labelled later).
        fraction: The share of each stratum held out.
        created_at: When it was made (ISO 8601, UTC).
        strata: What it was stratified by.
    """

    parts: Mapping[str, str]
    seed: int
    fraction: float
    created_at: str
    strata: str

    def part_of(self, answer_id: str) -> str:
        """The part of one answer: its recorded part, else its seeded hash's."""
        known = self.parts.get(answer_id)
        return known if known is not None else hashed_part(answer_id, seed=self.seed, fraction=self.fraction)

    def select(self, answer_ids: Iterable[str], part: Part) -> list[str]:
        """The answers of ``answer_ids`` in ``part`` (``"all"``: every one)."""
        ids = [str(a) for a in answer_ids]
        return ids if part == "all" else [a for a in ids if self.part_of(a) == part]

    def counts(self) -> dict[str, int]:
        """How many recorded answers are in each part."""
        values = list(self.parts.values())
        return {TUNING: values.count(TUNING), HELD_OUT: values.count(HELD_OUT)}

    def to_json(self) -> str:
        """The stored form."""
        return json.dumps({"parts": dict(self.parts), "seed": self.seed, "fraction": self.fraction,
                           "created_at": self.created_at, "strata": self.strata}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Split:
        """Read the stored form."""
        doc = json.loads(text)
        return cls({str(k): str(v) for k, v in doc["parts"].items()}, int(doc["seed"]), float(doc["fraction"]),
                   str(doc["created_at"]), str(doc.get("strata", "family")))


def hashed_part(answer_id: str, *, seed: int, fraction: float) -> str:
    """The part of an answer labelled after the split: a seeded hash of its id, uniform on [0, 1)."""
    digest = hashlib.sha256(f"{seed}:{answer_id}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    return HELD_OUT if u < fraction else TUNING


def make_split(
    answer_ids: Iterable[str], strata: Iterable[Any], *, fraction: float = DEFAULT_FRACTION, rng: RngLike = None
) -> dict[str, str]:
    """Cut answers into tuning and held-out parts, the same share of every stratum held out.

    Within each stratum the answers are shuffled and ``round(fraction * n)`` of them held out
    (at least one of a stratum of two or more, so every stratum is seen on both sides).

    Args:
        answer_ids: The labelled answers.
        strata: One stratum per answer (e.g. ``"family|design stratum"``).
        fraction: Share held out, strictly between 0 and 1.
        rng: Generator or seed.

    Returns:
        ``answer_id -> "tuning" | "held-out"``.
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"make_split: fraction must be strictly between 0 and 1; got {fraction!r}")
    frame = pd.DataFrame({"answer_id": [str(a) for a in answer_ids], "stratum": [str(s) for s in strata]})
    gen = as_rng(rng)
    out: dict[str, str] = {}
    for _, group in frame.sort_values(["stratum", "answer_id"]).groupby("stratum", sort=True):
        ids = group["answer_id"].to_numpy()
        order = gen.permutation(ids.size)
        k = round(fraction * ids.size)
        if ids.size >= 2:
            k = min(max(k, 1), ids.size - 1)
        for i, pos in enumerate(order):
            out[str(ids[pos])] = HELD_OUT if i < k else TUNING
    return out


def project_split(
    store: LoopRole, answers: pd.DataFrame, *, seed: int = 0, fraction: float = DEFAULT_FRACTION
) -> Split:
    """The project's split, made now (and stored) if it has none.

    Args:
        store: The project store.
        answers: The labelled answers (``answer_id``, ``family``), used only when the split is made.
        seed: Seed of a new split.
        fraction: Share held out of a new split.
    """
    stored = store.setting(_SCOPE, SPLIT_KEY)
    if stored is not None:
        return Split.from_json(stored)
    strata = answers["family"].astype(str)
    how = "family"
    items = store.label_design_items()
    if not items.empty:
        stratum = items.drop_duplicates("answer_id").set_index("answer_id")["stratum"]
        mapped = answers["answer_id"].map(stratum)
        if mapped.notna().any():
            strata = strata + "|" + mapped.fillna("").astype(str)
            how = "family and design stratum"
    parts = make_split(answers["answer_id"], strata, fraction=fraction, rng=seed)
    split = Split(parts, seed, fraction, datetime.now(UTC).isoformat(timespec="seconds"), how)
    store.set_setting(_SCOPE, SPLIT_KEY, split.to_json())
    return split


def held_out_looks(store: LoopRole) -> list[dict[str, Any]]:
    """Every recorded look at the held-out part: ``at``, ``what``, ``runs``, oldest first."""
    stored = store.setting(_SCOPE, LOOKS_KEY)
    return [] if stored is None else list(json.loads(stored))


def record_look(store: LoopRole, runs: Iterable[str], *, what: str) -> int:
    """Record one look at the held-out part; returns how many looks there have been, this one included."""
    looks = held_out_looks(store)
    looks.append({"at": datetime.now(UTC).isoformat(timespec="seconds"), "what": what, "runs": [str(r) for r in runs]})
    store.set_setting(_SCOPE, LOOKS_KEY, json.dumps(looks))
    return len(looks)


def seen_versions(looks: Iterable[Mapping[str, Any]]) -> list[str]:
    """The distinct runs looked at on the held-out part, in order of first look."""
    seen: dict[str, None] = {}
    for look in looks:
        for run in look.get("runs", []):
            seen.setdefault(str(run), None)
    return list(seen)


def stored_split(store: SettingReader) -> Split | None:
    """The project's split, or ``None`` when none was made yet (reads only)."""
    stored = store.setting(_SCOPE, SPLIT_KEY)
    return None if stored is None else Split.from_json(stored)


def parts_read_line(store: SettingReader) -> str:
    """What ``calibrate`` says about the labels it read: every labelled answer, both parts of any split.

    ``calibrate`` reads every label on purpose: it is the report of one judge against all the
    people's work. The tuning/held-out discipline is ``compare``'s and ``disagreements``'.
    """
    split = stored_split(store)
    if split is None:
        return ("every labelled answer (no held-out split made yet; `judgelab compare` makes one and reads its "
                "tuning part)")
    counts = split.counts()
    return (f"every labelled answer: both parts of the held-out split (tuning {counts[TUNING]}, held-out "
            f"{counts[HELD_OUT]}); `judgelab compare` reads the tuning part")
