"""Constants and helpers every admin feature shares."""


from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    pass

#: Where invite links point when ``$JUDGELAB_BASE_URL`` is not set.
DEFAULT_BASE_URL = "http://localhost:8501"

ExportFormat = Literal["csv", "jsonl", "parquet"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("csv", "jsonl", "parquet")
#: The MIME type of each export format.
EXPORT_MIME: dict[ExportFormat, str] = {
    "csv": "text/csv",
    "jsonl": "application/jsonl",
    "parquet": "application/vnd.apache.parquet",
}


def display_name(name: str, simulated: bool) -> str:
    """A rater's name as admin pages show it: simulated raters say so."""
    return f"{name} (simulated)" if simulated else name


