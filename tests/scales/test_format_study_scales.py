"""The format study's ``--formats`` names a declared scale: the rubric's, or the judge spec's verdict scale."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.probes import analyse_evidence, read_evidence, run_probes
from judgelab.calibration.probes._workflow import parse_formats
from judgelab.calibration.spec import load_spec
from judgelab.labeler.errors import InputError
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store
from tests.scales.fixtures import CORRECT3, MT_BENCH_SPEC, answers_csv, write


def test_the_format_study_runs_the_rubrics_declared_scale_beside_a_catalogue_format(
    store: Store, tmp_path: Path
) -> None:
    store.migrate()
    import_file(store, "rubric", write(tmp_path, "rubric.toml", CORRECT3))
    import_file(store, "answers", write(tmp_path, "answers.csv", answers_csv(4)))
    out = tmp_path / "e.jsonl"
    run_probes(FakeJudge(seed=3), store, dataset="project", n=4, biases="format", formats="likert5,correct3",
               evidence=out, progress=False)
    rows = read_evidence(out)
    scored = rows[(rows["format"] == "correct3") & (rows["status"] == "parsed")]
    assert len(scored) == 8 and set(scored["score"].astype(float)) <= {0.0, 1.0, 2.0}
    figures = {f.format: f for f in analyse_evidence(rows).formats}
    assert set(figures) == {"likert5", "correct3"}
    assert figures["correct3"].distinct_values == len(np.unique(scored["score"].astype(float)))
    assert figures["correct3"].distinct_values <= 3


def test_a_judge_specs_verdict_scale_is_a_format_the_study_accepts(tmp_path: Path) -> None:
    spec = MT_BENCH_SPEC.replace('name = "mt10"', 'name = "mt10_study"')  # a name no other test declares
    with pytest.raises(InputError, match="cannot run format 'mt10_study'"):
        parse_formats("likert5,mt10_study")
    load_spec(write(tmp_path, "mt_bench.toml", spec))  # declares mt10_study (1-10)
    assert parse_formats("mt10_study, LIKERT5") == ("mt10_study", "likert5")
    with pytest.raises(InputError, match="a scale of your own is known once a rubric"):
        parse_formats("nosuch")
