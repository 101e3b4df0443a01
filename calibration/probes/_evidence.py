"""Reading a probe run's evidence back: the JSONL file, and the report card's estimates from it."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.calibration.probes import byline, decoration, format_study, length, position
from judgelab.calibration.probes._base import BiasResult
from judgelab.calibration.probes._errors import ErrorControl, control_errors
from judgelab.calibration.probes._plan import BIASES
from judgelab.calibration.probes.format_study import FormatRow
from judgelab.calibration.stats import Adjustment
from judgelab.labeler.errors import InputError

# -- reading evidence -------------------------------------------------------------------------

_REQUIRED = ("bias", "kind", "format", "status", "verdict", "score", "order", "trial", "arm")


def read_evidence(path: str | Path) -> pd.DataFrame:
    """Load a JSONL evidence file written by ``judgelab probe``.

    Raises:
        InputError: Naming the file and row when it is missing, not JSON lines, or lacks the
            fields a report needs.
    """
    file = Path(path)
    if not file.is_file():
        raise InputError("no such evidence file", file=str(file),
                         fix="pass the --out file of a `judgelab probe` run.")
    rows = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"is not valid JSON: {exc.msg}", file=str(file), row=number,
                             fix="each line must be one JSON object from `judgelab probe`.") from None
        if not isinstance(obj, dict):
            raise InputError("is not a JSON object", file=str(file), row=number)
        missing = [k for k in _REQUIRED if k not in obj]
        if missing:
            raise InputError(
                f"lacks the evidence field(s) {missing}", file=str(file), row=number,
                column=missing[0], fix="pass a file written by `judgelab probe --out`.",
            )
        rows.append(obj)
    if not rows:
        raise InputError("the evidence file is empty", file=str(file),
                         fix="run `judgelab probe ... --out FILE` first.")
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Analysis:
    """Everything the report card shows, computed from evidence rows alone.

    Attributes:
        results: One :class:`BiasResult` per probe with pairwise rows, in card order.
        formats: The format study's rows (empty when it was not run).
        judgements: Evidence rows.
        parse_failures: Replies that did not parse.
        errors: Calls that failed after retries.
        cached: Judgements served from the cache.
        cost_usd: Money the judgements cost (cache hits cost nothing).
        models: Judge models in the evidence.
        judge_families: Judge families in the evidence.
        runs: Run ids in the evidence.
        n_pairs: Pairs (trials) in the pairwise probes.
        n_pool: Pool answers scored by pointwise probes.
        judge_specs: The judge specs the evidence was judged under, one line each (name, file
            hash, settings); empty for judgelab's built-in prompt.
        judge_endpoints: The provider and endpoint host of each judge (``"openai at
            api.openai.com"``); empty for an offline judge or older evidence.
        error_control: How the verdicts were adjusted for the number of rows tested, with the
            placebo arm's false-alarm check (:mod:`judgelab.calibration.probes._errors`).
    """

    results: list[BiasResult]
    formats: list[FormatRow] = field(default_factory=list)
    judgements: int = 0
    parse_failures: int = 0
    errors: int = 0
    cached: int = 0
    cost_usd: float = 0.0
    models: tuple[str, ...] = ()
    judge_families: tuple[str, ...] = ()
    runs: tuple[str, ...] = ()
    n_pairs: int = 0
    n_pool: int = 0
    judge_specs: tuple[str, ...] = ()
    error_control: ErrorControl | None = None
    judge_endpoints: tuple[str, ...] = ()

    def result(self, bias: str) -> BiasResult | None:
        """The result of one probe, if it ran."""
        return next((r for r in self.results if r.bias == bias), None)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "results": [r.to_dict() for r in self.results],
            "formats": [f.to_dict() for f in self.formats],
            "judgements": self.judgements,
            "parse_failures": self.parse_failures,
            "errors": self.errors,
            "cached": self.cached,
            "cost_usd": self.cost_usd,
            "models": list(self.models),
            "judge_families": list(self.judge_families),
            "runs": list(self.runs),
            "n_pairs": self.n_pairs,
            "n_pool": self.n_pool,
            "judge_specs": list(self.judge_specs),
            "judge_endpoints": list(self.judge_endpoints),
            "error_control": None if self.error_control is None else self.error_control.to_dict(),
        }


def analyse_evidence(
    rows: pd.DataFrame, *, audits: dict[str, Any] | None = None, adjust: Adjustment = "holm"
) -> Analysis:
    """Turn evidence rows into the report card's estimates (no judge calls).

    Each probe reads its rows on its own; the verdicts are then adjusted for the number of rows
    tested (:func:`~judgelab.calibration.probes._errors.control_errors`).

    Args:
        rows: Evidence rows (:func:`read_evidence`).
        audits: Padding-audit result for the padded rewrites in the evidence, if known.
        adjust: ``"holm"`` (default: at most a 5% chance of any false FAIL), ``"bh"``
            (Benjamini-Hochberg) or ``"none"`` (each row at 95% on its own).
    """
    results: list[BiasResult] = []
    formats: list[FormatRow] = []
    for bias in BIASES:
        sub = rows[rows["bias"] == bias]
        if sub.empty:
            continue
        if bias == "position":
            results.append(position.analyse(sub))
        elif bias in length.VARIANTS:
            results.append(length.analyse(sub, bias, audits=audits if bias == "verbosity" else None))
        elif bias in decoration.DECORATIONS:
            results.append(decoration.analyse(sub, bias))
        elif bias == "byline":
            results.append(byline.analyse(sub))
        else:
            formats = format_study.analyse(sub)
    results, control = control_errors(results, rows, method=adjust)
    status = rows["status"]
    # The format study's comparative formats are pairwise calls too, on pool answers, not pairs.
    pairwise = rows[(rows["kind"] == "pairwise") & (rows["bias"] != "format")]
    pointwise = rows[rows["kind"] == "pointwise"]
    cost = pd.to_numeric(rows["cost_usd"], errors="coerce").sum() if "cost_usd" in rows else 0.0
    pool_ids = pointwise["answer_id"]
    if "parent_answer_id" in pointwise:
        # Variant rows name their parent; format-study rows score the parent itself.
        pool_ids = pointwise["parent_answer_id"].fillna(pool_ids)
    return Analysis(
        results=results,
        formats=formats,
        judgements=len(rows),
        parse_failures=int((status == "parse_failure").sum()),
        errors=int((status == "error").sum()),
        cached=int(rows["cached"].fillna(False).astype(bool).sum()) if "cached" in rows else 0,
        cost_usd=0.0 if math.isnan(float(cost)) else float(cost),
        models=_distinct(rows, "model"),
        judge_families=_distinct(rows, "judge_family"),
        runs=_distinct(rows, "run_id"),
        n_pairs=int(pairwise["trial"].nunique()) if not pairwise.empty else 0,
        n_pool=int(pool_ids.nunique()),
        judge_specs=_distinct(rows, "judge_spec"),
        judge_endpoints=_distinct(rows, "judge_endpoint"),
        error_control=control,
    )


def _distinct(rows: pd.DataFrame, column: str) -> tuple[str, ...]:
    if column not in rows:
        return ()
    return tuple(str(v) for v in dict.fromkeys(rows[column].dropna()))
