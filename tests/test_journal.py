"""The write-ahead journal: every result durable as it arrives, replayed after a kill."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from judgelab.calibration.journal import Journal, journal_dir, recover
from judgelab.labeler.store import JudgementRecord, Store


def _rec(call_id: str, *, error: str | None = None) -> JudgementRecord:
    return JudgementRecord(
        run_id="r1", call_id=call_id, cache_key=f"k-{call_id}", kind="pointwise", format="likert5",
        value=None if error else 4.0, error=error, raw=None if error else "VERDICT: 4",
        meta={"seq": int(call_id[1:])},
    )


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "j.duckdb")
    store.start_judge_run("r1", judge_kind="test", model="m", plan_hash="h", n_planned=5)
    return store


def test_a_finished_execution_leaves_no_journal(store: Store) -> None:
    journal = Journal.open(store, "r1")
    assert journal is not None
    seqs = journal.append([_rec("c0"), _rec("c1")])
    assert journal.pending == 2
    store.add_judgements([_rec("c0"), _rec("c1")])
    journal.done(seqs)
    assert journal.pending == 0
    journal.close()
    assert not journal.path.exists()


def test_a_killed_executions_entries_are_replayed_once(store: Store) -> None:
    journal = Journal.open(store, "r1")
    assert journal is not None
    first = journal.append([_rec("c0"), _rec("c1")])
    store.add_judgements([_rec("c0"), _rec("c1")])
    journal.done(first)
    # Answered but never committed: c2 and a failure on c3; c4 committed, its done line lost.
    journal.append([_rec("c2"), _rec("c3", error="HTTP 529")])
    journal.append([_rec("c4")])
    store.add_judgements([_rec("c4")])
    # The process dies: its lock goes with it (here: the descriptor is closed, the file stays),
    # and its last line was cut short mid-write.
    assert journal._fd is not None
    os.close(journal._fd)
    journal._fd = None
    with journal.path.open("ab") as fh:
        fh.write(b'{"seq": 9, "record": {"run_id": "r1", "call')
    assert recover(store) == 2  # c2 and c3; c4 is already answered, c0/c1 are done
    assert not journal.path.exists()
    rows = store.run_judgements("r1")
    assert sorted(rows["call_id"]) == ["c0", "c1", "c2", "c3", "c4"]
    assert rows.set_index("call_id").loc["c3", "status"] == "error"
    assert recover(store) == 0  # nothing twice


def test_a_live_executions_journal_is_left_alone(store: Store) -> None:
    journal = Journal.open(store, "r1")
    assert journal is not None
    journal.append([_rec("c0")])
    # Another run on the same database starts while this one still runs.
    assert recover(store) == 0 and journal.path.exists()
    journal.close()
    assert journal.path.exists(), "an entry never committed stays for the next run"
    assert recover(store) == 1
    assert journal_dir(store).is_dir() and not any(journal_dir(store).iterdir())


def test_the_lock_is_what_tells_live_from_dead(store: Store) -> None:
    journal = Journal.open(store, "r1")
    assert journal is not None
    with journal.path.open("rb") as fh, pytest.raises(BlockingIOError):
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    journal.close()


def test_replies_of_one_loop_turn_are_journalled_in_one_write_before_anything_waits(store: Store) -> None:
    """Group commit: results put in one turn of the event loop share one journal write.

    The write is made as the next turn starts (before the loop waits for a reply or a timer),
    and before the database or the progress sees them.
    """
    import asyncio

    from judgelab.calibration.runner._sink import Sink

    journal = Journal.open(store, "r1")
    assert journal is not None
    writes: list[int] = []
    append = journal.append

    def counted(records: Sequence[JudgementRecord]) -> list[int]:
        writes.append(len(records))
        return append(records)

    journal.append = counted  # type: ignore[method-assign]
    seen: list[int] = []
    sink = Sink(store, None, model="m", judge_family=None, flush_interval=3600, flush_size=10**6,
                on_write=lambda batch: seen.append(len(batch)), journal=journal)

    def entries() -> int:
        return sum(1 for line in journal.path.read_bytes().splitlines() if b'"seq"' in line)

    async def main() -> None:
        for n in range(3):  # three replies handled in the same loop turn
            await sink.put([_rec(f"c{n}")])
        assert entries() == 0 and writes == []
        await asyncio.sleep(0)  # the next turn starts: the group commit has run
        assert entries() == 3 and writes == [3]
        assert seen == [] and store.run_judgements("r1").empty  # database and progress come after
        await sink.put([_rec("c3")])
        await sink.flush()  # a flush writes ahead first, whatever the turn
        await sink.drain()
        assert writes == [3, 1] and seen == [4]

    asyncio.run(main())
    sink.close_journal()
    assert not journal.path.exists()  # every entry reached the database
    assert sorted(store.run_judgements("r1")["call_id"]) == ["c0", "c1", "c2", "c3"]
