"""Coverage of the report's intervals against a known truth: the simulator and the tally.

Every interval the calibration report prints (each family's residual, the self-preference gap,
kappa, the prediction-powered pass rate) is checked here by simulation from a model whose true
values are known in closed form (or by quadrature), over the situations users are in: few or
many tasks, one to five raters per answer with or without a persistent personal leniency,
balanced or unbalanced families, simple random or judge-stratified samples. The slow test
(``tests/stats/test_coverage.py``) runs a subset; ``bench/coverage.py`` prints the full grid.

The model (a 1-5 scale; pass = a score of 4 or more):

* task difficulty ``u ~ N(0, 0.6²)``; answer quality ``q = μ_f + u + e``, ``e ~ N(0, 0.7²)``,
  ``μ = 3.3`` for the judge's own family and ``3.1`` for the other;
* the judge scores ``round(q + b_f + v + η)`` clipped to 1-5: ``b = +0.3`` on its own family
  (the self-preference to find), ``v ~ N(0, 0.4²)`` a misreading shared by a task's answers
  (so residuals correlate within a task), ``η ~ N(0, 0.5²)``;
* a panel of five raters (three to five in :data:`RATER_CELLS`), each with a persistent leniency
  ``ℓ ~ N(0, σ_ℓ²)`` (0 or 0.4), scores ``round(q + ℓ + ε)`` clipped, ``ε ~ N(0, 0.6²)``; each
  answer is labelled by ``m`` of the panel drawn at random, and its human score is their mean
  (kappa: their majority, ties to fail);
* a pool of ``4 × tasks`` tasks; the other family answered every task (balanced) or half of
  them (unbalanced); the sample is ``tasks`` whole tasks, drawn at random or within strata of
  the judge's verdicts on the task's answers (discordant verdicts oversampled twice).

The residuals, gap and PPI speak for raters like these, so their truth averages over the
population of raters; kappa speaks for the panel (the report says so), so its truth is computed
for each simulated panel. A fresh pool is drawn for every dataset, so the truths are the
model's, not one pool's.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy.special import ndtr

from judgelab.calibration.stats._agreement import design_kappa
from judgelab.calibration.stats._ppi import design_ppi_mean
from judgelab.calibration.stats._residuals import family_residuals, residuals_and_gap
from judgelab.calibration.stats._result import Estimate

__all__ = ["COVERAGE_GRID", "INTERVALS", "PANEL_INTERVALS", "RATER_CELLS", "RATER_STUDY", "TEST_CELLS",
           "TWO_RATER_CELLS", "CoverageCell", "CoverageResult", "coverage_table", "run_cell"]

Sampling = Literal["srs", "judge-stratified"]

_SD_TASK, _SD_ANSWER, _SD_RATER_NOISE, _SD_JUDGE_TASK, _SD_JUDGE = 0.6, 0.7, 0.6, 0.4, 0.5
_MU = (3.3, 3.1)  # own family, other family
_BIAS = (0.3, 0.0)
_PASS = 3.5  # a rounded score of 4 or more
_PANEL = 5
_POOL_FACTOR = 4
_FAMILIES = np.array(["own", "other"])
_NAN = float("nan")

INTERVALS: tuple[str, ...] = (
    "residual own (pass)",
    "residual other (pass)",
    "gap (pass)",
    "residual own (score)",
    "residual other (score)",
    "gap (score)",
    "kappa (pass)",
    "PPI own",
    "PPI other",
    "residual own (pass, panel)",
)
"""The intervals checked, in table order. The last is the ``interval="panel"`` option, checked
against the panel's own truth."""

PANEL_INTERVALS: tuple[str, ...] = (
    "residual own (pass, panel)",
    "residual other (pass, panel)",
    "gap (pass, panel)",
    "residual own (score, panel)",
    "residual other (score, panel)",
    "gap (score, panel)",
)
"""Every residual and gap under ``interval="panel"``, checked against this panel's own truth
(:func:`run_cell` with ``panel_scope=True``; issue 43's "raters vs panel" table)."""

