"""The OpenAI Batch API under faults, through the official ``openai`` SDK, against a server that is not judgelab's.

The upstream is :mod:`tests.reliability.openai_batch_server` (written from OpenAI's API
reference, its own program), behind the fault proxy (:mod:`tests.reliability.fault_proxy`,
another program). ``judgelab probe --judge openai --batch`` runs as a user types it. Three
ledgers meet: the verdicts in the output file (against a clean run's), the database (which
batch each run recorded) and the server's billing ledger (uploads, creates, requests in the
batches created: what OpenAI bills).

Every test here asks the same 12 requests; the reference verdicts come from one clean run.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from judgelab.labeler.store import Store
from tests.programs import Program
from tests.reliability.conftest import REPO, Lines
from tests.reliability.fault_proxy import read_log

PROBE_ARGS = ("--judge", "openai", "--model", "gpt-4.1-mini", "--batch", "--poll-interval", "0.05", "--json",
              "--n", "6", "--biases", "position", "--seed", "0", "--timeout", "2", "--max-retries", "4")
#: Requests in the run: 6 pairs, each in both orders.
PLANNED = 12


class BatchServer:
    """``python -m tests.reliability.openai_batch_server`` as its own program; its events read as they come."""

    def __init__(self, cwd: Path, *extra: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.openai_batch_server", "--port", "0", *extra],
            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        self.lines = Lines(self.proc)
        first = self.lines.wait_for(1, "openai batch server on", timeout=30)
        found = re.search(r"http://[\d.]+:\d+", first[0]) if first else None
        assert found, self.lines.lines
        self.url = found.group(0)

    def wait_event(self, route: str, count: int = 1) -> None:
        """Block until the server has acted on ``count`` requests of ``route`` (reply not yet sent)."""
        self.lines.wait_for(count, f"event {route} ", timeout=60)

    def events(self) -> Counter[str]:
        """Requests acted on, by route."""
        return Counter(x.split()[1] for x in list(self.lines.lines) if x.startswith("event "))

    def files(self) -> dict[str, str]:
        """``{file id: "output" | "error"}`` of every batch, asked of the server directly."""
        request = urllib.request.Request(f"{self.url}/v1/batches?limit=100",
                                         headers={"authorization": "Bearer sk-test-one-key"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            listing = json.load(reply)
        out = {}
        for batch in listing["data"]:
            for kind in ("output", "error"):
                if batch[f"{kind}_file_id"]:
                    out[batch[f"{kind}_file_id"]] = kind
        return out

    def stop(self) -> dict[str, int]:
        """Stop it (SIGTERM); its billing ledger."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        lines = self.lines.finish(timeout=20)
        stats = [x for x in lines if x.startswith("stats ")]
        assert stats, lines[-5:]
        return dict(json.loads(stats[-1][len("stats "):]))


def proxy(cwd: Path, upstream: str, log: Path, *extra: str) -> Program:
    """The fault proxy in front of ``upstream``, faulting the Files and Batches routes as ``extra`` says."""
    return Program(["-m", "tests.reliability.fault_proxy", "--upstream", upstream, "--log", str(log),
                    "--endpoints", "batches", "--hang", "3", "--retry-after", "0.05", *extra], cwd=cwd)


def probe(url: str, db: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    """``judgelab probe ... --batch --json`` through the CLI entry point in this process: (exit code, run)."""
    from click.testing import CliRunner

    from judgelab.cli import main

    result = CliRunner().invoke(
        main, ["probe", "--base-url", f"{url}/v1", "--db", str(db), "--out", str(out), *PROBE_ARGS, *extra],
        env={"OPENAI_API_KEY": "sk-test-one-key"},
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout)["run"]


def start_probe(cwd: Path, url: str, db: Path, out: Path) -> subprocess.Popen[str]:
    """A real ``judgelab probe`` process (the worktree's code), to be killed."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_API_KEY": "sk-test-one-key"}
    return subprocess.Popen(
        [sys.executable, "-m", "judgelab", "probe", "--base-url", f"{url}/v1", "--db", str(db), "--out", str(out),
         *PROBE_ARGS], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )


def verdicts(path: Path) -> dict[str, tuple[str, Any]]:
    """Each call's status and verdict, from a run's output file."""
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    return {r["call_id"]: (r["status"], r["verdict"] if r["kind"] == "pairwise" else r["score"]) for r in rows}


def batch_ids(db: Path) -> list[str]:
    """The batch ids a project database recorded."""
    frame = Store(db).query("SELECT batch_id FROM judge_batches WHERE batch_id IS NOT NULL ORDER BY batch_no")
    return [str(b) for b in frame["batch_id"]]


@dataclass(frozen=True)
class Figures:
    """One scenario's ledger: what the server billed against what the run stored."""

    scenario: str
    uploads: int
    creates: int
    requests_billed: int
    requests_failed: int
    verdicts: int
    exit_codes: tuple[int, ...]

    def line(self) -> str:
        """One line for the closing note."""
        return (f"{self.scenario}: {self.requests_billed} requests billed in {self.creates} batch(es) "
                f"({self.requests_failed} failed in the error file), {self.uploads} uploads; "
                f"{self.verdicts} verdicts stored; exit codes {list(self.exit_codes)}")


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, Any]]:
    """A clean run's verdicts (no faults, no failed lines): what every faulty run must end with."""
    tmp = tmp_path_factory.mktemp("clean")
    server = BatchServer(tmp)
    try:
        code, run = probe(server.url, tmp / "clean.duckdb", tmp / "clean.jsonl")
    finally:
        stats = server.stop()
    assert code == 0 and run["finished"] and run["parsed"] == PLANNED
    assert stats == {"uploads": 1, "creates": 1, "requests_billed": PLANNED, "requests_failed": 0}
    return verdicts(tmp / "clean.jsonl")


