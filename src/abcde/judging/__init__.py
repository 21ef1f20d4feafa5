"""Collecting judgements: from people (the session behind the judging web app) and from models.

- :class:`JudgementStore` (defined in :mod:`abcde.samples.store`, re-exported here) —
  ``SAMPLE_DIR/judgements.sqlite``, one transaction per judgement.
- :class:`JudgingSession` — what the judging web app (:mod:`abcde.web`, ``abcde judge serve``)
  does without HTTP: one pair at a time, blind, several raters, replicated pairs with
  agreement, live estimates.
- :func:`judge_with_model`, :class:`LLMJudge` — ``abcde judge model``: any callable
  ``(item_a: dict, item_b: dict) -> "same" | "different" | "unsure"``, or an
  OpenAI-compatible chat-completions endpoint with a cache.

Every source's judgements land in the same store with their ``source`` (person,
model, oracle); ``abcde judge export`` writes them in the judgement file format and
``abcde quality --source`` estimates from one source.
"""

from abcde.judging.agreement import agreement, cohen_kappa, fleiss_kappa
from abcde.samples.dir_lock import StoreLockedError
from abcde.samples.store import SOURCES, DuplicateJudgementError, JudgementStore, UnknownPairError
from abcde.judging.llm import LLMError, LLMJudge, parse_answer
from abcde.judging.llm_cache import AnswerCache
from abcde.judging.models import ModelJudgeResult, judge_with_model
from abcde.judging.session import JudgingSession

__all__ = ["SOURCES", "AnswerCache", "DuplicateJudgementError", "JudgementStore", "JudgingSession",
           "LLMError", "LLMJudge", "ModelJudgeResult", "StoreLockedError", "UnknownPairError", "agreement",
           "cohen_kappa", "fleiss_kappa", "judge_with_model", "parse_answer"]
