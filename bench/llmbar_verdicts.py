"""LLMBar's two-order judge verdicts as `judgelab import` files, and its published figures checked.

Source: princeton-nlp/LLMBar (Zeng et al., "Evaluating Large Language Models at Evaluating
Instruction Following", ICLR 2024), MIT licence, commit 900616bf, read from a bare git mirror
(``fetch`` leaves one under /work/.mirror; every file is read with ``git show``). For each
evaluator directory ``Dataset/<set>/evaluators/<base LLM>/<strategy>/`` the repository ships
``result.json`` (per instance, the winner with output_1 shown first, ``swap = False``, and with
output_2 shown first, ``swap = True``, both in the original numbering; ``None`` when the reply
did not parse) and ``statistics.json``, the published figures (``LLMEvaluator/evaluate.py``).

Writes, per set (``Natural``, ``Neighbor``, ...):

- ``pairs_<set>.csv`` for ``judgelab import pairs``: id ``<set>/<index in dataset.json>``, gold
  ``A`` (output_1) or ``B``. The instruction and outputs are NOT copied (they come from other
  data sets with their own licences; ``--texts`` copies them for local use): the texts say where
  they are;
- ``verdicts_<set>.csv`` for ``judgelab import verdicts``: one row per pair, evaluator and order,
  ``judge_model`` = ``<base LLM>/<strategy>``, ``shown_first`` ``a`` (``swap = False``) or ``b``,
  ``winner`` ``a``/``b`` or empty (unparsed);

and ``published.json``: each evaluator's ``statistics.json`` figures (without the kappas, which
come from a coding slip in evaluate.py and are not targets).

With ``--check`` it then imports each set into a fresh database, runs ``judgelab position --json``
per evaluator and prints the published figure next to judgelab's, formatted the way
evaluate.py formats it, and exits non-zero on any difference:

- ``correct_False`` / ``correct_True`` (accuracy with output_1 / output_2 shown first) against
  ``accuracy.a_first`` / ``accuracy.b_first``;
- ``correct_both`` against ``accuracy.both_orders`` and ``accuracy.swap_averaged`` (equal when
  gold is never a tie, as in LLMBar);
- ``correct_average`` (the paper's "Acc.") against ``accuracy.mean_of_orders``;
- ``equal`` (the paper's "Agr.") against ``positional_agreement``, which counts two unparsed
  replies as agreeing, as LLMBar does. judgelab's ``consistency`` counts them as inconsistent;
  the two differ exactly on the pairs unparsed in both orders, which are printed too.

Usage::

    python bench/llmbar_verdicts.py [--mirror DIR] [--out DIR] [--sets Natural,Neighbor]
                                    [--evaluators GPT-4/Vanilla,...] [--check] [--texts]
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

COMMIT = "900616bff90b6c6c8e1681f7d079250637c55992"
MIRROR = "/work/.mirror/princeton-nlp+LLMBar/repo"
REPO = Path(__file__).resolve().parent.parent
SETS = {
    "Natural": "LLMBar/Natural",
    "Neighbor": "LLMBar/Adversarial/Neighbor",
    "GPTInst": "LLMBar/Adversarial/GPTInst",
    "GPTOut": "LLMBar/Adversarial/GPTOut",
    "Manual": "LLMBar/Adversarial/Manual",
}
# A spread: strong and weak judges, position-bound ones, and runs with unparsed replies (on
# Natural, PaLM2/Vanilla_NoRules has three pairs unparsed in both orders).
DEFAULT_EVALUATORS = {
    "Natural": ("GPT-4/Vanilla", "ChatGPT/Vanilla", "LLaMA2/Vanilla", "PaLM2/Vanilla_NoRules", "PaLM2/Vanilla"),
    "Neighbor": ("GPT-4/Vanilla", "LLaMA2/Vanilla", "Falcon/CoT", "PaLM2/Vanilla_NoRules"),
}
FIGURES = ("correct_False", "correct_True", "correct_average", "correct_both", "equal")
LETTER = {"1": "a", "2": "b"}


def show_json(mirror: str, path: str) -> object:
    text = subprocess.run(["git", "--git-dir", mirror, "show", f"{COMMIT}:{path}"], capture_output=True,
                          text=True, check=True).stdout
    return json.loads(text)


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def convert(mirror: str, out: Path, short: str, evaluators: list[str], *, texts: bool) -> dict[str, dict[str, str]]:
    """Write one set's pairs and verdicts; return its published figures per evaluator."""
    root = f"Dataset/{SETS[short]}"
    dataset = show_json(mirror, f"{root}/dataset.json")
    assert isinstance(dataset, list)
    pairs = []
    for i, inst in enumerate(dataset):
        pid = f"{short}/{i}"
        where = f"princeton-nlp/LLMBar@{COMMIT[:8]} {root}/dataset.json [{i}]"
        pairs.append([pid, inst["input"] if texts else f"instruction of {where} (not copied)",
                      inst["output_1"] if texts else f"output_1 of {where} (not copied)",
                      inst["output_2"] if texts else f"output_2 of {where} (not copied)",
                      "A" if str(inst["label"]) == "1" else "B"])
    write_csv(out / f"pairs_{short}.csv", ["id", "prompt", "answer_a", "answer_b", "gold"], pairs)
    verdicts, published = [], {}
    for evaluator in evaluators:
        folder = f"{root}/evaluators/{evaluator}"
        result = show_json(mirror, f"{folder}/result.json")
        assert isinstance(result, list) and len(result) == len(dataset), folder
        for i, inst in enumerate(result):
            assert inst["output_1"] == dataset[i]["output_1"] and inst["label"] == dataset[i]["label"], (folder, i)
            final = inst["results"][-1]
            for swap, first in ((False, "a"), (True, "b")):
                winner = final[f"swap = {swap}"]["winner"]  # original numbering; None = unparsed
                verdicts.append([f"{short}/{i}", evaluator, first, LETTER.get(winner, "") if winner else ""])
        stats = show_json(mirror, f"{folder}/statistics.json")
        assert isinstance(stats, dict)
        published[evaluator] = {k: str(stats[k]) for k in FIGURES}
    write_csv(out / f"verdicts_{short}.csv", ["pair_id", "judge_model", "shown_first", "winner"], verdicts)
    return published


