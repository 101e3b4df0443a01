"""Where the judge and the people part: answers ranked by distance, and the confusion matrices.

Blind by default, as the Review page is: an answer is named by its id and task, never by its
family, model or variant, so whoever reads the list to edit the judge prompt is not steered by
who wrote the answer. ``unblind=True`` adds them.

The judge scores an answer as a whole (``overall``); the raters' per-criterion scores are shown
with their labels. On conversations rated turn by turn (rubric ``turn = "each"``), ``per_turn=True``
also ranks each (answer, turn) pair by its judge's per-turn score against the raters' turn scores
(:func:`turn_rows`). The confusion matrices are per criterion the judge scores: pass/fail and, on
an ordinal scale, per level, each rate with an exact (Clopper-Pearson) interval.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from judgelab.calibration.loop._load import labelled_split, people, run_scores
from judgelab.calibration.loop._split import HELD_OUT, Part, record_look
from judgelab.calibration.stats import Estimate
from judgelab.labeler.errors import InputError
from judgelab.labeler.scales import format_spec
from judgelab.labeler.store import LoopRole

_BLINDED = ("family", "model", "variant")
_CP = "Clopper-Pearson exact interval (scipy binomtest)"


def rate(successes: int, trials: int, *, level: float = 0.95, units: str = "share") -> Estimate:
    """A proportion with its exact interval (``nan`` with no trials)."""
    if trials == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0, _CP, units, level=level)
    ci = binomtest(successes, trials).proportion_ci(confidence_level=level, method="exact")
    return Estimate(successes / trials, float(ci.low), float(ci.high), trials, _CP, units, level=level)


@dataclass(frozen=True)
class Confusion:
    """One criterion's confusion matrix of the judge against the people.

    Attributes:
        criterion: What is compared (``pass/fail`` or ``overall levels``).
        matrix: Counts, rows the people's category, columns the judge's.
        rates: Per people's category, the share the judge put in the same category
            (``true pass rate``, ``true fail rate``, or ``level 3`` ...), with exact intervals.
    """

    criterion: str
    matrix: pd.DataFrame
    rates: dict[str, Estimate]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"criterion": self.criterion,
                "rows": "people", "columns": "judge",
                "labels": [str(c) for c in self.matrix.columns],
                "matrix": self.matrix.to_numpy().astype(int).tolist(),
                "rates": {k: v.to_dict() for k, v in self.rates.items()}}


@dataclass(frozen=True)
class Disagreements:
    """A judge run against the people on one part, answer by answer.

    Attributes:
        run_id: The judge run.
        part: The part of the split read.
        rows: One row per answer, farthest first: ``rank``, ``answer_id``, ``task_id``,
            ``criterion``, ``judge``, ``people``, ``distance``, ``judge_pass``, ``people_pass``,
            ``judge_reply``, ``raters`` (list of dicts: ``rater``, ``overall``, ``criteria``,
            ``comment``) and, unblinded only, ``family``, ``model``, ``variant``.
        confusion: One :class:`Confusion` per criterion.
        unblind: Whether family, model and variant are shown.
        looks: Held-out looks so far, this one included (0 on the tuning part).
        by_family: Unblinded only: per family ``n``, ``mean_residual`` (judge minus people) and
            ``mean_distance``, farthest family first; empty when blind.
        turns: Asked with ``per_turn=True`` only (else ``None``): one row per (answer, turn),
            farthest first (see :func:`turn_rows`), plus ``family``, ``model``, ``variant`` unblinded.
    """

    run_id: str
    part: Part
    rows: pd.DataFrame
    confusion: tuple[Confusion, ...]
    unblind: bool
    looks: int
    by_family: pd.DataFrame = field(default_factory=pd.DataFrame)
    turns: pd.DataFrame | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``turns`` only when asked for)."""
        rows = self.rows.replace({np.nan: None}).to_dict(orient="records")
        out = {"run_id": self.run_id, "part": self.part, "blind": not self.unblind, "held_out_looks": self.looks,
               "answers": rows, "confusion": [c.to_dict() for c in self.confusion],
               "by_family": self.by_family.to_dict(orient="records")}
        if self.turns is not None:
            out["turns"] = self.turns.astype(object).replace({np.nan: None}).to_dict(orient="records")
        return out

    def csv_frame(self) -> pd.DataFrame:
        """The rows flattened for a CSV: the raters' labels as one text column; per turn when asked for."""
        if self.turns is not None:
            flat = self.turns.copy()
            flat["raters"] = [" | ".join(f"{r['rater']}: {r['score']:g}" for r in raters) for raters in flat["raters"]]
            return flat
        flat = self.rows.copy()
        flat["raters"] = [" | ".join(_rater_text(r) for r in raters) for raters in flat["raters"]]
        return flat


