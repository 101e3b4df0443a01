"""The design itself: draw a stratified hand-label sample and state its precision and cost.

Pure: a pool DataFrame in, a frozen :class:`Design` out, randomness injected through ``rng``.
See :mod:`judgelab.calibration.design` for the plan.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats as sps

from judgelab.calibration.design._model import (
    ALLOCATIONS,
    STRATIFIERS,
    Z95,
    Allocation,
    PlanningModel,
    Stratifier,
    allocate,
    allocation_scores,
    planning_model,
)
from judgelab.calibration.design._power import Cost, Precision, Target, cost_of, kappa_se
from judgelab.calibration.design._strata import Strata, build_strata, stratify_pool
from judgelab.calibration.stats._bootstrap import RngLike, as_rng, check_choice
from judgelab.labeler.errors import InputError
from judgelab.labeler.timing import DEFAULT_MINUTES_PER_LABEL

__all__ = ["Design", "design_sample", "design_table", "pairing_note"]

#: The other sampling unit is worth a note when its gap half-width is below this share of ours.
_PAIRING_GAIN = 0.9

@dataclass(frozen=True)
class Design:
    """A planned hand-label sample.

    Attributes:
        design_id: Content hash of the inputs and the sampled answers.
        params: The inputs, JSON-ready (allocation, strata, budget, seed, ...).
        strata: One row per stratum: ``stratum``, ``N_units``, ``n_units``, ``N_answers``,
            ``n_answers``, ``inclusion_prob``, ``weight``, ``planning_sd``, ``gap_var_share``,
            ``half_width_pp``.
        items: One row per sampled answer: ``answer_id``, ``task_id``, ``family``, ``stratum``,
            ``inclusion_prob``, ``weight`` (1/π), ``n_raters`` (2 on the overlap), ``is_overlap``.
        inclusion: One row per pool answer: ``answer_id``, ``task_id``, ``family``, ``unit``
            (its sampling unit: the task when paired), ``stratum``, ``inclusion_prob`` (sums to
            the expected number of labelled answers), and integer ``unit_index`` and
            ``stratum_index`` (row of ``strata``).
        own_family: The judge's family (the gap's first term).
        model: The planning assumptions.
        precision: Expected precision of this sample.
        cost: Its cost.
        target: Labels a target needs, if one was given.
        notes: Things a reader should know (caps, defaults chosen, empty strata).
    """

    design_id: str
    params: dict[str, Any]
    strata: pd.DataFrame
    items: pd.DataFrame
    inclusion: pd.DataFrame
    own_family: str
    model: PlanningModel
    precision: Precision
    cost: Cost
    target: Target | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def n_labels(self) -> int:
        """Distinct answers the design labels."""
        return len(self.items)

    def redraw(self, rng: RngLike = None) -> pd.DataFrame:
        """Another sample from the same design (same strata and counts), for simulations.

        Args:
            rng: Seed or Generator for the draw.

        Returns:
            One row per sampled answer: ``answer_id``, ``task_id``, ``family``, ``stratum``,
            ``inclusion_prob``, ``weight``. No overlap is drawn.
        """
        gen = as_rng(rng)
        inc = self.inclusion
        unit_code = inc["unit_index"].to_numpy()
        stratum_code = inc["stratum_index"].to_numpy()
        _, first = np.unique(unit_code, return_index=True)
        strata_of_unit = stratum_code[first]
        chosen: list[npt.NDArray[np.intp]] = []
        for code, n_h in enumerate(self.strata["n_units"].to_numpy()):
            if n_h > 0:
                members = np.flatnonzero(strata_of_unit == code)
                chosen.append(gen.choice(members, size=int(n_h), replace=False))
        picked = np.concatenate(chosen) if chosen else np.array([], dtype=np.intp)
        keep = np.isin(unit_code, picked)
        out = inc.loc[keep, ["answer_id", "task_id", "family", "stratum", "inclusion_prob"]]
        out = out.assign(weight=1.0 / out["inclusion_prob"])
        return out.reset_index(drop=True)

    def summary(self) -> dict[str, Any]:
        """Expected precision, cost and target as a JSON-ready dict (stored with the design)."""
        out: dict[str, Any] = {
            "design_id": self.design_id,
            "own_family": self.own_family,
            "labels": self.n_labels,
            "units": int(self.strata["n_units"].sum()),
            "precision": _clean(asdict(self.precision)),
            "cost": asdict(self.cost),
            "model": asdict(self.model),
            "notes": list(self.notes),
        }
        if self.target is not None:
            out["target"] = _clean(asdict(self.target))
        return out


def _clean(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def design_sample(
    pool: pd.DataFrame,
    *,
    n: int,
    allocation: Allocation = "gap",
    strata: Sequence[Stratifier] = ("family", "category", "judge_bin"),
    paired: bool = True,
    overlap: float = 0.2,
    own_family: str | None = None,
    model: PlanningModel | None = None,
    judge_bins: int = 2,
    length_bins: int = 3,
    min_per_stratum: int = 2,
    min_pilot: int = 5,
    minutes_per_label: float = DEFAULT_MINUTES_PER_LABEL,
    minutes_source: str = "assumed",
    raters: int = 1,
    hours_per_rater_per_day: float = 2.0,
    target_half_width: float | None = None,
    min_gap: float | None = None,
    rng: RngLike = None,
) -> Design:
    """Plan and draw a stratified hand-label sample of about ``n`` answers.

    Args:
        pool: One row per answer (see :func:`stratify_pool` for the columns).
        n: Label budget: distinct answers to label. Paired, the sample is ``n / m̄`` tasks, so
            the realised count can differ by a task's worth of answers.
        allocation: See :data:`Allocation` and :func:`allocation_scores`.
        strata: Stratifiers (a subset of :data:`STRATIFIERS`). Paired, ``family`` is balanced by
            construction; unpaired, it is always a stratifier for ``equal`` and ``gap``. When
            the budget cannot give every stratum ``min_per_stratum`` units, ``length_bin``,
            then ``category``, then ``judge_bin`` are dropped (noted; ``params["strata_used"]``).
        paired: Sample whole tasks (the paired-by-task design; see the module docstring).
        overlap: Share of sampled units labelled by two raters.
        own_family: The judge's family; ``None`` takes the first family in sorted order (noted).
        model: Planning assumptions; default :func:`planning_model` on the pool.
        judge_bins: Passed to :func:`stratify_pool`.
        length_bins: Passed to :func:`stratify_pool`.
        min_per_stratum: Units every stratum gets when the budget allows (2 lets a stratum's
            variance be estimated); lowered to 1, then 0, for small budgets.
        min_pilot: Labelled answers of a family in a stratum before that stratum's residual sd
            is taken from the pilot rather than the model.
        minutes_per_label: Minutes one label takes.
        minutes_source: Where that figure came from, for the report.
        raters: Raters sharing the work (for calendar days).
        hours_per_rater_per_day: Labelling hours a rater gives a day.
        target_half_width: Wanted 95% half-width of the gap, percentage points.
        min_gap: Smallest gap worth detecting at alpha 0.05 with power 0.8, percentage points.
        rng: Seed or Generator for the draw.

    Returns:
        The :class:`Design`.

    Raises:
        InputError: On an unknown stratifier or allocation, a budget below 1, or an overlap
            outside [0, 1].
    """
    _check_options(allocation, strata, n, overlap)
    gen = as_rng(rng)
    notes: list[str] = []
    frame = stratify_pool(pool, judge_bins=judge_bins, length_bins=length_bins)
    families = sorted(frame["family"].unique())
    own_family = _own_family(own_family, families, notes)
    plan_model = model if model is not None else planning_model(frame)
    n_pool = len(frame)
    if n > n_pool:
        notes.append(f"the budget ({n}) exceeds the pool ({n_pool} answers): labelling all of it")
        n = n_pool
    st, used, a_h, n_units = _fit_strata(
        frame, strata, n, paired=paired, own=own_family, families=families,
        allocation=allocation, model=plan_model, min_pilot=min_pilot,
        min_per_stratum=min_per_stratum, notes=notes,
    )
    n_h = _allocate_units(st.table, a_h, n_units, min_per_stratum, notes)
    coincide = _coinciding_allocations(st, allocation, n, min_per_stratum, n_h)
    if coincide:
        notes.append(_coincidence_note(coincide, allocation, plan_model, min_pilot))
    table = st.table.assign(n_units=n_h, inclusion_prob=n_h / st.table["N_units"])
    table["weight"] = np.where(n_h > 0, 1 / table["inclusion_prob"].where(n_h > 0, 1), np.nan)

    chosen_units = _draw(st.stratum_of_unit, table, gen)
    overlap_units = _pick_overlap(chosen_units, overlap, gen)
    items = _items(frame, st, table, chosen_units, overlap_units)
    table["n_answers"] = items.groupby("stratum").size().reindex(table["stratum"]).fillna(0) \
        .astype(int).to_numpy()

    precision = _precision(st, table, frame, items, plan_model, own_family, families)
    _add_planning_columns(table, st, n_h)
    cost = cost_of(
        len(items), overlap=overlap, minutes_per_label=minutes_per_label, raters=raters,
        hours_per_rater_per_day=hours_per_rater_per_day, minutes_source=minutes_source,
        repeats=int(items["is_overlap"].sum()),
    )
    target = _target(
        st, a_h, st.table["m"].to_numpy(float), n_pool, overlap, cost,
        target_half_width=target_half_width, min_gap=min_gap,
    )
    params: dict[str, Any] = {
        "n": n, "allocation": allocation, "strata": list(strata), "strata_used": used,
        "paired": paired,
        "overlap": overlap, "own_family": own_family, "judge_bins": judge_bins,
        "length_bins": length_bins, "min_per_stratum": min_per_stratum,
        "minutes_per_label": minutes_per_label, "raters": raters,
        "hours_per_rater_per_day": hours_per_rater_per_day,
        "target_half_width": target_half_width, "min_gap": min_gap,
        "model": asdict(plan_model),
    }
    if plan_model.source == "assumed":
        notes.append(
            f"planning figures assumed (disagreement {plan_model.disagreement:.2f}, "
            f"rho {plan_model.rho:.2f}); a pilot of labels will replace them"
        )
    return Design(
        design_id=_design_id(params, items),
        params=params,
        strata=table.reset_index(drop=True),
        items=items,
        inclusion=_inclusion(frame, st, table),
        own_family=own_family,
        model=plan_model,
        precision=precision,
        cost=cost,
        target=target,
        notes=tuple(notes),
    )


def _check_options(
    allocation: Allocation, strata: Sequence[Stratifier], n: int, overlap: float
) -> None:
    check_choice("design_sample", "allocation", allocation, ALLOCATIONS)
    for s in strata:
        if s not in STRATIFIERS:
            raise InputError(
                f"unknown stratifier {s!r}",
                fix=f"choose from {', '.join(STRATIFIERS)}.",
            )
    if n < 1:
        raise InputError(f"the label budget must be at least 1; got {n}", fix="e.g. --n 300.")
    if not 0.0 <= overlap <= 1.0:
        raise InputError(f"overlap must be between 0 and 1; got {overlap!r}", fix="e.g. 0.2.")


def _own_family(own_family: str | None, families: Sequence[str], notes: list[str]) -> str:
    """The judge's family, or the first family when none (or one outside the pool) is given."""
    if own_family is None or own_family not in families:
        chosen = families[0]
        why = "no judge family given" if own_family is None else f"{own_family!r} is not in the pool"
        notes.append(f"{why}: the gap is {chosen!r} minus the other famil"
                     f"{'y' if len(families) == 2 else 'ies'}")
        own_family = chosen
    if len(families) < 2:
        notes.append("the pool holds one family: there is no self-preference gap to estimate")
    return own_family


