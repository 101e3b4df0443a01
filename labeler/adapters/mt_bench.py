"""FastChat's MT-Bench files (``fastchat/llm_judge``): model answers and the judge's judgments.

FastChat's layout (``data/mt_bench/``): ``question.jsonl`` (``question_id``, ``category``,
``turns``), ``model_answer/<model>.jsonl`` (``question_id``, ``choices[0].turns``: one answer per
turn; the model is the file's name), and ``model_judgment/<judge>_single.jsonl`` (``question_id``,
``model``, ``judge`` = [judge model, prompt name], ``judgment``, ``score`` 1-10 or -1 when no
``[[rating]]`` was found, ``turn``) or ``<judge>_pair.jsonl`` (``model_1``, ``model_2``,
``g1_winner`` for game 1 with model_1 shown first, ``g2_winner`` for game 2 with model_2 shown
first, each ``model_1``, ``model_2``, ``tie`` or ``error``; ``g1_judgment``, ``g2_judgment``,
``turn``), as ``play_a_match_single`` and ``play_a_match_pair`` in ``common.py`` write them.

judgelab reads:

- ``answers`` from a ``model_answer/<model>.jsonl`` file (with ``question.jsonl`` found in a
  folder above it): one answer per question and turn. Turn 2's task shows both of the user's
  turns, and its answer both of the model's (the conversation the multi-turn judge reads).
- ``judgements`` from a single judgment file (``numeric100``: the 1-10 rating × 10, the rating
  itself in ``meta.mt_bench_score``; a score of -1 is a reply that did not parse), or from a pair
  judgment file (two ``pairwise5`` rows per record about model_1's answer: game 1 in order AB,
  game 2 in order BA; +1 model_1 better, -1 model_2, 0 a tie; ``error`` did not parse).
- ``answers`` and ``labels`` from the human judgments FastChat published with the paper (the
  ``human`` split of the Hugging Face dataset ``lmsys/mt_bench_human_judgments``, as JSON lines,
  a JSON array or Parquet: ``question_id``, ``model_a``, ``model_b``, ``winner`` = ``model_a``,
  ``model_b`` or ``tie``, ``judge`` = the rater, ``expert_<n>`` or ``author_<n>``,
  ``conversation_a``/``conversation_b``, ``turn``): the answers from the two conversations, and
  one pair label per vote (preference +1 model_a better, -1 model_b, 0 a tie; the rater keeps
  FastChat's name, so ``expert_`` and ``author_`` raters stay apart as ``compute_agreement.py``
  keeps them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgelab.labeler._rows import read_rows
from judgelab.labeler.adapters._common import Adapted, Adapter, Source, as_id, raw_text, rows_of
from judgelab.labeler.errors import InputError

TOOL = "FastChat's MT-Bench"
_ANSWER_FILE = "an MT-Bench model answer file (model_answer/<model>.jsonl)"
_JUDGMENT_FILE = "an MT-Bench judgment file (model_judgment/<judge>_single.jsonl or <judge>_pair.jsonl)"
_NO_RATING = "FastChat found no [[rating]] in the judgment (score -1)"
_NO_WINNER = "FastChat found no [[A]], [[B]] or [[C]] in the judgment (winner 'error')"
_SCALE = ("the 1-10 rating's own scale: judgelab has no 1-10 format, so it is stored on numeric100 as "
          "rating × 10 (meta.mt_bench_score keeps the rating)")
_WINNER_SCORE = {"model_1": 1.0, "model_2": -1.0, "tie": 0.0}
_HUMAN_FILE = ("MT-Bench's human judgments (the 'human' split of lmsys/mt_bench_human_judgments: question_id, "
               "model_a, model_b, winner, judge, conversation_a, conversation_b, turn)")
_HUMAN_FIELDS = ("question_id", "model_a", "model_b", "winner", "judge", "turn")
_HUMAN_PREFERENCE = {"model_a": 1, "model_b": -1, "tie": 0}
_JUDGMENT_FIELDS = {"question_id", "model", "model_1", "model_2", "judge", "judgment", "score", "turn", "tstamp",
                    "user_prompt", "g1_winner", "g2_winner", "g1_user_prompt", "g2_user_prompt", "g1_judgment",
                    "g2_judgment"}


def task_id(question_id: str, turn: int) -> str:
    """The task id of an MT-Bench question's turn."""
    return f"mtb-{as_id(question_id)}-t{turn}"


def answer_id(question_id: str, turn: int, model: str) -> str:
    """The answer id of ``model``'s answer to a question's turn."""
    return f"{task_id(question_id, turn)}:{as_id(model)}"


