"""The bias report card: markdown, JSON and PNG, from an evidence file alone.

The card follows judge-probe's: one row per bias with the raw reading and (with ``mitigate``)
the reading after swap-averaging, a 95% interval for each, and a PASS/WARN/FAIL verdict per bias
("FAIL → PASS" when swap-averaging changes it). The verdicts are adjusted for the number of rows
tested (Holm by default, stated on the card, with each reading's p-value) and the placebo arm's
lift is printed as the empirical false-alarm check (:mod:`judgelab.calibration.probes._errors`). Under the
table: what Raw and After mean, the thresholds, the swap consistency rate and the parse-failure
count. judgelab adds the pointwise
gaps in the judge's own units with lengths and the length ratio, the padding-audit result, the
byline caveat, the slot decomposition and the format study.

Rendering never calls the judge: everything comes from :func:`judgelab.calibration.probes.
analyse_evidence`. The PNG is an Altair chart saved through ``vl-convert`` (offline, the data
inline in the spec).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from judgelab.calibration.numbers import MISSING, ci, interval, num, pct
from judgelab.calibration.probes import Analysis, BiasResult
from judgelab.calibration.probes._errors import SENSITIVITY_ROWS
from judgelab.calibration.probes.byline import NOT_SELF_PREFERENCE
from judgelab.calibration.probes.length import TRUNCATION_RULE
from judgelab.calibration.stats import THRESHOLDS, Detectable, Estimate, detectable_effect
from judgelab.labeler.scales import format_range

__all__ = [
    "TITLE",
    "card_chart",
    "card_json",
    "detectable",
    "header_line",
    "render_markdown",
    "render_png",
    "thresholds_text",
]

TITLE = "LLM-as-judge bias report card"

_UNITS_SHORT = {"percentage points": "pp", "judge scale points": "pts", "verdict points": "vp"}


def _interval(est: Estimate | None, digits: int = 1) -> str:
    if est is None:
        return MISSING
    if est.ci_low == est.ci_high == est.estimate:
        return "exact (by construction)" if "construction" in est.method else "zero width"
    return interval(est.ci_low, est.ci_high, digits)


def _short(est: Estimate | None) -> str:
    if est is None:
        return MISSING
    return num(est.estimate, 1, signed=True, unit=_UNITS_SHORT.get(est.units, est.units))


def _after(r: BiasResult) -> str:
    """The after-swap-averaging cell: the recomputed reading, or for position what it costs."""
    what = r.details.get("after_reading")
    if what and r.mitigated is not None:
        return f"{num(r.mitigated.estimate, 0)}% {what}"
    return _short(r.mitigated)


def _after_interval(r: BiasResult) -> str:
    if r.details.get("after_reading") and r.mitigated is not None:
        lo, hi = r.mitigated.ci_low, r.mitigated.ci_high
        return MISSING if math.isnan(lo) or math.isnan(hi) else f"{num(lo, 0)}% to {num(hi, 0)}%"
    return _interval(r.mitigated)


def header_line(analysis: Analysis, *, source: str | None = None) -> str:
    """``judge: fake-judge (claude) · 1,292 judgements · n=34 pairs · ...``."""
    judge = ", ".join(analysis.models) or "unknown judge"
    if analysis.judge_families:
        judge += f" ({', '.join(analysis.judge_families)})"
    if analysis.judge_endpoints:
        judge += f" via {', '.join(analysis.judge_endpoints)}"
    parts = [f"judge: {judge}"]
    if source:
        parts.append(source)
    parts.append(f"{analysis.judgements:,} judgements")
    if analysis.n_pairs:
        parts.append(f"n={analysis.n_pairs} pairs")
    if analysis.n_pool:
        parts.append(f"{analysis.n_pool} pool answers")
    if analysis.runs:
        parts.append("run " + ", ".join(analysis.runs))
    return " · ".join(parts)


def _prompt_lines(analysis: Analysis) -> list[str]:
    """A line per judge spec the evidence was judged under (none for the built-in prompt).

    A bias measured through a team's own prompt belongs to that prompt, so the card names it.
    """
    if not analysis.judge_specs:
        return []
    return [*(f"Prompt: {spec}" for spec in analysis.judge_specs), ""]


def thresholds_text() -> str:
    """The verdict rules, stated for the reader under the table."""
    pos, dec, gap = THRESHOLDS["position"], THRESHOLDS["decoration"], THRESHOLDS["pointwise_gap"]
    return (
        f"**Thresholds** (on the size of the estimate): FAIL at {dec.fail:g} pp or more with the "
        f"95% interval excluding 0; PASS below {dec.warn:g} pp with the whole interval inside "
        f"±{dec.fail:g} pp; WARN otherwise, including a bias too few trials could resolve "
        f"(position uses the same {pos.warn:g}/{pos.fail:g} pp; pointwise gaps "
        f"{gap.warn:g}/{gap.fail:g} points on the 1-5 scale). Truncation reads the other way, as "
        f"a sensitivity check: {TRUNCATION_RULE.removeprefix('sensitivity rule: ')}."
    )


def detectable(analysis: Analysis, r: BiasResult) -> Detectable:
    """The smallest effect ``r``'s raw reading could detect: 80% power, after the card's adjustment.

    A sensitivity row (truncation) is read outside the family, at the card's level alone.
    """
    control = analysis.error_control
    alone = control is None or r.bias in SENSITIVITY_ROWS
    return detectable_effect(
        r.raw, family_size=1 if alone or control is None else max(control.family_size, 1),
        alpha=0.05 if control is None else control.alpha,
        adjustment="none" if alone or control is None else control.method,
    )


def _could_not_tell(d: Detectable) -> bool:
    """Whether a bias of failing size would have gone unseen at this n."""
    fail = THRESHOLDS["decoration"].fail if d.units == "percentage points" else None
    return fail is not None and not math.isnan(d.effect) and d.effect >= fail


def _detectable_cell(d: Detectable) -> str:
    if math.isnan(d.effect):
        return MISSING
    return f"±{num(d.effect, 0)} {_UNITS_SHORT.get(d.units, d.units)}"


def _verdict_cell(r: BiasResult, d: Detectable, *, mitigate: bool) -> str:
    text = r.verdict_text(mitigate=mitigate)
    final = r.verdict_mitigated if mitigate and r.verdict_mitigated is not None else r.verdict_raw
    if final == "WARN" and _could_not_tell(d):
        return f"{text}: could not tell"
    return text


def _main_table(analysis: Analysis, *, mitigate: bool) -> list[str]:
    results = analysis.results
    if mitigate:
        lines = [
            "| Bias | Raw | After swap-avg | 95% CI (raw) | 95% CI (after) | Detectable at this n | Verdict |",
            "|---|---:|---:|---|---|---:|---|",
        ]
        for r in results:
            d = detectable(analysis, r)
            lines.append(
                f"| {r.label} | {_short(r.raw)} | {_after(r)} | {_interval(r.raw)} | "
                f"{_after_interval(r)} | {_detectable_cell(d)} | {_verdict_cell(r, d, mitigate=True)} |"
            )
    else:
        lines = ["| Bias | Raw | 95% CI | n | Detectable at this n | Verdict |", "|---|---:|---|---:|---:|---|"]
        for r in results:
            d = detectable(analysis, r)
            lines.append(
                f"| {r.label} | {_short(r.raw)} | {_interval(r.raw)} | {r.raw.n} | {_detectable_cell(d)} | "
                f"{_verdict_cell(r, d, mitigate=False)} |"
            )
    return lines


def _detectable_note(analysis: Analysis) -> str:
    if not analysis.results:
        return ""
    control = analysis.error_control
    m = 1 if control is None else max(control.family_size, 1)
    level = detectable_effect(analysis.results[0].raw, family_size=m,
                              adjustment="none" if control is None else control.method).alpha
    return (
        "**Detectable at this n**: the smallest true effect each row would detect with 80% power at "
        f"its n, after the adjustment for the {m} readings tested together (each read at α = {level:.4g}; "
        "the standard error from the row's own interval). A WARN marked *could not tell* has a detectable "
        f"effect of {THRESHOLDS['decoration'].fail:g} pp or more: a bias of failing size would have looked "
        "like none, so the row says nothing either way. That 80% is the chance the test is significant; a "
        f"FAIL also needs the estimate at {THRESHOLDS['decoration'].fail:g} pp or more, so a true effect right at "
        "the threshold is marked FAIL only about half the time, at any n. `judgelab estimate --detect 10` prints "
        "the pairs each probe needs to detect 10 pp, what they cost, and the pairs at which FAIL itself has 80% "
        "power."
    )


def _pointwise_section(analysis: Analysis) -> list[str]:
    rows = [
        r for r in analysis.results
        if r.bias in ("verbosity", "truncation")
        and isinstance(r.details.get("pointwise_gap"), Estimate)
    ]
    if not rows:
        return []
    fmt = str(rows[0].details.get("pointwise_format") or "likert5")
    lo, hi = format_range(fmt)
    lines = [
        "",
        f"## Pointwise gaps, in the judge's own units ({fmt}, {lo:g}-{hi:g})",
        "",
        "| Probe | Original mean | Variant mean | Gap | 95% CI | Answers (tasks) | Verdict |",
        "|---|---:|---:|---:|---|---:|---|",
    ]
    for r in rows:
        gap: Estimate = r.details["pointwise_gap"]
        padded = r.bias == "verbosity"
        name = "Padding (padded − original)" if padded else "Truncation (original − truncated)"
        variant_mean = r.details.get("padded_mean_score" if padded else "truncated_mean_score")
        lines.append(
            f"| {name} | {num(r.details.get('original_mean_score'), 2)} | "
            f"{num(variant_mean, 2)} | {num(gap.estimate, 2, signed=True)} | "
            f"{_interval(gap, 2)} | {gap.extra.get('pairs', gap.n)} ({gap.n}) | "
            f"{r.details.get('pointwise_verdict', 'n/a')} |"
        )
    lines.append("")
    for r in rows:
        variant = "padded" if r.bias == "verbosity" else "truncated"
        words_o = r.details.get("mean_words_original")
        words_v = r.details.get(f"mean_words_{variant}")
        ratio = r.details.get("length_ratio")
        if words_o is not None and words_v is not None:
            lines.append(
                f"- Lengths ({variant}): originals {num(words_o, 0)} words on average, {variant} "
                f"{num(words_v, 0)} (ratio {num(ratio, 2)}x)."
            )
    lines.append(
        "- Padding gap: positive = the judge pays for empty words. Truncation gap: positive = "
        "the judge marks missing content down, as it should. Read the two together: a fix that "
        "shrinks both by the same amount made the judge less sensitive to length, not fairer."
    )
    return lines


def _formats_section(analysis: Analysis) -> list[str]:
    if not analysis.formats:
        return []
    lines = [
        "",
        "## Scoring formats (the same answers under each format)",
        "",
        "| Format | Replies | Parse rate | Distinct values | D1 | D2 | Tie probability | "
        "Top score tied | Mean score |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for f in analysis.formats:
        lines.append(
            f"| {f.format} | {f.replies} | {pct(f.parse_rate.estimate, 0)} | {f.distinct_values} | "
            f"{num(f.d1, 2)} | {num(f.d2, 2)} | "
            f"{num(f.tie_probability, 2)} | {pct(f.top_tied_share, 0)} | "
            f"{num(f.mean_score, 2)} |"
        )
    lines += [
        "",
        "- D1/D2: effective number of equally used score levels (exponentiated Shannon entropy / "
        "inverse tie probability). Top score tied: share of tasks whose best score is shared, "
        "where a selector must break the tie at random. Agreement with humans (tau_a, Somers' D, "
        "top-1) needs human labels: `judgelab formats`.",
    ]
    if any(f.format in ("anchored", "tournament") for f in analysis.formats):
        lines.append(
            "- anchored and tournament score answers from pairwise verdicts: anchored, each "
            "answer against its task's first answer (shown as Response A, itself included); "
            "tournament, every within-task pair once in listing order. Their scores are win "
            "probabilities (0..1); their parse rate counts comparisons, the other figures answers."
        )
    return lines


_READING_NAMES = {"raw": "raw", "after": "after swap-avg", "pointwise": "pointwise gap"}


def _p(value: float) -> str:
    if math.isnan(value):
        return MISSING
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def _error_section(analysis: Analysis) -> list[str]:
    """How the card controls its error rate: the adjustment, each reading's p, the placebo."""
    control = analysis.error_control
    if control is None or (not control.tests and control.placebo is None):
        return []
    lines = ["", "## Error rate: many rows, one false-alarm rate", ""]
    if control.tests:
        if control.method == "none":
            lines.append(
                f"Each of the {control.family_size} readings below is read at 95% on its own "
                "(no adjustment): with this many rows, a judge with no bias at all fails some row "
                "far more often than 5% of the time."
            )
        else:
            lines.append(
                f"Verdicts are adjusted for the {control.family_size} readings tested together "
                f"({control.method_name}, α = {control.alpha:g}): a FAIL needs the size rule "
                f"and an adjusted p-value below {control.alpha:g}"
                + (", so a judge with no bias shows a FAIL on at most 5% of cards"
                   if control.method == "holm" else "")
                + ". A FAIL that does not survive reads WARN. Truncation is a sensitivity "
                "check with its own rule, outside the family."
            )
        lines += [
            "",
            "| Row | Reading | p | Adjusted p | Verdict alone | Verdict |",
            "|---|---|---:|---:|---|---|",
        ]
        for t in control.tests:
            lines.append(
                f"| {t.bias} | {_READING_NAMES[t.reading]} | {_p(t.p_value)} | {_p(t.p_adjusted)} | "
                f"{t.verdict} | {t.adjusted} |"
            )
        lines.append("")
        lines.append(
            "- p: two-sided p-value of \"no bias\", read off the reading's 95% interval (normal "
            "approximation on the side of zero)."
        )
    if control.placebo is not None:
        placebo = control.placebo
        lines.append(
            f"- **Placebo arm** (the target answer unchanged, both orders): "
            f"{_short(placebo)} ({_interval(placebo)}), {control.placebo_verdict or 'WARN'} under "
            "the decoration rule. This is the empirical false-alarm check: the lift noise alone "
            "produces on this data with this judge; a decoration row is only news when it stands "
            "clear of it."
        )
    return lines