def _fit_strata(
    frame: pd.DataFrame,
    strata: Sequence[Stratifier],
    n: int,
    *,
    paired: bool,
    own: str,
    families: Sequence[str],
    allocation: Allocation,
    model: PlanningModel,
    min_pilot: int,
    min_per_stratum: int,
    notes: list[str],
) -> tuple[Strata, list[Stratifier], npt.NDArray[np.float64], int]:
    """The finest strata the budget can fill: ``(strata, stratifiers used, a_h, units to draw)``.

    Too many strata for the budget leaves strata empty (and so estimates biased) or forces the
    minimum onto most of the sample: coarsen, finest stratifier first.
    """
    used = list(strata)
    unit_word = "tasks" if paired else "answers"
    while True:
        st = build_strata(frame, used, paired=paired, own=own, families=families,
                          allocation=allocation, model=model, min_pilot=min_pilot)
        a_h, n_units = _units_to_draw(st, allocation, n)
        droppable = [s for s in ("length_bin", "category", "judge_bin") if s in used]
        if len(st.table) * min_per_stratum <= n_units or not droppable:
            return st, used, a_h, n_units
        notes.append(
            f"{len(st.table)} strata need at least {len(st.table) * min_per_stratum} "
            f"{unit_word} but the budget draws {n_units}: dropped {droppable[0]!r} from the strata"
        )
        used.remove(droppable[0])


