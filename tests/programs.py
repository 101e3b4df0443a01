"""Servers run as the field runs them: each a program in its own process.

An in-process mock shares the interpreter lock with the client under test, so a busy client
delays the mock's answers and bunches them, which is not how an API behaves; tests that judge
pacing or count what the upstream saw run ``judgelab mock-api`` (and the fault proxy) as child
programs instead.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


class Program:
    """A child program whose first stdout line names the URL it serves."""

    def __init__(self, args: list[str], *, cwd: Path) -> None:
        """Start ``python *args`` in ``cwd`` and wait for the line with its URL."""
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        found = re.search(r"http://[\d.]+:\d+", line)
        if not found:
            self.proc.kill()
            raise RuntimeError(f"{args[:3]} did not start: {line!r}")
        self.url = found.group(0)

    def stop(self) -> str:
        """Stop it with SIGTERM and return what it printed afterwards.

        Not SIGINT: a test run started in the background by a shell without job control (``cmd &``
        in a script, as some CI runners do) ignores SIGINT, and so do its children.
        """
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        return out


def mock_api(cwd: Path, *extra: str) -> Program:
    """``judgelab mock-api --port 0 *extra`` as its own program."""
    return Program(["-m", "judgelab", "mock-api", "--port", "0", *extra], cwd=cwd)


def counter(stopped_output: str, name: str) -> int:
    """One of the counters ``judgelab mock-api`` prints when stopped (0 when absent)."""
    found = re.search(rf"{re.escape(name)}=(\d+)", stopped_output)
    return int(found.group(1)) if found else 0
