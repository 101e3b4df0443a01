"""The rater's first page, side by side: judgelab, Potato 2.12.1, a plain Flask form, a bare Streamlit app.

Run: ``python bench/first_page.py`` (about four minutes; ``--visits 7`` new visitors per app,
``--submits 10``). ``--only judgelab`` measures judgelab alone (e.g. on an older commit).

Four servers, one at a time, in one run on this machine, each driven by Debian's ``chromium``
through Playwright at 1366x768:

* **judgelab**: ``judgelab demo --no-serve`` builds the project, served with the command line
  ``judgelab serve`` uses (:func:`judgelab.cli.serve.streamlit_command`); the demo rater's link.
* **Potato 2.12.1** (``potato-annotation``), in its own virtual environment
  (``/tmp/potato-venv``, made with ``pip install potato-annotation==2.12.1 flask psutil`` when
  missing): 300 short text items, one 1-5 radio scheme, a login by URL (``?PROLIFIC_PID=``).
* **plain Flask form**: a few lines of Flask (in the same environment): the next item's text,
  five radio buttons and a submit button; the POST keeps the label and redirects to the next.
* **bare Streamlit**: a script of ``st.write(text)`` and one ``st.button`` (the next item on
  click): the floor for anything built on Streamlit, served with judgelab's Streamlit settings.

For each:

* **first page, cold**: the first visitor once the server's health check answers: from
  ``page.goto`` until the item's text and the score control are both visible; and **start ->
  first page**: from starting the server's process to that (the health check's wait included);
* **first page, warm**: the median of ``--visits`` new browser contexts (a new visitor each:
  empty browser cache) after that;
* **submit -> next**: choose a score and submit (judgelab: the digit key, then Ctrl+Enter; the
  others: click the radio, then the button) until the next item's text is visible; median of
  ``--submits``;
* **server RSS** after the runs (the server process and its children; psutil), and what the
  cold first page transferred (requests, bytes on the wire as Chromium counts them).

The table gives each app's figures and their ratios to Potato's and to bare Streamlit's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._measure import machine

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
VIEWPORT = {"width": 1366, "height": 768}
POTATO_VENV = Path("/tmp/potato-venv")
POTATO_VERSION = "2.12.1"
#: How many items the yardsticks serve (short texts, like Potato's own examples).
ITEMS = 300
TIMEOUT_MS = 120_000


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` and its children, in MiB (psutil, else ``/proc``)."""
    try:
        import psutil
    except ImportError:
        kib = 0
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                kib = int(line.split()[1])
        return kib / 1024
    proc = psutil.Process(pid)
    procs = [proc, *proc.children(recursive=True)]
    return sum(p.memory_info().rss for p in procs) / 2**20


def items(n: int = ITEMS) -> list[str]:
    """``n`` short answer texts, each numbered so the next one is told apart."""
    words = ("the", "answer", "explains", "the", "refund", "policy", "and", "asks", "for", "the", "order", "number",
             "politely")
    return [f"Item {i + 1}: " + " ".join(words[(i + j) % len(words)] for j in range(18)) for i in range(n)]


@dataclass
class App:
    """One server to measure and how to drive its rater page."""

    name: str
    command: list[str]
    health: str
    url: Callable[[int], str]  # visitor number -> the address they open
    ready: Callable[[Any], None]  # wait until the item's text and the score control are visible
    submit: Callable[[Any], None]  # choose a score, submit, wait for the next item
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None


@dataclass
class Figures:
    """One app's measurements (milliseconds, MiB, bytes)."""

    name: str
    cold_ms: float = float("nan")
    warm_ms: list[float] = field(default_factory=list)
    submit_ms: list[float] = field(default_factory=list)
    rss_mib: float = float("nan")
    requests: int = 0
    wire_bytes: int = 0
    health_s: float = float("nan")

    @property
    def warm(self) -> float:
        return statistics.median(self.warm_ms) if self.warm_ms else float("nan")

    @property
    def next(self) -> float:
        return statistics.median(self.submit_ms) if self.submit_ms else float("nan")


# -- the apps -------------------------------------------------------------------------------------


def _streamlit_ready(page: Any, text: str, control: str) -> None:
    page.get_by_text(text, exact=False).first.wait_for(state="visible", timeout=TIMEOUT_MS)
    page.locator(control).first.wait_for(state="visible", timeout=TIMEOUT_MS)