def _units_to_draw(
    st: Strata, allocation: Allocation, n: int
) -> tuple[npt.NDArray[np.float64], int]:
    """``(a_h, units)``: the allocation scores and the units that spend ``n`` labels."""
    table = st.table
    m_h = table["m"].to_numpy(float)
    a_h = allocation_scores(
        allocation, sizes=table["N_units"], gap_coef=st.gap_coef, total_coef=st.total_coef,
        family_share=st.family_share, unit_labels=m_h,
    )
    # The continuous optimum spends n labels; its unit count is Σ x_h.
    denom = float((a_h * m_h).sum())
    n_units = round(n * a_h.sum() / denom) if denom > 0 else round(n / m_h.mean())
    return a_h, int(min(max(n_units, 1), table["N_units"].sum()))


def _coinciding_allocations(
    st: Strata, allocation: Allocation, n: int, min_per_stratum: int, n_h: npt.NDArray[np.int64]
) -> list[str]:
    """The other allocations that would draw exactly the same units per stratum."""
    same: list[str] = []
    for other in ALLOCATIONS:
        if other == allocation:
            continue
        a_o, units_o = _units_to_draw(st, other, n)
        if units_o != int(n_h.sum()):
            continue
        minimum = min_per_stratum
        while minimum > 0 and minimum * len(st.table) > units_o:
            minimum -= 1
        if np.array_equal(allocate(a_o, units_o, capacity=st.table["N_units"], minimum=minimum), n_h):
            same.append(other)
    return same