def render_markdown(analysis: Analysis, *, mitigate: bool, source: str | None = None) -> str:
    """The card as markdown."""
    results = analysis.results
    lines = [f"# {TITLE}", "", header_line(analysis, source=source), "", *_prompt_lines(analysis)]
    if results:
        lines += _main_table(analysis, mitigate=mitigate)
    else:
        lines.append("No pairwise probe in this evidence.")
    lines += ["", "- **Raw** = single-order judgements, each counted on its own."]
    if mitigate:
        lines.append(
            "- **After swap-avg** = each comparison judged in both orders and the verdict kept "
            "only when the two orders agree (a flip is \"no decision\", half a win); the figure "
            "is recomputed on those decisions. This is a real recomputed score, not a "
            "suggestion: a pure order effect collapses to about 0, a genuine content "
            "preference survives. Position is the exception: after swap-averaging its advantage is 0 "
            "by construction, so its column shows what the mitigation costs, the decisions it loses."
        )
    lines += [f"- {text}" for text in (thresholds_text(), _detectable_note(analysis)) if text]
    lines.append(
        "- Decoration rows (verbosity, formatting, tone, citations, truncation) are the "
        "decorated side's win rate minus the placebo arm's (the same answer undecorated), with "
        "the decorated side alternating between the pair's two answers across trials and every "
        "comparison run in both orders; Newcombe interval."
    )
    position = analysis.result("position")
    if position is not None:
        c = position.details.get("consistency")
        if isinstance(c, Estimate):
            lines.append(
                f"- **Swap consistency**: {pct(c.estimate, 0)} of {c.n} pairs gave the same "
                f"outcome in both orders ({ci(c, 0, percent=True)}). Swap-averaging turns the others into "
                "ties, so the position row's after-swap reading is the decisions it loses: PASS under 20% "
                "(interval under 40%), FAIL at 40% or more when the raw reading failed (the bias is gone only "
                "because most decisions are), else WARN."
            )
        b = position.details.get("slot_bias_b")
        q = position.details.get("candidate_preference_q")
        if isinstance(b, Estimate) and isinstance(q, Estimate):
            lines.append(
                f"- Slot decomposition (seed 001): slot-A bias b = {num(b.estimate, 2, signed=True)} "
                f"({_interval(b, 2)}), candidate preference q = {num(q.estimate, 2, signed=True)} "
                f"({_interval(q, 2)}) in verdict points; a judge driven by quality has b near 0."
            )
    share = analysis.parse_failures / analysis.judgements if analysis.judgements else math.nan
    lines.append(
        f"- **Parse failures**: {analysis.parse_failures} of {analysis.judgements:,} replies "
        f"({pct(share, 0)}) did not parse; {analysis.errors} "
        "calls failed after retries. Both are recorded in the evidence with their reason and "
        "left out of every figure, never turned into a score."
    )
    per_bias = [f"{r.bias} {r.parse_failures}" for r in results if r.parse_failures]
    study = sum(f.replies - int(f.parse_rate.extra.get("successes", 0)) for f in analysis.formats)
    if study:
        per_bias.append(f"format study {study}")
    if per_bias:
        lines.append("  Parse failures by probe: " + ", ".join(per_bias) + ".")
    if analysis.cached:
        lines.append(
            f"- {analysis.cached:,} judgements were served from the cache (identical requests "
            "already answered): no new spend."
        )
    notes = [n for r in results for n in r.notes if n != NOT_SELF_PREFERENCE]
    lines += [f"- {n}" for n in notes]
    if analysis.result("byline") is not None:
        lines.append(f"- **{NOT_SELF_PREFERENCE}**")
    lines += _error_section(analysis)
    lines += _pointwise_section(analysis)
    lines += _formats_section(analysis)
    if results:
        lines += ["", "## How each figure was computed", ""]
        for r in results:
            lines.append(f"- {r.label}: {r.raw.method} ({r.raw.units}, n={r.raw.n}).")
    cost = analysis.cost_usd
    lines += ["", f"Spend recorded in the evidence: ${cost:.4f}. Re-running `judgelab report` "
              "never calls the judge."]
    return "\n".join(lines) + "\n"


