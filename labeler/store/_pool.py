"""Rubrics, tasks, answers and pairs: what gets judged and labelled.

:meth:`PoolMixin.add_pool` is the one way an answer's text enters the store (the
importers, the demo, padded and other perturbed variants, the app's uploads all call
it), and it finds the text's self-identifying spans itself
(:func:`judgelab.labeler.blinding.detect_self_identifying`, with the pool's own family and model
names): no write path can store an answer raters would see unmasked.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import duckdb
import pandas as pd

from judgelab.labeler.blinding import detect_self_identifying, detect_self_identifying_many, mask, merge_spans
from judgelab.labeler.errors import ConflictError
from judgelab.labeler.models import Answer, Criterion, Pair, Rubric, Task
from judgelab.labeler.scales import FORMAT_SPECS, FormatSpec, format_spec, known_format, register_scale, scale_from_dict
from judgelab.labeler.store._audit import audit, audit_import, audit_setting
from judgelab.labeler.store._bulk import drop_stored, insert_rows, staged
from judgelab.labeler.store._core import StoreCore
from judgelab.labeler.store._ingest import Staging, item_ids
from judgelab.labeler.transcripts import Transcript, blinded, name_spans


@dataclass(frozen=True)
class ImportSummary:
    """What an import added and what it found already present."""

    added: dict[str, int]
    unchanged: dict[str, int]
    notes: tuple[str, ...] = ()
    """What the import read differently from the file's text (e.g. a rounded mean stored exact)."""
    warnings: tuple[str, ...] = ()
    """What was imported as written but looks wrong (e.g. a conversation opening with the assistant)."""

    def __str__(self) -> str:
        parts = [f"{n} {kind} added" for kind, n in self.added.items()]
        parts += [f"{n} {kind} already present" for kind, n in self.unchanged.items() if n]
        text = ", ".join(parts) if parts else "nothing to import"
        n = len(self.warnings)
        if n:
            shown = "; ".join(self.warnings[:3]) + (f"; and {n - 3} more" if n > 3 else "")
            text += f"; {n} warning{'s' * (n != 1)} ({shown})"
        return "; ".join((text, *self.notes))


