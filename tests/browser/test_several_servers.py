"""Three app servers on one PostgreSQL database, sixteen raters in Chromium at once (issue 45, item 3).

One PostgreSQL database holds a pool of answers, each of which must end with exactly ``K``
raters: some dealt out before anyone starts (``assign_k``, what ``judgelab assign --k``
does), the rest pulled by the raters as they finish (pull mode, the project setting
``claim_k``), which is where several servers could race. Three ``judgelab serve`` processes
serve that one URL on three ports; sixteen raters, each in their own browser context, are spread
over them (as sticky sessions behind a load balancer would place them) and rate at once, some by
keys and some by clicks; every fourth goes back and changes a label, one reloads mid-queue, and
one opens their first item on a second server too (another device) and submits it there first.

Then, read from the database:

* every submit a page acknowledged ("Label saved", "Label changed") is stored exactly once, with
  the score given, and nothing is stored that no page acknowledged (acked = stored);
* the second device's submit is stored and the first page's late submit of the same item is
  refused ("Not saved: this item was labelled meanwhile"), not stored over it, across servers;
* no answer has more than ``K`` raters (assignments or current labels), no rater has two
  current labels of one answer, and every answer of the pool ended with exactly ``K`` distinct
  raters;
* the servers kept their PostgreSQL sessions: a handful per server, not one per submit (Streamlit
  runs each script run on a new thread; connections kept per thread opened one every submit);
* nothing identifying reached any page: no family, model or variant, no other rater's name, and
  nothing of the database's URL.

The browsers run on Playwright's async API in a thread of their own: the sync API of the
package's other browser tests keeps an event loop in the main thread.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, LAPTOP, READY, Server, find_all, serve
from tests.conftest import DATA

pytestmark = [pytest.mark.browser, pytest.mark.postgres]

SERVERS = 3
RATERS = 16
K = 2
#: Answers dealt before the start (one per rater at K = 2) and answers left to pull mode.
DEALT, PULLED = 8, 12
#: The rater who opens their first item on two servers (a keyboard rater who neither edits nor reloads).
TWO_DEVICES = 6
#: The prefix of the raters' names: distinctive, so a hit in a page is a real leak.
NAME = "multiserver-rater-"
POSITION = re.compile(r"Answer (\d+) of (\d+)")
FINISHED = "answers are rated"


@dataclass
class Rater:
    """One rater's plan and what their page acknowledged."""

    index: int
    rater_id: int
    token: str
    url: str
    #: Another server's link: the rater's second device (``""``: none).
    other_url: str = ""
    #: ``(queue position, score, "Label saved" | "Label changed")`` for each acknowledged submit.
    acked: list[tuple[int, int, str]] = field(default_factory=list)
    received: list[str] = field(default_factory=list)
    trouble: list[str] = field(default_factory=list)

    @property
    def clicks(self) -> bool:
        """Half the raters use the mouse (score option, Submit button), half the keys."""
        return self.index % 2 == 1

    @property
    def edits(self) -> bool:
        """Every fourth rater goes back after their first label and changes it."""
        return self.index % 4 == 0

    @property
    def reloads(self) -> bool:
        """One rater reloads the page after their first label."""
        return self.index == 3


@pytest.fixture
def database(pg_server: str, tmp_path: Path) -> Iterator[str]:
    """A fresh PostgreSQL database for this test (dropped at the end)."""
    from tests import pg

    url = pg.fresh_database(pg_server)
    yield url
    pg.drop_database(pg_server, url)


def _sessions(url: str) -> int:
    """Sessions the database of ``url`` has accepted so far (ended ones are counted by now)."""
    import psycopg

    with psycopg.connect(url) as con:
        row = con.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()").fetchone()
    assert row is not None
    return int(row[0])


