"""The rows of per-turn scores (``turn_scores``, migration 016): the statements the label writes share.

:class:`~judgelab.labeler.store._turns.TurnMixin` (the rater's writes and the reads) and the import of
labels (:mod:`judgelab.labeler.store._imports`) both read and append turn scores; the statements live
here, apart from the mixin, so that the import can use them without importing the label mixin
it is a base of.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import duckdb

from judgelab.labeler.errors import InputError
from judgelab.labeler.transcripts import Transcript

__all__ = ["CURRENT_TURNS", "check_turns_exist", "current_turns", "insert_turns", "turn_count"]

# The current score per (label, turn): no newer row of the same label and turn.
CURRENT_TURNS = (
    "SELECT t.label_id, t.turn, t.score FROM turn_scores t"
    " WHERE t.label_id IN (SELECT unnest(?)) AND NOT EXISTS ("
    "   SELECT 1 FROM turn_scores n WHERE n.label_id = t.label_id AND n.turn = t.turn"
    "   AND n.turn_score_id > t.turn_score_id)"
    " ORDER BY t.label_id, t.turn"
)


def turn_count(transcript_json: str | None) -> int:
    """How many assistant turns an answer's stored transcript has (0: an answer that is one text)."""
    return 0 if transcript_json is None else len(Transcript.from_json(transcript_json).turns())


def current_turns(con: duckdb.DuckDBPyConnection, label_ids: list[int]) -> dict[int, dict[int, float]]:
    """The current turn scores per label, read in one statement (labels without any are absent)."""
    if not label_ids:
        return {}
    out: dict[int, dict[int, float]] = {}
    for label_id, turn, score in con.execute(CURRENT_TURNS, [label_ids]).fetchall():
        out.setdefault(int(label_id), {})[int(turn)] = float(score)
    return out


def check_turns_exist(
    con: duckdb.DuckDBPyConnection, turns: Mapping[tuple[str, str], Iterable[int]], *, source_file: str | None
) -> None:
    """Refuse imported turn scores of turns an answer does not have (``(rater, answer_id)`` -> turns).

    Raises:
        InputError: Naming the file, the rater, the answer and how many assistant turns it has.
    """
    wanted = {key: max(ts) for key, ts in turns.items() if ts}
    if not wanted:
        return
    found = dict(con.execute("SELECT answer_id, transcript FROM answers WHERE answer_id IN (SELECT unnest(?))",
                             [sorted({a for _, a in wanted})]).fetchall())
    for (rater, answer_id), top in sorted(wanted.items()):
        n_turns = turn_count(found.get(answer_id))
        if top > n_turns:
            has = f"has {n_turns} assistant turn(s)" if n_turns else "is one text, not a conversation"
            raise InputError(f"rater {rater!r}'s label of {answer_id!r} scores turn {top}, but the answer {has}",
                             file=source_file, column="turns", fix="score only the answer's own assistant turns.")


def insert_turns(con: duckdb.DuckDBPyConnection, rows: list[tuple[int, int, float]]) -> None:
    """Append ``(label_id, turn, score)`` rows, in one statement per unit of work."""
    if rows:
        con.executemany("INSERT INTO turn_scores (label_id, turn, score) VALUES (?, ?, ?)", rows)