def _coincidence_note(same: Sequence[str], allocation: Allocation, model: PlanningModel, min_pilot: int) -> str:
    """Say plainly that the allocations offered are not alternatives here, and why."""
    names = ", ".join(repr(a) for a in same)
    if model.n_pilot == 0:
        return (
            f"the {names} allocation(s) draw the same sample as {allocation!r}: without pilot labels the "
            f"planning model gives every judge-verdict stratum the same residual sd (disagreement "
            f"{model.disagreement:.2f} assumed), so they are not real alternatives until a pilot of at "
            f"least {min_pilot} labels per family and stratum tells the strata apart"
        )
    return f"the {names} allocation(s) draw the same sample as {allocation!r} on this pool"


def _allocate_units(
    table: pd.DataFrame,
    a_h: npt.NDArray[np.float64],
    n_units: int,
    min_per_stratum: int,
    notes: list[str],
) -> npt.NDArray[np.int64]:
    """Units per stratum, with the per-stratum minimum lowered as far as the budget needs."""
    k = len(table)
    minimum = min_per_stratum
    while minimum > 0 and minimum * k > n_units:
        minimum -= 1
    if minimum < min_per_stratum:
        notes.append(
            f"{k} strata and {n_units} units: each stratum gets at least {minimum} "
            f"(not {min_per_stratum}); consider fewer strata"
        )
    n_h = allocate(a_h, n_units, capacity=table["N_units"], minimum=minimum)
    empty = int(((n_h == 0) & (table["N_units"] > 0)).sum())
    if empty:
        notes.append(f"{empty} stratum/strata get no labels: estimates cannot cover them")
    return n_h


