"""Blinding and access in a real browser: what a rater's browser receives, and where it may go.

A pool with score items, pairs and a padding audit is served by ``streamlit run
judgelab/app.py``; Debian's chromium (Playwright) walks every rater page and labels
everything on it. All websocket frames and the bodies of the app's own HTTP responses are
recorded and searched for the pool's family, model and variant strings and for another
rater's name and label comment. A rater then types the admin and analyst pages' URLs (taken
from an admin's own menu, so they are the real ones) and gets none of them; a revoked
token stops working at the next rerun; an answer with ``<script>`` renders as text on every
page that shows it.

The browser helpers come from ``test_e2e_rater`` (the recorder that keeps every frame and
body, the readiness waits); the server start-up is copied, because its fixture serves
another pool.
"""

from __future__ import annotations

import json
import re
import secrets
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from judgelab.labeler.store import Store
from tests.app.conftest import SCRIPT_TEXT, build_pool
from tests.browser.conftest import LAPTOP, Demo, find_all, go, menu_titles, playwright_api, serve
from tests.browser.conftest import expect_text as _expect_text
from tests.browser.conftest import open_page as _open
from tests.browser.conftest import wait_ready as _wait

pytestmark = pytest.mark.browser

#: The rater pages, as their menu links read, and what each says when everything is done.
RATER_PAGES = {"Rate": "answers are rated", "Compare": "pairs are compared", "Padding audit": "audits are done"}
#: Each rater page's choice key (score 4 / "A much better" / "yes, it adds"); Ctrl+Enter then submits.
CHOOSE = {"Rate": "4", "Compare": "1", "Padding audit": "y"}
SCRIPT = "<script>alert(1)</script>"


@dataclass
class App:
    """A running app over the pool, and who may use it."""

    url: str
    store: Store
    tokens: dict[str, str]
    names: dict[str, str]
    secrets: list[str]
    bob_comment: str


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    db = tmp_path_factory.mktemp("blind") / "app.duckdb"
    pool = build_pool(db, n_tasks=4)
    store = pool.store
    tag = secrets.token_hex(3)
    names = {who: f"{who}-{tag}" for who in ("alice", "bob", "carol", "boss")}
    made = {who: store.add_rater(name, role="admin" if who == "boss" else "rater")
            for who, name in names.items()}
    ids = {who: r.rater_id for who, (r, _) in made.items()}
    # Alice and Bob share every item, so Bob's labels are of the very answers Alice sees.
    originals = pool.originals[:4]  # includes the answer carrying <script>
    store.assign_k(originals, 2, [ids["alice"], ids["bob"]], seed=1)
    pairs = [(pool.originals[0], pool.originals[1]), (pool.originals[2], pool.originals[3])]
    store.assign_pairs(pairs, [ids["alice"], ids["bob"]])
    store.assign_audits(pool.padded[:2], [ids["alice"], ids["bob"]], k=2)
    store.assign_k(pool.originals[4:6], 1, [ids["carol"]], seed=2)
    comment = f"bob-private-comment-{secrets.token_hex(4)}"
    for item in store.rater_queue(ids["bob"], "score"):
        store.add_label(ids["bob"], item.assignment_id, overall=2,
                        criteria={"correct": 2, "complete": 2, "tone": 2}, comment=comment)
    for item in store.rater_queue(ids["bob"], "pair"):
        store.add_pair_label(ids["bob"], item.assignment_id, -2, comment=comment)
    for item in store.rater_queue(ids["bob"], "audit"):
        store.add_audit(ids["bob"], item.assignment_id, True, note=comment)
    server = serve(db)
    try:
        yield App(server.url, store, {w: t for w, (_, t) in made.items()}, names, pool.secrets(), comment)
    finally:
        server.stop()


def _main_text(page: Any) -> str:
    return str(page.inner_text("[data-testid='stMain']"))


def _assert_blind(received: str, app: App, *, also: tuple[str, ...] = ()) -> None:
    for secret in (*app.secrets, *also):
        hits = [m.start() for m in re.finditer(re.escape(secret), received, re.IGNORECASE)]
        context = [received[max(0, i - 60) : i + 60] for i in hits[:3]]
        assert not hits, f"{secret!r} reached a rater's browser: {json.dumps(context)}"


_go = go


