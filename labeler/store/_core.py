"""Connection handling and migrations for the project database.

DuckDB lets one *process* hold a database file open for writing, and a connection
is not safe to use from two threads at once. judgelab has to let the app (many
Streamlit sessions, i.e. threads) and a CLI command (another process) write the same
file at the same time. The rules that make this work:

* every unit of work runs its statements in one transaction on the process's
  connection to the file; units are serialised by one re-entrant lock per file, and
  a nested unit on the same thread reuses the open transaction (so a method that
  calls another stays inside one transaction);
* the connection stays open between units, because opening the file costs 15-25 ms
  (measured in ``bench/store_open.py``) against 1-5 ms for a typical unit. It is
  released (closed, so the file lock is free) when the process has not used it for
  :data:`IDLE_RELEASE` seconds (the app server asks for five minutes: a rater's submit
  after a pause should not pay the open), and handed over when another process is waiting;
* a process that finds the file locked touches a *wait marker* next to it
  (``<db>.wait``) and retries every few milliseconds. The holder checks the marker
  after each unit: once it has held the file for :data:`HOLD_QUANTUM` seconds it
  releases it and pauses :data:`HANDOFF_PAUSE` seconds before opening again, so two
  busy processes take turns in slices instead of one starving the other;
* a process opens the file only while it holds the *turn lock*, an exclusive
  ``flock`` on a file next to it (``<db>.lock``), and lets the lock go only after its
  connection is closed. DuckDB 2 reads the database's headers *before* it takes its own
  lock on the file and does not read them again once it has it: a process whose open
  starts while another one is closing the file (checkpointing it and deleting the
  write-ahead log) gets the lock a moment later but works on the file as it was before
  that checkpoint. The holder's last commits then vanish, their ids are issued again, and
  the opener's own checkpoint makes the loss permanent (DuckDB 1.5 read the headers under
  its lock). With the turn lock no open starts before the previous holder has closed
  (``tests/reliability/test_handoff.py``). The kernel drops the lock with the process, so
  a crash leaves nothing to clean up. Programs that open the file without a
  :class:`~judgelab.labeler.store.Store` are outside this protocol;
* a caller that cannot get the file for ``lock_timeout`` seconds sees a
  :class:`~judgelab.labeler.errors.StoreError`.

Every committed unit is durable when it returns (DuckDB writes and syncs its
write-ahead log at commit), so keeping the connection open costs nothing on a crash.
"""

from __future__ import annotations

import atexit
import os
import random
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: DuckDB's own lock is all there is
    fcntl = None  # type: ignore[assignment]

import duckdb
import pandas as pd

from judgelab.labeler.errors import InputError, StoreError
from judgelab.labeler.store._backend import (
    PORTABLE,
    UNIT_LOCK,
    PgConnection,
    close_pg_pools,
    is_postgres,
    pg_connection,
    plain_pg_error,
    put_pg_connection,
    redact,
)

DEFAULT_DB = "judgelab.duckdb"
_MIGRATION_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")

def score_answered(alias: str) -> str:
    """SQL: whether the ``score`` assignment ``alias`` is answered (labelled or flagged by its rater).

    Rows written by the app name their assignment (migration 002); rows without one (imports)
    count for the same rater and answer, so outside labels show as progress too.
    """
    # Two EXISTS, not one with an OR inside: the engines turn each into a hash semi-join, while the
    # OR kept the subquery correlated, one scan of every label per assignment (88 s for the Overview
    # at 100,000 labels; bench/size_flat.py).
    return (f"(EXISTS (SELECT 1 FROM labels {alias}_l WHERE {alias}_l.assignment_id = {alias}.assignment_id)"
            f" OR EXISTS (SELECT 1 FROM labels {alias}_m WHERE {alias}_m.assignment_id IS NULL"
            f" AND {alias}_m.rater_id = {alias}.rater_id AND {alias}_m.answer_id = {alias}.answer_id"
            f" AND {alias}_m.source <> 'adjudicated'))")


