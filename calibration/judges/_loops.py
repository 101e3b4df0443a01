"""One SDK client, concurrency semaphore and rate governor per event loop, for every back-end.

Connection pools, semaphores and the governor's waiters are bound to the loop that made them;
the app runs each action in a fresh loop, and Streamlit sessions are threads that may each run
a loop at the same time. A judge therefore keeps its resources per running loop, made on first
use and dropped with the loop (a weak key) or by :meth:`PerLoop.close`.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from judgelab.calibration.judges._transport import RateGovernor

__all__ = ["PerLoop"]


class _Closable(Protocol):
    async def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


class PerLoop(Generic[C]):
    """The running loop's ``(client, semaphore, governor)``, made by ``make(governor)`` once per loop."""

    def __init__(self, make: Callable[[RateGovernor], C], max_concurrency: int) -> None:
        self._make = make
        self._max_concurrency = max_concurrency
        self._found: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[C, asyncio.Semaphore, RateGovernor]
        ] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self) -> tuple[C, asyncio.Semaphore, RateGovernor]:
        """The resources of the running loop (call it inside ``async`` code)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            found = self._found.get(loop)
            if found is None:
                governor = RateGovernor(self._max_concurrency)
                found = (self._make(governor), asyncio.Semaphore(self._max_concurrency), governor)
                self._found[loop] = found
            return found

    async def close(self) -> None:
        """Close the running loop's client (the next call in this loop makes a new one)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            found = self._found.pop(loop, None)
        if found is not None:
            await found[0].close()
