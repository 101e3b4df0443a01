"""Run a plan of judge calls: bounded concurrency, a content-addressed cache, resumable runs.

A probe turns a dataset into a list of :class:`PlannedCall` (arms x orders x reps). The runner
executes such a plan against a :class:`~judgelab.calibration.judges.Judge` and writes every result to
the project database and to a JSONL evidence file as it arrives:

* **Cache.** Before a call is made its request is hashed (:attr:`JudgeCall.cache_key`: model,
  prompt and parameters, plus the judge's own identity for judges with hidden settings, such
  as the fake judge's bias knobs). If any earlier run already paid for an identical request,
  its reply is reused and recorded with ``source = 'cache'`` and zero cost. Identical requests
  inside one plan are made once.
* **Resume.** A run has a ``run_id`` and the hash of its plan. Running the same plan again
  continues the newest unfinished run of that plan (or the run named by ``resume``) and
  re-issues none of the calls that already have a reply.
* **Never paid twice.** Every result is appended to a write-ahead journal
  (:mod:`judgelab.calibration.journal`) as it arrives: the replies read in one turn of the event loop
  go in one write at the start of the next turn, before the loop waits for anything, and
  always before their database batch (one transaction at least every ``flush_interval``
  seconds) or the progress counts them. A killed run's journal is
  replayed by the next run on the database before it decides what to send, so a killed run
  re-sends at most the calls that were in flight when it died.
* **Failures.** A :class:`~judgelab.labeler.errors.JudgeError` (the back-end gave up after its
  retries, an undecodable reply included) is recorded as a failed call with its reason: never
  dropped, never a score. The run goes on; it stays unfinished, so running it again retries
  exactly the failed calls.
* **Batches.** With ``batch=True`` every uncached call is submitted as one provider batch
  (Anthropic's Message Batches, or OpenAI's Batch API) through the judge's
  :class:`~judgelab.calibration.judges.BatchJudge` methods, polled and collected; the records are the same.
* **What a judge must declare.** Cache keys, requests and spec come from the
  :class:`~judgelab.calibration.judges.BuildingJudge` protocol, batches from
  :class:`~judgelab.calibration.judges.BatchJudge`; mypy checks every bundled back-end against them.

The evidence file is rewritten from the database when the run ends, so after a resume it
holds one row per planned call (the newest result), in plan order.

Inside the package: ``_plan`` (the calls, their requests, cache keys and the plan hash),
``_records`` (database and evidence rows), ``_sink`` (journal first, then batched writes),
``_execute`` (concurrent calls, identical requests made once), ``_batch`` (Message Batches),
``_summary`` (the summary, tally and progress bar) and ``_run`` (:func:`arun_plan`).
"""

from judgelab.calibration.runner._plan import (
    Order,
    PlannedCall,
    build_request,
    cache_key_for,
    judge_identity,
    plan_hash,
)
from judgelab.calibration.runner._records import (
    EVIDENCE_FIELDS,
    EvidenceStatus,
    evidence_row,
    evidence_status,
    record_for,
    write_evidence,
)
from judgelab.calibration.runner._run import arun_plan, run_plan
from judgelab.calibration.runner._summary import EXIT_CODES, RunInterrupted, RunSummary

__all__ = [
    "EVIDENCE_FIELDS",
    "EXIT_CODES",
    "EvidenceStatus",
    "Order",
    "PlannedCall",
    "RunInterrupted",
    "RunSummary",
    "arun_plan",
    "build_request",
    "cache_key_for",
    "evidence_row",
    "evidence_status",
    "judge_identity",
    "plan_hash",
    "record_for",
    "run_plan",
    "write_evidence",
]
