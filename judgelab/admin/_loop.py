"""The Judge loop page's view-models: disagreements, a compare of two runs, the versions' history.

Plain functions of the store and of :mod:`judgelab.calibration.loop`'s results, so the page only wires
widgets to them.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from judgelab.calibration.loop import CompareReport, Disagreements, compare_history, held_out_summary
from judgelab.labeler.store import LoopRole


def loop_runs(store: LoopRole) -> list[str]:
    """The runs with pointwise judgements, newest first."""
    runs = store.calibration_runs()
    return [str(r) for r in runs.loc[runs["n_pointwise"] > 0, "run_id"]]


def versions_history(store: LoopRole) -> pd.DataFrame:
    """Each judge version (run) with its model, family, rubric and the compares it took part in.

    Returns:
        ``run_id``, ``created_at``, ``model``, ``family``, ``rubric``, ``compares`` (e.g.
        ``"B vs run-1 on tuning: B is better"``), newest first.
    """
    runs = store.calibration_runs()
    history = compare_history(store)
    rows = []
    for run in runs.itertuples():
        seen = [f"{'A' if h['run_a'] == run.run_id else 'B'} vs "
                f"{h['run_b'] if h['run_a'] == run.run_id else h['run_a']} on {h['part']}: {h['verdict']}"
                for h in history if run.run_id in (h["run_a"], h["run_b"])]
        rows.append({"run_id": run.run_id, "created_at": run.created_at, "model": run.model, "family": run.family,
                     "rubric": f"{run.rubric_id} v{run.rubric_version}" if run.rubric_id else "",
                     "compares": "; ".join(seen)})
    return pd.DataFrame(rows, columns=["run_id", "created_at", "model", "family", "rubric", "compares"])


def held_out_status(store: LoopRole) -> dict[str, Any]:
    """The held-out looks: ``looks``, ``runs`` (distinct runs looked at) and ``table`` of each look."""
    summary = held_out_summary(store)
    table = pd.DataFrame([{"at": e["at"], "what": e["what"], "runs": ", ".join(e["runs"])}
                          for e in summary["entries"]], columns=["at", "what", "runs"])
    return {"looks": summary["looks"], "runs": summary["runs"], "table": table}


def disagreement_table(result: Disagreements) -> pd.DataFrame:
    """The ranked answers (or turns, when asked for) for a table: the raters' labels as text, the reply shortened."""
    flat = result.csv_frame()
    flat["judge_reply"] = [(r or "")[:300] for r in flat["judge_reply"]]
    return flat.drop(columns=["criterion"], errors="ignore")


def confusion_tables(result: Disagreements) -> list[tuple[str, pd.DataFrame, pd.DataFrame]]:
    """Per criterion: its name, the matrix (rows people, columns judge) and its rates with intervals."""
    out = []
    for table in result.confusion:
        rates = pd.DataFrame([{"rate": name, "estimate": e.estimate, "ci_low": e.ci_low, "ci_high": e.ci_high,
                               "n": e.n} for name, e in table.rates.items()])
        matrix = table.matrix.copy()
        matrix.index = [f"people {c}" for c in matrix.index]
        matrix.columns = [f"judge {c}" for c in matrix.columns]
        out.append((table.criterion, matrix, rates))
    return out


def compare_table(report: CompareReport) -> pd.DataFrame:
    """One row per figure of a compare: A, B, B - A with its interval, units and verdict."""
    return pd.DataFrame([{"figure": f.name, "A": f.a, "B": f.b, "B - A": f.diff.estimate, "ci_low": f.diff.ci_low,
                          "ci_high": f.diff.ci_high, "better": f.better, "verdict": f.verdict, "units": f.diff.units}
                         for f in report.comparison.figures])
