"""Weighted sampling with replacement at scale (paper, Appendix "Sampling at scale").

Each element ``e`` of weight ``w_e`` gets an initial draw time
``dt0(e) ~ Exp(w_e)``, computed *in the engine* from a seeded hash of its id::

    u(e)   = uniform in (0, 1) from the first 52 bits of md5("<seed>:<id>")
    dt0(e) = -ln(u(e)) / w_e

The ``N`` elements with the smallest ``dt0`` are a weighted sample without
replacement. For a sample with replacement, ``M`` is their largest ``dt0`` and
each element of the set is drawn ``dc(e) = 1 + Poisson(w_e · (M - dt0(e)))``
times (steps 1–3), or the draws are replayed one by one (steps 3.1–3.2) so a
caller can stop at exactly ``N' <= N`` unique elements.

Reproducibility: md5 is computed by every engine, so the same seed and inputs
select the same set on every engine; the Poisson and successive draws use a
NumPy generator seeded by the seed, over the set in a fixed order (by draw time,
then id), so they are identical too. Only the ``N`` selected elements leave the
engine.
"""

from __future__ import annotations

import functools
import heapq
import math
from typing import Iterator
from dataclasses import dataclass

import ibis
import numpy as np
import pyarrow as pa

from abcde.engine import Engine
from abcde.engine.base import portable_hex_value
from abcde.errors import AbcdeError, InputError

HASH_DIGITS = 13  # 52 bits: every value is exact in a float64

#: Draws replayed one by one for a sample of ``n`` elements (or pairs) stop at
#: :func:`draw_limit` ``= max(DRAW_LIMIT_MIN, DRAWS_PER_ELEMENT · n)``: a population whose weights span
#: a wide range needs about (largest / smallest weight) draws before its lightest elements come up
#: (a ratio of 1e6 took 765,542 draws and 26 s for 3 pairs; 1e30 would never end).
DRAW_LIMIT_MIN = 1_000_000
DRAWS_PER_ELEMENT = 100
#: At most this many draws in all for draw counts (:func:`draw_counts`): beyond 2^53 a count is no
#: longer exact in double precision (and numpy's Poisson sampler refuses means beyond ~9.2e18).
MAX_TOTAL_DRAWS = 2**53


def draw_limit(n: int) -> int:
    """How many successive draws may be replayed for a sample of ``n`` elements or pairs."""
    return max(DRAW_LIMIT_MIN, DRAWS_PER_ELEMENT * int(n))


