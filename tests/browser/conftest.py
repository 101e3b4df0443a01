"""What every browser test shares: the server, Chromium, the recorder and the waits.

The app is started the way ``judgelab serve`` starts it (its own command line, from a
working directory that is not the repository: the settings come from the flags and the
packaged ``judgelab/.streamlit/config.toml`` beside the app) and driven by Debian's chromium
through Playwright (no browser download is possible here).

:class:`Recorder` keeps everything a page received (websocket frames, the bodies of the
app's own HTTP responses, every URL requested) so a test can search it for what must
never reach a rater, and check that the browser asked no other host for anything.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync",
]
READY = "[data-testid='stApp'][data-test-script-state='notRunning']"
#: The two screens the issue was reproduced on.
LAPTOP = {"width": 1366, "height": 768}
DESKTOP = {"width": 1400, "height": 900}

playwright_api = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():  # pragma: no cover - CI installs it
    pytest.skip("Debian chromium is not installed", allow_module_level=True)


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A running ``streamlit run judgelab/app.py`` and where it answers."""

    proc: subprocess.Popen[bytes]
    url: str

    def stop(self) -> None:
        """Stop the server (its own process only)."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def wait_healthy(proc: subprocess.Popen[bytes], url: str, *, timeout: float = 90) -> None:
    """Wait until the server at ``url`` says ``ok``; fail with its output if it dies."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                if resp.read().decode() == "ok":
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out = proc.stdout.read().decode() if proc.stdout else ""
            pytest.fail(f"streamlit did not start:\n{out}")
        time.sleep(0.2)


def serve(db: Path | str, *, cwd: Path | None = None, env: Mapping[str, str] | None = None,
          launcher: Path | None = None) -> Server:
    """Serve ``db`` (a file, or a PostgreSQL URL) with the command line ``judgelab serve`` uses, on a free port.

    ``cwd``: where the server runs; the database file's folder when not given (required for a URL).
    ``launcher``: a script that takes ``streamlit``'s arguments and runs it (instead of
    ``python -m judgelab.cli._streamlit``), such as ``_traced_server.py``.
    """
    from judgelab.cli.serve import streamlit_command

    port = free_port()
    command = streamlit_command(db, port, "127.0.0.1")
    if launcher is not None:
        assert command[1:3] == ["-m", "judgelab.cli._streamlit"], command
        command = [command[0], str(launcher), *command[3:]]
    if cwd is None:
        assert isinstance(db, Path), "a server of a PostgreSQL URL needs a working directory (cwd)"
        cwd = db.parent
    proc = subprocess.Popen(
        command, cwd=cwd,
        env={**os.environ, "JUDGELAB_DB": str(db), **(env or {})},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, url)
    return Server(proc, url)


@dataclass
class Recorder:
    """Everything a page received, every URL it asked for, and any dialogs it tried to open."""

    frames: list[bytes] = field(default_factory=list)
    responses: list[Any] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def attach(self, page: Any) -> None:
        """Start recording ``page``."""
        def on_ws(ws: Any) -> None:
            self.urls.append(ws.url)
            self.requests.append(ws.url)
            ws.on("framereceived", lambda payload: self.frames.append(
                payload if isinstance(payload, bytes) else payload.encode()))

        def on_dialog(dialog: Any) -> None:
            self.dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("websocket", on_ws)
        page.on("response", lambda resp: self.responses.append(resp))
        page.on("request", lambda req: (self.urls.append(req.url), self.requests.append(req.url)))
        page.on("framenavigated", lambda frame: self.urls.append(frame.url))
        page.on("dialog", on_dialog)

    def received(self, page: Any) -> str:
        """All the text the page received: frames, the app's own bodies, the DOM, the URLs."""
        parts = [f.decode("utf-8", errors="replace") for f in self.frames]
        for resp in self.responses:
            # Streamlit's static JS/CSS/fonts are framework code shipped with the
            # package, identical for every app: not data this app sent.
            if "/static/" in resp.url or resp.request.resource_type in ("font", "image"):
                continue
            try:
                parts.append(resp.body().decode("utf-8", errors="replace"))
            except Exception:  # redirects and aborted requests have no body
                continue
        parts.append(page.content())
        parts += self.urls
        return "\n".join(parts)

    def outside_requests(self) -> list[str]:
        """Requests to any host but this machine (raters' browsers must make none)."""
        local = {"127.0.0.1", "localhost", "::1", "[::1]"}
        return sorted({u for u in self.requests
                       if urllib.parse.urlsplit(u).scheme in ("http", "https", "ws", "wss")
                       and urllib.parse.urlsplit(u).hostname not in local})


def wait_ready(page: Any) -> None:
    """Wait until the script has finished running and nothing is still a skeleton."""
    page.wait_for_selector(READY, timeout=60_000)
    playwright_api.expect(page.get_by_test_id("stSkeleton")).to_have_count(0)


def open_page(browser: Any, url: str, *, viewport: Mapping[str, int] | None = None) -> tuple[Any, Recorder]:
    """A new page on ``url`` (recorded), once the app is connected and idle."""
    page = browser.new_page(viewport=dict(viewport or {"width": 1440, "height": 1000}))
    rec = Recorder()
    rec.attach(page)
    page.goto(url)
    page.wait_for_selector("[data-testid='stApp'][data-test-connection-state='CONNECTED']",
                           timeout=60_000)
    wait_ready(page)
    return page, rec


