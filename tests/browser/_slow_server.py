"""``streamlit run`` with every label write slowed down, for browser tests of a busy server.

Run as ``python _slow_server.py run app.py ...`` (the arguments of ``streamlit``) with
``JUDGELAB_WRITE_DELAY`` in seconds: each :meth:`Store.add_label` sleeps that long first,
as a write queued behind other raters' work would. The server is the real one; only the
write's timing changes, so keys pressed meanwhile reach a form that is still busy.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from typing import Any

from judgelab.labeler.store import Store


def main() -> None:
    """Slow :meth:`Store.add_label` down, then run ``streamlit`` with this script's arguments."""
    from streamlit.web.cli import main as streamlit_main

    delay = float(os.environ["JUDGELAB_WRITE_DELAY"])
    write = Store.add_label

    @functools.wraps(write)
    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(delay)
        return write(*args, **kwargs)

    Store.add_label = slow  # type: ignore[method-assign]
    sys.argv = ["streamlit", *sys.argv[1:]]
    streamlit_main()


if __name__ == "__main__":
    main()
