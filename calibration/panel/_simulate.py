"""Simulated panels with known effects: judges with a set self-bias, family-bias and leniency.

Each task has answers from every model of the panel's families; each answer has a true quality
and a human score (quality plus rater noise); each judge scores every answer as
``leniency + slope·quality + self_bias·[own model] + family_bias·[other model of its family] +
task effect + noise``. A shared task effect (the judge finds the whole task easy or hard) makes
answers of one task correlated, which is why the intervals cluster on tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgelab.calibration.stats import RngLike


@dataclass(frozen=True)
class SimJudge:
    """A simulated judge and the effects it carries.

    Attributes:
        model: The judge's model (an answering model too, unless not among ``models``).
        family: Its family.
        self_bias: Points it adds to its own model's answers.
        family_bias: Points it adds to other models of its family.
        leniency: Points it adds to every answer.
        slope: How many points it moves per point of true quality.
        noise: Standard deviation of its per-answer noise.
    """

    model: str
    family: str
    self_bias: float = 0.0
    family_bias: float = 0.0
    leniency: float = 0.0
    slope: float = 1.0
    noise: float = 1.0


def simulate_panel(
    judges: Sequence[SimJudge],
    models: dict[str, str],
    *,
    n_tasks: int,
    quality_sd: float = 1.0,
    family_quality: dict[str, float] | None = None,
    human_noise: float = 0.5,
    task_sd: float = 0.5,
    rng: RngLike = None,
) -> pd.DataFrame:
    """A panel's long table (:data:`judgelab.calibration.panel.COLUMNS`) on an unbounded score scale.

    Args:
        judges: The judges.
        models: Answering model -> its family; each task has one answer per model.
        n_tasks: Tasks.
        quality_sd: Spread of true quality between answers.
        family_quality: Mean true quality per family (a really better family: not a bias).
        human_noise: Spread of the human score around the true quality.
        task_sd: Spread of the judge's shared per-task effect.
        rng: Generator or seed.

    Returns:
        One row per (judge, answer).
    """
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    names = list(models)
    n_ans = n_tasks * len(names)
    task = np.repeat(np.arange(n_tasks), len(names))
    model = np.tile(np.array(names, dtype=object), n_tasks)
    family = np.array([models[m] for m in model], dtype=object)
    shift = np.array([(family_quality or {}).get(f, 0.0) for f in family])
    quality = shift + gen.normal(0.0, quality_sd, n_ans)
    human = quality + gen.normal(0.0, human_noise, n_ans)
    answer_id = np.array([f"t{t}-{m}" for t, m in zip(task, model, strict=True)], dtype=object)
    task_id = np.array([f"t{t}" for t in task], dtype=object)
    frames = []
    for j in judges:
        task_effect = gen.normal(0.0, task_sd, n_tasks)[task]
        own = model == j.model
        sibling = (family == j.family) & ~own
        score = (j.leniency + j.slope * quality + j.self_bias * own + j.family_bias * sibling + task_effect
                 + gen.normal(0.0, j.noise, n_ans))
        frames.append(pd.DataFrame({
            "judge": j.model, "judge_model": j.model, "judge_family": j.family, "answer_id": answer_id,
            "task_id": task_id, "answer_model": model, "answer_family": family, "score": score, "human": human,
        }))
    return pd.concat(frames, ignore_index=True)


def to_scale(frame: pd.DataFrame, scale: str, *, center: float = 3.0, step: float = 1.0) -> pd.DataFrame:
    """Rounds and clips a simulated panel's scores onto a rubric scale (for the store and kappa).

    ``likert5``: ``center + value·step`` rounded and clipped to 1-5; ``numeric100``: ``50 + 10·value``
    clipped to 0-100 (not rounded).
    """
    out = frame.copy()
    for col in ("score", "human"):
        v = out[col].to_numpy(dtype=float)
        out[col] = (np.clip(np.round(center + v * step), 1, 5) if scale == "likert5"
                    else np.clip(50 + 10 * v, 0, 100))
    return out


#: The coverage panel: answering models of three families, and what each judge is set to do.
COVERAGE_MODELS = {"gpt-4o": "gpt", "gpt-4o-mini": "gpt", "claude-3-opus": "claude", "claude-3-haiku": "claude",
                   "llama-3-70b": "llama"}
COVERAGE_JUDGES = (
    SimJudge("gpt-4o", "gpt", self_bias=0.5, family_bias=0.25, leniency=0.3),
    SimJudge("claude-3-opus", "claude", self_bias=0.3, family_bias=0.0, leniency=-0.2, slope=0.8),
    SimJudge("llama-3-70b", "llama", leniency=0.0, noise=1.5),
    SimJudge("mistral-large", "mistral", leniency=0.4),
)


def coverage_of_known_effects(*, reps: int, n_tasks: int, rng: RngLike = None,
                              level: float = 0.95) -> dict[str, float]:
    """How often the intervals cover the effects :data:`COVERAGE_JUDGES` were given.

    Each replicate simulates the panel and reads, per judge, its self-bias and family-bias
    (:func:`judgelab.calibration.panel.judge_bias`) and, for the judge outside the pool, its leniency (its
    mean residual: every answer gets the same push).

    Args:
        reps: Replicates.
        n_tasks: Tasks per replicate (5 answers each).
        rng: Generator or seed.
        level: Confidence level.

    Returns:
        ``{"<judge> self_bias": share covered, ...}``.
    """
    from judgelab.calibration.panel._ols import clustered_mean
    from judgelab.calibration.panel._stats import judge_bias

    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    hits: dict[str, int] = {}
    for _ in range(reps):
        frame = simulate_panel(COVERAGE_JUDGES, COVERAGE_MODELS, n_tasks=n_tasks, rng=gen)
        for j in COVERAGE_JUDGES:
            rows = frame[frame["judge"] == j.model]
            if j.model not in COVERAGE_MODELS:
                resid = rows["score"].to_numpy() - rows["human"].to_numpy()
                mean = clustered_mean(resid, rows["task_id"].to_numpy(), units="points", what="leniency", level=level)
                hits[f"{j.model} leniency"] = hits.get(f"{j.model} leniency", 0) + mean.covers(j.leniency)
                continue
            bias = judge_bias(rows, j.model, units="points", level=level)
            for name, est, truth in (("self_bias", bias.self_bias, j.self_bias),
                                     ("family_bias", bias.family_bias, j.family_bias)):
                if est is not None:
                    hits[f"{j.model} {name}"] = hits.get(f"{j.model} {name}", 0) + est.covers(truth)
    return {k: v / reps for k, v in hits.items()}