def _questions(answer_file: Path) -> tuple[Path, dict[str, dict[str, Any]]]:
    """``question.jsonl`` from a folder above ``answer_file``, by question id."""
    for folder in list(answer_file.resolve().parents)[:3]:
        path = folder / "question.jsonl"
        if path.is_file():
            break
    else:
        raise InputError("no question.jsonl in the folders above the answer file", file=str(answer_file),
                         fix="keep FastChat's layout: data/mt_bench/question.jsonl beside model_answer/.")
    src = Source(read_rows(path), TOOL)
    src.require("question_id", "turns", what="MT-Bench's question.jsonl")
    out: dict[str, dict[str, Any]] = {}
    for i in range(1, len(src.rows.rows) + 1):
        turns = src.get(i, "turns")
        if not isinstance(turns, list) or not turns or not all(isinstance(t, str) for t in turns):
            raise src.fail("turns is not a list of the user's messages", row=i, column="turns",
                           fix="check that question.jsonl is FastChat's, unedited.")
        out[str(src.text(i, "question_id"))] = {"turns": turns, "category": src.text(i, "category", required=False)}
    return path, out


def _answer_turns(src: Source, i: int) -> list[str]:
    choices = src.get(i, "choices")
    turns = choices[0].get("turns") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
        raise src.fail("choices[0].turns is not a list of the model's answers", row=i, column="choices",
                       fix="check that the file is FastChat's model answer file, unedited.")
    return turns


def _answers(path: Path) -> Adapted:
    src = Source(read_rows(path), TOOL)
    src.require("question_id", "choices", what=_ANSWER_FILE)
    qfile, questions = _questions(path)
    model = path.stem  # FastChat names a model after its answer file (load_model_answers)
    out: list[dict[str, Any]] = []
    more_choices = False
    for i in range(1, len(src.rows.rows) + 1):
        qid = str(src.text(i, "question_id"))
        if qid not in questions:
            raise src.fail(f"question {qid} is not in {qfile}", row=i, column="question_id",
                           fix="use the question.jsonl the answers were generated from.")
        asked, said = questions[qid]["turns"], _answer_turns(src, i)
        more_choices = more_choices or len(src.get(i, "choices")) > 1
        for turn in range(1, min(len(asked), len(said)) + 1):
            if turn == 1:
                prompt, text = asked[0], said[0]
            else:
                prompt = "\n\n".join(f"[User, turn {t}]\n{q}" for t, q in enumerate(asked[:turn], start=1))
                text = "\n\n".join(f"[Assistant, turn {t}]\n{a}" for t, a in enumerate(said[:turn], start=1))
            out.append({"task_id": task_id(qid, turn), "prompt": prompt, "category": questions[qid]["category"],
                        "answer_id": answer_id(qid, turn, model), "family": as_id(model), "model": as_id(model),
                        "text": text})
    dropped = ["the model family: FastChat names only the model, so family is the model's name",
               "FastChat's answer_id and tstamp (judgelab's answer id is <question>-t<turn>:<model>)"]
    if more_choices:
        dropped.append("choices after the first (FastChat's judge reads choices[0] only)")
    cols = ("task_id", "prompt", "category", "answer_id", "family", "model", "text")
    return Adapted(rows_of(src.rows, out, columns=cols, note="one row per record and turn"), tuple(dropped))


def _judge(src: Source, i: int) -> tuple[str, str | None]:
    judge = src.get(i, "judge")
    if not isinstance(judge, list) or not judge or not isinstance(judge[0], str):
        raise src.fail(f"judge {judge!r} is not [judge model, prompt name]", row=i, column="judge",
                       fix="check that the file is FastChat's judgment file, unedited.")
    return as_id(judge[0]), str(judge[1]) if len(judge) > 1 else None


def _turn(src: Source, i: int) -> int:
    turn = src.number(i, "turn")
    if turn not in (1.0, 2.0):
        raise src.fail(f"turn {turn:g} is not 1 or 2", row=i, column="turn", fix="MT-Bench has two turns.")
    return int(turn or 1)


def _single(src: Source) -> list[dict[str, Any]]:
    out = []
    for i in range(1, len(src.rows.rows) + 1):
        qid, model, turn = str(src.text(i, "question_id")), str(src.text(i, "model")), _turn(src, i)
        judge, prompt_name = _judge(src, i)
        score = src.number(i, "score")
        if score != -1 and not 0 <= float(score or 0) <= 10:
            raise src.fail(f"score {score:g} is not a 1-10 rating or -1", row=i, column="score",
                           fix="FastChat writes the judge's [[rating]], or -1 when there was none; check the file.")
        parsed = score != -1
        out.append({"run_id": None, "call_id": f"{qid}:{model}:t{turn}", "judge_model": judge, "format": "numeric100",
                    "answer_id": answer_id(qid, turn, model), "score": 10 * float(score or 0) if parsed else None,
                    "parse_error": None if parsed else _NO_RATING, "raw": raw_text(src.get(i, "judgment")),
                    "meta": {"mt_bench_score": score, "judge_prompt": prompt_name}})
    return out


