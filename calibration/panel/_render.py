"""Renderings of a :class:`~judgelab.calibration.panel.PanelResult`: markdown, JSON and a PNG heatmap."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from judgelab.calibration.numbers import MISSING, ci, num
from judgelab.calibration.panel._load import PanelData
from judgelab.calibration.panel._stats import Estimate, PanelResult


def _est(est: Estimate | None) -> dict[str, Any] | None:
    return None if est is None else est.to_dict()


def panel_json(result: PanelResult, data: PanelData | None = None) -> dict[str, Any]:
    """The result as a JSON-ready dict.

    Every figure is ``{estimate, ci_low, ci_high, n, method, units, level}``; a figure that
    could not be computed is ``null`` with its reason beside it (``self_bias_reason`` ...).
    """
    out: dict[str, Any] = {"scale": result.scale, "units": result.units}
    if data is not None:
        out |= {"rubric": data.rubric, "runs": list(data.runs)}
    out["judges"] = [{
        "judge": b.judge, "judge_model": b.judge_model, "judge_family": b.judge_family, "n": b.n,
        "self_bias": _est(b.self_bias), "self_bias_reason": b.self_reason,
        "family_bias": _est(b.family_bias), "family_bias_reason": b.family_reason,
        "gap": _est(b.gap), "gap_reason": b.gap_reason, "slope": _est(b.slope), "units": result.units,
    } for b in result.judges]
    out["matrix"] = {j: {f: e.to_dict() for f, e in row.items()} for j, row in result.matrix.items()}
    out["agreement"] = [{
        "judge": a.judge, "n": a.n, "mean_residual": a.mean_residual.to_dict(), "spread": a.spread.to_dict(),
        "kappa": _est(a.kappa), "kappa_reason": a.kappa_reason, "spread_vs_best": _est(a.spread_vs_best),
    } for a in result.agreement]
    out["jury_gaps"] = [{
        "family": g.family, "judges": {k: v.to_dict() for k, v in g.judges.items()},
        "juries": {k: v.to_dict() for k, v in g.juries.items()},
    } for g in result.jury_gaps]
    out["best"] = {"kappa": result.best_kappa, "spread": result.best_spread}
    out["notes"] = list(result.notes) + (list(data.notes) if data is not None else [])
    return out


def _cell(est: Estimate | None, digits: int = 2) -> str:
    if est is None:
        return MISSING
    return f"{num(est.estimate, digits, signed=True)} ({ci(est, digits)})"


def render_markdown(result: PanelResult, data: PanelData | None = None, *, digits: int = 2) -> str:
    """The panel report as markdown: the matrix, each judge's biases, the juries, agreement."""
    lines = ["# Panel of judges", ""]
    if data is not None:
        lines += [f"Rubric {data.rubric}, scale {result.scale}; {len(result.judges)} judge run(s): "
                  f"{', '.join(data.runs)}.", ""]
    lines += [f"Units: {result.units}. Residual = judge score minus the mean of the raters' current labels. "
              "Intervals: task-clustered (CR1 sandwich, t with tasks - 1 df).", ""]
    families = sorted({f for row in result.matrix.values() for f in row})
    lines += ["## Residual matrix (judge x answer family)", "",
              "| judge | " + " | ".join(families) + " |", "|---|" + "---|" * len(families)]
    for judge, row in result.matrix.items():
        lines.append(f"| {judge} | " + " | ".join(_cell(row.get(f), digits) for f in families) + " |")
    lines += ["", "## Self- and family-bias per judge", "",
              "OLS of the judge's score on an intercept, the human score, `own` (answer by the judge's own "
              "model) and `sibling` (by another model of its family); each bias is against answers of other "
              "families with the same human score. The simple gap (own family minus the others, no control "
              "for quality) beside it.", "",
              "| judge | model | family | n | self-bias | family-bias | simple gap | slope on human |",
              "|---|---|---|---|---|---|---|---|"]
    for b in result.judges:
        lines.append(f"| {b.judge} | {b.judge_model} | {b.judge_family or MISSING} | {b.n} | "
                     f"{_cell(b.self_bias, digits)} | {_cell(b.family_bias, digits)} | {_cell(b.gap, digits)} | "
                     f"{_cell(b.slope, digits)} |")
    reasons = [f"- {b.judge}: {r}" for b in result.judges for r in (b.self_reason, b.family_reason, b.gap_reason) if r]
    if reasons:
        lines += ["", "Not computed:", "", *reasons]
    lines += ["", "## Juries", "",
              "`jury (mean)`: the mean of every judge's score per answer; `jury (other families)`: the mean of "
              "the judges not of the answer's family. Gap = mean residual on the family's answers minus on the "
              "others. The other-families jury's judges change with the answer's family: when the judges differ in "
              "leniency (mean residual, below) its gaps mix that in.", "",
              "| family | its judges' gaps | jury (mean) | jury (other families) |", "|---|---|---|---|"]
    for g in result.jury_gaps:
        own = "; ".join(f"{k}: {_cell(v, digits)}" for k, v in g.judges.items()) or MISSING
        lines.append(f"| {g.family} | {own} | " + " | ".join(_cell(g.juries.get(j), digits)
                                                         for j in ("jury (mean)", "jury (other families)")) + " |")
    lines += ["", "## Agreement with people", "",
              "| judge | n | mean residual | residual spread (SD) | SD minus the smallest (paired) | weighted kappa |",
              "|---|---|---|---|---|---|"]
    for a in result.agreement:
        kappa = _cell(a.kappa, 3) if a.kappa is not None else f"{MISSING} ({a.kappa_reason})"
        versus = "(smallest)" if a.judge == result.best_spread else _cell(a.spread_vs_best, digits)
        lines.append(f"| {a.judge} | {a.n} | {_cell(a.mean_residual, digits)} | {_cell(a.spread, digits)} | "
                     f"{versus} | {kappa} |")
    lines += ["", f"Highest kappa: {result.best_kappa or MISSING}; smallest residual spread: "
              f"{result.best_spread or MISSING}; a paired interval of the SD difference that holds 0 means the data do "
              "not tell that judge from the best.", ""]
    if result.agreement and result.agreement[0].kappa is not None:
        lines += [f"Kappa: {result.agreement[0].kappa.method}.", ""]
    notes = list(result.notes) + (list(data.notes) if data is not None else [])
    if notes:
        lines += ["## Notes", "", *[f"- {n}" for n in notes], ""]
    return "\n".join(lines)


