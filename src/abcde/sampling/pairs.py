"""Pair population, exact pair weights and hierarchical pair sampling.

Paper, "Summary of the estimation of quality metrics". For an item ``i`` with
``B = Base(i)``, ``E = Exp(i)`` and ``W = weight(T)``::

    SplitPairs  j ∈ B \\ E:  u_ij = w_i/W · w_j / W(B),                       l_ij = -1
    MergePairs  j ∈ E \\ B:  u_ij = w_i/W · w_j / W(E),                       l_ij = +1
    StablePairs j ∈ B ∩ E:  u_ij = w_i/W · |W(B) - W(E)| / (W(B)·W(E)) · w_j, l_ij = sgn(W(B) - W(E))

StablePairs include the self pair ``(i, i)`` (never judged, always "same").

Totals are closed forms over the fragment table (never a pair list)::

    Σ_j split u_ij  = w_i/W · SplitRate(i)
    Σ_j merge u_ij  = w_i/W · MergeRate(i)
    Σ_j stable u_ij = w_i/W · |W(B) - W(E)| · W(B∩E) / (W(B)·W(E)),  of which the self pair is
                      w_i/W · |W(B) - W(E)| · w_i / (W(B)·W(E))

Sampling (never materializing the pairs): a vantage item and class ``(i, c)`` is
drawn with replacement by its total pair weight ``U_ic`` (the exponential-clock
sampler of :mod:`abcde.sampling.clocks`, draws replayed one by one), then for each draw
the partner ``j`` within the class's set with probability ∝ ``w_j``, by inverting
running weight sums of the clusters involved (an as-of join). The product is
exactly ``u_ij``; the cost grows with the items of the sampled clusters and the
number of draws, not with Σ|cluster|².
"""

from __future__ import annotations

from dataclasses import dataclass

import ibis
import numpy as np
import pyarrow as pa

from abcde.util import progress as _progress
from abcde.core.diff import Diff, affected_items, rows_of_fragments
from abcde.core.formulas import affected, merge_pair_weight, split_pair_weight, stable_label, stable_pair_weight
from abcde.errors import InputError
from abcde.sampling.allocation import STRATUM_LABEL
from abcde.sampling.cells import agreed_cells, cell_sums
from abcde.sampling.ids import pair_id
from abcde.sampling.clocks import (check_seed, check_size, draw_limit, hash_uniforms_range, replay_rows,
                                   smallest_draw_times_many)

CLASSES = ("split", "merge", "stable")
LABEL = {c: STRATUM_LABEL[c] for c in ("split", "merge")}  # l_ij of a split (−1) and a merged (+1) pair


def item_pair_weights(diff: Diff) -> ibis.Table:
    """Per affected item: ``item_id, base_cluster, exp_cluster, weight`` and its total
    pair weights by class, ``u_split, u_merge, u_stable, u_self`` (not yet divided
    by ``W``), plus ``stable_label = sgn(W(B) - W(E))``. (Every pair weight of an
    unaffected item is 0: its Base and Exp clusters are the same set.)"""
    f = diff.fragments
    j = affected_items(diff)
    t = j.join(f, [j.base_cluster == f.base_cluster, j.exp_cluster == f.exp_cluster])
    w = j.weight
    return t.select(
        j.item_id,
        j.base_cluster,
        j.exp_cluster,
        j.weight,
        u_split=split_pair_weight(f, w),
        u_merge=merge_pair_weight(f, w),
        u_stable=stable_pair_weight(f, w, f.w),
        u_self=stable_pair_weight(f, w, w),
        stable_label=stable_label(f),
        fragment_items=f.n,
    )


def vantage_items(diff: Diff) -> ibis.Table:
    """:func:`item_pair_weights` of the items with some pair weight besides their self pair (every
    vantage point of a pair sample), written once per diff: the affected items are joined to their
    fragments once, and each class's or stratum's population is a filter of this table."""
    if diff.cache.vantage_items is None:
        t = item_pair_weights(diff)
        keep = (t.u_split > 0) | (t.u_merge > 0) | (t.u_stable > 0)
        diff.cache.vantage_items = diff.engine.materialize(t.filter(keep), "vantage_items")
    return diff.cache.vantage_items


