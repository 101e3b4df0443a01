"""Issue 47 in Chromium at 1366x768: server trouble stays the admin's, a cut comment is said, gold is unguessable.

One project on a small tmpfs (root mounts it; the test skips where it cannot), served once the way
``judgelab serve`` serves it, with the server's log in a file:

* a pasted 1 MB comment: the counter says it was cut before the submit, the saved message after;
* a rater walks a queue with gold mixed in at rate 1: the order the browser shows is the store's,
  gold is not at every other place, and nothing the browser receives names an item as gold;
* the disk fills: the rater's submit is told one plain sentence, the answer stays in the form,
  and once space is free the same submit stores it; the path, the raw error and the fix are in
  the server log and on the admin's Overview, never in anything the rater's browser received;
* the file is made read-only (``chattr +i``) while it is served: the rater is told rating is
  paused, with what they typed to copy; no path, no error;
* ``judgelab serve`` on a read-only file serves it: the rater reads that rating is paused, the
  admin's Overview says the file is read-only, and an export works.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from judgelab.admin._incidents import READ_ONLY, SAVE_FAILED
from judgelab.admin._quality import import_quality_file
from judgelab.labeler.errors import StoreError
from judgelab.labeler.quality import QualitySettings
from judgelab.labeler.store import Store
from tests.app.conftest import build_pool
from tests.browser.conftest import (
    LAPTOP,
    Recorder,
    Server,
    expect_text,
    free_port,
    main_text,
    open_page,
    playwright_api,
    wait_healthy,
    wait_ready,
)

pytestmark = pytest.mark.browser
expect = playwright_api.expect

#: Where the issue's screenshot of the rater's page on a full disk goes.
SHOT = Path("/tmp/issue47_full_disk.png")
#: Live answers of the rater who walks a queue with gold at rate 1 (each with one gold item).
N_WALK = 12
#: What a rater's browser must never receive (besides the database's path).
SERVER_WORDS = ("Fix:", "No space", "space left", "TransactionContext", "duckdb", "read-only mode",
                "Permission denied", "Operation not permitted", "Traceback", "chattr", "--db")


@dataclass
class Project:
    """The served project and what the tests need of it."""

    db: Path
    disk: Path
    store: Store
    server: Server
    log: Path
    admin: str
    tokens: dict[str, tuple[int, str]]
    gold_ids: set[str]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=60)


def _serve_logged(db: Path, log: Path) -> Server:
    """Serve ``db`` as ``judgelab serve`` does, the server's output going to ``log``."""
    import os

    from judgelab.cli.serve import streamlit_command

    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(streamlit_command(db, port, "127.0.0.1"), cwd=log.parent,
                                env={**os.environ, "JUDGELAB_DB": str(db)}, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, url)
    return Server(proc, url)


