"""``python -m judgelab.cli._streamlit run APP ...``: Streamlit's command line, telling browsers no server path.

Streamlit sends every browser the main script's absolute path (the ``main_script_path`` of its
``NewSession`` message: the first websocket frame of every session, token or not, and again
with each script run, so with each submit). For judgelab that names the server's install
(``…/site-packages/judgelab/app.py``) to anyone who opens the address. The browser has no use
for it (Streamlit's front end hashes it into an id for its usage statistics, which the app turns
off), so this launcher makes the message say ``app.py`` before Streamlit starts; the server
itself still runs the script from where it is.

It also gets the first rater's page ready while the server starts (:func:`preload`): the modules
every page's first run needs, Streamlit's emoji catalogue (``st.set_page_config``'s icon), the
project store opened with its rubric read; it keeps each page script compiled for the
server's life (:func:`keep_compiled_scripts`), where Streamlit compiles them again whenever the
last browser has left; and it serves Streamlit's JavaScript and CSS gzipped, each file compressed
once (:func:`compress_static`). Measured by ``bench/first_page.py``.
"""

from __future__ import annotations

import atexit
import functools
import gzip
import importlib
import inspect
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

#: What browsers read as the app's script path.
SHOWN_PATH = "app.py"


def hide_script_path() -> bool:
    """Make every ``NewSession`` message Streamlit sends name the script :data:`SHOWN_PATH`.

    Returns:
        Whether it could: ``False`` when this Streamlit builds the message elsewhere (the browser
        then reads the real path; the launcher says so on stderr).
    """
    from streamlit.runtime.app_session import AppSession

    build: Callable[..., Any] | None = getattr(AppSession, "_create_new_session_message", None)
    if build is None or getattr(build, "_judgelab_neutral", False):
        return build is not None

    @functools.wraps(build)
    def neutral(self: AppSession, *args: Any, **kwargs: Any) -> Any:
        msg = build(self, *args, **kwargs)
        msg.new_session.main_script_path = SHOWN_PATH
        return msg

    neutral._judgelab_neutral = True  # type: ignore[attr-defined]
    AppSession._create_new_session_message = neutral  # type: ignore[method-assign]
    return True


#: What the rater pages import: loaded by :func:`preload` while the server starts. The admin
#: pages' calibration code is left to the first admin (it would double the server's memory).
#: ``streamlit.emojis``: the app's page icon is an emoji, and the first ``st.set_page_config``
#: builds Streamlit's catalogue of every emoji to check it (about 0.2 s on 2 busy CPUs).
PRELOAD = (
    "judgelab.session",
    "judgelab.crowd_entry",
    "judgelab.views._crowd",
    "judgelab.views._queue_page",
    "judgelab.views._transcript",
    "judgelab.views._form",
    "judgelab.labeler.queue",
    "judgelab.labeler.blinding",
    "streamlit.emojis",
)


def _config_parsed() -> threading.Event:
    """An event set once Streamlit has read its settings (the command line's flags included)."""
    from streamlit import config

    parsed = threading.Event()
    config.on_config_parsed(parsed.set)
    return parsed


def warm_up(parsed: threading.Event | None = None, scripts: Iterable[str] = ()) -> None:
    """Do now what the first page's run would do first: imports, Python's module index, the store.

    * :data:`PRELOAD`'s imports;
    * Python's index of modules by file: the first element a page draws has Streamlit walk the
      stack (``inspect.stack``, to tell a REPL from ``streamlit run``), and the first walk
      resolves the file of every loaded module (about 1,300, 0.2-0.5 s);
    * the self-name detector's patterns (every answer shown is read again for self-names; its
      first reading compiles them, 0.05-0.25 s);
    * once Streamlit's settings are read (``parsed``; the store's cache is Streamlit's and reads
      them): ``scripts`` compiled as Streamlit compiles them (into the cache
      :func:`keep_compiled_scripts` shares; a first page compiling ``app.py`` and
      ``views/rate.py`` took 0.1-0.2 s), then the project store the pages share, opened with its
      rubric read (:func:`judgelab.session.open_project`).

    A failure stops the warm-up quietly: the page that needs the same thing meets it again and
    shows it where it is seen.
    """
    try:
        for name in PRELOAD:
            importlib.import_module(name)
        inspect.getmodule(inspect.currentframe())  # a frame has no __module__: the full index is built
        from judgelab.labeler.blinding import detect_self_identifying

        detect_self_identifying("As an AI model, I can help.")
        if parsed is not None:
            parsed.wait()
            from streamlit.runtime import runtime

            for script in scripts:
                runtime.ScriptCache().get_bytecode(script)
            from judgelab.session import open_project

            open_project()
    except Exception:  # the page's own call raises it where it is seen
        return


