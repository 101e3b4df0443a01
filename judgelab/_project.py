"""A project's data as DataFrames: a database opened read-only, or DataFrames in the file schemas.

:func:`open_project` reads a project database (a DuckDB file or a ``postgresql://`` URL) and
hands its answers, labels and judgements over as DataFrames in the documented file schemas
(``docs/_generated/schemas.md``): exactly what ``judgelab export KIND`` writes.

:func:`project_from_frames` goes the other way: DataFrames in those schemas (your own, or frames
read from another project) are checked and imported by the very code ``judgelab import KIND FILE``
runs, into a private database in a temporary folder that the :class:`Project` removes when it is
closed or collected. Every analysis then runs the code the command line runs on a database, so a
figure read from DataFrames equals the command's to the last digit, and a bad cell is refused
with the same message naming the frame, row and column.
"""

from __future__ import annotations

import math
import tempfile
import weakref
from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from judgelab.labeler._rows import Rows
from judgelab.labeler.errors import InputError
from judgelab.labeler.exports import export_table, rubric_toml
from judgelab.labeler.importers import import_file
from judgelab.labeler.models import Rubric
from judgelab.labeler.store import Store
from judgelab.labeler.store._backend import is_postgres

FrameKind = Literal["answers", "pairs", "labels", "pair_labels", "audits", "judgements", "verdicts"]
"""The kinds of data a :class:`Project` hands over as DataFrames (every file kind but rubric and designs)."""

FRAME_KINDS: tuple[FrameKind, ...] = ("answers", "pairs", "labels", "pair_labels", "audits", "judgements",
                                      "verdicts")
# Import order: answers before the labels and judgements that name them, pairs before verdicts.
_IMPORT_ORDER: tuple[FrameKind, ...] = ("answers", "pairs", "labels", "pair_labels", "audits", "judgements",
                                        "verdicts")

RubricLike = str | Path | Rubric
"""A rubric: a TOML file's path, its TOML text, or a :class:`judgelab.labeler.models.Rubric`."""


class Project:
    """One project's data as DataFrames, read-only.

    Made by :func:`open_project` (a project database) or :func:`project_from_frames` (DataFrames).
    Each frame is read once, on first use, in its file schema (the columns ``judgelab export``
    writes). The analyses (:func:`judgelab.calibrate`, :func:`judgelab.panel`,
    :func:`judgelab.design`) take a project or DataFrames.

    Attributes:
        source: The database a project was opened on (a URL without its password), or
            ``"DataFrames"``.
    """

    def __init__(self, location: str | Path, *, folder: tempfile.TemporaryDirectory[str] | None = None) -> None:
        """Open the project database at ``location`` read-only (``folder``: the private one to remove)."""
        self._store = Store(location, read_only=True)
        self.source = "DataFrames" if folder is not None else self._store.shown
        self._frames: dict[str, pd.DataFrame] = {}
        # A project made from DataFrames owns its private database: removed with the project.
        self._cleanup = weakref.finalize(self, folder.cleanup) if folder is not None else None

    @property
    def store(self) -> Store:
        """The store the project reads (the private one, for a project made from DataFrames)."""
        return self._store

    def frame(self, kind: FrameKind) -> pd.DataFrame:
        """One kind's rows in its file schema (a copy: changing it changes nothing stored).

        Raises:
            InputError: ``kind`` is not one of :data:`FRAME_KINDS`.
        """
        if kind not in FRAME_KINDS:
            raise InputError(f"Project.frame: unknown kind {kind!r}", fix=f"use one of {', '.join(FRAME_KINDS)}.")
        if kind not in self._frames:
            self._frames[kind] = export_table(self._store, kind)
        return self._frames[kind].copy()

    @property
    def answers(self) -> pd.DataFrame:
        """The answers (with their tasks) in the ``answers`` file schema."""
        return self.frame("answers")

    @property
    def labels(self) -> pd.DataFrame:
        """Every label, superseded ones too (``current`` marks the live ones), in the ``labels`` schema."""
        return self.frame("labels")

    @property
    def judgements(self) -> pd.DataFrame:
        """Every pointwise and pairwise judgement of every run, in the ``judgements`` schema."""
        return self.frame("judgements")

    @property
    def pairs(self) -> pd.DataFrame:
        """The stored pairs, in the ``pairs`` schema."""
        return self.frame("pairs")

    @property
    def rubric(self) -> str | None:
        """The newest rubric as TOML text (what ``judgelab import rubric`` reads), or ``None``."""
        rubric = self._store.rubric()
        return None if rubric is None else rubric_toml(rubric)

    @property
    def runs(self) -> pd.DataFrame:
        """The judge runs, newest first, with how many pointwise and pairwise judgements each holds."""
        return self._store.calibration_runs()

    def close(self) -> None:
        """Remove the private database of a project made from DataFrames (nothing for an opened one)."""
        if self._cleanup is not None:
            self._cleanup()

    def __repr__(self) -> str:
        counts = ", ".join(f"{len(self.frame(k))} {k}" for k in ("answers", "labels", "judgements"))
        return f"<Project {self.source}: {counts}, {len(self.runs)} judge run(s)>"


def open_project(path_or_url: str | Path) -> Project:
    """Open a project database to read its data as DataFrames.

    A DuckDB file is opened read-only: the app and the command line can keep writing to it. A
    PostgreSQL URL is read through a connection of its own: the library only reads, and a role
    granted ``SELECT`` only makes the server enforce it.

    Args:
        path_or_url: The DuckDB file, or a ``postgresql://`` URL.

    Returns:
        A :class:`Project`.

    Raises:
        InputError: No such file.
        StoreError: The database cannot be opened (a newer judgelab's, unreachable...).
    """
    text = str(path_or_url)
    if not is_postgres(text) and not Path(text).is_file():
        raise InputError("no such project database", file=text,
                         fix="pass the DuckDB file `judgelab init` or `judgelab demo` made, or a postgresql:// URL.")
    return Project(text)


