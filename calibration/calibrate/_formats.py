"""Section builder for the scoring formats a judge run used (seed 001's format diagnostics).

For each format: distinct values, effective levels, tie probability, agreement with a reference
score (the humans, or another format of the same run) and the parse rate over every reply, with
the four quantities a judge-based pipeline should report.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from judgelab.calibration.calibrate._load import CalibrationData, first_judgement
from judgelab.calibration.calibrate._model import FormatRow, HumanScoreRule, ProbeSection, ReportOptions
from judgelab.calibration.calibrate._probes import position_results
from judgelab.calibration.calibrate._rater_model import fit_rater_models, model_human_scores
from judgelab.calibration.numbers import ci, num
from judgelab.calibration.stats import (
    Estimate,
    format_diagnostics,
    human_scores,
    proportion,
)
from judgelab.labeler.errors import InputError
from judgelab.labeler.scales import PAIRWISE_FORMATS, POINTWISE_FORMATS, is_pointwise

Reference = str
"""What format diagnostics are measured against: ``"human"`` (the human score per answer) or
the name of another pointwise format judged in the same run."""


def _decoding_rule(run: Mapping[str, Any]) -> str:
    """How the run's judge decoded and how its replies were read, as the run records them."""
    params = run.get("params") or {}
    nested = params.get("judge_params")
    spec = params.get("judge_spec")
    spec = spec if isinstance(spec, Mapping) else {}
    # The spec's settings apply unless the judge's own request parameters say otherwise.
    source = {**{k: spec.get(k) for k in ("temperature", "top_p", "top_k")}, **params,
              **(nested if isinstance(nested, Mapping) else {})}
    decoding = {k: source[k] for k in ("temperature", "top_p", "top_k") if source.get(k) is not None}
    imported = run.get("judge_kind") == "import"
    if "temperature" in decoding and float(decoding["temperature"]) == 0:
        head = "greedy decoding (temperature 0)"
    elif decoding:
        head = "sampling with " + ", ".join(f"{k}={v}" for k, v in decoding.items())
    elif run.get("judge_kind") == "fake":
        head = "fake judge (no sampling: scores are a seeded function of the answer)"
    elif imported:
        head = "imported judgements (decoding not recorded)"
    else:
        head = "decoding parameters not recorded in the run"
    return f"{head}; {_parse_rule(spec, imported)}"


def _parse_rule(spec: Mapping[str, Any], imported: bool) -> str:
    """How replies became values: judgelab's VERDICT line, the spec's verdict rules, or as imported."""
    if imported:
        return ("values as imported (read outside judgelab; a row without a value is counted as a parse "
                "failure)")
    templates = [t for t in spec.get("templates") or [] if isinstance(t, Mapping)]
    if templates:
        rules = "; ".join(f"{t.get('format')} by `{t.get('regex')}`" for t in templates)
        return (f"strict parse by the judge spec's verdict rules ({rules}), the last match wins, an unparsed "
                "reply is a recorded failure")
    return "strict parse, the last VERDICT line wins, an unparsed reply is a recorded failure"


def format_rows(
    data: CalibrationData,
    *,
    reference: Reference = "human",
    probes: ProbeSection | None = None,
    opts: ReportOptions | None = None,
    seed: int = 0,
    n_resamples: int = 2000,
    level: float = 0.95,
    human_rule: HumanScoreRule = "mean",
) -> tuple[list[FormatRow], list[str]]:
    """Format diagnostics for every scoring format the run used, against a reference score.

    Args:
        data: The run.
        reference: ``"human"`` (default: the human score per answer, collapsed by
            ``human_rule``) or a pointwise format of the same run whose scores are the
            reference (e.g. ``"numeric100"``).
        probes: The run's probe section (for the comparative formats' slot bias).
        opts: Bootstrap options (else built from ``seed``, ``n_resamples``, ``level``,
            ``human_rule``).
        seed: Seed of the bootstraps.
        n_resamples: Bootstrap resamples.
        level: Confidence level.
        human_rule: How several raters are collapsed into the human reference.

    Returns:
        ``(rows, skipped)``: one :class:`FormatRow` per format, and reasons for formats (or
        the whole section) that could not be computed.

    Raises:
        InputError: On an unknown ``reference``.
    """
    opts = opts or ReportOptions(human_rule=human_rule, seed=seed, n_resamples=n_resamples, level=level)
    if probes is None:
        probes = ProbeSection(position=tuple(position_results(data, opts)))
    ref, ref_name = _reference_scores(data, reference, opts)
    decoding = _decoding_rule(data.run)
    rows: list[FormatRow] = []
    skipped: list[str] = []
    point, pair = data.pointwise, data.pairwise
    declared = [f for f in dict.fromkeys(point["format"]) if f not in POINTWISE_FORMATS and is_pointwise(str(f))]
    for fmt in [*(f for f in POINTWISE_FORMATS if f in set(point["format"])), *declared]:
        sub = point[(point["format"] == fmt) & (point["variant"].fillna("original") == "original")]
        n_replies, n_parsed = len(sub), int((sub["status"] == "parsed").sum())
        per = (sub.assign(ok=sub["status"] == "parsed").sort_values(["answer_id", "ok", "judgement_id"],
                                                                     ascending=[True, False, True])
               .drop_duplicates("answer_id"))
        scores = per["value"].where(per["ok"]).to_numpy(dtype=float)
        reference_values = per["answer_id"].map(ref).to_numpy(dtype=float)
        diag = format_diagnostics(scores, reference_values, per["task_id"].astype(str).to_numpy(),
                                  format_name=fmt, n_resamples=opts.n_resamples, level=opts.level,
                                  rng=opts.seed)
        diag = dataclasses.replace(diag, parse_rate=_parse_rate(n_parsed, n_replies, opts.level))
        rows.append(FormatRow(diag, "pointwise", "the parsed score of each original answer (first parse "
                              "when judged more than once)", decoding, "not comparative (one answer per call)",
                              ref_name))
    for fmt in [f for f in PAIRWISE_FORMATS if f in set(pair["format"])]:
        sub = pair[pair["format"] == fmt]
        row = _comparative_row(sub, fmt, ref, ref_name, decoding, probes, opts)
        if row is None:
            skipped.append(f"format {fmt}: no candidate has a parsed comparison")
        else:
            rows.append(row)
    if not rows:
        skipped.append("format diagnostics: the run holds no judgements in a known format")
    return rows, skipped


