"""Importance sample of affected items, for interactive exploration of the impact.

Paper, "Exploring the impact". Affected items are drawn with replacement with
probability ``q(i) ∝ weight(i) · JaccardDistance(i)`` (with the sampler of
:mod:`abcde.sampling.clocks`, in the engine). Each unique sampled item keeps its draw
count ``dc(i)`` and its importance weight::

    w(i) = dc(i) / Σ_j dc(j) · JaccardDistance(T) / JaccardDistance(i)

so that for any impact metric ``m`` (SplitRate, MergeRate, JaccardDistance)
``m̂(T) = Σ_i w(i) · m(i)``, and for a slice ``I`` of the sample
``Σ_{i ∈ I} w(i) · m(i)`` estimates the slice's contribution to ``m(T)``
(its affected items' weight share times their mean metric), and
``Σ_{i ∈ I} w(i)`` estimates ``weight(I ∩ AffectedItems) / weight(T)``.

Standard errors treat the ``Σ dc`` draws as independent draws from ``q``.
"""

from __future__ import annotations

import functools
import json
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import ibis
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from abcde.util import progress as _progress
from abcde.engine import Engine, connect
from abcde.errors import InputError
from abcde.util import display
from abcde.util.files import atomic_path, check_input_path, parse_json
from abcde.sampling.filters import parse_filter, structured_filter
from abcde.core.diff import Diff, affected_items, build_diff
from abcde.core.inputs import Inputs
from abcde.core.names import DISTANCE_PARTS, IMPACT_METRICS, METRIC_LABELS
from abcde.metrics.impact import ImpactResult, overall, per_item_expr, private
from abcde.sampling.clocks import check_seed, check_size, sample_with_replacement, weighted_subsample

SAMPLE_FORMAT = "abcde.exploration_sample"
SAMPLE_VERSION = 1
METADATA_KEY = b"abcde"
METRIC_NAMES = {"split": "split_rate", "merge": "merge_rate", "jaccard": "jaccard_distance"}
#: The columns of every exploration sample: the paper's three impact metrics per item (JaccardDistance's
#: parts are left out, so a sample's format, and every sample drawn before them, stays as it is).
CORE_COLUMNS = ("item_id", "base_cluster", "exp_cluster", "weight", *IMPACT_METRICS, "draw_count",
                "importance_weight")


#: What every group's row (:meth:`SliceEstimate.to_dict`; ``explore query``, ``explore serve``, the
#: report) holds besides the group's values (and the s.e. ``explore query`` shows): a group-by column
#: of one of these names would share a key with that number, and is refused (:func:`check_group_columns`).
GROUP_FIELDS = ("sampled_items", "draws", "weight_share", "split_contribution", "merge_contribution",
                "jaccard_contribution", "split_rate", "merge_rate", "jaccard_distance", "std_err",
                "jaccard_contribution_se")


def check_group_columns(by: Sequence[str], *, where: str = "the exploration sample", what: str = "Group-by column",
                        why: str = "") -> None:
    """Raise a clear error when a group-by names a column twice, or a column named as one of
    :data:`GROUP_FIELDS` (for the message: ``what`` the column is, ``where`` it is, ``why`` it is grouped by)."""
    twice = [c for k, c in enumerate(by) if c in by[:k]]
    if twice:
        raise InputError(f"The group-by names column {twice[0]!r} more than once.")
    for c in by:
        if c in GROUP_FIELDS:
            raise InputError(
                f"{what} {c!r} of {where} has the name of a number abcde reports for every group of the "
                f"exploration sample ({', '.join(GROUP_FIELDS)}){why}, and each group's row would hold both under "
                f"one key; rename the column (for example to 'attr_{c}') to group by it."
            )


def _metric_column(metric: str) -> str:
    if metric in METRIC_NAMES:
        return METRIC_NAMES[metric]
    if metric in METRIC_NAMES.values():
        return metric
    raise InputError(f"metric must be one of split, merge, jaccard. Got {metric!r} instead.")


