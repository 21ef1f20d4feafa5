"""Garbage is never a judgement (issue 25, class 4).

An OpenAI-compatible endpoint on 127.0.0.1 answers chosen pairs with what broken endpoints send
with HTTP 200 (an HTML page, a JSON error object, an empty body, a completion with trailing junk,
a cut-off completion, a refusal) and others with real answers ("Same.", "SAME", "different").
Only an answer that parses to same/different/unsure is a judgement: anything else is asked again,
then the pair is left unjudged, counted, never cached, and the next run asks exactly those pairs.
The key goes only where it is safe, and a missing key fails at once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from abcde.errors import InputError
from abcde.judging import JudgementStore, LLMJudge, parse_answer
from abcde.judging.llm import UnusableAnswerError
from abcde.judging.models import STOP_AFTER_UNUSABLE
from abcde.util.net import is_loopback_url
from judging_helpers import make_sample

ENV = {k: v for k, v in os.environ.items() if k not in ("ABCDE_LLM_API_KEY", "OPENAI_API_KEY", "ABCDE_LLM_BASE_URL",
                                                          "OPENAI_BASE_URL", "ABCDE_LLM_MODEL", "OPENAI_MODEL")}
ENV.update({"NO_COLOR": "1", "COLUMNS": "400"})


def completion(content, **message) -> bytes:
    return json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "fake-1", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content, **message}, "finish_reason": "stop"}]}).encode()


JSON = "application/json"
#: What the endpoint sends, always with HTTP 200: (body, content type, the judgement it is, or None).
ANSWERS = {
    "an HTML error page": (b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway"
                           b"</h1><p>The upstream server sent a different answer. Try again.</p></body></html>",
                           "text/html", None),
    "a JSON error object": (json.dumps({"error": {"message": "The same request failed upstream.",
                                                  "type": "server_error"}}).encode(), JSON, None),
    "an empty body": (b"", JSON, None),
    "a valid answer with trailing junk": (completion("same") + b"\n}<!-- junk -->", JSON, None),
    "a truncated JSON": (completion("same")[:-30], JSON, None),
    "a refusal text": (completion("I'm sorry, but I can't help with identifying people."), JSON, None),
    "a refusal": (completion(None, refusal="I can't help with that."), JSON, None),
    "Same.": (completion("Same."), JSON, "same"),
    "SAME": (completion("SAME"), JSON, "same"),
}
GARBAGE = [k for k, v in ANSWERS.items() if v[2] is None]


class Endpoint:
    """``POST /v1/chat/completions`` on 127.0.0.1. The judge runs with ``--show-ids``, so the prompt
    names both items; ``kinds`` maps a pair ``(item_a, item_b)`` to one of :data:`ANSWERS`, any
    other pair (or every pair with ``everything``) gets ``default``."""

    def __init__(self):
        self.kinds: dict[tuple, str] = {}
        self.everything: str | None = None
        self.asked: list[tuple] = []
        self.lock = threading.Lock()
        ep = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                ids = tuple(re.findall(r"Record [AB]:\nitem_id: (.*)\n", prompt))
                with ep.lock:
                    ep.asked.append(ids)
                    kind = ep.everything or ep.kinds.get(ids)
                data, ctype = (ANSWERS[kind][:2] if kind else (completion("different"), JSON))
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def endpoint():
    e = Endpoint()
    yield e
    e.close()


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return make_sample(tmp_path_factory.mktemp("model-answers"))


def fresh(sample: Path, tmp_path: Path) -> Path:
    d = tmp_path / "pairs"
    shutil.copytree(sample, d, ignore=shutil.ignore_patterns("judgements*", ".judging*", "llm-cache*"))
    return d


def judge_model(d: Path, url: str, *extra, json_out: bool = True) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess."""
    args = ["judge", "model", str(d), "--llm-base-url", url, "--model", "fake-1", "--show-ids", "--hide", "entity_id",
            "--max-retries", "1", "--retry-backoff", "0.01", *extra] + (["--json"] if json_out else [])
    return subprocess.run([sys.executable, "-m", "abcde", *args], capture_output=True, text=True, timeout=300,
                          env=ENV)


def cached(d: Path) -> list[str]:
    con = sqlite3.connect(d / "llm-cache.sqlite")
    try:
        return sorted(r[0] for r in con.execute("SELECT answer FROM answers"))
    finally:
        con.close()


def model_judgements(d: Path) -> dict:
    return {j.pair_id: j.judgement for j in JudgementStore(d).live(source="model")}