def pair_totals(diff: Diff, total_weight: float) -> dict:
    """Exact ``Σ u_ij`` overall and per class (split, merge, stable, self,
    intersection = stable without self), from the fragments in closed form; the intersection
    also by the sign of its term, ``intersection+`` (``W(B) > W(E)``, ``l_ij = +1``) and
    ``intersection-`` (``l_ij = −1``). From the sums of every cell, computed once per diff with
    every other mass of a pair sample (:func:`abcde.sampling.cells.cell_sums`)."""
    return cell_sums(diff).pair_totals(total_weight)


def agreed_population(diff: Diff) -> tuple[ibis.Table, int]:
    """The vantage population of the agreed stratum: every item of an :func:`~abcde.sampling.cells.agreed_cells` fragment
    (``item_id, base_cluster, exp_cluster, u, label, key, class``), ``u = w_i·W(F)`` (its self pair
    included, rejected when drawn: what remains is ∝ ``w_i·w_j`` over the pairs ``i ≠ j`` of one
    fragment), and its rows. Unaffected items too: an agreed pair is together in both clusterings."""
    if diff.cache.agreed_population is None:
        f = diff.fragments.filter(agreed_cells(diff.fragments))
        j = diff.joined
        t = j.join(f, [j.base_cluster == f.base_cluster, j.exp_cluster == f.exp_cluster])
        pop = t.select(j.item_id, j.base_cluster, j.exp_cluster, u=j.weight * f.w, label=ibis.literal(0).cast("int8"),
                       key=j.item_id.cast("string") + ibis.literal("|agreed"), **{"class": ibis.literal("agreed")})
        n = int(diff.engine.one(f.aggregate(n=f.n.sum()), step="agreed stratum size")["n"] or 0)
        diff.cache.agreed_population = (pop, n)
    return diff.cache.agreed_population


def pair_counts(diff: Diff) -> dict:
    """Exact number of distinct pairs ``{i, j}`` (``i ≠ j``, weight > 0) per stratum: ``split``,
    ``merge``, ``intersection`` and its ``intersection+`` / ``intersection-`` parts, and ``agreed``,
    from the fragments (``Σ_F n·(n_B − n)/2`` and so on; :func:`abcde.sampling.cells.cell_sums`), so a
    stratum whose budget covers all its pairs can be judged whole (a census). Every weight is
    positive, so every such pair has ``u_ij > 0``."""
    return cell_sums(diff).pair_counts()


def stratum_pairs(diff: Diff, stratum: str, total_weight: float) -> pa.Table:
    """Every distinct pair of a stratum, for a census: ``item_a, item_b`` (``item_a`` from the
    fragment listed first) and ``pair_weight = u_ab + u_ba`` (``= 2·u_ab``: a pair's weight is the
    same from both ends); the agreed stratum's ``2·w_a·w_b/W²`` (its pairs have no ``u_ab``: their
    weight in the pair masses of :func:`link_masses`). Cost ∝ the pairs listed: fragments are
    paired first, then their items."""
    f = diff.fragments
    it = affected_items(diff)
    W = float(total_weight)
    if stratum == "agreed":
        fr = f.filter(agreed_cells(f)).select("base_cluster", "exp_cluster")
        it = rows_of_fragments(diff, fr)
        a = it.view()
        b = it.view()
        x = a.join(b, [a.base_cluster == b.base_cluster, a.exp_cluster == b.exp_cluster, a.item_id < b.item_id])
        x = x.select(item_a=a.item_id, item_b=b.item_id, pair_weight=2.0 * a.weight * b.weight / (W * W))
    elif stratum in ("split", "merge"):
        same, other = ("base_cluster", "exp_cluster") if stratum == "split" else ("exp_cluster", "base_cluster")
        fr = f.filter(affected(f)).select(same, other, tot=f.wb if stratum == "split" else f.we)
        f1, f2 = fr.view(), fr.view()
        fp = f1.join(f2, [f1[same] == f2[same], f1[other] < f2[other]]).select(
            k=f1[same], o1=f1[other], o2=f2[other], tot=f1.tot)
        a = it.view()
        xa = fp.join(a, [fp.k == a[same], fp.o1 == a[other]]).select(
            fp.k, fp.o2, fp.tot, item_a=a.item_id, w_a=a.weight)
        b = it.view()
        x = xa.join(b, [xa.k == b[same], xa.o2 == b[other]]).select(
            xa.item_a, item_b=b.item_id, pair_weight=2.0 * xa.w_a * b.weight / xa.tot / W)
    else:
        sign = f.wb > f.we if stratum == "intersection+" else f.wb < f.we
        fr = f.filter(affected(f) & sign & (f.n > 1)).select("base_cluster", "exp_cluster", "wb", "we")
        a = it.view()
        xa = fr.join(a, [fr.base_cluster == a.base_cluster, fr.exp_cluster == a.exp_cluster]).select(
            fr.base_cluster, fr.exp_cluster, fr.wb, fr.we, item_a=a.item_id, w_a=a.weight)
        b = it.view()
        x = xa.join(b, [xa.base_cluster == b.base_cluster, xa.exp_cluster == b.exp_cluster,
                        xa.item_a < b.item_id])
        x = x.select(xa.item_a, item_b=b.item_id, pair_weight=2.0 * stable_pair_weight(xa, xa.w_a, b.weight) / W)
    return diff.engine.to_arrow(x.order_by(["item_a", "item_b"]),
                                step=f"census of the {stratum} stratum")