@dataclass(frozen=True)
class SliceEstimate:
    """Estimates for a slice (or group) of the exploration sample.

    Attributes
    ----------
    sampled_items, draws
        Unique sampled items in the slice and their total draw count.
    weight_share
        Estimate of ``weight(slice ∩ AffectedItems) / weight(T)``.
    split_contribution, merge_contribution, jaccard_contribution
        Estimates of the slice's contribution ``Σ_{i ∈ slice} weight(i)·m(i) / weight(T)``
        to ``SplitRate(T)``, ``MergeRate(T)``, ``JaccardDistance(T)``.
    split_rate, merge_rate, jaccard_distance
        Mean metric over the slice's affected weight (contribution / weight_share).
    std_err
        Standard errors of the contributions and of the weight share.
    """

    sampled_items: int
    draws: int
    weight_share: float
    split_contribution: float
    merge_contribution: float
    jaccard_contribution: float
    split_rate: float
    merge_rate: float
    jaccard_distance: float
    std_err: dict = field(default_factory=dict)
    group: dict = field(default_factory=dict)

    def _repr_html_(self) -> str:
        """The slice's estimates in a notebook (contributions to the overall rates, ± s.e.)."""
        se = self.std_err
        rows = [["weight share", display.pct(self.weight_share), display.pct(se.get("weight_share"))]]
        for key in ("split", "merge", "jaccard"):
            name = f"{key}_contribution"
            rows.append([f"{METRIC_LABELS[key + ('_distance' if key == 'jaccard' else '_rate')]} contribution",
                         display.pct(getattr(self, name)), display.pct(se.get(name))])
        title = "Slice estimate" + (" " + ", ".join(f"{k} = {v}" for k, v in self.group.items()) if self.group else "")
        return display.html_table(title, rows, ["", "estimate", "± s.e."],
                                  note=f"{display.count(self.sampled_items)} sampled items, "
                                       f"{display.count(self.draws)} draws")

    def to_dict(self) -> dict:
        return {
            **self.group,
            "sampled_items": self.sampled_items,
            "draws": self.draws,
            "weight_share": self.weight_share,
            "split_contribution": self.split_contribution,
            "merge_contribution": self.merge_contribution,
            "jaccard_contribution": self.jaccard_contribution,
            "split_rate": self.split_rate,
            "merge_rate": self.merge_rate,
            "jaccard_distance": self.jaccard_distance,
            "std_err": dict(self.std_err),
        }


def _finite(v) -> bool:
    """Whether ``v`` is a number a float holds (a 400-digit integer is not: it overflows)."""
    try:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    except OverflowError:
        return False


def _is_sample_file(path: Path) -> bool:
    """Whether ``path`` is a Parquet file with exploration-sample metadata (read from its footer)."""
    try:
        raw = (pq.read_schema(path).metadata or {}).get(METADATA_KEY)
        return raw is not None and json.loads(raw).get("format") == SAMPLE_FORMAT
    except Exception:  # not Parquet, unreadable, bad JSON: not a sample
        return False


def _check_sample_types(path: Path, table: pa.Table) -> None:
    """Refuse a sample whose columns are doubled or of the wrong type (an edited file): item ids are
    integers or text, draw counts integers, weights and rates numbers."""
    seen: set = set()
    dups = [c for c in table.column_names if c in seen or seen.add(c)]
    if dups:
        raise InputError(f"The sample file '{path}' names column {dups[0]!r} more than once.")
    for col in CORE_COLUMNS:
        t = table.schema.field(col).type
        if col == "item_id":
            ok = pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            want = "integers or text"
        elif col == "draw_count":
            ok, want = pa.types.is_integer(t), "integers"
        elif col in ("base_cluster", "exp_cluster"):
            ok = pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            want = "integers or text"
        else:
            ok, want = pa.types.is_floating(t) or pa.types.is_integer(t), "numbers"
        if not ok:
            raise InputError(f"Column '{col}' of the sample file '{path}' holds {t} values; it must hold {want}. "
                             "Draw the sample again with 'abcde explore sample'.")


