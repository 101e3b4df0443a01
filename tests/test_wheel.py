"""The wheel is the product: installed outside the checkout and run from an empty folder (issue 31).

Built, installed into a fresh virtual environment, and run as a user runs it.

One slow test (about a minute or two on two cores, most of it pip installing the dependencies
from the package index): the sdist and the wheel are built with ``python -m build`` (the wheel
from the sdist, so both are checked), the wheel is installed without the ``png`` extra, and
from an empty folder it runs the demo without serving, the sample estimate, a fake-judge probe
and its report card, ``calibrate`` on the demo database, and ``serve``, which must answer
Streamlit's health check before it is stopped. No process is left behind.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
import venv
import zipfile
from pathlib import Path

import pytest

import judgelab

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    """The user's environment: nothing pointing at the checkout or at a project."""
    drop = {"PYTHONPATH", "JUDGELAB_DB", "JUDGELAB_BASE_URL", "VIRTUAL_ENV", "PYTHONHOME"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def _run(exe: Path, *args: str, cwd: Path, ok: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(exe), *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)
    if ok:
        assert done.returncode == 0, f"{exe.name} {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _build(dist: Path) -> tuple[Path, Path]:
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)],
                          capture_output=True, text=True, timeout=600, env=_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = dist.glob("judgelab-*.whl")
    (sdist,) = dist.glob("judgelab-*.tar.gz")
    return sdist, wheel


def _check_contents(sdist: Path, wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("labeler/examples/rubric.toml", "labeler/examples/answers.jsonl", "labeler/examples/pairs.jsonl",
                   "labeler/examples/judge_spec.toml", "labeler/examples/truth.csv", "judgelab/.streamlit/config.toml",
                   "judgelab/views/_form.js", "labeler/store/migrations/001_core.sql", "calibration/prices.toml"):
        assert needed in names, needed
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert f"Version: {judgelab.__version__}\n" in metadata and "License-Expression: MIT\n" in metadata
    assert "Provides-Extra: png" in metadata and "Requires-Python: >=3.11" in metadata
    assert "Requires-Dist: vl-convert-python" in metadata and 'extra == "png"' in metadata
    with tarfile.open(sdist) as tar:
        members = {m.split("/", 1)[1] for m in tar.getnames() if "/" in m}
    assert {"LICENSE", "CHANGELOG.md", "README.md", "labeler/examples/rubric.toml", "tests/conftest.py"} <= members


def _serve_until_healthy(exe: Path, db: Path, cwd: Path) -> str:
    port = _free_port()
    proc = subprocess.Popen([str(exe), "serve", "--db", str(db), "--port", str(port), "--address", "127.0.0.1"],
                            cwd=cwd, env={**_env(), "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline, health = time.monotonic() + 120, ""
        while health != "ok" and time.monotonic() < deadline:
            assert proc.poll() is None, "serve exited"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as resp:
                    health = resp.read().decode()
            except OSError:
                time.sleep(0.5)
        assert health == "ok", "serve never answered its health check"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # serve became the Streamlit server: its own group only
        try:
            out = proc.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out = proc.communicate()[0]
    assert f"app:         http://127.0.0.1:{port}" in out and "Local URL" not in out, out
    return out


def test_the_installed_wheel_runs_the_product_from_an_empty_folder(tmp_path: Path) -> None:
    sdist, wheel = _build(tmp_path / "dist")
    _check_contents(sdist, wheel)

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python, judgelab_exe = env_dir / "bin" / "python", env_dir / "bin" / "judgelab"
    # --no-compile: byte-compiling every dependency is half of pip's CPU here, and not what is checked.
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-compile", str(wheel)],
                          capture_output=True, text=True, timeout=900, env=_env(), cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    work = tmp_path / "empty"
    work.mkdir()
    where = _run(python, "-c", "import judgelab, labeler; print(judgelab.__file__); print(labeler.__file__)",
                 cwd=work).stdout
    assert str(REPO) not in where and str(env_dir) in where, where

    assert _run(judgelab_exe, "--version", cwd=work).stdout == f"judgelab, version {judgelab.__version__}\n"
    assert "wrote examples/judge_spec.toml" in _run(judgelab_exe, "examples", cwd=work).stdout
    demo = _run(judgelab_exe, "demo", "--no-serve", "--db", "demo.duckdb", cwd=work).stdout
    assert "rater link: http://localhost:8501/?t=" in demo and "not serving" in demo, demo
    estimate = _run(judgelab_exe, "estimate", "--dataset", "sample", "--n", "5", cwd=work).stdout
    assert "calls" in estimate, estimate
    _run(judgelab_exe, "probe", "--judge", "fake", "--fake-position", "0.4", "--dataset", "sample", "--n", "8",
         "--biases", "position", "--out", "results.jsonl", "--db", "probe.duckdb", cwd=work)
    card = _run(judgelab_exe, "report", "results.jsonl", "--out", "card.md", "--db", "probe.duckdb", cwd=work)
    assert (work / "card.md").read_text().count("position") >= 1, card.stdout
    # The png extra is not installed: --png says how to get it instead of failing late.
    no_png = _run(judgelab_exe, "report", "results.jsonl", "--png", "card.png", cwd=work, ok=False)
    assert no_png.returncode == 2 and "judgelab[png]" in no_png.stderr, no_png.stderr
    _run(judgelab_exe, "calibrate", "--db", "demo.duckdb", "--out", "report.md", cwd=work)
    assert (work / "report.md").stat().st_size > 1000
    _serve_until_healthy(judgelab_exe, work / "demo.duckdb", work)
    leftovers = sorted(p.name for p in work.iterdir())
    assert "judgelab.duckdb" not in leftovers, leftovers  # every command used the database it was given
