"""What the admin pages do, as plain functions of a :class:`~labeler.store.Store`.

The admin pages only wire widgets to these functions, so everything an admin can
do is tested here without a browser. Admins are not blind: frames returned here
may carry family, model and variant, and must never be handed to a rater page.

Simulated raters (``raters.simulated``) are marked wherever a rater's name is
shown: :func:`display_name` appends ``" (simulated)"``.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import tempfile
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from calibration.stats import Estimate
from labeler.errors import InputError
from labeler.importers import IMPORT_KINDS, ImportKind, import_file
from labeler.models import SCALE_RANGE, Rubric
from labeler.store import MASK_KEY, AssignSummary, ImportSummary, Rater, Store

if TYPE_CHECKING:
    from calibration.design import Design

#: Where invite links point when ``$JUDGELAB_BASE_URL`` is not set.
DEFAULT_BASE_URL = "http://localhost:8501"

ExportFormat = Literal["csv", "jsonl", "parquet"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("csv", "jsonl", "parquet")
#: The MIME type of each export format.
EXPORT_MIME: dict[ExportFormat, str] = {
    "csv": "text/csv",
    "jsonl": "application/jsonl",
    "parquet": "application/vnd.apache.parquet",
}


def display_name(name: str, simulated: bool) -> str:
    """A rater's name as admin pages show it: simulated raters say so."""
    return f"{name} (simulated)" if simulated else name


# -- overview ------------------------------------------------------------------------


@dataclass(frozen=True)
class Overview:
    """Labelling progress and the work left.

    Attributes:
        per_rater: One row per rater with assignments or labels: ``rater`` (display
            name), ``simulated``, ``active``, ``assigned``, ``done``, ``remaining``,
            ``share_done`` (0-1; ``nan`` with nothing assigned), ``labels`` (current
            score labels, assigned or not), plus ``assigned_<kind>``/``done_<kind>``
            for each assignment kind present (``score``, ``pair``, ``audit``).
        assigned: Assigned items over all raters and kinds.
        done: Of those, the ones answered (see :mod:`labeler.store._admin`).
        labels_per_answer: ``labels`` (distinct raters who labelled an answer) ->
            ``answers`` (how many answers have that many), over answers that are
            assigned or labelled.
        median_seconds: Median seconds per label (``nan`` when no label has a time).
        seconds_basis: Which labels the median rests on, in words.
        person_hours_left: Remaining items x median seconds / 3600 (``nan`` when the
            median is unknown and items remain).
    """

    per_rater: pd.DataFrame
    assigned: int
    done: int
    labels_per_answer: pd.DataFrame
    median_seconds: float
    seconds_basis: str
    person_hours_left: float

    @property
    def remaining(self) -> int:
        """Assigned items not yet answered."""
        return self.assigned - self.done

    @property
    def share_done(self) -> float:
        """Share of assigned items answered (``nan`` when nothing is assigned)."""
        return self.done / self.assigned if self.assigned else math.nan


def median_seconds(seconds: pd.DataFrame) -> tuple[float, str]:
    """The median seconds per label and what it rests on.

    People's timings are preferred: a simulated rater's seconds say nothing about
    how long a person needs. Only when no person has a timed label yet are the
    simulated ones used, and the basis says so.

    Args:
        seconds: :meth:`Store.label_seconds` (``simulated``, ``seconds``).

    Returns:
        ``(median, basis)``; ``(nan, "no timed labels yet")`` when there are none.
    """
    timed = seconds[seconds["seconds"].notna() & (seconds["seconds"] >= 0)]
    people = timed[~timed["simulated"].astype(bool)]
    if len(people):
        return float(people["seconds"].median()), f"{len(people)} timed labels by people"
    if len(timed):
        return (
            float(timed["seconds"].median()),
            f"{len(timed)} timed labels by simulated raters (no person has a timed label yet)",
        )
    return math.nan, "no timed labels yet"


def overview(store: Store) -> Overview:
    """Progress per rater and overall, labels per answer, time per label and time left."""
    per_rater = _progress_per_rater(store.assignment_progress(), store.labels_by_rater())
    assigned = int(per_rater["assigned"].sum()) if len(per_rater) else 0
    done = int(per_rater["done"].sum()) if len(per_rater) else 0

    counts = store.labels_per_answer()
    dist = (
        counts.groupby("labelled").size().rename("answers").reset_index()
        .rename(columns={"labelled": "labels"})
        if len(counts)
        else pd.DataFrame({"labels": pd.Series(dtype="int64"), "answers": pd.Series(dtype="int64")})
    )

    median, basis = median_seconds(store.label_seconds())
    remaining = assigned - done
    # Nothing left is zero hours even before anyone has a timed label.
    hours = 0.0 if remaining == 0 else remaining * median / 3600
    return Overview(
        per_rater=per_rater,
        assigned=assigned,
        done=done,
        labels_per_answer=dist,
        median_seconds=median,
        seconds_basis=basis,
        person_hours_left=hours,
    )