class PoolMixin(StoreCore):
    """Reads and writes rubrics, tasks, answers and pairs."""

    # -- rubrics ---------------------------------------------------------------------

    def add_rubric(self, rubric: Rubric, *, source_file: str | None = None) -> ImportSummary:
        """Store a rubric version; the same content twice is a no-op, different content a conflict."""
        digest = rubric.content_hash()
        with self.connection() as con:
            row = con.execute(
                "SELECT content_hash FROM rubrics WHERE rubric_id = ? AND version = ?",
                [rubric.rubric_id, rubric.version],
            ).fetchone()
            if row is not None:
                if row[0] != digest:
                    raise ConflictError(
                        f"rubric {rubric.rubric_id!r} version {rubric.version} is already stored "
                        "with different content",
                        file=source_file,
                        fix="give the changed rubric a new `version` number.",
                    )
                return ImportSummary(added={}, unchanged={"rubrics": 1})
            con.execute(
                "INSERT INTO rubrics (rubric_id, version, name, scale, pass_threshold, pass_rule,"
                " instructions, author_kind, author, content_hash, source_file, scale_decl, turn)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    rubric.rubric_id, rubric.version, rubric.name, rubric.scale,
                    rubric.pass_threshold, rubric.pass_rule, rubric.instructions,
                    rubric.author_kind, rubric.author, digest, source_file,
                    None if rubric.declared_scale is None else json.dumps(rubric.declared_scale.as_dict()),
                    rubric.turn,
                ],
            )
            insert_rows(
                con,
                "rubric_criteria",
                ("rubric_id", "version", "position", "criterion_id", "name", "description"),
                [
                    [rubric.rubric_id, rubric.version, i, c.criterion_id, c.name, c.description]
                    for i, c in enumerate(rubric.criteria)
                ],
            )
            audit(con, "import", source_file or "", added={"rubrics": 1},
                  rubric=f"{rubric.rubric_id} v{rubric.version}")
        return ImportSummary(added={"rubrics": 1}, unchanged={})

    def declared_scales(self) -> list[FormatSpec]:
        """Every scale a stored rubric or judgement uses, registered so formats find them by name."""
        with self.connection() as con:
            rows = con.execute(
                "SELECT scale_decl FROM rubrics WHERE scale_decl IS NOT NULL"
                " UNION SELECT scale_decl FROM declared_scales ORDER BY 1").fetchall()
        return [register_scale(scale_from_dict(json.loads(r[0]))) for r in rows]

    def _keep_declared_scales(self, formats: Iterable[str]) -> None:
        """Store the declaration of each declared scale among ``formats`` (judgements' formats).

        A judge spec's own scale (1-10) is declared by no rubric; kept here, a later process
        reads its judgements on the right grid. Catalogue formats are left out.
        """
        specs = [format_spec(f) for f in dict.fromkeys(formats) if f not in FORMAT_SPECS and known_format(f)]
        if not specs:
            return
        with self.connection() as con:
            for spec in specs:
                con.execute("INSERT INTO declared_scales (name, scale_decl) VALUES (?, ?) ON CONFLICT DO NOTHING",
                            [spec.name, json.dumps(spec.as_dict())])

    def rubrics(self) -> pd.DataFrame:
        """Every stored rubric version, newest first."""
        return self.query(
            "SELECT rubric_id, version, name, scale, pass_threshold, pass_rule, author_kind,"
            " author, created_at FROM rubrics ORDER BY rubric_id, version DESC"
        )

    def rubric(self, rubric_id: str | None = None, version: int | None = None) -> Rubric | None:
        """One rubric (by default the newest version of the newest rubric), or ``None``."""
        with self.connection() as con:
            sql = "SELECT * FROM rubrics"
            params: list[object] = []
            where = []
            if rubric_id is not None:
                where.append("rubric_id = ?")
                params.append(rubric_id)
            if version is not None:
                where.append("version = ?")
                params.append(version)
            if where:
                sql += " WHERE " + " AND ".join(where)
            sql += " ORDER BY created_at DESC, version DESC LIMIT 1"
            head = con.execute(sql, params).df()
            if head.empty:
                return None
            r = head.iloc[0]
            crit = con.execute(
                "SELECT criterion_id, name, description FROM rubric_criteria"
                " WHERE rubric_id = ? AND version = ? ORDER BY position",
                [r["rubric_id"], int(r["version"])],
            ).fetchall()
        threshold = r["pass_threshold"]
        decl = r["scale_decl"]
        return Rubric(
            rubric_id=str(r["rubric_id"]),
            version=int(r["version"]),
            name=str(r["name"]),
            scale=r["scale"],
            pass_rule=str(r["pass_rule"]),
            criteria=tuple(Criterion(*c) for c in crit),
            pass_threshold=None if pd.isna(threshold) else float(threshold),
            instructions=str(r["instructions"]),
            author_kind=r["author_kind"],
            author=str(r["author"]),
            declared_scale=None if decl is None or pd.isna(decl) else scale_from_dict(json.loads(decl)),
            turn=r.get("turn") if r.get("turn") in ("whole", "each") else "last",
        )

    # -- tasks and answers ---------------------------------------------------------------

    def add_pool(
        self, tasks: list[Task], answers: list[Answer], *, source_file: str | None = None
    ) -> ImportSummary:
        """Add tasks and answers in one transaction: all of them or none.

        An id already stored with the same content is skipped; with different
        content it is a :class:`ConflictError` and nothing is written. Every new
        answer's self-identifying spans are found here (its own ``self_id_spans`` are
        kept too), looking for the family and model names of these answers and of
        the stored pool as well.
        """
        # Everything that needs no database happens before the transaction opens, so the
        # file is held only for the set-based checks and the two bulk inserts.
        task_conflict = partial(_task_conflict, source_file)
        answer_conflict = partial(_answer_conflict, source_file)
        new_tasks, same_tasks = _first_of_each(
            tasks, key=lambda t: t.task_id, content=lambda t: (t.prompt, t.category, t.reference_answer),
            conflict=task_conflict,
        )
        new_answers, same_answers = _first_of_each(
            answers, key=lambda a: a.answer_id, content=lambda a: (a.task_id, a.family, a.model, a.variant, a.text),
            conflict=answer_conflict,
        )
        task_rows = [
            [t.task_id, t.prompt, t.category, t.reference_answer, t.reference_author_kind, t.reference_author]
            for t in new_tasks
        ]
        with self.connection() as con:
            names = {a.family for a in new_answers} | {a.model for a in new_answers}
            if new_answers:
                names |= set(pool_names(con))
        # One prefilter pass over all the texts; the full detector reads only the candidates.
        found = detect_self_identifying_many([a.text for a in new_answers], sorted(names))
        answer_rows = [
            [a.answer_id, "i" + secrets.token_hex(8), a.task_id, a.family, a.model, a.variant,
             a.parent_answer_id, a.text, a.n_words, len(a.text),
             json.dumps([list(s) for s in merge_spans(a.text, [*a.self_id_spans, *spans])]),
             None if a.transcript is None else a.transcript.to_json()]
            for a, spans in zip(new_answers, found, strict=True)
        ]
        with self.connection() as con:
            with staged(con, "tasks", _TASK_COLUMNS, task_rows) as mine:
                stored = con.execute(
                    "SELECT m.task_id, m.prompt IS NOT DISTINCT FROM t.prompt"
                    " AND m.category IS NOT DISTINCT FROM t.category"
                    " AND m.reference_answer IS NOT DISTINCT FROM t.reference_answer"
                    f" FROM {mine} m JOIN tasks t USING (task_id)"
                ).fetchall()
            task_rows = drop_stored(task_rows, stored, task_conflict)
            with staged(con, "answers", _ANSWER_COLUMNS, answer_rows) as mine:
                stored = con.execute(
                    "SELECT m.answer_id, m.task_id = a.task_id AND m.family = a.family"
                    " AND m.model = a.model AND m.variant = a.variant AND m.text = a.text"
                    f" FROM {mine} m JOIN answers a USING (answer_id)"
                ).fetchall()
            answer_rows = drop_stored(answer_rows, stored, answer_conflict)
            insert_rows(con, "tasks", _TASK_COLUMNS, task_rows)
            insert_rows(con, "answers", _ANSWER_COLUMNS, answer_rows)
            added = {"tasks": len(task_rows), "answers": len(answer_rows)}
            same = {
                "tasks": same_tasks + len(new_tasks) - len(task_rows),
                "answers": same_answers + len(new_answers) - len(answer_rows),
            }
            audit_import(con, added, same, source_file)
        return ImportSummary(added=added, unchanged=same)

    def add_staged_pool(self, staging: Staging, *, source_file: str | None = None) -> ImportSummary:
        """Add the checked answers of a staged file (:class:`~judgelab.labeler.store._ingest.Staging`), all or none.

        The same rules as :meth:`add_pool`, with the file's rows in the import's own staging
        database instead of Python lists: an id stored with the same content is skipped, with other
        content it is a :class:`ConflictError` and nothing is written. Every answer's
        self-identifying spans are found here, with this file's and the stored pool's family and
        model names, a slice of texts at a time (the prefilter of
        :func:`~judgelab.labeler.blinding.detect_self_identifying_many`, the full detector on its candidates),
        before the project is touched; then one short unit of work writes it all: on DuckDB an
        ``INSERT ... SELECT`` from the staging database attached read-only, on PostgreSQL a ``COPY``
        into temporary tables and the same statements.
        """
        names = sorted(set(staging.names()) | set(self.pool_name_list()))
        staging.finish(_staged_extras(staging, names, staging.names()))
        if self.url is None:
            staging.close()
            alias = f"_staging_{secrets.token_hex(4)}"
            with self.connection() as con:
                con.execute(f"ATTACH '{staging.path}' AS {alias} (READ_ONLY)")  # undone by a rollback
                summary = _write_staged(con, f"{alias}.tasks_in", f"{alias}.answers_in", source_file)
                con.execute(f"DETACH {alias}")
            return summary
        files = (staging.to_csv("tasks_in", ("row_no", *_TASK_COLUMNS)),
                 staging.to_csv("answers_in", ("row_no", *_ANSWER_COLUMNS)))
        staging.close()
        with self.connection() as con:
            for (table, columns, kinds), file in zip(_PG_STAGED, files, strict=True):
                typed = ", ".join(f"{c} {k}" for c, k in zip(columns, kinds, strict=True))
                con.execute(f"CREATE TEMPORARY TABLE {table} ({typed}) ON COMMIT DROP")
                copying = f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT csv)"
                raw = con.raw  # type: ignore[attr-defined]  # a PgConnection: the psycopg connection under it
                with raw.cursor() as cur, cur.copy(copying) as copy, file.open("rb") as fh:
                    while block := fh.read(1 << 20):
                        copy.write(block)
            return _write_staged(con, "_tasks_in", "_answers_in", source_file)

    def pool_name_list(self) -> list[str]:
        """Every family and model name of the stored pool (what self-name detection masks)."""
        with self.connection() as con:
            return pool_names(con)

    def stored_answers(self, answer_ids: Sequence[str]) -> set[str]:
        """Which of ``answer_ids`` are stored answers (one short read)."""
        with self.connection() as con:
            return {str(r[0]) for r in con.execute(
                "SELECT answer_id FROM answers WHERE answer_id IN (SELECT unnest(?))", [list(dict.fromkeys(answer_ids))]
            ).fetchall()}

    def tasks(self) -> pd.DataFrame:
        """All tasks."""
        return self.query("SELECT * FROM tasks ORDER BY task_id")

    def answers(self, *, variant: str | None = None) -> pd.DataFrame:
        """All answers joined with their task's category (analyst view: includes family)."""
        sql = (
            "SELECT a.answer_id, a.item_id, a.task_id, t.category, a.family, a.model, a.variant,"
            " a.parent_answer_id, a.text, a.n_words, a.n_chars, a.self_id_spans, a.created_at, a.transcript"
            " FROM answers a JOIN tasks t USING (task_id)"
        )
        params: list[object] = []
        if variant is not None:
            sql += " WHERE a.variant = ?"
            params.append(variant)
        return self.query(sql + " ORDER BY a.task_id, a.answer_id", params)

    def blind_texts(self) -> dict[str, str]:
        """Every answer's text as a blind rater reads it, by answer id.

        The spans stored at import and today's rules are both masked (:func:`blind_text`), so a
        reader of these texts (the author screen) sees what the rules left, not what they masked.
        """
        with self.connection() as con:
            rows = con.execute("SELECT answer_id, text, self_id_spans FROM answers").fetchall()
            names = pool_names(con)  # once, not once an answer
            return {str(a): _blinded(str(t or ""), s, names)[0] for a, t, s in rows}

    def answer_ids(self) -> set[str]:
        """Every stored answer id (without reading the texts)."""
        with self.connection() as con:
            return {str(r[0]) for r in con.execute("SELECT answer_id FROM answers").fetchall()}

    def families(self) -> list[str]:
        """The model families present in the pool, sorted."""
        return [str(x) for x in self.query("SELECT DISTINCT family FROM answers")["family"].sort_values()]

    def self_identifying(self) -> pd.DataFrame:
        """Answers whose text names a model or maker, with the matched spans."""
        frame = self.query(
            "SELECT answer_id, task_id, family, self_id_spans, text FROM answers"
            " WHERE self_id_spans <> '[]' ORDER BY answer_id"
        )
        frame["spans"] = frame["self_id_spans"].map(json.loads)
        return frame.drop(columns=["self_id_spans"])

    # -- pairs ----------------------------------------------------------------------------

    def add_pairs(self, pairs: list[Pair], *, source_file: str | None = None) -> ImportSummary:
        """Add judge-probe pairs; same rules as :meth:`add_pool`."""
        conflict = partial(_pair_conflict, source_file)
        new, same = _first_of_each(
            pairs, key=lambda p: p.pair_id, content=lambda p: (p.prompt, p.answer_a, p.answer_b, p.gold),
            conflict=conflict,
        )
        rows = [[p.pair_id, p.prompt, p.answer_a, p.answer_b, p.gold] for p in new]
        with self.connection() as con:
            with staged(con, "pairs", _PAIR_COLUMNS, rows) as mine:
                stored = con.execute(
                    "SELECT m.pair_id, m.prompt = p.prompt AND m.answer_a = p.answer_a"
                    " AND m.answer_b = p.answer_b AND m.gold IS NOT DISTINCT FROM p.gold"
                    f" FROM {mine} m JOIN pairs p USING (pair_id)"
                ).fetchall()
            rows = drop_stored(rows, stored, conflict)
            insert_rows(con, "pairs", _PAIR_COLUMNS, rows)
            audit_import(con, {"pairs": len(rows)}, {"pairs": same + len(new) - len(rows)}, source_file)
        return ImportSummary(added={"pairs": len(rows)}, unchanged={"pairs": same + len(new) - len(rows)})

    def pairs(self) -> pd.DataFrame:
        """All judge-probe pairs."""
        return self.query(PAIRS_QUERY)

    # -- settings -------------------------------------------------------------------------

    def set_setting(self, scope: str, key: str, value: str) -> None:
        """Store a project (``scope='project'``) or rubric (``'rubric:<id>'``) setting."""
        with self.connection() as con:
            audit_setting(con, scope, key, value)
            write_setting(con, scope, key, value)

    def setting(self, scope: str, key: str, default: str | None = None) -> str | None:
        """A stored setting, or ``default``."""
        with self.connection() as con:
            row = con.execute(
                "SELECT value FROM settings WHERE scope = ? AND key = ?", [scope, key]
            ).fetchone()
        return default if row is None else str(row[0])


