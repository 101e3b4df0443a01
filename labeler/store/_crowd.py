"""Crowd studies: raters who arrive from a crowd platform through one study link (issue 57).

A study link carries the platform's participant, study and session ids (Prolific's
``PROLIFIC_PID``/``STUDY_ID``/``SESSION_ID``, MTurk's ``workerId``/``hitId``/``assignmentId``, or a
generic ``pid``/``study``/``session``). The rules this module keeps:

* **One rater per (study, participant).** The first visit makes the rater (named
  ``<study>-p<n>``: no platform id in a name, and no rater ever sees another's); a later visit with
  the same participant id resumes them with a fresh token. A participant id reused in another
  study is another rater there, and is never dealt an answer it already holds in any study
  (one person counted twice would fake agreement). A known participant arriving with another
  session id is refused: the link and someone's participant id alone do not open their items.
* **The link is no key to anything else.** It makes raters of its own study only (role
  ``rater``), never an admin; a closed study, a full one (``places``) or a made-up link key makes
  nobody.
* **Exactly k still holds.** Items are dealt through :meth:`AssignMixin.claim_next` (fewest
  raters first, never past ``k``), up to the quota, when the participant consents (the clock
  starts then). A participant past the deadline, or who returns the study, is revoked in the same
  unit of work that notices it: their unanswered items stop counting towards ``k``
  (:data:`~judgelab.labeler.store._core.DEAD_SCORE_ASSIGNMENTS`) and the next claim hands them to someone
  else, while a revoked rater's late submit is refused inside its own transaction (``add_label``).
  Overdue participants are swept by every deal and every arrival, so nothing waits on a timer.

Times are epoch seconds from the server's clock (``now`` may be passed, for tests).
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import duckdb
import pandas as pd

from judgelab.labeler.errors import AccessError, InputError
from judgelab.labeler.store._assign import AssignMixin
from judgelab.labeler.store._audit import audit
from judgelab.labeler.store._core import score_answered
from judgelab.labeler.store._raters import Rater, hash_token
from judgelab.labeler.store._withheld import WITHHELD_SQL

__all__ = ["PLATFORMS", "CrowdMixin", "CrowdStatus", "CrowdStudy", "Platform"]

Platform = Literal["prolific", "mturk", "generic"]
#: Each platform's URL parameters: (participant id, platform study id, session id).
PLATFORMS: dict[str, tuple[str, str, str]] = {
    "prolific": ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    "mturk": ("workerId", "hitId", "assignmentId"),
    "generic": ("pid", "study", "session"),
}
_ID = re.compile(r"^[A-Za-z0-9_.:@-]{1,128}$")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
Outcome = Literal["completed", "timed_out", "returned"]


@dataclass(frozen=True)
class CrowdStudy:
    """A crowd study as the admin set it up."""

    name: str
    link_key: str
    platform: Platform
    quota: int
    k: int
    time_limit: float
    places: int | None = None
    completion_code: str | None = None
    completion_url: str | None = None
    closed: bool = False

    def link(self, base_url: str) -> str:
        """The URL to give the platform, with its own placeholders for the ids it fills in."""
        pid, study, session = PLATFORMS[self.platform]
        if self.platform == "prolific":
            extra = f"&{pid}={{{{%{pid}%}}}}&{study}={{{{%{study}%}}}}&{session}={{{{%{session}%}}}}"
        elif self.platform == "mturk":
            extra = ""  # MTurk appends workerId, hitId and assignmentId to an ExternalQuestion URL itself
        else:
            extra = f"&{pid}={{PARTICIPANT_ID}}&{study}={{STUDY_ID}}&{session}={{SESSION_ID}}"
        return f"{base_url.rstrip('/')}/?crowd={self.link_key}{extra}"


@dataclass(frozen=True)
class CrowdStatus:
    """Where one participant stands (what their page shows; no other participant in it).

    Attributes:
        study: The study (its completion code or URL shows at the end).
        started: Consent time (``None``: not yet; the clock has not started).
        deadline: When the time limit runs out (``None`` before consent).
        outcome: ``completed``, ``timed_out``, ``returned``, or ``None`` while working.
        dealt: Pool answers dealt so far (gold and attention items not counted).
        open: Items dealt and not yet answered (quality items included).
    """

    study: CrowdStudy
    started: float | None
    deadline: float | None
    outcome: Outcome | None
    dealt: int
    open: int


_STUDY_COLUMNS = ("name, link_key, platform, quota, k, time_limit, places, completion_code, completion_url,"
                  " closed_at IS NOT NULL")


def _study(row: Sequence[Any]) -> CrowdStudy:
    return CrowdStudy(str(row[0]), str(row[1]), row[2], int(row[3]), int(row[4]),
                      float(row[5]), None if row[6] is None else int(row[6]),
                      None if row[7] is None else str(row[7]), None if row[8] is None else str(row[8]),
                      bool(row[9]))


def _now(now: float | None) -> float:
    return time.time() if now is None else float(now)


class CrowdMixin(AssignMixin):
    """Crowd studies: the study link, participants, their quota and time limit."""

    # -- the admin's side -----------------------------------------------------------------------

    def create_crowd_study(
        self,
        name: str,
        *,
        platform: Platform = "prolific",
        quota: int,
        time_limit: float,
        k: int = 1,
        completion_code: str | None = None,
        completion_url: str | None = None,
        places: int | None = None,
        answer_ids: Sequence[str] | None = None,
    ) -> CrowdStudy:
        """Make a crowd study and its link key.

        Args:
            name: The study's name (letters, digits, ``-``, ``_``); its raters are ``<name>-p<n>``.
            platform: Which URL parameters carry the ids (:data:`PLATFORMS`).
            quota: Pool answers per participant.
            time_limit: Seconds from consent; past it, the unanswered items go back to the queue.
            k: Raters per answer (exactly-k, counted with every other assignment under the rubric).
            completion_code: Shown at the end (Prolific's and MTurk's survey-link flow).
            completion_url: Where the end sends the participant (e.g. Prolific's ``...?cc=CODE``).
            places: At most this many participants (``None``: no cap besides the pool).
            answer_ids: The answers of the study; every ``original`` answer when ``None``.

        Raises:
            InputError: A bad name, platform, quota, k or time limit; no completion code nor URL;
                a name in use; unknown answers.
        """
        if not _NAME.match(name or ""):
            raise InputError(f"crowd study name {name!r} is not usable",
                             fix="use up to 40 letters, digits, '-' or '_', e.g. pilot-1.")
        if platform not in PLATFORMS:
            raise InputError(f"unknown platform {platform!r}", fix=f"use one of {', '.join(PLATFORMS)}.")
        if quota < 1 or k < 1 or time_limit <= 0 or (places is not None and places < 1):
            raise InputError(f"quota ({quota}), k ({k}), places ({places}) and the time limit ({time_limit:g} s)"
                             " must be positive", fix="choose quota >= 1, k >= 1 and a time limit above zero.")
        if not completion_code and not completion_url:
            raise InputError("a crowd study needs a completion code or a completion URL",
                             fix="pass --completion-code CODE (from the platform) or --completion-url URL.")
        if completion_url and not completion_url.startswith(("https://", "http://")):
            raise InputError(f"completion URL {completion_url!r} is not a web address",
                             fix="give the full https:// address the platform shows.")
        key = secrets.token_urlsafe(18)
        with self.connection() as con:
            if con.execute("SELECT 1 FROM crowd_studies WHERE name = ?", [name]).fetchone():
                raise InputError(f"a crowd study named {name!r} already exists", fix="choose another name.")
            con.execute(
                "INSERT INTO crowd_studies (name, link_key, platform, quota, k, time_limit, places,"
                " completion_code, completion_url) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [name, key, platform, int(quota), int(k), float(time_limit), places, completion_code or None,
                 completion_url or None],
            )
            if answer_ids is not None:
                wanted = list(dict.fromkeys(str(a) for a in answer_ids))
                self._task_of(con, wanted, column="answer_id")  # unknown answers: one clear line
                con.executemany("INSERT INTO crowd_items (study, answer_id) VALUES (?, ?)",
                                [[name, a] for a in wanted])
            audit(con, "crowd study", name, platform=platform, quota=int(quota), k=int(k),
                  minutes=round(float(time_limit) / 60, 2), places=places,
                  answers=None if answer_ids is None else len(wanted))
        return self.crowd_study(name)

    def crowd_study(self, name: str) -> CrowdStudy:
        """One study by name."""
        with self.connection() as con:
            row = con.execute(f"SELECT {_STUDY_COLUMNS} FROM crowd_studies WHERE name = ?", [name]).fetchone()
        if row is None:
            raise InputError(f"no crowd study named {name!r}", fix="see `judgelab crowd studies`.")
        return _study(row)

    def crowd_studies(self) -> list[CrowdStudy]:
        """Every crowd study, oldest first."""
        with self.connection() as con:
            rows = con.execute(f"SELECT {_STUDY_COLUMNS} FROM crowd_studies ORDER BY created_at, name").fetchall()
        return [_study(r) for r in rows]

    def close_crowd_study(self, name: str) -> None:
        """Stop the link making or resuming anyone (labels and assignments stay)."""
        with self.connection() as con:
            row = con.execute("UPDATE crowd_studies SET closed_at = current_timestamp WHERE name = ?"
                              " RETURNING name", [name]).fetchone()
            if row is not None:
                audit(con, "crowd close", name)
        if row is None:
            raise InputError(f"no crowd study named {name!r}", fix="see `judgelab crowd studies`.")

    def crowd_participants(self, name: str, *, now: float | None = None) -> pd.DataFrame:
        """Each participant of study ``name``: items, active time, gold and attention, pay-relevant time.

        Returns:
            ``rater_id, rater, participant_id, session_id, outcome, started, deadline, ended, items,
            done, active_seconds, gold, gold_right, attention, attention_passed, pay_seconds`` —
            ``pay_seconds`` is the time from consent to the end (completion, return or the deadline;
            now, capped at the deadline, while working), ``active_seconds`` the sum of the seconds
            the rating form counted.
        """
        self.crowd_study(name)
        at = _now(now)
        with self.connection() as con:
            self._sweep(con, at)
            frame = con.execute(
                f"""
                SELECT p.rater_id, r.name AS rater, p.participant_id, p.session_id, p.outcome,
                       p.started, p.deadline, p.ended,
                       (SELECT count(*) FROM assignments s WHERE s.rater_id = p.rater_id AND s.kind = 'score'
                          AND s.answer_id NOT IN (SELECT answer_id FROM quality_items)) AS items,
                       (SELECT count(*) FROM assignments s WHERE s.rater_id = p.rater_id AND s.kind = 'score'
                          AND s.answer_id NOT IN (SELECT answer_id FROM quality_items)
                          AND {score_answered("s")}) AS done,
                       (SELECT coalesce(sum(l.seconds), 0) FROM labels l WHERE l.rater_id = p.rater_id)
                          AS active_seconds,
                       (SELECT count(*) FROM labels l JOIN quality_items q USING (answer_id)
                          WHERE l.rater_id = p.rater_id AND q.kind = 'gold'
                          AND NOT EXISTS (SELECT 1 FROM labels x WHERE x.supersedes = l.label_id)) AS gold,
                       (SELECT count(*) FROM labels l JOIN quality_items q USING (answer_id)
                          WHERE l.rater_id = p.rater_id AND q.kind = 'gold' AND l.overall IS NOT NULL
                          AND l.overall BETWEEN q.low - 1e-9 AND q.high + 1e-9
                          AND NOT EXISTS (SELECT 1 FROM labels x WHERE x.supersedes = l.label_id)) AS gold_right,
                       (SELECT count(*) FROM labels l JOIN quality_items q USING (answer_id)
                          WHERE l.rater_id = p.rater_id AND q.kind = 'attention'
                          AND NOT EXISTS (SELECT 1 FROM labels x WHERE x.supersedes = l.label_id)) AS attention,
                       (SELECT count(*) FROM labels l JOIN quality_items q USING (answer_id)
                          WHERE l.rater_id = p.rater_id AND q.kind = 'attention' AND l.overall IS NOT NULL
                          AND l.overall BETWEEN q.low - 1e-9 AND q.high + 1e-9
                          AND NOT EXISTS (SELECT 1 FROM labels x WHERE x.supersedes = l.label_id))
                          AS attention_passed
                FROM crowd_participants p JOIN raters r ON r.rater_id = p.rater_id
                WHERE p.study = ? ORDER BY p.rater_id
                """,
                [name],
            ).df()
        ends = frame["ended"].where(frame["ended"].notna(), frame["deadline"].clip(upper=at))
        frame["pay_seconds"] = (ends - frame["started"]).clip(lower=0).round(1)
        for column in ("items", "done", "gold", "gold_right", "attention", "attention_passed"):
            frame[column] = frame[column].astype(int)
        frame["active_seconds"] = frame["active_seconds"].astype(float).round(1)
        return frame

    # -- the participant's side ------------------------------------------------------------------

    def crowd_enter(
        self,
        link_key: str,
        participant_id: str,
        *,
        platform_study: str = "",
        session_id: str = "",
        now: float | None = None,
    ) -> tuple[Rater, str]:
        """A participant arrives through the study link: make or resume their rater.

        Returns:
            The rater and a fresh token for it (an older tab's token stops working).

        Raises:
            AccessError: An unknown or closed link, a missing or malformed participant id, a known
                participant in another session, a participant whose time ran out or who returned
                the study, or a study with no place left.
        """
        at = _now(now)
        pid, session = (participant_id or "").strip(), (session_id or "").strip()
        if not _ID.match(pid) or (session and not _ID.match(session)) or len(platform_study) > 128:
            raise AccessError("this study link is missing your participant id. Please open the study again "
                              "from the platform's page.")
        token = secrets.token_urlsafe(32)
        with self.connection() as con:
            row = con.execute(f"SELECT {_STUDY_COLUMNS} FROM crowd_studies WHERE link_key = ?",
                              [link_key or ""]).fetchone()
            if row is None:
                raise AccessError("this study link is not valid. Please open the study again from the platform.")
            study = _study(row)
            if study.closed:
                raise AccessError("this study is closed. Thank you for your interest.")
            self._sweep(con, at)
            known = con.execute(
                "SELECT rater_id, session_id, outcome FROM crowd_participants WHERE study = ? AND participant_id = ?",
                [study.name, pid],
            ).fetchone()
            if known is not None:
                rater_id, was_session, outcome = int(known[0]), str(known[1]), known[2]
                if was_session and session and was_session != session:
                    raise AccessError("this participant id is already taking this study in another session.")
                if outcome == "timed_out":
                    raise AccessError("your time for this study ran out. What you rated is kept; please return "
                                      "the study on the platform.")
                if outcome == "returned":
                    raise AccessError("you returned this study. What you rated is kept.")
                con.execute("UPDATE crowd_participants SET visits = visits + 1,"
                            " session_id = CASE WHEN session_id = '' THEN ? ELSE session_id END WHERE rater_id = ?",
                            [session, rater_id])
                con.execute("UPDATE raters SET token_hash = ? WHERE rater_id = ?", [hash_token(token), rater_id])
                found = con.execute("SELECT name FROM raters WHERE rater_id = ?", [rater_id]).fetchone()
                assert found is not None
                return Rater(rater_id, str(found[0]), "rater"), token
            seen = con.execute("SELECT count(*) FROM crowd_participants WHERE study = ?", [study.name]).fetchone()
            n = int(seen[0]) if seen else 0
            if study.places is not None and n >= study.places:
                raise AccessError("this study has no place left. Thank you for your interest.")
            name = f"{study.name}-p{n + 1}"
            while con.execute("SELECT 1 FROM raters WHERE name = ?", [name]).fetchone():
                name += "x"  # an admin's own rater took the name: never reuse someone's identity
            made = con.execute(
                "INSERT INTO raters (name, role, token_hash) VALUES (?, 'rater', ?) RETURNING rater_id",
                [name, hash_token(token)],
            ).fetchone()
            assert made is not None
            con.execute(
                "INSERT INTO crowd_participants (rater_id, study, participant_id, platform_study, session_id, arrived)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [int(made[0]), study.name, pid, platform_study.strip(), session, at],
            )
        return Rater(int(made[0]), name, "rater"), token

    def crowd_status(self, rater_id: int, *, now: float | None = None) -> CrowdStatus | None:
        """Where a crowd participant stands; ``None`` for a rater who did not come from a crowd study.

        A participant past the deadline is timed out here (and their rater revoked).
        """
        with self.connection() as con:
            return self._status(con, int(rater_id), _now(now), sweep=True)

    def crowd_start(self, rater_id: int, *, now: float | None = None) -> CrowdStatus:
        """Consent given: start the clock (once) and deal up to the quota."""
        at = _now(now)
        with self.connection() as con:
            status = self._status(con, int(rater_id), at, sweep=True)
            if status is None:
                raise AccessError("this page is for participants of a crowd study.")
            if status.started is None and status.outcome is None:
                con.execute("UPDATE crowd_participants SET started = ?, deadline = ? WHERE rater_id = ?",
                            [at, at + status.study.time_limit, int(rater_id)])
            self._deal(con, int(rater_id), at)
            status = self._status(con, int(rater_id), at, sweep=False)
        assert status is not None
        return status

    def crowd_deal(self, rater_id: int, *, now: float | None = None) -> int:
        """Deal a working participant more answers, up to the quota; how many (0 for other raters).

        Sweeps every overdue participant first, so their unanswered items can be dealt now.
        """
        with self.connection() as con:
            return self._deal(con, int(rater_id), _now(now))

    def crowd_finish(self, rater_id: int, *, now: float | None = None) -> CrowdStatus | None:
        """The participant's end: ``completed`` once everything dealt is answered and no more can be.

        Returns the status (its outcome stays ``None`` while items are open or more can be dealt).
        """
        at = _now(now)
        with self.connection() as con:
            self._deal(con, int(rater_id), at)
            status = self._status(con, int(rater_id), at, sweep=False)
            if status is None or status.outcome is not None or status.started is None:
                return status
            if status.open == 0 and status.dealt > 0:
                con.execute("UPDATE crowd_participants SET outcome = 'completed', ended = ?"
                            " WHERE rater_id = ? AND outcome IS NULL", [at, int(rater_id)])
                status = self._status(con, int(rater_id), at, sweep=False)
        return status

    def crowd_return(self, rater_id: int, *, now: float | None = None) -> None:
        """The participant gives the study back: their unanswered items go back to the queue at once."""
        at = _now(now)
        with self.connection() as con:
            status = self._status(con, int(rater_id), at, sweep=True)
            if status is None or status.outcome is not None:
                return
            self._end(con, [int(rater_id)], "returned", at)

    # -- inside a unit of work ---------------------------------------------------------------------

    @staticmethod
    def _end(con: duckdb.DuckDBPyConnection, rater_ids: list[int], outcome: Outcome, at: float | None) -> None:
        """Set the outcome and revoke the raters: their unanswered items stop counting towards k."""
        con.execute(
            "UPDATE crowd_participants SET outcome = ?, ended = coalesce(?, deadline)"
            " WHERE rater_id IN (SELECT unnest(?)) AND outcome IS NULL",
            [outcome, at, rater_ids],
        )
        con.execute("UPDATE raters SET revoked_at = current_timestamp"
                    " WHERE rater_id IN (SELECT unnest(?)) AND revoked_at IS NULL", [rater_ids])

    def _sweep(self, con: duckdb.DuckDBPyConnection, at: float) -> None:
        """Time out every working participant past their deadline (ended at the deadline)."""
        overdue = [int(r[0]) for r in con.execute(
            "SELECT rater_id FROM crowd_participants WHERE outcome IS NULL AND deadline < ?", [at]).fetchall()]
        if overdue:
            self._end(con, overdue, "timed_out", None)

    def _status(self, con: duckdb.DuckDBPyConnection, rater_id: int, at: float, *, sweep: bool) -> CrowdStatus | None:
        row = con.execute(
            "SELECT s.name, s.link_key, s.platform, s.quota, s.k, s.time_limit, s.places, s.completion_code,"
            " s.completion_url, s.closed_at IS NOT NULL, p.started, p.deadline, p.outcome"
            " FROM crowd_participants p JOIN crowd_studies s ON s.name = p.study"
            " WHERE p.rater_id = ?",
            [rater_id],
        ).fetchone()
        if row is None:
            return None
        if sweep and row[12] is None and row[11] is not None and float(row[11]) < at:
            self._end(con, [rater_id], "timed_out", None)
            return self._status(con, rater_id, at, sweep=False)
        counts = con.execute(
            "SELECT count(*) FILTER (WHERE s.answer_id NOT IN (SELECT answer_id FROM quality_items)),"
            f" count(*) FILTER (WHERE NOT {score_answered('s')})"
            " FROM assignments s WHERE s.rater_id = ? AND s.kind = 'score'",
            [rater_id],
        ).fetchone()
        dealt, open_ = (int(counts[0]), int(counts[1])) if counts else (0, 0)
        return CrowdStatus(_study(row[:10]), None if row[10] is None else float(row[10]),
                           None if row[11] is None else float(row[11]), row[12], dealt, open_)

    def _deal(self, con: duckdb.DuckDBPyConnection, rater_id: int, at: float) -> int:
        """Claim answers for a working participant up to the quota (exactly-k: :meth:`claim_next`)."""
        self._sweep(con, at)
        status = self._status(con, rater_id, at, sweep=False)
        if status is None or status.started is None or status.outcome is not None or status.study.closed:
            return 0
        want = status.study.quota - status.dealt
        if want <= 0:
            return 0
        pool = self._crowd_pool(con, rater_id, status.study.name)
        dealt = 0
        for _ in range(want):
            # Re-entrant: claim_next runs inside this unit of work, so the quota and k are checked together.
            if self.claim_next(rater_id, status.study.k, answer_ids=pool) is None:
                break
            dealt += 1
        return dealt

    @staticmethod
    def _crowd_pool(con: duckdb.DuckDBPyConnection, rater_id: int, study: str) -> list[str]:
        """The answers this participant may be dealt: the study's, less any the same person holds elsewhere."""
        listed = con.execute("SELECT count(*) FROM crowd_items WHERE study = ?", [study]).fetchone()
        params: dict[str, object] = {"rater": rater_id}
        source = "SELECT answer_id FROM answers WHERE variant = 'original'"
        if listed and int(listed[0]):
            source, params["study"] = "SELECT answer_id FROM crowd_items WHERE study = $study", study
        rows = con.execute(
            f"""
            SELECT answer_id FROM ({source}) pool
            WHERE answer_id NOT IN ({WITHHELD_SQL})
              AND answer_id NOT IN (
                SELECT s.answer_id FROM assignments s JOIN crowd_participants o ON o.rater_id = s.rater_id
                JOIN crowd_participants me ON me.participant_id = o.participant_id
                JOIN crowd_studies so ON so.name = o.study JOIN crowd_studies sm ON sm.name = me.study
                WHERE me.rater_id = $rater AND o.rater_id <> $rater AND so.platform = sm.platform
                  AND s.kind = 'score')
            ORDER BY answer_id
            """,
            params,
        ).fetchall()
        return [str(r[0]) for r in rows]
