"""Review and adjudication: every label of an answer side by side, and an admin's adjudicated label.

An **adjudicated label** is a row of ``labels`` with ``source = 'adjudicated'`` whose
``rater_id``/``rater_name`` are the admin who gave it (migration 005). It keeps the label
model's rules and adds two of its own:

* **Append-only.** Re-adjudicating an answer writes a new row that supersedes the current
  adjudication of the same answer and rubric version (whoever of the admins gave it); a
  rater's label is never superseded, changed or hidden by it.
* **Not a rater.** Every query about raters' labels leaves adjudications out
  (:data:`~judgelab.labeler.store._core.CURRENT_LABEL_RULE`), so agreement among raters never counts the
  adjudicator, and an adjudication has no assignment, so no rater queue or rater page reads it.

Admins are not blind: frames here carry family, model and variant and must never reach a
rater page.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import duckdb
import pandas as pd

from judgelab.labeler.errors import AccessError, InputError
from judgelab.labeler.models import Rubric
from judgelab.labeler.scales import format_range
from judgelab.labeler.store._audit import audit
from judgelab.labeler.store._backend import PORTABLE
from judgelab.labeler.store._core import CURRENT_LABEL_RULE, check_comment, rubric_match
from judgelab.labeler.store._pool import PoolMixin, blind_text

#: ``labels.source`` of an admin's adjudicated label.
ADJUDICATED = "adjudicated"

#: Keeps only the current adjudication of a query over ``labels l``: the newest unsuperseded
#: adjudicated row per (answer, rubric version). Two can only exist after an import.
CURRENT_ADJUDICATION_RULE = """
    WHERE l.source = 'adjudicated'
      AND NOT EXISTS (SELECT 1 FROM labels s WHERE s.supersedes = l.label_id)
    QUALIFY row_number() OVER (
        PARTITION BY l.answer_id, l.rubric_id, l.rubric_version
        ORDER BY l.created_at DESC, l.label_id DESC) = 1
"""

#: :data:`CURRENT_ADJUDICATION_RULE` without ``QUALIFY`` (PostgreSQL has none): no newer
#: unsuperseded adjudicated row of the same answer and rubric version.
CURRENT_ADJUDICATION_RULE_PORTABLE = """
    WHERE l.source = 'adjudicated'
      AND NOT EXISTS (SELECT 1 FROM labels s WHERE s.supersedes = l.label_id)
      AND NOT EXISTS (
        SELECT 1 FROM labels n
        WHERE n.source = 'adjudicated' AND n.answer_id = l.answer_id AND n.rubric_id = l.rubric_id
          AND n.rubric_version = l.rubric_version
          AND NOT EXISTS (SELECT 1 FROM labels s2 WHERE s2.supersedes = n.label_id)
          AND (n.created_at > l.created_at OR (n.created_at = l.created_at AND n.label_id > l.label_id)))
"""
PORTABLE[CURRENT_ADJUDICATION_RULE] = CURRENT_ADJUDICATION_RULE_PORTABLE

_RATER_LABELS_SQL = f"""
    SELECT l.label_id, l.rater_id, l.rater_name, r.simulated, l.answer_id, a.item_id, a.task_id,
           a.family, a.variant, l.rubric_id, l.rubric_version, l.overall, l.passed, l.criteria,
           l.comment, l.flag_reason, l.seconds, l.source, l.created_at
    FROM labels l
    JOIN raters r ON r.rater_id = l.rater_id
    LEFT JOIN answers a ON a.answer_id = l.answer_id
    {CURRENT_LABEL_RULE}
"""

_ADJUDICATIONS_SQL = f"""
    SELECT l.label_id, l.rater_id, l.rater_name, l.answer_id, a.task_id, a.family, a.variant,
           l.rubric_id, l.rubric_version, l.overall, l.passed, l.criteria, l.comment,
           l.supersedes, l.created_at, l.revealed
    FROM labels l
    LEFT JOIN answers a ON a.answer_id = l.answer_id
    {CURRENT_ADJUDICATION_RULE}
"""


def _rubric_filter(rubric_id: str | None, version: int | None, include_unversioned: bool) -> tuple[str, list[object]]:
    """A ``WHERE`` clause (or ``""``) keeping one rubric's rows, and its parameters."""
    params: list[object] = []
    if rubric_id is None:
        return "", params
    match = rubric_match(rubric_id, version, params)
    if include_unversioned:
        match = f"({match}) OR rubric_id IS NULL"
    return f" WHERE ({match})", params


