"""The rater page in a real browser: key -> feedback, submit -> next item, first load, server CPU.

Run: ``python bench/browser_roundtrip.py`` (about two minutes; needs Debian's ``chromium`` and
the ``dev`` extra's Playwright). ``--submits`` sets how many labels are submitted (at least 50);
``--rounds N`` measures both apps N times, interleaved (who goes first alternates), and pools
the submits: a p95 of 60 submits is about their third-largest time, so one run's p95 moves by
several milliseconds from run to run.

What is measured, in Chromium at 1366x768 through Playwright, on a pool of the bundled answers
served with the command line ``judgelab serve`` uses:

* **key -> feedback**: from the ``keydown`` of a score key to the page showing the chosen
  score (``Overall: 4``), timed inside the page (``performance.now()``), and how many
  websocket messages the browser sent to the server in between (0 = no server round trip);
* **submit -> next item**: from the ``keydown`` of Ctrl+Enter to the next item's position
  (``Answer 7 of 80``) being on the page;
* **first load**: from navigation start to the first item's position being on the page;
* **server CPU per submit**: user + system time of the Streamlit server process, read from
  ``/proc/<pid>/stat``, over each submit (Ctrl+Enter until the page is idle again), and over
  each score key likewise.

With ``--raters 1,4,8`` it measures a crowd instead (:func:`crowd`): on the demo database
(``judgelab demo``: judge runs, so the Calibration page has work to do), N raters at once,
each in their own browser context, label ``--items`` answers with the keyboard; every
fourth item the rater does not wait, pressing the next score and Ctrl+Enter while the
submit is on its way (the keys are queued). ``--admin`` adds an admin reloading the
Calibration page throughout (each reload recomputes: the labels keep changing), and
``--import-running`` a ``judgelab import answers`` of fresh answers in a loop. For each N
it prints submit -> next item p50/p95 (the waited submits) and keys pressed against keys
acted on, read back from the database: a score key is acted on when the stored label of
its item has that score, Ctrl+Enter when the item has a label; anything else is lost.

The baseline, in the same run on the same machine, is a plain form app: one Flask page per
item with the same fields, the score keys handled by a few lines of JavaScript, and a POST
that writes the label to SQLite and redirects to the next item. Flask is installed into this
environment with pip when it is missing (it is not a judgelab dependency); ``--no-baseline``
skips it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from bench._measure import machine, percentiles
from judgelab.labeler.examples import example_path

CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1366, "height": 768}
READY = "[data-testid='stApp'][data-test-script-state='notRunning']"
TICK = os.sysconf("SC_CLK_TCK")

#: Runs in every document before its own scripts: arms a timer on the next keydown and
#: records when a target text first appears (shadow roots included). State lives in
#: sessionStorage so it survives the baseline's page loads; times are absolute
#: (timeOrigin + now) so they compare across documents.
WATCH_JS = r"""
(() => {
  const now = () => performance.timeOrigin + performance.now();
  const get = () => JSON.parse(sessionStorage.getItem('bench') || '{}');
  const put = (s) => sessionStorage.setItem('bench', JSON.stringify(s));
  // The first document starts the first-load clock at navigation start.
  if (!sessionStorage.getItem('bench')) put({target: __FIRST__, t0: performance.timeOrigin, t1: null});
  window.__benchArm = (target) => put({target, t0: null, t1: null, armed: true});
  window.__benchRead = () => get();
  window.addEventListener('keydown', () => {
    const s = get();
    if (s.armed) { s.t0 = now(); s.armed = false; put(s); }
  }, true);
  const text = () => {
    let out = document.body ? document.body.textContent : '';
    for (const el of document.querySelectorAll('*')) {
      if (el.shadowRoot) out += el.shadowRoot.textContent;
    }
    return out;
  };
  const tick = () => {
    const s = get();
    if (s.target && s.t1 === null && s.t0 !== null && text().includes(s.target)) {
      s.t1 = now(); put(s);
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})();
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


@dataclass
class Figures:
    """One app's measurements."""

    name: str
    first_load_ms: float = float("nan")
    key_ms: list[float] = field(default_factory=list)
    key_frames: list[int] = field(default_factory=list)
    submit_ms: list[float] = field(default_factory=list)
    key_cpu_ms: list[float] = field(default_factory=list)
    submit_cpu_ms: list[float] = field(default_factory=list)

    def lines(self) -> list[str]:
        k50, k95 = percentiles(self.key_ms)
        s50, s95 = percentiles(self.submit_ms)
        frames = sum(self.key_frames) / max(len(self.key_frames), 1)
        kc = sum(self.key_cpu_ms) / max(len(self.key_cpu_ms), 1)
        sc = sum(self.submit_cpu_ms) / max(len(self.submit_cpu_ms), 1)
        return [
            f"{self.name}",
            f"  first load                {self.first_load_ms:7.0f} ms",
            f"  key -> feedback     p50 {k50:7.0f} ms  p95 {k95:7.0f} ms  "
            f"({frames:.1f} messages to the server per key; server CPU {kc:.0f} ms per key)",
            f"  submit -> next item p50 {s50:7.0f} ms  p95 {s95:7.0f} ms  "
            f"(server CPU {sc:.0f} ms per submit, {len(self.submit_ms)} submits)",
        ]


# -- the two apps ---------------------------------------------------------------------------


def build_pool(db: Path, n: int) -> str:
    """The bundled rubric and answers, one rater with ``n`` of them assigned; returns the token."""
    from judgelab.labeler.importers import import_file
    from judgelab.labeler.store import Store

    store = Store(db)
    import_file(store, "rubric", example_path("rubric.toml"))
    import_file(store, "answers", example_path("answers.jsonl"))
    rater, token = store.add_rater("bench-rater")
    answers = store.answers(variant="original")["answer_id"].tolist()[:n]
    store.assign_k(answers, 1, [rater.rater_id], seed=0)
    return token


def start(command: list[str], url: str, env: dict[str, str], cwd: Path, health: str) -> subprocess.Popen[bytes]:
    """Start a server and wait until ``url + health`` answers."""
    import urllib.request

    proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + health, timeout=2):
                return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"server exited: {command}") from None
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"server did not start: {command}")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- measuring ----------------------------------------------------------------------------------


