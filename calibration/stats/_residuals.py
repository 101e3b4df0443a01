"""Judge-minus-human residuals per model family, and the self-preference gap.

The **residual** of a family is the mean of (judge score − human score) over that family's
answers: how much more generous (positive) or strict (negative) the judge is than blind human
raters on that family's writing. The **self-preference gap** is the residual on the judge's own
family minus the residual on the other family. A judge that is lenient everywhere has equal
residuals and no gap; only a residual that moves with the author's family is evidence of
family preference (seed 000: humans pass 71% / 68%, the judge 79% / 66%, residuals +8 / −2,
gap 10 percentage points).

Inputs are one row per answer: the judge's verdict or score, the human score, the answer's
family and its task. Intervals come from a **task-clustered** percentile bootstrap: answers to
one task share the task's difficulty, so whole tasks are resampled and both families' answers
to a task move together (a *paired* bootstrap for the gap).

Several raters per answer. :func:`human_scores` collapses a long label table to one human score
per answer and keeps the per-rater rows (:attr:`HumanScores.ratings`). Pass those rows as
``rater_level`` and the bootstrap becomes two-stage: resample tasks, then, independently for
every drawn copy of an answer, resample that answer's raters with replacement and re-apply the
collapsing rule. This carries the spread between raters into the interval. Resampling at both
stages counts the within-answer (rater) variance roughly twice (Davison & Hinkley 1997, §3.8),
so the two-stage interval is mildly conservative; with one rater per answer it equals the
one-stage interval.

Design weights. When the hand-label sample was drawn with unequal inclusion probabilities
(e.g. stratified by the judge's own verdict), pass ``weights`` = 1 / inclusion probability and
every mean becomes a Hajek (ratio) estimator ``Σ w·x / Σ w``, which is consistent for the
population mean where the unweighted mean is not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from calibration.stats._bootstrap import (
    RngLike,
    as_rng,
    check_choice,
    check_level,
    check_resamples,
    cluster_count_blocks,
    finite_vector,
    percentile_interval,
)
from calibration.stats._result import Estimate

ResidualScale = Literal["pass", "score"]
"""``"pass"``: 0/1 pass verdicts, residuals in percentage points. ``"score"``: scores on the
judge's scale (e.g. 1–5), residuals in judge scale points."""

HumanRule = Literal["mean", "majority"]
"""How several raters' scores of one answer become one human score.

``"mean"``: the raters' mean (a fraction for pass verdicts). ``"majority"``: the most frequent
score; **ties go to the lower score** (for pass verdicts an even split is a fail), so a split
panel never credits an answer the humans did not agree on.
"""

AuthorKind = Literal["human", "model", "unknown"]
"""Who wrote an artifact of the judge prompt."""

_SCALES: tuple[str, ...] = ("pass", "score")
_RULES: tuple[str, ...] = ("mean", "majority")
_AUTHOR_KINDS: tuple[str, ...] = ("human", "model", "unknown")
_UNITS: dict[str, str] = {"pass": "percentage points", "score": "judge scale points"}
_FACTOR: dict[str, float] = {"pass": 100.0, "score": 1.0}
_BLOCK_CELLS = 2_000_000
_NAN = float("nan")


# --------------------------------------------------------------------------------------------
# Collapsing raters
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HumanScores:
    """One human score per answer, with the per-rater rows behind it.

    Attributes:
        scores: Human score per answer (index: answer id), collapsed by ``rule``.
        n_raters: Number of raters per answer.
        spread: Population standard deviation of the raters' scores per answer (0 with one
            rater), a quick look at how much the raters disagree.
        ratings: The long per-rater table actually used, columns ``answer``, ``rater``,
            ``score`` (missing scores dropped). Pass it as ``rater_level`` to
            :func:`family_residuals` / :func:`self_preference_gap` to carry the rater spread
            into the interval.
        rule: The collapsing rule used.
    """

    scores: pd.Series
    n_raters: pd.Series
    spread: pd.Series
    ratings: pd.DataFrame
    rule: HumanRule


