"""Hypothesis strategies for ABCDE tests.

All strategies produce plain Python dicts:
  clustering: item -> cluster id
  weights:    item -> positive float
  attribute:  item -> small string value
"""

from __future__ import annotations

from hypothesis import strategies as st

MAX_ITEMS = 40

# Printable, non-surrogate, non-control characters (so ids survive any engine).
_ID_TEXT = st.text(
    alphabet=st.characters(
        codec="utf-8", exclude_categories=("Cs", "Cc", "Co", "Cn")
    ),
    min_size=1,
    max_size=8,
)
_ID_INT = st.integers(min_value=-(10**12), max_value=10**12)

ATTRIBUTE_VALUES = ("web", "books", "news", "video")
SIZE_VALUES = ("S", "M", "L")


def item_ids(min_size: int = 1, max_size: int = MAX_ITEMS):
    """A list of distinct item ids: all ints or all strings."""
    return st.one_of(
        st.lists(_ID_INT, min_size=min_size, max_size=max_size, unique=True),
        st.lists(_ID_TEXT, min_size=min_size, max_size=max_size, unique=True),
    )


@st.composite
def cluster_labels(draw, k: int):
    """k distinct cluster ids, all ints or all strings."""
    return draw(
        st.one_of(
            st.lists(_ID_INT, min_size=k, max_size=k, unique=True),
            st.lists(_ID_TEXT, min_size=k, max_size=k, unique=True),
        )
    )


@st.composite
def _partition(draw, items):
    """An arbitrary partition of ``items`` as a list of cluster indexes."""
    n = len(items)
    k = draw(st.integers(min_value=1, max_value=max(1, n)))
    return [draw(st.integers(min_value=0, max_value=k - 1)) for _ in items]


@st.composite
def _perturb(draw, items, idx):
    """A small change of a partition: move a few items to other/new clusters."""
    idx = list(idx)
    n = len(items)
    moves = draw(st.integers(min_value=0, max_value=min(4, n)))
    for _ in range(moves):
        pos = draw(st.integers(min_value=0, max_value=n - 1))
        # target is an existing cluster index or a brand-new one
        target = draw(st.integers(min_value=0, max_value=max(idx) + 1))
        idx[pos] = target
    if draw(st.booleans()) and len(set(idx)) > 1:
        # merge two clusters
        a, b = draw(st.permutations(sorted(set(idx))))[:2]
        idx = [a if c == b else c for c in idx]
    return idx


def _label(draw, items, idx) -> dict:
    distinct = sorted(set(idx))
    labels = draw(cluster_labels(len(distinct)))
    lab = dict(zip(distinct, labels))
    return {i: lab[c] for i, c in zip(items, idx)}


@st.composite
def clustering_on(draw, items, like=None):
    """A clustering of exactly ``items``.

    If ``like`` (another clustering of the same items) is given, the result is
    often a small perturbation of it, so that "mostly stable" diffs are common.
    """
    items = list(items)
    if like is not None and draw(st.booleans()):
        # reuse like's partition structure (indexes), then perturb it
        order = {}
        base_idx = [order.setdefault(like[i], len(order)) for i in items]
        idx = draw(_perturb(items, base_idx))
    else:
        idx = draw(_partition(items))
    return _label(draw, items, idx)


@st.composite
def weights_for(draw, items) -> dict:
    """Either all 1.0, or random positive floats in [0.01, 100]."""
    items = list(items)
    if draw(st.booleans()):
        return {i: 1.0 for i in items}
    w = st.floats(min_value=0.01, max_value=100.0, allow_nan=False, allow_infinity=False)
    return {i: draw(w) for i in items}


@st.composite
def clusterings(draw, min_items: int = 1, max_items: int = MAX_ITEMS):
    """(base, exp, weights) on the same 1-40 items."""
    items = draw(item_ids(min_items, max_items))
    base = draw(clustering_on(items))
    exp = draw(clustering_on(items, like=base))
    weights = draw(weights_for(items))
    return base, exp, weights