class ReviewMixin(PoolMixin):
    """Reads and writes behind the admin's Review page."""

    def review_labels(
        self,
        rubric_id: str | None = None,
        version: int | None = None,
        *,
        include_unversioned: bool = True,
        answer_id: str | None = None,
    ) -> pd.DataFrame:
        """The raters' current labels, with their comments (adjudications left out).

        Args:
            rubric_id: Keep labels given under this rubric (every rubric when ``None``).
            version: Keep labels given under this version of ``rubric_id``.
            include_unversioned: Also keep labels with no rubric (imported ones).
            answer_id: Keep the labels of this answer only.

        Returns:
            ``label_id, rater_id, rater_name, simulated, answer_id, item_id, task_id, family, variant,
            rubric_id, rubric_version, overall, passed, criteria`` (JSON text), ``comment,
            flag_reason, seconds, source, created_at``, by answer then rater.
        """
        where, params = _rubric_filter(rubric_id, version, include_unversioned)
        if answer_id is not None:
            where = f"{where} AND answer_id = ?" if where else " WHERE answer_id = ?"
            params.append(answer_id)
        return self.query(f"SELECT * FROM ({_RATER_LABELS_SQL}) cur{where} ORDER BY answer_id, rater_id", params)

    def adjudications(
        self, rubric_id: str | None = None, version: int | None = None, *, include_unversioned: bool = True
    ) -> pd.DataFrame:
        """The current adjudicated label per answer and rubric version.

        Args:
            rubric_id: Keep adjudications given under this rubric (every rubric when ``None``).
            version: Keep adjudications given under this version of ``rubric_id``.
            include_unversioned: Also keep adjudications with no rubric (imported ones).

        Returns:
            ``label_id, rater_id, rater_name`` (the admin), ``answer_id, task_id, family, variant,
            rubric_id, rubric_version, overall, passed, criteria`` (JSON text), ``comment,
            supersedes, created_at``, by answer.
        """
        where, params = _rubric_filter(rubric_id, version, include_unversioned)
        return self.query(f"SELECT * FROM ({_ADJUDICATIONS_SQL}) cur{where} ORDER BY answer_id, label_id", params)

    def review_answer(self, answer_id: str) -> dict[str, Any] | None:
        """One answer as the admin reads it: the text as written, and with its self-names masked.

        Returns:
            ``answer_id, item_id, task_id, prompt, category, family, model, variant,
            parent_answer_id, text`` (unmasked), ``blind_text`` (every self-identifying span
            masked, for adjudicating blind) and ``masked`` (how many spans), or ``None`` when
            there is no such answer.
        """
        frame = self.query(
            "SELECT a.answer_id, a.item_id, a.task_id, t.prompt, t.category, a.family, a.model,"
            " a.variant, a.parent_answer_id, a.text, a.self_id_spans"
            " FROM answers a LEFT JOIN tasks t ON t.task_id = a.task_id WHERE a.answer_id = ?",
            [answer_id],
        )
        if frame.empty:
            return None
        out = {k: (None if _missing(v) else v) for k, v in frame.iloc[0].to_dict().items()}
        # The adjudicator is blind whatever the raters' masking setting: every
        # self-identifying span is masked, as raters see them.
        with self.connection() as con:
            out["blind_text"], out["masked"] = blind_text(con, str(out["text"] or ""), out.pop("self_id_spans"))
        return out

    def label_history(self, answer_id: str) -> pd.DataFrame:
        """Every label row of one answer, superseded ones and adjudications included, oldest first.

        Returns:
            ``label_id, rater_id, rater_name, source, rubric_id, rubric_version, overall,
            passed, criteria, comment, flag_reason, seconds, supersedes, created_at, revealed``
            (whether an adjudication was given after revealing the answer's family) and
            ``current`` (no later row supersedes it).
        """
        return self.query(
            "SELECT l.label_id, l.rater_id, l.rater_name, l.source, l.rubric_id, l.rubric_version,"
            " l.overall, l.passed, l.criteria, l.comment, l.flag_reason, l.seconds, l.supersedes,"
            " l.created_at, l.revealed, NOT EXISTS (SELECT 1 FROM labels s WHERE s.supersedes = l.label_id) AS current"
            " FROM labels l WHERE l.answer_id = ? ORDER BY l.label_id",
            [answer_id],
        )

    def adjudicate(
        self,
        admin_id: int,
        answer_id: str,
        *,
        rubric_id: str,
        version: int,
        overall: float,
        criteria: Mapping[str, float] | None = None,
        comment: str = "",
        revealed: bool = False,
    ) -> int:
        """Store an admin's adjudicated label of an answer under one rubric version.

        The previous adjudication of the same answer and rubric version, if any, is
        superseded; raters' labels are left as they are.

        Args:
            admin_id: The admin giving it (an active admin).
            answer_id: The answer.
            rubric_id: The rubric it is given under.
            version: The rubric's version.
            overall: The overall score on the rubric's scale (required: an adjudication decides).
            criteria: Scores per criterion id on the same scale; any subset.
            comment: Why, in words (shown beside the raters' labels).
            revealed: Whether the admin saw the answer's family, model and unmasked text
                before deciding (recorded in ``labels.revealed``; blind is ``False``).

        Returns:
            The new label's id.

        Raises:
            AccessError: ``admin_id`` is not an active admin.
            InputError: No such answer or rubric, or a score off the scale.
        """
        check_comment(comment)
        rubric = self.rubric(rubric_id, version)
        if rubric is None:
            raise InputError(f"no rubric {rubric_id!r} v{version}", fix="pick a stored rubric version.")
        scores = {str(c): float(v) for c, v in (criteria or {}).items()}
        _check_adjudication(rubric, overall, scores)
        with self.connection() as con:
            name = _active_admin(con, admin_id)
            if con.execute("SELECT 1 FROM answers WHERE answer_id = ?", [answer_id]).fetchone() is None:
                raise InputError(f"answer {answer_id!r} is not in the database")
            current = con.execute(
                f"SELECT label_id FROM ({_ADJUDICATIONS_SQL}) cur"
                " WHERE answer_id = ? AND rubric_id = ? AND rubric_version = ?",
                [answer_id, rubric.rubric_id, rubric.version],
            ).fetchone()
            made = con.execute(
                "INSERT INTO labels (rater_id, rater_name, answer_id, rubric_id, rubric_version, overall,"
                " passed, criteria, comment, supersedes, source, revealed)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING label_id",
                [
                    admin_id, name, answer_id, rubric.rubric_id, rubric.version, float(overall),
                    rubric.passes(float(overall)), json.dumps(scores, sort_keys=True), comment,
                    None if current is None else int(current[0]), ADJUDICATED, bool(revealed),
                ],
            ).fetchone()
            assert made is not None
            audit(con, "adjudicate", answer_id, label_id=int(made[0]), overall=float(overall),
                  rubric=f"{rubric.rubric_id} v{rubric.version}",
                  supersedes=None if current is None else int(current[0]),
                  revealed=bool(revealed) or None, by=name)
        return int(made[0])


