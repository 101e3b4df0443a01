"""Issue 43, point 1: a panel of two raters, whose leniency spread rests on 1 df.

A family's residual (and a PPI mean) moves with the panel's mean leniency, which two raters cannot
show: its interval for raters like these was a t(1) marked unreliable (7 points wide on 1-5) or,
when the two raters happened to agree, a narrow unmarked one covering 49-67%. It is now refused,
with the reason and the fix on the line; the gap, a contrast whose raters' shares sum to 0, keeps
its two-way interval.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from judgelab.calibration.stats import design_ppi_mean, family_residuals, rater_spread, residuals_and_gap
from judgelab.calibration.stats._coverage import CoverageCell, _simulate, run_cell
from judgelab.calibration.stats._raters import two_rater_refusal

_TWO = CoverageCell(100, 1, 0.4, False, "srs", 2)


def test_two_raters_refuse_the_residual_and_name_the_panel_interval_and_a_third_rater() -> None:
    d = _simulate(_TWO, np.random.default_rng(5))
    args = (d.judge, None, d.family, d.task)
    fams, gap = residuals_and_gap(*args, scale="score", own_family="own", rater_level=d.labels)
    panel = family_residuals(*args, scale="score", rater_level=d.labels, interval="panel")
    for fam in ("own", "other"):
        est = fams[fam]
        assert math.isfinite(est.estimate) and math.isnan(est.ci_low) and math.isnan(est.ci_high)
        assert est.estimate == pytest.approx(panel[fam].estimate)
        reason = est.extra["unreliable"]
        assert reason.startswith("only 2 raters: the spread of their leniency rests on 1 degree of freedom")
        # The fix, with what it would print: this panel's own half-width, to three figures.
        assert f"this panel's own interval (±{panel[fam].half_width:.3g} here) is `--interval panel`" in reason
        assert reason.endswith("or add a third rater")
        assert est.extra["interval"] == "none (2 raters), raters"
        assert "no interval for raters like these (2 raters: their leniency spread rests on 1 df)" in est.method
        assert est.to_dict()["ci_low"] is None
    # The gap's shares sum to 0: the panel's mean leniency cancels, and the gap keeps an interval.
    assert gap.extra["unreliable"] is None and gap.ci_low < gap.estimate < gap.ci_high


def test_the_refusal_is_by_design_not_by_how_close_the_two_raters_happen_to_be() -> None:
    # Two raters who agree exactly (no spread in the data at all) are still two raters: the
    # former interval read their zero spread on many df and printed it narrow and unmarked.
    d = _simulate(CoverageCell(100, 1, 0.0, False, "srs", 2), np.random.default_rng(1))
    lab = d.labels
    x = np.column_stack([d.judge, d.family == "other"]).astype(float)[lab["answer"]]
    spread = rater_spread(lab["answer"], lab["rater"], lab["score"], covariates=x)
    assert spread.n_raters == 2
    gradient = np.full(len(lab), -1.0 / len(lab))
    assert two_rater_refusal(gradient, lab["rater"], spread) is not None
    # A contrast, and three raters, are not refused.
    own = d.family[lab["answer"]] == "own"
    contrast = np.where(own, 1.0 / own.sum(), -1.0 / (~own).sum())  # own mean minus other mean
    assert two_rater_refusal(contrast, lab["rater"], spread) is None
    three = lab.assign(rater=np.arange(len(lab)) % 3)
    spread3 = rater_spread(three["answer"], three["rater"], three["score"], covariates=x)
    assert two_rater_refusal(gradient, three["rater"], spread3) is None


def test_two_raters_refuse_the_ppi_mean_and_the_panel_scope_keeps_its_interval() -> None:
    d = _simulate(_TWO, np.random.default_rng(5))
    own = d.family == "own"
    pos = np.full(own.size, -1)
    pos[own] = np.arange(own.sum())
    lab = d.labels[own[d.labels["answer"].to_numpy()]]
    lab = lab.assign(answer=pos[lab["answer"].to_numpy()], score=(lab["score"] >= 4).astype(float))
    human = lab.groupby("answer")["score"].mean().to_numpy()
    judge = (d.judge[own] >= 4).astype(float)
    kwargs = {"clusters": (d.task[own], d.pool_task[d.pool_family == "own"]), "rater_level": lab}
    pool = d.pool_judge_pass[d.pool_family == "own"]
    raters = design_ppi_mean(human, judge, pool, **kwargs)  # type: ignore[arg-type]
    panel = design_ppi_mean(human, judge, pool, interval="panel", **kwargs)  # type: ignore[arg-type]
    assert math.isnan(raters.ci_low) and raters.extra["interval"] == "none (2 raters), raters"
    assert f"(±{panel.half_width:.3g} here)" in raters.extra["unreliable"]
    assert panel.extra["unreliable"] is None and panel.ci_low < panel.estimate < panel.ci_high


@pytest.mark.slow
@pytest.mark.parametrize("cell", [_TWO, CoverageCell(30, 1, 0.4, True, "srs", 2)], ids=lambda c: c.label())
def test_two_raters_every_default_interval_covers_93_to_97_or_is_refused(cell: CoverageCell) -> None:
    """200 datasets of two of issue 43's cells (2 raters, one label per answer, leniency sd 0.4).

    Before: the family residuals covered 88-93% (1,000 datasets), 53-82% of them t(1) intervals
    marked unreliable. Now every residual and PPI interval is refused; the gaps cover within 93-97%
    widened by 2.5 Monte Carlo se (1.5 points at 200), and this panel's own intervals against its
    own truth likewise.
    """
    reps = 200
    res = run_cell(cell, reps, seed=43, panel_scope=True)
    se = math.sqrt(0.95 * 0.05 / reps)
    refused = ("residual own (pass)", "residual other (pass)", "residual own (score)", "residual other (score)",
               "PPI own", "PPI other")
    assert {k: res.refused[k] for k in refused} == dict.fromkeys(refused, 1.0)
    given = [k for k, v in res.coverage.items() if not math.isnan(v)]
    assert set(given) >= {"gap (pass)", "gap (score)", "residual own (score, panel)", "gap (score, panel)"}
    outside = {k: round(100 * res.coverage[k], 1) for k in given
               if not 0.93 - 2.5 * se <= res.coverage[k] <= 0.97 + 2.5 * se}
    assert not outside, outside


@pytest.mark.parametrize("swap", [0.0, 0.25])
def test_a_gap_whose_two_raters_split_by_family_is_refused_too(swap: float) -> None:
    # One rater labels the own family and the other the other family (or 75/25): the gap then
    # carries the difference between their leniencies, which rests on 1 df. Before, the interval
    # was a t(1) marked unreliable (±2.5-5.5 points), or unmarked and ±0.0-0.3 when their means
    # happened to agree; at 75/25 unmarked intervals covered 89% at 100 tasks.
    gen = np.random.default_rng(7)
    d = _simulate(_TWO, gen)
    lab = d.labels.copy()
    other = d.family[lab["answer"].to_numpy()] == "other"
    lab["rater"] = (other ^ (gen.random(len(lab)) < swap)).astype(int)
    _, gap = residuals_and_gap(d.judge, None, d.family, d.task, scale="score", own_family="own", rater_level=lab)
    assert math.isnan(gap.ci_low) and gap.extra["interval"] == "none (2 raters), raters"
    assert gap.extra["unreliable"].startswith("only 2 raters, whose labels fall unevenly on what this estimate")
    assert "`--interval panel`, or add a third rater" in gap.extra["unreliable"]
    # Dealt at random (the simulation's own raters), the same gap keeps its interval.
    _, dealt = residuals_and_gap(d.judge, None, d.family, d.task, scale="score", own_family="own", rater_level=d.labels)
    assert dealt.ci_low < dealt.estimate < dealt.ci_high
