"""Rubrics, tasks, answers and pairs: what gets judged and labelled."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

import pandas as pd

from labeler.errors import ConflictError
from labeler.models import Answer, Criterion, Pair, Rubric, Task
from labeler.store._core import StoreCore


@dataclass(frozen=True)
class ImportSummary:
    """What an import added and what it found already present."""

    added: dict[str, int]
    unchanged: dict[str, int]

    def __str__(self) -> str:
        parts = [f"{n} {kind} added" for kind, n in self.added.items()]
        parts += [f"{n} {kind} already present" for kind, n in self.unchanged.items() if n]
        return ", ".join(parts) if parts else "nothing to import"


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
                " instructions, author_kind, author, content_hash, source_file)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    rubric.rubric_id, rubric.version, rubric.name, rubric.scale,
                    rubric.pass_threshold, rubric.pass_rule, rubric.instructions,
                    rubric.author_kind, rubric.author, digest, source_file,
                ],
            )
            con.executemany(
                "INSERT INTO rubric_criteria VALUES (?, ?, ?, ?, ?, ?)",
                [
                    [rubric.rubric_id, rubric.version, i, c.criterion_id, c.name, c.description]
                    for i, c in enumerate(rubric.criteria)
                ],
            )
        return ImportSummary(added={"rubrics": 1}, unchanged={})

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
        )

    # -- tasks and answers ---------------------------------------------------------------

    def add_pool(
        self, tasks: list[Task], answers: list[Answer], *, source_file: str | None = None
    ) -> ImportSummary:
        """Add tasks and answers in one transaction: all of them or none.

        An id already stored with the same content is skipped; with different
        content it is a :class:`ConflictError` and nothing is written.
        """
        added = {"tasks": 0, "answers": 0}
        same = {"tasks": 0, "answers": 0}
        with self.connection() as con:
            known_tasks = {
                r[0]: r[1:]
                for r in con.execute(
                    "SELECT task_id, prompt, category, reference_answer FROM tasks"
                ).fetchall()
            }
            new_tasks = []
            for t in tasks:
                old = known_tasks.get(t.task_id)
                if old is None:
                    new_tasks.append(t)
                    known_tasks[t.task_id] = (t.prompt, t.category, t.reference_answer)
                elif old != (t.prompt, t.category, t.reference_answer):
                    raise ConflictError(
                        f"task {t.task_id!r} is already stored with a different prompt, category "
                        "or reference answer",
                        file=source_file,
                        column="task_id",
                        fix="use a new task_id for changed content, or import into a new database.",
                    )
                else:
                    same["tasks"] += 1
            known_answers = {
                r[0]: r[1:]
                for r in con.execute(
                    "SELECT answer_id, task_id, family, model, variant, text FROM answers"
                ).fetchall()
            }
            new_answers = []
            for a in answers:
                old_a = known_answers.get(a.answer_id)
                mine = (a.task_id, a.family, a.model, a.variant, a.text)
                if old_a is None:
                    new_answers.append(a)
                    known_answers[a.answer_id] = mine
                elif old_a != mine:
                    raise ConflictError(
                        f"answer {a.answer_id!r} is already stored with different text, task, "
                        "family, model or variant",
                        file=source_file,
                        column="answer_id",
                        fix="use a new answer_id for a changed answer; judgelab never overwrites.",
                    )
                else:
                    same["answers"] += 1
            if new_tasks:
                con.executemany(
                    "INSERT INTO tasks (task_id, prompt, category, reference_answer,"
                    " reference_author_kind, reference_author) VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        [t.task_id, t.prompt, t.category, t.reference_answer,
                         t.reference_author_kind, t.reference_author]
                        for t in new_tasks
                    ],
                )
            if new_answers:
                con.executemany(
                    "INSERT INTO answers (answer_id, item_id, task_id, family, model, variant,"
                    " parent_answer_id, text, n_words, n_chars, self_id_spans)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        [a.answer_id, "i" + secrets.token_hex(8), a.task_id, a.family, a.model,
                         a.variant, a.parent_answer_id, a.text, a.n_words, len(a.text),
                         json.dumps([list(s) for s in a.self_id_spans])]
                        for a in new_answers
                    ],
                )
            added = {"tasks": len(new_tasks), "answers": len(new_answers)}
        return ImportSummary(added=added, unchanged=same)

    def tasks(self) -> pd.DataFrame:
        """All tasks."""
        return self.query("SELECT * FROM tasks ORDER BY task_id")

    def answers(self, *, variant: str | None = None) -> pd.DataFrame:
        """All answers joined with their task's category (analyst view: includes family)."""
        sql = (
            "SELECT a.answer_id, a.item_id, a.task_id, t.category, a.family, a.model, a.variant,"
            " a.parent_answer_id, a.text, a.n_words, a.n_chars, a.self_id_spans, a.created_at"
            " FROM answers a JOIN tasks t USING (task_id)"
        )
        params: list[object] = []
        if variant is not None:
            sql += " WHERE a.variant = ?"
            params.append(variant)
        return self.query(sql + " ORDER BY a.task_id, a.answer_id", params)

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
        same = 0
        with self.connection() as con:
            known = {
                r[0]: r[1:]
                for r in con.execute("SELECT pair_id, prompt, answer_a, answer_b, gold FROM pairs").fetchall()
            }
            new = []
            for p in pairs:
                old = known.get(p.pair_id)
                mine = (p.prompt, p.answer_a, p.answer_b, p.gold)
                if old is None:
                    new.append(p)
                    known[p.pair_id] = mine
                elif old != mine:
                    raise ConflictError(
                        f"pair {p.pair_id!r} is already stored with different content",
                        file=source_file,
                        column="id",
                        fix="use a new id for a changed pair.",
                    )
                else:
                    same += 1
            if new:
                con.executemany(
                    "INSERT INTO pairs (pair_id, prompt, answer_a, answer_b, gold) VALUES (?, ?, ?, ?, ?)",
                    [[p.pair_id, p.prompt, p.answer_a, p.answer_b, p.gold] for p in new],
                )
        return ImportSummary(added={"pairs": len(new)}, unchanged={"pairs": same})

    def pairs(self) -> pd.DataFrame:
        """All judge-probe pairs."""
        return self.query("SELECT pair_id, prompt, answer_a, answer_b, gold FROM pairs ORDER BY pair_id")

    # -- settings -------------------------------------------------------------------------

    def set_setting(self, scope: str, key: str, value: str) -> None:
        """Store a project (``scope='project'``) or rubric (``'rubric:<id>'``) setting."""
        with self.connection() as con:
            con.execute(
                "INSERT OR REPLACE INTO settings (scope, key, value) VALUES (?, ?, ?)",
                [scope, key, value],
            )

    def setting(self, scope: str, key: str, default: str | None = None) -> str | None:
        """A stored setting, or ``default``."""
        with self.connection() as con:
            row = con.execute(
                "SELECT value FROM settings WHERE scope = ? AND key = ?", [scope, key]
            ).fetchone()
        return default if row is None else str(row[0])
