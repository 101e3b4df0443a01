"""The command line starts at once: verbs are imported only when used (issue 31).

``judgelab --version`` used to import every verb, and with them pandas, DuckDB, SciPy, Altair,
Streamlit and the Anthropic SDK: about 4.7 s of CPU before printing one line.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import pkgutil
import subprocess
import sys

import click
import pytest

import judgelab
from judgelab.cli import VERBS, main

#: Libraries that take a second or more to import and that --help, --version and the light
#: verbs never need.
HEAVY = ("pandas", "duckdb", "scipy", "altair", "streamlit", "anthropic", "sklearn", "pyarrow")

_PROBE = """
import json, sys
from judgelab.cli import main
try:
    main(sys.argv[1:], prog_name="judgelab")
except SystemExit:
    pass
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads({heavy!r})))
print("HEAVY=" + json.dumps(heavy))
"""


def _heavy_modules_after(*argv: str, cwd: str) -> list[str]:
    code = _PROBE.replace("{heavy!r}", repr(json.dumps(HEAVY)))
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=cwd,
                          timeout=60)
    line = [x for x in done.stdout.splitlines() if x.startswith("HEAVY=")]
    assert line, done.stdout + done.stderr
    return list(json.loads(line[-1].removeprefix("HEAVY=")))


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["examples", "--help"], ["examples", "ex"]])
def test_help_version_and_light_verbs_import_no_heavy_library(argv: list[str], tmp_path: object) -> None:
    assert _heavy_modules_after(*argv, cwd=str(tmp_path)) == []


def test_a_heavy_verb_still_loads_when_used(tmp_path: object) -> None:
    assert "duckdb" in _heavy_modules_after("init", "--db", f"{tmp_path}/x.duckdb", cwd=str(tmp_path))


def test_every_verb_is_listed_with_its_own_help() -> None:
    ctx = click.Context(main)
    for name, (_, help_text) in VERBS.items():
        command = main.get_command(ctx, name)
        assert command is not None and command.name == name
        # The stored line is what --help shows without importing the verb: it must stay the verb's own.
        assert help_text == command.get_short_help_str(1000), name


def test_no_verb_module_has_a_command_the_cli_does_not_list() -> None:
    # Every public module of judgelab.cli, including one added later: its COMMANDS must be in VERBS.
    import judgelab.cli

    modules = {f"judgelab.cli.{info.name}" for info in pkgutil.iter_modules(judgelab.cli.__path__)
               if not info.name.startswith("_")}
    assert {path.split(":")[0] for path, _ in VERBS.values()} <= modules
    for module in sorted(modules):
        for command in importlib.import_module(module).COMMANDS:
            assert command.name in VERBS and VERBS[command.name][0].startswith(f"{module}:"), (module, command.name)


def test_help_lists_every_verb_and_version_is_the_package_version() -> None:
    from click.testing import CliRunner

    out = CliRunner().invoke(main, ["--help"]).output
    for name in VERBS:
        assert f"\n  {name} " in out, name
    version = CliRunner().invoke(main, ["--version"]).output
    assert version == f"judgelab, version {judgelab.__version__}\n"
    assert importlib.metadata.version("judgelab") == judgelab.__version__


def test_an_unknown_verb_is_refused_with_click_usage() -> None:
    from click.testing import CliRunner

    result = CliRunner().invoke(main, ["frobnicate"])
    assert result.exit_code == 2 and "No such command 'frobnicate'" in result.output
