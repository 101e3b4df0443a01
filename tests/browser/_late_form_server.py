"""``streamlit run`` with the rating form drawn late, for browser tests of keys pressed before it.

Run as ``python _late_form_server.py run app.py ...`` (the arguments of ``streamlit``) with
``JUDGELAB_FORM_DELAY`` in seconds: :func:`judgelab.labeler.queue.choice_keys`, which the Rate page
calls after drawing the item's text and before drawing its form, sleeps that long first, as a
script run of a loaded server pauses. With ``JUDGELAB_FORM_GATE`` (a file path) it also waits
while that file exists, so a test can hold the form back for as long as its keys take on a
loaded machine (up to two minutes), then let it come by deleting the file. The server is the
real one; only the gap between the item's text and its form changes, so keys pressed
meanwhile reach a page without a form.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from typing import Any

import judgelab.labeler.queue


def main() -> None:
    """Slow :func:`judgelab.labeler.queue.choice_keys` down, then run ``streamlit`` with this script's arguments."""
    from streamlit.web.cli import main as streamlit_main

    delay = float(os.environ["JUDGELAB_FORM_DELAY"])
    gate = os.environ.get("JUDGELAB_FORM_GATE")
    keys = judgelab.labeler.queue.choice_keys

    @functools.wraps(keys)
    def late(*args: Any, **kwargs: Any) -> Any:
        time.sleep(delay)
        deadline = time.monotonic() + 120
        while gate and os.path.exists(gate) and time.monotonic() < deadline:
            time.sleep(0.05)
        return keys(*args, **kwargs)

    judgelab.labeler.queue.choice_keys = late
    sys.argv = ["streamlit", *sys.argv[1:]]
    streamlit_main()


if __name__ == "__main__":
    main()