def _add_planning_columns(table: pd.DataFrame, st: Strata, n_h: npt.NDArray[np.int64]) -> None:
    """``planning_sd``, ``gap_var_share`` and ``half_width_pp`` of each stratum, in place."""
    ppv = np.divide(st.gap_coef, n_h, out=np.zeros(len(table)), where=n_h > 0)
    total_v = ppv.sum()
    table["planning_sd"] = st.unit_sd
    table["gap_var_share"] = ppv / total_v if total_v > 0 else np.nan
    table["half_width_pp"] = np.where(
        n_h > 0, Z95 * table["planning_sd"] / np.sqrt(np.maximum(n_h, 1)) * 100, np.nan
    )


def _inclusion(frame: pd.DataFrame, st: Strata, table: pd.DataFrame) -> pd.DataFrame:
    """One row per pool answer with its unit, stratum, inclusion probability and integer codes."""
    inclusion = frame[["answer_id", "task_id", "family"]].assign(
        unit=frame["answer_id"].map(st.unit_of).to_numpy()
    )
    inclusion["stratum"] = inclusion["unit"].map(st.stratum_of_unit)
    # Integer codes let Design.redraw draw thousands of samples quickly.
    inclusion["unit_index"] = pd.factorize(inclusion["unit"], sort=True)[0]
    inclusion["stratum_index"] = inclusion["stratum"].map(
        {name: i for i, name in enumerate(table["stratum"])}
    ).astype(int)
    inclusion["inclusion_prob"] = inclusion["stratum"].map(
        table.set_index("stratum")["inclusion_prob"]
    )
    return inclusion


def _design_id(params: dict[str, Any], items: pd.DataFrame) -> str:
    """A content hash of the inputs and the sampled (and double-labelled) answers."""
    digest = hashlib.sha256(
        json.dumps([params, sorted(items["answer_id"]), sorted(items.loc[items["is_overlap"],
                    "answer_id"])], sort_keys=True, default=str).encode()
    ).hexdigest()
    return "d" + digest[:11]


def _draw(stratum_of_unit: pd.Series, table: pd.DataFrame, gen: np.random.Generator) -> pd.Series:
    """Simple random samples without replacement inside each stratum: unit id -> stratum."""
    members: dict[str, list[Any]] = {}
    for unit, name in stratum_of_unit.items():
        members.setdefault(str(name), []).append(unit)
    picked: list[Any] = []
    for name, n_h in zip(table["stratum"], table["n_units"], strict=True):
        if n_h <= 0:
            continue
        units = sorted(members[str(name)])
        idx = gen.choice(len(units), size=int(n_h), replace=False)
        picked.extend(units[i] for i in idx)
    return stratum_of_unit.loc[picked]


def _pick_overlap(chosen: pd.Series, overlap: float, gen: np.random.Generator) -> set[Any]:
    """A systematic sample of the chosen units, spread over strata, to label twice."""
    k = round(overlap * len(chosen))
    if k <= 0:
        return set()
    ordered = pd.DataFrame({"unit": chosen.index, "stratum": chosen.to_numpy(),
                            "u": gen.random(len(chosen))}).sort_values(["stratum", "u"])
    step = len(ordered) / k
    start = gen.random() * step
    idx = np.floor(start + step * np.arange(k)).astype(int)
    return set(ordered["unit"].to_numpy()[np.minimum(idx, len(ordered) - 1)])


def _items(
    frame: pd.DataFrame,
    st: Strata,
    table: pd.DataFrame,
    chosen: pd.Series,
    overlap_units: set[Any],
) -> pd.DataFrame:
    unit = frame["answer_id"].map(st.unit_of)
    keep = frame[unit.isin(set(chosen.index))].copy()
    keep["unit"] = keep["answer_id"].map(st.unit_of)
    keep["stratum"] = keep["unit"].map(st.stratum_of_unit)
    probs = table.set_index("stratum")["inclusion_prob"]
    keep["inclusion_prob"] = keep["stratum"].map(probs).astype(float)
    keep["weight"] = 1.0 / keep["inclusion_prob"]
    keep["is_overlap"] = keep["unit"].isin(overlap_units)
    keep["n_raters"] = np.where(keep["is_overlap"], 2, 1)
    cols = ["answer_id", "task_id", "family", "category", "judge_bin", "length_bin", "stratum",
            "inclusion_prob", "weight", "n_raters", "is_overlap"]
    return keep[cols].sort_values(["task_id", "answer_id"]).reset_index(drop=True)


