"""An LLM behind an OpenAI-compatible endpoint, as a judge (:class:`LLMJudge`).

:class:`LLMJudge` asks for a chat completion (``POST {base_url}/chat/completions``) through the
``openai`` client (the optional extra ``abcde[llm]``; imported only when an LLM judge is made):

- base URL, model and key from the arguments or the environment (``ABCDE_LLM_BASE_URL``,
  ``ABCDE_LLM_MODEL``, ``ABCDE_LLM_API_KEY``, else ``OPENAI_BASE_URL``, ``OPENAI_MODEL``,
  ``OPENAI_API_KEY``);
- a prompt template with ``{item_a}`` and ``{item_b}`` (each item's attributes, one
  ``name: value`` line each), which the user can replace;
- the client's timeout and retries (HTTP 408, 409, 429, 5xx, timeouts and connection errors),
  waiting ``backoff · 2^attempt`` seconds, or the server's ``Retry-After``; any other HTTP error
  (401, 400, …) stops at once with a one-line message; redirects are not followed;
- the key goes only where it is safe: a key to a plain ``http://`` URL of another machine needs
  ``allow_insecure_http``; with no key at all only a server on this machine (loopback) is called
  (the URL rules themselves, loopback, credentials in a URL and their redaction, are
  :mod:`abcde.util.net`'s);
- only an answer is a judgement: a chat completion whose text parses to same, different or
  unsure (:func:`parse_answer`). Anything else — an HTML page or a JSON error object sent with
  HTTP 200, an empty or cut body, a refusal, an essay — is asked again (as a failed request is),
  then the pair is left unjudged and counted; it is never cached and never recorded;
- a SQLite cache of the usable answers (:class:`~abcde.judging.llm_cache.AnswerCache`), keyed by
  the model and the exact messages, so a pair is never paid for twice (also across runs and samples).

The judge is a callable like any other: :func:`abcde.judging.models.judge_with_model` runs it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
import urllib.parse
from typing import Callable

from abcde.core.names import VOCABULARY
from abcde.errors import AbcdeError, InputError, MissingDependencyError, with_option
from abcde.judging.llm_cache import AnswerCache
from abcde.util.net import is_loopback_url, mask, redact_url, secret_params

SYSTEM_PROMPT = ("You compare two records and decide whether they describe the same real-world entity. "
                 "Answer with exactly one word: same, different, or unsure.")

DEFAULT_TEMPLATE = """Do these two records refer to the same real-world entity?

Record A:
{item_a}

Record B:
{item_b}

