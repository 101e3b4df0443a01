"""The pooled estimator of Spiliopoulou et al. (2025), "Play Favorites", arXiv:2508.06709.

One OLS over every judge's ratings: a separate intercept and human-score slope per judge, a
self-bias per judge, and a family-bias per *family*, shared by the family's judges
(``rating ~ judge + gt:judge + same_judge + same_family - 1`` in their R and Python code), with
HC1 (not task-clustered) standard errors. :func:`judgelab.calibration.panel.judge_bias` fits each judge
alone, so its family-bias is the judge's own; with ``shared_family=False`` the pooled model is
the same fit and returns the same self-bias coefficients (the tests check it), which is how the
two estimands differ and nothing else.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgelab.calibration.panel._ols import clustered_ols


def pooled_self_bias(frame: pd.DataFrame, *, shared_family: bool = True,
                     cluster: str | None = None) -> dict[str, dict[str, float]]:
    """Self- and family-bias coefficients of the paper's pooled regression.

    Args:
        frame: The panel table (:data:`judgelab.calibration.panel.COLUMNS`).
        shared_family: One family-bias per family, shared by its judges (the paper's model);
            ``False``: one per judge.
        cluster: Column to cluster the variance on; ``None``: HC1 (every row its own cluster).

    Returns:
        ``{"self": {judge: coef}, "family": {family or judge: coef}, "self_se": {...},
        "family_se": {...}}``.
    """
    data = frame[frame["score"].notna() & frame["human"].notna()].reset_index(drop=True)
    judge = data["judge"].astype(str).to_numpy()
    own = (data["answer_model"] == data["judge_model"]).to_numpy()
    sibling = ((data["answer_family"] == data["judge_family"]).to_numpy()) & ~own
    human = data["human"].to_numpy(dtype=float)
    cols, names = [], []
    for j in dict.fromkeys(judge):
        is_j = judge == j
        cols += [is_j.astype(float), is_j * human]
        names += [f"judge:{j}", f"human:{j}"]
        if (is_j & own).any():
            cols.append((is_j & own).astype(float))
            names.append(f"self:{j}")
        if not shared_family and (is_j & sibling).any():
            cols.append((is_j & sibling).astype(float))
            names.append(f"family:{j}")
    if shared_family:
        fams = data["judge_family"].astype(str).to_numpy()
        for f in dict.fromkeys(fams[sibling]):
            cols.append((sibling & (fams == f)).astype(float))
            names.append(f"family:{f}")
    clusters = np.arange(len(data)) if cluster is None else data[cluster].to_numpy()
    fit = clustered_ols(data["score"].to_numpy(dtype=float), np.column_stack(cols), clusters, names=tuple(names))
    out: dict[str, dict[str, float]] = {"self": {}, "family": {}, "self_se": {}, "family_se": {}}
    for name, coef in zip(fit.names, fit.coef, strict=True):
        kind, key = name.split(":", 1)
        if kind in ("self", "family"):
            out[kind][key] = float(coef)
            out[f"{kind}_se"][key] = fit.se(name)
    return out
