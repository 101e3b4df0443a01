"""Expensive admin results: kept where no visitor can drop them, computed apart from raters' submits.

Two problems of the admin pages, one home (issue 29, items 6 and 11):

* **Stalls.** The Calibration page's report is seconds of numpy and pandas (bootstrap intervals);
  so are the Agreement page's figures (:func:`agreement_kept`, the same way).
  Computed in the app server it held the GIL for most of that time, and every rater's submit in the
  same process waited. :func:`calibration_report` reads a snapshot of the data through the store
  (short units of work, between which submits go ahead), then builds the report in a separate
  worker *process* (:func:`build_apart`, lowered priority), so a submit waits for neither the
  store nor the interpreter.
* **Clear-cache.** ``st.cache_data`` and ``st.cache_resource`` are emptied by Streamlit's
  clear-cache message, which any visitor's browser may send, token or not: a stranger could make
  every admin page recompute. Results here live in a module-level :class:`Kept` of the server
  process, keyed by what pins their input (the label watermark, options), which Streamlit never
  clears. A new label moves the watermark, so a stale entry is never read; old entries age out.

Two sessions asking for the same missing result share one computation (single flight).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

from judgelab.admin._agreement import AgreementReport, build_agreement, load_agreement_data
from judgelab.calibration.calibrate import CalibrationReport, build_report, load_calibration_data
from judgelab.calibration.panel import PanelData, PanelResult, load_panel, panel_analysis
from judgelab.labeler.store import AnalystRole, ReviewRole

T = TypeVar("T")

#: Niceness of the worker process: on a small machine the raters' submits get the cores first.
WORKER_NICE = 10


class Kept:
    """A bounded, thread-safe store of computed results with single-flight computation.

    Args:
        max_entries: Results kept; the least recently used goes first.
    """

    def __init__(self, max_entries: int = 64) -> None:
        """An empty store of at most ``max_entries`` results."""
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._flights: dict[Hashable, Future[Any]] = {}
        #: How many times a result was computed (for tests and the bench).
        self.computed = 0

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The result kept under ``key``, computed once by ``compute`` when missing.

        A caller that finds the same key being computed waits for that computation instead of
        starting another; an error reaches every waiter and nothing is kept.
        """
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]  # type: ignore[no-any-return]
            flight = self._flights.get(key)
            owner = flight is None
            if flight is None:
                flight = self._flights[key] = Future()
        if not owner:
            return flight.result()  # type: ignore[no-any-return]
        try:
            value = compute()
        except BaseException as exc:
            with self._lock:
                del self._flights[key]
            flight.set_exception(exc)
            raise
        with self._lock:
            self.computed += 1
            self._items[key] = value
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)
            del self._flights[key]
        flight.set_result(value)
        return value

    def clear(self) -> None:
        """Forget every kept result (tests; Streamlit never calls this)."""
        with self._lock:
            self._items.clear()


#: The server process's kept results.
KEPT = Kept()

_pool_guard = threading.Lock()
_pool: ProcessPoolExecutor | None = None


def _lower_priority() -> None:
    """Initialiser of the worker process: yield the CPU to the server's threads."""
    with suppress(OSError):  # a platform without nice: the worker still runs apart
        os.nice(WORKER_NICE)


@contextmanager
def _plain_main() -> Iterator[None]:
    """Hide the running page from ``spawn`` while the worker starts.

    Streamlit runs each page as the ``__main__`` module with the page's ``__file__``, and a
    spawned child re-runs its parent's ``__main__`` file: it would run the page (and stop at
    "Access denied"). A bare stand-in (no file, no spec) gives the child nothing to re-run. The
    swap lasts as long as starting the process; script runs read their own module's dict, not
    ``sys.modules["__main__"]``.
    """
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _worker_pool() -> ProcessPoolExecutor:
    """The one worker process (started on first use; ``spawn``: never a fork of a threaded server)."""
    global _pool
    with _pool_guard:
        if _pool is None:
            pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                       initializer=_lower_priority)
            with _plain_main():
                pool.submit(os.getpid)  # starts the process now, under the stand-in
            _pool = pool
        return _pool


def _reset_pool() -> None:
    global _pool
    with _pool_guard:
        broken, _pool = _pool, None
    if broken is not None:
        broken.shutdown(wait=False, cancel_futures=True)


def warm_worker() -> None:
    """Start the worker process now, without waiting (an admin's first Calibration then skips it).

    Starting it imports numpy, pandas and the statistics in a new interpreter: seconds on a
    small machine, which the first report would otherwise add.
    """
    _worker_pool()


