"""The load test at full size: 50 raters label 200 answers each from two processes (10,000 labels).

Run: ``python bench/load_labels.py`` (four to six minutes on 2 CPUs; ``--per-rater`` to change the
size). The suite runs the same function (``tests/reliability/test_load.py``) at 20 labels each:
the same 50 raters racing from two processes, fewer rounds. Every check of the test holds here
too: each acknowledged label stored exactly once, no duplicates, every answer exactly k = 2 labels.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.reliability.test_load import RATERS, fifty_raters_label


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-rater", type=int, default=200, help="labels per rater (default 200)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        elapsed = fifty_raters_label(Path(tmp) / "load.duckdb", per_rater=args.per_rater)
    n = RATERS * args.per_rater
    print(f"{n:,} labels from {RATERS} raters in two processes in {elapsed:.1f} s ({n / elapsed:.1f} labels/s); "
          "every acknowledged label stored once, every answer exactly k = 2 labels")


if __name__ == "__main__":
    main()
