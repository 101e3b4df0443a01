"""``python -m judgelab.cli._streamlit run APP ...``: Streamlit's command line, telling browsers no server path.

Streamlit sends every browser the main script's absolute path (the ``main_script_path`` of its
``NewSession`` message: the first websocket frame of every session, token or not, and again
with each script run, so with each submit). For judgelab that names the server's install
(``…/site-packages/judgelab/app.py``) to anyone who opens the address. The browser has no use
for it (Streamlit's front end hashes it into an id for its usage statistics, which the app turns
off), so this launcher makes the message say ``app.py`` before Streamlit starts; the server
itself still runs the script from where it is.

It also imports the modules every page's first run needs while the server starts
(:func:`preload`), so the first rater after ``judgelab serve`` does not wait for them.
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
from collections.abc import Callable, Sequence
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
PRELOAD = (
    "judgelab.session",
    "judgelab.views._queue_page",
    "judgelab.views._transcript",
    "judgelab.views._form",
    "labeler.queue",
    "labeler.blinding",
)


def preload() -> threading.Thread:
    """Import :data:`PRELOAD` in a background thread (started; joined by nobody).

    A thread, so Streamlit's health check answers as soon as it would anyway; a first page
    asked for meanwhile waits only for what is still loading (Python's import locks).
    """
    def run() -> None:
        for name in PRELOAD:
            try:
                importlib.import_module(name)
            except Exception:  # the page's own import raises it where it is seen
                return

    thread = threading.Thread(target=run, name="judgelab-preload", daemon=True)
    thread.start()
    return thread


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``streamlit ARGV`` (this process's arguments by default) with the script path hidden."""
    from streamlit.web.cli import main as streamlit_main

    if not hide_script_path():
        print("judgelab: this Streamlit version builds its session message differently; "
              "browsers will receive the app's path on the server", file=sys.stderr)
    sys.argv = ["streamlit", *(sys.argv[1:] if argv is None else argv)]
    if sys.argv[1:2] == ["run"]:
        preload()
    streamlit_main()


if __name__ == "__main__":
    main()
