"""Gold items cannot be told apart by where they are (issue 47 item 4), and a length gap is warned.

The queues are the real store's (a DuckDB file in tmp_path, gold imported through the CLI's
function, each rater's queue read as the Rate page reads it). Every rater's generator is their
own seed (``rater_rng(seed, rater_id)``), so 200 raters are 200 seeded draws.

The statistic: the Wald-Wolfowitz runs test of each rater's gold/live sequence. Its p-value is
taken from the runs' exact distribution under random order, randomised within ties
(``P(R < r) + U * P(R = r)``, ``U`` uniform from a seeded generator), so under a random order it is
exactly uniform on (0, 1) and the Kolmogorov-Smirnov test of the 200 p-values against the uniform
law is valid; the normal approximation's two-sided p-values (``scipy.stats.norm``) are reported
beside it. The old placement (one item per equal stretch) alternated exactly at rate 1 (R = 32 of
32 every time): every randomised p-value 1, KS D = 1.000 (p = 0), gold at every even place.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from judgelab.admin._quality import gold_length_gap, import_quality_file
from judgelab.labeler.quality import QualitySettings, quality_positions
from judgelab.labeler.store import Store
from tests.app.conftest import build_pool

N_RATERS = 200
N_LIVE = 16


def runs(seq: list[bool]) -> int:
    """Runs of equal values in ``seq`` (``[G, L, L, G]`` has 3)."""
    return 1 + sum(a != b for a, b in itertools.pairwise(seq))


def runs_pmf(n1: int, n2: int) -> dict[int, float]:
    """The exact distribution of the number of runs of ``n1`` and ``n2`` items in random order.

    P(R = 2k) = 2 C(n1-1, k-1) C(n2-1, k-1) / C(n1+n2, n1), and
    P(R = 2k+1) = [C(n1-1, k) C(n2-1, k-1) + C(n1-1, k-1) C(n2-1, k)] / C(n1+n2, n1).
    """
    total = math.comb(n1 + n2, n1)
    pmf: dict[int, float] = {}
    for r in range(2, n1 + n2 + 1):
        k = r // 2
        if r % 2 == 0:
            ways = 2 * math.comb(n1 - 1, k - 1) * math.comb(n2 - 1, k - 1)
        else:
            ways = math.comb(n1 - 1, k) * math.comb(n2 - 1, k - 1) + math.comb(n1 - 1, k - 1) * math.comb(n2 - 1, k)
        if ways:
            pmf[r] = ways / total
    return pmf


def randomised_p(seq: list[bool], u: float) -> float:
    """The runs test's randomised p-value: exactly uniform when the order is random."""
    n1 = sum(seq)
    pmf = runs_pmf(n1, len(seq) - n1)
    r = runs(seq)
    return sum(p for k, p in pmf.items() if k < r) + u * pmf.get(r, 0.0)


def normal_p(seq: list[bool]) -> float:
    """The Wald-Wolfowitz normal approximation's two-sided p-value."""
    n1 = sum(seq)
    n2 = len(seq) - n1
    n = n1 + n2
    mean = 2 * n1 * n2 / n + 1
    var = 2 * n1 * n2 * (2 * n1 * n2 - n) / (n * n * (n - 1))
    return float(2 * stats.norm.sf(abs(runs(seq) - mean) / math.sqrt(var)))


def gold_csv(path: Path, n: int, *, words: int) -> Path:
    """``n`` gold items of ``words`` words each."""
    body = " ".join(["steps"] * (words - 2))
    path.write_text("id,prompt,text,score\n" + "".join(
        f"g{i:02d},Ticket G{i}: the router drops,\"Restart it. {body}\",3\n" for i in range(n)), "utf-8")
    return path


