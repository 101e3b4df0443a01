"""Every kind of data round-trips: export K -> import K reproduces it, in CSV, JSONL and Parquet.

Property-based (hypothesis): random labels with edit histories, preferences, audits, judgements
in every format and orientation, verdicts, answers and pairs are written into a database, exported
in each format and imported into a second database with the same answers and rubric; the second
database's export must equal the first's (ids renumbered), and importing the file again, or
into the database it came from, must change nothing. Texts include everything a spreadsheet would
run as a formula, quotes, commas, line breaks and non-ASCII.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgelab.labeler.errors import ConflictError
from judgelab.labeler.exports import EXPORT_FORMATS, export_table, rubric_toml, table_bytes
from judgelab.labeler.importers import import_file, parse_rubric
from judgelab.labeler.models import (
    Answer,
    Criterion,
    ImportedAudit,
    ImportedJudgement,
    ImportedLabel,
    ImportedPairLabel,
    Pair,
    Rubric,
    Task,
)
from judgelab.labeler.scales import FORMAT_SPECS, FORMATS
from judgelab.labeler.schemas import SCHEMAS, DataKind
from judgelab.labeler.store import Store, release_all
from judgelab.labeler.transcripts import parse_messages, render

RUBRIC = Rubric("r1", 1, "Rubric", "likert5", "4 or 5", (Criterion("acc", "A", "d"), Criterion("tone", "T", "d")),
                pass_threshold=4.0)
TASKS = [Task(f"t{i}", f"prompt {i}") for i in range(3)]
ANSWERS = [Answer(f"t{i}-{s}", f"t{i}", f"fam{s}", f"m{s}", f"answer {s} to task {i} " * (1 + i)) for i in range(3)
           for s in "ab"]
ANSWERS += [Answer(f"t{i}-a~padded", f"t{i}", "fama", "ma", f"a longer answer to task {i} " * 4, "padded",
                   f"t{i}-a") for i in range(3)]
PAIRS = [Pair(f"P{i}", f"question {i}", f"first answer {i}", f"second answer {i}", gold) for i, gold in
         enumerate(["A", "B", "tie", None])]
# A conversation, and a rubric scoring each of its turns (labels carry turn scores under it).
EACH = replace(RUBRIC, rubric_id="r-each", turn="each")
CONVERSATION = parse_messages([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "one"},
                               {"role": "user", "content": "and?"}, {"role": "assistant", "content": "two"}])
ANSWERS.append(Answer("t0-conv", "t0", "famc", "mc", render(CONVERSATION), transcript=CONVERSATION))
ANSWER_IDS = [a.answer_id for a in ANSWERS]

SETTINGS = settings(max_examples=8, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# Text a spreadsheet would run, quotes, separators, line breaks, non-ASCII: all must come back.
TEXT = st.text(st.one_of(st.characters(blacklist_categories=("Cs", "Cc")),
                         st.sampled_from(["=", "+", "-", "@", "'", "\t", "\r", "\n", ",", '"', "\u2028"])),
               max_size=12)
NAME = st.sampled_from(["ann", "bob", "cy"])
WHEN = st.one_of(st.none(), st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2099, 1, 1)))
SECONDS = st.one_of(st.none(), st.floats(0, 1e6, allow_nan=False))


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with the rubric, the answers and the pairs every round trip shares."""
    path = tmp_path_factory.mktemp("template") / "template.duckdb"
    store = Store(path)
    store.add_rubric(EACH)  # first: RUBRIC stays the newest, the one a label naming none is read under
    store.add_rubric(RUBRIC)
    store.add_pool(TASKS, ANSWERS)
    store.add_pairs(PAIRS)
    release_all()
    return path


class Copies:
    """Fresh copies of the template, one per database an example needs."""

    def __init__(self, template: Path, folder: Path) -> None:
        self.template, self.folder, self.n = template, folder, 0

    def new(self, *, empty: bool = False) -> Store:
        self.n += 1
        path = self.folder / f"db{self.n}.duckdb"
        if empty:
            return Store(path)
        release_all()  # a held file may have committed work in its write-ahead log
        shutil.copy(self.template, path)
        return Store(path)


@pytest.fixture
def copies(template: Path, tmp_path_factory: pytest.TempPathFactory) -> Copies:
    return Copies(template, tmp_path_factory.mktemp("copies"))


def _renumbered(frame: pd.DataFrame, kind: DataKind) -> pd.DataFrame:
    """The export with its own ids replaced by row numbers (another database numbers rows anew)."""
    id_col = SCHEMAS[kind].columns[0].name
    if not id_col.endswith("_id") or id_col in ("task_id", "run_id", "pair_id"):
        return frame
    position = {old: i for i, old in enumerate(frame[id_col])}
    out = frame.copy()
    out[id_col] = range(len(frame))
    out["supersedes"] = [None if pd.isna(s) else position[s] for s in frame["supersedes"]]
    return out


