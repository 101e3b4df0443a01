"""The judge loop: compare judge versions against the people without tuning on the figures reported.

:func:`compare_judges` is the pure paired statistics (arrays in, a frozen :class:`Comparison`
out); :func:`load_paired` reads two runs on one part of the project's held-out split
(:func:`project_split`); :func:`compare_runs` is the workflow ``judgelab compare`` runs.
"""

from judgelab.calibration.loop._compare import (
    Comparison,
    Figure,
    McNemar,
    Verdict,
    bonferroni_level,
    compare_judges,
    mcnemar_exact,
    weighted_kappa_rows,
)
from judgelab.calibration.loop._disagree import (
    Confusion,
    Disagreements,
    confusion,
    disagreements,
    rate,
    render_disagreements,
    turn_rows,
)
from judgelab.calibration.loop._load import (
    PairedData,
    RunScores,
    as_arrays,
    labelled_split,
    load_paired,
    people,
    run_scores,
)
from judgelab.calibration.loop._revalidate import revalidation_note, version_of
from judgelab.calibration.loop._run import (
    CompareReport,
    compare_history,
    compare_runs,
    held_out_summary,
    render_compare,
)
from judgelab.calibration.loop._split import (
    DEFAULT_FRACTION,
    HELD_OUT,
    PARTS,
    TUNING,
    Part,
    Split,
    hashed_part,
    held_out_looks,
    make_split,
    parts_read_line,
    project_split,
    record_look,
    seen_versions,
    stored_split,
)

__all__ = [
    "DEFAULT_FRACTION",
    "HELD_OUT",
    "PARTS",
    "TUNING",
    "CompareReport",
    "Comparison",
    "Confusion",
    "Disagreements",
    "Figure",
    "McNemar",
    "PairedData",
    "Part",
    "RunScores",
    "Split",
    "Verdict",
    "as_arrays",
    "bonferroni_level",
    "compare_history",
    "compare_judges",
    "compare_runs",
    "confusion",
    "disagreements",
    "hashed_part",
    "held_out_looks",
    "held_out_summary",
    "labelled_split",
    "load_paired",
    "make_split",
    "mcnemar_exact",
    "parts_read_line",
    "people",
    "project_split",
    "rate",
    "record_look",
    "render_compare",
    "render_disagreements",
    "revalidation_note",
    "run_scores",
    "seen_versions",
    "stored_split",
    "turn_rows",
    "version_of",
    "weighted_kappa_rows",
]
