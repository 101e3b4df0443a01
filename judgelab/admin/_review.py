"""Review and adjudication for the Review page.

What raters flagged and commented, the answers whose raters disagree most, every label of one
answer side by side, and the admin's adjudicated label: an answer's settled score, kept as its
own label source (``adjudicated``, :mod:`judgelab.labeler.store._review`) beside the raters' labels,
never in place of them. ``judgelab calibrate --human-rule adjudicated`` reads it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from judgelab.admin._common import display_name
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Rubric
from judgelab.labeler.queue import format_score
from judgelab.labeler.store import Rater, ReviewRole

# No family, model or variant: the lists lead to adjudication, which is blind (issue 29).
_FLAGGED_COLUMNS = ["answer_id", "task_id", "rater", "flag_reason", "comment", "labelled_at", "adjudicated"]
_COMMENT_COLUMNS = ["answer_id", "task_id", "rater", "overall", "comment", "labelled_at", "adjudicated"]
_SPREAD_COLUMNS = ["answer_id", "task_id", "raters", "scores", "low", "high", "spread", "sd", "adjudicated"]


@dataclass(frozen=True)
class ReviewBoard:
    """What needs an admin's eye under one rubric version.

    Attributes:
        rubric: The rubric version reviewed.
        flagged: Labels flagged unrateable: ``answer_id, task_id, rater, flag_reason, comment,
            labelled_at, adjudicated`` (the adjudicated overall score, ``nan`` when none). No
            family or model: the adjudicator reads blind.
        comments: The other labels with a comment: ``answer_id, task_id, rater, overall,
            comment, labelled_at, adjudicated``.
        disagreements: Answers scored by two or more raters, largest spread first: ``answer_id,
            task_id, raters`` (how many), ``scores`` (each rater's, in words), ``low``,
            ``high``, ``spread`` (high minus low), ``sd`` (population standard deviation) and
            ``adjudicated``.
        raters: Every rater with a label under the rubric: name -> display name.
        criteria: The rubric's criteria: id -> name.
        rater: The rater filter applied (a name), or ``None``.
        criterion: The criterion whose scores rank the disagreements, or ``None`` (overall).
        items: Each listed answer's opaque item id (what raters see), for naming it blind:
            answer ids often carry the family.
    """

    rubric: Rubric
    flagged: pd.DataFrame
    comments: pd.DataFrame
    disagreements: pd.DataFrame
    raters: dict[str, str]
    criteria: dict[str, str]
    rater: str | None = None
    criterion: str | None = None
    items: dict[str, str] = field(default_factory=dict)

    @property
    def score_name(self) -> str:
        """What the spread is measured on, in words."""
        return "overall score" if self.criterion is None else f"criterion {self.criteria[self.criterion]}"

    @property
    def answers(self) -> list[str]:
        """Every answer listed, disagreements first, each once: what the page offers to open."""
        ids = [*self.disagreements["answer_id"], *self.flagged["answer_id"], *self.comments["answer_id"]]
        return list(dict.fromkeys(str(a) for a in ids))


def review_board(
    store: ReviewRole,
    rubric: Rubric,
    *,
    rater: str | None = None,
    criterion: str | None = None,
    include_unversioned: bool = True,
) -> ReviewBoard:
    """Flagged items, comments and disagreements among the raters' current labels.

    Args:
        store: The project store.
        rubric: The rubric version to review.
        rater: Keep only this rater's flags and comments, and the answers they scored.
        criterion: Rank disagreements by this criterion's scores instead of the overall score.
        include_unversioned: Also read labels with no rubric (imported ones) as given under it.

    Returns:
        A :class:`ReviewBoard`.

    Raises:
        InputError: An unknown criterion or rater.
    """
    criteria = {c.criterion_id: c.name for c in rubric.criteria}
    if criterion is not None and criterion not in criteria:
        raise InputError(f"rubric {rubric.rubric_id!r} has no criterion {criterion!r}",
                         fix=f"pick one of {', '.join(criteria)}.")
    labels = store.review_labels(rubric.rubric_id, rubric.version, include_unversioned=include_unversioned)
    raters = {str(n): display_name(str(n), bool(s))
              for n, s in labels[["rater_name", "simulated"]].drop_duplicates().itertuples(index=False)}
    if rater is not None and rater not in raters:
        raise InputError(f"no labels by a rater named {rater!r} under this rubric", fix="pick a listed rater.")
    settled = store.adjudications(rubric.rubric_id, rubric.version, include_unversioned=include_unversioned)
    adjudicated = settled.drop_duplicates("answer_id").set_index("answer_id")["overall"]
    labels = labels.assign(
        rater=[raters[str(n)] for n in labels["rater_name"]],
        labelled_at=labels["created_at"],
        adjudicated=labels["answer_id"].map(adjudicated).astype(float),
    )
    mine = labels if rater is None else labels[labels["rater_name"] == rater]
    flagged = mine["flag_reason"].notna()
    commented = mine["comment"].fillna("").str.strip() != ""
    return ReviewBoard(
        rubric=rubric,
        flagged=mine[flagged][_FLAGGED_COLUMNS].reset_index(drop=True),
        comments=mine[commented & ~flagged][_COMMENT_COLUMNS].reset_index(drop=True),
        disagreements=_spread(labels, set(mine["answer_id"]), criterion, adjudicated),
        raters=raters,
        criteria=criteria,
        rater=rater,
        criterion=criterion,
        items={str(a): str(i) for a, i in labels[["answer_id", "item_id"]].drop_duplicates().itertuples(index=False)},
    )


def _spread(labels: pd.DataFrame, keep: set[str], criterion: str | None, adjudicated: pd.Series) -> pd.DataFrame:
    """Per answer in ``keep`` scored by two or more raters: their scores and spread, largest first."""
    score = labels["overall"] if criterion is None else _criterion_scores(labels, criterion)
    scored = labels.assign(score=score.astype(float))
    scored = scored[scored["score"].notna() & scored["answer_id"].isin(keep)]
    if scored.empty:
        return pd.DataFrame(columns=_SPREAD_COLUMNS)
    groups = scored.groupby("answer_id", sort=True)
    out = groups.agg(task_id=("task_id", "first"), raters=("score", "size"),
                     low=("score", "min"), high=("score", "max"))
    out["sd"] = groups["score"].std(ddof=0)
    words = {answer: " · ".join(f"{r} {format_score(v)}" for r, v in sorted(zip(g["rater"], g["score"], strict=True)))
             for answer, g in groups}
    out["scores"] = [words[a] for a in out.index]
    out = out[out["raters"] >= 2].reset_index()
    out["spread"] = out["high"] - out["low"]
    out["adjudicated"] = out["answer_id"].map(adjudicated).astype(float)
    out = out.sort_values(["spread", "sd", "answer_id"], ascending=[False, False, True])
    return out[_SPREAD_COLUMNS].reset_index(drop=True)


def _criterion_scores(labels: pd.DataFrame, criterion: str) -> pd.Series:
    return pd.Series([_criteria(c).get(criterion, math.nan) for c in labels["criteria"]], index=labels.index,
                     dtype=float)


def _criteria(text: Any) -> dict[str, float]:
    return {str(k): float(v) for k, v in json.loads(text).items()} if isinstance(text, str) and text else {}


# -- one answer --------------------------------------------------------------------------


@dataclass(frozen=True)
class Adjudication:
    """The current adjudicated label of an answer.

    Attributes:
        label_id: Its row in ``labels`` (source ``adjudicated``).
        admin: The admin who gave it.
        overall: The overall score.
        passed: The pass verdict the rubric gives it.
        criteria: Scores per criterion id (any subset).
        comment: The admin's reason.
        created_at: When it was stored.
        supersedes: The adjudication it replaced, if any.
        revealed: Whether the admin had revealed the answer's family, model and unmasked text
            (``None``: stored before judgelab recorded it).
    """

    label_id: int
    admin: str
    overall: float
    passed: bool | None
    criteria: dict[str, float]
    comment: str
    created_at: Any
    supersedes: int | None
    revealed: bool | None = None


@dataclass(frozen=True)
class AnswerSheet:
    """One answer with every current label of it, for reading side by side.

    Attributes:
        answer: ``answer_id, item_id, task_id, prompt, category, family, model, variant,
            parent_answer_id, text, blind_text, masked`` (:meth:`Store.review_answer`): the page
            shows ``blind_text`` and no family until the admin reveals them.
        rubric: The rubric version the labels are read under.
        labels: The raters' current labels, one row per rater: ``rater, overall, passed``, one
            column per criterion name, ``comment, flag_reason, seconds, labelled_at, source``.
        adjudication: The current adjudicated label, or ``None``.
        history: Every label row of the answer, edits and adjudications included
            (:meth:`Store.label_history`).
    """

    answer: dict[str, Any]
    rubric: Rubric
    labels: pd.DataFrame
    adjudication: Adjudication | None
    history: pd.DataFrame

    def side_by_side(self) -> pd.DataFrame:
        """The labels as columns (each rater, then the adjudication) and their fields as rows, as text."""
        names = [c.name for c in self.rubric.criteria]
        fields = ["overall", "pass", *names, "comment", "flag", "seconds", "labelled at"]
        columns: dict[str, list[str]] = {}
        for row in self.labels.to_dict("records"):
            columns[str(row["rater"])] = [
                _score(row["overall"]), _verdict(row["passed"]), *(_score(row[n]) for n in names),
                str(row["comment"] or ""), str(row["flag_reason"] or ""), _score(row["seconds"], digits=0),
                _when(row["labelled_at"]),
            ]
        adj = self.adjudication
        if adj is not None:
            by_name = {c.name: adj.criteria.get(c.criterion_id) for c in self.rubric.criteria}
            columns[f"adjudicated ({adj.admin})"] = [
                _score(adj.overall), _verdict(adj.passed), *(_score(by_name[n]) for n in names), adj.comment, "",
                "", _when(adj.created_at),
            ]
        return pd.DataFrame(columns, index=pd.Index(fields, name="field"))


def answer_sheet(store: ReviewRole, answer_id: str, rubric: Rubric, *, include_unversioned: bool = True) -> AnswerSheet:
    """Every current label of one answer under a rubric version, and its adjudication.

    Raises:
        InputError: No such answer.
    """
    answer = store.review_answer(answer_id)
    if answer is None:
        raise InputError(f"answer {answer_id!r} is not in the database")
    raw = store.review_labels(rubric.rubric_id, rubric.version, include_unversioned=include_unversioned,
                              answer_id=answer_id)
    names = {c.criterion_id: c.name for c in rubric.criteria}
    per_criterion = pd.DataFrame([_criteria(c) for c in raw["criteria"]], index=raw.index,
                                 columns=list(names)).rename(columns=names)
    raw = raw.assign(rater=[display_name(str(n), bool(s)) for n, s in zip(raw["rater_name"], raw["simulated"],
                                                                          strict=True)],
                     labelled_at=raw["created_at"])
    labels = pd.concat([raw[["rater", "overall", "passed"]], per_criterion,
                        raw[["comment", "flag_reason", "seconds", "labelled_at", "source"]]],
                       axis=1).reset_index(drop=True)
    settled = store.adjudications(rubric.rubric_id, rubric.version, include_unversioned=include_unversioned)
    settled = settled[settled["answer_id"] == answer_id]
    return AnswerSheet(answer, rubric, labels, _adjudication(settled), store.label_history(answer_id))


def _adjudication(frame: pd.DataFrame) -> Adjudication | None:
    if frame.empty:
        return None
    # A versioned adjudication wins over an unversioned (imported) one, then the newest.
    row = frame.assign(_v=frame["rubric_id"].notna()).sort_values(["_v", "label_id"]).iloc[-1]
    return Adjudication(
        label_id=int(row["label_id"]),
        admin=str(row["rater_name"]),
        overall=float(row["overall"]),
        passed=None if pd.isna(row["passed"]) else bool(row["passed"]),
        criteria=_criteria(row["criteria"]),
        comment=str(row["comment"] or ""),
        created_at=row["created_at"],
        supersedes=None if pd.isna(row["supersedes"]) else int(row["supersedes"]),
        revealed=None if _missing(row.get("revealed")) else bool(row["revealed"]),
    )


def adjudicate(
    store: ReviewRole,
    admin: Rater,
    answer_id: str,
    rubric: Rubric,
    *,
    overall: float | None,
    criteria: Mapping[str, float | None] | None = None,
    comment: str = "",
    revealed: bool = False,
) -> int:
    """Store the admin's adjudicated label of an answer; a previous adjudication is superseded.

    Raters' labels are never changed or superseded. Criteria left ``None`` are not scored.
    ``revealed`` records that the admin saw the answer's family, model and unmasked text first.

    Returns:
        The new label's id.

    Raises:
        AccessError: ``admin`` is not an active admin.
        InputError: No overall score, or a score off the rubric's scale.
    """
    if overall is None:
        raise InputError("an adjudication needs an overall score", fix=rubric.scale_text())
    scores = {str(c): float(v) for c, v in (criteria or {}).items() if v is not None}
    return store.adjudicate(admin.rater_id, answer_id, rubric_id=rubric.rubric_id, version=rubric.version,
                            overall=float(overall), criteria=scores, comment=comment.strip(), revealed=revealed)


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _score(value: Any, *, digits: int | None = None) -> str:
    if value is None or _missing(value):
        return ""
    return f"{float(value):.{digits}f}" if digits is not None else format_score(float(value))


def _verdict(value: Any) -> str:
    if value is None or _missing(value):
        return ""
    return "pass" if bool(value) else "fail"


def _when(value: Any) -> str:
    if value is None or _missing(value):
        return ""
    return str(pd.Timestamp(value).strftime("%Y-%m-%d %H:%M"))