def heatmap(result: PanelResult) -> alt.LayerChart:
    """The judge x answer-family residual matrix as an Altair heatmap, each cell labelled with its interval."""
    rows = [{"judge": j, "family": f, "residual": e.estimate,
             "label": f"{e.estimate:+.2f} [{e.ci_low:+.2f}, {e.ci_high:+.2f}]"}
            for j, row in result.matrix.items() for f, e in row.items()]
    frame = pd.DataFrame(rows)
    order = list(result.matrix)
    limit = float(frame["residual"].abs().max()) or 1.0
    base = alt.Chart(frame).encode(
        x=alt.X("family:N", title="answer family", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("judge:N", sort=order, title=None))
    cells = base.mark_rect().encode(color=alt.Color(
        "residual:Q", scale=alt.Scale(scheme="redblue", domain=[-limit, limit], reverse=True),
        title=["judge - human", result.units]))
    text = base.mark_text(fontSize=10).encode(text="label:N")
    return (cells + text).properties(title="Residual by judge and answer family (95% CI)",
                                     width=max(120 * frame["family"].nunique(), 240), height=28 * len(order))


def write_png(result: PanelResult, path: str | Path, *, scale: float = 2.0) -> Path:
    """Write the heatmap as PNG (rendered offline by vl-convert)."""
    import vl_convert as vlc

    out = Path(path)
    out.write_bytes(bytes(vlc.vegalite_to_png(vl_spec=heatmap(result).to_dict(), scale=scale)))
    return out


def dumps(payload: dict[str, Any]) -> str:
    """JSON text of :func:`panel_json`'s dict."""
    return json.dumps(payload, indent=2, allow_nan=False)


def judges_table(result: PanelResult) -> pd.DataFrame:
    """One row per judge: self-bias, family-bias and the simple gap with their intervals, then kappa and spread."""
    agreement = {a.judge: a for a in result.agreement}
    rows = []
    for b in result.judges:
        a = agreement.get(b.judge)
        row: dict[str, Any] = {"judge": b.judge, "model": b.judge_model, "family": b.judge_family, "n": b.n}
        for name, est in (("self-bias", b.self_bias), ("family-bias", b.family_bias), ("simple gap", b.gap),
                          ("kappa", a.kappa if a else None), ("residual SD", a.spread if a else None)):
            row[name] = None if est is None else est.estimate
            row[f"{name} 95% CI"] = MISSING if est is None else ci(est, 3 if name == "kappa" else 2)
        rows.append(row)
    return pd.DataFrame(rows)
