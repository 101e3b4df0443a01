"""``python -m judgelab.cli._streamlit run APP ...``: Streamlit's command line, telling browsers no server path.

Streamlit sends every browser the main script's absolute path (the ``main_script_path`` of its
``NewSession`` message: the first websocket frame of every session, token or not, and again
with each script run, so with each submit). For judgelab that names the server's install
(``…/site-packages/judgelab/app.py``) to anyone who opens the address. The browser has no use
for it (Streamlit's front end hashes it into an id for its usage statistics, which the app turns
off), so this launcher makes the message say ``app.py`` before Streamlit starts; the server
itself still runs the script from where it is.
"""

from __future__ import annotations

import functools
import sys
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


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``streamlit ARGV`` (this process's arguments by default) with the script path hidden."""
    from streamlit.web.cli import main as streamlit_main

    if not hide_script_path():
        print("judgelab: this Streamlit version builds its session message differently; "
              "browsers will receive the app's path on the server", file=sys.stderr)
    sys.argv = ["streamlit", *(sys.argv[1:] if argv is None else argv)]
    streamlit_main()


if __name__ == "__main__":
    main()
