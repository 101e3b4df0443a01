"""``judgelab serve`` and ``demo`` as a user meets them (issue 31), and the optional PNG renderer.

The packaged Streamlit settings, links that name the server that answers them, no token-less
banner, and a failed demo that leaves no database behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

import judgelab.demo
from judgelab.admin import BASE_URL_SETTING
from judgelab.cli import main
from judgelab.cli.serve import APP_CONFIG, app_settings, serving_url, streamlit_command
from judgelab.labeler.errors import InputError
from judgelab.labeler.store import Store

JUDGELAB = str(Path(sys.executable).parent / "judgelab")


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env=env)
    return result.exit_code, result.output


# -- the settings ---------------------------------------------------------------------------------


def test_every_packaged_setting_is_a_flag_and_streamlit_prints_no_url_of_its_own(tmp_path: Path) -> None:
    command = streamlit_command(tmp_path / "x.duckdb", 8600, "127.0.0.1")
    flags = dict(zip(command[5::2], command[6::2], strict=True))
    settings = app_settings()
    assert len(settings) >= 10 and APP_CONFIG.parent.name == ".streamlit"
    for key, value in settings.items():
        assert flags[f"--{key}"] == (str(value).lower() if isinstance(value, bool) else str(value)), key
    # Streamlit's banner names the bare address, which without ?t= only says "Access denied".
    assert flags["--logger.hideWelcomeMessage"] == "true"
    assert flags["--client.showErrorDetails"] == "none" and flags["--server.headless"] == "true"
    assert flags["--server.port"] == "8600" and flags["--server.address"] == "127.0.0.1"


def test_the_base_url_is_the_given_one_or_the_bound_address() -> None:
    assert serving_url("localhost", 8502) == "http://localhost:8502"
    assert serving_url("::1", 8501) == "http://[::1]:8501"
    assert serving_url("0.0.0.0", 8501).startswith("http://") and "0.0.0.0" not in serving_url("0.0.0.0", 8501)
    assert serving_url("127.0.0.1", 8501, "https://labels.example.org/") == "https://labels.example.org"
    assert serving_url("127.0.0.1", 8501, "http://10.0.0.5:8501") == "http://10.0.0.5:8501"
    for bad in ("labels.example.org", "ftp://x", "https://x/?t=1", "https://x/judge/"):
        with pytest.raises(InputError, match="base-url"):
            serving_url("localhost", 8501, bad)


def test_links_made_after_serve_use_the_address_it_served_at(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    env = {"JUDGELAB_BASE_URL": ""}
    assert "http://localhost:8501/?t=" in _run("raters", "add", "ann", "--db", db, env=env)[1]
    Store(db).set_setting("project", BASE_URL_SETTING, "http://localhost:8503")
    assert "http://localhost:8503/?t=" in _run("raters", "add", "ben", "--db", db, env=env)[1]
    assert "http://localhost:8503/?t=" in _run("raters", "reissue", "ann", "--db", db, env=env)[1]
    # The variable and the flag still win.
    assert "https://a.example/?t=" in _run("raters", "add", "cy", "--db", db, env={"JUDGELAB_BASE_URL": "https://a.example"})[1]
    assert "https://b.example/?t=" in _run("raters", "add", "di", "--db", db, "--base-url", "https://b.example",
                                           env=env)[1]


# -- a real server ----------------------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(url: str, proc: subprocess.Popen[str], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                if resp.read().decode() == "ok":
                    return
        except OSError:
            pass
        assert proc.poll() is None, "the server died"
        time.sleep(0.3)
    raise AssertionError("the server never answered its health check")


@pytest.mark.both_backends
def test_serve_prints_the_links_it_serves_and_not_streamlits_banner(tmp_path: Path, db: Path | str) -> None:
    store = Store(db)
    store.set_setting("project", BASE_URL_SETTING, "http://localhost:8501")  # links were made for 8501
    store.release()
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "JUDGELAB_BASE_URL"}
    env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen([JUDGELAB, "serve", "--db", str(db), "--port", str(port), "--address", "127.0.0.1"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        _healthy(f"http://127.0.0.1:{port}", proc)
        added = subprocess.run([JUDGELAB, "raters", "add", "eve", "--db", str(db)], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=60)
        assert f"http://127.0.0.1:{port}/?t=" in added.stdout, added.stdout + added.stderr
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        out = proc.communicate(timeout=30)[0]
    assert f"app:         http://127.0.0.1:{port}" in out, out
    assert f"rater links: http://127.0.0.1:{port}/?t=<token>" in out, out
    assert "links made for http://localhost:8501 do not reach this server" in out, out
    for banner in ("You can now view", "Local URL", "Network URL", "External URL"):
        assert banner not in out, out


# -- the demo ---------------------------------------------------------------------------------------


def _fail(*args: object, **kwargs: object) -> str:
    raise RuntimeError("the fake judge broke")


def test_a_failed_demo_leaves_no_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judgelab.demo, "run_demo_judge", _fail)
    db = tmp_path / "demo.duckdb"
    result = CliRunner().invoke(main, ["demo", "--no-serve", "--db", str(db)])
    assert result.exit_code != 0 and isinstance(result.exception, RuntimeError)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("demo")) == []
    # Without --db the temporary folder it made goes too.
    made = tmp_path / "judgelab-demo-x"
    monkeypatch.setattr("tempfile.mkdtemp", lambda prefix="": str(made.mkdir() or made))
    result = CliRunner().invoke(main, ["demo", "--no-serve"])
    assert result.exit_code != 0 and not made.exists()
    # And a demo that works is still built (the same path, now free).
    monkeypatch.undo()
    result = CliRunner().invoke(main, ["demo", "--no-serve", "--db", str(db)])
    assert result.exit_code == 0 and db.exists(), (result.output, result.exception)


# -- the optional PNG renderer ----------------------------------------------------------------------


def test_a_png_without_the_renderer_is_refused_at_once_with_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "vl_convert", None)  # as if the png extra were not installed
    code, out = _run("report", str(tmp_path / "missing.jsonl"), "--png", str(tmp_path / "card.png"))
    assert code == 2 and "pip install 'judgelab[png]'" in out and "vl-convert" in out, out
    db = tmp_path / "p.duckdb"
    Store(db).release()
    code, out = _run("calibrate", "--db", str(db), "--out", str(tmp_path / "r.md"), "--png", str(tmp_path / "r.png"))
    assert code == 2 and "judgelab[png]" in out and not (tmp_path / "r.md").exists(), out
    from judgelab.calibration.png import png_renderer

    with pytest.raises(InputError, match=r"judgelab\[png\]"):
        png_renderer()


def test_serve_announces_a_read_only_database_and_writes_nothing_to_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 47 item 3: ``serve`` serves a file it cannot write (the browser test serves one for real)."""
    from judgelab.cli.serve import _announce
    from judgelab.labeler.store import release_all

    db = tmp_path / "ro.duckdb"
    Store(db).add_rater("ann")
    release_all()
    store = Store(db, read_only=True)
    _announce(store, "127.0.0.1", 8599, "http://127.0.0.1:8599")
    said = capsys.readouterr().out
    assert f"serving {store.path} (read-only)" in said
    assert "raters are told rating is paused" in said and "http://127.0.0.1:8599/?t=<token>" in said
    assert store.setting("project", BASE_URL_SETTING) is None  # nothing recorded in a file it must not write