def card_json(analysis: Analysis, *, mitigate: bool, source: str | None = None) -> dict[str, Any]:
    """The card as a JSON-ready dict (every estimate with its interval, n, method and units)."""
    rows = [
        {
            "bias": r.bias,
            "label": r.label,
            "raw": r.raw.to_dict(),
            "after_swap_avg": None if r.mitigated is None else r.mitigated.to_dict(),
            "verdict": r.verdict_text(mitigate=mitigate),
            "verdict_raw": r.verdict_raw,
            "verdict_after": r.verdict_mitigated,
            "rule": r.rule,
            "detectable": detectable(analysis, r).to_dict(),
            "could_not_tell": _could_not_tell(detectable(analysis, r)),
        }
        for r in analysis.results
    ]
    return {
        "title": TITLE,
        "header": header_line(analysis, source=source),
        "judge_specs": list(analysis.judge_specs),
        "mitigate": mitigate,
        "rows": rows,
        "thresholds": {k: vars(v) for k, v in THRESHOLDS.items()},
        "error_control": None if analysis.error_control is None else analysis.error_control.to_dict(),
        "analysis": analysis.to_dict(),
    }


# -- PNG -------------------------------------------------------------------------------------

_VERDICT_COLOURS = {"PASS": "#2e7d32", "WARN": "#ef6c00", "FAIL": "#c62828"}