_TASK_COLUMNS = ("task_id", "prompt", "category", "reference_answer", "reference_author_kind", "reference_author")
_ANSWER_COLUMNS = (
    "answer_id", "item_id", "task_id", "family", "model", "variant", "parent_answer_id", "text", "n_words",
    "n_chars", "self_id_spans", "transcript",
)
_PAIR_COLUMNS = ("pair_id", "prompt", "answer_a", "answer_b", "gold")
PAIRS_QUERY = f"SELECT {', '.join(_PAIR_COLUMNS)} FROM pairs ORDER BY pair_id"
"""Every judge-probe pair, as :meth:`PoolMixin.pairs` and the pairs export read them."""

_PG_STAGED = (
    ("_tasks_in", ("row_no", *_TASK_COLUMNS), ("BIGINT", *("VARCHAR",) * len(_TASK_COLUMNS))),
    ("_answers_in", ("row_no", *_ANSWER_COLUMNS),
     ("BIGINT", *("INTEGER" if c in ("n_words", "n_chars") else "VARCHAR" for c in _ANSWER_COLUMNS))),
)


def _staged_extras(
    staging: Staging, names: list[str], file_names: list[str]
) -> Iterator[tuple[list[int], list[str], list[int], list[int], list[str]]]:
    """Each staged answer's item id, words, characters and self-identifying spans, a slice at a time.

    The spans :meth:`PoolMixin.add_pool` stores: the detector's (with ``names``) merged with a
    conversation's own name spans (with the file's names, as :func:`judgelab.labeler.importers.parse_answers`
    finds them).
    """
    for rows, texts, transcripts in staging.texts():
        found = detect_self_identifying_many(texts, names)
        spans = []
        for text, transcript, mine in zip(texts, transcripts, found, strict=True):
            own = [] if transcript is None else name_spans(Transcript.from_json(transcript), file_names)
            spans.append(json.dumps([list(s) for s in merge_spans(text, [*own, *mine])]) if own or mine else "[]")
        yield rows, item_ids(len(rows)), [len(t.split()) for t in texts], [len(t) for t in texts], spans