def _same(before: pd.DataFrame, after: pd.DataFrame, kind: DataKind) -> None:
    b, a = _renumbered(before, kind), _renumbered(after, kind)
    assert list(b.columns) == list(a.columns)
    assert len(b) == len(a)
    for column in b.columns:
        left = [None if pd.isna(v) else v for v in b[column].astype(object)]
        right = [None if pd.isna(v) else v for v in a[column].astype(object)]
        assert left == right, (kind, column)


def round_trip(copies: Copies, kind: DataKind, fill: Callable[[Store], Any], *, empty: bool = False) -> None:
    source = copies.new(empty=empty)
    fill(source)
    before = export_table(source, kind)
    assert [c for c in before.columns if c in SCHEMAS[kind].names] == list(SCHEMAS[kind].names)
    for fmt in EXPORT_FORMATS:
        path = copies.folder / f"{kind}-{copies.n}.{fmt}"
        path.write_bytes(table_bytes(before, fmt))
        target = copies.new(empty=empty)
        import_file(target, kind, path)
        _same(before, export_table(target, kind), kind)
        again = import_file(target, kind, path)
        assert sum(again.added.values()) == 0, (fmt, again)
        into_source = import_file(source, kind, path)
        assert sum(into_source.added.values()) == 0, (fmt, "re-importing its own export", into_source)


# -- strategies --------------------------------------------------------------------------------


@st.composite
def label_chains(draw: st.DrawFn) -> list[ImportedLabel]:
    groups = draw(st.lists(st.tuples(NAME, st.sampled_from(ANSWER_IDS)), min_size=1, max_size=4, unique=True))
    out: list[ImportedLabel] = []
    for rater, answer in groups:
        source = draw(st.sampled_from(["import", "simulated"]))
        parent = None
        for _ in range(draw(st.integers(1, 3))):
            score = draw(st.one_of(st.none(), st.floats(1, 5)))
            passed = draw(st.one_of(st.none(), st.booleans()))
            flag = draw(st.one_of(st.none(), TEXT.filter(bool)))
            if score is None and passed is None and flag is None:
                passed = True
            if score is not None and passed is None:
                passed = RUBRIC.passes(score)  # what the importer makes of a score without a pass
            criteria = draw(st.dictionaries(st.sampled_from(["acc", "tone"]), st.floats(1, 5)))
            ref = len(out) + 1
            out.append(ImportedLabel(answer, rater, score, passed, criteria, draw(TEXT), flag, draw(SECONDS),
                                     draw(WHEN), ("r1", 1), source, ref, parent))  # type: ignore[arg-type]
            parent = ref
    return out


@st.composite
def preference_chains(draw: st.DrawFn) -> list[ImportedPairLabel]:
    groups = draw(st.lists(st.tuples(NAME, st.sampled_from(ANSWER_IDS), st.sampled_from(ANSWER_IDS)),
                           min_size=1, max_size=4, unique=True))
    out: list[ImportedPairLabel] = []
    for rater, left, right in groups:
        parent = None
        source = draw(st.sampled_from([None, "simulated"]))
        for _ in range(draw(st.integers(1, 3))):
            ref = len(out) + 1
            out.append(ImportedPairLabel(rater, left, right, draw(st.integers(-2, 2)), draw(TEXT), draw(SECONDS),
                                         draw(WHEN), source, ref, parent))  # type: ignore[arg-type]
            parent = ref
    return out


@st.composite
def audit_chains(draw: st.DrawFn) -> list[ImportedAudit]:
    pairs = [(f"t{i}-a", f"t{i}-a~padded") for i in range(3)]
    groups = draw(st.lists(st.tuples(NAME, st.sampled_from(pairs)), min_size=1, max_size=4, unique=True))
    out: list[ImportedAudit] = []
    for rater, (original, rewrite) in groups:
        parent = None
        for _ in range(draw(st.integers(1, 3))):
            ref = len(out) + 1
            out.append(ImportedAudit(rater, original, rewrite, draw(st.booleans()), draw(TEXT), draw(SECONDS),
                                     draw(WHEN), ref, parent))
            parent = ref
    return out


