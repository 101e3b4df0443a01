"""Simulated pools with a known truth, and the active design run on them (tests and the bench).

The model is the coverage suite's (:mod:`judgelab.calibration.stats._coverage`) with the judge's and the
humans' noise scaled to a chosen **agreement** (the share of answers whose human pass verdict
equals the judge's) and one human label per answer:

* task difficulty ``u ~ N(0, 0.6²)``; answer quality ``q = μ_f + u + e``, ``e ~ N(0, 0.7²)``,
  ``μ = 3.3`` for the judge's own family and ``3.1`` for the other;
* the judge's reading is ``q + b_f + s·(v + η)``, ``b = +0.15`` on its own family (the
  self-preference to find), ``v ~ N(0, 0.4²)`` shared by a task's answers, ``η ~ N(0, 0.5²)``; it
  scores it on a 1-5 scale (``round``, clipped: the coverage suite's judge) or on a 0-100 scale
  (``judge_scale="numeric100"``: ``25·(reading − 1)`` rounded and clipped, passing from 63), which
  keeps how close to the threshold the reading was;
* a human scores ``round(q + s·ε)`` clipped, ``ε ~ N(0, 0.6²)``; pass is a score of 4 or more;
* ``s`` is solved so that the agreement is the chosen one.

A second data model (``unrelated``, the share of answers the judge reads without regard to their
quality): on that share the judge's reading is drawn afresh from its own distribution
(``N(μ_f + b_f, sd_q² + sd_judge²)``), independent of the answer, so its errors are not where its
score sits next to the pass threshold but anywhere. The judge's pass rates, and so the truths, are
those of the first model; ``s`` is solved for the agreement with that share in place. Active and
stratified designs save labels by drawing where the judge's score says it is in doubt; on this
model the score says less, and ``bench/active_economy.py --unrelated 0.25`` measures how much less.

The truths are for the model (a fresh pool is drawn every time), in closed form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import optimize
from scipy.special import ndtr

from judgelab.calibration.active._estimate import (
    DEFAULT_MARGIN,
    LastLook,
    estimand_coefficients,
    look_statistics,
    repeated_intervals,
)
from judgelab.calibration.active._plan import (
    DEFAULT_FLOOR,
    ActivePool,
    BatchPlan,
    SavingForecast,
    batch_floor,
    expected_population_variance,
    labels_still_needed,
    next_batch_size,
    next_batch_variance,
    plan_batch,
    planned_labels,
    predicted_saving,
    stack_draws,
)
from judgelab.calibration.active._spending import Spending
from judgelab.calibration.stats._bootstrap import RngLike, as_rng
from judgelab.calibration.stats._coverage import _expected_score

__all__ = ["LLMBAR_REREADING", "ActiveRun", "PoolModel", "SimulatedPool", "pool_model", "run_active", "simulate_pool"]

_SD_TASK, _SD_ANSWER = 0.6, 0.7
_SD_JUDGE_TASK, _SD_JUDGE, _SD_HUMAN = 0.4, 0.5, 0.6
_MU = (3.3, 3.1)
_PASS = 3.5
FAMILIES = ("own", "other")
#: ``rereading`` of :func:`simulate_pool` whose judge disagrees with itself as LLMBar's judges do
#: (Zeng et al., ICLR 2024; their two-order verdicts in ``tests/data/llmbar``): a second reading
#: draws all of the judge's noise afresh. Scored against the noiseless verdict (LLMBar's gold), the
#: judge at 85% agreement with people is right on 88.6% of answers, flips on 15.2% and has 67% of
#: its errors on them (PaLM 2 on LLMBar Natural: 84.7% right, flips on 20.4% of pairs, 67% of its
#: errors on them); at 95% it is right on 95.5%, flips on 3.6%, 40% of its errors on them (GPT-4:
#: 95.5%, 5.0%, 56%). Any smaller share flips less than those judges (``bench/active_economy.py``
#: prints both).
LLMBAR_REREADING = 1.0


@dataclass(frozen=True)
class PoolModel:
    """A simulated population of answers.

    Attributes:
        agreement: Share of answers whose human pass verdict equals the judge's.
        noise: ``s``, the factor on the judge's and the humans' noise that gives it.
        own_bias: ``b``: the judge's extra generosity to its own family, in scale points.
        unrelated: Share of answers whose reading is unrelated to their quality (module docstring).
    """

    agreement: float
    noise: float
    own_bias: float
    unrelated: float = 0.0

    @property
    def sd_judge(self) -> float:
        """Sd of the judge's noise around the quality."""
        return self.noise * math.hypot(_SD_JUDGE_TASK, _SD_JUDGE)

    @property
    def sd_human(self) -> float:
        """Sd of a human's noise around the quality."""
        return self.noise * _SD_HUMAN

    def truths(self) -> dict[str, float]:
        """Residuals and gaps (pass: percentage points; score: scale points) of the population."""
        sd_q = math.hypot(_SD_TASK, _SD_ANSWER)
        sd_j, sd_h = math.hypot(sd_q, self.sd_judge), math.hypot(sd_q, self.sd_human)
        out: dict[str, float] = {}
        for f, name in enumerate(FAMILIES):
            bias = self.own_bias if f == 0 else 0.0
            out[f"residual {name} (pass)"] = 100 * float(ndtr((_MU[f] + bias - _PASS) / sd_j)
                                                          - ndtr((_MU[f] - _PASS) / sd_h))
            out[f"residual {name} (score)"] = _expected_score(_MU[f] + bias, sd_j) - _expected_score(_MU[f], sd_h)
        out["gap (pass)"] = out["residual own (pass)"] - out["residual other (pass)"]
        out["gap (score)"] = out["residual own (score)"] - out["residual other (score)"]
        return out