def project_from_frames(
    answers: pd.DataFrame,
    labels: pd.DataFrame | None = None,
    judgements: pd.DataFrame | None = None,
    *,
    rubric: RubricLike,
    pairs: pd.DataFrame | None = None,
    verdicts: pd.DataFrame | None = None,
) -> Project:
    """A project made from DataFrames in the documented file schemas.

    Each frame is checked and imported as ``judgelab import KIND FILE`` imports a file (the same
    code: unknown columns, a score off the rubric's scale, a label of an unknown answer are
    refused, naming the frame, row and column), into a private database in a temporary folder.

    Args:
        answers: The ``answers`` schema (tasks and answers).
        labels: The ``labels`` schema (human labels); ``None``: no labels.
        judgements: The ``judgements`` schema; ``None``: no judgements.
        rubric: The rubric the labels and judgements were given under.
        pairs: The ``pairs`` schema, for verdicts.
        verdicts: The ``verdicts`` schema (pairwise judge verdicts on stored pairs).

    Returns:
        A :class:`Project` over the private database.

    Raises:
        InputError: A frame that ``judgelab import`` would refuse as a file.

    Example:
        >>> import pandas as pd
        >>> from judgelab.labeler.examples import example_path
        >>> answers = pd.read_json(example_path("answers.jsonl"), lines=True)
        >>> project = project_from_frames(answers, rubric=example_path("rubric.toml"))
        >>> project.answers.groupby("family").size().to_dict()
        {'claude': 70, 'gpt': 70}
        >>> labels = pd.DataFrame({"rater": ["ann"], "answer_id": ["nope"], "score": [4]})
        >>> project_from_frames(answers, labels, rubric=example_path("rubric.toml"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        judgelab.labeler.errors.InputError: labels (DataFrame), column 'answer_id': 1 answer id(s) are not in...
        >>> project.close()
    """
    folder = tempfile.TemporaryDirectory(prefix="judgelab-frames-")
    try:
        store = Store(Path(folder.name) / "frames.duckdb")
        toml = Path(folder.name) / "rubric.toml"
        toml.write_text(_rubric_text(rubric), encoding="utf-8")
        import_file(store, "rubric", toml)
        given: Mapping[FrameKind, pd.DataFrame | None] = {
            "answers": answers, "pairs": pairs, "labels": labels, "judgements": judgements, "verdicts": verdicts,
        }
        for kind in _IMPORT_ORDER:
            frame = given.get(kind)
            if frame is not None:
                import_file(store, kind, _frame_name(kind), reader=_reader(kind, frame))
    except BaseException:
        folder.cleanup()
        raise
    return Project(store.path, folder=folder)


def as_project(
    data: Project | pd.DataFrame,
    labels: pd.DataFrame | None,
    judgements: pd.DataFrame | None,
    rubric: RubricLike | None,
) -> Project:
    """``data`` when it is a project, else the project :func:`project_from_frames` makes of the frames."""
    if isinstance(data, Project):
        if labels is not None or judgements is not None or rubric is not None:
            raise InputError("pass a Project alone, or answers, labels and judgements frames with rubric=",
                             fix="leave labels, judgements and rubric out when the first argument is a Project.")
        return data
    if not isinstance(data, pd.DataFrame):
        raise InputError(f"expected a Project or an answers DataFrame; got {type(data).__name__}",
                         fix="pass judgelab.open_project(PATH), or the answers, labels and judgements frames.")
    if rubric is None:
        raise InputError("rubric= is needed with DataFrames: the scale scores are read on",
                         fix="pass the rubric's TOML file or text (Project.rubric gives it for a project).")
    return project_from_frames(data, labels, judgements, rubric=rubric)


def _frame_name(kind: str) -> str:
    return f"{kind} (DataFrame)"


def _rubric_text(rubric: RubricLike) -> str:
    if isinstance(rubric, Rubric):
        return rubric_toml(rubric)
    if isinstance(rubric, Path) or "\n" not in rubric:
        path = Path(rubric)
        if not path.is_file():
            raise InputError("no such rubric file", file=str(path),
                             fix="pass the rubric's TOML file, its TOML text, or a judgelab.labeler.models.Rubric.")
        return path.read_text(encoding="utf-8")
    return rubric


def _reader(kind: str, frame: pd.DataFrame) -> Any:
    """What :func:`judgelab.labeler.importers.import_file` reads the frame with, in place of a file."""
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"{kind} must be a pandas DataFrame; got {type(frame).__name__}",
                         fix="pass a DataFrame with the columns of the file schema.")

    def read(_path: str | Path) -> Rows:
        columns = tuple(str(c) for c in frame.columns)
        records = [dict(zip(columns, (_plain(v) for v in row), strict=True))
                   for row in frame.itertuples(index=False, name=None)]
        return Rows(_frame_name(kind), columns, records)

    return read


def _plain(value: Any) -> Any:
    """A cell as a file reader gives it: missing values as ``None``, NumPy scalars as Python's."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    if hasattr(value, "item") and not isinstance(value, (str, bytes, datetime, date)):
        try:
            return _plain(value.item())  # a NumPy scalar
        except (TypeError, ValueError):
            return value
    return value