def _precision(
    st: Strata,
    table: pd.DataFrame,
    frame: pd.DataFrame,
    items: pd.DataFrame,
    model: PlanningModel,
    own: str,
    families: Sequence[str],
) -> Precision:
    n_h = table["n_units"].to_numpy(float)
    sampled = n_h > 0
    # The report's interval is t with (units − strata) degrees of freedom: quote the same.
    q = t_quantile(int(n_h.sum()) - int(sampled.sum()))

    def hw(coef: npt.NDArray[np.float64]) -> float:
        v = float((coef[sampled] / n_h[sampled]).sum())
        return q * math.sqrt(v) * 100

    resid: dict[str, float] = {}
    others = [f for f in families if f != own]
    resid[own] = hw(st.family_coef[own])
    if len(others) == 1:
        resid[others[0]] = hw(st.family_coef[others[0]])
    elif others:
        # The unweighted mean of the other families' residuals (their strata do not overlap
        # unpaired; paired, this ignores their within-task covariance, a slight overstatement).
        coef = sum(st.family_coef[f] for f in others) / len(others) ** 2
        resid[f"others ({', '.join(others)})"] = hw(np.asarray(coef))
    gap_v = float((st.gap_coef[sampled] / n_h[sampled]).sum())
    n_overlap = int(items["is_overlap"].sum())
    prevalence = float(frame["judge_pass"].mean()) if frame["judge_pass"].notna().any() else 0.5
    return Precision(
        residual_half_width=resid,
        gap_half_width=q * math.sqrt(gap_v) * 100 if len(families) > 1 else float("nan"),
        gap_se=math.sqrt(gap_v) * 100 if len(families) > 1 else float("nan"),
        kappa_se=kappa_se(n_overlap, kappa=model.kappa, prevalence=prevalence),
        n_overlap=n_overlap,
    )


def t_quantile(df: float, p: float = 0.975) -> float:
    """Student's t quantile (the normal one for infinite ``df``; at least 1 df)."""
    if not math.isfinite(df):
        return float(sps.norm.ppf(p))
    return float(sps.t.ppf(p, max(df, 1)))


def _target(
    st: Strata,
    a_h: npt.NDArray[np.float64],
    m_h: npt.NDArray[np.float64],
    n_pool: int,
    overlap: float,
    cost: Cost,
    *,
    target_half_width: float | None,
    min_gap: float | None,
) -> Target | None:
    if target_half_width is not None and min_gap is not None:
        raise InputError("give a target half-width or a smallest gap, not both",
                         fix="drop --target-half-width or --min-gap.")
    if target_half_width is None and min_gap is None:
        return None
    value = target_half_width if target_half_width is not None else min_gap
    assert value is not None
    if value <= 0:
        raise InputError(f"the target must be positive percentage points; got {value!r}",
                         fix="e.g. --target-half-width 5 or --min-gap 10.")
    # Under the allocation's continuous shares x_h = L a_h / A (A = Σ a m), the gap variance
    # is V(L) = (A / L) Σ c_h / a_h, so L = A Σ(c_h / a_h) (z / target)².
    use = st.gap_coef > 0
    v1 = (
        float("inf") if (a_h[use] <= 0).any()
        else float((a_h * m_h).sum() * (st.gap_coef[use] / a_h[use]).sum())
    )
    alpha, power = 0.05, 0.8
    per_unit = a_h.sum() / (a_h * m_h).sum()  # units per label under the allocation
    n_strata = int((a_h > 0).sum())
    labels, units = -1, -1
    # The report tests with a t interval on (units − strata) df: start from the normal quantiles
    # and redo with t's until the label count settles (two or three rounds).
    df = math.inf
    for _ in range(6):
        q = t_quantile(df, 1 - alpha / 2)
        if target_half_width is None:
            q += t_quantile(df, power)
        labels_f = v1 * (q * 100 / value) ** 2
        if not math.isfinite(labels_f):
            break
        new = math.ceil(labels_f - 1e-9)
        units = math.ceil(new * per_unit - 1e-9)
        if new == labels:
            break
        labels, df = new, max(units - n_strata, 1)
    tcost = cost_of(
        max(labels, 0), overlap=overlap, minutes_per_label=cost.minutes_per_label,
        raters=cost.raters, hours_per_rater_per_day=cost.hours_per_rater_per_day,
        minutes_source=cost.minutes_source,
    )
    return Target(
        kind="half_width" if target_half_width is not None else "min_gap",
        value_pp=float(value),
        labels_needed=labels,
        units_needed=units,
        cost=tcost,
        fits_pool=0 < labels <= n_pool,
    )