def _agreement(noise: float, own_bias: float, unrelated: float = 0.0) -> float:
    # A fine grid, not Gauss-Hermite: with little noise the verdicts are steps in the quality.
    nodes = np.linspace(-9, 9, 20001)
    weights = np.exp(-0.5 * nodes**2)
    weights = weights / weights.sum()
    sd_q = math.hypot(_SD_TASK, _SD_ANSWER)
    sd_j = max(noise * math.hypot(_SD_JUDGE_TASK, _SD_JUDGE), 1e-9)
    sd_h = max(noise * _SD_HUMAN, 1e-9)
    total = 0.0
    for f in range(2):
        q = _MU[f] + sd_q * nodes
        bias = own_bias if f == 0 else 0.0
        pj = ndtr((q + bias - _PASS) / sd_j)
        ph = ndtr((q - _PASS) / sd_h)
        related = float(weights @ (pj * ph + (1 - pj) * (1 - ph)))
        # An unrelated reading passes at the judge's own rate, independently of the person.
        pj_all = float(ndtr((_MU[f] + bias - _PASS) / math.hypot(sd_q, sd_j)))
        ph_all = float(weights @ ph)
        total += 0.5 * ((1 - unrelated) * related + unrelated * (pj_all * ph_all + (1 - pj_all) * (1 - ph_all)))
    return total


def pool_model(agreement: float, *, own_bias: float = 0.15, unrelated: float = 0.0) -> PoolModel:
    """The model whose judge agrees with humans on ``agreement`` of the answers.

    ``unrelated``: the share of answers the judge reads without regard to their quality (the
    second data model of the module docstring).

    Raises:
        ValueError: If the bias (and the unrelated readings) alone already disagree more often
            than asked.

    Examples:
        >>> m = pool_model(0.85)
        >>> round(m.noise, 2), round(m.truths()["gap (pass)"], 1)
        (0.53, 6.0)
    """
    if not 0 <= unrelated < 1:
        raise ValueError(f"pool_model: unrelated must be in [0, 1); got {unrelated}")
    top = _agreement(1e-6, own_bias, unrelated)
    if not 0.5 < agreement < top:
        raise ValueError(f"pool_model: agreement must be in (0.5, {top:.3f}) with own_bias {own_bias} and "
                         f"unrelated {unrelated}")
    noise = optimize.brentq(lambda s: _agreement(s, own_bias, unrelated) - agreement, 1e-6, 20.0, xtol=1e-10)
    return PoolModel(agreement=agreement, noise=noise, own_bias=own_bias, unrelated=unrelated)


