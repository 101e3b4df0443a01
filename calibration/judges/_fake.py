"""A deterministic fake judge with injectable biases, for tests, demos and dry runs.

:class:`FakeJudge` reads everything from the text it is shown, like a real judge: a latent
quality from the answer's content, and each bias from a marker it can detect (length, markdown,
confident framing, citation lines, a byline, a family's stylistic tics). Each knob has a stated
size in the units the probes measure, so a test can inject a known effect and check that the
probe recovers it.

**Pointwise formats.** The judge forms a latent score ``L`` on the 1..5 scale, in *Likert
points*::

    L = 1 + 4·q(answer)                                    content quality, q in [0, 1]
        + leniency
        + verbosity · clip(log2(words / ref_words), -2, 2)  +verbosity per doubling of length
        + formatting · markdown(answer)                     markdown in [0, 1]
        + tone · [confident framing present]
        + citations · [citation lines present]
        + byline · [byline names the judge's own family]
        + family_style[style(answer)]
        + noise · N(0, 1)

``likert5`` reports ``L`` clipped to 1..5; ``numeric100`` reports ``25·(L − 1)`` clipped to
0..100 (so every knob is worth 25 points there); both are rounded by unbiased randomised
rounding, so a knob's mean effect is exactly its size away from the scale's ends. ``binary``
answers ACCEPT when ``L >= 3.5`` (a rounded 4, the default pass mark).

**Comparative formats.** The judge prefers Response A with log-odds ::

    d = 2·(m_A − m_B)                      m = 1 + 4·q + noise·N(0, 1), in Likert points
        + logit(0.5 + position)
        + logit(0.5 + verbosity) · clip(log2(words_A / words_B), -1, 1)
        + logit(0.5 + formatting) · (markdown_A − markdown_B)
        + logit(0.5 + k) · (marker_A − marker_B)   for tone, citations, byline, family_style

Response A wins with probability ``sigmoid(d)`` among decisions; a tie is declared with
probability ``tie_rate`` regardless. So each knob, acting alone on two answers of equal quality,
moves the win rate of the side it favours from 50% by exactly its size in *percentage points*
(``position=0.4``: the first-shown answer wins 90% of decisions; ``verbosity=0.3``: the longer
of two answers whose lengths differ 2x or more wins 80%). Biases combine additively in log-odds.
The verdict is "much better" when the sampled preference is strong (``|d + logistic noise| > 3``).

Every draw comes from a private ``random.Random`` seeded by ``sha256(seed, cache key)``: the same call with the
same seed gives the same reply, and nothing touches global random state.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from judgelab.calibration import formats, perturb, pricing
from judgelab.calibration.judges._base import JudgeCall, Judgement
from judgelab.labeler.blinding import detect_self_identifying
from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Rubric
from judgelab.labeler.scales import FORMATS, PAIRWISE_FORMATS, Format, Kind, format_spec

if TYPE_CHECKING:  # the spec module imports the formats, which import this package
    from judgelab.calibration.spec import JudgeSpec

QUALITY_SLOPE = 2.0
"""Log-odds of preferring A per Likert point of content-merit difference (comparative formats)."""

MUCH_THRESHOLD = 3.0
"""A sampled preference stronger than this (log-odds) is reported as "much better"."""

BINARY_CUT = 3.5
"""``binary`` answers ACCEPT when the latent 1..5 score reaches this."""

SCREEN_QUESTION = "Does the answer reveal which model or company wrote it?"
"""The question of the author screen (:mod:`judgelab.calibration.screen`), in its rubric's name and pass rule.

A call whose prompt asks it is answered by the fake judge as a screen: ACCEPT when the answer names
its maker or model as the rules (:func:`judgelab.labeler.blinding.detect_self_identifying`) or a byline read
it, REJECT otherwise, with the reason in the reply. A real judge reads the same prompt.
"""

STYLE_MARKERS: dict[str, tuple[str, ...]] = {
    "claude": (
        "i'd be happy to",
        "happy to help",
        "i understand",
        "to be clear",
        "worth noting",
        "let me know if",
    ),
    "gpt": (
        "certainly!",
        "great question",
        "feel free to",
        "absolutely!",
        "delve",
        "i hope this helps",
    ),
    "gemini": (
        "here's a breakdown",
        "key takeaways",
        "in summary",
        "let's break",
    ),
}
"""Phrases the default :func:`style_family` counts as each family's stylistic fingerprint.