def _rater_text(r: dict[str, Any]) -> str:
    crit = ", ".join(f"{k} {v:g}" for k, v in (r.get("criteria") or {}).items())
    text = f"{r['rater']}: {r['overall']:g}" if r.get("overall") is not None else f"{r['rater']}: -"
    text += f" ({crit})" if crit else ""
    return text + (f" \u201c{r['comment']}\u201d" if r.get("comment") else "")


def confusion(people_cat: pd.Series, judge_cat: pd.Series, labels: list[Any], *, criterion: str,
              names: dict[Any, str] | None = None, level: float = 0.95) -> Confusion:
    """The confusion matrix of two categorical columns (rows: people) and each category's rate.

    Args:
        people_cat: The people's category per answer.
        judge_cat: The judge's category per answer (same index).
        labels: The categories, in order.
        criterion: What is compared.
        names: A rate's name per category (default ``"level <c>"``).
        level: Confidence level of the rates' intervals.
    """
    matrix = pd.crosstab(people_cat, judge_cat).reindex(index=labels, columns=labels, fill_value=0)
    matrix.index.name, matrix.columns.name = "people", "judge"
    rates = {}
    for c in labels:
        total = int(matrix.loc[c].sum())
        name = (names or {}).get(c, f"level {c:g}" if isinstance(c, float) else f"level {c}")
        rates[name] = rate(int(matrix.loc[c, c]), total, level=level,
                           units=f"share of the people's {name.removeprefix('true ').split(' ')[0]} answers "
                                 "the judge put there too")
    return Confusion(criterion, matrix, rates)


def turn_rows(judgements: pd.DataFrame, labels: pd.DataFrame, *, scale: str,
              replies: dict[Any, str | None] | None = None, names: dict[str, str] | None = None) -> pd.DataFrame:
    """Each (answer, turn) the judge and the raters both scored, farthest first.

    The judge's score of a turn is its first parsed per-turn judgement on ``scale`` (as the
    per-turn calibration reads it); the people's is the mean of the raters' turn scores.

    Args:
        judgements: Parsed per-turn judgements: ``answer_id``, ``task_id``, ``turn``, ``n_turns``,
            ``format``, ``value``, ``judgement_id``.
        labels: The raters' turn scores: ``answer_id``, ``rater_id``, ``turn``, ``score``.
        scale: The rubric's scale; judgements on another are left out.
        replies: The judge's raw reply per ``judgement_id``.
        names: A rater's name per ``rater_id`` (default: the id).

    Returns:
        ``rank``, ``answer_id``, ``task_id``, ``turn``, ``n_turns``, ``judge``, ``people``,
        ``distance``, ``judge_reply``, ``raters`` (list of dicts: ``rater``, ``score``); ties in
        distance by answer id then turn.
    """
    own = judgements[judgements["format"] == scale]
    judge = (own.sort_values("judgement_id", kind="stable").drop_duplicates(["answer_id", "turn"])
             [["answer_id", "task_id", "turn", "n_turns", "value", "judgement_id"]])
    marks = labels.assign(answer_id=labels["answer_id"].astype(str), turn=labels["turn"].astype(int))
    human = marks.groupby(["answer_id", "turn"], as_index=False)["score"].mean()
    both = judge.assign(answer_id=judge["answer_id"].astype(str), turn=judge["turn"].astype(int)).merge(
        human, on=["answer_id", "turn"])
    both["distance"] = (both["value"].astype(float) - both["score"].astype(float)).abs()
    both = both.sort_values(["distance", "answer_id", "turn"], ascending=[False, True, True]).reset_index(drop=True)
    who: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in marks.sort_values(["answer_id", "turn", "rater_id"]).itertuples():
        rater = (names or {}).get(str(row.rater_id), str(row.rater_id))
        who.setdefault((str(row.answer_id), int(row.turn)), []).append({"rater": rater, "score": float(row.score)})
    return pd.DataFrame({
        "rank": np.arange(1, len(both) + 1),
        "answer_id": both["answer_id"], "task_id": both["task_id"].astype(str),
        "turn": both["turn"].astype(int), "n_turns": both["n_turns"].astype(int),
        "judge": both["value"].astype(float), "people": both["score"].astype(float).round(3),
        "distance": both["distance"].round(3),
        "judge_reply": [(replies or {}).get(j) for j in both["judgement_id"]],
        "raters": [who.get((a, int(t)), []) for a, t in zip(both["answer_id"], both["turn"], strict=True)],
    })