def human_scores(
    labels: pd.DataFrame,
    *,
    rule: HumanRule = "mean",
    answer_col: str = "answer_id",
    rater_col: str = "rater_id",
    score_col: str = "score",
) -> HumanScores:
    """Collapse several raters per answer into one human score per answer.

    Args:
        labels: Long table, one row per (answer, rater) label. Pass current labels only
            (superseded edits removed): a rater appearing twice on one answer is an error.
        rule: ``"mean"`` or ``"majority"`` (ties go to the lower score; see :data:`HumanRule`).
        answer_col: Column holding the answer id.
        rater_col: Column holding the rater id.
        score_col: Column holding the score (0/1 for pass verdicts).

    Returns:
        A :class:`HumanScores`. Rows with a missing score are dropped first. Degenerate case:
        an empty table (or one whose scores are all missing) gives empty series.

    Raises:
        ValueError: On a bad ``rule``, a missing column or a duplicated (answer, rater) pair.
    """
    func = "human_scores"
    check_choice(func, "rule", rule, _RULES)
    missing = [c for c in (answer_col, rater_col, score_col) if c not in labels.columns]
    if missing:
        raise ValueError(
            f"{func}: labels lack column(s) {missing!r}; have {list(labels.columns)!r} "
            "(set answer_col=, rater_col=, score_col=)"
        )
    ratings = pd.DataFrame(
        {
            "answer": labels[answer_col].to_numpy(),
            "rater": labels[rater_col].to_numpy(),
            "score": pd.to_numeric(labels[score_col], errors="raise").to_numpy(dtype=float),
        }
    )
    ratings = ratings[np.isfinite(ratings["score"].to_numpy())].reset_index(drop=True)
    dup = ratings.duplicated(["answer", "rater"])
    if dup.any():
        first = [v.item() if isinstance(v, np.generic) else v for v in ratings.loc[dup, ["answer", "rater"]].iloc[0]]
        raise ValueError(
            f"{func}: rater {first[1]!r} labelled answer {first[0]!r} more than once; "
            "pass current labels only (drop superseded edits)"
        )
    ratings = ratings.sort_values(["answer", "rater"], kind="stable").reset_index(drop=True)
    grouped = ratings.groupby("answer", sort=True)["score"]
    n_raters = grouped.size().rename("n_raters")
    spread = grouped.std(ddof=0).rename("spread")
    values = ratings["score"].to_numpy(dtype=float)
    answers = ratings["answer"].to_numpy()
    starts = np.flatnonzero(np.r_[True, answers[1:] != answers[:-1]])
    collapsed = np.empty(0)
    if values.size:
        collapsed = _collapse(values[None, :], starts, rule, np.unique(values))[0]
    scores = pd.Series(collapsed, index=n_raters.index, name="human_score")
    return HumanScores(scores=scores, n_raters=n_raters, spread=spread, ratings=ratings, rule=rule)


