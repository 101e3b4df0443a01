"""Parsers for what people wrote elsewhere: labels, pairwise preferences and padding audits.

Each keeps its history: a row may name, in ``supersedes``, the id (``label_id``,
``pair_label_id``, ``audit_id``) of an earlier row of the same rater and item that it replaces,
as the app's edits do. :func:`check_history` holds a file to that shape before anything is
written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from judgelab.labeler._rows import Checker, Rows
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import ImportedAudit, ImportedLabel, ImportedPairLabel, Rubric, Source
from judgelab.labeler.scales import format_range

RubricLookup = Callable[[str | None, int | None], Rubric | None]
"""``(rubric id, version) -> Rubric``: the stored rubric (``None`` id: the newest rubric;
``None`` version: the newest version), or ``None`` when there is none."""

CRITERION = "criterion:"


@dataclass(frozen=True)
class _Common:
    """The fields every kind of human record shares, read from one row."""

    ref: int | None
    supersedes: int | None
    rater: str
    seconds: float | None
    created_at: datetime | None
    source: Source | None
    current: bool | None


def _common(ck: Checker, i: int, id_col: str, sources: tuple[str, ...]) -> _Common:
    source = ck.choice(i, "source", sources)
    return _Common(
        ref=ck.integer(i, id_col),
        supersedes=ck.integer(i, "supersedes"),
        rater=str(ck.text(i, "rater", is_id=True)),
        seconds=ck.number(i, "seconds", required=False, lo=0, hi=float("inf")),
        created_at=ck.timestamp(i, "created_at"),
        # Simulated and adjudicated records keep their source; the rest entered by this import.
        source=source if source in ("simulated", "adjudicated") else None,  # type: ignore[arg-type]
        current=ck.boolean(i, "current"),
    )


def check_history(
    ck: Checker, common: list[_Common], groups: list[tuple[Any, ...]], *, id_col: str, what: str,
    twice: Callable[[int, int], InputError],
) -> None:
    """Refuse a file whose ``supersedes`` links do not form one history per rater and item.

    Args:
        ck: The file's checker.
        common: Each row's shared fields.
        groups: Each row's rater and item: a row may only supersede a row of its own group.
        id_col: The file's id column (``label_id``...).
        what: The record's name in messages.
        twice: The error for two rows of one group where neither supersedes the other
            (allowed when the file carries its own ids: a database can hold two such rows, an
            app label and an imported one, and an export keeps both).
    """
    row_of: dict[int, int] = {}
    superseded_by: dict[int, int] = {}
    roots: dict[tuple[Any, ...], int] = {}
    for i, (rec, group) in enumerate(zip(common, groups, strict=True), start=1):
        if rec.ref is not None:
            if rec.ref in row_of:
                raise ck.fail(f"duplicate {id_col} {rec.ref} (first seen in row {row_of[rec.ref]})", row=i,
                              column=id_col, fix=f"give each row its own {id_col}.")
            row_of[rec.ref] = i
        parent = rec.supersedes
        if parent is None:
            if group in roots and not ck.has(id_col):
                raise twice(i, roots[group])
            roots.setdefault(group, i)
            continue
        if parent not in row_of or parent == rec.ref:
            raise ck.fail(f"supersedes {parent}, which is not the {id_col} of an earlier row", row=i,
                          column="supersedes",
                          fix=f"list a {what} before the rows that supersede it (exports are in that order).")
        if groups[row_of[parent] - 1] != group:
            raise ck.fail(f"supersedes {id_col} {parent} (row {row_of[parent]}), a {what} of another rater or "
                          "item", row=i, column="supersedes",
                          fix=f"an edit supersedes an earlier {what} of the same rater and item.")
        if parent in superseded_by:
            raise ck.fail(f"{id_col} {parent} is already superseded by row {superseded_by[parent]}", row=i,
                          column="supersedes", fix=f"supersede the newest version, the {id_col} of row "
                          f"{superseded_by[parent]}.")
        superseded_by[parent] = i
    for i, rec in enumerate(common, start=1):
        if rec.current is None:
            continue
        current = rec.ref is None or rec.ref not in superseded_by
        if rec.current != current:
            said = "row " + str(superseded_by.get(rec.ref or -1)) + " supersedes it" if not current else \
                "no row supersedes it"
            raise ck.fail(f"says current = {rec.current} but {said}", row=i, column="current",
                          fix="correct it, or drop the column: it is worked out from supersedes.")


# -- labels -------------------------------------------------------------------------------------


class _Rubrics:
    """The rubric of each row, looked up once per (id, version)."""

    def __init__(self, ck: Checker, lookup: RubricLookup) -> None:
        self.ck = ck
        self.lookup = lookup
        self.found: dict[tuple[str | None, int | None], Rubric | None] = {}

    def get(self, rid: str | None, version: int | None) -> Rubric | None:
        key = (rid, version)
        if key not in self.found:
            self.found[key] = self.lookup(rid, version)
        return self.found[key]

    def of_row(self, i: int) -> Rubric:
        ck = self.ck
        rid = ck.text(i, "rubric_id", required=False, is_id=True)
        version = ck.integer(i, "rubric_version", lo=1)
        if rid is None and version is not None:
            raise ck.fail("has a rubric_version but no rubric_id", row=i, column="rubric_id",
                          fix="name the rubric, or leave both empty for the newest rubric.")
        rubric = self.get(rid, version)
        if rubric is None and rid is None:
            raise no_rubric(ck.rows.file)
        if rubric is None:
            shown = f"{rid!r}" + (f" version {version}" if version is not None else "")
            raise ck.fail(f"rubric {shown} is not in the database", row=i, column="rubric_id",
                          fix="import it first with `judgelab import rubric FILE`, or leave rubric_id empty "
                          "for the newest rubric.")
        return rubric


def no_rubric(file: str) -> InputError:
    """The error for labels when no rubric can check their scale."""
    return InputError(
        "there is no rubric in the database to check the labels' scale against",
        file=file,
        fix="import a rubric first with `judgelab import rubric FILE`; labels are read on its scale.",
    )


def _criteria(ck: Checker, i: int, rubric: Rubric, lo: float, hi: float) -> dict[str, float]:
    known = [c.criterion_id for c in rubric.criteria]
    out: dict[str, float] = {}
    for col in (c for c in ck.rows.columns if c.startswith(CRITERION)):
        value = ck.number(i, col, lo=lo, hi=hi, required=False)
        if value is None:
            continue
        cid = col.removeprefix(CRITERION)
        if cid not in known:
            raise ck.fail(f"{cid!r} is not a criterion of rubric {rubric.rubric_id!r} v{rubric.version} "
                          f"(it has {known})", row=i, column=col,
                          fix="name the column criterion:<id> after one of the rubric's criteria, or pass "
                          "--ignore-columns to leave it out.")
        out[cid] = value
    return out


def _turns(ck: Checker, i: int, rubric: Rubric, lo: float, hi: float) -> dict[int, float]:
    """A label's ``turns`` cell: turn number -> score on the rubric's scale (empty when there is none)."""
    found = ck.json_object(i, "turns") if ck.has("turns") else None
    out: dict[int, float] = {}
    for key, value in (found or {}).items():
        if not key.isdigit() or int(key) < 1 or isinstance(value, bool) or not isinstance(value, int | float) \
                or not lo <= float(value) <= hi:
            raise ck.fail(f"turn {key!r}: {value!r} is not a turn number with a score on the {rubric.scale} scale",
                          row=i, column="turns",
                          fix=f'write {{"1": <score>, "2": <score>, ...}} with scores from {lo:g} to {hi:g}.')
        out[int(key)] = float(value)
    if out and rubric.turn != "each":
        raise ck.fail(f"has turn scores, but rubric {rubric.rubric_id!r} v{rubric.version} rates turn = "
                      f"{rubric.turn!r}, not each turn", row=i, column="turns",
                      fix='label under a rubric with turn = "each", or leave the turns column out.')
    return dict(sorted(out.items()))


def parse_labels(rows: Rows, *, rubric_of: RubricLookup) -> list[ImportedLabel]:
    """Human labels: rater, answer_id, score and/or pass, criteria, and their history.

    Every label is read on a stored rubric's scale (its ``rubric_id``/``rubric_version``, else
    the newest rubric): with no rubric in the database the file is refused.
    """
    ck = Checker(rows)
    ck.require_columns("answer_id", "rater", one_of=("score", "pass", "flag_reason"))
    rubrics = _Rubrics(ck, rubric_of)
    if not ck.has("rubric_id") and rubrics.get(None, None) is None:
        raise no_rubric(rows.file)
    labels: list[ImportedLabel] = []
    common: list[_Common] = []
    groups: list[tuple[Any, ...]] = []
    decimals = ck.decimals("score") if ck.has("score") else None
    for i in range(1, len(rows.rows) + 1):
        rec = _common(ck, i, "label_id", ("app", "import", "simulated", "adjudicated"))
        answer_id = str(ck.text(i, "answer_id", is_id=True))
        rubric = rubrics.of_row(i)
        lo, hi = format_range(rubric.scale)
        score = ck.number(i, "score", lo=lo, hi=hi, required=False)
        n_raters = ck.integer(i, "n_raters", lo=1)
        published = score
        score = _check_grid(ck, i, rubric, score, n_raters, decimals)
        passed = ck.boolean(i, "pass")
        flag = ck.free_text(i, "flag_reason")
        if score is None and passed is None and flag is None:
            raise ck.fail("has neither a score nor a pass verdict", row=i, column="score",
                          fix="fill in score or pass (or flag_reason for an unrateable item).")
        if passed is None and score is not None:
            passed = rubric.passes(score)
        labels.append(ImportedLabel(
            answer_id, rec.rater, score, passed, _criteria(ck, i, rubric, lo, hi),
            ck.free_text(i, "comment") or "", flag, rec.seconds, rec.created_at,
            (rubric.rubric_id, rubric.version), rec.source, rec.ref, rec.supersedes, n_raters,
            published if published != score else None, _turns(ck, i, rubric, lo, hi),
        ))
        common.append(rec)
        groups.append((rec.rater, answer_id, rubric.rubric_id, rubric.version))

    def twice(row: int, first: int) -> InputError:
        lab = labels[row - 1]
        return ck.fail(f"rater {lab.rater!r} labels answer {lab.answer_id!r} twice (first in row {first})",
                       row=row, column="answer_id",
                       fix="keep one label per rater and answer, or mark an edit with supersedes.")

    check_history(ck, common, groups, id_col="label_id", what="label", twice=twice)
    return labels


def _check_grid(ck: Checker, i: int, rubric: Rubric, score: float | None, n_raters: int | None,
                decimals: int | None) -> float | None:
    """The score on its scale's grid, or an error (a mean of ``n_raters`` people: on its finer grid).

    A mean of several people published rounded (1.667 for 5/3, in a file that writes 3
    decimals) is read as the exact mean it rounds: within half a unit of the file's last decimal
    (``decimals``, the most any score in the file shows), when that rounding names one mean.
    Otherwise a declared scale refuses a score off its grid; the named scales keep the checks
    they always had (the store's, for whole numbers).
    """
    spec = rubric.scale_spec
    if score is None or spec.on_grid(score, n_raters=n_raters or 1):
        return score
    if n_raters and n_raters > 1 and decimals is not None:
        exact = spec.rounded_mean(score, n_raters=n_raters, decimals=decimals)
        if exact is not None:
            return exact
    if rubric.declared_scale is None:
        return score
    if n_raters and n_raters > 1:
        rounding = "" if decimals is None else (
            f", nor within the file's rounding ({decimals} decimal{'s' * (decimals != 1)}) of one")
        raise ck.fail(f"{score:g} is not a mean of {n_raters} scores on the {spec.name} scale "
                      f"{spec.grid_text()}{rounding}",
                      row=i, column="score",
                      fix=f"check the score and n_raters: a mean of {n_raters} levels is a multiple of "
                          f"{spec.step:g}/{n_raters} from {spec.low:g} (give it exactly, or rounded to the "
                          "same decimals as the file's other scores).")
    raise ck.fail(f"{score:g} is off the {spec.name} scale's grid {spec.grid_text()}", row=i, column="score",
                  fix="use one of the levels, or give n_raters when the score is the mean of several people.")


# -- pair labels and audits -----------------------------------------------------------------------


def parse_pair_labels(rows: Rows) -> list[ImportedPairLabel]:
    """Pairwise preferences: rater, answer_a (left), answer_b (right), preference, history."""
    ck = Checker(rows)
    ck.require_columns("answer_a", "answer_b", "rater", "preference")
    out: list[ImportedPairLabel] = []
    common: list[_Common] = []
    groups: list[tuple[Any, ...]] = []
    for i in range(1, len(rows.rows) + 1):
        rec = _common(ck, i, "pair_label_id", ("app", "import", "simulated"))
        left = str(ck.text(i, "answer_a", is_id=True))
        right = str(ck.text(i, "answer_b", is_id=True))
        pref = int(ck.number(i, "preference", lo=-2, hi=2, integer=True) or 0)
        out.append(ImportedPairLabel(rec.rater, left, right, pref, ck.free_text(i, "comment") or "", rec.seconds,
                                     rec.created_at, rec.source, rec.ref, rec.supersedes))
        common.append(rec)
        groups.append((rec.rater, left, right))

    def twice(row: int, first: int) -> InputError:
        lab = out[row - 1]
        return ck.fail(f"rater {lab.rater!r} compares {lab.shown_left!r} with {lab.shown_right!r} twice (first "
                       f"in row {first})", row=row, column="answer_a",
                       fix="keep one preference per rater and pair, or mark an edit with supersedes.")

    check_history(ck, common, groups, id_col="pair_label_id", what="preference", twice=twice)
    return out


def parse_audits(rows: Rows) -> list[ImportedAudit]:
    """Padding audits: rater, original_id, rewrite_id, adds_content, note, history."""
    ck = Checker(rows)
    ck.require_columns("rater", "original_id", "rewrite_id", "adds_content")
    out: list[ImportedAudit] = []
    common: list[_Common] = []
    groups: list[tuple[Any, ...]] = []
    for i in range(1, len(rows.rows) + 1):
        rec = _common(ck, i, "audit_id", ("app", "import"))
        original = str(ck.text(i, "original_id", is_id=True))
        rewrite = str(ck.text(i, "rewrite_id", is_id=True))
        adds = ck.boolean(i, "adds_content", required=True)
        out.append(ImportedAudit(rec.rater, original, rewrite, bool(adds), ck.free_text(i, "note") or "",
                                 rec.seconds, rec.created_at, rec.ref, rec.supersedes))
        common.append(rec)
        groups.append((rec.rater, original, rewrite))

    def twice(row: int, first: int) -> InputError:
        audit = out[row - 1]
        return ck.fail(f"rater {audit.rater!r} audits {audit.rewrite_id!r} twice (first in row {first})", row=row,
                       column="rewrite_id", fix="keep one audit per rater and rewrite, or mark an edit with "
                       "supersedes.")

    check_history(ck, common, groups, id_col="audit_id", what="audit", twice=twice)
    return out