def build_apart(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in the worker process; the calling thread waits without the GIL.

    ``fn`` must be a module-level function and its arguments picklable. A worker that died (killed,
    out of memory) is replaced once and the call retried.
    """
    for attempt in (1, 2):
        try:
            return _worker_pool().submit(fn, *args, **kwargs).result()
        except BrokenProcessPool:
            _reset_pool()
            if attempt == 2:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def calibration_report(
    store: AnalystRole,
    run_id: str,
    *,
    compare_run: str | None = None,
    human_rule: str = "mean",
    n_resamples: int = 1000,
    seed: int = 0,
    apart: bool = True,
) -> CalibrationReport:
    """The Calibration page's report, kept per input and built away from the raters' submits.

    The key is the run, the options, the label watermark (any new label or adjudication moves
    it) and the runs' judgement counts (a run's judgements only grow).

    Args:
        store: The project store.
        run_id: The judge run.
        compare_run: A run before a rubric change, or ``None``.
        human_rule: ``mean``, ``majority`` or ``adjudicated``.
        n_resamples: Bootstrap resamples.
        seed: Seed of every bootstrap.
        apart: Build in the worker process (``False``: in this thread, e.g. for a CLI).

    Returns:
        The :class:`~judgelab.calibration.calibrate.CalibrationReport` ``calibrate`` would return.

    Raises:
        InputError: As :func:`judgelab.calibration.calibrate.calibrate`.
    """
    runs = store.calibration_runs()
    judged = runs[runs["run_id"].isin([run_id, compare_run])][["run_id", "n_pointwise", "n_pairwise"]]
    key = ("calibration", str(store.path), run_id, compare_run, human_rule, n_resamples, seed,
           store.label_watermark(), tuple(map(tuple, judged.astype(str).to_numpy())))

    def compute() -> CalibrationReport:
        # The snapshot: a few short units of work on the store, between which submits go ahead.
        data = load_calibration_data(store, run_id)
        before = load_calibration_data(store, compare_run) if compare_run is not None else None
        options: dict[str, Any] = {"compare": before, "human_rule": human_rule, "seed": seed,
                                   "n_resamples": n_resamples}
        if apart:
            return build_apart(build_report, data, **options)
        return build_report(data, **options)

    return KEPT.get(key, compute)


def panel_report(store: AnalystRole, run_ids: list[str]) -> tuple[PanelData, PanelResult]:
    """The Calibration page's panel of judges, kept per input like :func:`calibration_report`.

    Args:
        store: The project store.
        run_ids: The judge runs read as one panel.

    Returns:
        The panel's data and its analysis (:func:`judgelab.calibration.panel.panel_analysis`).
    """
    runs = store.calibration_runs()
    judged = runs[runs["run_id"].isin(run_ids)][["run_id", "n_pointwise"]]
    key = ("panel", str(store.path), tuple(run_ids), store.label_watermark(),
           tuple(map(tuple, judged.astype(str).to_numpy())))

    def compute() -> tuple[PanelData, PanelResult]:
        data = load_panel(store, list(run_ids))
        return data, panel_analysis(data.frame, scale=data.scale)

    return KEPT.get(key, compute)


def agreement_kept(
    store: ReviewRole,
    rubric_id: str,
    version: int,
    *,
    include_unversioned: bool = True,
    n_resamples: int = 1000,
    seed: int = 0,
    apart: bool = True,
) -> AgreementReport:
    """The Agreement page's figures, kept per input and built away from the raters' submits.

    As :func:`calibration_report`: the rubric and its current labels are read through the store
    (two short units of work), the bootstraps run in the worker process. The key is the rubric,
    the options and the label watermark (labels are append-only: any new or edited label moves it).

    Args:
        store: The project store.
        rubric_id: The rubric.
        version: Its version.
        include_unversioned: Count imported labels (no rubric version) under this rubric.
        n_resamples: Bootstrap resamples per figure.
        seed: Seed of the bootstraps.
        apart: Build in the worker process (``False``: in this thread).

    Returns:
        What :func:`judgelab.admin.agreement_report` returns for the same input.

    Raises:
        InputError: No such rubric.
    """
    key = ("agreement", str(store.path), rubric_id, version, include_unversioned, n_resamples, seed,
           store.label_watermark())

    def compute() -> AgreementReport:
        rubric, labels = load_agreement_data(store, rubric_id, version, include_unversioned=include_unversioned)
        options: dict[str, Any] = {"n_resamples": n_resamples, "seed": seed}
        if apart:
            return build_apart(build_agreement, rubric, labels, **options)
        return build_agreement(rubric, labels, **options)

    return KEPT.get(key, compute)
