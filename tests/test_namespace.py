"""One namespace: the distribution installs ``judgelab`` and nothing else (issue 56).

``labeler/`` and ``calibration/`` stay at the top of the repository and enter the package through
the symlinks ``judgelab/labeler`` and ``judgelab/calibration``. A user's own ``calibration.py`` or
``labeler.py`` in the working folder is then just their file: it shadows nothing of ours.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import setuptools

ROOT = Path(__file__).resolve().parent.parent

#: A user's files with our old top-level names; importing either one fails loudly.
USER_FILES = {name: f"raise ImportError('the user\\'s {name} was imported by judgelab')\n"
              for name in ("calibration.py", "labeler.py")}


def test_the_distribution_has_one_top_level_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    found = setuptools.find_packages(str(ROOT), **config["packages"]["find"])
    assert {name.split(".")[0] for name in found} == {"judgelab"}
    # find follows the symlinks: the two halves are inside, under judgelab.
    assert {"judgelab.labeler.store", "judgelab.labeler.examples", "judgelab.calibration.stats",
            "judgelab.calibration.mockapi"} <= set(found)
    for top in ("labeler", "calibration"):
        link = ROOT / "judgelab" / top
        assert link.is_symlink() and link.resolve() == ROOT / top
        assert all(key.split(".")[0] == "judgelab" for key in config["package-data"])


@pytest.mark.slow  # about 13 s of CPU: `estimate` loads the judge SDKs
def test_a_users_calibration_and_labeler_files_shadow_nothing(tmp_path: Path) -> None:
    for name, text in USER_FILES.items():
        (tmp_path / name).write_text(text)
    # The issue's own command: `python -m judgelab` puts the working folder first on sys.path.
    done = subprocess.run([sys.executable, "-m", "judgelab", "estimate", "--dataset", "sample", "--n", "2", "--json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["calls"] > 0, done.stdout
    # The installed console script, on a light verb that still reads judgelab.labeler's examples.
    script = Path(sys.executable).parent / "judgelab"
    done = subprocess.run([str(script), "examples", "ex"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "ex" / "rubric.toml").is_file(), done.stdout
