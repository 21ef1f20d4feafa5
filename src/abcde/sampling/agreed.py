"""The agreed stratum's draws by cells (issue 49): pairs together in both clusterings, drawn ∝
``w_i·w_j`` without a clock per item.

The agreed stratum holds every pair of every agreed cell (:func:`abcde.sampling.cells.agreed_cells`),
which is nearly every item of a clustering: a clock hashed for each of them cost more than the whole
diff. Each draw here is three exact stages instead, with uniforms from NumPy's generator seeded
``[seed, STREAM]`` (four per draw, row ``k`` of one array: the first ``k`` draws are the same
whatever the number drawn, so a larger budget continues the same draws, ``pairs --extend``):

1. a *group* of agreed cells ∝ its agreed mass ``Σ (W(F)² − Σ_F w²)``, from the per-group sums of
   :func:`abcde.sampling.cells.agreed_groups` (one group-by of the cells, once per diff);
2. a *cell* of that group ∝ its own ``W(F)² − Σ_F w²`` (the drawn groups' cells fetched, ordered by
   their cluster ids);
3. the ordered pair ``(i, j)``, ``i ≠ j``, of that cell ∝ ``w_i·w_j``: the vantage item ``i`` ∝
   ``w_i·(W(F) − w_i)``, then its partner ``j`` ∝ ``w_j`` among the others (the drawn cells' items
   fetched, ordered by id).

So ``P(i, j) = w_i·w_j / Σ_agreed (W(F)² − Σ_F w²)`` exactly: the draws ∝ ``w_i·w_j`` over the
stratum, each drawn pair judgeable (no self draws to reject). Each stage is inverse sampling on
running sums computed in Python over rows ordered by their ids, and the groups
(:func:`~abcde.sampling.cells.cell_group`) are the same integers on every engine, so DuckDB and Spark
draw the same pairs for the same seed; the engine only sums the groups and fetches the rows drawn.
Draws continue until the budget's distinct pairs are drawn, as every stratum's do (or every pair of
the stratum, when the budget is more).

A cell whose items' weights span so wide a range that ``W(F)² − Σ_F w²`` is lost to rounding against
``W(F)²`` (a ratio beyond about 10^10 between its heaviest item and the others) cannot be drawn in
proportion: it is refused in one line naming it, never left out in silence.

Samples drawn before this (the agreed vantage items by clocks, :func:`abcde.sampling.pairs.agreed_population`)
record no ``agreed_draws``, and are continued the way they were drawn.
"""

from __future__ import annotations

import ibis
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abcde.core.diff import Diff, cell_rows, read_cells_with_affected, rows_of_fragments
from abcde.errors import InputError
from abcde.sampling.cells import GROUPS, agreed_cells, agreed_groups, cell_group
from abcde.sampling.clocks import draw_limit
from abcde.sampling.pairs import empty_draws, pair_counts, pair_id, select_draws
from abcde.util import progress as _progress

#: How a sample's agreed stratum was drawn, as its metadata's ``agreed_draws`` records it: by cells
#: (this module) or, absent, by a clock per item (samples drawn before issue 49).
BY_CELLS = {"method": "cells", "groups": GROUPS}
#: The generator stream of the agreed draws' uniforms (``default_rng([seed, STREAM])``).
STREAM = 49


def agreed_uniforms(seed: int, k: int) -> np.ndarray:
    """The first ``k`` draws' four uniforms (a ``k × 4`` array), the same rows for every ``k``."""
    return np.random.default_rng([int(seed), STREAM]).random((int(k), 4))


def _groups(diff: Diff, wanted) -> dict:
    """``{group: (cell keys, running agreed masses)}`` of the agreed groups ``wanted``, fetched once per
    diff (cells in the order of their Base, then Exp cluster id)."""
    cache = diff.cache.agreed_cells.setdefault("groups", {})
    new = sorted(int(g) for g in set(wanted) - set(cache))
    if new:
        f = diff.fragments
        g = cell_group(f)
        t = f.filter(agreed_cells(f) & g.isin(new)).select("base_cluster", "exp_cluster", "w", "w2", _g=g)
        rows = diff.engine.to_arrow(t, step="agreed cells of the drawn groups")
        rows = rows.sort_by([("_g", "ascending"), ("base_cluster", "ascending"), ("exp_cluster", "ascending")])
        gs = rows.column("_g").to_numpy()
        w, w2 = (np.asarray(rows.column(c).to_numpy(zero_copy_only=False), dtype=float) for c in ("w", "w2"))
        mass = np.maximum(w * w - w2, 0.0)
        keys = list(zip(rows.column("base_cluster").to_pylist(), rows.column("exp_cluster").to_pylist()))
        cache.setdefault("key_types", (rows.schema.field("base_cluster").type, rows.schema.field("exp_cluster").type))
        bounds = np.flatnonzero(np.diff(gs)) + 1 if len(gs) else np.array([], dtype=np.int64)
        for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(gs)]):
            if hi > lo:
                cache[int(gs[lo])] = (keys[lo:hi], np.cumsum(mass[lo:hi]))
    return cache