def _build(url: str, tmp_path: Path) -> tuple[Store, list[tuple[int, str]], list[str]]:
    """The bundled rubric and the first DEALT + PULLED answers; the raters; the first DEALT answers dealt.

    Returns the store, each rater's ``(id, token)`` and the pool's answer ids.
    """
    store = Store(url)
    import_file(store, "rubric", DATA / "rubric.toml")
    lines = (DATA / "answers.jsonl").read_text("utf-8").splitlines()[: DEALT + PULLED]
    subset = tmp_path / "answers.jsonl"
    subset.write_text("\n".join(lines) + "\n", "utf-8")
    import_file(store, "answers", subset)
    raters = [store.add_rater(f"{NAME}{i:02d}") for i in range(RATERS)]
    pool = sorted(store.answers(variant="original")["answer_id"])
    assert len(pool) == DEALT + PULLED
    store.assign_k(pool[:DEALT], K, [r.rater_id for r, _ in raters], seed=7)
    store.set_setting("project", "claim_k", str(K))  # pull mode for the rest, as an admin sets it
    return store, [(r.rater_id, token) for r, token in raters], pool


async def _where(page: Any) -> tuple[int, int] | None:
    """The queue position shown and the queue's length; ``None`` on the finished screen."""
    await page.wait_for_function(
        "([pattern, done]) => { const app = document.querySelector(\"[data-testid='stApp']\");"
        " if (!app || app.dataset.testScriptState !== 'notRunning') return false;"
        " const text = document.querySelector(\"[data-testid='stMain']\")?.innerText || '';"
        " return new RegExp(pattern).test(text) || text.includes(done); }",
        arg=[POSITION.pattern, FINISHED], timeout=90_000, polling=50)
    text = await page.get_by_test_id("stMain").inner_text()
    found = POSITION.search(text)
    return None if found is None else (int(found.group(1)), int(found.group(2)))


async def _moved(page: Any, before: tuple[int, int] | None) -> tuple[int, int] | None:
    """Wait until the page shows another position than ``before`` (or the finished screen)."""
    for _ in range(900):
        now = await _where(page)
        if now != before:
            return now
        await asyncio.sleep(0.1)
    raise AssertionError(f"the page stayed on {before} for 90 s")


async def _ack(page: Any) -> str:
    """What the page said about the last submit: at the Submit button, or in the finished screen's toast.

    The form says "Saving…" from the keypress until the server's answer is drawn.
    """
    said = ""
    for _ in range(100):
        for where in (page.locator(".jl-message"), page.get_by_test_id("stToast")):
            if await where.count():
                said = (await where.first.inner_text()).strip()
                if said and not said.startswith("Saving"):
                    return said
        await asyncio.sleep(0.1)
    return said


async def _score(page: Any, rater: Rater, score: int) -> None:
    """Give the overall score: its key, or a click on its option."""
    if rater.clicks:
        option = page.get_by_role("radiogroup", name="Overall score", exact=True).get_by_role(
            "radio", name=str(score), exact=True)
        await option.click(timeout=90_000)
    else:
        await page.keyboard.press(str(score))


async def _submit(page: Any, rater: Rater) -> None:
    """Send the form: Ctrl+Enter, or a click on Submit."""
    if rater.clicks:
        await page.get_by_role("button", name=re.compile("^Submit")).click(timeout=90_000)
    else:
        await page.keyboard.press("Control+Enter")


