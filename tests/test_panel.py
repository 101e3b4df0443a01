"""``judgelab panel`` and :mod:`judgelab.calibration.panel`: cluster-robust OLS, biases, juries, agreement, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.calibration.panel import (
    JURY_MEAN,
    JURY_OTHERS,
    SimJudge,
    clustered_mean,
    clustered_ols,
    coverage_of_known_effects,
    judge_bias,
    panel_analysis,
    pooled_self_bias,
    residual_spread,
    simulate_panel,
    spread_difference,
    to_scale,
)
from judgelab.cli import main
from tests.conftest import DATA, invoke

MODELS = {"gpt-4o": "gpt", "gpt-4o-mini": "gpt", "claude-3-opus": "claude", "claude-3-haiku": "claude",
          "llama-3-70b": "llama"}


def _brute_cr1(y: np.ndarray, x: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    """CR1 by the textbook loop: Σ_g X_g' u_g u_g' X_g between two (X'X)⁻¹, times G/(G-1)·(N-1)/(N-K)."""
    n, k = x.shape
    bread = np.linalg.inv(x.T @ x)
    u = y - x @ (bread @ x.T @ y)
    meat = np.zeros((k, k))
    groups = sorted(set(clusters))
    for g in groups:
        rows = clusters == g
        s = x[rows].T @ u[rows]
        meat += np.outer(s, s)
    g = len(groups)
    return g / (g - 1) * (n - 1) / (n - k) * bread @ meat @ bread


def test_clustered_ols_matches_the_textbook_sandwich() -> None:
    rng = np.random.default_rng(0)
    n = 120
    clusters = rng.integers(0, 17, n).astype(str)
    x = np.column_stack([np.ones(n), rng.normal(size=n), rng.integers(0, 2, n)])
    y = x @ [1.0, 2.0, -0.5] + rng.normal(size=n) + pd.Series(clusters).map(dict.fromkeys(set(clusters), 0.0)
                                                                           ).to_numpy(dtype=float)
    fit = clustered_ols(y, x, clusters)
    np.testing.assert_allclose(fit.coef, np.linalg.lstsq(x, y, rcond=None)[0], rtol=1e-10)
    np.testing.assert_allclose(fit.cov, _brute_cr1(y, x, clusters), rtol=1e-10)
    assert fit.n_clusters == len(set(clusters)) and fit.df == fit.n_clusters - 1


def test_clustered_ols_is_hc1_with_singleton_clusters_and_the_clustered_mean_in_closed_form() -> None:
    rng = np.random.default_rng(1)
    n = 50
    x = np.column_stack([np.ones(n), rng.normal(size=n)])
    y = 3 + x[:, 1] + rng.normal(size=n) * (1 + np.abs(x[:, 1]))
    fit = clustered_ols(y, x, np.arange(n))
    bread = np.linalg.inv(x.T @ x)
    u = y - x @ fit.coef
    hc1 = n / (n - 2) * bread @ (x.T * u**2) @ x @ bread  # White's variance times N/(N-K)
    np.testing.assert_allclose(fit.cov, hc1, rtol=1e-10)
    # A clustered mean: se² = G/(G-1) · Σ_g (Σ_{i∈g} (y_i - ȳ))² / N²  (N-1)/(N-1) = 1
    values = np.array([1.0, 2.0, 4.0, 7.0, 7.5, 9.0])
    groups = np.array(["a", "a", "b", "b", "c", "c"])
    est = clustered_mean(values, groups, units="points", what="test")
    z = pd.Series(values - values.mean()).groupby(groups).sum().to_numpy()
    se = math.sqrt(3 / 2 * (z**2).sum()) / 6
    assert est.extra["se"] == pytest.approx(se)
    assert est.ci_high - est.estimate == pytest.approx(4.302652729911275 * se)  # t(2), 97.5%


def test_clustered_ols_refuses_a_rank_deficient_design() -> None:
    with pytest.raises(ValueError, match="rank-deficient"):
        clustered_ols([1.0, 2.0, 3.0], [[1, 1], [1, 1], [1, 1]], ["a", "b", "c"])


def test_residual_spread_is_the_standard_deviation_and_its_interval_covers() -> None:
    rng = np.random.default_rng(2)
    r = rng.normal(0.3, 2.0, 4000)
    est = residual_spread(r, np.repeat(np.arange(1000), 4), units="points")
    assert est.estimate == pytest.approx(float(np.std(r)))
    assert est.covers(2.0) and est.half_width < 0.1


def test_self_and_family_bias_recovered_and_separated_from_a_better_family() -> None:
    """gpt-4o adds 0.8 to its own answers and 0.4 to gpt-4o-mini's; claude answers are truly better."""
    judges = [SimJudge("gpt-4o", "gpt", self_bias=0.8, family_bias=0.4, leniency=0.2),
              SimJudge("claude-3-opus", "claude", noise=0.8)]
    frame = simulate_panel(judges, MODELS, n_tasks=3000, family_quality={"claude": 0.5}, human_noise=0.0, rng=5)
    result = panel_analysis(frame, scale="likert5", kappa=False)
    gpt, claude = result.judges
    assert gpt.self_bias is not None and gpt.family_bias is not None
    assert gpt.self_bias.covers(0.8) and gpt.family_bias.covers(0.4)
    assert gpt.self_bias.units == "scale points (1-5)" and "CR1" in gpt.self_bias.method
    # Claude's answers really are better: no bias once the human score is controlled ...
    assert claude.self_bias is not None and claude.self_bias.covers(0.0)
    assert claude.family_bias is not None and claude.family_bias.covers(0.0)
    # ... which the simple gap, being about residuals, also sees (human score has no noise here)
    assert claude.gap is not None and claude.gap.covers(0.0)


def test_a_judge_whose_model_wrote_no_answer_has_no_self_bias_row_and_says_so() -> None:
    frame = simulate_panel([SimJudge("mistral-large", "mistral")], MODELS, n_tasks=30, rng=1)
    bias = judge_bias(frame, "mistral-large", units="points")
    assert bias.self_bias is None and bias.family_bias is None and bias.gap is None
    assert bias.self_reason is not None and "mistral-large wrote no answer" in bias.self_reason
    assert bias.family_reason is not None and "another model of the judge's family" in bias.family_reason


def test_jury_of_other_families_drops_the_own_family_preference() -> None:
    """Noise-free judges: the gpt judge adds 1 to gpt answers; the other-families jury never sees it."""
    judges = [SimJudge("gpt-4o", "gpt", self_bias=1.0, family_bias=1.0, noise=0.0),
              SimJudge("claude-3-opus", "claude", noise=0.0), SimJudge("llama-3-70b", "llama", noise=0.0)]
    frame = simulate_panel(judges, MODELS, n_tasks=40, human_noise=0.0, task_sd=0.0, rng=0)
    result = panel_analysis(frame, scale="likert5", kappa=False)
    gpt = next(g for g in result.jury_gaps if g.family == "gpt")
    assert gpt.judges["gpt-4o"].estimate == pytest.approx(1.0)
    assert gpt.juries[JURY_MEAN].estimate == pytest.approx(1 / 3)
    assert gpt.juries[JURY_OTHERS].estimate == pytest.approx(0.0, abs=1e-12)
    assert result.matrix[JURY_OTHERS]["gpt"].estimate == pytest.approx(0.0, abs=1e-12)


def test_agreement_ranks_the_less_noisy_judge_first_with_kappa_from_sklearn() -> None:
    from sklearn.metrics import cohen_kappa_score

    judges = [SimJudge("gpt-4o", "gpt", noise=0.3), SimJudge("claude-3-opus", "claude", noise=1.5)]
    frame = to_scale(simulate_panel(judges, MODELS, n_tasks=200, rng=4), "likert5")
    result = panel_analysis(frame, scale="likert5")
    assert result.best_kappa == "gpt-4o" and result.best_spread == "gpt-4o"
    gpt = next(a for a in result.agreement if a.judge == "gpt-4o")
    rows = frame[frame["judge"] == "gpt-4o"]
    assert gpt.kappa is not None
    assert gpt.kappa.estimate == pytest.approx(cohen_kappa_score(rows["score"], rows["human"], weights="quadratic"))
    assert gpt.kappa.ci_low < gpt.kappa.estimate < gpt.kappa.ci_high
    claude = next(a for a in result.agreement if a.judge == "claude-3-opus")
    assert gpt.spread_vs_best is None and claude.spread_vs_best is not None
    assert claude.spread_vs_best.estimate == pytest.approx(claude.spread.estimate - gpt.spread.estimate)
    assert claude.spread_vs_best.ci_low > 0


def test_spread_difference_is_paired_so_shared_errors_cancel() -> None:
    rng = np.random.default_rng(6)
    tasks = np.repeat(np.arange(300), 3)
    shared = rng.normal(0, 3.0, tasks.size)  # the humans' own noise: in both judges' residuals
    a = shared + rng.normal(0, 1.0, tasks.size)
    b = shared + rng.normal(0, 0.5, tasks.size)
    diff = spread_difference(a, b, tasks, units="points")
    assert diff.estimate == pytest.approx(np.std(a) - np.std(b))
    alone = [residual_spread(x, tasks, units="points") for x in (a, b)]
    unpaired = math.hypot(alone[0].extra["se"], alone[1].extra["se"])
    assert diff.extra["se"] < unpaired / 3
    assert diff.covers(math.hypot(3.0, 1.0) - math.hypot(3.0, 0.5))


# ------------------------------------------------------------------------------------------------
# The CLI, through `judgelab import` as a user would
# ------------------------------------------------------------------------------------------------


def _write_panel(tmp_path: Path, frame: pd.DataFrame) -> dict[str, Path]:
    answers = frame.drop_duplicates("answer_id")
    paths = {k: tmp_path / f for k, f in
             (("answers", "answers.jsonl"), ("labels", "labels.csv"), ("judgements", "judgements.jsonl"))}
    with paths["answers"].open("w") as out:
        for r in answers.itertuples():
            out.write(json.dumps({"task_id": r.task_id, "prompt": f"Prompt {r.task_id}", "answer_id": r.answer_id,
                                  "family": r.answer_family, "model": r.answer_model,
                                  "text": f"answer {r.answer_id}"}) + "\n")
    answers[["answer_id", "human"]].assign(rater="ann", score=answers["human"].astype(int))[
        ["answer_id", "rater", "score"]].to_csv(paths["labels"], index=False)
    with paths["judgements"].open("w") as out:
        for r in frame.itertuples():
            out.write(json.dumps({"run_id": f"panel:{r.judge_model}", "judge_model": r.judge_model,
                                  "judge_family": r.judge_family, "format": "likert5", "answer_id": r.answer_id,
                                  "score": int(r.score)}) + "\n")
    return paths


@pytest.fixture
def panel_db(tmp_path: Path) -> str:
    judges = [SimJudge("gpt-4o", "gpt", self_bias=0.6, family_bias=0.3), SimJudge("claude-3-opus", "claude"),
              SimJudge("mistral-large", "mistral", leniency=0.3)]
    frame = to_scale(simulate_panel(judges, MODELS, n_tasks=30, rng=3), "likert5")
    db = str(tmp_path / "panel.duckdb")
    assert invoke("import", "rubric", str(DATA / "rubric.toml"), "--db", db).exit_code == 0
    for kind, path in _write_panel(tmp_path, frame).items():
        assert invoke("import", kind, str(path), "--db", db).exit_code == 0
    return db


def test_cli_panel_json_has_each_judges_biases_with_intervals(panel_db: str, tmp_path: Path) -> None:
    png = tmp_path / "heat.png"
    res = invoke("panel", "--db", panel_db, "--json", "--png", str(png))
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    judges = {j["judge_model"]: j for j in out["judges"]}
    assert sorted(judges) == ["claude-3-opus", "gpt-4o", "mistral-large"]
    gpt = judges["gpt-4o"]
    for key in ("self_bias", "family_bias", "gap"):
        assert set(gpt[key]) >= {"estimate", "ci_low", "ci_high", "n", "method", "units"}
        assert gpt[key]["n"] == 150 and gpt[key]["units"] == "scale points (1-5)"
    mistral = judges["mistral-large"]
    assert mistral["self_bias"] is None and "wrote no answer" in mistral["self_bias_reason"]
    assert set(out["matrix"]) == {"panel:gpt-4o", "panel:claude-3-opus", "panel:mistral-large", JURY_MEAN,
                                  JURY_OTHERS}
    assert set(out["matrix"][JURY_MEAN]) == {"gpt", "claude", "llama"}
    assert out["agreement"][0]["kappa"]["units"] == "kappa"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_panel_markdown_and_chosen_runs(panel_db: str) -> None:
    res = invoke("panel", "--db", panel_db, "--judge-run", "panel:gpt-4o", "--judge-run", "panel:claude-3-opus")
    assert res.exit_code == 0, res.output
    assert "## Residual matrix (judge x answer family)" in res.output
    assert "| panel:gpt-4o | gpt-4o | gpt | 150 |" in res.output
    assert "mistral" not in res.output


def test_cli_panel_names_an_unknown_run(panel_db: str) -> None:
    res = CliRunner().invoke(main, ["panel", "--db", panel_db, "--judge-run", "nope"])
    assert res.exit_code == 2 and "no judge run 'nope'" in res.output


def test_cli_panel_leaves_out_a_run_on_another_scale_and_says_why(panel_db: str, tmp_path: Path) -> None:
    path = tmp_path / "binary.jsonl"
    path.write_text(json.dumps({"run_id": "binary-run", "judge_model": "gpt-4o", "judge_family": "gpt",
                                "format": "binary", "answer_id": "t0-gpt-4o", "score": 1}) + "\n")
    assert invoke("import", "judgements", str(path), "--db", panel_db).exit_code == 0
    out = json.loads(invoke("panel", "--db", panel_db, "--json").output)
    assert "binary-run" not in out["matrix"] and len(out["judges"]) == 3
    said = "run binary-run left out: it scored in binary, the people in likert5"
    assert any(n.startswith(said) for n in out["notes"])


# ------------------------------------------------------------------------------------------------
# Coverage with known effects (slow)
# ------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_known_self_family_bias_and_leniency_are_covered_93_to_97_percent() -> None:
    cover = coverage_of_known_effects(reps=1000, n_tasks=40, rng=11)
    assert len(cover) == 6  # llama-3-70b has no sibling model: no family-bias
    for name, share in cover.items():
        assert 0.93 <= share <= 0.97, (name, share)


def test_pooled_model_with_per_judge_family_terms_is_judgelabs_per_judge_fit() -> None:
    """The paper's pooled regression differs from judgelab's only in sharing family-bias across a family."""
    judges = [SimJudge("gpt-4o", "gpt", self_bias=0.5, family_bias=0.6),
              SimJudge("gpt-4o-mini", "gpt", self_bias=0.1, family_bias=-0.6, slope=0.7),
              SimJudge("claude-3-opus", "claude", self_bias=0.3)]
    frame = simulate_panel(judges, MODELS, n_tasks=150, rng=8)
    per_judge = {j.model: judge_bias(frame[frame["judge"] == j.model], j.model, units="points") for j in judges}
    unshared = pooled_self_bias(frame, shared_family=False, cluster="task_id")
    for name, bias in per_judge.items():
        assert bias.self_bias is not None and bias.family_bias is not None
        assert unshared["self"][name] == pytest.approx(bias.self_bias.estimate, abs=1e-9)
        assert unshared["family"][name] == pytest.approx(bias.family_bias.estimate, abs=1e-9)
        assert unshared["self_se"][name] == pytest.approx(bias.self_bias.extra["se"], rel=0.2)
    shared = pooled_self_bias(frame)
    # gpt's two judges lean opposite ways on their siblings: one shared term fits neither
    assert abs(shared["family"]["gpt"]) < 0.3
    assert shared["self"]["gpt-4o"] != pytest.approx(unshared["self"]["gpt-4o"], abs=1e-3)
