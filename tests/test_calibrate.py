"""The calibration report through the Store: the seed's worked numbers come out exactly.

The fixture database is built the way a team's data arrives: a pool (``Store.add_pool``),
human labels (``Store.add_imported_labels``), judgements (``Store.add_imported_judgements``,
each judge model becoming a run named ``import:<model>`` with its family). Every figure is
then read back through :func:`judgelab.calibration.calibrate.calibrate`, not by calling the statistics
directly.

Seed 000's cross-family run: humans pass 71% of the judge's own family's answers and 68% of the
other family's; the judge passes 79% and 66%. Residuals +8 and −2 percentage points, gap 10.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from judgelab.calibration.calibrate import (
    CalibrationReport,
    FamilyResidual,
    SelfPreferenceGap,
    calibrate,
    format_rows,
    load_calibration_data,
)
from judgelab.calibration.calibrate._load import isin
from judgelab.calibration.report import render_markdown
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Answer, Criterion, ImportedJudgement, ImportedLabel, Rubric, Task
from judgelab.labeler.store import Store

N_RESAMPLES = 300
OWN, OTHER = "claude", "gpt"
JUDGE = "claude-judge-1"


def rubric(*, author_kind: str = "human", author: str = "support team") -> Rubric:
    return Rubric(
        rubric_id="support",
        version=1,
        name="Support reply quality",
        scale="likert5",
        pass_rule="overall >= 4",
        pass_threshold=4.0,
        criteria=(Criterion("correct", "Correct", "Every step is right."),),
        author_kind=author_kind,  # type: ignore[arg-type]  # the two literals
        author=author,
    )


def _cells(n_both: int, n_human_only: int, n_judge_only: int, n_neither: int) -> list[tuple[int, int]]:
    """(human pass, judge pass) per answer, in a fixed order."""
    return (
        [(1, 1)] * n_both + [(1, 0)] * n_human_only + [(0, 1)] * n_judge_only + [(0, 0)] * n_neither
    )


# Seed 000: own family 71% human / 79% judge, other family 68% / 66% (100 answers each).
SEED_CELLS = {OWN: _cells(69, 2, 10, 19), OTHER: _cells(60, 8, 6, 26)}
# A judge 8 points lenient on both families: humans 71% and 68%, judge 79% and 76%.
LENIENT_CELLS = {OWN: _cells(69, 2, 10, 19), OTHER: _cells(66, 2, 10, 22)}


@dataclass(frozen=True)
class Built:
    store: Store
    run_id: str
    tasks: list[str]


def build_store(
    path: Path,
    cells: dict[str, list[tuple[int, int]]] = SEED_CELLS,
    *,
    rubric_author: tuple[str, str] = ("human", "support team"),
    reference_author: tuple[str, str] | None = None,
    judge: str = JUDGE,
    family: str | None = OWN,
    n_unlabelled: int = 40,
    simulated: bool = False,
    raters: int = 2,
) -> Built:
    """A pool where answer ``i`` of each family belongs to task ``t{i}``, labelled per ``cells``.

    Every rater gives the same pass verdict on an answer (so the human pass fraction is exactly
    0 or 1 and the seed's numbers are exact), but the raters' scores differ by one point on
    half the answers, so the score-scale interval has rater spread to carry.
    """
    store = Store(path)
    store.add_rubric(rubric(author_kind=rubric_author[0], author=rubric_author[1]))
    n = len(cells[OWN])
    n_tasks = n + n_unlabelled
    ref_kind, ref_author = reference_author if reference_author else (None, None)
    tasks = [
        Task(f"t{i:03d}", f"Ticket {i}", "billing" if i % 2 else "account",
             reference_answer="Do X then Y." if reference_author else None,
             reference_author_kind=ref_kind, reference_author=ref_author)  # type: ignore[arg-type]
        for i in range(n_tasks)
    ]
    answers = [
        Answer(f"{fam}-{i:03d}", f"t{i:03d}", fam, f"{fam}-model", f"Answer {i} by {fam}. " * (1 + i % 3))
        for fam in cells for i in range(n_tasks)
    ]
    store.add_pool(tasks, answers)
    labels: list[ImportedLabel] = []
    judgements: list[ImportedJudgement] = []
    rng = np.random.default_rng(7)
    for fam, fam_cells in cells.items():
        for i, (human, judge_pass) in enumerate(fam_cells):
            aid = f"{fam}-{i:03d}"
            for r in range(raters):
                # Pass -> 4 or 5, fail -> 2 or 3; raters differ by one point on odd answers.
                score = (4 if human else 2) + (r % 2 if i % 2 else 0)
                labels.append(ImportedLabel(aid, f"rater{r}", float(score), bool(human), {"correct": float(score)}))
            value = 4.0 + (i % 2) if judge_pass else 2.0 + (i % 2)
            judgements.append(ImportedJudgement(aid, judge, value, bool(judge_pass), "likert5", judge_family=family))
        for i in range(n, n_tasks):
            passed = bool(rng.random() < 0.7)
            judgements.append(ImportedJudgement(f"{fam}-{i:03d}", judge, 4.0 if passed else 2.0, passed,
                                                "likert5", judge_family=family))
    store.add_imported_labels(labels, source="simulated" if simulated else "import")
    store.add_imported_judgements(judgements)
    return Built(store, f"import:{judge}", [t.task_id for t in tasks])


def add_length_probe(store: Store, judge: str, pad_gap: float, trunc_gap: float, n: int = 100) -> None:
    """Length-probe variants whose mean paired gaps are exactly ``pad_gap`` and ``trunc_gap``.

    Padded and truncated variants of the own family's first ``n`` answers, judged by ``judge``.

    The originals keep the scores :data:`JUDGE` gave them (``judge`` re-scores them the same
    way when it is another run); ``round(pad_gap * n)`` padded variants score one point more
    than their original and the rest the same; ``round(trunc_gap * n)`` truncated variants
    score one point less.
    """
    judged = store.export_frame("judgements")
    first = judged[(judged["run_id"] == f"import:{JUDGE}") & (judged["format"] == "likert5")]
    value_of = dict(zip(first["answer_id"], first["value"].astype(float), strict=True))
    parents = [f"{OWN}-{i:03d}" for i in range(n)]
    up = set([p for p in parents if value_of[p] < 5][: round(pad_gap * n)])
    down = set([p for p in parents if value_of[p] > 1][: round(trunc_gap * n)])
    assert len(up) == round(pad_gap * n) and len(down) == round(trunc_gap * n)
    pool = store.pool_answers().set_index("answer_id")
    variants = [
        Answer(f"{p}~{v}", str(pool.loc[p, "task_id"]), OWN, f"{OWN}-model", f"{v} text of {p}",
               variant=v, parent_answer_id=p)
        for p in parents for v in ("padded", "truncated")
    ]
    store.add_pool([], variants)
    js = [ImportedJudgement(f"{p}~padded", judge, value_of[p] + (p in up), None, "likert5", judge_family=OWN)
          for p in parents]
    js += [ImportedJudgement(f"{p}~truncated", judge, value_of[p] - (p in down), None, "likert5",
                             judge_family=OWN) for p in parents]
    if judge != JUDGE:
        js += [ImportedJudgement(p, judge, value_of[p], None, "likert5", judge_family=OWN) for p in parents]
    store.add_imported_judgements(js)


# Provenance does not depend on the numbers: a smaller pool keeps those tests quick.
SMALL_CELLS = {OWN: _cells(7, 1, 2, 10), OTHER: _cells(6, 2, 2, 10)}


@pytest.fixture(scope="module")
def seed_store(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The seed's database, shared by the tests that only read it."""
    return build_store(tmp_path_factory.mktemp("seed") / "seed.duckdb")


@pytest.fixture(scope="module")
def seed_report(seed_store: Built) -> CalibrationReport:
    return report_of(seed_store)


def report_of(built: Built, **kw: object) -> CalibrationReport:
    return calibrate(built.store, built.run_id, n_resamples=N_RESAMPLES, **kw)  # type: ignore[arg-type]


# -- the seed's worked numbers -----------------------------------------------------------------


def test_seed_residuals_and_gap_come_out_exactly(seed_report: CalibrationReport) -> None:
    report = seed_report
    section = report.residuals["pass"]
    own, other = section.families[OWN], section.families[OTHER]
    # 79 - 71 = +8 and 66 - 68 = -2 percentage points; gap 8 - (-2) = 10.
    assert own.human_mean == pytest.approx(71, abs=1e-9)
    assert own.judge_mean == pytest.approx(79, abs=1e-9)
    assert other.human_mean == pytest.approx(68, abs=1e-9)
    assert other.judge_mean == pytest.approx(66, abs=1e-9)
    assert own.estimate == pytest.approx(8, abs=1e-9)
    assert other.estimate == pytest.approx(-2, abs=1e-9)
    assert section.gap is not None
    assert section.gap.estimate == pytest.approx(10, abs=1e-9)
    assert section.units == "percentage points"
    # 100 tasks, each with one answer per family: the gap's variance is paired by task.
    assert section.gap.n == 100 and own.n == 100 and own.n_answers == 100
    assert section.gap.ci_low < 10 < section.gap.ci_high
    assert "100 paired task clusters" in section.gap.method and "t interval" in section.gap.method
    # Two raters labelled every answer: the interval speaks for raters like them, and says so.
    assert "raters like these (2 raters" in section.gap.method
    assert section.gap.interval == "t(99), raters" and section.gap.unreliable is None
    assert report.judge_family == OWN and report.judge_format == "likert5"


def test_typed_residuals_keep_the_statistics_json_shape(seed_report: CalibrationReport) -> None:
    section = seed_report.residuals["pass"]
    own, gap = section.families[OWN], section.gap
    assert gap is not None
    assert gap.own_family == OWN and gap.other_families == (OTHER,)
    assert gap.residuals == pytest.approx({OWN: 8.0, OTHER: -2.0}, abs=1e-9)
    assert gap.judge_means[OTHER] == pytest.approx(66, abs=1e-9) and gap.bound is None
    # The JSON carries what the statistics return: the per-family figures under "extra".
    extra = gap.to_dict()["extra"]
    assert extra["residual[claude]"] == pytest.approx(8, abs=1e-9) and extra["other_families"] == [OTHER]
    assert list(extra)[-2:] == ["bound", "bound_reason"]
    assert set(own.to_dict()["extra"]) == {"judge_mean", "human_mean", "n_answers", "weighted", "interval",
                                           "scope", "unreliable"}
    assert SelfPreferenceGap.from_estimate(gap.as_estimate()) == gap
    assert FamilyResidual.from_estimate(OWN, own.as_estimate()) == own


def test_score_scale_residuals_carry_rater_spread(seed_report: CalibrationReport) -> None:
    report = seed_report
    score = report.residuals["score"]
    assert score.units == "judge scale points"
    # Judge: pass -> 4 + (i % 2), fail -> 2 + (i % 2). Humans: pass -> mean of 4 and 4 + (i % 2).
    # On odd answers the humans average x.5 and the judge says x + 1: residual +0.5 per odd answer.
    # Cells where judge and human disagree move the residual by +-2 points.
    for fam, cells in SEED_CELLS.items():
        expected = np.mean([
            ((4 if j else 2) + i % 2) - ((4 if h else 2) + 0.5 * (i % 2)) for i, (h, j) in enumerate(cells)
        ])
        assert score.families[fam].estimate == pytest.approx(expected, abs=1e-9)
    # With one rater the interval is narrower: the raters' spread is inside the two-rater one.
    assert score.gap is not None and not math.isnan(score.gap.ci_low)


def test_lenient_everywhere_judge_has_no_gap(tmp_path: Path) -> None:
    built = build_store(tmp_path / "lenient.duckdb", LENIENT_CELLS, n_unlabelled=0, raters=1)
    section = report_of(built).residuals["pass"]
    assert section.families[OWN].estimate == pytest.approx(8, abs=1e-9)
    assert section.families[OTHER].estimate == pytest.approx(8, abs=1e-9)
    assert section.gap is not None
    assert section.gap.estimate == pytest.approx(0, abs=1e-9)
    assert section.gap.ci_low < 0 < section.gap.ci_high


def test_human_rule_is_stated_and_majority_is_available(seed_store: Built, seed_report: CalibrationReport) -> None:
    assert "mean of the raters' current labels" in seed_report.human_rule_text()
    major = report_of(seed_store, human_rule="majority")
    assert "ties going to the lower score" in major.human_rule_text()
    # Raters agree on every pass verdict, so the pass figures do not depend on the rule.
    assert major.residuals["pass"].gap is not None
    assert major.residuals["pass"].gap.estimate == pytest.approx(10, abs=1e-9)
    # Scores differ on odd answers (4 and 5): majority takes the lower, mean the half.
    assert major.residuals["score"].families[OWN].estimate > seed_report.residuals["score"].families[OWN].estimate


def test_only_current_scored_labels_count(tmp_path: Path) -> None:
    built = build_store(tmp_path / "edits.duckdb", SMALL_CELLS, n_unlabelled=0)
    store = built.store
    late, _ = store.add_rater("late")
    # An imported (unversioned) label by the same person: the label under the rubric wins.
    store.add_imported_labels([ImportedLabel(f"{OWN}-000", "late", 3.0, False, {"correct": 3.0})])
    store.assign_k([f"{OWN}-000", f"{OWN}-001"], 1, [late.rater_id])
    # The queue order is a seeded shuffle, so find each answer's assignment by id.
    ids = store.query(
        "SELECT answer_id, assignment_id FROM assignments WHERE rater_id = ?", [late.rater_id]
    ).set_index("answer_id")["assignment_id"]
    scored_id, flagged_id = int(ids[f"{OWN}-000"]), int(ids[f"{OWN}-001"])
    store.add_label(late.rater_id, scored_id, overall=5, criteria={"correct": 5})
    store.add_label(late.rater_id, scored_id, overall=1, criteria={"correct": 1})  # an edit supersedes
    store.add_label(late.rater_id, flagged_id, overall=None, flag_reason="not an answer")
    data = load_calibration_data(store, built.run_id)
    mine = data.labels[data.labels["rater_id"] == late.rater_id]
    assert len(mine) == 1 and mine["overall"].tolist() == [1.0] and mine["pass"].tolist() == [0.0]
    assert data.label_summary.n_flagged == 1
    assert data.label_summary.n_labels == 81 and data.label_summary.sources == {"app": 1, "import": 80}
    # The report still runs with the extra rater (a label set no statistic rejects).
    assert report_of(built).labels.n_raters == 3


def test_a_section_the_statistics_reject_is_skipped_not_fatal(tmp_path: Path) -> None:
    built = build_store(tmp_path / "zero.duckdb", SMALL_CELLS, n_unlabelled=4)
    # A design that gives the other family's answers zero weight: no residual can be formed.
    ids = [f"{fam}-{i:03d}" for fam in SMALL_CELLS for i in range(20)]
    items = pd.DataFrame({"answer_id": ids, "stratum": [i.split("-")[0] for i in ids],
                          "inclusion_prob": 0.5, "weight": [2.0 if i.startswith(OWN) else 0.0 for i in ids],
                          "n_raters": 2})
    built.store.save_design("d-zero", {}, {}, items)
    report = report_of(built)
    assert not report.residuals
    assert any(s.startswith("residuals (pass): ") and "zero total weight" in s for s in report.skipped)
    assert report.kappas and report.formats  # the other sections stand
    assert "zero total weight" in render_markdown(report)
    assert [r.family for r in report.ppi] == [OWN]
    assert any(s.startswith("PPI (gpt): the design") for s in report.skipped)


# -- provenance --------------------------------------------------------------------------------


def test_human_written_prompt_gives_no_bound(seed_report: CalibrationReport) -> None:
    report = seed_report
    assert report.provenance is not None and report.provenance.bound is None
    assert not any("UPPER BOUND" in n for n in report.notes)


@pytest.mark.parametrize(
    ("rubric_author", "reference_author", "artifact"),
    [
        (("model", "claude-opus-5"), None, "rubric support v1"),
        (("human", "team"), ("model", "claude-sonnet-4"), "reference answer"),
        (("human", "team"), ("unknown", "unknown"), "unknown authorship"),
    ],
    ids=["rubric_by_own_family", "references_by_own_family", "references_unknown"],
)
def test_provenance_makes_the_gap_an_upper_bound(
    tmp_path: Path, rubric_author: tuple[str, str], reference_author: tuple[str, str] | None, artifact: str
) -> None:
    built = build_store(tmp_path / "prov.duckdb", SMALL_CELLS, rubric_author=rubric_author,
                        reference_author=reference_author, n_unlabelled=0)
    report = report_of(built)
    assert report.provenance is not None and report.provenance.bound == "upper"
    assert artifact in report.provenance.reason
    gap = report.residuals["pass"].gap
    assert gap is not None and gap.bound == "upper"
    assert any(n.startswith("The self-preference gap is an UPPER BOUND") for n in report.notes)


def test_other_family_references_give_no_bound(tmp_path: Path) -> None:
    built = build_store(tmp_path / "prov.duckdb", SMALL_CELLS, reference_author=("model", "gpt-5"), n_unlabelled=0)
    report = report_of(built)
    assert report.provenance is not None and report.provenance.bound is None


# -- design weights ----------------------------------------------------------------------------


def test_design_weights_make_hajek_means(tmp_path: Path) -> None:
    built = build_store(tmp_path / "design.duckdb", SMALL_CELLS, n_unlabelled=10)
    # A design that sampled judge-pass answers at half the rate of judge-fail ones: weight 2 vs 1.
    judged = built.store.export_frame("judgements").set_index("answer_id")
    labelled = [f"{fam}-{i:03d}" for fam in SMALL_CELLS for i in range(20)]
    passed = judged.loc[labelled, "passed"].astype(bool)
    items = pd.DataFrame({
        "answer_id": labelled,
        "stratum": np.where(passed, "judge-pass", "judge-fail"),
        "inclusion_prob": np.where(passed, 0.25, 0.5),
        "weight": np.where(passed, 4.0, 2.0),
        "n_raters": 2,
    })
    built.store.save_design("d-test", {"why": "test"}, {}, items)
    report = report_of(built)
    assert report.design is not None and report.design.weighted
    assert report.design.design_id == "d-test" and report.design.n_left_out == 0
    # Hajek mean by hand: judge-pass answers weigh 4, judge-fail ones 2.
    own = SMALL_CELLS[OWN]
    w = np.array([4.0 if j else 2.0 for _, j in own])
    resid = np.array([j - h for h, j in own], dtype=float)
    assert report.residuals["pass"].families[OWN].estimate == pytest.approx(100 * (w @ resid) / w.sum(), abs=1e-9)
    assert "weighted (Hajek) mean" in report.residuals["pass"].families[OWN].method
    assert any("sample design 'd-test'" in n for n in report.notes)
    # PPI under a stratified sample uses the design weights as well.
    assert all("design-weighted" in row.human_only.method for row in report.ppi)


# -- agreement ---------------------------------------------------------------------------------


def test_kappa_overall_and_per_family_with_confusion(seed_report: CalibrationReport) -> None:
    report = seed_report
    rows = {(k.scope, k.what, k.result.weights): k for k in report.kappas}
    own = rows[(OWN, "pass verdict", None)].result
    # Rows judge, columns humans: judge fail & human fail 19, judge fail & human pass 2, ...
    assert own.confusion.to_numpy().tolist() == [[19, 2], [10, 69]]
    assert own.percent_agreement.estimate == pytest.approx(0.88)
    # By hand: p_o = 0.88, p_e = 0.21*0.29 + 0.79*0.71 = 0.6218, kappa = (0.88 - 0.6218) / 0.3782.
    assert own.kappa.estimate == pytest.approx((0.88 - 0.6218) / (1 - 0.6218), abs=1e-12)
    assert ("all", "overall score", "quadratic") in rows and ("all", "overall score", None) in rows
    assert rows[("all", "pass verdict", None)].result.kappa.n == 200
    for k in report.kappas:
        assert not math.isnan(k.result.kappa.ci_low)


def test_alpha_among_raters(seed_report: CalibrationReport) -> None:
    report = seed_report
    # Raters agree on every pass verdict: alpha is 1 on the nominal pass level.
    assert report.alphas["pass verdict"].estimate == pytest.approx(1.0)
    overall = report.alphas["overall score"]
    assert "ordinal" in overall.method and 0 < overall.estimate < 1
    assert overall.n == 200


def test_ppi_beside_human_only(seed_store: Built, seed_report: CalibrationReport) -> None:
    report = seed_report
    rows = {r.family: r for r in report.ppi}
    assert set(rows) == {OWN, OTHER}
    for fam, row in rows.items():
        assert row.n_labelled == 100 and row.n_unlabelled == 40
        assert row.human_only.estimate == pytest.approx({OWN: 71, OTHER: 68}[fam])
        assert row.ppi.units == "percent" and "PPI++" in row.ppi.method
        # Two raters: a mean of their labels moves with their mean leniency, on 1 df: no
        # interval for raters like these, and the line names the fix (issue 43).
        for est in (row.ppi, row.human_only):
            assert math.isnan(est.ci_low) and est.extra["unreliable"].startswith("only 2 raters")
            assert "`--interval panel`" in est.extra["unreliable"]
    panel = {r.family: r for r in report_of(seed_store, interval="panel").ppi}
    for row in panel.values():
        assert row.ppi.ci_low < row.ppi.estimate < row.ppi.ci_high
        # PPI++ never loses precision against the classical interval by much (clipped lambda).
        assert row.ppi.half_width <= row.human_only.half_width * 1.05


# -- simulated labels --------------------------------------------------------------------------


def test_simulated_labels_are_announced_first(tmp_path: Path) -> None:
    built = build_store(tmp_path / "sim.duckdb", SMALL_CELLS, simulated=True, n_unlabelled=0)
    report = report_of(built)
    assert report.simulated and report.labels.n_simulated_labels == 80
    assert report.notes[0].startswith("SIMULATED LABELS: all 80 human labels")
    payload = report.to_dict()
    assert payload["simulated_labels"] is True and next(iter(payload)) == "simulated_labels"
    assert render_markdown(report).lstrip().startswith("> **SIMULATED LABELS")


def test_real_labels_carry_no_banner(seed_report: CalibrationReport) -> None:
    report = seed_report
    assert not report.simulated and report.labels.banner() is None
    assert "SIMULATED" not in render_markdown(report)


# -- probes ------------------------------------------------------------------------------------


def add_position_probe(store: Store, judge: str = JUDGE, n_pairs: int = 40) -> None:
    """``n_pairs`` cross-family pairs judged in both orders, with a known slot bias.

    Forward (own family in slot A): A wins every time. Reverse (other family in slot A): A wins
    on 60% of pairs (24 of 40) and B on the rest. Per pair v_fwd = +1 and v_rev = +1 or -1, so
    b = (1 + 0.2)/2 = 0.6 and q = (1 - 0.2)/2 = 0.4.
    """
    js = []
    for i in range(n_pairs):
        own, other = f"{OWN}-{i:03d}", f"{OTHER}-{i:03d}"
        js.append(ImportedJudgement(own, judge, 1.0, None, "pairwise5", answer_b_id=other, order_shown="AB",
                                    judge_family=OWN))
        js.append(ImportedJudgement(other, judge, 1.0 if i < 0.6 * n_pairs else -1.0, None, "pairwise5",
                                    answer_b_id=own,
                                    order_shown="BA", judge_family=OWN))
    store.add_imported_judgements(js)


AFTER = "claude-judge-2"


@pytest.fixture(scope="module")
def probe_store(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The seed's database plus two runs of the length probes and a pairwise probe.

    The length probes are seed 000's before and after a rubric change; the order-swapped
    pairwise probe is in the first run.
    """
    built = build_store(tmp_path_factory.mktemp("probes") / "probes.duckdb")
    add_length_probe(built.store, JUDGE, 0.29, 0.44)
    add_length_probe(built.store, AFTER, 0.06, 0.19)
    add_position_probe(built.store)
    return built


@pytest.fixture(scope="module")
def probe_report(probe_store: Built) -> CalibrationReport:
    return report_of(probe_store)


def test_padding_and_truncation_gaps_from_variants(probe_report: CalibrationReport) -> None:
    report = probe_report
    gaps = {g.variant: g for g in report.probes.gaps}
    # 29 of 100 padded variants score one point above their original: 3.42 -> 3.71 style.
    assert gaps["padded"].gap.estimate == pytest.approx(0.29, abs=1e-9)
    assert gaps["truncated"].gap.estimate == pytest.approx(0.44, abs=1e-9)
    assert gaps["padded"].gap.units == "judge scale points" and gaps["padded"].gap.n == 100
    assert gaps["padded"].verdict == "FAIL" and gaps["truncated"].verdict is None
    # The variants are not original answers: the residuals still rest on 100 answers a family.
    assert report.residuals["pass"].families[OWN].n_answers == 100
    assert report.residuals["pass"].gap is not None
    assert report.residuals["pass"].gap.estimate == pytest.approx(10, abs=1e-9)


def test_compare_runs_reads_less_sensitive_to_completeness(probe_store: Built) -> None:
    report = calibrate(probe_store.store, f"import:{AFTER}", compare_run=probe_store.run_id,
                       n_resamples=N_RESAMPLES)
    cmp = report.probes.comparison
    assert cmp is not None and report.compare_run_id == probe_store.run_id
    assert (cmp.padding_before, cmp.padding_after) == pytest.approx((0.29, 0.06), abs=1e-9)
    assert (cmp.truncation_before, cmp.truncation_after) == pytest.approx((0.44, 0.19), abs=1e-9)
    assert cmp.verdict == "made the judge less sensitive to completeness"
    assert "less sensitive to completeness" in render_markdown(report)


def test_compare_run_without_probes_says_why(seed_store: Built) -> None:
    report = calibrate(seed_store.store, seed_store.run_id, compare_run=seed_store.run_id, n_resamples=N_RESAMPLES)
    assert report.probes.comparison is None
    assert report.probes.comparison_reason and "padded and truncated" in report.probes.comparison_reason


def test_position_slot_decomposition_and_length_control(probe_report: CalibrationReport) -> None:
    (pos,) = probe_report.probes.position
    assert pos.n_pairs == 40 and pos.n_both_orders == 40
    assert "judge's own family" in pos.candidate
    assert pos.decomposition is not None
    assert pos.decomposition.b.estimate == pytest.approx(0.6)
    assert pos.decomposition.q.estimate == pytest.approx(0.4)
    assert pos.decomposition.consistency.estimate == pytest.approx(16 / 40)
    # Swap-averaged: own family wins both orders on the 16 reverse losses, else no decision.
    assert pos.swap_lift is not None
    assert pos.swap_lift.extra["win_rate"] == pytest.approx((16 + 0.5 * 24) / 40)
    assert pos.length_controlled is not None and pos.length_controlled.units == "win rate"
    # First-shown advantage: slot A won 64 of 80 decisions -> +30 points.
    assert pos.first_shown.estimate == pytest.approx(30.0)
    fmt = {f.format: f for f in probe_report.formats}
    assert "both orders judged for 40 of 40 pairs" in fmt["pairwise5"].slot_handling
    assert "b = +0.60" in fmt["pairwise5"].slot_handling


# -- formats -----------------------------------------------------------------------------------


def test_format_diagnostics_and_the_four_quantities(seed_store: Built) -> None:
    data = load_calibration_data(seed_store.store, seed_store.run_id)
    rows, skipped = format_rows(data, n_resamples=N_RESAMPLES)
    assert not skipped
    (row,) = rows
    d = row.diagnostics
    assert d.format_name == "likert5" and d.parse_rate.estimate == 1.0 and d.parse_rate.n == 280
    # Judge values on the 280 originals: 2, 3, 4, 5 -> four distinct values.
    assert d.distinct_values == 4
    assert d.d2 == pytest.approx(1 / d.tie_probability)
    assert d.n == 200  # the labelled answers have a human reference
    quantities = row.four_quantities()
    assert list(quantities) == ["format and decoding rule", "tie probability / D2",
                                "comparative slot handling and bias", "verdict parse rate"]
    assert "imported judgements (decoding not recorded)" in quantities["format and decoding rule"]
    assert "100.0% of 280 replies" in quantities["verdict parse rate"]


def test_format_reference_can_be_another_format(seed_store: Built) -> None:
    data = load_calibration_data(seed_store.store, seed_store.run_id)
    with pytest.raises(InputError, match="no parsed numeric100"):
        format_rows(data, reference="numeric100", n_resamples=N_RESAMPLES)
    with pytest.raises(InputError, match="unknown reference"):
        format_rows(data, reference="gut feeling", n_resamples=N_RESAMPLES)
    rows, _ = format_rows(data, reference="likert5", n_resamples=N_RESAMPLES)
    # Against itself every within-prompt order agrees: tau-b is 1 wherever it is defined.
    assert rows[0].diagnostics.tau_b.estimate == pytest.approx(1.0)


# -- edges -------------------------------------------------------------------------------------


def test_default_run_is_the_latest_with_pointwise_judgements(seed_store: Built) -> None:
    data = load_calibration_data(seed_store.store)
    assert data.run_id == seed_store.run_id


def test_unknown_run_and_empty_database_are_input_errors(store: Store, seed_store: Built) -> None:
    with pytest.raises(InputError, match="no judge run with pointwise judgements"):
        load_calibration_data(store)
    with pytest.raises(InputError, match="no judge run 'nope'"):
        load_calibration_data(seed_store.store, "nope")


def test_run_without_family_reports_why_there_is_no_gap(tmp_path: Path) -> None:
    built = build_store(tmp_path / "nofam.duckdb", SMALL_CELLS, family=None, n_unlabelled=0)
    report = report_of(built)
    assert report.residuals["pass"].gap is None
    assert any("records no judge family" in s for s in report.skipped)
    assert report.provenance is None


def test_report_is_deterministic_under_a_seed(seed_store: Built, seed_report: CalibrationReport) -> None:
    a = seed_report.to_dict()
    b = report_of(seed_store, seed=0).to_dict()
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# -- store queries -----------------------------------------------------------------------------


def test_run_rows_take_the_newest_row_per_planned_call(tmp_path: Path) -> None:
    from judgelab.labeler.store import JudgementRecord

    built = build_store(tmp_path / "rows.duckdb", SMALL_CELLS, n_unlabelled=0)
    store = built.store
    store.start_judge_run("r1", judge_kind="fake", model="fake", family=OWN)
    def record(call: str, answer: str, **kw: Any) -> JudgementRecord:
        return JudgementRecord("r1", call, f"k-{call}", "pointwise", "likert5", task_id="t000", answer_id=answer,
                               **kw)

    store.add_judgements([
        record("c1", f"{OWN}-000", error="timeout"),
        record("c2", f"{OTHER}-000", value=None, parse_error="no verdict"),
    ])
    # A resume answers the failed call; the newest row of c1 is the one that counts.
    store.add_judgements([record("c1", f"{OWN}-000", value=4.0, passed=True)])
    rows = store.run_rows("r1")
    assert rows["call_id"].tolist() == ["c2", "c1"]
    assert rows["status"].tolist() == ["parse_failure", "parsed"]
    # Imported judgements have no call id: every one of them counts.
    assert len(store.run_rows(built.run_id)) == 40
    runs = store.calibration_runs().set_index("run_id")
    assert runs.loc["r1", "n_pointwise"] == 3 and runs.loc[built.run_id, "n_pointwise"] == 40
    assert store.latest_scored_run() == "r1"
    data = load_calibration_data(store, "r1")
    assert data.n_errors == 0 and len(data.pointwise) == 2


@pytest.mark.parametrize("dtype", ["str", object])
def test_isin_matches_pandas(dtype: Any) -> None:
    column = pd.Series(["a1", "b2", None, "c3", "a1"], dtype=dtype)
    for values in ({"a1", "c3"}, ["c3", "c3"], pd.Index(["b2", "zz"]), pd.Series(["a1"], dtype="str"), set()):
        np.testing.assert_array_equal(isin(column, values), column.isin(values).to_numpy(dtype=bool))


# -- issue 15: the design's strata, which raters, reliability, the tie rule ------------------------


def test_a_stratified_design_gives_a_stratified_t_interval_and_panel_is_an_option(tmp_path: Path) -> None:
    built = build_store(tmp_path / "strata.duckdb", SMALL_CELLS, n_unlabelled=4)
    # A paired design (both answers of a task in one stratum), two task strata by task parity.
    ids = [f"{fam}-{i:03d}" for fam in SMALL_CELLS for i in range(20)]
    odd = [int(i[-3:]) % 2 for i in ids]
    items = pd.DataFrame({"answer_id": ids, "stratum": [f"s{o}" for o in odd], "inclusion_prob": 0.5,
                          "weight": [4.0 if o else 2.0 for o in odd], "n_raters": 2})
    built.store.save_design("d-strata", {}, {}, items)
    raters = report_of(built)
    gap = raters.residuals["pass"].gap
    assert gap is not None and "20 paired task clusters in 2 strata" in gap.method
    assert gap.interval.endswith("raters") and "raters like these" in gap.scope
    # Tasks 0..19 in 2 strata of 10: a 20-task gap is trusted, each family's too.
    assert gap.unreliable is None
    panel = report_of(built, interval="panel")
    assert panel.interval == "panel" and panel.residuals["pass"].gap is not None
    assert panel.residuals["pass"].gap.scope == "this panel only"
    assert "this panel only" in panel.human_rule_text()
    assert all("jackknife" in k.result.kappa.method and "design-weighted" in k.result.kappa.method
               for k in panel.kappas if k.scope == "all")
    md = render_markdown(raters)
    assert "| interval |" in md and "t(" in md
    with pytest.raises(InputError, match="unknown interval"):
        report_of(built, interval="everyone")


def test_kappa_states_its_tie_rule_and_counts_the_ties(seed_report: CalibrationReport) -> None:
    md = render_markdown(seed_report)
    assert "a tie goes to the lower category" in md and "ties_to_lower" in md
    assert "a tie goes to the lower category" in seed_report.human_rule_text()
    row = next(k for k in seed_report.kappas if k.scope == "all" and k.what == "overall score")
    # Two raters scoring 4 and 5 on every odd answer tie on the overall score: half the answers.
    assert row.ties_to_lower == 100 and row.to_dict()["ties_to_lower"] == 100