def pairweight_expr(diff: Diff) -> ibis.Table:
    """Per affected item ``pairweight(i) · W = Σ_j u_ij · W`` (for slices: pairweight(I);
    unaffected items have pairweight 0)."""
    t = item_pair_weights(diff)
    return t.select("item_id", "weight", pw=t.u_split + t.u_merge + t.u_stable)


def draw_sequence(top: pa.Table, *, weight: str, seed: int, limit: int | None = None) -> np.ndarray:
    """Steps 3.1–3.2 of the appendix: all draws up to ``M`` in time order, as row
    indices into ``top`` (which holds ``dt0`` and ``weight``); with ``limit``, at most
    ``limit + 1`` of them (more than ``limit``: the sequence was cut)."""
    return np.array(replay_rows(top, weight=weight, seed=seed, stream=3, limit=limit), dtype=np.int64)


def _partner_index(diff: Diff, side: str, drawn: ibis.Table):
    """Running weight sums of every item within its ``side`` cluster, in a fixed order (by the other
    side's cluster, then id), so each fragment is a contiguous range; each item's rank in that order;
    each fragment's range and each cluster's total. Only the clusters in ``drawn`` (a column
    ``<side>_cluster``) are read: a partner lies in its vantage item's cluster, and each cluster's sums
    are its own (the same numbers whichever other clusters are drawn), so no pass over every affected
    item is made (issue 49); one window over the drawn clusters' affected items, materialized (the
    caller discards it): the running sums are read three times, and Spark would compute the window
    for each read."""
    key = f"{side}_cluster"
    okey = "exp_cluster" if side == "base" else "base_cluster"
    items = affected_items(diff)
    items = items.semi_join(drawn.select(key).distinct(), key)
    order = [items[okey], items.item_id]
    win = ibis.window(group_by=items[key], order_by=order, rows=(None, 0))
    items = items.mutate(cum_hi=items.weight.sum().over(win),
                         rk=ibis.row_number().over(group_by=items[key], order_by=order))
    items = diff.engine.materialize(items.mutate(cum_lo=items.cum_hi - items.weight), f"partner_index_{side}")
    frag = items.group_by([key, okey]).aggregate(lo=items.cum_lo.min(), hi=items.cum_hi.max())
    frag = frag.join(items.group_by(key).aggregate(total=items.cum_hi.max()), key)
    cand = items.select(_k=items[key], cum_lo=items.cum_lo, rk=items.rk, partner=items.item_id)
    return frag, cand, items


