"""The demo: a fresh database with the bundled data, a demo rater and an admin."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from labeler.errors import InputError
from labeler.importers import import_file
from labeler.store import Store


def data_dir() -> Path:
    """The bundled ``data/`` folder (next to the packages in the repository)."""
    here = Path(__file__).resolve().parent.parent / "data"
    if not (here / "rubric.toml").is_file():
        raise InputError(
            f"the bundled data folder {here} is missing",
            fix="run judgelab from a clone of the repository installed with `pip install -e .`.",
        )
    return here


@dataclass(frozen=True)
class DemoResult:
    """What :func:`build_demo` made."""

    rater_url: str
    admin_url: str
    summary_lines: list[str] = field(default_factory=list)


def build_demo(store: Store, *, base_url: str = "http://localhost:8501") -> DemoResult:
    """Load the bundled rubric, answers and pairs, and invite a demo rater and admin."""
    from labeler.cli import invite_url

    folder = data_dir()
    lines = []
    for kind, name in (("rubric", "rubric.toml"), ("answers", "answers.jsonl"), ("pairs", "pairs.jsonl")):
        lines.append(f"{name}: {import_file(store, kind, folder / name)}")  # type: ignore[arg-type]
    _, rater_token = store.add_rater("demo-rater")
    _, admin_token = store.add_rater("demo-admin", role="admin")
    return DemoResult(
        rater_url=invite_url(rater_token, base_url),
        admin_url=invite_url(admin_token, base_url),
        summary_lines=lines,
    )
