"""Judge runs and judgements (the runner's writes and the cache)."""

from __future__ import annotations

from labeler.store._core import StoreCore


class JudgementMixin(StoreCore):
    """Filled in by the judge/runner work."""