def test_garbage_is_never_a_judgement_and_a_rerun_asks_exactly_the_failed_pairs(endpoint, sample, tmp_path):
    d = fresh(sample, tmp_path)
    tasks = JudgementStore(d).tasks
    kind_of = {t["pair_id"]: kind for t, kind in zip(tasks, ANSWERS)}  # one pair per kind of answer
    endpoint.kinds = {(t["item_a"], t["item_b"]): kind_of[t["pair_id"]] for t in tasks if t["pair_id"] in kind_of}
    garbage = {p for p, k in kind_of.items() if ANSWERS[k][2] is None}
    pair_of = {t["pair_id"]: (t["item_a"], t["item_b"]) for t in tasks}
    n, g = len(tasks), len(garbage)
    assert g == len(GARBAGE) == 7

    r = judge_model(d, endpoint.url, "--concurrency", "4")
    assert r.returncode == 1 and "Traceback" not in r.stdout + r.stderr, r.stderr  # pairs left unjudged: exit 1
    out = json.loads(r.stdout)
    assert out["judged_now"] == n - g and out["unjudged_pairs"] == g and out["already_judged"] == 0
    assert out["answers"] == {"same": 2, "different": n - g - 2, "unsure": 0}
    assert {u["pair_id"] for u in out["unusable"]} <= garbage and len(out["unusable"]) == min(g, 5)
    # every unusable answer was asked twice (--max-retries 1), every usable one once
    assert out["judge_stats"] == {"requests": n + g, "retries": g, "cache_hits": 0, "unusable_answers": 2 * g}
    assert sorted(endpoint.asked) == sorted([*pair_of.values(), *(pair_of[p] for p in garbage)])
    # the judgements written: only the real answers ("Same." and "SAME" are same)
    want = {p: ("same" if kind_of.get(p) in ("Same.", "SAME") else "different") for p in pair_of if p not in garbage}
    assert model_judgements(d) == want
    # the cache: only usable answers, one per judged pair; none of the garbage
    assert cached(d) == sorted(["Same.", "SAME", *["different"] * (n - g - 2)])

    # Run again while the endpoint still sends garbage: exactly the failed pairs are asked (twice each).
    endpoint.asked.clear()
    r = judge_model(d, endpoint.url, "--concurrency", "4")
    again = json.loads(r.stdout)
    assert r.returncode == 1 and again["judged_now"] == 0 and again["already_judged"] == n - g
    assert sorted(endpoint.asked) == sorted([pair_of[p] for p in garbage] * 2)
    assert model_judgements(d) == want and len(cached(d)) == n - g

    # The endpoint mended: the next run asks exactly the failed pairs, once each, and completes.
    endpoint.asked.clear()
    endpoint.kinds = {}
    r = judge_model(d, endpoint.url, "--concurrency", "4", json_out=False)
    assert r.returncode == 0, r.stderr
    assert sorted(endpoint.asked) == sorted(pair_of[p] for p in garbage)
    assert "judged 7 pairs now" in r.stdout and "0 left unjudged" in r.stdout
    assert model_judgements(d) == {**want, **dict.fromkeys(garbage, "different")}
    assert len(cached(d)) == n


def test_without_json_the_unjudged_pairs_are_one_error_line_after_the_summary(endpoint, sample, tmp_path):
    d = fresh(sample, tmp_path)
    t = JudgementStore(d).tasks[0]
    endpoint.kinds = {(t["item_a"], t["item_b"]): "an HTML error page"}
    r = judge_model(d, endpoint.url, json_out=False)
    assert r.returncode == 1 and "Traceback" not in r.stdout + r.stderr
    assert "judged 29 pairs now" in r.stdout and "1 left unjudged" in r.stdout
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("Error: 1 pair got no usable answer") and t["pair_id"] in err[0]
    assert "not a chat completion" in err[0] and "run the command again" in err[0]


def test_an_endpoint_that_only_sends_garbage_is_stopped(endpoint, sample, tmp_path):
    """An endpoint answering every request with an error page is not asked about every pair: the run
    stops after STOP_AFTER_UNUSABLE pairs in a row without a usable answer, in one line."""
    d = fresh(sample, tmp_path)
    endpoint.everything = "an HTML error page"
    r = judge_model(d, endpoint.url, "--concurrency", "1", "--max-retries", "0", json_out=False)
    assert r.returncode == 1 and "Traceback" not in r.stdout + r.stderr
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and f"no usable answer to {STOP_AFTER_UNUSABLE} pairs in a row" in err[0], r.stderr
    assert STOP_AFTER_UNUSABLE <= len(endpoint.asked) <= STOP_AFTER_UNUSABLE + 1  # + the one call in flight
    assert model_judgements(d) == {} and cached(d) == []


def test_an_old_cache_entry_that_is_not_an_answer_is_asked_again(endpoint, tmp_path):
    """Earlier versions cached whatever came back (an HTML page parsed as 'different'): such an
    entry is never used; the pair is asked, and the usable answer replaces it."""
    j = LLMJudge(base_url=endpoint.url, model="fake-1", cache=tmp_path / "c.sqlite", backoff=0.001)
    a, b = {"item_id": "x1", "name": "ann"}, {"item_id": "x2", "name": "anne"}
    key = j._cache_key(j.messages(a, b))
    j.cache.put(key, "fake-1", ANSWERS["an HTML error page"][0].decode())
    assert j(a, b) == "different" and j.stats["requests"] == 1 and j.stats["cache_hits"] == 0
    assert j.cache.get(key) == "different"
    assert j(a, b) == "different" and j.stats["cache_hits"] == 1 and j.stats["requests"] == 1


