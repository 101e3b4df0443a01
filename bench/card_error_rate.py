"""The report card's error rates: false FAILs with no bias, power to flag each injected bias.

Run: ``python bench/card_error_rate.py`` (a few minutes). ``--runs``, ``--n`` and ``--size``
change the set-up.

Each run is one card of every pairwise probe (position, verbosity, formatting, tone, citations,
truncation, byline) on the bundled sample with ``--n`` pairs, judged by the fake judge with a
fresh seed (so a fresh draw of every verdict) and a fresh choice of pairs, read exactly as
``judgelab report`` reads it (:func:`judgelab.calibration.probes.analyse_evidence`).

* **No bias**: the share of cards that show any FAIL, with the verdicts adjusted for the rows
  tested (Holm, the default), with Benjamini-Hochberg, and read row by row at 95% (``none``);
  and the share of cards whose placebo arm would FAIL under the decoration rule.
* **One bias at a time** (``--size``, a win-rate lift: 0.2 = the favoured side wins 70% of
  otherwise even comparisons): the power to flag it, the share of cards whose row for that
  bias FAILs (raw reading, Holm-adjusted), and the share of cards with a FAIL on any *other*
  row.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._measure import machine
from judgelab.calibration.judges import FakeJudge
from judgelab.calibration.probes import Analysis, analyse_evidence, simulate_evidence
from judgelab.calibration.stats import adjust_p_values

INJECTED = ("position", "verbosity", "formatting", "tone", "citations", "byline")


def _any_fail(analysis: Analysis, skip: str | None = None) -> bool:
    return any(
        "FAIL" in (r.verdict_raw, r.verdict_mitigated, r.details.get("pointwise_verdict"))
        for r in analysis.results if r.bias != skip
    )


def _null(runs: int, n: int) -> None:
    holm = bh = alone = placebo = 0
    start = time.perf_counter()
    for seed in range(runs):
        analysis = analyse_evidence(simulate_evidence(FakeJudge(seed=seed, family="claude"), n=n, seed=seed))
        control = analysis.error_control
        assert control is not None
        holm += _any_fail(analysis)
        truncation = analysis.result("truncation")
        trunc_fail = truncation is not None and "FAIL" in (truncation.verdict_raw, truncation.verdict_mitigated)
        alone += trunc_fail or any(t.verdict == "FAIL" for t in control.tests)
        q = adjust_p_values([t.p_value for t in control.tests], method="bh")
        survives = (t.verdict == "FAIL" and p < control.alpha for t, p in zip(control.tests, q, strict=True))
        bh += trunc_fail or any(survives)
        placebo += control.placebo_verdict == "FAIL"
    print(f"no bias · {runs} cards · n={n} pairs · {time.perf_counter() - start:.0f} s")
    print(f"  any FAIL: Holm {holm / runs:.1%} · Benjamini-Hochberg {bh / runs:.1%} · row by row at 95% "
          f"{alone / runs:.1%} (target for the card: <= 5%)")
    print(f"  placebo arm FAIL (its own 95% reading, unadjusted): {placebo / runs:.1%}")


def _power(runs: int, n: int, size: float) -> None:
    print(f"one bias at a time · size {size:g} (win-rate lift; pointwise {size:g} Likert points for "
          f"verbosity) · {runs} cards each · n={n} pairs")
    for bias in INJECTED:
        flagged = others = 0
        for seed in range(runs):
            judge = FakeJudge(seed=10_000 + seed, family="claude", **{bias: size})
            analysis = analyse_evidence(simulate_evidence(judge, n=n, seed=seed))
            row = analysis.result(bias)
            flagged += row is not None and row.verdict_raw == "FAIL"
            others += _any_fail(analysis, skip=bias)
        print(f"  {bias:11s} power {flagged / runs:6.1%} · another row FAILs on {others / runs:5.1%} of cards")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="Cards with no bias.")
    parser.add_argument("--power-runs", type=int, default=60, help="Cards per injected bias.")
    parser.add_argument("--n", type=int, default=20, help="Pairs per card.")
    parser.add_argument("--size", type=float, default=0.2, help="Injected lift (fraction of win rate).")
    args = parser.parse_args()
    print(f"report card error rates · {machine()}")
    _null(args.runs, args.n)
    _power(args.power_runs, args.n, args.size)


if __name__ == "__main__":
    main()
