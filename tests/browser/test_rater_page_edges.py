"""Issue 52 (points 1, 14, 15) in Chromium, on a PostgreSQL cluster of the test's own.

One project on a throwaway PostgreSQL cluster (``tests/pg.py``'s :class:`~tests.pg.Cluster`, which
the test stops and starts with ``pg_ctl``), served the way ``judgelab serve`` serves it, the
server's output going to a log file:

* the database stops under a rater's page: their Ctrl+Enter is told the documented sentence at
  once (before the form's "Still saving" at 8 s), never Streamlit's error box; the score stays in
  the form; a page opened meanwhile says the page could not load, in plain words; once the
  database is back, Ctrl+Enter stores the label exactly once, and the page goes on taking submits;
* a comment over the 5,000-character cap, in ASCII, in emoji and mixed: the browser counts and cuts
  characters as the server does (code points, not UTF-16 units), so the stored comment's length is
  what the counter and the saved message say;
* no websocket frame a browser receives (without a token, or a rater's through a submit) names the
  server's install path or the database.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from judgelab.admin._incidents import LOAD_FAILED, SAVE_FAILED
from judgelab.cli.serve import APP
from judgelab.labeler.store import Store
from tests.app.conftest import build_pool
from tests.browser.conftest import (
    LAPTOP,
    REPO,
    Server,
    expect_text,
    free_port,
    main_text,
    open_page,
    playwright_api,
    wait_healthy,
    wait_ready,
)

pytestmark = [pytest.mark.browser, pytest.mark.postgres]
expect = playwright_api.expect

#: Streamlit's own error box (what the rater saw when the database stopped).
STREAMLIT_ERROR = "This app has encountered an error"
#: Answers each rater has.
RATERS = {"outage-olga": 4, "comment-cleo": 3, "frames-fred": 2}


@dataclass
class Project:
    """The served project on its own cluster."""

    cluster: Any
    url: str
    store: Store
    server: Server
    log: Path
    tokens: dict[str, tuple[int, str]]


def _serve_logged(db: str, cwd: Path, log: Path) -> Server:
    """Serve ``db`` with ``judgelab serve``'s command line, the server's output going to ``log``."""
    from judgelab.cli.serve import streamlit_command

    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(streamlit_command(db, port, "127.0.0.1"), cwd=cwd,
                                env={**os.environ, "JUDGELAB_DB": db}, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, url)
    return Server(proc, url)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    from tests import pg

    if pg.pg_bin() is None:
        pytest.skip("no PostgreSQL server binary (Debian: apt-get install postgresql)")
    tmp = tmp_path_factory.mktemp("edges")
    with pg.Cluster() as cluster:
        url = pg.fresh_database(cluster.url)
        pool = build_pool(url, n_tasks=5)
        store = pool.store
        tokens = {}
        at = 0
        for name, n in RATERS.items():
            rater, token = store.add_rater(name)
            tokens[name] = (rater.rater_id, token)
            store.assign_k(pool.originals[at:at + n], 1, [rater.rater_id], seed=1)
            at += n
        store.release()
        log = tmp / "server.log"
        server = _serve_logged(url, tmp, log)
        try:
            yield Project(cluster, url, store, server, log, tokens)
        finally:
            server.stop()


def _page(project: Project, name: str, browser: Any) -> tuple[Any, Any]:
    return open_page(browser, f"{project.server.url}/?t={project.tokens[name][1]}", viewport=LAPTOP)


def _labels(project: Project, name: str) -> list[tuple[float | None, str | None]]:
    rows = project.store.query("SELECT overall, comment FROM labels WHERE rater_id = ? ORDER BY label_id",
                               [project.tokens[name][0]])
    project.store.release()
    return [(None if o != o else float(o), c) for o, c in zip(rows["overall"], rows["comment"], strict=True)]


def _chosen(page: Any) -> Any:
    return page.get_by_role("radiogroup", name="Overall score", exact=True).get_by_role("radio", checked=True)


def _no_error_box(page: Any) -> None:
    expect(page.get_by_test_id("stException")).to_have_count(0)
    assert STREAMLIT_ERROR not in main_text(page)


def test_a_database_that_stops_mid_submit_is_one_sentence_and_the_next_submit_stores_once(
        project: Project, browser: Any) -> None:
    page, rec = _page(project, "outage-olga", browser)
    expect_text(page, "Answer 1 of 4")
    page.keyboard.press("4")
    project.cluster.stop()
    try:
        pressed = time.monotonic()
        page.keyboard.press("Control+Enter")
        # At once: before the form's own "Still saving" (8 s without an answer) could show.
        expect(page.locator(".jl-message.error")).to_have_text(SAVE_FAILED, timeout=7_500)
        print(f"\nthe sentence showed {time.monotonic() - pressed:.2f} s after Ctrl+Enter")
        wait_ready(page)
        _no_error_box(page)
        expect(_chosen(page)).to_have_text("4")  # the answer is still in the form
        expect_text(page, "Answer 1 of 4")
        # Pressed again while it is still down: the same sentence, at once, not a page that hangs.
        page.keyboard.press("Control+Enter")
        expect(page.locator(".jl-message.error")).to_have_text(SAVE_FAILED, timeout=7_500)
        wait_ready(page)
        _no_error_box(page)
        # A page opened (or reloaded) meanwhile cannot load the item: one plain sentence too.
        other, other_rec = _page(project, "outage-olga", browser)
        expect_text(other, LOAD_FAILED)
        _no_error_box(other)
        other.close()
        project.cluster.start()  # back, as after an admin's restart
        assert _labels(project, "outage-olga") == []  # nothing was stored while it was down
    finally:
        if not _up(project):
            project.cluster.start()
    # Back: the same Ctrl+Enter stores what the form kept, once.
    page.keyboard.press("Control+Enter")
    expect(page.locator(".jl-message")).to_have_text("Label saved", timeout=30_000)
    expect_text(page, "Answer 2 of 4")
    assert [score for score, _ in _labels(project, "outage-olga")] == [4.0]
    # And the page goes on taking submits.
    for k, score in ((2, "2"), (3, "5")):
        page.keyboard.press(score)
        page.keyboard.press("Control+Enter")
        expect_text(page, f"Answer {k + 1} of 4")
    assert [score for score, _ in _labels(project, "outage-olga")] == [4.0, 2.0, 5.0]
    _no_error_box(page)
    received = rec.received(page) + other_rec.received(page)
    for secret in ("could not connect", "Connection refused", "postgresql", str(project.cluster.port), "Traceback"):
        assert secret.lower() not in received.lower(), secret
    # The admin's side: the server's log has what happened, with the rater's name.
    log = project.log.read_text(errors="replace")
    assert "Rate: submit failed for outage-olga" in log, log[-3000:]
    page.close()


def _up(project: Project) -> bool:
    import psycopg

    try:
        psycopg.connect(project.cluster.url, connect_timeout=2).close()
    except psycopg.OperationalError:
        return False
    return True


def _paste(page: Any, text: str) -> None:
    """Paste ``text`` into the comment box (one input of the whole text, as a paste is)."""
    page.keyboard.press("c")
    page.locator(".jl-comment").fill(text)


def test_a_comment_over_the_cap_is_counted_cut_and_stored_in_the_same_characters(
        project: Project, browser: Any) -> None:
    page, _ = _page(project, "comment-cleo", browser)
    count = page.locator(".jl-count")
    saved = page.locator(".jl-message")
    ascii_text = ("Restart the router, then update its firmware. " * 200)[:6001]
    emoji_only = "😀" * 3000  # 3,000 characters, 6,000 UTF-16 units: under the cap, nothing cut
    mixed = "a" * 4999 + "😀" * 1002  # 6,001 characters; the 5,000th is an emoji
    expected = []
    for n, (text, shown, message) in enumerate((
        (ascii_text, "Cut to 5,000 characters: the text you pasted had 6,001; only the first 5,000 are kept.",
         "Label saved, but your comment was cut to its first 5,000 characters (the text you pasted had 6,001)."),
        (emoji_only, "3,000 / 5,000 characters", "Label saved"),
        (mixed, "Cut to 5,000 characters: the text you pasted had 6,001; only the first 5,000 are kept.",
         "Label saved, but your comment was cut to its first 5,000 characters (the text you pasted had 6,001)."),
    ), start=1):
        expect_text(page, f"Answer {n} of 3")
        page.keyboard.press("3")
        _paste(page, text)
        expect(count).to_have_text(shown)
        kept = text[:5000]
        assert page.locator(".jl-comment").input_value() == kept
        page.keyboard.press("Escape")
        page.keyboard.press("Control+Enter")
        if n < 3:
            expect(saved).to_have_text(message)
        else:  # the last one: the finished screen says it in a toast
            expect(page.get_by_test_id("stToast")).to_contain_text(message)
        expected.append((3.0, kept))
        stored = _labels(project, "comment-cleo")
        assert stored == expected
        assert len(stored[-1][1] or "") == min(len(text), 5000)
    page.close()


def test_no_frame_names_the_install_path_or_the_database(project: Project, browser: Any) -> None:
    # Without a token: Access denied, and nothing of the server's layout.
    anonymous, anon_rec = open_page(browser, project.server.url, viewport=LAPTOP)
    expect_text(anonymous, "Access denied")
    page, rec = _page(project, "frames-fred", browser)
    expect_text(page, "Answer 1 of 2")
    page.keyboard.press("4")
    page.keyboard.press("Control+Enter")
    expect_text(page, "Answer 2 of 2")
    database = project.url.rsplit("/", 1)[1]
    secrets = {str(APP), str(APP.parent), str(REPO), "site-packages", "/judgelab/app.py", database,
               str(project.cluster.root), f":{project.cluster.port}"}
    for name, recorder in (("no token", anon_rec), ("rater", rec)):
        assert recorder.frames, name
        frames = "\n".join(f.decode("utf-8", errors="replace") for f in recorder.frames)
        for secret in secrets:
            assert secret not in frames, (name, secret, frames[max(0, frames.find(secret) - 200):][:400])
    anonymous.close()
    page.close()
