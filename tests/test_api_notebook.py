"""The notebook page (docs/analysts/notebook.md) runs, and its figures are the command line's.

The page's Python blocks are run in order in one namespace, in a folder holding the demo
database the page tells readers to build (``judgelab demo --no-serve --db demo.duckdb``), built
once for the module. What the page computes from DataFrames is then compared with what
``judgelab calibrate --json``, ``panel --json`` and ``design --n 40 --json`` print on that
database: the same dict, to the last digit, but for what the judgements file schema cannot carry
(written out below).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.cli import main

PAGE = Path(__file__).resolve().parent.parent / "docs" / "analysts" / "notebook.md"


def _blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def _cli(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], Path]]:
    """The page's namespace after its code ran beside the demo database, and that database."""
    from judgelab.demo import build_demo
    from judgelab.labeler.store import Store

    folder = tmp_path_factory.mktemp("notebook")
    build_demo(Store(folder / "demo.duckdb"))
    namespace: dict[str, Any] = {"__name__": "notebook"}
    before = Path.cwd()
    os.chdir(folder)
    try:
        for block in _blocks(PAGE.read_text(encoding="utf-8")):
            exec(compile(block, str(PAGE), "exec"), namespace)  # the page's own code, as a reader runs it
        yield namespace, folder / "demo.duckdb"
    finally:
        os.chdir(before)
        namespace["mine"].close()


def test_the_page_has_code_to_run() -> None:
    blocks = _blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 5 and any("jl.calibrate(" in b for b in blocks)


def test_the_page_s_calibration_is_judgelab_calibrate_json(page: tuple[dict[str, Any], Path],
                                                           tmp_path: Path) -> None:
    namespace, db = page
    cli = _cli("calibrate", "--db", str(db), "--out", str(tmp_path / "r.md"), "--json")
    api = namespace["cal"].to_dict()
    # The judgements file schema has no column for the judge's decoding: the run read from frames
    # says its judgements were imported; the stored run names the fake judge's rule.
    for payload in (cli, api):
        for row in payload["formats"]:
            assert row.pop("decoding_rule")
            assert row["four_quantities"].pop("format and decoding rule")
    assert api == cli
    assert cli["residuals"]["pass"]["gap"]["estimate"] is not None  # a figure, not an empty report
    # The frame the page prints is the report's residuals and gap.
    frame = namespace["residuals"]
    gap = frame[(frame["what"] == "self-preference gap") & (frame["scale"] == "pass")]
    assert gap["estimate"].item() == cli["residuals"]["pass"]["gap"]["estimate"]


def test_the_page_s_panel_and_design_are_the_commands_json(page: tuple[dict[str, Any], Path]) -> None:
    namespace, db = page
    assert namespace["pan"].to_dict() == _cli("panel", "--db", str(db), "--json")
    cli = _cli("design", "--db", str(db), "--n", "40", "--raters", "1", "--json")
    assert cli.pop("applied") is None
    api = namespace["plan"].to_dict()
    # Imported judgements make a run that names no rubric (the schema has no column for it).
    assert (cli["judge_run"].pop("rubric_id"), cli["judge_run"].pop("rubric_version")) == ("support-reply", 1)
    assert (api["judge_run"].pop("rubric_id"), api["judge_run"].pop("rubric_version")) == (None, None)
    assert api == cli
    assert isinstance(namespace["strata"], pd.DataFrame) and len(namespace["sample"]) == api["labels"]


def test_a_frame_the_importer_refuses_names_its_row_and_column(page: tuple[dict[str, Any], Path]) -> None:
    import judgelab as jl

    namespace, _ = page
    labels = namespace["labels"].copy()
    labels.loc[3, "score"] = 9  # off the 1-5 scale
    with pytest.raises(jl.InputError) as caught:
        jl.calibrate(namespace["answers"], labels, namespace["judgements"], rubric=namespace["rubric"])
    message = str(caught.value)
    assert "labels (DataFrame)" in message and "score" in message, message
