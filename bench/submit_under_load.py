"""A rater's submit while an admin opens Calibration, and while a CLI import runs (issue 29 item 6).

Run: ``python bench/submit_under_load.py`` (a few minutes; the database is built once and kept in
``--workdir``).

Each scenario runs in a fresh child process standing in for the app server: ``--raters`` rater
threads submit as the Rate page does (check the token, store the label, read the next screen,
:meth:`~judgelab.labeler.store.Store.screen`) with a short pause between submits, for ``--seconds``; the
store is opened as the server opens it (``idle_release`` of :data:`judgelab.session.APP_IDLE_RELEASE`).
Alongside them, in the same process or beside it:

* **alone**: nothing else;
* **Calibration, old page**: an admin thread building the Calibration report in the server
  process, as the page did before (``calibrate(store, ...)``: load, then seconds of bootstrap
  under the GIL), over and over with a new seed each time (no cached result);
* **Calibration, now**: the same through :func:`judgelab.admin.calibration_report` (a snapshot
  read through the store, the report built in the worker process), a new seed each time;
* **Agreement, old page** and **Agreement, now**: the same for the Agreement page's figures
  (``agreement_report`` in the server process, as the page did before; then
  :func:`judgelab.admin.agreement_kept`, whose bootstraps run in the worker process);
* **import running**: ``judgelab import answers`` of ``--import-size`` new answers in a separate
  process, one import after another.

A submit's latency is from the click's arrival (token check) to the next item ready; Streamlit's
rendering and the network are not included (``bench/browser_roundtrip.py`` measures those).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._measure import REPO, WORKDIR, built_once, child, emit, machine, percentiles
from bench.calibrate_scale import build as build_calibrated
from judgelab.labeler.store import Store

TOKENS_ENV = "JUDGELAB_BENCH_TOKENS"
SCENARIOS = ("alone", "calibration-old", "calibration-now", "agreement-old", "agreement-now", "import")
CRITERIA = {"correct": 4.0, "complete": 4.0}


def build(path: Path, *, labels: int, raters: int) -> None:
    """The calibrate bench's project (answers, simulated labels, a judge run) plus raters with queues."""
    build_calibrated(path, labels=labels)
    store = Store(path)
    answers = list(store.query("SELECT answer_id FROM answers ORDER BY answer_id")["answer_id"])
    ids = [r.rater_id for r, _ in (store.add_rater(f"load-rater-{i:02d}") for i in range(raters))]
    store.assign_k(answers, 1, ids, seed=1)


def _rater(store: Store, token: str, stop: threading.Event, out: list[float], pause: float) -> None:
    rater = store.authenticate(token)
    screen = store.screen(rater.rater_id, "score", None)
    pace = random.Random(token)
    while not stop.is_set() and screen.index is not None:
        time.sleep(pace.uniform(0.5, 1.5) * pause)
        item = screen.queue[screen.index]
        start = time.perf_counter()
        rater = store.authenticate(token)
        store.add_label(rater.rater_id, item.assignment_id, overall=4, criteria=CRITERIA)
        screen = store.screen(rater.rater_id, "score", None)
        out.append(time.perf_counter() - start)


def _admin(store: Store, scenario: str, stop: threading.Event, done: list[float]) -> None:
    from judgelab.admin import KEPT, agreement_kept, agreement_report, calibration_report, warm_worker
    from judgelab.calibration.calibrate import calibrate

    run_id = store.latest_scored_run()
    assert run_id is not None
    rubric = store.rubric()
    assert rubric is not None
    if scenario.endswith("-now"):
        warm_worker()
    seed = 0
    while not stop.is_set():
        seed += 1
        start = time.perf_counter()
        if scenario == "calibration-old":
            calibrate(store, run_id, n_resamples=1000, seed=seed)
        elif scenario == "agreement-old":
            agreement_report(store, rubric.rubric_id, rubric.version, seed=seed)
        elif scenario == "agreement-now":
            KEPT.clear()
            agreement_kept(store, rubric.rubric_id, rubric.version, seed=seed)
        else:
            KEPT.clear()
            calibration_report(store, run_id, n_resamples=1000, seed=seed)
        done.append(time.perf_counter() - start)