_UNBIASED = ("residual own (pass)", "residual other (pass)", "gap (pass)", "residual own (score)",
             "residual other (score)", "gap (score)", "PPI own", "PPI other")


@dataclass(frozen=True)
class CoverageCell:
    """One situation of the grid.

    Attributes:
        n_tasks: Tasks labelled (every family's answer to each).
        raters: Raters per answer, out of a panel of five.
        leniency: Sd of the raters' persistent leniency (scale points).
        unbalanced: The other family answered only half of the tasks.
        sampling: ``"srs"`` or ``"judge-stratified"``.
        panel: Raters on the panel (each answer's ``raters`` are drawn from them). With one rater
            per answer the raters' spread is estimated between raters, from ``panel`` of them.
    """

    n_tasks: int
    raters: int
    leniency: float
    unbalanced: bool
    sampling: Sampling
    panel: int = 5

    def label(self) -> str:
        """A short name for tables."""
        fam = "unbal" if self.unbalanced else "bal"
        of = f" of {self.panel}" if self.panel != _PANEL else ""
        return (f"{self.n_tasks:>3} tasks, {self.raters} rater(s){of}, lenient {self.leniency:g}, {fam}, "
                f"{self.sampling}")


_SAMPLINGS: tuple[Sampling, ...] = ("srs", "judge-stratified")

COVERAGE_GRID: tuple[CoverageCell, ...] = tuple(
    CoverageCell(t, m, s, u, samp)
    for t, m, s, u, samp in itertools.product((15, 30, 100), (1, 2, 5), (0.0, 0.4), (False, True), _SAMPLINGS)
)
"""The full grid: tasks {15, 30, 100} × raters {1, 2, 5} × leniency {0, 0.4} × families
{balanced, unbalanced} × sampling {simple random, judge-stratified}: 72 cells."""


_TEST_SPECS: tuple[tuple[int, int, float, bool, Sampling], ...] = (
    (15, 1, 0.0, False, "srs"),
    (15, 2, 0.4, True, "judge-stratified"),
    (15, 5, 0.4, False, "srs"),
    (15, 5, 0.0, True, "judge-stratified"),
    (30, 1, 0.4, False, "judge-stratified"),
    (30, 2, 0.0, True, "srs"),
    (30, 5, 0.4, True, "judge-stratified"),
    (100, 1, 0.4, True, "srs"),
    (100, 2, 0.4, False, "judge-stratified"),
    (100, 5, 0.4, False, "srs"),
)
TEST_CELLS: tuple[CoverageCell, ...] = tuple(CoverageCell(*spec) for spec in _TEST_SPECS)
"""The slow test's subset: every level of every factor, each pair of tasks x raters once."""

RATER_CELLS: tuple[CoverageCell, ...] = (
    *(CoverageCell(30, 1, 0.4, False, "srs", panel) for panel in (3, 4, 5)),
    CoverageCell(30, 1, 0.4, True, "judge-stratified", 4),
    CoverageCell(15, 1, 0.4, False, "srs", 4),
    CoverageCell(100, 1, 0.4, False, "srs", 4),
    CoverageCell(30, 1, 0.0, False, "srs", 4),
)
"""Cells where the raters' spread is estimated between 3-5 raters from one label per answer
(issue 32): where it was often estimated at zero, and where the floor of
:mod:`judgelab.calibration.stats._raters` is used; the last has no spread at all (the floor's price)."""

RATER_STUDY: tuple[CoverageCell, ...] = tuple(
    CoverageCell(t, m, s, False, samp, 4)
    for t, m, s, samp in itertools.product((15, 30, 100), (1, 3), (0.0, 0.4), _SAMPLINGS)
)
"""The raters study of issue 32: tasks {15, 30, 100} × raters per answer {1, 3} of a panel of four ×
leniency {0, 0.4} × {simple random, judge-stratified}, balanced families: 24 cells, where the
spread is estimated between raters (one label per answer) or within answers (three)."""