def judgelab_app(work: Path) -> App:
    """``judgelab demo``'s project, served as ``judgelab serve`` serves it; the demo rater."""
    from judgelab.cli.serve import streamlit_command

    db = work / "demo.duckdb"
    cli = str(Path(sys.executable).parent / "judgelab")
    out = subprocess.run([cli, "demo", "--no-serve", "--db", str(db)], capture_output=True, text=True,
                         check=True, cwd=work).stdout
    link = next(line.split(" link:", 1)[1].strip() for line in out.splitlines() if line.startswith("rater link:"))
    token = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)["t"][0]
    port = free_port()
    seen = {"position": 0}

    def ready(page: Any) -> None:
        # The position line ("Answer 3 of 40") comes with the item; the score buttons with the form.
        _streamlit_ready(page, "Answer ", "[role=radiogroup] [role=radio]")
        text = page.get_by_text("Answer ", exact=False).first.inner_text()
        seen["position"] = int(text.split("Answer ", 1)[1].split()[0])

    def submit(page: Any) -> None:
        after = f"Answer {seen['position'] + 1} of"
        page.keyboard.press("4")
        page.keyboard.press("Control+Enter")
        page.get_by_text(after, exact=False).first.wait_for(state="visible", timeout=TIMEOUT_MS)
        page.locator("[role=radiogroup] [role=radio]").first.wait_for(state="visible", timeout=TIMEOUT_MS)
        seen["position"] += 1

    return App("judgelab", streamlit_command(db, port, "127.0.0.1"), "/_stcore/health",
               lambda _: f"http://127.0.0.1:{port}/?t={token}", ready, submit,
               env={"JUDGELAB_DB": str(db)}, cwd=work)


BARE_STREAMLIT = '''
import json, sys
import streamlit as st

items = json.load(open(sys.argv[1]))
i = st.session_state.setdefault("i", 0)
st.write(items[i])
if st.button("Next"):
    st.session_state.i = i + 1
    st.rerun()
'''


def streamlit_app(work: Path) -> App:
    """A bare Streamlit script (one text, one button) with judgelab's Streamlit settings."""
    from judgelab.cli.serve import app_settings

    (work / "items.json").write_text(json.dumps(items()))
    script = work / "bare_streamlit.py"
    script.write_text(BARE_STREAMLIT)
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", str(script)]
    settings = {**app_settings(), "server.port": port, "server.address": "127.0.0.1"}
    for key, value in settings.items():
        command += [f"--{key}", ("true" if value else "false") if isinstance(value, bool) else str(value)]
    command += ["--", str(work / "items.json")]
    seen = {"i": 0}

    def ready(page: Any) -> None:
        seen["i"] = 1
        _streamlit_ready(page, "Item 1:", "[data-testid=stButton] button")

    def submit(page: Any) -> None:
        seen["i"] += 1
        page.locator("[data-testid=stButton] button").first.click()
        page.get_by_text(f"Item {seen['i']}:", exact=False).first.wait_for(state="visible", timeout=TIMEOUT_MS)

    return App("bare Streamlit", command, "/_stcore/health", lambda _: f"http://127.0.0.1:{port}/",
               ready, submit, cwd=work)


FLASK_APP = '''
import json, sys
from flask import Flask, redirect, request
from markupsafe import escape

items = json.load(open(sys.argv[1]))
labels = {}
app = Flask(__name__)

@app.get("/health")
def health():
    return "ok"

@app.get("/")
def item():
    user = request.args.get("u", "")
    i = len(labels.setdefault(user, []))
    radios = " ".join(f'<label><input type=radio name=score value={v} required>{v}</label>' for v in range(1, 6))
    return (f"<!doctype html><title>rate</title><p class=text>{escape(items[i])}</p>"
            f'<form method=post action="/?u={escape(user)}">{radios} <button>Submit</button></form>')

@app.post("/")
def submit():
    labels.setdefault(request.args.get("u", ""), []).append(int(request.form["score"]))
    return redirect(f"/?u={request.args.get('u', '')}", code=303)

app.run(host="127.0.0.1", port=int(sys.argv[2]), threaded=True)
'''


def _form_driver(text_at: Callable[[int], str], radio: str, button: str) -> tuple[Callable[[Any], None],
                                                                                   Callable[[Any], None]]:
    """``ready`` and ``submit`` for a form page whose item ``i`` shows ``text_at(i)``."""
    seen = {"i": 0}

    def ready(page: Any) -> None:
        page.get_by_text(text_at(1), exact=False).first.wait_for(state="visible", timeout=TIMEOUT_MS)
        page.locator(radio).first.wait_for(state="visible", timeout=TIMEOUT_MS)
        seen["i"] = 1

    def submit(page: Any) -> None:
        seen["i"] += 1
        page.locator(radio).nth(3).click()
        page.locator(button).first.click()
        page.get_by_text(text_at(seen["i"]), exact=False).first.wait_for(state="visible", timeout=TIMEOUT_MS)
        page.locator(radio).first.wait_for(state="visible", timeout=TIMEOUT_MS)

    return ready, submit


