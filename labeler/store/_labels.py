"""Assignments, labels, pairwise labels, padding audits and queue events (the rater app's writes)."""

from __future__ import annotations

from labeler.store._imports import ImportMixin


class LabelMixin(ImportMixin):
    """Filled in by the rater-app work."""
