"""The Store by role: narrow, typed views of the one :class:`~judgelab.labeler.store.Store`.

A page, command or library function takes the narrowest role it uses, so that what it can
reach is visible in its signature and checked by mypy: the rater's page receives
:class:`RaterRole` and cannot name an answer's family, model or variant, a rater list or a
judge run. Each method has one home protocol here; a role is a union of homes. ``Store``
satisfies every role (mypy proves it in ``labeler/store/__init__.py``), and
``tests/test_store_roles.py`` checks that every public ``Store`` method has a home and that
the protocols' signatures are the ``Store``'s own. The method docs live on the ``Store``.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence
    from datetime import datetime
    from pathlib import Path
    from typing import Any, Literal

    import duckdb
    import pandas as pd

    from judgelab.labeler.models import (
        Answer,
        ImportedAudit,
        ImportedDesigns,
        ImportedJudgement,
        ImportedLabel,
        ImportedPairLabel,
        Pair,
        Rubric,
        Task,
    )
    from judgelab.labeler.planner import AssignSummary
    from judgelab.labeler.quality import QualityItem, QualitySettings
    from judgelab.labeler.queue import Progress, QueueItem
    from judgelab.labeler.scales import FormatSpec
    from judgelab.labeler.store._crowd import CrowdStatus, CrowdStudy, Platform
    from judgelab.labeler.store._imports import ExportKind
    from judgelab.labeler.store._ingest import Staging
    from judgelab.labeler.store._judgements import JudgementRecord
    from judgelab.labeler.store._labels import AuditView, Kind, PairView, ScoreView, Screen, Seen
    from judgelab.labeler.store._pool import ImportSummary
    from judgelab.labeler.store._quality import RaterHold
    from judgelab.labeler.store._raters import Rater, Role
    from judgelab.labeler.store._withheld import ScreenFigures


class Opened(Protocol):
    """Every role: whether this process may write the file."""

    @property
    def read_only(self) -> bool: ...


class Located(Opened, Protocol):
    """Where the database is (the rater's role has no server path)."""

    @property
    def path(self) -> Path: ...

    @property
    def location(self) -> str:
        """The database as ``--db`` takes it: the file's path, or the PostgreSQL URL."""
        ...

    @property
    def shown(self) -> str:
        """The database as messages name it: the file's path, or the URL without its password."""
        ...


class UnitOfWork(Located, Protocol):
    """Group several calls into one transaction (one unit of work)."""

    @contextmanager
    def connection(self) -> Iterator[duckdb.DuckDBPyConnection]: ...


class SettingReader(Protocol):
    """Read one stored setting."""

    def setting(self, scope: str, key: str, default: str | None = None) -> str | None: ...


class Settings(SettingReader, Protocol):
    """Write project and rubric settings, and read one across scopes."""

    def set_setting(self, scope: str, key: str, value: str) -> None: ...

    def settings_for(self, key: str) -> pd.DataFrame: ...


class AuditTrail(Protocol):
    """Read the audit trail of admin actions, and record one the store did not write itself (an export)."""

    def audit_log(self, *, since: datetime | None = None, action: str | None = None) -> pd.DataFrame: ...

    def record_action(self, action: str, target: str = "", **detail: Any) -> None: ...


class RubricView(Protocol):
    """The rubrics raters and judge see verbatim."""

    def rubric(self, rubric_id: str | None = None, version: int | None = None) -> Rubric | None: ...

    def rubrics(self) -> pd.DataFrame: ...


class PoolView(RubricView, SettingReader, Protocol):
    """Read the pool: tasks, answers (with family, model, variant), pairs and their scales."""

    def tasks(self) -> pd.DataFrame: ...

    def answers(self, *, variant: str | None = None) -> pd.DataFrame: ...

    def pairs(self) -> pd.DataFrame: ...

    def families(self) -> list[str]: ...

    def declared_scales(self) -> list[FormatSpec]: ...

    def pool_answers(self) -> pd.DataFrame: ...

    def answer_ids(self) -> set[str]: ...

    def blind_texts(self) -> dict[str, str]: ...

    def pair_ids(self) -> set[str]: ...

    def pair_gold(self) -> dict[str, str | None]: ...

    def self_identifying(self) -> pd.DataFrame: ...


class RaterDirectory(Protocol):
    """Read who the raters are."""

    def raters(self) -> pd.DataFrame: ...


class LabelTiming(Protocol):
    """Read how long labels took and when labels last changed."""

    def label_seconds(self) -> pd.DataFrame: ...

    def label_watermark(self) -> tuple[int, int]: ...

    def activity_watermark(self) -> tuple[int, ...]: ...


class HoldView(Protocol):
    """Read whether a rater is held (paused, or not yet qualified)."""

    def rater_hold(self, rater_id: int) -> RaterHold | None: ...


class HoldsView(HoldView, Protocol):
    """Read every rater's hold at once (the admin's quality table; a rater reads only their own)."""

    def rater_holds(self, rater_ids: Sequence[int]) -> dict[int, RaterHold | None]: ...


class QualitySettingsView(Protocol):
    """Read the project's quality settings."""

    def quality_settings(self) -> QualitySettings: ...


class DesignView(RubricView, Protocol):
    """Read stored designs, active designs and the labels they drew."""

    def designs(self) -> pd.DataFrame: ...

    def design_record(self, design_id: str) -> dict[str, Any]: ...

    def design_items(self, design_id: str) -> pd.DataFrame: ...

    def design_assignments(self, design_id: str) -> pd.DataFrame: ...

    def active_design(self, design_id: str) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]: ...

    def active_designs(self) -> pd.DataFrame: ...

    def active_draw_ids(self) -> set[str]: ...

    def answer_labels(self) -> pd.DataFrame: ...

    def rater_labels(self, answer_ids: Iterable[str]) -> pd.DataFrame: ...

    def score_holders(self, answer_ids: Sequence[str]) -> pd.DataFrame: ...


