"""Rater quality for the admin: accuracy on gold, attention checks, too-fast labels, warnings.

The figures come from the store's quality reads (:mod:`judgelab.labeler.store._quality`); the statistics
are small pure functions (:func:`gold_accuracy`, :func:`too_fast`), and :func:`rater_quality`
puts them together per rater with the thresholds of :class:`~judgelab.labeler.quality.QualitySettings`.
Overview, Raters and ``judgelab raters quality`` show the same :class:`QualityReport`.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from judgelab.admin._common import display_name
from judgelab.calibration.stats import Estimate, proportion
from judgelab.labeler._rows import Rows, read_rows
from judgelab.labeler.quality import QualitySettings, parse_quality_items, seconds_floor, within
from judgelab.labeler.scales import format_range
from judgelab.labeler.store import ImportSummary, QualityRole

__all__ = [
    "LengthGap",
    "QualityReport",
    "RaterQuality",
    "gold_accuracy",
    "gold_length_gap",
    "import_quality_file",
    "length_gap",
    "quality_export",
    "quality_table",
    "rater_quality",
    "too_fast",
]


def gold_accuracy(right: npt.ArrayLike, *, level: float = 0.95) -> Estimate:
    """Share of a rater's gold labels inside the correct range, with its Wilson interval.

    Args:
        right: One 0/1 (or bool) per gold label: whether it was right.
        level: Confidence level.

    Returns:
        An :class:`~judgelab.calibration.stats.Estimate` (units: share of gold items right; ``n`` the gold
        labels; ``scipy.stats.binomtest(...).proportion_ci(method="wilson")``); ``nan`` when none.

    >>> e = gold_accuracy([1, 1, 1, 0])
    >>> round(e.estimate, 2), round(e.ci_low, 2), round(e.ci_high, 2), e.n
    (0.75, 0.3, 0.95, 4)
    """
    found = proportion(np.asarray(right, dtype=float), level=level)
    return Estimate(estimate=found.estimate, ci_low=found.ci_low, ci_high=found.ci_high, n=found.n,
                    method=found.method, units="share of gold items right", level=level, extra=found.extra)


def too_fast(seconds: npt.ArrayLike, n_words: npt.ArrayLike, *, words_per_second: float = 10.0,
             min_seconds: float = 2.0) -> npt.NDArray[np.bool_]:
    """Which labels took less active time than their answer's floor (:func:`judgelab.labeler.quality.seconds_floor`).

    A label without a recorded time is not flagged (nothing says it was fast).

    >>> too_fast([1.0, 40.0, float("nan")], [300, 300, 300]).tolist()
    [True, False, False]
    """
    secs = np.asarray(seconds, dtype=float)
    words = np.asarray(n_words, dtype=float)
    # One floor per distinct length, not per label: a million labels have a few hundred lengths.
    lengths, at = np.unique(np.where(np.isfinite(words), np.trunc(words), 0.0), return_inverse=True)
    floors = np.array([seconds_floor(int(w), words_per_second=words_per_second, min_seconds=min_seconds)
                       for w in lengths], dtype=float)[at.reshape(-1)] if len(words) else np.zeros(0)
    return np.isfinite(secs) & (secs < floors)


@dataclass(frozen=True)
class RaterQuality:
    """One rater's quality figures and what they call for.

    Attributes:
        rater_id: The rater.
        rater: Their display name.
        name: Their name (what pausing them takes).
        accuracy: Share of gold labels right, with interval (``n`` = gold labels).
        attention: Attention checks answered.
        attention_failed: Of those, answered wrongly.
        timed: Labels with a recorded time (live and quality).
        fast: Of those, under the too-fast floor.
        state: ``revoked``, ``paused``, ``qualifying``, ``not qualified``, ``warn`` or ``ok``.
        warnings: Why the rater is flagged, one sentence each.
        excluded: Their labels are left out of calibration (paused with that rule).
    """

    rater_id: int
    rater: str
    name: str
    accuracy: Estimate
    attention: int
    attention_failed: int
    timed: int
    fast: int
    state: str
    warnings: tuple[str, ...]
    excluded: bool = False

    @property
    def fast_share(self) -> float:
        """Share of timed labels that were too fast (``nan`` when none is timed)."""
        return self.fast / self.timed if self.timed else float("nan")


@dataclass(frozen=True)
class QualityReport:
    """Every rater's quality and the settings it was judged by."""

    settings: QualitySettings
    raters: tuple[RaterQuality, ...]
    gold_items: int
    attention_items: int

    @property
    def flagged(self) -> tuple[RaterQuality, ...]:
        """Raters with a warning (paused ones included)."""
        return tuple(r for r in self.raters if r.warnings)


