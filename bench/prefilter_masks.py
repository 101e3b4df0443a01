"""The self-name prefilter against the full detector on every answer: same masks, and the time each takes.

``python bench/prefilter_masks.py --n 100000`` generates ``--n`` seeded answers
(:mod:`bench._answers`: about 400 characters, 5 % with a planted name in one of the forms the
detector reads through, 20 % tricky ordinary text), finds their self-name spans twice, with
:func:`judgelab.labeler.blinding.detect_self_identifying_many` (one prefilter pass, the full detector
only on candidates) and with :func:`judgelab.labeler.blinding.detect_self_identifying` on each answer,
and prints the CPU time of each, the candidates and whether every span and masked text is
identical. Printed, not asserted (the suite compares 20,000 in
``tests/test_self_id_prefilter.py``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._answers import answers
from judgelab.labeler.blinding import _candidates, detect_self_identifying, detect_self_identifying_many, mask

POOL = ("claude", "claude-3.5-sonnet", "gpt-5.1-mini", "o3", "othermodel")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    args = parser.parse_args()
    texts = list(answers(args.n, seed=53, planted=0.05, tricky=0.2))
    start = time.process_time()
    fast = detect_self_identifying_many(texts, POOL)
    fast_s = time.process_time() - start
    start = time.process_time()
    slow = [detect_self_identifying(t, POOL) for t in texts]
    slow_s = time.process_time() - start
    candidates = len(_candidates(texts, tuple(sorted(POOL))))
    same_spans = sum(f == s for f, s in zip(fast, slow, strict=True))
    same_masks = sum(mask(t, f) == mask(t, s) for t, f, s in zip(texts, fast, slow, strict=True))
    print(f"{args.n:,} generated answers; {sum(1 for s in slow if s):,} masked by the full detector")
    print(f"  prefilter + detector on candidates: {fast_s:7.1f} s CPU ({candidates:,} candidates)")
    print(f"  full detector on every answer     : {slow_s:7.1f} s CPU")
    print(f"  identical spans: {same_spans:,} of {args.n:,}; identical masked text: {same_masks:,} of {args.n:,}")


if __name__ == "__main__":
    main()