class HumanLabelView(Protocol):
    """Read the current human labels (the pool's, not gold or attention items)."""

    def human_labels(self, rubric_id: str | None = None, version: int | None = None) -> pd.DataFrame: ...


class TurnScoreView(Protocol):
    """Read the current per-turn scores of labels (rubrics with ``turn = "each"``)."""

    def turn_scores(self, label_ids: Iterable[int] | None = None) -> pd.DataFrame: ...


class JudgementView(Protocol):
    """Read a run's judgements with their raw replies."""

    def run_judgements(self, run_id: str) -> pd.DataFrame: ...


class RunView(Protocol):
    """Read one judge run's row."""

    def judge_run(self, run_id: str) -> dict[str, Any] | None: ...


class PoolWriter(Protocol):
    """Add tasks and answers (the one write path for answer text) to the pool."""

    def add_pool(
        self, tasks: list[Task], answers: list[Answer], *, source_file: str | None = None
    ) -> ImportSummary: ...

    def add_staged_pool(self, staging: Staging, *, source_file: str | None = None) -> ImportSummary: ...

    def pool_name_list(self) -> list[str]: ...

    def stored_answers(self, answer_ids: Sequence[str]) -> set[str]: ...


class RaterRole(Opened, RubricView, SettingReader, HoldView, Protocol):
    """The rater's page: their own queue, screens and label writes, blind (no family, model, variant, admin data)."""

    def authenticate(self, token: str | None) -> Rater: ...

    def screen(self, rater_id: int, kind: Kind = "score", at: int | None = None) -> Screen: ...

    def claim_next(
        self,
        rater_id: int,
        k: int,
        *,
        answer_ids: Sequence[str] | None = None,
        rubric: tuple[str, int] | None = None,
        gap: int = ...,
    ) -> int | None: ...

    def progress(self, rater_id: int, kind: Kind = "score") -> Progress: ...

    def skip_item(self, rater_id: int, assignment_id: int, kind: Kind = "score") -> None: ...

    def add_label(
        self,
        rater_id: int,
        assignment_id: int,
        *,
        overall: float | None,
        criteria: Mapping[str, float] | None = None,
        comment: str = "",
        flag_reason: str | None = None,
        seconds: float | None = None,
        seen: Seen = ...,
    ) -> int: ...

    def flag_author(
        self, rater_id: int, assignment_id: int, *, note: str = "", seconds: float | None = None, seen: Seen = ...,
    ) -> int: ...

    def add_turn_label(
        self,
        rater_id: int,
        assignment_id: int,
        *,
        overall: float | None,
        turns: Mapping[int, float],
        criteria: Mapping[str, float] | None = None,
        comment: str = "",
        flag_reason: str | None = None,
        seconds: float | None = None,
        seen: Seen = ...,
    ) -> int: ...

    def label_turns(self, rater_id: int, label_id: int) -> dict[int, float]: ...

    def add_pair_label(
        self, rater_id: int, assignment_id: int, preference: int, *, comment: str = "",
        seconds: float | None = None, seen: Seen = ...,
    ) -> int: ...

    def add_audit(
        self, rater_id: int, assignment_id: int, adds_content: bool, *, note: str = "",
        seconds: float | None = None, seen: Seen = ...,
    ) -> int: ...

    def quality_feedback(self, rater_id: int, label_id: int) -> str | None: ...

    def open_item(self, rater_id: int, assignment_id: int, kind: Kind = "score") -> bool: ...

    def next_item(self, rater_id: int, kind: Kind = "score") -> QueueItem | None: ...

    def score_view(self, rater_id: int, assignment_id: int) -> ScoreView: ...

    def pair_view(self, rater_id: int, assignment_id: int) -> PairView: ...

    def audit_view(self, rater_id: int, assignment_id: int) -> AuditView: ...

    def rater_queue(self, rater_id: int, kind: Kind = "score") -> list[QueueItem]: ...

    # A crowd participant's own standing, consent, deal, end and return (judgelab.labeler.store._crowd).
    def crowd_status(self, rater_id: int, *, now: float | None = None) -> CrowdStatus | None: ...

    def crowd_start(self, rater_id: int, *, now: float | None = None) -> CrowdStatus: ...

    def crowd_deal(self, rater_id: int, *, now: float | None = None) -> int: ...

    def crowd_finish(self, rater_id: int, *, now: float | None = None) -> CrowdStatus | None: ...

    def crowd_return(self, rater_id: int, *, now: float | None = None) -> None: ...