def preload(scripts: Iterable[str] = ()) -> threading.Thread:
    """:func:`warm_up` (of ``scripts``) in a background thread (started; joined by nobody).

    A thread, so Streamlit's health check answers as soon as it would anyway; a first page
    asked for meanwhile waits only for what is still loading (Python's import locks, the
    store's cache).
    """
    thread = threading.Thread(target=warm_up, args=(_config_parsed(), tuple(scripts)), name="judgelab-preload",
                              daemon=True)
    thread.start()
    return thread


#: The compiled scripts every :func:`keep_compiled_scripts` cache shares: the runtime's, and the
#: one :func:`warm_up` fills before the first page.
_COMPILED: dict[str, Any] = {}


def keep_compiled_scripts() -> None:
    """Keep the app's compiled page scripts for the server's life, in one cache.

    Streamlit compiles a page script (with its "magic" rewrite) on a session's first run and
    forgets every compiled script when the last browser disconnects, so that a watched file's
    edits are seen. ``judgelab serve`` watches no file (``server.fileWatcherType none``: the
    app is an installed package; a new version needs a restart anyway), so forgetting only
    makes the next rater's first page compile ``app.py`` and ``views/rate.py`` again (50-90 ms
    on 2 busy CPUs). Every such cache shares one store (:data:`_COMPILED`), so
    :func:`warm_up` can compile the first page's scripts before it is asked for. Must run before
    Streamlit makes its runtime.
    """
    from streamlit.runtime import runtime
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    if getattr(runtime.ScriptCache, "_judgelab_kept", False):
        return

    class KeptScriptCache(ScriptCache):
        """A script cache whose ``clear`` keeps what it holds (see :func:`keep_compiled_scripts`)."""

        _judgelab_kept = True

        def __init__(self) -> None:
            super().__init__()
            self._cache = _COMPILED

        def clear(self) -> None:
            return None

    runtime.ScriptCache = KeptScriptCache  # type: ignore[misc]


#: What :class:`GzipOnce` compresses: text; fonts (woff2) and images are compressed already.
_COMPRESSIBLE = (b"text/", b"application/javascript", b"application/json", b"image/svg+xml")
#: Smaller bodies gain nothing worth a header (Streamlit's own middleware uses the same floor).
_GZIP_MIN_BYTES = 1000


