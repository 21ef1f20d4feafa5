"""Collecting judgements: a durable store, a web app for people, and model judges.

- :class:`JudgementStore` — ``SAMPLE_DIR/judgements.sqlite``, one transaction per judgement.
- :func:`serve` / :class:`JudgingServer` — ``abcde judge serve``: one pair at a time, blind,
  several raters, replicated pairs with agreement, live estimates.
- :func:`judge_with_model`, :class:`LLMJudge` — ``abcde judge model``: any callable
  ``(item_a: dict, item_b: dict) -> "same" | "different" | "unsure"``, or an
  OpenAI-compatible chat-completions endpoint with a cache.

Every source's judgements land in the same store with their ``source`` (person,
model, oracle); ``abcde judge export`` writes them in the judgement file format and
``abcde quality --source`` estimates from one source.
"""

from .agreement import agreement, cohen_kappa, fleiss_kappa
from .store import (SOURCES, DuplicateJudgementError, JudgementStore, StoreLockedError, UnknownPairError)
from .models import AnswerCache, LLMError, LLMJudge, ModelJudgeResult, judge_with_model, parse_answer
from .session import JudgingSession
from .server import JudgingServer, serve

__all__ = ["SOURCES", "AnswerCache", "DuplicateJudgementError", "JudgementStore", "JudgingServer", "JudgingSession",
           "LLMError", "LLMJudge", "ModelJudgeResult", "StoreLockedError", "UnknownPairError", "agreement",
           "cohen_kappa", "fleiss_kappa", "judge_with_model", "parse_answer", "serve"]
