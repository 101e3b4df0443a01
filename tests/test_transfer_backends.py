"""Every ``judgelab import`` and ``judgelab export`` kind through the CLI, on both back-ends (issue 52, point 3).

The files come from a DuckDB project with rows of every kind (the demo, pair labels and audits,
a sample and an active design, pairwise verdicts). On each back-end: an empty designs file
imports (it used to crash on PostgreSQL: DuckDB-only SQL), every kind imports, every kind
exports with the rows the source exported, and each export imports back changing nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from judgelab.cli import main
from judgelab.labeler.store import Store
from tests.full_project import cli

SUFFIX = {"rubric": "toml", "designs": "json"}


def kinds(verb: str) -> list[str]:
    """The kinds ``judgelab VERB`` takes, as its own ``--help`` lists them."""
    command = main.get_command(click.Context(main), verb)
    assert command is not None
    choice = command.params[0]
    assert isinstance(choice.type, click.Choice)
    return list(choice.type.choices)


def written(out: str) -> int:
    match = re.match(r"wrote (\d+) ", out)
    assert match, out
    return int(match.group(1))


def added(out: str) -> int:
    """Rows an import's summary line says it added (``0 tasks added, 3 answers added, ...``)."""
    return sum(int(n) for n in re.findall(r"(\d+) [a-z_ ]+? added", out))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, int]]:
    """Per kind, the file a DuckDB project exports and its row count (designs: design count)."""
    from judgelab.demo import build_demo

    folder = tmp_path_factory.mktemp("transfer")
    db = str(folder / "source.duckdb")
    store = Store(db)
    build_demo(store)
    store.add_rater("carol")
    cli("design", "--db", db, "--n", "20", "--raters", "demo-rater,carol", "--apply")
    cli("design", "--db", db, "--active", "--target-half-width", "20", "--raters", "demo-rater,carol", "--apply")
    rater = int(store.raters().set_index("name").loc["demo-rater", "rater_id"])
    pair = store.rater_queue(rater, "pair")[0]
    store.add_pair_label(rater, pair.assignment_id, 2)
    store.add_pair_label(rater, pair.assignment_id, -1, comment="changed my mind")
    store.add_audit(rater, store.rater_queue(rater, "audit")[0].assignment_id, True, note="adds a paragraph")
    verdicts = folder / "verdicts_in.csv"
    verdicts.write_text("pair_id,judge_model,shown_first,winner\nP001,j-1,a,a\nP001,j-1,b,tie\nP002,j-1,a,b\n")
    cli("import", "verdicts", str(verdicts), "--db", db)
    out = {}
    for kind in kinds("export"):
        path = folder / f"{kind}.{SUFFIX.get(kind, 'jsonl')}"
        out[kind] = (path, written(cli("export", kind, "--out", str(path), "--db", db)))
        assert out[kind][1] > 0, kind
    store.release()
    return out


@pytest.mark.both_backends
def test_every_kind_imports_exports_and_reimports_on_both_backends(
    db: str | Path, files: dict[str, tuple[Path, int]], tmp_path: Path
) -> None:
    location = str(db)
    # The audit trail is exported, never imported (no file may rewrite who did what).
    assert "audit_trail" not in kinds("import")
    assert set(kinds("import")) == set(kinds("export")) - {"audit_trail"} == set(files) - {"audit_trail"}
    # An empty designs file on an empty project: nothing to import, and no crash.
    empty = tmp_path / "empty_designs.json"
    empty.write_text('{"designs": [], "active_designs": []}\n')
    assert cli("import", "designs", str(empty), "--db", location).endswith("nothing to import\n")
    for kind in kinds("import"):  # the CLI's own order: what a kind names is imported before it
        out = cli("import", kind, str(files[kind][0]), "--db", location)
        # The verdicts are pairwise judgements, so the judgements file brought them already.
        assert added(out) > 0 or (kind == "verdicts" and "3 judgements already present" in out), (kind, out)
    for kind in kinds("import"):  # every kind that round-trips (the audit trail is this project's own)
        again = tmp_path / f"again_{kind}.{SUFFIX.get(kind, 'jsonl')}"
        assert written(cli("export", kind, "--out", str(again), "--db", location)) == files[kind][1], kind
        if kind == "rubric":
            assert again.read_text() == files[kind][0].read_text()
        # Its own export, imported again, changes nothing.
        assert added(cli("import", kind, str(again), "--db", location)) == 0, kind
    assert cli("import", "designs", str(empty), "--db", location).endswith("nothing to import\n")