def card_chart(analysis: Analysis, *, mitigate: bool, source: str | None = None) -> alt.LayerChart:
    """The card as an Altair chart.

    Each bias's estimate with its 95% interval, the threshold bands, and the verdict beside it.
    """
    records = []
    for r in analysis.results:
        readings = [("Raw", r.raw)]
        # A cost (position's decisions lost) is not a bias: it has no place on the bias axis.
        if mitigate and r.mitigated is not None and not r.details.get("after_reading"):
            readings.append(("After swap-avg", r.mitigated))
        for reading, est in readings:
            if math.isnan(est.estimate):
                continue
            lo = est.estimate if math.isnan(est.ci_low) else est.ci_low
            hi = est.estimate if math.isnan(est.ci_high) else est.ci_high
            records.append({
                "bias": r.label, "reading": reading, "estimate": est.estimate, "lo": lo,
                "hi": hi, "label": f"{est.estimate:+.1f}",
            })
    data = pd.DataFrame(records, columns=["bias", "reading", "estimate", "lo", "hi", "label"])
    verdicts = pd.DataFrame(
        [{"bias": r.label, "verdict": r.verdict_text(mitigate=mitigate),
          "final": r.verdict_mitigated if mitigate and r.verdict_mitigated else r.verdict_raw}
         for r in analysis.results],
        columns=["bias", "verdict", "final"],
    )
    order = [r.label for r in analysis.results]
    extent = max([10.0, *data["lo"].abs().tolist(), *data["hi"].abs().tolist()]) * 1.1
    dec = THRESHOLDS["decoration"]
    bands = pd.DataFrame([
        {"from": -dec.warn, "to": dec.warn, "zone": "PASS zone"},
        {"from": dec.fail, "to": extent, "zone": "FAIL zone"},
        {"from": -extent, "to": -dec.fail, "zone": "FAIL zone"},
    ])
    x = alt.X(
        "estimate:Q", title="bias (percentage points)", scale=alt.Scale(domain=[-extent, extent])
    )
    y = alt.Y("bias:N", sort=order, title=None, axis=alt.Axis(labelLimit=420))
    band = alt.Chart(bands).mark_rect(opacity=0.12).encode(
        x=alt.X("from:Q", scale=alt.Scale(domain=[-extent, extent])), x2="to:Q",
        color=alt.Color("zone:N", scale=alt.Scale(domain=["PASS zone", "FAIL zone"],
                                                    range=["#2e7d32", "#c62828"]),
                        legend=alt.Legend(title=None, orient="bottom")),
    )
    zero = alt.Chart(pd.DataFrame({"estimate": [0.0]})).mark_rule(color="#555").encode(x=x)
    offset = alt.YOffset("reading:N", sort=["Raw", "After swap-avg"])
    colour = alt.Color("reading:N", sort=["Raw", "After swap-avg"],
                       scale=alt.Scale(range=["#1565c0", "#6a1b9a"]),
                       legend=alt.Legend(title=None, orient="bottom"))
    quiet = alt.Color("reading:N", sort=["Raw", "After swap-avg"],
                      scale=alt.Scale(range=["#1565c0", "#6a1b9a"]), legend=None)
    base = alt.Chart(data).encode(y=y, yOffset=offset)
    bars = base.mark_rule(strokeWidth=2.5).encode(
        x=alt.X("lo:Q", scale=alt.Scale(domain=[-extent, extent])), x2="hi:Q", color=quiet
    )
    dots = base.mark_circle(size=90, opacity=1).encode(
        x=x, color=colour, tooltip=["bias", "reading", "estimate", "lo", "hi"]
    )
    labels = base.mark_text(dy=-9, fontSize=10).encode(x=x, text="label:N", color=quiet)
    verdict_text = alt.Chart(verdicts).mark_text(
        align="left", fontWeight="bold", fontSize=13
    ).encode(
        y=alt.Y("bias:N", sort=order, title=None),
        x=alt.value(770),
        text="verdict:N",
        color=alt.Color("final:N", scale=alt.Scale(domain=list(_VERDICT_COLOURS),
                                                    range=list(_VERDICT_COLOURS.values())),
                        legend=None),
    )
    subtitle = [header_line(analysis, source=source)]
    # The spec's name, file and hash; the settings after them are in the markdown card.
    subtitle += [f"prompt: {spec.split('): ', 1)[0]})" for spec in analysis.judge_specs]
    position = analysis.result("position")
    if position is not None and isinstance(position.details.get("consistency"), Estimate):
        c = position.details["consistency"]
        subtitle.append(f"swap consistency {pct(c.estimate, 0)} of {c.n} pairs · "
                        f"parse failures {analysis.parse_failures} of {analysis.judgements:,}")
    chart = (
        alt.layer(band, zero, bars, dots, labels, verdict_text)
        .resolve_scale(color="independent")
        .properties(
            width=760, height=max(60 * len(order), 120),
            title=alt.TitleParams(TITLE, subtitle=subtitle, anchor="start", fontSize=18),
            padding={"left": 10, "right": 90, "top": 10, "bottom": 10},
        )
    )
    return chart


def render_png(
    analysis: Analysis, path: str | Path, *, mitigate: bool, source: str | None = None
) -> Path:
    """Save the card chart as a PNG (vl-convert, offline: the ``png`` extra); returns the path.

    Raises:
        InputError: vl-convert is not installed.
    """
    from judgelab.calibration.png import png_renderer

    png_renderer()  # Altair's own error for a missing renderer does not say how to get it
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    card_chart(analysis, mitigate=mitigate, source=source).save(str(target), scale_factor=2)
    return target
