"""The one catalogue of scoring formats: their names, kinds and the values they allow.

A rubric's scale is one of the pointwise formats, so a rater and a judge answer on the same
menu. The comparative formats read a verdict on two answers shown as A and B; their stored
value is the verdict itself, +2 (A much better) .. -2 (B much better), whatever score is later
derived from it (:func:`judgelab.calibration.formats.anchored_score`,
:func:`judgelab.calibration.formats.tournament_scores`).

Everything that checks or reads a score (the importers, the store, the judges' parsers, the
calibration report) takes its ranges from here; the prompt lines and parsers built on this
catalogue live in :mod:`judgelab.calibration.formats`.

A scale is data: a rubric may declare its own ordinal scale (``[scale]`` with ``name``,
``low``, ``high``, ``step`` and optional ``labels``, :func:`scale_from_toml`); the three named
pointwise formats are its shortcuts. A declared scale is registered here under its name
(:func:`register_scale`), so a judgement's format, an importer's range check and a report's
units all read the same :class:`FormatSpec` through :func:`format_spec`.

    >>> FORMAT_SPECS["likert5"].range
    (1.0, 5.0)
    >>> [f for f in FORMATS if FORMAT_SPECS[f].kind == "pairwise"]
    ['pairwise5', 'anchored', 'tournament']
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
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
    "ScaleError",
    "declare_scale",
    "declared_scales",
    "format_range",
    "format_spec",
    "is_pointwise",
    "known_format",
    "register_scale",
    "scale_from_dict",
    "scale_from_toml",
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
        step: The distance between two levels (a value is ``low + k * step``); ``None`` for a
            scale any number in range is on (``numeric100``'s human labels).
        labels: Words for some levels, ``(level, label)`` in level order, shown to raters.
    """

    name: Format
    kind: Kind
    low: float
    high: float
    units: str
    step: float | None = 1.0
    labels: tuple[tuple[float, str], ...] = ()

    @property
    def range(self) -> tuple[float, float]:
        """``(low, high)``."""
        return (self.low, self.high)

    @property
    def levels(self) -> tuple[float, ...]:
        """Every value on the grid, low to high (empty for a scale without a step).

        >>> format_spec("likert5").levels
        (1.0, 2.0, 3.0, 4.0, 5.0)
        """
        if self.step is None:
            return ()
        n = round((self.high - self.low) / self.step)
        return tuple(_tidy(self.low + k * self.step) for k in range(n + 1))

    @property
    def whole(self) -> bool:
        """Whether every level is a whole number (so a judge may be asked for digits only)."""
        return self.step is not None and float(self.step).is_integer() and float(self.low).is_integer()

    def on_grid(self, value: float, *, n_raters: int = 1) -> bool:
        """Whether ``value`` is on the scale: in range and on its grid.

        A mean of ``n_raters`` people's levels lies on the finer grid ``step / n_raters``.

        >>> s = FormatSpec("correct3", "pointwise", 0.0, 2.0, "scale points (0-2)", 1.0)
        >>> s.on_grid(1.0), s.on_grid(1.5), s.on_grid(5 / 3, n_raters=3), s.on_grid(3.0)
        (True, False, True, False)
        """
        if not self.low - _EPS <= value <= self.high + _EPS:
            return False
        if self.step is None:
            return True
        k = (value - self.low) * n_raters / self.step
        return abs(k - round(k)) < 1e-6 * max(1.0, abs(k))

    def rounded_mean(self, value: float, *, n_raters: int, decimals: int) -> float | None:
        """The exact mean of ``n_raters`` levels that ``value`` is, rounded to ``decimals`` places.

        A published mean of three people's 1-5 scores reads 1.667 for 5/3: it is off the grid
        ``step / n_raters`` only by its rounding. The mean is returned when ``value`` is within
        half a unit of the last decimal of one grid mean, and that rounding is fine enough to
        name a single mean (half a unit below half the grid's spacing); otherwise ``None``.

        Args:
            value: The published score.
            n_raters: How many people it is the mean of.
            decimals: The decimal places the file writes its scores to (0 or more).

        Returns:
            The exact mean (``low + k * step / n_raters``), or ``None`` (off the grid beyond
            the rounding, out of range, a scale without a step, or a rounding too coarse).

        >>> s = format_spec("likert5")
        >>> s.rounded_mean(1.667, n_raters=3, decimals=3) == 5 / 3
        True
        >>> s.rounded_mean(1.7, n_raters=3, decimals=1) == 5 / 3  # a 1-decimal file
        True
        >>> s.rounded_mean(1.67, n_raters=3, decimals=3), s.rounded_mean(2.0, n_raters=3, decimals=0)
        (None, None)
        """
        if self.step is None or decimals < 0 or not self.low - _EPS <= value <= self.high + _EPS:
            return None
        spacing = self.step / n_raters
        half_unit = 0.5 * 10.0 ** -decimals
        if half_unit >= spacing / 2:  # two means round to the same figure: the file cannot say which
            return None
        k = round((value - self.low) / spacing)
        mean = (self.low * n_raters + k * self.step) / n_raters  # one division: 5/3, not 1 + 2/3
        # A hair of slack for binary floats: 1.667 - 5/3 is 0.000333..., well inside 0.0005.
        if abs(value - mean) <= half_unit * (1 + 1e-9) and self.low - _EPS <= mean <= self.high + _EPS:
            return mean
        return None

    def grid_text(self) -> str:
        """The grid in words, for error messages: ``0, 1, 2 (0-2 by 1)``.

        >>> format_spec("likert5").grid_text()
        '1, 2, 3, 4, 5 (1-5 by 1)'
        """
        if self.step is None:
            return f"any number from {self.low:g} to {self.high:g}"
        levels = self.levels
        shown = ", ".join(f"{v:g}" for v in levels) if len(levels) <= 12 else (
            f"{levels[0]:g}, {levels[1]:g}, ..., {levels[-1]:g}")
        return f"{shown} ({self.low:g}-{self.high:g} by {self.step:g})"

    def label(self, value: float) -> str | None:
        """The label of level ``value``, or ``None``."""
        return next((text for level, text in self.labels if abs(level - value) < _EPS), None)

    def as_dict(self) -> dict[str, object]:
        """The declaration, as stored with the rubric (:func:`scale_from_dict` reads it back)."""
        return {"name": self.name, "low": self.low, "high": self.high, "step": self.step,
                "labels": [[level, text] for level, text in self.labels]}