def _label_everything(page: Any, name: str) -> tuple[int, bool]:
    """Submit every item on the open rater page; returns (items done, saw the script answer)."""
    saw_script = False
    for done in range(20):
        text = _main_text(page)
        saw_script = saw_script or SCRIPT in text
        if RATER_PAGES[name] in text:
            return done, saw_script
        page.keyboard.press(CHOOSE[name])
        chosen = page.get_by_role("radiogroup").first.get_by_role("radio", checked=True)
        playwright_api.expect(chosen).to_have_count(1, timeout=10_000)
        page.keyboard.press("Control+Enter")
        found = re.search(r"(\d+) of (\d+) done", text)
        total = int(found.group(2)) if found else 0
        _expect_text(page, f"{min(done + 1, total)} of {total} done" if total else "done")
    raise AssertionError(f"{name}: never reached the end of the queue")


def test_rater_pages_carry_no_pool_or_other_rater_data(app: App, browser: Any) -> None:
    page, rec = _open(browser, f"{app.url}/?t={app.tokens['alice']}")
    _expect_text(page, "Rate")
    titles = menu_titles(page)
    assert set(titles) == set(RATER_PAGES), titles
    scripts = {}
    for name in RATER_PAGES:
        _go(page, name)
        # Bob labelled these very items; Alice's form must start empty, not from his label.
        assert app.bob_comment not in page.content()
        done, scripts[name] = _label_everything(page, name)
        assert done >= 2, f"{name}: only {done} item(s) were on the page"
    assert scripts == dict.fromkeys(RATER_PAGES, True), f"the <script> answer was not on every page: {scripts}"

    # Inert: shown as text, no element made from it, nothing ran.
    page.keyboard.press("b")  # back to the last audit, whose original carries <script>
    _wait(page)
    assert page.locator("[data-testid='stMain'] script").count() == 0
    assert page.locator("[data-testid='stMain'] b").count() == 0
    assert rec.dialogs == []

    received = rec.received(page)
    assert "alert(1)" in "".join(f.decode("utf-8", errors="replace") for f in rec.frames), (
        "the recorder saw no answer text; it would miss a leak too"
    )
    _assert_blind(received, app, also=(app.bob_comment, app.names["bob"], app.names["carol"],
                                       app.names["boss"], app.tokens["bob"]))
    page.close()

    store = app.store
    alice = store.authenticate(app.tokens["alice"]).rater_id
    labels = store.query("SELECT rater_id, comment FROM labels WHERE rater_id = ?", [alice])
    assert len(labels) == 4 and not labels["comment"].str.contains("bob").any()
    assert len(store.query("SELECT 1 FROM pair_labels WHERE rater_id = ?", [alice])) == 2
    assert len(store.query("SELECT 1 FROM padding_audits WHERE rater_id = ?", [alice])) == 2


def _menu_paths(page: Any) -> dict[str, str]:
    """``{link text: URL path}`` of the sidebar menu (the paths ``st.navigation`` serves)."""
    links = page.get_by_test_id("stSidebarNav").locator("a")
    out = {}
    for i in range(links.count()):
        href = links.nth(i).get_attribute("href") or ""
        # The link text is the icon's ligature name, then the title.
        title = links.nth(i).inner_text().strip().splitlines()[-1].strip()
        out[title] = urllib.parse.urlsplit(href).path or "/"
    return out


def test_a_rater_cannot_reach_admin_or_analyst_pages_by_url(app: App, browser: Any) -> None:
    # The real URL paths, from the admin's own menu; an admin sees other raters there.
    page, _ = _open(browser, f"{app.url}/?t={app.tokens['boss']}")
    menu = _menu_paths(page)
    paths = {k: v for k, v in menu.items() if k not in RATER_PAGES}
    assert {"Overview", "Raters"} <= set(paths), menu
    page.close()
    # Positive control: the same URL with an admin's token does deliver other raters' data,
    # so the same search finding nothing for a rater means something.
    page, rec = _open(browser, f"{app.url}{paths['Raters']}?t={app.tokens['boss']}")
    _expect_text(page, "Raters")
    assert app.names["bob"] in rec.received(page)
    page.close()

    # The real paths, their titles as paths, and the page files' names ("/" is the rater's own
    # default page).
    guesses = {*paths.values(), *(f"/{k}" for k in paths), "/admin_overview", "/admin_raters", "/analyst"}
    guesses.discard("/")
    print(f"menu: {menu}; tried: {sorted(guesses)}")
    # Without a token every page is denied at one gate (the entry point, before any page runs):
    # two real admin paths show it; a guess that is no path falls back to the rater's page,
    # which the rater's token tries.
    tokenless = {paths["Overview"], paths["Raters"]}
    for path in sorted(guesses):
        for token in (app.tokens["alice"], None) if path in tokenless else (app.tokens["alice"],):
            page, rec = _open(browser, f"{app.url}{path}" + (f"?t={token}" if token else ""))
            text = _main_text(page)
            if token is None:
                assert "Access denied" in text, f"{path} without a token: {text[:200]!r}"
            else:
                shown = menu_titles(page)
                assert not any(k in shown for k in paths), f"{path}: admin menu shown to a rater"
            _assert_blind(rec.received(page), app,
                          also=(app.names["bob"], app.names["carol"], app.bob_comment))
            page.close()


