"""Re-validation: a judge version no compare has read against the people is not vouched for.

A run's *version* is what makes its judgements what they are: the judge's model, its spec (the
prompt, examples, verdict format and scale map of a judge spec, named by the spec's hash or file)
and the rubric it judged under. When a run differs from the last run compared against the people
(``judgelab compare``) in any of these, the figures read for that run do not speak for the new
one, and ``calibrate`` and the Overview say so.
"""

from __future__ import annotations

import json
from typing import Any

from judgelab.calibration.loop._run import compare_history
from judgelab.labeler.store import LoopRole


def version_of(run: dict[str, Any]) -> dict[str, str]:
    """What makes a run's judgements what they are: ``model``, ``spec``, ``rubric``."""
    params = run.get("params") or {}
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except ValueError:
            params = {}
    spec = params.get("spec") if isinstance(params, dict) else None
    spec_id = (spec.get("sha256") if isinstance(spec, dict) else None) or (
        params.get("judge_spec") if isinstance(params, dict) else None)
    return {"model": str(run.get("model") or ""), "spec": str(spec_id or "built-in prompt"),
            "rubric": f"{run.get('rubric_id')} v{run.get('rubric_version')}"}


def revalidation_note(store: LoopRole, run_id: str | None = None) -> str | None:
    """Why the figures of the last compared run do not speak for ``run_id``, or ``None``.

    Args:
        store: The project store (only read).
        run_id: The run in question (default: the newest run that scored the pool).

    Returns:
        One sentence naming what changed and the ``judgelab compare`` to run; ``None`` when no
        compare was recorded, the run took part in one, or it has the last compared run's version.
    """
    history = compare_history(store)
    if not history:
        return None
    run_id = run_id or store.latest_scored_run()
    if run_id is None or any(run_id in (h["run_a"], h["run_b"]) for h in history):
        return None
    last = str(history[-1]["run_b"])
    new, old = store.judge_run(run_id), store.judge_run(last)
    if new is None or old is None:
        return None
    v_new, v_old = version_of(new), version_of(old)
    changed = [f"{k} {v_old[k]} -> {v_new[k]}" for k in ("model", "spec", "rubric") if v_new[k] != v_old[k]]
    if not changed:
        return None
    return (f"judge run {run_id} is another version than {last}, the last compared against the people "
            f"({'; '.join(changed)}): the figures read for {last} do not speak for it. Compare them: "
            f"judgelab compare --judge-run {last} --judge-run {run_id}")
