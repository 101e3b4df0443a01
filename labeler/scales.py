"""The one catalogue of scoring formats: their names, kinds and the values they allow.

A rubric's scale is one of the pointwise formats, so a rater and a judge answer on the same
menu. The comparative formats read a verdict on two answers shown as A and B; their stored
value is the verdict itself, +2 (A much better) .. -2 (B much better), whatever score is later
derived from it (:func:`calibration.formats.anchored_score`,
:func:`calibration.formats.tournament_scores`).

Everything that checks or reads a score (the importers, the store, the judges' parsers, the
calibration report) takes its ranges from here; the prompt lines and parsers built on this
catalogue live in :mod:`calibration.formats`.

    >>> FORMAT_SPECS["likert5"].range
    (1.0, 5.0)
    >>> [f for f in FORMATS if FORMAT_SPECS[f].kind == "pairwise"]
    ['pairwise5', 'anchored', 'tournament']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "FORMATS",
    "FORMAT_SPECS",
    "PAIRWISE_FORMATS",
    "POINTWISE_FORMATS",
    "SCALES",
    "Format",
    "FormatSpec",
    "Kind",
    "Scale",
    "format_range",
]

Format = Literal["binary", "likert5", "numeric100", "pairwise5", "anchored", "tournament"]
"""Every scoring format a judgement can be made (or imported) in."""

Scale = Literal["binary", "likert5", "numeric100"]
"""A rubric's overall scale: one of the pointwise formats."""

Kind = Literal["pointwise", "pairwise"]
"""``pointwise``: one answer scored; ``pairwise``: a verdict on answer A against answer B."""


@dataclass(frozen=True)
class FormatSpec:
    """One scoring format.

    Attributes:
        name: The format's name, as stored with every judgement.
        kind: ``pointwise`` or ``pairwise``.
        low: The smallest value a judgement in this format holds.
        high: The largest value.
        units: What one step of the value means, for report lines.
    """

    name: Format
    kind: Kind
    low: float
    high: float
    units: str

    @property
    def range(self) -> tuple[float, float]:
        """``(low, high)``."""
        return (self.low, self.high)


_VERDICT_UNITS = "verdict points (+2 A much better .. -2 B much better)"

FORMAT_SPECS: dict[Format, FormatSpec] = {
    "binary": FormatSpec("binary", "pointwise", 0.0, 1.0, "pass (1) or fail (0)"),
    "likert5": FormatSpec("likert5", "pointwise", 1.0, 5.0, "scale points (1-5)"),
    "numeric100": FormatSpec("numeric100", "pointwise", 0.0, 100.0, "scale points (0-100)"),
    "pairwise5": FormatSpec("pairwise5", "pairwise", -2.0, 2.0, _VERDICT_UNITS),
    "anchored": FormatSpec("anchored", "pairwise", -2.0, 2.0, _VERDICT_UNITS),
    "tournament": FormatSpec("tournament", "pairwise", -2.0, 2.0, _VERDICT_UNITS),
}
"""Each format's kind, range and units, pointwise formats first."""

FORMATS: tuple[Format, ...] = tuple(FORMAT_SPECS)
"""Every scoring format, pointwise first."""

POINTWISE_FORMATS: tuple[Format, ...] = tuple(f for f, s in FORMAT_SPECS.items() if s.kind == "pointwise")
"""The formats that score one answer."""

PAIRWISE_FORMATS: tuple[Format, ...] = tuple(f for f, s in FORMAT_SPECS.items() if s.kind == "pairwise")
"""The formats that read a verdict on two answers."""

SCALES: tuple[Scale, ...] = ("binary", "likert5", "numeric100")
"""The scales a rubric may use (the pointwise formats)."""


def format_range(name: str) -> tuple[float, float]:
    """The ``(low, high)`` values format (or scale) ``name`` allows.

    Raises:
        KeyError: ``name`` is not in :data:`FORMAT_SPECS`.
    """
    return FORMAT_SPECS[name].range  # type: ignore[index]  # a str key: KeyError is the contract