@pytest.mark.parametrize("kind", GARBAGE)
def test_each_kind_of_garbage_raises_for_its_pair_and_is_not_cached(kind, endpoint, tmp_path):
    j = LLMJudge(base_url=endpoint.url, model="fake-1", cache=tmp_path / "c.sqlite", max_retries=2, backoff=0.001)
    endpoint.everything = kind
    with pytest.raises(UnusableAnswerError, match="no usable answer in 3 attempts"):
        j({"item_id": "a"}, {"item_id": "b"})
    assert j.stats["requests"] == 3 and j.stats["unusable_answers"] == 3 and j.stats["retries"] == 2
    con = sqlite3.connect(tmp_path / "c.sqlite")
    assert con.execute("SELECT count(*) FROM answers").fetchone()[0] == 0
    con.close()


@pytest.mark.parametrize("text, want", [
    ("Same.", "same"), ("SAME", "same"), ("same", "same"), ("  Different \n", "different"), ("unsure", "unsure"),
    ("They are the same person.", "same"), ("```\nsame\n```", "same"),
    ("<html><body><p>Try a different server</p></body></html>", None), ('{"error": "the same key"}', None),
    ("[same]", None), ("same</s>", None), ("I'm sorry, but I can't help with that.", None),
    ("I cannot tell whether they are the same.", None), (" ".join(["word"] * 30) + " same", None), ("", None)])
def test_what_parses(text, want):
    assert parse_answer(text) == want


# -- where the key may go -----------------------------------------------------------------------------

def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "abcde", *map(str, args)], capture_output=True, text=True, timeout=120,
                          env=ENV)


def one_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 1 and "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and r.stdout == "", r.stderr
    return lines[0]


@pytest.mark.parametrize("base_url", [None, "https://llm.example.invalid/v1", "http://192.0.2.1:8000/v1"])
def test_no_key_fails_at_once_naming_the_variables(base_url, sample, tmp_path):
    """No key and an endpoint elsewhere: refused before any request (it used to retry for 71 s, then
    fail on DNS), naming the variables read; nothing is written."""
    d = fresh(sample, tmp_path)
    before = sorted(p.name for p in d.iterdir())
    line = one_line(cli("judge", "model", d, "--model", "m", *(["--llm-base-url", base_url] if base_url else [])))
    assert "No API key" in line and "ABCDE_LLM_API_KEY" in line and "OPENAI_API_KEY" in line and "--api-key" in line
    assert (base_url or "https://api.openai.com/v1") in line
    assert sorted(p.name for p in d.iterdir()) == before


def test_a_server_on_this_machine_needs_no_key(endpoint, sample, tmp_path):
    d = fresh(sample, tmp_path)
    r = judge_model(d, endpoint.url.replace("127.0.0.1", "localhost"), "--limit", "2", json_out=False)
    assert r.returncode == 0, r.stderr
    assert len(model_judgements(d)) == 2


@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_key_to_plain_http_elsewhere_needs_allow_insecure_http(how, sample, tmp_path):
    d = fresh(sample, tmp_path)
    secret = "sk-test-SECRET-9f1"
    key = ["--api-key", secret] if how == "option" else []
    env = {**ENV, "ABCDE_LLM_API_KEY": secret} if how == "environment" else ENV
    r = subprocess.run([sys.executable, "-m", "abcde", "judge", "model", str(d), "--model", "m", "--llm-base-url",
                        "http://192.0.2.1:8000/v1", *key], capture_output=True, text=True, timeout=120, env=env)
    line = one_line(r)
    assert "plain http://" in line and "--allow-insecure-http" in line and secret not in r.stdout + r.stderr
    # with the option it is allowed (the judge is made; no request is sent here)
    LLMJudge(base_url="http://192.0.2.1:8000/v1", model="m", api_key=secret, allow_insecure_http=True).close()
    with pytest.raises(InputError, match="allow_insecure_http=True"):
        LLMJudge(base_url="http://192.0.2.1:8000/v1", model="m", api_key=secret)


@pytest.mark.parametrize("url, loopback", [
    ("http://127.0.0.1:8000/v1", True), ("http://127.0.0.2/v1", True), ("http://localhost:1/v1", True),
    ("http://[::1]:8000/v1", True), ("http://LOCALHOST/v1", True), ("http://192.0.2.1/v1", False),
    ("https://api.openai.com/v1", False), ("http://localhost.example.com/v1", False), ("http://10.0.0.1/v1", False)])
def test_what_is_this_machine(url, loopback):
    assert is_loopback_url(url) is loopback
    # a key over plain http is fine to this machine, and over https anywhere
    LLMJudge(base_url=url if loopback else url.replace("http://", "https://"), model="m", api_key="k").close()
