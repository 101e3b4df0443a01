"""One catalogue of scoring formats: every reader of a score agrees with it.

For each format, the extreme values the catalogue allows come out of the judge's parser,
go through the judgements importer and are stored unchanged; one step beyond either end is
refused by both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from calibration import formats
from labeler.errors import InputError
from labeler.importers import import_file
from labeler.scales import FORMAT_SPECS, FORMATS, PAIRWISE_FORMATS, POINTWISE_FORMATS, SCALES
from labeler.store import Store

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
