"""The staged answers import stores exactly what the whole-file import stored (issue 53 point 1).

``judgelab import answers`` now stages the file in a private DuckDB database, checks plain rows as
set operations there and reads only the other rows with the Python checks. The same 2,000
generated answers (about 400 characters, names planted in every form the detector reads
through, plus rows the staging table cannot call plain: conversations, ids with spaces or
given as numbers, blank optional cells, parents, variants, a reference author) are imported
and what is stored is compared, column by column, with

* a digest of what judgelab stored for the same file before this change (frozen from ``main``
  at 2d91ec9 with :func:`_stored` over its import), and
* the whole-file path still in the code (:func:`judgelab.labeler.importers.parse_answers` and
  :meth:`judgelab.labeler.store.Store.add_pool`), for a readable difference when they part.
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from bench._answers import answers
from judgelab.labeler.errors import InputError
from judgelab.labeler.importers import import_file, parse_answers, read_rows
from judgelab.labeler.store import Staging, Store

#: sha256 of :func:`_stored` after ``judgelab import answers`` of :func:`_write` (2,000 rows) by the whole-file
#: import on main at 43e545d (the widened self-name rules, just before the staged import; 122eff69... at 2d91ec9,
#: before the rules changed what is masked). A change to the rules changes it: recompute it from the commit
#: before the change, never from the code under test.
MAIN_DIGEST = "dd0a088ebed606223203cb8adf72cd556a8eec225fa4c680e0ac5c53c27cdf7e"
N = 2_000
_ASK = {"role": "user", "content": "Is my refund through?"}


def _rows(n: int) -> list[dict[str, Any]]:
    """``n`` answer rows: generated texts, and every 50th or so a row the Python checks must read."""
    rows: list[dict[str, Any]] = []
    for i, text in enumerate(answers(n, seed=7)):
        family = ("claude", "gpt")[i % 2]
        row: dict[str, Any] = {"task_id": f"t{i // 4:05d}", "prompt": f"Ticket {i // 4}: refund?",
                               "answer_id": f"a{i:05d}", "family": family, "model": f"{family}-2", "text": text}
        if i % 97 == 5:  # a conversation naming its model
            del row["text"]
            row["messages"] = [_ASK, {"role": "assistant", "content": f"As {family}-2, I see it went through. {text}"}]
        elif i % 89 == 3:
            row["answer_id"] = f"  a{i:05d} "  # spaces the id check strips
        elif i % 83 == 7:
            row["variant"], row["parent_answer_id"] = "padded", f"a{i - 1:05d}"
        elif i % 79 == 1:
            row["category"] = "   "  # blank: no category
        if i // 4 == 11:
            row["reference_answer"], row["reference_author"] = "Yes, refunded.", "human:ann"
        rows.append(row)
    rows[8]["task_id"] = rows[9]["task_id"] = rows[10]["task_id"] = rows[11]["task_id"] = 77  # a number as an id
    return rows


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    if path.suffix == ".csv":
        columns = list(dict.fromkeys(k for r in rows for k in r if k != "messages"))
        with path.open("w", newline="", encoding="utf-8") as fh:
            out = csv.DictWriter(fh, columns)
            out.writeheader()
            out.writerows({k: v for k, v in r.items() if k != "messages"} for r in rows if "messages" not in r)
    else:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _stored(store: Store) -> list[list[Any]]:
    """Every stored task and answer as plain values (the random item ids and clock left out)."""
    with store.connection() as con:
        tasks = con.execute("SELECT task_id, prompt, category, reference_answer, reference_author_kind,"
                            " reference_author FROM tasks ORDER BY task_id").fetchall()
        found = con.execute("SELECT answer_id, task_id, family, model, variant, parent_answer_id, text, n_words,"
                            " n_chars, self_id_spans, transcript FROM answers ORDER BY answer_id").fetchall()
    return [list(r) for r in tasks] + [list(r) for r in found]


def _digest(rows: list[list[Any]]) -> str:
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()


def _engine_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail if the file is read by Python instead of DuckDB (a JSON-lines file DuckDB can read)."""
    def refused(self: Staging, rows: Any) -> None:
        raise AssertionError(f"{rows.file} was read by Python, not by DuckDB")

    monkeypatch.setattr(Staging, "stage_rows", refused)


@pytest.mark.both_backends
def test_staged_import_stores_byte_for_byte_what_the_whole_file_import_stored(
    tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = _write(tmp_path / "answers.jsonl", _rows(N))
    _engine_only(monkeypatch)
    summary = import_file(Store(db), "answers", file)
    assert summary.added == {"tasks": N // 4, "answers": N}
    got = _stored(Store(db))
    reference = Store(tmp_path / "reference.duckdb")
    reference.add_pool(*parse_answers(read_rows(file)), source_file=str(file))
    want = _stored(reference)
    assert len(got) == len(want)
    for mine, theirs in zip(got, want, strict=True):
        assert mine == theirs
    masked = [r for r in got if len(r) > 6 and r[9] != "[]"]
    assert len(masked) > 60  # the planted names and the conversations were found and masked
    assert _digest(got) == MAIN_DIGEST
    again = import_file(Store(db), "answers", file)  # the same file again changes nothing
    assert again.added == {"tasks": 0, "answers": 0} and again.unchanged == {"tasks": N // 4, "answers": N}


def test_a_csv_is_staged_and_stored_as_the_whole_file_import_stores_it(tmp_path: Path) -> None:
    file = _write(tmp_path / "answers.csv", _rows(400))
    import_file(Store(tmp_path / "new.duckdb"), "answers", file)
    reference = Store(tmp_path / "reference.duckdb")
    reference.add_pool(*parse_answers(read_rows(file)), source_file=str(file))
    assert _stored(Store(tmp_path / "new.duckdb")) == _stored(reference)


def test_parquet_is_read_by_duckdb_and_stored_as_the_whole_file_import_stores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{**r, "task_id": str(r["task_id"])} for r in _rows(400) if "messages" not in r]
    rows[3]["category"] = None
    file = tmp_path / "answers.parquet"
    pq.write_table(pa.Table.from_pylist(rows), file)
    _engine_only(monkeypatch)
    import_file(Store(tmp_path / "new.duckdb"), "answers", file)
    reference = Store(tmp_path / "reference.duckdb")
    reference.add_pool(*parse_answers(read_rows(file)), source_file=str(file))
    assert _stored(Store(tmp_path / "new.duckdb")) == _stored(reference)


def test_an_error_late_in_a_large_file_names_its_row_and_nothing_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _rows(N)
    rows[1_500]["family"] = "not an id"
    file = _write(tmp_path / "answers.jsonl", rows)
    _engine_only(monkeypatch)
    store = Store(tmp_path / "p.duckdb")
    with pytest.raises(InputError) as err:
        import_file(store, "answers", file)
    assert str(err.value).startswith(f"{file}, row 1501, column 'family': 'not an id' is not a valid id")
    assert store.answer_ids() == set()