# -- tables ------------------------------------------------------------------------------------


def design_table(design: Design) -> pd.DataFrame:
    """The per-stratum table an admin reads before applying a design.

    Columns: ``stratum``; ``pool_units`` and ``pool_answers`` (in the pool); ``sampled_units``
    and ``sampled_answers``; ``inclusion_prob`` and ``weight`` (1/π); ``planning_sd`` (sd of the
    stratum's contribution to the gap, in proportion units); ``half_width_pp`` (expected 95%
    half-width of the stratum's own gap estimate); ``gap_var_share`` (its share of the overall
    gap variance); ``hours`` (person-hours, overlap included). A last row ``total`` sums the
    counts and hours and carries the design's gap half-width.
    """
    s = design.strata
    minutes = design.cost.minutes_per_label
    repeats = design.items.groupby("stratum")["is_overlap"].sum().reindex(s["stratum"]).fillna(0)
    hours = (s["n_answers"].to_numpy() + repeats.to_numpy()) * minutes / 60
    out = pd.DataFrame({
        "stratum": s["stratum"],
        "pool_units": s["N_units"],
        "pool_answers": s["N_answers"],
        "sampled_units": s["n_units"],
        "sampled_answers": s["n_answers"],
        "inclusion_prob": s["inclusion_prob"].round(4),
        "weight": s["weight"].round(3),
        "planning_sd": s["planning_sd"].round(4),
        "half_width_pp": s["half_width_pp"].round(1),
        "gap_var_share": s["gap_var_share"].round(3),
        "hours": np.round(hours, 2),
    })
    total = {
        "stratum": "total",
        "pool_units": int(s["N_units"].sum()),
        "pool_answers": int(s["N_answers"].sum()),
        "sampled_units": int(s["n_units"].sum()),
        "sampled_answers": int(s["n_answers"].sum()),
        "inclusion_prob": round(float(s["n_answers"].sum() / s["N_answers"].sum()), 4),
        "weight": np.nan,
        "planning_sd": np.nan,
        "half_width_pp": round(design.precision.gap_half_width, 1),
        "gap_var_share": 1.0,
        "hours": round(design.cost.person_hours, 2),
    }
    return pd.concat([out, pd.DataFrame([total])], ignore_index=True)




def pairing_note(pool: pd.DataFrame, design: Design, *, rng: RngLike = None) -> str | None:
    """A note when the other sampling unit would estimate the gap more precisely.

    Pairing pays when a task's residuals move together; with unbalanced families (or several
    answers of one family per task) single answers can be cheaper. This draws the design again
    with ``paired`` flipped (same pool, budget, allocation, strata, overlap, judge family,
    planning model and bins) and words the comparison when the other design's expected gap
    half-width is below 90% of this one's.

    Args:
        pool: The pool ``design`` was drawn from.
        design: The design.
        rng: Seed or Generator for the other draw.

    Returns:
        The note, or ``None`` when this design's sampling unit is as good or better.
    """
    p = design.params
    other = design_sample(
        pool, n=p["n"], allocation=p["allocation"], strata=p["strata"], paired=not p["paired"],
        overlap=p["overlap"], own_family=design.own_family, model=design.model,
        judge_bins=p["judge_bins"], length_bins=p["length_bins"],
        min_per_stratum=p["min_per_stratum"], rng=rng,
    )
    mine, theirs = design.precision.gap_half_width, other.precision.gap_half_width
    if not theirs < _PAIRING_GAIN * mine:
        return None
    how = "unpaired sampling (--unpaired)" if p["paired"] else "paired sampling (--paired)"
    return (
        f"{how} would give a gap half-width of ±{theirs:.1f} pp for the same labels "
        f"(this design: ±{mine:.1f} pp)"
    )