def expect_text(page: Any, text: str, *, timeout: float = 60_000) -> None:
    """Wait until ``text`` is visible somewhere on the page, then until the app is idle."""
    playwright_api.expect(page.get_by_text(text, exact=False).first).to_be_visible(timeout=timeout)
    wait_ready(page)


def main_text(page: Any) -> str:
    """The visible text of the main area (shadow roots included)."""
    return str(page.locator("[data-testid='stMain']").inner_text())


def menu(page: Any) -> Any:
    """The navigation menu: the top bar (raters) or the sidebar (admins)."""
    top = page.get_by_test_id("stTopNav")
    return top if top.count() else page.get_by_test_id("stSidebarNav")


def menu_titles(page: Any) -> list[str]:
    """The menu's link texts (a link's text is its icon's name, then its title)."""
    links = menu(page).get_by_role("link")
    return [links.nth(i).inner_text().strip().splitlines()[-1].strip() for i in range(links.count())]


def go(page: Any, link: str) -> None:
    """Open a page from the menu by its link text and wait for its title."""
    menu(page).get_by_role("link", name=link).click()
    title = page.get_by_test_id("stMain").get_by_role("heading", name=link, exact=True)
    playwright_api.expect(title).to_be_visible(timeout=60_000)
    wait_ready(page)


def judgelab(db: Path, *args: str) -> str:
    """Run ``judgelab ARGS --db DB`` from the venv's command (in DB's folder); its output, once it succeeded."""
    import sys

    done = subprocess.run([str(Path(sys.executable).parent / "judgelab"), *args, "--db", str(db)],
                          capture_output=True, text=True, timeout=300, cwd=db.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def count(store: Any, sql: str, params: list[Any]) -> int:
    """The single number a counting query returns."""
    return int(store.query(sql, params).iloc[0, 0])


def find_all(needle: str, haystack: str) -> list[str]:
    """Up to three excerpts of ``haystack`` around case-insensitive hits of ``needle``."""
    hits = [m.start() for m in re.finditer(re.escape(needle), haystack, re.IGNORECASE)]
    return [haystack[max(0, i - 60): i + 60] for i in hits[:3]]


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One Chromium for the browser tests (each test opens its own pages).

    Package scope, not session: Playwright's sync API keeps an asyncio loop running in the
    main thread while it is open, and every later test that calls ``asyncio.run`` (the judge
    runner, the SDK tests) would fail with "cannot be called from a running event loop".
    """
    # An assertion waits up to 30 s, not Playwright's 5: on two shared cores a Streamlit rerun
    # can take longer than 5 s, and a wait only lasts that long when the test fails anyway.
    playwright_api.expect.set_options(timeout=30_000)
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


# -- the demo, served -------------------------------------------------------------------------


@dataclass
class Demo:
    """``judgelab demo``'s database, served; tokens of its demo rater and admin."""

    url: str
    db: Path
    store: Any
    rater_token: str
    admin_token: str

    def new_rater(self, name: str, *, score: int = 0, pairs: int = 0, audits: int = 0) -> tuple[int, str]:
        """A fresh rater with ``score`` originals, ``pairs`` pairs and ``audits`` audits of the demo pool."""
        from judgelab.admin import family_pairs

        store = self.store
        rater, token = store.add_rater(name)
        answers = store.answers(variant="original")
        # Tasks with an answer another test withheld (the W key, on this shared demo) deal fewer items.
        withheld = answers["answer_id"].isin(set(store.withheld_answers()["answer_id"]))
        answers = answers[~answers["task_id"].isin(set(answers.loc[withheld, "task_id"]))]
        tasks = sorted(answers["task_id"].unique())
        if score:
            # Answers nobody has yet (assign_k tops an answer up to k raters, never past it).
            taken = set(store.query("SELECT answer_id FROM assignments WHERE kind = 'score'")["answer_id"])
            free = answers[~answers["answer_id"].isin(taken)].groupby("task_id").head(1)
            mine = free.sort_values("task_id")["answer_id"].tolist()[-score:]
            store.assign_k(mine, 1, [rater.rater_id], seed=1)
        if pairs:
            chosen = answers[answers["task_id"].isin(tasks[-pairs:])]
            families = sorted(chosen["family"].unique())
            store.assign_pairs(family_pairs(chosen, families[0], families[1]), [rater.rater_id])
        if audits:
            # The demo rater audits every rewrite already: one more rater each (k tops up).
            padded = store.answers(variant="padded")
            holders = store.query("SELECT DISTINCT rater_id FROM assignments WHERE kind = 'audit'")["rater_id"]
            store.assign_audits(list(zip(padded["parent_answer_id"], padded["answer_id"], strict=True))[:audits],
                                [*map(int, holders), rater.rater_id], k=len(holders) + 1)
        return rater.rater_id, token


@pytest.fixture(scope="package")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """A fresh ``judgelab demo`` database (built by the command itself), served for the browser tests."""
    from judgelab.labeler.store import Store

    db = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    out = judgelab(db, "demo", "--no-serve")
    links = {line.split(" link:")[0]: line.split(" link:", 1)[1].strip()
             for line in out.splitlines() if " link:" in line}
    tokens = [urllib.parse.parse_qs(urllib.parse.urlsplit(links[who]).query)["t"][0] for who in ("rater", "admin")]
    store = Store(db)
    server = serve(db)
    try:
        yield Demo(server.url, db, store, tokens[0], tokens[1])
    finally:
        server.stop()