#: The ``score`` assignments nobody will answer: held by a revoked rater who had not labelled
#: (or flagged) the answer. They stay as history but no longer count as an answer's raters, so
#: exactly-k and pull mode give the answer to someone else. The label check runs only on revoked
#: raters' rows, so the query stays cheap whatever the number of labels.
DEAD_SCORE_ASSIGNMENTS = f"""
    SELECT d.assignment_id FROM assignments d JOIN raters dr ON dr.rater_id = d.rater_id
    WHERE d.kind = 'score' AND dr.revoked_at IS NOT NULL AND NOT {score_answered("d")}
"""

#: Keeps only the raters' current labels of a query over ``labels l``: a label is current when
#: no other row supersedes it, and the window guards against two unsuperseded rows of one
#: (rater, answer, rubric version) (e.g. an import and an app label): the newest wins. An
#: admin's adjudicated label (``source = 'adjudicated'``, :mod:`judgelab.labeler.store._review`) is not a
#: rater's label and is left out, so no agreement figure counts the adjudicator as a rater. A label
#: of a gold item or attention check (migration 014) is no label of the pool and is left out too.
CURRENT_LABEL_RULE = """
    WHERE l.source <> 'adjudicated'
      AND l.answer_id NOT IN (SELECT answer_id FROM quality_items)
      AND NOT EXISTS (SELECT 1 FROM labels s WHERE s.supersedes = l.label_id)
    QUALIFY row_number() OVER (
        PARTITION BY l.rater_id, l.answer_id, l.rubric_id, l.rubric_version
        ORDER BY l.created_at DESC, l.label_id DESC) = 1
"""

#: :data:`CURRENT_LABEL_RULE` without ``QUALIFY`` (PostgreSQL has none): a label is current when
#: no newer row of the same rater, answer and rubric version passes the same filter.
CURRENT_LABEL_RULE_PORTABLE = """
    WHERE l.source <> 'adjudicated'
      AND l.answer_id NOT IN (SELECT answer_id FROM quality_items)
      AND NOT EXISTS (SELECT 1 FROM labels s WHERE s.supersedes = l.label_id)
      AND NOT EXISTS (
        SELECT 1 FROM labels n
        WHERE n.rater_id = l.rater_id AND n.answer_id = l.answer_id AND n.rubric_id = l.rubric_id
          AND n.rubric_version = l.rubric_version AND n.source <> 'adjudicated'
          AND NOT EXISTS (SELECT 1 FROM labels s2 WHERE s2.supersedes = n.label_id)
          AND (n.created_at > l.created_at OR (n.created_at = l.created_at AND n.label_id > l.label_id)))
"""
PORTABLE[CURRENT_LABEL_RULE] = CURRENT_LABEL_RULE_PORTABLE

#: The most characters a comment, flag reason or note from the app may have. A rater's words on
#: one answer fit in a fraction of this; without a bound one submit stored 2 MB (every changed
#: resubmit another row) and a page past Streamlit's message cap hung without a word.
MAX_COMMENT_CHARS = 5_000


def check_comment(text: str | None, what: str = "comment") -> None:
    """Refuse free text longer than :data:`MAX_COMMENT_CHARS` (nothing is stored).

    Raises:
        InputError: ``text`` is too long; the message says by how much.
    """
    if text is not None and len(text) > MAX_COMMENT_CHARS:
        raise InputError(
            f"the {what} is {len(text):,} characters long; at most {MAX_COMMENT_CHARS:,} are kept",
            fix=f"shorten it by {len(text) - MAX_COMMENT_CHARS:,} characters (nothing was saved yet).",
        )


#: Seconds without a unit of work after which a process closes the file for others.
IDLE_RELEASE = 1.0
#: Seconds a busy process keeps the file once another process is waiting for it.
HOLD_QUANTUM = 0.25
#: Seconds a process that handed the file over waits before opening it again.
HANDOFF_PAUSE = 0.03
#: Seconds between tries of a process waiting for the file (jittered).
_RETRY_DELAY = 0.004

#: Words of an operating-system error that mean "this file may be read but not written".
_NOT_WRITABLE = ("permission denied", "read-only file system", "operation not permitted")

_local = threading.local()
_migrated: set[str] = set()


def rubric_match(rubric_id: str, version: int | None, params: list[object]) -> str:
    """SQL condition for rows of ``rubric_id`` (and of ``version`` when given).

    Appends its parameters to ``params``.
    """
    params.append(rubric_id)
    if version is None:
        return "rubric_id = ?"
    params.append(version)
    return "rubric_id = ? AND rubric_version = ?"