def timed(page: Any, target: str, action: Callable[[], None], idle: Callable[[], None],
          pid: int, sent: list[int]) -> tuple[float, int, float]:
    """``(ms from keydown to target shown, messages sent, server CPU ms)`` of one ``action``."""
    page.evaluate("t => window.__benchArm(t)", target)
    before_cpu, before_sent = cpu_seconds(pid), len(sent)
    action()
    page.wait_for_function("t => { const s = window.__benchRead(); return s.t1 !== null && s.target === t; }",
                           arg=target, timeout=60_000, polling=50)
    idle()
    state = page.evaluate("() => window.__benchRead()")
    return (float(state["t1"]) - float(state["t0"]), len(sent) - before_sent,
            1000 * (cpu_seconds(pid) - before_cpu))


def drive(browser: Any, fig: Figures, url: str, pid: int, n: int, total: int,
          idle: Callable[[Any], None]) -> None:
    """Label ``n`` items with the keyboard: a score key, then Ctrl+Enter, timing both."""
    page = browser.new_page(viewport=VIEWPORT)
    page.add_init_script(WATCH_JS.replace("__FIRST__", json.dumps(f"Answer 1 of {total}")))
    sent: list[int] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda _: sent.append(1)))
    page.goto(url)
    page.wait_for_function("() => window.__benchRead().t1 !== null", timeout=90_000, polling=50)
    first = page.evaluate("() => window.__benchRead()")
    fig.first_load_ms = float(first["t1"]) - float(first["t0"])
    idle(page)
    time.sleep(0.5)
    for i in range(1, n + 1):
        score = 4 if i % 2 else 3
        ms, frames, cpu = timed(page, f"Overall: {score}", lambda s=score: page.keyboard.press(str(s)),
                                lambda: idle(page), pid, sent)
        fig.key_ms.append(ms)
        fig.key_frames.append(frames)
        fig.key_cpu_ms.append(cpu)
        ms, _, cpu = timed(page, f"Answer {i + 1} of {total}", lambda: page.keyboard.press("Control+Enter"),
                           lambda: idle(page), pid, sent)
        fig.submit_ms.append(ms)
        fig.submit_cpu_ms.append(cpu)
    page.close()


def streamlit_idle(page: Any) -> None:
    page.wait_for_selector(READY, timeout=60_000)


