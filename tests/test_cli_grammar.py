"""One command-line grammar (issue 56 point 3).

``--json`` on every command, ``--quiet`` where a progress bar is drawn, one ``--raters``
spelling, and option names that mean one thing.

The first test walks every command's help, so a new command without ``--json`` fails here.
"""

from __future__ import annotations

import json
import os
import pty
import select
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from judgelab.cli import main
from judgelab.cli._progress import progress_bar
from judgelab.cli._raters import RaterSelection, parse_raters
from judgelab.cli._util import JSON_HELP, QUIET_HELP
from judgelab.labeler.errors import InputError
from judgelab.labeler.importers import import_file
from judgelab.labeler.store import Store
from tests.conftest import DATA

#: The commands that draw a progress bar (on stderr, when it is a terminal): each takes --quiet.
PROGRESS = {"import", "export", "calibrate", "formats", "design", "panel", "compare", "disagreements", "winrate",
            "db copy", "probe", "score", "screen"}
#: The commands that choose raters: each with the one --raters.
RATERS = {"assign", "design", "agreement"}


def _leaves(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        path = f"{prefix}{name}"
        if isinstance(command, click.Group):
            yield from _leaves(command, f"{path} ")
        else:
            yield path, command


def _options(command: click.Command) -> dict[str, click.Option]:
    return {o: p for p in command.params if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts)}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_every_command_takes_the_shared_options_spelled_one_way() -> None:
    leaves = dict(_leaves(main))
    assert {"import", "export", "assign", "init", "raters add", "raters revoke", "serve", "mock-api"} <= set(leaves)
    for path, command in leaves.items():
        options = _options(command)
        assert "--json" in options, f"{path} has no --json"
        assert (options["--json"].help or "").startswith(JSON_HELP), path
        if path in PROGRESS:
            assert "--quiet" in options and "-q" in options, f"{path} draws a bar but has no --quiet"
            assert options["--quiet"].help == QUIET_HELP, path
        else:
            assert "--quiet" not in options, f"{path} draws no bar: --quiet would do nothing"
        if path in RATERS:
            assert "--raters" in options, path
            assert (options["--raters"].metavar or "").startswith("all|"), path
        else:
            assert "--raters" not in options, f"{path} chooses raters: list it in RATERS"
        if "--png" in options:  # one --png: refused at once without the renderer, on every command
            assert (options["--png"].help or "").endswith("Needs the png extra (pip install 'judgelab[png]')."), path
        # One spelling each: no --rater, no file --format beside the scoring --formats.
        visible = {o for o, p in options.items() if not p.hidden}
        assert not visible & {"--rater", "--format", "--progress", "--no-progress"}, (path, visible)
        # The help itself (what a user reads) shows them.
        text = CliRunner().invoke(main, [*path.split(), "--help"], terminal_width=200).stdout
        assert "--json" in text and ("--quiet" in text) == (path in PROGRESS), path


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with the examples' rubric and answers and four raters (through the CLI, as --json)."""
    db = tmp_path_factory.mktemp("grammar") / "p.duckdb"
    got = json.loads(run("init", "--db", str(db), "--json")[1])
    assert got["migration"] > 0 and got["tables"] > 0
    for kind, file in (("rubric", "rubric.toml"), ("answers", "answers.jsonl")):
        code, out, err = run("import", kind, str(DATA / file), "--db", str(db), "--json")
        assert code == 0 and err == "", err  # no bar on a stderr that is not a terminal
        assert json.loads(out)["kind"] == kind
    for name in ("alice", "bob", "crowd-1", "crowd-2"):
        code, out, _ = run("raters", "add", name, "--db", str(db), "--json")
        assert code == 0 and json.loads(out)["link"].startswith("http://")
    return db


def test_json_output_of_each_newly_covered_command_parses(project: Path, tmp_path: Path) -> None:
    db = str(project)
    answers = json.loads(run("import", "answers", str(DATA / "answers.jsonl"), "--db", db, "--json")[1])
    assert answers["added"]["answers"] == 0 and answers["unchanged"]["answers"] == 140
    assert json.loads(run("raters", "reissue", "bob", "--db", db, "--json")[1])["link"].startswith("http://")
    paused = json.loads(run("raters", "pause", "bob", "--reason", "x", "--db", db, "--json")[1])
    assert paused == {"name": "bob", "state": "paused", "reason": "x", "labels_excluded": False}
    assert json.loads(run("raters", "resume", "bob", "--db", db, "--json")[1])["state"] == "active"
    assert json.loads(run("raters", "revoke", "bob", "--db", db, "--json")[1])["state"] == "revoked"
    out = tmp_path / "answers.csv"
    exported = json.loads(run("export", "answers", "--out", str(out), "--db", db, "--json")[1])
    assert exported == {"kind": "answers", "tool": None, "file_format": "csv", "out": str(out), "rows": 140}
    studio = tmp_path / "ls.json"
    code, stdout, stderr = run("export", "answers", "--to", "label-studio", "--out", str(studio), "--db", db, "--json")
    assert code == 0 and json.loads(stdout)["tasks"] == 140 and "wrote 140 tasks" in stderr  # messages: stderr
    gold = json.loads(run("gold", "import", str(DATA / "gold.csv"), "--db", db, "--json")[1])
    assert sum(gold["added"].values()) > 0 and "settings" in gold
    assert json.loads(run("gold", "export", "--out", str(tmp_path / "g.csv"), "--db", db, "--json")[1])["rows"] == 0
    written = json.loads(run("examples", str(tmp_path / "ex"), "--json")[1])
    assert {Path(w["file"]).name for w in written} >= {"rubric.toml", "answers.jsonl"}