def _cells(diff: Diff, wanted, id_type) -> dict:
    """``{cell key: (item ids, running weights, running w_i·(W(F) − w_i))}`` of the agreed cells
    ``wanted``, their items fetched once per diff and ordered by id."""
    cache = diff.cache.agreed_cells.setdefault("cells", {})
    new = sorted(set(wanted) - set(cache), key=repr)
    if new:
        tb, te = diff.cache.agreed_cells["groups"]["key_types"]
        wanted_t = pa.table({"base_cluster": pa.array([k[0] for k in new], tb),
                             "exp_cluster": pa.array([k[1] for k in new], te)})
        rows = cell_rows(diff, wanted_t)  # read with the affected items (cells_to_read), or on their own:
        if rows is None:
            rows = diff.engine.to_arrow(rows_of_fragments(diff, ibis.memtable(wanted_t)).select(
                "item_id", "base_cluster", "exp_cluster", "weight"), step="items of the drawn agreed cells")
        rows = rows.sort_by([("base_cluster", "ascending"), ("exp_cluster", "ascending"), ("item_id", "ascending")])
        b, e = rows.column("base_cluster").combine_chunks(), rows.column("exp_cluster").combine_chunks()
        n = rows.num_rows
        # Where a cell ends: its Base or Exp cluster changes (one vectorised comparison, not a loop per item).
        change = (pc.or_(pc.not_equal(b.slice(1), b.slice(0, n - 1)), pc.not_equal(e.slice(1), e.slice(0, n - 1)))
                  if n > 1 else pa.array([], pa.bool_()))
        ends = np.r_[np.flatnonzero(np.asarray(change.to_numpy(zero_copy_only=False))) + 1, n] if n else []
        ids = rows.column("item_id").combine_chunks().cast(id_type)
        w = np.asarray(rows.column("weight").to_numpy(zero_copy_only=False), dtype=float)
        lo = 0
        for hi in ends:
            ww = w[lo:hi]
            total = float(ww.sum())
            cache[(b[lo].as_py(), e[lo].as_py())] = (ids.slice(lo, hi - lo).to_pylist(), np.cumsum(ww),
                                                     np.cumsum(ww * (total - ww)))
            lo = int(hi)
    return cache


def agreed_pairs(diff: Diff, u: np.ndarray, id_type) -> tuple[list, list]:
    """The vantage items and partners of the agreed draws whose uniforms are the rows of ``u``
    (:func:`agreed_uniforms`): each draw's three stages (module docstring)."""
    return agreed_pairs_many(diff, [u], id_type)[0]


def agreed_pairs_many(diff: Diff, us: list, id_type) -> list[tuple[list, list]]:
    """:func:`agreed_pairs` of each uniforms array in ``us``, in order, with the groups and cells that
    all of them draw fetched together (one query for the groups and one for the cells, not two per
    sample: a simulation's thousand samples spent most of their time fetching)."""
    keys = _drawn_cells(diff, us)
    cells = _cells(diff, [k for ks in keys for k in ks], id_type)
    out = []
    for ks, u in zip(keys, us):
        a, b = [None] * len(ks), [None] * len(ks)
        for key, rows in _rows_by(ks).items():  # every draw of one cell at once (the same numbers as one by one)
            ids, cum_w, cum_a = cells[key]
            n = len(ids)
            i = _picks(cum_a, u[rows, 2])
            w_i = cum_w[i] - np.where(i > 0, cum_w[np.maximum(i - 1, 0)], 0.0)
            lo = cum_w[i] - w_i
            pos = u[rows, 3] * (cum_w[-1] - w_i)
            pos = np.where(pos >= lo, pos + w_i, pos)  # the others' weights, i's own range left out
            j = _picks(cum_w, pos, scaled=False)
            j = np.where(j == i, np.where(i + 1 < n, i + 1, i - 1), j)  # only by rounding at the edge of i's range
            for r, x, y in zip(rows, i, j):
                a[r], b[r] = ids[x], ids[y]
        out.append((a, b))
    return out


def _rows_by(keys: list) -> dict:
    """``{key: the positions holding it}`` of a list of keys, in first-seen order."""
    rows: dict = {}
    for r, k in enumerate(keys):
        rows.setdefault(k, []).append(r)
    return {k: np.asarray(v, dtype=np.int64) for k, v in rows.items()}


