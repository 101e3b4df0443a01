"""A scale is data: a rubric declares low, high, step and labels; bad declarations get one clear error.

Declared scales round-trip (declaration -> stored JSON -> declaration, and rubric TOML -> database
-> rubric), labels import on the declared grid (a mean of several people on the finer grid, with
``n_raters``), and export -> re-import is lossless.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgelab.labeler.errors import InputError
from judgelab.labeler.exports import export_table
from judgelab.labeler.importers import import_file, parse_rubric
from judgelab.labeler.scales import FormatSpec, ScaleError, declare_scale, format_spec, scale_from_dict
from judgelab.labeler.store import Store

RUBRIC = """\
id = "{rid}"
version = 1
name = "Correctness"
pass_rule = "Right answers pass."
pass_threshold = {threshold}
author = {{ kind = "human", name = "team" }}

[scale]
{scale}

[[criteria]]
id = "correct"
name = "Correct"
description = "The answer is right."
"""
CORRECT3 = 'name = "correct3"\nlow = 0\nhigh = 2\nstep = 1\nlabels = { 0 = "wrong", 1 = "partly right", 2 = "right" }'
ANSWERS = "task_id,prompt,answer_id,family,model,text\n" + "".join(
    f"T{i},Question {i},A{i},fam{i % 2},m{i % 2},Answer {i}.\n" for i in range(1, 5))


def _rubric(tmp_path: Path, scale: str = CORRECT3, threshold: str = "1", rid: str = "r") -> Path:
    path = tmp_path / f"{rid}.toml"
    path.write_text(RUBRIC.format(scale=scale, threshold=threshold, rid=rid))
    return path


@st.composite
def scales(draw: st.DrawFn) -> FormatSpec:
    """A valid declared scale: a low, a step from a few decimals, a whole number of steps, some labels."""
    low = draw(st.integers(-5, 5)) * draw(st.sampled_from([1, 0.5, 0.25]))
    step = draw(st.sampled_from([1, 0.5, 0.25, 2, 5, 0.1]))
    n = draw(st.integers(1, 30))
    # The name follows the grid: one name never means two scales in one process.
    name = "s_" + f"{low:g}_{n}_{step:g}".replace("-", "m").replace(".", "p")
    spec = declare_scale(name, low, low + n * step, step)
    chosen = draw(st.lists(st.sampled_from(spec.levels), unique=True, max_size=4))
    labelled = sorted(chosen)
    name += "_" + "_".join(str(spec.levels.index(level)) for level in labelled)
    return declare_scale(name, spec.low, spec.high, spec.step or 1, {level: f"level {level:g}" for level in labelled})


@given(scales())
def test_a_declaration_round_trips_through_its_stored_form(spec: FormatSpec) -> None:
    again = scale_from_dict(spec.as_dict())
    assert again == spec
    assert all(spec.on_grid(level) for level in spec.levels)
    assert spec.levels[0] == spec.low and spec.levels[-1] == spec.high
    assert len(spec.levels) == round((spec.high - spec.low) / (spec.step or 1)) + 1


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=scales(), pick=st.integers(0, 10**6))
def test_a_declared_rubric_round_trips_through_the_database(
    spec: FormatSpec, pick: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("rt")
    labels = ", ".join(f'"{level:g}" = "{text}"' for level, text in spec.labels)
    decl = (f'name = "{spec.name}"\nlow = {spec.low!r}\nhigh = {spec.high!r}\nstep = {spec.step!r}\n'
            f"labels = {{ {labels} }}")
    threshold = spec.levels[pick % len(spec.levels)]
    rubric = parse_rubric(_rubric(folder, decl, repr(threshold)))
    assert rubric.declared_scale == spec and rubric.pass_threshold == threshold
    store = Store(folder / "p.duckdb")
    store.migrate()
    store.add_rubric(rubric)
    back = store.rubric("r", 1)
    assert back == rubric and back.content_hash() == rubric.content_hash()
    assert format_spec(spec.name) == spec
    assert back.passes(threshold) and (threshold == spec.low or not back.passes(spec.low))


@pytest.mark.parametrize(("scale", "threshold", "column", "words"), [
    ('name = "bad1"\nlow = 2\nhigh = 2\nstep = 1', "2", "scale.low", "is not below high"),
    ('name = "bad2"\nlow = 5\nhigh = 1\nstep = 1', "2", "scale.low", "is not below high"),
    ('name = "bad3"\nlow = 0\nhigh = 10\nstep = 3', "3", "scale.step", "does not divide the range 0-10"),
    ('name = "bad4"\nlow = 0\nhigh = 2\nstep = 1\nlabels = { "1.5" = "half" }', "1", "scale.labels.1.5",
     "off the grid 0, 1, 2"),
    ('name = "bad5"\nlow = 0\nhigh = 2\nstep = 1', "3", "pass_threshold", "outside the bad5 scale"),
    ('name = "bad6"\nlow = 0\nhigh = 2\nstep = 1', "0.5", "pass_threshold", "off the bad6 scale's grid"),
    ('name = "bad7"\nlow = 0\nhigh = 2\nstep = 0', "1", "scale.step", "is not positive"),
    ('name = "likert5"\nlow = 1\nhigh = 5\nstep = 1', "3", "scale.name", "is a built-in format"),
    ('name = "bad8"\nlow = 0\nhigh = 2', "1", "scale.step", "missing key 'scale.step'"),
])
def test_each_bad_declaration_is_one_clear_error(
    tmp_path: Path, scale: str, threshold: str, column: str, words: str
) -> None:
    path = _rubric(tmp_path, scale, threshold)
    with pytest.raises(InputError) as err:
        parse_rubric(path)
    text = str(err.value)
    assert words in text and column in text and str(path) in text, text


def test_a_declared_scale_needs_a_pass_threshold(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text(RUBRIC.format(scale=CORRECT3, threshold="1", rid="r").replace("pass_threshold = 1\n", ""))
    with pytest.raises(InputError, match="needs a pass_threshold"):
        parse_rubric(path)


def test_one_name_cannot_mean_two_scales(tmp_path: Path) -> None:
    declare_scale("twice", 0, 2, 1)
    from judgelab.labeler.scales import register_scale
    register_scale(declare_scale("twice", 0, 2, 1))
    with pytest.raises(ScaleError, match="already declared as 0, 1, 2"):
        register_scale(declare_scale("twice", 0, 4, 1))


def test_labels_import_on_the_grid_and_means_with_their_raters(store: Store, tmp_path: Path) -> None:
    import_file(store, "rubric", _rubric(tmp_path))
    (tmp_path / "answers.csv").write_text(ANSWERS)
    import_file(store, "answers", tmp_path / "answers.csv")
    off = tmp_path / "off.csv"
    off.write_text("rater,answer_id,score\nann,A1,2\nann,A2,1.5\n")
    with pytest.raises(InputError) as err:
        import_file(store, "labels", off)
    assert "row 2" in str(err.value) and "score" in str(err.value)
    assert "off the correct3 scale's grid 0, 1, 2 (0-2 by 1)" in str(err.value)
    assert "n_raters" in str(err.value)
    bad_mean = tmp_path / "bad_mean.csv"
    bad_mean.write_text("rater,answer_id,score,n_raters\nexperts,A1,1.5,3\n")
    with pytest.raises(InputError, match="is not a mean of 3 scores"):
        import_file(store, "labels", bad_mean)
    means = tmp_path / "means.csv"
    means.write_text("rater,answer_id,score,n_raters\nexperts,A1,1.6666666666666667,3\nexperts,A2,0.5,2\n"
                     "experts,A3,2,3\nexperts,A4,0,1\n")
    import_file(store, "labels", means)
    out = export_table(store, "labels")
    assert list(out["n_raters"]) == [3, 2, 3, 1]
    assert list(out["score"]) == pytest.approx([5 / 3, 0.5, 2, 0])
    assert list(out["pass"]) == [True, False, True, False]
    again = tmp_path / "again.csv"
    out.to_csv(again, index=False)
    summary = import_file(store, "labels", again)
    assert summary.added == {"labels": 0} or not summary.added.get("labels")
    other = Store(tmp_path / "other.duckdb")
    other.migrate()
    import_file(other, "rubric", _rubric(tmp_path))
    import_file(other, "answers", tmp_path / "answers.csv")
    import_file(other, "labels", again)
    assert export_table(other, "labels").drop(columns=["label_id", "created_at"]).equals(
        out.drop(columns=["label_id", "created_at"]))




def test_a_judgement_on_a_scale_no_rubric_declares_needs_its_declaration(store: Store, tmp_path: Path) -> None:
    import_file(store, "rubric", _rubric(tmp_path))
    (tmp_path / "answers.csv").write_text(ANSWERS)
    import_file(store, "answers", tmp_path / "answers.csv")
    bare = tmp_path / "bare.csv"
    bare.write_text("answer_id,judge_model,format,score\nA1,m,judge9,4\n")
    with pytest.raises(InputError, match="unknown format 'judge9'") as err:
        import_file(store, "judgements", bare)
    assert "row 1" in str(err.value) and "scale column" in str(err.value)
    decl = '"{""name"": ""judge9"", ""low"": 1, ""high"": 9, ""step"": 1}"'
    off = tmp_path / "off.csv"
    off.write_text(f"answer_id,judge_model,format,score,scale\nA1,m,judge9,4.5,{decl}\n")
    with pytest.raises(InputError, match="off the judge9 scale's grid"):
        import_file(store, "judgements", off)
    good = tmp_path / "good.csv"
    good.write_text(f"answer_id,judge_model,format,score,scale\nA1,m,judge9,4,{decl}\n")
    import_file(store, "judgements", good)
    assert "judge9" in [s.name for s in store.declared_scales()]
    assert export_table(store, "judgements")["score"].tolist() == [4.0]


@settings(max_examples=8, deadline=None)
@given(spec=scales(), pick=st.integers(0, 10**6))
def test_a_declared_rubric_exports_as_toml_that_imports_as_the_same_rubric(spec: FormatSpec, pick: int) -> None:
    import tempfile

    from judgelab.labeler.exports import rubric_toml
    from judgelab.labeler.models import Criterion, Rubric

    rubric = Rubric("r", 1, "R", spec.name, "pass", (Criterion("c", "C", "d"),),
                    pass_threshold=spec.levels[pick % len(spec.levels)], declared_scale=spec)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rubric.toml"
        path.write_text(rubric_toml(rubric))
        again = parse_rubric(path)
    assert again == rubric and again.content_hash() == rubric.content_hash()