@dataclass(frozen=True)
class ExplorationSample:
    """An importance sample of affected items (see the module docstring).

    Attributes
    ----------
    table
        One row per unique sampled item: ``item_id, base_cluster, exp_cluster,
        weight, split_rate, merge_rate, jaccard_distance, draw_count,
        importance_weight`` and the item attributes.
    metadata
        Inputs, seed, requested size, exact ``JaccardDistance(T)`` etc.
    """

    table: pa.Table
    metadata: dict

    def _repr_html_(self) -> str:
        """What the sample holds, and its estimate of the whole population, in a notebook."""
        m = self.metadata
        rows = [("unique items", display.count(m.get("unique_items", self.table.num_rows))),
                ("draws", display.count(m.get("total_draws", 0))),
                ("affected items", display.count(m.get("affected_items", 0))),
                (METRIC_LABELS["jaccard_distance"] + "(T), exact", display.pct(m.get("jaccard_distance_T"))),
                ("seed", str(m.get("seed")))]
        return display.html_table("Exploration sample (affected items drawn ∝ weight·JaccardDistance)", rows,
                                  note=".estimate(filter) and .group([...]) estimate slices and groups")

    # -- persistence -------------------------------------------------------
    def write(self, path: str | os.PathLike) -> Path:
        """Write the sample as Parquet with its metadata in the file's key-value metadata.

        An existing file at ``path`` is replaced only if it is an exploration sample (an earlier
        one); any other file (an input, someone's data) is refused with :class:`InputError`."""
        path = Path(path)
        if path.suffix.lower() not in (".parquet", ".pq"):
            raise InputError(f"The sample is written as Parquet; use a .parquet path. Got '{path}'.")
        if path.is_file() and not _is_sample_file(path):
            raise InputError(f"'{path}' exists and is not an exploration sample; it is left as it is. "
                             "Give --out a new file (or an earlier sample to replace).")
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = dict(self.table.schema.metadata or {})
        meta[METADATA_KEY] = json.dumps(self.metadata, default=str).encode()
        with atomic_path(path) as tmp:
            pq.write_table(self.table.replace_schema_metadata(meta), tmp)
        return path

    @classmethod
    def read(cls, path: str | os.PathLike) -> "ExplorationSample":
        """Read a sample written by :meth:`write`, checking its format and version."""
        path = Path(path)
        # a regular file, decided before anything opens it (a named pipe's reader would wait forever)
        if check_input_path(path, where=f"The sample file '{path}'",
                            expected="give an exploration sample (from 'abcde explore sample')") is None:
            raise InputError(f"The sample file '{path}' does not exist.")
        try:
            table = pq.read_table(path)
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise InputError(f"Cannot read the sample file '{path}': {first}") from exc
        raw = (table.schema.metadata or {}).get(METADATA_KEY)
        if raw is None:
            raise InputError(
                f"'{path}' has no abcde sample metadata; it was not written by 'abcde explore sample'."
            )
        try:
            meta = parse_json(raw)
        except ValueError as exc:  # a syntax error, or nested too deep to decode
            raise InputError(f"The abcde metadata of '{path}' is not valid JSON.") from exc
        if not isinstance(meta, dict):
            raise InputError(f"The abcde metadata of '{path}' is not an exploration sample's (not a JSON object).")
        if meta.get("format") != SAMPLE_FORMAT:
            raise InputError(f"'{path}' holds a {meta.get('format')!r}, not an exploration sample.")
        if meta.get("version") != SAMPLE_VERSION:
            raise InputError(
                f"'{path}' is an exploration sample of format version {meta.get('version')!r}; this abcde "
                f"reads version {SAMPLE_VERSION}. Draw the sample again with this version."
            )
        missing = [c for c in CORE_COLUMNS if c not in table.column_names]
        missing += [k for k in ("jaccard_distance_T", "seed", "size") if k not in meta]
        if missing:
            raise InputError(f"The sample file '{path}' lacks {', '.join(missing)}.")
        garbled = [k for k in ("jaccard_distance_T", "total_draws")
                   if not _finite(meta.get(k)) and not (k == "total_draws" and meta.get(k) is None)]
        if garbled:  # an edited number: a 400-digit integer overflows the estimates' floats
            raise InputError(f"The sample file '{path}' has {', '.join(garbled)} that is not a finite number in its "
                             "metadata; it was not written whole by 'abcde explore sample'. Draw the sample again.")
        _check_sample_types(path, table)
        return cls(table.replace_schema_metadata(None), meta)

    # -- estimates ---------------------------------------------------------
    @property
    def attributes(self) -> list[str]:
        return [c for c in self.table.column_names if c not in CORE_COLUMNS]

    @functools.cached_property
    def expr(self) -> ibis.Table:
        """The sample as an Ibis table (made once; queried on :attr:`engine`)."""
        return ibis.memtable(self.table)

    @functools.cached_property
    def engine(self) -> Engine:
        """The in-memory DuckDB engine that answers this sample's queries (made once)."""
        return connect()

    def _filtered(self, where) -> ibis.Table:
        t = self.expr
        if not where:
            return t
        if isinstance(where, str):
            return t.filter(parse_filter(where, t))
        return t.filter(structured_filter(where, t))

    def estimate(self, where: str | None = None) -> SliceEstimate:
        """Estimates for the whole sample, or for the slice ``where``: a filter such as
        ``"source = 'wiki' AND width <= 512"``, or a list of ``{"column", "op", "value"}``
        conditions (see :func:`abcde.sampling.filters.structured_filter`)."""
        rows = self._aggregate(self._filtered(where), [])
        return rows[0] if rows else self._empty()

    def group(self, by: Sequence[str], *, where: str | None = None, metric: str = "jaccard", top: int = 10) -> list[SliceEstimate]:
        """Group the (sliced) sample by attribute columns; the ``top`` groups by
        estimated contribution to ``metric``."""
        by = [by] if isinstance(by, str) else list(by)
        if not by:
            raise InputError("group needs at least one column.")
        cols = self.table.column_names
        for c in by:
            if c not in cols:
                raise InputError(
                    f"Unknown group-by column {c!r}. Columns: {', '.join(repr(x) for x in cols)}."
                )
        check_group_columns(by)
        key = {"split_rate": "split_contribution", "merge_rate": "merge_contribution",
               "jaccard_distance": "jaccard_contribution"}[_metric_column(metric)]
        rows = self._aggregate(self._filtered(where), by)
        rows.sort(key=lambda r: (-getattr(r, key), json.dumps(r.group, default=str)))
        return rows[: max(0, int(top))]

    def examples(self, n: int, *, where: str | None = None, seed: int = 0) -> pa.Table:
        """``n`` example items of the (sliced) sample, subsampled with probability ∝ w(i)."""
        t = self.engine.to_arrow(self._filtered(where), step="examples")
        return weighted_subsample(t, weight="importance_weight", n=int(n), seed=seed, key="item_id")

    def _empty(self) -> SliceEstimate:
        return SliceEstimate(0, 0, 0.0, 0.0, 0.0, 0.0, math.nan, math.nan, math.nan,
                             {"weight_share": math.nan, **{f"{k}_contribution": math.nan for k in METRIC_NAMES}})

    def _aggregate(self, t: ibis.Table, by: list[str]) -> list[SliceEstimate]:
        # Per draw, y = m(i) · JD(T)/JD(i) for items in the slice (0 outside). The estimate
        # is Σ_i w(i) m(i) = Σ_draws y / D; its standard error sd(y)/sqrt(D) over all D draws.
        D = float(self.metadata.get("total_draws") or 0)
        jd_t = float(self.metadata["jaccard_distance_T"])
        # Every helper column and sum under a private name: a group-by column may be called anything
        # ("draws", "s_share", "_y0", ...) without meeting one of them.
        y0 = private("y0")
        g = t.mutate(**{y0: jd_t / t.jaccard_distance})
        dc = g.draw_count
        aggs = {"sampled_items": g.count(), "draws": dc.sum()}
        aggs["s_share"] = (dc * g[y0]).sum()
        aggs["q_share"] = (dc * g[y0] * g[y0]).sum()
        for short, col in METRIC_NAMES.items():
            y = g[y0] * g[col]
            aggs[f"s_{short}"] = (dc * y).sum()
            aggs[f"q_{short}"] = (dc * y * y).sum()
        aggs = {private(k): v for k, v in aggs.items()}
        q = g.group_by(by).aggregate(**aggs) if by else g.aggregate(**aggs)
        out = []
        for row in self.engine.rows(q, step="explore query"):
            r = {k[len(private("")):]: v for k, v in row.items() if k.startswith(private(""))}
            if not r["sampled_items"]:
                continue

            def est(s, qq):
                mean = (s or 0.0) / D if D else math.nan
                var = ((qq or 0.0) / D - mean * mean) * D / (D - 1) if D > 1 else math.nan
                return mean, math.sqrt(max(var, 0.0) / D) if D > 1 else math.nan

            share, share_se = est(r["s_share"], r["q_share"])
            contrib, ses = {}, {"weight_share": share_se}
            for short in METRIC_NAMES:
                contrib[short], ses[f"{short}_contribution"] = est(r[f"s_{short}"], r[f"q_{short}"])
            rate = {k: (contrib[k] / share if share > 0 else math.nan) for k in METRIC_NAMES}
            out.append(
                SliceEstimate(
                    sampled_items=int(r["sampled_items"]),
                    draws=int(r["draws"]),
                    weight_share=share,
                    split_contribution=contrib["split"],
                    merge_contribution=contrib["merge"],
                    jaccard_contribution=contrib["jaccard"],
                    split_rate=rate["split"],
                    merge_rate=rate["merge"],
                    jaccard_distance=rate["jaccard"],
                    std_err=ses,
                    group={c: row[c] for c in by},
                )
            )
        return out


