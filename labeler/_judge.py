"""Parsers for what judges said elsewhere: judgements (any format) and two-order verdicts on pairs.

Both return :class:`~judgelab.labeler.models.ImportedJudgement` in the store's orientation: for a
pairwise call the answer shown first is ``answer_id`` and the value is slot-coded. A file is
written the way people think of a comparison instead: the score is about ``answer_id``
whichever answer came first, and ``order`` (judgements) or ``shown_first`` (verdicts) says
which one did.
"""

from __future__ import annotations

from typing import Any

from judgelab.labeler._rows import Checker, Rows
from judgelab.labeler.models import ImportedJudgement, Rubric
from judgelab.labeler.scales import (
    FORMATS,
    ScaleError,
    format_range,
    format_spec,
    known_format,
    register_scale,
    scale_from_dict,
)

#: What a verdict row without a winner is recorded as, when the file does not say why.
NO_VERDICT = "no verdict in the reply"

_WINNER_CODE = {"a": 1.0, "b": -1.0, "tie": 0.0}


def _pair_fields(ck: Checker, i: int, fmt: str) -> tuple[str | None, str | None]:
    """``(answer_b_id, order)`` of a row, checked against the format's kind."""
    b_id = ck.text(i, "answer_b_id", required=False, is_id=True)
    order = ck.text(i, "order", required=False)
    if order is not None and order not in ("AB", "BA"):
        raise ck.fail(f"order {order!r} is not AB or BA", row=i, column="order",
                      fix="write AB when answer_id was shown first, BA when answer_b_id was.")
    if format_spec(fmt).kind == "pairwise":
        if b_id is None:
            raise ck.fail(f"a {fmt} verdict compares two answers but answer_b_id is empty", row=i,
                          column="answer_b_id", fix="give the other answer in answer_b_id.")
    elif b_id is not None or order is not None:
        column = "answer_b_id" if b_id is not None else "order"
        raise ck.fail(f"a {fmt} score is of one answer; {column} is for pairwise formats", row=i, column=column,
                      fix=f"leave {column} empty, or use a pairwise format.")
    return b_id, order


def _outcome(ck: Checker, i: int, lo: float, hi: float) -> tuple[float | None, bool | None, str | None, str | None]:
    """``(score, pass, parse_error, error)``: a reply with a result, one that did not parse, or no reply."""
    score = ck.number(i, "score", lo=lo, hi=hi, required=False)
    passed = ck.boolean(i, "pass")
    parse_error = ck.free_text(i, "parse_error")
    error = ck.free_text(i, "error")
    if score is None and passed is None and parse_error is None and error is None:
        raise ck.fail("has neither a score nor a pass verdict", row=i, column="score",
                      fix="fill in score or pass, or say in parse_error why the reply did not parse.")
    if (score is not None or passed is not None) and (parse_error is not None or error is not None):
        column = "parse_error" if parse_error is not None else "error"
        raise ck.fail(f"has a result and a {column}", row=i, column=column,
                      fix="a reply that did not parse (or a failed call) has no score; empty one of them.")
    return score, passed, parse_error, error


def _declare(ck: Checker, i: int, fmt: str) -> None:
    """Register the scale a row's ``scale`` column declares (it must be the row's format)."""
    decl = ck.json_object(i, "scale") if ck.has("scale") else None
    if decl is None:
        return
    try:
        spec = register_scale(scale_from_dict(decl))
    except ScaleError as exc:
        raise ck.fail(str(exc), row=i, column="scale", fix=exc.fix) from None
    if spec.name != fmt:
        raise ck.fail(f"the scale declared is {spec.name!r}, but the format is {fmt!r}", row=i, column="scale",
                      fix="declare the row's own format, or leave scale empty for a catalogue format.")