def test_mock_api_json_is_its_addresses_on_one_line() -> None:
    code, out, err = run("mock-api", "--port", "0", "--duration", "0.01", "--json")
    assert code == 0
    got = json.loads(out)
    assert got["base_url"].startswith("http://127.0.0.1:") and got["openai_base_url"].endswith("/v1")
    assert "Stopped." in err and "Mock Anthropic API" in err


def test_errors_in_json_mode_stay_one_line_on_stderr_and_exit_2(project: Path) -> None:
    code, out, err = run("assign", "--raters", "nobody", "--db", str(project), "--json")
    assert (code, out) == (2, "")
    assert err.startswith("judgelab: error: no active rater named 'nobody'")


def test_raters_pick_names_a_prefix_a_file_or_all(project: Path, tmp_path: Path) -> None:
    db = str(project)
    got = json.loads(run("assign", "--raters", "crowd-*", "--tasks", "T001:T002", "--db", db, "--json")[1])
    assert got["raters"] == ["crowd-1", "crowd-2"]
    listed = tmp_path / "raters.txt"
    listed.write_text("# today's raters\nalice\ncrowd-2  # the second\n", encoding="utf-8")
    got = json.loads(run("assign", "--raters", f"@{listed}", "--tasks", "T003:T003", "--db", db, "--json")[1])
    assert got["raters"] == ["alice", "crowd-2"]
    got = json.loads(run("assign", "--raters", "alice", "--tasks", "T004:T004", "--db", db, "--json")[1])
    assert got["raters"] == ["alice"]
    got = json.loads(run("assign", "--tasks", "T005:T005", "--db", db, "--json")[1])  # all: bob is revoked
    assert got["raters"] == ["alice", "crowd-1", "crowd-2"]
    code, _, err = run("assign", "--raters", "crowd", "--db", db)
    assert code == 2 and "write 'crowd*'" in err  # agreement's old prefix spelling, named
    code, _, err = run("assign", "--raters", "3", "--db", db)
    assert code == 2 and "takes names, not a count" in err


def test_rater_selection_grammar() -> None:
    pool = ["expert_1", "expert_2", "author", "crowd-a"]
    assert parse_raters(None) == RaterSelection() and parse_raters(" ALL ").everyone
    assert parse_raters("expert*").pick(pool) == ["expert_1", "expert_2"]
    assert parse_raters("crowd-a,expert_2").pick(pool) == ["expert_2", "crowd-a"]  # the pool's order
    assert parse_raters("5", count=True).count == 5
    with pytest.raises(InputError, match="no rater matches 'staff\\*'"):
        parse_raters("staff*").pick(pool)
    with pytest.raises(InputError, match="names no rater"):
        parse_raters(" , ")
    with pytest.raises(InputError, match="cannot read"):
        parse_raters("@/no/such/file.txt")
    with pytest.raises(InputError, match="a count does not name raters"):
        parse_raters("2", count=True).pick(pool)


def test_export_file_format_is_not_the_scoring_formats(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "answers.data"
    code, _, _ = run("export", "answers", "--file-format", "jsonl", "--out", str(out), "--db", str(project))
    assert code == 0 and len(out.read_text().splitlines()) == 140
    code, _, err = run("export", "answers", "--format", "jsonl", "--out", str(out), "--db", str(project))
    assert code == 2 and "No such option '--format'" in err and "--file-format" in err


def test_import_reports_its_steps_to_a_plain_callable(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    import_file(store, "rubric", DATA / "rubric.toml")
    steps: list[tuple[str, int, int]] = []
    import_file(store, "answers", DATA / "answers.jsonl", progress=lambda *step: steps.append(step))
    assert [done for _, done, _ in steps] == [0, 1, 2, 3] and {total for *_, total in steps} == {3}
    assert steps[0][0] == "reading answers.jsonl" and steps[1][0] == "checking 140 answers"


def test_no_bar_when_quiet_or_not_a_terminal() -> None:
    with progress_bar(True, "x") as hook:
        assert hook is None
    with progress_bar(False, "x") as hook:  # pytest's stderr is not a terminal
        assert hook is None


def test_a_terminal_sees_the_bar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "p.duckdb"
    leader, follower = pty.openpty()  # a real terminal for stderr (--quiet: the test above)
    with os.fdopen(follower, "w", encoding="utf-8") as terminal:
        monkeypatch.setattr(sys, "stderr", terminal)
        main(["import", "rubric", str(DATA / "rubric.toml"), "--db", str(db)], prog_name="judgelab",
             standalone_mode=False)
        terminal.flush()
        seen = b""
        while select.select([leader], [], [], 0)[0]:
            seen += os.read(leader, 65536)
    os.close(leader)
    shown = seen.decode("utf-8", "replace")
    assert "import rubric: done" in shown and "3/3" in shown


def test_serve_json_is_where_it_serves_before_it_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from judgelab.cli.serve import _announce

    store = Store(tmp_path / "p.duckdb")
    _announce(store, "127.0.0.1", 8599, "http://127.0.0.1:8599", as_json=True, extra={"serving": True})
    said = capsys.readouterr()
    got = json.loads(said.out)
    assert got["app"] == "http://127.0.0.1:8599" and got["port"] == 8599 and got["serving"] is True
    assert got["rater_links"] == "http://127.0.0.1:8599/?t=<token>" and "Ctrl+C stops" in said.err