@dataclass(frozen=True)
class SimulatedPool:
    """A pool and the human labels it would get (hidden until drawn).

    Attributes:
        pool: What the design sees.
        human_pass: A person's pass verdict (0/1) per answer.
        human_score: That person's score (1-5).
        quality: The answer's true quality ``q`` (a person without noise passes it from 3.5): the
            gold label that published judge benchmarks such as LLMBar score judges against.
    """

    pool: ActivePool
    human_pass: npt.NDArray[np.float64]
    human_score: npt.NDArray[np.float64]
    quality: npt.NDArray[np.float64]

    def frame(self) -> pd.DataFrame:
        """One row per answer, as :func:`judgelab.calibration.design.design_sample` takes a pool."""
        p = self.pool
        return pd.DataFrame({
            "answer_id": p.answer_id, "task_id": p.task_id[p.task], "family": p.family,
            "judge_score": p.judge_score, "judge_pass": p.judge_pass, "truth": self.human_pass,
            "truth_score": self.human_score,
        })


def simulate_pool(
    model: PoolModel,
    n_tasks: int,
    rng: RngLike = None,
    *,
    paired: bool = False,
    judge_scale: Literal["likert5", "numeric100"] = "likert5",
    rereading: float = 0.0,
) -> SimulatedPool:
    """Draw a pool of ``n_tasks`` tasks, one answer per family each (sampled by answer, or by task).

    On the ``numeric100`` judge scale the judge's and the humans' scores are not comparable, so
    ``judge_score`` is the judge's 0-100 score and the score residual is not simulated.

    ``rereading`` is the share of the judge's noise variance that a second reading of the answer
    (the other order or format, as judgelab's probes ask) draws afresh: the answer is ``flipped``
    when the two readings' pass verdicts differ. The first reading, which gives the score, keeps
    its distribution, so the agreement and the truths do not change. 0 (the default): a judge
    that never disagrees with itself, and the same draws as before the option existed.
    :data:`LLMBAR_REREADING` is the share that comes closest to the judges of LLMBar.

    Examples:
        >>> sim = simulate_pool(pool_model(0.85), 20000, 1, rereading=LLMBAR_REREADING)
        >>> round(float(sim.pool.flipped.mean()), 2), round(float((sim.pool.judge_pass == sim.human_pass).mean()), 2)
        (0.15, 0.85)
    """
    if not 0 <= rereading <= 1:
        raise ValueError(f"simulate_pool: rereading must be in [0, 1]; got {rereading}")
    gen = as_rng(rng)
    task = np.repeat(np.arange(n_tasks), 2)
    fam = np.tile([0, 1], n_tasks)
    s = model.noise
    q = np.asarray(_MU)[fam] + gen.normal(0, _SD_TASK, n_tasks)[task] + gen.normal(0, _SD_ANSWER, task.size)
    bias = np.where(fam == 0, model.own_bias, 0.0)

    def judge_noise() -> npt.NDArray[np.float64]:
        return np.asarray(gen.normal(0, _SD_JUDGE_TASK, n_tasks)[task] + gen.normal(0, _SD_JUDGE, task.size))

    noise = judge_noise()
    readings = [q + bias + s * noise]
    if rereading > 0:
        # Each reading's noise has today's task-shared and per-answer parts, so the pairing of a
        # task's answers (and simple random sampling of tasks) is as before.
        stable = math.sqrt(1 - rereading) * noise
        readings = [q + bias + s * (stable + math.sqrt(rereading) * judge_noise()) for _ in range(2)]
    if model.unrelated > 0:
        # Drawn after the first model's draws, so unrelated=0 keeps them. The unrelated reading
        # has the reading's own distribution and ignores the answer (both readings alike).
        off = gen.random(task.size) < model.unrelated
        sd = math.hypot(math.hypot(_SD_TASK, _SD_ANSWER), model.sd_judge)
        fresh = np.asarray(_MU)[fam] + bias + gen.normal(0, sd, task.size)
        readings = [np.where(off, fresh, r) for r in readings]
    judge, passed = _score_reading(readings[0], judge_scale)
    flipped = passed != _score_reading(readings[1], judge_scale)[1] if rereading > 0 else np.zeros(task.size, bool)
    human = np.clip(np.round(q + s * gen.normal(0, _SD_HUMAN, task.size)), 1, 5)
    width = len(str(n_tasks))
    ids = np.array([f"t{t:0{width}d}-{FAMILIES[f]}" for t, f in zip(task, fam, strict=True)])
    pool = ActivePool(
        answer_id=ids, unit=task.astype(np.intp) if paired else np.arange(task.size, dtype=np.intp),
        task=task.astype(np.intp), task_id=np.array([f"t{t:0{width}d}" for t in range(n_tasks)]),
        family=np.asarray(FAMILIES)[fam], judge_pass=passed.astype(float), judge_score=judge,
        flipped=flipped,
    )
    return SimulatedPool(pool=pool, human_pass=(human >= 4).astype(float), human_score=human, quality=q)