def resolve_db_path(path: str | os.PathLike[str] | None = None) -> Path:
    """The database file: ``path`` if given, else ``$JUDGELAB_DB``, else ``./judgelab.duckdb``."""
    chosen = path or os.environ.get("JUDGELAB_DB") or DEFAULT_DB
    return Path(chosen).expanduser().resolve()


# Arms of a probe that present the answer as it is: their scores are the judge's plain score.
_PLAIN_ARMS = ("original", "control", "baseline", "none")
# Runs that score the pool as it is, one arm per format: `judgelab score`
# (judgelab.calibration.scoring.SCORE_PROBE).
_SCORING_PROBES = ("score",)
# Probes whose every arm shows the answer as it is, in another scoring format (the format study,
# judgelab.calibration.probes.format_study): another reading of the answer, not its plain score.
_READING_PROBES = ("format",)


def plain_judgement(*, readings: bool = False, alias: str = "") -> tuple[str, list[str]]:
    """SQL predicate (and its parameters) of a judgement of the answer as it is.

    ``readings`` also admits the format study's: other readings of the answer, not its score.
    """
    a = f"{alias}." if alias else ""
    probes = _SCORING_PROBES + (_READING_PROBES if readings else ())
    arms, names = ", ".join("?" for _ in _PLAIN_ARMS), ", ".join("?" for _ in probes)
    return (f"({a}probe IS NULL OR {a}arm IS NULL OR {a}arm IN ({arms}) OR {a}probe IN ({names}))",
            [*_PLAIN_ARMS, *probes])


