"""Secrets: the API key and invite tokens never land in a file judgelab writes.

A judge run goes through the command line exactly as a user would type it, with
``ANTHROPIC_API_KEY=sk-ant-test-<random>`` in the environment, against the local API
server: ``probe`` (runner, padding rewrites, database, JSONL evidence), ``report``
(markdown, PNG, JSON) and ``calibrate`` (markdown, PNG, JSON). Console output goes to log
files, and HOME, TMPDIR and the working directory point into the test's folder, so every
file the tool could write is in reach. Each file is searched as raw bytes; the database is
also searched column by column (DuckDB compresses strings on disk, so a raw grep alone
could miss one), and PNG text chunks are decompressed.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path

import duckdb
import pandas as pd

from judgelab.calibration.mockapi import MockAnthropic
from judgelab.labeler.examples import example_path
from judgelab.labeler.simulate import add_simulated_labels
from judgelab.labeler.store import Store, hash_token, release_all
from tests.reliability.conftest import REPO

DATA = example_path("rubric.toml").parent
#: The installed console script, so the tool runs exactly as a user starts it.
JUDGELAB = str(Path(sys.executable).with_name("judgelab"))


class KeyCheckingAPI(MockAnthropic):
    """The local API server, also counting requests that carried exactly ``key``."""

    def __init__(self, key: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.key = key
        self.with_key = 0

    def handle(
        self, method: str, path: str, raw: bytes, headers: Mapping[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        # anthropic 1.x sends the key as x-api-key, 2.x as a bearer token.
        carried = {headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer ")}
        if self.key in carried:
            with self._lock:
                self.with_key += 1
        return super().handle(method, path, raw, headers)


def _judgelab(args: list[str], *, env: dict[str, str], cwd: Path, log: Path) -> subprocess.CompletedProcess[str]:
    """Run ``judgelab ARGS``, its stdout and stderr saved to ``log`` (a file the tool wrote)."""
    done = subprocess.run(
        [JUDGELAB, *args], env=env, cwd=cwd, capture_output=True,
        text=True, timeout=600,
    )
    log.write_text(f"$ judgelab {' '.join(args)}\n{done.stdout}\n--- stderr ---\n{done.stderr}")
    assert done.returncode == 0, f"judgelab {args[0]} failed:\n{done.stdout}\n{done.stderr}"
    return done


def _png_text(data: bytes) -> bytes:
    """The text chunks of a PNG, decompressed (``tEXt``, ``zTXt``, ``iTXt``)."""
    out = []
    at = 8
    while at + 8 <= len(data):
        length = int.from_bytes(data[at : at + 4], "big")
        kind = data[at + 4 : at + 8]
        body = data[at + 8 : at + 8 + length]
        if kind == b"tEXt":
            out.append(body)
        elif kind == b"zTXt":
            keyword, _, rest = body.partition(b"\0")
            out += [keyword, zlib.decompress(rest[1:])]
        elif kind == b"iTXt":
            keyword, _, rest = body.partition(b"\0")
            compressed, rest = rest[0], rest[2:]
            _lang, _, rest = rest.partition(b"\0")
            _translated, _, text = rest.partition(b"\0")
            out += [keyword, zlib.decompress(text) if compressed else text]
        at += 12 + length
    return b"\n".join(out)


def _db_strings(path: Path) -> Iterator[str]:
    """Every text value in every table of a DuckDB file (read through a fresh connection)."""
    release_all()  # this process's store may still hold the file open
    con = duckdb.connect(str(path), read_only=True)
    try:
        columns = con.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = 'main' AND data_type = 'VARCHAR'"
        ).fetchall()
        for table, column in columns:
            for (value,) in con.execute(f'SELECT "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL').fetchall():
                yield str(value)
    finally:
        con.close()


def _find(root: Path, needle: str) -> list[str]:
    """Where ``needle`` occurs under ``root``: raw bytes, PNG text, or a database value."""
    raw = needle.encode()
    hits = []
    release_all()  # a store of this process closing mid-search would checkpoint away its .wal
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        data = file.read_bytes()
        if raw in data:
            hits.append(f"{file} (bytes)")
        if file.suffix == ".png" and raw in _png_text(data):
            hits.append(f"{file} (PNG text)")
        if file.suffix == ".duckdb" and any(needle in s for s in _db_strings(file)):
            hits.append(f"{file} (database value)")
    return hits


def test_api_key_is_in_no_file_a_judge_run_writes(tmp_path: Path) -> None:
    key = f"sk-ant-test-{secrets.token_hex(20)}"
    home, tmp, work, out, logs = (tmp_path / d for d in ("home", "tmp", "work", "out", "logs"))
    for folder in (home, tmp, work, out, logs):
        folder.mkdir()
    db = tmp_path / "project.duckdb"
    store = Store(db)
    env = {
        **os.environ, "ANTHROPIC_API_KEY": key, "HOME": str(home), "TMPDIR": str(tmp),
        "XDG_CACHE_HOME": str(home / ".cache"), "XDG_CONFIG_HOME": str(home / ".config"),
        "PYTHONPATH": str(REPO), "JUDGELAB_DB": str(db), "COLUMNS": "200",
    }

    for kind, name in (("rubric", "rubric.toml"), ("answers", "answers.jsonl")):
        _judgelab(["import", kind, str(DATA / name), "--db", str(db)], env=env, cwd=work,
                  log=logs / f"import-{kind}.log")
    add_simulated_labels(store, pd.read_csv(DATA / "truth.csv"))

    api = KeyCheckingAPI(key, latency=0.0)
    with api:
        _judgelab(
            ["probe", "--judge", "anthropic", "--base-url", api.base_url, "--dataset", "sample",
             "--n", "12", "--biases", "position,verbosity,formatting", "--out",
             str(out / "results.jsonl"), "--db", str(db), "--no-progress"],
            env=env, cwd=work, log=logs / "probe.log",
        )
        sent = api.count("POST /v1/messages")
        assert sent > 0 and api.with_key == sum(
            n for route, n in api.counters.items() if route.startswith(("POST ", "GET ", "DELETE "))
        ), "every request should have carried the key (else this test proves nothing)"
    report = _judgelab(
        ["report", str(out / "results.jsonl"), "--mitigate", "--out", str(out / "card.md"),
         "--png", str(out / "card.png"), "--json", "--db", str(db)],
        env=env, cwd=work, log=logs / "report.log",
    )
    (out / "card.json").write_text(report.stdout)
    _judgelab(
        ["calibrate", "--db", str(db), "--out", str(out / "calibration.md"), "--png",
         str(out / "calibration.png"), "--json", "--resamples", "200"],
        env=env, cwd=work, log=logs / "calibrate.log",
    )

    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    for expected in ("out/results.jsonl", "out/card.md", "out/card.png", "out/calibration.md",
                     "out/calibration.png", "project.duckdb", "logs/probe.log"):
        assert expected in written, f"{expected} was not written; files: {written}"
    # Positive controls: the search finds what is really there.
    run_id = json.loads((out / "results.jsonl").read_text().splitlines()[0])["run_id"]
    assert _find(tmp_path, run_id), "the search does not find a run id that is stored"
    assert any("project.duckdb (database value)" in h for h in _find(tmp_path, run_id))

    for needle in (key, key.removeprefix("sk-ant-test-")):
        assert _find(tmp_path, needle) == [], f"the API key leaked into: {_find(tmp_path, needle)}"


def test_invite_tokens_are_stored_only_hashed(tmp_path: Path) -> None:
    db = tmp_path / "tokens.duckdb"
    Store(db)
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}
    tokens = []
    for name, admin in (("alice", False), ("boss", True)):
        done = subprocess.run(
            [JUDGELAB, "raters", "add", name, *(["--admin"] if admin else []), "--db", str(db)],
            env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        found = re.search(r"[?&]t=([A-Za-z0-9_-]{20,})", done.stdout)
        assert found, f"no invite link in: {done.stdout!r}"
        tokens.append(found.group(1))
    store = Store(db)
    reissued = store.reissue_token("alice")
    tokens.append(reissued)
    assert store.authenticate(reissued).name == "alice"
    for token in tokens:
        assert _find(tmp_path, token) == [], f"a raw invite token is stored: {_find(tmp_path, token)}"
    # Positive control: the hash of a live token is what is stored, and the search sees it.
    assert any("(database value)" in h for h in _find(tmp_path, hash_token(reissued)))


def test_the_search_finds_a_planted_key(tmp_path: Path) -> None:
    # The scanner above is only as good as its reach: plant a key in each kind of file.
    key = f"sk-ant-test-{secrets.token_hex(20)}"
    (tmp_path / "plain.log").write_text(f"header\n{key}\n")
    Store(tmp_path / "planted.duckdb")
    with duckdb.connect(str(tmp_path / "planted.duckdb")) as con:
        # Many similar strings make DuckDB compress the column (FSST), hiding it from raw bytes.
        con.executemany(
            "INSERT INTO settings VALUES (?, ?, ?)",
            [("bulk", f"k{i}", f"{key[:30]}-{i:05d}-{key[30:]}") for i in range(2000)]
            + [("project", "note", key)],
        )
        con.execute("CHECKPOINT")
    chunk = b"Comment\0\0" + zlib.compress(key.encode())
    png = b"\x89PNG\r\n\x1a\n" + len(chunk).to_bytes(4, "big") + b"zTXt" + chunk + b"\0\0\0\0"
    (tmp_path / "chart.png").write_bytes(png)
    hits = _find(tmp_path, key)
    assert any(h.endswith("plain.log (bytes)") for h in hits)
    assert any(h.endswith("planted.duckdb (database value)") for h in hits)
    assert any(h.endswith("chart.png (PNG text)") for h in hits)