def _imports(db: str, size: int, stop: threading.Event, done: list[float]) -> None:
    """``judgelab import answers`` of ``size`` new answers, one after another, until stopped."""
    rounds = 0
    folder = Path(db).parent / "imports"
    folder.mkdir(exist_ok=True)
    while not stop.is_set():
        rounds += 1
        stamp = f"{os.getpid()}-{rounds}-{time.time_ns()}"
        file = folder / f"answers-{stamp}.jsonl"
        file.write_text("".join(
            json.dumps({"task_id": f"imp-{stamp}-{i // 2}", "prompt": f"Ticket {i // 2}: a refund is late.",
                        "answer_id": f"imp-{stamp}-{i}", "family": ("claude", "othermodel")[i % 2],
                        "model": "m", "text": f"Answer {i}: the refund was sent on Monday; allow five days."})
            + "\n" for i in range(size)), "utf-8")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "judgelab", "import", "answers", str(file), "--db", db],
                       check=True, capture_output=True, cwd=REPO)
        done.append(time.perf_counter() - start)
        file.unlink()


def measure(db: str, tokens: list[str], scenario: str, seconds: float, pause: float, import_size: int) -> dict:
    from judgelab.session import APP_IDLE_RELEASE

    store = Store(db, idle_release=APP_IDLE_RELEASE)
    stop = threading.Event()
    times: list[float] = []
    side: list[float] = []
    threads = [threading.Thread(target=_rater, args=(store, t, stop, times, pause)) for t in tokens]
    if scenario.startswith(("calibration", "agreement")):
        threads.append(threading.Thread(target=_admin, args=(store, scenario, stop, side)))
    elif scenario == "import":
        threads.append(threading.Thread(target=_imports, args=(db, import_size, stop, side)))
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    p50, p95 = percentiles(times)
    return {"submits": len(times), "p50_s": p50, "p95_s": p95, "max_s": max(times, default=float("nan")),
            "side_runs": len(side), "side_s": sum(side) / len(side) if side else float("nan")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--labels", type=int, default=6000, help="simulated labels in the project")
    parser.add_argument("--raters", type=int, default=4, help="raters submitting at once")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each scenario")
    parser.add_argument("--pause", type=float, default=0.3, help="mean seconds between a rater's submits")
    parser.add_argument("--import-size", type=int, default=300, help="answers per CLI import")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--workdir", default=WORKDIR)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--scenario", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        emit(measure(args.db, os.environ[TOKENS_ENV].split(","), args.scenario, args.seconds, args.pause,
                     args.import_size))
        return

    db = Path(args.workdir) / f"under-load-{args.labels}-{args.raters}.duckdb"
    print(f"submit under load · {args.labels:,} labels · {args.raters} raters · {args.seconds:g} s each · {db}")
    print(f"  {machine()}")
    built_once(db, "the project", lambda path: build(path, labels=args.labels, raters=args.raters))
    store = Store(db)
    tokens = [store.reissue_token(f"load-rater-{i:02d}") for i in range(args.raters)]
    store.release()
    words = {"alone": "alone", "calibration-old": "admin on Calibration, old page",
             "calibration-now": "admin on Calibration, now", "agreement-old": "admin on Agreement, old page",
             "agreement-now": "admin on Agreement, now", "import": "CLI import running"}
    for scenario in args.scenarios.split(","):
        fig = child("submit_under_load.py", ["--db", str(db), "--scenario", scenario, "--seconds", str(args.seconds),
                                             "--pause", str(args.pause), "--import-size", str(args.import_size)],
                    timeout=args.seconds * 10 + 600, env={TOKENS_ENV: ",".join(tokens)})
        side = "" if fig["side_runs"] == 0 else f"; {fig['side_runs']} x {fig['side_s']:.1f} s of the other work"
        print(f"  {words[scenario]:32s} p50 {fig['p50_s'] * 1000:6.0f} ms  p95 {fig['p95_s'] * 1000:6.0f} ms  "
              f"max {fig['max_s'] * 1000:6.0f} ms  ({fig['submits']} submits{side})")


if __name__ == "__main__":
    main()
