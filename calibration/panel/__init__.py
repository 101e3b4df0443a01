"""Panels of judges: self- and family-preference across many judges, against the same human scores.

:func:`panel_analysis` is the pure statistics (one long table in, a frozen :class:`PanelResult`
out); :func:`load_panel` reads several judge runs and the human labels from the store into that
table; :func:`simulate_panel` makes panels with known effects for the tests and ``bench/panel.py``;
:func:`render_markdown`, :func:`panel_json` and :func:`write_png` render the result.
"""

from judgelab.calibration.panel._load import PanelData, load_panel
from judgelab.calibration.panel._ols import ClusteredFit, clustered_mean, clustered_ols
from judgelab.calibration.panel._pooled import pooled_self_bias
from judgelab.calibration.panel._render import heatmap, judges_table, panel_json, render_markdown, write_png
from judgelab.calibration.panel._simulate import (
    COVERAGE_JUDGES,
    COVERAGE_MODELS,
    SimJudge,
    coverage_of_known_effects,
    simulate_panel,
    to_scale,
)
from judgelab.calibration.panel._stats import (
    COLUMNS,
    JURY_MEAN,
    JURY_OTHERS,
    Agreement,
    JudgeBias,
    JuryGap,
    PanelResult,
    judge_bias,
    kappa_categories,
    panel_analysis,
    residual_spread,
    spread_difference,
)

__all__ = [
    "COLUMNS",
    "COVERAGE_JUDGES",
    "COVERAGE_MODELS",
    "JURY_MEAN",
    "JURY_OTHERS",
    "Agreement",
    "ClusteredFit",
    "JudgeBias",
    "JuryGap",
    "PanelData",
    "PanelResult",
    "SimJudge",
    "clustered_mean",
    "clustered_ols",
    "coverage_of_known_effects",
    "heatmap",
    "judge_bias",
    "judges_table",
    "kappa_categories",
    "load_panel",
    "panel_analysis",
    "panel_json",
    "pooled_self_bias",
    "render_markdown",
    "residual_spread",
    "simulate_panel",
    "spread_difference",
    "to_scale",
    "write_png",
]