def _collapse(
    matrix: npt.NDArray[np.float64],
    starts: npt.NDArray[np.intp],
    rule: str,
    categories: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """Collapse ``(B, n_slots)`` rater scores grouped by ``starts`` into ``(B, n_answers)``."""
    sizes = np.diff(np.r_[starts, matrix.shape[1]])
    if rule == "mean":
        return np.add.reduceat(matrix, starts, axis=1) / sizes
    # Majority: count each category (ascending); argmax takes the first maximum, so a tie goes
    # to the lowest score.
    counts = np.stack([np.add.reduceat((matrix == c).astype(np.int32), starts, axis=1) for c in categories])
    return np.asarray(categories[np.argmax(counts, axis=0)], dtype=float)


def _collapse_panels(panels: npt.NDArray[np.float64], rule: str) -> npt.NDArray[np.float64]:
    """:func:`_collapse` for rows of equally many raters ``(n, m)``: one score per row.

    Column by column rather than by ``reduceat`` over groups: a few passes over ``n`` for the
    small ``m`` of a rater panel. Majority: a value's count is how many of the row's values
    equal it, and the most frequent wins, the lowest among equally frequent ones.
    """
    m = panels.shape[1]
    if rule == "mean":
        total = panels[:, 0].copy()
        for i in range(1, m):
            total += panels[:, i]
        return total / m
    best = panels[:, 0]
    best_count = np.zeros(panels.shape[0], dtype=np.intp)
    for i in range(m):
        value = panels[:, i]
        count = np.zeros(panels.shape[0], dtype=np.intp)
        for j in range(m):
            count += panels[:, j] == value
        better = (count > best_count) | ((count == best_count) & (value < best))
        best = np.where(better, value, best)
        best_count = np.where(better, count, best_count)
    return best


# --------------------------------------------------------------------------------------------
# Residuals
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Raters:
    """Per-rater scores grouped by answer row, ready for within-answer resampling."""

    scores: npt.NDArray[np.float64]  # slots, grouped by answer row
    starts: npt.NDArray[np.intp]  # first slot of each answer row
    sizes: npt.NDArray[np.intp]  # number of raters of each answer row
    categories: npt.NDArray[np.float64]
    rule: str

    def collapsed(self) -> npt.NDArray[np.float64]:
        return _collapse(self.scores[None, :], self.starts, self.rule, self.categories)[0]

    def varying(self) -> npt.NDArray[np.bool_]:
        """Per answer row: do its raters disagree? Only then can resampling them move its score."""
        lowest = np.minimum.reduceat(self.scores, self.starts)
        highest = np.maximum.reduceat(self.scores, self.starts)
        return np.asarray(lowest != highest)

    def panels(
        self,
        rows: npt.NDArray[np.intp],
        task: npt.NDArray[np.intp],
        fam: npt.NDArray[np.intp],
        w: npt.NDArray[np.float64],
    ) -> list[_Panel]:
        """The answer rows ``rows`` grouped by number of raters, with their task, family and weight."""
        out = []
        for m in np.unique(self.sizes[rows]):
            sel = rows[self.sizes[rows] == m]
            slots = self.starts[sel][:, None] + np.arange(m)[None, :]
            out.append(_Panel(self.scores[slots], task[sel], fam[sel], w[sel], self.categories, self.rule))
        return out


@dataclass(frozen=True)
class _Panel:
    """Answers with the same number of raters ``m``, whose raters disagree."""

    scores: npt.NDArray[np.float64]  # (n_answers, m)
    task: npt.NDArray[np.intp]
    fam: npt.NDArray[np.intp]
    weight: npt.NDArray[np.float64]
    categories: npt.NDArray[np.float64]
    rule: str

    def copy_sums(self, counts: npt.NDArray[np.int64], n_fam: int, gen: np.random.Generator) -> npt.NDArray[np.float64]:
        """Per resample and family: Σ weight × human score over every drawn copy of these answers.

        Every copy of an answer (its task drawn ``k`` times gives ``k`` copies) gets its own
        draw of ``m`` raters with replacement, collapsed by the rule: shape ``(b, n_fam)``.
        """
        n, m = self.scores.shape
        b = counts.shape[0]
        copies = counts[:, self.task]
        cell = np.repeat(np.arange(copies.size), copies.ravel())  # one per copy: resample * n + answer
        answer = cell % n
        picks = gen.integers(0, m, size=(cell.size, m))
        human = _collapse_panels(self.scores[answer[:, None], picks], self.rule)
        key = (cell // n) * n_fam + self.fam[answer]
        sums = np.bincount(key, weights=self.weight[answer] * human, minlength=b * n_fam)
        return np.asarray(sums, dtype=float).reshape(b, n_fam)


@dataclass(frozen=True)
class _Prepared:
    judge: npt.NDArray[np.float64]
    human: npt.NDArray[np.float64]
    weights: npt.NDArray[np.float64]
    fam_codes: npt.NDArray[np.intp]
    families: list[str]
    task_codes: npt.NDArray[np.intp]
    raters: _Raters | None


def family_residuals(
    judge: npt.ArrayLike,
    human: npt.ArrayLike | None,
    family: npt.ArrayLike,
    task: npt.ArrayLike,
    *,
    scale: ResidualScale = "pass",
    weights: npt.ArrayLike | None = None,
    rater_level: pd.DataFrame | None = None,
    answer_ids: npt.ArrayLike | None = None,
    rule: HumanRule = "mean",
    n_resamples: int = 2000,
    level: float = 0.95,
    rng: RngLike = None,
) -> dict[str, Estimate]:
    """Per-family mean of judge minus human, with a task-clustered bootstrap interval.

    Args:
        judge: The judge's verdict (``scale="pass"``: 0/1) or score, one per answer. Unscored
            judgements (parse failures) must be dropped by the caller: ``nan`` is an error.
        human: The human score per answer (for pass verdicts a 0/1 or, after averaging raters,
            a fraction in [0, 1]). May be ``None`` when ``rater_level`` is given; if both are
            given they must agree.
        family: Model family of each answer (keys of the result, as ``str``).
        task: Task id of each answer: the resampling cluster.
        scale: ``"pass"`` (result in percentage points) or ``"score"`` (judge scale points).
        weights: Design weights (inverse inclusion probabilities), one per answer; ``None``
            gives equal weights. Means are Hajek ratio means ``Σ w·x / Σ w``.
        rater_level: Optional long per-rater table with columns ``answer`` (an id from
            ``answer_ids``, or the row position 0..n−1 when ``answer_ids`` is ``None``) and
            ``score`` (e.g. :attr:`HumanScores.ratings`). Every answer needs at least one row.
            Turns on the two-stage bootstrap (tasks, then raters within answers).
        answer_ids: Id of each answer, to match ``rater_level["answer"]``.
        rule: How raters are collapsed inside the two-stage bootstrap (see :data:`HumanRule`);
            use the rule that produced ``human``.
        n_resamples: Bootstrap resamples.
        level: Confidence level.
        rng: Generator, int seed (deterministic) or ``None``.

    Returns:
        ``{family: Estimate}``. ``estimate`` is the residual (×100 for pass verdicts), ``n``
        the number of tasks the family's answers cover, and ``extra`` holds ``judge_mean``
        and ``human_mean`` (in percent for pass verdicts, scale points otherwise),
        ``n_answers`` and ``weighted``. Degenerate case: a family whose answers all belong to
        one task has a ``nan`` interval (one cluster shows no between-task spread).

    Raises:
        ValueError: On bad options, unequal lengths, missing values, verdicts other than 0/1
            with ``scale="pass"``, non-positive family weight totals, or ``rater_level`` rows
            that do not match the answers.
    """
    func = "family_residuals"
    prep = _prepare(
        func,
        judge,
        human,
        family,
        task,
        scale,
        weights,
        rater_level,
        answer_ids,
        rule,
        level,
        n_resamples,
    )
    reps = _residual_replicates(prep, n_resamples, as_rng(rng))
    return {fam: _family_estimate(prep, k, reps[k], scale, n_resamples, level) for k, fam in enumerate(prep.families)}


def self_preference_gap(
    judge: npt.ArrayLike,
    human: npt.ArrayLike | None,
    family: npt.ArrayLike,
    task: npt.ArrayLike,
    *,
    own_family: str = "claude",
    scale: ResidualScale = "pass",
    weights: npt.ArrayLike | None = None,
    rater_level: pd.DataFrame | None = None,
    answer_ids: npt.ArrayLike | None = None,
    rule: HumanRule = "mean",
    provenance: Iterable[tuple[str, str, str]] | None = None,
    n_resamples: int = 2000,
    level: float = 0.95,
    rng: RngLike = None,
) -> Estimate:
    """Residual on the judge's own family minus residual on the other family.

    With more than two families the comparison is the **unweighted mean of the other
    families' residuals** (each family counts once, whatever its number of answers), so the
    gap reads "own family versus a typical other family".

    The interval is a **paired** task-clustered percentile bootstrap: each resample draws
    tasks, and every family's answers to a drawn task enter together, so the task difficulty
    shared by both families' answers cancels in the gap as it does in the point estimate.

    Args:
        judge: Judge verdicts or scores, one per answer (see :func:`family_residuals`).
        human: Human scores, one per answer (or ``None`` with ``rater_level``).
        family: Model family of each answer.
        task: Task id of each answer.
        own_family: The judge's own family (compared as ``str``).
        scale: ``"pass"`` (percentage points) or ``"score"`` (judge scale points).
        weights: Design weights (inverse inclusion probabilities); Hajek means.
        rater_level: Per-rater table for the two-stage bootstrap (see
            :func:`family_residuals`).
        answer_ids: Answer ids matching ``rater_level["answer"]``.
        rule: Rater collapsing rule used inside the two-stage bootstrap.
        provenance: Optional ``(artifact, author_kind, author)`` records of the judge prompt;
            when given, ``extra["bound"]`` and ``extra["bound_reason"]`` come from
            :func:`provenance_note`.
        n_resamples: Bootstrap resamples.
        level: Confidence level.
        rng: Generator, int seed (deterministic) or ``None``.

    Returns:
        An :class:`Estimate` of the gap; ``n`` is the number of tasks. ``extra`` holds, per
        family ``f``, ``judge_mean[f]``, ``human_mean[f]`` and ``residual[f]`` (percent for
        pass verdicts), plus ``own_family``, ``other_families`` and, with ``provenance``,
        ``bound``/``bound_reason``. Degenerate case: a single task gives a ``nan`` interval.

    Raises:
        ValueError: If ``own_family`` is absent or is the only family, and as
            :func:`family_residuals`.
    """
    func = "self_preference_gap"
    prep = _prepare(
        func,
        judge,
        human,
        family,
        task,
        scale,
        weights,
        rater_level,
        answer_ids,
        rule,
        level,
        n_resamples,
    )
    reps = _residual_replicates(prep, n_resamples, as_rng(rng))
    return _gap_estimate(func, prep, reps, str(own_family), provenance, scale, n_resamples, level)


def residuals_and_gap(
    judge: npt.ArrayLike,
    human: npt.ArrayLike | None,
    family: npt.ArrayLike,
    task: npt.ArrayLike,
    *,
    own_family: str = "claude",
    scale: ResidualScale = "pass",
    weights: npt.ArrayLike | None = None,
    rater_level: pd.DataFrame | None = None,
    answer_ids: npt.ArrayLike | None = None,
    rule: HumanRule = "mean",
    provenance: Iterable[tuple[str, str, str]] | None = None,
    n_resamples: int = 2000,
    level: float = 0.95,
    rng: RngLike = None,
) -> tuple[dict[str, Estimate], Estimate]:
    """:func:`family_residuals` and :func:`self_preference_gap` from one set of bootstrap replicates.

    The two share their resamples (the gap is a difference of the family residuals' replicates),
    so computing them together halves the bootstrap work; with an int seed the result equals
    calling the two functions with that seed.

    Args:
        judge: Judge verdicts or scores, one per answer (see :func:`family_residuals`).
        human: Human scores, one per answer (or ``None`` with ``rater_level``).
        family: Model family of each answer.
        task: Task id of each answer.
        own_family: The judge's own family (compared as ``str``).
        scale: ``"pass"`` (percentage points) or ``"score"`` (judge scale points).
        weights: Design weights (inverse inclusion probabilities); Hajek means.
        rater_level: Per-rater table for the two-stage bootstrap.
        answer_ids: Answer ids matching ``rater_level["answer"]``.
        rule: Rater collapsing rule used inside the two-stage bootstrap.
        provenance: Optional provenance records (see :func:`self_preference_gap`).
        n_resamples: Bootstrap resamples.
        level: Confidence level.
        rng: Generator, int seed (deterministic) or ``None``.

    Returns:
        ``(families, gap)``: what :func:`family_residuals` and :func:`self_preference_gap`
        return.

    Raises:
        ValueError: As :func:`self_preference_gap`.
    """
    func = "residuals_and_gap"
    prep = _prepare(
        func,
        judge,
        human,
        family,
        task,
        scale,
        weights,
        rater_level,
        answer_ids,
        rule,
        level,
        n_resamples,
    )
    _check_own_family(func, prep, str(own_family))
    reps = _residual_replicates(prep, n_resamples, as_rng(rng))
    families = {
        fam: _family_estimate(prep, k, reps[k], scale, n_resamples, level) for k, fam in enumerate(prep.families)
    }
    return families, _gap_estimate(func, prep, reps, str(own_family), provenance, scale, n_resamples, level)


def _check_own_family(func: str, prep: _Prepared, own: str) -> None:
    if own not in prep.families:
        raise ValueError(f"{func}: own_family {own!r} has no answers; families present: {prep.families!r}")
    if len(prep.families) < 2:
        raise ValueError(f"{func}: need answers from at least one family besides {own!r}")


def _gap_estimate(
    func: str,
    prep: _Prepared,
    reps: npt.NDArray[np.float64],
    own: str,
    provenance: Iterable[tuple[str, str, str]] | None,
    scale: str,
    n_resamples: int,
    level: float,
) -> Estimate:
    """The gap's :class:`Estimate` from the families' residual replicates (unscaled)."""
    _check_own_family(func, prep, own)
    own_k = prep.families.index(own)
    others = [k for k in range(len(prep.families)) if k != own_k]

    factor = _FACTOR[scale]
    means = _point_means(prep)
    residual = means["residual"] * factor
    gap = float(residual[own_k] - residual[others].mean())

    scaled = reps * factor
    gap_reps = scaled[own_k] - scaled[others].mean(axis=0)
    n_tasks = int(prep.task_codes.max()) + 1
    lo, hi = percentile_interval(gap_reps, level) if n_tasks > 1 else (_NAN, _NAN)

    extra: dict[str, Any] = {
        "own_family": own,
        "other_families": [prep.families[k] for k in others],
    }
    for k, fam in enumerate(prep.families):
        extra[f"judge_mean[{fam}]"] = float(means["judge"][k] * factor)
        extra[f"human_mean[{fam}]"] = float(means["human"][k] * factor)
        extra[f"residual[{fam}]"] = float(residual[k])
    if provenance is not None:
        note = provenance_note(provenance, judge_family=own)
        extra["bound"] = note.bound
        extra["bound_reason"] = note.reason
    return Estimate(
        estimate=gap,
        ci_low=lo,
        ci_high=hi,
        n=n_tasks,
        method=_method(prep, n_resamples, paired=True, n_other=len(others)),
        units=_UNITS[scale],
        level=level,
        extra=extra,
    )


def _method(prep: _Prepared, n_resamples: int, *, paired: bool, n_other: int = 1) -> str:
    parts = ["weighted (Hajek) mean" if _is_weighted(prep) else "mean", "of judge − human"]
    if paired:
        parts.append(
            "; own-family residual minus "
            + ("the other family's" if n_other == 1 else "the mean of the other families'")
        )
    parts.append(f"; {'paired ' if paired else ''}task-clustered percentile bootstrap, {n_resamples} resamples")
    if prep.raters is not None:
        parts.append(f", raters resampled within answers (two-stage, rule={prep.raters.rule!r})")
    return " ".join(parts[:2]) + "".join(parts[2:])


def _is_weighted(prep: _Prepared) -> bool:
    return not bool(np.all(prep.weights == prep.weights[0]))


def _family_estimate(
    prep: _Prepared,
    k: int,
    reps: npt.NDArray[np.float64],
    scale: str,
    n_resamples: int,
    level: float,
) -> Estimate:
    factor = _FACTOR[scale]
    means = _point_means(prep)
    in_fam = prep.fam_codes == k
    n_tasks = int(np.unique(prep.task_codes[in_fam]).size)
    lo, hi = percentile_interval(reps * factor, level) if n_tasks > 1 else (_NAN, _NAN)
    return Estimate(
        estimate=float(means["residual"][k] * factor),
        ci_low=lo,
        ci_high=hi,
        n=n_tasks,
        method=_method(prep, n_resamples, paired=False),
        units=_UNITS[scale],
        level=level,
        extra={
            "judge_mean": float(means["judge"][k] * factor),
            "human_mean": float(means["human"][k] * factor),
            "n_answers": int(in_fam.sum()),
            "weighted": _is_weighted(prep),
        },
    )


def _point_means(prep: _Prepared) -> dict[str, npt.NDArray[np.float64]]:
    onehot = np.zeros((prep.judge.size, len(prep.families)))
    onehot[np.arange(prep.judge.size), prep.fam_codes] = 1.0
    fw = onehot * prep.weights[:, None]
    total = fw.sum(axis=0)
    judge = prep.judge @ fw / total
    human = prep.human @ fw / total
    return {"judge": judge, "human": human, "residual": (prep.judge - prep.human) @ fw / total}


def _residual_replicates(prep: _Prepared, n_resamples: int, gen: np.random.Generator) -> npt.NDArray[np.float64]:
    """Bootstrap replicates of each family's residual (unscaled): ``(n_families, B)``.

    A replicate's residual is ``Σ c·w·(judge − human) / Σ c·w`` over a family's answers, ``c``
    an answer's multiplicity (its task's). Both sums are linear in the task multiplicities, so a
    block of resamples is one product of the multiplicities with per-task totals. In the
    two-stage bootstrap, only answers whose raters disagree have a human score that varies from
    copy to copy; the product takes their judge score alone, and
    :meth:`_Panel.copy_sums` subtracts the human scores of their resampled copies.
    """
    n_fam = len(prep.families)
    n_tasks = int(prep.task_codes.max()) + 1
    fw = np.zeros((prep.judge.size, n_fam))
    fw[np.arange(prep.judge.size), prep.fam_codes] = prep.weights
    panels: list[_Panel] = []
    if prep.raters is None:
        residual = prep.judge - prep.human
    else:
        varying = prep.raters.varying()
        residual = prep.judge - np.where(varying, 0.0, prep.raters.collapsed())
        panels = prep.raters.panels(np.flatnonzero(varying), prep.task_codes, prep.fam_codes, prep.weights)
    per_answer = np.hstack([fw, fw * residual[:, None]])
    per_task: npt.NDArray[np.float64] = np.column_stack(
        [np.bincount(prep.task_codes, weights=col, minlength=n_tasks) for col in per_answer.T]
    ).astype(float, copy=False)
    # Cells per resample: the multiplicities, plus a few arrays per drawn rater in the panels.
    width = n_tasks + 4 * sum(p.scores.size for p in panels)
    out = np.empty((n_fam, n_resamples))
    blocks = cluster_count_blocks(n_tasks, n_resamples, gen, max_cells=max(1, _BLOCK_CELLS * n_tasks // width))
    for start, stop, counts in blocks:
        sums = counts.astype(float) @ per_task
        den, num = sums[:, :n_fam], sums[:, n_fam:]
        for panel in panels:
            num -= panel.copy_sums(counts, n_fam, gen)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[:, start:stop] = (num / den).T
    return out


def _prepare(
    func: str,
    judge: npt.ArrayLike,
    human: npt.ArrayLike | None,
    family: npt.ArrayLike,
    task: npt.ArrayLike,
    scale: str,
    weights: npt.ArrayLike | None,
    rater_level: pd.DataFrame | None,
    answer_ids: npt.ArrayLike | None,
    rule: str,
    level: float,
    n_resamples: int,
) -> _Prepared:
    check_choice(func, "scale", scale, _SCALES)
    check_choice(func, "rule", rule, _RULES)
    check_level(func, level)
    check_resamples(func, n_resamples)
    j = _float_array(func, "judge", judge)
    n = j.size
    if n == 0:
        raise ValueError(f"{func}: no answers")
    fam = np.asarray(family).astype(str)
    tsk = np.asarray(task)
    if fam.shape != (n,) or tsk.shape != (n,):
        raise ValueError(
            f"{func}: judge, family and task must have one entry per answer; got lengths {n}, {fam.shape}, {tsk.shape}"
        )
    if pd.isna(tsk).any():
        raise ValueError(f"{func}: task ids must not be missing")
    if scale == "pass" and not np.isin(j, (0.0, 1.0)).all():
        raise ValueError(f"{func}: with scale='pass' judge verdicts must be 0/1 or boolean")

    raters = None if rater_level is None else _build_raters(func, rater_level, answer_ids, n, rule, scale)
    h = _human_per_answer(func, human, raters, n, rule, scale)
    w = _weights(func, weights, n)
    families, fam_codes = np.unique(fam, return_inverse=True)
    fam_codes = fam_codes.ravel()
    totals = np.bincount(fam_codes, weights=w, minlength=families.size)
    if (totals <= 0).any():
        bad = families[totals <= 0].tolist()
        raise ValueError(f"{func}: families {bad!r} have zero total weight")
    _, task_codes = np.unique(tsk, return_inverse=True)
    return _Prepared(
        judge=j,
        human=h,
        weights=w,
        fam_codes=fam_codes.astype(np.intp),
        families=[str(f) for f in families],
        task_codes=task_codes.ravel().astype(np.intp),
        raters=raters,
    )


def _human_per_answer(
    func: str, human: npt.ArrayLike | None, raters: _Raters | None, n: int, rule: str, scale: str
) -> npt.NDArray[np.float64]:
    """The human score per answer: given, or collapsed from the raters (and then checked against them)."""
    if human is None:
        if raters is None:
            raise ValueError(f"{func}: pass human scores, or rater_level to compute them")
        h = raters.collapsed()
    else:
        h = _float_array(func, "human", human)
        if h.shape != (n,):
            raise ValueError(f"{func}: human must have one score per answer ({n}); got {h.shape}")
        if raters is not None and not np.allclose(h, raters.collapsed(), atol=1e-9, rtol=0):
            raise ValueError(
                f"{func}: human scores disagree with rater_level collapsed by rule={rule!r}; "
                "pass human=None to use rater_level alone, or the rule that made human"
            )
    if scale == "pass" and ((h < 0) | (h > 1)).any():
        raise ValueError(f"{func}: with scale='pass' human scores must lie in [0, 1]")
    return h


def _weights(func: str, weights: npt.ArrayLike | None, n: int) -> npt.NDArray[np.float64]:
    """Design weights, one non-negative number per answer (all ones when not given)."""
    if weights is None:
        return np.ones(n)
    w = _float_array(func, "weights", weights)
    if w.shape != (n,) or (w < 0).any():
        raise ValueError(f"{func}: weights must be one non-negative number per answer")
    return w


def _build_raters(
    func: str,
    rater_level: pd.DataFrame,
    answer_ids: npt.ArrayLike | None,
    n: int,
    rule: str,
    scale: str,
) -> _Raters:
    if not {"answer", "score"} <= set(rater_level.columns):
        raise ValueError(f"{func}: rater_level needs columns 'answer' and 'score'; got {list(rater_level.columns)!r}")
    scores = pd.to_numeric(rater_level["score"]).to_numpy(dtype=float)
    if not np.isfinite(scores).all():
        raise ValueError(f"{func}: rater_level scores must not be missing (drop them first)")
    if scale == "pass" and not np.isin(scores, (0.0, 1.0)).all():
        raise ValueError(f"{func}: with scale='pass' rater_level scores must be 0/1")
    if answer_ids is None:
        rows = pd.to_numeric(rater_level["answer"]).to_numpy()
        if not (np.equal(np.mod(rows, 1), 0).all() and ((rows >= 0) & (rows < n)).all()):
            raise ValueError(f"{func}: without answer_ids, rater_level['answer'] must be row positions 0..{n - 1}")
        row = rows.astype(np.intp)
    else:
        ids = pd.Index(np.asarray(answer_ids))
        if len(ids) != n or not ids.is_unique:
            raise ValueError(f"{func}: answer_ids must be {n} unique ids, one per answer")
        row = ids.get_indexer(rater_level["answer"].to_numpy())
        if (row < 0).any():
            unknown = rater_level["answer"].to_numpy()[row < 0][:3].tolist()
            raise ValueError(f"{func}: rater_level answers {unknown!r} are not in answer_ids")
    order = np.argsort(row, kind="stable")
    row, scores = row[order], scores[order]
    sizes = np.bincount(row, minlength=n)
    if (sizes == 0).any():
        raise ValueError(
            f"{func}: {int((sizes == 0).sum())} answer(s) have no rows in rater_level; "
            "every answer needs at least one rating"
        )
    starts = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.intp)
    return _Raters(
        scores=scores,
        starts=starts,
        sizes=sizes.astype(np.intp),
        categories=np.unique(scores),
        rule=rule,
    )


def _float_array(func: str, name: str, x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    return finite_vector(
        func, name, x, nonfinite="has missing or infinite values; drop unscored answers explicitly"
    )


# --------------------------------------------------------------------------------------------
# Provenance
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProvenanceNote:
    """How to read a self-preference gap given who wrote the judge prompt's artifacts.

    Attributes:
        bound: ``"upper"`` when the gap may include the judge recognising its own family's
            writing as the target (so the measured gap is an upper bound on intrinsic
            self-preference); ``None`` when every artifact was written by a human or another
            family.
        reason: One sentence saying why.
        own_family_artifacts: Artifacts written by the judge's own family.
        unknown_artifacts: Artifacts whose author is unknown.
    """

    bound: Literal["upper"] | None
    reason: str
    own_family_artifacts: tuple[str, ...]
    unknown_artifacts: tuple[str, ...]


def provenance_note(
    records: Iterable[tuple[str, str, str]] | Iterable[Mapping[str, str]],
    *,
    judge_family: str,
) -> ProvenanceNote:
    """Whether the judge prompt's artifacts make the self-preference gap an upper bound.

    If the rubric, few-shot examples or reference answers were drafted by the judge's own
    family, the judge is asked to recognise its own writing as the target, and the measured
    residual folds that in with any intrinsic preference (seed 000): the gap is then an upper
    bound. An artifact of unknown authorship cannot rule this out and counts the same way.

    Args:
        records: ``(artifact, author_kind, author)`` tuples (or mappings with those keys),
            ``author_kind`` one of ``"human"``, ``"model"``, ``"unknown"``. A model author
            belongs to the judge's family when its name, lower-cased, equals ``judge_family``
            or starts with it followed by ``-``, ``_``, ``/`` or a space
            (``"claude-opus-5"`` is family ``"claude"``).
        judge_family: The judge's model family.

    Returns:
        A :class:`ProvenanceNote`. Degenerate case: no records at all means nothing was
        checked, so the bound is ``"upper"`` with that reason.

    Raises:
        ValueError: On an unknown ``author_kind`` or a malformed record.
    """
    func = "provenance_note"
    fam = judge_family.strip().lower()
    own: list[str] = []
    unknown: list[str] = []
    n_records = 0
    for record in records:
        n_records += 1
        if isinstance(record, Mapping):
            artifact, kind, author = record["artifact"], record["author_kind"], record["author"]
        else:
            if len(record) != 3:
                raise ValueError(f"{func}: records are (artifact, author_kind, author); got {record!r}")
            artifact, kind, author = record
        check_choice(func, "author_kind", kind, _AUTHOR_KINDS)
        if kind == "unknown":
            unknown.append(str(artifact))
        elif kind == "model" and _same_family(str(author), fam):
            own.append(str(artifact))
    if n_records == 0:
        return ProvenanceNote(
            "upper",
            "no provenance records: the authorship of the rubric and prompt artifacts was "
            "not checked, so own-family contamination cannot be ruled out",
            (),
            (),
        )
    if own or unknown:
        parts = []
        if own:
            parts.append(f"{', '.join(own)} written by the judge's own family ({judge_family})")
        if unknown:
            parts.append(f"{', '.join(unknown)} of unknown authorship")
        reason = (
            "; ".join(parts) + ": the judge may recognise its own family's writing as the target, so the gap "
            "folds that in and is an upper bound on self-preference"
        )
        return ProvenanceNote("upper", reason, tuple(own), tuple(unknown))
    return ProvenanceNote(
        None,
        f"every artifact was written by a human or a family other than {judge_family}",
        (),
        (),
    )


def _same_family(author: str, family: str) -> bool:
    name = author.strip().lower()
    return name == family or any(name.startswith(family + sep) for sep in ("-", "_", "/", " "))
