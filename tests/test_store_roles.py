"""The Store by role (labeler/store/roles.py): complete, faithful, and blind where it must be.

mypy proves that ``Store`` satisfies every role and that each caller uses only its role's
methods; these tests keep the protocols honest about what mypy cannot see.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from judgelab.labeler.store import Store, roles

ROOT = Path(__file__).resolve().parents[1]
HOMES = [c for c in vars(roles).values()
         if inspect.isclass(c) and c.__module__ == roles.__name__ and getattr(c, "_is_protocol", False)]


def _own(proto: type) -> set[str]:
    return {n for n in vars(proto) if not n.startswith("_")}


def _members(proto: type) -> set[str]:
    return set().union(*(_own(c) for c in proto.__mro__ if c.__module__ == roles.__name__))


def _public_store() -> set[str]:
    return {n for n in dir(Store) if not n.startswith("_")} | {"path"}


def test_every_public_store_method_has_exactly_one_home() -> None:
    homes: dict[str, list[str]] = {}
    for proto in HOMES:
        for name in _own(proto):
            homes.setdefault(name, []).append(proto.__name__)
    assert {n: h for n, h in homes.items() if len(h) > 1} == {}
    assert sorted(_public_store() - set(homes)) == []  # a new Store method needs a home
    assert sorted(set(homes) - _public_store()) == []  # a protocol names no method the Store lacks


def test_every_home_is_in_some_role() -> None:
    covered = set().union(*(_members(r) for r in roles.ROLES))
    assert sorted(_public_store() - covered) == []


def _signature(fn: object) -> inspect.Signature:
    if isinstance(fn, property):
        fn = fn.fget
    return inspect.signature(fn)  # type: ignore[arg-type]


@pytest.mark.parametrize("proto", HOMES, ids=lambda p: p.__name__)
def test_protocol_signatures_are_the_stores_own(proto: type) -> None:
    for name in sorted(_own(proto)):
        if name == "path":  # an instance attribute on the Store, a read-only property here
            continue
        theirs = _signature(inspect.getattr_static(Store, name))
        ours = _signature(vars(proto)[name])
        assert list(ours.parameters) == list(theirs.parameters), name
        assert ours.return_annotation == theirs.return_annotation, name
        for p, q in zip(ours.parameters.values(), theirs.parameters.values(), strict=True):
            assert (p.kind, p.annotation) == (q.kind, q.annotation), (name, p.name)
            # A stub may write `...` for a default it cannot import at run time.
            assert p.default is Ellipsis or p.default == q.default, (name, p.name)


# -- blind means blind ---------------------------------------------------------------

RATER_PAGES = ["judgelab/views/rate.py", "judgelab/views/pairwise.py", "judgelab/views/audit.py",
               "judgelab/views/_queue_page.py", "judgelab/views/_crowd.py"]


def test_the_rater_role_reaches_no_family_model_rater_or_admin_data() -> None:
    reach = _members(roles.RaterRole)
    assert reach == {
        "read_only", "rubric", "rubrics", "setting", "rater_hold", "authenticate", "screen", "claim_next",
        "progress", "skip_item", "add_label", "add_pair_label", "add_audit", "quality_feedback", "open_item",
        "next_item", "score_view", "pair_view", "audit_view", "rater_queue", "add_turn_label", "label_turns",
        "flag_author",  # a write: the rater's W key (the answer says who wrote it)
        # a crowd participant's own standing and consent, deal, end, return (their own rows only)
        "crowd_status", "crowd_start", "crowd_deal", "crowd_finish", "crowd_return",
    }
    # Whatever else a rater's role grows, nothing else the other roles reach may join it:
    # answers with family, model and variant, tasks, pairs, raters, designs, judge runs, paths.
    shared = {"read_only", "rubric", "rubrics", "setting", "rater_hold"}
    others = set().union(*(_members(r) for r in roles.ROLES if r is not roles.RaterRole))
    forbidden = others - shared
    assert {"answers", "families", "tasks", "pairs", "raters", "path", "judge_scores", "export_frame",
            "rater_current_labels"} <= forbidden  # the last carries answer ids, which pages never see
    assert sorted(reach & forbidden) == []


def _store_calls(tree: ast.AST) -> set[str]:
    """Attributes read from ``store`` or ``self.store`` in one module."""
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        base = node.value
        if (isinstance(base, ast.Name) and base.id == "store") or (
                isinstance(base, ast.Attribute) and base.attr == "store"):
            found.add(node.attr)
    return found


@pytest.mark.parametrize("page", RATER_PAGES)
def test_rater_pages_use_only_the_rater_role(page: str) -> None:
    tree = ast.parse((ROOT / page).read_text(encoding="utf-8"))
    assert sorted(_store_calls(tree) - _members(roles.RaterRole)) == []
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert "current_store" not in names and "Store" not in names  # only session.rater_store()


# -- callers take roles ------------------------------------------------------------------

# The demo builds a whole project (pool, raters, labels, judge runs): it plays every role.
WHOLE_STORE = {("judgelab/demo.py", "build_demo"), ("judgelab/demo.py", "_demo_pairs_and_audits")}


def test_functions_take_a_role_not_the_whole_store() -> None:
    whole = []
    for package in ("judgelab", "calibration", "labeler"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("labeler/store/"):
                continue
            for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for arg in fn.args.args + fn.args.kwonlyargs:
                    ann = arg.annotation
                    text = ast.unparse(ann) if ann is not None else ""
                    if "Store" in text.replace("'", "").replace('"', "").split(" | ") and (
                            (rel, fn.name) not in WHOLE_STORE):
                        whole.append(f"{rel}:{fn.name}({arg.arg})")
    assert whole == []


WRITE_PREFIXES = ("add_", "set_", "save_", "assign_", "claim_", "skip_", "pause_", "resume_", "revoke_", "reissue_",
                  "mark_", "drop_", "plan_", "start_", "finish_", "mix_")
WRITE_NAMES = {"adjudicate", "open_item", "migrate", "rater_id_for", "release"}


def test_the_analyst_role_only_reads() -> None:
    reach = _members(roles.AnalystRole)
    assert sorted(m for m in reach if m.startswith(WRITE_PREFIXES) or m in WRITE_NAMES) == []
