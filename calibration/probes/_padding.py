"""How a model writes padded variants, on either judge back-end: one request each, or one batch.

The verbosity probe's padded variants are rewritten by a model (seed 000's LLM rewrite), through
the client of the judge the run uses, so the rewrites get that client's guarantees (retries of
undecodable replies and 5xx, the rate governor) and its batch price. A :class:`PadWriter` is
what :class:`~judgelab.calibration.probes.Variants` asks for them:

* :class:`AnthropicPadWriter`: the Messages API, and Message Batches with ``--batch``;
* :class:`OpenAIPadWriter`: Chat Completions on any OpenAI-compatible endpoint, and with
  ``--batch`` the Batch API (a JSONL file uploaded, one batch created with judgelab's marker,
  the output file read back).

Either creates a batch at most once (:func:`~judgelab.calibration.judges.create_batch_once`,
:func:`~judgelab.calibration.judges.create_openai_batch_once`) and finds a batch whose id was lost again
(``find``). A failure that outlasts the client's retries is a
:class:`~judgelab.labeler.errors.JudgeError`, never a crash.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Collection, Iterator, Mapping
from datetime import datetime
from typing import Any, Protocol

import anthropic
import openai

from judgelab.calibration import perturb
from judgelab.calibration.judges import create_batch_once, find_batch, patiently
from judgelab.calibration.judges._identity import identify, marker_of
from judgelab.calibration.judges._openai import (
    _REASONING,
    create_openai_batch_once,
    find_openai_batch,
)
from judgelab.calibration.judges._openai import patiently as openai_patiently
from judgelab.labeler.errors import JudgeError

__all__ = ["PAD_MAX_TOKENS", "AnthropicPadWriter", "OpenAIPadWriter", "PadWriter", "Rewrite"]

PAD_MAX_TOKENS = 4096
"""Reply budget of one padding rewrite; a rewrite cut off at it gets a warning."""

Rewrite = tuple[perturb.Perturbed, int, int]
"""A padding rewrite checked as padding, with the prompt and completion tokens it was billed for."""


class PadWriter(Protocol):
    """What writing padded variants asks of a back-end: one rewrite, or one batch of them."""

    model: str

    async def one(self, text: str) -> Rewrite:
        """One rewrite of ``text``, sent on its own."""
        ...

    async def find(self, custom_ids: Collection[str], *, since: datetime, exclude: Collection[str],
                   poll_interval: float) -> str | None:
        """The batch of exactly ``custom_ids`` created after ``since``, not in ``exclude`` (a lost id)."""
        ...

    async def create(self, texts: Mapping[str, str], *, since: datetime, exclude: Collection[str],
                     poll_interval: float) -> str:
        """One batch of the rewrites of ``texts`` (custom id -> original), created at most once."""
        ...

    async def ended(self, batch_id: str) -> bool:
        """Whether the batch has ended (its results can be read)."""
        ...

    async def results(self, batch_id: str, texts: Mapping[str, str]) -> dict[str, Rewrite]:
        """The rewrites an ended batch returned, by custom id (failed requests left out)."""
        ...


def _cut(result: perturb.Perturbed, cut: bool) -> perturb.Perturbed:
    """``result``, warned when the model stopped at the reply budget."""
    if not cut:
        return result
    return perturb.Perturbed(
        result.text, result.variant, result.length_ratio,
        (*result.warnings, f"the rewrite was cut off at max_tokens={PAD_MAX_TOKENS}"),
    )


# -- Anthropic ---------------------------------------------------------------------------------

class AnthropicPadWriter:
    """Padding rewrites through the Messages API (and Message Batches) of an ``AsyncAnthropic``.

    Args:
        client: The judge's ``anthropic.AsyncAnthropic`` client.
        model: The rewriting model.
    """

    def __init__(self, client: Any, model: str) -> None:
        self.client = client
        self.model = model

    def params(self, text: str) -> dict[str, Any]:
        """The Messages request of one padding rewrite."""
        return {
            "model": self.model,
            "max_tokens": PAD_MAX_TOKENS,
            "messages": [{"role": "user", "content": perturb.pad_prompt(text)}],
        }

    @contextlib.contextmanager
    def _failing(self, what: str) -> Iterator[None]:
        try:
            yield
        except anthropic.APIError as exc:
            raise JudgeError(f"{what} with {self.model} failed: {exc}") from exc

    @staticmethod
    def read(text: str, message: Any) -> Rewrite:
        """A Messages reply read as the padding of ``text``."""
        reply = "".join(b.text for b in message.content if getattr(b, "type", "") == "text")
        result = _cut(perturb.check_padding(text, reply), message.stop_reason == "max_tokens")
        usage = message.usage
        return result, int(usage.input_tokens or 0), int(usage.output_tokens or 0)

    async def one(self, text: str) -> Rewrite:
        """One rewrite (an undecodable reply is retried by the client like a 5xx)."""
        with self._failing("padding"):
            message = await self.client.messages.create(**self.params(text))
        return self.read(text, message)

    async def find(self, custom_ids: Collection[str], *, since: datetime, exclude: Collection[str],
                   poll_interval: float) -> str | None:
        """The Message Batch of exactly ``custom_ids`` (see :func:`~judgelab.calibration.judges.find_batch`)."""
        client, model = self.client, self.model
        with self._failing("padding batch"):
            return await identify(
                lambda: find_batch(client, custom_ids, since=since, exclude=exclude, model=model),
                poll_interval=poll_interval, what="lost padding batch",
            )

    async def create(self, texts: Mapping[str, str], *, since: datetime, exclude: Collection[str],
                     poll_interval: float) -> str:
        """One Message Batch of the rewrites, created at most once."""
        requests = [{"custom_id": key, "params": self.params(text)} for key, text in texts.items()]
        with self._failing("padding batch"):
            return await create_batch_once(self.client, requests, since=since, exclude=exclude, model=self.model,
                                           poll_interval=poll_interval)

    async def ended(self, batch_id: str) -> bool:
        """Whether the Message Batch's processing has ended."""
        async def status() -> str:
            return str((await self.client.messages.batches.retrieve(batch_id)).processing_status)

        with self._failing(f"padding batch {batch_id}"):
            return await patiently(status, what=f"padding batch {batch_id} status") == "ended"

    async def results(self, batch_id: str, texts: Mapping[str, str]) -> dict[str, Rewrite]:
        """The succeeded rewrites of an ended Message Batch."""
        async def read() -> list[Any]:
            return [item async for item in await self.client.messages.batches.results(batch_id)]

        with self._failing(f"padding batch {batch_id}"):
            items = await patiently(read, what=f"padding batch {batch_id} results")
        out: dict[str, Rewrite] = {}
        for item in items:
            text = texts.get(item.custom_id)
            if text is not None and item.result.type == "succeeded" and item.custom_id not in out:
                out[item.custom_id] = self.read(text, item.result.message)
        return out