TWO_RATER_CELLS: tuple[CoverageCell, ...] = tuple(
    CoverageCell(t, 1, s, u, "srs", 2) for t, s, u in itertools.product((30, 100), (0.0, 0.4), (False, True))
)
"""A panel of two raters, one label per answer (issue 43): tasks {30, 100} × leniency {0, 0.4} ×
families {balanced, unbalanced}. Their spread rests on 1 df: a family's residual and PPI are
refused an interval for raters like these (:func:`judgelab.calibration.stats._raters.two_rater_refusal`),
the gap keeps its two-way interval."""


@dataclass(frozen=True)
class CoverageResult:
    """Coverage of each interval in one cell.

    Attributes:
        cell: The situation.
        reps: Simulated datasets.
        coverage: Share of datasets whose interval covered the truth, per interval.
        bias: Mean estimate minus truth, per interval (``INTERVALS`` units).
        bias_se: Monte Carlo standard error of ``bias``.
        half_width: Mean half-width, per interval.
        unreliable: Share of datasets whose interval was flagged unreliable, per interval.
        seconds: Wall time of the cell.
        floored: Share of datasets whose interval carried the raters' spread at its floor, or
            estimated within its noise (the two-way interval; :mod:`judgelab.calibration.stats._raters`),
            per interval: the line says so in both cases.
        refused: Share of datasets whose interval was refused (two raters: no interval for raters
            like these, and the line says why), per interval. ``coverage`` counts the others only
            (``nan`` when every one was refused).
    """

    cell: CoverageCell
    reps: int
    coverage: dict[str, float]
    bias: dict[str, float]
    bias_se: dict[str, float]
    half_width: dict[str, float]
    unreliable: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    floored: dict[str, float] = field(default_factory=dict)
    refused: dict[str, float] = field(default_factory=dict)

    def mc_se(self, name: str) -> float:
        """Monte Carlo standard error of a coverage (at the observed share)."""
        p = self.coverage[name]
        given = self.reps * (1.0 - self.refused.get(name, 0.0))
        return math.sqrt(max(p * (1 - p), 0.95 * 0.05) / max(given, 1.0))


# --------------------------------------------------------------------------------------------
# Truths
# --------------------------------------------------------------------------------------------


def _expected_score(mean: float, sd: float) -> float:
    """``E[clip(round(X), 1, 5)]`` for ``X ~ N(mean, sd²)``: ``1 + Σ_k P(X ≥ k − 0.5)``."""
    return 1.0 + float(sum(ndtr((mean - (k - 0.5)) / sd) for k in range(2, 6)))


def _truths(leniency: float) -> dict[str, float]:
    """Residuals, gaps and human pass rates over the population of raters."""
    sd_judge = math.sqrt(_SD_TASK**2 + _SD_ANSWER**2 + _SD_JUDGE_TASK**2 + _SD_JUDGE**2)
    sd_human = math.sqrt(_SD_TASK**2 + _SD_ANSWER**2 + leniency**2 + _SD_RATER_NOISE**2)
    out: dict[str, float] = {}
    for f, name in enumerate(("own", "other")):
        judge_pass = float(ndtr((_MU[f] + _BIAS[f] - _PASS) / sd_judge))
        human_pass = float(ndtr((_MU[f] - _PASS) / sd_human))
        out[f"residual {name} (pass)"] = 100 * (judge_pass - human_pass)
        out[f"residual {name} (score)"] = (_expected_score(_MU[f] + _BIAS[f], sd_judge)
                                           - _expected_score(_MU[f], sd_human))
        out[f"PPI {name}"] = human_pass
    out["gap (pass)"] = out["residual own (pass)"] - out["residual other (pass)"]
    out["gap (score)"] = out["residual own (score)"] - out["residual other (score)"]
    return out


