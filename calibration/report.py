"""Rendering the calibration report: markdown, JSON and PNG, and the tables and charts the analyst page shows.

Every form carries the same figures from one :class:`~judgelab.calibration.calibrate.CalibrationReport`:
the tables are built once here (:func:`report_tables`) and printed as markdown or handed to
``st.dataframe``; the charts are built once (:func:`report_charts`) and drawn by
``st.altair_chart`` or rendered to PNG with vl-convert. Charts embed their data inline and
vl-convert renders offline, so a PNG needs no network. When any human label is simulated, the
markdown opens with that warning, the JSON's first key says so and the PNG's title carries it.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import altair as alt
import pandas as pd

from judgelab.calibration.numbers import HasInterval, ci, interval, num
from judgelab.calibration.probes.position import statistics_lines
from judgelab.calibration.stats import Estimate

if TYPE_CHECKING:
    from judgelab.calibration.calibrate import CalibrationReport, ResidualSection

AnyChart = alt.Chart | alt.LayerChart | alt.HConcatChart | alt.VConcatChart | alt.FacetChart
"""Any chart :func:`report_charts` returns (each is drawable with ``st.altair_chart``)."""

_WIDTH = 360
_WARN_COLOR = "#b3261e"
_COLORS = {"PPI": "#1f6f8b", "human only": "#a0a0a0"}


# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------


def residual_table(section: ResidualSection) -> pd.DataFrame:
    """One row per family: judge mean, human mean, residual with its interval, answers, tasks."""
    rows = [
        {"family": fam, "judge": r.judge_mean, "human": r.human_mean, "residual": r.estimate, "ci_low": r.ci_low,
         "ci_high": r.ci_high, "interval": _interval_name(r.interval, r.unreliable), "answers": r.n_answers,
         "tasks": r.n}
        for fam, r in section.families.items()
    ]
    return pd.DataFrame(rows, columns=["family", "judge", "human", "residual", "ci_low", "ci_high", "interval",
                                       "answers", "tasks"])


def _interval_name(short: str, unreliable: str | None) -> str:
    """The interval's method in a table cell, marked when it is not to be trusted (a refused one says its name)."""
    return f"{short} (UNRELIABLE)" if unreliable and not short.startswith("none") else short


def _not_trusted(short: str) -> str:
    """The heading of the note beside an interval: refused (two raters) or unreliable."""
    return "No interval" if short.startswith("none") else "UNRELIABLE interval"


def gap_table(report: CalibrationReport) -> pd.DataFrame:
    """The self-preference gap on each scale, with its interval, bound and units."""
    rows = []
    for scale, section in report.residuals.items():
        g = section.gap
        if g is None:
            continue
        rows.append({
            "scale": scale,
            "gap": g.estimate,
            "ci_low": g.ci_low,
            "ci_high": g.ci_high,
            "interval": _interval_name(g.interval, g.unreliable),
            "tasks": g.n,
            "units": g.units,
            "upper_bound": g.upper_bound,
            "own_family": g.own_family,
            "other_families": ", ".join(g.other_families),
        })
    return pd.DataFrame(rows, columns=["scale", "gap", "ci_low", "ci_high", "interval", "tasks", "units",
                                       "upper_bound", "own_family", "other_families"])


def kappa_table(report: CalibrationReport) -> pd.DataFrame:
    """Judge-vs-human kappa rows: scope, what, weighting, kappa with interval, agreement, n."""
    rows = []
    for k in report.kappas:
        r = k.result
        rows.append({
            "scope": k.scope,
            "what": k.what,
            "weights": r.weights or "unweighted",
            "kappa": r.kappa.estimate,
            "ci_low": r.kappa.ci_low,
            "ci_high": r.kappa.ci_high,
            "interval": _interval_name(str(r.kappa.extra.get("interval", "")), r.kappa.extra.get("unreliable")),
            "agreement": r.percent_agreement.estimate,
            "n": r.kappa.n,
            "ties_to_lower": k.ties_to_lower,
            "note": r.reason or "",
        })
    return pd.DataFrame(rows, columns=["scope", "what", "weights", "kappa", "ci_low", "ci_high", "interval",
                                       "agreement", "n", "ties_to_lower", "note"])


def confusion_table(report: CalibrationReport, what: str) -> pd.DataFrame:
    """The judge-vs-human confusion counts for one label kind, stacked by scope.

    Rows are ``(scope, judge category)``, columns the humans' categories; ``scope`` is
    ``"all"`` then each family. Weighted and unweighted kappas share one matrix, so it appears
    once per scope.
    """
    frames = []
    seen: set[str] = set()
    for k in report.kappas:
        if k.what != what or k.scope in seen:
            continue
        seen.add(k.scope)
        cm = k.result.confusion
        frame = pd.DataFrame(cm.to_numpy(), columns=[str(c) for c in cm.columns])
        frame.insert(0, "judge \\ human", [str(c) for c in cm.index])
        frame.insert(0, "scope", k.scope)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["scope", "judge \\ human"])


