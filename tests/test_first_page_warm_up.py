"""The rater's first page is got ready while ``judgelab serve`` starts (issue 53 point 4).

The launcher (:mod:`judgelab.cli._streamlit`) imports what a rater's page needs, builds what
its first run would build (Streamlit's emoji catalogue, Python's module index, the self-name
patterns), and opens the project store the pages share; it loads nothing of the admin's
calibration code. And it keeps the compiled page scripts when the last browser leaves.
``bench/first_page.py`` measures what this buys; these tests check that it is done.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judgelab.labeler.store import release_all
from tests.app.conftest import build_pool

APP = Path(__file__).resolve().parents[1] / "judgelab" / "app.py"

#: Run in a fresh interpreter: warm up as the launcher does, then open the rater's first page
#: (AppTest) with ``Store`` unable to open a database, and report what the page imported.
_CHILD = r"""
import json, sys, threading
from judgelab.cli import _streamlit

parsed = threading.Event()
parsed.set()  # AppTest reads Streamlit's settings itself; the launcher waits for the server's
_streamlit.warm_up(parsed)

from streamlit.testing.v1 import AppTest  # the test harness's own imports are not the page's
import judgelab.labeler.store

def refuse(*args, **kwargs):
    raise RuntimeError("the page opened a second store")

judgelab.labeler.store.Store.__init__ = refuse  # the page must use the store the warm-up opened
before = set(sys.modules)
at = AppTest.from_file(sys.argv[1], default_timeout=60)
at.query_params["t"] = sys.argv[2]
at.run()
watched = ("judgelab", "pandas", "numpy", "duckdb", "pyarrow", "psycopg",
           "scipy", "sklearn", "anthropic", "openai", "streamlit.emojis")
print(json.dumps({
    "errors": [str(e.value) for e in at.exception],
    "forms": [json.loads(c.proto.json).get("item") for c in at.get("bidi_component")
              if "judgelab_rating_form" in c.proto.component_name],
    "new": sorted(m for m in set(sys.modules) - before if m.startswith(watched)),
    "admin": sorted(m for m in sys.modules if m.startswith("judgelab.calibration") or m.split(".")[0] in (
        "sklearn", "scipy", "anthropic", "openai", "altair", "matplotlib", "krippendorff")),
}))
"""


def test_the_warm_up_loads_what_a_rater_page_needs_and_no_calibration_code(tmp_path: Path) -> None:
    pool = build_pool(tmp_path / "p.duckdb")
    rater, token = pool.store.add_rater("ana")
    pool.store.assign_k(pool.originals, 1, [rater.rater_id], seed=0)
    release_all()  # the file is the child's now
    done = subprocess.run([sys.executable, "-c", _CHILD, str(APP), token], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "JUDGELAB_DB": str(pool.path)}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["errors"] == []
    assert len(seen["forms"]) == 1, seen  # the first item's rating form is on the page
    assert seen["new"] == [], "the first page still imported these itself"
    assert seen["admin"] == []


def test_page_scripts_are_compiled_before_the_first_page_and_kept_when_the_last_browser_leaves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from streamlit.runtime import runtime

    from judgelab.cli import _streamlit

    monkeypatch.setattr(runtime, "ScriptCache", runtime.ScriptCache)  # undone after the test
    monkeypatch.setattr(_streamlit, "_COMPILED", {})
    monkeypatch.setenv("JUDGELAB_DB", str(tmp_path / "absent" / "p.duckdb"))  # the store's open fails, quietly
    _streamlit.keep_compiled_scripts()
    script = tmp_path / "page.py"
    script.write_text("x = 1\n")
    parsed = threading.Event()
    parsed.set()
    _streamlit.warm_up(parsed, [str(script)])
    script.write_text("x = 2\n")  # from here on, only a compile of its own would read it
    cache = runtime.ScriptCache()  # what Streamlit's Runtime makes, after the warm-up
    compiled = cache.get_bytecode(str(script))
    ran: dict[str, object] = {}
    exec(compiled, ran)
    assert ran["x"] == 1  # the warm-up's compile
    cache.clear()  # what Streamlit does when the last session disconnects
    assert cache.get_bytecode(str(script)) is compiled


def test_streamlit_static_files_are_gzipped_once_and_otherwise_served_as_they_were(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    from starlette.applications import Starlette
    from starlette.testclient import TestClient
    from streamlit import file_util
    from streamlit.web.server.starlette import starlette_static_routes as routes

    from judgelab.cli._streamlit import GzipOnce, compress_static

    monkeypatch.setattr(routes, "create_streamlit_static_handler", routes.create_streamlit_static_handler)
    assert compress_static()
    app = Starlette(routes=routes.create_streamlit_static_assets_routes(base_url=None))
    client = TestClient(app)
    static = Path(file_util.get_static_dir())
    bundle = re.search(r'src="\.?/?(static/js/[^"]+\.js)"', (static / "index.html").read_text()).group(1)  # type: ignore[union-attr]
    plain = (static / bundle).read_bytes()

    got = client.get("/" + bundle, headers={"Accept-Encoding": "gzip, deflate"})
    assert got.status_code == 200 and got.headers["content-encoding"] == "gzip"
    assert got.content == plain and got.num_bytes_downloaded < len(plain) / 2
    assert "immutable" in got.headers["cache-control"]  # Streamlit's one-year cache header is kept
    (handler,) = [h for h in (getattr(r, "app", None) for r in app.routes) if isinstance(h, GzipOnce)]
    assert "/" + bundle in handler._kept  # compressed once, then served from memory
    assert client.get("/" + bundle, headers={"Accept-Encoding": "gzip"}).content == plain

    for headers in ({"Accept-Encoding": "identity"}, {"Accept-Encoding": "gzip", "Range": "bytes=0-99"}):
        same = client.get("/" + bundle, headers=headers)
        assert "content-encoding" not in same.headers
        assert same.content == plain[:len(same.content)] and len(same.content) in (100, len(plain))
    font = next((static / "static" / "media").glob("*.woff2")).relative_to(static).as_posix()
    assert "content-encoding" not in client.get("/" + font, headers={"Accept-Encoding": "gzip"}).headers