class PeopleRole(Located, SettingReader, RaterDirectory, Protocol):
    """The admin's people: invite, reissue, revoke, pause and resume raters."""

    def add_rater(
        self, name: str, *, role: Role = "rater", simulated: bool = False, expires_at: datetime | None = None,
    ) -> tuple[Rater, str]: ...

    def rater_id_for(self, name: str, *, create: bool = False, simulated: bool = False) -> int: ...

    def reissue_token(self, name: str, *, expires_at: datetime | None = None) -> str: ...

    def set_rater_email(self, name: str, email: str | None) -> None: ...

    def signed_in_rater(self, email: str, *, admin: bool) -> Rater | None: ...

    def revoke_rater(self, name: str) -> None: ...

    def pause_rater(self, name: str, *, reason: str = "", exclude_labels: bool = False) -> None: ...

    def resume_rater(self, name: str) -> None: ...

    # Crowd studies (judgelab.labeler.store._crowd): the study link makes raters of its own study only.
    def create_crowd_study(
        self,
        name: str,
        *,
        platform: Platform = "prolific",
        quota: int,
        time_limit: float,
        k: int = 1,
        completion_code: str | None = None,
        completion_url: str | None = None,
        places: int | None = None,
        answer_ids: Sequence[str] | None = None,
    ) -> CrowdStudy: ...

    def crowd_study(self, name: str) -> CrowdStudy: ...

    def crowd_studies(self) -> list[CrowdStudy]: ...

    def close_crowd_study(self, name: str) -> None: ...

    def crowd_participants(self, name: str, *, now: float | None = None) -> pd.DataFrame: ...

    def crowd_enter(
        self,
        link_key: str,
        participant_id: str,
        *,
        platform_study: str = "",
        session_id: str = "",
        now: float | None = None,
    ) -> tuple[Rater, str]: ...


