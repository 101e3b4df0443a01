"""LLMBar's published figures, reproduced exactly by `judgelab position --json` on its verdicts.

The slice in tests/data/llmbar (see its README) holds LLMBar's two-order verdicts of nine
evaluators on two sets and the figures LLMBar published for each (``statistics.json``). Each set
is imported as pairs and verdicts, exactly as a user would, and every figure is rebuilt from
judgelab's JSON and formatted the way LLMBar's evaluate.py formats it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.cli import main

DATA = Path(__file__).parent / "data" / "llmbar"
PUBLISHED: dict[str, dict[str, dict[str, str]]] = json.loads((DATA / "published.json").read_text())
# Pairs unparsed in both orders: "equal" for LLMBar, inconsistent for judgelab.
BOTH_UNPARSED = {("Natural", "PaLM2/Vanilla_NoRules"): 3, ("Natural", "PaLM2/Vanilla"): 2,
                 ("Neighbor", "PaLM2/Vanilla_NoRules"): 1}


def run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def count(stat: dict[str, float]) -> tuple[int, int]:
    k = stat["value"] * stat["n"]
    assert k == pytest.approx(round(k), abs=1e-9)
    return round(k), int(stat["n"])


def fraction(k: int, n: int) -> str:
    return f"{k} / {n} = {k / n * 100}%"  # evaluate.py's "{} / {} = {}%"


@pytest.fixture(scope="module", params=sorted(PUBLISHED))
def position(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    short = request.param
    db = str(tmp_path_factory.mktemp("llmbar") / f"{short}.duckdb")
    assert "pairs added" in run("import", "pairs", str(DATA / f"pairs_{short}.csv"), "--db", db)
    assert "judgements added" in run("import", "verdicts", str(DATA / f"verdicts_{short}.csv"), "--db", db)
    return short, {ev: json.loads(run("position", "--judge-model", ev, "--json", "--db", db))
                   for ev in PUBLISHED[short]}


def test_published_figures_reproduce_exactly(position: tuple[str, dict]) -> None:
    short, found = position
    for evaluator, published in PUBLISHED[short].items():
        pos = found[evaluator]
        acc = pos["accuracy"]
        (ka, n), (kb, nb) = count(acc["a_first"]), count(acc["b_first"])
        both, swap, mean = count(acc["both_orders"]), count(acc["swap_averaged"]), count(acc["mean_of_orders"])
        assert n == nb == pos["pairs"] == pos["pairs_both_orders"] and mean == (ka + kb, 2 * n)
        assert both == swap, "gold is never a tie: right in both orders = right after swap-averaging"
        mine = {
            "correct_False": fraction(ka, n),
            "correct_True": fraction(kb, n),
            "correct_average": f"{mean[0] / 2 / n * 100}%",
            "correct_both": fraction(*both),
            "equal": fraction(*count(pos["positional_agreement"])),
        }
        assert mine == published, (short, evaluator)
        # judgelab's own consistency counts a pair unparsed in both orders as inconsistent.
        agree, consistent = count(pos["positional_agreement"])[0], count(pos["consistency"])[0]
        assert agree - consistent == BOTH_UNPARSED.get((short, evaluator), 0), (short, evaluator)


def test_the_slice_is_small_and_licensed() -> None:
    assert sum(p.stat().st_size for p in DATA.iterdir()) < 250_000
    assert "Princeton Natural Language Processing" in (DATA / "LICENSE.LLMBar").read_text()
    assert sum(len(v) for v in PUBLISHED.values()) * 5 == 45