# -- OpenAI-compatible ---------------------------------------------------------------------------

_ENDED = ("completed", "failed", "expired", "cancelled")


class OpenAIPadWriter:
    """Padding rewrites through Chat Completions (and the Batch API) of an ``AsyncOpenAI``.

    Args:
        client: The judge's ``openai.AsyncOpenAI`` client (its transport checks and paces).
        model: The rewriting model.
        host: The endpoint's host, for error messages.
        max_retries: Attempts at a batch create (each after looking for one already made).
    """

    def __init__(self, client: Any, model: str, *, host: str = "", max_retries: int = 6) -> None:
        self.client = client
        self.model = model
        self.host = host
        self.max_retries = max_retries

    def body(self, text: str) -> dict[str, Any]:
        """The Chat Completions body of one padding rewrite (no temperature: the model's default)."""
        budget = "max_completion_tokens" if _REASONING.match(self.model) else "max_tokens"
        return {
            "model": self.model,
            "messages": [{"role": "user", "content": perturb.pad_prompt(text)}],
            budget: PAD_MAX_TOKENS,
        }

    @contextlib.contextmanager
    def _failing(self, what: str) -> Iterator[None]:
        try:
            yield
        except openai.APIError as exc:
            raise JudgeError(f"{what} with {self.model} at {self.host} failed: {exc}") from exc

    @staticmethod
    def read(text: str, completion: Any) -> Rewrite:
        """A chat completion (an SDK object or its JSON) read as the padding of ``text``."""
        def get(obj: Any, name: str) -> Any:
            if obj is None:
                return None
            return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)

        choice = (get(completion, "choices") or [None])[0]
        reply = str(get(get(choice, "message"), "content") or "")
        result = _cut(perturb.check_padding(text, reply), get(choice, "finish_reason") == "length")
        usage = get(completion, "usage")
        return result, int(get(usage, "prompt_tokens") or 0), int(get(usage, "completion_tokens") or 0)

    async def one(self, text: str) -> Rewrite:
        """One rewrite (an undecodable reply is retried by the client's transport like a 5xx)."""
        with self._failing("padding"):
            completion = await self.client.chat.completions.create(**self.body(text))
        return self.read(text, completion)

    async def find(self, custom_ids: Collection[str], *, since: datetime, exclude: Collection[str],
                   poll_interval: float) -> str | None:
        """The judgelab batch of exactly ``custom_ids`` created after ``since`` (found by its metadata marker)."""
        found = await find_openai_batch(self.client, custom_ids, since=since, exclude=exclude,
                                        model=self.model, host=self.host)
        return found.found

    async def create(self, texts: Mapping[str, str], *, since: datetime, exclude: Collection[str],
                     poll_interval: float) -> str:
        """Upload the rewrites as a JSONL file and create one batch of them, at most once."""
        lines = [{"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": self.body(text)}
                 for key, text in texts.items()]
        content = "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines).encode()
        marker = marker_of(list(texts))
        with self._failing("padding batch input upload"):
            uploaded = await self.client.files.create(
                file=(f"judgelab-padding-{marker}.jsonl", content, "application/jsonl"), purpose="batch")
        return await create_openai_batch_once(
            self.client, uploaded.id, list(texts), since=since, exclude=exclude,
            max_retries=self.max_retries, model=self.model, host=self.host,
        )

    async def ended(self, batch_id: str) -> bool:
        """Whether the batch will change no more (completed, failed, expired or cancelled)."""
        with self._failing(f"padding batch {batch_id}"):
            batch = await openai_patiently(lambda: self.client.batches.retrieve(batch_id),
                                           what=f"padding batch {batch_id} status")
        return str(batch.status) in _ENDED

    async def results(self, batch_id: str, texts: Mapping[str, str]) -> dict[str, Rewrite]:
        """The rewrites the batch's output file holds (its error file's requests are left out)."""
        with self._failing(f"padding batch {batch_id}"):
            batch = await openai_patiently(lambda: self.client.batches.retrieve(batch_id),
                                           what=f"padding batch {batch_id} status")
            if not batch.output_file_id:
                return {}
            file_id = str(batch.output_file_id)

            async def download() -> bytes:
                return bytes((await self.client.files.content(file_id)).content)

            body = await openai_patiently(download, what=f"padding batch file {file_id}")
        out: dict[str, Rewrite] = {}
        for line in body.splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            key = str(item.get("custom_id"))
            response = item.get("response")
            text = texts.get(key)
            if (text is None or key in out or not isinstance(response, Mapping)
                    or response.get("status_code") != 200 or not isinstance(response.get("body"), Mapping)):
                continue
            out[key] = self.read(text, response["body"])
        return out