def alpha_table(report: CalibrationReport) -> pd.DataFrame:
    """Krippendorff's alpha among raters, per label kind."""
    rows = [
        {"what": name, "alpha": e.estimate, "ci_low": e.ci_low, "ci_high": e.ci_high, "units": e.n,
         "raters": e.extra.get("n_raters"), "note": e.extra.get("reason") or ""}
        for name, e in report.alphas.items()
    ]
    return pd.DataFrame(rows, columns=["what", "alpha", "ci_low", "ci_high", "units", "raters", "note"])


def ppi_table(report: CalibrationReport) -> pd.DataFrame:
    """Per family: the PPI pass rate and the human-only one, each with its interval (percent)."""
    rows = [
        {"family": p.family, "ppi": p.ppi.estimate, "ppi_low": p.ppi.ci_low, "ppi_high": p.ppi.ci_high,
         "human_only": p.human_only.estimate, "human_low": p.human_only.ci_low,
         "human_high": p.human_only.ci_high,
         "interval": _interval_name(str(p.ppi.extra.get("interval", "")), p.ppi.extra.get("unreliable")),
         "labelled": p.n_labelled, "judge_only": p.n_unlabelled, "lambda": p.ppi.extra.get("lam")}
        for p in report.ppi
    ]
    return pd.DataFrame(rows, columns=["family", "ppi", "ppi_low", "ppi_high", "human_only", "human_low",
                                       "human_high", "interval", "labelled", "judge_only", "lambda"])


def probe_gap_table(report: CalibrationReport) -> pd.DataFrame:
    """Pointwise variant gaps: original and variant means, the gap with interval, verdict."""
    rows = []
    for g in report.probes.gaps:
        rows.append({
            "variant": g.variant,
            "format": g.format,
            "original": g.original_mean,
            "variant_mean": g.variant_mean,
            "gap": g.gap.estimate,
            "ci_low": g.gap.ci_low,
            "ci_high": g.gap.ci_high,
            "pairs": g.pairs,
            "verdict": g.verdict or "",
            "thresholds": "" if g.thresholds is None else f"warn {g.thresholds[0]:g}, fail {g.thresholds[1]:g}",
        })
    return pd.DataFrame(rows, columns=["variant", "format", "original", "variant_mean", "gap", "ci_low",
                                       "ci_high", "pairs", "verdict", "thresholds"])


_POSITION_FIGURES = ("first_shown_pp", "q", "b", "consistency", "raw_lift_pp", "swap_lift_pp", "lc_win_rate")


def position_table(report: CalibrationReport) -> pd.DataFrame:
    """Order-swapped comparisons per probe arm.

    First-shown advantage (percentage points), q and b (verdict points), consistency (share of
    pairs), raw and swap-averaged lifts (percentage points) and the length-controlled win rate
    (share), each with ``<name>_low``/``<name>_high``.
    """
    rows = []
    for p in report.probes.position:
        d = p.decomposition
        figures: dict[str, Estimate | None] = {
            "first_shown_pp": p.first_shown,
            "q": None if d is None else d.q,
            "b": None if d is None else d.b,
            "consistency": None if d is None else d.consistency,
            "raw_lift_pp": p.raw_lift,
            "swap_lift_pp": p.swap_lift,
            "lc_win_rate": p.length_controlled,
        }
        row: dict[str, Any] = {"probe": p.probe + (f"/{p.arm}" if p.arm else ""), "format": p.format,
                               "pairs": p.n_pairs, "both_orders": p.n_both_orders}
        for name, est in figures.items():
            row[name] = None if est is None else est.estimate
            row[f"{name}_low"] = None if est is None else est.ci_low
            row[f"{name}_high"] = None if est is None else est.ci_high
        row["candidate"] = p.candidate
        rows.append(row)
    columns = ["probe", "format", "pairs", "both_orders"]
    for name in _POSITION_FIGURES:
        columns += [name, f"{name}_low", f"{name}_high"]
    return pd.DataFrame(rows, columns=[*columns, "candidate"])


_FORMAT_AGREEMENT = ("tau_a", "tau_b", "somers_d", "top1", "parse_rate")


def format_table(report: CalibrationReport) -> pd.DataFrame:
    """Format diagnostics per format (seed 001).

    Agreement figures and the parse rate carry ``<name>_low``/``<name>_high`` and the number of
    prompts (replies) they rest on.
    """
    rows = []
    for f in report.formats:
        d = f.diagnostics
        row: dict[str, Any] = {
            "format": f.format,
            "scored": d.n_scored,
            "compared": d.n,
            "prompts": d.n_prompts,
            "distinct": d.distinct_values,
            "D1": d.d1,
            "D2": d.d2,
            "tie_probability": d.tie_probability,
            "top_tied_share": d.top_tied_share,
        }
        for name in _FORMAT_AGREEMENT:
            est: Estimate = getattr(d, name)
            row |= {name: est.estimate, f"{name}_low": est.ci_low, f"{name}_high": est.ci_high,
                    f"{name}_n": est.n}
        rows.append(row)
    columns = ["format", "scored", "compared", "prompts", "distinct", "D1", "D2", "tie_probability",
               "top_tied_share"]
    for name in _FORMAT_AGREEMENT:
        columns += [name, f"{name}_low", f"{name}_high", f"{name}_n"]
    return pd.DataFrame(rows, columns=columns)