def until_finished(url: str, db: Path, out: Path, limit: int = 3) -> tuple[int, ...]:
    """Run the same command until it exits 0 (a failed line is retried by the next run): the exit codes."""
    codes = []
    for _ in range(limit):
        code, _run = probe(url, db, out)
        codes.append(code)
        if code == 0:
            break
    return tuple(codes)


# -- a cut or failed reply on every route ------------------------------------------------------


@pytest.mark.parametrize("kind", ["cut", "500"])
def test_a_fault_on_each_route_loses_nothing_and_bills_nothing_twice(
    tmp_path: Path, kind: str, clean: dict[str, tuple[str, Any]]
) -> None:
    # The first attempt at every distinct Files or Batches request fails: the upload, the
    # create, the list (looking for a create whose reply was lost), the first poll, the output
    # file and the error file. --fail-first puts some lines in the error file (HTTP 500 inside
    # the batch), which the next run retries in a batch of their own.
    server = BatchServer(tmp_path, "--batch-delay", "0.3", "--fail-first", "3")
    log = tmp_path / "attempts.jsonl"
    front = proxy(tmp_path, server.url, log, "--rate", "1", "--first-attempt-only", "--kinds", kind)
    db, out = tmp_path / "p.duckdb", tmp_path / "p.jsonl"
    try:
        codes = until_finished(front.url, db, out)
        files = server.files()
    finally:
        front.stop()
        stats = server.stop()
    faulted = Counter(_fix_route(a["method"], a["path"], files) for a in read_log(log) if a["fault"])
    for route in (("POST", "upload"), ("POST", "create"), ("GET", "list"), ("GET", "retrieve"),
                  ("GET", "output"), ("GET", "error")):
        assert faulted[route] > 0, f"no {kind} on {route}: {faulted}"
    assert codes[-1] == 0 and codes[0] in (0, 3), codes
    assert verdicts(out) == clean
    # Billed: each request once, plus once more for each line that failed in the error file
    # (its retry); one batch per invocation that had calls to send, never a second for the same.
    assert stats["requests_failed"] > 0
    assert stats["requests_billed"] == PLANNED + stats["requests_failed"]
    assert stats["creates"] == len(batch_ids(db)) == len(codes)
    print("\n" + Figures(f"{kind} on each route", stats["uploads"], stats["creates"], stats["requests_billed"],
                         stats["requests_failed"], len(verdicts(out)), codes).line())


def _fix_route(method: str, path: str, files: dict[str, str]) -> tuple[str, str]:
    """``(method, route)`` of a proxied request; a file's content is its batch's ``output`` or ``error`` file."""
    path = path.split("?", 1)[0]
    if path == "/v1/files":
        return method, "upload"
    if path == "/v1/batches":
        return method, "create" if method == "POST" else "list"
    if path.startswith("/v1/batches/"):
        return method, "retrieve"
    if path.endswith("/content"):
        return method, files.get(path.split("/")[3], "input file")
    return method, "other"


# -- the error file, and nothing else, failing ---------------------------------------------------