def flask_app(work: Path, python: str) -> App:
    """The plain form: one page per item, five radio buttons, a POST and a redirect."""
    (work / "items.json").write_text(json.dumps(items()))
    (work / "flask_form.py").write_text(FLASK_APP)
    port = free_port()
    ready, submit = _form_driver(lambda i: f"Item {i}:", "input[type=radio]", "form button")
    return App("plain Flask form", [python, str(work / "flask_form.py"), str(work / "items.json"), str(port)],
               "/health", lambda v: f"http://127.0.0.1:{port}/?u=visitor{v}", ready, submit, cwd=work)


POTATO_CONFIG = """
annotation_task_name: first-page bench
task_dir: {task_dir}
output_annotation_dir: {task_dir}/annotation_output/
output_annotation_format: json
data_files:
  - {data}
item_properties:
  id_key: id
  text_key: text
user_config:
  allow_all_users: true
  users: []
login:
  type: url_direct
  url_argument: PROLIFIC_PID
require_password: false
alert_time_each_instance: 10000000
annotation_schemes:
  - annotation_type: radio
    name: score
    description: How good is this answer (1-5)?
    labels: ["1", "2", "3", "4", "5"]
    sequential_key_binding: true
"""


def potato_python() -> str:
    """The Python of :data:`POTATO_VENV`, made (Potato, Flask and psutil installed) when missing."""
    python = POTATO_VENV / "bin" / "python"
    check = [str(python), "-c", "import importlib.metadata as m; print(m.version('potato-annotation'))"]
    if python.exists() and subprocess.run(check, capture_output=True, text=True).stdout.strip() == POTATO_VERSION:
        return str(python)
    print(f"  making {POTATO_VENV} (potato-annotation=={POTATO_VERSION}, flask, psutil): a few minutes, once",
          flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(POTATO_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"potato-annotation=={POTATO_VERSION}", "flask",
                    "psutil"], check=True)
    return str(python)


def potato_app(work: Path, python: str) -> App:
    """Potato on :data:`ITEMS` short texts with one 1-5 radio scheme; each visitor logs in by URL."""
    task = work / "potato"
    task.mkdir()
    data = task / "items.jsonl"
    data.write_text("".join(json.dumps({"id": f"item{i}", "text": t}) + "\n" for i, t in enumerate(items())))
    config = task / "config.yaml"
    config.write_text(POTATO_CONFIG.format(task_dir=task, data=data))
    port = free_port()
    potato = str(Path(python).parent / "potato")
    seen: dict[str, str] = {}

    def ready(page: Any) -> None:
        page.locator("#text-content").filter(has_text="Item ").wait_for(state="visible", timeout=TIMEOUT_MS)
        page.locator("input[type=radio]").first.wait_for(state="visible", timeout=TIMEOUT_MS)
        seen["text"] = page.evaluate("() => document.getElementById('text-content').textContent")

    def submit(page: Any) -> None:
        page.locator("input[type=radio]").nth(3).check()
        page.locator("#next-btn").click()
        page.wait_for_function(
            "t => { const e = document.getElementById('text-content');"
            " return e && e.textContent.trim().startsWith('Item ') && e.textContent !== t; }",
            arg=seen["text"], timeout=TIMEOUT_MS, polling="raf")
        ready(page)

    return App("Potato 2.12.1", [potato, "start", str(config), "-p", str(port)], "/",
               lambda v: f"http://127.0.0.1:{port}/?PROLIFIC_PID=visitor{v}", ready, submit, cwd=task)


# -- measuring ------------------------------------------------------------------------------------


def start(app: App) -> tuple[subprocess.Popen[bytes], float]:
    """Start ``app``'s server; return it and the seconds until its health check answered."""
    base = app.url(0).split("/?")[0].rstrip("/")
    log = open(Path(app.cwd or ".") / f"{app.name.split()[0].lower()}-server.log", "wb")  # noqa: SIM115
    began = time.perf_counter()
    proc = subprocess.Popen(app.command, cwd=app.cwd, env={**os.environ, **app.env}, stdout=log,
                            stderr=subprocess.STDOUT)
    deadline = began + 180
    while time.perf_counter() < deadline:
        try:
            with urllib.request.urlopen(base + app.health, timeout=2) as resp:
                if resp.status < 500:
                    return proc, time.perf_counter() - began
        except OSError:
            if proc.poll() is not None:
                break
        time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{app.name} did not start; see {log.name}")