def check_size(size, what: str = "size") -> int:
    """A positive integer sample size, or a clear error."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise InputError(f"The sample {what} must be a positive integer. Got {size!r} instead.")
    if size <= 0:
        raise InputError(f"The sample {what} must be a positive integer. Got {size} instead.")
    return int(size)


def check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"The seed must be a non-negative integer. Got {seed!r} instead.")
    return int(seed)


def hash_uniform(key: ibis.Value, seed: int, salt: str = "", engine: Engine | None = None) -> ibis.Value:
    """A uniform number in (0, 1) from md5 of ``"<seed>:<salt><key>"``, in the engine.

    The first 13 hex digits of the md5 (52 bits) are read as an integer (:meth:`Engine.hex_value`:
    digit by digit, which every SQL engine can do, or the ``engine``'s own conversion, the same
    number), so DuckDB and Spark give the same number.
    """
    return _uniform_of(ibis.literal(f"{seed}:{salt}") + key.cast("string"), engine)


def _uniform_of(text: ibis.Value, engine: Engine | None = None) -> ibis.Value:
    """The uniform of :func:`hash_uniform` from the hashed string itself."""
    h = text.hexdigest("md5")
    v = engine.hex_value(h, HASH_DIGITS) if engine is not None else portable_hex_value(h, HASH_DIGITS)
    return (v + 0.5) / float(16**HASH_DIGITS)


def hash_uniform_py(key, seed: int, salt: str = "") -> float:
    """The same number as :func:`hash_uniform`, computed in Python (for tests)."""
    import hashlib

    h = hashlib.md5(f"{seed}:{salt}{key}".encode()).hexdigest()
    return (int(h[:HASH_DIGITS], 16) + 0.5) / float(16**HASH_DIGITS)


def hash_uniforms_py(keys, seed: int, salt: str = "") -> list:
    """:func:`hash_uniform_py` of each of ``keys``, the same numbers bit for bit: the md5 of the
    common prefix is computed once and copied, and the first 52 bits are read from the digest's
    bytes rather than its hex text (the draws of a simulation's thousand samples spent a fifth of
    their time here)."""
    import hashlib

    prefix = hashlib.md5(f"{seed}:{salt}".encode())
    shift, scale = 8 * ((HASH_DIGITS + 1) // 2) - 4 * HASH_DIGITS, float(16**HASH_DIGITS)
    nbytes = (HASH_DIGITS + 1) // 2
    out = []
    for key in keys:
        h = prefix.copy()
        h.update(str(key).encode())
        out.append(((int.from_bytes(h.digest()[:nbytes], "big") >> shift) + 0.5) / scale)
    return out


#: :func:`hash_uniforms_range` hashes the keys ``0, 1, 2, …`` in blocks of this many, and remembers
#: the last :data:`RANGE_BLOCKS` blocks asked for (a simulation draws the same seeds' partners in
#: every world).
RANGE_BLOCK, RANGE_BLOCKS = 512, 4096


def hash_uniforms_range(n: int, seed: int, salt: str = "") -> np.ndarray:
    """:func:`hash_uniforms_py` of the keys ``0, 1, …, n − 1``, the same numbers bit for bit, as an
    array; their blocks of :data:`RANGE_BLOCK` are remembered (bounded), so the uniforms of a seed
    asked for again (the partners of each of a simulation's worlds) are not hashed again."""
    n = int(n)
    blocks = [_range_block(int(seed), salt, k) for k in range(-(-n // RANGE_BLOCK))]
    return np.concatenate(blocks)[:n] if blocks else np.zeros(0)


@functools.lru_cache(maxsize=RANGE_BLOCKS)
def _range_block(seed: int, salt: str, k: int) -> np.ndarray:
    """The uniforms of the keys of block ``k`` (:func:`hash_uniforms_range`), read-only."""
    out = np.array(hash_uniforms_py(range(k * RANGE_BLOCK, (k + 1) * RANGE_BLOCK), seed, salt), dtype=float)
    out.flags.writeable = False
    return out


def with_draw_times(t: ibis.Table, *, key: str, weight: str, seed: int, salt: str = "",
                    engine: Engine | None = None) -> ibis.Table:
    """Add ``dt0 = -ln(u) / weight`` (exponential clocks) to ``t`` (``engine``: the one that will run it,
    for its own hex conversion; the same numbers on every engine)."""
    u = hash_uniform(t[key], seed, salt, engine)
    return t.mutate(dt0=-(u.ln()) / t[weight])


@dataclass(frozen=True)
class WeightedSample:
    """Elements drawn with replacement.

    Attributes
    ----------
    table
        The unique sampled elements (the input columns plus ``dt0`` and
        ``draw_count``), ordered by first draw time.
    horizon
        ``M``: the time of the last draw.
    draws
        Total number of draws, ``sum(draw_count)``.
    """

    table: pa.Table
    horizon: float
    draws: int


def smallest_draw_times(
    engine: Engine, t: ibis.Table, *, key: str, weight: str, n: int, seed: int, salt: str = "", step: str = "sample"
) -> pa.Table:
    """The ``n`` elements of ``t`` with the smallest initial draw times (a weighted
    sample without replacement), fetched with their ``dt0``, ordered by ``dt0``.
    Elements with weight 0 are never drawn."""
    tt = with_draw_times(t.filter(t[weight] > 0), key=key, weight=weight, seed=seed, salt=salt, engine=engine)
    return engine.to_arrow(tt.order_by(["dt0", key]).limit(n), step=step)


def smallest_draw_times_many(
    engine: Engine, t: ibis.Table, *, key: str, weight: str, n: int, seeds, salt: str = "", step: str = "sample",
    population: int | None = None,
) -> dict:
    """:func:`smallest_draw_times` for several seeds in one query (one compile, one scan):
    ``{seed: the same table smallest_draw_times(..., seed=seed) returns}``.

    Each seed's draw times are ranked only below a cut (:func:`draw_time_cut`, from the weights'
    count, sum and sum of squares) under which ``n + 8·√n + 16`` of them fall on average: ranking
    every element for every seed took two thirds of the query. With ``n`` below the cut, a seed's
    ``n`` smallest are those of all its draw times; a seed with fewer (practically never) is drawn
    again without the cut. ``population``: the elements of positive weight, when the caller knows
    them; too few for a cut, the weights are not summed (one query less)."""
    seeds = [int(s) for s in seeds]
    if len(seeds) == 1:
        return {seeds[0]: smallest_draw_times(engine, t, key=key, weight=weight, n=n, seed=seeds[0], salt=salt,
                                              step=step)}
    pos = t.filter(t[weight] > 0)
    cut = None
    if population is None or population > 2 * cut_margin(n):
        w = pos[weight]
        sums = engine.one(pos.aggregate(count=pos.count(), total=w.sum(), squares=(w * w).sum()), step=step)
        cut = draw_time_cut(int(sums.get("count") or 0), float(sums.get("total") or 0.0),
                            float(sums.get("squares") or 0.0), n)
    out = _smallest_draw_times_below(engine, pos, key=key, weight=weight, n=n, seeds=seeds, salt=salt, step=step,
                                     cut=cut)
    short = [s for s in seeds if out[s].num_rows < n] if cut is not None else []
    if short:  # fewer than n below the cut (or in all): drawn again from all their draw times
        out.update(_smallest_draw_times_below(engine, pos, key=key, weight=weight, n=n, seeds=short, salt=salt,
                                              step=step, cut=None))
    return out


def draw_time_cut(count: int, total: float, squares: float, n: int) -> float | None:
    """A draw time below which ``n + 8·√n + 16`` of ``count`` elements of weights summing to ``total``
    (their squares to ``squares``) fall on average at least (``Σ 1 − e^(−w·T) ≥ W·T − T²·Σw²/2``),
    so ``n`` of them nearly always do; None when that cut would keep half of them or more.

    >>> round(draw_time_cut(10_000, 10_000.0, 10_000.0, 100), 4), draw_time_cut(300, 300.0, 300.0, 100)
    (0.0198, None)
    """
    m = cut_margin(n)
    disc = total * total - 2.0 * squares * m
    if count <= 2 * m or not (total > 0 and squares > 0 and disc > 0):
        return None
    return 2.0 * m / (total + math.sqrt(disc))  # the smaller root of W·T − T²·Σw²/2 = m


def cut_margin(n: int) -> float:
    """How many draw times :func:`draw_time_cut` keeps on average for ``n``: ``n + 8·√n + 16``."""
    return n + 8.0 * math.sqrt(n) + 16.0


def _smallest_draw_times_below(engine: Engine, pos: ibis.Table, *, key: str, weight: str, n: int, seeds: list,
                               salt: str, step: str, cut: float | None) -> dict:
    """The query of :func:`smallest_draw_times_many` over the elements of positive weight ``pos``, each
    seed's draw times ranked below ``cut`` (None: all of them): ``{seed: its n smallest}``."""
    sd = ibis.memtable(pa.table({"__abcde_seed": pa.array(seeds, pa.int64()),
                                 "__abcde_prefix": pa.array([f"{s}:{salt}" for s in seeds], pa.string())}))
    x = pos.cross_join(sd)
    x = x.mutate(dt0=-(_uniform_of(x["__abcde_prefix"] + x[key].cast("string"), engine).ln()) / x[weight])
    if cut is not None:
        x = x.filter(x.dt0 <= cut)
    x = x.mutate(__abcde_rank=ibis.row_number().over(group_by=x["__abcde_seed"], order_by=[x.dt0, x[key]]))
    x = x.filter(x["__abcde_rank"] < n).order_by(["__abcde_seed", "dt0", key])
    got = engine.to_arrow(x.drop("__abcde_rank"), step=step)
    col = np.asarray(got.column("__abcde_seed").to_numpy())
    got = got.drop_columns(["__abcde_seed", "__abcde_prefix"])
    out = {}
    for s in seeds:
        idx = np.flatnonzero(col == s)
        out[s] = got.slice(int(idx[0]), len(idx)) if len(idx) else got.slice(0, 0)
    return out


def _times_and_weights(top: pa.Table, weight: str) -> tuple[np.ndarray, np.ndarray]:
    """``top``'s first draw times and weights, which must be finite and (weights) positive: with a
    NaN or infinite time the draws would never pass the horizon (a hang), so one is refused. The
    inputs' weights are validated and brought into range as they are read
    (:func:`abcde.core.inputs.weight_scale`), so this never happens but through a bug."""
    dt0 = np.asarray(top.column("dt0").to_numpy(zero_copy_only=False), dtype=float)
    w = np.asarray(top.column(weight).to_numpy(zero_copy_only=False), dtype=float)
    ok = np.isfinite(dt0) & np.isfinite(w) & (w > 0)
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        raise AbcdeError(f"A sampling weight or draw time is not a positive finite number (weight {w[k]!r}, "
                         f"draw time {dt0[k]!r}); nothing was drawn. This is a bug in abcde: please report it "
                         "with the range of your weights.")
    return dt0, w


def draw_counts(top: pa.Table, *, weight: str, seed: int) -> WeightedSample:
    """Steps 2–3: ``M`` = largest ``dt0``; ``dc = 1 + Poisson(w · (M − dt0))``."""
    if top.num_rows == 0:
        return WeightedSample(top.append_column("draw_count", pa.array([], pa.int64())), 0.0, 0)
    dt0, w = _times_and_weights(top, weight)
    horizon = float(dt0.max())
    rng = np.random.default_rng([seed, 1])
    mean = w * (horizon - dt0)
    total = float(mean.sum())
    if total > MAX_TOTAL_DRAWS:
        raise InputError(
            f"A sample of {top.num_rows:,} elements drawn with replacement ∝ their weights ('{weight}') would take "
            f"about {total:.2g} draws, more than 2^53 (about 9.0e+15), the most that double precision counts "
            f"exactly: the weights span too wide a range (from {float(w.min()):.3g} to {float(w.max()):.3g}) for a "
            "sample this size. Draw fewer elements, or make the weights less extreme.")
    dc = 1 + rng.poisson(mean)
    return WeightedSample(top.append_column("draw_count", pa.array(dc, pa.int64())), horizon, int(dc.sum()))


def replay(top: pa.Table, *, weight: str, seed: int, stream: int) -> Iterator[tuple[float, int]]:
    """Steps 3.1–3.2 of the appendix: every draw up to ``M`` (the largest ``dt0``), one at a
    time in time order, as ``(time, row index into top)``. (Callers stop after
    :func:`draw_limit` draws: with weights spanning a wide range the draws up to ``M`` are
    astronomically many.)

    ``top`` holds each element's first draw time ``dt0`` and its ``weight``; after each draw
    the element's next draw comes an Exponential(weight) time later, from numpy's generator
    seeded ``[seed, stream]`` (each caller its own stream, so their samples are independent).
    """
    if top.num_rows == 0:
        return
    horizon, rng, scale, heap = _replay_start(top, weight, seed, stream)
    block, size = [], 256
    # The heap never shrinks (each draw's element comes back with its next time): its first entry is
    # the next draw, replaced in one sift by the element's next time (the same order as a pop and a
    # push: no two entries are equal, their row indices differ).
    replace = heapq.heapreplace
    while True:
        t_next, i = heap[0]
        if t_next > horizon:
            return
        if not block:
            block = rng.standard_exponential(size).tolist()[::-1]
            size = min(size * 2, 1 << 16)
        replace(heap, (t_next + block.pop() * scale[i], i))
        yield t_next, i


def _replay_start(top: pa.Table, weight: str, seed: int, stream: int) -> tuple:
    """What :func:`replay` and :func:`replay_rows` start from: the horizon (the last first draw
    time), the generator seeded ``[seed, stream]``, each element's mean time between draws
    (``1/weight``) and the heap of first draw times. ``rng.exponential(s)`` is ``s`` times the
    generator's next standard exponential, and a block of them is the same numbers as as many single
    calls: both draw them in blocks, the same draws at a fraction of the cost."""
    dt0, w = _times_and_weights(top, weight)
    heap = list(zip(dt0.tolist(), range(top.num_rows)))
    heapq.heapify(heap)
    return float(dt0.max()), np.random.default_rng([seed, stream]), (1.0 / w).tolist(), heap


def replay_rows(top: pa.Table, *, weight: str, seed: int, stream: int, limit: int | None = None) -> list:
    """The row indices of :func:`replay`'s draws, the same ones in the same order, as a list (no
    generator: a simulation's samples replay millions of draws); with ``limit``, at most ``limit + 1``
    of them."""
    if top.num_rows == 0:
        return []
    horizon, rng, scale, heap = _replay_start(top, weight, seed, stream)
    out: list = []
    append, replace = out.append, heapq.heapreplace
    stop = math.inf if limit is None else limit + 1
    block, k, size = [], 0, 256
    while len(out) < stop:
        t_next, i = heap[0]
        if t_next > horizon:
            break
        if k == len(block):  # the next block of standard exponentials, as replay draws them
            block, k = rng.standard_exponential(size).tolist(), 0
            size = min(size * 2, 1 << 16)
        replace(heap, (t_next + block[k] * scale[i], i))
        k += 1
        append(i)
    return out


def successive_draws(top: pa.Table, *, weight: str, seed: int, unique: int | None = None, stop=None) -> WeightedSample:
    """Steps 3.1–3.2: replay the draws one at a time in time order, up to ``M``.

    Stops after the ``unique``-th distinct element is first drawn, or when
    ``stop(row_index, is_new)`` returns True (called after each draw), or at ``M``.
    Returns the elements drawn at least once with their draw counts.

    Raises
    ------
    InputError
        When ``unique`` elements are not drawn within :func:`draw_limit` draws (weights spanning
        a range too wide for a sample this size).
    """
    n = top.num_rows
    if n == 0:
        return WeightedSample(top.append_column("draw_count", pa.array([], pa.int64())), 0.0, 0)
    counts = np.zeros(n, dtype=np.int64)
    seen = 0
    last = 0.0
    limit = draw_limit(unique if unique is not None else n)
    for k, (t_next, i) in enumerate(replay(top, weight=weight, seed=seed, stream=2)):
        if k == limit:
            raise InputError(
                f"Drawing with replacement ∝ the weights ('{weight}') found {seen:,} distinct elements in "
                f"{limit:,} draws, not the {unique or n:,} asked for: the elements not drawn yet carry a tiny share "
                "of the weight (the weights span a wide range). Ask for fewer, or make the weights less extreme.")
        last = t_next
        is_new = counts[i] == 0
        counts[i] += 1
        seen += int(is_new)
        if (unique is not None and is_new and seen >= unique) or (stop is not None and stop(i, bool(is_new))):
            break
    keep = np.nonzero(counts)[0]
    out = top.take(pa.array(keep)).append_column("draw_count", pa.array(counts[keep], pa.int64()))
    return WeightedSample(out, last, int(counts.sum()))


def sample_with_replacement(
    engine: Engine,
    t: ibis.Table,
    *,
    key: str,
    weight: str,
    n: int,
    seed: int,
    unique: int | None = None,
    salt: str = "",
    step: str = "sample",
) -> WeightedSample:
    """Weighted sample with replacement of ``n`` unique elements of ``t``.

    Parameters
    ----------
    t
        Ibis table of elements; ``key`` identifies an element (hashed with the
        seed), ``weight`` is its (non-negative) sampling weight.
    n
        Unique elements to select (the set ``S``).
    seed
        Same seed and inputs give the identical sample on every engine.
    unique
        If given, replay the draws one by one and stop at exactly this many
        unique elements (``<= n``) instead of drawing Poisson counts.
    """
    n = check_size(n)
    seed = check_seed(seed)
    top = smallest_draw_times(engine, t, key=key, weight=weight, n=n, seed=seed, salt=salt, step=step)
    if unique is not None:
        unique = check_size(unique, "unique size")
        if unique > n:
            raise InputError(f"unique ({unique}) must be at most n ({n}).")
        return successive_draws(top, weight=weight, seed=seed, unique=unique)
    return draw_counts(top, weight=weight, seed=seed)


def weighted_subsample(table: pa.Table, *, weight: str, n: int, seed: int, key: str) -> pa.Table:
    """``n`` rows of a small Arrow table, without replacement, with probability ∝
    ``weight`` (exponential clocks from the same hash as the engine sampler)."""
    if table.num_rows <= n:
        return table
    w = np.asarray(table.column(weight).to_numpy(zero_copy_only=False), dtype=float)
    ids = table.column(key).to_pylist()
    u = np.array(hash_uniforms_py(ids, seed, "examples:"))
    with np.errstate(divide="ignore"):
        dt = np.where(w > 0, -np.log(u) / np.where(w > 0, w, 1.0), math.inf)
    order = np.argsort(dt, kind="stable")[:n]
    return table.take(pa.array(order))
