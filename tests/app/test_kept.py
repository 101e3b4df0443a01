"""Kept admin results (issue 29 items 6 and 11): computed once per input, apart from submits."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest

from judgelab.admin import KEPT, Kept, build_apart
from judgelab.labeler.store import Store


def test_two_sessions_asking_for_one_missing_result_share_one_computation() -> None:
    kept = Kept(max_entries=2)
    calls: list[int] = []
    started = threading.Event()

    def slow() -> str:
        calls.append(1)
        started.set()
        time.sleep(0.3)
        return "report"

    got: list[str] = []
    first = threading.Thread(target=lambda: got.append(kept.get("k", slow)))
    first.start()
    started.wait(5)
    got.append(kept.get("k", slow))  # arrives while the first computes: waits for it
    first.join()
    assert got == ["report", "report"] and len(calls) == 1 and kept.computed == 1
    kept.get("a", lambda: 1)
    kept.get("b", lambda: 2)
    assert kept.get("k", lambda: "again") == "again"  # the oldest entry aged out


def test_an_error_reaches_the_caller_and_nothing_is_kept() -> None:
    kept = Kept()

    def broken() -> None:
        raise ValueError("no labels")

    with pytest.raises(ValueError, match="no labels"):
        kept.get("k", broken)
    assert kept.get("k", lambda: "fine") == "fine"


def test_the_work_runs_in_another_process() -> None:
    assert build_apart(os.getpid) != os.getpid()


def test_the_agreement_figures_are_built_in_the_worker_and_kept_per_label_watermark(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import judgelab.admin._kept as kept_module
    from judgelab import admin
    from judgelab.labeler.models import ImportedLabel
    from tests.app.test_admin_functions import binary_store

    binary_store(store)
    built: list[object] = []
    real = kept_module.build_apart

    def recorded(fn: Any, *args: Any, **kwargs: Any) -> Any:
        built.append(fn)
        return real(fn, *args, **kwargs)

    monkeypatch.setattr(kept_module, "build_apart", recorded)
    KEPT.clear()
    report = admin.agreement_kept(store, "bin", 1, n_resamples=200)
    assert built == [admin.build_agreement]  # the bootstraps ran in the worker process
    direct = admin.agreement_report(store, "bin", 1, n_resamples=200)
    assert report.overall == direct.overall and report.kappas.equals(direct.kappas)
    assert report.leniency.equals(direct.leniency) and report.per_criterion.equals(direct.per_criterion)
    assert admin.agreement_kept(store, "bin", 1, n_resamples=200) is report and len(built) == 1
    store.add_imported_labels([ImportedLabel("a4", "cy", 1, True, {"c": 1})])  # moves the watermark
    assert admin.agreement_kept(store, "bin", 1, n_resamples=200).n_labels == 9 and len(built) == 2