@dataclass
class _Shared:
    """What one process knows about one database file; every field is guarded by ``lock``."""

    wait_marker: Path
    #: The turn lock's file; held (``flock``) from before the file is opened until it is closed.
    turn_file: Path
    lock: threading.RLock = field(default_factory=threading.RLock)
    con: duckdb.DuckDBPyConnection | None = None
    #: The descriptor holding the turn lock, while this process has (or is opening) the file.
    turn: int | None = None
    opened_at: float = 0.0
    last_used: float = 0.0
    #: The wait marker's mtime when the file was opened; a newer one means someone waits.
    marker_seen: int = 0
    #: Do not reopen before this time (a handoff to a waiting process is in progress).
    resume_at: float = 0.0
    reaper: threading.Thread | None = None
    #: Seconds without a unit of work after which the file is let go (:data:`IDLE_RELEASE`,
    #: or longer for a process that asked to keep it: see :class:`StoreCore`).
    idle_release: float = IDLE_RELEASE
    #: Open the file read-only: asked for, or the file (or its folder) cannot be written.
    read_only: bool = False

    def waiter(self) -> bool:
        """Whether another process has asked for the file since it was opened."""
        return _mtime(self.wait_marker) != self.marker_seen

    def due(self) -> bool:
        """Whether to let the file go now.

        Idle for ``idle_release`` seconds, or another process waits and this one has had its turn
        (held :data:`HOLD_QUANTUM`) or paused.
        """
        now = time.monotonic()
        idle = now - self.last_used
        if idle >= self.idle_release:
            return True
        # The cheap tests first: the marker's stat is only needed once a turn is over.
        return (now - self.opened_at >= HOLD_QUANTUM or idle >= 0.02) and self.waiter()

    def release(self, *, handoff: bool = False) -> None:
        """Close the connection, then give up the turn (the caller holds ``lock``)."""
        if self.con is None:
            self.give_turn()
            return
        con, self.con = self.con, None
        try:
            with suppress(duckdb.Error):  # closing a connection that already failed has nothing to save
                con.close()
        finally:
            # Only now: close() checkpoints and deletes the write-ahead log, and an open that
            # starts before it has returned can read the file as it was before (module docstring).
            self.give_turn()
        if handoff:
            self.resume_at = time.monotonic() + HANDOFF_PAUSE

    def take_turn(self) -> bool:
        """Try once to take the turn lock; whether this process now holds it.

        A folder where the lock file can be neither created nor opened holds no writable
        database (DuckDB could not write its write-ahead log there either), so the open goes
        ahead on DuckDB's own lock alone.
        """
        if self.turn is not None or fcntl is None:
            return True
        try:
            fd = os.open(self.turn_file, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            try:
                fd = os.open(self.turn_file, os.O_RDONLY)
            except OSError:
                return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self.turn = fd
        return True

    def give_turn(self) -> None:
        """Let the turn lock go (unlocked first: a forked child may share the descriptor)."""
        fd, self.turn = self.turn, None
        if fd is None:
            return
        with suppress(OSError):
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


_shared: dict[str, _Shared] = {}
_shared_guard = threading.Lock()


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return 0


def _shared_for(path: Path) -> _Shared:
    key = str(path)
    with _shared_guard:
        state = _shared.get(key)
        if state is None:
            state = _shared[key] = _Shared(path.with_name(path.name + ".wait"), path.with_name(path.name + ".lock"))
        return state


def _reap(state: _Shared) -> None:
    """Close ``state``'s connection once it is idle or another process waits for it."""
    while True:
        time.sleep(0.05)
        with state.lock:
            if state.con is not None and state.due():
                state.release(handoff=True)
            if state.con is None:
                state.reaper = None
                return


def release_all() -> None:
    """Close every database this process holds open (at exit and before ``exec``): files and connection pools."""
    with _shared_guard:
        states = list(_shared.values())
    for state in states:
        with state.lock:
            state.release()
    close_pg_pools()


atexit.register(release_all)


def remove_database(path: str | os.PathLike[str]) -> list[Path]:
    """Close the database at ``path`` in this process, then delete it and the store's files beside it.

    For a database this process has just made and must not leave half-built (a failed demo):
    the file, its write-ahead log, and the turn lock and wait marker. This process also forgets
    it had migrated the file, so a new one at the same path is migrated afresh. Files another
    program made beside it (e.g. judge journals) are the caller's to remove.

    Returns:
        The files deleted.
    """
    target = resolve_db_path(path)
    key = str(target)
    with _shared_guard:
        state = _shared.pop(key, None)
    if state is not None:
        with state.lock:
            state.release()
    _migrated.discard(key)
    removed = []
    for leftover in (target, *(target.with_name(target.name + s) for s in (".wal", ".lock", ".wait"))):
        if leftover.is_file():
            leftover.unlink()
            removed.append(leftover)
    return removed


def writer_version() -> str | None:
    """The installed judgelab's version, recorded with each migration it applies (``None``: unknown).

    Read from the distribution's metadata: ``labeler`` must not import ``judgelab``, and the
    wheel's metadata carries ``judgelab.__version__`` (``pyproject.toml``).
    """
    try:
        return metadata.version("judgelab")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return None


def migrations() -> list[tuple[int, str, str]]:
    """All migrations shipped with judgelab as ``(version, name, sql)``, in order."""
    found = []
    folder = resources.files("judgelab.labeler.store") / "migrations"
    for entry in folder.iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise StoreError(f"two migrations share a number: {versions}")
    return found


class StoreCore:
    """Opens the database per unit of work; see the module docstring for why."""

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, lock_timeout: float = 30.0,
        idle_release: float = IDLE_RELEASE, read_only: bool = False,
    ) -> None:
        """Open the store on ``path`` (``$JUDGELAB_DB``, else ``./judgelab.duckdb``).

        Args:
            path: The database file; created and migrated if needed.
            lock_timeout: Seconds a unit of work waits for the file before it fails.
            idle_release: Seconds without a unit of work after which this process lets the
                file go for programs outside the protocol. Any judgelab process that asks
                gets it within about 0.05 s either way (the wait marker). The app server
                holds longer, so a rater's submit after a pause does not pay a reopen; the
                longest any store of the process asked for applies.
            read_only: Open the file read-only (reads work, every write is refused with a
                :class:`~judgelab.labeler.errors.StoreError` saying so). A file that cannot be written
                (permissions, a read-only disk) is opened read-only without being asked.

        Raises:
            StoreError: The file was written by a newer judgelab (a migration above the highest
                this one ships), is read-only and still needs a migration, or cannot be opened.
        """
        chosen = path or os.environ.get("JUDGELAB_DB")
        #: The PostgreSQL URL when the database is a server's (``--db postgresql://...``), else ``None``.
        self.url: str | None = str(chosen) if is_postgres(chosen) else None
        self.path = Path(redact(self.url)) if self.url else resolve_db_path(path)
        self.lock_timeout = lock_timeout
        self._key = self.url or str(self.path)
        self._state = _shared_for(self.path)
        with self._state.lock:
            self._state.idle_release = max(self._state.idle_release, idle_release)
            self._state.read_only = self._state.read_only or read_only
        if self._key not in _migrated:
            self.migrate()

    @property
    def location(self) -> str:
        """The database as ``--db`` takes it: the file's path, or the PostgreSQL URL."""
        return self.url or str(self.path)

    @property
    def shown(self) -> str:
        """The database as messages name it: the file's path, or the URL without its password."""
        return redact(self.url) if self.url else str(self.path)

    @property
    def read_only(self) -> bool:
        """Whether this process has the file read-only (asked for, or it cannot be written)."""
        return self._state.read_only

    # -- connections -------------------------------------------------------------

    def _open(self) -> duckdb.DuckDBPyConnection:
        """The process's connection to the file, opened if needed (the caller holds the lock)."""
        state = self._state
        if state.con is not None:
            return state.con
        pause = state.resume_at - time.monotonic()
        if pause > 0:
            time.sleep(pause)  # let the process we handed the file to take it
        try:
            con = self._connect_in_turn(time.monotonic() + self.lock_timeout)
        except BaseException:
            state.give_turn()
            raise
        state.con = con
        state.opened_at = time.monotonic()
        state.marker_seen = _mtime(state.wait_marker)
        if state.reaper is None:
            state.reaper = threading.Thread(target=_reap, args=(state,), name="judgelab-store-reaper", daemon=True)
            state.reaper.start()
        return con

    def _connect_in_turn(self, deadline: float) -> duckdb.DuckDBPyConnection:
        """Take the turn lock, then connect; wait for both until ``deadline``."""
        state = self._state
        while True:
            busy: Exception | None = None
            if state.take_turn():
                try:
                    return duckdb.connect(self._key, read_only=state.read_only)
                except duckdb.IOException as exc:
                    why = str(exc).lower()
                    if not state.read_only and self.path.exists() and any(w in why for w in _NOT_WRITABLE):
                        # A file judgelab may read but not write: read verbs (export, report,
                        # calibrate) still work, and a write says "read-only" (connection()).
                        state.read_only = True
                        continue
                    # A program outside the protocol holds the file (a raw duckdb.connect).
                    if "lock" not in why:
                        raise StoreError(f"could not open the database {self.path}: {exc}") from exc
                    busy = exc
            if time.monotonic() > deadline:
                raise self._timed_out(busy or "another process holds it") from busy
            # Another process has the file: say we wait, so it hands it over soon.
            with suppress(OSError):  # a read-only folder: the holder still lets go when idle
                state.wait_marker.touch()
            time.sleep(_RETRY_DELAY * (0.5 + random.random()))

    def _translated(self, exc: duckdb.Error) -> StoreError | None:
        """A DuckDB error a user can act on, in words (``None``: not one of those)."""
        why = str(exc)
        low = why.lower()
        if isinstance(exc, duckdb.InvalidInputException) and "read-only mode" in low:
            return StoreError(
                f"the database {self.path} is read-only, so nothing was changed.\n"
                "Fix: make the file (and its folder) writable, or copy it to a writable place and pass that "
                "with --db; reading verbs (export, calibrate, report) work on it as it is."
            )
        if "no space left" in low or "disk full" in low or "disk quota" in low:
            return StoreError(
                f"the disk holding {self.path} is full; the last change was rolled back, nothing stored before it "
                f"is lost ({why}).\nFix: free space on that disk, then run the command again."
            )
        if isinstance(exc, duckdb.IOException) and any(w in low for w in _NOT_WRITABLE):
            return StoreError(f"judgelab may not write {self.path} or its folder ({why}).\n"
                              "Fix: make them writable, or copy the database to a writable place.")
        return None

    def _timed_out(self, why: object) -> StoreError:
        return StoreError(
            f"could not open {self.path}: {why}. Another process may be holding it "
            f"for longer than {self.lock_timeout:g} s; retry, or stop that process."
        )

    def release(self) -> None:
        """Close this process's connection to the file now (it reopens on the next unit).

        For code about to hand the file to something that is not a :class:`Store`: a raw
        ``duckdb.connect`` with other settings, or a process started with ``exec``.
        """
        with self._state.lock:
            self._state.release()

    @contextmanager
    def connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One unit of work: an open connection inside a transaction.

        Commits on success, rolls back on error. Re-entrant on one thread.
        """
        stack: dict[str, duckdb.DuckDBPyConnection] = getattr(_local, "open", None) or {}
        _local.open = stack
        existing = stack.get(self._key)
        if existing is not None:
            yield existing
            return
        if self.url is not None:
            with self._pg_unit(stack) as pg:
                yield pg  # type: ignore[misc]
            return
        state = self._state
        with state.lock:
            con = self._open()
            stack[self._key] = con
            ended = _Ended()
            try:
                with _transaction(con, ended, ("BEGIN TRANSACTION", [])):
                    yield con
            except duckdb.Error as exc:
                # A read-only file or a full disk: say so, instead of a driver traceback.
                plain = self._translated(exc)
                if plain is None:
                    raise
                raise plain from exc
            finally:
                del stack[self._key]
                state.last_used = time.monotonic()
                if not ended.cleanly:
                    # A failed BEGIN, COMMIT or ROLLBACK may leave the connection unusable.
                    state.release()
                elif state.due():
                    state.release(handoff=True)

    @contextmanager
    def _pg_unit(self, stack: dict[str, Any]) -> Iterator[PgConnection]:
        """One unit of work on PostgreSQL: a transaction holding the store's advisory lock.

        The lock makes units run one at a time across every process on the database, as DuckDB's
        single writer does (see :mod:`judgelab.labeler.store._backend`).
        """
        assert self.url is not None
        con = pg_connection(self.url)
        stack[self._key] = con
        ended = _Ended()
        try:
            with _transaction(con, ended, ("BEGIN", []), ("SELECT pg_advisory_xact_lock(?)", [UNIT_LOCK])):
                yield con
        except Exception as exc:
            # A role without the privilege (PostgreSQL 15's schema public): say who and the fix.
            plain = plain_pg_error(exc, con)
            if plain is None:
                raise
            raise plain from exc
        finally:
            del stack[self._key]
            put_pg_connection(self.url, con, healthy=ended.cleanly)

    def query(self, sql: str, params: list[Any] | tuple[Any, ...] | None = None) -> pd.DataFrame:
        """Run one read query and return a DataFrame."""
        with self.connection() as con:
            return con.execute(sql, params or []).df()

    # -- migrations ----------------------------------------------------------------

    def migrate(self) -> list[int]:
        """Apply every migration not yet recorded; returns the versions applied.

        Each applied migration is recorded with the judgelab version that applied it (column
        ``judgelab_version``, added here to a table made before it existed), so an older judgelab
        that meets the file can name the version to install.
        """
        if not self.read_only and self.url is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        applied: list[int] = []
        shipped = migrations()
        altered = False
        with self.connection() as con:
            known = con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = '_migrations'"
                " AND table_schema = current_schema()").fetchone()
            done = ({row[0] for row in con.execute("SELECT version FROM _migrations").fetchall()}
                    if known and known[0] else set())
            # Checked before anything is written: a newer judgelab's file is left as it is.
            self._check_versions(con, done, shipped)
            if not self.read_only:
                con.execute(
                    "CREATE TABLE IF NOT EXISTS _migrations ("
                    " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
                    " applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp, judgelab_version VARCHAR)"
                )
                if not _has_writer_column(con):
                    con.execute("ALTER TABLE _migrations ADD COLUMN judgelab_version VARCHAR")
                    altered = True
            writer = writer_version()
            for version, name, sql in shipped:
                if version in done:
                    continue
                # One statement at a time, all inside the unit's transaction: a migration
                # lands whole or not at all, whatever the driver does with a script.
                for statement in con.extract_statements(sql):
                    con.execute(statement)
                con.execute("INSERT INTO _migrations (version, name, judgelab_version) VALUES (?, ?, ?)",
                            [version, name, writer])
                applied.append(version)
        if (applied or altered) and self.url is None:
            # DuckDB cannot replay an ALTER TABLE from its write-ahead log (a process
            # killed before the next checkpoint would leave a file that does not open), so
            # the schema goes into the database file at once.
            with self._state.lock:
                self._open().execute("CHECKPOINT")
        _migrated.add(self._key)
        return applied

    def _check_versions(
        self, con: duckdb.DuckDBPyConnection, done: set[int], shipped: list[tuple[int, str, str]]
    ) -> None:
        """Refuse a database this judgelab cannot safely open (see :meth:`migrate`)."""
        newest = max(v for v, _, _ in shipped)
        newer = sorted(v for v in done if v > newest)
        if newer:
            wrote = _newest_writer(con, newer)
            mine = writer_version()
            by = f"judgelab {wrote}" if wrote else "a newer judgelab"
            this = f"this judgelab{f' ({mine})' if mine else ''}"
            install = (f"install judgelab {wrote} or later (pip install 'judgelab>={wrote}')" if wrote
                       else "pip install -U judgelab")
            raise StoreError(
                f"the database {self.shown} was written by a newer judgelab: {by} added migration {newer[-1]:03d}, "
                f"and {this} knows migrations up to {newest:03d}. It was not opened for writing, "
                f"so nothing in it changed.\nFix: upgrade judgelab: {install}, and run the "
                "command again, or use the judgelab version that made the database."
            )
        pending = [v for v, _, _ in shipped if v not in done]
        if pending and self.read_only and done:
            raise StoreError(
                f"the database {self.shown} is read-only and was made by an older judgelab: it still needs "
                f"migration(s) {', '.join(f'{v:03d}' for v in pending)}, which would write to it.\n"
                "Fix: make it writable and run any judgelab command once (it migrates), or copy it to a "
                "writable place and pass that with --db."
            )

    def schema(self) -> dict[str, dict[str, str]]:
        """``{table: {column: type}}`` for every table, for tests and ``judgelab init``."""
        frame = self.query(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position"
        )
        out: dict[str, dict[str, str]] = {}
        for row in frame.itertuples(index=False):
            out.setdefault(str(row.table_name), {})[str(row.column_name)] = str(row.data_type)
        return out

    def applied_migrations(self) -> pd.DataFrame:
        """The migrations recorded in the database, with the judgelab version that applied each.

        ``judgelab_version`` is empty for migrations applied before judgelab recorded it (and
        in a read-only file made then).
        """
        with self.connection() as con:
            version = "judgelab_version" if _has_writer_column(con) else "NULL::VARCHAR AS judgelab_version"
            return con.execute(f"SELECT version, name, applied_at, {version} FROM _migrations ORDER BY version").df()


@dataclass
class _Ended:
    """Whether a unit's transaction ended by its own COMMIT or ROLLBACK (the connection is sound)."""

    cleanly: bool = False