@st.composite
def judgements(draw: st.DrawFn) -> list[ImportedJudgement]:
    out = []
    for trial in range(draw(st.integers(1, 6))):
        fmt = draw(st.sampled_from(FORMATS))
        spec = FORMAT_SPECS[fmt]
        model, run = draw(st.sampled_from([("j1", None), ("j1", "run-x"), ("j2", None)]))
        if spec.kind == "pairwise":
            pair = draw(st.sampled_from(["P0", "P1"]))
            answers = [(f"{pair}:a", f"{pair}:b"), ("t0-a", "t0-b"), ("t1-b", "t1-a~padded")]
            first, second = draw(st.sampled_from(answers))
            order = draw(st.sampled_from([None, "AB", "BA"]))
        else:
            first, second, order = draw(st.sampled_from(ANSWER_IDS)), None, None
        outcome = draw(st.sampled_from(["value", "parse_error", "error"]))
        value = draw(st.floats(*spec.range)) if outcome == "value" else None
        passed = draw(st.one_of(st.none(), st.booleans())) if outcome == "value" and spec.kind == "pointwise" else None
        if passed is None and value is not None and fmt == RUBRIC.scale:
            passed = RUBRIC.passes(value)  # what the importer makes of a score on the rubric's scale
        meta = draw(st.dictionaries(st.sampled_from(["target_id", "variant"]), st.text(max_size=5), max_size=2))
        out.append(ImportedJudgement(
            first, model, value, passed, fmt, second, order, draw(st.sampled_from([None, "famj"])), draw(
                st.one_of(st.none(), TEXT.filter(bool))), run, draw(st.sampled_from([None, f"call-{trial}"])),
            draw(st.sampled_from([None, "position", "=probe"])), draw(st.sampled_from([None, "pair"])), trial,
            draw(TEXT.filter(bool)) if outcome == "parse_error" else None,
            draw(TEXT.filter(bool)) if outcome == "error" else None, meta,
            draw(st.one_of(st.none(), st.integers(0, 10**6))), draw(st.one_of(st.none(), st.integers(0, 10**6))),
            draw(st.one_of(st.none(), st.floats(0, 10, allow_nan=False))),
            draw(st.one_of(st.none(), st.floats(0, 100, allow_nan=False)))))
    return out


@st.composite
def verdict_rows(draw: st.DrawFn) -> list[ImportedJudgement]:
    from judgelab.labeler._judge import parse_verdicts
    from judgelab.labeler._rows import Rows

    rows = []
    for pair in draw(st.lists(st.sampled_from([p.pair_id for p in PAIRS]), min_size=1, max_size=4, unique=True)):
        for first in draw(st.sampled_from([("a",), ("b",), ("a", "b")])):
            winner = draw(st.sampled_from(["a", "b", "tie", None]))
            rows.append({"pair_id": pair, "judge_model": draw(st.sampled_from(["j1", "j2"])), "shown_first": first,
                         "winner": winner, "raw": draw(st.one_of(st.none(), TEXT.filter(bool))),
                         "trial": draw(st.sampled_from([None, 0, 1])),
                         "parse_error": draw(st.one_of(st.none(), TEXT.filter(bool))) if winner is None else None})
    table = Rows("generated", tuple(rows[0]), rows)
    seen: set[tuple[Any, ...]] = set()
    unique = []
    for j in parse_verdicts(table, pairs={p.pair_id for p in PAIRS}) if _distinct(rows) else []:
        key = (j.judge_model, j.answer_id, j.trial)
        if key not in seen:
            seen.add(key)
            unique.append(j)
    return unique


def _distinct(rows: list[dict[str, Any]]) -> bool:
    keys = [(r["judge_model"], r["pair_id"], r["shown_first"], r["trial"]) for r in rows]
    return len(keys) == len(set(keys))


@st.composite
def pools(draw: st.DrawFn) -> tuple[list[Task], list[Answer]]:
    tasks, answers = [], []
    for i in range(draw(st.integers(1, 3))):
        reference = draw(st.one_of(st.none(), TEXT.filter(str.strip)))
        author = draw(st.sampled_from([None, ("human", "qa"), ("model", "claude")])) if reference else None
        tasks.append(Task(f"T{i}", draw(TEXT.filter(str.strip)), draw(st.one_of(st.none(), TEXT.filter(str.strip))),
                          reference, author[0] if author else None, author[1] if author else None))  # type: ignore[arg-type]
        for s in "ab":
            answers.append(Answer(f"T{i}-{s}", f"T{i}", draw(st.sampled_from(["claude", "gpt"])), "m-1",
                                  draw(TEXT.filter(str.strip))))
        if draw(st.booleans()):
            answers.append(Answer(f"T{i}-a~padded", f"T{i}", "claude", "m-1", draw(TEXT.filter(str.strip)), "padded",
                                  f"T{i}-a"))
    return tasks, answers


@st.composite
def pair_sets(draw: st.DrawFn) -> list[Pair]:
    return [Pair(f"Q{i}", draw(TEXT.filter(str.strip)), draw(TEXT.filter(str.strip)), draw(TEXT.filter(str.strip)),
                 draw(st.sampled_from(["A", "B", "tie", None]))) for i in range(draw(st.integers(1, 4)))]


