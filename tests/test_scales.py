"""One catalogue of scoring formats: every reader of a score agrees with it.

For each format, the extreme values the catalogue allows come out of the judge's parser,
go through the judgements importer and are stored unchanged; one step beyond either end is
refused by both. Then they reach the calibration report: judgements of every format, parsed
and imported for a small pool, are read by the report's format diagnostics (and, for the
comparative formats, its order-swapped position section) at both ends of the catalogue's range.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from judgelab.calibration import formats
from judgelab.calibration.calibrate import (
    FormatRow,
    ReportOptions,
    format_rows,
    load_calibration_data,
    position_results,
)
from judgelab.labeler.errors import InputError
from judgelab.labeler.importers import import_file
from judgelab.labeler.scales import FORMAT_SPECS, FORMATS, PAIRWISE_FORMATS, POINTWISE_FORMATS, SCALES
from judgelab.labeler.store import Store
from tests.conftest import DATA

ANSWERS = (
    "task_id,prompt,answer_id,family,model,text\n"
    "T1,Reset my password,T1-a,fam1,m1,Use the reset link.\n"
    "T1,Reset my password,T1-b,fam2,m2,Click Forgot password.\n"
)
_VERDICT_WORD = {v: k for k, v in formats.PAIRWISE_VERDICTS.items()}


def _reply(fmt: str, value: float) -> str:
    if fmt == "binary":
        return f"Fine.\nVERDICT: {'ACCEPT' if value else 'REJECT'}"
    if fmt in PAIRWISE_FORMATS:
        return f"Fine.\nVERDICT: {_VERDICT_WORD[int(value)]}"
    return f"Fine.\nVERDICT: {int(value)}"


def test_the_catalogue_is_whole() -> None:
    assert set(FORMATS) == set(POINTWISE_FORMATS) | set(PAIRWISE_FORMATS)
    assert SCALES == POINTWISE_FORMATS
    assert formats.FORMATS is FORMATS
    assert set(formats.FORMAT_LINES) == set(FORMATS)


@pytest.mark.parametrize("fmt", FORMATS)
def test_parser_reaches_both_ends_and_no_further(fmt: str) -> None:
    spec = FORMAT_SPECS[fmt]
    for value in spec.range:
        assert formats.parse(fmt, _reply(fmt, value)).value == value
    if fmt in ("likert5", "numeric100"):
        for outside in (spec.low - 1, spec.high + 1):
            result = formats.parse(fmt, f"VERDICT: {int(outside)}")
            assert result.value is None and result.error


@pytest.mark.parametrize("fmt", FORMATS)
def test_importer_takes_the_catalogue_range(fmt: str, store: Store, tmp_path: Path) -> None:
    (tmp_path / "answers.csv").write_text(ANSWERS)
    import_file(store, "answers", tmp_path / "answers.csv")
    spec = FORMAT_SPECS[fmt]
    pair = "T1-b" if spec.kind == "pairwise" else ""
    # Each end from its own judge model (one judgement per answer, format and judge).
    for k, value in enumerate(spec.range):
        path = tmp_path / f"ok{k}.csv"
        path.write_text(f"answer_id,judge_model,format,score,answer_b_id\nT1-a,judge{k},{fmt},{value:g},{pair}\n")
        import_file(store, "judgements", path)
    assert sorted(store.export_frame("judgements")["value"]) == sorted(spec.range)
    (tmp_path / "bad.csv").write_text(
        f"answer_id,judge_model,format,score,answer_b_id\nT1-a,judge9,{fmt},{spec.high + 1:g},{pair}\n"
    )
    with pytest.raises(InputError) as err:
        import_file(store, "judgements", tmp_path / "bad.csv")
    assert err.value.column == "score" and err.value.row == 1


# -- every format reaches the report -----------------------------------------------------------

N_TASKS = 4
JUDGE = "judge1"
# Which answer of each task the judge prefers, and how strongly (a comparative verdict, A = "a"):
# both ends of the catalogue's range, and one step inside it.
PREFERENCE = (2.0, -2.0, 2.0, 1.0)


def _pool(tmp_path: Path) -> None:
    rows = [f"T{k},Ticket {k},T{k}-{s},fam{i + 1},m{i + 1},Reply {s} to ticket {k}."
            for k in range(N_TASKS) for i, s in enumerate("ab")]
    (tmp_path / "answers.csv").write_text("task_id,prompt,answer_id,family,model,text\n" + "\n".join(rows) + "\n")


def _import(store: Store, tmp_path: Path, fmt: str) -> None:
    """The pool, the bundled rubric, one rater's labels and the judge's verdicts in ``fmt``.

    The rater gives the answer the judge prefers the top of the rubric's scale and the other
    the bottom, so agreement with the humans is perfect when the report reads every value in
    the direction the catalogue gives it.
    """
    _pool(tmp_path)
    import_file(store, "answers", tmp_path / "answers.csv")
    import_file(store, "rubric", DATA / "rubric.toml")
    rubric_low, rubric_high = FORMAT_SPECS[store.rubric().scale].range  # type: ignore[union-attr]
    labels = ["answer_id,rater,score"]
    judged = ["answer_id,answer_b_id,order,judge_model,format,score"]
    spec = FORMAT_SPECS[fmt]
    for k, pref in enumerate(PREFERENCE):
        a, b = f"T{k}-a", f"T{k}-b"
        labels += [f"{a},r1,{rubric_high if pref > 0 else rubric_low:g}",
                   f"{b},r1,{rubric_low if pref > 0 else rubric_high:g}"]
        if spec.kind == "pairwise":
            # Both orders: the same preference for `a`, with `a` shown first (AB), then second (BA).
            # A file states a verdict about answer_id whichever was shown first (issue 13).
            for order in ("AB", "BA"):
                judged.append(f"{a},{b},{order},{JUDGE},{fmt},{formats.parse(fmt, _reply(fmt, pref)).value:g}")
        else:
            high, low = (formats.parse(fmt, _reply(fmt, v)).value for v in spec.range[::-1])
            judged += [f"{a},,,{JUDGE},{fmt},{high if pref > 0 else low:g}",
                       f"{b},,,{JUDGE},{fmt},{low if pref > 0 else high:g}"]
    (tmp_path / "labels.csv").write_text("\n".join(labels) + "\n")
    (tmp_path / "judged.csv").write_text("\n".join(judged) + "\n")
    import_file(store, "labels", tmp_path / "labels.csv")
    import_file(store, "judgements", tmp_path / "judged.csv")


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_reaches_the_report_on_the_catalogue_range(fmt: str, store: Store, tmp_path: Path) -> None:
    _import(store, tmp_path, fmt)
    spec = FORMAT_SPECS[fmt]
    data = load_calibration_data(store, f"import:{JUDGE}")
    opts = ReportOptions(n_resamples=20)
    stored = data.pairwise if spec.kind == "pairwise" else data.pointwise
    assert (stored["status"] == "parsed").all() and (stored["format"] == fmt).all()
    assert (stored["value"].min(), stored["value"].max()) == spec.range
    rows, skipped = format_rows(data, opts=opts)
    row: FormatRow = next(r for r in rows if r.format == fmt)
    d = row.diagnostics
    assert row.kind == ("comparative" if spec.kind == "pairwise" else "pointwise"), skipped
    assert d.n == 2 * N_TASKS and d.n_prompts == N_TASKS
    assert d.parse_rate.estimate == 1.0 and d.parse_rate.n == len(stored)
    # Within every task the judge ranks the answers as the rater does: perfect agreement.
    assert d.tau_a.estimate == pytest.approx(1.0) and d.top1.estimate == pytest.approx(1.0)
    if spec.kind == "pointwise":
        assert d.distinct_values == 2
        return
    # A verdict at either end of -2..2 is a certain win or loss (win probability 1 or 0) and the
    # step inside it 0.75 or 0.25: four distinct candidate scores.
    assert d.distinct_values == 4
    assert "tournament scoring" in row.score_rule and "both orders judged for 4 of 4 pairs" in row.slot_handling
    (position,) = position_results(data, opts)
    assert position.format == fmt and position.n_pairs == position.n_both_orders == N_TASKS
    assert position.decomposition is not None
    # q = (v_fwd - v_rev) / 2 per pair, in verdict points: the preference itself; no slot bias.
    assert position.decomposition.q.estimate == pytest.approx(sum(PREFERENCE) / N_TASKS)
    assert position.decomposition.b.estimate == pytest.approx(0.0)