@contextmanager
def _transaction(con: Any, ended: _Ended, *begin: tuple[str, list[Any]]) -> Iterator[None]:
    """Run the body in a transaction ``begin`` opens: COMMIT after it, ROLLBACK when it raises.

    ``ended.cleanly`` stays false when a BEGIN, COMMIT or ROLLBACK itself fails, so the caller
    drops a connection that may be left in no known state.
    """
    for sql, params in begin:
        con.execute(sql, params)
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        ended.cleanly = True
        raise
    con.execute("COMMIT")
    ended.cleanly = True


def _has_writer_column(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the ``_migrations`` table records the judgelab version (files made before it do not)."""
    row = con.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_name = '_migrations'"
        " AND column_name = 'judgelab_version' AND table_schema = current_schema()").fetchone()
    return bool(row and row[0])


def _newest_writer(con: duckdb.DuckDBPyConnection, newer: list[int]) -> str | None:
    """The judgelab version that applied the newest of the ``newer`` migrations (``None``: not recorded)."""
    if not _has_writer_column(con):
        return None
    row = con.execute(
        "SELECT judgelab_version FROM _migrations WHERE version IN (SELECT unnest($1::INTEGER[]))"
        " AND judgelab_version IS NOT NULL ORDER BY version DESC LIMIT 1", [newer]).fetchone()
    return str(row[0]) if row else None