def _score_reading(
    reading: npt.NDArray[np.float64], scale: Literal["likert5", "numeric100"]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """The judge's score of a reading on its scale, and its pass verdict."""
    if scale == "numeric100":
        judge = np.clip(np.round(25 * (reading - 1)), 0, 100)
        return judge, judge >= 63  # 25 · (3.5 − 1) = 62.5: the same threshold as 4 on the 1-5 scale
    judge = np.clip(np.round(reading), 1, 5)
    return judge, judge >= 4


@dataclass(frozen=True)
class ActiveRun:
    """One run of the active design with the stopping rule.

    Attributes:
        looks: One row per look: ``look``, ``labels``, ``estimate``, ``half_width``, ``ci_low``,
            ``ci_high``, ``critical``, ``reached``, ``batch_size``, ``fell_back`` (the batch was drawn
            by simple random sampling because the labels before it showed no saving:
            :func:`judgelab.calibration.active.batch_floor`).
        stopped: Whether the target was met (else the budget or the pool ran out).
        score_gap: ``(estimate, ci_low, ci_high)`` of the gap on the score scale at the last look.
        forecasts: The plan's predicted saving (:func:`judgelab.calibration.active.predicted_saving`) after
            each of the first ``forecast_looks`` looks (the pilot first).
    """

    looks: pd.DataFrame
    stopped: bool
    score_gap: tuple[float, float, float]
    forecasts: tuple[SavingForecast, ...] = ()

    @property
    def labels(self) -> int:
        """Answers labelled when the run stopped."""
        return int(self.looks["labels"].iloc[-1])

    def final(self) -> dict[str, Any]:
        """The last look as a dict."""
        return dict(self.looks.iloc[-1])


def run_active(
    sim: SimulatedPool,
    *,
    target_half_width: float,
    rng: RngLike = None,
    batch_size: int | None = None,
    aim: float = 1.0,
    floor: float = DEFAULT_FLOOR,
    disagreement: float = 0.2,
    prior_labels: float = 5.0,
    max_labels: int | None = None,
    level: float = 0.95,
    spending: Spending = "obf",
    margin: float = DEFAULT_MARGIN,
    last_look: LastLook = "target",
    forecast_looks: int = 0,
) -> ActiveRun:
    """Label ``sim`` in batches until the gap's repeated interval meets the target.

    Each batch is planned from the labels so far (:func:`plan_batch`, with the floor the store's gate
    gives it, :func:`judgelab.calibration.active.batch_floor`: 1 when they show no saving), drawn, and its labels
    revealed; batches are sized as the store sizes them (:func:`next_batch_size`: a pilot, then what
    the current rate says the next look needs to meet ``aim`` times the target, at most doubling
    the labels so far), or ``batch_size`` each, within ``max_labels``. A run ends at
    the first look that meets the target, or at one that spends the plan's alpha without meeting
    it (no later look would have an interval: the store's "plan spent"), or when the labels run out.
    After each of the first ``forecast_looks`` looks the plan predicts its saving from the labels
    it has (:func:`judgelab.calibration.active.predicted_saving`), as a team would read it before going on.

    Returns:
        The :class:`ActiveRun`.
    """
    gen = as_rng(rng)
    pool = sim.pool
    h = np.full(pool.answer_id.size, np.nan)
    hs = np.full(pool.answer_id.size, np.nan)
    own = FAMILIES[0]
    plan_kw: dict[str, Any] = {"own_family": own, "floor": floor, "disagreement": disagreement,
                               "prior_labels": prior_labels}
    planned = planned_labels(pool, target_half_width=target_half_width, human_pass=h, level=level,
                             **plan_kw)
    capacity = pool.answer_id.size if max_labels is None else min(max_labels, pool.answer_id.size)
    size = float(min(batch_size or next_batch_size(0, needed=planned, left=capacity), capacity))
    coef = estimand_coefficients(pool.family, own_family=own)
    plans: list[BatchPlan] = []
    drawn: list[npt.NDArray[np.bool_]] = []
    rows = []
    forecasts: list[SavingForecast] = []
    stopped = False
    while True:
        # The store's gate, not a copy: a batch falls back to simple random sampling when the labels
        # so far show no link between the judge's score and its errors, or the newest forecast made
        # here (the first ``forecast_looks`` looks) expects no saving.
        gate = batch_floor(pool, human_pass=h, floor=floor, disagreement=disagreement, prior_labels=prior_labels,
                           forecast=forecasts[-1] if forecasts else None)
        plan = plan_batch(pool, size=size, human_pass=h, human_score=hs, **{**plan_kw, "floor": gate.floor})
        xi = gen.random(pool.n_units) < plan.prob
        plans.append(plan)
        drawn.append(xi)
        reveal = xi[pool.unit]
        h[reveal], hs[reveal] = sim.human_pass[reveal], sim.human_score[reveal]
        draws = stack_draws(pool, plans, drawn)
        stats = look_statistics(draws, h, coef)
        rci = repeated_intervals(stats.estimate, stats.variance, target_half_width=target_half_width, level=level,
                                 spending=spending, margin=margin, df=stats.df, last_look=last_look)
        rows.append({"look": len(plans), "labels": int(stats.labels[-1]), "estimate": stats.estimate[-1],
                     "half_width": rci.half_width[-1], "ci_low": rci.ci_low[-1], "ci_high": rci.ci_high[-1],
                     "critical": rci.critical[-1], "batch_size": size,
                     "fell_back": gate.fell_back})
        if len(plans) <= forecast_looks:
            forecasts.append(predicted_saving(pool, target_half_width=target_half_width, human_pass=h, level=level,
                                              draws=draws, design_variance=float(stats.design[-1]), **plan_kw))
        if rci.half_width[-1] <= target_half_width:
            stopped = True
            break
        if rci.tau[-1] >= 1:
            # The plan's alpha is spent: no later look has an interval, so more labels cannot meet
            # the target. The store stops here too ("plan spent"); labelling on would draw the
            # whole pool (labels_still_needed is infinite) for an interval nobody may read.
            break
        left = capacity - int(stats.labels[-1])
        if left <= 0 or pool.known_units(h).all():
            break
        future = next_batch_variance(pool, human_pass=h, **plan_kw)
        population = expected_population_variance(pool, human_pass=h, own_family=own, disagreement=disagreement,
                                                  prior_labels=prior_labels)
        needed = labels_still_needed(stats, target_half_width=target_half_width, capacity=left, aim=aim, level=level,
                                     spending=spending, margin=margin, next_variance=future, last_look=last_look,
                                     weight_total=float(draws.weight.sum()), population=population)
        size = float(min(batch_size or next_batch_size(int(stats.labels[-1]), needed=needed, left=left), left))
    score_stats = look_statistics(draws, hs, coef, scale="score")
    score_rci = repeated_intervals(score_stats.estimate, score_stats.variance, target_half_width=target_half_width,
                                   level=level, critical=rci.boundary, df=score_stats.df, last_look=last_look)
    looks = pd.DataFrame(rows)
    looks["reached"] = looks["half_width"] <= target_half_width
    score = (float(score_stats.estimate[-1]), float(score_rci.ci_low[-1]), float(score_rci.ci_high[-1]))
    return ActiveRun(looks=looks, stopped=stopped, score_gap=score, forecasts=tuple(forecasts))