def measure_judgelab(browser: Any, work: Path, n: int, token: str) -> Figures:
    """Label ``n`` items in the app served on ``work``'s pool (built by :func:`build_pool`)."""
    from judgelab.cli.serve import streamlit_command

    db = work / "bench.duckdb"
    total = n + 5
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start(streamlit_command(db, port, "127.0.0.1"), url,
                 {**os.environ, "JUDGELAB_DB": str(db)}, work, "/_stcore/health")
    try:
        fig = Figures("judgelab (Streamlit)")
        drive(browser, fig, f"{url}/?t={token}", proc.pid, n, total, streamlit_idle)
        return fig
    finally:
        proc.terminate()
        proc.wait(timeout=15)


FLASK_APP = r'''
import json, sqlite3, sys
from flask import Flask, redirect, request
from markupsafe import escape

items = json.load(open(sys.argv[1]))
criteria = json.load(open(sys.argv[2]))
db = sqlite3.connect(sys.argv[3], check_same_thread=False)
db.execute("CREATE TABLE IF NOT EXISTS labels (item INTEGER, overall INTEGER, criteria TEXT, comment TEXT)")
app = Flask(__name__)
JS = """
document.addEventListener('keydown', (e) => {
  const typing = e.target.tagName === 'TEXTAREA';
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); document.forms[0].submit(); return; }
  if (typing || !/^[1-5]$/.test(e.key)) return;
  document.querySelector('input[name=overall][value="' + e.key + '"]').checked = true;
  for (const c of document.querySelectorAll('.crit')) c.querySelector('input[value="' + e.key + '"]').checked = true;
  document.getElementById('shown').textContent = 'Overall: ' + e.key;
});
"""

def radios(name):
    return " ".join(f'<label><input type=radio name="{name}" value={v}>{v}</label>' for v in range(1, 6))

@app.get("/health")
def health():
    return "ok"

@app.get("/item/<int:i>")
def item(i):
    if i >= len(items):
        return "All done."
    prompt, text = items[i]
    crits = "".join(f'<div class=crit><b>{escape(c)}</b> {radios("c_" + c)}</div>' for c in criteria)
    return (f"<!doctype html><title>rate</title><p>Answer {i + 1} of {len(items)}</p>"
            f"<h3>Task</h3><p>{escape(prompt)}</p><h3>Answer</h3><p>{escape(text)}</p>"
            f'<form method=post action="/item/{i}"><div>{radios("overall")}</div>{crits}'
            f'<p id=shown>Overall: not given yet</p><textarea name=comment></textarea>'
            f"<button>Submit</button></form><script>{JS}</script>")

@app.post("/item/<int:i>")
def submit(i):
    form = request.form
    db.execute("INSERT INTO labels VALUES (?, ?, ?, ?)",
               [i, int(form["overall"]), json.dumps({c: form.get("c_" + c) for c in criteria}),
                form.get("comment", "")])
    db.commit()
    return redirect(f"/item/{i + 1}", code=303)

app.run(host="127.0.0.1", port=int(sys.argv[4]), threaded=True)
'''


def flask_python() -> str | None:
    """A Python with Flask: this one, after ``pip install flask`` if needed; ``None`` if that fails."""
    try:
        import flask  # noqa: F401
    except ImportError:
        print("  installing flask for the baseline (not a judgelab dependency)...")
        done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "flask"], capture_output=True)
        if done.returncode != 0:
            return None
    return sys.executable