def _pair(src: Source) -> list[dict[str, Any]]:
    out = []
    for i in range(1, len(src.rows.rows) + 1):
        if src.get(i, "m1_score") is not None:
            raise src.fail("this record compares two single-answer ratings (m1_score, m2_score), not two orders",
                           row=i, column="m1_score", fix="import the single judgment file as judgements instead.")
        qid, turn = str(src.text(i, "question_id")), _turn(src, i)
        m1, m2 = str(src.text(i, "model_1")), str(src.text(i, "model_2"))
        judge, prompt_name = _judge(src, i)
        for game, order in (("g1", "AB"), ("g2", "BA")):
            winner = src.text(i, f"{game}_winner")
            if winner not in (*_WINNER_SCORE, "error"):
                raise src.fail(f"{game}_winner {winner!r} is not model_1, model_2, tie or error", row=i,
                               column=f"{game}_winner", fix="check that the file is FastChat's pair judgment file.")
            out.append({"run_id": None, "call_id": f"{qid}:{m1}-vs-{m2}:t{turn}:{game}", "judge_model": judge,
                        "format": "pairwise5", "answer_id": answer_id(qid, turn, m1),
                        "answer_b_id": answer_id(qid, turn, m2), "order": order,
                        "score": _WINNER_SCORE.get(str(winner)),
                        "parse_error": _NO_WINNER if winner == "error" else None,
                        "raw": raw_text(src.get(i, f"{game}_judgment")),
                        "meta": {"judge_prompt": prompt_name, "mt_bench_game": game}})
    return out


def _judgements(path: Path) -> Adapted:
    src = Source(read_rows(path), TOOL)
    pair = "g1_winner" in src.rows.columns
    src.require("question_id", "judge", "turn", *(("model_1", "model_2", "g1_winner", "g2_winner") if pair
                                                  else ("model", "score")), what=_JUDGMENT_FILE)
    out = _pair(src) if pair else _single(src)
    extra = [c for c in src.rows.columns if c not in _JUDGMENT_FIELDS]
    dropped = ["the judge's prompts (user_prompt: FastChat's template filled in) and tstamp",
               *([] if pair else [_SCALE]), *([f"the field(s) {extra}"] if extra else [])]
    cols = ("call_id", "judge_model", "format", "answer_id", *(("answer_b_id", "order") if pair else ()),
            "score", "parse_error", "raw", "meta")
    note = "rows 2n-1 and 2n are record n's games g1 and g2" if pair else ""
    return Adapted(rows_of(src.rows, out, columns=cols, note=note), tuple(dropped))


def _is_human_file(src: Source) -> bool:
    return {"model_a", "model_b", "winner"} <= set(src.rows.columns)


def _conversation_turns(src: Source, i: int, column: str) -> tuple[list[str], list[str]]:
    """The user's and the assistant's messages of record ``i``'s conversation, in order."""
    conv = src.get(i, column)
    if hasattr(conv, "tolist"):  # Parquet gives a numpy array of dicts
        conv = conv.tolist()
    ok = isinstance(conv, list) and all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in conv)
    if not ok:
        raise src.fail(f"{column} is not a list of {{role, content}} messages", row=i, column=column,
                       fix="check that the file is the human split of lmsys/mt_bench_human_judgments, unedited.")
    asked = [m["content"] for m in conv if m.get("role") == "user"]
    said = [m["content"] for m in conv if m.get("role") == "assistant"]
    return asked, said


def _human_rows(src: Source) -> list[tuple[int, str, int, str, str]]:
    """``(row, question id, turn, model_a, model_b)`` of every record, checked."""
    src.require(*_HUMAN_FIELDS, what=_HUMAN_FILE)
    out = []
    for i in range(1, len(src.rows.rows) + 1):
        out.append((i, str(src.text(i, "question_id")), _turn(src, i), str(src.text(i, "model_a")),
                    str(src.text(i, "model_b"))))
    return out


