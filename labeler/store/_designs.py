"""Stored hand-label sample designs."""

from __future__ import annotations

from labeler.store._core import StoreCore


class DesignMixin(StoreCore):
    """Filled in by the sample-design work."""
