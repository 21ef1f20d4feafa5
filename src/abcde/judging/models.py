"""Model judges: any Python callable, or an LLM behind an OpenAI-compatible endpoint.

A judge is a callable ``(item_a: dict, item_b: dict) -> "same" | "different" | "unsure"``
that receives both items' attributes (the item ids only with ``show_ids``; hidden
columns never). :func:`judge_with_model` runs it over every pair of a sample that
the judge has not answered yet, with ``concurrency`` calls in flight, and records
each answer in the sample's judgement store (source ``model``, rater
``model:NAME``) as it arrives — an interrupted run resumes where it stopped.

:class:`LLMJudge` posts a chat-completions request (``POST {base_url}/chat/completions``)
with the standard library's ``urllib``:

- base URL, model and key from the arguments or the environment (``ABCDE_LLM_BASE_URL``,
  ``ABCDE_LLM_MODEL``, ``ABCDE_LLM_API_KEY``, else ``OPENAI_BASE_URL``, ``OPENAI_MODEL``,
  ``OPENAI_API_KEY``);
- a prompt template with ``{item_a}`` and ``{item_b}`` (each item's attributes, one
  ``name: value`` line each), which the user can replace;
- retries with exponential backoff (``backoff · 2^attempt`` seconds, or the server's
  ``Retry-After``) on HTTP 429, 5xx, timeouts and connection errors;
- a SQLite cache keyed by the model and the exact messages, so a pair is never paid
  for twice (also across runs and samples);
- an answer that does not parse as one of same/different/unsure is recorded as ``unsure``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import re
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from abcde.errors import AbcdeError, InputError
from abcde.core.names import VOCABULARY
from abcde.quality.store import DuplicateJudgementError, JudgementStore

Judge = Callable[[dict, dict], str]

SYSTEM_PROMPT = ("You compare two records and decide whether they describe the same real-world entity. "
                 "Answer with exactly one word: same, different, or unsure.")

DEFAULT_TEMPLATE = """Do these two records refer to the same real-world entity?

Record A:
{item_a}

Record B:
{item_b}

Answer with exactly one word: same, different, or unsure."""

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
_WORD = re.compile(r"[a-z']+")
_NEGATIONS = {"not", "no", "isn't", "aren't", "neither", "nor", "cannot", "can't"}


class LLMError(AbcdeError):
    """The LLM endpoint refused or kept failing; the message names the URL and the status."""


def parse_answer(text) -> str | None:
    """``same``/``different``/``unsure`` from a model's answer, or ``None`` when it does not parse.

    The answer must name exactly one of the three, either as its first word or in a
    sentence without negation ("not the same" and "same or different" do not parse).
    """
    if not isinstance(text, str):
        return None
    words = _WORD.findall(text.lower())
    if not words:
        return None
    named = {w for w in words if w in VOCABULARY}
    if len(named) != 1:
        return None
    if words[0] in VOCABULARY or not (_NEGATIONS & set(words)):
        return named.pop()
    return None


def format_item(item: dict) -> str:
    """One ``name: value`` line per attribute (empty values shown as ``(empty)``)."""
    return "\n".join(f"{k}: {'(empty)' if v is None else v}" for k, v in item.items())


def load_callable(spec: str) -> Judge:
    """``module:function`` (or ``path/to/file.py:function``) → the callable."""
    if ":" not in spec:
        raise InputError(f"A judge callable is given as 'module:function'. Got {spec!r} instead.")
    mod_name, _, attr = spec.rpartition(":")
    try:
        if mod_name.endswith(".py"):
            path = Path(mod_name)
            if not path.exists():
                raise InputError(f"The judge module file '{path}' does not exist.")
            sp = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(sp)
            sp.loader.exec_module(module)
        else:
            module = importlib.import_module(mod_name)
    except ImportError as exc:
        raise InputError(f"Cannot import the judge module {mod_name!r}: {exc}.") from exc
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise InputError(f"{attr!r} in module {mod_name!r} is not a callable. Give 'module:function'.")
    return fn


# --------------------------------------------------------------------------- cache
class AnswerCache:
    """A SQLite cache of model answers: key → raw answer text (shared by threads and runs)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        with self._connect() as con:
            con.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT, answer TEXT, "
                        "created_at REAL)")

    def _connect(self):
        con = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA busy_timeout=30000")
        return _Closing(con)

    def get(self, key: str) -> str | None:
        with self._connect() as con:
            row = con.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, model: str, answer: str) -> None:
        with self._connect() as con:
            con.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)", (key, model, answer, time.time()))


class _Closing:
    def __init__(self, con):
        self.con = con

    def __enter__(self):
        return self.con

    def __exit__(self, *exc):
        self.con.close()


# --------------------------------------------------------------------------- LLM judge
def _env(*names: str) -> str | None:
    for n in names:
        v = os.environ.get(n)
        if v:
            return v
    return None