def _partners(diff: Diff, draws: pa.Table) -> pa.Table:
    """For each draw (``draw``, ``vantage``, ``class``, ``base_cluster``,
    ``exp_cluster``, ``u``) pick the partner ∝ weight within the class's set.

    The draw's position ``pos`` on its cluster's running weight sums falls in exactly
    one item's ``[cum_lo, cum_hi)``: that item is the last one with ``cum_lo ≤ pos``.
    Found portably (Spark has no as-of join): draws and candidate items of the drawn
    clusters in one stream ordered by position, a running ``max(rank)`` gives each draw
    its item's rank, and an equi-join on (cluster, rank) gives the item.
    """
    eng = diff.engine
    d = ibis.memtable(draws)
    out = []
    present = set(draws.column("class").to_pylist())
    for side, other, classes in (("base", "exp", ("split", "stable")), ("exp", "base", ("merge",))):
        if not present & set(classes):  # e.g. a stratum of one class: one query, not two
            continue
        key, okey = f"{side}_cluster", f"{other}_cluster"
        dd = d.filter(d["class"].isin(list(classes)))
        frag, cand, index = _partner_index(diff, side, dd)
        x = dd.join(frag, [key, okey])
        width = x.hi - x.lo
        own = x["class"] == "stable"
        p_out = x.u * (x.total - width)
        pos = ibis.ifelse(own, x.lo + x.u * width, ibis.ifelse(p_out < x.lo, p_out, p_out + width))
        # .view(): a fresh relation, so Ibis does not fold this join into the one above.
        x = x.select(_k=x[key], pos=pos, draw=x.draw).view()
        c = cand.view()
        c = c.filter(c._k.isin(x._k))
        stream = ibis.union(
            x.select("_k", "pos", "draw", rk=ibis.null("int64")),
            c.select("_k", pos=c.cum_lo, draw=ibis.null("int64"), rk=c.rk.cast("int64")),
        )
        win = ibis.window(group_by=stream._k, order_by=[stream.pos, stream.draw.notnull(), stream.rk],
                          rows=(None, 0))
        stream = stream.mutate(at=stream.rk.max().over(win))
        hit = stream.filter(stream.draw.notnull()).select("_k", "draw", "at").view()
        c2 = cand.view()
        m = hit.join(c2, [hit._k == c2._k, hit.at == c2.rk.cast("int64")])
        out.append(eng.to_arrow(m.select("draw", "partner"), step=f"pair partners ({side})"))
        eng.discard(index)
    if "agreed" in present:
        out.append(_agreed_partners(diff, d.filter(d["class"] == "agreed")))
    if not out:
        return pa.table({"draw": pa.array([], pa.int64()), "partner": pa.array([], draws.schema.field("vantage").type)})
    return pa.concat_tables(out)


def _agreed_partners(diff: Diff, dd: ibis.Table) -> pa.Table:
    """The partners of agreed draws: ∝ ``w_j`` within the vantage item's fragment ``F`` (self
    included; the caller rejects self draws). The running weight sums are taken over the items of
    the drawn fragments only (unaffected clusters have no partner index: every other pair sample
    needs only the affected items), in id order; the draw's position ``u·W(F)`` falls in one item's
    ``[cum_lo, cum_hi)``, found as in :func:`_partners` (a running max of ranks in one stream)."""
    eng = diff.engine
    keys = ["base_cluster", "exp_cluster"]
    frags = dd.select(*keys).distinct()
    items = rows_of_fragments(diff, frags)
    win = ibis.window(group_by=[items.base_cluster, items.exp_cluster], order_by=[items.item_id], rows=(None, 0))
    items = items.mutate(cum_hi=items.weight.sum().over(win),
                         rk=ibis.row_number().over(group_by=[items.base_cluster, items.exp_cluster],
                                                   order_by=[items.item_id]))
    # Materialized (their items are few): the running sums are read three times below.
    items = eng.materialize(items.mutate(cum_lo=items.cum_hi - items.weight), "partner_index_agreed")
    tot = items.group_by(keys).aggregate(total=items.cum_hi.max())
    x = dd.join(tot, keys)
    x = x.select(_kb=x.base_cluster, _ke=x.exp_cluster, pos=x.u * x.total, draw=x.draw).view()
    c = items.select(_kb=items.base_cluster, _ke=items.exp_cluster, cum_lo=items.cum_lo, rk=items.rk,
                     partner=items.item_id)
    stream = ibis.union(
        x.select("_kb", "_ke", "pos", "draw", rk=ibis.null("int64")),
        c.select("_kb", "_ke", pos=c.cum_lo, draw=ibis.null("int64"), rk=c.rk.cast("int64")),
    )
    w = ibis.window(group_by=[stream._kb, stream._ke], order_by=[stream.pos, stream.draw.notnull(), stream.rk],
                    rows=(None, 0))
    stream = stream.mutate(at=stream.rk.max().over(w))
    hit = stream.filter(stream.draw.notnull()).select("_kb", "_ke", "draw", "at").view()
    c2 = c.view()
    m = hit.join(c2, [hit._kb == c2._kb, hit._ke == c2._ke, hit.at == c2.rk.cast("int64")])
    got = eng.to_arrow(m.select("draw", "partner"), step="pair partners (agreed)")
    eng.discard(items)
    return got