def _active_admin(con: duckdb.DuckDBPyConnection, rater_id: int) -> str:
    """The name of an active admin; refuses raters, revoked admins and unknown ids."""
    row = con.execute("SELECT name, role, revoked_at FROM raters WHERE rater_id = ?", [int(rater_id)]).fetchone()
    if row is None or row[1] != "admin" or row[2] is not None:
        raise AccessError("only an active admin can adjudicate.")
    return str(row[0])


def _check_adjudication(rubric: Rubric, overall: float | None, criteria: Mapping[str, float]) -> None:
    """Refuse an adjudication without an overall score, or with scores the rubric does not allow."""
    if overall is None:
        raise InputError("an adjudication needs an overall score", fix=rubric.scale_text())
    known = {c.criterion_id: c.name for c in rubric.criteria}
    unknown = sorted(set(criteria) - set(known))
    if unknown:
        raise InputError(
            f"unknown criteria {', '.join(unknown)} for rubric {rubric.rubric_id!r} v{rubric.version}",
            fix=f"score only {', '.join(known.values())}.",
        )
    lo, hi = format_range(rubric.scale)
    whole = rubric.scale in ("binary", "likert5")
    grid = rubric.declared_scale  # a declared scale's levels are its grid (0-10 by 0.5 allows 7.5)
    for cid, value in {"overall": float(overall), **criteria}.items():
        if (math.isnan(value) or not lo <= value <= hi or (whole and value != int(value))
                or (grid is not None and not grid.on_grid(value))):
            raise InputError(
                f"{known.get(cid, cid)} score {value:g} is not on the {rubric.scale} scale",
                fix=rubric.scale_text(),
            )


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


__all__ = ["ADJUDICATED", "CURRENT_ADJUDICATION_RULE", "ReviewMixin"]