def llmbar_format(key: str, k: float, n: int) -> str:
    """A figure the way LLMEvaluator/evaluate.py prints it, from a count ``k`` of ``n``."""
    if key == "correct_average":
        return f"{k / 2 / n * 100}%"  # k is the sum of the two orders' counts
    return f"{round(k)} / {n} = {round(k) / n * 100}%"


def judgelab_figures(position: dict[str, object]) -> dict[str, str]:
    """LLMBar's five figures from ``judgelab position --json``, formatted as LLMBar does."""

    def count(stat: object) -> tuple[float, int]:
        assert isinstance(stat, dict)
        return stat["value"] * stat["n"], stat["n"]

    acc = position["accuracy"]
    assert isinstance(acc, dict)
    (ka, n), (kb, _) = count(acc["a_first"]), count(acc["b_first"])
    kboth, _ = count(acc["both_orders"])
    kswap, _ = count(acc["swap_averaged"])
    assert round(kboth) == round(kswap), "no tie in LLMBar's gold: both orders = swap-averaged"
    kmean, nmean = count(acc["mean_of_orders"])
    assert nmean == 2 * n
    return {
        "correct_False": llmbar_format("correct_False", ka, n),
        "correct_True": llmbar_format("correct_True", kb, n),
        "correct_average": llmbar_format("correct_average", round(kmean), n),
        "correct_both": llmbar_format("correct_both", kboth, n),
        "equal": llmbar_format("equal", *count(position["positional_agreement"])),
    }


def judgelab(*args: str) -> str:
    return subprocess.run([sys.executable, "-m", "judgelab", *args], capture_output=True, text=True,
                          check=True).stdout


def check(out: Path, published: dict[str, dict[str, dict[str, str]]]) -> int:
    """Import each set, compare judgelab's figures with the published ones; the number that differ."""
    differ = 0
    for short, runs in published.items():
        with tempfile.TemporaryDirectory() as tmp:
            db = str(Path(tmp) / "llmbar.duckdb")
            judgelab("import", "pairs", str(out / f"pairs_{short}.csv"), "--db", db)
            judgelab("import", "verdicts", str(out / f"verdicts_{short}.csv"), "--db", db)
            for evaluator, figures in runs.items():
                position = json.loads(judgelab("position", "--judge-model", evaluator, "--json", "--db", db))
                mine = judgelab_figures(position)
                for key in FIGURES:
                    same = mine[key] == figures[key]
                    differ += not same
                    print(f"{short:9} {evaluator:24} {key:16} {figures[key]:34} | {mine[key]:34} "
                          f"{'same' if same else 'DIFFERENT'}")
                c = position["consistency"]
                print(f"{short:9} {evaluator:24} {'consistency':16} {'(judgelab: unparsed = inconsistent)':34} | "
                      f"{round(c['value'] * c['n'])} / {c['n']}; parse failures {position['parse_failures']}")
    return differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirror", default=MIRROR)
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "llmbar")
    parser.add_argument("--sets", default=",".join(DEFAULT_EVALUATORS))
    parser.add_argument("--evaluators", default="", help="Evaluators for every set [default: a spread per set].")
    parser.add_argument("--texts", action="store_true", help="Copy the instructions and outputs (local use only).")
    parser.add_argument("--check", action="store_true", help="Import the files and compare with the published.")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    published = {}
    for short in args.sets.split(","):
        chosen = args.evaluators.split(",") if args.evaluators else list(DEFAULT_EVALUATORS[short])
        published[short] = convert(args.mirror, args.out, short, chosen, texts=args.texts)
    (args.out / "published.json").write_text(json.dumps(published, indent=2) + "\n")
    print(f"wrote {args.out}: {', '.join(f'{s} ({len(r)} evaluators)' for s, r in published.items())}")
    if not args.check:
        return 0
    differ = check(args.out, published)
    print(f"{differ} published figures differ from judgelab's" if differ else "every published figure reproduced")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
