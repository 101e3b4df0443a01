"""FakeJudge: deterministic, and each knob moves the output by its stated size.

The Monte Carlo checks draw N replies with distinct keys (the way distinct calls seed the judge)
and compare the observed effect with the stated one. With N = 3000 draws a win rate's standard
error is at most 0.5/sqrt(3000) = 0.009, so a tolerance of 0.035 is about 4 standard errors.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from judgelab.calibration import formats, perturb
from judgelab.calibration.judges import Failure, FakeJudge, Judge, Judgement
from judgelab.calibration.judges._base import Format, Kind
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Rubric

N = 3000
TOL = 0.035


def verdicts(judge: FakeJudge, a: str, b: str, n: int = N) -> np.ndarray:
    """Parsed pairwise5 verdicts of ``n`` independent draws on (A=a, B=b)."""
    out = []
    for i in range(n):
        result = formats.parse("pairwise5", judge.reply("pairwise", "pairwise5", [a, b], key=str(i)))
        assert result.value is not None
        out.append(result.value)
    return np.array(out)


def a_win_rate(judge: FakeJudge, a: str, b: str) -> float:
    """Share of decisions (ties excluded) that went to Response A."""
    v = verdicts(judge, a, b)
    decided = v[v != 0]
    return float(np.mean(decided > 0))


def scores(judge: FakeJudge, answer: str, fmt: Format = "likert5", n: int = N) -> np.ndarray:
    out = []
    for i in range(n):
        result = formats.parse(fmt, judge.reply("pointwise", fmt, [answer], key=str(i)))
        assert result.value is not None
        out.append(result.value)
    return np.array(out)


# ---------------------------------------------------------------- protocol and determinism


def test_implements_the_judge_protocol() -> None:
    assert isinstance(FakeJudge(seed=0), Judge)


def test_same_inputs_and_seed_give_the_same_judgement(rubric: Rubric, task: str, answer: str) -> None:
    np.random.seed(123)
    random.seed(123)

    async def run() -> tuple[list[str], list[str], list[str]]:
        one, two, other = FakeJudge(seed=7, noise=0.8), FakeJudge(seed=7, noise=0.8), FakeJudge(seed=8, noise=0.8)
        prompts = [f"{task} (case {i})" for i in range(20)]
        a = [(await one.score(p, answer, rubric)).raw for p in prompts]
        b = [(await two.score(p, answer, rubric)).raw for p in prompts]
        c = [(await other.score(p, answer, rubric)).raw for p in prompts]
        return a, b, c

    a, b, c = asyncio.run(run())
    assert a == b
    assert a != c  # another seed draws differently
    # No global random state was touched: the next global draws are the first after seeding.
    np_next, py_next = np.random.random(), random.random()
    np.random.seed(123)
    random.seed(123)
    assert (np_next, py_next) == (np.random.random(), random.random())


def test_knobs_are_part_of_the_cache_key(rubric: Rubric, task: str, answer: str) -> None:
    plain = FakeJudge(seed=0).build("pointwise", "likert5", rubric, task, [answer])
    biased = FakeJudge(seed=0, verbosity=0.2).build("pointwise", "likert5", rubric, task, [answer])
    reseeded = FakeJudge(seed=1).build("pointwise", "likert5", rubric, task, [answer])
    assert len({plain.cache_key, biased.cache_key, reseeded.cache_key}) == 3


def test_judgement_record(rubric: Rubric, task: str, answer: str) -> None:
    judge = FakeJudge(seed=0, family="claude")
    j = asyncio.run(judge.score(task, answer, rubric, "likert5"))
    assert j.parsed and j.value in {1.0, 2.0, 3.0, 4.0, 5.0}
    assert j.passed == (j.value >= 4)
    assert j.model == "fake-judge" and j.cost_usd == 0.0 and j.attempts == 1
    assert j.input_tokens > 0 and j.output_tokens > 0
    assert j.raw.rstrip().splitlines()[-1].startswith("VERDICT: ")


def test_a_reply_without_a_value_is_a_typed_parse_failure() -> None:
    def judgement(raw: str, value: float | None, **kw: Any) -> Judgement:
        return Judgement("pointwise", "likert5", "m", "k", raw, value, **kw)

    parsed = judgement("VERDICT: 4", 4.0)
    assert parsed.failure_kind is None and parsed.failure is None
    unparsed = judgement("hmm", None)
    assert unparsed.failure == Failure("parse_failure", "no value parsed from the reply")
    assert not unparsed.failure.no_reply
    said = judgement("x", None, parse_error="no VERDICT line")
    assert said.failure == Failure("parse_failure", "no VERDICT line")
    batch = judgement("", None, parse_error="batch expired", failure_kind="batch_error")
    assert batch.failure == Failure("batch_error", "batch expired") and batch.failure.no_reply


def test_run_on_a_prebuilt_call_matches_score(rubric: Rubric, task: str, answer: str) -> None:
    judge = FakeJudge(seed=3, noise=0.5)
    call = judge.build("pointwise", "numeric100", rubric, task, [answer])
    direct = asyncio.run(judge.score(task, answer, rubric, "numeric100"))
    via_call = asyncio.run(judge.run(call, rubric))
    assert direct.raw == via_call.raw and direct.cache_key == via_call.cache_key == call.cache_key
    bad = formats.build_call("pointwise", "likert5", "m", rubric, task, answer)
    with pytest.raises(InputError):
        asyncio.run(judge.run(type(bad)("pointwise", "likert5", "m", "sys", "free text")))


# ---------------------------------------------------------------- each knob, alone


def test_quality_decides_without_biases(answer: str, weak_answer: str) -> None:
    judge = FakeJudge(seed=0)
    assert a_win_rate(judge, answer, weak_answer) > 0.9
    assert a_win_rate(judge, weak_answer, answer) < 0.1
    assert scores(judge, answer).mean() > scores(judge, weak_answer).mean() + 1


def test_equal_answers_split_evenly_without_biases(answer: str) -> None:
    assert a_win_rate(FakeJudge(seed=0), answer, answer) == pytest.approx(0.5, abs=TOL)


@pytest.mark.parametrize("position", [0.4, 0.15, -0.2])
def test_position_lifts_the_first_shown_answer_by_its_size(answer: str, position: float) -> None:
    judge = FakeJudge(seed=1, position=position)
    assert a_win_rate(judge, answer, answer) == pytest.approx(0.5 + position, abs=TOL)


def test_verbosity_pairwise_lifts_the_longer_side_in_both_orders(answer: str) -> None:
    padded = perturb.pad(answer).text  # same content, >= 1.8x longer (clipped to a full doubling)
    judge = FakeJudge(seed=2, verbosity=0.3)
    assert 1 - a_win_rate(judge, answer, padded) == pytest.approx(0.8, abs=TOL)
    assert a_win_rate(judge, padded, answer) == pytest.approx(0.8, abs=TOL)
    assert a_win_rate(FakeJudge(seed=2), padded, answer) == pytest.approx(0.5, abs=TOL)


def test_verbosity_pointwise_is_likert_points_per_doubling(answer: str) -> None:
    padded = perturb.pad(answer)
    judge = FakeJudge(seed=3, verbosity=0.3)
    gap = scores(judge, padded.text).mean() - scores(judge, answer).mean()
    assert gap == pytest.approx(0.3 * np.log2(padded.length_ratio), abs=0.05)
    # numeric100: the same knob is worth 25 points per Likert point.
    gap100 = scores(judge, padded.text, "numeric100").mean() - scores(judge, answer, "numeric100").mean()
    assert gap100 == pytest.approx(25 * 0.3 * np.log2(padded.length_ratio), abs=1.0)


@pytest.mark.parametrize(
    ("knob", "decorate"),
    [
        pytest.param("formatting", perturb.markdown, id="formatting"),
        pytest.param("tone", perturb.tone, id="tone"),
        pytest.param("citations", perturb.citations, id="citations"),
    ],
)
def test_decoration_knobs_pairwise_and_pointwise(answer: str, knob: str, decorate: object) -> None:
    decorated = decorate(answer).text  # type: ignore[operator]
    knobs: dict[str, Any] = {knob: 0.25}
    judge = FakeJudge(seed=4, **knobs)
    # Decorated vs plain: lengths differ, but verbosity is 0 so only the decoration acts.
    assert a_win_rate(judge, decorated, answer) == pytest.approx(0.75, abs=TOL)
    assert 1 - a_win_rate(judge, answer, decorated) == pytest.approx(0.75, abs=TOL)
    gap = scores(judge, decorated).mean() - scores(judge, answer).mean()
    assert gap == pytest.approx(0.25, abs=0.05)


def test_byline_only_rewards_the_judges_own_family(answer: str) -> None:
    own = perturb.byline(answer, "Claude").text
    other = perturb.byline(answer, "GPT").text
    judge = FakeJudge(seed=5, byline=0.3, family="claude")
    assert a_win_rate(judge, own, other) == pytest.approx(0.8, abs=TOL)
    assert a_win_rate(judge, other, answer) == pytest.approx(0.5, abs=TOL)
    assert a_win_rate(FakeJudge(seed=5, byline=0.3), own, other) == pytest.approx(0.5, abs=TOL)


def test_family_style_from_text_markers(answer: str) -> None:
    claude_like = "I'd be happy to help. " + answer + " Let me know if this works."
    gpt_like = "Great question! " + answer + " Feel free to ask more."
    # Constant quality: the two texts differ in content words, which is not what this tests.
    judge = FakeJudge(seed=6, family_style={"claude": 0.3}, quality_of=lambda t: 0.5)
    assert a_win_rate(judge, claude_like, gpt_like) == pytest.approx(0.8, abs=TOL)
    gap = scores(judge, claude_like).mean() - scores(judge, gpt_like).mean()
    assert gap == pytest.approx(0.3, abs=0.06)


def test_knob_at_half_means_the_favoured_side_wins_nearly_always(answer: str) -> None:
    judge = FakeJudge(seed=6, family_style={"claude": 0.5}, quality_of=lambda t: 0.5)
    claude_like = "I'd be happy to help. " + answer
    assert a_win_rate(judge, answer, claude_like) == pytest.approx(0.005, abs=0.01)


def test_reseeded_is_an_independent_replication(rubric: Rubric, task: str, answer: str) -> None:
    judge = FakeJudge(seed=0, noise=1.0, verbosity=0.1)
    other = judge.reseeded(1)
    assert other.verbosity == 0.1 and other.seed == 1 and judge.seed == 0
    a = judge.build("pointwise", "numeric100", rubric, task, [answer])
    b = other.build("pointwise", "numeric100", rubric, task, [answer])
    assert a.cache_key != b.cache_key
    assert asyncio.run(judge.run(a)).raw != asyncio.run(other.run(b)).raw


def test_family_style_with_explicit_style_of(answer: str) -> None:
    judge = FakeJudge(
        seed=6, family_style={"gpt": -0.2}, style_of=lambda t: "gpt" if "gpt" in t else None
    )
    assert a_win_rate(judge, answer + " gpt", answer + " xyz") == pytest.approx(0.3, abs=TOL)


def test_leniency_shifts_pointwise_not_pairwise(answer: str) -> None:
    plain, lenient = FakeJudge(seed=7), FakeJudge(seed=7, leniency=0.5)
    assert scores(lenient, answer).mean() - scores(plain, answer).mean() == pytest.approx(0.5, abs=0.05)
    assert a_win_rate(lenient, answer, answer) == pytest.approx(0.5, abs=TOL)


def test_binary_accepts_at_three_and_a_half(answer: str, weak_answer: str) -> None:
    judge = FakeJudge(seed=8)
    assert judge.latent(answer) > 3.0 and judge.latent(weak_answer) < 3.5
    accept_strong = scores(FakeJudge(seed=8, leniency=3.5 - judge.latent(answer) + 0.01), answer, "binary")
    assert accept_strong.mean() == 1.0
    assert scores(judge, weak_answer, "binary").mean() == 0.0


def test_noise_spreads_scores(answer: str) -> None:
    quiet = scores(FakeJudge(seed=9), answer).std()
    noisy = scores(FakeJudge(seed=9, noise=1.0), answer).std()
    assert quiet < 0.6 < noisy  # randomised rounding alone has sd <= 0.5


def test_parse_failures_are_recorded_never_scored(rubric: Rubric, task: str, answer: str) -> None:
    judge = FakeJudge(seed=10, parse_failure_rate=0.2)

    async def run() -> list[object]:
        calls = [judge.score(f"{task} #{i}", answer, rubric, fmt) for i in range(300) for fmt in ("likert5", "binary")]
        calls += [judge.compare(f"{task} #{i}", answer, answer, rubric) for i in range(300)]
        return list(await asyncio.gather(*calls))

    results = asyncio.run(run())
    failed = [j for j in results if not j.parsed]  # type: ignore[attr-defined]
    assert 0.15 < len(failed) / len(results) < 0.25
    assert all(j.value is None and j.parse_error and j.passed is None for j in failed)  # type: ignore[attr-defined]


def test_tie_rate(answer: str) -> None:
    v = verdicts(FakeJudge(seed=11, tie_rate=0.2), answer, answer)
    assert np.mean(v == 0) == pytest.approx(0.2, abs=TOL)
    assert np.mean(verdicts(FakeJudge(seed=11), answer, answer) == 0) == 0.0


def test_quality_of_replaces_the_text_signal(answer: str, weak_answer: str) -> None:
    truth = {answer: 0.1, weak_answer: 0.9}
    judge = FakeJudge(seed=12, quality_of=truth.__getitem__)
    assert a_win_rate(judge, weak_answer, answer) > 0.9
    with pytest.raises(InputError, match="must be in"):
        FakeJudge(seed=0, quality_of=lambda t: 3.0).latent(answer)


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"position": 0.51}, id="position_past_limit"),
        pytest.param({"verbosity": -0.7}, id="verbosity_below"),
        pytest.param({"family_style": {"claude": 0.9}}, id="style_too_big"),
        pytest.param({"parse_failure_rate": 1.5}, id="rate_over_one"),
        pytest.param({"noise": -1.0}, id="negative_noise"),
        pytest.param({"ref_words": 0}, id="zero_ref_words"),
    ],
)
def test_out_of_range_knobs_fail_at_construction(kwargs: dict[str, object]) -> None:
    with pytest.raises(InputError):
        FakeJudge(seed=0, **kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------- responder for the mock server


def _request(user: str, model: str = "m") -> dict[str, object]:
    return {"model": model, "system": "s", "messages": [{"role": "user", "content": user}]}


def test_respond_gives_a_parseable_verdict_for_each_format(rubric: Rubric, task: str, answer: str) -> None:
    judge = FakeJudge(seed=0)
    for fmt in formats.FORMATS:
        kind: Kind = "pairwise" if fmt in formats.PAIRWISE_FORMATS else "pointwise"
        answers: Sequence[str] = [answer, answer] if kind == "pairwise" else [answer]
        call = formats.build_call(kind, fmt, "m", rubric, task, answers)
        reply = judge.respond(_request(call.user))
        assert formats.parse(fmt, reply).ok, (fmt, reply)
        # Content blocks instead of a string give the same reply.
        blocks = _request(call.user)
        blocks["messages"] = [{"role": "user", "content": [{"type": "text", "text": call.user}]}]
        assert judge.respond(blocks) == reply


def test_respond_pads_a_padding_request(answer: str) -> None:
    reply = FakeJudge(seed=0).respond(_request(perturb.pad_prompt(answer)))
    assert perturb.check_padding(answer, reply).length_ratio >= 1.8


def test_respond_to_other_text_has_no_verdict() -> None:
    reply = FakeJudge(seed=0).respond(_request("hello"))
    assert not formats.parse("likert5", reply).ok
