"""Strata: the bins answers are stratified by, the sampling units, and each stratum's variance terms.

Pure functions over a pool DataFrame; see :mod:`judgelab.calibration.design` for the plan they serve.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from judgelab.calibration.design._model import (
    STRATIFIERS,
    UNCATEGORISED,
    UNJUDGED,
    Allocation,
    PlanningModel,
    Stratifier,
)
from judgelab.labeler.errors import InputError

__all__ = ["Strata", "build_strata", "stratify_pool"]

# -- the pool's bins -------------------------------------------------------------------------------


def stratify_pool(
    pool: pd.DataFrame,
    *,
    judge_bins: int = 2,
    length_bins: int = 3,
) -> pd.DataFrame:
    """Add the ``judge_bin`` and ``length_bin`` columns answers are stratified by.

    Args:
        pool: One row per answer with ``answer_id``, ``task_id`` and ``family``; optional
            ``category``, ``n_words``, ``judge_score`` (the judge's score on its scale),
            ``judge_pass`` (its pass verdict, 0/1) and ``human_pass`` (pilot labels).
        judge_bins: 2 bins the judge's pass verdict (``pass`` / ``fail``); more cut the judge's
            score at its quantiles (ties kept together, so fewer bins may result). Answers the
            judge has not scored fall in the bin ``unjudged``.
        length_bins: Number of length bins (quantiles of ``n_words`` over the pool).

    Returns:
        A copy of ``pool`` with ``category`` filled (``uncategorised``), ``judge_bin`` and
        ``length_bin`` as strings.

    Raises:
        InputError: If a required column is missing, ids repeat, or the pool is empty.
    """
    missing = {"answer_id", "task_id", "family"} - set(pool.columns)
    if missing:
        raise InputError(
            f"the pool lacks column(s) {sorted(missing)}",
            fix="pass one row per answer with answer_id, task_id and family.",
        )
    if pool.empty:
        raise InputError(
            "the pool has no answers to sample from",
            fix="import answers first with `judgelab import answers FILE`.",
        )
    if pool["answer_id"].duplicated().any():
        raise InputError("the pool repeats answer ids", column="answer_id",
                         fix="pass one row per answer.")
    if judge_bins < 2 or length_bins < 1:
        raise InputError(
            f"judge_bins must be at least 2 and length_bins at least 1; got {judge_bins}, "
            f"{length_bins}",
            fix="use judge_bins=2 for pass/fail.",
        )
    out = pool.copy().reset_index(drop=True)
    for col in ("judge_score", "judge_pass", "human_pass"):
        if col not in out.columns:
            out[col] = np.nan
        out[col] = pd.to_numeric(out[col], errors="coerce").astype(float)
    if "category" not in out.columns:
        out["category"] = UNCATEGORISED
    out["category"] = out["category"].astype(object).where(out["category"].notna(), UNCATEGORISED)
    out["category"] = out["category"].astype(str)
    out["family"] = out["family"].astype(str)
    out["task_id"] = out["task_id"].astype(str)
    out["answer_id"] = out["answer_id"].astype(str)
    out["judge_bin"] = _judge_bin(out, judge_bins)
    out["length_bin"] = _length_bin(out, length_bins)
    return out


def _judge_bin(pool: pd.DataFrame, bins: int) -> pd.Series:
    label = pd.Series(UNJUDGED, index=pool.index, dtype=object)
    verdict = pool["judge_pass"]
    score = pool["judge_score"]
    if bins == 2 and verdict.notna().any():
        label[verdict == 1] = "pass"
        label[verdict == 0] = "fail"
        return label
    if score.notna().any():
        known = score.dropna()
        cuts = np.unique(np.quantile(known, np.linspace(0, 1, bins + 1)))
        if len(cuts) < 2:
            label[score.notna()] = f"score {cuts[0]:g}"
            return label
        # Cut points sit on observed scores; intervals are (lo, hi] except the first. A bin is
        # named by the scores it actually holds (a bin (3, 4] of whole scores holds only 4, so it
        # is "score 4", not "score 3–4").
        values = known.to_numpy()
        codes = np.searchsorted(cuts[1:-1], values, side="left")
        names = {}
        for c in np.unique(codes):
            inside = values[codes == c]
            lo, hi = float(inside.min()), float(inside.max())
            names[c] = f"score {lo:g}" if lo == hi else f"score {lo:g}–{hi:g}"
        label.loc[known.index] = np.asarray([names[c] for c in codes], dtype=object)
    return label


def _length_bin(pool: pd.DataFrame, bins: int) -> pd.Series:
    if "n_words" not in pool.columns or pool["n_words"].isna().all() or bins == 1:
        return pd.Series("any length", index=pool.index, dtype=object)
    words = pd.to_numeric(pool["n_words"], errors="coerce").fillna(0)
    cuts = np.unique(np.quantile(words, np.linspace(0, 1, bins + 1)))
    if len(cuts) < 2:
        return pd.Series("any length", index=pool.index, dtype=object)
    codes = np.searchsorted(cuts[1:-1], words.to_numpy(), side="left")
    names = [
        f"≤{cuts[1]:.0f} words" if i == 0 else f"{cuts[i]:.0f}–{cuts[i + 1]:.0f} words"
        for i in range(len(cuts) - 1)
    ]
    return pd.Series([names[c] for c in codes], index=pool.index, dtype=object)


# -- strata and their variance terms ---------------------------------------------------------------


@dataclass(frozen=True)
class Strata:
    """Per-stratum quantities the allocation and the precision need."""

    table: pd.DataFrame            # stratum, N_units, N_answers, m (labels per unit)
    unit_of: pd.Series             # answer_id -> unit id
    stratum_of_unit: pd.Series     # unit id -> stratum
    gap_coef: npt.NDArray[np.float64]
    total_coef: npt.NDArray[np.float64]
    family_coef: dict[str, npt.NDArray[np.float64]]
    family_share: npt.NDArray[np.float64] | None
    unit_sd: npt.NDArray[np.float64]  # sd of a unit's gap contribution (paired) or residual


@dataclass
class _FamilyTerms:
    """Per family, one entry per stratum (filled in place by :func:`_family_terms`).

    ``sd``: residual sd of the family's mean answer in a unit (``nan`` where the family is
    absent); ``weight``: the stratum's share of the family's units; ``per_unit``: the family's
    answers per unit of the stratum; ``coef``: ``(weight · sd)²``, the family's variance term.
    """

    sd: dict[str, npt.NDArray[np.float64]]
    weight: dict[str, npt.NDArray[np.float64]]
    per_unit: dict[str, npt.NDArray[np.float64]]
    coef: dict[str, npt.NDArray[np.float64]]

    def present(self, families: Sequence[str], i: int) -> list[str]:
        """The families with answers in stratum ``i``."""
        return [f for f in families if not math.isnan(self.sd[f][i])]


def build_strata(
    frame: pd.DataFrame,
    strata: Sequence[Stratifier],
    *,
    paired: bool,
    own: str,
    families: Sequence[str],
    allocation: Allocation,
    model: PlanningModel,
    min_pilot: int,
) -> Strata:
    """The sampling units of a stratified pool, their strata, and each stratum's variance terms.

    Args:
        frame: A pool from :func:`stratify_pool`.
        strata: The stratifiers in use.
        paired: Tasks are the sampling units (else answers).
        own: The judge's family (the gap's first term).
        families: Every family of the pool, sorted.
        allocation: The allocation (unpaired ``equal`` and ``gap`` always stratify by family).
        model: The planning model.
        min_pilot: Pilot labels a family needs in a stratum before its sd replaces the model's.
    """
    if paired:
        unit_of, stratum_of_unit = _paired_units(frame, strata, own, families)
    else:
        unit_of, stratum_of_unit = _unpaired_units(frame, strata, allocation)
    frame = frame.assign(_unit=frame["answer_id"].map(unit_of))
    frame["_stratum"] = frame["_unit"].map(stratum_of_unit)
    names = sorted(frame["_stratum"].unique())
    table = _stratum_table(frame, names)
    # Units per family: tasks containing the family (paired) or the family's answers.
    fam_units = frame.groupby("family")["_unit"].nunique()
    terms = _family_terms(frame, table, families, fam_units, model, min_pilot)
    gap_coef, unit_sd = _gap_terms(terms, families, own, model.rho, paired=paired)
    family_share = None
    if not paired:
        fam_of_stratum = frame.groupby("_stratum")["family"].first().reindex(names)
        family_share = (
            table["N_units"].to_numpy(float) / fam_of_stratum.map(fam_units).to_numpy(float)
        )
    return Strata(
        table=table,
        unit_of=unit_of,
        stratum_of_unit=stratum_of_unit,
        gap_coef=gap_coef,
        total_coef=_total_coef(table, terms, families, model.rho),
        family_coef=terms.coef,
        family_share=family_share,
        unit_sd=unit_sd,
    )


def _paired_units(
    frame: pd.DataFrame, strata: Sequence[Stratifier], own: str, families: Sequence[str]
) -> tuple[pd.Series, pd.Series]:
    """Tasks as units, stratified by category and the profile of their answers' bins.

    Returns:
        ``(answer_id -> task, task -> stratum)``.
    """
    unit_of = pd.Series(frame["task_id"].to_numpy(), index=frame["answer_id"])
    order = [own, *[f for f in families if f != own]]
    tokens = _bin_tokens(frame, [s for s in ("judge_bin", "length_bin") if s in strata])
    # Plain dicts: this runs once per design and pandas' row-wise apply is slow.
    per_task: dict[str, dict[str, list[str]]] = {}
    category: dict[str, str] = {}
    for task, fam, cat, t in zip(
        frame["task_id"], frame["family"], frame["category"], tokens, strict=True
    ):
        per_task.setdefault(task, {}).setdefault(fam, []).append(t)
        category.setdefault(task, cat)
    profile = {task: _profile(fams, order) for task, fams in per_task.items()}
    same_profile = len(set(profile.values())) <= 1
    keys = {}
    for task in per_task:
        parts = [category[task]] if "category" in strata else []
        if not same_profile:
            parts.append(profile[task])
        keys[task] = " | ".join(parts) if parts else "all"
    return unit_of, pd.Series(keys, name="stratum")


def _bin_tokens(frame: pd.DataFrame, bins: Sequence[str]) -> list[str]:
    """Each answer's bins joined (``pass/≤120 words``); ``✓`` when no bin stratifies."""
    if not bins:
        return ["✓"] * len(frame)
    tok = frame[bins[0]].astype(str)
    for b in bins[1:]:
        tok = tok.str.cat(frame[b].astype(str), sep="/")
    return list(tok)