class LLMJudge:
    """An LLM behind an OpenAI-compatible ``/chat/completions`` endpoint, as a judge.

    Parameters
    ----------
    base_url
        e.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:8000/v1`` (``/chat/completions``
        is appended). Default: ``ABCDE_LLM_BASE_URL``, ``OPENAI_BASE_URL``, else OpenAI's.
    model
        Model name. Default: ``ABCDE_LLM_MODEL`` or ``OPENAI_MODEL``; required.
    api_key
        Sent as ``Authorization: Bearer``. Default: ``ABCDE_LLM_API_KEY`` or ``OPENAI_API_KEY``;
        none for a local server.
    prompt_template
        The user message, with ``{item_a}`` and ``{item_b}`` (literal braces doubled).
    system_prompt
        The system message (``None``: none).
    cache
        Path of the answer cache (SQLite); ``None``: no cache.
    max_retries, backoff, timeout
        Retries after the first attempt, the first backoff in seconds (doubled each time),
        and the request timeout in seconds.
    temperature
        Sent with every request (``None``: not sent).
    """

    def __init__(self, *, base_url: str | None = None, model: str | None = None, api_key: str | None = None,
                 prompt_template: str | None = None, system_prompt: str | None = SYSTEM_PROMPT,
                 cache: str | os.PathLike | None = None, max_retries: int = 5, backoff: float = 1.0,
                 timeout: float = 60.0, temperature: float | None = 0.0):
        self.base_url = (base_url or _env("ABCDE_LLM_BASE_URL", "OPENAI_BASE_URL") or "https://api.openai.com/v1")
        self.base_url = self.base_url.rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise InputError(f"The LLM base URL must start with http:// or https://. Got {self.base_url!r} instead.")
        self.model = model or _env("ABCDE_LLM_MODEL", "OPENAI_MODEL")
        if not self.model:
            raise InputError("No LLM model given: pass --model (or model=...), or set ABCDE_LLM_MODEL.")
        self.api_key = api_key or _env("ABCDE_LLM_API_KEY", "OPENAI_API_KEY")
        self.template = DEFAULT_TEMPLATE if prompt_template is None else prompt_template
        for field_name in ("{item_a}", "{item_b}"):
            if field_name not in self.template:
                raise InputError(f"The prompt template must contain {field_name} (and {{item_a}}, {{item_b}} "
                                 "both); write literal braces as {{ and }}.")
        try:
            self.template.format(item_a="", item_b="")
        except (KeyError, IndexError, ValueError) as exc:
            raise InputError(f"The prompt template has a placeholder other than {{item_a}} and {{item_b}} "
                             f"({exc!r}); write literal braces as {{{{ and }}}}.") from exc
        self.system_prompt = system_prompt
        if max_retries < 0 or backoff < 0 or timeout <= 0:
            raise InputError("max_retries and backoff must be ≥ 0 and timeout > 0.")
        self.max_retries, self.backoff, self.timeout = max_retries, backoff, timeout
        self.temperature = temperature
        self.cache = AnswerCache(cache) if cache else None
        self._lock = threading.Lock()
        self.stats = {"requests": 0, "retries": 0, "cache_hits": 0, "unparseable": 0}

    @property
    def name(self) -> str:
        return f"llm:{self.model}"

    def messages(self, item_a: dict, item_b: dict) -> list[dict]:
        user = self.template.format(item_a=format_item(item_a), item_b=format_item(item_b))
        msgs = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return [*msgs, {"role": "user", "content": user}]

    def _count(self, key: str) -> None:
        with self._lock:
            self.stats[key] += 1

    def _cache_key(self, msgs: list[dict]) -> str:
        raw = json.dumps({"model": self.model, "messages": msgs, "temperature": self.temperature}, sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()

    def ask(self, msgs: list[dict]) -> str:
        """One chat completion (with retries); the answer text."""
        body = {"model": self.model, "messages": msgs}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "abcde-judge"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = f"{self.base_url}/chat/completions"
        attempt = 0
        while True:
            self._count("requests")
            wait = None
            try:
                req = urllib.request.Request(url, data=data, headers=headers, method="POST")
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    payload = json.loads(resp.read().decode("utf-8"))
                try:
                    content = payload["choices"][0]["message"]["content"]
                except (KeyError, IndexError, TypeError):
                    content = None
                return content if isinstance(content, str) else json.dumps(payload)[:500]
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:300].decode("utf-8", "replace")
                exc.close()
                if exc.code not in RETRY_STATUS:
                    raise LLMError(f"The LLM endpoint {url} answered HTTP {exc.code}: {detail.strip()}") from None
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                try:
                    wait = float(retry_after) if retry_after is not None else None
                except ValueError:
                    wait = None
                error = f"HTTP {exc.code}"
            except (urllib.error.URLError, TimeoutError, ConnectionError, json.JSONDecodeError) as exc:
                error = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            if attempt >= self.max_retries:
                raise LLMError(f"The LLM endpoint {url} failed {attempt + 1} times (last: {error}); "
                               "the answers so far are saved, run again to resume.")
            delay = self.backoff * (2 ** attempt)
            if wait is not None:
                delay = max(delay, min(wait, 60.0))
            self._count("retries")
            time.sleep(delay)
            attempt += 1

    def __call__(self, item_a: dict, item_b: dict) -> str:
        msgs = self.messages(item_a, item_b)
        key = self._cache_key(msgs)
        text = self.cache.get(key) if self.cache else None
        if text is not None:
            self._count("cache_hits")
        else:
            text = self.ask(msgs)
            if self.cache:
                self.cache.put(key, self.model, text)
        answer = parse_answer(text)
        if answer is None:
            self._count("unparseable")
            return "unsure"
        return answer


