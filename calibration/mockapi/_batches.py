"""How the mock answers the Message Batches endpoints: create, retrieve, results, list, cancel, delete.

A batch stays ``in_progress`` until ``batch_delay`` has passed; the first look after that ends
it, answering each request as ``POST /v1/messages`` would (faults drawn for the ``"batches"``
endpoint become ``errored`` or ``expired`` results). Its JSON carries a ``results_url`` pointing
back at the server (:func:`batch_json`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from judgelab.calibration.mockapi._messages import ApiError, MessagesAPI

__all__ = ["Batch", "BatchesAPI", "batch_json", "batch_list_json"]


@dataclass
class Batch:
    """One batch: its requests, state and, once ended, its results."""

    id: str
    requests: list[dict[str, Any]]
    created: datetime
    ready_at: float
    status: str = "in_progress"
    ended: datetime | None = None
    cancel_initiated: datetime | None = None
    results: list[dict[str, Any]] = field(default_factory=list)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


class BatchesAPI(MessagesAPI):
    """The Message Batches endpoints of the mock (a base of :class:`~judgelab.calibration.mockapi.MockAnthropic`)."""

    batch_delay: float
    _batches: dict[str, Batch]

    def _create_batch(self, body: Any) -> Batch:
        requests = body.get("requests") if isinstance(body, Mapping) else None
        if not isinstance(requests, list) or not requests:
            raise ApiError(400, "invalid_request_error", "requests: a non-empty list is required")
        ids = [r.get("custom_id") if isinstance(r, Mapping) else None for r in requests]
        if any(not isinstance(i, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", i) for i in ids):
            raise ApiError(400, "invalid_request_error", "custom_id must match ^[a-zA-Z0-9_-]{1,64}$")
        if len(set(ids)) != len(ids):
            raise ApiError(400, "invalid_request_error", "custom_id values must be unique within a batch")
        batch = Batch(
            id=f"msgbatch_mock_{next(self._ids):06d}",
            requests=list(requests),
            created=datetime.now(UTC),
            ready_at=time.monotonic() + self.batch_delay,
        )
        with self._lock:
            self._batches[batch.id] = batch
        return batch

    def _get_batch(self, batch_id: str) -> Batch:
        with self._lock:
            batch = self._batches.get(batch_id)
        if batch is None:
            raise ApiError(404, "not_found_error", f"no batch {batch_id!r}")
        if batch.status != "ended" and time.monotonic() >= batch.ready_at:
            self._finish(batch)
        return batch

    def _finish(self, batch: Batch) -> None:
        results = []
        for request in batch.requests:
            custom_id = request["custom_id"]
            if batch.status == "canceling":
                results.append({"custom_id": custom_id, "result": {"type": "canceled"}})
                continue
            results.append({"custom_id": custom_id, "result": self._batch_result(request.get("params"))})
        with self._lock:
            if batch.status != "ended":
                batch.results = results
                batch.status = "ended"
                batch.ended = datetime.now(UTC)

    def _batch_result(self, params: Any) -> dict[str, Any]:
        raw = json.dumps(params, sort_keys=True).encode()
        try:
            kind = self.faults.draw("batches", raw, 0)
            if kind is not None:
                self._bump(f"fault:{kind}")
            if kind == "timeout":
                return {"type": "expired"}
            if kind in ("429", "529", "500"):
                error = {"429": "rate_limit_error", "529": "overloaded_error", "500": "api_error"}[kind]
                return {"type": "errored", "error": {"type": "error", "error": {"type": error, "message": error}}}
            return {"type": "succeeded", "message": self._message(params, malformed=kind == "malformed")}
        except ApiError as err:
            return {
                "type": "errored",
                "error": {"type": "error", "error": {"type": err.kind, "message": err.message}},
            }

    def _results(self, batch_id: str) -> bytes:
        batch = self._get_batch(batch_id)
        if batch.status != "ended":
            raise ApiError(400, "invalid_request_error", f"batch {batch_id} has not ended yet")
        return self._served_output(batch_id, "".join(json.dumps(r) + "\n" for r in batch.results).encode())

    def _cancel(self, batch_id: str) -> Batch:
        batch = self._get_batch(batch_id)
        if batch.status == "in_progress":
            with self._lock:
                batch.status = "canceling"
                batch.cancel_initiated = datetime.now(UTC)
        return batch

    def _all_batches(self) -> list[Batch]:
        """Every batch, newest first."""
        with self._lock:
            ids = list(self._batches)
        return [self._get_batch(i) for i in reversed(ids)]

    def _batch_page(self, query: Mapping[str, list[str]]) -> tuple[list[Batch], bool]:
        """One page of ``GET /v1/messages/batches`` and whether more follow.

        Newest first: ``limit`` (1-1000, default 20) batches after ``after_id``.
        """
        try:
            limit = int((query.get("limit") or ["20"])[0])
        except ValueError:
            limit = 0
        if not 1 <= limit <= 1000:
            raise ApiError(400, "invalid_request_error", "limit: must be between 1 and 1000")
        batches = self._all_batches()
        after_ids = query.get("after_id")
        if after_ids:
            after = after_ids[0]
            ids = [b.id for b in batches]
            if after not in ids:
                raise ApiError(404, "not_found_error", f"no batch {after!r}")
            batches = batches[ids.index(after) + 1:]
        return batches[:limit], len(batches) > limit

    def _delete(self, batch_id: str) -> dict[str, Any]:
        batch = self._get_batch(batch_id)
        if batch.status != "ended":
            raise ApiError(400, "invalid_request_error", "a batch must end before it can be deleted")
        with self._lock:
            del self._batches[batch_id]
        return {"id": batch_id, "type": "message_batch_deleted"}


def batch_json(batch: Batch, base_url: str) -> dict[str, Any]:
    """A batch as the API shows it; ``base_url`` is the server's (for ``results_url``)."""
    ended = batch.status == "ended"
    return {
        "id": batch.id,
        "type": "message_batch",
        "processing_status": batch.status,
        "request_counts": _counts(batch),
        "created_at": _iso(batch.created),
        "expires_at": _iso(batch.created + timedelta(hours=24)),
        "ended_at": _iso(batch.ended) if batch.ended else None,
        "cancel_initiated_at": _iso(batch.cancel_initiated) if batch.cancel_initiated else None,
        "archived_at": None,
        "results_url": f"{base_url}/v1/messages/batches/{batch.id}/results" if ended else None,
    }


def batch_list_json(batches: list[Batch], base_url: str, *, has_more: bool = False) -> dict[str, Any]:
    """The reply of ``GET /v1/messages/batches``: one page of ``batches``, in the order given."""
    data = [batch_json(batch, base_url) for batch in batches]
    return {
        "data": data,
        "has_more": has_more,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }


def _counts(batch: Batch) -> dict[str, int]:
    counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
    if batch.status != "ended":
        counts["processing"] = len(batch.requests)
    for r in batch.results:
        counts[r["result"]["type"]] += 1
    return counts