def _progress_per_rater(progress: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    columns = ["rater_id", "rater", "simulated", "active", "assigned", "done", "remaining",
               "share_done", "labels"]
    keys = ["rater_id", "name", "role", "simulated", "active"]
    if progress.empty and labels.empty:
        return pd.DataFrame(columns=columns)
    totals = progress.groupby(keys, as_index=False)[["assigned", "done"]].sum()
    # Raters with labels but no assignments (imported, simulated) show with 0 assigned.
    out = totals.merge(labels[[*keys, "labels"]], on=keys, how="outer")
    if not progress.empty:
        wide = progress.pivot_table(
            index="rater_id", columns="kind", values=["assigned", "done"], aggfunc="sum",
            fill_value=0,
        )
        wide.columns = [f"{pair[0]}_{pair[1]}" for pair in wide.columns.tolist()]
        out = out.merge(wide.reset_index(), on="rater_id", how="left")
    counts = [c for c in out.columns if c in ("assigned", "done", "labels")
              or c.startswith(("assigned_", "done_"))]
    out[counts] = out[counts].fillna(0).astype("int64")
    out["rater"] = [display_name(n, bool(s)) for n, s in zip(out["name"], out["simulated"],
                                                               strict=True)]
    out["remaining"] = out["assigned"] - out["done"]
    # Share done is undefined (nan) for a rater with nothing assigned.
    out["share_done"] = out["done"] / out["assigned"].where(out["assigned"] > 0)
    extra = sorted(c for c in out.columns if c.startswith(("assigned_", "done_")))
    return out[[*columns, *extra]].sort_values("rater_id").reset_index(drop=True)


# -- raters --------------------------------------------------------------------------


@dataclass(frozen=True)
class Invite:
    """A new rater and the link that lets them in (shown once; only its hash is stored)."""

    rater: Rater
    link: str


def base_url() -> str:
    """Where invite links point: ``$JUDGELAB_BASE_URL``, else ``http://localhost:8501``."""
    return (os.environ.get("JUDGELAB_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def invite_link(token: str, base: str | None = None) -> str:
    """The link that carries ``token`` to the app: ``{base}/?t={token}``."""
    root = (base or base_url()).rstrip("/")
    return f"{root}/?t={urllib.parse.quote(token, safe='')}"


def invite_rater(store: Store, name: str, *, admin: bool = False, base: str | None = None) -> Invite:
    """Create a rater (or admin) and return the invite link to send them."""
    rater, token = store.add_rater(name, role="admin" if admin else "rater")
    return Invite(rater=rater, link=invite_link(token, base))


def reissue_link(store: Store, name: str, *, base: str | None = None) -> str:
    """A new invite link for ``name``; the old one stops working (a revoked rater is let in again)."""
    return invite_link(store.reissue_token(name), base)


def revoke_rater(store: Store, name: str, *, acting: Rater | None = None) -> None:
    """Stop ``name``'s link from working; their labels stay.

    Args:
        store: The project store.
        name: The rater to revoke.
        acting: The admin doing it; an admin cannot revoke themselves (they would
            lock themselves out of the page they are on).

    Raises:
        InputError: No active rater of that name, or ``name`` is ``acting``.
    """
    if acting is not None and acting.name == name:
        raise InputError(
            "you cannot revoke your own link from the app",
            fix="ask another admin, or use `judgelab raters revoke NAME`.",
        )
    store.revoke_rater(name)


def rater_table(store: Store) -> pd.DataFrame:
    """Every rater for the Raters page. Never a token or its hash.

    Returns:
        ``rater`` (display name), ``name``, ``role``, ``status`` (``active``,
        ``revoked``, or ``no link (imported)`` for raters who came with imported
        labels), ``simulated``, ``created_at``, ``revoked_at``.
    """
    frame = store.raters()
    if frame.empty:
        return pd.DataFrame(columns=["rater", "name", "role", "status", "simulated", "created_at",
                                     "revoked_at"])
    frame["rater"] = [display_name(n, bool(s)) for n, s in zip(frame["name"], frame["simulated"],
                                                                 strict=True)]
    # Raters created by an import never had a link: their revoked_at is set in the same
    # transaction that creates them, so it equals created_at (DuckDB's current_timestamp
    # is the transaction's start). A real revoke happens in a later transaction.
    never = frame["revoked_at"].notna() & (frame["revoked_at"] == frame["created_at"])
    frame["status"] = frame["active"].map({True: "active", False: "revoked"})
    frame.loc[never, "status"] = "no link (imported)"
    return frame[["rater", "name", "role", "status", "simulated", "created_at", "revoked_at"]]


# -- data ----------------------------------------------------------------------------


def import_upload(store: Store, kind: ImportKind, filename: str, data: bytes) -> ImportSummary:
    """Import an uploaded file through the same validated importer as ``judgelab import``.

    The bytes are written to a temporary file that keeps the upload's name (the
    importers pick the reader by suffix). Errors name the uploaded file, not the
    temporary copy; the importer writes nothing when it raises.

    Raises:
        InputError: An unknown kind, or anything the importer rejects.
    """
    if kind not in IMPORT_KINDS:
        raise InputError(
            f"unknown import kind {kind!r}", fix=f"use one of {', '.join(IMPORT_KINDS)}."
        )
    shown = Path(filename).name or "upload"
    with tempfile.TemporaryDirectory(prefix="judgelab-upload-") as folder:
        path = Path(folder) / shown
        path.write_bytes(data)
        try:
            return import_file(store, kind, path)
        except InputError as exc:
            if exc.file is None or Path(str(exc.file)).name != shown:
                raise
            # Same error, but naming the file the admin uploaded.
            raise type(exc)(
                exc.problem, file=shown, row=exc.row, column=exc.column, fix=exc.fix
            ) from exc


def rubric_versions(store: Store) -> pd.DataFrame:
    """Every stored rubric version, newest first, with its number of criteria."""
    rubrics = store.rubrics()
    if rubrics.empty:
        return rubrics
    counts = []
    for rid, version in zip(rubrics["rubric_id"], rubrics["version"], strict=True):
        rubric = store.rubric(str(rid), int(version))
        counts.append(len(rubric.criteria) if rubric else 0)
    rubrics["criteria"] = counts
    return rubrics


def self_identifying_table(store: Store, *, context: int = 40) -> pd.DataFrame:
    """Answers whose text names a model or maker, one row per answer.

    Args:
        store: The project store.
        context: Characters of text kept either side of the first span.

    Returns:
        ``answer_id``, ``task_id``, ``family``, ``spans`` (count), ``matches``
        (the matched strings, ``"; "``-joined) and ``excerpt`` (text around the
        first match, the match in ``[[...]]``).
    """
    frame = store.self_identifying()
    columns = ["answer_id", "task_id", "family", "spans", "matches", "excerpt"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for rec in frame.to_dict("records"):
        spans = [(int(s[0]), int(s[1])) for s in rec["spans"]]
        text = str(rec["text"])
        start, end = spans[0]
        lead = "…" if start > context else ""
        tail = "…" if end + context < len(text) else ""
        excerpt = (
            lead + text[max(0, start - context):start] + "[[" + text[start:end] + "]]"
            + text[end:end + context] + tail
        )
        rows.append({
            "answer_id": rec["answer_id"],
            "task_id": rec["task_id"],
            "family": rec["family"],
            "spans": len(spans),
            "matches": "; ".join(dict.fromkeys(text[s:e] for s, e in spans)),
            "excerpt": excerpt.replace("\n", " "),
        })
    return pd.DataFrame(rows, columns=columns)


def mask_scopes(store: Store) -> list[str]:
    """The scopes masking can be set for: ``project`` and ``rubric:<id>`` per stored rubric."""
    rubrics = store.rubrics()
    ids = sorted({str(r) for r in rubrics["rubric_id"]}) if len(rubrics) else []
    return ["project", *(f"rubric:{r}" for r in ids)]


def masking_state(store: Store) -> dict[str, bool | None]:
    """Masking per scope: ``True``/``False`` when set, ``None`` when left to the default."""
    stored = store.settings_for(MASK_KEY)
    values = {str(s): str(v).lower() == "true" for s, v in zip(stored["scope"], stored["value"],
                                                                strict=True)}
    return {scope: values.get(scope) for scope in [*mask_scopes(store), *values]}


def masking_table(store: Store) -> pd.DataFrame:
    """Per scope, the stored setting and what raters actually get.

    A rubric's setting wins over the project's, which wins over the default
    (:data:`labeler.store.MASK_DEFAULT`); ``effective`` applies that rule
    (:meth:`Store.mask_self_id`).

    Returns:
        ``scope``, ``setting`` (``masked``/``shown``/``not set``) and ``raters see``
        (``masked``/``shown``).
    """
    word = {True: "masked", False: "shown", None: "not set"}
    rows = []
    for scope, value in masking_state(store).items():
        rubric_id = scope.removeprefix("rubric:") if scope.startswith("rubric:") else None
        # With no rubric, mask_self_id reads the project's setting, then the default.
        effective = store.mask_self_id(rubric_id)
        rows.append({"scope": scope, "setting": word[value], "raters see": word[effective]})
    return pd.DataFrame(rows, columns=["scope", "setting", "raters see"])


def set_masking(store: Store, scope: str, on: bool) -> None:
    """Mask (or show) self-identifying spans for raters in ``scope``.

    Raises:
        InputError: ``scope`` is neither ``project`` nor ``rubric:<id>`` of a stored rubric.
    """
    if scope not in mask_scopes(store):
        raise InputError(
            f"unknown masking scope {scope!r}",
            fix="use 'project' or 'rubric:<id>' for a rubric in the database.",
        )
    store.set_setting(scope, MASK_KEY, "true" if on else "false")


# -- export --------------------------------------------------------------------------


@dataclass(frozen=True)
class Download:
    """A file for ``st.download_button``."""

    data: bytes
    file_name: str
    mime: str


def frame_bytes(frame: pd.DataFrame, fmt: ExportFormat) -> bytes:
    """``frame`` as CSV, JSON lines or Parquet bytes."""
    if fmt == "csv":
        return _neutralise_formulas(frame).to_csv(index=False).encode("utf-8")
    if fmt == "jsonl":
        text = frame.to_json(orient="records", lines=True, date_format="iso")
        return (text or "").encode("utf-8")
    if fmt == "parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        return buffer.getvalue()
    raise InputError(f"unknown export format {fmt!r}", fix="use csv, jsonl or parquet.")


def _neutralise_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    # A comment or rater name starting "=", "+" or "@" would run as a formula when the
    # CSV is opened in a spreadsheet (CSV injection); a leading quote stops that.
    # `judgelab export` writes through frame_bytes too.
    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype == object or pd.api.types.is_string_dtype(safe[column]):
            safe[column] = safe[column].map(
                lambda v: "'" + v if isinstance(v, str) and v[:1] in ("=", "+", "@") else v
            )
    return safe


def export_labels(store: Store, fmt: ExportFormat) -> Download:
    """Every label row (with ``current`` marking the unsuperseded ones) as a download."""
    frame = store.export_frame("labels")
    return Download(frame_bytes(frame, fmt), f"labels.{fmt}", EXPORT_MIME[fmt])


# -- assignments ---------------------------------------------------------------------


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders ``t2`` before ``t10``."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part)
        for part in re.split(r"(\d+)", text) if part
    )


def task_order(store: Store) -> list[str]:
    """Task ids in natural order, for choosing a task range."""
    return sorted((str(t) for t in store.tasks()["task_id"]), key=natural_key)


def select_answers(
    catalog: pd.DataFrame,
    *,
    categories: Iterable[str] | None = None,
    variants: Iterable[str] | None = None,
    families: Iterable[str] | None = None,
    task_range: tuple[str, str] | None = None,
    tasks_in_order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The rows of :meth:`Store.answer_catalog` that match every given filter.

    Args:
        catalog: The answer catalog.
        categories: Keep these task categories (``None`` or empty: all).
        variants: Keep these variants (``None`` or empty: all).
        families: Keep these families (``None`` or empty: all).
        task_range: ``(first, last)`` task ids, inclusive, in natural order.
        tasks_in_order: The order ``task_range`` refers to (default: the natural
            order of the catalog's task ids).

    Raises:
        InputError: A ``task_range`` end is not a known task, or comes after the other.
    """
    keep = pd.Series(True, index=catalog.index)
    for column, wanted in (("category", categories), ("variant", variants),
                           ("family", families)):
        chosen = list(wanted or [])
        if chosen:
            keep &= catalog[column].astype("string").isin(chosen).fillna(False).astype(bool)
    if task_range is not None:
        order = list(tasks_in_order) if tasks_in_order is not None else sorted(
            {str(t) for t in catalog["task_id"]}, key=natural_key
        )
        first, last = task_range
        for end in (first, last):
            if end not in order:
                raise InputError(f"unknown task {end!r}", fix="pick tasks from the list.")
        lo, hi = order.index(first), order.index(last)
        if lo > hi:
            raise InputError(
                f"the task range starts at {first!r}, after its end {last!r}",
                fix="swap the two ends.",
            )
        keep &= catalog["task_id"].astype(str).isin(order[lo:hi + 1])
    return catalog[keep].reset_index(drop=True)


def subset_summary(selected: pd.DataFrame) -> pd.DataFrame:
    """Answers in a selection per family x variant, for the admin to check before assigning."""
    if selected.empty:
        return pd.DataFrame(columns=["family", "variant", "answers"])
    return (
        selected.groupby(["family", "variant"], dropna=False).size().rename("answers")
        .reset_index()
    )


def assign_each_to_k(
    store: Store,
    answer_ids: Sequence[str],
    k: int,
    rater_ids: Sequence[int],
    *,
    seed: int = 0,
    rubric: tuple[str, int] | None = None,
) -> AssignSummary:
    """Give each of ``answer_ids`` to exactly ``k`` of ``rater_ids`` (:meth:`Store.assign_k`).

    Answers that already have raters under the rubric keep them and only get the
    missing ones, so running this twice never pushes an answer past ``k``.

    Args:
        store: The project store.
        answer_ids: The selected answers (see :func:`select_answers`).
        k: Raters per answer.
        rater_ids: Raters to choose from.
        seed: Makes the choice of raters and the queue orders reproducible.
        rubric: ``(rubric_id, version)`` to label against; the newest when ``None``.

    Raises:
        InputError: Nothing selected, ``k`` below 1, or fewer raters than ``k``
            (and whatever :meth:`Store.assign_k` refuses).
    """
    if not answer_ids:
        raise InputError("no answers selected", fix="widen the filters.")
    if k < 1:
        raise InputError(f"k must be at least 1, got {k}", fix="choose k >= 1.")
    if len(set(rater_ids)) < k:
        raise InputError(
            f"each answer needs {k} raters but only {len(set(rater_ids))} are chosen",
            fix=f"choose at least {k} raters, or lower k.",
        )
    return store.assign_k(list(answer_ids), k, list(rater_ids), seed=seed, rubric=rubric)


def family_pairs(selected: pd.DataFrame, first: str, second: str) -> list[tuple[str, str]]:
    """Pairs of answers to the same task, one from each of two families.

    Within a task, the families' answers are paired in ``answer_id`` order (the
    first ``first`` answer with the first ``second`` answer, and so on); tasks that
    lack either family give no pair.

    Args:
        selected: Rows of the answer catalog (typically one variant).
        first: One family.
        second: The other family.

    Raises:
        InputError: ``first`` and ``second`` are the same family.
    """
    if first == second:
        raise InputError(
            f"both sides are family {first!r}", fix="choose two different families."
        )
    pairs: list[tuple[str, str]] = []
    for _, group in selected.groupby("task_id", sort=False):
        left = sorted(str(a) for a in group.loc[group["family"] == first, "answer_id"])
        right = sorted(str(a) for a in group.loc[group["family"] == second, "answer_id"])
        pairs += list(zip(left, right, strict=False))
    return sorted(pairs, key=lambda p: natural_key(p[0]))


def assign_pairwise(
    store: Store,
    pairs: Sequence[tuple[str, str]],
    k: int,
    rater_ids: Sequence[int],
    *,
    seed: int = 0,
) -> AssignSummary:
    """Give each pair to ``k`` raters for a side-by-side preference (:meth:`Store.assign_pairs`).

    Sides are counterbalanced across the raters of a pair; the shown order is stored.

    Raises:
        InputError: No pairs, or ``k`` outside 1..number of raters.
    """
    if not pairs:
        raise InputError("no pairs to assign", fix="choose two families that answer the same tasks.")
    return store.assign_pairs(list(pairs), list(rater_ids), k=k, seed=seed)


def rewrite_variants(catalog: pd.DataFrame) -> list[str]:
    """Variants other than ``original`` (the rewrites a padding audit can compare)."""
    return sorted({str(v) for v in catalog["variant"].dropna()} - {"original"})


def assign_audit_sample(
    store: Store,
    variant: str,
    n: int,
    k: int,
    rater_ids: Sequence[int],
    *,
    seed: int = 0,
) -> AssignSummary:
    """Give a seeded sample of ``n`` original/rewrite pairs of ``variant`` to ``k`` raters each.

    Seed 000 asks for about fifteen padded answers read side by side with their
    originals; all of them are taken when fewer exist.

    Raises:
        InputError: No rewrite of ``variant`` names its original, ``n`` below 1, or
            ``k`` outside 1..number of raters.
    """
    if n < 1:
        raise InputError(f"n must be at least 1, got {n}", fix="choose n >= 1.")
    candidates = store.padding_audit_pairs(variant)
    if not candidates:
        raise InputError(
            f"no {variant!r} answer names the original it rewrites",
            fix="import rewrites with parent_answer_id set, or pick another variant.",
        )
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(candidates), size=min(n, len(candidates)), replace=False))
    return store.assign_audits([candidates[int(i)] for i in picked], list(rater_ids), k=k,
                               seed=seed)


# -- sample designs ------------------------------------------------------------------


def design_available() -> bool:
    """Whether :mod:`calibration.design` (sample designs) is installed with what the page uses."""
    try:
        from calibration import design
    except ImportError:
        return False
    return all(
        hasattr(design, name)
        for name in ("load_pool", "design_sample", "design_table", "apply_design")
    )


@dataclass(frozen=True)
class DesignDraft:
    """A drawn sample design, before it is applied.

    Attributes:
        design: The :class:`calibration.design.Design`.
        table: Its per-stratum table (:func:`calibration.design.design_table`).
        pool_info: What the pool was read from (judge run, pilot labels).
        minutes_per_label: The time per label the cost rests on.
        minutes_source: Where that figure came from.
    """

    design: Design
    table: pd.DataFrame
    pool_info: dict[str, object]
    minutes_per_label: float
    minutes_source: str


def draft_design(
    store: Store,
    *,
    n: int,
    allocation: str = "gap",
    overlap: float = 0.2,
    raters: int = 1,
    seed: int = 0,
) -> DesignDraft:
    """Draw a stratified hand-label sample over the pool's original answers.

    The time per label is the median of people's timed labels when there are any
    (measured), else the design's default (assumed).

    Raises:
        InputError: No answers, or options the design refuses.
    """
    from calibration.design import design_sample, design_table, load_pool

    pool, info = load_pool(store)
    median, basis = median_seconds(store.label_seconds())
    kwargs: dict[str, object] = {}
    if not math.isnan(median) and "people" in basis:
        kwargs = {"minutes_per_label": median / 60, "minutes_source": f"measured: {basis}"}
    design = design_sample(
        pool, n=n, allocation=allocation, overlap=overlap,  # type: ignore[arg-type]
        raters=max(raters, 1), rng=seed, **kwargs,  # type: ignore[arg-type]
    )
    return DesignDraft(
        design=design,
        table=design_table(design),
        pool_info=dict(info),
        minutes_per_label=float(design.cost.minutes_per_label),
        minutes_source=str(kwargs.get("minutes_source", "assumed (no person has a timed label)")),
    )


def apply_sample_design(
    store: Store,
    draft: DesignDraft,
    rater_names: Sequence[str],
    *,
    seed: int = 0,
    rubric: tuple[str, int] | None = None,
) -> pd.DataFrame:
    """Save a drafted design and give its answers to the named raters.

    Returns:
        The assignments made (``rater``, ``answer_id``, ``queue_pos``, ...).

    Raises:
        InputError: No raters chosen, too few for the overlap, or the design was
            applied before.
    """
    from calibration.design import apply_design

    if not rater_names:
        raise InputError("no raters chosen", fix="choose the raters who will label the sample.")
    return apply_design(store, draft.design, list(rater_names), rng=seed, rubric=rubric)


def active_raters(store: Store, *, include_admins: bool = False) -> pd.DataFrame:
    """Raters who can be assigned work: active (and by default not admins), with display names."""
    frame = store.raters()
    frame = frame[frame["active"].astype(bool)]
    if not include_admins:
        frame = frame[frame["role"] == "rater"]
    frame = frame.copy()
    frame["rater"] = [display_name(n, bool(s)) for n, s in zip(frame["name"], frame["simulated"],
                                                                 strict=True)]
    return frame[["rater_id", "name", "rater", "role", "simulated"]].reset_index(drop=True)


def label_criteria(frame: pd.DataFrame) -> pd.DataFrame:
    """Expand a ``criteria`` JSON column into one ``crit:<id>`` column per criterion."""
    parsed = [json.loads(c) if isinstance(c, str) and c else {} for c in frame["criteria"]]
    wide = pd.DataFrame(parsed, index=frame.index)
    wide.columns = [f"crit:{c}" for c in wide.columns]
    return frame.join(wide)


# -- agreement -----------------------------------------------------------------------


@dataclass(frozen=True)
class AgreementReport:
    """Agreement between raters under one rubric version.

    Attributes:
        rubric: The rubric the labels were given under.
        level: Krippendorff level of measurement chosen from the rubric's scale.
        overall: Krippendorff's alpha on the overall score.
        per_criterion: One row per criterion, then one for the pass verdict:
            ``criterion``, ``name``, ``level``, ``alpha``, ``ci_low``, ``ci_high``,
            ``n`` (units rated by two or more raters), ``reason`` (why ``alpha`` is
            ``nan``).
        kappas: Cohen's kappa per rater pair: ``rater_a``, ``rater_b`` (display
            names), ``kappa``, ``ci_low``, ``ci_high``, ``n``, ``percent_agreement``,
            ``reason``.
        kappa_basis: What the kappas compare, in words.
        leniency: Per rater: ``rater``, ``simulated``, ``leniency`` (mean of own
            overall score minus the others' mean on shared answers), ``ci_low``,
            ``ci_high``, ``n``, ``stands_out``, ``threshold``, ``mean_kappa`` (mean
            kappa with every other rater).
        units: What ``leniency`` is measured in.
        standouts: One sentence per rater whose leniency stands out.
        n_labels: Current, scored labels the report rests on.
        n_answers: Answers with at least one such label.
        n_raters: Raters with at least one such label.
        n_flagged: Current labels left out because the rater flagged the answer unrateable.
    """

    rubric: Rubric
    level: str
    overall: Estimate
    per_criterion: pd.DataFrame
    kappas: pd.DataFrame
    kappa_basis: str
    leniency: pd.DataFrame
    units: str
    standouts: list[str]
    n_labels: int
    n_answers: int
    n_raters: int
    n_flagged: int


def reliability_matrix(
    labels: pd.DataFrame, value_col: str, *, rater_col: str = "rater_id",
    item_col: str = "answer_id",
) -> tuple[pd.DataFrame, list[str]]:
    """Raters x answers matrix of ``value_col`` (``nan`` = not rated) and each answer's task.

    Returns:
        ``(matrix, tasks)``: the matrix's columns are answers in sorted order and
        ``tasks`` lists the task of each column (the cluster for bootstraps).
    """
    rows = labels.dropna(subset=[value_col])
    matrix = rows.pivot(index=rater_col, columns=item_col, values=value_col).astype(float)
    matrix = matrix.sort_index(axis=0).sort_index(axis=1)
    task_of = rows.groupby(item_col)["task_id"].first()
    return matrix, [str(task_of[a]) for a in matrix.columns]


_KappaWeights = Literal["linear", "quadratic"] | None


def _kappa_setup(scale: str) -> tuple[str, _KappaWeights, str]:
    """Which column kappa compares, its weighting and the basis sentence for a scale."""
    if scale == "binary":
        return "overall", None, "unweighted kappa on the accept/reject score"
    if scale == "likert5":
        return "overall", "quadratic", "quadratic-weighted kappa on the 1–5 overall score"
    # Kappa treats each of 101 values as its own category and weighs distance by rank
    # among the values seen, which is meaningless for a 0-100 score: compare verdicts.
    return "passed", None, "unweighted kappa on the pass verdict (0–100 scores are not categories)"


def agreement_report(
    store: Store,
    rubric_id: str | None = None,
    version: int | None = None,
    *,
    include_unversioned: bool = True,
    n_resamples: int = 1000,
    seed: int = 0,
) -> AgreementReport:
    """Krippendorff's alpha (overall, per criterion, pass verdict), Cohen's kappa per rater
    pair and each rater's leniency, from every rater's current label.

    The level of measurement follows the rubric's scale (binary → nominal, likert5 →
    ordinal, numeric100 → interval); the pass verdict is always nominal. Each rater
    counts once per answer: a label under the rubric wins over an imported
    unversioned one, then the newest. Intervals
    are percentile bootstraps that resample tasks, so answers to one task move
    together. Labels flagged unrateable carry no score and are left out (counted in
    ``n_flagged``).

    Args:
        store: The project store.
        rubric_id: The rubric (default: the newest).
        version: Its version (default: the newest of ``rubric_id``).
        include_unversioned: Count labels with no rubric (imported) under this rubric.
        n_resamples: Bootstrap resamples per figure.
        seed: Seed for the bootstraps, so the page shows the same figures on reload.

    Raises:
        InputError: No such rubric.
    """
    from calibration.stats import (
        krippendorff_alpha,
        level_for_scale,
        pairwise_kappas,
        rater_leniency,
    )

    rubric = store.rubric(rubric_id, version)
    if rubric is None:
        raise InputError(
            "no rubric to compute agreement under" if rubric_id is None
            else f"no rubric {rubric_id!r}" + (f" version {version}" if version else ""),
            fix="import a rubric on the Data page or with `judgelab import rubric FILE`.",
        )
    level = level_for_scale(rubric.scale)
    labels = store.current_labels(
        rubric.rubric_id, rubric.version, include_unversioned=include_unversioned
    )
    # One label per rater and answer: a rater may hold an imported (unversioned) label
    # and an app label under the rubric for the same answer; the app one is theirs now.
    labels = (
        labels.assign(_versioned=labels["rubric_id"].notna())
        .sort_values(["_versioned", "created_at", "label_id"])
        .drop_duplicates(["rater_id", "answer_id"], keep="last")
        .drop(columns="_versioned")
    )
    flagged = labels["flag_reason"].notna()
    labels = label_criteria(labels[~flagged & labels["overall"].notna()].reset_index(drop=True))
    labels["passed"] = labels["passed"].astype("float")
    names = {
        int(r): display_name(str(n), bool(s))
        for r, n, s in zip(labels["rater_id"], labels["rater_name"], labels["simulated"],
                           strict=True)
    }
    rng = np.random.default_rng(seed)

    def alpha(column: str, lvl: str) -> Estimate:
        if column not in labels.columns:
            return krippendorff_alpha(np.empty((0, 0)), level=lvl)  # type: ignore[arg-type]
        matrix, tasks = reliability_matrix(labels, column)
        return krippendorff_alpha(
            matrix.to_numpy(), level=lvl, clusters=tasks,  # type: ignore[arg-type]
            n_resamples=n_resamples, rng=rng,
        )

    overall = alpha("overall", level)
    rows = []
    for crit in rubric.criteria:
        est = alpha(f"crit:{crit.criterion_id}", level)
        rows.append(_alpha_row(crit.criterion_id, crit.name, level, est))
    rows.append(_alpha_row("passed", "pass verdict", "nominal", alpha("passed", "nominal")))
    per_criterion = pd.DataFrame(rows)

    kappa_col, weights, basis = _kappa_setup(rubric.scale)
    kappas = pairwise_kappas(
        labels.dropna(subset=[kappa_col]), value_col=kappa_col, weights=weights,
        n_resamples=n_resamples, rng=rng,
    )
    leniency = rater_leniency(
        labels, value_col="overall", cluster_col="task_id", n_resamples=n_resamples, rng=rng
    )
    leniency = _with_mean_kappa(leniency, kappas)
    leniency.insert(1, "simulated", [bool(labels.loc[labels["rater_id"] == r, "simulated"].iloc[0])
                                     for r in leniency["rater"]])
    units = _leniency_units(rubric.scale)
    standouts = [
        _standout_sentence(names[int(r["rater"])], float(r["leniency"]), float(r["ci_low"]),
                           float(r["ci_high"]), int(r["n"]), units)
        for r in leniency.to_dict("records") if bool(r["stands_out"])
    ]
    leniency["rater"] = [names[int(r)] for r in leniency["rater"]]
    kappas["rater_a"] = [names[int(r)] for r in kappas["rater_a"]]
    kappas["rater_b"] = [names[int(r)] for r in kappas["rater_b"]]
    return AgreementReport(
        rubric=rubric,
        level=level,
        overall=overall,
        per_criterion=per_criterion,
        kappas=kappas,
        kappa_basis=basis,
        leniency=leniency,
        units=units,
        standouts=standouts,
        n_labels=len(labels),
        n_answers=int(labels["answer_id"].nunique()),
        n_raters=int(labels["rater_id"].nunique()),
        n_flagged=int(flagged.sum()),
    )


def _alpha_row(criterion: str, name: str, level: str, est: Estimate) -> dict[str, object]:
    return {
        "criterion": criterion,
        "name": name,
        "level": level,
        "alpha": est.estimate,
        "ci_low": est.ci_low,
        "ci_high": est.ci_high,
        "n": est.n,
        "reason": est.extra.get("reason"),
    }


def _with_mean_kappa(leniency: pd.DataFrame, kappas: pd.DataFrame) -> pd.DataFrame:
    both = pd.concat([
        kappas[["rater_a", "kappa"]].rename(columns={"rater_a": "rater"}),
        kappas[["rater_b", "kappa"]].rename(columns={"rater_b": "rater"}),
    ])
    mean = both.groupby("rater")["kappa"].mean()
    out = leniency.copy()
    out["mean_kappa"] = [float(mean.get(r, math.nan)) for r in out["rater"]]
    return out


def _leniency_units(scale: str) -> str:
    if scale == "binary":
        return "accept rate (0–1)"
    lo, hi = SCALE_RANGE[scale]  # type: ignore[index]
    return f"points on the {lo:g}–{hi:g} scale"


def _standout_sentence(
    name: str, effect: float, lo: float, hi: float, n: int, units: str
) -> str:
    direction = "more lenient" if effect > 0 else "stricter"
    return (
        f"{name} is {direction} than the other raters: {effect:+.2f} {units} on average "
        f"(95% CI {lo:+.2f} to {hi:+.2f}, {n} shared answers)."
    )


__all__ = [
    "DEFAULT_BASE_URL",
    "EXPORT_FORMATS",
    "EXPORT_MIME",
    "IMPORT_KINDS",
    "AgreementReport",
    "DesignDraft",
    "Download",
    "ExportFormat",
    "ImportKind",
    "Invite",
    "Overview",
    "active_raters",
    "agreement_report",
    "apply_sample_design",
    "assign_audit_sample",
    "assign_each_to_k",
    "assign_pairwise",
    "base_url",
    "design_available",
    "display_name",
    "draft_design",
    "export_labels",
    "family_pairs",
    "frame_bytes",
    "import_upload",
    "invite_link",
    "invite_rater",
    "label_criteria",
    "mask_scopes",
    "masking_state",
    "masking_table",
    "median_seconds",
    "natural_key",
    "overview",
    "rater_table",
    "reissue_link",
    "reliability_matrix",
    "revoke_rater",
    "rewrite_variants",
    "rubric_versions",
    "select_answers",
    "self_identifying_table",
    "set_masking",
    "subset_summary",
    "task_order",
]