Lower-case substrings. Pass ``style_of=`` to :class:`FakeJudge` to use your own detector.
"""

def _word_set(text: str) -> frozenset[str]:
    """A set of whitespace-separated words (keeps long word lists readable)."""
    return frozenset(text.split())


STOPWORDS: frozenset[str] = _word_set(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself just
    me more most my no nor not now of off on once only or other our ours out over own same she
    should so some such than that the their theirs them then there these they this those through
    to too under until up very was we were what when where which while who whom why will with
    would you your yours yourself us let lets i'm i'd i'll you're you'll it's that's there's
    we're we'll can't don't won't isn't aren't doesn't didn't
    """
)
"""Words that carry no content for the default quality signal."""

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_HEADER_LINE = re.compile(r"^\s*#{1,6}\s")
_BULLET_LINE = re.compile(r"^\s*[-*+]\s+\S", re.MULTILINE)
_EMPHASIS = re.compile(r"(\*\*|__)\S(?:.*?\S)?\1|(?<![*\w])\*\S(?:[^*]*\S)?\*(?!\*)")
_CONFIDENT = re.compile(
    r"\b(?:with complete confidence|definitive answer|rest assured|guaranteed to|"
    r"there is no doubt|without (?:a|any) doubt|fully resolved|100% certain)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class TextFeatures:
    """What the fake judge reads off an answer's text.

    Attributes:
        words: :func:`judgelab.calibration.perturb.count_words`.
        markdown: Fraction of {header line, bullet list, bold/italic emphasis} present (0..1).
        tone: Confident framing present (the phrases :func:`judgelab.calibration.perturb.tone` adds and
            similar ones).
        citations: A citation-styled line (``[1] ...``) present.
        byline_family: The family a ``This response was generated by <family>.`` byline names.
        quality: The default content quality :func:`text_quality`.
    """

    words: int
    markdown: float
    tone: bool
    citations: bool
    byline_family: str | None
    quality: float


def _strip_decorations(text: str) -> str:
    """The answer's content: decorations the perturbations add are removed."""
    kept: list[str] = []
    for line in text.splitlines():
        if _HEADER_LINE.match(line) or perturb.CITATION_LINE.match(line):
            continue
        if line.strip() == perturb.CITATION_HEADING:
            continue
        kept.append(line)
    body = "\n".join(kept)
    body = perturb.BYLINE.sub(" ", body)
    for phrase in (*perturb.TONE_OPENERS, *perturb.TONE_CLOSERS):
        body = body.replace(phrase, " ")
    for phrase in (*perturb.PAD_TRANSITIONS, perturb.PAD_RECAP):
        body = body.replace(phrase, " ")
    return body


def _content_words(sentence: str) -> frozenset[str]:
    words = (w.lower().replace("’", "'") for w in _WORD.findall(sentence))
    return frozenset(w for w in words if len(w) >= 3 and w not in STOPWORDS)


@lru_cache(maxsize=4096)
def text_quality(text: str) -> float:
    """The default latent quality of an answer, 0..1, from its content alone.

    Counts distinct content words (stopwords, markdown, citation lines, bylines, confident
    framing and offline-padding transitions removed) and distinct load-bearing sentences (steps,
    caveats, recommendations, numbers; see :func:`judgelab.calibration.perturb.sentence_kinds`), where a
    sentence whose content words are a subset of one already counted is a restatement and
    counts for nothing. ``q = 1 - exp(-(words + 8·load_bearing) / 100)``.

    Restating (padding) leaves ``q`` unchanged; removing a step or caveat (truncation) lowers it.
    """
    body = _strip_decorations(text)
    sentences = [
        s for line in body.splitlines() for s in perturb.split_sentences(line) if s.strip()
    ]
    distinct: set[str] = set()
    signatures: list[frozenset[str]] = []
    for s in sentences:
        words = _content_words(s)
        distinct |= words
        if perturb.sentence_kinds(s) and words:
            signatures.append(words)
    counted: list[frozenset[str]] = []
    for sig in sorted(signatures, key=len, reverse=True):
        if not any(sig <= c for c in counted):
            counted.append(sig)
    return 1.0 - math.exp(-(len(distinct) + 8 * len(counted)) / 100)


@lru_cache(maxsize=4096)
def _n_points(text: str) -> int:
    return len(_content_words(_strip_decorations(text)))


def markdown_level(text: str) -> float:
    """Fraction of the three markdown markers present: header line, bullet list, emphasis."""
    header = any(_HEADER_LINE.match(line) for line in text.splitlines())
    bullets = bool(_BULLET_LINE.search(text))
    emphasis = bool(_EMPHASIS.search(text))
    return (header + bullets + emphasis) / 3


@lru_cache(maxsize=4096)
def style_family(text: str) -> str | None:
    """The family whose :data:`STYLE_MARKERS` the text shows most (``None`` on none or a tie)."""
    lowered = text.lower()
    hits = {fam: sum(m in lowered for m in marks) for fam, marks in STYLE_MARKERS.items()}
    best = max(hits.values())
    winners = [fam for fam, h in hits.items() if h == best]
    return winners[0] if best > 0 and len(winners) == 1 else None


@lru_cache(maxsize=4096)
def text_features(text: str) -> TextFeatures:
    """Read every marker the fake judge reacts to off ``text``."""
    m = perturb.BYLINE.search(text)
    return TextFeatures(
        words=perturb.count_words(text),
        markdown=markdown_level(text),
        tone=bool(_CONFIDENT.search(text)),
        citations=any(perturb.CITATION_LINE.match(line) for line in text.splitlines()),
        byline_family=m.group("family").strip() if m else None,
        quality=text_quality(text),
    )


MAX_WIN_SHIFT = 0.495
"""A knob of size 0.5 (the favoured side always wins) is applied as this, to keep log-odds finite."""


def _logit_pp(name: str, pp: float) -> float:
    """Log-odds that move a 50% win rate by ``pp`` (a fraction: 0.4 = 40 percentage points)."""
    if not -0.5 <= pp <= 0.5:
        raise InputError(
            f"FakeJudge: {name}={pp!r} is outside [-0.5, 0.5]; it is a win-rate shift from 50%",
            fix="give the effect as a fraction, e.g. 0.3 for +30 percentage points",
        )
    pp = min(max(pp, -MAX_WIN_SHIFT), MAX_WIN_SHIFT)
    return math.log((0.5 + pp) / (0.5 - pp))


def _name_of(func: Callable[..., Any] | None) -> str | None:
    if func is None:
        return None
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"


class FakeJudge:
    """A deterministic judge with known, injectable biases (see the module docstring for the math).

    Every knob is keyword-only and defaults to "no bias". Knobs are sizes in the units the
    probes report: *percentage points of win rate* (as fractions) in the comparative formats
    and *Likert points* in the pointwise ones (25 points on ``numeric100``).

    Args:
        seed: Seeds every draw together with the call's cache key.
        position: Comparative: the first-shown answer's win-rate lift over 50% between equal
            answers (``0.4`` → 90%). Every lift knob must be in [-0.5, 0.5]; ±0.5 is applied as
            ±:data:`MAX_WIN_SHIFT` (the favoured side wins 99.5%).
        verbosity: Comparative: the longer answer's win-rate lift when lengths differ 2x or
            more (scaled by ``log2`` of the ratio below that). Pointwise: Likert points per
            doubling of length relative to ``ref_words``.
        formatting: Lift for full markdown (header, bullets and emphasis; partial markdown
            gets the matching fraction).
        tone: Lift for confident framing (:func:`judgelab.calibration.perturb.tone`).
        citations: Lift for citation-styled lines (:func:`judgelab.calibration.perturb.citations`).
        byline: Lift for a byline naming the judge's own ``family``
            (:func:`judgelab.calibration.perturb.byline`); no effect when ``family`` is ``None``.
        family_style: Family -> lift for answers whose text shows that family's style
            (``{"claude": 0.3}``), detected by ``style_of``.
        leniency: Pointwise only: Likert points added to every score.
        noise: Standard deviation, in Likert points, of Gaussian noise on each answer's
            latent score (pointwise) or content merit (comparative).
        parse_failure_rate: Probability that a reply is deliberately malformed (no verdict,
            off-menu or out-of-range value); such replies are recorded parse failures.
        tie_rate: Comparative: probability of answering "tie" regardless of the answers.
        family: The judge's own model family.
        model: The model id recorded with each judgement (priced at 0 as ``fake-judge``).
        quality_of: Replaces :func:`text_quality` (e.g. a lookup of the demo data's true
            quality); must return a number in 0..1.
        style_of: Replaces :func:`style_family`.
        ref_words: Pointwise verbosity's zero point: an answer of this many words gets no
            length credit (only differences matter to a probe).
        spec: A team's judge spec (:mod:`judgelab.calibration.spec`): the judge is asked in the spec's
            templates, reads them back, and answers in the spec's verdict format.

    Raises:
        InputError: If a knob is out of range.
    """

    def __init__(
        self,
        *,
        seed: int,
        position: float = 0.0,
        verbosity: float = 0.0,
        formatting: float = 0.0,
        tone: float = 0.0,
        citations: float = 0.0,
        byline: float = 0.0,
        family_style: dict[str, float] | None = None,
        leniency: float = 0.0,
        noise: float = 0.0,
        parse_failure_rate: float = 0.0,
        tie_rate: float = 0.0,
        family: str | None = None,
        model: str = "fake-judge",
        quality_of: Callable[[str], float] | None = None,
        style_of: Callable[[str], str | None] | None = None,
        ref_words: int = 150,
        spec: JudgeSpec | None = None,
    ) -> None:
        self.seed = int(seed)
        self.spec = spec
        self.position = position
        self.verbosity = verbosity
        self.formatting = formatting
        self.tone = tone
        self.citations = citations
        self.byline = byline
        self.family_style = dict(family_style or {})
        self.leniency = leniency
        self.noise = noise
        self.parse_failure_rate = parse_failure_rate
        self.tie_rate = tie_rate
        self.family = family
        self.model = model
        self.quality_of = quality_of
        self.style_of = style_of or style_family
        self.ref_words = ref_words
        for name in ("parse_failure_rate", "tie_rate"):
            p = getattr(self, name)
            if not 0.0 <= p <= 1.0:
                raise InputError(f"FakeJudge: {name}={p!r} must be a probability in [0, 1]")
        if noise < 0:
            raise InputError(f"FakeJudge: noise={noise!r} must be >= 0 (a standard deviation)")
        if ref_words <= 0:
            raise InputError(f"FakeJudge: ref_words={ref_words!r} must be > 0")
        # Validated once here so a bad knob fails at construction, not mid-run.
        self._logits = {
            name: _logit_pp(name, getattr(self, name))
            for name in ("position", "verbosity", "formatting", "tone", "citations", "byline")
        }
        self._style_logits = {
            fam: _logit_pp(f"family_style[{fam!r}]", k) for fam, k in self.family_style.items()
        }

    def __repr__(self) -> str:
        knobs = ", ".join(f"{k}={v!r}" for k, v in self.knobs().items() if v not in (0.0, {}, None))
        return f"FakeJudge({knobs})"

    def knobs(self) -> dict[str, Any]:
        """Every setting that changes replies (part of each call's params and cache key)."""
        return {
            "seed": self.seed,
            "position": self.position,
            "verbosity": self.verbosity,
            "formatting": self.formatting,
            "tone": self.tone,
            "citations": self.citations,
            "byline": self.byline,
            "family_style": dict(sorted(self.family_style.items())),
            "leniency": self.leniency,
            "noise": self.noise,
            "parse_failure_rate": self.parse_failure_rate,
            "tie_rate": self.tie_rate,
            "family": self.family,
            "quality_of": _name_of(self.quality_of),
            "style_of": _name_of(self.style_of),
            "ref_words": self.ref_words,
        }

    def reseeded(self, seed: int) -> FakeJudge:
        """The same judge with another seed: an independent replication of every call.

        A fake judge gives the same reply to the same call, like a real judge at temperature 0;
        a Monte Carlo that wants several draws per call uses one reseeded judge per rep.
        """
        clone = copy.copy(self)
        clone.seed = int(seed)
        return clone

    @property
    def params(self) -> dict[str, Any]:
        """Request params recorded in each :class:`JudgeCall` (so knobs separate cache keys)."""
        return {"fake": self.knobs()}

    def cache_identity(self) -> str:
        """``""``: the knobs and seed are in :attr:`params`, so in every request and its key."""
        return ""

    # ------------------------------------------------------------------ Judge protocol

    async def score(
        self, prompt: str, answer: str, rubric: Rubric, fmt: Format = "likert5"
    ) -> Judgement:
        """Judge one answer in a pointwise format (see the module docstring)."""
        call = self.build("pointwise", fmt, rubric, prompt, [answer])
        return self._judge(call, prompt, [answer], rubric)

    async def compare(
        self, prompt: str, answer_a: str, answer_b: str, rubric: Rubric, fmt: Format = "pairwise5"
    ) -> Judgement:
        """Judge answer A (shown first) against answer B in a comparative format."""
        call = self.build("pairwise", fmt, rubric, prompt, [answer_a, answer_b])
        return self._judge(call, prompt, [answer_a, answer_b], rubric)

    def build(
        self, kind: Kind, fmt: Format, rubric: Rubric, prompt: str, answers: Sequence[str],
        *, task_id: str | None = None,
    ) -> JudgeCall:
        """The :class:`JudgeCall` this judge would make (see :func:`judgelab.calibration.formats.build_call`)."""
        # The fake judge writes its verdict line in the spec's own format, so (unlike a model,
        # which is not sent the rule) its replies depend on the rule: it joins its params.
        params = self.params if self.spec is None else {**self.params, **self.spec.request_params(kind, fmt)}
        return formats.build_call(kind, fmt, self.model, rubric, prompt, answers, params, spec=self.spec,
                                  task_id=task_id)

    async def run(self, call: JudgeCall, rubric: Rubric | None = None) -> Judgement:
        """Judge a prebuilt call, reading the task and answers back from its user message.

        Raises:
            InputError: If the call's user message was not built by
                :func:`judgelab.calibration.formats.build_call`.
        """
        read = formats.read_call(call.user, system=call.system, spec=self.spec)
        if read is None:
            raise InputError("FakeJudge.run: the call's user message is not a judgelab prompt")
        return self._judge(call, read.prompt, list(read.answers), rubric)

    # ------------------------------------------------------------------ reply generation

    def _judge(
        self, call: JudgeCall, prompt: str, answers: Sequence[str], rubric: Rubric | None
    ) -> Judgement:
        start = time.perf_counter()
        screen = SCREEN_QUESTION in call.system or SCREEN_QUESTION in call.user
        raw = self.reply(call.kind, call.format, answers, key=call.cache_key, spec=self.spec, screen=screen)
        result = formats.parse(call.format, raw, spec=self.spec)
        usage = pricing.TokenUsage(
            input_tokens=pricing.approx_tokens(call.system) + pricing.approx_tokens(call.user),
            output_tokens=pricing.approx_tokens(raw),
        )
        return Judgement(
            kind=call.kind,
            format=call.format,
            model=self.model,
            cache_key=call.cache_key,
            raw=raw,
            value=result.value,
            passed=formats.passed_for(rubric, call.format, result.value) if rubric else None,
            parse_error=result.error,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=pricing.cost(self.model, usage),
            latency_s=time.perf_counter() - start,
        )

    def _rng(self, key: str) -> random.Random:
        digest = hashlib.sha256(f"fake-judge\0{self.seed}\0{key}".encode()).digest()
        # A private generator per call (never the global one); seeding it is cheap enough for
        # Monte Carlo tests that draw thousands of replies.
        return random.Random(int.from_bytes(digest[:8], "big"))

    def _quality(self, text: str) -> float:
        if self.quality_of is None:
            return text_quality(text)
        q = float(self.quality_of(text))
        if not 0.0 <= q <= 1.0:
            raise InputError(f"FakeJudge: quality_of returned {q!r}; it must be in [0, 1]")
        return q

    def _markers(self, text: str) -> dict[str, float]:
        feats = text_features(text)
        own = self.family is not None and feats.byline_family is not None and (
            feats.byline_family.lower() == self.family.lower()
        )
        return {
            "formatting": feats.markdown,
            "tone": float(feats.tone),
            "citations": float(feats.citations),
            "byline": float(own),
            "words": float(max(feats.words, 1)),
        }

    def latent(self, answer: str, *, rng: random.Random | None = None) -> float:
        """The pointwise latent score ``L`` in Likert points (noise drawn from ``rng`` if given)."""
        m = self._markers(answer)
        style = self.style_of(answer)
        level = 1.0 + 4.0 * self._quality(answer) + self.leniency
        level += self.verbosity * _clip(math.log2(m["words"] / self.ref_words), 2.0)
        level += sum(getattr(self, k) * m[k] for k in ("formatting", "tone", "citations", "byline"))
        level += self.family_style.get(style, 0.0) if style else 0.0
        if rng is not None and self.noise:
            level += self.noise * rng.gauss(0.0, 1.0)
        return level

    def preference(self, answer_a: str, answer_b: str, *, rng: random.Random | None = None) -> float:
        """The log-odds ``d`` of preferring A over B (noise drawn from ``rng`` if given)."""
        ma, mb = self._markers(answer_a), self._markers(answer_b)
        merit_a = 1.0 + 4.0 * self._quality(answer_a)
        merit_b = 1.0 + 4.0 * self._quality(answer_b)
        if rng is not None and self.noise:
            merit_a += self.noise * rng.gauss(0.0, 1.0)
            merit_b += self.noise * rng.gauss(0.0, 1.0)
        d = QUALITY_SLOPE * (merit_a - merit_b) + self._logits["position"]
        length = _clip(math.log2(ma["words"] / mb["words"]), 1.0)
        d += self._logits["verbosity"] * length
        for k in ("formatting", "tone", "citations", "byline"):
            d += self._logits[k] * (ma[k] - mb[k])
        sa, sb = self.style_of(answer_a), self.style_of(answer_b)
        for fam, logit in self._style_logits.items():
            d += logit * ((sa == fam) - (sb == fam))
        return d

    def reply(
        self, kind: Kind, fmt: Format, answers: Sequence[str], *, key: str, spec: JudgeSpec | None = None,
        screen: bool = False,
    ) -> str:
        """The reply text for one call; ``key`` (the call's cache key) seeds the draws.

        The last line is ``VERDICT: <value>``, or with a ``spec`` a verdict its rule for
        ``fmt`` reads as the same value (``[[A]]``, ``Rating: [[4]]``...). ``screen``: the call
        asks :data:`SCREEN_QUESTION` (a binary call): ACCEPT means the answer reveals its author.
        """
        rng = self._rng(key)
        fail = rng.random() < self.parse_failure_rate
        if screen and kind == "pointwise" and fmt == "binary":
            body, verdict = _screen_reply(answers[0])
        elif kind == "pairwise" or fmt in PAIRWISE_FORMATS:
            body, verdict = self._compare_reply(answers[0], answers[1], rng)
        else:
            body, verdict = self._score_reply(fmt, answers[0], rng)
        if fail:
            return _malformed(fmt, rng)
        if spec is not None:
            return f"{body}\n{spec.verdict_text(fmt, _verdict_value(verdict))}"
        return f"{body}\nVERDICT: {verdict}"

    def _score_reply(self, fmt: Format, answer: str, rng: random.Random) -> tuple[str, str]:
        level = self.latent(answer, rng=rng)
        u = rng.random()
        n_points = _n_points(answer)
        body = f"The answer makes about {n_points} distinct points; weighed against the rubric."
        if fmt == "binary":
            return body, "ACCEPT" if level >= BINARY_CUT else "REJECT"
        if fmt == "numeric100":
            return body, str(_random_round(25.0 * (min(max(level, 1.0), 5.0) - 1.0), u))
        if fmt not in FORMATS:
            # A declared scale: L's 1..5 stretched onto low..high, randomly rounded to its grid.
            spec = format_spec(fmt)
            steps = (min(max(level, 1.0), 5.0) - 1.0) / 4.0 * (spec.high - spec.low) / (spec.step or 1.0)
            return body, f"{spec.low + _random_round(steps, u) * (spec.step or 1.0):g}"
        return body, str(_random_round(min(max(level, 1.0), 5.0), u))

    def _compare_reply(self, a: str, b: str, rng: random.Random) -> tuple[str, str]:
        d = self.preference(a, b, rng=rng)
        tie = rng.random() < self.tie_rate
        u = min(max(rng.random(), 1e-12), 1 - 1e-12)
        z = d + math.log(u / (1 - u))  # d + standard logistic noise: P(z > 0) = sigmoid(d)
        body = (
            f"Response A has {text_features(a).words} words and Response B has "
            f"{text_features(b).words}; comparing them on the rubric's criteria."
        )
        if tie:
            return body, "tie"
        strength = "much better" if abs(z) > MUCH_THRESHOLD else "better"
        return body, f"{'A' if z > 0 else 'B'} {strength}"

    # ------------------------------------------------------------------ mock-server responder

    def respond(self, request: Mapping[str, Any]) -> str:
        """A reply for a Messages API request body (the mock server's responder).

        Judge requests built by :func:`judgelab.calibration.formats.build_call` get a verdict (in the
        spec's format when the request was written from this judge's spec); a padding
        request (:data:`judgelab.calibration.perturb.PAD_INSTRUCTION`) gets the offline padding; anything
        else gets a short acknowledgement without a verdict.
        """
        user = _last_user_text(request)
        # Keyed on the text, not the JSON shape: a string and a list of text blocks with the
        # same text are the same request.
        key = hashlib.sha256(
            json.dumps([request.get("model"), _system_text(request), user]).encode()
        ).hexdigest()
        system = _system_text(request)
        screen = SCREEN_QUESTION in system or SCREEN_QUESTION in user
        own = self.spec.read(system, user) if self.spec is not None else None
        if own is not None:
            return self.reply(own.kind, own.format, own.answers, key=key, spec=self.spec, screen=screen)
        read = formats.read_call(user)
        if read is not None:
            return self.reply(read.kind, read.format, read.answers, key=key, screen=screen)
        padded = _PAD_REQUEST.search(user)
        if padded:
            original = padded.group(1)
            return perturb.pad(original).text
        return "Received. There is no judging task in this request."


#: What the fake judge's screen reads beyond the rules: two kinds the rules miss (docs/raters.md),
#: a maker's e-mail domain and a maker described in words. A screen reads the text the raters see
#: (the rules' masks applied), so a fake that read only the rules would never find anything there;
#: these stand in for a real model's reading in the tests.
_BEYOND_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"[\w.+-]+@(?:anthropic|openai|google|deepmind|mistral|cohere|deepseek|x)\.(?:com|ai)\b", re.I),
     "a maker's e-mail address"),
    (re.compile(r"\bsearch (?:company|giant) (?:from|in) Mountain View\b", re.I), "its maker described in words"),
)