# -- the round trips --------------------------------------------------------------------------------


@SETTINGS
@given(labels=label_chains())
def test_labels_round_trip(copies: Copies, labels: list[ImportedLabel]) -> None:
    round_trip(copies, "labels", lambda s: s.add_imported_labels(labels))


def test_labels_with_turn_scores_round_trip(copies: Copies) -> None:
    each = ("r-each", 1)
    labels = [
        ImportedLabel("t0-conv", "ann", 4.0, True, {"acc": 4.0, "tone": 3.0}, rubric=each, ref=1,
                      turns={1: 5.0, 2: 3.0}),
        # An edit: the new label has turn scores of its own; the old one's stay its history.
        ImportedLabel("t0-conv", "ann", 3.0, False, {"acc": 3.0, "tone": 3.0}, rubric=each, ref=2, supersedes=1,
                      turns={1: 4.0, 2: 2.0}),
        ImportedLabel("t0-conv", "bob", None, None, flag_reason="cut off", rubric=each, ref=3),
        ImportedLabel("t0-a", "cy", 4.0, True, {"acc": 4.0, "tone": 4.0}, rubric=("r1", 1), ref=4),  # no turns
    ]
    round_trip(copies, "labels", lambda s: s.add_imported_labels(labels))
    source = copies.new()
    source.add_imported_labels(labels)
    exported = export_table(source, "labels")
    assert [None if pd.isna(t) else t for t in exported["turns"]] == [
        '{"1": 5.0, "2": 3.0}', '{"1": 4.0, "2": 2.0}', None, None]
    current = source.human_labels("r-each", 1)
    assert sorted(source.turn_scores(current["label_id"])["score"]) == [2.0, 4.0]
    # The same label with other turn scores is another label: refused, not merged.
    changed = [replace(labels[0], turns={1: 1.0, 2: 3.0})]
    with pytest.raises(ConflictError, match="already has a different imported label"):
        source.add_imported_labels(changed)


@SETTINGS
@given(prefs=preference_chains())
def test_pair_labels_round_trip(copies: Copies, prefs: list[ImportedPairLabel]) -> None:
    round_trip(copies, "pair_labels", lambda s: s.add_imported_pair_labels(prefs))


@SETTINGS
@given(audits=audit_chains())
def test_audits_round_trip(copies: Copies, audits: list[ImportedAudit]) -> None:
    round_trip(copies, "audits", lambda s: s.add_imported_audits(audits))


@SETTINGS
@given(judged=judgements())
def test_judgements_round_trip(copies: Copies, judged: list[ImportedJudgement]) -> None:
    round_trip(copies, "judgements", lambda s: s.add_imported_judgements(judged))


@SETTINGS
@given(verdicts=verdict_rows())
def test_verdicts_round_trip(copies: Copies, verdicts: list[ImportedJudgement]) -> None:
    round_trip(copies, "verdicts", lambda s: s.add_imported_judgements(verdicts))


@SETTINGS
@given(pool=pools())
def test_answers_round_trip(copies: Copies, pool: tuple[list[Task], list[Answer]]) -> None:
    round_trip(copies, "answers", lambda s: s.add_pool(*pool), empty=True)


@SETTINGS
@given(pairs=pair_sets())
def test_pairs_round_trip(copies: Copies, pairs: list[Pair]) -> None:
    round_trip(copies, "pairs", lambda s: s.add_pairs(pairs), empty=True)


@pytest.mark.parametrize("kind", ["answers", "pairs", "labels", "pair_labels", "audits", "judgements", "verdicts"])
def test_an_export_of_an_empty_kind_imports_as_nothing(copies: Copies, kind: DataKind) -> None:
    # A project backed up kind by kind has empty kinds; its own files must come back in.
    source = copies.new(empty=kind in ("answers", "pairs"))
    empty = export_table(source, kind)
    assert len(empty) == 0
    for fmt in EXPORT_FORMATS:
        path = copies.folder / f"empty-{kind}.{fmt}"
        path.write_bytes(table_bytes(empty, fmt))
        assert str(import_file(source, kind, path)) == "nothing to import"
        _same(empty, export_table(source, kind), kind)


@SETTINGS
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
       threshold=st.one_of(st.none(), st.floats(1, 5)))
def test_rubric_round_trips_as_toml(tmp_path_factory: pytest.TempPathFactory, text: str,
                                    threshold: float | None) -> None:
    rubric = Rubric("r-x", 3, f"name {text}", "likert5", text, (Criterion("c1", text or "n", text),),
                    threshold, text, "model", "claude")
    path = tmp_path_factory.mktemp("rubric") / "r.toml"
    path.write_text(rubric_toml(rubric), encoding="utf-8")
    assert parse_rubric(path) == rubric