class GzipOnce:
    """Streamlit's static files (``/static/...``), gzipped for browsers that accept it, each compressed once.

    Streamlit serves its hashed bundles with a one-year ``immutable`` cache header but
    uncompressed (its gzip middleware skips ``/static/`` so as not to compress the same bytes
    again on every request): a rater's first page is about 2.8 MB on the wire, 1.2 MB gzipped.
    These files never change while the server runs, so each is compressed on its first request
    (level 6: about 0.1 s of CPU for a rater page's 2.6 MB) and the compressed bytes are kept
    (about 1 MB for the rater pages; at most the package's static folder, about 8 MB). Anything
    else (other paths, ``HEAD``, a ``Range`` request, a 304 or an error, fonts) passes through
    as Streamlit sends it; the cache header is Streamlit's own.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self._kept: dict[str, tuple[bytes, list[tuple[bytes, bytes]]]] = {}

    def __getattr__(self, name: str) -> Any:  # the wrapped StaticFiles' own attributes
        return getattr(self.app, name)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or ()) if scope.get("type") == "http" else {}
        path = str(scope.get("path", ""))
        if (scope.get("type") != "http" or scope.get("method") != "GET" or "/static/" not in path
                or b"gzip" not in headers.get(b"accept-encoding", b"") or b"range" in headers):
            await self.app(scope, receive, send)
            return
        kept = self._kept.get(path)
        if kept is None:
            sent: list[Any] = []

            async def keep(message: Any) -> None:
                sent.append(message)

            await self.app(scope, receive, keep)
            start = sent[0] if sent and sent[0]["type"] == "http.response.start" else None
            answer = dict(start["headers"]) if start else {}
            body = b"".join(m.get("body", b"") for m in sent[1:])
            if (start is None or start["status"] != 200 or b"content-encoding" in answer
                    or not answer.get(b"content-type", b"").startswith(_COMPRESSIBLE)
                    or len(body) < _GZIP_MIN_BYTES):
                for message in sent:
                    await send(message)
                return
            packed = gzip.compress(body, compresslevel=6, mtime=0)
            etag = answer.get(b"etag")
            kept_headers = [(k, v) for k, v in start["headers"] if k not in (b"content-length", b"etag")]
            kept_headers += [(b"content-encoding", b"gzip"), (b"vary", b"Accept-Encoding")]
            if etag:  # another body than the file's: its tag is not the file's
                kept_headers.append((b"etag", b'W/"' + etag.strip(b'W/"') + b'-gzip"'))
            kept = (packed, kept_headers)
            self._kept[path] = kept
        body, kept_headers = kept
        await send({"type": "http.response.start", "status": 200,
                    "headers": [*kept_headers, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def compress_static() -> bool:
    """Serve Streamlit's static files through :class:`GzipOnce`.

    Returns:
        Whether it could: ``False`` when this Streamlit builds its static files elsewhere (they
        are then served as Streamlit serves them, uncompressed). Must run before the server starts.
    """
    try:
        from streamlit.web.server.starlette import starlette_static_routes as routes
    except ImportError:
        return False
    make: Callable[..., Any] | None = getattr(routes, "create_streamlit_static_handler", None)
    if make is None or getattr(make, "_judgelab_gzip", False):
        return make is not None

    @functools.wraps(make)
    def gzipped(*args: Any, **kwargs: Any) -> Any:
        return GzipOnce(make(*args, **kwargs))

    gzipped._judgelab_gzip = True  # type: ignore[attr-defined]
    routes.create_streamlit_static_handler = gzipped
    return True


def use_sign_in(argv: list[str]) -> list[str]:
    """``argv`` with Streamlit pointed at a secrets file holding the sign-in provider, when one was handed over.

    ``judgelab serve`` hands the ``[auth]`` section over in :data:`~judgelab.admin._signin.AUTH_ENV`
    (JSON), so nobody writes ``.streamlit/secrets.toml`` by hand. It goes into a folder only this
    user can read, removed when the server exits; ``--secrets.files`` names that file alone, so a
    ``secrets.toml`` where the server runs cannot change who signs in.
    """
    from judgelab.admin._signin import AUTH_ENV, secrets_toml

    raw = os.environ.pop(AUTH_ENV, None)
    if not raw:
        return argv
    folder = tempfile.mkdtemp(prefix="judgelab-auth-")  # mode 0700
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = os.path.join(folder, "secrets.toml")
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as f:
        f.write(secrets_toml(json.loads(raw)))
    return [*argv, "--secrets.files", path]


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``streamlit ARGV`` (this process's arguments by default) with the script path hidden."""
    from streamlit.web.cli import main as streamlit_main

    if not hide_script_path():
        print("judgelab: this Streamlit version builds its session message differently; "
              "browsers will receive the app's path on the server", file=sys.stderr)
    sys.argv = ["streamlit", *(sys.argv[1:] if argv is None else argv)]
    if sys.argv[1:2] == ["run"] and len(sys.argv) > 2:
        sys.argv = use_sign_in(sys.argv)
        keep_compiled_scripts()
        compress_static()
        # The app and its rater's landing page (views/rate.py beside judgelab/app.py).
        main_script = Path(sys.argv[2]).resolve()
        landing = main_script.parent / "views" / "rate.py"
        preload([str(main_script), *([str(landing)] if landing.is_file() else [])])
    streamlit_main()


if __name__ == "__main__":
    main()