def test_a_revoked_token_stops_working(app: App, browser: Any) -> None:
    store = app.store
    carol = store.authenticate(app.tokens["carol"]).rater_id
    page, _ = _open(browser, f"{app.url}/?t={app.tokens['carol']}")
    _expect_text(page, "0 of 2 done")
    page.keyboard.press("4")
    _expect_text(page, "Overall: 4")
    store.revoke_rater(app.names["carol"])
    # The open page's next submit is refused before anything is written, and says so.
    page.keyboard.press("Control+Enter")
    _expect_text(page, "Access denied")
    _expect_text(page, "not saved")
    time.sleep(1.5)
    assert store.query("SELECT count(*) AS n FROM labels WHERE rater_id = ?", [carol])["n"].iloc[0] == 0
    # ...and so is a reload, on any page.
    page.reload()
    _wait(page)
    _expect_text(page, "Access denied")
    assert page.get_by_role("button", name=re.compile("Submit")).count() == 0
    page.close()
    page, _ = _open(browser, f"{app.url}/pairwise?t={app.tokens['carol']}")
    _expect_text(page, "Access denied")
    page.close()


#: Makers, model names and self-naming phrases: none may reach a rater's browser.
SELF_NAMING = (
    "OpenAI", "Anthropic", "ChatGPT", "Claude", "GPT", "Gemini", "DeepMind", "Llama", "Mistral",
    "I'm Claude", "I am Claude", "created by", "developed by", "trained by", "as an AI",
    "language model",
)


def test_demo_rater_walks_every_page_and_receives_nothing_that_names_a_model(
    demo: Demo, browser: Any
) -> None:
    # The demo's own rater: the first padding audit is the rewrite that says "As a language
    # model created by OpenAI" twice.
    page, rec = _open(browser, f"{demo.url}/?t={demo.rater_token}", viewport=LAPTOP)
    _expect_text(page, "Rate")
    titles = menu_titles(page)
    assert set(titles) == set(RATER_PAGES), titles
    keys = {"Rate": "4", "Compare": "2", "Padding audit": "n"}
    for name in titles:
        _go(page, name)
        for _ in range(3):
            text = _main_text(page)
            found = re.search(r"(\d+) of (\d+)\*{0,2} done", text)
            assert found, text[:300]
            done, total = int(found.group(1)), int(found.group(2))
            page.keyboard.press(keys[name])
            _wait(page)
            page.keyboard.press("Control+Enter")
            _expect_text(page, f"{done + 1} of {total} done")
    received = rec.received(page).replace(demo.rater_token, "")
    pool = demo.store.query("SELECT DISTINCT family, model, variant FROM answers")
    # "original" names the left side of an audit on purpose; every other variant is a secret.
    secrets_ = {str(v) for col in ("family", "model") for v in pool[col]} | (
        {str(v) for v in pool["variant"]} - {"original"})
    for secret in sorted(secrets_) + list(SELF_NAMING):
        hits = find_all(secret, received)
        assert not hits, f"{secret!r} reached the rater's browser: {json.dumps(hits)}"
    assert rec.outside_requests() == [], rec.outside_requests()
    assert "[redacted]" in received  # the walk did see masked text
    page.close()


def test_script_text_is_the_pool_answer(app: App) -> None:
    # The inert-rendering check above is only meaningful if the pool really carries it.
    assert SCRIPT in SCRIPT_TEXT
    texts = app.store.query("SELECT text FROM answers")["text"].tolist()
    assert SCRIPT_TEXT in texts
