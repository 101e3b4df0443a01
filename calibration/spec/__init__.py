r"""Judge specs: a team's own judge (prompt, few-shot examples, references, verdict rule) in TOML.

Without a spec, every probe and judge run uses judgelab's built-in prompt (the rubric text and
:data:`~judgelab.calibration.formats.JUDGE_INSTRUCTIONS`, the answers in judgelab's tags, a
``VERDICT:`` line). A bias measured on that prompt is a property of judgelab's prompt. A judge
spec describes the team's judge instead, and every probe, ``judgelab score`` and the mock API
run it (the bundled ``judge_spec.toml``, which ``judgelab examples DIR`` writes, is a full example):

``[judge]``
    ``name``, ``model``, ``family`` (the judge's own model family, for the self-preference
    gap), ``temperature``, ``max_tokens``, ``provider`` (``"anthropic"`` or ``"openai"``: any
    OpenAI-compatible endpoint) and ``base_url`` (that endpoint). All optional.
``[rubric]``
    ``author``: who wrote the rubric and judging instructions the judge sees.
``[examples]``
    ``items`` (few-shot examples, verbatim), ``separator`` (default a blank line), ``author``.
``[references]``
    ``source = "task"`` (each task's reference answer in the project database) and/or
    ``texts = {TASK_ID = "..."}``; ``if_missing`` (text used when a task has none; default:
    refuse the call); ``author``.
``[[templates]]``
    One per kind and format: ``kind`` (``pointwise`` or ``pairwise``), ``system``, ``user``
    and ``[templates.verdict]``: ``format`` (a catalogue format, :mod:`judgelab.labeler.scales`),
    ``regex`` (exactly one group; ``^`` and ``$`` match at line ends), ``mapping`` (group
    text -> value; without one the group must be a whole number in the format's range),
    ``ignore_case``, and ``samples``: replies with the value they must parse to (``expect``:
    a value or a mapping label) or ``expect_failure = true``. Every sample is checked when
    the spec loads, so a wrong regex fails at once instead of turning a run into parse
    failures.

An ``author`` is an inline table ``{kind = "human" | "model" | "unknown", name = "..."}``; a
model author's ``name`` is its family or model id. An artifact with no declared author counts
as unknown, which makes the self-preference gap an upper bound (:func:`provenance`).

**Placeholders.** ``{rubric}`` (the rubric text raters see, its scale and pass rule included),
its parts ``{instructions}``, ``{criteria}`` and ``{levels}`` (the scale and pass rule) for a
template that asks for a scale of its own, ``{prompt}`` (the task), ``{answer}`` (pointwise),
``{answer_a}`` and ``{answer_b}`` (pairwise, in the order shown), ``{reference}`` and
``{examples}``; ``{{`` and ``}}`` are literal braces. A pointwise template must show ``{prompt}``
and ``{answer}``, a pairwise one ``{prompt}``, ``{answer_a}`` and ``{answer_b}``.

**Scales.** A template asks the judge for a scale: ``[templates.verdict] scale = [lo, hi]``, or
the numeric labels of its mapping, or the format's range. A scale its own words name ("on a
scale of 1 to 10") that differs is refused when the spec loads (a 1-10 reply read under
``numeric100`` without a mapping would be stored as 7 of 100); so is a run whose ``{rubric}``
(or ``{levels}``, ``{instructions}``) tells the judge another scale. Without a mapping a reply
off the declared scale is a parse failure. A table ``scale = { name = "mt10", low = 1, high = 10,
step = 1 }`` declares the judge's own scale instead (:mod:`judgelab.labeler.scales`): the reply's number is
read on that grid and the judgements carry ``mt10`` as their format; ``calibrate --scale-map``
states how it reads on the rubric's scale.

**References** are keyed by task: two tasks with one prompt keep their own (each call carries
its task id).

**Escaping.** Templates are filled in one pass, so text inside an answer is never read as a
placeholder. Judged text (the task, answers, references) goes in exactly as written, with two
escapes: the built-in tags (:func:`~judgelab.calibration.formats.neutralise`), and any copy of a line of
the template's own text, compared without case, spacing, invisible characters or curly quote
marks (``[The End of Assistant A’s Answer]``, Prometheus's ``###Feedback:``). Such a copy gets its
first character written as a character reference (``&#91;The End of ...``): the judge still
reads what was written, but the answer cannot close its block or write a later part of the
prompt.

**Parsing.** The strict policy of :func:`judgelab.calibration.formats.parse`: the reply is normalised the
same way, the last match of the regex wins, and anything else (no match, an off-menu label, a
number out of range) is a parse failure with a reason, never a default score.

    >>> rule = VerdictRule("pairwise5", r"\[\[([ABC])\]\]", (("A", 2.0), ("B", -2.0), ("C", 0.0)))
    >>> rule.parse("First I thought [[B]]; on reflection [[A]]").value
    2.0
    >>> print(rule.parse("[[D]]").error)
    no match for the verdict pattern \[\[([ABC])\]\] in the reply
    >>> VerdictRule("likert5", r"Rating: \[\[(\d+)\]\]").parse("Rating: [[7]]").error
    '7 is out of range; expected a whole number from 1 to 5'
    >>> rule.render(-2.0)
    '[[B]]'
"""

from judgelab.calibration.spec._load import load_spec, parse_spec
from judgelab.calibration.spec._spec import (
    AUTHOR_KINDS,
    Author,
    AuthorKind,
    JudgeSpec,
    bind_references,
    provenance,
    recorded_provenance,
    with_references,
)
from judgelab.calibration.spec._template import PLACEHOLDERS, REQUIRED_PLACEHOLDERS, Template, normalise_line
from judgelab.calibration.spec._verdict import VerdictRule

__all__ = [
    "AUTHOR_KINDS",
    "PLACEHOLDERS",
    "REQUIRED_PLACEHOLDERS",
    "Author",
    "AuthorKind",
    "JudgeSpec",
    "Template",
    "VerdictRule",
    "bind_references",
    "load_spec",
    "normalise_line",
    "parse_spec",
    "provenance",
    "recorded_provenance",
    "with_references",
]