def _write_staged(con: duckdb.DuckDBPyConnection, tasks: str, answers: str, source_file: str | None) -> ImportSummary:
    """The write of :meth:`PoolMixin.add_staged_pool`, from the staged ``tasks`` and ``answers`` tables."""
    bad = con.execute(
        f"SELECT m.task_id FROM {tasks} m JOIN tasks t USING (task_id) WHERE NOT (m.prompt IS NOT DISTINCT FROM"
        " t.prompt AND m.category IS NOT DISTINCT FROM t.category AND m.reference_answer IS NOT DISTINCT FROM"
        " t.reference_answer) ORDER BY m.row_no LIMIT 1").fetchone()
    if bad is not None:
        raise _task_conflict(source_file, str(bad[0]))
    bad = con.execute(
        f"SELECT m.answer_id FROM {answers} m JOIN answers a USING (answer_id) WHERE NOT (m.task_id = a.task_id"
        " AND m.family = a.family AND m.model = a.model AND m.variant = a.variant AND m.text = a.text)"
        " ORDER BY m.row_no LIMIT 1").fetchone()
    if bad is not None:
        raise _answer_conflict(source_file, str(bad[0]))
    counts = con.execute(
        f"SELECT (SELECT count(*) FROM {tasks}), (SELECT count(*) FROM {tasks} m JOIN tasks t USING (task_id)),"
        f" (SELECT count(*) FROM {answers}), (SELECT count(*) FROM {answers} m JOIN answers a USING (answer_id))"
    ).fetchone()
    assert counts is not None
    n_tasks, same_tasks, n_answers, same_answers = (int(c) for c in counts)
    columns = ", ".join(_TASK_COLUMNS)
    con.execute(f"INSERT INTO tasks ({columns}) SELECT {columns} FROM {tasks} m"
                " WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = m.task_id) ORDER BY m.row_no")
    columns = ", ".join(_ANSWER_COLUMNS)
    con.execute(f"INSERT INTO answers ({columns}) SELECT {columns} FROM {answers} m"
                " WHERE NOT EXISTS (SELECT 1 FROM answers a WHERE a.answer_id = m.answer_id) ORDER BY m.row_no")
    summary = ImportSummary(added={"tasks": n_tasks - same_tasks, "answers": n_answers - same_answers},
                            unchanged={"tasks": same_tasks, "answers": same_answers})
    audit_import(con, summary.added, summary.unchanged, source_file)
    return summary


