"""Sphinx settings for the judgelab docs (``sphinx-build -W -b html docs docs/_build``).

Pages are Markdown (MyST). Several parts are generated from the code at every build, so they
cannot drift from it: the command-line reference (sphinx-click reads the click commands), the
file schemas (written here from :func:`judgelab.labeler.schemas.schemas_markdown`, the tables
``judgelab import`` checks files against), the Store's parts, and the picture of the Store by
role (``docs/_store_roles.py`` reads :mod:`judgelab.labeler.store.roles`, the callers' annotations and
the methods' SQL).
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
# Build from a clone without installing: the packages sit one folder up.
sys.path.insert(0, str(DOCS.parent))

from judgelab import __version__  # noqa: E402  (after the path is set)
from judgelab.labeler.schemas import schemas_markdown  # noqa: E402
from judgelab.labeler.store import Store  # noqa: E402

sys.path.insert(0, str(DOCS))
import _store_roles  # noqa: E402  (docs/_store_roles.py draws the Store-by-role picture)

project = "judgelab"
author = "judgelab maintainers"
copyright = "judgelab maintainers"
version = release = __version__

# autodoc + napoleon: the Python API page (reference/api.md) is the docstrings (Google style).
extensions = ["myst_parser", "sphinx_click", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
napoleon_use_ivar = True  # a dataclass's "Attributes:" are fields of its entry, not duplicate entries
autodoc_typehints = "description"
autodoc_member_order = "bysource"
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "_generated/.gitignore"]
myst_heading_anchors = 3
html_theme = "furo"
html_title = f"judgelab {release}"

SCHEMAS_INTRO = """# File schemas

Every kind of data has one file schema: `judgelab export KIND --out FILE` writes exactly what
`judgelab import KIND FILE` reads. These tables are generated from the code
(`labeler/schemas.py`) each time the docs are built, so they cannot drift from what the
importer checks; [Moving data in and out](../files.md) says how files are read.

"""


def _write(name: str, text: str) -> None:
    out = DOCS / "_generated" / name
    out.parent.mkdir(exist_ok=True)
    # Rewrite only on change: Sphinx rebuilds a page whose file time moved.
    if not out.exists() or out.read_text(encoding="utf-8") != text:
        out.write_text(text, encoding="utf-8")


def _schemas_page() -> str:
    # The generator writes level-3 headings for one README section; on a page they are level 2.
    body = "\n".join(line[1:] if line.startswith("### ") else line
                     for line in schemas_markdown().splitlines())
    return SCHEMAS_INTRO + body + "\n"


def _store_map() -> str:
    """The Store's parts as a table: each mixin, its module's first docstring line, its methods."""
    rows = ["| part | module | what it holds | public methods |", "|---|---|---|---|"]
    for part in Store.__mro__[1:]:
        if not part.__module__.startswith("judgelab.labeler.store"):
            continue
        module = sys.modules[part.__module__]
        summary = (module.__doc__ or "").strip().splitlines()[0]
        methods = sorted(n for n, v in vars(part).items() if callable(v) and not n.startswith("_"))
        names = ", ".join(f"`{n}`" for n in methods)
        rows.append(f"| `{part.__name__}` | `{part.__module__}` | {summary} | {len(methods)}: {names} |")
    return "\n".join(rows) + "\n"


_write("schemas.md", _schemas_page())
_write("store.md", _store_map())
_write("store_roles.md", _store_roles.table_markdown(DOCS.parent))
_write("store_roles.svg", _store_roles.svg(DOCS.parent))
