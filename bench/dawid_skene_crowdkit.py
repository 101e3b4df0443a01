"""judgelab's Dawid-Skene EM against crowd-kit's on the same labels: likelihood reached, posteriors.

Run: ``python bench/dawid_skene_crowdkit.py`` in an environment with ``crowd-kit`` installed
(``pip install crowd-kit``; it is not a judgelab dependency: it pulls ``transformers`` and
``nltk``). ``--reps N`` datasets per panel (default 5).

Two panels, three raters per answer:

* ``binary``: :func:`judgelab.calibration.stats.simulate_raters`'s pass/fail panel (one careful rater, two
  lenient, one harsh, one careless), 80 tasks (160 answers);
* ``likert5``: 150 answers with a uniform true level 1-5, four raters right 70% of the time (else
  one level off), one random rater (uniform 1-5) and one who always says 3.

Each dataset is fitted four ways: crowd-kit ``DawidSkene`` as shipped (``n_iter=100, tol=1e-5``
on its per-label evidence lower bound) and run long (``n_iter=5000, tol=1e-12``); judgelab's
:func:`judgelab.calibration.stats.dawid_skene` without a pseudo-count (plain maximum likelihood, as
crowd-kit) and with its default pseudo-count 0.01. Both start from the raters' vote shares and
use one prior for all answers. The log-likelihood of the labels is computed by judgelab's one
formula at each fit's own priors and confusions. Printed per panel: the mean log-likelihood per
label reached, the largest gap below the best fit, and the largest absolute difference of any
posterior probability from judgelab's maximum-likelihood fit (and of the posterior modes).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

# Run from a checkout without installing: the repository root holds the packages.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judgelab.calibration.stats import dawid_skene, simulate_raters
from judgelab.calibration.stats._dawid_skene import _codes, _e_step, _Labels


def likert_panel(seed: int, n: int = 150) -> pd.DataFrame:
    """``task, worker, label``: four 70%-right raters, a random one and an always-3 one, three per answer."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, n)
    names = ["g1", "g2", "g3", "g4", "random", "always3"]
    rows = []
    for i in range(n):
        for r in rng.choice(len(names), 3, replace=False):
            if names[r] == "random":
                label = int(rng.integers(1, 6))
            elif names[r] == "always3":
                label = 3
            else:
                off = 0 if rng.random() < 0.7 else int(rng.choice([-1, 1]))
                label = int(np.clip(truth[i] + off, 1, 5))
            rows.append((f"a{i:04d}", names[r], label))
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def binary_panel(seed: int) -> pd.DataFrame:
    """``task, worker, label`` of :func:`simulate_raters` (80 tasks, two answers each)."""
    sim = simulate_raters(n_tasks=80, seed=seed)
    return sim.labels.rename(columns={"answer_id": "task", "rater_id": "worker", "score": "label"})


def log_likelihood(df: pd.DataFrame, priors: np.ndarray, confusion: np.ndarray,
                   tasks: np.ndarray, workers: np.ndarray, cats: np.ndarray) -> float:
    """The labels' log-likelihood at ``priors`` (K,) and ``confusion`` (workers, K, K), judgelab's formula."""
    _, i_idx = _codes("bench", "task", df["task"].to_numpy())
    _, r_idx = _codes("bench", "worker", df["worker"].to_numpy())
    l_idx = np.searchsorted(cats, df["label"].to_numpy(dtype=float))
    data = _Labels(i_idx, r_idx, l_idx, len(tasks), len(workers), cats.size, np.zeros(len(tasks), np.intp), 1)
    return _e_step(data, priors[None, :], confusion)[1]


