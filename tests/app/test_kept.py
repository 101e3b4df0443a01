"""Kept admin results (issue 29 items 6 and 11): computed once per input, apart from submits."""

from __future__ import annotations

import os
import threading
import time

import pytest

from judgelab.admin import Kept, build_apart


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
