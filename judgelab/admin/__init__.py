"""What the admin pages do, as plain functions of a :class:`~labeler.store.Store`.

The admin pages only wire widgets to these functions, so everything an admin can
do is tested here without a browser. Admins are not blind: frames returned here
may carry family, model and variant, and must never be handed to a rater page.

The Review page's adjudicated labels are :mod:`judgelab.admin._review`.

Simulated raters (``raters.simulated``) are marked wherever a rater's name is
shown: :func:`display_name` appends ``" (simulated)"``.
"""

from __future__ import annotations

from judgelab.admin._active import (
    ActiveView,
    active_chart,
    active_view,
    apply_active_draft,
    draft_active_batch,
    reassign_stranded,
)
from judgelab.admin._agreement import (
    AgreementReport,
    agreement_report,
    build_agreement,
    label_criteria,
    load_agreement_data,
    reliability_matrix,
)
from judgelab.admin._assignments import (
    active_raters,
    assign_audit_sample,
    assign_each_to_k,
    assign_pairwise,
    family_pairs,
    natural_key,
    rewrite_variants,
    select_answers,
    subset_summary,
    task_order,
)
from judgelab.admin._common import (
    BASE_URL_SETTING,
    DEFAULT_BASE_URL,
    EXPORT_FORMATS,
    EXPORT_MIME,
    ExportFormat,
    display_name,
)
from judgelab.admin._data import (
    EXPORT_KINDS,
    Download,
    export_data,
    export_designs,
    export_labels,
    frame_bytes,
    import_upload,
    mask_scopes,
    masking_state,
    masking_table,
    rubric_versions,
    self_identifying_table,
    set_masking,
)
from judgelab.admin._designs import (
    DesignDraft,
    apply_sample_design,
    draft_design,
)
from judgelab.admin._kept import (
    KEPT,
    Kept,
    agreement_kept,
    build_apart,
    calibration_report,
    panel_report,
    warm_worker,
)
from judgelab.admin._loop import (
    compare_table,
    confusion_tables,
    disagreement_table,
    held_out_status,
    loop_runs,
    versions_history,
)
from judgelab.admin._overview import (
    Overview,
    median_seconds,
    overview,
)
from judgelab.admin._raters import (
    Invite,
    base_url,
    invite_link,
    invite_rater,
    rater_table,
    reissue_link,
    revoke_rater,
)
from judgelab.admin._review import (
    Adjudication,
    AnswerSheet,
    ReviewBoard,
    adjudicate,
    answer_sheet,
    review_board,
)

__all__ = [
    "BASE_URL_SETTING",
    "DEFAULT_BASE_URL",
    "EXPORT_FORMATS",
    "EXPORT_KINDS",
    "EXPORT_MIME",
    "KEPT",
    "ActiveView",
    "Adjudication",
    "AgreementReport",
    "AnswerSheet",
    "DesignDraft",
    "Download",
    "ExportFormat",
    "Invite",
    "Kept",
    "Overview",
    "ReviewBoard",
    "active_chart",
    "active_raters",
    "active_view",
    "adjudicate",
    "agreement_kept",
    "agreement_report",
    "answer_sheet",
    "apply_active_draft",
    "apply_sample_design",
    "assign_audit_sample",
    "assign_each_to_k",
    "assign_pairwise",
    "base_url",
    "build_agreement",
    "build_apart",
    "calibration_report",
    "compare_table",
    "confusion_tables",
    "disagreement_table",
    "display_name",
    "draft_active_batch",
    "draft_design",
    "export_data",
    "export_designs",
    "export_labels",
    "family_pairs",
    "frame_bytes",
    "held_out_status",
    "import_upload",
    "invite_link",
    "invite_rater",
    "label_criteria",
    "load_agreement_data",
    "loop_runs",
    "mask_scopes",
    "masking_state",
    "masking_table",
    "median_seconds",
    "natural_key",
    "overview",
    "panel_report",
    "rater_table",
    "reassign_stranded",
    "reissue_link",
    "reliability_matrix",
    "review_board",
    "revoke_rater",
    "rewrite_variants",
    "rubric_versions",
    "select_answers",
    "self_identifying_table",
    "set_masking",
    "subset_summary",
    "task_order",
    "versions_history",
    "warm_worker",
]
