"""What the admin pages do, as plain functions of a :class:`~judgelab.labeler.store.Store`.

The admin pages only wire widgets to these functions, so everything an admin can
do is tested here without a browser. Admins are not blind: frames returned here
may carry family, model and variant, and must never be handed to a rater page.

The Review page's adjudicated labels are :mod:`judgelab.admin._review`.

Simulated raters (``raters.simulated``) are marked wherever a rater's name is
shown: :func:`display_name` appends ``" (simulated)"``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The names below load on first use (PEP 562): a rater's page imports judgelab.admin._incidents,
# and Python runs this package's __init__ first; importing every admin module here would
# load the calibration code, scikit-learn and the provider SDKs (about 6 s of CPU) before a
# rater's first page could draw.
if TYPE_CHECKING:
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
    from judgelab.admin._audit import AUDIT_COLUMNS, audit_records, audit_table
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
        screen_summary,
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

_LAZY: dict[str, str] = {
    "AUDIT_COLUMNS": "judgelab.admin._audit",
    "audit_records": "judgelab.admin._audit",
    "audit_table": "judgelab.admin._audit",
    "ActiveView": "judgelab.admin._active",
    "active_chart": "judgelab.admin._active",
    "active_view": "judgelab.admin._active",
    "apply_active_draft": "judgelab.admin._active",
    "draft_active_batch": "judgelab.admin._active",
    "reassign_stranded": "judgelab.admin._active",
    "AgreementReport": "judgelab.admin._agreement",
    "agreement_report": "judgelab.admin._agreement",
    "build_agreement": "judgelab.admin._agreement",
    "label_criteria": "judgelab.admin._agreement",
    "load_agreement_data": "judgelab.admin._agreement",
    "reliability_matrix": "judgelab.admin._agreement",
    "active_raters": "judgelab.admin._assignments",
    "assign_audit_sample": "judgelab.admin._assignments",
    "assign_each_to_k": "judgelab.admin._assignments",
    "assign_pairwise": "judgelab.admin._assignments",
    "family_pairs": "judgelab.admin._assignments",
    "natural_key": "judgelab.admin._assignments",
    "rewrite_variants": "judgelab.admin._assignments",
    "select_answers": "judgelab.admin._assignments",
    "subset_summary": "judgelab.admin._assignments",
    "task_order": "judgelab.admin._assignments",
    "BASE_URL_SETTING": "judgelab.admin._common",
    "DEFAULT_BASE_URL": "judgelab.admin._common",
    "EXPORT_FORMATS": "judgelab.admin._common",
    "EXPORT_MIME": "judgelab.admin._common",
    "ExportFormat": "judgelab.admin._common",
    "display_name": "judgelab.admin._common",
    "Download": "judgelab.admin._data",
    "EXPORT_KINDS": "judgelab.admin._data",
    "export_data": "judgelab.admin._data",
    "export_designs": "judgelab.admin._data",
    "export_labels": "judgelab.admin._data",
    "frame_bytes": "judgelab.admin._data",
    "import_upload": "judgelab.admin._data",
    "mask_scopes": "judgelab.admin._data",
    "masking_state": "judgelab.admin._data",
    "masking_table": "judgelab.admin._data",
    "rubric_versions": "judgelab.admin._data",
    "self_identifying_table": "judgelab.admin._data",
    "set_masking": "judgelab.admin._data",
    "DesignDraft": "judgelab.admin._designs",
    "apply_sample_design": "judgelab.admin._designs",
    "draft_design": "judgelab.admin._designs",
    "KEPT": "judgelab.admin._kept",
    "Kept": "judgelab.admin._kept",
    "agreement_kept": "judgelab.admin._kept",
    "build_apart": "judgelab.admin._kept",
    "calibration_report": "judgelab.admin._kept",
    "panel_report": "judgelab.admin._kept",
    "warm_worker": "judgelab.admin._kept",
    "compare_table": "judgelab.admin._loop",
    "confusion_tables": "judgelab.admin._loop",
    "disagreement_table": "judgelab.admin._loop",
    "held_out_status": "judgelab.admin._loop",
    "loop_runs": "judgelab.admin._loop",
    "versions_history": "judgelab.admin._loop",
    "Overview": "judgelab.admin._overview",
    "median_seconds": "judgelab.admin._overview",
    "overview": "judgelab.admin._overview",
    "screen_summary": "judgelab.admin._overview",
    "Invite": "judgelab.admin._raters",
    "base_url": "judgelab.admin._raters",
    "invite_link": "judgelab.admin._raters",
    "invite_rater": "judgelab.admin._raters",
    "rater_table": "judgelab.admin._raters",
    "reissue_link": "judgelab.admin._raters",
    "revoke_rater": "judgelab.admin._raters",
    "Adjudication": "judgelab.admin._review",
    "AnswerSheet": "judgelab.admin._review",
    "ReviewBoard": "judgelab.admin._review",
    "adjudicate": "judgelab.admin._review",
    "answer_sheet": "judgelab.admin._review",
    "review_board": "judgelab.admin._review",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


__all__ = [
    "AUDIT_COLUMNS",
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
    "audit_records",
    "audit_table",
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
    "screen_summary",
    "select_answers",
    "self_identifying_table",
    "set_masking",
    "subset_summary",
    "task_order",
    "versions_history",
    "warm_worker",
]
