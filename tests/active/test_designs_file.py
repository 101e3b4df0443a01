"""The ``designs`` file: a project rebuilt from its exports estimates as the original did."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab import admin
from judgelab.calibration.active import (
    active_figures,
    active_status,
    apply_active_batch,
    draw_active_batch,
    load_active,
    spending_boundaries,
)
from judgelab.calibration.calibrate import calibrate
from judgelab.cli import main
from judgelab.labeler.errors import ConflictError, InputError
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store
from tests.active.test_workflow import label_everything, template, truth  # noqa: F401  # fixtures

KINDS = (("rubric", "toml"), ("answers", "csv"), ("judgements", "csv"), ("labels", "csv"))


def cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output + result.stderr
    return result.stdout


@pytest.fixture
def project(template: Path, truth: pd.Series, tmp_path: Path) -> Path:  # noqa: F811  # a fixture
    """A project with a fixed design and an active design, both applied and labelled (two batches)."""
    path = tmp_path / "original.duckdb"
    shutil.copyfile(template, path)
    cli("design", "--db", str(path), "--n", "40", "--overlap", "0", "--raters", "2", "--apply")
    store = Store(path)
    label_everything(store, truth)
    apply_active_batch(store, draw_active_batch(store, target_half_width=12.0, overlap=0.2, seed=7), 4)
    label_everything(store, truth)
    status = active_status(store)
    assert status is not None and status.state in ("ready", "reached")
    if status.state == "ready":
        apply_active_batch(store, draw_active_batch(store, seed=7), 4)
        label_everything(store, truth)
    store.release()
    return path


def rebuild(source: Path, folder: Path, *, designs: bool) -> Path:
    """A fresh project from ``source``'s exports (with or without the designs file)."""
    target = folder / ("with.duckdb" if designs else "without.duckdb")
    for kind, ext in KINDS + ((("designs", "json"),) if designs else ()):
        file = folder / f"{kind}.{ext}"
        cli("export", kind, "--db", str(source), "--out", str(file))
        cli("import", kind, str(file), "--db", str(target))
    return target


def figures(path: Path) -> dict[str, tuple[float, float, float, str]]:
    report = calibrate(Store(path))
    out = {}
    for scale, table in report.residuals.items():
        for name, est in [*table.families.items(), ("gap", table.gap)]:
            if est is not None:
                out[f"{scale} {name}"] = (est.estimate, est.ci_low, est.ci_high, est.interval)
    Store(path).release()
    return out


def test_a_project_rebuilt_with_its_designs_estimates_as_the_original(project: Path, tmp_path: Path) -> None:
    original = Store(project)
    tables = original.design_tables()
    assert len(tables["designs"]) >= 3 and len(tables["active"]) == 1  # the fixed design and the batches
    before = figures(project)
    copy = rebuild(project, tmp_path, designs=True)
    rebuilt = Store(copy).design_tables()
    for name, frame in tables.items():
        pd.testing.assert_frame_equal(rebuilt[name], frame, check_dtype=False, obj=name)
    assert before["pass gap"][3].startswith("repeated CI")  # the active design's interval
    assert figures(copy) == before
    status = active_status(Store(copy))
    assert status is not None and status.message == active_status(original).message  # type: ignore[union-attr]
    # The admin Data page's download is the same file, and its upload the same import.
    download = admin.export_designs(original)
    assert download.data == (tmp_path / "designs.json").read_bytes()
    assert str(admin.import_upload(Store(copy), "designs", download.file_name, download.data)) == \
        f"{len(tables['designs'])} designs already present, 1 active designs already present"
    # The same file again changes nothing.
    again = cli("import", "designs", str(tmp_path / "designs.json"), "--db", str(copy))
    assert "added" not in again and "1 active designs already present" in again
    # Without the designs the labels read as a simple random sample: other figures, no repeated interval.
    bare = tmp_path / "bare"
    bare.mkdir()
    without = figures(rebuild(project, bare, designs=False))
    assert not without["pass gap"][3].startswith("repeated CI")
    assert without["pass gap"][:3] != before["pass gap"][:3]