def measure_flask(browser: Any, work: Path, n: int) -> Figures | None:
    python = flask_python()
    if python is None:
        print("  flask could not be installed: baseline skipped")
        return None
    from judgelab.labeler.store import Store

    store = Store(work / "bench.duckdb")
    rows = store.query("SELECT t.prompt, a.text FROM answers a JOIN tasks t USING (task_id)"
                       " WHERE a.variant = 'original' ORDER BY a.answer_id LIMIT ?", [n + 5])
    rubric = store.rubric()
    assert rubric is not None
    (work / "items.json").write_text(json.dumps(rows.values.tolist()))
    (work / "criteria.json").write_text(json.dumps([c.criterion_id for c in rubric.criteria]))
    (work / "flask_app.py").write_text(FLASK_APP)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start([python, str(work / "flask_app.py"), str(work / "items.json"), str(work / "criteria.json"),
                  str(work / "flask.sqlite"), str(port)], url, dict(os.environ), work, "/health")
    try:
        fig = Figures("baseline: plain Flask form app")
        drive(browser, fig, f"{url}/item/0", proc.pid, n, len(rows),
              lambda page: page.wait_for_load_state("load"))
        return fig
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def pooled(rounds: list[Figures]) -> Figures:
    """One app's rounds as one set of measurements (first load: the median round's)."""
    out = Figures(rounds[0].name)
    out.first_load_ms = float(np.median([f.first_load_ms for f in rounds]))
    for f in rounds:
        out.key_ms += f.key_ms
        out.key_frames += f.key_frames
        out.submit_ms += f.submit_ms
        out.key_cpu_ms += f.key_cpu_ms
        out.submit_cpu_ms += f.submit_cpu_ms
    return out


# -- a crowd of raters ---------------------------------------------------------------------------


@dataclass
class Crowd:
    """One crowd run's figures."""

    raters: int
    submit_ms: list[float] = field(default_factory=list)
    pressed: int = 0
    acted: int = 0
    refusals: list[str] = field(default_factory=list)
    stalls: list[str] = field(default_factory=list)
    admin_loads: int = 0
    imports: int = 0

    def line(self) -> str:
        s50, s95 = percentiles(self.submit_ms)
        extra = (f" · admin reloads {self.admin_loads}" if self.admin_loads else "") + (
            f" · imports {self.imports}" if self.imports else "")
        return (f"  N = {self.raters}: submit -> next item p50 {s50:5.0f} ms  p95 {s95:5.0f} ms"
                f" ({len(self.submit_ms)} submits) · keys pressed {self.pressed}, acted on {self.acted},"
                f" lost {self.pressed - self.acted} · refusals shown {len(self.refusals)}"
                f" · stalls {len(self.stalls)}{extra}")


def crowd_pool(db: Path, n: int, items: int) -> tuple[list[tuple[int, str]], str]:
    """The demo database with ``n`` bench raters holding at least ``items`` answers each.

    Returns each rater's ``(id, token)`` and the admin's token.
    """
    import math
    import urllib.parse

    from judgelab.labeler.store import Store

    judgelab_cli = str(Path(sys.executable).parent / "judgelab")
    out = subprocess.run([judgelab_cli, "demo", "--no-serve", "--db", str(db)], capture_output=True,
                         text=True, check=True, cwd=db.parent).stdout
    admin_link = next(line.split(" link:", 1)[1].strip() for line in out.splitlines() if line.startswith("admin link:"))
    admin = urllib.parse.parse_qs(urllib.parse.urlsplit(admin_link).query)["t"][0]
    store = Store(db)
    raters = [store.add_rater(f"bench-{i}") for i in range(n)]
    answers = store.answers(variant="original")["answer_id"].tolist()
    k = min(n, math.ceil(n * items / len(answers)) + 1)
    store.assign_k(answers, k, [r.rater_id for r, _ in raters], seed=0)
    for r, _ in raters:
        if len(store.rater_queue(r.rater_id)) < items:
            raise SystemExit(f"a bench rater got fewer than {items} answers: use fewer --items")
    return [(r.rater_id, token) for r, token in raters], admin