def affected_population(diff: Diff) -> ibis.Table:
    """Affected items with their metrics and sampling weight ``q = weight · JaccardDistance``,
    materialized once per diff so repeated samples (other seeds or sizes) reuse it."""
    if diff.cache.affected_population is None:
        pi = per_item_expr(diff, affected_items(diff)).drop(*DISTANCE_PARTS)
        pop = pi.filter(pi.jaccard_distance > 0)
        diff.cache.affected_population = diff.engine.materialize(
            pop.mutate(q=pop.weight * pop.jaccard_distance), "affected")
    return diff.cache.affected_population


def sample_affected(
    result: ImpactResult | Diff,
    *,
    size: int,
    seed: int,
    inputs: dict | None = None,
) -> ExplorationSample:
    """Draw the exploration sample from an impact computation (see :func:`sample_items`)."""
    size = check_size(size)
    seed = check_seed(seed)
    diff = result.diff if isinstance(result, ImpactResult) else result
    o = overall(diff) if not isinstance(result, ImpactResult) else result.to_dict()
    eng = diff.engine
    pop = affected_population(diff)
    with _progress.step(f"Drawing {size:,} affected items ∝ weight·JaccardDistance") as shown:
        s = sample_with_replacement(eng, pop, key="item_id", weight="q", n=size, seed=seed, step="exploration sample")
        shown.rows = s.table.num_rows
    t = s.table
    if t.num_rows:
        dc = np.asarray(t.column("draw_count").to_numpy(), dtype=float)
        jd = np.asarray(t.column("jaccard_distance").to_numpy(), dtype=float)
        iw = dc / dc.sum() * o["jaccard_distance"] / jd
    else:
        iw = np.array([], dtype=float)
    t = t.drop_columns(["q", "dt0"]).append_column("importance_weight", pa.array(iw, pa.float64()))
    if diff.items is not None and diff.attributes:
        attrs = diff.items.select("item_id", *diff.attributes)
        ids = ibis.memtable(t.select(["item_id"]))
        fetched = eng.to_arrow(ids.join(attrs, "item_id"), step="sample attributes") if t.num_rows else None
        if fetched is not None:
            order = {v: k for k, v in enumerate(fetched.column("item_id").to_pylist())}
            idx = pa.array([order[i] for i in t.column("item_id").to_pylist()])
            for a in diff.attributes:
                t = t.append_column(a, fetched.column(a).take(idx))
        else:
            for a in diff.attributes:
                t = t.append_column(a, pa.nulls(0, diff.items.schema()[a].to_pyarrow()))
    if t.num_rows == 0:
        warnings.warn("No item is affected (Base and Exp agree on every common item): the sample is empty.",
                      stacklevel=2)
    meta = {
        "format": SAMPLE_FORMAT,
        "version": SAMPLE_VERSION,
        "seed": seed,
        "size": size,
        "unique_items": t.num_rows,
        "total_draws": s.draws,
        "horizon": s.horizon,
        "items": o["items"],
        "total_weight": o["total_weight"],
        "affected_items": o["affected_items"],
        "affected_weight": o["affected_weight"],
        "split_rate_T": o["split_rate"],
        "merge_rate_T": o["merge_rate"],
        "jaccard_distance_T": o["jaccard_distance"],
        "sampling_weight": "weight * jaccard_distance",
        "inputs": inputs or {},
        "engine": eng.name,
    }
    return ExplorationSample(t, meta)


def sample_items(
    base,
    exp=None,
    *,
    size: int,
    seed: int,
    items=None,
    item_id: str = "item_id",
    cluster_id: str = "cluster_id",
    weight: str | None = None,
    engine: Engine | str | None = None,
) -> ExplorationSample:
    """Importance sample of affected items, ``q(i) ∝ weight(i) · JaccardDistance(i)``.

    Parameters
    ----------
    base, exp, items, item_id, cluster_id, weight, engine
        As for :func:`abcde.impact`.
    size
        Unique items to draw (``N``; fewer when fewer items are affected).
    seed
        The same seed and inputs give the identical sample, on every engine.

    Returns
    -------
    ExplorationSample
        Empty (with a warning) when no item is affected.
    """
    size = check_size(size)
    seed = check_seed(seed)
    given = Inputs.of(base, exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight)
    diff = build_diff(given, engine=engine)
    inputs = {k: (os.path.abspath(v) if k in ("base", "exp", "items") and os.path.exists(v) else v)
              for k, v in given.names().items()}
    inputs.update(item_id=given.item_id, cluster_id=given.cluster_id, weight=given.weight)
    return sample_affected(diff, size=size, seed=seed, inputs=inputs)
