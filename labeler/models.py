"""Plain records that move between the importers, the store and the app."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Literal

from labeler.scales import Scale, format_range

AuthorKind = Literal["human", "model"]


@dataclass(frozen=True)
class Criterion:
    """One thing the rubric asks an answer to do."""

    criterion_id: str
    name: str
    description: str


@dataclass(frozen=True)
class Rubric:
    """A versioned rubric, shown verbatim to raters and to the judge."""

    rubric_id: str
    version: int
    name: str
    scale: Scale
    pass_rule: str
    criteria: tuple[Criterion, ...]
    pass_threshold: float | None = None
    instructions: str = ""
    author_kind: AuthorKind = "human"
    author: str = "unknown"

    def content_hash(self) -> str:
        """Hash of everything a rater or judge sees, used to detect conflicting re-imports."""
        payload = asdict(self)
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def passes(self, overall: float) -> bool:
        """The pass verdict the rubric's threshold gives an overall score.

        The verdict depends on the overall score alone, so a judge (which gives only an
        overall score) and a rater are held to the same rule; a rubric that wants "no
        criterion fails" says so in words raters and judge both read.
        """
        if self.scale == "binary":
            return overall >= 1
        threshold = self.pass_threshold if self.pass_threshold is not None else (
            4.0 if self.scale == "likert5" else 70.0
        )
        return overall >= threshold

    def scale_text(self) -> str:
        """How the overall score is given, in words."""
        if self.scale == "binary":
            return "Overall: accept (1) or reject (0)."
        lo, hi = format_range(self.scale)
        return f"Overall: a whole number from {lo:g} (worst) to {hi:g} (best)."

    def as_text(self) -> str:
        """The rubric as the one text both raters and the judge read."""
        lines = [f"{self.name} (v{self.version})"]
        if self.instructions:
            lines += ["", self.instructions.strip()]
        lines += ["", "Criteria:"]
        for c in self.criteria:
            lines.append(f"- {c.name}: {c.description}")
        lines += ["", self.scale_text(), f"Pass rule: {self.pass_rule}"]
        return "\n".join(lines)


@dataclass(frozen=True)
class Task:
    """A prompt answers respond to (e.g. a customer ticket)."""

    task_id: str
    prompt: str
    category: str | None = None
    reference_answer: str | None = None
    reference_author_kind: AuthorKind | None = None
    reference_author: str | None = None


@dataclass(frozen=True)
class Answer:
    """A response to a task. Family, model and variant never reach a rater."""

    answer_id: str
    task_id: str
    family: str
    model: str
    text: str
    variant: str = "original"
    parent_answer_id: str | None = None
    self_id_spans: tuple[tuple[int, int, str], ...] = field(default=(), compare=False)

    @property
    def n_words(self) -> int:
        """Whitespace-separated words in the answer text."""
        return len(self.text.split())


@dataclass(frozen=True)
class Pair:
    """Two answers to one prompt in the judge-probe format."""

    pair_id: str
    prompt: str
    answer_a: str
    answer_b: str
    gold: str | None = None


@dataclass(frozen=True)
class ImportedLabel:
    """A human label collected elsewhere."""

    answer_id: str
    rater: str
    overall: float | None
    passed: bool | None
    criteria: dict[str, float] = field(default_factory=dict)
    comment: str = ""


@dataclass(frozen=True)
class ImportedPairLabel:
    """A human pairwise preference collected elsewhere (+2 left much better .. -2)."""

    rater: str
    shown_left: str
    shown_right: str
    preference: int


@dataclass(frozen=True)
class ImportedJudgement:
    """A judge score collected elsewhere."""

    answer_id: str
    judge_model: str
    value: float | None
    passed: bool | None
    format: str
    answer_b_id: str | None = None
    order_shown: str | None = None
    judge_family: str | None = None
    raw: str | None = None