def provenance_table(report: CalibrationReport) -> pd.DataFrame:
    """What the provenance audit checked."""
    return pd.DataFrame(list(report.provenance_records), columns=["artifact", "author_kind", "author"])


def report_tables(report: CalibrationReport) -> dict[str, pd.DataFrame]:
    """Every table of the report by name (the analyst page shows these)."""
    out: dict[str, pd.DataFrame] = {}
    for scale, section in report.residuals.items():
        out[f"residuals_{scale}"] = residual_table(section)
    out["gap"] = gap_table(report)
    out["provenance"] = provenance_table(report)
    out["kappa"] = kappa_table(report)
    out["alpha"] = alpha_table(report)
    out["ppi"] = ppi_table(report)
    out["probe_gaps"] = probe_gap_table(report)
    out["position"] = position_table(report)
    out["formats"] = format_table(report)
    out["rater_model"] = rater_model_table(report)
    out["turns_position"] = turn_table(report, "position")
    out["turns_number"] = turn_table(report, "number")
    return out


def rater_model_table(report: CalibrationReport) -> pd.DataFrame:
    """Under the rule ``dawid-skene``, one row per (label column, rater): labels, accuracy, confusion diagonal.

    Args:
        report: The report (empty table under the other rules).

    Returns:
        ``labels of, rater`` (the name), ``rater_id, n_labels, accuracy``, ``kappa`` (the accuracy
        chance-corrected at the rater's own label rates: near 0 for a random or constant rater) and
        one column per category, ``"4→4"``: the estimated chance the rater gives that category when it
        is the true one (the confusion matrix's diagonal; ``fail→fail``, ``pass→pass`` for verdicts).
        Columns of a category the other model lacks are empty. In the order of the label columns, then the raters.
    """
    rows = []
    for column, model in report.rater_models.items():
        diagonal = model.confusion.diagonal(axis1=1, axis2=2)
        accuracy = model.accuracy()
        for r, rater in enumerate(model.raters):
            row: dict[str, object] = {"labels of": "pass verdict" if column == "pass" else "overall score",
                                      "rater": report.rater_names.get(str(rater), str(rater)),
                                      "rater_id": str(rater), "n_labels": model.n_labels[r],
                                      "accuracy": float(accuracy[r]),
                                      "kappa": model.agreement[r].estimate if model.agreement else None}
            for k, c in enumerate(model.categories):
                name = _category(c, column)
                row[f"{name}→{name}"] = float(diagonal[r, k])
            rows.append(row)
    return pd.DataFrame(rows)


def _category(value: float, column: str) -> str:
    if column == "pass":
        return "pass" if value else "fail"
    return f"{value:g}"


# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------