@pytest.mark.slow
def test_an_error_file_that_cannot_be_read_leaves_the_batch_to_be_collected_by_the_next_run(
    tmp_path: Path, clean: dict[str, tuple[str, Any]]
) -> None:
    # Every read of the error file (the batch's third file) answers 500: the run cannot know
    # which requests failed, so it must not finish, must not record a guess, and the next run
    # (the fault gone) must collect the same batch rather than create another.
    server = BatchServer(tmp_path, "--batch-delay", "0.3", "--fail-first", "3")
    log = tmp_path / "attempts.jsonl"
    front = proxy(tmp_path, server.url, log, "--rate", "1", "--kinds", "500",
                  "--only-path", r"/v1/files/file-0+3/content")
    db, out = tmp_path / "p.duckdb", tmp_path / "p.jsonl"
    healed: Program | None = None
    try:
        # No SDK retries: the run's own re-asking (4 tries) is what this test waits through.
        first, run = probe(front.url, db, out, "--max-retries", "0")
        creates_after_first = server.events()["create"]
        assert server.files().get("file-000000000000000000000003") == "error"
        # The same command again, the fault gone: a proxy at the same address that faults
        # nothing (the endpoint's address is part of the run's identity, as the user types it).
        front.stop()
        port = front.url.rsplit(":", 1)[1]
        healed = proxy(tmp_path, server.url, tmp_path / "healed.jsonl", "--rate", "0", "--port", port)
        codes = (first, *until_finished(healed.url, db, out))
    finally:
        front.stop()
        if healed is not None:
            healed.stop()
        stats = server.stop()
    assert {a["path"] for a in read_log(log) if a["fault"]} == {"/v1/files/file-000000000000000000000003/content"}
    assert first == 4 and run["outcome"] == "not finished" and run["done"] == 0, run
    assert len(run["uncollected"]) == 1 and "run the same command again" in run["uncollected"][0]
    # Asked four times, one HTTP attempt each (--max-retries 0): said so, not "after 1 attempt(s)".
    assert "failed after 4 attempt(s)" in run["uncollected"][0], run["uncollected"]
    assert creates_after_first == 1
    ids = batch_ids(db)
    assert len(ids) == len(set(ids)) == stats["creates"] == 2  # the first batch, then its failed lines'
    assert codes[-1] == 0
    assert verdicts(out) == clean
    assert stats["requests_billed"] == PLANNED + stats["requests_failed"]
    print("\n" + Figures("error file unreadable, then read", stats["uploads"], stats["creates"],
                         stats["requests_billed"], stats["requests_failed"], len(verdicts(out)), codes).line())


# -- SIGKILL at each step ------------------------------------------------------------------------

#: The moment of the kill: the server has acted on this route and holds its reply.
KILL_AT = {
    "after upload, before create": "upload",
    "after create, before the id is stored": "create",
    "while polling": "retrieve",
    "while downloading the output": "content",
}


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[Path, BatchServer]]]:
    """One ``judgelab probe`` process per moment, all started at once (their start-up overlaps), each killed at it."""
    runs: dict[str, tuple[Path, BatchServer, subprocess.Popen[str]]] = {}
    for moment, route in KILL_AT.items():
        tmp = tmp_path_factory.mktemp(route)
        server = BatchServer(tmp, "--batch-delay", "0.6", "--hold", f"{route}=30")
        runs[moment] = (tmp, server, start_probe(tmp, server.url, tmp / "k.duckdb", tmp / "k.jsonl"))
    try:
        for _moment, (_tmp, server, child) in runs.items():
            server.wait_event(KILL_AT[_moment])
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=10)
        yield {m: (tmp, server) for m, (tmp, server, _child) in runs.items()}
    finally:
        for _tmp, server, child in runs.values():
            if child.poll() is None:
                child.kill()
            if server.proc.poll() is None:
                server.proc.kill()


@pytest.mark.slow
@pytest.mark.parametrize("moment", list(KILL_AT))
def test_sigkill_at_each_step_then_a_rerun_collects_the_same_batch(
    moment: str, killed: dict[str, tuple[Path, BatchServer]], clean: dict[str, tuple[str, Any]]
) -> None:
    tmp, server = killed[moment]
    before = server.events()
    assert before["create"] == (0 if KILL_AT[moment] == "upload" else 1)
    code, run = probe(server.url, tmp / "k.duckdb", tmp / "k.jsonl")
    stats = server.stop()
    assert code == 0 and run["finished"] and run["errors"] == 0, run
    assert verdicts(tmp / "k.jsonl") == clean
    # One batch, created once, whatever the moment: the rerun found it (or, killed before the
    # create, made it); every request billed once. A re-upload costs nothing (files are free).
    assert stats["creates"] == 1 and stats["requests_billed"] == PLANNED, stats
    assert len(batch_ids(tmp / "k.duckdb")) == 1
    assert stats["uploads"] == (2 if KILL_AT[moment] == "upload" else 1)
    print("\n" + Figures(f"SIGKILL {moment}", stats["uploads"], stats["creates"], stats["requests_billed"],
                         stats["requests_failed"], len(verdicts(tmp / "k.jsonl")), (-9, code)).line())