@dataclass(frozen=True)
class PairSample:
    """Sampled pairs with replacement, from the vantage point of their first item.

    Attributes
    ----------
    draws
        One row per draw, in draw order: ``draw, item_a`` (the vantage item),
        ``item_b`` (partner), ``class`` (split, merge, stable), ``is_self``,
        ``label`` (l_ij), ``pair_id``, ``needs_judgement``.
    totals
        Exact pair weight totals per class (see :func:`pair_totals`).
    judgeable
        Number of distinct pairs needing a judgement (the budget filled).
    """

    draws: pa.Table
    totals: dict
    judgeable: int
    exhausted: bool


def sample_pairs(diff: Diff, *, budget: int, seed: int, total_weight: float, oversample: float = 2.0) -> PairSample:
    """Draw pairs ∝ u_ij one by one until ``budget`` distinct pairs need a judgement.

    Self pairs need none (they count as "same" and are kept), and (i, j), (j, i)
    share one judgement. When fewer judgeable pairs exist than ``budget``, all
    of them end up sampled and ``exhausted`` is True.
    """
    return sample_pairs_many(diff, budget=budget, seeds=[check_seed(seed)], total_weight=total_weight,
                             oversample=oversample)[0]


def sample_pairs_many(diff: Diff, *, budget: int, seeds, total_weight: float, oversample: float = 2.0,
                      batch: int = 64) -> list[PairSample]:
    """:func:`sample_pairs` for each of ``seeds`` (the same samples, in order), a whole
    ``batch`` of seeds per query: for simulations."""
    budget = check_size(budget, "budget")
    seeds = [check_seed(s) for s in seeds]
    eng = diff.engine
    t = vantage_items(diff)
    per_class = []
    for c in CLASSES:
        col = f"u_{c}"
        label = ibis.literal(LABEL[c]) if c in LABEL else t.stable_label
        per_class.append(
            t.filter(t[col] > 0).select(
                "item_id", "base_cluster", "exp_cluster", u=t[col], label=label.cast("int8"),
                key=t.item_id.cast("string") + ibis.literal(f"|{c}"), **{"class": ibis.literal(c)},
            )
        )
    if diff.cache.pair_vantage is None:  # reused by further samples of the same diff
        pop = eng.materialize(ibis.union(*per_class), "pair_vantage")
        diff.cache.pair_vantage = (pop, int(eng.one(pop.aggregate(n=pop.count()))["n"]),
                                      pair_totals(diff, total_weight))
    pop, n_pop, totals = diff.cache.pair_vantage
    out = []
    for k in range(0, len(seeds), batch):
        got = fill_budgets(diff, pop, n_pop, budget=budget, seeds=seeds[k:k + batch], salt="pairs:",
                           id_type=t.item_id.type().to_pyarrow(), oversample=oversample)
        out += [PairSample(got[s][0], totals, got[s][1], got[s][2]) for s in seeds[k:k + batch]]
    return out


def empty_draws(id_type) -> pa.Table:
    return pa.table({
        "draw": pa.array([], pa.int64()), "item_a": pa.array([], id_type), "item_b": pa.array([], id_type),
        "class": pa.array([], pa.string()), "is_self": pa.array([], pa.bool_()), "label": pa.array([], pa.int8()),
        "pair_id": pa.array([], pa.string()), "needs_judgement": pa.array([], pa.bool_()),
    })