# --------------------------------------------------------------------------- running a judge
@dataclass(frozen=True)
class ModelJudgeResult:
    """What a model judge run did.

    Attributes
    ----------
    rater
        The rater name its judgements carry (``model:NAME``).
    store
        The judgement store written.
    pairs
        Pairs in the sample that need a judgement.
    judged_now, already
        Pairs judged in this run, and pairs it had judged before (skipped).
    answers
        Counts of same / different / unsure among this run's judgements.
    invalid
        Answers outside the vocabulary, recorded as unsure.
    stats
        The judge's own counters (LLM: requests, retries, cache hits, unparseable).
    seconds
        Wall-clock time of the run.
    """

    rater: str
    store: str
    pairs: int
    judged_now: int
    already: int
    answers: dict
    invalid: int
    stats: dict = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"rater": self.rater, "store": self.store, "pairs": self.pairs, "judged_now": self.judged_now,
                "already_judged": self.already, "answers": self.answers, "invalid_answers": self.invalid,
                "judge_stats": self.stats, "seconds": round(self.seconds, 3)}


def judge_with_model(sample_dir, judge: Judge, *, name: str | None = None, concurrency: int = 4,
                     hide=(), show_ids: bool = False, limit: int | None = None) -> ModelJudgeResult:
    """Judge every pair of a sample with ``judge`` and record the answers in the store.

    Parameters
    ----------
    sample_dir
        A directory written by ``abcde pairs``.
    judge
        ``(item_a: dict, item_b: dict) -> "same" | "different" | "unsure"``; any other return
        value is recorded as ``unsure`` (and counted). An exception stops the run (answers
        already recorded stay).
    name
        Rater name suffix: judgements carry rater ``model:NAME`` (default: the judge's
        ``name`` attribute, or its ``__name__``).
    concurrency
        Calls in flight at once (threads).
    hide
        Attribute columns the judge must not see (e.g. a ground-truth column).
    show_ids
        Pass each item's ``item_id`` too.
    limit
        Judge at most this many pairs in this run.
    """
    t0 = time.perf_counter()
    if concurrency < 1:
        raise InputError(f"concurrency must be at least 1. Got {concurrency} instead.")
    store = JudgementStore(sample_dir)
    name = name or getattr(judge, "name", None) or getattr(judge, "__name__", None) or "callable"
    rater = f"model:{name}"
    items = {r["item_id"]: r for r in store.sample.items.to_pylist()}
    attrs = [c for c in store.sample.items.column_names if c != "item_id"]
    unknown = [c for c in hide if c not in attrs]
    if unknown:
        raise InputError(f"Column(s) {', '.join(map(repr, unknown))} to hide are not item attributes. "
                         f"Attributes: {', '.join(map(repr, attrs)) or '(none)'}.")
    shown = (["item_id"] if show_ids else []) + [c for c in attrs if c not in hide]

    def view(item_id):
        row = items.get(item_id, {"item_id": item_id})
        return {c: row.get(c) for c in shown}

    done = {j.pair_id for j in store.live(rater=rater)}
    todo = [t for t in store.tasks if t["pair_id"] not in done]
    if limit is not None:
        todo = todo[:max(limit, 0)]
    answers = dict.fromkeys(VOCABULARY, 0)
    invalid = 0
    judged = 0

    def call(task):
        try:
            return task, judge(view(task["item_a"]), view(task["item_b"]))
        except AbcdeError:
            raise
        except Exception as exc:
            raise InputError(f"The judge {name!r} failed on pair {task['pair_id']!r} ({task['item_a']!r}, "
                             f"{task['item_b']!r}): {type(exc).__name__}: {exc}") from exc

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(call, t) for t in todo]
        try:
            for fut in as_completed(futures):
                task, ans = fut.result()
                if isinstance(ans, str) and ans.strip().lower() in VOCABULARY:
                    ans = ans.strip().lower()
                else:
                    invalid += 1
                    ans = "unsure"
                try:
                    store.record(task["pair_id"], ans, rater=rater, source="model")
                except DuplicateJudgementError:  # another run of the same judge got there first
                    continue
                answers[ans] += 1
                judged += 1
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    stats = dict(getattr(judge, "stats", {}) or {})
    return ModelJudgeResult(rater, str(store.path), len(store.tasks), judged, len(done), answers, invalid, stats,
                            time.perf_counter() - t0)