async def _two_devices(browser: Any, page: Any, rater: Rater, where: tuple[int, int]) -> tuple[int, int] | None:
    """The item on ``page`` submitted from another server first; ``page``'s late submit must be refused.

    Returns where ``page`` stands after it sent the stored label back unchanged.
    """
    context = await browser.new_context(viewport=LAPTOP)
    other = await context.new_page()
    await other.goto(rater.other_url, timeout=120_000)
    await other.wait_for_selector(READY, timeout=120_000)
    assert await _where(other) == where, "the second device resumed elsewhere"
    await other.locator(".jl-buttons button.primary").wait_for(timeout=90_000)
    first, late = 4, 2
    await other.keyboard.press(str(first))
    await other.keyboard.press("Control+Enter")
    await _moved(other, where)
    said = await _ack(other)
    if said.startswith("Label saved"):
        rater.acked.append((where[0], first, "Label saved"))
    else:
        rater.trouble.append(f"second device at {where[0]}: the page said {said!r}")
    await context.close()
    # The first page still shows the item unlabelled: its submit is based on nothing stored.
    await page.locator(".jl-buttons button.primary").wait_for(timeout=90_000)
    await page.keyboard.press(str(late))
    await page.keyboard.press("Control+Enter")
    refusal = page.locator(".jl-message", has_text="Not saved: this item was labelled meanwhile")
    await refusal.first.wait_for(timeout=90_000)
    # The page draws the stored label (the other device's) now; sent unchanged, it stores nothing.
    await page.get_by_text("you rated this one").first.wait_for(timeout=90_000)
    await page.wait_for_selector(READY, timeout=120_000)
    await page.locator(".jl-buttons button.primary").wait_for(timeout=90_000)
    await page.keyboard.press("Control+Enter")
    now = await _moved(page, where)
    said = await _ack(page)
    if not said.startswith("Nothing changed"):
        rater.trouble.append(f"unchanged resend at {where[0]}: the page said {said!r}")
    return now


async def _rate(browser: Any, rater: Rater) -> None:
    """One rater's session: rate until the queue and the pull pool are done, as planned."""
    context = await browser.new_context(viewport=LAPTOP)
    page = await context.new_page()
    frames: list[str] = []

    def on_ws(ws: Any) -> None:
        ws.on("framereceived", lambda payload: frames.append(
            payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else payload))

    page.on("websocket", on_ws)
    await page.goto(rater.url, timeout=120_000)
    await page.wait_for_selector(READY, timeout=120_000)
    where = await _where(page)
    if rater.other_url and where is not None:
        where = await _two_devices(browser, page, rater, where)
    labelled = 0
    while where is not None:
        position = where[0]
        await page.locator(".jl-buttons button.primary").wait_for(timeout=90_000)
        score = 2 + (rater.index + position) % 4
        await _score(page, rater, score)
        await _submit(page, rater)
        where = await _moved(page, where)
        said = await _ack(page)
        if said.startswith("Label saved"):
            rater.acked.append((position, score, "Label saved"))
        else:
            rater.trouble.append(f"submit at {position}: the page said {said!r}")
        labelled += 1
        if rater.reloads and labelled == 1:
            await page.reload()
            await page.wait_for_selector(READY, timeout=120_000)
            where = await _where(page)
        if rater.edits and labelled == 1:
            # Back to the answer just rated (from the next item or the finished screen); a
            # different score replaces its label.
            await page.keyboard.press("b")
            back = await _moved(page, where)
            assert back is not None
            await page.locator(".jl-buttons button.primary").wait_for(timeout=90_000)
            changed = 1 + (rater.index + back[0]) % 4  # never the score given first
            await _score(page, rater, changed)
            await _submit(page, rater)
            where = await _moved(page, back)
            said = await _ack(page)
            if said.startswith("Label changed"):
                rater.acked.append((back[0], changed, "Label changed"))
            else:
                rater.trouble.append(f"edit at {back[0]}: the page said {said!r}")
    rater.received = [*frames, await page.content(), page.url]
    await context.close()


def _crowd(raters: list[Rater]) -> None:
    """All raters at once, in one Chromium (the async API, in this thread's own event loop)."""
    from playwright.async_api import async_playwright

    async def run() -> None:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                await asyncio.gather(*(_rate(browser, r) for r in raters))
            finally:
                await browser.close()

    failed: list[BaseException] = []

    def main() -> None:
        try:
            asyncio.run(run())
        except BaseException as exc:  # re-raised in the test's thread below
            failed.append(exc)

    worker = threading.Thread(target=main)
    worker.start()
    worker.join(timeout=300)
    assert not worker.is_alive(), "the raters did not finish in 300 s"
    if failed:
        raise failed[0]