def _cell(value: Any, digits: int = 2, *, signed: bool = False) -> str:
    """One table cell: a float to ``digits`` decimals, a count as is, a flag as yes/no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if value is None or isinstance(value, float):
        return num(value, digits, signed=signed)
    return str(value)


def _md_table(frame: pd.DataFrame, fmt: Mapping[str, Callable[[Any], str]] | None = None) -> list[str]:
    fmt = fmt or {}
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    sep = "|" + "|".join("---" for _ in frame.columns) + "|"
    lines = [header, sep]
    for row in frame.itertuples(index=False):
        cells = [fmt.get(c, _cell)(v) for c, v in zip(frame.columns, row, strict=True)]
        lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return lines


def _interval_cols(
    frame: pd.DataFrame, est: str, lo: str, hi: str, digits: int, signed: bool, label: str = "95% CI"
) -> pd.DataFrame:
    """Fold ``lo``/``hi`` columns into one interval column (``label``) next to ``est``."""
    out = frame.copy()
    out[est] = [_cell(v, digits, signed=signed) for v in out[est]]
    cis = [interval(_float(a), _float(b), digits, signed=signed) for a, b in zip(out[lo], out[hi], strict=True)]
    pos = list(out.columns).index(est) + 1
    out = out.drop(columns=[lo, hi])
    out.insert(pos, label, cis)
    return out


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _not_computed(report: CalibrationReport, prefix: str) -> str:
    """"Not computed" with the reasons the report gives for the section."""
    reasons = [r for r in report.skipped if r.startswith(prefix)]
    return "Not computed: " + "; ".join(reasons) + "." if reasons else "Not computed."


def turn_table(report: CalibrationReport, by: str = "position") -> pd.DataFrame:
    """The per-turn view: one row per turn position (``by="position"``) or turn number (``"number"``)."""
    rows = report.turns.by_position if by == "position" else report.turns.by_number
    return pd.DataFrame(
        [{"turn": r.position, "judge": r.judge_mean, "human": r.human_mean, "judge − human": r.estimate.estimate,
          "ci_low": r.estimate.ci_low, "ci_high": r.estimate.ci_high, "turns": r.estimate.n,
          "conversations": r.n_answers} for r in rows],
        columns=["turn", "judge", "human", "judge − human", "ci_low", "ci_high", "turns", "conversations"])


def turn_lines(report: CalibrationReport) -> list[str]:
    """The per-turn view in plain lines (the CLI's summary); one sentence when there is none."""
    t = report.turns
    if not t.by_position and report.rubric.get("turn") != "each":
        return []  # a rubric that rates one turn (or the whole) has no per-turn view to miss
    if not t.by_position:
        return [f"per turn: none ({t.reason})"]
    lines = [f"per turn ({t.n_turns} turns of {t.n_answers} conversations; judge − human in {t.units}):"]
    for by in (t.by_position, t.by_number):
        lines += [f"  {'turn ' if r.position.isdigit() else ''}{r.position}: "
                  f"{num(r.estimate.estimate, 2, signed=True)} ({ci(r.estimate, 2)}; n = {r.estimate.n} turns, "
                  f"{r.n_answers} conversations)" for r in by]
    return lines


def _turn_markdown(report: CalibrationReport) -> list[str]:
    t = report.turns
    if not t.by_position and report.rubric.get("turn") != "each":
        return []  # a rubric that rates one turn (or the whole) has no per-turn view to miss
    lines = ["## Judge minus human, per turn", ""]
    if not t.by_position:
        return [*lines, f"No per-turn view: {t.reason}.", ""]
    for by, title in (("position", "By position"), ("number", "By turn number")):
        table = _interval_cols(turn_table(report, by), "judge − human", "ci_low", "ci_high", 2, True)
        lines += [f"### {title}", "", *_md_table(table), ""]
    return [*lines, f"Judge − human in {t.units}; {t.method}. {t.n_turns} turns of {t.n_answers} conversations.", ""]


def render_markdown(report: CalibrationReport) -> str:
    """The report as a markdown document (simulated-label warning first when it applies)."""
    lines: list[str] = []
    for part in (_header_markdown, _labels_markdown, _residual_markdown, _turn_markdown, _provenance_markdown,
                 _agreement_markdown, _ppi_markdown, _probe_markdown, _format_markdown, _skipped_markdown):
        lines += part(report)
    return "\n".join(lines).rstrip() + "\n"


def _header_markdown(report: CalibrationReport) -> list[str]:
    """The simulated-label warning, the title, what was judged how, and the notes."""
    lines: list[str] = []
    banner = report.labels.banner()
    if banner:
        lines += [f"> **{banner}**", ""]
    lines += [f"# Calibration report: judge run `{report.run_id}`", ""]
    rub = report.rubric
    lines.append(
        f"Judge `{report.judge_model}` (family `{report.judge_family or 'not recorded'}`"
        + (f", {report.judge_endpoint}" if report.judge_endpoint else "") + "), rubric "
        f"`{rub['rubric_id']}` v{rub['version']} ({rub['scale']}), judge scores read in "
        f"`{report.judge_format or 'no pointwise format'}`. All intervals are {round(report.level * 100)}%; "
        f"bootstraps use {report.n_resamples} resamples with seed {report.seed}."
    )
    lines.append("")
    for note in report.notes:
        if note == banner:
            continue
        lines.append(f"> **{note}**" if "UPPER BOUND" in note else f"- {note}")
    if len(report.notes) > (1 if banner else 0):
        lines.append("")
    return lines


def _labels_markdown(report: CalibrationReport) -> list[str]:
    lab = report.labels
    sources = ", ".join(f"{k} {v}" for k, v in lab.sources.items()) or "none"
    return [
        "## Human labels",
        "",
        f"{lab.n_labels} current labels on {lab.n_answers} answers by {lab.n_raters} raters "
        f"(by source: {sources}; {lab.n_simulated_labels} simulated, from {lab.n_simulated_raters} "
        "simulated raters)"
        + (f"; {lab.n_flagged} flagged unrateable and left out" if lab.n_flagged else "") + ".",
        "",
        *([f"{apart[0].upper()}{apart[1:]}.", ""] if (apart := lab.set_apart_line()) else []),
        report.human_rule_text(),
        "",
        *_rater_model_markdown(report),
    ]


def _rater_model_markdown(report: CalibrationReport) -> list[str]:
    """Each rater's estimated confusion under the rule ``dawid-skene`` (nothing under the others)."""
    if not report.rater_models:
        return []
    lines = ["### The model of the raters (Dawid-Skene)", ""]
    for column, model in report.rater_models.items():
        what = "pass verdicts" if column == "pass" else "overall scores"
        lines += [f"On the {what}: {model.method}; estimated share of each true category: "
                  + ", ".join(f"{c:g}: {p:.0%}" for c, p in zip(model.categories, model.priors, strict=True)) + ".", ""]
    table = rater_model_table(report)
    lines += _md_table(table, {c: functools.partial(_cell, digits=2) for c in table.columns[4:]})
    warned = [f"- **WARN** {w}" for w in report.rater_warnings()]
    return [*lines, "", "accuracy: the rater's estimated chance of giving the true category (the confusion "
                    "matrix's diagonal weighted by the categories' shares); kappa: the accuracy chance-corrected "
                    "at the rater's own label rates, on answers shared with other raters (near 0 for a random "
                    "rater or one who always gives the same level); k→k: the chance of "
                    "saying k when the true category is k. The whole matrices, and each kappa's interval, are in "
                    "the JSON report (`rater_model`).", "", *([*warned, ""] if warned else [])]


_RESIDUAL_TITLES = {"pass": "Pass rate (percentage points)", "score": "Overall score (rubric scale points)"}


def _residual_markdown(report: CalibrationReport) -> list[str]:
    lines = ["## Judge minus human, per family", ""]
    if not report.residuals:
        lines += ["No residuals: see *Not computed* below.", ""]
    for scale, section in report.residuals.items():
        digits = 1 if scale == "pass" else 2
        lines += [f"### {_RESIDUAL_TITLES[scale]}", ""]
        table = _interval_cols(residual_table(section), "residual", "ci_low", "ci_high", digits, True)
        names = ("judge %", "human %") if scale == "pass" else ("judge mean", "human mean")
        table = table.rename(columns=dict(zip(("judge", "human"), names, strict=True)))
        level_fmt: Callable[[Any], str] = functools.partial(_cell, digits=digits)
        lines += _md_table(table, dict.fromkeys(names, level_fmt))
        lines += ["", f"Residual = judge − human, in {section.units}; {section.method}.", ""]
        lines += [f"> **{_not_trusted(r.interval)} ({fam}):** {r.unreliable}." for fam, r in section.families.items()
                  if r.unreliable]
        g = section.gap
        if g is not None:
            bound = " This is an **upper bound** (see the provenance audit)." if g.upper_bound else ""
            shaky = f" **{_not_trusted(g.interval)}:** {g.unreliable}." if g.unreliable else ""
            lines += [
                f"**Self-preference gap** (own family `{g.own_family}` minus `{', '.join(g.other_families)}`): "
                f"**{num(g.estimate, digits, signed=True, unit=g.units)}** ({ci(g, digits)}; n = {g.n} tasks; "
                f"{g.method}).{bound}{shaky}",
                "",
            ]
        elif section.gap_reason:
            lines += [f"No self-preference gap: {section.gap_reason}.", ""]
    return lines


def _provenance_markdown(report: CalibrationReport) -> list[str]:
    lines = ["## Provenance audit", ""]
    if report.provenance is None:
        return [*lines, "Not run: the judge's family is not recorded, so own-family authorship cannot be checked.", ""]
    lines += _md_table(provenance_table(report))
    verdict = "The gap is an **upper bound**: " if report.provenance.bound == "upper" else "No own-family artifact: "
    return [*lines, "", verdict + report.provenance.reason + ".", ""]


def _agreement_markdown(report: CalibrationReport) -> list[str]:
    lines = ["## Agreement", "", "### Cohen's kappa, judge vs humans", ""]
    kt = kappa_table(report)
    if kt.empty:
        lines += [_not_computed(report, "kappa"), ""]
    else:
        kt = _interval_cols(kt, "kappa", "ci_low", "ci_high", 3, False)
        lines += _md_table(kt, {"agreement": lambda v: _cell(v, 3)})
        method = report.kappas[0].result.kappa.method
        ties = max((k.ties_to_lower for k in report.kappas if k.scope == "all"), default=0)
        lines += ["", f"Human category per answer: the raters' majority; a tie goes to the lower category "
                  f"(for pass verdicts an even split counts as a fail), which leans the humans' side towards "
                  f"fail ({ties} tied answer(s), column ties_to_lower). Kappa speaks for this panel of raters. "
                  f"{method}.", ""]
        for what in dict.fromkeys(k.what for k in report.kappas):
            lines += [f"Confusion matrices, {what} (rows: judge, columns: humans), overall and per family:", ""]
            lines += [*_md_table(confusion_table(report, what)), ""]
    lines += ["### Krippendorff's alpha among raters", ""]
    at = alpha_table(report)
    if at.empty:
        return [*lines, _not_computed(report, "Krippendorff"), ""]
    lines += _md_table(_interval_cols(at, "alpha", "ci_low", "ci_high", 3, False))
    method = next(iter(report.alphas.values())).method
    return [*lines, "", f"{method}; units = answers rated by two or more raters.", ""]


def _ppi_markdown(report: CalibrationReport) -> list[str]:
    lines = ["## Prediction-powered pass rates", ""]
    pt = ppi_table(report)
    if pt.empty:
        return [*lines, _not_computed(report, "PPI"), ""]
    pt = _interval_cols(pt, "ppi", "ppi_low", "ppi_high", 1, False, "PPI 95% CI")
    pt = _interval_cols(pt, "human_only", "human_low", "human_high", 1, False, "human-only 95% CI")
    lines += _md_table(pt, {"lambda": lambda v: _cell(v, 2)})
    return [*lines, "", f"PPI: {report.ppi[0].ppi.method}. Human only: {report.ppi[0].human_only.method}.", ""]


def _skipped_markdown(report: CalibrationReport) -> list[str]:
    if not report.skipped:
        return []
    return ["## Not computed", "", *[f"- {s}" for s in report.skipped], ""]


def _probe_markdown(report: CalibrationReport) -> list[str]:
    lines = ["## Probes", ""]
    probes = report.probes
    if not probes.gaps and not probes.position:
        return [*lines, "The run holds no probe variants and no order-swapped comparisons.", ""]
    if probes.gaps:
        lines += ["### Pointwise variant gaps", ""]
        table = _interval_cols(probe_gap_table(report), "gap", "ci_low", "ci_high", 2, True)
        lines += _md_table(table)
        lines += ["", "Gap = variant − original in the format's scale points; truncation is original − "
                  f"truncated (a judge that notices missing content shows a positive gap). "
                  f"{probes.gaps[0].gap.method}. Bias thresholds are the report card's 1–5 thresholds "
                  "scaled to each format's range.", ""]
    cmp = probes.comparison
    if cmp is not None:
        lines += [f"### Before/after: run `{probes.comparison_run}` → `{report.run_id}`", ""]
        frame = pd.DataFrame([
            {"gap": "padding", "before": cmp.padding_before, "after": cmp.padding_after,
             "fall": cmp.padding_fall, "fall 95% CI": cmp.padding_fall_ci},
            {"gap": "truncation", "before": cmp.truncation_before, "after": cmp.truncation_after,
             "fall": cmp.truncation_fall, "fall 95% CI": cmp.truncation_fall_ci},
        ])
        lines += _md_table(frame, {"fall 95% CI": lambda v: interval(v[0], v[1])})
        lines += ["", f"**Verdict: {cmp.verdict}.** {cmp.explanation}", ""]
    if probes.position:
        lines += ["### Position (order-swapped comparisons)", ""]
        table = position_table(report)
        for name in _POSITION_FIGURES:
            signed = name not in ("consistency", "lc_win_rate")
            table = _interval_cols(table, name, f"{name}_low", f"{name}_high", 2, signed, f"{name} 95% CI")
        lines += _md_table(table)
        p = probes.position[0]
        lines += ["", "first_shown_pp: first-shown win rate minus 50%. q = (v_fwd − v_rev)/2 is the "
                  "candidate preference and b = (v_fwd + v_rev)/2 the slot-A bias, in verdict points; "
                  "consistency is the share of pairs with the same outcome in both orders. Lifts are the "
                  "candidate's win rate minus 50% (raw: single judgements; swap: a win only when both "
                  "orders agree); lc_win_rate is the swap-averaged win rate with the length difference "
                  "regressed out." + (f" {p.length_controlled.method}." if p.length_controlled else "")
                  + " Rows are per probe arm; a decoration's lift over its placebo arm (decorated minus "
                  "baseline) is on the report card (`judgelab report`).", ""]
    if probes.statistics is not None:
        lines += ["### Position statistics of the run (`judgelab position`)", "",
                  *[f"- {line}" for line in statistics_lines(probes.statistics)],
                  "", "Every pairwise judgement of the run; a pair with an unparsed reply in either order is "
                  "inconsistent; intervals are clustered by pair.", ""]
    return lines


def _format_markdown(report: CalibrationReport) -> list[str]:
    lines = ["## Scoring formats", ""]
    if not report.formats:
        return [*lines, _not_computed(report, "format"), ""]
    full = format_table(report)
    structure = full[["format", "scored", "compared", "prompts", "distinct", "D1", "D2", "tie_probability",
                      "top_tied_share"]]
    lines += _md_table(structure, {"tie_probability": lambda v: _cell(v, 3)})
    lines.append("")
    agreement = full[["format"]].copy()
    for name in _FORMAT_AGREEMENT:
        part = _interval_cols(full[[name, f"{name}_low", f"{name}_high"]], name, f"{name}_low", f"{name}_high",
                              3, False, f"{name} 95% CI")
        agreement = agreement.join(part).assign(**{f"{name} n": full[f"{name}_n"]})
    lines += _md_table(agreement)
    lines += ["", "scored: candidates with a parsed score; compared: those with a reference score too. "
              "n: prompts with the figure defined (replies, for the parse rate)."]
    lines += ["", f"Agreement is within prompt (task) against: {report.formats[0].reference}. "
              "tau-a, Somers' D and top-1 count ties against the judge; tau-b discounts them. "
              "Top-1 is the exact expectation under random tie-breaking.", ""]
    lines += ["### What a judge-based pipeline should report (seed 001)", ""]
    for f in report.formats:
        lines.append(f"**{f.format}**")
        lines += [f"- {k}: {v}" for k, v in f.four_quantities().items()]
        lines.append("")
    return lines


# --------------------------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------------------------


def render_json(report: CalibrationReport) -> str:
    """The report as indented JSON; the first key is ``simulated_labels``."""
    return json.dumps(report.to_dict(), indent=2, allow_nan=False)


# --------------------------------------------------------------------------------------------
# Charts
# --------------------------------------------------------------------------------------------


def _interval_chart(
    frame: pd.DataFrame, *, y: str, title: str, x_title: str, color: str | None = None,
    zero: bool = True, domain: tuple[float, float] | None = None,
) -> AnyChart:
    """Points with horizontal interval bars, one row per ``y`` value (and colour).

    Each (``y``, colour) pair gets its own labelled row (``"claude · PPI"``) rather than an
    offset inside one band, so two families' rows never share a line; row labels are never
    cut short.
    """
    scale = alt.Scale(domain=list(domain)) if domain else alt.Scale(zero=False)
    if color:
        frame = frame.assign(**{y: frame[y].astype(str) + " · " + frame[color].astype(str)})
        frame = frame.sort_values(y, kind="stable")  # one family's rows together
    base = alt.Chart(frame).encode(y=alt.Y(f"{y}:N", title=None, sort=None, axis=alt.Axis(labelLimit=0)))
    if color:
        base = base.encode(
            color=alt.Color(f"{color}:N", title=None, scale=alt.Scale(domain=list(_COLORS),
                                                                      range=list(_COLORS.values()))),
        )
    bars = base.mark_rule(strokeWidth=2).encode(x=alt.X("ci_low:Q", title=x_title, scale=scale), x2="ci_high:Q")
    points = base.mark_point(filled=True, size=70).encode(
        x=alt.X("estimate:Q", scale=scale),
        tooltip=[alt.Tooltip(f"{y}:N"), alt.Tooltip("estimate:Q", format=".3f"),
                 alt.Tooltip("ci_low:Q", format=".3f"), alt.Tooltip("ci_high:Q", format=".3f"),
                 alt.Tooltip("n:Q")],
    )
    layers: list[alt.Chart] = [bars, points]
    if zero:
        layers.insert(0, alt.Chart(pd.DataFrame({"x": [0.0]})).mark_rule(color="#888", strokeDash=[4, 4])
                      .encode(x="x:Q"))
    # A fixed step per row (not a total height): a page that fits the chart to its width
    # cannot squeeze the rows onto one line.
    return alt.layer(*layers).properties(title=title, width=_WIDTH, height=alt.Step(22))


def _est_rows(items: Sequence[tuple[str, HasInterval]], scale: float = 1.0, **extra: Any) -> pd.DataFrame:
    return pd.DataFrame([
        {"label": label, "estimate": scale * e.estimate, "ci_low": scale * e.ci_low, "ci_high": scale * e.ci_high,
         "n": e.n, **extra}
        for label, e in items
    ])


def report_charts(report: CalibrationReport) -> dict[str, AnyChart]:
    """The report's charts by name.

    ``residuals``, ``gap``, ``agreement``, ``ppi``, ``probes`` and ``formats`` (only those with
    data).
    """
    charts: dict[str, AnyChart] = {}
    titles = {"pass": ("Residual, pass rate", "judge − human (percentage points)"),
              "score": ("Residual, overall score", "judge − human (rubric scale points)")}
    panels: list[AnyChart] = []
    for scale, section in report.residuals.items():
        frame = _est_rows(list(section.families.items()))
        title, axis = titles[scale]
        panels.append(_interval_chart(frame, y="label", title=title, x_title=axis))
    if panels:
        charts["residuals"] = alt.hconcat(*panels)

    gaps: list[AnyChart] = []
    for scale, section in report.residuals.items():
        if section.gap is not None:
            bound = " (upper bound)" if section.gap.upper_bound else ""
            label = f"{scale}: {section.gap.units}{bound}"
            gaps.append(_interval_chart(_est_rows([(label, section.gap)]), y="label",
                                        title=f"Self-preference gap, {scale}", x_title=section.gap.units))
    if gaps:
        charts["gap"] = alt.hconcat(*gaps)

    agree = [(f"kappa {k.what} ({k.result.weights or 'unweighted'}), {k.scope}", k.result.kappa)
             for k in report.kappas]
    agree += [(f"alpha among raters, {name}", e) for name, e in report.alphas.items()]
    agree = [(label, e) for label, e in agree if not math.isnan(e.estimate)]
    if agree:
        charts["agreement"] = _interval_chart(_est_rows(agree), y="label", title="Agreement (kappa, alpha)",
                                              x_title="coefficient", domain=(-1.0, 1.0))

    if report.ppi:
        rows = pd.concat([
            _est_rows([(p.family, p.ppi) for p in report.ppi], method="PPI"),
            _est_rows([(p.family, p.human_only) for p in report.ppi], method="human only"),
        ], ignore_index=True)
        charts["ppi"] = _interval_chart(rows, y="label", color="method", zero=False,
                                        title="Human-level pass rate: PPI vs human only",
                                        x_title="pass rate (percent)", domain=(0.0, 100.0))

    if report.probes.gaps:
        rows = _est_rows([(f"{g.variant} ({g.format})", g.gap) for g in report.probes.gaps])
        charts["probes"] = _interval_chart(rows, y="label", title="Probe gaps (truncation: original − truncated)",
                                           x_title="judge scale points")

    if report.formats:
        charts["formats"] = _format_charts(report)
    return charts


def _format_charts(report: CalibrationReport) -> alt.HConcatChart:
    levels = pd.DataFrame([
        {"format": f.format, "measure": measure, "value": value}
        for f in report.formats
        for measure, value in (("distinct", float(f.diagnostics.distinct_values)), ("D1", f.diagnostics.d1),
                               ("D2", f.diagnostics.d2))
    ])
    bars = (alt.Chart(levels).mark_bar()
            .encode(y=alt.Y("format:N", title=None), x=alt.X("value:Q", title="levels"),
                    color=alt.Color("measure:N", title=None), yOffset="measure:N",
                    tooltip=["format:N", "measure:N", alt.Tooltip("value:Q", format=".2f")])
            .properties(title="Effective levels (D1, D2) vs distinct values", width=_WIDTH,
                        height=max(60, 66 * len(report.formats))))
    agreement = []
    for f in report.formats:
        d = f.diagnostics
        for name, e in (("tau-a", d.tau_a), ("tau-b", d.tau_b), ("Somers' D", d.somers_d), ("top-1", d.top1),
                        ("parse rate", d.parse_rate)):
            if not math.isnan(e.estimate):
                agreement.append((f"{f.format}: {name}", e))
    panels: list[AnyChart] = [bars]
    if agreement:
        panels.append(_interval_chart(_est_rows(agreement), y="label", zero=True, domain=(-1.0, 1.0),
                                      title="Agreement with the reference, parse rate", x_title="value"))
    return alt.hconcat(*panels)


def combined_chart(report: CalibrationReport) -> alt.VConcatChart:
    """Every chart stacked under one title (the PNG); the simulated warning is the subtitle."""
    charts = list(report_charts(report).values())
    if not charts:
        charts = [alt.Chart(pd.DataFrame({"t": ["no figures to draw: see the markdown report"]}))
                  .mark_text(size=14).encode(text="t:N").properties(width=_WIDTH, height=40)]
    banner = report.labels.banner()
    subtitle = [banner] if banner else [f"judge {report.judge_model} · rubric {report.rubric['rubric_id']} "
                                        f"v{report.rubric['version']} · {round(100 * report.level)}% intervals"]
    title = alt.TitleParams(
        text=f"Calibration report: {report.run_id}",
        subtitle=subtitle,
        subtitleColor=_WARN_COLOR if banner else "#555",
        subtitleFontWeight="bold" if banner else "normal",
        anchor="start",
        fontSize=16,
    )
    # Each panel keeps its own colours: the PPI legend must not recolour the other panels.
    return (alt.vconcat(*charts, title=title, spacing=28).resolve_scale(color="independent")
            .resolve_legend(color="independent").configure_view(stroke=None))


def render_png(report: CalibrationReport, *, scale: float = 2.0) -> bytes:
    """The combined chart as PNG bytes, rendered offline by vl-convert (the ``png`` extra).

    Raises:
        InputError: vl-convert is not installed.
    """
    from judgelab.calibration.png import png_renderer

    vlc = png_renderer()
    spec = combined_chart(report).to_dict()
    return bytes(vlc.vegalite_to_png(vl_spec=spec, scale=scale))


def write_report(
    report: CalibrationReport,
    out: str | Path,
    *,
    png: str | Path | None = None,
    json_path: str | Path | None = None,
) -> list[Path]:
    """Write the markdown report to ``out`` and, when asked, the PNG and the JSON.

    Returns:
        The paths written, markdown first.
    """
    written = []
    md = Path(out)
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text(render_markdown(report), encoding="utf-8")
    written.append(md)
    if png is not None:
        p = Path(png)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(render_png(report))
        written.append(p)
    if json_path is not None:
        j = Path(json_path)
        j.parent.mkdir(parents=True, exist_ok=True)
        j.write_text(render_json(report) + "\n", encoding="utf-8")
        written.append(j)
    return written


__all__ = [
    "alpha_table",
    "combined_chart",
    "confusion_table",
    "format_table",
    "gap_table",
    "kappa_table",
    "position_table",
    "ppi_table",
    "probe_gap_table",
    "provenance_table",
    "render_json",
    "render_markdown",
    "render_png",
    "report_charts",
    "report_tables",
    "residual_table",
    "turn_lines",
    "turn_table",
    "write_report",
]