_T = TypeVar("_T")


def _first_of_each(
    items: Sequence[_T],
    *,
    key: Callable[[_T], str],
    content: Callable[[_T], tuple[Any, ...]],
    conflict: Callable[[str], Exception],
) -> tuple[list[_T], int]:
    """The first item of each id, in order, and how many repeats of an id (same content) were dropped.

    Raises:
        Exception: ``conflict(id)`` for a repeated id with different content.
    """
    first: dict[str, tuple[Any, ...]] = {}
    out: list[_T] = []
    repeats = 0
    for item in items:
        ident, mine = key(item), content(item)
        seen = first.get(ident)
        if seen is None:
            first[ident] = mine
            out.append(item)
        elif seen != mine:
            raise conflict(ident)
        else:
            repeats += 1
    return out, repeats


def _task_conflict(source_file: str | None, task_id: str) -> ConflictError:
    return ConflictError(
        f"task {task_id!r} is already stored with a different prompt, category or reference answer",
        file=source_file,
        column="task_id",
        fix="use a new task_id for changed content, or import into a new database.",
    )


def _answer_conflict(source_file: str | None, answer_id: str) -> ConflictError:
    return ConflictError(
        f"answer {answer_id!r} is already stored with different text, task, family, model or variant",
        file=source_file,
        column="answer_id",
        fix="use a new answer_id for a changed answer; judgelab never overwrites.",
    )


