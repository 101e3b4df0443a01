"""An explicit mapping from the judge's scale onto the rubric's: never a silent rescale.

A judge asked for MT-Bench's 1-10 scores a rubric on 0-2. Judge and human scores on different
scales cannot be subtracted, so ``calibrate`` reads the judge's scores on the rubric's scale only
through a mapping the user states (``--scale-map``), and the report says which:

- ``linear``: ``low -> low`` and ``high -> high`` of the two scales, a straight line between
  (a 1-10 judge's 7 is 1.333 on 0-2: between levels, as an annotator mean can be);
- ``J=R,J=R,...``: each judge level given its rubric value (every judge level must be named;
  each value must be on the rubric's scale), e.g. ``1=0,2=0,3=0,4=1,5=1,6=1,7=1,8=2,9=2,10=2``.

    >>> from judgelab.labeler.scales import declare_scale, register_scale
    >>> j = register_scale(declare_scale("doc_ten", 1, 10, 1))
    >>> r = register_scale(declare_scale("doc_three", 0, 2, 1))
    >>> m = parse_scale_map("linear", "doc_ten", "doc_three")
    >>> round(m.apply(7.0), 3), m.text
    (1.333, 'doc_ten 1-10 mapped linearly onto doc_three 0-2 (1 -> 0, 10 -> 2)')
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import pandas as pd

from judgelab.calibration.calibrate._load import CalibrationData
from judgelab.labeler.errors import InputError
from judgelab.labeler.scales import format_spec, known_format

__all__ = ["ScaleMap", "apply_scale_map", "parse_scale_map"]


@dataclass(frozen=True)
class ScaleMap:
    """How judge scores on ``judge`` become scores on the rubric's scale ``rubric``.

    Attributes:
        judge: The judge's format.
        rubric: The rubric's scale.
        pairs: ``(judge level, rubric value)``; empty for ``linear``.
        text: The mapping in words, for the report.
    """

    judge: str
    rubric: str
    pairs: tuple[tuple[float, float], ...]
    text: str

    def apply(self, value: float) -> float:
        """The rubric-scale value of one judge score."""
        if self.pairs:
            return next(r for j, r in self.pairs if math.isclose(j, value, abs_tol=1e-9))
        j, r = format_spec(self.judge), format_spec(self.rubric)
        return r.low + (value - j.low) * (r.high - r.low) / (j.high - j.low)


def parse_scale_map(text: str, judge: str, rubric: str) -> ScaleMap:
    """Read ``--scale-map`` for a judge on ``judge`` and a rubric on ``rubric``.

    Raises:
        InputError: Not ``linear`` nor ``J=R`` pairs, a judge level missing or off the judge's
            grid, or a value off the rubric's scale.
    """
    if not known_format(judge) or format_spec(judge).kind != "pointwise":
        raise InputError(f"--scale-map: the judge's format {judge!r} is not a pointwise scale")
    j, r = format_spec(judge), format_spec(rubric)
    words = text.strip()
    if words == "linear":
        return ScaleMap(judge, rubric, (), f"{judge} {j.low:g}-{j.high:g} mapped linearly onto {rubric} "
                        f"{r.low:g}-{r.high:g} ({j.low:g} -> {r.low:g}, {j.high:g} -> {r.high:g})")
    fix = (f"write 'linear', or give every {judge} level its {rubric} value: "
           + ",".join(f"{level:g}=..." for level in j.levels[:4]) + (",..." if len(j.levels) > 4 else ""))
    pairs: dict[float, float] = {}
    for part in words.split(","):
        left, eq, right = part.partition("=")
        try:
            level, value = float(left), float(right)
        except ValueError:
            raise InputError(f"--scale-map: {part.strip()!r} is not LEVEL=VALUE", fix=fix) from None
        if not eq or not j.on_grid(level):
            raise InputError(f"--scale-map: {left.strip()} is not a level of {judge} ({j.grid_text()})", fix=fix)
        if not r.on_grid(value):
            raise InputError(f"--scale-map: {right.strip()} is not on the rubric's scale {rubric} ({r.grid_text()})",
                             fix=f"map each judge level to one of {r.grid_text()}.")
        pairs[level] = value
    missing = [f"{level:g}" for level in j.levels if not any(math.isclose(level, k) for k in pairs)]
    if missing or not j.levels:
        raise InputError(f"--scale-map: the judge level(s) {', '.join(missing)} of {judge} have no value", fix=fix)
    ordered = tuple(sorted(pairs.items()))
    shown = ", ".join(f"{a:g} -> {b:g}" for a, b in ordered)
    return ScaleMap(judge, rubric, ordered, f"{judge} mapped onto {rubric} by the stated table ({shown})")


def apply_scale_map(data: CalibrationData, mapping: ScaleMap) -> CalibrationData:
    """The run with its ``mapping.judge`` scores read on the rubric's scale, the mapping noted.

    The mapped judgements carry the rubric's scale as their format (their pass verdicts follow
    the rubric's threshold); every other judgement is left as it was.

    Raises:
        InputError: The run has no judgements on the mapping's judge scale, or the mapping is
            not onto the rubric's scale.
    """
    rubric = data.rubric
    if mapping.rubric != rubric.scale:
        raise InputError(f"--scale-map maps onto {mapping.rubric}, but the rubric's scale is {rubric.scale}")
    point = data.pointwise
    rows = point["format"] == mapping.judge
    if not rows.any():
        have = ", ".join(sorted(set(point["format"]))) or "none"
        raise InputError(f"--scale-map: the run has no judgements on {mapping.judge} (its formats: {have})")
    point = point.copy()
    mapped = [None if v is None or pd.isna(v) else mapping.apply(float(v)) for v in point.loc[rows, "value"]]
    point.loc[rows, "value"] = pd.array(mapped, dtype="Float64").astype(float)
    point.loc[rows, "pass"] = [float("nan") if v is None else float(rubric.passes(v)) for v in mapped]
    point.loc[rows, "format"] = rubric.scale
    return dataclasses.replace(data, pointwise=point, judge_format=rubric.scale, scale_note=mapping.text)
