"""The floor plan: ``judgelab -> judgelab.calibration -> judgelab.labeler``, no import cycles, one namespace.

Every module's imports are read with :mod:`ast` (including imports inside functions and
under ``TYPE_CHECKING``: a lazy import is still a dependency), resolved to the project's
own modules, and checked two ways:

* **layering** -- a package may import only itself and the packages below it;
* **cycles** -- the module graph has no strongly connected component larger than one
  module (a package's ``__init__`` re-exporting its private modules counts as an
  edge like any other, so a private module importing its own package's ``__init__``
  is a cycle too).
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Each package's folder in the repository: labeler/ and calibration/ stay at the top and are
#: installed inside judgelab through the symlinks judgelab/labeler and judgelab/calibration.
FOLDERS = {"judgelab": "judgelab", "judgelab.calibration": "calibration", "judgelab.labeler": "labeler"}
#: Each package and the packages it may import, top floor first.
LAYERS = {"judgelab": {"judgelab", "judgelab.calibration", "judgelab.labeler"},
          "judgelab.calibration": {"judgelab.calibration", "judgelab.labeler"},
          "judgelab.labeler": {"judgelab.labeler"}}
#: The old top-level names: no code may import them (a user's own calibration.py would shadow them).
OLD_TOPS = ("labeler", "calibration")


def _layer(module: str) -> str:
    """The package (floor) a module belongs to: the longest of LAYERS' names it starts with."""
    return max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)


