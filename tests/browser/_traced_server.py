"""``streamlit run`` with the store's token checks and label writes logged, for browser tests.

Run as ``python _traced_server.py run app.py ...`` (the arguments of ``streamlit``) with
``JUDGELAB_TRACE`` naming the log file: each :meth:`Store.authenticate` appends ``check``
and each :meth:`Store.add_label` appends ``write``, in the order the server ran them. The
server is the real one; only these two calls are observed.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from judgelab.labeler.store import Store

_LOCK = threading.Lock()


def _logged(name: str, method: Callable[..., Any], path: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        with _LOCK, open(path, "a", encoding="utf-8") as log:
            log.write(name + "\n")
        return method(*args, **kwargs)

    return call


def main() -> None:
    """Log the two calls to ``$JUDGELAB_TRACE``, then run ``streamlit`` with this script's arguments."""
    from streamlit.web.cli import main as streamlit_main

    path = os.environ["JUDGELAB_TRACE"]
    Store.authenticate = _logged("check", Store.authenticate, path)  # type: ignore[method-assign]
    Store.add_label = _logged("write", Store.add_label, path)  # type: ignore[method-assign]
    sys.argv = ["streamlit", *sys.argv[1:]]
    streamlit_main()


if __name__ == "__main__":
    main()