def _warnings(acc: Estimate, failed: int, fast: int, timed: int, settings: QualitySettings) -> list[str]:
    out = []
    if acc.n >= settings.min_gold and acc.estimate < settings.min_accuracy:
        out.append(f"gold accuracy {acc.estimate:.0%} (95% CI {acc.ci_low:.0%}–{acc.ci_high:.0%}, "
                   f"n = {acc.n}) is below {settings.min_accuracy:.0%}")
    if failed >= settings.max_attention_failures:
        out.append(f"failed {failed} attention check(s) (threshold {settings.max_attention_failures})")
    if timed and fast / timed > settings.max_fast_share:
        out.append(f"{fast} of {timed} labels too fast ({fast / timed:.0%}, threshold {settings.max_fast_share:.0%})")
    return out


def rater_quality(store: QualityRole) -> QualityReport:
    """Accuracy on gold, attention failures, too-fast labels and state of every rater (not admins)."""
    settings = store.quality_settings()
    raters = store.raters()
    raters = raters[raters["role"] == "rater"]
    labels = store.quality_labels()
    speeds = store.label_speeds()
    pauses = store.rater_pauses().set_index("rater_id")
    items = store.quality_items()
    speeds = speeds.assign(fast=too_fast(speeds["seconds"], speeds["n_words"],
                                         words_per_second=settings.words_per_second,
                                         min_seconds=settings.min_seconds))
    right = np.array([within(o, lo, hi) for o, lo, hi in zip(labels["overall"], labels["low"], labels["high"],
                                                               strict=True)], dtype=bool)
    labels = labels.assign(right=right)
    # Each rater's rows grouped once (a filter of every label per rater cost raters x labels).
    gold_right = {int(k): g["right"].astype(int).to_numpy()
                  for k, g in labels[labels["kind"] == "gold"].groupby("rater_id")}
    checks = labels[labels["kind"] == "attention"]
    attention_n = checks.groupby("rater_id").size()
    attention_failed = (~checks["right"].astype(bool)).groupby(checks["rater_id"]).sum()
    timed_rows = speeds[speeds["seconds"].notna()]
    timed_n = timed_rows.groupby("rater_id").size()
    fast_n = timed_rows["fast"].astype(int).groupby(timed_rows["rater_id"]).sum()
    # A revoked rater sees nothing any more: no hold to report, only their record.
    holds = store.rater_holds([int(r) for r, a in zip(raters["rater_id"], raters["active"], strict=True)
                               if bool(a)])
    out = []
    for r in raters.itertuples(index=False):
        rid = int(r.rater_id)
        acc = gold_accuracy(gold_right.get(rid, np.zeros(0, dtype=int)))
        failed = int(attention_failed.get(rid, 0))
        n_attention, n_timed, n_fast = int(attention_n.get(rid, 0)), int(timed_n.get(rid, 0)), int(fast_n.get(rid, 0))
        warnings = _warnings(acc, failed, n_fast, n_timed, settings)
        hold = holds.get(rid) if bool(r.active) else None
        excluded = bool(rid in pauses.index and pauses.loc[rid, "action"] == "pause"
                        and pauses.loc[rid, "exclude_labels"])
        state = ("revoked" if not bool(r.active)
                 else "paused" if hold is not None and hold.state == "paused"
                 else "qualifying" if hold is not None and hold.state == "qualifying"
                 else "not qualified" if hold is not None else "warn" if warnings else "ok")
        if hold is not None and hold.state == "not_qualified":
            warnings.append(f"did not qualify: fewer than {settings.qualify_min:.0%} of the first "
                            f"{settings.qualify_n} gold items right")
        out.append(RaterQuality(
            rater_id=rid, rater=display_name(str(r.name), bool(r.simulated)), name=str(r.name), accuracy=acc,
            attention=n_attention, attention_failed=failed, timed=n_timed, fast=n_fast,
            state=state, warnings=tuple(warnings), excluded=excluded,
        ))
    kinds = items["kind"].value_counts()
    return QualityReport(settings=settings, raters=tuple(out), gold_items=int(kinds.get("gold", 0)),
                         attention_items=int(kinds.get("attention", 0)))