def _gold_csv(path: Path, n: int) -> Path:
    """``n`` gold items written like the pool's answers (a rater cannot tell them by their words)."""
    path.write_text("id,prompt,text,score\n" + "".join(
        f"gold-{i:02d},Ticket {100 + i}: my router keeps dropping the connection (case {100 + i}).,"
        f"\"Answer to case {100 + i}: restart the router, then update its firmware.\",4\n" for i in range(n)),
        "utf-8")
    return path


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    tmp = tmp_path_factory.mktemp("trouble")
    disk = tmp / "disk"
    disk.mkdir()
    if shutil.which("chattr") is None or _run("mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(disk)).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    server = None
    try:
        db = disk / "p.duckdb"
        pool = build_pool(db, n_tasks=N_WALK // 2)
        store = pool.store
        tokens = {}
        wanted = {"walker-wes": N_WALK, "paste-pia": 1, "disk-dana": 2, "frozen-fay": 2}
        for name in wanted:
            rater, token = store.add_rater(name)
            tokens[name] = (rater.rater_id, token)
        # Answer i goes to every rater who wants more than i answers (k tops an answer up).
        for i, answer in enumerate(pool.originals[:N_WALK]):
            holders = [tokens[name][0] for name, n in wanted.items() if n > i]
            store.assign_k([answer], len(holders), holders, seed=1)
        _, admin = store.add_rater("boss", role="admin")
        store.set_quality_settings(QualitySettings(rate=1.0, seed=5))
        import_quality_file(store, _gold_csv(tmp / "gold.csv", N_WALK))
        gold_ids = set(store.query("SELECT item_id FROM quality_items")["item_id"])
        store.release()
        log = tmp / "server.log"
        server = _serve_logged(db, log)
        yield Project(db, disk, store, server, log, admin, tokens, gold_ids)
    finally:
        if server is not None:
            server.stop()
        for leftover in disk.glob("*"):
            _run("chattr", "-i", str(leftover))
        _run("umount", "-l", str(disk))


def _rater_page(project: Project, name: str, browser: Any) -> tuple[Any, Recorder]:
    return open_page(browser, f"{project.server.url}/?t={project.tokens[name][1]}", viewport=LAPTOP)


def _no_server_details(project: Project, rec: Recorder, page: Any) -> None:
    """Nothing the rater's browser received names the database, a raw error or a fix."""
    received = rec.received(page)
    assert str(project.db) not in received and str(project.disk) not in received
    for word in SERVER_WORDS:
        assert word.lower() not in received.lower(), (word, received[received.lower().find(word.lower()) - 200:][:400])


def _labels(project: Project, name: str) -> list[tuple[float | None, str | None]]:
    rows = project.store.query("SELECT overall, comment FROM labels WHERE rater_id = ? ORDER BY label_id",
                               [project.tokens[name][0]])
    project.store.release()
    return [(None if o != o else float(o), c) for o, c in zip(rows["overall"], rows["comment"], strict=True)]


def _fill_the_last_pages(store: Store) -> None:
    """Write small changes until one fails: the write-ahead log's last page has room for a few.

    A file system hands out whole pages, so a full disk still takes a small commit that fits the
    page the log already has; a rater's short answer would then be stored, and the test would not
    be testing a full disk.
    """
    try:
        for i in range(5000):
            store.set_setting("test", "slack", f"{i:05d}" + "x" * 400)
    except StoreError as exc:
        assert "full" in str(exc), exc
    else:
        pytest.fail("the disk never filled up")
    finally:
        store.release()


def chosen(page: Any) -> Any:
    return page.get_by_role("radiogroup", name="Overall score", exact=True).get_by_role("radio", checked=True)


def test_a_pasted_megabyte_comment_is_said_cut_before_and_after_the_submit(project: Project, browser: Any) -> None:
    page, _ = _rater_page(project, "paste-pia", browser)
    expect_text(page, "Answer 1 of 2")
    page.keyboard.press("4")
    page.keyboard.press("c")
    page.keyboard.type("ok")
    count = page.locator(".jl-count")
    expect(count).to_have_text("2 / 5,000 characters")
    pasted = ("Restart the router, then update its firmware. " * 23000)[:1_048_576]
    page.locator(".jl-comment").fill(pasted)  # the browser's paste: one input of the whole text
    expect(count).to_have_text("Cut to 5,000 characters: the text you pasted had 1,048,576; "
                               "only the first 5,000 are kept.")
    assert page.locator(".jl-comment").input_value() == pasted[:5000]
    page.keyboard.press("Escape")
    page.keyboard.press("Control+Enter")
    expect(page.locator(".jl-message")).to_have_text(
        "Label saved, but your comment was cut to its first 5,000 characters (the text you pasted had 1,048,576).")
    assert _labels(project, "paste-pia") == [(4.0, pasted[:5000])]
    page.close()


def test_gold_comes_in_no_pattern_the_rater_can_see(project: Project, browser: Any) -> None:
    rater_id, _ = project.tokens["walker-wes"]
    page, rec = _rater_page(project, "walker-wes", browser)
    total = 2 * N_WALK
    seen = []
    for k in range(1, total + 1):
        expect_text(page, f"Answer {k} of {total}")
        case = re.search(r"Answer to case (\d+):|Try this:", main_text(page))
        assert case is not None
        seen.append(case.group(1) is not None and int(case.group(1)) >= 100)
        page.keyboard.press("3")
        page.keyboard.press("Control+Enter")
    expect_text(page, f"All {total} answers are rated")
    planned = [item.item_id in project.gold_ids for item in project.store.rater_queue(rater_id)]
    project.store.release()
    # The browser showed the store's order (the one the statistical test in
    # tests/app/test_gold_positions.py checks over 200 seeds): 12 gold and 12 live, not alternating.
    assert seen == planned and sum(seen) == N_WALK
    assert seen != [k % 2 == 1 for k in range(total)] and seen != [k % 2 == 0 for k in range(total)]
    received = rec.received(page)
    # Gold items reach the browser by their opaque item id only: never their ids, never a kind.
    assert not [i for i in range(N_WALK) if f"gold-{i:02d}" in received]
    assert "quality_items" not in received and '"gold"' not in received
    page.close()


def test_a_full_disk_tells_the_rater_one_sentence_and_keeps_the_answer(project: Project, browser: Any) -> None:
    page, rec = _rater_page(project, "disk-dana", browser)
    expect_text(page, "Answer 1 of 4")
    page.keyboard.press("4")
    page.keyboard.press("c")
    typed = "Clear steps; the firmware link is missing."
    page.keyboard.type(typed)
    page.keyboard.press("Escape")
    filler = project.disk / "filler"
    _run("dd", "if=/dev/zero", f"of={filler}", "bs=256k")  # until the disk is full
    try:
        _fill_the_last_pages(project.store)
        page.keyboard.press("Control+Enter")
        expect(page.locator(".jl-message.error")).to_have_text(SAVE_FAILED, timeout=30_000)
        wait_ready(page)
        # The answer is still in the form: the score and the comment as typed.
        expect(chosen(page)).to_have_text("4")
        assert page.locator(".jl-comment").input_value() == typed
        expect_text(page, "Answer 1 of 4")
        page.screenshot(path=str(SHOT))
        assert _labels(project, "disk-dana") == []
        _no_server_details(project, rec, page)
    finally:
        filler.unlink()
    # Space again: the same submit, pressed again, stores what the form kept.
    page.keyboard.press("Control+Enter")
    expect(page.locator(".jl-message")).to_have_text("Label saved", timeout=30_000)
    assert _labels(project, "disk-dana") == [(4.0, typed)]
    _no_server_details(project, rec, page)
    page.close()
    # The admin reads what happened, with the path and the fix; so does the server's log.
    admin, _ = open_page(browser, f"{project.server.url}/?t={project.admin}", viewport=LAPTOP)
    expect_text(admin, "Recent server errors")
    text = main_text(admin)
    assert "Rate: submit" in text and "disk-dana" in text and str(project.db) in text, text[:2000]
    assert "is full" in text and "Fix: free space on that disk" in text
    log = project.log.read_text(errors="replace")
    assert "Rate: submit failed for disk-dana" in log and str(project.db) in log and "is full" in log, log[-3000:]
    admin.close()


def test_a_file_turned_read_only_while_served_pauses_rating_in_plain_words(project: Project, browser: Any) -> None:
    page, rec = _rater_page(project, "frozen-fay", browser)
    expect_text(page, "Answer 1 of 4")
    page.keyboard.press("3")
    page.keyboard.press("Control+Enter")
    expect(page.locator(".jl-message")).to_have_text("Label saved")
    wait_ready(page)
    assert _chattr(project, "+i") == 0
    # Any judgelab process asking for the file makes the server let it go (the wait marker); it
    # opens it again for the next unit of work, and finds it cannot write it.
    (project.db.parent / f"{project.db.name}.wait").touch()
    page.keyboard.press("5")
    page.keyboard.press("c")
    page.keyboard.type("Second answer, typed while the file froze.")
    page.keyboard.press("Control+Enter")
    expect_text(page, READ_ONLY, timeout=30_000)
    assert "Second answer, typed while the file froze." in main_text(page)
    assert page.locator(".jl-form").count() == 0
    assert [o for o, _ in _labels(project, "frozen-fay")] == [3.0]
    _no_server_details(project, rec, page)
    page.close()


def _chattr(project: Project, flag: str) -> int:
    codes = [_run("chattr", flag, str(project.db)).returncode]
    wal = project.db.parent / f"{project.db.name}.wal"
    if wal.exists():
        codes.append(_run("chattr", flag, str(wal)).returncode)
    return max(codes)


def test_serve_serves_a_read_only_file_for_reading(project: Project, browser: Any, tmp_path: Path) -> None:
    assert _chattr(project, "+i") == 0
    port = free_port()
    log = tmp_path / "serve.log"
    judgelab = Path(sys.executable).parent / "judgelab"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(judgelab), "serve", "--db", str(project.db), "--port", str(port),
                                 "--address", "127.0.0.1"], cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT)
    server = Server(proc, f"http://127.0.0.1:{port}")
    try:
        wait_healthy(proc, server.url)
        said = log.read_text()
        assert "(read-only)" in said and "raters are told rating is paused" in said, said
        page, rec = open_page(browser, f"{server.url}/?t={project.tokens['paste-pia'][1]}", viewport=LAPTOP)
        expect_text(page, READ_ONLY)
        assert page.locator(".jl-form").count() == 0
        _no_server_details(project, rec, page)
        page.close()
        admin, _ = open_page(browser, f"{server.url}/?t={project.admin}", viewport=LAPTOP)
        expect_text(admin, "is open for reading only")
        assert "Exception" not in main_text(admin)
        admin.close()
        out = tmp_path / "labels.csv"
        done = subprocess.run([str(judgelab), "export", "labels", "--out", str(out), "--db", str(project.db)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and out.stat().st_size > 0, done.stderr
    finally:
        server.stop()
        _chattr(project, "-i")