class AssignmentRole(Located, PoolView, RaterDirectory, LabelTiming, Protocol):
    """The admin's assignments: who labels what, and the progress of it."""

    def assign_k(
        self,
        answer_ids: Sequence[str],
        k: int,
        rater_ids: Sequence[int],
        *,
        seed: int | str = 0,
        rubric: tuple[str, int] | None = None,
        design_id: str | None = None,
        gap: int = ...,
    ) -> AssignSummary: ...

    def assign_pairs(
        self,
        pairs: Sequence[tuple[str, str]],
        rater_ids: Sequence[int],
        *,
        k: int | None = None,
        seed: int | str = 0,
        gap: int = ...,
    ) -> AssignSummary: ...

    def assign_audits(
        self,
        pairs: Sequence[tuple[str, str]] | None,
        rater_ids: Sequence[int],
        *,
        k: int = 1,
        seed: int | str = 0,
        gap: int = ...,
    ) -> AssignSummary: ...

    def padding_audit_pairs(self, variant: str = "padded") -> list[tuple[str, str]]: ...

    def answer_catalog(self) -> pd.DataFrame: ...

    def assignment_progress(self) -> pd.DataFrame: ...

    def labels_by_rater(self) -> pd.DataFrame: ...

    def labels_per_answer(self) -> pd.DataFrame: ...


class ReviewRole(Located, PoolView, RaterDirectory, LabelTiming, Protocol):
    """The admin's review: every label of an answer, history, adjudication."""

    def adjudicate(
        self,
        admin_id: int,
        answer_id: str,
        *,
        rubric_id: str,
        version: int,
        overall: float,
        criteria: Mapping[str, float] | None = None,
        comment: str = "",
        revealed: bool = False,
    ) -> int: ...

    def adjudications(
        self, rubric_id: str | None = None, version: int | None = None, *, include_unversioned: bool = True
    ) -> pd.DataFrame: ...

    def label_history(self, answer_id: str) -> pd.DataFrame: ...

    def review_answer(self, answer_id: str) -> dict[str, Any] | None: ...

    def review_labels(
        self,
        rubric_id: str | None = None,
        version: int | None = None,
        *,
        include_unversioned: bool = True,
        answer_id: str | None = None,
    ) -> pd.DataFrame: ...

    def current_labels(
        self,
        rubric_id: str | None = None,
        version: int | None = None,
        *,
        include_unversioned: bool = True,
    ) -> pd.DataFrame: ...

    def rater_current_labels(self, rater_id: int) -> pd.DataFrame: ...


class QualityRole(Located, PoolView, RaterDirectory, HoldsView, QualitySettingsView, Protocol):
    """The admin's rater quality: gold items, attention checks, speeds, qualification and pauses."""

    def add_quality_items(self, items: Sequence[QualityItem], *, source_file: str | None = None) -> ImportSummary: ...

    def label_speeds(self) -> pd.DataFrame: ...

    def mix_quality(self) -> dict[int, int]: ...

    def quality_items(self) -> pd.DataFrame: ...

    def quality_labels(self) -> pd.DataFrame: ...

    def set_quality_settings(self, settings: QualitySettings) -> dict[int, int]: ...

    def rater_pauses(self) -> pd.DataFrame: ...


class ScreenView(Protocol):
    """The author screen's figures (:mod:`judgelab.labeler.store._withheld`): on the Overview and in the screen's."""

    def screen_figures(self) -> ScreenFigures: ...


