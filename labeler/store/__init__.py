"""The project database: the one place in judgelab that holds SQL.

Use :class:`Store`; the rest of the code never sees a connection. A caller that needs one
part of it takes a role from :mod:`judgelab.labeler.store.roles` (e.g. :class:`RaterRole`) instead.
"""

from collections.abc import Callable
from pathlib import Path

from judgelab.labeler._actor import acting_as, current_actor, os_user, set_actor_source
from judgelab.labeler.store._admin import AdminMixin
from judgelab.labeler.store._audit import AUDIT_ACTIONS, AuditMixin
from judgelab.labeler.store._backend import (
    DEFAULT_POOL_SIZE,
    POOL_SIZE_ENV,
    POOL_TIMEOUT_ENV,
    is_postgres,
    pool_settings,
    redact,
)
from judgelab.labeler.store._calibration import CalibrationMixin
from judgelab.labeler.store._copy import BATCH_ROWS, CopySummary, copy_database
from judgelab.labeler.store._copy import copy_project as _copy_project
from judgelab.labeler.store._core import (
    DEFAULT_DB,
    MAX_COMMENT_CHARS,
    migrations,
    release_all,
    remove_database,
    resolve_db_path,
)
from judgelab.labeler.store._crowd import PLATFORMS, CrowdMixin, CrowdStatus, CrowdStudy
from judgelab.labeler.store._designs import DesignMixin
from judgelab.labeler.store._ingest import Staging
from judgelab.labeler.store._judgements import JudgementMixin, JudgementRecord, plain_value
from judgelab.labeler.store._labels import (
    MASK_DEFAULT,
    MASK_KEY,
    AssignSummary,
    AuditView,
    CurrentLabel,
    LabelMixin,
    PairView,
    ScoreView,
    Screen,
)
from judgelab.labeler.store._pool import ImportSummary, PoolMixin
from judgelab.labeler.store._quality import QualityMixin, RaterHold
from judgelab.labeler.store._raters import Rater, Role, hash_token
from judgelab.labeler.store._review import ADJUDICATED, ReviewMixin
from judgelab.labeler.store._turns import TurnMixin
from judgelab.labeler.store._withheld import SCREEN_RUBRIC_ID, ScreenFigures, WithheldMixin
from judgelab.labeler.store.roles import (
    AdminRole,
    AnalystRole,
    AssignmentRole,
    DesignRole,
    ImportExportRole,
    JudgeRole,
    LoopRole,
    MaintenanceRole,
    PeopleRole,
    QualityRole,
    RaterRole,
    ReviewRole,
)


class Store(
    CrowdMixin, TurnMixin, LabelMixin, ReviewMixin, PoolMixin, JudgementMixin, DesignMixin, AdminMixin,
    CalibrationMixin, QualityMixin, WithheldMixin, AuditMixin,
):
    """The project database (one DuckDB file, or a PostgreSQL database). Safe to share between threads and processes."""


def copy_project(source: str | Path, destination: str | Path, *, batch_rows: int = BATCH_ROWS,
                 on_table: Callable[[str, int], None] | None = None) -> CopySummary:
    """Copy the project at ``source`` into the empty database at ``destination`` (``judgelab db copy``).

    See :mod:`judgelab.labeler.store._copy`: every table, ids kept, in one transaction on the
    destination; a destination file this call made is removed when the copy fails.
    """
    return _copy_project(source, destination, open_store=Store, batch_rows=batch_rows, on_table=on_table)


def _store_plays_every_role(store: Store) -> None:
    """Nothing at run time: mypy checks here that ``Store`` satisfies each role protocol."""
    as_rater: RaterRole = store
    as_people: PeopleRole = store
    as_assignment: AssignmentRole = store
    as_review: ReviewRole = store
    as_quality: QualityRole = store
    as_admin: AdminRole = store
    as_importexport: ImportExportRole = store
    as_judge: JudgeRole = store
    as_design: DesignRole = store
    as_analyst: AnalystRole = store
    as_loop: LoopRole = store
    as_maintenance: MaintenanceRole = store
    del (
        as_rater, as_people, as_assignment, as_review, as_quality, as_admin,
        as_importexport, as_judge, as_design, as_analyst, as_loop, as_maintenance,
    )


__all__ = [
    "ADJUDICATED",
    "AUDIT_ACTIONS",
    "BATCH_ROWS",
    "DEFAULT_DB",
    "DEFAULT_POOL_SIZE",
    "MASK_DEFAULT",
    "MASK_KEY",
    "MAX_COMMENT_CHARS",
    "PLATFORMS",
    "POOL_SIZE_ENV",
    "POOL_TIMEOUT_ENV",
    "SCREEN_RUBRIC_ID",
    "AdminRole",
    "AnalystRole",
    "AssignSummary",
    "AssignmentRole",
    "AuditView",
    "CopySummary",
    "CrowdStatus",
    "CrowdStudy",
    "CurrentLabel",
    "DesignRole",
    "ImportExportRole",
    "ImportSummary",
    "JudgeRole",
    "JudgementRecord",
    "LoopRole",
    "MaintenanceRole",
    "PairView",
    "PeopleRole",
    "QualityRole",
    "Rater",
    "RaterHold",
    "RaterRole",
    "ReviewRole",
    "Role",
    "ScoreView",
    "Screen",
    "ScreenFigures",
    "Staging",
    "Store",
    "acting_as",
    "copy_database",
    "copy_project",
    "current_actor",
    "hash_token",
    "is_postgres",
    "migrations",
    "os_user",
    "plain_value",
    "pool_settings",
    "redact",
    "release_all",
    "remove_database",
    "resolve_db_path",
    "set_actor_source",
]