def _parse_rate(k: int, n: int, level: float) -> Estimate:
    est = proportion(k, n=n, level=level)
    return Estimate(est.estimate, est.ci_low, est.ci_high, n, "share of every judge reply that parsed; "
                    "Wilson score interval", "share of replies", level, {"parsed": k, "failed": n - k})


def _reference_scores(data: CalibrationData, reference: Reference, opts: ReportOptions) -> tuple[pd.Series, str]:
    if reference == "human":
        labels = data.reference_labels(opts.human_rule)
        rated = labels[labels["overall"].notna()]
        if rated.empty:
            return pd.Series(dtype=float), "human score (no labels yet)"
        if opts.human_rule == "dawid-skene":
            models = opts.rater_models or fit_rater_models(data)
            scores, _ = model_human_scores(rated.rename(columns={"overall": "score"}),
                                           models.get("overall") or models["pass"])
            return scores, "human score per answer (posterior mean of the raters' overall labels under Dawid-Skene)"
        hs = human_scores(rated.rename(columns={"overall": "score"}), rule=opts.collapse, score_col="score",
                          people_col="n_raters")
        what = ("the adjudicated overall label, else the mean of the raters' current overall labels"
                if opts.human_rule == "adjudicated" else f"{opts.human_rule} of the raters' current overall labels")
        return hs.scores, f"human score per answer ({what})"
    if not is_pointwise(reference):
        raise InputError(
            f"unknown reference {reference!r}",
            fix=f"use 'human' or a pointwise format of the run ({', '.join(POINTWISE_FORMATS)}).",
        )
    judged = first_judgement(data.pointwise, reference)
    if judged.empty:
        raise InputError(
            f"the run has no parsed {reference} judgements to use as the reference",
            fix="use --reference human, or a format the run judged.",
        )
    return judged.set_index("answer_id")["value"].astype(float), f"the judge's own {reference} score"


def _comparative_row(
    sub: pd.DataFrame, fmt: str, ref: pd.Series, ref_name: str, decoding: str, probes: ProbeSection, opts: ReportOptions
) -> FormatRow | None:
    from judgelab.calibration.formats import tournament_scores

    matches = [
        (str(a), str(b), None if s != "parsed" else float(v))
        for a, b, v, s in zip(sub["answer_id"], sub["answer_b_id"], sub["value"], sub["status"], strict=True)
    ]
    scored = tournament_scores(matches)
    if not any(math.isfinite(s.score) for s in scored.values()):
        return None
    task_of: dict[str, str] = {}
    for a, b, t in zip(sub["answer_id"], sub["answer_b_id"], sub["task_id"], strict=True):
        task_of.setdefault(str(a), str(t))
        task_of.setdefault(str(b), str(t))
    ids = list(scored)
    scores = np.array([scored[c].score for c in ids], dtype=float)
    reference_values = pd.Series(ids).map(ref).to_numpy(dtype=float)
    diag = format_diagnostics(scores, reference_values, np.array([task_of[c] for c in ids]), format_name=fmt,
                              n_resamples=opts.n_resamples, level=opts.level, rng=opts.seed)
    diag = dataclasses.replace(diag, parse_rate=_parse_rate(int((sub["status"] == "parsed").sum()), len(sub),
                                                            opts.level))
    slots = [p for p in probes.position if p.format == fmt]
    if slots:
        n_pairs = sum(p.n_pairs for p in slots)
        n_both = sum(p.n_both_orders for p in slots)
        parts = [f"both orders judged for {n_both} of {n_pairs} pairs"]
        for p in slots:
            if p.decomposition is not None:
                b = p.decomposition.b
                parts.append(f"slot-A bias b = {num(b.estimate, 2, signed=True)} ({ci(b, 2)}; "
                             f"{p.probe}{'/' + p.arm if p.arm else ''})")
        slot_text = "; ".join(parts)
    else:
        slot_text = "order handling unknown"
    return FormatRow(diag, "comparative", "each candidate's mean win probability over its comparisons "
                     "((v + 2)/4 from its own slot; tournament scoring)", decoding, slot_text, ref_name)
