"""Loading: one judge run and everything its calibration report reads from the store.

:func:`load_calibration_data` is the only part of the report that touches the database (through
:class:`~judgelab.labeler.store.Store`, which holds the SQL); everything downstream is a pure function
of the :class:`CalibrationData` it returns.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from judgelab.calibration.active import ActiveData, load_active
from judgelab.calibration.calibrate._model import SCORE_TURN_PROBE, HumanScoreRule, LabelSummary
from judgelab.calibration.spec import recorded_provenance
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Rubric
from judgelab.labeler.scales import is_pointwise
from judgelab.labeler.store import SCREEN_RUBRIC_ID, AnalystRole

_NAN = float("nan")
_TURN_JUDGEMENT_COLUMNS = ["answer_id", "task_id", "turn", "n_turns", "format", "value", "judgement_id"]
_TURN_LABEL_COLUMNS = ["answer_id", "task_id", "rater_id", "turn", "score"]
_LABEL_COLUMNS = ["answer_id", "task_id", "family", "variant", "rater_id", "rater_name", "overall", "pass",
                  "simulated", "source", "n_raters"]


@dataclass(frozen=True)
class CalibrationData:
    """Everything one judge run's calibration report reads from the store.

    Attributes:
        run: The ``judge_runs`` row (``params`` decoded).
        rubric: The rubric the run was judged under (the newest one when the run names none).
        judge_format: The pointwise format the residuals use (``None`` when the run has no
            parsed pointwise judgement of an original answer).
        pointwise: The run's pointwise judgements (the row that counts per planned call,
            call errors left out) joined with ``family``, ``variant``, ``parent_answer_id``,
            ``n_chars`` of the answer.
        pairwise: The run's pairwise judgements, the same way; ``family_a``/``family_b``,
            ``variant_a``/``variant_b`` and ``chars_a``/``chars_b`` describe the two answers.
        labels: The raters' current scored labels: ``answer_id``, ``task_id``, ``family``,
            ``variant``, ``rater_id``, ``rater_name``, ``overall``, ``pass`` (0/1 or ``nan``),
            ``simulated``, ``source``, ``n_raters`` (how many people ``overall`` is the mean of:
            1 for a rater's own label, more for an imported annotator mean, which the human score
            weighs as that many people). Admins' adjudicated labels are not among them.
        answers: Every answer of the pool (no text).
        design: Design weights of the chosen design (``answer_id``, ``weight``,
            ``inclusion_prob``, ``stratum``), or ``None``.
        design_id: The chosen design.
        provenance: ``(artifact, author_kind, author)`` records of the judge prompt.
        label_summary: Counts of the labels, simulated ones included.
        n_errors: Planned calls of the run that failed with no reply (not scores).
        pair_gold: Every stored pair's gold winner (``a``, ``b``, ``tie`` or ``None``), for the
            position statistics' accuracy.
        adjudicated: The current adjudicated label of each adjudicated answer, in the columns
            of ``labels`` (``rater_id`` is the admin's, ``source`` is ``adjudicated``).
        active: The active design the labels came from, when its plan used this run and it has a
            labelled batch (then ``design`` holds its answers' chance of ever being drawn).
        scale_note: How the judge's scores were mapped onto the rubric's scale, when they were
            (:func:`judgelab.calibration.calibrate.apply_scale_map`); ``None``: read as they are.
        annotator_means: ``(rater_id, answer_id)`` of the labels that are already the mean of
            several people (imported with ``n_raters`` above 1): a human score, not one rater's.
        turn_judgements: The run's parsed per-turn judgements (rubric ``turn = "each"``):
            ``answer_id, task_id, turn, n_turns, format, value, judgement_id``; they are not
            among ``pointwise``, so nothing item-level reads them.
        turn_labels: The raters' turn scores of the current labels in ``labels``:
            ``answer_id, task_id, rater_id, turn, score``.
    """

    run: dict[str, Any]
    rubric: Rubric
    judge_format: str | None
    pointwise: pd.DataFrame
    pairwise: pd.DataFrame
    labels: pd.DataFrame
    answers: pd.DataFrame
    design: pd.DataFrame | None
    design_id: str | None
    provenance: tuple[tuple[str, str, str], ...]
    label_summary: LabelSummary
    n_errors: int
    pair_gold: Mapping[str, str | None] = field(default_factory=dict)
    adjudicated: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=_LABEL_COLUMNS))
    active: ActiveData | None = None
    scale_note: str | None = None
    annotator_means: frozenset[tuple[int, str]] = frozenset()
    turn_judgements: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=_TURN_JUDGEMENT_COLUMNS))
    turn_labels: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=_TURN_LABEL_COLUMNS))

    @property
    def run_id(self) -> str:
        """The judge run's id."""
        return str(self.run["run_id"])

    @property
    def judge_family(self) -> str | None:
        """The judge's own family, when the run records it."""
        family = self.run.get("family")
        return None if family is None else str(family)

    def reference_labels(self, rule: HumanScoreRule = "mean") -> pd.DataFrame:
        """The labels the human score of each answer rests on under ``rule``.

        The raters' labels; under ``"adjudicated"`` an adjudicated answer's raters are replaced by
        its one adjudicated label, so the human score of that answer is the adjudicated score
        whatever the raters gave. Agreement among raters reads :attr:`labels`, never this.
        """
        if rule != "adjudicated" or self.adjudicated.empty:
            return self.labels
        settled = isin(self.labels["answer_id"], self.adjudicated["answer_id"])
        frames = [f for f in (self.labels[~settled], self.adjudicated[_LABEL_COLUMNS]) if not f.empty]
        return pd.concat(frames, ignore_index=True).sort_values(["answer_id", "rater_id"]).reset_index(drop=True)


def load_calibration_data(store: AnalystRole, run_id: str | None = None) -> CalibrationData:
    """Read one judge run and the labels, design and provenance its report needs.

    Args:
        store: The project store.
        run_id: The judge run; default: the newest run with pointwise judgements.

    Returns:
        A :class:`CalibrationData`.

    Raises:
        InputError: No such run, no run with pointwise judgements, or no rubric.
    """
    if run_id is None:
        run_id = store.latest_scored_run() or _latest_judged_run(store)
        if run_id is None:
            raise InputError(
                "no judge run with pointwise judgements in the database (nor any with pairwise ones)",
                fix="run a probe (`judgelab probe ...`) or import judgements "
                "(`judgelab import judgements FILE`, or verdicts) first.",
            )
    store.declared_scales()  # judgements and labels may be on a scale a stored rubric declares
    run = store.judge_run(run_id)
    if run is None:
        known = ", ".join(repr(r) for r in store.calibration_runs()["run_id"].head(5))
        raise InputError(
            f"no judge run {run_id!r}",
            fix=f"pass one of the stored runs ({known or 'none stored'}) to --judge-run.",
        )
    rubric = store.rubric(run.get("rubric_id"), _opt_int(run.get("rubric_version")))
    if rubric is None and run.get("rubric_id") is not None:
        rubric = store.rubric()
    if rubric is None and store.run_rows(run_id, "pointwise").empty:
        # A run of pairwise judgements alone (imported verdicts) is read without a rubric: the
        # sections that need one (human residuals, kappa) have no pointwise scores to read anyway.
        rubric = NO_RUBRIC
    if rubric is None:
        raise InputError(
            "no rubric in the database to read judge and human scores against",
            fix="import one with `judgelab import rubric FILE`.",
        )

    answers = store.pool_answers()
    info = answers.set_index("answer_id")
    point = store.run_rows(run_id, "pointwise")
    pair = store.run_rows(run_id, "pairwise")
    n_errors = int((point["status"] == "error").sum() + (pair["status"] == "error").sum())
    point = point[point["status"] != "error"].reset_index(drop=True)
    # A turn's judgement is no judgement of the answer: the per-turn view alone reads it.
    by_turn = (point["probe"] == SCORE_TURN_PROBE).to_numpy(dtype=bool)
    turn_judgements = _turn_judgements(point[by_turn])
    point = point[~by_turn].reset_index(drop=True)
    pair = pair[pair["status"] != "error"].reset_index(drop=True)
    point = _join_answer(point, info, "answer_id", "")
    point["in_pool"] = isin(point["answer_id"], info.index)
    # Probe answers built from judge-probe pairs are not pool answers; their calls still say
    # which variant they are and of which parent, which is all a variant gap needs.
    for col, key in (("variant", "variant"), ("parent", "parent_answer_id")):
        from_meta = pd.Series([m.get(key) for m in point["meta"]], index=point.index, dtype=object)
        point[col] = point[col].where(point["in_pool"], from_meta)
    pair = _join_answer(_join_answer(pair, info, "answer_id", "_a"), info, "answer_b_id", "_b")
    point["pass"] = [_judge_pass(rubric, f, v, p) for f, v, p in
                     zip(point["format"], point["value"], point["passed"], strict=True)]

    raw = store.human_labels(rubric.rubric_id, rubric.version)
    flagged = raw["flag_reason"].notna()
    labels = raw[~flagged].copy()
    labels["pass"] = [_human_pass(rubric, o, p) for o, p in zip(labels["overall"], labels["passed"], strict=True)]
    labels = labels[labels["overall"].notna() | labels["pass"].notna()]
    # One label per rater and answer: a label given under the rubric wins over an unversioned
    # (imported) one, then the newest; two would count one person twice.
    labels = (labels.assign(_versioned=labels["rubric_id"].notna())
              .sort_values(["_versioned", "label_id"], ascending=[False, False])
              .drop_duplicates(["rater_id", "answer_id"]).sort_values(["answer_id", "rater_id"])
              .reset_index(drop=True))
    # Labels of an answer later found to say who wrote it are set apart, and counted (as the Arena drops
    # votes on answers that reveal their model): a rater who knew the author may have scored the author.
    apart = labels["reveals_author"].fillna(False).astype(bool)
    n_apart, n_apart_answers = int(apart.sum()), int(labels.loc[apart, "answer_id"].nunique())
    labels = labels[~apart].reset_index(drop=True)
    labels["simulated"] = (labels["source"] == "simulated") | labels["rater_simulated"].astype(bool)
    people = pd.to_numeric(labels["n_raters"], errors="coerce") if "n_raters" in labels else pd.Series(1, labels.index)
    labels["n_raters"] = people.fillna(1).astype(int)
    means = labels[labels["n_raters"] > 1]
    annotator_means = frozenset(zip(means["rater_id"].astype(int), means["answer_id"].astype(str), strict=True))
    turn_labels = _turn_labels(store, labels)
    labels = labels[_LABEL_COLUMNS]
    adjudicated, n_revealed = _adjudicated(store, rubric)
    summary = LabelSummary(
        n_labels=len(labels),
        n_answers=int(labels["answer_id"].nunique()),
        n_raters=int(labels["rater_id"].nunique()),
        n_simulated_labels=int(labels["simulated"].sum()),
        n_simulated_raters=int(labels.loc[labels["simulated"], "rater_id"].nunique()),
        n_flagged=int(flagged.sum()),
        sources={str(k): int(v) for k, v in labels["source"].value_counts().sort_index().items()},
        n_adjudicated=len(adjudicated),
        n_revealed=n_revealed,
        n_annotator_means=len(annotator_means),
        n_set_apart=n_apart,
        n_set_apart_answers=n_apart_answers,
    )

    judge_format = _choose_format(point, rubric)
    active = _active_design(store, run_id)
    if active is not None:
        chance = active.ever_drawn()
        design_id: str | None = active.design_id
        design: pd.DataFrame | None = pd.DataFrame({
            "answer_id": chance.index, "weight": 1.0 / chance.to_numpy(), "inclusion_prob": chance.to_numpy(),
            "stratum": None,
        })
    else:
        items = store.label_design_items()
        # An active design's batches are designs too, but their weights alone mean nothing.
        items = items[~isin(items["design_id"], store.active_draw_ids())]
        design_id, design = _choose_design(items, set(labels["answer_id"]))
    records = _provenance_records(store, run, rubric, point, labels)
    return CalibrationData(
        pair_gold=store.pair_gold(),
        run=run,
        rubric=rubric,
        judge_format=judge_format,
        pointwise=point,
        pairwise=pair,
        labels=labels,
        answers=answers,
        design=design,
        design_id=design_id,
        provenance=records,
        label_summary=summary,
        n_errors=n_errors,
        adjudicated=adjudicated,
        active=active,
        annotator_means=annotator_means,
        turn_judgements=turn_judgements,
        turn_labels=turn_labels,
    )


NO_RUBRIC = Rubric(
    rubric_id="none", version=1, name="no rubric in the database (a run of pairwise judgements only)",
    scale="likert5", pass_rule="none", criteria=(), author_kind="human", author="nobody",
)
"""What a report of a pairwise-only run names as its rubric when the database holds none."""


def _latest_judged_run(store: AnalystRole) -> str | None:
    """The newest run with any judgements (pairwise ones, when no run has pointwise ones)."""
    runs = store.calibration_runs()
    judged = runs[((runs["n_pointwise"] + runs["n_pairwise"]) > 0) & (runs["rubric_id"] != SCREEN_RUBRIC_ID)]
    return None if judged.empty else str(judged["run_id"].iloc[0])


def _adjudicated(store: AnalystRole, rubric: Rubric) -> tuple[pd.DataFrame, int]:
    """The current adjudicated label per answer with a score, in the columns of the labels.

    One per answer: one given under the rubric wins over an unversioned (imported) one.

    Returns:
        The labels, and how many of them the admin gave after revealing the answer's family.
    """
    raw = store.adjudicated_labels(rubric.rubric_id, rubric.version)
    raw = raw.assign(_versioned=raw["rubric_id"].notna(), simulated=False, source="adjudicated", n_raters=1)
    raw["pass"] = [_human_pass(rubric, o, p) for o, p in zip(raw["overall"], raw["passed"], strict=True)]
    raw = raw[raw["overall"].notna() | raw["pass"].notna()]
    raw = (raw.sort_values(["_versioned", "label_id"], ascending=[False, False]).drop_duplicates("answer_id")
           .sort_values("answer_id").reset_index(drop=True))
    revealed = int(raw["revealed"].astype("boolean").fillna(False).sum()) if "revealed" in raw else 0
    return raw[_LABEL_COLUMNS], revealed


def _turn_judgements(rows: pd.DataFrame) -> pd.DataFrame:
    """The parsed per-turn judgements, with each one's turn and its conversation's number of turns."""
    parsed = rows[rows["status"] == "parsed"]
    meta = list(parsed["meta"])
    return pd.DataFrame({
        "answer_id": parsed["answer_id"].astype(str).to_numpy(), "task_id": parsed["task_id"].to_numpy(),
        "turn": [int(m.get("turn", 0)) for m in meta], "n_turns": [int(m.get("n_turns", 0)) for m in meta],
        "format": parsed["format"].to_numpy(), "value": parsed["value"].astype(float).to_numpy(),
        "judgement_id": parsed["judgement_id"].to_numpy(),
    }, columns=_TURN_JUDGEMENT_COLUMNS)


def _turn_labels(store: AnalystRole, labels: pd.DataFrame) -> pd.DataFrame:
    """The turn scores of the raters' current labels (the ones the report counts)."""
    if labels.empty or "label_id" not in labels:
        return pd.DataFrame(columns=_TURN_LABEL_COLUMNS)
    scores = store.turn_scores(int(i) for i in labels["label_id"])
    if scores.empty:
        return pd.DataFrame(columns=_TURN_LABEL_COLUMNS)
    merged = scores.merge(labels[["label_id", "answer_id", "task_id", "rater_id"]], on="label_id")
    return merged[_TURN_LABEL_COLUMNS].reset_index(drop=True)


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _join_answer(frame: pd.DataFrame, info: pd.DataFrame, key: str, suffix: str) -> pd.DataFrame:
    out = frame.copy()
    ids = out[key]
    for col, name in (("family", "family"), ("variant", "variant"), ("parent_answer_id", "parent"),
                      ("n_chars", "chars")):
        mapped = ids.map(info[col]) if len(ids) else pd.Series([], dtype=object)
        out[f"{name}{suffix}"] = mapped.to_numpy()
    return out


def _judge_pass(rubric: Rubric, fmt: str, value: Any, passed: Any) -> float:
    """The judge's pass verdict (1/0) for one pointwise judgement, ``nan`` when undefined."""
    if value is None or isna(value):
        return _NAN
    if passed is not None and not isna(passed):
        return float(bool(passed))
    if fmt == rubric.scale:
        return float(rubric.passes(float(value)))
    if fmt == "binary":
        return float(float(value) >= 1)
    return _NAN


def _human_pass(rubric: Rubric, overall: Any, passed: Any) -> float:
    if passed is not None and not isna(passed):
        return float(bool(passed))
    if overall is not None and not isna(overall):
        return float(rubric.passes(float(overall)))
    return _NAN


def isna(value: Any) -> bool:
    """Whether a scalar is missing (``None``, ``nan``, ``pd.NA``); ``False`` for anything else."""
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _choose_format(point: pd.DataFrame, rubric: Rubric) -> str | None:
    """The rubric's own scale when judged on originals, else binary, else the commonest."""
    usable = point[(point["status"] == "parsed") & (point["variant"] == "original") & point["in_pool"]
                   & point["format"].map(is_pointwise).astype(bool)]
    if usable.empty:
        return None
    counts = usable["format"].value_counts()
    for preferred in (rubric.scale, "binary"):
        if preferred in counts.index:
            return str(preferred)
    return str(counts.index[0])


def _active_design(store: AnalystRole, run_id: str) -> ActiveData | None:
    """The newest active design planned on this run, once a batch of it is labelled."""
    designs = store.active_designs()
    for design_id, params in zip(designs["design_id"], designs["params"], strict=True):
        if json.loads(params).get("run_id") == run_id:
            return load_active(store, str(design_id))
    return None


def _choose_design(items: pd.DataFrame, labelled: set[str]) -> tuple[str | None, pd.DataFrame | None]:
    """The stored design covering the most labelled answers (newest applied first on ties)."""
    if items.empty or not labelled:
        return None, None
    inside = items[isin(items["answer_id"], labelled)]
    if inside.empty:
        return None, None
    order = list(dict.fromkeys(items["design_id"]))  # newest first, as the query sorts
    counts = inside["design_id"].value_counts()
    best = max(order, key=lambda d: (int(counts.get(d, 0)), -order.index(d)))
    chosen = items[items["design_id"] == best][["answer_id", "weight", "inclusion_prob", "stratum"]]
    return str(best), chosen.reset_index(drop=True)


def _provenance_records(
    store: AnalystRole, run: Mapping[str, Any], rubric: Rubric, point: pd.DataFrame, labels: pd.DataFrame
) -> tuple[tuple[str, str, str], ...]:
    """Who wrote each artifact of the judge prompt: rubric, few-shot examples, references."""
    records: list[tuple[str, str, str]] = [
        (f"rubric {rubric.rubric_id} v{rubric.version}", rubric.author_kind, rubric.author)
    ]
    params = run.get("params") or {}
    shots = params.get("few_shot") or params.get("few_shot_examples")
    if shots:
        kind = str(params.get("few_shot_author_kind") or "unknown")
        records.append(("few-shot examples", kind, str(params.get("few_shot_author") or "unknown")))
    # A run made with a judge spec carries the spec's declared authors (undeclared: unknown).
    records += recorded_provenance(params)
    tasks = set(point["task_id"].dropna()) | set(labels["task_id"].dropna())
    refs = store.reference_provenance(tasks)
    groups: dict[tuple[str, str], int] = {}
    for kind, author in zip(refs["reference_author_kind"], refs["reference_author"], strict=True):
        key = (str(kind) if not isna(kind) else "unknown", str(author) if not isna(author) else "unknown")
        groups[key] = groups.get(key, 0) + 1
    for (kind, author), n in sorted(groups.items()):
        records.append((f"{n} reference answer(s) by {author}", kind, author))
    return tuple(records)



def first_judgement(point: pd.DataFrame, fmt: str) -> pd.DataFrame:
    """One row per original answer: its first parsed judgement in ``fmt``."""
    rows = point[(point["format"] == fmt) & (point["status"] == "parsed") & (point["variant"] == "original")
                 & point["in_pool"]]
    return rows.sort_values("judgement_id", kind="stable").drop_duplicates("answer_id").reset_index(drop=True)



def isin(column: pd.Series, values: Iterable[Any]) -> npt.NDArray[np.bool_]:
    """``column.isin(values)`` as a boolean array, by one hash lookup.

    On an Arrow-backed string column ``Series.isin`` turns every value into a pyarrow scalar in
    Python, a few microseconds each: seconds per call with 100,000 labels.
    """
    lookup = pd.Index(list(values) if isinstance(values, (set, frozenset)) else values).unique()
    return np.asarray(lookup.get_indexer(column) >= 0)