# -- two projects on one key ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("metadata", ["kept", "dropped"])
def test_two_projects_on_one_key_with_same_size_batches_and_cut_creates_each_collect_their_own(
    tmp_path: Path, clean: dict[str, tuple[str, Any]], metadata: str
) -> None:
    # Two databases, one key, the same 12 requests at the same moment; each create reply is
    # cut short (the batch is made, its id lost), so each run must find its batch again
    # among two of the same size and age: by its metadata marker, never by size and time; on a
    # server that keeps no metadata (issue 52), by its input file (the upload it made).
    server = BatchServer(tmp_path, "--batch-delay", "0.5", *(("--drop-metadata",) if metadata == "dropped" else ()))
    log = tmp_path / "attempts.jsonl"
    front = proxy(tmp_path, server.url, log, "--rate", "1", "--first-attempt-only", "--kinds", "cut",
                  "--only-path", "/v1/batches")
    projects = [tmp_path / "one", tmp_path / "two"]
    try:
        children = []
        for p in projects:
            p.mkdir()
            children.append(start_probe(p, front.url, p / "p.duckdb", p / "p.jsonl"))
        codes = tuple(c.wait(timeout=120) for c in children)
    finally:
        front.stop()
        stats = server.stop()
    cut_creates = [a for a in read_log(log) if a["fault"] and a["method"] == "POST"]
    assert len(cut_creates) == 2, "each project's create reply was to be cut"
    assert codes == (0, 0), [c.stderr.read() if c.stderr else "" for c in children]
    one, two = (batch_ids(p / "p.duckdb") for p in projects)
    assert len(one) == len(two) == 1 and one != two, (one, two)
    assert stats["creates"] == 2 and stats["requests_billed"] == 2 * PLANNED, stats
    for p in projects:
        assert verdicts(p / "p.jsonl") == clean
    name = "two projects, one key, cut creates" + (", no metadata" if metadata == "dropped" else "")
    print("\n" + Figures(name, stats["uploads"], stats["creates"],
                         stats["requests_billed"], stats["requests_failed"],
                         sum(len(verdicts(p / "p.jsonl")) for p in projects), codes).line())


# -- issue 52: an output file cut at a line break; a server that keeps no metadata ---------------


@pytest.mark.parametrize("cut_reads", [1, 4])
def test_an_output_file_cut_at_a_line_break_is_read_again_and_each_request_billed_once(
    tmp_path: Path, clean: dict[str, tuple[str, Any]], cut_reads: int
) -> None:
    # The output file's first downloads lack their last 3 lines (whole JSON lines: it decodes).
    # Cut once, the run reads it again and finishes. Cut on all four reads of the first run,
    # that run stays not finished (exit 4) with nothing recorded as missing; the next reads
    # the same batch whole. Before: 3 calls "batch result missing", exit 3, a second batch.
    server = BatchServer(tmp_path, "--batch-delay", "0.3", "--short-output", "3",
                         "--short-output-reads", str(cut_reads))
    db, out = tmp_path / "p.duckdb", tmp_path / "p.jsonl"
    try:
        first, run = probe(server.url, db, out)
        codes = (first, *(until_finished(server.url, db, out) if first else ()))
    finally:
        stats = server.stop()
    assert stats == {"uploads": 1, "creates": 1, "requests_billed": PLANNED, "requests_failed": 0}, stats
    assert codes[-1] == 0 and verdicts(out) == clean
    if cut_reads == 1:
        assert codes == (0,)
    else:
        assert first == 4 and run["outcome"] == "not finished" and run["errors"] == 0, run
        assert run["done"] == PLANNED - 3 and "name 9 of the 12 requests it answered" in run["uncollected"][0]
    print("\n" + Figures(f"output file cut at a line break on {cut_reads} read(s)", stats["uploads"],
                         stats["creates"], stats["requests_billed"], stats["requests_failed"],
                         len(verdicts(out)), codes).line())


@pytest.mark.slow
def test_sigkill_after_create_on_a_server_without_metadata_then_the_rerun_collects_the_same_batch(
    tmp_path: Path, clean: dict[str, tuple[str, Any]]
) -> None:
    # The server keeps no metadata; the run is killed once the batch is created, before its id
    # is stored. The rerun proves the batch its own by the custom ids in its input file.
    server = BatchServer(tmp_path, "--batch-delay", "0.6", "--hold", "create=30", "--drop-metadata")
    db, out = tmp_path / "k.duckdb", tmp_path / "k.jsonl"
    child = start_probe(tmp_path, server.url, db, out)
    try:
        server.wait_event("create")
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        code, run = probe(server.url, db, out)
    finally:
        if child.poll() is None:
            child.kill()
        stats = server.stop()
    assert code == 0 and run["finished"] and run["collected"] == PLANNED, run
    assert verdicts(out) == clean
    assert stats["creates"] == 1 and stats["requests_billed"] == PLANNED, stats
    print("\n" + Figures("SIGKILL after create, no metadata", stats["uploads"], stats["creates"],
                         stats["requests_billed"], stats["requests_failed"], len(verdicts(out)), (-9, code)).line())
