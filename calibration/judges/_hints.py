"""The fix for each way a request to a judge's API can fail, in the words of the options that exist.

Each failure gets the fix that would fix *it*: an unreachable server is not helped by fewer calls
in flight, nor a bad key by more retries. The options named are the judging commands' own
(``--base-url``, ``--timeout``, ``--concurrency``, ``--max-retries``, ``--model``, ``--batch``),
and the environment variables the judge reads (:data:`ENV`).
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

__all__ = ["ENV", "fix_for", "origin_of"]

Provider = Literal["anthropic", "openai"]

ENV: dict[Provider, tuple[str, str]] = {
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
}
"""The key and base-URL environment variables of each provider's SDK."""


def origin_of(exc: BaseException) -> str:
    """The scheme, host and port a failed SDK request went to ("the API" when unknown).

    >>> class E(Exception):
    ...     class request:
    ...         url = "http://127.0.0.1:9/v1/messages?beta=true"
    >>> origin_of(E()), origin_of(ValueError())
    ('http://127.0.0.1:9', 'the API')
    """
    request = getattr(exc, "request", None)
    url = str(getattr(request, "url", "") or "")
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else "the API"


def fix_for(status: int | None, *, timed_out: bool, provider: Provider, url: str) -> str:
    """One sentence that starts with "Fix:" for a request that failed for good.

    Args:
        status: The HTTP status of the last reply (``None``: no reply at all).
        timed_out: No reply because the client's timeout ran out (else: the connection failed).
        provider: Whose environment variables to name.
        url: Where the request went (:func:`origin_of`).

    >>> fix_for(None, timed_out=False, provider="anthropic", url="http://127.0.0.1:9")[:60]
    'Fix: no connection to http://127.0.0.1:9: check that the ser'
    >>> "--concurrency" in fix_for(429, timed_out=False, provider="openai", url="x")
    True
    >>> "ANTHROPIC_API_KEY" in fix_for(401, timed_out=False, provider="anthropic", url="x")
    True
    """
    key, base = ENV[provider]
    if status is None and timed_out:
        return (f"Fix: {url} sent no reply within the timeout: check that the server there is up and not stuck, "
                "or raise --timeout (seconds per attempt) for a slow model.")
    if status is None:
        return (f"Fix: no connection to {url}: check that the server there is up and that --base-url (or "
                f"{base}) names it, host and port; a proxy or firewall may be in the way.")
    if status == 401:
        return f"Fix: the API key was refused: check {key} (or the app's secret) for this endpoint ({url})."
    if status == 403:
        return (f"Fix: the key may not use this model or workspace: check the key's permissions at {url}, "
                "or choose a --model it may use.")
    if status == 404:
        return (f"Fix: check --model (the model id {url} serves) and --base-url (an OpenAI-compatible server's "
                "URL usually ends in /v1).")
    if status in (400, 422):
        return ("Fix: the API refused the request as invalid (its message above says why): check --model and "
                "the judge spec's max_tokens and temperature.")
    if status == 413:
        return ("Fix: the request is larger than the API takes: shorten the prompts or answers (a batch too "
                "large is split by --batch itself).")
    if status == 408:
        return f"Fix: {url} timed the request out: raise --timeout, or run the same command again later."
    if status == 429:
        return ("Fix: the rate limit held through every retry: lower --concurrency, raise --max-retries "
                "(each retry waits as long as retry-after says), or use --batch (a batch has its own limits).")
    if status in (503, 529):
        return ("Fix: the API is overloaded: run the same command again later (only the failed calls are "
                "sent), raise --max-retries, or use --batch.")
    if status >= 500:
        return (f"Fix: {url} failed on its side (HTTP {status}): run the same command again later (only the "
                "failed calls are sent), or raise --max-retries.")
    return f"Fix: read the API's message above (HTTP {status}); run the same command again once it is resolved."
