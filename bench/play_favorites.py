"""Reproduce the published self-bias figures of "Play Favorites" (Spiliopoulou et al. 2025) with ``judgelab panel``.

Run: ``python bench/play_favorites.py REPO_DIR`` where ``REPO_DIR`` is a checkout of
https://github.com/spilioeve/Play-Favorites (its ``data/*.csv``; the repository has no licence
file, so no slice of it is kept in this repository: fetch it yourself).

For each evaluation dimension whose CSV is present, the script turns the CSV into judgelab's
import files, imports them into a fresh database through ``judgelab import`` (rubric, answers,
labels, judgements), runs ``judgelab panel --json``, and prints three columns per judge:

* **published**: the self-bias the paper plots per dimension (``plots/self_preference_bias_
  linear_by_dimension.pdf``: 0-1 scale, read off the PDF's vector coordinates, ±0.0005);
* **paper's model, refit**: the paper's per-dimension regression ``rating ~ judge + gt:judge +
  same_judge + same_family - 1`` (one OLS over all judges, family-bias shared by the judges of a
  family, HC1 variance), refit here with :func:`judgelab.calibration.panel.pooled_self_bias`;
* **judgelab**: ``judges[].self_bias`` of ``judgelab panel`` (one OLS per judge, family-bias per
  judge, task-clustered CR1 variance), divided by 100 to put it on the paper's 0-1 scale.

Scales: the dimension's ratings (0-4 Faithfulness, 0-2 Logical correctness) are stretched onto
judgelab's numeric100 as ``100 · value / max`` (max over human and judge ratings, as the paper
divides by it): judgelab's points are the paper's 0-1 units times 100. The human score of an
answer is the CSV's ``gt`` (already the mean of the human ratings) imported as one label.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judgelab.calibration.panel import pooled_self_bias
from judgelab.cli import main as cli

#: Self-bias per judge as plotted per dimension by the paper (0-1 scale), read from the vector
#: coordinates of plots/self_preference_bias_linear_by_dimension.pdf (commit e99c190).
PUBLISHED = {
    "Faithfulness": {"Claude v2": 0.0079, "Claude 3 Sonnet": 0.0083, "Claude 3.5 Sonnet": 0.0140,
                     "GPT-3.5 Turbo": 0.0197, "GPT-4o": 0.0230, "Llama 3 8B": -0.0650, "Llama 3 70B": -0.0440,
                     "Mistral 7B": -0.0187, "Mistral Large": 0.0299},
    "Logical correctness": {"Claude v2": 0.0052, "Claude 3 Sonnet": 0.0155, "Claude 3.5 Sonnet": 0.0536,
                            "GPT-3.5 Turbo": 0.0393, "GPT-4o": 0.0346, "Llama 3 8B": -0.1298,
                            "Llama 3 70B": 0.0082, "Mistral 7B": -0.0096, "Mistral Large": 0.0087},
}
_RECODE = {"anthropic.claude-v2": "Claude v2", "meta.llama3-1-70b": "Llama 3 70B", "meta.llama3-1-8b": "Llama 3 8B",
           "mistral.mistral-large-2407": "Mistral Large", "mistral.mistral-7b": "Mistral 7B",
           "anthropic.claude-3.5-sonnet": "Claude 3.5 Sonnet", "anthropic.claude-3-sonnet": "Claude 3 Sonnet",
           "gpt-3.5-turbo": "GPT-3.5 Turbo", "gpt-4o": "GPT-4o"}


def model_name(raw: str) -> str:
    """The paper's display name of a model id (its ``data_prep._clean_name`` and recode)."""
    name = raw
    for pat in (r"20241022-", r"-20240229", r"-instruct-v1:0", r"-v2:0", r"-v1:0", r"-instruct-v0:2", r":1"):
        name = re.sub(pat, "", name)
    name = name.replace("3-5", "3.5")
    return _RECODE.get(name, name)


def family(name: str) -> str:
    """The paper's family of a display name."""
    for key, fam in (("Claude", "Claude"), ("GPT", "GPT"), ("Mistral", "Mistral"), ("Llama 3", "Llama 3")):
        if key in name:
            return fam
    return "other"


def slug(name: str) -> str:
    """A display name as a judgelab id (no spaces)."""
    return name.replace(" ", "_")


def load(csv: Path) -> pd.DataFrame:
    """One dimension's CSV with display names, families and the 0-1 stretch the paper uses."""
    df = pd.read_csv(csv).dropna(subset=["judge", "model", "gt", "rating"])
    top = float(max(df["gt"].max(), df["rating"].max()))
    df = df.assign(judge=df["judge"].map(model_name), model=df["model"].map(model_name),
                   gt01=df["gt"] / top, rating01=df["rating"] / top)
    return df.assign(judge_family=df["judge"].map(family), model_family=df["model"].map(family))


def paper_model(df: pd.DataFrame) -> dict[str, float]:
    """The paper's per-dimension regression (:func:`judgelab.calibration.panel.pooled_self_bias`, HC1), 0-1 scale."""
    frame = pd.DataFrame({"judge": df["judge"], "judge_model": df["judge"], "judge_family": df["judge_family"],
                          "answer_id": df["prompt_id"] + ":" + df["model"], "task_id": df["prompt_id"],
                          "answer_model": df["model"], "answer_family": df["model_family"],
                          "score": df["rating01"], "human": df["gt01"]})
    return pooled_self_bias(frame)["self"]