def fill_budget(diff: Diff, pop: ibis.Table, n_pop: int, *, budget: int, seed: int, salt: str, id_type,
                drop_self: bool = False, oversample: float = 2.0) -> tuple[pa.Table, int, bool]:
    """Draw (vantage, class) from ``pop`` (columns ``item_id, base_cluster, exp_cluster,
    u, label, key, class``) ∝ ``u``, one by one, each with a partner, until ``budget``
    distinct pairs need a judgement. With ``drop_self``, self pairs are discarded
    (rejection: what remains is ∝ u_ij over the non-self pairs when ``u`` includes the
    self share). Returns the draws, the judgeable count and whether all were exhausted.
    """
    return fill_budgets(diff, pop, n_pop, budget=budget, seeds=[seed], salt=salt, id_type=id_type,
                        drop_self=drop_self, oversample=oversample)[seed]


def fill_budgets(diff: Diff, pop: ibis.Table, n_pop: int, *, budget: int, seeds, salt: str, id_type,
                 drop_self: bool = False, oversample: float = 2.0) -> dict:
    """:func:`fill_budget` for several seeds at once, ``{seed: (draws, judgeable, exhausted)}``,
    each exactly what ``fill_budget(..., seed=seed)`` gives; the vantage draws of all
    seeds come from one query and their partners from one more (for simulations; one more for
    the seeds whose budget their first draws do not reach, :data:`PREFIX_PER_PAIR`)."""
    seeds = list(dict.fromkeys(int(s) for s in seeds))
    if n_pop == 0:  # every pair weight is 0, nothing to judge
        return {s: (empty_draws(id_type), 0, True) for s in seeds}
    eng = diff.engine
    n = min(n_pop, max(int(budget * oversample) + 10, 16))
    # The draws in time order are cut after `limit`: their first `limit` are the same for any n (the
    # elements beyond the n first drawn come up only after them), so a budget not reached within them
    # is never reached in a reasonable time (weights spanning a wide range), and is refused.
    limit = draw_limit(budget)
    done: dict = {}
    pending = seeds
    while pending:
        with _progress.step(f"Drawing vantage items and classes ({n:,})"):
            tops = smallest_draw_times_many(eng, pop, key="key", weight="u", n=n, seeds=pending, salt=salt,
                                            step="vantage", population=n_pop)
        # The draws in time order are replayed, and given partners, a prefix at a time: the draws up to
        # the budget-th pair are the same whatever follows them, and those up to the horizon can be a
        # hundred times as many (weights spanning a range draw the heavy pairs again and again). A
        # sample not filled by its prefix is replayed again with a longer one; one whose draws are all
        # in it (the horizon, or the limit) is decided as from every draw.
        prefix = dict.fromkeys(pending, min(PREFIX_PER_PAIR * budget + PREFIX_MIN, limit))
        still: set = set()
        undecided = pending
        while undecided:
            parts, cut, whole = _vantage_draws(tops, undecided, prefix, limit, salt)
            b_all = _partner_lists(diff, parts)
            longer = []
            for s, part, b in zip(undecided, parts, b_all):
                got = select_draws(part, b, budget=budget, drop_self=drop_self,
                                   exhausted=whole[s] and n >= n_pop and not cut[s])
                if got is None and not whole[s]:
                    prefix[s] = min(PREFIX_GROWTH * prefix[s], limit)
                    longer.append(s)
                    continue
                if got is None and cut[s]:
                    found = len({pair_id(a, b) for a, b in zip(part.column("vantage").to_pylist(), b) if a != b})
                    where = f" in the {salt[len('stratum-'):-1]} stratum" if salt.startswith("stratum-") else ""
                    raise InputError(
                        f"Drawing pairs ∝ their weights u_ij found {found:,} distinct pairs to judge{where} in "
                        f"{limit:,} draws, short of its budget of {budget:,}: the pairs not drawn yet carry a tiny "
                        "share of the pair weight (the item weights span a wide range). Lower the budget, or make "
                        "the weights less extreme.")
                if got is None:
                    still.add(s)
                else:
                    done[s] = got
            undecided = longer
        pending = [s for s in pending if s in still]
        n = min(n_pop, n * 2)
    return {s: done[s] for s in seeds}


#: :func:`fill_budgets` replays a sample's draws ``PREFIX_PER_PAIR·budget + PREFIX_MIN`` at first (the
#: budget is reached within some 2–7 draws a pair), ``PREFIX_GROWTH`` times as many when they fall short.
PREFIX_PER_PAIR, PREFIX_MIN, PREFIX_GROWTH = 8, 64, 4