def _screen_reply(answer: str) -> tuple[str, str]:
    """The fake judge's author screen: what the rules, a byline and :data:`_BEYOND_RULES` read."""
    spans = detect_self_identifying(answer)
    byline = text_features(answer).byline_family
    if spans:
        return f"It names who wrote it: {spans[0][2]!r}.", "ACCEPT"
    if byline:
        return f"Its byline names {byline}.", "ACCEPT"
    for pattern, kind in _BEYOND_RULES:
        found = pattern.search(answer)
        if found:
            return f"It gives {kind}: {found.group(0)!r}.", "ACCEPT"
    return "Nothing in it says which model or company wrote it.", "REJECT"


_PAD_REQUEST = re.compile(r"<answer_to_pad>\n(.*?)\n</answer_to_pad>", re.DOTALL)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
    return ""


def _system_text(request: Mapping[str, Any]) -> str:
    return _text_of(request.get("system"))


def _last_user_text(request: Mapping[str, Any]) -> str:
    messages = request.get("messages") or []
    for message in reversed(list(messages)):
        if isinstance(message, Mapping) and message.get("role") == "user":
            return _text_of(message.get("content"))
    return ""


def _verdict_value(verdict: str) -> float:
    """The value of one of the fake's own verdicts (``"4"``, ``"ACCEPT"``, ``"A better"``)."""
    if verdict in formats.BINARY_VERDICTS:
        return float(formats.BINARY_VERDICTS[verdict])
    if verdict in formats.PAIRWISE_VERDICTS:
        return float(formats.PAIRWISE_VERDICTS[verdict])
    return float(verdict)


def _clip(x: float, bound: float) -> float:
    return min(max(x, -bound), bound)


def _random_round(x: float, u: float) -> int:
    """Unbiased randomised rounding: ``floor(x) + 1`` with probability ``frac(x)``."""
    lo = math.floor(x)
    return int(lo + (1 if u < x - lo else 0))


def _malformed(fmt: Format, rng: random.Random) -> str:
    bad_value = {
        "binary": "MAYBE",
        "likert5": "7",
        "numeric100": "150",
    }.get(fmt, "A slightly better")
    options = (
        "Both answers have merit and I cannot settle on one verdict.",
        f"After weighing the rubric:\nVERDICT: {bad_value}",
        "VERDICT:",
    )
    return options[rng.randrange(len(options))]