def third_clustering(items, like=None):
    """Strategy for another clustering on the same items (triangle inequality)."""
    return clustering_on(items, like=like)


@st.composite
def three_clusterings(draw):
    """(a, b, c, weights): three clusterings of the same items."""
    a, b, weights = draw(clusterings())
    c = draw(third_clustering(list(a), like=draw(st.sampled_from([a, b]))))
    return a, b, c, weights


def attribute_column(items, values=ATTRIBUTE_VALUES):
    """Strategy: item -> one of a small set of string values."""
    items = list(items)

    @st.composite
    def _col(draw):
        k = draw(st.integers(min_value=1, max_value=len(values)))
        pool = values[:k]
        return {i: draw(st.sampled_from(pool)) for i in items}

    return _col()


@st.composite
def partial_clusterings(draw):
    """(base, exp, weights) where some items may be only in base or only in exp.

    ``weights`` covers all items of both clusterings plus possibly some extra
    items that are in neither ("items only").  There is always >= 1 common item.
    """
    ids = draw(item_ids(min_size=2, max_size=MAX_ITEMS))
    n = len(ids)
    # role of each id: 0 common, 1 base only, 2 exp only, 3 items-table only
    roles = [0] + [
        draw(st.sampled_from([0, 0, 0, 1, 2, 3])) for _ in range(n - 1)
    ]
    roles = draw(st.permutations(roles))
    common = [i for i, r in zip(ids, roles) if r == 0]
    base_items = common + [i for i, r in zip(ids, roles) if r == 1]
    exp_items = common + [i for i, r in zip(ids, roles) if r == 2]
    base = draw(clustering_on(base_items))
    exp = draw(clustering_on(exp_items))
    weights = draw(weights_for(ids))
    return base, exp, weights


@st.composite
def sample_inputs(draw):
    """(base, exp, weights, attrs, use_items) for drawing samples through the public API.

    The clusterings may hold items the other lacks, and ``weights`` may hold items in
    neither (rows of an items table only), as in :func:`partial_clusterings`; Exp is often a
    small change of Base on the common items. ``attrs`` gives every id a string ``src`` and an
    integer ``n`` (slice columns). ``use_items`` False (only with unit weights): no items table,
    so every item weighs 1 and there are no slices.
    """
    ids = draw(item_ids(min_size=2, max_size=24))
    roles = [0] + [draw(st.sampled_from([0, 0, 0, 0, 1, 2, 3])) for _ in range(len(ids) - 1)]
    roles = draw(st.permutations(roles))
    common = [i for i, r in zip(ids, roles) if r == 0]
    base_items = common + [i for i, r in zip(ids, roles) if r == 1]
    exp_items = common + [i for i, r in zip(ids, roles) if r == 2]
    base = draw(clustering_on(base_items))
    exp_common = draw(clustering_on(common, like={i: base[i] for i in common}))
    if len(exp_items) > len(common):
        extra = draw(clustering_on(exp_items))
        exp = {i: exp_common[i] if i in exp_common else ("x", extra[i]) for i in exp_items}
        # keep one id type per clustering: tuples are not ids; relabel every cluster of exp
        relabel = {c: k for k, c in enumerate(dict.fromkeys(exp.values()))}
        exp = {i: relabel[c] for i, c in exp.items()}
    else:
        exp = exp_common
    weights = draw(weights_for(ids))
    use_items = draw(st.booleans()) or not all(v == 1.0 for v in weights.values())
    attrs = {
        "src": {i: draw(st.sampled_from(ATTRIBUTE_VALUES[:3])) for i in ids},
        "n": {i: draw(st.integers(min_value=0, max_value=2)) for i in ids},
    }
    if not use_items:
        weights = {i: 1.0 for i in set(base_items) | set(exp_items)}
    return base, exp, weights, attrs, use_items
