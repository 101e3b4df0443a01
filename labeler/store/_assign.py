"""Assignments: the store's half of "who labels what" (the SQL and the transactions).

The policy (which raters get an item, where it joins their queue, what pull mode hands out)
is pure and lives in :mod:`judgelab.labeler.planner`. Each method here reads what the database holds,
asks the planner for a plan and writes it, inside one unit of work. The store serialises
units of work per file (a lock inside a process, DuckDB's file lock across processes), so the
check and the write can never be split by another writer:

* **Exactly k.** :meth:`AssignMixin.assign_k` gives each answer to exactly ``k`` raters;
  :meth:`AssignMixin.claim_next` lets a rater pull one more answer that has fewer than ``k``
  raters. Two raters asking at once can never push an answer past ``k``. A revoked rater's
  unanswered assignment does not count (:data:`judgelab.labeler.store._core.DEAD_SCORE_ASSIGNMENTS`):
  nobody would ever answer it.
* **Withheld.** An answer that says who wrote it (:mod:`judgelab.labeler.store._withheld`) is dealt to
  nobody; its pending assignments stay and count towards k, hidden until the admin decides.
* **Spread.** New items join the end of each rater's queue in a seeded order that keeps
  answers to one task apart (:func:`judgelab.labeler.planner.queue_rows`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from judgelab.labeler.errors import InputError
from judgelab.labeler.models import Rubric
from judgelab.labeler.planner import (
    AssignSummary,
    Plan,
    claim_limit,
    deal_audits,
    deal_k,
    deal_pairs,
    pick_claim,
    queue_rows,
)
from judgelab.labeler.queue import DEFAULT_GAP, Kind
from judgelab.labeler.store._audit import audit
from judgelab.labeler.store._bulk import insert_rows
from judgelab.labeler.store._core import DEAD_SCORE_ASSIGNMENTS
from judgelab.labeler.store._imports import ImportMixin
from judgelab.labeler.store._pool import tasks_of
from judgelab.labeler.store._quality import mix_in
from judgelab.labeler.store._withheld import WITHHELD_SQL, withheld_among

__all__ = ["AssignMixin"]


class AssignMixin(ImportMixin):
    """Assignments of score items, pairs and padding audits to raters, and pull mode."""

    if TYPE_CHECKING:
        # Provided by PoolMixin in the composed Store; not a base here, because the
        # mixins' shared bases must leave Python a consistent method order.
        def rubric(
            self, rubric_id: str | None = None, version: int | None = None
        ) -> Rubric | None: ...

    # -- checks ------------------------------------------------------------------------

    def _rubric_for_assignments(
        self, rubric: tuple[str, int] | None
    ) -> tuple[str, int]:
        found = self.rubric(*rubric) if rubric else self.rubric()
        if found is None:
            if rubric:
                raise InputError(
                    f"no rubric {rubric[0]!r} version {rubric[1]} in the database",
                    fix="import it with `judgelab import rubric FILE`, or pick a stored one.",
                )
            raise InputError(
                "there is no rubric to label against",
                fix="import one first with `judgelab import rubric FILE`.",
            )
        return found.rubric_id, found.version

    def _check_raters(self, con: duckdb.DuckDBPyConnection, rater_ids: Sequence[int]) -> None:
        wanted = set(rater_ids)
        active = {
            int(r[0])
            for r in con.execute(
                "SELECT rater_id FROM raters WHERE revoked_at IS NULL"
            ).fetchall()
        }
        missing = sorted(wanted - active)
        if missing:
            raise InputError(
                f"rater id(s) {missing} are unknown or revoked",
                fix="see `judgelab raters list` and choose active raters.",
            )

    def _task_of(
        self, con: duckdb.DuckDBPyConnection, answer_ids: Sequence[str], *, column: str
    ) -> dict[str, str]:
        found = tasks_of(con, answer_ids)
        missing = [a for a in dict.fromkeys(answer_ids) if a not in found]
        if missing:
            shown = ", ".join(repr(m) for m in missing[:5])
            raise InputError(
                f"{len(missing)} answer id(s) are not in the database: {shown}",
                column=column,
                fix="import the answers first with `judgelab import answers FILE`.",
            )
        return found

    # -- plans ---------------------------------------------------------------------------

    def _write_plan(
        self,
        con: duckdb.DuckDBPyConnection,
        kind: Kind,
        plan: Plan,
        *,
        seed: int | str,
        rubric: tuple[str, int] | None,
        design_id: str | None,
        is_overlap: bool,
        gap: int,
    ) -> AssignSummary:
        """Append each rater's new items to their queue (:func:`judgelab.labeler.planner.queue_rows`).

        Set-based: the queues' ends of every rater in the plan in two queries and every new
        row in one bulk insert, so a plan of 100,000 answers holds the database for seconds.
        """
        planned = [r for r, rows in plan.rows.items() if rows]
        tails: dict[int, list[str]] = defaultdict(list)
        for r, task in con.execute(
            "SELECT q.rater_id, q.task_id FROM (SELECT s.rater_id, t.task_id, s.queue_pos,"
            "  row_number() OVER (PARTITION BY s.rater_id ORDER BY s.queue_pos DESC) AS rn"
            "  FROM assignments s JOIN answers t USING (answer_id)"
            "  WHERE s.kind = ? AND s.rater_id IN (SELECT unnest(?))) q"
            " WHERE q.rn <= ? ORDER BY q.rater_id, q.queue_pos",
            [kind, planned, max(gap, 0)],
        ).fetchall():
            tails[int(r)].append(str(task))
        tops = {
            int(r): int(top)
            for r, top in con.execute(
                "SELECT rater_id, max(queue_pos) FROM assignments"
                " WHERE kind = ? AND rater_id IN (SELECT unnest(?)) GROUP BY rater_id",
                [kind, planned],
            ).fetchall()
        }
        rubric_id, rubric_version = rubric if rubric else (None, None)
        placed = queue_rows(plan, kind=kind, seed=seed, tops=tops, tails=tails, gap=gap)
        insert_rows(
            con,
            "assignments",
            ("rater_id", "kind", "answer_id", "answer_b_id", "queue_pos", "rubric_id", "rubric_version",
             "design_id", "is_overlap"),
            [[r, kind, a, b, pos, rubric_id, rubric_version, design_id, is_overlap]
             for r, a, b, pos in placed],
            id_from=("assignment_id", "seq_assignment"),
        )
        if kind == "score":
            # Gold items and attention checks keep their share of the grown queues (judgelab.labeler.store._quality).
            mix_in(con, planned)
        summary = plan.summary()
        if summary.n_added:
            names = dict(con.execute("SELECT rater_id, name FROM raters WHERE rater_id IN (SELECT unnest(?))",
                                     [planned]).fetchall())
            audit(con, "assign", kind, items=summary.items, already=summary.already or None,
                  added={str(names.get(r, r)): n for r, n in summary.added.items() if n},
                  rubric=f"{rubric_id} v{rubric_version}" if rubric_id else None, design=design_id)
        return summary

    def assign_k(
        self,
        answer_ids: Sequence[str],
        k: int,
        rater_ids: Sequence[int],
        *,
        seed: int | str = 0,
        rubric: tuple[str, int] | None = None,
        design_id: str | None = None,
        gap: int = DEFAULT_GAP,
    ) -> AssignSummary:
        """Give each answer to exactly ``k`` of ``rater_ids`` for scoring, in one transaction.

        Answers that already have raters (under the same rubric) keep them and get only
        the missing ones (:func:`judgelab.labeler.planner.deal_k`). A revoked rater's unanswered
        assignment is not a rater any more: the answer gets another one. Each rater's new items join the
        end of their queue in a seeded order that keeps answers to one task apart
        (:func:`judgelab.labeler.queue.spread_order`).

        Args:
            answer_ids: The answers to label.
            k: Raters per answer.
            rater_ids: The raters to choose from (active ones).
            seed: Makes the choice of raters and every queue order reproducible.
            rubric: ``(rubric_id, version)``; the newest rubric when ``None``.
            design_id: The sample design these assignments implement, if any.
            gap: Other items required between two answers to one task in a queue.

        Returns:
            What was added per rater.

        Raises:
            InputError: ``k`` < 1, fewer raters than ``k``, unknown answers or raters,
                or no rubric.
        """
        raters = list(dict.fromkeys(int(r) for r in rater_ids))
        if k < 1:
            raise InputError(f"k must be at least 1, got {k}", fix="choose k >= 1.")
        if len(raters) < k:
            raise InputError(
                f"each answer needs {k} raters but only {len(raters)} were given",
                fix=f"choose at least {k} raters, or lower k.",
            )
        rub = self._rubric_for_assignments(rubric)
        # One transaction, so no answer can pass k; kept short by a set-based write.
        with self.connection() as con:
            self._check_raters(con, raters)
            task_of = self._task_of(con, answer_ids, column="answer_id")
            for withheld in withheld_among(con, list(task_of)):
                del task_of[withheld]  # it says who wrote it: dealt to nobody (judgelab.labeler.store._withheld)
            holders: dict[str, set[int]] = defaultdict(set)
            for a, r in con.execute(
                "SELECT answer_id, rater_id FROM assignments WHERE kind = 'score'"
                f" AND rubric_id = ? AND rubric_version = ? AND assignment_id NOT IN ({DEAD_SCORE_ASSIGNMENTS})",
                list(rub),
            ).fetchall():
                holders[str(a)].add(int(r))
            load = {
                int(r): int(n)
                for r, n in con.execute(
                    "SELECT rater_id, count(*) FROM assignments WHERE kind = 'score'"
                    " GROUP BY rater_id"
                ).fetchall()
            }
            plan = deal_k(task_of, k, raters, holders=holders, load=load, seed=seed)
            return self._write_plan(
                con, "score", plan, seed=seed, rubric=rub, design_id=design_id,
                is_overlap=k > 1, gap=gap,
            )

    def claim_next(
        self,
        rater_id: int,
        k: int,
        *,
        answer_ids: Sequence[str] | None = None,
        rubric: tuple[str, int] | None = None,
        gap: int = DEFAULT_GAP,
    ) -> int | None:
        """Pull one more answer for ``rater_id``: one with fewer than ``k`` raters, atomically.

        Which one is :func:`judgelab.labeler.planner.pick_claim`'s rule: the fewest raters so far,
        then a task not among the rater's last ``gap`` items, then a per-rater pseudo-random
        order. Reading the candidates and inserting the assignment happen in one
        transaction, so concurrent claims never give an answer more than ``k`` raters.

        Args:
            rater_id: Who is asking.
            k: Raters wanted per answer.
            answer_ids: The answers that may be handed out; every ``original`` answer
                when ``None``.
            rubric: ``(rubric_id, version)``; the newest rubric when ``None``.
            gap: How many recent queue items to keep the task away from.

        Returns:
            The new assignment's id, or ``None`` when no answer needs another rater.
        """
        if k < 1:
            raise InputError(f"k must be at least 1, got {k}", fix="choose k >= 1.")
        rub = self._rubric_for_assignments(rubric)
        with self.connection() as con:
            self._check_raters(con, [rater_id])
            recent = [
                str(r[0])
                for r in con.execute(
                    "SELECT t.task_id FROM assignments s JOIN answers t USING (answer_id)"
                    " WHERE s.rater_id = ? AND s.kind = 'score' ORDER BY s.queue_pos DESC"
                    " LIMIT ?",
                    [rater_id, max(gap, 0)],
                ).fetchall()
            ]
            answer = pick_claim(
                self._claim_candidates(con, rater_id, k, rub, recent, answer_ids),
                recent=set(recent),
            )
            if answer is None:
                return None
            top = con.execute(
                "SELECT coalesce(max(queue_pos), 0) FROM assignments"
                " WHERE rater_id = ? AND kind = 'score'",
                [rater_id],
            ).fetchone()
            made = con.execute(
                "INSERT INTO assignments (rater_id, kind, answer_id, queue_pos, rubric_id,"
                " rubric_version, is_overlap) VALUES (?, 'score', ?, ?, ?, ?, ?)"
                " RETURNING assignment_id",
                [rater_id, answer, (int(top[0]) if top else 0) + 1, rub[0], rub[1], k > 1],
            ).fetchone()
            mix_in(con, [rater_id])  # pull mode keeps its share of gold and attention items too
        assert made is not None
        return int(made[0])

    @staticmethod
    def _claim_candidates(
        con: duckdb.DuckDBPyConnection,
        rater_id: int,
        k: int,
        rubric: tuple[str, int],
        recent: list[str],
        answer_ids: Sequence[str] | None,
    ) -> list[tuple[str, str, int]]:
        """Answers ``rater_id`` may pull, as :func:`judgelab.labeler.planner.pick_claim` takes them.

        Ordered by raters so far, then a per-rater hash of the answer id, and cut at
        :func:`judgelab.labeler.planner.claim_limit`, so a claim reads a handful of rows at any size.
        """
        near = con.execute(
            "SELECT count(*) FROM answers WHERE list_contains(?, task_id)", [recent]
        ).fetchone()
        params: dict[str, Any] = {
            "rubric_id": rubric[0],
            "version": rubric[1],
            "rater": rater_id,
            "salt": f"{rater_id}:",
            "limit": claim_limit(int(near[0]) if near else 0),
        }
        pool_filter = "a.variant = 'original'"
        if answer_ids is not None:
            pool_filter = "a.answer_id IN (SELECT unnest($pool))"
            params["pool"] = list(answer_ids)
        rows = con.execute(
            f"""
            WITH counts AS (
                SELECT answer_id, count(*) AS n
                FROM assignments
                WHERE kind = 'score' AND rubric_id = $rubric_id AND rubric_version = $version
                  AND assignment_id NOT IN ({DEAD_SCORE_ASSIGNMENTS})
                GROUP BY answer_id)
            SELECT a.answer_id, a.task_id, coalesce(c.n, 0) AS n
            FROM answers a LEFT JOIN counts c USING (answer_id)
            WHERE {pool_filter}
              AND coalesce(c.n, 0) < {int(k)}
              AND a.answer_id NOT IN ({WITHHELD_SQL})
              AND NOT EXISTS (SELECT 1 FROM assignments o WHERE o.kind = 'score'
                              AND o.rater_id = $rater AND o.answer_id = a.answer_id)
            ORDER BY coalesce(c.n, 0), hash($salt || a.answer_id), a.answer_id
            LIMIT $limit
            """,
            params,
        ).fetchall()
        return [(str(a), str(t), int(n)) for a, t, n in rows]

    def assign_pairs(
        self,
        pairs: Sequence[tuple[str, str]],
        rater_ids: Sequence[int],
        *,
        k: int | None = None,
        seed: int | str = 0,
        gap: int = DEFAULT_GAP,
    ) -> AssignSummary:
        """Give pairs of answers to raters for a pairwise preference, sides counterbalanced.

        Each pair goes to ``k`` raters (all of ``rater_ids`` when ``None``). Half of them
        see it as A/B and half as B/A (:func:`judgelab.labeler.planner.deal_pairs`), and each rater's
        own flips stay balanced. The assignment stores the shown order: ``answer_id`` is the
        left answer, ``answer_b_id`` the right one; the label stores it again.

        Raises:
            InputError: Unknown answers or raters, a pair of one answer with itself, or
                ``k`` larger than the number of raters.
        """
        raters = list(dict.fromkeys(int(r) for r in rater_ids))
        want = len(raters) if k is None else k
        if want < 1 or want > len(raters):
            raise InputError(
                f"each pair needs {want} raters but {len(raters)} were given",
                fix="choose 1 <= k <= the number of raters.",
            )
        for a, b in pairs:
            if a == b:
                raise InputError(
                    f"pair ({a!r}, {b!r}) compares an answer with itself",
                    fix="pair two different answers.",
                )
        with self.connection() as con:
            self._check_raters(con, raters)
            task_of = self._task_of(
                con, [x for p in pairs for x in p], column="answer_a/answer_b"
            )
            holders: dict[frozenset[str], set[int]] = defaultdict(set)
            balance: Counter[int] = Counter()
            load: Counter[int] = Counter()
            for r, a, b, flipped in con.execute(
                "SELECT rater_id, answer_id, answer_b_id, answer_id > answer_b_id"
                " FROM assignments WHERE kind = 'pair'"
            ).fetchall():
                holders[frozenset((str(a), str(b)))].add(int(r))
                balance[int(r)] += 1 if flipped else -1
                load[int(r)] += 1
            plan = deal_pairs(pairs, raters, k=want, task_of=task_of, holders=holders,
                              balance=balance, load=load, seed=seed)
            return self._write_plan(
                con, "pair", plan, seed=seed, rubric=None, design_id=None,
                is_overlap=want > 1, gap=gap,
            )

    def padding_audit_pairs(self, variant: str = "padded") -> list[tuple[str, str]]:
        """Every ``(original_id, rewrite_id)`` for rewrites of ``variant`` that name a parent."""
        frame = self.query(
            "SELECT parent_answer_id, answer_id FROM answers"
            " WHERE variant = ? AND parent_answer_id IS NOT NULL ORDER BY answer_id",
            [variant],
        )
        return [(str(p), str(a)) for p, a in zip(frame.iloc[:, 0], frame.iloc[:, 1], strict=True)]


    def assign_audits(
        self,
        pairs: Sequence[tuple[str, str]] | None,
        rater_ids: Sequence[int],
        *,
        k: int = 1,
        seed: int | str = 0,
        gap: int = DEFAULT_GAP,
    ) -> AssignSummary:
        """Give ``(original_id, rewrite_id)`` pairs to ``k`` raters each for a padding audit.

        Args:
            pairs: The originals and rewrites; every padded answer with a parent when ``None``.
            rater_ids: The raters to choose from.
            k: Raters per audit.
            seed: Makes choices and order reproducible.
            gap: Other items required between two audits of one task in a queue.
        """
        items = self.padding_audit_pairs() if pairs is None else list(pairs)
        raters = list(dict.fromkeys(int(r) for r in rater_ids))
        if k < 1 or k > len(raters):
            raise InputError(
                f"each audit needs {k} raters but {len(raters)} were given",
                fix="choose 1 <= k <= the number of raters.",
            )
        with self.connection() as con:
            self._check_raters(con, raters)
            task_of = self._task_of(
                con, [x for p in items for x in p], column="original_id/rewrite_id"
            )
            holders: dict[tuple[str, str], set[int]] = defaultdict(set)
            load: Counter[int] = Counter()
            for r, a, b in con.execute(
                "SELECT rater_id, answer_id, answer_b_id FROM assignments WHERE kind = 'audit'"
            ).fetchall():
                holders[(str(a), str(b))].add(int(r))
                load[int(r)] += 1
            plan = deal_audits(items, raters, k=k, task_of=task_of, holders=holders, load=load,
                               seed=seed)
            return self._write_plan(
                con, "audit", plan, seed=seed, rubric=None, design_id=None,
                is_overlap=k > 1, gap=gap,
            )
