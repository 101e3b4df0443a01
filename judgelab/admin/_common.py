"""Constants and helpers every admin feature shares."""


from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    pass

#: Where invite links point when neither ``$JUDGELAB_BASE_URL`` nor the project says otherwise.
DEFAULT_BASE_URL = "http://localhost:8501"
#: The project setting where ``judgelab serve`` records the address it serves at, so links made
#: later (``judgelab raters add``, the Raters page) point at the server that answers them.
BASE_URL_SETTING = "base_url"

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


