"""Model judges: running any Python callable over a sample's pairs (:func:`judge_with_model`).

A judge is a callable ``(item_a: dict, item_b: dict) -> "same" | "different" | "unsure"``
that receives both items' attributes (the item ids only with ``show_ids``; hidden
columns never). :func:`judge_with_model` runs it over every pair of a sample that
the judge has not answered yet, with ``concurrency`` calls in flight, and records
each answer in the sample's judgement store (source ``model``, rater
``model:NAME``) as it arrives — an interrupted run resumes where it stopped.

The judge is any callable (:func:`load_callable` reads ``module:function``), or an LLM behind an
OpenAI-compatible endpoint (:class:`abcde.judging.llm.LLMJudge`, with its answer cache
:mod:`abcde.judging.llm_cache`). A judge's answer that is not a judgement (another return value, or
:class:`~abcde.judging.llm.UnusableAnswerError`) leaves the pair unjudged; :data:`STOP_AFTER_UNUSABLE`
such pairs in a row stop the run.
"""

from __future__ import annotations

import importlib
import importlib.util
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from abcde.errors import AbcdeError, InputError
from abcde.core.names import VOCABULARY
from abcde.judging.llm import LLMError, UnusableAnswerError
from abcde.quality.people import choose_by_model_answers
from abcde.samples.sample_dir import shown_columns
from abcde.samples.store import DuplicateJudgementError, JudgementStore

Judge = Callable[[dict, dict], str]