def test_sixteen_raters_on_three_servers_keep_every_label_and_exactly_k(
    database: str, tmp_path: Path
) -> None:
    store, people, pool = _build(database, tmp_path)
    sessions = _sessions(database)
    with ThreadPoolExecutor(SERVERS) as starting:
        servers: list[Server] = list(starting.map(lambda _: serve(database, cwd=tmp_path), range(SERVERS)))
    try:
        raters = [Rater(i, rid, token, f"{servers[i % SERVERS].url}/?t={token}",
                        f"{servers[(i + 1) % SERVERS].url}/?t={token}" if i == TWO_DEVICES else "")
                  for i, (rid, token) in enumerate(people)]
        _crowd(raters)
    finally:
        for server in servers:
            server.stop()

    assert [t for r in raters for t in r.trouble] == []
    opened = _sessions(database) - sessions
    submits = sum(len(r.acked) for r in raters)
    # A server opens a session only when all of its own are busy: at most one per page it draws at once.
    assert opened <= RATERS + 2 * SERVERS, f"the servers opened {opened} PostgreSQL sessions for {submits} submits"
    # Acked = stored: each acknowledged submit is one row, with its score, at its queue position.
    for r in raters:
        rows = store.query("SELECT label_id, assignment_id, overall, supersedes FROM labels"
                           " WHERE rater_id = ? ORDER BY label_id", [r.rater_id])
        assert len(rows) == len(r.acked), (r.index, r.acked, rows)
        position_of = {q.assignment_id: q.position for q in store.rater_queue(r.rater_id)}
        stored = [(position_of[int(a)], int(o)) for a, o in zip(rows["assignment_id"], rows["overall"], strict=True)]
        assert stored == [(p, s) for p, s, _ in r.acked], r.index
        edits = [said for _, _, said in r.acked if said == "Label changed"]
        assert int(rows["supersedes"].notna().sum()) == len(edits)
        current = store.rater_current_labels(r.rater_id)
        assert {position_of[int(a)]: int(o) for a, o in zip(current["assignment_id"], current["overall"],
                                                               strict=True)} == {p: s for p, s, _ in r.acked}
    assert sum(1 for r in raters for _, _, said in r.acked if said == "Label changed") == RATERS // 4
    assert sum(len(r.acked) for r in raters) == K * len(pool) + RATERS // 4

    # Exactly k: per answer, K assignments, K current labels, from K distinct raters.
    per_answer = store.query(
        "SELECT s.answer_id, count(*) AS held, count(DISTINCT s.rater_id) AS raters,"
        " count(l.label_id) AS labelled, count(DISTINCT l.rater_id) AS label_raters"
        " FROM assignments s LEFT JOIN labels l ON l.assignment_id = s.assignment_id"
        "  AND NOT EXISTS (SELECT 1 FROM labels n WHERE n.supersedes = l.label_id)"
        " WHERE s.kind = 'score' GROUP BY s.answer_id ORDER BY s.answer_id")
    assert sorted(per_answer["answer_id"]) == pool
    for column in ("held", "raters", "labelled", "label_raters"):
        assert per_answer[column].tolist() == [K] * len(pool), (column, per_answer.to_dict("records"))

    # Blind: nothing identifying reached any page.
    answers = store.query("SELECT DISTINCT family, model, variant FROM answers")
    secrets = {str(v) for col in answers.columns for v in answers[col]}
    database_name = database.rsplit("/", 1)[1]
    for r in raters:
        received = "\n".join(r.received).replace(r.token, "")
        assert any("Answer 1 of" in part for part in r.received), "the recorder recorded nothing"
        others = {f"{NAME}{j:02d}" for j in range(RATERS) if j != r.index}
        for secret in sorted(secrets | others | {database_name, "postgresql", "judgelab@"}):
            hits = find_all(secret, received)
            assert not hits, f"{secret!r} reached rater {r.index}'s page: {json.dumps(hits)}"