def test_a_design_started_before_the_target_rule_keeps_its_plan(project: Path, tmp_path: Path) -> None:
    # A designs file written before the look that can meet the target spent the rest of alpha
    # (and before critical values were read as t) has no "last_look" in its parameters: its looks
    # keep the plan they were taken under, since a plan may not change after its first look.
    file = tmp_path / "designs.json"
    cli("export", "designs", "--db", str(project), "--out", str(file))
    doc = json.loads(file.read_text())
    assert doc["active_designs"][0]["params"]["last_look"] == "target"
    del doc["active_designs"][0]["params"]["last_look"]
    older = tmp_path / "older"
    older.mkdir()
    for kind, ext in KINDS:
        cli("export", kind, "--db", str(project), "--out", str(older / f"{kind}.{ext}"))
        cli("import", kind, str(older / f"{kind}.{ext}"), "--db", str(older / "p.duckdb"))
    (older / "designs.json").write_text(json.dumps(doc))
    cli("import", "designs", str(older / "designs.json"), "--db", str(older / "p.duckdb"))
    now, then = figures(project)["pass gap"], figures(older / "p.duckdb")["pass gap"]
    assert now[0] == then[0]  # the same estimate
    assert ", t(" in now[3] and ", t(" not in then[3]  # read as t only under the new rule
    store = Store(older / "p.duckdb")
    status = active_status(store)
    assert status is not None
    params, _, _ = store.active_design(status.design_id)
    data = load_active(store, status.design_id)
    assert data is not None
    figures_then = active_figures(store, data, interval="panel")
    boundary = figures_then.looks["boundary"].to_numpy()
    assert np.array_equal(figures_then.looks["critical"].to_numpy(), boundary)  # normal values
    info = 1.0 / figures_then.statistics.variance
    z = 1.959963984540054
    old_plan = spending_boundaries(info, max_information=(float(params["margin"]) * z / 12.0) ** 2)
    assert np.allclose(boundary, old_plan.critical)
    store.release()


def test_a_bad_designs_file_names_the_place_and_writes_nothing(project: Path, tmp_path: Path) -> None:
    file = tmp_path / "designs.json"
    cli("export", "designs", "--db", str(project), "--out", str(file))
    doc = json.loads(file.read_text())
    fresh = tmp_path / "fresh.duckdb"
    for kind, ext in KINDS[:2]:
        cli("export", kind, "--db", str(project), "--out", str(tmp_path / f"{kind}.{ext}"))
        cli("import", kind, str(tmp_path / f"{kind}.{ext}"), "--db", str(fresh))
    store = Store(fresh)

    def refused(edit: object, match: str, error: type[InputError] = InputError) -> None:
        bad = json.loads(json.dumps(doc))
        edit(bad)  # type: ignore[operator]
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(bad))
        with pytest.raises(error, match=match) as caught:
            import_file(store, "designs", path)
        assert caught.value.file == str(path)
        assert store.design_tables()["designs"].empty and store.design_tables()["active"].empty

    def prob(d: dict) -> None:  # type: ignore[type-arg]
        d["designs"][0]["items"][3]["inclusion_prob"] = 0

    refused(prob, r"column 'designs\[0\]\.items\[3\]\.inclusion_prob': 0 is outside \(0, 1\]")

    def unknown_answer(d: dict) -> None:  # type: ignore[type-arg]
        for batch in d["active_designs"][0]["batches"]:  # every batch holds the same pool
            batch["draws"][5]["answer_id"] = "nope"

    refused(unknown_answer,
            r"batches\[0\]\.draws\[5\]\.answer_id': 1 answer id\(s\) are not in the database, e.g. 'nope'")

    def extra_key(d: dict) -> None:  # type: ignore[type-arg]
        d["designs"][0]["items"][0]["colour"] = "red"

    refused(extra_key, "unknown key 'colour'")

    def lost_batch_design(d: dict) -> None:  # type: ignore[type-arg]
        d["designs"] = [x for x in d["designs"] if not x["design_id"].endswith("-b1")]

    refused(lost_batch_design, "which the file's designs do not hold")
    path = tmp_path / "broken.json"
    path.write_text(file.read_text()[:-40])
    with pytest.raises(InputError, match="is not valid JSON"):
        import_file(store, "designs", path)
    # A design stored already with other content is a conflict, not an overwrite.
    import_file(store, "designs", file)

    def other_floor(d: dict) -> None:  # type: ignore[type-arg]
        d["active_designs"][0]["params"]["floor"] = 0.5

    bad = json.loads(json.dumps(doc))
    other_floor(bad)
    (tmp_path / "other.json").write_text(json.dumps(bad))
    with pytest.raises(ConflictError, match="already stored with different content"):
        import_file(store, "designs", tmp_path / "other.json")