#: A model run stops when this many pairs in a row got no usable answer (an endpoint answering
#: every request with an error page would otherwise be asked about every pair, each retried).
STOP_AFTER_UNUSABLE = 10


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
    except InputError:
        raise
    except Exception as exc:  # ImportError, or whatever the module raised (SyntaxError, ...) as it ran
        first = (str(exc).strip().splitlines() or [""])[0]
        raise InputError(f"Cannot import the judge module {mod_name!r}: {type(exc).__name__}: {first}.") from exc
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise InputError(f"{attr!r} in module {mod_name!r} is not a callable. Give 'module:function'.")
    return fn


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
    unjudged
        Pairs left unjudged because the judge's answer was not a judgement (an LLM: also when
        asked again); nothing of them is recorded or cached, so a rerun asks exactly these again.
    stats
        The judge's own counters (LLM: requests, retries, cache hits, unusable answers).
    unusable
        The first few unjudged pairs: ``{"pair_id", "reason", "answer"}`` (the answer clipped).
    people
        A sample drawn with a people's budget (``--human-budget``): whether the people's tasks were
        chosen by the model's answers now (:func:`abcde.quality.people.choose_by_model_answers`),
        or why not; None for other samples.
    seconds
        Wall-clock time of the run.
    """

    rater: str
    store: str
    pairs: int
    judged_now: int
    already: int
    answers: dict
    unjudged: int
    stats: dict = field(default_factory=dict)
    seconds: float = 0.0
    unusable: list = field(default_factory=list)
    people: dict | None = None
    warnings: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"rater": self.rater, "store": self.store, "pairs": self.pairs, "judged_now": self.judged_now,
                "already_judged": self.already, "answers": self.answers, "unjudged_pairs": self.unjudged,
                "unusable": self.unusable, "judge_stats": self.stats, "seconds": round(self.seconds, 3),
                "people_tasks": self.people, "warnings": list(self.warnings)}


#: From this many answers of a run on, one answer for every pair is warned about (a judge that cannot
#: tell pairs apart: its fields absent, a prompt that always fails the same way).
SAME_ANSWER_WARNING = 20


class _Watched(dict):
    """An item as a judge sees it, noting every field the judge asks for that it does not have
    (``get``, ``[]``, ``in``), shared across the items of one run (``asked``)."""

    def __init__(self, row: dict, asked: set):
        super().__init__(row)
        self._asked = asked

    def get(self, key, default=None):
        if key not in self.keys():
            self._asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        if key not in self.keys():
            self._asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        if not dict.__contains__(self, key):
            self._asked.add(key)
            return False
        return True


def model_warnings(name: str, answers: dict, absent: set, shown: list) -> list[str]:
    """What a person must know before trusting a model's answers: the fields it asked for that the
    items lack (its rule cannot read them), and one answer for every pair of a run."""
    out = []
    if absent:
        out.append(f"The judge {name!r} asked for {', '.join(repr(f) for f in sorted(map(str, absent)))}, which the "
                   f"items do not have (they have {', '.join(repr(c) for c in shown) or 'no shown columns'}): its "
                   "answers cannot use them. Check that the judge was written for these items before trusting it.")
    used = {k: v for k, v in answers.items() if v}
    total = sum(answers.values())
    if len(used) == 1 and total >= SAME_ANSWER_WARNING:
        (only, _), = used.items()
        out.append(f"The judge {name!r} answered {only!r} to every one of the {total:,} pairs it judged: it does not "
                   "tell pairs apart. Have people judge some pairs (pairs --human-budget) and compare before "
                   "trusting it.")
    return out


def judge_with_model(sample_dir, judge: Judge, *, name: str | None = None, concurrency: int = 4,
                     hide=(), show_ids: bool = False, limit: int | None = None) -> ModelJudgeResult:
    """Judge every pair of a sample with ``judge`` and record the answers in the store.

    Parameters
    ----------
    sample_dir
        A directory written by ``abcde pairs``.
    judge
        ``(item_a: dict, item_b: dict) -> "same" | "different" | "unsure"`` (case and surrounding
        space aside). Any other return value, or an LLM's :class:`UnusableAnswerError`, is not a
        judgement: the pair is left unjudged and counted (``unjudged``), and the run goes on. Any
        other exception stops the run (answers already recorded stay). The store is held in use
        for the whole run (:meth:`~abcde.samples.store.JudgementStore.hold`): the pairs cannot be
        drawn again under it.
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
    show_ids = show_ids or store.sample.show_ids
    shown = (["item_id"] if show_ids else []) + shown_columns(store.sample.items.column_names,
                                                              store.hidden_columns(hide))

    asked: set = set()  # fields the judge asked for that the items do not have

    def view(item_id):
        row = items.get(item_id, {"item_id": item_id})
        return _Watched({c: row.get(c) for c in shown}, asked)

    done = {j.pair_id for j in store.live(rater=rater)}
    todo = [t for t in store.tasks if t["pair_id"] not in done]
    if limit is not None:
        todo = todo[:max(limit, 0)]
    answers = dict.fromkeys(VOCABULARY, 0)
    unusable: list[dict] = []
    judged = 0
    in_a_row = 0

    def call(task):
        try:
            return task, judge(view(task["item_a"]), view(task["item_b"]))
        except UnusableAnswerError as exc:
            return task, exc
        except AbcdeError:
            raise
        except Exception as exc:
            raise InputError(f"The judge {name!r} failed on pair {task['pair_id']!r} ({task['item_a']!r}, "
                             f"{task['item_b']!r}): {type(exc).__name__}: {exc}") from exc

    with store.hold(f"abcde judge model (rater {rater})"), ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(call, t) for t in todo]
        try:
            for fut in as_completed(futures):
                task, ans = fut.result()
                bad = None
                if isinstance(ans, UnusableAnswerError):
                    bad = {"pair_id": task["pair_id"], "reason": str(ans), "answer": ans.answer}
                elif not (isinstance(ans, str) and ans.strip().lower() in VOCABULARY):
                    bad = {"pair_id": task["pair_id"], "reason": "not same, different or unsure",
                           "answer": " ".join(repr(ans).split())[:80]}
                if bad is not None:  # not a judgement: the pair stays unjudged
                    unusable.append(bad)
                    in_a_row += 1
                    if in_a_row >= STOP_AFTER_UNUSABLE:
                        raise LLMError(
                            f"The judge {name!r} gave no usable answer to {in_a_row} pairs in a row (last: pair "
                            f"{bad['pair_id']!r}, {bad['reason']}: {bad['answer']!r}); stopped. {judged} pairs were "
                            f"judged now and are saved; {len(unusable)} are left unjudged (never cached): fix the "
                            "endpoint or the judge and run again to ask them.")
                    continue
                in_a_row = 0
                ans = ans.strip().lower()
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
    # A people's budget: the people's tasks are chosen by the model's answers, while no person has judged.
    chosen = choose_by_model_answers(sample_dir)
    return ModelJudgeResult(rater, str(store.path), len(store.tasks), judged, len(done), answers, len(unusable),
                            stats, time.perf_counter() - t0, unusable[:5], None if chosen is None else chosen.to_dict(),
                            model_warnings(name, answers, asked, shown))
