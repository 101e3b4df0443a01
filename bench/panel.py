"""``judgelab panel``'s statistics on 9 judges x 50,000 answers, and their coverage with known effects.

Run: ``python bench/panel.py`` (speed; ``--coverage N`` also runs N replicates of the coverage
panel, ``--tasks T`` tasks each).

Speed: nine judges of four families (gpt x3, claude x2, llama x2, mistral x2), each also one of
the nine answering models, score 50,004 answers to 5,556 tasks on likert5 (450,036 judgements),
with set self-bias, family-bias and leniency. The figure is the wall time of
:func:`judgelab.calibration.panel.panel_analysis` (residual matrix, 9 regressions, gaps, both juries,
kappa with its task jackknife and residual spread for 11 rows) plus rendering the markdown, the
JSON and the PNG heatmap: what ``judgelab panel --png`` does after reading the store.

Coverage: :func:`judgelab.calibration.panel.coverage_of_known_effects`: share of the 95% intervals that
cover each judge's set self-bias, family-bias and (for the judge outside the pool) leniency.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._measure import machine, peak_rss_mb
from judgelab.calibration.panel import (
    SimJudge,
    coverage_of_known_effects,
    panel_analysis,
    panel_json,
    render_markdown,
    simulate_panel,
    to_scale,
    write_png,
)

FAMILIES = {"gpt": 3, "claude": 2, "llama": 2, "mistral": 2}
MODELS = {f"{fam}-{i}": fam for fam, k in FAMILIES.items() for i in range(k)}
JUDGES = [SimJudge(m, f, self_bias=0.3 * (i % 3 == 0), family_bias=0.15 * (i % 2 == 0), leniency=0.1 * (i - 4))
          for i, (m, f) in enumerate(MODELS.items())]


def speed(n_answers: int, seed: int) -> dict[str, float]:
    """Time the analysis and the three renderings on one simulated panel."""
    frame = to_scale(simulate_panel(JUDGES, MODELS, n_tasks=-(-n_answers // len(MODELS)), rng=seed), "likert5")
    start = time.perf_counter()
    result = panel_analysis(frame, scale="likert5")
    analysed = time.perf_counter()
    render_markdown(result)
    panel_json(result)
    with tempfile.TemporaryDirectory() as tmp:
        write_png(result, Path(tmp) / "panel.png")
    done = time.perf_counter()
    return {"judgements": len(frame), "answers": int(frame["answer_id"].nunique()),
            "analysis_s": analysed - start, "total_s": done - start}


def main() -> None:
    """Print the speed figure and, on request, the coverage."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=50_000)
    parser.add_argument("--coverage", type=int, default=0, metavar="N", help="coverage replicates (0: skip)")
    parser.add_argument("--tasks", type=int, default=40, help="tasks per coverage replicate")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(machine())
    fig = speed(args.answers, args.seed)
    print(f"panel of {len(JUDGES)} judges x {fig['answers']:,} answers ({fig['judgements']:,} judgements): "
          f"analysis {fig['analysis_s']:.1f} s, with markdown + JSON + PNG {fig['total_s']:.1f} s "
          f"(budget 30 s); peak memory {peak_rss_mb():.0f} MiB")
    if args.coverage:
        start = time.perf_counter()
        cover = coverage_of_known_effects(reps=args.coverage, n_tasks=args.tasks, rng=args.seed)
        print(f"coverage of 95% intervals, {args.coverage} replicates of {args.tasks} tasks x 5 answers "
              f"({time.perf_counter() - start:.0f} s):")
        for name, share in cover.items():
            print(f"  {name:32s} {share:.1%}")


if __name__ == "__main__":
    main()