def _vantage_draws(tops: dict, seeds: list, prefix: dict, limit: int, salt: str) -> tuple[list, dict, dict]:
    """Each seed's first ``prefix[seed]`` draws in time order (:func:`draw_sequence` of its ``tops``),
    with the uniform that picks each one's partner: a table per seed (``draw`` numbered across them),
    whether its draws went past ``limit`` (``cut``) and whether the table holds every draw up to the
    horizon or the limit (``whole``; else more follow)."""
    parts, offset, cut, whole = [], 0, {}, {}
    for s in seeds:
        seq = draw_sequence(tops[s], weight="u", seed=s, limit=prefix[s])
        cut[s] = len(seq) > limit
        whole[s] = len(seq) <= prefix[s] or prefix[s] >= limit
        seq = seq[:prefix[s]]
        rows = tops[s].take(pa.array(seq, pa.int64()))
        parts.append(pa.table({
            "draw": pa.array(offset + np.arange(len(seq)), pa.int64()),
            "vantage": rows.column("item_id"),
            "class": rows.column("class"),
            "label": rows.column("label"),
            "base_cluster": rows.column("base_cluster"),
            "exp_cluster": rows.column("exp_cluster"),
            "u": pa.array(hash_uniforms_range(len(seq), s, salt + "partner:"), pa.float64()),
        }))
        offset += len(seq)
    return parts, cut, whole


def _partner_lists(diff: Diff, parts: list) -> list:
    """The partner of each draw of each table of ``parts`` (:func:`_vantage_draws`), in draw order: one
    query for all of them (each draw's partner is its own, whichever others are drawn with it)."""
    draws = pa.concat_tables(parts)
    with _progress.step(f"Drawing partners for {draws.num_rows:,} draws") as shown:
        partners = _partners(diff, draws)
        shown.rows = partners.num_rows
    if partners.num_rows != draws.num_rows:  # pragma: no cover - guarded by construction
        raise RuntimeError("partner selection lost draws")
    order = np.argsort(partners.column("draw").to_numpy())
    b_all = partners.column("partner").take(pa.array(order)).to_pylist()
    out, offset = [], 0
    for part in parts:
        out.append(b_all[offset:offset + part.num_rows])
        offset += part.num_rows
    return out


def select_draws(draws: pa.Table, partners: list, *, budget: int, drop_self: bool, exhausted: bool):
    """The draws up to the ``budget``-th distinct judgeable pair, or None when these
    draws do not reach it and more are available."""
    a = draws.column("vantage").to_pylist()
    b = partners
    keep = [k for k in range(len(a)) if not (drop_self and a[k] == b[k])]
    seen: set = set()
    ids: list = []  # each kept draw's pair id, computed once
    stop = None
    for pos, k in enumerate(keep):
        pid = pair_id(a[k], b[k])
        ids.append(pid)
        if a[k] != b[k]:
            seen.add(pid)
            if len(seen) >= budget:
                stop = pos + 1
                break
    exhausted = stop is None and exhausted
    if stop is None and not exhausted:
        return None
    keep = keep[:stop] if stop is not None else keep
    a, b = [a[k] for k in keep], [b[k] for k in keep]
    cls_all, lab_all = draws.column("class").to_pylist(), draws.column("label").to_pylist()
    is_self = [x == y for x, y in zip(a, b)]
    out = pa.table({
        "draw": pa.array(range(len(keep)), pa.int64()),
        "item_a": pa.array(a, draws.schema.field("vantage").type),
        "item_b": pa.array(b, draws.schema.field("vantage").type),
        "class": pa.array([cls_all[k] for k in keep], pa.string()),
        "is_self": pa.array(is_self, pa.bool_()),
        "label": pa.array([lab_all[k] for k in keep], pa.int8()),
        "pair_id": pa.array(ids, pa.string()),
        "needs_judgement": pa.array([not s for s in is_self], pa.bool_()),
    })
    return out, len(seen), exhausted


__all__ = ["PairSample", "agreed_population", "empty_draws", "select_draws", "item_pair_weights", "pair_id", "pair_totals", "pairweight_expr", "sample_pairs",
           "sample_pairs_many", "vantage_items"]