async def _rater(browser: Any, url: str, total: int, items: int, seed: int, fig: Crowd,
                 plan: dict[int, int]) -> None:
    """One rater: ``items`` labels by keyboard, every fourth pair pressed in one breath."""
    import asyncio
    import random

    rng = random.Random(seed)
    context = await browser.new_context(viewport=VIEWPORT)
    page = await context.new_page()
    await page.add_init_script(WATCH_JS.replace("__FIRST__", json.dumps(f"Answer 1 of {total}")))
    await page.goto(url)
    await page.wait_for_function("() => window.__benchRead().t1 !== null", timeout=120_000, polling=50)
    # The first key once the form is drawn, as a person would: before its script has loaded
    # (seconds after the text under load) no key can reach it.
    await page.locator(".jl-buttons button.primary").wait_for(timeout=120_000)
    message = page.locator(".jl-message.error")
    shown = "t => { const s = window.__benchRead(); return s.t1 !== null && s.target === t; }"

    def target(position: int) -> str:
        return f"Answer {position} of {total}" if position <= total else "answers are rated"

    async def arrive(position: int) -> bool:
        try:
            await page.wait_for_function(shown, arg=target(position), timeout=60_000, polling=50)
        except Exception:
            form = page.locator(".jl-message")
            said = await form.first.inner_text() if await form.count() else ""
            main = (await page.get_by_test_id("stMain").inner_text())[:200].replace("\n", " / ")
            fig.stalls.append(f"rater {seed}: {target(position)!r} never came; the form says {said!r};"
                              f" the page shows {main!r}")
            return False
        if await message.count():
            fig.refusals.append(await message.first.inner_text())
        return True

    i = 1
    while i <= items:
        await asyncio.sleep(rng.uniform(0.1, 0.4))  # a hurried rater's reading time
        score = rng.choice("2345")
        plan[i] = int(score)
        hurried = i % 4 == 0 and i < items
        await page.keyboard.press(score)
        fig.pressed += 2
        if hurried:
            second = rng.choice("2345")
            plan[i + 1] = int(second)
            await page.evaluate("t => window.__benchArm(t)", target(i + 2))
            for key in ("Control+Enter", second, "Control+Enter"):
                await page.keyboard.press(key)
            fig.pressed += 2
            if not await arrive(i + 2):
                break
            i += 2
            continue
        await page.evaluate("t => window.__benchArm(t)", target(i + 1))
        await page.keyboard.press("Control+Enter")
        if not await arrive(i + 1):
            break
        state = await page.evaluate("() => window.__benchRead()")
        fig.submit_ms.append(float(state["t1"]) - float(state["t0"]))
        i += 1
    await context.close()


async def _admin(browser: Any, url: str, stop: Any, fig: Crowd, title: str = "Calibration") -> None:
    """An admin on the page ``title`` (Calibration, Agreement), reloading it until ``stop`` is set."""
    context = await browser.new_context(viewport=VIEWPORT)
    page = await context.new_page()
    await page.goto(url)
    await page.get_by_role("link", name=title).click(timeout=120_000)
    while True:
        await page.get_by_test_id("stMain").get_by_role("heading", name=title).wait_for(timeout=120_000)
        await page.wait_for_selector(READY, timeout=120_000)
        fig.admin_loads += 1
        if stop.is_set():
            break
        await page.reload()
    await context.close()


def _importer(db: Path, work: Path, stop: Any, fig: Crowd) -> None:
    """``judgelab import answers`` of 140 fresh answers (new ids), again and again, until ``stop``."""
    judgelab_cli = str(Path(sys.executable).parent / "judgelab")
    rows = [json.loads(line) for line in example_path("answers.jsonl").read_text().splitlines() if line.strip()]
    while not stop.is_set():
        batch = work / f"import-{fig.imports}.jsonl"
        batch.write_text("".join(json.dumps({**r, "answer_id": f"{r['answer_id']}-bench{fig.imports}"}) + "\n"
                                 for r in rows))
        done = subprocess.run([judgelab_cli, "import", "answers", str(batch), "--db", str(db)],
                              capture_output=True, text=True, cwd=work)
        if done.returncode != 0:
            raise SystemExit(f"the import failed:\n{done.stdout}{done.stderr}")
        fig.imports += 1