@pytest.fixture(scope="module")
def sequences(tmp_path_factory: pytest.TempPathFactory) -> list[list[bool]]:
    """Each of 200 raters' score queue at rate 1.0 as a gold (True) / live (False) sequence."""
    tmp = tmp_path_factory.mktemp("gold")
    pool = build_pool(tmp / "g.duckdb", n_tasks=N_LIVE // 2)
    store = pool.store
    ids = [store.add_rater(f"r{i:03d}")[0].rater_id for i in range(N_RATERS)]
    store.assign_k(pool.originals, N_RATERS, ids, seed=3)
    store.set_quality_settings(QualitySettings(rate=1.0, seed=11))
    import_quality_file(store, gold_csv(tmp / "gold.csv", N_LIVE, words=12))
    gold = set(store.query("SELECT item_id FROM quality_items")["item_id"])
    out = []
    for rater_id in ids:
        queue = store.rater_queue(rater_id)
        assert len(queue) == 2 * N_LIVE  # every gold item once, every live item once
        out.append([item.item_id in gold for item in queue])
    return out


def test_gold_positions_at_rate_1_follow_no_pattern(sequences: list[list[bool]]) -> None:
    u = np.random.default_rng(0).random(len(sequences))
    p_random = np.array([randomised_p(s, float(x)) for s, x in zip(sequences, u, strict=True)])
    p_normal = np.array([normal_p(s) for s in sequences])
    ks = stats.kstest(p_random, "uniform")
    print(f"\nruns test over {len(sequences)} seeds: randomised p KS D = {ks.statistic:.3f}, p = {ks.pvalue:.3f}; "
          f"normal-approx p < 0.05 in {np.mean(p_normal < 0.05):.1%}, deciles "
          f"{np.histogram(p_random, bins=10, range=(0, 1))[0].tolist()}")
    # Uniform p-values: the runs (alternation, bunching) look like a random order's.
    assert ks.pvalue > 0.01, (ks.statistic, ks.pvalue)
    assert np.mean(p_normal < 0.05) < 0.10
    # Never the old exact alternation, and two gold items in a row happen as often as chance has it:
    # P(next is gold | this is gold) = 15/31 in a random order of 16 and 16.
    assert not any(runs(s) == len(s) for s in sequences)
    pairs = Counter((a, b) for s in sequences for a, b in itertools.pairwise(s))
    after_gold = pairs[(True, True)] / (pairs[(True, True)] + pairs[(True, False)])
    assert abs(after_gold - 15 / 31) < 0.03, after_gold


def test_every_place_in_the_queue_is_as_likely_to_hold_gold(sequences: list[list[bool]]) -> None:
    # "Position after a submit": the n-th item shown is gold with the same chance for every n.
    per_place = np.array(sequences, dtype=int).sum(axis=0)
    chi2 = stats.chisquare(per_place)
    print(f"\ngold per queue place (chi-square, {len(per_place) - 1} df): {chi2.statistic:.1f}, p = {chi2.pvalue:.3f}")
    assert chi2.pvalue > 0.01, per_place.tolist()


@pytest.mark.parametrize("n_live, n_gold", [(40, 4), (30, 10), (16, 16)])
def test_gaps_between_gold_items_follow_a_random_order(n_live: int, n_gold: int) -> None:
    """At any rate, the live items before each gold item are a random order's (chi-square on gaps)."""
    gaps: Counter[int] = Counter()
    seeds = 2000
    for seed in range(seeds):
        _, spread = quality_positions(list(range(1, n_live + 1)), n_gold, 0, rng=random.Random(f"s{seed}"))
        # Live items before the first gold item: in a random order, P(g) = C(n_live-g+n_gold-1, n_gold-1)/C(n, n_gold).
        gaps[min(spread)] += 1
    total = math.comb(n_live + n_gold, n_gold)
    expected = np.array([math.comb(n_live - g + n_gold - 1, n_gold - 1) / total for g in range(n_live + 1)]) * seeds
    observed = np.array([gaps[g] for g in range(n_live + 1)], dtype=float)
    keep = expected >= 5  # pool the sparse tail into one cell
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    chi2 = stats.chisquare(obs[exp > 0], exp[exp > 0])
    assert chi2.pvalue > 0.001, (n_live, n_gold, chi2)


def test_gold_much_shorter_than_live_answers_is_warned(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from judgelab.cli import main

    pool = build_pool(tmp_path / "w.duckdb", n_tasks=6)
    store: Store = pool.store
    short = gold_csv(tmp_path / "short.csv", 6, words=3)  # the pool's answers are about 11 words
    done = CliRunner().invoke(main, ["gold", "import", str(short), "--db", str(store.path)])
    assert done.exit_code == 0, done.output
    gap = gold_length_gap(store)
    assert gap is not None and gap.telling and gap.gold_median == 3
    assert "warning: Gold answers are shorter than live ones: median 3 words" in done.output
    assert "Mann-Whitney p = " in done.output


def test_gold_as_long_as_live_answers_is_not_warned(tmp_path: Path) -> None:
    pool = build_pool(tmp_path / "ok.duckdb", n_tasks=6)
    import_quality_file(pool.store, gold_csv(tmp_path / "ok.csv", 6, words=11))
    gap = gold_length_gap(pool.store)
    assert gap is not None and not gap.telling