def _panel_truths(lenient: npt.NDArray[np.float64], m: int, family_share: Sequence[float]) -> dict[str, float]:
    """Truths for this panel: every residual and gap (:data:`PANEL_INTERVALS`), and kappa (majority of ``m``)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights = weights / weights.sum()
    sd_q = math.sqrt(_SD_TASK**2 + _SD_ANSWER**2)
    sd_j = math.sqrt(_SD_JUDGE_TASK**2 + _SD_JUDGE**2)
    subsets = list(itertools.combinations(range(lenient.size), m))
    joint = np.zeros((2, 2))
    out: dict[str, float] = {}
    for f, share in enumerate(family_share):
        q = _MU[f] + sd_q * nodes
        p_judge = ndtr((q + _BIAS[f] - _PASS) / sd_j)
        p_rater = ndtr((q[:, None] + lenient[None, :] - _PASS) / _SD_RATER_NOISE)  # (nodes, raters)
        p_major = np.zeros(q.size)
        for s in subsets:
            p_major += _majority(p_rater[:, list(s)]) / len(subsets)
        both = float(weights @ (p_judge * p_major))
        pj, ph = float(weights @ p_judge), float(weights @ p_major)
        joint += share * np.array([[1 - pj - ph + both, ph - both], [pj - both, both]])
        name = _FAMILIES[f]
        # This panel's truth: each answer's raters drawn from the panel at random, so the human
        # score averages over its raters; E[clip(round(x))] = 1 + Σ_k P(x ≥ k − 0.5).
        out[f"residual {name} (pass, panel)"] = 100 * (pj - float(weights @ p_rater.mean(axis=1)))
        cuts = np.arange(2, 6) - 0.5
        e_judge = 1 + ndtr((q[:, None] + _BIAS[f] - cuts) / sd_j).sum(axis=1)
        e_rater = 1 + ndtr((q[:, None, None] + lenient[None, :, None] - cuts) / _SD_RATER_NOISE).sum(axis=2)
        out[f"residual {name} (score, panel)"] = float(weights @ (e_judge - e_rater.mean(axis=1)))
    for scale in ("pass", "score"):
        out[f"gap ({scale}, panel)"] = out[f"residual own ({scale}, panel)"] - out[f"residual other ({scale}, panel)"]
    p_o = np.trace(joint)
    p_e = float(joint.sum(axis=1) @ joint.sum(axis=0))
    out["kappa (pass)"] = (p_o - p_e) / (1 - p_e)
    return out


def _majority(p: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """P(more than half of independent raters pass), per row (ties fail): Poisson-binomial."""
    m = p.shape[1]
    dist = np.zeros((p.shape[0], m + 1))
    dist[:, 0] = 1.0
    for i in range(m):
        dist[:, 1:] = dist[:, 1:] * (1 - p[:, [i]]) + dist[:, :-1] * p[:, [i]]
        dist[:, 0] *= 1 - p[:, i]
    return dist[:, m // 2 + 1:].sum(axis=1)


# --------------------------------------------------------------------------------------------
# One dataset
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Data:
    """One simulated hand-label round: the sampled answers, their labels, and the pool."""

    judge: npt.NDArray[np.float64]  # judge scores of the sampled answers
    family: npt.NDArray[np.str_]
    task: npt.NDArray[np.intp]
    weight: npt.NDArray[np.float64]
    stratum: npt.NDArray[np.intp] | None
    labels: pd.DataFrame  # answer (row), rater, score
    pool_judge_pass: npt.NDArray[np.float64]
    pool_family: npt.NDArray[np.str_]
    pool_task: npt.NDArray[np.intp]
    lenient: npt.NDArray[np.float64]


def _simulate(cell: CoverageCell, gen: np.random.Generator) -> _Data:
    n_pool = _POOL_FACTOR * cell.n_tasks
    other = np.ones(n_pool, dtype=bool) if not cell.unbalanced else gen.random(n_pool) < 0.5
    task = np.r_[np.arange(n_pool), np.flatnonzero(other)]
    fam = np.r_[np.zeros(n_pool, dtype=np.intp), np.ones(int(other.sum()), dtype=np.intp)]
    mu, bias = np.asarray(_MU)[fam], np.asarray(_BIAS)[fam]
    q = mu + gen.normal(0, _SD_TASK, n_pool)[task] + gen.normal(0, _SD_ANSWER, task.size)
    judge = np.clip(np.round(q + bias + gen.normal(0, _SD_JUDGE_TASK, n_pool)[task]
                             + gen.normal(0, _SD_JUDGE, task.size)), 1, 5)
    chosen, weight_of_task, stratum_of_task = _sample_tasks(cell, judge >= 4, task, fam, n_pool, gen)
    while np.unique(fam[np.isin(task, chosen)]).size < 2:
        # An unbalanced 15-task sample can miss the other family (once in the 1,000-dataset grid): it
        # has no gap to estimate, and a team would draw again, so the simulation does too.
        chosen, weight_of_task, stratum_of_task = _sample_tasks(cell, judge >= 4, task, fam, n_pool, gen)
    keep = np.isin(task, chosen)
    rows = np.flatnonzero(keep)
    lenient = gen.normal(0, cell.leniency, cell.panel) if cell.leniency > 0 else np.zeros(cell.panel)
    m = cell.raters
    raters = np.argsort(gen.random((rows.size, cell.panel)), axis=1)[:, :m]
    scores = np.clip(np.round(q[rows][:, None] + lenient[raters] + gen.normal(0, _SD_RATER_NOISE, (rows.size, m))),
                     1, 5)
    labels = pd.DataFrame({"answer": np.repeat(np.arange(rows.size), m), "rater": raters.ravel(),
                           "score": scores.ravel()})
    t = task[rows]
    return _Data(
        judge=judge[rows], family=_FAMILIES[fam[rows]], task=t, weight=weight_of_task[t],
        stratum=None if stratum_of_task is None else stratum_of_task[t], labels=labels,
        pool_judge_pass=(judge >= 4).astype(float), pool_family=_FAMILIES[fam], pool_task=task, lenient=lenient,
    )


def _sample_tasks(
    cell: CoverageCell,
    judge_pass: npt.NDArray[np.bool_],
    task: npt.NDArray[np.intp],
    fam: npt.NDArray[np.intp],
    n_pool: int,
    gen: np.random.Generator,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64], npt.NDArray[np.intp] | None]:
    """Tasks drawn, the weight of each pool task (1/π), and its stratum (``None``: SRS)."""
    if cell.sampling == "srs":
        return gen.choice(n_pool, cell.n_tasks, replace=False), np.full(n_pool, n_pool / cell.n_tasks), None
    # Stratum = the judge's verdicts on the task's answers: own pass/fail x other pass/fail/absent.
    own = np.zeros(n_pool, dtype=np.intp)
    own[task[fam == 0]] = judge_pass[fam == 0]
    other = np.full(n_pool, 2, dtype=np.intp)
    other[task[fam == 1]] = judge_pass[fam == 1]
    stratum = own * 3 + other
    sizes = np.bincount(stratum, minlength=6).astype(float)
    score = sizes * np.where((np.arange(6) // 3) != (np.arange(6) % 3), 2.0, 1.0)
    n_h = _allocate(score, cell.n_tasks, sizes, minimum=2)
    chosen = np.concatenate([gen.choice(np.flatnonzero(stratum == h), int(n), replace=False)
                             for h, n in enumerate(n_h) if n > 0])
    weight = np.where(n_h > 0, sizes / np.maximum(n_h, 1), 0.0)
    return chosen, weight[stratum], stratum


def _allocate(
    score: npt.NDArray[np.float64], n: int, cap: npt.NDArray[np.float64], *, minimum: int
) -> npt.NDArray[np.int64]:
    """Whole units per stratum: at least ``minimum`` (capacity allowing), the rest by ``score``."""
    base = np.minimum(cap, minimum)
    while base.sum() > n:
        base[np.argmax(base)] -= 1
    out = base.copy()
    for _ in range(int(n - base.sum())):
        room = out < cap
        share = np.where(room, score / np.maximum(out, 1), -1.0)
        out[np.argmax(share)] += 1
    return out.astype(np.int64)


def _estimates(data: _Data, cell: CoverageCell, *, panel_scope: bool = False) -> dict[str, Estimate]:
    """Every interval of the report for one dataset, as the report computes it.

    With ``panel_scope`` also every residual and gap under ``interval="panel"``
    (:data:`PANEL_INTERVALS`).
    """
    human_score = data.labels.groupby("answer")["score"].mean().to_numpy()
    pass_labels = data.labels.assign(score=(data.labels["score"] >= 4).astype(float))
    human_pass = pass_labels.groupby("answer")["score"].mean().to_numpy()
    judge_pass = (data.judge >= 4).astype(float)
    common: dict[str, Any] = {"weights": data.weight, "strata": data.stratum, "own_family": "own"}
    out: dict[str, Estimate] = {}
    for scale, judge, human, labels in (("pass", judge_pass, human_pass, pass_labels),
                                        ("score", data.judge, human_score, data.labels)):
        fams, gap = residuals_and_gap(judge, human, data.family, data.task, scale=scale,  # type: ignore[arg-type]
                                      rater_level=labels, **common)
        for name in ("own", "other"):
            out[f"residual {name} ({scale})"] = fams[name]
        out[f"gap ({scale})"] = gap
        if panel_scope:
            fams, gap = residuals_and_gap(judge, human, data.family, data.task, scale=scale,  # type: ignore[arg-type]
                                          rater_level=labels, interval="panel", **common)
            out[f"residual own ({scale}, panel)"] = fams["own"]
            out[f"residual other ({scale}, panel)"] = fams["other"]
            out[f"gap ({scale}, panel)"] = gap
    panel = family_residuals(judge_pass, human_pass, data.family, data.task, rater_level=pass_labels,
                             interval="panel", weights=data.weight, strata=data.stratum)
    out["residual own (pass, panel)"] = panel["own"]
    majority = (human_pass > 0.5).astype(int)
    out["kappa (pass)"] = design_kappa(judge_pass.astype(int), majority, labels=[0, 1], sample_weight=data.weight,
                                       clusters=data.task).kappa
    for name in ("own", "other"):
        sel = data.family == name
        rows = np.flatnonzero(sel)
        pos = np.full(sel.size, -1)
        pos[rows] = np.arange(rows.size)
        lab = pass_labels[sel[pass_labels["answer"].to_numpy()]]
        lab = lab.assign(answer=pos[lab["answer"].to_numpy()])
        in_pool = data.pool_family == name
        out[f"PPI {name}"] = design_ppi_mean(
            human_pass[sel], judge_pass[sel], data.pool_judge_pass[in_pool], weights=data.weight[sel],
            clusters=(data.task[sel], data.pool_task[in_pool]),
            strata=None if data.stratum is None else data.stratum[sel], rater_level=lab,
        )
    return out


# --------------------------------------------------------------------------------------------
# The tally
# --------------------------------------------------------------------------------------------


def run_cell(cell: CoverageCell, reps: int, *, seed: int = 0, panel_scope: bool = False) -> CoverageResult:
    """Simulate ``reps`` datasets of one cell and tally coverage, bias and width.

    Args:
        cell: The situation.
        reps: Datasets to simulate.
        panel_scope: Also tally :data:`PANEL_INTERVALS` (this panel's intervals, against its truth).
        seed: Seed; each cell draws from ``default_rng([seed, hash of the cell])``, so a cell's
            result does not depend on which other cells run.

    Returns:
        A :class:`CoverageResult`.
    """
    started = time.perf_counter()
    key = [seed, cell.n_tasks, cell.raters, round(cell.leniency * 10), int(cell.unbalanced),
           int(cell.sampling == "srs")] + ([cell.panel] if cell.panel != _PANEL else [])
    gen = np.random.default_rng(key)
    truth = _truths(cell.leniency)
    share = (1 / 1.5, 0.5 / 1.5) if cell.unbalanced else (0.5, 0.5)
    names = INTERVALS + tuple(n for n in PANEL_INTERVALS if panel_scope and n not in INTERVALS)
    hits = dict.fromkeys(names, 0)
    flagged = dict.fromkeys(names, 0)
    floored = dict.fromkeys(names, 0)
    refused = dict.fromkeys(names, 0)
    errors: dict[str, list[float]] = {name: [] for name in names}
    widths: dict[str, list[float]] = {name: [] for name in names}
    fixed = _panel_truths(np.zeros(cell.panel), cell.raters, share) if cell.leniency == 0 else None
    for _ in range(reps):
        data = _simulate(cell, gen)
        target = {**truth, **(fixed or _panel_truths(data.lenient, cell.raters, share))}
        for name, est in _estimates(data, cell, panel_scope=panel_scope).items():
            value = target[name]
            errors[name].append(est.estimate - value)
            if str(est.extra.get("interval", "")).startswith("none"):
                # Refused, with the reason on the line: neither a hit nor a miss.
                refused[name] += 1
                continue
            hits[name] += bool(est.covers(value))
            flagged[name] += est.extra.get("unreliable") is not None
            scope = str(est.extra.get("scope", ""))
            floored[name] += "raised to the floor" in scope or "not read as none" in scope
            widths[name].append(est.half_width)
    bias = {k: float(np.mean(v)) for k, v in errors.items()}
    bias_se = {k: float(np.std(v, ddof=1) / math.sqrt(len(v))) for k, v in errors.items()}
    given = {k: reps - refused[k] for k in names}
    return CoverageResult(
        cell=cell, reps=reps, coverage={k: v / given[k] if given[k] else _NAN for k, v in hits.items()}, bias=bias,
        bias_se=bias_se, half_width={k: float(np.nanmean(v)) if v else _NAN for k, v in widths.items()},
        unreliable={k: v / given[k] if given[k] else _NAN for k, v in flagged.items()},
        seconds=time.perf_counter() - started,
        floored={k: v / given[k] if given[k] else _NAN for k, v in floored.items()},
        refused={k: v / reps for k, v in refused.items()},
    )


def coverage_table(
    cells: Sequence[CoverageCell],
    reps: int,
    *,
    seed: int = 0,
    progress: Callable[[CoverageResult], None] | None = None,
    panel_scope: bool = False,
) -> tuple[pd.DataFrame, list[CoverageResult]]:
    """Run ``cells`` and lay the coverages out one row per cell, one column per interval.

    Args:
        cells: Situations to run.
        reps: Datasets per cell.
        seed: Seed (see :func:`run_cell`).
        progress: Called with each cell's result as it finishes.
        panel_scope: Also :data:`PANEL_INTERVALS` (see :func:`run_cell`).

    Returns:
        ``(table, results)``: coverages in percent, a ``worst bias/se`` column (the largest
        ``|bias| / MC se`` over the design-weighted estimates) and the cell's seconds.
    """
    results = []
    rows = []
    for cell in cells:
        res = run_cell(cell, reps, seed=seed, panel_scope=panel_scope)
        results.append(res)
        if progress is not None:
            progress(res)
        row: dict[str, Any] = {"cell": cell.label()}
        row |= {name: round(100 * value, 1) for name, value in res.coverage.items()}
        row["worst bias/se"] = round(max(abs(res.bias[k]) / res.bias_se[k] for k in _UNBIASED if res.bias_se[k] > 0), 2)
        row["seconds"] = round(res.seconds, 1)
        rows.append(row)
    return pd.DataFrame(rows), results
