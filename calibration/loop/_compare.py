"""Two judge versions read on the same labelled answers, paired.

Every figure is a difference *B minus A* computed on the same answers, and every interval is a
paired, task-clustered percentile bootstrap: one resample of tasks feeds both versions, so the
answers both versions found hard cancel out and the interval is narrower than two separate ones.

The figures (each with its units and the direction that means "B is better"):

- **agreement**: share of answers where the judge's pass/fail matches the people's, B minus A,
  in percentage points (higher is better), with McNemar's exact test on the discordant answers
  (a two-sided binomial test of B-right-A-wrong against A-right-B-wrong, ``scipy.stats.binomtest``);
- **kappa**: Cohen's kappa with the people's category (quadratic weights), B minus A (higher is
  better);
- **|residual| per family**: the absolute mean of judge minus human score on one family's answers,
  B minus A, in judge scale points (lower is better: B is closer to the people on that family);
- **|self-preference gap|**: the absolute residual gap between the judge's own family and the
  others, B minus A, in judge scale points (lower is better).

A verdict says "B is better" only when the interval excludes zero on B's side; "A is better" on
A's side; else "no difference shown".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy.stats import binomtest

from judgelab.calibration.stats import Estimate, RngLike, cluster_bootstrap
from judgelab.calibration.stats._bootstrap import as_rng, check_level, check_resamples

Verdict = Literal["B is better", "A is better", "no difference shown"]
NO_DIFFERENCE: Verdict = "no difference shown"


@dataclass(frozen=True)
class McNemar:
    """McNemar's exact test on paired pass/fail agreement.

    Attributes:
        b_only: Answers B got right (matched the people's pass/fail) and A got wrong.
        a_only: Answers A got right and B got wrong.
        p_value: Two-sided exact binomial p-value of ``b_only`` out of ``b_only + a_only`` at 1/2
            (times the number of looks under a Bonferroni adjustment, capped at 1).
        method: How the p-value was computed.
    """

    b_only: int
    a_only: int
    p_value: float
    method: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"b_only": self.b_only, "a_only": self.a_only, "p_value": self.p_value, "method": self.method}


@dataclass(frozen=True)
class Figure:
    """One paired difference with its verdict.

    Attributes:
        name: What is compared (``agreement``, ``kappa``, ``|residual| <family>``, ``|gap|``).
        a: Version A's value on these answers.
        b: Version B's value.
        diff: B minus A with its paired interval.
        better: ``"higher"`` or ``"lower"``: which sign of ``diff`` favours B.
        verdict: "B is better", "A is better" or "no difference shown".
    """

    name: str
    a: float
    b: float
    diff: Estimate
    better: Literal["higher", "lower"]
    verdict: Verdict

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"name": self.name, "a": _clean(self.a), "b": _clean(self.b), "diff": self.diff.to_dict(),
                "better": self.better, "verdict": self.verdict}


@dataclass(frozen=True)
class Comparison:
    """Two judge versions compared on the same answers.

    Attributes:
        figures: The paired figures, agreement first.
        mcnemar: McNemar's exact test on pass/fail agreement (``None`` without pass/fail).
        n_answers: Answers both versions scored that have a human score.
        n_tasks: Tasks they belong to (the bootstrap's clusters).
        level: The intervals' confidence level (already widened for several looks).
        looks: How many comparisons the level was adjusted for (1: none).
        verdict: "B is better" when some figure favours B and none favours A; "A is better" the
            other way; "no difference shown" otherwise (also when they disagree, see ``mixed``).
        mixed: Whether some figures favour A and others B.
    """

    figures: tuple[Figure, ...]
    mcnemar: McNemar | None
    n_answers: int
    n_tasks: int
    level: float
    looks: int
    verdict: Verdict
    mixed: bool = False
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def figure(self, name: str) -> Figure:
        """The figure called ``name``.

        Raises:
            KeyError: No such figure.
        """
        for fig in self.figures:
            if fig.name == name:
                return fig
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "verdict": self.verdict, "mixed": self.mixed, "n_answers": self.n_answers, "n_tasks": self.n_tasks,
            "level": self.level, "looks": self.looks,
            "mcnemar": None if self.mcnemar is None else self.mcnemar.to_dict(),
            "figures": [f.to_dict() for f in self.figures],
        }


def _clean(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def bonferroni_level(level: float, looks: int) -> float:
    """The per-look confidence level that keeps ``level`` over ``looks`` looks (Bonferroni).

    Args:
        level: The family-wide confidence level (e.g. 0.95).
        looks: How many comparisons share it (at least 1).
    """
    check_level("bonferroni_level", level)
    if looks < 1:
        raise ValueError(f"bonferroni_level: looks must be at least 1; got {looks}")
    return 1.0 - (1.0 - level) / looks


def mcnemar_exact(a_right: npt.ArrayLike, b_right: npt.ArrayLike, *, looks: int = 1) -> McNemar:
    """McNemar's exact test: does B match the people's pass/fail more often than A on the same answers?

    Args:
        a_right: Per answer, whether version A matched the people (bool or 0/1).
        b_right: The same for version B, same answers in the same order.
        looks: Bonferroni factor applied to the p-value (1: none).

    Returns:
        A :class:`McNemar`; with no discordant answer the p-value is 1.
    """
    a = np.asarray(a_right, dtype=bool)
    b = np.asarray(b_right, dtype=bool)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"mcnemar_exact: a_right and b_right must be 1-D of one length; got {a.shape}, {b.shape}")
    b_only = int((b & ~a).sum())
    a_only = int((a & ~b).sum())
    p = 1.0 if b_only + a_only == 0 else float(binomtest(b_only, b_only + a_only, 0.5).pvalue)
    method = "McNemar exact (two-sided binomial test on the discordant answers)"
    if looks > 1:
        method += f", Bonferroni x{looks}"
    return McNemar(b_only, a_only, min(1.0, p * looks), method)


def _wmean(values: npt.NDArray[np.float64], weights: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((weights @ values) / weights.sum(axis=1), dtype=float)


def weighted_kappa_rows(
    judge: npt.NDArray[np.intp], human: npt.NDArray[np.intp], k: int, weights: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Quadratic-weighted Cohen's kappa for each row of answer weights.

    Args:
        judge: The judge's category index (0..k-1) per answer.
        human: The people's category index per answer.
        k: Number of categories.
        weights: ``(B, n)`` answer multiplicities (a row of ones: the plain kappa).

    Returns:
        ``B`` kappas (``nan`` where the expected disagreement is zero).
    """
    cells = judge * k + human
    observed = np.zeros((weights.shape[0], k * k))
    for c in np.unique(cells):
        observed[:, c] = weights[:, cells == c].sum(axis=1)
    total = observed.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = observed / total
    cube = observed.reshape(-1, k, k)
    rows, cols = cube.sum(axis=2), cube.sum(axis=1)
    expected = rows[:, :, None] * cols[:, None, :]
    grid = np.arange(k, dtype=float)
    disagree = (grid[:, None] - grid[None, :]) ** 2 / max(k - 1, 1) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(1.0 - (cube * disagree).sum(axis=(1, 2)) / (expected * disagree).sum(axis=(1, 2)))


def _verdict(diff: Estimate, better: str) -> Verdict:
    lo, hi = diff.ci_low, diff.ci_high
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return NO_DIFFERENCE
    favours_b = lo > 0 if better == "higher" else hi < 0
    favours_a = hi < 0 if better == "higher" else lo > 0
    return "B is better" if favours_b else "A is better" if favours_a else NO_DIFFERENCE


def compare_judges(
    human: npt.ArrayLike,
    score_a: npt.ArrayLike,
    score_b: npt.ArrayLike,
    *,
    human_pass: npt.ArrayLike,
    pass_a: npt.ArrayLike,
    pass_b: npt.ArrayLike,
    human_category: npt.ArrayLike,
    family: npt.ArrayLike,
    tasks: npt.ArrayLike,
    levels: npt.ArrayLike,
    judge_family: str | None = None,
    looks: int = 1,
    level: float = 0.95,
    n_resamples: int = 2000,
    rng: RngLike = None,
) -> Comparison:
    """Compare judge versions A and B on the same answers, paired, with task-clustered intervals.

    Args:
        human: The people's score per answer (the raters' mean).
        score_a: Version A's score per answer, on the same scale.
        score_b: Version B's score per answer.
        human_pass: The people's pass (1/0) per answer; ``nan`` where undefined.
        pass_a: Version A's pass (1/0) per answer; ``nan`` where undefined.
        pass_b: Version B's pass.
        human_category: The people's category per answer for kappa (their majority level; a
            value among ``levels``).
        family: The answer's model family.
        tasks: The answer's task id (the bootstrap's cluster).
        levels: The scale's levels, in order (kappa's categories).
        judge_family: The judge's own family, for the self-preference gap (``None``: no gap).
        looks: How many comparisons this one is among (held-out looks): the interval's level
            becomes ``1 - (1 - level) / looks`` (Bonferroni) and the McNemar p-value is
            multiplied by ``looks``.
        level: Confidence level before the adjustment.
        n_resamples: Bootstrap resamples.
        rng: Generator or seed; the same seed gives the same resamples for every figure.

    Returns:
        A :class:`Comparison`.

    Raises:
        ValueError: Arrays of unequal length, no answers, a score off ``levels``.
    """
    func = "compare_judges"
    check_level(func, level)
    check_resamples(func, n_resamples)
    h = np.asarray(human, dtype=float)
    sa, sb = np.asarray(score_a, dtype=float), np.asarray(score_b, dtype=float)
    hp, pa, pb = (np.asarray(x, dtype=float) for x in (human_pass, pass_a, pass_b))
    hc = np.asarray(human_category, dtype=float)
    fam = np.asarray(family).astype(str)
    task = np.asarray(tasks).astype(str)
    n = h.shape[0]
    if n == 0:
        raise ValueError(f"{func}: no answers to compare")
    if any(x.shape != (n,) for x in (sa, sb, hp, pa, pb, hc, fam, task)):
        raise ValueError(f"{func}: every array must hold one value per answer ({n})")
    grid = np.asarray(levels, dtype=float)
    adj = bonferroni_level(level, looks)
    method = f"paired task-clustered percentile bootstrap, {n_resamples} resamples"
    if looks > 1:
        method += f"; level {adj:.4g} (Bonferroni for {looks} held-out looks)"
    boot = _Boot(task, n_resamples, adj, int(as_rng(rng).integers(2**63 - 1)), method)
    figures: list[Figure] = []
    ok = np.isfinite(hp) & np.isfinite(pa) & np.isfinite(pb)
    mcn = None
    if ok.any():
        figures.append(_agreement(boot, ok, hp, pa, pb))
        mcn = mcnemar_exact((pa == hp)[ok], (pb == hp)[ok], looks=looks)
    scored = np.isfinite(h) & np.isfinite(sa) & np.isfinite(sb) & np.isfinite(hc)
    if scored.sum() >= 2 and grid.size >= 2:
        figures.append(_kappa(boot, scored, grid, sa, sb, hc))
        res_a, res_b = np.where(scored, sa - h, 0.0), np.where(scored, sb - h, 0.0)
        figures += [_residual(boot, scored & (fam == f), f, res_a, res_b) for f in sorted(set(fam[scored]))]
        own = scored & (fam == str(judge_family)) if judge_family is not None else np.zeros(n, dtype=bool)
        if own.any() and (scored & ~own).any():
            figures.append(_gap(boot, own, scored & ~own, str(judge_family), res_a, res_b))

    b_wins = any(f.verdict == "B is better" for f in figures)
    a_wins = any(f.verdict == "A is better" for f in figures)
    verdict: Verdict = NO_DIFFERENCE if a_wins == b_wins else "B is better" if b_wins else "A is better"
    return Comparison(tuple(figures), mcn, int((scored | ok).sum()), int(np.unique(task[scored | ok]).size),
                      adj, looks, verdict, mixed=a_wins and b_wins)


@dataclass(frozen=True)
class _Boot:
    """The shared bootstrap settings: the same seed gives every figure the same task resamples."""

    tasks: npt.NDArray[np.str_]
    n_resamples: int
    level: float
    seed: int
    method: str

    def figure(self, name: str, stat: Any, point: tuple[float, float], units: str,
               better: Literal["higher", "lower"], n_units: int) -> Figure:
        rows = np.zeros(self.tasks.shape[0])
        lo, hi, _ = cluster_bootstrap(stat, self.tasks, rows, n_resamples=self.n_resamples, level=self.level,
                                      rng=self.seed)
        est = Estimate(point[1] - point[0], lo, hi, n_units, self.method, units, level=self.level)
        return Figure(name, point[0], point[1], est, better, _verdict(est, better))


Floats = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


def _agreement(boot: _Boot, ok: Mask, hp: Floats, pa: Floats, pb: Floats) -> Figure:
    right_a = np.where(ok, (pa == hp).astype(float), 0.0)
    right_b = np.where(ok, (pb == hp).astype(float), 0.0)
    okf = ok.astype(float)

    def stat(_: Floats, *, weights: Floats) -> Floats:
        wo = weights * okf
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(100 * (wo @ (right_b - right_a)) / wo.sum(axis=1))

    point = (100 * float(right_a[ok].mean()), 100 * float(right_b[ok].mean()))
    return boot.figure("agreement", stat, point, "percentage points of answers where the judge's pass/fail "
                       "matches the people's", "higher", int(ok.sum()))


def _kappa(boot: _Boot, scored: Mask, grid: Floats, sa: Floats, sb: Floats, hc: Floats) -> Figure:
    # Scores are read at the nearest level of the scale.
    ja, jb, hh = (np.abs(x[:, None] - grid[None, :]).argmin(axis=1) for x in (sa, sb, hc))
    sc = scored.astype(float)

    def stat(_: Floats, *, weights: Floats) -> Floats:
        w = weights * sc
        return weighted_kappa_rows(jb, hh, grid.size, w) - weighted_kappa_rows(ja, hh, grid.size, w)

    ka = float(weighted_kappa_rows(ja, hh, grid.size, sc[None, :])[0])
    kb = float(weighted_kappa_rows(jb, hh, grid.size, sc[None, :])[0])
    return boot.figure("kappa", stat, (ka, kb), "kappa (quadratic weights, people's majority category)", "higher",
                       int(scored.sum()))


def _residual(boot: _Boot, fam_mask: Mask, family: str, res_a: Floats, res_b: Floats) -> Figure:
    mask = fam_mask.astype(float)

    def stat(_: Floats, *, weights: Floats) -> Floats:
        w = weights * mask
        return np.abs(_wmean(res_b, w)) - np.abs(_wmean(res_a, w))

    point = (abs(float(res_a[fam_mask].mean())), abs(float(res_b[fam_mask].mean())))
    return boot.figure(f"|residual| {family}", stat, point, "judge scale points (absolute mean of judge minus "
                       "human)", "lower", int(fam_mask.sum()))


def _gap(boot: _Boot, own: Mask, other: Mask, family: str, res_a: Floats, res_b: Floats) -> Figure:
    own_f, other_f = own.astype(float), other.astype(float)

    def gap(res: Floats, w: Floats) -> Floats:
        return np.asarray(_wmean(res, w * own_f) - _wmean(res, w * other_f))

    def stat(_: Floats, *, weights: Floats) -> Floats:
        return np.abs(gap(res_b, weights)) - np.abs(gap(res_a, weights))

    g1 = np.ones((1, own.shape[0]))
    point = (abs(float(gap(res_a, g1)[0])), abs(float(gap(res_b, g1)[0])))
    return boot.figure("|gap|", stat, point, f"judge scale points (absolute self-preference gap: {family} minus "
                       "the other families)", "lower", int((own | other).sum()))
