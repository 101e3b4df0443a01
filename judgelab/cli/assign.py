"""``judgelab assign``: give each selected answer to exactly k raters (the Assignments page's first form)."""

from __future__ import annotations

import click

from judgelab.admin import active_raters, assign_each_to_k, select_answers, task_order
from judgelab.cli._raters import RaterSelection, raters_option
from judgelab.cli._util import db_option, echo_json, json_option
from judgelab.labeler.errors import InputError
from judgelab.labeler.store import AssignmentRole, Store


def _rubric(value: str | None) -> tuple[str, int] | None:
    if value is None:
        return None
    rubric_id, _, version = value.rpartition(":")
    if not rubric_id or not version.isdigit():
        raise InputError(f"--rubric {value!r} is not ID:VERSION", fix="e.g. --rubric support-reply:1.")
    return rubric_id, int(version)


def _tasks(value: str | None) -> tuple[str, str] | None:
    if value is None:
        return None
    first, sep, last = value.partition(":")
    if not sep or not first or not last:
        raise InputError(f"--tasks {value!r} is not FIRST:LAST", fix="e.g. --tasks T001:T020.")
    return first, last


@click.command()
@click.option("--k", "k", type=int, default=1, show_default=True, help="Raters per answer.")
@raters_option("The raters to give answers to, among the active raters who are not admins.")
@click.option("--category", "categories", multiple=True, help="Only answers to tasks of this category (repeat it).")
@click.option("--variant", "variants", multiple=True, default=("original",), show_default=True,
              help="Only answers of this variant (repeat it).")
@click.option("--family", "families", multiple=True, help="Only answers of this family (repeat it).")
@click.option("--tasks", "task_range", default=None, help="Only tasks FIRST:LAST (inclusive, natural order).")
@click.option("--seed", type=int, default=0, show_default=True, help="Makes the choice and queue orders reproducible.")
@click.option("--rubric", default=None, help="ID:VERSION to label against [default: the newest rubric].")
@db_option
@json_option
def assign(
    k: int, raters: RaterSelection, categories: tuple[str, ...], variants: tuple[str, ...],
    families: tuple[str, ...], task_range: str | None, seed: int, rubric: str | None, db: str | None,
    as_json: bool,
) -> None:
    """Give each selected answer to exactly K raters (running it again adds only what is missing)."""
    store: AssignmentRole = Store(db)
    pool = active_raters(store)
    if not raters.everyone:
        pool = pool[pool["name"].isin(raters.pick(pool["name"].astype(str).tolist(), what="active rater"))]
    if pool.empty:
        raise InputError("there are no active raters to assign to", fix="invite one with `judgelab raters add NAME`.")
    chosen = select_answers(store.answer_catalog(), categories=categories, variants=variants,
                            families=families, task_range=_tasks(task_range), tasks_in_order=task_order(store))
    summary = assign_each_to_k(store, chosen["answer_id"].tolist(), k, pool["rater_id"].tolist(),
                               seed=seed, rubric=_rubric(rubric))
    # Raters by name, as `judgelab raters list` and the app show them (their ids mean nothing to an admin).
    names = {int(r): str(n) for r, n in zip(pool["rater_id"], pool["name"], strict=True)}
    if as_json:
        echo_json({"answers": len(chosen), "k": k, "raters": sorted(names.values()),
                   "added": {names.get(r, str(r)): n for r, n in sorted(summary.added.items())},
                   "already": summary.already, "items": summary.items})
        return
    click.echo(f"{len(chosen)} answers to {k} of {len(pool)} raters each: {summary.describe(names)}")


COMMANDS: list[click.Command] = [assign]
