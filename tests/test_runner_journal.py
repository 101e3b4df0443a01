"""A killed run re-pays nothing it had received, even before any database batch committed.

The child runs a plan with a database flush interval of an hour: no reply reaches the database
while it runs, only the write-ahead journal. It is killed (SIGKILL) after a known number of
replies were delivered; the next run replays the journal and asks for none of them again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judgelab.calibration.journal import journal_dir
from judgelab.labeler.store import Store
from tests.test_runner import CHILD_SCRIPT, REPO, CountingJudge, plan_of, run

#: The killed run holds every result in its database buffer: only the journal has them.
_UNFLUSHED = "flush_interval=3600, flush_size=10**6"


@pytest.mark.slow
def test_replies_in_the_journal_only_are_not_paid_for_again(tmp_path: Path) -> None:
    db, log = tmp_path / "kill.duckdb", tmp_path / "calls.log"
    script = tmp_path / "child.py"
    script.write_text(CHILD_SCRIPT.format(tests=str(REPO / "tests"), run_kwargs=_UNFLUSHED))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen([sys.executable, str(script), str(db), str(log), "25"], env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 90
        while not (log.exists() and len(log.read_text().splitlines()) >= 25):
            assert child.poll() is None, "the child run ended before it was killed"
            assert time.monotonic() < deadline, "the child never delivered 25 replies"
            time.sleep(0.02)
        time.sleep(0.2)  # let the 25th reply reach the journal
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
    store = Store(db)
    assert any(journal_dir(store).iterdir()), "the killed run left its journal behind"
    assert store.query("SELECT count(*) AS n FROM judgements")["n"].iloc[0] == 0  # nothing committed

    class Logging(CountingJudge):
        async def _track(self, *texts: str) -> None:
            await super()._track(*texts)
            with log.open("a") as fh:
                fh.write("\t".join(texts).replace("\n", " ") + "\n")

    summary = run(plan_of(20), Logging(seed=5), store)
    assert summary.resumed and summary.answered_before == 25 and summary.finished
    made = log.read_text().splitlines()
    assert len(made) == 60 == len(set(made)), "a reply that had arrived was paid for again"
    assert not any(journal_dir(store).iterdir())
