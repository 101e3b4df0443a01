"""The ways a new team first starts the app, followed as written, in Chromium.

* the docs' "Project database" commands, run one by one from an empty folder, end with
  a rater who has answers to rate;
* a project with no rubric shows raters a plain message for the admin, never a traceback
  (``judgelab serve`` turns Streamlit's error details off itself, with a flag from the
  packaged ``judgelab/.streamlit/config.toml``, whatever folder it runs from);
* ``judgelab demo`` while another server holds the port prints links to the server it
  really started, and an explicit busy ``--port`` is refused before anything is printed.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store
from tests.browser.conftest import REPO, expect_text, free_port, main_text, open_page, serve, wait_healthy
from tests.conftest import DATA

pytestmark = pytest.mark.browser

JUDGELAB = str(Path(sys.executable).parent / "judgelab")


def readme_block(section: str) -> list[str]:
    """The shell lines of the first code block of the docs page titled ``section``."""
    text = (REPO / "docs" / "admins" / "database.md").read_text()
    body = text.split(f"# {section}\n", 1)[1].split("\n## ", 1)[0]
    block = body.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]


@contextmanager
def started(command: list[str], cwd: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """A long-running command in its own process group, stopped (that group only) at the end."""
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def test_readme_project_database_path_ends_with_a_rater_who_has_items(
    tmp_path: Path, browser: Any
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("JUDGELAB_DB", "JUDGELAB_BASE_URL")}
    lines = readme_block("Project database")
    port = free_port()
    token = None
    serving = None
    for line in lines:
        argv = shlex.split(line)
        assert argv[0] == "judgelab", line
        if argv[1] == "serve":
            serving = [JUDGELAB, *argv[1:], "--port", str(port), "--address", "127.0.0.1"]
            continue
        done = subprocess.run([JUDGELAB, *argv[1:]], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        if argv[1:3] == ["raters", "add"] and argv[3] == "alice":
            token = urllib.parse.parse_qs(urllib.parse.urlsplit(done.stdout.split()[-1]).query)["t"][0]
    assert token and serving, lines
    with started(serving, tmp_path, env) as proc:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(proc, url)
        page, _ = open_page(browser, f"{url}/?t={token}")
        expect_text(page, "Answer 1 of")
        assert "No answers to rate" not in main_text(page)
        page.close()


def test_no_rubric_shows_a_plain_message_never_a_traceback(tmp_path: Path, browser: Any) -> None:
    db = tmp_path / "norubric.duckdb"
    store = Store(db)
    import_file(store, "answers", DATA / "answers.jsonl")
    _, token = store.add_rater("ruth")
    store.set_setting("project", "claim_k", "1")  # pull mode: the page asks for an answer at once
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server = serve(db, cwd=elsewhere)
    try:
        page, _ = open_page(browser, f"{server.url}/?t={token}")
        expect_text(page, "rubric")
        text = main_text(page)
        html = page.content()
        for leak in ("Traceback", 'File "', ".py", "Ask Google", "Ask ChatGPT", str(REPO)):
            assert leak not in text and leak not in html, f"{leak!r} shown to a rater: {text[:400]!r}"
        assert re.search(r"admin", text, re.IGNORECASE), text
        page.close()
    finally:
        server.stop()


@contextmanager
def holding(port: int) -> Iterator[None]:
    """Listen on ``port`` (if nobody does yet) so that it is busy."""
    sock = socket.socket()
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("", port))
            sock.listen()
        except OSError:
            pass  # already busy: just as good
        yield
    finally:
        sock.close()


def test_demo_twice_prints_links_to_the_server_it_started(tmp_path: Path, browser: Any) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("JUDGELAB_DB", "JUDGELAB_BASE_URL")}
    busy = free_port()
    with holding(busy):
        # An explicit busy --port is refused before any link is printed.
        done = subprocess.run([JUDGELAB, "demo", "--port", str(busy), "--db", str(tmp_path / "a.duckdb")],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode != 0 and "rater link" not in done.stdout, done.stdout
        assert str(busy) in done.stderr, done.stderr
    with holding(8501), started([JUDGELAB, "demo", "--db", str(tmp_path / "b.duckdb")], tmp_path, env) as proc:
        assert proc.stdout is not None
        out, link, deadline = "", None, time.monotonic() + 120
        while link is None and time.monotonic() < deadline:
            line = proc.stdout.readline().decode()
            out += line
            if line.startswith("rater link:"):
                link = line.split(":", 1)[1].strip()
            if not line and proc.poll() is not None:
                break
        assert link, out
        parts = urllib.parse.urlsplit(link)
        assert parts.port != 8501, out
        url = f"{parts.scheme}://{parts.hostname}:{parts.port}"
        wait_healthy(proc, url)
        page, _ = open_page(browser, link)
        expect_text(page, "Answer 1 of")
        assert "not valid" not in main_text(page)
        page.close()
