"""MT-Bench's human judgments and judge-human agreement (issue 44 point 5), run as a user types it.

The files in tests/data/mt_bench_human are a HAND-WRITTEN fixture in FastChat's documented shapes
(see its NOTICE): the real human judgments were not reachable from the build machine. The check
here is that `judgelab agreement` counts exactly as FastChat's compute_agreement.py does, by a
transcription of its rules applied to the raw files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.cli import main
from judgelab.labeler.adapters import import_from
from judgelab.labeler.errors import InputError
from judgelab.labeler.exports import export_table
from judgelab.labeler.store import Store

DATA = Path(__file__).parent / "data" / "mt_bench_human"
HUMAN, PAIR = DATA / "human_judgments.jsonl", DATA / "gpt-4_pair.jsonl"


def run(*args: str, ok: bool = True) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert (result.exit_code == 0) is ok, result.output
    return result.output


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _flip(w: str) -> str:
    return {"model_a": "model_b", "model_b": "model_a"}.get(w, w)


def _fastchat_votes(turn: int) -> dict[tuple, dict[str, list[str]]]:
    """compute_agreement.py's get_mt_bench_votes_data on the raw files (expert_* is "human")."""
    votes: dict[tuple, dict[str, list[str]]] = {}

    def add(r: dict, a: str, b: str, winner: str, who: str) -> None:
        if r["turn"] == turn:
            key, w = ((r["question_id"], a, b), winner) if a < b else ((r["question_id"], b, a), _flip(winner))
            votes.setdefault(key, {}).setdefault(who, []).append(w)

    for r in _lines(HUMAN):
        add(r, r["model_a"], r["model_b"], r["winner"], "human" if r["judge"].startswith("expert") else "author")
    for r in _lines(PAIR):  # the gpt4_pair votes: both games agree, else a tie; a game without a verdict drops it
        if "error" not in (r["g1_winner"], r["g2_winner"]):
            g = r["g1_winner"] if r["g1_winner"] == r["g2_winner"] else "tie (inconsistent)"
            add(r, r["model_1"], r["model_2"], g.replace("model_1", "model_a").replace("model_2", "model_b"),
                "gpt4-pair")
    return votes


def _tie(v: str) -> bool:
    return "tie" in v


def _same(v1: str, v2: str) -> bool:
    return (_tie(v1) and _tie(v2)) or v1 == v2


def _fastchat(judge_name: str, ties: bool, turn: int) -> tuple[int, int]:
    """compute_agreement.py's get_mt_bench_agreement: (agree, total)."""
    pairs: list[tuple[str, str]] = []
    for v in _fastchat_votes(turn).values():
        hs = v.get("human", [])
        if judge_name == "gpt4-pair":
            pairs += [(v["gpt4-pair"][0], h) for h in hs if "gpt4-pair" in v]
        else:
            pairs += [(hs[i], hs[j]) for i in range(len(hs)) for j in range(i + 1, len(hs))]
    kept = [(x, y) for x, y in pairs if ties or not (_tie(x) or _tie(y))]
    return sum(_same(x, y) for x, y in kept), len(kept)


def _imported(db: str) -> None:
    run("init", "--db", db)
    run("import", "answers", str(HUMAN), "--from", "mt-bench", "--db", db)
    out = run("import", "labels", str(HUMAN), "--from", "mt-bench", "--db", db)
    assert "17 pair labels added" in out and "1 repeated vote(s)" in out
    out = run("import", "judgements", str(PAIR), "--from", "mt-bench", "--db", db)
    assert "16 judgements added" in out and "1 judge reply did not parse" in out


def test_agreement_counts_as_fastchat_compute_agreement(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    _imported(db)
    got = json.loads(run("agreement", "--judge-model", "gpt-4", "--raters", "expert*", "--json", "--db", db))
    assert (got["judge_items"], got["unparsed_items"], got["human_votes"]) == (7, 1, 16)
    seen = 0
    for row in got["rows"]:
        who = "gpt4-pair" if row["compared"] == "judge-human" else "human"
        agree, total = _fastchat(who, row["ties"], int(row["turn"]))
        assert (row["agreement"]["extra"]["agree"], row["agreement"]["n"]) == (agree, total), row
        seen += 1
    assert seen == 8  # two turns x (judge-human, human-human) x (with, without ties)
    text = run("agreement", "--judge-model", "gpt-4", "--raters", "expert*", "--db", db)
    assert "turn 1 judge-human with tie: #total 8, #agree 3, ratio 0.3750" in text
    assert "turn 2 judge-human without tie: #total 5, #agree 5, ratio 1.0000" in text
    # The Python API reads the same frames with the same function: the same figures.
    import judgelab as jl

    project = jl.open_project(db)
    api = jl.vote_agreement(project.judgements, project.frame("pair_labels"), project.answers,
                            judge_model="gpt-4", rater_prefix="expert")
    assert api.to_dict() == {k: v for k, v in got.items() if k not in ("judge_model", "raters")}
    assert len(api.to_frame()) == 8 and "turn 1 judge-human with tie: #total 8" in repr(api)


def test_human_judgments_as_parquet_import_the_same(tmp_path: Path) -> None:
    # The Hugging Face dataset is stored as Parquet: conversations arrive as arrays of structs.
    parquet = tmp_path / "human-00000-of-00001.parquet"
    pd.read_json(HUMAN, lines=True).to_parquet(parquet)
    stores = []
    for path in (HUMAN, parquet):
        store = Store(str(tmp_path / f"{path.suffix[1:]}.duckdb"))
        import_from(store, "answers", path, tool="mt-bench")
        import_from(store, "labels", path, tool="mt-bench")
        stores.append(store)
    for kind in ("answers", "pair_labels"):
        a, b = (export_table(s, kind).drop(columns=["created_at"], errors="ignore") for s in stores)
        pd.testing.assert_frame_equal(a, b)  # type: ignore[arg-type]


def test_a_bad_human_judgments_file_is_refused_whole(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "p.duckdb"))
    import_from(store, "answers", HUMAN, tool="mt-bench")
    rows = _lines(HUMAN)
    rows[4]["winner"] = "model_c"
    bad = tmp_path / "human.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError) as err:
        import_from(store, "labels", bad, tool="mt-bench")
    assert (err.value.row, err.value.column) == (5, "winner") and "model_a, model_b or tie" in str(err.value)
    assert len(export_table(store, "pair_labels")) == 0
    rows = _lines(HUMAN)
    rows[0]["judge"] = ["gpt-4", "pair-v2"]
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match="is a model, not a human rater"):
        import_from(store, "labels", bad, tool="mt-bench")
    with pytest.raises(InputError, match="labels come from FastChat's human judgments"):
        import_from(store, "labels", PAIR, tool="mt-bench")


def test_agreement_without_data_says_what_to_import(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    run("init", "--db", db)
    out = run("agreement", "--judge-model", "gpt-4", "--db", db, ok=False)
    assert "import both first" in out