def quality_table(report: QualityReport) -> pd.DataFrame:
    """One row per rater, for the pages and ``--json``.

    Columns: ``rater, state, gold_n, gold_accuracy, ci_low, ci_high, attention, attention_failed,
    timed, too_fast, too_fast_share, excluded, warnings`` (``; ``-joined).
    """
    rows = [{
        "rater": r.rater, "state": r.state, "gold_n": r.accuracy.n,
        "gold_accuracy": r.accuracy.estimate, "ci_low": r.accuracy.ci_low, "ci_high": r.accuracy.ci_high,
        "attention": r.attention, "attention_failed": r.attention_failed, "timed": r.timed,
        "too_fast": r.fast, "too_fast_share": r.fast_share, "excluded": r.excluded,
        "warnings": "; ".join(r.warnings),
    } for r in report.raters]
    columns = ["rater", "state", "gold_n", "gold_accuracy", "ci_low", "ci_high", "attention", "attention_failed",
               "timed", "too_fast", "too_fast_share", "excluded", "warnings"]
    return pd.DataFrame(rows, columns=columns)


#: Gold answers whose median length is off the live answers' by more than this factor (either way) are
#: warned about when the difference is also significant: a rater who notices that short answers are the
#: checked ones can tell gold apart without reading.
LENGTH_RATIO = 1.5
#: Significance of the length difference (two-sided Mann-Whitney U) that, with the ratio, warns.
LENGTH_ALPHA = 0.05


@dataclass(frozen=True)
class LengthGap:
    """How the gold answers' lengths compare with the live answers' (in words).

    Attributes:
        gold_median: Median words of a gold answer.
        gold_range: Fewest and most words of a gold answer.
        live_median: Median words of a live answer.
        live_range: Fewest and most words of a live answer.
        ratio: ``gold_median / live_median``.
        p_value: Two-sided Mann-Whitney U test (``scipy.stats.mannwhitneyu``) of the two lengths.
        n_gold: Gold answers compared.
        n_live: Live answers compared.
    """

    gold_median: float
    gold_range: tuple[int, int]
    live_median: float
    live_range: tuple[int, int]
    ratio: float
    p_value: float
    n_gold: int
    n_live: int

    @property
    def telling(self) -> bool:
        """Whether length alone can tell gold apart: off by :data:`LENGTH_RATIO` and significant."""
        off = self.ratio > LENGTH_RATIO or self.ratio < 1 / LENGTH_RATIO
        return off and self.p_value < LENGTH_ALPHA

    def warning(self) -> str:
        """The admin's warning, with the figures."""
        which = "shorter" if self.ratio < 1 else "longer"
        return (f"Gold answers are {which} than live ones: median {self.gold_median:g} words "
                f"({self.gold_range[0]}-{self.gold_range[1]}, n = {self.n_gold}) against {self.live_median:g} "
                f"({self.live_range[0]}-{self.live_range[1]}, n = {self.n_live}), ratio {self.ratio:.2f}, "
                f"Mann-Whitney p = {self.p_value:.2g}. A rater can tell gold items by their length: write gold "
                "answers as long as the live ones.")


