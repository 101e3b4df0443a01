"""Which probes exist and how their calls are planned: ``--biases`` and :func:`plan_probes`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from judgelab.calibration.probes import byline, decoration, format_study, length, position
from judgelab.calibration.probes._base import ProbeContext, ProbePlan
from judgelab.labeler.errors import InputError

BIASES: tuple[str, ...] = (
    "position", "verbosity", "formatting", "tone", "citations", "truncation", "byline", "format",
)
"""Every probe ``--biases`` accepts, in card order (``format`` is the format study)."""

DEFAULT_BIASES: tuple[str, ...] = ("position", "verbosity", "formatting")
"""judge-probe's default set."""

POOL_BIASES: frozenset[str] = frozenset({"verbosity", "truncation", "format"})
"""Probes that also score pool answers one at a time."""


def parse_biases(text: str | Iterable[str]) -> tuple[str, ...]:
    """Validate a ``--biases`` value (comma-separated or a list) into card order.

    Raises:
        InputError: On an unknown or empty name.
    """
    names = text.split(",") if isinstance(text, str) else list(text)
    chosen = [n.strip().lower() for n in names if n.strip()]
    if not chosen:
        raise InputError("--biases is empty", fix=f"pick from {', '.join(BIASES)}.")
    unknown = [n for n in chosen if n not in BIASES]
    if unknown:
        raise InputError(
            f"unknown bias {unknown[0]!r} in --biases",
            fix=f"pick from {', '.join(BIASES)} (comma-separated).",
        )
    return tuple(b for b in BIASES if b in chosen)


def plan_probes(ctx: ProbeContext, biases: Sequence[str]) -> ProbePlan:
    """All calls of the chosen probes (ids unique; identical requests are cached by the runner)."""
    out = ProbePlan()
    for bias in parse_biases(biases):
        if bias == "position":
            out.extend(position.plan(ctx))
        elif bias in length.VARIANTS:
            out.extend(length.plan(ctx, bias))
        elif bias in decoration.DECORATIONS:
            out.extend(decoration.plan(ctx, bias))
        elif bias == "byline":
            out.extend(byline.plan(ctx))
        else:
            out.extend(format_study.plan(ctx))
    # A variant shared by two probes (verbosity and truncation both store the same parent's
    # variants only once each) is stored once.
    seen: dict[str, None] = {}
    unique = []
    for answer in out.new_answers:
        if answer.answer_id not in seen:
            seen[answer.answer_id] = None
            unique.append(answer)
    out.new_answers = unique
    return out