def _picks(cum: np.ndarray, u: np.ndarray, *, scaled: bool = True) -> np.ndarray:
    """The rows whose ``[cum[k−1], cum[k])`` hold ``u·cum[−1]`` (``scaled=False``: ``u`` itself), each
    (inverse sampling on running sums)."""
    return np.minimum(np.searchsorted(cum, u * cum[-1] if scaled else u, side="right"), len(cum) - 1)


def _drawn_cells(diff: Diff, us: list) -> list[list]:
    """Stages 1–2 (module docstring) of the draws whose uniforms are the rows of each array in ``us``:
    each draw's cell key, ``(base_cluster, exp_cluster)``."""
    cs = agreed_groups(diff)
    cum = np.cumsum(cs.mass)
    drawn = [cs.groups[np.minimum(np.searchsorted(cum, u[:, 0] * cum[-1], side="right"), len(cum) - 1)] for u in us]
    groups = _groups(diff, np.concatenate(drawn) if drawn else [])
    keys = []
    for d, u in zip(drawn, us):
        ks = [None] * len(d)
        for g, rows in _rows_by(d.tolist()).items():  # every draw of one group at once
            gkeys, gcum = groups[int(g)]
            for r, x in zip(rows, _picks(gcum, u[rows, 1])):
                ks[r] = gkeys[x]
        keys.append(ks)
    return keys


def _first_draws(diff: Diff, budget: int) -> tuple[int, int, int]:
    """``(want, first, limit)``: the distinct pairs a budget of ``budget`` draws (a budget beyond the
    stratum's pairs ends at its last pair), the draws made first, and the most ever made."""
    want = min(budget, pair_counts(diff)["agreed"])
    limit = draw_limit(budget)
    return want, min(max(2 * want + 10, 16), limit), limit


def read_agreed_cells_early(diff: Diff, *, budget: int, seeds) -> None:
    """Name the cells that the first draws of the agreed stratum (``budget`` distinct pairs, for each
    of ``seeds``) land in, so that their items are read with the affected items, in the same pass over the inputs
    (:func:`abcde.core.diff.read_cells_with_affected`): the agreed stratum's cells are unaffected,
    and their items a read of the inputs of their own otherwise. Nothing changes in what is drawn."""
    if budget <= 0 or diff.cache.affected_items is not None or not len(agreed_groups(diff).groups):
        return
    _, k, _ = _first_draws(diff, budget)
    keys = sorted({c for cells in _drawn_cells(diff, [agreed_uniforms(int(s), k) for s in seeds]) for c in cells},
                  key=repr)
    tb, te = diff.cache.agreed_cells["groups"]["key_types"]
    read_cells_with_affected(diff, pa.table({"base_cluster": pa.array([x[0] for x in keys], tb),
                                             "exp_cluster": pa.array([x[1] for x in keys], te)}))


def draw_agreed(diff: Diff, *, budget: int, seeds, id_type) -> dict:
    """``{seed: draws}`` of the agreed stratum by cells (module docstring) until ``budget`` distinct
    pairs are drawn, the columns of every stratum's draws (:func:`abcde.sampling.pairs.select_draws`).
    A budget the stratum's pairs do not exceed is listed whole by the caller (a census)."""
    seeds = list(dict.fromkeys(int(s) for s in seeds))
    if budget <= 0 or not len(agreed_groups(diff).groups):
        return {s: empty_draws(id_type) for s in seeds}
    want, k, limit = _first_draws(diff, budget)
    done: dict = {}
    pending = seeds
    while pending:
        still = []
        with _progress.step(f"Drawing agreed pairs by cells ({k:,} draws)"):
            drawn = agreed_pairs_many(diff, [agreed_uniforms(s, k) for s in pending], id_type)
            for s, (a, b) in zip(pending, drawn):
                draws = pa.table({"vantage": pa.array(a, id_type), "class": pa.array(["agreed"] * k, pa.string()),
                                  "label": pa.array([0] * k, pa.int8())})
                got = select_draws(draws, b, budget=want, drop_self=False, exhausted=False)
                if got is not None:
                    done[s] = got[0]
                elif k >= limit:
                    found = len({pair_id(x, y) for x, y in zip(a, b)})
                    raise InputError(
                        f"Drawing pairs ∝ w_i·w_j found {found:,} distinct pairs to judge in the agreed stratum in "
                        f"{limit:,} draws, short of its budget of {budget:,}: the pairs not drawn yet carry a tiny "
                        "share of its weight (the item weights span a wide range). Lower the budget, or make the "
                        "weights less extreme.")
                else:
                    still.append(s)
        pending = still
        k = min(2 * k, limit)
    return {s: done[s] for s in seeds}


__all__ = ["BY_CELLS", "STREAM", "agreed_pairs", "agreed_pairs_many", "agreed_uniforms", "draw_agreed",
           "read_agreed_cells_early"]