def _profile(fams: dict[str, list[str]], order: Sequence[str]) -> str:
    """A task's profile: each family's bins in ``order`` (``A:pass B:fail``; ``-`` if absent)."""
    return " ".join(f"{f}:{'+'.join(sorted(fams[f])) if f in fams else '-'}" for f in order)


def _unpaired_units(
    frame: pd.DataFrame, strata: Sequence[Stratifier], allocation: Allocation
) -> tuple[pd.Series, pd.Series]:
    """Answers as units, stratified by the stratifiers (family first for ``equal`` and ``gap``).

    Returns:
        ``(answer_id -> answer_id, answer_id -> stratum)``.
    """
    unit_of = pd.Series(frame["answer_id"].to_numpy(), index=frame["answer_id"])
    cols = [s for s in STRATIFIERS if s in strata]
    if allocation in ("equal", "gap") and "family" not in cols:
        cols = ["family", *cols]
    if cols:
        key = frame[cols[0]].astype(str)
        for col in cols[1:]:
            key = key.str.cat(frame[col].astype(str), sep=" | ")
    else:
        key = pd.Series("all", index=frame.index)
    return unit_of, pd.Series(key.to_numpy(), index=frame["answer_id"], name="stratum")


def _stratum_table(frame: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """``stratum``, ``N_units``, ``N_answers`` and ``m`` (answers per unit), one row per stratum."""
    units_per = frame.groupby("_stratum")["_unit"].nunique().reindex(names)
    answers_per = frame.groupby("_stratum").size().reindex(names)
    table = pd.DataFrame({
        "stratum": names,
        "N_units": units_per.to_numpy(int),
        "N_answers": answers_per.to_numpy(int),
    })
    table["m"] = table["N_answers"] / table["N_units"]
    return table


def _gap_coefficients(families: Sequence[str], own: str) -> dict[str, float]:
    """``g_f``: +1 for the judge's family, ``−1/K`` for each of the ``K`` others."""
    others = [f for f in families if f != own]
    g = {own: 1.0}
    for f in others:
        g[f] = -1.0 / len(others)
    return g


def _stratum_sd(row: pd.Series, model: PlanningModel, min_pilot: int) -> float:
    """Residual sd of one family inside one stratum: pilot if enough labels, else model.

    ``row`` holds the stratum-family aggregates ``judge_share``, ``n_pilot`` and ``sd_pilot``.
    """
    modelled = model.residual_sd(float(row["judge_share"]))
    if row["n_pilot"] >= max(min_pilot, 2):
        # A pilot stratum with no disagreement at all would get no labels; keep a floor so a
        # lucky pilot cannot switch a stratum off.
        return max(float(row["sd_pilot"]), 0.5 * modelled)
    return modelled


def _family_terms(
    frame: pd.DataFrame,
    table: pd.DataFrame,
    families: Sequence[str],
    fam_units: pd.Series,
    model: PlanningModel,
    min_pilot: int,
) -> _FamilyTerms:
    """Each family's residual sd, weight and answers per unit in each stratum."""
    agg = frame.assign(_resid=frame["judge_pass"] - frame["human_pass"]).groupby(
        ["_stratum", "family"]
    ).agg(
        n_ans=("answer_id", "size"),
        n_units=("_unit", "nunique"),
        judge_share=("judge_pass", "mean"),
        n_pilot=("_resid", "count"),
        sd_pilot=("_resid", "std"),
    )
    index_of = {name: i for i, name in enumerate(table["stratum"])}
    n_units_h = table["N_units"].to_numpy(float)
    k = len(table)
    terms = _FamilyTerms(
        sd={f: np.full(k, np.nan) for f in families},
        weight={f: np.zeros(k) for f in families},
        per_unit={f: np.zeros(k) for f in families},
        coef={f: np.zeros(k) for f in families},
    )
    for (name, f), row in agg.iterrows():
        i = index_of[name]
        s = _stratum_sd(row, model, min_pilot)
        m_f = row["n_ans"] / row["n_units"]
        # Several answers of one family in a task: their mean has the within-task
        # correlation's variance (1 + (m − 1)ρ) / m.
        terms.sd[f][i] = s * math.sqrt(max((1 + (m_f - 1) * model.rho) / m_f, 0.0))
        terms.weight[f][i] = row["n_units"] / fam_units[f]
        terms.coef[f][i] = (terms.weight[f][i] * terms.sd[f][i]) ** 2
        terms.per_unit[f][i] = row["n_ans"] / n_units_h[i]
    return terms


def _total_coef(
    table: pd.DataFrame, terms: _FamilyTerms, families: Sequence[str], rho: float
) -> npt.NDArray[np.float64]:
    """``c_h`` of the overall mean residual: the variance of a unit's total residual, weighted."""
    sd, m = terms.sd, terms.per_unit
    total_var = np.zeros(len(table))
    for i in range(len(table)):
        present = terms.present(families, i)
        for f in present:
            for f2 in present:
                c = 1.0 if f == f2 else rho
                total_var[i] += m[f][i] * m[f2][i] * c * sd[f][i] * sd[f2][i]
    n_answers = float(table["N_answers"].sum())
    return (table["N_units"].to_numpy(float) / n_answers) ** 2 * total_var


def _gap_terms(
    terms: _FamilyTerms, families: Sequence[str], own: str, rho: float, *, paired: bool
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(c_h of the gap, sd of a unit's gap contribution)`` per stratum.

    The contribution of a unit is ``Σ_f g_f w_f r_f`` (see :func:`_gap_coefficients`);
    unpaired, a stratum holds one family and its sd is that family's plain residual sd.
    """
    g = _gap_coefficients(families, own)
    sd, w = terms.sd, terms.weight
    k = len(next(iter(sd.values())))
    gap_coef = np.zeros(k)
    unit_sd = np.zeros(k)
    for i in range(k):
        present = terms.present(families, i)
        v = u = 0.0
        for f in present:
            for f2 in present:
                c = 1.0 if f == f2 else rho
                v += g[f] * g[f2] * w[f][i] * w[f2][i] * c * sd[f][i] * sd[f2][i]
                u += g[f] * g[f2] * c * sd[f][i] * sd[f2][i]
        gap_coef[i] = max(v, 0.0)
        unit_sd[i] = math.sqrt(max(u, 0.0)) if paired else sd[present[0]][i]
    return gap_coef, unit_sd
