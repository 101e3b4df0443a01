"""Issue 42, point 2: a judging command's exit code says how its run ended (README, "Exit codes").

0 finished; 3 finished with errors (a bad key: every call 401); 4 not finished (a lost batch left
in doubt: the batch named with --adopt-batch is another project's); 130 interrupted (SIGINT to a
real process). Through the CLI, the real SDK and the local mock API.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.mockapi import MockAnthropic
from judgelab.calibration.runner import EXIT_CODES
from judgelab.calibration.spec import load_spec
from judgelab.cli import main
from judgelab.labeler.store import Store
from tests.conftest import DATA

SPEC = DATA / "judge_spec.toml"
CREATES = "POST /v1/messages/batches"


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


def _project(path: Path) -> str:
    db = str(path)
    assert invoke("import", "rubric", str(DATA / "rubric.toml"), "--db", db).exit_code == 0
    assert invoke("import", "answers", str(DATA / "answers.jsonl"), "--db", db).exit_code == 0
    return db


def test_the_exit_codes_are_the_documented_ones() -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    for outcome, code in EXIT_CODES.items():
        assert f"| {code} | {outcome} |" in readme, f"README's exit-code table lacks {code} ({outcome})"


def test_finished_is_0_and_a_bad_key_is_3_with_every_failure_counted(tmp_path: Path) -> None:
    args = ["probe", "--n", "3", "--biases", "position", "--max-retries", "0", "--no-progress"]
    with MockAnthropic(api_keys={"sk-right"}) as mock:
        bad = invoke(*args, "--base-url", mock.base_url, "--db", str(tmp_path / "a.duckdb"),
                     "--out", str(tmp_path / "a.jsonl"), env={"ANTHROPIC_API_KEY": "sk-wrong"})
        good = invoke(*args, "--base-url", mock.base_url, "--db", str(tmp_path / "b.duckdb"),
                      "--out", str(tmp_path / "b.jsonl"), env={"ANTHROPIC_API_KEY": "sk-right"})
    assert bad.exit_code == 3, bad.output
    assert "finished with 6 error(s) (exit code 3)" in bad.output
    assert "done 0 · failed 6 · without a result 0" in bad.output
    assert "HTTP 401" in bad.output and "check ANTHROPIC_API_KEY" in bad.output
    assert "billed: 0 replies" in bad.output and "$0.0000" in bad.output
    assert good.exit_code == 0 and "finished (exit code 0)" in good.output, good.output
    assert "done 6 · failed 0" in good.output and "billed: 6 replies" in good.output


def test_a_batch_in_doubt_is_4_and_the_run_then_collects_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Project A's run dies after its batch was created, before the id was stored; project B
    # (same data, same key) makes a batch of the same size. A user who names B's batch for A is
    # refused (exit 4: not finished, nothing sent again); A's own run then finds its own batch.
    db_a, db_b = _project(tmp_path / "a.duckdb"), _project(tmp_path / "b.duckdb")
    spec = load_spec(SPEC)
    with MockAnthropic(responder=FakeJudge(seed=0, spec=spec).respond, batch_delay=0.05) as mock:
        args = ["score", "--judge-spec", str(SPEC), "--base-url", mock.base_url, "--batch",
                "--poll-interval", "0.05", "--no-progress"]

        def die(*_: object) -> None:
            raise KeyboardInterrupt  # as a Ctrl-C landing right after the create

        with monkeypatch.context() as patch:
            patch.setattr(Store, "set_batch_id", die)
            killed = invoke(*args, "--db", db_a)
        assert killed.exit_code == 130 and "interrupted" in killed.output, killed.output
        other = invoke(*args, "--db", db_b, "--json")
        assert other.exit_code == 0, other.output
        id_b = str(Store(db_b).run_batches(json.loads(other.stdout)["run"]["run_id"])[0]["batch_id"])
        before = mock.count(CREATES)
        doubt = invoke(*args, "--db", db_a, "--adopt-batch", id_b)
        assert mock.count(CREATES) == before, "a batch in doubt was created again"
        own = invoke(*args, "--db", db_a, "--json")
        creates = mock.count(CREATES)
    assert doubt.exit_code == 4, doubt.output
    assert "NOT finished (exit code 4)" in doubt.output and "not this run's" in doubt.output
    assert "--adopt-batch" in doubt.output
    assert own.exit_code == 0, own.output
    run = json.loads(own.stdout)["run"]
    assert run["outcome"] == "finished" and run["collected"] == run["planned"] > 0 and run["issued"] == 0
    assert creates == 2, f"{creates} batches created for two projects"


def test_sigint_to_a_running_command_is_130_and_loses_nothing(tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    with MockAnthropic(batch_delay=60.0) as mock:
        env = {**os.environ, "ANTHROPIC_API_KEY": "test", "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "judgelab", "probe", "--n", "2", "--biases", "position", "--batch",
             "--poll-interval", "0.1", "--base-url", mock.base_url, "--db", db, "--out", str(tmp_path / "r.jsonl"),
             "--no-progress"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        deadline = time.monotonic() + 60
        while mock.count(CREATES) == 0 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(0.3)  # the batch is created and being waited for
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "interrupted: the replies received so far are saved" in err
    # The run's summary, as at the end of a run: what it did, and its exit code.
    assert "INTERRUPTED (Ctrl-C) (exit code 130)" in out and "billed:" in out, out
    assert len(Store(db).run_batches(Store(db).unfinished_runs()["run_id"].iloc[0])) == 1


# A real SIGINT sent by the process to itself at a chosen moment: while the command opens its
# database (start-up, before any run), or while a finished run's summary is being printed.
_SIGINT_AT = """
import os, signal, sys
from judgelab.calibration.runner import RunSummary
from judgelab.labeler.store import Store

def ctrl_c():
    os.kill(os.getpid(), signal.SIGINT)

if sys.argv[1] == "start-up":
    opened = Store.__init__
    def init(self, *args, **kwargs):
        ctrl_c()
        opened(self, *args, **kwargs)
    Store.__init__ = init
else:
    text = RunSummary.__str__
    def printing(self):
        ctrl_c()
        return text(self)
    RunSummary.__str__ = printing
from judgelab.cli import main
main(sys.argv[2:], prog_name="judgelab")
"""


@pytest.mark.parametrize("moment", ["start-up", "summary"])
def test_ctrl_c_outside_the_run_loop_is_130_too_never_aborted_1(tmp_path: Path, moment: str) -> None:
    # Before: click's "Aborted!" and exit 1 at start-up, and the summary cut off while printing.
    proc = subprocess.run(
        [sys.executable, "-c", _SIGINT_AT, moment, "probe", "--judge", "fake", "--n", "2", "--biases", "position",
         "--db", str(tmp_path / "p.duckdb"), "--out", str(tmp_path / "r.jsonl"), "--no-progress"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 130, (proc.stdout, proc.stderr)
    assert "Aborted!" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "interrupted: the replies received so far are saved" in proc.stderr
    if moment == "summary":
        # The summary printed whole all the same (the run had finished).
        assert "finished (exit code 0)" in proc.stdout and "billed:" in proc.stdout, proc.stdout
