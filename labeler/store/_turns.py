"""Per-turn scores: a score for each assistant turn of a conversation, under a rubric with ``turn = "each"``.

The label itself (overall, criteria, comment, flag) is an ordinary label
(:meth:`~judgelab.labeler.store._labels.LabelMixin.add_label`), so item-level calibration reads it
unchanged; the turn scores hang off it in ``turn_scores`` (migration 016), one row per assistant
turn, turn 1 being the first assistant turn. The rules of labels hold:

* **Together.** A label and its turn scores are written in one unit of work: a submit that is
  acknowledged stored both, a refused one stored neither.
* **Complete.** Every assistant turn has a score, unless the item is flagged unrateable.
* **Append-only, unchanged is a no-op.** New turn scores of an unchanged label are new rows
  (the newest per turn counts); the same scores write nothing; a change on a form that saw an
  older label is refused (:class:`~judgelab.labeler.errors.StaleLabelError`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import pandas as pd

from judgelab.labeler.errors import AccessError, InputError
from judgelab.labeler.models import Rubric
from judgelab.labeler.scales import format_range
from judgelab.labeler.store._labels import LabelMixin, Seen
from judgelab.labeler.store._turn_rows import CURRENT_TURNS, current_turns, insert_turns, turn_count

__all__ = ["TurnMixin"]

class TurnMixin(LabelMixin):
    """Labels with a score per assistant turn, and the reads of them."""

    def add_turn_label(
        self,
        rater_id: int,
        assignment_id: int,
        *,
        overall: float | None,
        turns: Mapping[int, float],
        criteria: Mapping[str, float] | None = None,
        comment: str = "",
        flag_reason: str | None = None,
        seconds: float | None = None,
        seen: Seen = ...,
    ) -> int:
        """Append the rater's label of a score item with a score for each assistant turn.

        Everything but ``turns`` is as in :meth:`add_label`. Under a rubric that does not rate
        each turn, or for an answer that is one text (it has no turns), ``turns`` must be empty
        and this is :meth:`add_label`.

        Args:
            rater_id: The rater (must own the assignment).
            assignment_id: The item.
            overall: The overall score (of the whole conversation), as in :meth:`add_label`.
            turns: Turn number (1 = the first assistant turn) -> score on the rubric's scale;
                every turn is required unless the item is flagged.
            criteria: A score per criterion id, as in :meth:`add_label`.
            comment: Free text.
            flag_reason: Set to flag the item as unrateable (then turns may be missing).
            seconds: Active seconds on the item as the app counted them.
            seen: The id of the label the rater's form showed (``None``: none; ``...``: no check).

        Returns:
            The label's id (the current one when nothing changed: then nothing is written).

        Raises:
            AccessError: The assignment is not this rater's, or the rater is revoked.
            StaleLabelError: ``seen`` is not the current label and this write would change it.
            InputError: A turn the answer does not have, a turn left unscored, a score off the
                scale, or anything :meth:`add_label` refuses.
        """
        given = {int(k): float(v) for k, v in turns.items()}
        flagged = bool((flag_reason or "").strip())
        with self.connection() as con:
            ctx = self._context(con, rater_id, assignment_id, "score", seen)
            rubric = self._rubric_of(ctx.rubric_id, ctx.rubric_version)
            row = con.execute("SELECT transcript FROM answers WHERE answer_id = ?", [ctx.answer_id]).fetchone()
            n_turns = turn_count(None if row is None else row[0]) if rubric.turn == "each" else 0
            _check_turns(rubric, given, n_turns, flagged=flagged)
            before = ctx.current_id
            label_id = self.add_label(
                rater_id, assignment_id, overall=overall, criteria=criteria, comment=comment,
                flag_reason=flag_reason, seconds=seconds, seen=seen,
            )
            if label_id == before and before is not None:
                # The label is unchanged: only new turn scores make a write (of the same label).
                if current_turns(con, [label_id]).get(label_id, {}) == given:
                    return label_id
                ctx.refuse_if_stale()
            insert_turns(con, [(label_id, turn, score) for turn, score in sorted(given.items())])
        return label_id

    def label_turns(self, rater_id: int, label_id: int) -> dict[int, float]:
        """The current turn scores of one of the rater's own labels (to fill the form on return).

        Raises:
            AccessError: The label is not this rater's.
        """
        with self.connection() as con:
            owner = con.execute("SELECT rater_id FROM labels WHERE label_id = ?", [int(label_id)]).fetchone()
            if owner is None or int(owner[0]) != int(rater_id):
                raise AccessError("that label is not yours.")
            return current_turns(con, [int(label_id)]).get(int(label_id), {})

    def turn_scores(self, label_ids: Iterable[int] | None = None) -> pd.DataFrame:
        """The current turn scores of labels: ``label_id, turn, score`` (every label's when ``None``).

        Calibration joins them to the current labels (:meth:`human_labels`), so a turn score
        counts exactly when its label does.
        """
        if label_ids is None:
            return self.query(
                "SELECT t.label_id, t.turn, t.score FROM turn_scores t WHERE NOT EXISTS ("
                " SELECT 1 FROM turn_scores n WHERE n.label_id = t.label_id AND n.turn = t.turn"
                " AND n.turn_score_id > t.turn_score_id) ORDER BY t.label_id, t.turn"
            )
        ids = sorted({int(i) for i in label_ids})
        frame = self.query(CURRENT_TURNS, [ids]) if ids else pd.DataFrame()
        return frame if not frame.empty else pd.DataFrame({"label_id": [], "turn": [], "score": []})


def _check_turns(rubric: Rubric, turns: Mapping[int, float], n_turns: int, *, flagged: bool) -> None:
    """Refuse turn scores the answer or the rubric does not allow (nothing is stored)."""
    if n_turns == 0:
        if turns:
            why = (f"rubric {rubric.name!r} (v{rubric.version}) rates turn = {rubric.turn!r}, not each turn"
                   if rubric.turn != "each" else "this answer is one text, not a conversation")
            raise InputError(f"turn scores were given, but {why}", fix="give the usual scores only.")
        return
    extra = sorted(t for t in turns if not 1 <= t <= n_turns)
    if extra:
        raise InputError(f"turn {extra[0]} is not an assistant turn of this conversation (it has {n_turns})",
                         fix=f"score turns 1 to {n_turns}.")
    missing = [t for t in range(1, n_turns + 1) if t not in turns]
    if missing and not flagged:
        shown = ", ".join(map(str, missing[:8])) + (" …" if len(missing) > 8 else "")
        raise InputError(f"{len(missing)} assistant turn(s) have no score (turn {shown})",
                         fix="score every turn, or flag the item as unrateable.")
    lo, hi = format_range(rubric.scale)
    whole = rubric.scale in ("binary", "likert5")
    grid = rubric.declared_scale
    for turn, value in sorted(turns.items()):
        if (math.isnan(value) or not lo <= value <= hi or (whole and value != int(value))
                or (grid is not None and not grid.on_grid(value))):
            raise InputError(f"the score {value:g} of turn {turn} is not on the {rubric.scale} scale",
                             column=f"turn {turn}", fix=rubric.scale_text())