def write_imports(df: pd.DataFrame, prompts: pd.DataFrame | None, out: Path, dimension: str) -> list[tuple[str, Path]]:
    """The import files of one dimension: rubric, answers, labels, judgements (numeric100)."""
    rubric = out / "rubric.toml"
    key = dimension.lower().replace(" ", "-")
    rubric.write_text(
        f'id = "play-favorites-{key}"\nversion = 1\nname = "{dimension} (Play Favorites)"\n'
        'scale = "numeric100"\npass_threshold = 70\npass_rule = "70 or more on the 0-100 stretch"\n'
        f'instructions = "The paper\'s {dimension} rating, stretched onto 0-100 as 100 * value / max."\n'
        '[author]\nkind = "human"\nname = "Spiliopoulou et al. 2025"\n'
        f'[[criteria]]\nid = "{key}"\nname = "{dimension}"\ndescription = "As the paper defines it."\n')
    text = dict(zip(prompts["prompt_id"], prompts["prompt"], strict=True)) if prompts is not None else {}
    answers = df.drop_duplicates(["prompt_id", "model"])
    answer_id = answers["prompt_id"] + ":" + answers["model"].map(slug)
    pd.DataFrame({
        "task_id": answers["prompt_id"], "prompt": [text.get(p, f"prompt {p}") for p in answers["prompt_id"]],
        "category": answers["dataset"], "answer_id": answer_id, "family": answers["model_family"].map(slug),
        "model": answers["model"].map(slug), "text": "(the completion is in the paper's data/indexer_prompts.csv)",
    }).to_json(out / "answers.jsonl", orient="records", lines=True)
    pd.DataFrame({"answer_id": answer_id, "rater": "humans-mean", "score": 100 * answers["gt01"]}).to_csv(
        out / "labels.csv", index=False)
    pd.DataFrame({
        "run_id": "pf:" + df["judge"].map(slug), "judge_model": df["judge"].map(slug),
        "judge_family": df["judge_family"].map(slug), "format": "numeric100",
        "answer_id": df["prompt_id"] + ":" + df["model"].map(slug), "score": 100 * df["rating01"],
    }).to_json(out / "judgements.jsonl", orient="records", lines=True)
    return [("rubric", rubric), ("answers", out / "answers.jsonl"), ("labels", out / "labels.csv"),
            ("judgements", out / "judgements.jsonl")]


def reproduce(csv: Path, prompts: pd.DataFrame | None, workdir: Path) -> pd.DataFrame:
    """Import one dimension through ``judgelab import`` and compare ``judgelab panel`` with the paper."""
    dimension = csv.stem
    df = load(csv)
    db = workdir / f"{dimension}.duckdb"
    db.unlink(missing_ok=True)  # a fresh project per run: the rubric's id and version stay the same
    runner = CliRunner()
    for kind, path in write_imports(df, prompts, workdir, dimension):
        res = runner.invoke(cli, ["import", kind, str(path), "--db", str(db)], catch_exceptions=False)
        if res.exit_code != 0:
            raise SystemExit(f"judgelab import {kind} failed: {res.output}")
    res = runner.invoke(cli, ["panel", "--db", str(db), "--json", "--png", str(workdir / f"{dimension}.png")],
                        catch_exceptions=False)
    if res.exit_code != 0:
        raise SystemExit(f"judgelab panel failed: {res.output}")
    panel = json.loads(res.output)
    (workdir / f"{dimension}.json").write_text(res.output)
    refit = paper_model(df)
    rows = []
    names = {slug(n): n for n in df["judge"].unique()}
    for judge in panel["judges"]:
        sb = judge["self_bias"]
        name = names[judge["judge_model"]]
        rows.append({"dimension": dimension, "judge": name,
                     "published": PUBLISHED.get(dimension, {}).get(name, float("nan")),
                     "paper_model_refit": refit.get(name, float("nan")),
                     "judgelab": sb["estimate"] / 100 if sb else float("nan"),
                     "judgelab_ci": f"{sb['ci_low'] / 100:+.3f}..{sb['ci_high'] / 100:+.3f}" if sb else "",
                     "judgelab_family_bias": judge["family_bias"]["estimate"] / 100 if judge["family_bias"] else
                     float("nan"), "gap": judge["gap"]["estimate"] / 100 if judge["gap"] else float("nan")})
    return pd.DataFrame(rows)


def main() -> None:
    """Reproduce every dimension whose CSV is in the checkout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="a checkout of github.com/spilioeve/Play-Favorites")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the databases, JSON and PNGs here")
    args = parser.parse_args()
    prompts_path = args.repo / "data" / "prompt_ids.csv"
    prompts = pd.read_csv(prompts_path) if prompts_path.exists() else None
    work = args.workdir or Path(tempfile.mkdtemp(prefix="play-favorites-"))
    work.mkdir(parents=True, exist_ok=True)
    tables = [reproduce(args.repo / "data" / f"{dim}.csv", prompts, work)
              for dim in PUBLISHED if (args.repo / "data" / f"{dim}.csv").exists()]
    if not tables:
        raise SystemExit(f"no dimension CSV of {list(PUBLISHED)} under {args.repo / 'data'}")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(pd.concat(tables, ignore_index=True).round(4).to_string(index=False))
    print(f"databases, panel JSON and heatmaps in {work}")


if __name__ == "__main__":
    main()
