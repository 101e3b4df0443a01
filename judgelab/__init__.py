"""judgelab: instrument an LLM judge before anyone trusts it.

``import judgelab as jl`` is the analyst's library: the figures of the command line, as functions
of DataFrames or of a project database, with typed frozen results.

* **A project as DataFrames.** :func:`open_project` reads a project database (DuckDB file,
  read-only, or a PostgreSQL URL): ``.answers``, ``.labels``, ``.judgements`` in the documented
  file schemas. :func:`project_from_frames` makes a project of your own DataFrames in those
  schemas, checked as ``judgelab import`` checks files.
* **The command line's analyses.** :func:`calibrate` (per-family residuals judge - human, the
  self-preference gap, kappa, Krippendorff's alpha, PPI, probes, format diagnostics),
  :func:`panel` (several judges side by side), :func:`position` (a run's pairwise judgements
  in both orders) and :func:`design` (the hand-label sample) take a
  project or the answers, labels and judgements frames, call the very function their command
  calls, and return :class:`Calibration`, :class:`Panel`, :class:`Position` and :class:`SampleDesign`:
  ``to_dict()`` is the command's ``--json``, ``to_frame()`` a table, ``chart()`` an Altair chart.
* **The statistics underneath**, array-likes in and a frozen :class:`Estimate` out:
  :func:`residuals_and_gap`, :func:`cohen_kappa`, :func:`krippendorff_alpha`,
  :func:`format_diagnostics`, the probes' :func:`pointwise_gap`, :func:`truncation_gap`,
  :func:`pairwise_lift`, :func:`position_statistics` and :func:`wilson_interval`; and
  :func:`vote_agreement` (``judgelab agreement``: a judge's pairwise verdicts against human pair
  labels, from the judgements, pair_labels and answers frames).

Example:
    >>> import judgelab as jl
    >>> judge = [1, 2, 3, 3, 2, 1, 2, 3]
    >>> human = [1, 2, 3, 2, 2, 1, 2, 3]
    >>> kappa = jl.cohen_kappa(judge, human, rng=0).kappa
    >>> round(kappa.estimate, 3), kappa.n
    (0.81, 8)

The rest of the package is the shell: the Streamlit app (:mod:`judgelab.app`, pages in
``views/``), session and access (:mod:`judgelab.session`), the admin view-model
(:mod:`judgelab.admin`), the command line (:mod:`judgelab.cli`) and the demo
(:mod:`judgelab.demo`). Imports run one way: ``judgelab -> calibration -> labeler``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgelab._lazy import lazy_getattr

#: The one version of the distribution: the wheel's metadata reads it from here
#: (``[tool.setuptools.dynamic]``) and ``judgelab --version`` prints it.
__version__ = "0.1.0"

# The public names load on first use (PEP 562), as judgelab.admin's do: every rater's page
# imports this package first, and loading the analyses here would pull in pandas, SciPy and the
# calibration code (seconds of CPU) before a rater's first page could draw.
if TYPE_CHECKING:
    from judgelab._analysis import (
        Calibration,
        Panel,
        Position,
        SampleDesign,
        calibrate,
        design,
        panel,
        position,
    )
    from judgelab._project import (
        FRAME_KINDS,
        Project,
        open_project,
        project_from_frames,
    )
    from judgelab.calibration.stats import (
        Estimate,
        FormatDiagnostics,
        KappaResult,
        PositionStatistics,
        cohen_kappa,
        family_residuals,
        format_diagnostics,
        krippendorff_alpha,
        pairwise_lift,
        pointwise_gap,
        position_statistics,
        residuals_and_gap,
        self_preference_gap,
        truncation_gap,
        wilson_interval,
    )
    from judgelab.calibration.vote_agreement import VoteAgreement, vote_agreement
    from judgelab.labeler.errors import InputError

_LAZY: dict[str, str] = {
    "Estimate": "judgelab.calibration.stats",
    "FormatDiagnostics": "judgelab.calibration.stats",
    "KappaResult": "judgelab.calibration.stats",
    "PositionStatistics": "judgelab.calibration.stats",
    "cohen_kappa": "judgelab.calibration.stats",
    "family_residuals": "judgelab.calibration.stats",
    "format_diagnostics": "judgelab.calibration.stats",
    "krippendorff_alpha": "judgelab.calibration.stats",
    "pairwise_lift": "judgelab.calibration.stats",
    "pointwise_gap": "judgelab.calibration.stats",
    "position_statistics": "judgelab.calibration.stats",
    "residuals_and_gap": "judgelab.calibration.stats",
    "self_preference_gap": "judgelab.calibration.stats",
    "truncation_gap": "judgelab.calibration.stats",
    "wilson_interval": "judgelab.calibration.stats",
    "VoteAgreement": "judgelab.calibration.vote_agreement",
    "vote_agreement": "judgelab.calibration.vote_agreement",
    "Calibration": "judgelab._analysis",
    "Panel": "judgelab._analysis",
    "Position": "judgelab._analysis",
    "SampleDesign": "judgelab._analysis",
    "calibrate": "judgelab._analysis",
    "design": "judgelab._analysis",
    "panel": "judgelab._analysis",
    "position": "judgelab._analysis",
    "FRAME_KINDS": "judgelab._project",
    "Project": "judgelab._project",
    "open_project": "judgelab._project",
    "project_from_frames": "judgelab._project",
    "InputError": "judgelab.labeler.errors",
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "FRAME_KINDS",
    "Calibration",
    "Estimate",
    "FormatDiagnostics",
    "InputError",
    "KappaResult",
    "Panel",
    "Position",
    "PositionStatistics",
    "Project",
    "SampleDesign",
    "VoteAgreement",
    "calibrate",
    "cohen_kappa",
    "design",
    "family_residuals",
    "format_diagnostics",
    "krippendorff_alpha",
    "open_project",
    "pairwise_lift",
    "panel",
    "pointwise_gap",
    "position",
    "position_statistics",
    "project_from_frames",
    "residuals_and_gap",
    "self_preference_gap",
    "truncation_gap",
    "vote_agreement",
    "wilson_interval",
]