class AdminRole(Settings, PeopleRole, AssignmentRole, ReviewRole, QualityRole, ScreenView, AuditTrail, Protocol):
    """Everything the admin pages do, plus project settings and masking self-identifying spans."""

    def mask_self_id(self, rubric_id: str | None = None) -> bool: ...

    def withheld_answers(self, *, every: bool = False) -> pd.DataFrame: ...

    def mask_answer(self, answer_id: str, text: str, *, admin: str) -> None: ...

    def clear_answer(self, answer_id: str, *, admin: str, reason: str = "") -> None: ...

    def shown_mask(self, answer_id: str) -> str | None: ...


class ImportExportRole(Located, PoolView, PoolWriter, TurnScoreView, AuditTrail, Protocol):
    """Imports and exports: the pool, rubrics and labels, judgements and designs from files, and the file exports."""

    def add_pairs(self, pairs: list[Pair], *, source_file: str | None = None) -> ImportSummary: ...

    def add_rubric(self, rubric: Rubric, *, source_file: str | None = None) -> ImportSummary: ...

    def add_imported_labels(
        self,
        labels: list[ImportedLabel],
        *,
        source_file: str | None = None,
        source: Literal["import", "simulated"] = "import",
        rubric: tuple[str, int] | None = None,
    ) -> ImportSummary: ...

    def add_imported_pair_labels(
        self, labels: list[ImportedPairLabel], *, source_file: str | None = None
    ) -> ImportSummary: ...

    def add_imported_audits(self, audits: list[ImportedAudit], *, source_file: str | None = None) -> ImportSummary: ...

    def add_imported_judgements(
        self, judgements: list[ImportedJudgement], *, source_file: str | None = None
    ) -> ImportSummary: ...

    def add_imported_designs(self, parsed: ImportedDesigns, *, source_file: str | None = None) -> ImportSummary: ...

    def export_frame(self, kind: ExportKind) -> pd.DataFrame: ...

    def design_tables(self) -> dict[str, pd.DataFrame]: ...


class JudgeRole(
    UnitOfWork, Settings, PoolView, PoolWriter, DesignView, HumanLabelView, RunView, JudgementView, ScreenView,
    Protocol,
):
    """Judge runs and judgements: the runner's and probes' writes, cache, batches and evidence."""

    def start_judge_run(
        self,
        run_id: str,
        *,
        judge_kind: str,
        model: str,
        family: str | None = None,
        rubric_id: str | None = None,
        rubric_version: int | None = None,
        params: dict[str, Any] | None = None,
        plan_hash: str | None = None,
        n_planned: int | None = None,
        evidence_path: str | None = None,
        note: str = "",
    ) -> None: ...

    def finish_judge_run(self, run_id: str) -> None: ...

    def unfinished_runs(self, plan_hash: str | None = None) -> pd.DataFrame: ...

    def run_counts(self, run_id: str) -> dict[str, Any]: ...


    def add_judgements(self, records: Sequence[JudgementRecord]) -> int: ...

    def answered_calls(self, run_id: str) -> set[str]: ...

    def cached_replies(self, cache_keys: Iterable[str]) -> dict[str, dict[str, Any]]: ...

    def screen_readings(self, run_id: str) -> pd.DataFrame: ...

    def record_screen(
        self, run_id: str, rows: Sequence[tuple[str, bool | None, str, str | None, float | None]], *, judge: str
    ) -> int: ...

    def add_rewrite(
        self,
        rewrite_key: str,
        *,
        variant: str,
        model: str,
        original: str,
        text: str,
        length_ratio: float,
        warnings: Sequence[str] = (),
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost_usd: float | None = None,
    ) -> None: ...

    def rewrites(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]: ...

    def padding_audit_result(self, rewrite_ids: Iterable[str] | None = None) -> dict[str, Any]: ...

    def plan_run_batch(
        self, run_id: str, custom_ids: Sequence[str], *, n_bytes: int = 0
    ) -> tuple[int, datetime]: ...

    def set_batch_id(self, run_id: str, batch_no: int, batch_id: str) -> None: ...

    def drop_batch_intent(self, run_id: str, batch_no: int) -> None: ...

    def mark_batch_collected(self, run_id: str, batch_no: int) -> None: ...

    def known_batch_ids(self) -> set[str]: ...

    def run_batches(self, run_id: str) -> list[dict[str, Any]]: ...