def disagreements(
    store: LoopRole, run_id: str | None = None, *, part: Part = "tuning", unblind: bool = False, seed: int = 0,
    level: float = 0.95, per_turn: bool = False,
) -> Disagreements:
    """A judge run's answers ranked by how far the judge is from the people, and its confusion matrices.

    Args:
        store: The project store.
        run_id: The judge run (default: the newest run that scored the pool).
        part: The part of the held-out split read (``"tuning"`` by default); a look at the
            held-out part is recorded.
        unblind: Show each answer's family, model and variant.
        seed: Seed of the split when the project has none yet.
        level: Confidence level of the rates' intervals.
        per_turn: Also rank each (answer, turn) of the conversations rated turn by turn.

    Raises:
        InputError: ``per_turn`` and the run has no per-turn judgements on the rubric's scale, or
            no rater has scored a turn.
    """
    scores = run_scores(store, run_id) if run_id is not None else run_scores(store, _newest(store))
    data = scores.data
    who = people(data)
    split = labelled_split(store, data, seed=seed)
    keep = set(split.select(who.index, part))
    looks = record_look(store, [data.run_id], what="disagreements") if part == HELD_OUT else 0
    frame = scores.frame.merge(who, left_on="answer_id", right_index=True)
    frame = frame[frame["answer_id"].isin(keep)].copy()
    frame["distance"] = (frame["score"] - frame["human"]).abs()
    frame = frame.sort_values(["distance", "answer_id"], ascending=[False, True]).reset_index(drop=True)
    replies = _replies(store, data.run_id, frame["judgement_id"])
    raters = _raters(store, frame["answer_id"])
    info = data.answers.set_index("answer_id")
    rows = pd.DataFrame({
        "rank": np.arange(1, len(frame) + 1),
        "answer_id": frame["answer_id"], "task_id": frame["task_id"], "criterion": "overall",
        "judge": frame["score"], "people": frame["human"].round(3), "distance": frame["distance"].round(3),
        "judge_pass": frame["pass"], "people_pass": frame["human_pass"],
        "judge_reply": [replies.get(j) for j in frame["judgement_id"]],
        "raters": [raters.get(a, []) for a in frame["answer_id"]],
    })
    by_family = pd.DataFrame()
    if unblind:
        for col in _BLINDED:
            rows[col] = frame["answer_id"].map(info[col]).to_numpy()
        by_family = (frame.assign(residual=frame["score"] - frame["human"]).groupby("family")
                     .agg(n=("answer_id", "size"), mean_residual=("residual", "mean"),
                          mean_distance=("distance", "mean"))
                     .round(3).sort_values("mean_distance", ascending=False).reset_index())
    tables = []
    passed = frame.dropna(subset=["pass", "human_pass"])
    if not passed.empty:
        tables.append(confusion(passed["human_pass"].map({1.0: "pass", 0.0: "fail"}),
                                passed["pass"].map({1.0: "pass", 0.0: "fail"}), ["pass", "fail"],
                                criterion="pass/fail", names={"pass": "true pass rate", "fail": "true fail rate"},
                                level=level))
    levels = list(format_spec(data.rubric.scale).levels)
    if len(levels) > 2 and not frame.empty:
        grid = np.asarray(levels)
        near = [float(grid[np.abs(grid - v).argmin()]) for v in frame["score"]]
        tables.append(confusion(frame["human_category"].astype(float), pd.Series(near, index=frame.index), levels,
                                criterion="overall levels", level=level))
    turns = _turns(store, data, split.select(data.turn_judgements["answer_id"].unique(), part), unblind) \
        if per_turn else None
    return Disagreements(data.run_id, part, rows, tuple(tables), unblind, looks, by_family, turns)


def _turns(store: LoopRole, data: Any, keep: list[str], unblind: bool) -> pd.DataFrame:
    """The per-turn rows of the answers of the part read; a run without them is refused plainly."""
    judged, scale = data.turn_judgements, data.rubric.scale
    if judged.empty or not (judged["format"] == scale).any():
        raise InputError(f"judge run {data.run_id} has no per-turn judgements on the rubric's scale {scale}",
                         fix="score the conversations turn by turn under a rubric with turn = \"each\" "
                             "(`judgelab score`), or drop --per-turn.")
    if data.turn_labels.empty:
        raise InputError("no rater has scored the turns of a conversation yet: nothing to set the judge's turns by",
                         fix="have the raters score each turn (rubric turn = \"each\"), or drop --per-turn.")
    names = {str(i): str(n) for i, n in zip(data.labels["rater_id"], data.labels["rater_name"], strict=True)
             if n is not None and not pd.isna(n)}
    judged = judged[judged["answer_id"].astype(str).isin(set(keep))]
    rows = turn_rows(judged, data.turn_labels, scale=scale,
                     replies=_replies(store, data.run_id, judged["judgement_id"]), names=names)
    if unblind:
        info = data.answers.set_index("answer_id")
        for col in _BLINDED:
            rows[col] = rows["answer_id"].map(info[col]).to_numpy()
    return rows


