"""The compare workflow: load two runs on one part, compare them, record the look and the history."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from judgelab.calibration.loop._compare import Comparison, compare_judges
from judgelab.calibration.loop._load import PairedData, as_arrays, load_paired
from judgelab.calibration.loop._split import HELD_OUT, Part, held_out_looks, record_look
from judgelab.labeler.store import LoopRole

HISTORY_KEY = "judge_loop.compares"


@dataclass(frozen=True)
class CompareReport:
    """What ``judgelab compare`` prints.

    Attributes:
        paired: The two runs on the answers read.
        comparison: The paired figures.
        looks: Held-out looks so far, this one included (0 on the tuning part).
    """

    paired: PairedData
    comparison: Comparison
    looks: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        p = self.paired
        return {"run_a": p.run_a, "run_b": p.run_b, "part": p.part, "rubric": p.rubric,
                "judge_family": p.judge_family, "held_out_looks": self.looks, "notes": list(p.notes),
                "split": {"seed": p.split.seed, "fraction": p.split.fraction, "strata": p.split.strata,
                          **p.split.counts()},
                **self.comparison.to_dict()}


def compare_runs(
    store: LoopRole, run_a: str, run_b: str, *, part: Part = "tuning", seed: int = 0, n_resamples: int = 2000,
    level: float = 0.95,
) -> CompareReport:
    """Compare judge runs A and B on one part of the project's split, and record it.

    On the held-out part the look is recorded first and the intervals are widened for every look
    there so far (Bonferroni): ``level`` becomes ``1 - (1 - level) / looks``.

    Args:
        store: The project store.
        run_a: Version A's run.
        run_b: Version B's run.
        part: ``"tuning"`` (default), ``"held-out"`` or ``"all"``.
        seed: Seed of the bootstrap (and of the split, if the project has none yet).
        n_resamples: Bootstrap resamples.
        level: Confidence level before any adjustment.
    """
    paired = load_paired(store, run_a, run_b, part=part, seed=seed)
    looks = record_look(store, [run_a, run_b], what="compare") if part == HELD_OUT else 0
    comparison = compare_judges(**as_arrays(paired.frame), levels=paired.levels, judge_family=paired.judge_family,
                                looks=max(looks, 1), level=level, n_resamples=n_resamples, rng=seed)
    _record_history(store, paired, comparison)
    return CompareReport(paired, comparison, looks)


def _record_history(store: LoopRole, paired: PairedData, comparison: Comparison) -> None:
    history = compare_history(store)
    history.append({"at": datetime.now(UTC).isoformat(timespec="seconds"), "run_a": paired.run_a,
                    "run_b": paired.run_b, "part": paired.part, "verdict": comparison.verdict,
                    "n_answers": comparison.n_answers})
    store.set_setting("project", HISTORY_KEY, json.dumps(history))


def compare_history(store: LoopRole) -> list[dict[str, Any]]:
    """Every recorded compare, oldest first: ``at``, ``run_a``, ``run_b``, ``part``, ``verdict``, ``n_answers``."""
    stored = store.setting("project", HISTORY_KEY)
    return [] if stored is None else list(json.loads(stored))


def held_out_summary(store: LoopRole) -> dict[str, Any]:
    """How often the held-out part was looked at and which runs: ``looks``, ``runs``, ``entries``."""
    from judgelab.calibration.loop._split import seen_versions

    looks = held_out_looks(store)
    return {"looks": len(looks), "runs": seen_versions(looks), "entries": looks}


def render_compare(report: CompareReport) -> str:
    """The compare as plain text lines."""
    p, c = report.paired, report.comparison
    pct = round(c.level * 100, 2)
    lines = [f"Judge run B {p.run_b} against A {p.run_a} on the {p.part} part ({c.n_answers} labelled answers, "
             f"{c.n_tasks} tasks; rubric {p.rubric})"]
    if p.part == HELD_OUT:
        lines.append(f"  held-out look {report.looks}: intervals at {pct}% (Bonferroni: 95% shared by "
                     f"{report.looks} look(s) at the held-out part)")
    for f in c.figures:
        d = f.diff
        lines.append(f"  {f.name}: A {f.a:.3g}, B {f.b:.3g}; B - A {d.estimate:+.3g} ({pct}% CI {d.ci_low:+.3g} to "
                     f"{d.ci_high:+.3g}; {d.units}; {f.better} is better) -> {f.verdict}")
    if c.mcnemar is not None:
        m = c.mcnemar
        lines.append(f"  McNemar: B right and A wrong on {m.b_only}, A right and B wrong on {m.a_only}; "
                     f"p = {m.p_value:.3g} ({m.method})")
    lines.append(f"  intervals: {c.figures[0].diff.method}" if c.figures else "  no figure could be computed")
    for note in p.notes:
        lines.append(f"  note: {note}")
    verdict = c.verdict + (" (the figures disagree: some favour A, some B)" if c.mixed else "")
    lines.append(f"verdict: {verdict}")
    return "\n".join(lines)