class DesignRole(UnitOfWork, PoolView, DesignView, RaterDirectory, LabelTiming, QualitySettingsView, Protocol):
    """Hand-label sample designs and active labelling: the reads a design needs, saving and applying it."""

    def save_design(
        self,
        design_id: str,
        params: dict[str, Any],
        summary: dict[str, Any],
        items: pd.DataFrame,
    ) -> bool: ...

    def save_active_design(self, design_id: str, params: dict[str, Any]) -> None: ...

    def add_active_batch(
        self,
        design_id: str,
        batch: int,
        *,
        draw_id: str,
        weight: float,
        expected_labels: float,
        summary: dict[str, Any],
        draws: pd.DataFrame,
    ) -> None: ...

    def add_design_assignments(
        self,
        design_id: str,
        plan: pd.DataFrame,
        *,
        rubric: tuple[str, int] | None = None,
    ) -> int: ...

    def add_reassignments(
        self, design_id: str, plan: pd.DataFrame, *, rubric: tuple[str, int] | None = None
    ) -> int: ...

    def design_raters(self, raters: int | Sequence[str]) -> list[int]: ...

    def design_applied(self, design_id: str) -> bool: ...

    def assigned_answers(
        self, rater_ids: Sequence[int], answer_ids: Sequence[str]
    ) -> set[tuple[int, str]]: ...

    def human_verdicts(self) -> pd.DataFrame: ...

    def judge_flips(self, run_id: str | None = None) -> pd.DataFrame: ...

    def judge_run_info(self, run_id: str | None = None) -> dict[str, Any] | None: ...

    def judge_scores(self, run_id: str | None = None) -> pd.DataFrame: ...

    def queue_tails(
        self, rater_ids: Sequence[int], *, depth: int = 3
    ) -> dict[int, tuple[int, list[str]]]: ...


class AnalystRole(Located, PoolView, DesignView, HumanLabelView, RunView, TurnScoreView, RaterDirectory,
                  LabelTiming, JudgementView, Protocol):
    """The analyst's read-only views: the calibration report's reads."""

    def calibration_runs(self) -> pd.DataFrame: ...

    def latest_scored_run(self) -> str | None: ...

    def run_rows(self, run_id: str, kind: str = "pointwise") -> pd.DataFrame: ...

    def adjudicated_labels(self, rubric_id: str | None = None, version: int | None = None) -> pd.DataFrame: ...

    def label_design_items(self) -> pd.DataFrame: ...

    def reference_provenance(self, task_ids: Iterable[str]) -> pd.DataFrame: ...

    def label_notes(self, answer_ids: Iterable[str]) -> pd.DataFrame: ...


class LoopRole(AnalystRole, Settings, Protocol):
    """The judge loop: the analyst's reads and the project settings.

    The settings record the held-out split, every look at the held-out part and every compare.
    """


class MaintenanceRole(UnitOfWork, Settings, AuditTrail, Protocol):
    """The operator's commands: migrations, schema, raw read queries, settings and releasing the file."""

    def applied_migrations(self) -> pd.DataFrame: ...

    def migrate(self) -> list[int]: ...

    def schema(self) -> dict[str, dict[str, str]]: ...

    def query(self, sql: str, params: list[Any] | tuple[Any, ...] | None = None) -> pd.DataFrame: ...

    def release(self) -> None: ...


ROLES: tuple[type, ...] = (
    RaterRole,
    PeopleRole,
    AssignmentRole,
    ReviewRole,
    QualityRole,
    AdminRole,
    ImportExportRole,
    JudgeRole,
    DesignRole,
    AnalystRole,
    LoopRole,
    MaintenanceRole,
)
"""The roles callers are given; the other protocols here are parts that roles share."""