def _pair_conflict(source_file: str | None, pair_id: str) -> ConflictError:
    return ConflictError(
        f"pair {pair_id!r} is already stored with different content",
        file=source_file,
        column="id",
        fix="use a new id for a changed pair.",
    )


def pool_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every family and model name of the pool's answers: what self-name detection masks."""
    return sorted({str(n) for row in con.execute("SELECT DISTINCT family, model FROM answers").fetchall()
                   for n in row})


def write_setting(con: duckdb.DuckDBPyConnection, scope: str, key: str, value: str) -> None:
    """Store one setting in ``scope`` (``project`` or ``rubric:<id>``), replacing its old value."""
    con.execute("INSERT OR REPLACE INTO settings (scope, key, value) VALUES (?, ?, ?)", [scope, key, value])


def tasks_of(con: duckdb.DuckDBPyConnection, answer_ids: Sequence[str]) -> dict[str, str]:
    """The task of each of ``answer_ids`` that is a stored answer, in one query."""
    return {
        str(a): str(t)
        for a, t in con.execute(
            "SELECT answer_id, task_id FROM answers WHERE answer_id IN (SELECT unnest(?))",
            [list(dict.fromkeys(answer_ids))],
        ).fetchall()
    }


def blind_text(con: duckdb.DuckDBPyConnection, text: str, stored_spans: str | None) -> tuple[str, int]:
    """``text`` as a blind reader sees it, and how many spans were masked.

    The spans stored at import were found by the detector of that day: a project imported by
    an older judgelab would keep showing what today's rule masks, so the text is read again
    (about half a millisecond an answer) with the pool's family and model names, and both
    the stored and the new spans are masked.
    """
    return _blinded(text, stored_spans, pool_names(con))


def _blinded(text: str, stored_spans: str | None, names: list[str]) -> tuple[str, int]:
    """:func:`blind_text` with the pool's names already read (once for many answers)."""
    spans = merge_spans(text, [
        *(tuple(s) for s in json.loads(stored_spans or "[]")),
        *detect_self_identifying(text, names),
    ])
    return mask(text, spans), len(spans)


def blind_transcript(con: duckdb.DuckDBPyConnection, transcript: Transcript) -> Transcript:
    """``transcript`` as a blind rater reads it: every message, tool name and system prompt masked."""
    names = pool_names(con)
    return blinded(transcript, names)