def _module_name(path: Path) -> str:
    for package, folder in FOLDERS.items():
        if path.is_relative_to(ROOT / folder):
            parts = [package, *path.relative_to(ROOT / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            return ".".join(parts)
    raise ValueError(path)


@functools.cache
def _tree(path: Path) -> ast.Module:
    """A file's syntax tree, parsed once for all the checks here."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@functools.cache
def _modules() -> dict[str, Path]:
    # The symlinks inside judgelab/ are skipped: their files are read once, from their own folder.
    links = [ROOT / "judgelab" / top for top in OLD_TOPS]
    return {_module_name(p): p for folder in FOLDERS.values() for p in sorted((ROOT / folder).rglob("*.py"))
            if not any(p.is_relative_to(link) for link in links)}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module ``name`` refers to (a symbol's module for ``from m import symbol``)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from pkg import sub`` may name a submodule: prefer it when it exists.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                       for alias in node.names]
        for target in targets:
            resolved = _resolve(target, modules)
            if resolved is not None and resolved != module:
                found.add(resolved)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_package_is_scanned() -> None:
    graph = _graph()
    assert {_layer(name) for name in graph} == set(LAYERS)
    assert len(graph) > 50


def test_imports_run_one_way_only() -> None:
    upward = [
        f"{module} imports {target}"
        for module, targets in sorted(_graph().items())
        for target in sorted(targets)
        if _layer(target) not in LAYERS[_layer(module)]
    ]
    assert upward == []


def test_no_import_cycles_between_files() -> None:
    assert _cycles(_graph()) == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set()}, []),
    ],
)
def test_cycle_finder_finds_known_cycles(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert _cycles(graph) == expected


def test_the_checker_sees_a_lazy_upward_import(tmp_path: Path) -> None:
    source = "def f():\n    from judgelab.calibration.design import Design\n    return Design\n"
    path = tmp_path / "x.py"
    path.write_text(source)
    modules = {"judgelab.calibration.design": path, "judgelab.labeler.x": path}
    assert _imports("judgelab.labeler.x", path, modules) == {"judgelab.calibration.design"}


#: Where code lives: the packages, the tests, the benchmarks, the docs' build scripts.
CODE = ("judgelab", "labeler", "calibration", "tests", "bench", "docs")
#: Calls that take a module's name as a string.
LOADERS = {"files", "import_module", "find_spec", "__import__", "as_file"}


def test_the_admin_package_resolves_every_public_name_lazily_and_from_its_own_module() -> None:
    """``judgelab.admin`` loads its modules on first use, and says so consistently.

    Its lazy table, ``__all__`` and the ``TYPE_CHECKING`` imports (what type checkers read) name
    the same things, each from its own module.
    """
    import judgelab.admin as admin

    tree = ast.parse((ROOT / "judgelab" / "admin" / "__init__.py").read_text(encoding="utf-8"))
    typed = {alias.name: node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             for alias in node.names if node.module and node.module.startswith("judgelab.admin.")}
    assert typed == admin._LAZY
    assert sorted(admin.__all__) == sorted(admin._LAZY)
    for name in admin.__all__:
        assert getattr(admin, name) is getattr(__import__(admin._LAZY[name], fromlist=[name]), name)


def test_the_judgelab_package_resolves_every_public_name_lazily_and_from_its_own_module() -> None:
    """``import judgelab as jl`` names the analyst's library the same way: lazy table, ``__all__`` and typing agree."""
    import judgelab

    tree = ast.parse((ROOT / "judgelab" / "__init__.py").read_text(encoding="utf-8"))
    guarded = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    typed = {alias.name: node.module for block in guarded for node in ast.walk(block)
             if isinstance(node, ast.ImportFrom) and node.module for alias in node.names}
    assert typed == judgelab._LAZY
    assert sorted(judgelab.__all__) == sorted(judgelab._LAZY)
    for name in judgelab.__all__:
        assert getattr(judgelab, name) is getattr(__import__(judgelab._LAZY[name], fromlist=[name]), name)


def test_importing_judgelab_loads_no_analysis_code() -> None:
    """Every rater's page imports ``judgelab``: its public names must not load pandas, SciPy or the judge side."""
    # judgelab.calibration and judgelab.labeler count by their own names (the one namespace).
    code = ("import sys, judgelab; print(sorted({m.removeprefix('judgelab.').split('.')[0] for m in sys.modules} & "
            "{'pandas', 'scipy', 'numpy', 'duckdb', 'calibration', 'labeler', 'sklearn'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def _old_names(path: Path) -> list[str]:
    """Each place a file names the old top-level ``labeler``/``calibration`` as a module."""
    found = []
    modules = _modules()
    for node in ast.walk(_tree(path)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if func in LOADERS and node.args[0].value in OLD_TOPS:
                names = [str(node.args[0].value)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # A module path in a string: a `-m` argument, a mock.patch target, an entry point.
            for word in node.value.replace(":", " ").replace("=", " ").replace(";", " ").split():
                top, dot, rest = word.partition(".")
                head = rest.split(".")[0]
                if top in OLD_TOPS and dot and f"judgelab.{top}.{head}" in modules and (
                        rest not in {"png", "md", "json", "csv", "toml"}):  # a file name: calibration.png
                    names.append(word)
        found += [f"{getattr(node, 'lineno', 0)}: {n}" for n in names if n.split(".")[0] in OLD_TOPS]
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return [f"{where}:{hit}" for hit in found]


def test_no_code_names_the_old_top_level_packages() -> None:
    files = [ROOT / "conftest.py"]
    for top in CODE:
        files += [p for p in sorted((ROOT / top).rglob("*.py"))
                  if not any(p.is_relative_to(ROOT / "judgelab" / t) for t in OLD_TOPS)]
    found = [hit for path in files for hit in _old_names(path)]
    assert found == [], "write judgelab.labeler / judgelab.calibration (python /work/wt/ns_rename.py .):\n" + (
        "\n".join(found))


# The probes spell the old names through {lab}/{cal}: this file is scanned too, and so is the
# rename script's input.
@pytest.mark.parametrize("source", [
    "import {lab}.store\n", "from {cal}.stats import cohen_kappa\n", "import {cal} as c\n",
    "args = ['-m', '{cal}.mockapi']\n", "patch('{lab}.store.Store.add_label')\n",
    "resources.files('{lab}')\n", "code = 'import sys\\nimport {lab}.store'\n",
])
def test_the_old_name_check_sees_each_form(tmp_path: Path, source: str) -> None:
    path = tmp_path / "probe.py"
    path.write_text(source.format(lab="label" + "er", cal="calibra" + "tion"))
    assert len(_old_names(path)) == 1


def test_the_old_name_check_leaves_file_names_and_the_new_names_alone(tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text("from judgelab.calibration import stats\nout = 'calibration.png'\n"
                    "p = 'labeler/store/roles.py'\nm = 'judgelab.labeler.store'\n")
    assert _old_names(path) == []
