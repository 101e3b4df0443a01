"""The picture of the Store by role, drawn from the code at each docs build (docs/conf.py).

Three columns: who takes a role (a module whose functions are annotated with it), the roles of
:mod:`judgelab.labeler.store.roles` with their method counts, and the tables their methods' SQL names.
Callers are found by reading annotations (AST), tables by reading each method's SQL (its own
and that of the private ``self._helpers`` it calls), so neither list is kept by hand.
"""

from __future__ import annotations

import ast
import inspect
import re
from html import escape
from pathlib import Path

from judgelab.labeler.store import Store, roles

ROLES = list(roles.ROLES)
ROLE_NAMES = {r.__name__ for r in ROLES}
TABLE = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE|DELETE FROM)\s+([a-z_][a-z0-9_]*)", re.IGNORECASE)
NOT_TABLES = {"select", "unnest", "read_json_auto", "values", "lateral", "range", "information_schema", "duckdb_tables",
              "duckdb_columns", "pragma_table_info", "generate_series", "json_each", "staged", "incoming", "new"}
COLOURS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666", "#1f78b4",
           "#b2182b", "#4d9221"]


def members(role: type) -> set[str]:
    """Every method and property a role protocol lists, its shared parts included."""
    return {n for c in role.__mro__ if c.__module__ == roles.__name__ for n in vars(c) if not n.startswith("_")}


def _source(name: str, seen: set[str]) -> str:
    if name in seen or not hasattr(Store, name):
        return ""
    seen.add(name)
    obj = inspect.getattr_static(Store, name)
    obj = obj.fget if isinstance(obj, property) else getattr(obj, "__func__", obj)
    try:
        text = inspect.getsource(obj)
    except (OSError, TypeError):
        return ""
    helpers = set(re.findall(r"self\.(_[a-z][a-z0-9_]*)\(", text))
    return text + "".join(_source(h, seen) for h in sorted(helpers))


def tables(role: type, known: set[str]) -> set[str]:
    """The tables a role's methods name in their SQL."""
    seen: set[str] = set()
    text = "".join(_source(m, seen) for m in sorted(members(role)))
    return {t.lower() for t in TABLE.findall(text)} & known


def known_tables() -> set[str]:
    """Every table the migrations create."""
    found: set[str] = set()
    for sql in (Path(roles.__file__).parent / "migrations").glob("*.sql"):
        found |= {t.lower() for t in re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+)", sql.read_text(), re.I)}
    return {t for t in found if not t.endswith("_")} - NOT_TABLES  # `rubrics_` is a migration's scratch copy


def callers(root: Path) -> dict[str, set[str]]:
    """Module path -> the roles its functions, fields or variables are annotated with."""
    found: dict[str, set[str]] = {}
    for package in ("judgelab", "calibration", "labeler"):
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith("labeler/store/"):
                continue
            names = set()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                ann = node.annotation if isinstance(node, ast.arg | ast.AnnAssign) else None
                if ann is not None:
                    names |= {n.id for n in ast.walk(ann) if isinstance(n, ast.Name)} & ROLE_NAMES
                    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
                        names |= set(re.findall(r"\w+", ann.value)) & ROLE_NAMES
                # The rater's pages get their role from session.rater_store() (typed RaterRole).
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "rater_store":
                    names.add("RaterRole")
            if names:
                found[rel] = names
    return found


def table_markdown(root: Path) -> str:
    """A table beside the picture: each role, its methods, tables and callers."""
    used = callers(root)
    known = known_tables()
    rows = ["| role | what it is for | methods | tables | taken by |", "|---|---|---|---|---|"]
    for role in ROLES:
        doc = (role.__doc__ or "").strip().splitlines()[0]
        by = sorted(m for m, rs in used.items() if role.__name__ in rs)
        rows.append(f"| `{role.__name__}` | {doc} | {len(members(role))} | {len(tables(role, known))} | "
                    + (", ".join(f"`{m}`" for m in by) or "(through another role)") + " |")
    return "\n".join(rows) + "\n"


def svg(root: Path) -> str:
    """The picture: callers -> roles -> tables, one colour per role."""
    used = callers(root)
    known = known_tables()
    role_tables = {r.__name__: tables(r, known) for r in ROLES}
    mods = sorted(used)
    tabs = sorted(set().union(*role_tables.values()))
    row, top = 18, 40
    height = top + max(len(mods), len(tabs), len(ROLES) * 3) * row + 20
    x_mod, x_role, x_tab, w_mod, w_role, w_tab = 10, 380, 760, 300, 250, 200
    width = x_tab + w_tab + 10

    def ys(n: int) -> list[float]:
        step = (height - top - 20) / max(n, 1)
        return [top + step * (i + 0.5) for i in range(n)]

    y_mod = dict(zip(mods, ys(len(mods)), strict=True))
    y_role = dict(zip([r.__name__ for r in ROLES], ys(len(ROLES)), strict=True))
    y_tab = dict(zip(tabs, ys(len(tabs)), strict=True))
    colour = {r.__name__: COLOURS[i % len(COLOURS)] for i, r in enumerate(ROLES)}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{x_mod}" y="20" font-weight="bold">takes the role (module)</text>',
           f'<text x="{x_role}" y="20" font-weight="bold">role (methods)</text>',
           f'<text x="{x_tab}" y="20" font-weight="bold">tables its SQL names</text>']

    def edge(x1: float, y1: float, x2: float, y2: float, c: str) -> str:
        mid = (x1 + x2) / 2
        return (f'<path d="M{x1:.0f},{y1:.1f} C{mid:.0f},{y1:.1f} {mid:.0f},{y2:.1f} {x2:.0f},{y2:.1f}" '
                f'stroke="{c}" stroke-opacity="0.55" fill="none"/>')

    for m in mods:
        for r in sorted(used[m]):
            out.append(edge(x_mod + w_mod, y_mod[m], x_role, y_role[r], colour[r]))
    for r, ts in role_tables.items():
        for t in sorted(ts):
            out.append(edge(x_role + w_role, y_role[r], x_tab, y_tab[t], colour[r]))
    for m in mods:
        out.append(f'<text x="{x_mod + w_mod - 4}" y="{y_mod[m] + 4:.1f}" text-anchor="end">{escape(m)}</text>')
    for role in ROLES:
        r, y = role.__name__, y_role[role.__name__]
        out.append(f'<rect x="{x_role}" y="{y - 11:.1f}" width="{w_role}" height="22" rx="4" '
                   f'fill="{colour[r]}" fill-opacity="0.15" stroke="{colour[r]}"/>')
        n = len(role_tables[r])
        label = f"{r} ({len(members(role))} methods, {n} table{'s' if n != 1 else ''})"
        out.append(f'<text x="{x_role + 6}" y="{y + 4:.1f}">{escape(label)}</text>')
    for t in tabs:
        out.append(f'<text x="{x_tab + 4}" y="{y_tab[t] + 4:.1f}">{escape(t)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
