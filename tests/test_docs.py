"""The docs site builds with no warning, and its generated pages say what the code says.

``sphinx-build -W`` turns every warning (a broken cross-page link, a heading out of order, a
code block that does not parse, a page in no table of contents) into a failure. The command
line and file-schema pages are generated from the code at build time; this checks the built
pages really carry every verb, option and schema, and that the README stays a short entry
point whose links all land on a docs page.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from judgelab.cli import VERBS
from judgelab.labeler.schemas import DATA_KINDS, SCHEMAS, schemas_markdown

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built as CI builds it: every warning an error."""
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    return out


def _text(page: Path) -> str:
    """The visible text of a built page, tags removed and whitespace folded."""
    html = page.read_text(encoding="utf-8")
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_command_line_page_documents_every_verb_and_option(site: Path) -> None:
    from judgelab.cli import main

    text = _text(site / "reference" / "cli.html")
    for verb in VERBS:
        command = main.get_command(None, verb)  # type: ignore[arg-type]
        assert command is not None and f"judgelab {verb}" in text, verb
        for param in command.params:
            if getattr(param, "hidden", False):  # an older spelling kept working, documented nowhere on purpose
                continue
            for opt in getattr(param, "opts", []):
                if opt.startswith("--"):
                    assert opt in text, f"judgelab {verb} {opt}"


def test_the_schema_page_carries_every_column_of_every_kind(site: Path) -> None:
    text = _text(site / "_generated" / "schemas.html")
    for kind in DATA_KINDS:
        assert kind in text
        for column in SCHEMAS[kind].columns:
            assert column.name in text, (kind, column.name)


def test_the_schema_page_is_the_code_s_own_tables(site: Path) -> None:
    source = (site / "_sources" / "_generated" / "schemas.md.txt").read_text(encoding="utf-8")
    for line in schemas_markdown().splitlines():
        if line.startswith("|"):
            assert line in source, line


def test_every_docs_page_is_built_and_reachable(site: Path) -> None:
    pages = {p.relative_to(DOCS).with_suffix("") for p in DOCS.rglob("*.md")
             if "_build" not in p.parts}
    built = {p.relative_to(site).with_suffix("") for p in site.rglob("*.html")}
    assert pages <= built, sorted(map(str, pages - built))


def test_the_readme_is_a_short_entry_point_whose_doc_links_resolve() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode("utf-8")) < 15_000
    assert "<!-- test-command -->" in readme
    links = re.findall(r"\]\((docs/[^)#\s]+)", readme)
    assert links, "the README links into the docs"
    for link in links:
        assert (REPO / link).is_file(), link


def test_the_python_api_page_documents_every_public_name(site: Path) -> None:
    """reference/api.md is autodoc over ``judgelab``: each public name has its entry, with its docstring."""
    import judgelab

    html = (site / "reference" / "api.html").read_text(encoding="utf-8")
    for name in judgelab.__all__:
        assert f'id="judgelab.{name}"' in html, name
    text = _text(site / "reference" / "api.html")
    assert "judgelab calibrate --json" in text  # a docstring's words, not only the headings
