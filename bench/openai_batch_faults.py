"""Calls billed against verdicts stored, per fault scenario of the OpenAI Batch API (issue 42 point 6).

Runs the scenarios of ``tests/reliability/test_openai_batch_faults.py`` (judgelab's OpenAI
judge through the official ``openai`` SDK, against the independent Files + Batches server
behind the fault proxy) and prints the ledger each one reports: requests billed (in the
batches the server created), batches created, uploads, requests that failed inside a batch
(the error file) and verdicts stored, with the exit code of each invocation. Its assertions are
the tests': a scenario that billed twice or lost a verdict fails and is reported as such.

    python bench/openai_batch_faults.py [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TESTS = "tests/reliability/test_openai_batch_faults.py"
_LINE = re.compile(
    r"^(?P<scenario>.+?): (?P<billed>\d+) requests billed in (?P<creates>\d+) batch\(es\) "
    r"\((?P<failed>\d+) failed in the error file\), (?P<uploads>\d+) uploads; (?P<verdicts>\d+) verdicts stored; "
    r"exit codes \[(?P<codes>[-\d, ]*)\]$"
)


def measure() -> tuple[list[dict[str, Any]], str]:
    """Run the scenarios; their figures and pytest's last line."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", TESTS],
        cwd=REPO, env=env, capture_output=True, text=True, check=False,
    )
    rows = []
    for line in done.stdout.splitlines():
        found = _LINE.match(line.strip())
        if found:
            row: dict[str, Any] = {k: int(v) for k, v in found.groupdict().items() if k not in ("scenario", "codes")}
            row["scenario"] = found["scenario"]
            row["exit_codes"] = [int(c) for c in found["codes"].split(",") if c.strip()]
            rows.append(row)
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    return rows, tail


def main(argv: list[str] | None = None) -> None:
    """Print the table (or ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = parser.parse_args(argv)
    rows, tail = measure()
    if args.json:
        print(json.dumps({"scenarios": rows, "pytest": tail}, indent=2))
        return
    print(f"{'scenario':48} {'billed':>6} {'batches':>7} {'uploads':>7} {'failed':>6} {'verdicts':>8}  exit codes")
    for r in rows:
        print(f"{r['scenario']:48} {r['billed']:>6} {r['creates']:>7} {r['uploads']:>7} {r['failed']:>6} "
              f"{r['verdicts']:>8}  {r['exit_codes']}")
    print(f"pytest: {tail}")


if __name__ == "__main__":
    main(sys.argv[1:])
