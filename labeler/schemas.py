"""The one file schema per kind of data judgelab imports and exports.

``judgelab export K`` writes exactly the columns of ``SCHEMAS[K]`` (in this order) and
``judgelab import K`` reads them; a column a schema does not know is an error that names it
(:func:`unknown_columns`), unless the user lists it in ``--ignore-columns``. The README's
"File schemas" section is :func:`schemas_markdown` verbatim (a test keeps the two equal), so the
documentation cannot drift from the code.

    >>> SCHEMAS["verdicts"].names[:4]
    ('pair_id', 'judge_model', 'shown_first', 'winner')
    >>> SCHEMAS["labels"].knows("criterion:accurate"), SCHEMAS["labels"].knows("passed")
    (True, False)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "DATA_KINDS",
    "EXPORT_ONLY",
    "SCHEMAS",
    "Column",
    "DataKind",
    "Schema",
    "schemas_markdown",
    "unknown_columns",
]

DataKind = Literal[
    "rubric", "answers", "pairs", "labels", "pair_labels", "audits", "judgements", "verdicts", "designs",
    "audit_trail",
]
"""Every kind of file ``judgelab export`` writes; ``judgelab import`` reads each but :data:`EXPORT_ONLY`."""

DATA_KINDS: tuple[DataKind, ...] = (
    "rubric", "answers", "pairs", "labels", "pair_labels", "audits", "judgements", "verdicts", "designs",
    "audit_trail",
)

#: Kinds written for the record, never read back: the audit trail is the database's own account
#: of who did what, and an import must not be able to write it.
EXPORT_ONLY: tuple[DataKind, ...] = ("audit_trail",)


@dataclass(frozen=True)
class Column:
    """One column of a file schema (one key, for the rubric's TOML).

    Attributes:
        name: The column name, exactly (names are case-sensitive).
        type: What a value is: text, id, number, whole number, yes/no, timestamp, JSON.
        required: ``yes``, ``no``, or the condition under which the column is needed.
        meaning: What the value means.
        allowed: The values allowed, when the type alone does not say.
    """

    name: str
    type: str
    required: str
    meaning: str
    allowed: str = ""


@dataclass(frozen=True)
class Schema:
    """The columns of one kind of file.

    Attributes:
        kind: The kind (``judgelab import KIND``).
        formats: The file types it is read from and written to.
        summary: One paragraph on what a row is.
        columns: The columns, in the order export writes them.
        prefix: For a family of columns named ``<prefix><id>`` (a label's
            ``criterion:<id>``), the prefix; such columns follow ``columns[prefix_after]``.
        prefix_after: Where the prefixed columns go in an export.
    """

    kind: DataKind
    formats: str
    summary: str
    columns: tuple[Column, ...]
    prefix: str | None = None
    prefix_after: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The fixed column names, in export order."""
        return tuple(c.name for c in self.columns)

    def knows(self, name: str) -> bool:
        """Whether ``name`` is one of this schema's columns (or of its prefixed family)."""
        return name in self.names or (self.prefix is not None and name.startswith(self.prefix) and
                                      len(name) > len(self.prefix))

    def export_order(self, prefixed: Iterable[str]) -> list[str]:
        """The export's column order, with the prefixed columns ``prefixed`` in place."""
        out: list[str] = []
        for name in self.names:
            out.append(name)
            if name == self.prefix_after:
                out += list(prefixed)
        return out

    def markdown(self) -> str:
        """This schema as a README section: a heading, the summary and a table."""
        lines = [f"### `{self.kind}` ({self.formats})", "", self.summary, "",
                 "| column | type | required | meaning | allowed values |", "|---|---|---|---|---|"]
        for c in self.columns:
            lines.append(f"| `{c.name}` | {c.type} | {c.required} | {c.meaning} | {c.allowed} |")
            if c.name == self.prefix_after and self.prefix:
                lines.append(
                    f"| `{self.prefix}<id>` | number | no | the score of criterion `<id>` of the rubric, one "
                    "column per criterion | on the rubric's scale; `<id>` a criterion of the rubric |"
                )
        return "\n".join(lines)


def unknown_columns(kind: DataKind, columns: Iterable[str]) -> list[str]:
    """The names in ``columns`` that the schema of ``kind`` does not know, in file order."""
    schema = SCHEMAS[kind]
    return [c for c in columns if not schema.knows(c)]


_TS = "timestamp"
_WHEN = "ISO 8601, e.g. `2025-03-01 14:02:11.250000` (no zone: the database's clock)"
_HISTORY = (
    "An edit is a new row that names the row it replaces in `supersedes`; the export holds every "
    "row, superseded ones included, so the history moves with the file."
)

_RUBRIC = Schema(
    "rubric", "TOML",
    "One rubric version: what raters and the judge both read. Keys, not columns; `[author]` is a "
    "table and `[[criteria]]` an array of tables.",
    (
        Column("id", "id", "yes", "the rubric's id"),
        Column("version", "whole number", "yes", "its version; changed content needs a new number", "1 or more"),
        Column("name", "text", "yes", "the rubric's title"),
        Column("scale", "text or table", "yes", "the overall score's scale: a name, or a `[scale]` table "
               "declaring the rubric's own", "`binary`, `likert5`, `numeric100`, or `[scale]`"),
        Column("scale.name", "id", "in `[scale]`", "the declared scale's name, carried by judgements and formats",
               "lower-case letters, digits, `_`; not a built-in format"),
        Column("scale.low", "number", "in `[scale]`", "the worst score", "below `scale.high`"),
        Column("scale.high", "number", "in `[scale]`", "the best score"),
        Column("scale.step", "number", "in `[scale]`", "the distance between levels", "divides high - low"),
        Column("scale.labels", "table", "no", "words for some levels, shown to raters", "`{ 0 = \"wrong\" }`, "
               "keys on the grid"),
        Column("pass_threshold", "number", "with `[scale]`", "overall score from which an answer passes "
               "(default 4 on likert5, 70 on numeric100; binary passes at 1)", "on the scale (its grid)"),
        Column("pass_rule", "text", "yes", "the pass rule in words, shown to raters and judge"),
        Column("instructions", "text", "no", "how to read and score, shown to raters and judge"),
        Column("turn", "text", "no", "which part of a conversation answer is rated (default `last`)",
               "`last` (the last assistant turn), `whole`, `each` (the item's scores rate the whole "
               "and every assistant turn gets a score on the same scale; an answer that is one text "
               "has no turns to score)"),
        Column("author.kind", "text", "yes", "who drafted the rubric", "`human`, `model`"),
        Column("author.name", "text", "yes", "a person or team, or the model family"),
        Column("criteria[].id", "id", "yes", "one criterion's id, unique in the rubric"),
        Column("criteria[].name", "text", "yes", "its name"),
        Column("criteria[].description", "text", "yes", "what it asks of an answer"),
    ),
)

_ANSWERS = Schema(
    "answers", "CSV, JSONL, JSON array, Parquet",
    "One row per answer; the task's fields repeat on every row of the task and must agree.",
    (
        Column("task_id", "id", "yes", "the task (prompt) the answer responds to"),
        Column("prompt", "text", "yes", "the task's prompt"),
        Column("category", "text", "no", "the task's category (a stratum for sample designs)"),
        Column("reference_answer", "text", "no", "the task's reference answer, if the judge sees one"),
        Column("reference_author", "text", "no", "who wrote the reference answer",
               "`human:<name>` or `model:<family>`"),
        Column("answer_id", "id", "yes", "the answer's id, unique"),
        Column("family", "id", "yes", "the model family that wrote it (never shown to raters)"),
        Column("model", "id", "yes", "the model that wrote it (never shown to raters)"),
        Column("variant", "id", "no", "what was done to it", "`original` (default), `padded`, `truncated`, ..."),
        Column("parent_answer_id", "id", "no", "the answer a variant was made from",
               "an answer in the file or the database"),
        Column("text", "text", "unless `messages`", "the answer's text"),
        Column("messages", "JSON", "unless `text`",
               "the answer as a conversation or agent trace: a list of messages (`role`, `content`, "
               "`tool_calls`, `tool_call_id`, `name`) in the OpenAI chat form or the Anthropic form "
               "(`tool_use`/`tool_result` blocks; `{system, messages}` for a system prompt)",
               "a JSON list (or its text); see docs/analysts/conversations.md"),
    ),
)

_PAIRS = Schema(
    "pairs", "CSV, JSONL, JSON array, Parquet",
    "One row per pair of answers to one prompt, in the judge-probe format. The judge probes and "
    "`judgelab import verdicts` refer to a pair's two answers as `<id>:a` and `<id>:b`.",
    (
        Column("id", "id", "no", "the pair's id (default `row<N>`)"),
        Column("prompt", "text", "yes", "the question both answers respond to"),
        Column("answer_a", "text", "yes", "the pair's answer a"),
        Column("answer_b", "text", "yes", "the pair's answer b"),
        Column("gold", "text", "no", "the better answer, when known (accuracy is read against it)",
               "`A`, `B`, `tie`, or empty"),
    ),
)

_LABELS = Schema(
    "labels", "CSV, JSONL, JSON array, Parquet",
    "One row per human label of one answer. " + _HISTORY + " Labels are checked against a rubric, "
    "so import the rubric first.",
    (
        Column("label_id", "whole number", "with `supersedes`", "the row's id within the file (export: the "
               "database's), for `supersedes` to point at"),
        Column("supersedes", "whole number", "no", "the `label_id` of the earlier label (same rater and "
               "answer) this row replaces", "a `label_id` of an earlier row"),
        Column("rater", "id", "yes", "the rater's name (a new name becomes a rater who cannot log in)"),
        Column("answer_id", "id", "yes", "the answer labelled", "an answer in the database"),
        Column("rubric_id", "id", "no", "the rubric the label was given under (default: the newest)",
               "a rubric in the database"),
        Column("rubric_version", "whole number", "with `rubric_id`", "its version (default: the newest)"),
        Column("score", "number", "score or pass (or flag_reason)", "the overall score", "on the rubric's scale"),
        Column("n_raters", "whole number", "no", "how many people `score` is the mean of (a public dataset's "
               "annotator mean); such a score may lie between the scale's levels, on its grid divided by "
               "`n_raters`, written exactly or rounded to the file's decimals (1.667 is stored as 5/3) "
               "(default: one person's label)", "1 or more"),
        Column("pass", "yes/no", "score or pass (or flag_reason)", "the pass verdict (default: the rubric's "
               "rule applied to `score`)", "true/false, yes/no, pass/fail, 1/0"),
        Column("turns", "JSON object", "no", "a conversation's score per assistant turn, under a rubric with "
               "`turn = \"each\"` (turn 1 is the first assistant turn)", "`{\"1\": 4, \"2\": 5}`, scores on "
               "the rubric's scale"),
        Column("comment", "text", "no", "the rater's comment"),
        Column("flag_reason", "text", "no", "set when the rater flagged the item unrateable (why, in words); "
               "such a label may have no score"),
        Column("seconds", "number", "no", "seconds the rater spent on the item", "0 or more"),
        Column("source", "text", "no", "where the label came from; `simulated` and `adjudicated` (an admin's "
               "adjudication) stay as they are, `app` and `import` are stored as `import`",
               "`app`, `import`, `simulated`, `adjudicated`"),
        Column("created_at", _TS, "no", "when the label was given (default: the import)", _WHEN),
        Column("current", "yes/no", "no", "written by export: true when no row of the file supersedes this "
               "one; checked on import"),
    ),
    prefix="criterion:", prefix_after="pass",
)

_PAIR_LABELS = Schema(
    "pair_labels", "CSV, JSONL, JSON array, Parquet",
    "One row per human preference between two answers shown side by side. " + _HISTORY + " A "
    "`judgelab import labels` file with these columns is read as pair labels too.",
    (
        Column("pair_label_id", "whole number", "with `supersedes`", "the row's id within the file"),
        Column("supersedes", "whole number", "no", "the `pair_label_id` of the earlier preference (same rater "
               "and answers) this row replaces"),
        Column("rater", "id", "yes", "the rater's name"),
        Column("answer_a", "id", "yes", "the answer shown on the left", "an answer in the database"),
        Column("answer_b", "id", "yes", "the answer shown on the right", "an answer in the database"),
        Column("preference", "whole number", "yes", "preference from the left answer's point of view",
               "+2 left much better, +1, 0 equal, -1, -2 right much better"),
        Column("comment", "text", "no", "the rater's comment"),
        Column("seconds", "number", "no", "seconds the rater spent on the item", "0 or more"),
        Column("source", "text", "no", "as for labels", "`app`, `import`, `simulated`"),
        Column("created_at", _TS, "no", "when the preference was given", _WHEN),
        Column("current", "yes/no", "no", "written by export; checked on import"),
    ),
)

_AUDITS = Schema(
    "audits", "CSV, JSONL, JSON array, Parquet",
    "One row per padding audit: a rater's answer to \"does the longer rewrite add anything a reader "
    "could act on?\". " + _HISTORY + " The length ratio is recomputed from the two answers.",
    (
        Column("audit_id", "whole number", "with `supersedes`", "the row's id within the file"),
        Column("supersedes", "whole number", "no", "the `audit_id` of the earlier audit (same rater and "
               "answers) this row replaces"),
        Column("rater", "id", "yes", "the rater's name"),
        Column("original_id", "id", "yes", "the original answer", "an answer in the database"),
        Column("rewrite_id", "id", "yes", "its rewrite (e.g. the padded variant)", "an answer in the database"),
        Column("adds_content", "yes/no", "yes", "whether the rewrite adds content"),
        Column("note", "text", "no", "the rater's note"),
        Column("seconds", "number", "no", "seconds the rater spent on the item", "0 or more"),
        Column("source", "text", "no", "where the audit came from (stored as `import`)", "`app`, `import`"),
        Column("created_at", _TS, "no", "when the audit was given", _WHEN),
        Column("current", "yes/no", "no", "written by export; checked on import"),
    ),
)

_JUDGEMENTS = Schema(
    "judgements", "CSV, JSONL, JSON array, Parquet",
    "One row per judge reply: a score of one answer (pointwise) or a verdict on two (pairwise, with "
    "`answer_b_id`). A reply that did not parse has no score and says why in `parse_error`; a call "
    "that failed with no reply has `error`. Both are counted, never scored. Pairwise scores are from "
    "`answer_id`'s point of view whichever answer was shown first: `order` says which was.",
    (
        Column("run_id", "id", "no", "the judge run (default `import:<judge_model>`)"),
        Column("call_id", "text", "no", "the planned call within the run (judgelab's own runs write it); one "
               "row per run and call"),
        Column("judge_model", "id", "yes", "the judge model"),
        Column("judge_family", "id", "no", "the judge's own model family"),
        Column("format", "text", "yes", "the scoring format",
               "`binary`, `likert5`, `numeric100`, `pairwise5`, `anchored`, `tournament`, or a declared scale"),
        Column("scale", "JSON", "for a declared scale no stored rubric declares", "the declaration of a format "
               "that is not in the catalogue (a judge spec's 1-10), written by export",
               '`{"name": "mt10", "low": 1, "high": 10, "step": 1}`'),
        Column("answer_id", "id", "yes", "the answer scored; for pairwise, the answer the score is about",
               "an answer in the database, or `<pair>:a`/`<pair>:b` (and their probe variants `~...`) of a "
               "stored pair"),
        Column("answer_b_id", "id", "pairwise formats", "the other answer of a pairwise verdict", "as `answer_id`"),
        Column("order", "text", "no", "pairwise: which answer was shown first (default AB)",
               "`AB` (`answer_id` first), `BA` (`answer_b_id` first)"),
        Column("probe", "text", "no", "the probe the call belongs to"),
        Column("arm", "text", "no", "the probe's arm"),
        Column("trial", "whole number", "no", "the trial (repeat) number"),
        Column("score", "number", "score, pass, parse_error or error", "the parsed score; pairwise: the verdict "
               "for `answer_id` (+2 much better .. -2 much worse)", "the format's range"),
        Column("pass", "yes/no", "no", "the pass verdict of a pointwise score (default: the rubric's rule when "
               "the format is the rubric's scale)"),
        Column("parse_error", "text", "no", "why the reply did not parse (then no score)"),
        Column("error", "text", "no", "why the call failed with no reply (then no score)"),
        Column("raw", "text", "no", "the reply, verbatim"),
        Column("input_tokens", "whole number", "no", "prompt tokens billed"),
        Column("output_tokens", "whole number", "no", "completion tokens billed"),
        Column("cost_usd", "number", "no", "money the call spent"),
        Column("latency_s", "number", "no", "seconds the call took"),
        Column("meta", "JSON object", "no", "the probe's design facts (target answer, variant, lengths)"),
    ),
)

_VERDICTS = Schema(
    "verdicts", "CSV, JSONL, JSON array, Parquet",
    "One row per pair and order shown: another tool's pairwise verdicts on pairs imported with "
    "`judgelab import pairs`. Stored as pairwise judgements (`pairwise5`: +1 the first-shown answer "
    "better, -1 the second, 0 a tie) of `<pair_id>:a` against `<pair_id>:b`, so `judgelab position`, "
    "`calibrate` and `formats` read them like the position probe's own. The export holds the verdicts of "
    "imported verdict runs and of the position probe on stored pairs (a verdict's strength, as in `+2`, "
    "and other probes' calls are in the judgements export).",
    (
        Column("pair_id", "id", "yes", "the pair", "a pair in the database"),
        Column("judge_model", "id", "yes", "the judge model"),
        Column("shown_first", "text", "yes", "which of the pair's answers the judge saw first", "`a`, `b`"),
        Column("winner", "text", "no", "the judge's verdict; empty when its reply did not parse "
               "(a parse failure)", "`a`, `b`, `tie`, or empty"),
        Column("raw", "text", "no", "the judge's reply, verbatim"),
        Column("trial", "whole number", "no", "the repeat number, when a pair was judged more than once "
               "in one order"),
        Column("parse_error", "text", "no", "why the reply did not parse (default: no verdict in the reply)"),
        Column("judge_family", "id", "no", "the judge's own model family"),
        Column("run_id", "id", "no", "the judge run (default `import:<judge_model>`)"),
    ),
)

_D, _I = "designs[].", "designs[].items[]."
_A, _B, _X = "active_designs[].", "active_designs[].batches[].", "active_designs[].batches[].draws[]."
_DESIGNS = Schema(
    "designs", "JSON",
    "Every sample design of the project (`judgelab design --apply`) with the probability each of its "
    "answers had of being drawn, and every active design (`judgelab design --active`) with each batch's "
    "probabilities: labels drawn by a design are not a simple random sample, and `judgelab calibrate` "
    "reads them with these. Export it with the labels when a project moves: a project rebuilt from its "
    "exports then estimates as the original did. One JSON object with the arrays `designs` and "
    "`active_designs`; keys, not columns. Written by `judgelab export designs`, not by hand.",
    (
        Column(f"{_D}design_id", "id", "yes", "the design (an active design's batch: `<active>-b<k>`)"),
        Column(f"{_D}params", "JSON", "yes", "the design's inputs, as it was drawn"),
        Column(f"{_D}summary", "JSON", "yes", "its expected precision and hours"),
        Column(f"{_D}created_at", _TS, "no", "when it was drawn", _WHEN),
        Column(f"{_D}applied_at", _TS, "no", "when it was given to raters (empty: drafted only)", _WHEN),
        Column(f"{_I}answer_id", "id", "yes", "a sampled answer", "an answer in the database"),
        Column(f"{_I}stratum", "text", "yes", "its stratum"),
        Column(f"{_I}inclusion_prob", "number", "yes", "its chance of being drawn", "in (0, 1]"),
        Column(f"{_I}weight", "number", "yes", "its design weight (1 / inclusion_prob)", "above 0"),
        Column(f"{_I}n_raters", "whole number", "yes", "raters the design gives it", "1 or more"),
        Column(f"{_A}design_id", "id", "yes", "the active design"),
        Column(f"{_A}params", "JSON", "yes", "its inputs: target, judge run, floor, plan"),
        Column(f"{_A}created_at", _TS, "no", "when batch 1 was drawn", _WHEN),
        Column(f"{_B}batch", "whole number", "yes", "the batch number", "1, 2, ... in order"),
        Column(f"{_B}draw_id", "id", "yes", "the design holding the batch's sampled answers", "a design in the file"),
        Column(f"{_B}weight", "number", "yes", "the batch's weight in the estimate, fixed before its draw", "above 0"),
        Column(f"{_B}expected_labels", "number", "yes", "its expected new labels", "0 or more"),
        Column(f"{_B}summary", "JSON", "yes", "facts about the batch: floor, probabilities' range, planned variance"),
        Column(f"{_B}created_at", _TS, "no", "when it was drawn", _WHEN),
        Column(f"{_X}answer_id", "id", "yes", "a pool answer (every batch holds the whole pool)",
               "an answer in the database"),
        Column(f"{_X}unit", "id", "yes", "its sampling unit: the answer, or its task when paired"),
        Column(f"{_X}inclusion_prob", "number", "yes", "its chance of being drawn in this batch", "in (0, 1]"),
        Column(f"{_X}known", "yes/no", "yes", "labelled before the batch (drawn for sure)", "`true`, `false`"),
        Column(f"{_X}drawn", "yes/no", "yes", "drawn in this batch", "`true`, `false`"),
        Column(f"{_X}pred_pass", "number", "yes", "the predicted human pass rate the estimate corrects", "in [0, 1]"),
        Column(f"{_X}pred_score", "number", "no", "the predicted human score"),
        Column(f"{_X}judge_pass", "number", "yes", "the judge's pass verdict", "in [0, 1]"),
        Column(f"{_X}judge_score", "number", "no", "the judge's score"),
        Column(f"{_X}flipped", "yes/no", "no", "the judge disagreed with itself on the answer (default false)",
               "`true`, `false`"),
    ),
)

_AUDIT_TRAIL = Schema(
    "audit_trail", "CSV, JSONL, Parquet",
    "One row per admin action, oldest first: who imported, assigned, revoked, adjudicated, paused or "
    "resumed a rater, withheld or gave back an answer, exported, copied the project or changed a setting, "
    "and when (docs/admins/audit.md). Raters' own labels are not here: the labels export holds them. "
    "Export only: `judgelab import` does not read it.",
    (
        Column("entry_id", "whole number", "yes", "the entry's number, in the order the actions were done"),
        Column("done_at", _TS, "yes", "when the action was done", _WHEN),
        Column("actor", "text", "yes", "who did it", "`cli:<os user>` (a command), `admin:<name>` (an admin "
               "page), `os:<os user>` (a program of one's own)"),
        Column("action", "text", "yes", "what was done", "`import`, `gold import`, `assign`, `design`, "
               "`rater add`, `rater reissue`, `revoke`, `pause`, `resume`, `adjudicate`, `withhold`, `mask`, "
               "`clear`, `setting`, `export`, `db copy`"),
        Column("target", "text", "no", "what it was done to: a rater, an answer, a file, a setting "
               "(`scope:key`), a queue kind"),
        Column("detail", "JSON object", "yes", "the facts kept with it: counts per kind or rater, reasons, "
               "a setting's new and old value"),
    ),
)

SCHEMAS: dict[DataKind, Schema] = {
    s.kind: s for s in (_RUBRIC, _ANSWERS, _PAIRS, _LABELS, _PAIR_LABELS, _AUDITS, _JUDGEMENTS, _VERDICTS, _DESIGNS,
                        _AUDIT_TRAIL)
}
"""The schema of each kind, in :data:`DATA_KINDS` order."""


def schemas_markdown() -> str:
    """Every schema as the README's tables, one section per kind."""
    return "\n\n".join(SCHEMAS[kind].markdown() for kind in DATA_KINDS) + "\n"