def _human_answers(src: Source) -> Adapted:
    src.require("conversation_a", "conversation_b", what=_HUMAN_FILE)
    seen: dict[str, tuple[int, str]] = {}
    out: list[dict[str, Any]] = []
    for i, qid, turn, model_a, model_b in _human_rows(src):
        for model, column in ((model_a, "conversation_a"), (model_b, "conversation_b")):
            asked, said = _conversation_turns(src, i, column)
            if len(asked) < turn or len(said) < turn:
                raise src.fail(f"{column} has {len(said)} answer(s), fewer than turn {turn} needs", row=i,
                               column=column, fix="check that the file is FastChat's human judgments, unedited.")
            if turn == 1:
                prompt, text = asked[0], said[0]
            else:
                prompt = "\n\n".join(f"[User, turn {t}]\n{q}" for t, q in enumerate(asked[:turn], start=1))
                text = "\n\n".join(f"[Assistant, turn {t}]\n{a}" for t, a in enumerate(said[:turn], start=1))
            aid = answer_id(qid, turn, model)
            if aid in seen:
                if seen[aid][1] != text:
                    raise src.fail(f"{model}'s answer to question {qid} turn {turn} differs from row {seen[aid][0]}'s",
                                   row=i, column=column, fix="use one release of the judgments: each model has one "
                                   "answer per question.")
                continue
            seen[aid] = (i, text)
            out.append({"task_id": task_id(qid, turn), "prompt": prompt, "category": None, "answer_id": aid,
                        "family": as_id(model), "model": as_id(model), "text": text})
    dropped = ["the model family: FastChat names only the model, so family is the model's name",
               "repeats: each model's answer to a question's turn is stored once, however many votes show it"]
    cols = ("task_id", "prompt", "category", "answer_id", "family", "model", "text")
    return Adapted(rows_of(src.rows, out, columns=cols, note="one answer per model, question and turn"),
                   tuple(dropped))


def _human_labels(src: Source) -> Adapted:
    out: list[dict[str, Any]] = []
    votes: dict[tuple[str, str, str], int] = {}
    repeats = 0
    for i, qid, turn, model_a, model_b in _human_rows(src):
        winner = src.text(i, "winner")
        if winner not in _HUMAN_PREFERENCE:
            raise src.fail(f"winner {winner!r} is not model_a, model_b or tie", row=i, column="winner",
                           fix="check that the file is FastChat's human judgments, unedited.")
        judge = src.get(i, "judge")
        if not isinstance(judge, str) or judge.startswith(("[", "gpt")):
            raise src.fail(f"judge {judge!r} is a model, not a human rater", row=i, column="judge",
                           fix="this looks like the dataset's gpt4_pair split; import the judge's own "
                               "model_judgment/gpt-4_pair.jsonl as judgements instead.")
        rater = as_id(judge)
        a, b = answer_id(qid, turn, model_a), answer_id(qid, turn, model_b)
        key = (rater, min(a, b), max(a, b))
        votes[key] = votes.get(key, 0) + 1
        if votes[key] > 1:  # judgelab keeps one current preference per rater and pair; FastChat counts each vote
            repeats += 1
            rater = f"{rater}~{votes[key]}"
        out.append({"rater": rater, "answer_a": a, "answer_b": b, "preference": _HUMAN_PREFERENCE[str(winner)],
                    "source": "import"})
    dropped = ["the conversations (import them with `judgelab import answers FILE --from mt-bench`)",
               "the strength of a preference: FastChat's raters chose a winner or a tie, stored as +1, -1 or 0"]
    if repeats:
        dropped.append(f"{repeats} repeated vote(s) by one rater on one pair: each is kept as rater '<name>~<n>' "
                       "(FastChat counts every vote)")
    cols = ("rater", "answer_a", "answer_b", "preference", "source")
    return Adapted(rows_of(src.rows, out, columns=cols, note="one pair label per vote"), tuple(dropped))


def _answers_any(path: Path) -> Adapted:
    src = Source(read_rows(path), TOOL)
    return _human_answers(src) if _is_human_file(src) else _answers(path)


def _labels(path: Path) -> Adapted:
    src = Source(read_rows(path), TOOL)
    if not _is_human_file(src):
        raise src.fail(f"is not {_HUMAN_FILE}: it has no model_a, model_b and winner fields",
                       fix="labels come from FastChat's human judgments; import judgment files as judgements.")
    return _human_labels(src)


ADAPTER = Adapter(
    name="mt-bench",
    exports="FastChat llm_judge: model_answer/<model>.jsonl (choices[0].turns) with question.jsonl; "
            "model_judgment/<judge>_single.jsonl (score 1-10, -1 unparsed) and <judge>_pair.jsonl "
            "(g1_winner, g2_winner: both orders); the human judgments (lmsys/mt_bench_human_judgments, "
            "split human: model_a, model_b, winner, judge, conversation_a/b, turn)",
    reads="answers (one per question and turn), judgements: single ratings (numeric100 = rating × 10) and "
          "pairwise verdicts in both shown orders with ties; from the human judgments, answers and pair labels "
          "(one per vote: +1 model_a, -1 model_b, 0 tie; rater = FastChat's judge name)",
    kinds={"answers": _answers_any, "judgements": _judgements, "labels": _labels},
)

__all__ = ["ADAPTER", "answer_id", "task_id"]