Answer with exactly one word: same, different, or unsure."""

_WORD = re.compile(r"[a-z']+")
_NEGATIONS = {"not", "no", "isn't", "aren't", "neither", "nor", "cannot", "can't"}

#: An answer longer than this many words is not an answer to "one word" (an essay, a page).
MAX_ANSWER_WORDS = 30


class LLMError(AbcdeError):
    """The LLM endpoint refused or kept failing; the message names the URL and the status."""


class UnusableAnswerError(LLMError):
    """The endpoint's answers to one pair were not a judgement (not a chat completion whose text
    parses to same/different/unsure), also when asked again: the pair stays unjudged."""

    def __init__(self, message: str, answer: str = ""):
        super().__init__(message)
        self.answer = answer


def parse_answer(text) -> str | None:
    """``same``/``different``/``unsure`` from a model's answer, or ``None`` when it does not parse.

    The answer must name exactly one of the three, either as its first word or in a
    sentence without negation ("not the same" and "same or different" do not parse). Markup or
    data (text starting with ``<``, ``{`` or ``[``, or holding a closing tag: an HTML page, a JSON
    object) and answers of more than :data:`MAX_ANSWER_WORDS` words never parse.
    """
    if not isinstance(text, str):
        return None
    bare = text.strip().lstrip("`").strip()
    if bare[:1] in ("<", "{", "[") or "</" in text or "/>" in text:
        return None
    words = _WORD.findall(text.lower())
    if len(words) > MAX_ANSWER_WORDS:
        return None
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


def _env(*names: str) -> str | None:
    for n in names:
        v = os.environ.get(n)
        if v:
            return v
    return None


# The HTTP statuses the openai client retries (openai-python "Retries": 408, 409, 429 and >= 500);
# used only to word the error once it has given up.
_RETRIED = frozenset({408, 409, 429})
LLM_INSTALL = "pip install 'abcde[llm]'"


def _openai_client(*, base_url: str, api_key: str | None, timeout: float, max_retries: int, backoff: float,
                   on_request: Callable):
    """An ``openai.OpenAI`` client for one judge: its timeouts and retries, our backoff and counters."""
    try:
        import openai  # the optional extra abcde[llm]; imported here so that abcde works without it
    except ImportError:
        raise MissingDependencyError(f"The LLM judge needs the 'openai' package, which is not installed: "
                                     f"{LLM_INSTALL}") from None

    class Client(openai.OpenAI):
        # The client retries (408/409/429/5xx, timeouts, connection errors) and honours the server's
        # Retry-After (up to 2 minutes; a longer one is not retried). It has no public setting for the
        # exponential part of its schedule (0.5 s · 2^n, jittered, at most 8 s), so this one hook of it is
        # replaced by the judge's documented ``backoff · 2^attempt``; without the hook (another client
        # version) the client's own schedule applies, which changes only the waits.
        def _calculate_retry_timeout(self, remaining_retries, options, response_headers=None):
            wait = super()._calculate_retry_timeout(remaining_retries, options, response_headers)
            parse = getattr(self, "_parse_retry_after_header", None)  # the client's own Retry-After parser
            retry_after = parse(response_headers) if parse else None
            if retry_after is not None and wait == retry_after:  # the client honours the server's Retry-After
                return wait
            return backoff * 2 ** max(self.max_retries - remaining_retries, 0)

    class HttpClient(openai.DefaultHttpxClient):  # the client's own httpx defaults (limits, timeouts)
        def __del__(self):  # as the client does for the HTTP client it makes itself
            try:
                self.close()
            except Exception:  # e.g. at interpreter shutdown
                pass

    # follow_redirects=False: the client would follow a redirect to any host, Authorization header and
    # all; a redirect is reported instead (give the final URL as the base URL).
    http = HttpClient(follow_redirects=False, event_hooks={"request": [on_request]})
    # The client insists on a key; without one (a local server) ask() omits the Authorization header.
    return Client(base_url=base_url, api_key=api_key or "no-key", timeout=timeout, max_retries=max_retries,
                  http_client=http)


class LLMJudge:
    """An LLM behind an OpenAI-compatible ``/chat/completions`` endpoint, as a judge.

    It calls the endpoint through the ``openai`` client (the optional extra ``abcde[llm]``), which
    sets the timeouts and does the retries; without the package it raises
    :class:`~abcde.errors.MissingDependencyError`.

    Parameters
    ----------
    base_url
        e.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:8000/v1`` (``/chat/completions``
        is appended). Default: ``ABCDE_LLM_BASE_URL``, ``OPENAI_BASE_URL``, else OpenAI's.
    model
        Model name. Default: ``ABCDE_LLM_MODEL`` or ``OPENAI_MODEL``; required.
    api_key
        Sent as ``Authorization: Bearer``. Default: ``ABCDE_LLM_API_KEY`` or ``OPENAI_API_KEY``.
        Without one only a server on this machine (``localhost``, 127.0.0.0/8, ``::1``) is called,
        with no ``Authorization`` header; another server is refused at once, naming the variables.
    allow_insecure_http
        Send the key to a plain ``http://`` base URL of another machine (refused otherwise: the key
        would cross the network unencrypted). Loopback ``http://`` needs no permission.
    prompt_template
        The user message, with ``{item_a}`` and ``{item_b}`` (literal braces doubled).
    system_prompt
        The system message (``None``: none).
    cache
        Path of the answer cache (SQLite); ``None``: no cache.
    max_retries, backoff, timeout
        Retries after the first attempt (on HTTP 408, 409, 429, 5xx, timeouts and connection
        errors, and after an answer that is not a judgement), the first backoff in seconds
        (doubled each time; the server's ``Retry-After`` instead when it sends one), and the
        request timeout in seconds.
    temperature
        Sent with every request (``None``: not sent).
    template_label
        How messages name the prompt template (e.g. its file).

    ``stats`` counts ``requests`` (HTTP requests sent, retries included), ``retries`` (the
    client's, and asking again after an unusable answer), ``cache_hits`` and ``unusable_answers``
    (answers that were not a judgement; never cached). A call whose answers stay unusable raises
    :class:`UnusableAnswerError`.
    """

    def __init__(self, *, base_url: str | None = None, model: str | None = None, api_key: str | None = None,
                 prompt_template: str | None = None, system_prompt: str | None = SYSTEM_PROMPT,
                 cache: str | os.PathLike | None = None, max_retries: int = 5, backoff: float = 1.0,
                 timeout: float = 60.0, temperature: float | None = 0.0,
                 template_label: str = "The prompt template", allow_insecure_http: bool = False):
        self.base_url = (base_url or _env("ABCDE_LLM_BASE_URL", "OPENAI_BASE_URL") or "https://api.openai.com/v1")
        self.base_url = self.base_url.rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise InputError(f"The LLM base URL must start with http:// or https://. Got "
                             f"{redact_url(self.base_url)!r} instead.")
        if (urllib.parse.urlsplit(self.base_url).password or "@" in urllib.parse.urlsplit(self.base_url).netloc
                or secret_params(self.base_url)):
            raise InputError(f"The LLM base URL {redact_url(self.base_url)!r} carries credentials; give the key with "
                             "--api-key or ABCDE_LLM_API_KEY instead (a key in a URL ends up in logs and messages).")
        self.model = model or _env("ABCDE_LLM_MODEL", "OPENAI_MODEL")
        if not self.model:
            raise InputError("No LLM model given: pass --model (or model=...), or set ABCDE_LLM_MODEL.")
        self.api_key = api_key or _env("ABCDE_LLM_API_KEY", "OPENAI_API_KEY")
        self.template = DEFAULT_TEMPLATE if prompt_template is None else prompt_template
        missing = [f for f in ("{item_a}", "{item_b}") if f not in self.template]
        if missing:
            raise InputError(f"{template_label} must contain {' and '.join(missing)} (both {{item_a}} and "
                             "{item_b}; write literal braces as {{ and }}).")
        try:
            self.template.format(item_a="", item_b="")
        except (KeyError, IndexError, ValueError) as exc:
            raise InputError(f"{template_label} has a placeholder other than {{item_a}} and {{item_b}} "
                             f"({exc!r}); write literal braces as {{{{ and }}}}.") from exc
        self.system_prompt = system_prompt
        if max_retries < 0 or backoff < 0 or timeout <= 0:
            raise InputError("max_retries and backoff must be ≥ 0 and timeout > 0.")
        self.max_retries, self.backoff, self.timeout = max_retries, backoff, timeout
        self.temperature = temperature
        self._lock = threading.Lock()
        self._local = threading.local()  # requests sent for the current call, per thread
        self.stats = {"requests": 0, "retries": 0, "cache_hits": 0, "unusable_answers": 0}
        self._client = _openai_client(base_url=self.base_url, api_key=self.api_key, timeout=timeout,
                                      max_retries=max_retries, backoff=backoff, on_request=self._on_request)
        self.cache = AnswerCache(cache) if cache else None
        # The key goes only where it is safe (checked once the client exists, so that a missing
        # 'openai' package is named first); nothing has been sent yet.
        local = is_loopback_url(self.base_url)
        if (not self.api_key and not local) or (self.api_key and self.base_url.startswith("http://") and not local
                                                 and not allow_insecure_http):
            self._client.close()
        if not self.api_key and not local:
            raise InputError(f"No API key for the LLM endpoint {redact_url(self.base_url)}: set ABCDE_LLM_API_KEY (or "
                             "OPENAI_API_KEY)" + with_option("api_key", ", or pass {option}", "...")
                             + ". Only a server on this machine (localhost, 127.0.0.1, ::1) is called without a key.")
        if self.api_key and self.base_url.startswith("http://") and not local and not allow_insecure_http:
            raise InputError(f"The LLM base URL {redact_url(self.base_url)!r} is plain http:// to another machine: the "
                             "API key would cross the network unencrypted. Use https://"
                             + with_option("allow_insecure_http", ", or pass {option} on a network you trust") + ".")

    @property
    def name(self) -> str:
        return f"llm:{self.model}"

    def messages(self, item_a: dict, item_b: dict) -> list[dict]:
        user = self.template.format(item_a=format_item(item_a), item_b=format_item(item_b))
        msgs = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return [*msgs, {"role": "user", "content": user}]

    def close(self) -> None:
        """Close the HTTP connections (also done when the judge is garbage-collected)."""
        self._client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _count(self, key: str) -> None:
        with self._lock:
            self.stats[key] += 1

    def _on_request(self, request) -> None:
        # httpx event hook: runs in the calling thread for every HTTP request the client sends, the
        # client's retries included, so each request after a call's first is a retry.
        self._local.sent = getattr(self._local, "sent", 0) + 1
        self._count("requests")
        if self._local.sent > 1:
            self._count("retries")

    def _cache_key(self, msgs: list[dict]) -> str:
        raw = json.dumps({"model": self.model, "messages": msgs, "temperature": self.temperature}, sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()

    def _detail(self, exc) -> str:
        """The server's error message, on one line, without the key."""
        body = getattr(exc, "body", None)
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            text = body["message"]
        elif isinstance(body, str):
            text = body
        else:
            try:
                text = exc.response.text
            except Exception:  # no body to show
                text = ""
        text = " ".join(str(text).split())[:300]
        return mask(text, self.api_key)

    def ask(self, msgs: list[dict]) -> str:
        """One chat completion (the client retries); the answer text."""
        import openai  # the optional extra abcde[llm]; present, since __init__ made the client

        url = f"{self.base_url}/chat/completions"
        extra = {} if self.temperature is None else {"temperature": self.temperature}
        if not self.api_key:  # no key, no Authorization header (not the client's placeholder)
            extra["extra_headers"] = {"Authorization": openai.Omit()}
        self._local.sent = 0
        try:
            resp = self._client.chat.completions.create(model=self.model, messages=msgs, **extra)
        except openai.APIStatusError as exc:
            code, sent = exc.status_code, self._local.sent
            if code in _RETRIED or code >= 500:
                raise LLMError(f"The LLM endpoint {url} failed {sent} time{'s' * (sent != 1)} (last: HTTP {code}); "
                               "the answers so far are saved, run again to resume.") from None
            if 300 <= code < 400:
                location = exc.response.headers.get("location", "?")
                raise LLMError(f"The LLM endpoint {url} answered HTTP {code}, a redirect to {location!r}; it is not "
                               "followed (the key would go along): give the final URL as the base URL.") from None
            raise LLMError(f"The LLM endpoint {url} answered HTTP {code}: {self._detail(exc)}") from None
        except openai.APIConnectionError as exc:  # timeouts included
            sent = self._local.sent
            if isinstance(exc, openai.APITimeoutError):
                last = f"no answer within {self.timeout:g} s"
            else:
                cause = exc.__cause__
                last = "connection error" + (f": {type(cause).__name__}: {cause}" if cause else "")
            raise LLMError(f"The LLM endpoint {url} failed {sent} time{'s' * (sent != 1)} (last: {last}); "
                           "the answers so far are saved, run again to resume.") from None
        except (openai.OpenAIError, ValueError) as exc:  # a body that is not a chat completion: not JSON (empty,
            # cut short, trailing bytes: the client's JSONDecodeError is a ValueError) or not its shape
            raise UnusableAnswerError(f"not a chat completion ({type(exc).__name__}: "
                                      f"{self._clip(str(exc), 120)})", self._clip(getattr(exc, "doc", ""))) from None
        return self._content(resp)

    def _clip(self, text, n: int = 80) -> str:
        """``text`` on one line, at most ``n`` characters, without the key."""
        text = " ".join(str(text).split())
        return mask(text, self.api_key)[:n]

    def _content(self, resp) -> str:
        """The answer text of a chat completion, or :class:`UnusableAnswerError` (an HTML page or a
        JSON error object sent with HTTP 200, no choices, a refusal, a tool call)."""
        choices = getattr(resp, "choices", None)
        if not isinstance(choices, list) or not choices:
            body = resp if isinstance(resp, str) else getattr(resp, "model_extra", None) or resp
            what = "a text body" if isinstance(resp, str) else "no choices"
            raise UnusableAnswerError(f"not a chat completion ({what})", self._clip(body))
        message = getattr(choices[0], "message", None)
        content = getattr(message, "content", None)
        if not isinstance(content, str):
            refusal = getattr(message, "refusal", None)
            raise UnusableAnswerError("a refusal" if refusal else "a completion without text",
                                      self._clip(refusal or ""))
        return content

    def __call__(self, item_a: dict, item_b: dict) -> str:
        """The judgement of one pair: same, different or unsure. An answer that is not a judgement is
        asked again (up to ``max_retries`` times, waiting ``backoff · 2^attempt``), then
        :class:`UnusableAnswerError`; only a usable answer is cached."""
        msgs = self.messages(item_a, item_b)
        key = self._cache_key(msgs)
        cached = self.cache.get(key) if self.cache else None
        if cached is not None and parse_answer(cached) is not None:  # (older versions cached anything)
            self._count("cache_hits")
            return parse_answer(cached)
        why, shown = "", ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._count("retries")
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                text = self.ask(msgs)
            except UnusableAnswerError as exc:
                why, shown = str(exc), exc.answer
            else:
                answer = parse_answer(text)
                if answer is not None:
                    if self.cache:
                        self.cache.put(key, self.model, text)
                    return answer
                why, shown = "an answer that is not same, different or unsure", self._clip(text)
            self._count("unusable_answers")
        n = self.max_retries + 1
        raise UnusableAnswerError(f"no usable answer in {n} attempt{'s' * (n != 1)} (last: {why})", shown)