_VERDICT_UNITS = "verdict points (+2 A much better .. -2 B much better)"

FORMAT_SPECS: dict[Format, FormatSpec] = {
    "binary": FormatSpec("binary", "pointwise", 0.0, 1.0, "pass (1) or fail (0)"),
    "likert5": FormatSpec("likert5", "pointwise", 1.0, 5.0, "scale points (1-5)"),
    "numeric100": FormatSpec("numeric100", "pointwise", 0.0, 100.0, "scale points (0-100)", None),
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
"""The named scales a rubric may use (the pointwise formats); a rubric may declare others."""

_EPS = 1e-9
# Declared scales, by name: one process may hold rubrics with several, never two under one name.
_DECLARED: dict[str, FormatSpec] = {}
_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_MAX_LEVELS = 1001


class ScaleError(ValueError):
    """A scale declaration that cannot be used; ``column`` names the key at fault, ``fix`` the cure."""

    def __init__(self, message: str, *, column: str, fix: str) -> None:
        """Keep the key at fault and the fix beside the message."""
        super().__init__(message)
        self.column = column
        self.fix = fix


def _tidy(value: float) -> float:
    # 0.1 * 3 is 0.30000000000000004: a level is stored and shown as the decimal it is meant to be.
    return float(round(value, 9))


def _number(value: object, column: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ScaleError(f"{column} must be a number, not {value!r}", column=column,
                         fix=f"write e.g. `{column.split('.')[-1]} = 1`.")
    return float(value)


def declare_scale(
    name: str, low: float, high: float, step: float, labels: Mapping[float, str] | None = None
) -> FormatSpec:
    """A validated ordinal scale ``low..high`` by ``step``, with optional level labels.

    Each bad declaration raises one :class:`ScaleError` naming the key: a name that is not a
    lower-case identifier or is taken by a built-in format, ``low >= high``, a step that is not
    positive or does not divide the range, more than 1001 levels, a label off the grid.

    >>> declare_scale("correct3", 0, 2, 1, {0: "wrong", 2: "right"}).levels
    (0.0, 1.0, 2.0)
    >>> declare_scale("half", 0, 10, 3)
    Traceback (most recent call last):
    ...
    judgelab.labeler.scales.ScaleError: step 3 does not divide the range 0-10 into whole steps
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ScaleError(f"scale name {name!r} is not a lower-case identifier", column="scale.name",
                         fix="use letters, digits and _, starting with a letter, e.g. `name = \"correct3\"`.")
    if name in FORMAT_SPECS:
        raise ScaleError(f"scale name {name!r} is a built-in format", column="scale.name",
                         fix=f"write `scale = \"{name}\"` to use it, or give the declared scale another name.")
    lo, hi, st = (_tidy(_number(v, f"scale.{k}")) for k, v in (("low", low), ("high", high), ("step", step)))
    if lo >= hi:
        raise ScaleError(f"scale low {lo:g} is not below high {hi:g}", column="scale.low",
                         fix="make low the worst score and high the best, low < high.")
    if st <= 0:
        raise ScaleError(f"scale step {st:g} is not positive", column="scale.step", fix="use e.g. step = 1.")
    n = (hi - lo) / st
    if abs(n - round(n)) > 1e-9 * max(1.0, n):
        raise ScaleError(f"step {st:g} does not divide the range {lo:g}-{hi:g} into whole steps",
                         column="scale.step", fix=f"pick a step that divides {hi - lo:g}, e.g. 1 or 0.5.")
    if round(n) + 1 > _MAX_LEVELS:
        raise ScaleError(f"the scale has {round(n) + 1} levels; at most {_MAX_LEVELS}", column="scale.step",
                         fix="use a larger step.")
    spec = FormatSpec(name, "pointwise", lo, hi, f"scale points ({lo:g}-{hi:g})", st)  # type: ignore[arg-type]
    pairs: list[tuple[float, str]] = []
    for raw, text in (labels or {}).items():
        where = f"scale.labels.{raw}"
        try:
            level = float(raw)
        except (TypeError, ValueError):
            raise ScaleError(f"label key {raw!r} is not a number", column=where,
                             fix="key each label by its level, e.g. `labels = { 0 = \"wrong\" }`.") from None
        if not spec.on_grid(level):
            raise ScaleError(f"label for {raw} is off the grid {spec.grid_text()}", column=where,
                             fix="key each label by one of the scale's levels.")
        if not isinstance(text, str) or not text.strip():
            raise ScaleError(f"label for {raw} is not a non-empty text", column=where,
                             fix="write the words raters see, e.g. \"partly right\".")
        pairs.append((_tidy(level), " ".join(text.split())))
    return replace(spec, labels=tuple(sorted(pairs)))


def scale_from_dict(doc: Mapping[str, object]) -> FormatSpec:
    """The scale a ``[scale]`` table (or :meth:`FormatSpec.as_dict`) declares.

    Raises:
        ScaleError: A key missing, unknown or wrong (see :func:`declare_scale`).
    """
    known = ("name", "low", "high", "step", "labels")
    unknown = [k for k in doc if k not in known]
    if unknown:
        raise ScaleError(f"unknown key(s) {unknown} in [scale]", column=f"scale.{unknown[0]}",
                         fix=f"a scale has {list(known)}.")
    for key in ("name", "low", "high", "step"):
        if doc.get(key) is None:
            raise ScaleError(f"missing key 'scale.{key}'", column=f"scale.{key}", fix=f"add `{key} = ...` to [scale].")
    raw = doc.get("labels") or {}
    labels: dict[float, str]
    if isinstance(raw, Mapping):
        labels = dict(raw)
    elif isinstance(raw, list | tuple) and all(isinstance(p, list | tuple) and len(p) == 2 for p in raw):
        labels = {p[0]: p[1] for p in raw}
    else:
        raise ScaleError("scale.labels must be a table of level = \"label\"", column="scale.labels",
                         fix='write e.g. `labels = { 0 = "wrong", 2 = "right" }`.')
    return declare_scale(doc["name"], doc["low"], doc["high"], doc["step"], labels)  # type: ignore[arg-type]


def scale_from_toml(value: object) -> FormatSpec:
    """A rubric's ``scale``: a named one (``"likert5"``) or a ``[scale]`` table.

    Raises:
        ScaleError: Neither a known name nor a valid declaration.
    """
    if isinstance(value, str):
        if value in SCALES:
            return FORMAT_SPECS[value]  # type: ignore[index]
        if value in _DECLARED:
            return _DECLARED[value]
        raise ScaleError(f"unknown scale {value!r}", column="scale",
                         fix=f"use one of {list(SCALES)}, or declare it in a [scale] table (name, low, high, step).")
    if isinstance(value, Mapping):
        return scale_from_dict(value)
    raise ScaleError(f"scale must be a name or a [scale] table, not {type(value).__name__}", column="scale",
                     fix='write `scale = "likert5"` or a [scale] table.')


def register_scale(spec: FormatSpec) -> FormatSpec:
    """Make a declared scale known by its name to every consumer (:func:`format_spec`).

    Registering the same declaration again is a no-op; another one under a taken name is a
    :class:`ScaleError` (two meanings of one name would mix scores in one column).
    """
    if spec.name in FORMAT_SPECS:
        if FORMAT_SPECS[spec.name] != spec:  # type: ignore[index]
            raise ScaleError(f"scale name {spec.name!r} is a built-in format", column="scale.name",
                             fix="give the declared scale another name.")
        return spec
    held = _DECLARED.get(spec.name)
    if held is not None and held != spec:
        raise ScaleError(
            f"scale {spec.name!r} is already declared as {held.grid_text()}, not {spec.grid_text()}",
            column="scale.name", fix="give the changed scale a new name (scores on the two must not mix).")
    _DECLARED[spec.name] = spec
    return spec


def declared_scales() -> tuple[FormatSpec, ...]:
    """Every scale declared in this process, by name."""
    return tuple(_DECLARED[name] for name in sorted(_DECLARED))


def format_spec(name: str) -> FormatSpec:
    """The :class:`FormatSpec` of a built-in format or a declared scale.

    Raises:
        KeyError: ``name`` is neither.
    """
    found = FORMAT_SPECS.get(name) or _DECLARED.get(name)  # type: ignore[call-overload]
    if found is None:
        raise KeyError(name)
    return found  # type: ignore[no-any-return]


def known_format(name: object) -> bool:
    """Whether ``name`` is a built-in format or a declared scale."""
    return isinstance(name, str) and (name in FORMAT_SPECS or name in _DECLARED)


def is_pointwise(name: str) -> bool:
    """Whether ``name`` is a pointwise format (a named one or a declared scale)."""
    return known_format(name) and format_spec(name).kind == "pointwise"


def format_range(name: str) -> tuple[float, float]:
    """The ``(low, high)`` values format (or scale) ``name`` allows.

    Raises:
        KeyError: ``name`` is neither in :data:`FORMAT_SPECS` nor a declared scale.
    """
    return format_spec(name).range