def crowdkit_fit(df: pd.DataFrame, n_iter: int, tol: float, tasks: np.ndarray, workers: np.ndarray,
                 cats: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """crowd-kit's posteriors (tasks x K), priors, confusions (workers, true, label) and iterations."""
    from crowdkit.aggregation import DawidSkene

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its pandas FutureWarnings, on every fit
        ds = DawidSkene(n_iter=n_iter, tol=tol).fit(df)
    probas = ds.probas_.reindex(index=tasks, columns=cats).fillna(0.0).to_numpy()
    priors = ds.priors_.reindex(cats).fillna(0.0).to_numpy()
    confusion = np.zeros((len(workers), cats.size, cats.size))
    errors = ds.errors_  # index (worker, label given), columns: the true label; P(label | true)
    w_pos = {w: j for j, w in enumerate(workers)}
    c_pos = {c: j for j, c in enumerate(cats)}
    for (worker, label), row in errors.iterrows():
        for true, p in row.items():
            confusion[w_pos[str(worker)], c_pos[float(true)], c_pos[float(label)]] = p
    return probas, priors, confusion, len(ds.loss_history_)


def one(df: pd.DataFrame) -> dict[str, dict[str, float]]:
    """The four fits of one dataset: log-likelihood per label, posterior gap to judgelab's ML fit, seconds."""
    tasks = np.unique(df["task"].astype(str).to_numpy())
    workers = np.unique(df["worker"].astype(str).to_numpy())
    cats = np.unique(df["label"].to_numpy(dtype=float))
    df = df.assign(task=df["task"].astype(str), worker=df["worker"].astype(str), label=df["label"].astype(float))
    out: dict[str, dict[str, float]] = {}
    fits: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for name, smoothing in (("judgelab ML", 0.0), ("judgelab 0.01", 0.01)):
        t = time.perf_counter()
        m = dawid_skene(df["task"], df["worker"], df["label"], categories=cats, smoothing=smoothing,
                        max_iter=5000, tol=1e-12)
        secs = time.perf_counter() - t
        fits[name] = (m.posterior, m.priors, m.confusion)
        out[name] = {"iterations": m.iterations, "seconds": secs}
    for name, n_iter, tol in (("crowd-kit default", 100, 1e-5), ("crowd-kit long", 5000, 1e-12)):
        t = time.perf_counter()
        probas, priors, confusion, iters = crowdkit_fit(df, n_iter, tol, tasks, workers, cats)
        out[name] = {"iterations": iters, "seconds": time.perf_counter() - t}
        fits[name] = (probas, priors, confusion)
    ref_post = fits["judgelab ML"][0]
    for name, (post, priors, confusion) in fits.items():
        out[name]["loglik per label"] = log_likelihood(df, priors, confusion, tasks, workers, cats) / len(df)
        out[name]["max |posterior diff|"] = float(np.abs(post - ref_post).max())
        out[name]["modes differ"] = float((post.argmax(axis=1) != ref_post.argmax(axis=1)).sum())
    return out


def main(argv: list[str] | None = None) -> None:
    """Print one table per panel."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    try:
        import crowdkit  # noqa: F401  (only to say it is missing)
    except ImportError:
        sys.exit("crowd-kit is not installed here: `pip install crowd-kit` in a separate environment, then rerun.")
    pd.set_option("display.width", 200)
    for panel, make in (("binary", binary_panel), ("likert5", likert_panel)):
        rows = []
        for rep in range(args.reps):
            for name, fig in one(make(rep)).items():
                rows.append({"panel": panel, "seed": rep, "fit": name, **fig})
        table = pd.DataFrame(rows)
        best = table.groupby("seed")["loglik per label"].transform("max")
        table["below best"] = best - table["loglik per label"]
        summary = table.groupby("fit", sort=False).agg(
            loglik_per_label=("loglik per label", "mean"), max_below_best=("below best", "max"),
            max_posterior_diff=("max |posterior diff|", "max"), modes_differ=("modes differ", "sum"),
            iterations=("iterations", "mean"), seconds=("seconds", "mean"))
        print(f"\n{panel}: {args.reps} datasets, {len(make(0))} labels each; posterior differences against "
              "judgelab's maximum-likelihood fit")
        print(summary.to_string(float_format=lambda x: f"{x:.6g}"))


if __name__ == "__main__":
    main()