def crowd(n: int, items: int, *, admin: bool, importing: bool, admin_page: str = "Calibration") -> Crowd:
    """N raters at once on one served demo database (see the module's docstring)."""
    import asyncio
    import threading

    from playwright.async_api import async_playwright

    from judgelab.cli.serve import streamlit_command
    from judgelab.labeler.store import Store

    fig = Crowd(n)
    with tempfile.TemporaryDirectory(prefix="judgelab-crowd-bench-") as tmp:
        work = Path(tmp)
        db = work / "crowd.duckdb"
        raters, admin_token = crowd_pool(db, n, items)
        totals = {rid: len(Store(db).rater_queue(rid)) for rid, _ in raters}
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start(streamlit_command(db, port, "127.0.0.1"), url, {**os.environ, "JUDGELAB_DB": str(db)},
                     work, "/_stcore/health")
        plans: dict[int, dict[int, int]] = {rid: {} for rid, _ in raters}
        stop = threading.Event()
        importer = threading.Thread(target=_importer, args=(db, work, stop, fig), daemon=True)

        async def run() -> None:
            astop = asyncio.Event()
            async with async_playwright() as p:
                browser = await p.chromium.launch(
                    executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
                side = ([asyncio.create_task(_admin(browser, f"{url}/?t={admin_token}", astop, fig, admin_page))]
                        if admin else [])
                if importing:
                    importer.start()
                await asyncio.gather(*[
                    _rater(browser, f"{url}/?t={token}", totals[rid], items, seed, fig, plans[rid])
                    for seed, (rid, token) in enumerate(raters)])
                astop.set()
                stop.set()
                await asyncio.gather(*side)
                await browser.close()

        try:
            asyncio.run(run())
        finally:
            stop.set()
            proc.terminate()
            proc.wait(timeout=15)
        if importing:
            importer.join(timeout=120)
        store = Store(db)
        for rid, _ in raters:
            labels = store.rater_current_labels(rid)
            queue = {q.assignment_id: q.position for q in store.rater_queue(rid)}
            stored = {queue[int(a)]: float(o) for a, o in zip(labels["assignment_id"], labels["overall"], strict=True)}
            for position, score in plans[rid].items():
                fig.acted += (position in stored) + (stored.get(position) == score)
    return fig


def main_crowd(args: argparse.Namespace) -> None:
    """``--raters``: the crowd mode, once per N."""
    sizes = [int(x) for x in str(args.raters).split(",")]
    print(f"raters at once in Chromium {VIEWPORT['width']}x{VIEWPORT['height']} · {args.items} labels each"
          + (f" · an admin reloading {args.admin_page}" if args.admin else "")
          + (" · an import running" if args.import_running else ""))
    print(f"  {machine()}")
    for n in sizes:
        fig = crowd(n, args.items, admin=args.admin, importing=args.import_running, admin_page=args.admin_page)
        print(fig.line(), flush=True)
        for what in sorted(set(fig.refusals))[:5]:
            print(f"    refusal shown: {what!r}")
        for what in fig.stalls[:5]:
            print(f"    stall: {what}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--submits", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure both apps this many times, interleaved (the first app alternates)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the Flask baseline")
    parser.add_argument("--raters", help="crowd mode: comma-separated numbers of raters at once (e.g. 1,4,8)")
    parser.add_argument("--items", type=int, default=20, help="crowd mode: labels per rater")
    parser.add_argument("--admin", action="store_true", help="crowd mode: an admin reloads Calibration meanwhile")
    parser.add_argument("--admin-page", default="Calibration", choices=("Calibration", "Agreement"),
                        help="crowd mode: the page the admin reloads")
    parser.add_argument("--import-running", action="store_true",
                        help="crowd mode: `judgelab import answers` runs in a loop meanwhile")
    args = parser.parse_args()
    if args.raters:
        main_crowd(args)
        return
    if args.submits < 50:
        parser.error("--submits must be at least 50")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    from playwright.sync_api import sync_playwright

    print(f"rater page in Chromium {VIEWPORT['width']}x{VIEWPORT['height']} · {args.submits} submits"
          + (f" · {args.rounds} interleaved rounds" if args.rounds > 1 else ""))
    print(f"  {machine()}")
    apps: dict[str, list[Figures]] = {}
    with tempfile.TemporaryDirectory(prefix="judgelab-browser-bench-") as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        for r in range(args.rounds):
            work = Path(tmp) / f"round{r + 1}"
            work.mkdir()
            token = build_pool(work / "bench.duckdb", args.submits + 5)
            runs: list[Callable[[], Figures | None]] = [
                partial(measure_judgelab, browser, work, args.submits, token)]
            if not args.no_baseline:
                runs.append(partial(measure_flask, browser, work, args.submits))
            for run in runs[::-1] if r % 2 else runs:  # who goes first alternates
                fig = run()
                if fig is not None:
                    apps.setdefault(fig.name, []).append(fig)
            if args.rounds > 1:
                print(f"  round {r + 1}: " + " · ".join(
                    "{} p50 {:.0f} / p95 {:.0f} ms".format(figs[-1].name.split()[0], *percentiles(figs[-1].submit_ms))
                    for figs in apps.values()))
        browser.close()
    for figs in apps.values():
        print("\n".join(pooled(figs).lines()))


if __name__ == "__main__":
    main()