def length_gap(gold_words: npt.ArrayLike, live_words: npt.ArrayLike) -> LengthGap | None:
    """Compare gold and live answer lengths (words); ``None`` when either side is empty.

    >>> gap = length_gap([21, 30, 40, 76], [93, 120, 150, 180, 201])
    >>> gap.gold_median, gap.live_median, round(gap.ratio, 2), gap.telling
    (35.0, 150.0, 0.23, True)
    """
    gold = np.asarray(gold_words, dtype=float)
    live = np.asarray(live_words, dtype=float)
    if gold.size == 0 or live.size == 0:
        return None
    test = stats.mannwhitneyu(gold, live, alternative="two-sided")
    live_median = float(np.median(live))
    return LengthGap(
        gold_median=float(np.median(gold)), gold_range=(int(gold.min()), int(gold.max())),
        live_median=live_median, live_range=(int(live.min()), int(live.max())),
        ratio=float(np.median(gold)) / live_median if live_median else float("inf"),
        p_value=float(test.pvalue), n_gold=int(gold.size), n_live=int(live.size),
    )


def gold_length_gap(store: QualityRole) -> LengthGap | None:
    """:func:`length_gap` of the project's gold items against its original answers (the live ones)."""
    items = store.quality_items()
    gold = items.loc[items["kind"] == "gold", "n_words"]
    return length_gap(gold.to_numpy(), store.answers(variant="original")["n_words"].to_numpy())


def import_quality_file(store: QualityRole, path: str | Path, *, data: bytes | None = None) -> ImportSummary:
    """Read gold items and attention checks from a file and store them (mixed into queues at once).

    Args:
        store: The project.
        path: The file (CSV, JSONL, JSON array or Parquet); with ``data``, only its name counts.
        data: The file's bytes (an upload on the Raters page) instead of reading ``path``.

    Raises:
        InputError: A bad file (naming row, column and the fix) or scores off the rubric's scale.
    """
    rubric = store.rubric()
    scale = None
    if rubric is not None:
        try:
            scale = format_range(rubric.scale)
        except KeyError:  # a scale this judgelab does not know a range for: its buttons still bound the labels
            scale = None
    if data is None:
        rows = read_rows(path)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            local = Path(tmp) / Path(str(path)).name
            local.write_bytes(data)
            rows = read_rows(local)
            rows = Rows(Path(str(path)).name, rows.columns, rows.rows, rows.spreadsheet, rows.quoted)
    items = parse_quality_items(rows, scale=scale)
    return store.add_quality_items(items, source_file=Path(str(path)).name)


def quality_export(store: QualityRole) -> pd.DataFrame:
    """Every rater label of a gold item or attention check, marked as such (``judgelab gold export``).

    Columns: ``label_id, rater, answer_id, quality`` (``gold`` or ``attention``), ``low, high, score,
    right, flag_reason, seconds, too_fast, created_at``.
    """
    settings = store.quality_settings()
    labels = store.quality_labels()
    right = [within(o, lo, hi) for o, lo, hi in zip(labels["overall"], labels["low"], labels["high"], strict=True)]
    fast = too_fast(labels["seconds"], labels["n_words"], words_per_second=settings.words_per_second,
                    min_seconds=settings.min_seconds)
    return pd.DataFrame({
        "label_id": labels["label_id"], "rater": labels["rater_name"], "answer_id": labels["answer_id"],
        "quality": labels["kind"], "low": labels["low"], "high": labels["high"], "score": labels["overall"],
        "right": right, "flag_reason": labels["flag_reason"], "seconds": labels["seconds"], "too_fast": fast,
        "created_at": labels["created_at"],
    })
