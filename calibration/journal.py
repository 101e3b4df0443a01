"""A write-ahead journal of judge results, so that no answered call is ever paid for twice.

The runner writes results to the database in small batches (one transaction each, a fraction
of a second apart): writing every reply in its own transaction would cost more than the calls.
A process killed between a reply and its batch's commit would lose that reply and pay for it
again on the next run. The journal closes that gap:

* every result is appended to the execution's journal file (one ``os.write`` of a JSON line to
  a file opened ``O_APPEND``) *before* anything else happens to it, so it is in the operating
  system's hands the moment the reply has been read: a SIGKILL cannot lose it (a power cut
  can, until the database commit a fraction of a second later);
* when a batch commits, a ``{"done": [...]}`` line marks its entries as safe;
* a finished execution deletes its journal; a killed one leaves it behind, and the next run on
  the same database replays the entries that never reached it (:func:`recover`) before it
  decides which calls still need a reply.

Each execution holds an exclusive ``flock`` on its own file while it runs, so a run replays
only journals whose writer is dead, never one another process is still writing. Journals live
beside the database in ``<database>.journal/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from judgelab.labeler.store import JudgementRecord, JudgeRole, redact

try:  # POSIX: the lock that tells a live writer's journal from a dead one's
    import fcntl
except ImportError:  # pragma: no cover - Windows: no journal (the runner works as before)
    fcntl = None  # type: ignore[assignment]

__all__ = ["Journal", "journal_dir", "recover"]


def journal_dir(store: JudgeRole) -> Path:
    """Where ``store``'s journals live: ``<database>.journal/`` beside the file.

    A PostgreSQL database has no file: its journals live on this machine, under
    ``$XDG_STATE_HOME/judgelab/journals/`` (``~/.local/state``), one folder per database (a hash
    of its URL without the password), where a resume on this machine finds them.
    """
    url: str | None = getattr(store, "url", None)
    if url is not None:
        state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
        key = hashlib.sha256(redact(url).encode("utf-8")).hexdigest()[:16]
        return state / "judgelab" / "journals" / key
    path = Path(store.path)
    return path.with_name(path.name + ".journal")


def _line(obj: Any) -> bytes:
    return (json.dumps(obj, default=str, separators=(",", ":")) + "\n").encode("utf-8")


class Journal:
    """One execution's write-ahead journal (see the module docstring).

    Use :meth:`open`; ``None`` comes back where journals cannot be kept (no ``flock``).
    """

    def __init__(self, path: Path, fd: int) -> None:
        """Keep an open, locked journal file."""
        self.path = path
        self._fd: int | None = fd
        self._seq = 0
        self._pending: set[int] = set()
        self._lock = threading.Lock()

    @classmethod
    def open(cls, store: JudgeRole, run_id: str) -> Journal | None:
        """Create and lock a fresh journal for one execution of ``run_id``."""
        if fcntl is None:
            return None
        folder = journal_dir(store)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{run_id}.{os.getpid()}.{secrets.token_hex(4)}.jsonl"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return cls(path, fd)

    def append(self, records: Sequence[JudgementRecord]) -> list[int]:
        """Write ``records`` ahead (one write); returns their entry numbers for :meth:`done`."""
        if not records:
            return []
        with self._lock:
            first = self._seq
            self._seq += len(records)
            seqs = list(range(first, self._seq))
            # The record's own fields (a flat dataclass; ``meta`` is JSON already): ``asdict``'s
            # deep copy cost more than the rest of writing ahead.
            data = b"".join(_line({"seq": n, "record": r.__dict__}) for n, r in zip(seqs, records, strict=True))
            if self._fd is not None:
                os.write(self._fd, data)
            self._pending.update(seqs)
        return seqs

    def done(self, seqs: Iterable[int]) -> None:
        """Mark entries as committed to the database."""
        seqs = list(seqs)
        if not seqs:
            return
        with self._lock:
            self._pending.difference_update(seqs)
            if self._fd is not None:
                os.write(self._fd, _line({"done": seqs}))

    @property
    def pending(self) -> int:
        """Entries written ahead but not yet committed."""
        with self._lock:
            return len(self._pending)

    def close(self) -> None:
        """Release the journal; delete it when every entry reached the database.

        A journal with pending entries (the run failed before committing them) stays for the
        next run to replay.
        """
        with self._lock:
            fd, self._fd = self._fd, None
            if fd is None:
                return
            if not self._pending:
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
            os.close(fd)  # releases the lock


def _entries(path: Path) -> list[JudgementRecord]:
    """The entries of a journal file that no ``done`` line covers, in order."""
    records: dict[int, dict[str, Any]] = {}
    done: set[int] = set()
    for raw in path.read_bytes().splitlines():
        try:
            obj = json.loads(raw)
        except ValueError:
            continue  # the last line of a killed writer can be cut short: it never returned
        if "done" in obj:
            done.update(int(n) for n in obj["done"])
        elif "seq" in obj:
            records[int(obj["seq"])] = obj["record"]
    return [JudgementRecord(**records[n]) for n in sorted(records) if n not in done]


def recover(store: JudgeRole) -> int:
    """Replay the journals of dead executions into ``store``; returns the rows written.

    An answer whose call already has an answer in the database is skipped (its batch
    committed just before the process died); everything else is written as it was recorded.
    Journals of live executions (their lock is held) are left alone.
    """
    if fcntl is None:
        return 0
    folder = journal_dir(store)
    if not folder.is_dir():
        return 0
    written = 0
    for path in sorted(folder.glob("*.jsonl")):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its writer is alive
            if os.fstat(fd).st_nlink == 0:
                continue  # another run replayed and removed it while we waited
            written += _replay(store, _entries(path))
            path.unlink()
        finally:
            os.close(fd)
    return written


def _replay(store: JudgeRole, entries: list[JudgementRecord]) -> int:
    if not entries:
        return 0
    answered: dict[str, set[str]] = {}
    keep = []
    for record in entries:
        if record.error is None:
            have = answered.setdefault(record.run_id, store.answered_calls(record.run_id))
            if record.call_id in have:
                continue
            have.add(record.call_id)
        keep.append(record)
    return store.add_judgements(keep)