def visit(browser: Any, app: App, visitor: int, *, count: bool = False) -> tuple[Any, Any, float, int, int]:
    """A new visitor's first page: ``(context, page, ms, requests, bytes)``."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    seen: list[Any] = []
    if count:
        page.on("requestfinished", lambda request: seen.append(request))
    began = time.perf_counter()
    page.goto(app.url(visitor), wait_until="commit", timeout=TIMEOUT_MS)
    app.ready(page)
    ms = 1000 * (time.perf_counter() - began)
    wire = 0
    for request in seen:
        try:
            sizes = request.sizes()
            wire += sizes["responseBodySize"] + sizes["responseHeadersSize"]
        except Exception:  # a request whose sizes Chromium no longer has
            continue
    return context, page, ms, len(seen), wire


def measure(browser: Any, app: App, visits: int, submits: int) -> Figures:
    """One app: a cold first page, ``visits`` warm ones, ``submits`` submits, the server's RSS."""
    fig = Figures(app.name)
    proc, fig.health_s = start(app)
    try:
        context, _, fig.cold_ms, fig.requests, fig.wire_bytes = visit(browser, app, 0, count=True)
        context.close()
        for v in range(1, visits + 1):
            context, _, ms, _, _ = visit(browser, app, v)
            fig.warm_ms.append(ms)
            context.close()
        context, page, _, _, _ = visit(browser, app, visits + 1)
        for _ in range(submits):
            began = time.perf_counter()
            app.submit(page)
            fig.submit_ms.append(1000 * (time.perf_counter() - began))
        context.close()
        fig.rss_mib = rss_mib(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    return fig


def table(figs: list[Figures]) -> str:
    """The figures with their ratios to Potato's and to bare Streamlit's."""
    by = {f.name: f for f in figs}
    potato = next((f for f in figs if f.name.startswith("Potato")), None)
    floor = by.get("bare Streamlit")
    cols = [("start -> first page", lambda f: 1000 * f.health_s + f.cold_ms, "ms"),
            ("first page cold", lambda f: f.cold_ms, "ms"), ("warm (median)", lambda f: f.warm, "ms"),
            ("submit -> next", lambda f: f.next, "ms"), ("server RSS", lambda f: f.rss_mib, "MiB")]
    lines = [f"{'':18}" + "".join(f"{c:>34}" for c, _, _ in cols)]
    for f in figs:
        row = f"{f.name:18}"
        for _, get, unit in cols:
            value = get(f)
            ratios = []
            for label, ref in (("P", potato), ("S", floor)):
                if ref is not None and ref is not f:
                    ratios.append(f"{value / get(ref):.2f}x{label}")
            row += f"{f'{value:.0f} {unit}':>12}" + f"{' '.join(ratios):>22}"
        lines.append(row)
    lines.append("  xP: ratio to Potato's figure; xS: ratio to the bare Streamlit app's.")
    for f in figs:
        lines.append(f"  {f.name}: health check after {f.health_s:.1f} s; the cold first page made {f.requests} "
                     f"requests, {f.wire_bytes / 2**10:.0f} KiB on the wire; warm visits "
                     + ", ".join(f"{ms:.0f}" for ms in f.warm_ms) + " ms; submits "
                     + ", ".join(f"{ms:.0f}" for ms in f.submit_ms) + " ms")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--visits", type=int, default=7, help="warm first pages (new browser contexts) per app")
    parser.add_argument("--submits", type=int, default=10, help="submits per app")
    parser.add_argument("--only", choices=("judgelab", "potato", "flask", "streamlit"), action="append",
                        help="measure only these apps (repeatable)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    chosen = args.only or ["judgelab", "potato", "flask", "streamlit"]
    print(f"first rater page in Chromium {VIEWPORT['width']}x{VIEWPORT['height']} · {args.visits} warm visits · "
          f"{args.submits} submits · {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"  {machine()}")
    other = potato_python() if {"potato", "flask"} & set(chosen) else ""
    figs: list[Figures] = []
    with tempfile.TemporaryDirectory(prefix="judgelab-first-page-") as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        makers: dict[str, Callable[[Path], App]] = {
            "judgelab": judgelab_app,
            "potato": lambda w: potato_app(w, other),
            "flask": lambda w: flask_app(w, other),
            "streamlit": streamlit_app,
        }
        for name in chosen:
            work = Path(tmp) / name
            work.mkdir()
            fig = measure(browser, makers[name](work), args.visits, args.submits)
            print(f"  {fig.name}: cold {fig.cold_ms:.0f} ms, warm {fig.warm:.0f} ms, next {fig.next:.0f} ms, "
                  f"RSS {fig.rss_mib:.0f} MiB", flush=True)
            figs.append(fig)
        browser.close()
    print(table(figs))


if __name__ == "__main__":
    main()
