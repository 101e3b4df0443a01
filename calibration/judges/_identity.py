"""Which upstream batch is this run's: something only this run wrote, never size and time.

A batch whose id never came back (the create reply cut short, the process killed before the id
was stored) has to be found again among every batch of the API key's workspace, which other
projects and other judgelab databases on the same key share. Size and creation time cannot tell
two same-size batches apart, so each batch a run submits carries a **tag** drawn when its intent
is recorded: every custom id is ``<tag>_<cache key prefix>`` (:func:`wire_id`), and on the OpenAI
Batch API the batch's ``metadata`` also carries a digest of those ids (:func:`marker_of`). A
batch is adopted only when what it holds was written by this run:

* Anthropic's Message Batches keep no client-side metadata (``create`` takes only the requests
  and, in the installed SDK, ``user_profile_id``/``workspace_id``, which are not markers) and
  show a batch's custom ids only in its results, once it has ended. A same-size candidate is
  therefore waited for until it ends and adopted only if its results name exactly this
  intent's custom ids (:class:`BatchSearch`, :func:`identify`).
* OpenAI's batches carry ``metadata``: a candidate is adopted only when its marker is the
  digest of this intent's custom ids.

When neither can decide (custom ids written before tags existed, a candidate whose results
cannot be read, a wait cut short), nothing is adopted: :class:`BatchInDoubt` names the
candidates, and the user can name theirs with ``--adopt-batch ID`` (checked the same way).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass

from judgelab.labeler.errors import JudgeError

__all__ = [
    "BatchInDoubt",
    "BatchSearch",
    "identify",
    "is_tagged",
    "marker_of",
    "new_tag",
    "wire_id",
]

log = logging.getLogger(__name__)

_TAG = re.compile(r"jl[0-9a-f]{12}_")
_KEY_CHARS = 64 - 15  # custom ids are at most 64 characters; a tag and its "_" take 15


def new_tag() -> str:
    """A fresh batch tag: ``"jl"`` and 48 random bits as 12 hex digits.

    Drawn from :mod:`secrets`, not a seeded generator: its whole purpose is that no other run,
    whatever its seed or plan, writes the same one.
    """
    return "jl" + secrets.token_hex(6)


def wire_id(tag: str, key: str) -> str:
    """The custom id a batch request is sent under: the tag, ``_``, the cache key's first 49 digits.

    >>> wire_id("jl0123456789ab", "f" * 64)[:20], len(wire_id("jl0123456789ab", "f" * 64))
    ('jl0123456789ab_fffff', 64)
    """
    return f"{tag}_{key[:_KEY_CHARS]}"


def is_tagged(custom_ids: Collection[str]) -> bool:
    """Whether every custom id carries one and the same batch tag (written by :func:`wire_id`).

    >>> is_tagged(["jl0123456789ab_aa", "jl0123456789ab_bb"]), is_tagged(["aa" * 32])
    (True, False)
    >>> is_tagged(["jl0123456789ab_aa", "jl0123456789ac_bb"])
    False
    """
    tags = {cid[:15] for cid in custom_ids}
    return bool(custom_ids) and len(tags) == 1 and all(_TAG.fullmatch(t) for t in tags)


def key_prefix(custom_id: str) -> str:
    """The cache-key part of a custom id (the whole id when it carries no tag).

    >>> key_prefix("jl0123456789ab_abc"), key_prefix("abc")
    ('abc', 'abc')
    """
    return custom_id[15:] if _TAG.match(custom_id) else custom_id


def marker_of(custom_ids: Collection[str]) -> str:
    """The digest of a batch's custom ids, written into an OpenAI batch's ``metadata``.

    >>> marker_of(["b", "a"]) == marker_of(["a", "b"]), len(marker_of(["a"]))
    (True, 32)
    """
    return hashlib.sha256("\n".join(sorted(custom_ids)).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class BatchSearch:
    """What a look for a lost batch found.

    Attributes:
        found: The batch whose contents prove it is this intent's (``None``: none does).
        pending: Same-size batches created since the intent whose contents cannot be read yet
            (still processing): one of them may be this intent's.
        foreign: Same-size batches checked and found to hold another run's requests.
        undecidable: Ended same-size batches that cannot be told apart from this intent's:
            their results could not be read, or they match an intent whose custom ids carry
            no tag (written before tags existed, so another project's identical plan would
            look the same): a doubt only the user can settle (``--adopt-batch``).
    """

    found: str | None
    pending: tuple[str, ...] = ()
    foreign: tuple[str, ...] = ()
    undecidable: tuple[str, ...] = ()


class BatchInDoubt(JudgeError):
    """A lost batch could not be told from another run's: nothing was adopted, nothing re-sent.

    Attributes:
        candidates: The batches that may be it.
        custom_ids: The lost intent's custom ids.
    """

    def __init__(self, message: str, *, candidates: Sequence[str], custom_ids: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.candidates = tuple(candidates)
        self.custom_ids = tuple(custom_ids)


async def identify(
    search: Callable[[], Awaitable[BatchSearch]],
    *,
    poll_interval: float,
    timeout: float | None = None,
    what: str = "batch",
) -> str | None:
    """Look for a lost batch until it is found, or no candidate is left that could be it.

    Candidates still processing are waited for (they end within 24 h: a batch expires then),
    polled every ``poll_interval`` seconds, since only an ended batch shows its custom ids.

    Args:
        search: One look (the back-end's listing and checks).
        poll_interval: Seconds between looks while candidates are processing.
        timeout: Give up waiting after this many seconds (``None``: until they end).
        what: Names the intent in messages.

    Returns:
        The batch's id, or ``None`` when no candidate is this intent's (it was never created).

    Raises:
        BatchInDoubt: Candidates that cannot be checked remain (undecidable, or ``timeout``).
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    said = False
    while True:
        result = await search()
        if result.found is not None:
            return result.found
        if result.undecidable:
            raise BatchInDoubt(
                f"{what}: its create reply was lost, and judgelab cannot tell whether batch(es) "
                f"{', '.join(result.undecidable)} (same size, created since) hold this run's requests "
                "(results unreadable, or custom ids written before batch tags existed)",
                candidates=result.undecidable + result.pending,
            )
        if not result.pending:
            return None
        if deadline is not None and time.monotonic() >= deadline:
            raise BatchInDoubt(
                f"{what}: its create reply was lost, and batches {', '.join(result.pending)} of the same "
                f"size, created since, were still processing after {timeout:g} s; only an ended batch "
                "shows whose requests it holds",
                candidates=result.pending,
            )
        if not said:
            log.warning("%s: create reply lost; waiting for batches %s to end to see whether one is "
                        "this run's (only an ended batch shows its custom ids)", what, ", ".join(result.pending))
            said = True
        await asyncio.sleep(poll_interval)
