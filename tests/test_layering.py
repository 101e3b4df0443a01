"""The floor plan: ``judgelab -> calibration -> labeler``, and no import cycles between files.

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
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Each package and the packages it may import, top floor first.
LAYERS = {"judgelab": {"judgelab", "calibration", "labeler"},
          "calibration": {"calibration", "labeler"},
          "labeler": {"labeler"}}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for top in LAYERS for p in (ROOT / top).rglob("*.py")}


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
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
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
    assert {name.split(".")[0] for name in graph} == set(LAYERS)
    assert len(graph) > 50


def test_imports_run_one_way_only() -> None:
    upward = [
        f"{module} imports {target}"
        for module, targets in sorted(_graph().items())
        for target in sorted(targets)
        if target.split(".")[0] not in LAYERS[module.split(".")[0]]
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
    source = "def f():\n    from calibration.design import Design\n    return Design\n"
    path = tmp_path / "x.py"
    path.write_text(source)
    modules = {"calibration.design": path, "labeler.x": path}
    assert _imports("labeler.x", path, modules) == {"calibration.design"}


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
    code = ("import sys, judgelab; print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'pandas', 'scipy', 'numpy', 'duckdb', 'calibration', 'labeler', 'sklearn'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
