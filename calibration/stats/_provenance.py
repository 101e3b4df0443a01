"""Who wrote the judge prompt's artifacts, and whether that makes the self-preference gap an upper bound."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from judgelab.calibration.stats._bootstrap import check_choice

AuthorKind = Literal["human", "model", "unknown"]
"""Who wrote an artifact of the judge prompt."""

_AUTHOR_KINDS: tuple[str, ...] = ("human", "model", "unknown")


@dataclass(frozen=True)
class ProvenanceNote:
    """How to read a self-preference gap given who wrote the judge prompt's artifacts.

    Attributes:
        bound: ``"upper"`` when the gap may include the judge recognising its own family's
            writing as the target (so the measured gap is an upper bound on intrinsic
            self-preference); ``None`` when every artifact was written by a human or another
            family.
        reason: One sentence saying why.
        own_family_artifacts: Artifacts written by the judge's own family.
        unknown_artifacts: Artifacts whose author is unknown.
    """

    bound: Literal["upper"] | None
    reason: str
    own_family_artifacts: tuple[str, ...]
    unknown_artifacts: tuple[str, ...]


def provenance_note(
    records: Iterable[tuple[str, str, str]] | Iterable[Mapping[str, str]],
    *,
    judge_family: str,
) -> ProvenanceNote:
    """Whether the judge prompt's artifacts make the self-preference gap an upper bound.

    If the rubric, few-shot examples or reference answers were drafted by the judge's own
    family, the judge is asked to recognise its own writing as the target, and the measured
    residual folds that in with any intrinsic preference (seed 000): the gap is then an upper
    bound. An artifact of unknown authorship cannot rule this out and counts the same way.

    Args:
        records: ``(artifact, author_kind, author)`` tuples (or mappings with those keys),
            ``author_kind`` one of ``"human"``, ``"model"``, ``"unknown"``. A model author
            belongs to the judge's family when its name, lower-cased, equals ``judge_family``
            or starts with it followed by ``-``, ``_``, ``/`` or a space
            (``"claude-opus-5"`` is family ``"claude"``).
        judge_family: The judge's model family.

    Returns:
        A :class:`ProvenanceNote`. Degenerate case: no records at all means nothing was
        checked, so the bound is ``"upper"`` with that reason.

    Raises:
        ValueError: On an unknown ``author_kind`` or a malformed record.
    """
    func = "provenance_note"
    fam = judge_family.strip().lower()
    own: list[str] = []
    unknown: list[str] = []
    n_records = 0
    for record in records:
        n_records += 1
        if isinstance(record, Mapping):
            artifact, kind, author = record["artifact"], record["author_kind"], record["author"]
        else:
            if len(record) != 3:
                raise ValueError(f"{func}: records are (artifact, author_kind, author); got {record!r}")
            artifact, kind, author = record
        check_choice(func, "author_kind", kind, _AUTHOR_KINDS)
        if kind == "unknown":
            unknown.append(str(artifact))
        elif kind == "model" and _same_family(str(author), fam):
            own.append(str(artifact))
    if n_records == 0:
        return ProvenanceNote(
            "upper",
            "no provenance records: the authorship of the rubric and prompt artifacts was "
            "not checked, so own-family contamination cannot be ruled out",
            (),
            (),
        )
    if own or unknown:
        parts = []
        if own:
            parts.append(f"{', '.join(own)} written by the judge's own family ({judge_family})")
        if unknown:
            parts.append(f"{', '.join(unknown)} of unknown authorship")
        reason = (
            "; ".join(parts) + ": the judge may recognise its own family's writing as the target, so the gap "
            "folds that in and is an upper bound on self-preference"
        )
        return ProvenanceNote("upper", reason, tuple(own), tuple(unknown))
    return ProvenanceNote(
        None,
        f"every artifact was written by a human or a family other than {judge_family}",
        (),
        (),
    )


def _same_family(author: str, family: str) -> bool:
    name = author.strip().lower()
    return name == family or any(name.startswith(family + sep) for sep in ("-", "_", "/", " "))