def parse_judgements(rows: Rows, *, rubric: Rubric | None) -> list[ImportedJudgement]:
    """Judge replies: answer_id, judge_model, format, and a score, a pass or why there is none."""
    ck = Checker(rows)
    ck.require_columns("answer_id", "judge_model", "format", one_of=("score", "pass", "parse_error", "error"))
    out = []
    calls: dict[tuple[str, str], int] = {}
    for i in range(1, len(rows.rows) + 1):
        fmt = str(ck.text(i, "format"))
        _declare(ck, i, fmt)
        if not known_format(fmt):
            raise ck.fail(f"unknown format {fmt!r}", row=i, column="format",
                          fix=f"use one of {list(FORMATS)}, a scale a stored rubric declares, or give the scale's "
                          'declaration in a scale column ({"name": ..., "low": ..., "high": ..., "step": ...}).')
        answer_id = str(ck.text(i, "answer_id", is_id=True))
        b_id, order = _pair_fields(ck, i, fmt)
        score, passed, parse_error, error = _outcome(ck, i, *format_range(fmt))
        if score is not None and fmt not in FORMATS and not format_spec(fmt).on_grid(score):
            raise ck.fail(f"{score:g} is off the {fmt} scale's grid {format_spec(fmt).grid_text()}", row=i,
                          column="score", fix="a judgement on a declared scale is one of its levels.")
        if passed is None and score is not None and rubric is not None and fmt == rubric.scale:
            passed = rubric.passes(score)
        model = str(ck.text(i, "judge_model", is_id=True))
        run_id = ck.text(i, "run_id", required=False, is_id=True)
        call_id = ck.free_text(i, "call_id")
        if call_id is not None:
            key = (run_id or f"import:{model}", call_id)
            if key in calls:
                raise ck.fail(f"call {call_id!r} of run {key[0]!r} appears twice (first in row {calls[key]})",
                              row=i, column="call_id", fix="keep one row per run and call.")
            calls[key] = i
        if order == "BA" and b_id is not None:
            # The store keeps the first-shown answer in slot A and a slot-coded value.
            answer_id, b_id = b_id, answer_id
            score = None if score is None else (-score if score else 0.0)
        out.append(ImportedJudgement(
            answer_id=answer_id, judge_model=model, value=score, passed=passed, format=fmt, answer_b_id=b_id,
            order_shown=order, judge_family=ck.text(i, "judge_family", required=False, is_id=True),
            raw=ck.free_text(i, "raw"), run_id=run_id, call_id=call_id,
            probe=ck.free_text(i, "probe"), arm=ck.free_text(i, "arm"), trial=ck.integer(i, "trial"),
            parse_error=parse_error, error=error, meta=ck.json_object(i, "meta") or {},
            input_tokens=ck.integer(i, "input_tokens", lo=0), output_tokens=ck.integer(i, "output_tokens", lo=0),
            cost_usd=ck.number(i, "cost_usd", required=False),
            latency_s=ck.number(i, "latency_s", required=False), row=i,
        ))
    return out


def parse_verdicts(rows: Rows, *, pairs: set[str]) -> list[ImportedJudgement]:
    """Two-order verdicts on stored pairs: pair_id, judge_model, shown_first, winner."""
    ck = Checker(rows)
    ck.require_columns("pair_id", "judge_model", "shown_first")
    out = []
    seen: dict[tuple[Any, ...], tuple[int, tuple[str | None, str | None]]] = {}
    for i in range(1, len(rows.rows) + 1):
        pair_id = str(ck.text(i, "pair_id", is_id=True))
        if pair_id not in pairs:
            raise ck.fail(f"pair {pair_id!r} is not in the database", row=i, column="pair_id",
                          fix="import the pairs first with `judgelab import pairs FILE`.")
        model = str(ck.text(i, "judge_model", is_id=True))
        first = str(ck.choice(i, "shown_first", ("a", "b"), required=True))
        winner = ck.choice(i, "winner", ("a", "b", "tie"))
        parse_error = ck.free_text(i, "parse_error")
        if winner is not None and parse_error is not None:
            raise ck.fail("has a winner and a parse_error", row=i, column="parse_error",
                          fix="a reply that did not parse has no winner; empty one of them.")
        run_id = ck.text(i, "run_id", required=False, is_id=True)
        trial = ck.integer(i, "trial")
        key = (run_id or model, pair_id, first, trial)
        if key in seen:
            raise _twice(ck, pair_id, first, seen[key], i, (winner, parse_error))
        seen[key] = (i, (winner, parse_error))
        a_id, b_id = f"{pair_id}:a", f"{pair_id}:b"
        candidate = None if winner is None else _WINNER_CODE[winner]
        value = candidate if first == "a" or candidate is None else (-candidate if candidate else 0.0)
        out.append(ImportedJudgement(
            answer_id=a_id if first == "a" else b_id, judge_model=model, value=value, passed=None,
            format="pairwise5", answer_b_id=b_id if first == "a" else a_id,
            order_shown="AB" if first == "a" else "BA",
            judge_family=ck.text(i, "judge_family", required=False, is_id=True), raw=ck.free_text(i, "raw"),
            run_id=run_id, trial=trial, parse_error=None if winner is not None else parse_error or NO_VERDICT,
            meta={"target_id": a_id, "target_slot": "A" if first == "a" else "B"}, task_id=pair_id, row=i,
        ))
    return out


def _twice(ck: Checker, pair_id: str, first: str, earlier: tuple[int, tuple[str | None, str | None]], row: int,
           result: tuple[str | None, str | None]) -> Exception:
    """The error for a pair judged twice in one order: a repeat, or two rows that disagree."""
    before, said = earlier
    head = f"pair {pair_id!r} is judged twice with answer {first} shown first (rows {before} and {row})"
    if said == result:
        return ck.fail(f"{head}, with the same verdict", row=row, column="shown_first",
                       fix="delete the repeated row; if the judge really was asked twice, number the calls in a "
                       "trial column (1, 2, ...).")
    def words(r: tuple[str | None, str | None]) -> str:
        return f"winner {r[0]}" if r[0] is not None else f"no verdict ({r[1] or 'no winner given'})"
    return ck.fail(f"{head}, and the two rows disagree: row {before} says {words(said)}, row {row} {words(result)}",
                   row=row, column="winner",
                   fix=f"keep the row that is right and delete the other (a trial column is for repeated calls, "
                   f"not for a correction of row {before}).")
