"""Model judges: a Python callable, and the LLM judge against a small OpenAI-compatible HTTP server
started here on 127.0.0.1 (scripted answers: garbage, HTTP 500, 429 with Retry-After, 401, a redirect, a
slow answer); the cache means no pair is paid for twice; 'abcde quality --source model' works on the result;
agreement."""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.errors import InputError, MissingDependencyError
from abcde.judging import JudgementStore, LLMError, LLMJudge, cohen_kappa, fleiss_kappa, parse_answer
from abcde.judging.agreement import agreement
from abcde.judging.models import judge_with_model
from judging_helpers import fresh_copy, make_sample


class FakeLLM:
    """An OpenAI-compatible /v1/chat/completions server. ``script`` holds responses for the next
    requests ((status, content or body, headers[, seconds to wait first])); when it is empty the answer
    comes from the records: same surname ⇒ "Same.", else "different", garbage when the given names
    start with 'a'."""

    def __init__(self):
        self.requests: list[dict] = []
        self.times: list[float] = []
        self.script: list[tuple] = []
        self.lock = threading.Lock()
        fake = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake.lock:
                    fake.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                    fake.times.append(time.perf_counter())
                    step = fake.script.pop(0) if fake.script else None
                if step is None:
                    step = (200, fake.answer(body["messages"][-1]["content"]), {})
                status, content, headers, *delay = step
                if delay:
                    time.sleep(delay[0])
                data = json.dumps({"id": "x", "object": "chat.completion", "model": body["model"], "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}
                ) if status == 200 else json.dumps({"error": {"message": content}})
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                try:
                    self.end_headers()
                    self.wfile.write(data.encode())
                except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @staticmethod
    def answer(prompt: str) -> str:
        a, b = prompt.split("Record B:")
        sa, sb = (re.search(r"surname: (.*)", x).group(1) for x in (a, b))
        ga = re.search(r"given_name: (.*)", a).group(1)
        if ga.startswith("a"):
            return "Hmm, hard to say without more context."
        return "Same." if sa == sb else "different"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def llm():
    f = FakeLLM()
    yield f
    f.close()


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return make_sample(tmp_path_factory.mktemp("model-judge"))


A = {"given_name": "jane", "surname": "doe"}
B = {"given_name": "jane", "surname": "do"}


def test_retry_on_500_and_429_with_backoff_garbage_is_asked_again_and_errors_are_clear(llm, tmp_path, monkeypatch):
    monkeypatch.setenv("ABCDE_LLM_API_KEY", "test-key")
    j = LLMJudge(base_url=llm.url, model="fake-1", backoff=0.01, cache=tmp_path / "c.sqlite")
    llm.script = [(500, "boom", {}), (200, "same", {})]
    assert j(A, B) == "same"
    # Counted by an httpx event hook on every request the openai client sends: its retry is the 2nd.
    assert j.stats["requests"] == 2 and j.stats["retries"] == 1 and len(llm.requests) == 2
    assert llm.requests[-1]["auth"] == "Bearer test-key" and llm.requests[-1]["path"] == "/v1/chat/completions"
    assert llm.requests[-1]["body"]["model"] == "fake-1" and llm.requests[-1]["body"]["temperature"] == 0
    llm.script = [(429, "slow down", {"Retry-After": "0.3"}), (200, "Different", {})]
    assert j(A, {"given_name": "x", "surname": "y"}) == "different"
    assert llm.times[-1] - llm.times[-2] >= 0.3  # waited as told, not just the 0.01 s backoff
    assert j.stats["requests"] == 4 and j.stats["retries"] == 2
    # Not a judgement (issue 25): asked again; the second, usable answer is the judgement.
    llm.script = [(200, "I would rather not say.", {})]
    assert j(A, {"given_name": "q", "surname": "r"}) == "different" and j.stats["unusable_answers"] == 1
    assert j.stats["requests"] == 6 and j.stats["retries"] == 3
    llm.script = [(401, "bad key", {})]
    with pytest.raises(LLMError, match="HTTP 401: .*bad key"):
        j(A, {"given_name": "s", "surname": "t"})
    assert j.stats["requests"] == 7 and j.stats["retries"] == 3 and len(llm.requests) == 7  # 401: not retried
    llm.script = [(503, "down", {})] * 3
    j2 = LLMJudge(base_url=llm.url, model="fake-1", backoff=0.001, max_retries=2)
    with pytest.raises(LLMError, match=r"failed 3 times \(last: HTTP 503\)"):
        j2(A, {"given_name": "u"})
    assert j2.stats["requests"] == 3 and j2.stats["retries"] == 2 and len(llm.requests) == 10
    # The cache: the same pair (same prompt and model) is never asked twice.
    n = len(llm.requests)
    assert j(A, B) == "same" and len(llm.requests) == n and j.stats["cache_hits"] == 1
    # Connection refused counts as retryable, then a clear error (the openai client's httpx ConnectError;
    # under urllib this was a URLError).
    refused = LLMJudge(base_url="http://127.0.0.1:9/v1", model="m", backoff=0.001, max_retries=1)
    with pytest.raises(LLMError, match=r"failed 2 times \(last: connection error: ConnectError"):
        refused(A, B)
    assert refused.stats["requests"] == 2 and refused.stats["retries"] == 1
    # A timeout too: the client's timeout, then its retry, then a clear error.
    llm.script = [(200, "same", {}, 1.0), (200, "same", {}, 1.0)]
    slow = LLMJudge(base_url=llm.url, model="fake-1", backoff=0.001, max_retries=1, timeout=0.2)
    with pytest.raises(LLMError, match=r"failed 2 times \(last: no answer within 0.2 s\)"):
        slow(A, B)
    assert slow.stats["requests"] == 2 and slow.stats["retries"] == 1
    # The wait before a retry is the judge's backoff, not the client's own (at most 0.5 s before the 1st retry).
    llm.script = [(500, "boom", {}), (200, "same", {})]
    assert LLMJudge(base_url=llm.url, model="fake-1", backoff=0.6, max_retries=1)(A, {"given_name": "v"}) == "same"
    assert llm.times[-1] - llm.times[-2] >= 0.6


def test_no_key_no_header_redirects_not_followed_and_a_clear_401(llm, sample, tmp_path, monkeypatch):
    for k in ("ABCDE_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    assert LLMJudge(base_url=llm.url, model="fake-1")(A, B) == "different"
    assert llm.requests[-1]["auth"] is None  # a local server without a key: no Authorization header
    # A redirect to another host (here: another port) is not followed, so the key never goes there.
    other = FakeLLM()
    try:
        llm.script = [(307, "moved", {"Location": other.url + "/chat/completions"})]
        j = LLMJudge(base_url=llm.url, model="fake-1", api_key="sk-secret-123", backoff=0.001)
        with pytest.raises(LLMError, match="answered HTTP 307, a redirect to .* not followed"):
            j(A, B)
        assert other.requests == [] and j.stats["requests"] == 1
    finally:
        other.close()
    # 401 from the CLI: one line, exit code 1, no traceback, and the key not repeated even when the
    # server echoes it.
    d = fresh_copy(sample, tmp_path)
    monkeypatch.setenv("ABCDE_LLM_API_KEY", "sk-secret-123")
    llm.script = [(401, "Incorrect API key provided: sk-secret-123.", {})]
    r = CliRunner().invoke(main, ["judge", "model", str(d), "--llm-base-url", llm.url, "--model", "fake-1",
                                  "--concurrency", "1", "--hide", "entity_id"])
    assert r.exit_code == 1 and "HTTP 401: Incorrect API key provided: ***." in r.output, r.output
    assert "Traceback" not in r.output and "sk-secret-123" not in r.output
    assert r.output.strip().count("\n") == 0 and llm.requests[-1]["auth"] == "Bearer sk-secret-123"


def test_llm_judge_without_openai_names_the_extra(monkeypatch, sample, tmp_path):
    monkeypatch.setitem(sys.modules, "openai", None)  # as if the optional extra were not installed
    with pytest.raises(MissingDependencyError, match=r"needs the 'openai' package.*pip install 'abcde\[llm\]'"):
        LLMJudge(base_url="http://127.0.0.1:1/v1", model="m")
    r = CliRunner().invoke(main, ["judge", "model", str(fresh_copy(sample, tmp_path)), "--model", "m"])
    assert r.exit_code == 1 and "pip install 'abcde[llm]'" in r.output and "Traceback" not in r.output


def test_options_and_prompt_template_are_checked(monkeypatch):
    for k in ("ABCDE_LLM_MODEL", "OPENAI_MODEL"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(InputError, match="No LLM model given"):
        LLMJudge(base_url="http://127.0.0.1:1/v1")
    with pytest.raises(InputError, match="must contain {item_b}"):
        LLMJudge(model="m", prompt_template="Only {item_a}")
    with pytest.raises(InputError, match="placeholder other than"):
        LLMJudge(model="m", prompt_template="{item_a} {item_b} {x}")
    with pytest.raises(InputError, match="http:// or https://"):
        LLMJudge(model="m", base_url="file:///etc/passwd")
    monkeypatch.setenv("ABCDE_LLM_MODEL", "from-env")
    monkeypatch.setenv("ABCDE_LLM_BASE_URL", "http://127.0.0.1:1/v1/")
    j = LLMJudge(prompt_template="A={item_a} B={item_b} {{literal}}")
    assert (j.model, j.base_url) == ("from-env", "http://127.0.0.1:1/v1")
    assert j.messages({"x": 1}, {"x": None})[-1]["content"] == "A=x: 1 B=x: (empty) {literal}"


@pytest.mark.parametrize("text, want", [("same", "same"), ("Same.", "same"), ("**Different**", "different"),
                                        ("unsure", "unsure"), ("They are the same person.", "same"),
                                        ("not the same", None), ("same or different?", None), ("", None),
                                        (None, None), ("yes", None)])
def test_parse_answer(text, want):
    assert parse_answer(text) == want


def test_llm_judge_fills_the_store_pays_once_and_quality_source_model_works(llm, sample, tmp_path):
    d = fresh_copy(sample, tmp_path)
    template = tmp_path / "prompt.txt"
    template.write_text("Same person?\nRecord A:\n{item_a}\nRecord B:\n{item_b}\nOne word.")
    args = ["judge", "model", str(d), "--llm-base-url", llm.url, "--model", "fake-1", "--prompt-template",
            str(template), "--concurrency", "4", "--retry-backoff", "0.01", "--hide", "entity_id", "--json"]
    # expected answers, independently from the items; the fake answers garbage for given names
    # starting with 'a': those pairs are asked 6 times (--max-retries 5), then left unjudged.
    items = {r["item_id"]: r for r in pq.read_table(d / "items.parquet").to_pylist()}
    want, garbage = {}, set()
    for t in JudgementStore(d).tasks:
        a, b = items[t["item_a"]], items[t["item_b"]]
        if (a["given_name"] or "").startswith("a"):
            garbage.add(t["pair_id"])
        else:
            want[t["pair_id"]] = "same" if a["surname"] == b["surname"] else "different"
    g = len(garbage)
    assert 0 < g < 10
    llm.script = [(500, "flaky", {}), (429, "busy", {"Retry-After": "0"})]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == (1 if g else 0), r.output  # pairs left unjudged: exit 1, the summary still printed
    out = json.loads(r.output)
    assert out["pairs"] == 30 and out["judged_now"] == 30 - g and out["rater"] == "model:llm:fake-1"
    assert out["unjudged_pairs"] == g and {u["pair_id"] for u in out["unusable"]} <= garbage
    assert out["judge_stats"]["requests"] == 32 + 5 * g and out["judge_stats"]["retries"] == 2 + 5 * g
    assert out["judge_stats"]["unusable_answers"] == 6 * g
    prompts = [q["body"]["messages"][-1]["content"] for q in llm.requests]
    assert all(p.startswith("Same person?") for p in prompts)
    assert not any("entity_id" in p or "entity-" in p for p in prompts)  # hidden from the judge
    store = JudgementStore(d)
    got = {j.pair_id: j.judgement for j in store.live(source="model")}
    assert got == want

    # Run again: only the unjudged pairs are asked again. Without the store: answered from the
    # cache, no request paid (but the garbage, never cached).
    n = len(llm.requests)
    again = json.loads(CliRunner().invoke(main, args).output)
    assert again["judged_now"] == 0 and again["already_judged"] == 30 - g and len(llm.requests) == n + 6 * g
    for f in d.glob("judgements.sqlite*"):
        f.unlink()
    n = len(llm.requests)
    third = json.loads(CliRunner().invoke(main, args).output)
    assert third["judged_now"] == 30 - g and third["judge_stats"]["cache_hits"] == 30 - g
    assert len(llm.requests) == n + 6 * g

    # Estimates per source.
    q_model = json.loads(CliRunner().invoke(main, ["quality", str(d), "--source", "model", "--json"]).output)
    assert q_model["judged_pairs"] == 30 - g and q_model["unsure_pairs"] == 0 and q_model["missing_pairs"] == g
    q_person = json.loads(CliRunner().invoke(main, ["quality", str(d), "--source", "person", "--json"]).output)
    assert q_person["judged_pairs"] == 0 and q_person["missing_pairs"] == 30
    # An oracle next to the model: both coexist; each source alone gives its own estimate.
    assert CliRunner().invoke(main, ["judge", str(d), "--oracle-column", "entity_id"]).exit_code == 0
    q_oracle = json.loads(CliRunner().invoke(main, ["quality", str(d), "--source", "oracle", "--json"]).output)
    assert q_oracle["judged_pairs"] == 30
    # The oracle's judgements are in the store beside the model's (issue 13): an export of every
    # source has both, an export of the model's has only them.
    everything = tmp_path / "all.jsonl"
    ex = json.loads(CliRunner().invoke(main, ["judge", "export", str(d), "--out", str(everything), "--json"]).output)
    assert ex["by_source"] == {"model": 30 - g, "oracle": 30}
    export = tmp_path / "model.jsonl"
    ex = json.loads(CliRunner().invoke(main, ["judge", "export", str(d), "--out", str(export), "--source", "model",
                                              "--json"]).output)
    assert ex["by_source"] == {"model": 30 - g}
    rows = [json.loads(x) for x in export.read_text().splitlines()]
    assert {r["source"] for r in rows} == {"model"} and len(rows) == 30 - g
    q_file = json.loads(CliRunner().invoke(main, ["quality", str(d), "--judgements", str(export), "--json"]).output)
    assert q_file["delta_precision"] == q_model["delta_precision"]


def test_python_callable_judge_and_bad_answers(sample, tmp_path):
    d = fresh_copy(sample, tmp_path)
    mod = tmp_path / "myjudge.py"
    mod.write_text(
        "def judge(a, b):\n"
        "    assert 'entity_id' not in a and 'item_id' not in a\n"
        "    if a['given_name'] and a['given_name'].startswith('a'):\n"
        "        return 'maybe'\n"
        "    return 'same' if a['surname'] == b['surname'] else 'Different'\n"
        "def broken(a, b):\n"
        "    raise RuntimeError('no network')\n")
    r = CliRunner().invoke(main, ["judge", "model", str(d), "--callable", f"{mod}:judge", "--hide", "entity_id"])
    # 'maybe' is not a judgement (issue 25): those pairs are left unjudged, counted, exit 1
    m = re.search(r"model:judge: judged (\d+) pairs now .*; (\d+) left unjudged", r.output)
    assert r.exit_code == 1 and m and int(m[1]) + int(m[2]) == 30 and int(m[2]) > 0, r.output
    assert "got no usable answer" in r.output and "'maybe'" in r.output and "Traceback" not in r.output
    live = JudgementStore(d).live(source="model")
    assert len(live) == int(m[1]) and {j.rater for j in live} == {"model:judge"}
    r = CliRunner().invoke(main, ["judge", "model", str(d), "--callable", f"{mod}:broken", "--name", "b"])
    assert r.exit_code == 1 and "The judge 'b' failed on pair" in r.output and "no network" in r.output
    r = CliRunner().invoke(main, ["judge", "model", str(d), "--callable", "nomodule_xyz:f"])
    assert r.exit_code == 1 and "Cannot import the judge module 'nomodule_xyz'" in r.output
    r = CliRunner().invoke(main, ["judge", "model", str(d), "--callable", f"{mod}:judge", "--model", "m"])
    assert r.exit_code == 2 and "--model" in r.output
    res = judge_with_model(d, lambda a, b: "same", name="lam", limit=5)
    assert res.judged_now == 5 and res.unjudged == 0


def test_model_judge_shares_the_store_with_a_running_server(sample, tmp_path):
    from abcde.web.judging_server import serve

    d = fresh_copy(sample, tmp_path)
    srv = serve(d).start()
    try:
        res = judge_with_model(d, lambda a, b: "different", name="beside-server", concurrency=8)
        assert res.judged_now == 30
        assert srv.session.state("ann")["next"] is not None  # people still have all pairs to judge
    finally:
        srv.shutdown()


def test_kappa_values():
    # Cohen's classic example: 50 items, yes/yes 20, yes/no 5, no/yes 10, no/no 15 ⇒ κ = 0.4
    a = ["same"] * 25 + ["different"] * 25
    b = ["same"] * 20 + ["different"] * 5 + ["same"] * 10 + ["different"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert fleiss_kappa([["same", "same"], ["different", "different"]]) == pytest.approx(1.0)
    # Fleiss' with m = 2 equals Scott's pi: p_o = 0.7, p = (0.6, 0.4) ⇒ (0.7 − 0.52) / 0.48
    f = fleiss_kappa([[x, y] for x, y in zip(a, b)])
    assert f == pytest.approx((0.7 - (0.55 ** 2 + 0.45 ** 2)) / (1 - (0.55 ** 2 + 0.45 ** 2)))
    assert cohen_kappa(["same"], ["same"]) is None and fleiss_kappa([]) is None

    class J:
        def __init__(self, p, r, j):
            self.pair_id, self.rater, self.judgement = p, r, j

    ag = agreement([J("p1", "ann", "same"), J("p1", "bob", "different"), J("p2", "ann", "same")])
    assert ag["replicated_pairs"] == 1 and ag["percent_agreement"] == 0.0


def test_judgement_files_carry_a_source(sample, tmp_path):
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from abcde.quality import estimate_quality

    d = fresh_copy(sample, tmp_path)
    tasks = JudgementStore(d).tasks
    f = tmp_path / "j.csv"
    pacsv.write_csv(pa.table({"pair_id": [t["pair_id"] for t in tasks[:3]], "judgement": ["same", "different", "same"],
                              "rater": ["ann", "model:x", "oracle:entity_id"]}), f)
    assert {s: estimate_quality(d, [f], source=s).judged_pairs for s in ("person", "model", "oracle")} == {
        "person": 1, "model": 1, "oracle": 1}  # no source column: read from the rater's prefix
    # every source: a model's and people's judgements are combined (prediction-powered), never voted;
    # the judged pairs are the people's, the model's are counted apart
    both = estimate_quality(d, [f])
    assert both.judged_pairs == 2 and both.design["ppi"]["model_judgements"] == 1
    pacsv.write_csv(pa.table({"pair_id": [tasks[0]["pair_id"]], "judgement": ["same"], "source": ["robot"]}), f)
    with pytest.raises(InputError, match="1 rows of judgements file .* have a source outside"):
        estimate_quality(d, [f])
    with pytest.raises(InputError, match="source must be one of person, model, oracle. Got 'robot'"):
        estimate_quality(d, [f], source="robot")
    # The store itself can be given as a judgement file.
    JudgementStore(d).record(tasks[0]["pair_id"], "different", rater="ann")
    r = CliRunner().invoke(main, ["quality", str(d), "--judgements", str(d / "judgements.sqlite"), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["judged_pairs"] == 1
