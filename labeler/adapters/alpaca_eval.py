"""AlpacaEval's annotations (``results/<model>/<annotator>/annotations.json``).

AlpacaEval writes one JSON array per model and annotator: each element has the
``instruction``, the baseline's ``output_1`` by ``generator_1``, the model's ``output_2`` by
``generator_2``, the ``annotator`` and its ``preference``: 1 the first output better, 2 the
second, 1.5 (or 0 in older files) a draw, and any value between 1 and 2 for the weighted
annotators (the judge's probability that output 2 is better, plus one). Its win rate is the
mean of ``preference - 1`` with draws as 0.5 (``alpaca_eval.metrics.get_winrate``).

judgelab reads:

- ``answers``: both outputs of each instruction; the task id is ``ae-`` and a hash of the
  instruction (so one instruction is one task across every model's file), the answer id
  ``<task>:<generator>``. An empty output is an answer (the model wrote nothing, and the judge
  saw that): it is imported as an empty text and counted in the import summary. The baseline's
  own file (``gpt4_1106_preview`` against itself: one generator, the same text on both sides)
  gives one answer per instruction, judged against itself.
- ``pairs``: one pair per record, ``answer_a`` the baseline's output.
- ``judgements``: one ``pairwise5`` judgement per record *about the model's output*
  (``answer_id`` is ``generator_2``'s answer, ``answer_b_id`` the baseline's), scored
  ``2·(preference − 1.5)``: +1 the model's output better, −1 the baseline's, 0 a draw, a
  fraction for a weighted annotator. A record with no preference is kept as a reply that did
  not parse. Two outputs with the same text are a draw: AlpacaEval sets 1.5 without asking its
  judge, and its leaderboard lists the baseline against itself at 50%; ``meta`` marks them
  ``identical_outputs``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgelab.labeler._rows import read_rows
from judgelab.labeler.adapters._common import Adapted, Adapter, Source, as_id, digest, raw_text, rows_of
from judgelab.labeler.schemas import SCHEMAS

TOOL = "AlpacaEval"
WHAT = "AlpacaEval annotations (results/<model>/<annotator>/annotations.json)"
_FIELDS = ("instruction", "output_1", "generator_1", "output_2", "generator_2", "preference")
_KEPT = {*_FIELDS, "annotator", "dataset", "raw_completion", "price_per_example", "time_per_example"}
_NO_ORDER = ("which output the judge saw first: AlpacaEval shows them in a random order and records the "
             "preference already turned back to output_1/output_2, so the judgements have no order and "
             "are not evidence about position bias")


def task_id(instruction: str) -> str:
    """The task id of an AlpacaEval instruction (the same in every model's annotations)."""
    return f"ae-{digest(instruction)}"


def _source(path: Path) -> Source:
    src = Source(read_rows(path), TOOL)
    src.require(*_FIELDS, what=WHAT)
    return src


def _other_fields(src: Source) -> tuple[str, ...]:
    extra = [c for c in src.rows.columns if c not in _KEPT]
    return (f"the field(s) {extra}: judgelab has no place for them",) if extra else ()


def _output(src: Source, i: int, n: int) -> str:
    """``output_n`` as AlpacaEval wrote it: an empty string is the model's (empty) answer, which its judge saw."""
    value = src.rows.rows[i - 1].get(f"output_{n}")
    return value if isinstance(value, str) else str(src.text(i, f"output_{n}"))


def _sides(src: Source, i: int) -> tuple[str, str, list[tuple[str, str, str]]]:
    """Element ``i``'s instruction, task id and ``(answer id, generator, output)`` of output_1 and output_2.

    The baseline's own file (``gpt4_1106_preview`` against itself) has one generator on both
    sides and the same text: one answer, compared with itself. Two different outputs of one
    generator are two answers (output_2's id ends in ``~output_2``).
    """
    prompt = str(src.text(i, "instruction"))
    task = task_id(prompt)
    sides = []
    for n in (1, 2):
        generator = as_id(str(src.text(i, f"generator_{n}")))
        sides.append((f"{task}:{generator}", generator, _output(src, i, n)))
    if sides[0][0] == sides[1][0] and sides[0][2] != sides[1][2]:
        sides[1] = (f"{sides[1][0]}~output_2", sides[1][1], sides[1][2])
    return prompt, task, sides


def _rows_text(rows: list[int]) -> str:
    shown = ", ".join(str(r) for r in rows[:8])
    return f"{shown}, ..." if len(rows) > 8 else shown


def _empty_note(empty: dict[str, list[int]]) -> tuple[str, ...]:
    """The import summary's sentence on empty outputs: kept, counted, and whose."""
    if not empty:
        return ()
    whose = "; ".join(f"{len(rows)} by {g} (element(s) {_rows_text(rows)})" for g, rows in sorted(empty.items()))
    total = sum(len(rows) for rows in empty.values())
    return (f"{total} empty output(s) imported as empty answers ({whose}): the model wrote nothing and "
            "AlpacaEval's judge saw it so",)


def _answers(path: Path) -> Adapted:
    src = _source(path)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    empty: dict[str, list[int]] = {}
    itself = 0
    for i in range(1, len(src.rows.rows) + 1):
        prompt, task, sides = _sides(src, i)
        for answer_id, generator, text in sides:
            if answer_id in seen:  # the same output on both sides (the baseline against itself)
                itself += 1
                continue
            seen.add(answer_id)
            if not text.strip():
                empty.setdefault(generator, []).append(i)
            out.append({"task_id": task, "prompt": prompt, "category": src.text(i, "dataset", required=False),
                        "answer_id": answer_id, "family": generator, "model": generator, "text": text})
    dropped = ("the model families: AlpacaEval names only the generator, so family is the generator's name "
               "(import the answers from judgelab's schema to give real families)",
               "the preferences (import the same file as judgements for them)", *_other_fields(src))
    notes = _empty_note(empty)
    if itself:
        notes += (f"{itself} element(s) compare an output with itself (same generator, same text): one answer "
                  "each",)
    cols = ("task_id", "prompt", "category", "answer_id", "family", "model", "text")
    return Adapted(rows_of(src.rows, out, columns=cols, note="each element's output_1, then its output_2"),
                   dropped, notes)


def _pairs(path: Path) -> Adapted:
    src = _source(path)
    out = []
    empty: dict[str, list[int]] = {}
    for i in range(1, len(src.rows.rows) + 1):
        prompt, task, ((_, g1, o1), (_, g2, o2)) = _sides(src, i)
        for generator, text in ((g1, o1), (g2, o2)):
            if not text.strip():
                empty.setdefault(generator, []).append(i)
        out.append({"id": f"{task}:{g2}-vs-{g1}", "prompt": prompt, "answer_a": o1, "answer_b": o2})
    dropped = ("the generators' names (a pair's answers are anonymous in judgelab; import the file as answers "
               "to keep them)", "the preferences (import the file as judgements for them)", *_other_fields(src))
    return Adapted(rows_of(src.rows, out, columns=tuple(SCHEMAS["pairs"].names)[:4]), dropped, _empty_note(empty))


def score_of(preference: float) -> float:
    """The judgelab pairwise score of output 2 for an AlpacaEval ``preference`` (0 is a draw)."""
    return 0.0 if preference == 0 else 2.0 * (preference - 1.5)


def _judgements(path: Path) -> Adapted:
    src = _source(path)
    out = []
    same: list[int] = []
    for i in range(1, len(src.rows.rows) + 1):
        _, _, ((b_id, _, o1), (a_id, _, o2)) = _sides(src, i)
        preference = src.number(i, "preference", required=False)
        if preference is not None and not (preference == 0 or 1 <= preference <= 2):
            raise src.fail(f"preference {preference:g} is not 1..2 (or 0 for a draw)", row=i, column="preference",
                           fix="AlpacaEval writes 1 (output_1 better), 2 (output_2 better), 1.5 or 0 (a draw), "
                               "or a value between 1 and 2 for a weighted annotator; check the file.")
        if o1 == o2:
            same.append(i)
        annotator = src.text(i, "annotator", required=False)
        out.append({
            "judge_model": as_id(annotator) if annotator else "alpaca_eval",
            "format": "pairwise5", "answer_id": a_id, "answer_b_id": b_id,
            "score": None if preference is None else score_of(preference),
            "parse_error": "AlpacaEval recorded no preference" if preference is None else None,
            "raw": raw_text(src.get(i, "raw_completion")),
            "cost_usd": src.number(i, "price_per_example", required=False),
            "latency_s": src.number(i, "time_per_example", required=False),
            "meta": {"alpaca_eval_preference": preference, **({"identical_outputs": True} if o1 == o2 else {})},
        })
    dropped = (_NO_ORDER, *_other_fields(src))
    notes = (f"{len(same)} element(s) (e.g. {_rows_text(same)}) have the same text on both sides: AlpacaEval "
             "scores these a draw (1.5) without asking its judge (annotators/pairwise_evaluator.py), and its win "
             "rate counts them so; imported as draws, meta.identical_outputs true",) if same else ()
    cols = ("judge_model", "format", "answer_id", "answer_b_id", "score", "parse_error", "raw", "cost_usd",
            "latency_s", "meta")
    return Adapted(rows_of(src.rows, out, columns=cols), dropped, notes)


ADAPTER = Adapter(
    name="alpaca-eval",
    exports="annotations.json: a JSON array of instruction, output_1/2, generator_1/2, annotator, preference "
            "(1, 2, 1.5 or 0 a draw, fractional for weighted annotators)",
    reads="answers (both outputs), pairs, judgements (pairwise, about generator_2's output: "
          "2·(preference−1.5), fractions kept)",
    kinds={"answers": _answers, "pairs": _pairs, "judgements": _judgements},
)