def _newest(store: LoopRole) -> str:
    from judgelab.calibration.calibrate import load_calibration_data

    return load_calibration_data(store).run_id


def _replies(store: LoopRole, run_id: str, judgement_ids: pd.Series) -> dict[Any, str | None]:
    rows = store.run_judgements(run_id)
    rows = rows[rows["judgement_id"].isin(set(judgement_ids))]
    return {j: (None if pd.isna(r) else str(r)) for j, r in zip(rows["judgement_id"], rows["raw"], strict=True)}


def _raters(store: LoopRole, answer_ids: pd.Series) -> dict[str, list[dict[str, Any]]]:
    notes = store.label_notes(answer_ids.tolist())
    out: dict[str, list[dict[str, Any]]] = {}
    for row in notes.itertuples():
        criteria = json.loads(row.criteria) if isinstance(row.criteria, str) and row.criteria else {}
        out.setdefault(str(row.answer_id), []).append({
            "rater": str(row.rater_name),
            "overall": None if pd.isna(row.overall) else float(row.overall),
            "criteria": {str(k): float(v) for k, v in criteria.items()},
            "comment": None if pd.isna(row.comment) or not row.comment else str(row.comment),
        })
    return out


def render_disagreements(result: Disagreements, *, top: int = 20) -> str:
    """The disagreements as plain text: the farthest ``top`` answers (or turns), then the confusion matrices."""
    blind = "" if result.unblind else "; blind: no family, model or variant (--unblind shows them)"
    if result.turns is not None:
        return _render_turns(result, result.turns, top, blind)
    lines = [f"Judge run {result.run_id} against the people on the {result.part} part: {len(result.rows)} answers, "
             f"farthest first{blind}"]
    if result.looks:
        lines.append(f"  held-out look {result.looks} (recorded)")
    for row in result.rows.head(top).itertuples():
        who = f" [{row.family} {row.model} {row.variant}]" if result.unblind else ""
        lines.append(f"  {row.rank:>3}. {row.answer_id} (task {row.task_id}){who}: judge {row.judge:g}, people "
                     f"{row.people:g}, |judge - people| {row.distance:g}")
        reply = (row.judge_reply or "").strip().replace("\n", " ")
        if reply:
            lines.append(f"       judge: {reply[:160]}{'...' if len(reply) > 160 else ''}")
        for r in row.raters:
            lines.append(f"       {_rater_text(r)}")
    for fam in result.by_family.itertuples():
        lines.append(f"family {fam.family}: {fam.n} answers, mean judge - people {fam.mean_residual:+g}, "
                     f"mean |judge - people| {fam.mean_distance:g}")
    for table in result.confusion:
        lines.append(f"confusion [{table.criterion}] (rows: people, columns: judge)")
        lines += ["  " + line for line in table.matrix.to_string().splitlines()]
        for name, est in table.rates.items():
            pct = round(est.level * 100)
            lines.append(f"  {name}: {est.estimate:.2f} ({pct}% CI {est.ci_low:.2f} to {est.ci_high:.2f}; "
                         f"n={est.n}; exact)" if est.n else f"  {name}: no answers")
    return "\n".join(lines)


def _render_turns(result: Disagreements, turns: pd.DataFrame, top: int, blind: str) -> str:
    lines = [f"Judge run {result.run_id} against the people on the {result.part} part, per turn: {len(turns)} "
             f"turns of {turns['answer_id'].nunique()} conversations, farthest first{blind}"]
    if result.looks:
        lines.append(f"  held-out look {result.looks} (recorded)")
    for row in turns.head(top).itertuples():
        who = f" [{row.family} {row.model} {row.variant}]" if result.unblind else ""
        lines.append(f"  {row.rank:>3}. {row.answer_id} turn {row.turn} of {row.n_turns} (task {row.task_id}){who}: "
                     f"judge {row.judge:g}, people {row.people:g}, |judge - people| {row.distance:g}")
        reply = (row.judge_reply or "").strip().replace("\n", " ")
        if reply:
            lines.append(f"       judge: {reply[:160]}{'...' if len(reply) > 160 else ''}")
        if row.raters:
            lines.append("       " + ", ".join(f"{r['rater']}: {r['score']:g}" for r in row.raters))
    if turns.empty:
        lines.append("  no turn of this part has both a judge score and the raters' scores")
    return "\n".join(lines)
