"""Helpers of the judging tests: a small pair sample of the FEBRL example with hostile
item text, the judging server as a real subprocess, HTTP calls, and the one error shape."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from abcde.examples import example_paths
from abcde.quality import draw_pair_sample

HOSTILE = ["<script>window.__pwned=1</script>", "<img src=x onerror=window.__pwned=1>"]


def make_sample(root: Path, *, budget: int = 30, seed: int = 1, estimator: str | None = None) -> Path:
    """A FEBRL pair sample whose items carry a hostile ``note`` attribute (alternating payloads);
    ``estimator=None``: the default design of ``abcde pairs``."""
    d = root / "pairs"
    p = example_paths("febrl3")
    kw = {"estimator": estimator} if estimator else {}
    draw_pair_sample(p["base"], p["exp"], d, items=p["items"], budget=budget, seed=seed, **kw)
    items = pq.read_table(d / "items.parquet")
    notes = [HOSTILE[k % 2] for k in range(items.num_rows)]
    pq.write_table(items.append_column("note", pa.array(notes)), d / "items.parquet")
    return d


def fresh_copy(sample: Path, tmp_path: Path) -> Path:
    """A copy of the sample directory without any judgements, for one test."""
    d = tmp_path / "sample"
    shutil.copytree(sample, d, ignore=shutil.ignore_patterns("judgements*", ".judging.lock", "llm-cache*"))
    return d


def start_server(sample: Path, log: Path, *args: str) -> tuple[subprocess.Popen, dict]:
    """``abcde judge serve SAMPLE --port 0 --json ...`` as a subprocess; returns it and its JSON line."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    err = open(log, "ab")
    proc = subprocess.Popen([sys.executable, "-m", "abcde", "judge", "serve", str(sample), "--port", "0", "--json",
                             *args], stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    err.close()
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=30)
        raise AssertionError(f"the server did not start (exit {proc.returncode}): {log.read_text()}")
    return proc, json.loads(line)


def stop(proc: subprocess.Popen) -> None:
    """Kill the server subprocess (if still running) and close its pipe."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)
    proc.stdout.close()


def request(url: str, method: str, path: str, body=None, *, headers=None, raw: bytes | None = None):
    """One HTTP request with the path sent exactly as given (no normalisation); (status, JSON or text)."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    con = http.client.HTTPConnection(host, int(port), timeout=30)
    h = {"Content-Type": "application/json"} if body is not None or raw is not None else {}
    h.update(headers or {})
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    con.request(method, path, body=data, headers=h)
    r = con.getresponse()
    payload = r.read()
    con.close()
    ctype = r.getheader("Content-Type") or ""
    return r.status, (json.loads(payload) if ctype.startswith("application/json") else payload.decode())


def assert_error(resp, status: int, match: str = "") -> dict:
    """The web app's one error shape: ``{"ok": false, "error": "...", "status": N}``."""
    code, body = resp
    assert code == status, (code, body)
    assert isinstance(body, dict) and set(body) == {"ok", "error", "status"}, body
    assert body["ok"] is False and body["status"] == status and isinstance(body["error"], str) and body["error"]
    assert match.lower() in body["error"].lower(), body["error"]
    return body
