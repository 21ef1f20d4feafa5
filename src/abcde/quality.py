"""Quality metrics from judged pairs: ΔPrecision and Good/Bad Split/Merge rates.

Paper, "ABCDE quality metrics" to "Practical considerations", and Appendix
"Estimating ΔPrecision for slices of items". A pair sample (see
:mod:`abcde.pairs`) lives in a directory:

``pairs.parquet``
    one row per draw (vantage item first, class, label, pair id), with the
    sample's metadata (exact pair weight totals, SplitRate(T), MergeRate(T), …);
``items.parquet``
    the attributes of every item in the sample;
``tasks.csv`` / ``tasks.parquet`` / ``tasks.jsonl``
    one row per pair needing a judgement, both items' attributes side by side
    (blind: no class, no clusters);
``slices.parquet``
    exact ``weight(I)`` and ``pairweight(I)`` per attribute value asked for;
``judgements.csv``
    judgements (e.g. written by the oracle judge).

Estimators (each draw is one observation; self pairs count as ``same``;
unsure and missing judgements are dropped and the remaining draws of each class
— self, split, merge, intersection — reweighted so the class keeps its sampled
weight; standard error of the weighted mean, the paper's Case I)::

    ΔPrecision(T)    = Σ_{AllPairs} u_ij · wmean(l_ij · 1(i ≡ j))
    GoodSplitRate(T) = SplitRate(T) · mean_{split draws}(1(i ≢ j)),  BadSplitRate = … 1(i ≡ j)
    GoodMergeRate(T) = MergeRate(T) · mean_{merge draws}(1(i ≡ j)),  BadMergeRate = … 1(i ≢ j)
    ΔPrecisionContribution(I) = pairweight(I) · wmean_{draws with vantage in I}(…)
    ΔPrecision(I)             = weight(T)/weight(I) · ΔPrecisionContribution(I)
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

import ibis
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .engine import Engine
from .errors import InputError
from .fragments import affected_items, build_diff
from .impact import overall
from .io import input_names
from .judgements import VOCABULARY, load_judgements, read_table_file, write_table_file
from .pairs import PairSample, pair_class_of_draws, pairweight_expr, sample_pairs

FORMAT = "abcde.pair_sample"
VERSION = 1
META_KEY = b"abcde"
Z95 = 1.959963984540054
ESTIMATION_CLASSES = ("self", "split", "merge", "intersection")


@dataclass(frozen=True)
class Estimate:
    """Sample-based estimate of one quality metric.

    Attributes
    ----------
    metric
        Its name, e.g. ``delta_precision``.
    value, standard_error
        The estimate and its standard error (NaN when undefined, see ``note``).
    n_judgements
        Judged draws it rests on.
    method
        How it was estimated.
    note
        Why it is undefined, when it is.
    """

    metric: str
    value: float
    standard_error: float
    n_judgements: int
    method: str = "paper"
    note: str = ""

    @property
    def defined(self) -> bool:
        return math.isfinite(self.value)

    def confidence_interval(self, confidence_level: float = 0.95) -> tuple[float, float]:
        """Interval ``value ± q·SE`` with q the Student t quantile on ``n_judgements − 1``
        degrees of freedom (the normal quantile when fewer than two judgements).

        The t quantile matters when a class has few judged pairs: with 8 judged split pairs
        a normal interval for GoodSplitRate covers about 90%, not 95%.
        """
        if not 0 < confidence_level < 1:
            raise InputError(
                f"The 'confidence_level' parameter of confidence_interval must be in (0, 1). "
                f"Got {confidence_level} instead."
            )
        from scipy.stats import norm, t

        p = 0.5 + confidence_level / 2
        z = float(t.ppf(p, self.n_judgements - 1)) if self.n_judgements >= 2 else float(norm.ppf(p))
        if not (self.defined and math.isfinite(self.standard_error)):
            return (math.nan, math.nan)
        return (self.value - z * self.standard_error, self.value + z * self.standard_error)

    def to_dict(self) -> dict:
        lo, hi = self.confidence_interval()

        def num(x):
            return x if math.isfinite(x) else None

        d = {"estimate": num(self.value), "std_err": num(self.standard_error), "ci_low": num(lo),
             "ci_high": num(hi), "n_judgements": self.n_judgements, "method": self.method}
        if self.note:
            d["note"] = self.note
        return d


def weighted_mean_se(x: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Weighted mean and its standard error (Case I: weights are relative importance)::

        SE = sqrt((Σ w x² / Σ w − x̄²) · Σ w² / ((Σ w)² − Σ w²))
    """
    if len(x) == 0 or w.sum() <= 0:
        return math.nan, math.nan
    sw = w.sum()
    mean = float((w * x).sum() / sw)
    sw2 = float((w * w).sum())
    denom = sw * sw - sw2
    if denom <= 0:
        return mean, math.nan
    var = max(float((w * x * x).sum() / sw) - mean * mean, 0.0)
    return mean, math.sqrt(var * sw2 / denom)


# --------------------------------------------------------------------------- sample directory
def draw_pair_sample(
    base,
    exp,
    out_dir: str | os.PathLike,
    *,
    budget: int,
    seed: int,
    items=None,
    item_id: str = "item_id",
    cluster_id: str = "cluster_id",
    weight: str | None = None,
    slice_by: Sequence[str] = (),
    estimator: str = "stratified",
    allocation: str = "proportional",
    pilot: str | os.PathLike | None = None,
    engine: Engine | str | None = None,
) -> Path:
    """Sample pairs for judgement and write the sample directory (see module docstring).

    ``estimator="stratified"`` (the default) computes the self term exactly and samples
    the split, merge and intersection strata with budgets ∝ U_c
    (``allocation="proportional"``) or ∝ U_c·σ_c (``"neyman"``, σ_c from the judged
    sample directory ``pilot``): the same confidence from fewer judgements (see
    :mod:`abcde.stratified`). ``"paper"`` samples all pairs ∝ u_ij (the paper's design).

    ``slice_by`` names attribute columns for which the exact slice multipliers
    ``weight(I)`` and ``pairweight(I)`` are stored, so ``quality --slice-by`` can
    report ΔPrecision(I) later without the inputs.
    """
    diff = build_diff(base, exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight, engine=engine)
    for c in slice_by:
        if c not in diff.attributes:
            raise InputError(
                f"Slice column '{c}' not found in the items table. Attribute columns: "
                f"{', '.join(repr(a) for a in diff.attributes) or '(none)'}."
            )
    o = overall(diff)
    eng = diff.engine
    if estimator not in ("paper", "stratified"):
        raise InputError(f"estimator must be 'paper' or 'stratified'. Got {estimator!r} instead.")
    if estimator == "paper":
        ps = sample_pairs(diff, budget=budget, seed=seed, total_weight=o["total_weight"])
        extra = {"estimator": "paper", "allocation": None}
    else:
        from .stratified import STRATA, pilot_sigmas_from_dir, sample_stratified

        sigmas = pilot_sigmas_from_dir(pilot) if allocation == "neyman" and pilot is not None else None
        ss = sample_stratified(diff, budget=budget, seed=seed, total_weight=o["total_weight"],
                               allocation=allocation, sigmas=sigmas)
        parts = [ss.draws[c].append_column("stratum", pa.array([c] * ss.draws[c].num_rows, pa.string()))
                 for c in STRATA]
        draws = pa.concat_tables(parts)
        draws = draws.set_column(0, "draw", pa.array(range(draws.num_rows), pa.int64()))
        judgeable = len({p for p, n in zip(draws.column("pair_id").to_pylist(),
                                           draws.column("needs_judgement").to_pylist()) if n})
        ps = PairSample(draws, ss.totals, judgeable, judgeable < budget)
        extra = {"estimator": "stratified", "allocation": allocation, "budgets": ss.budgets,
                 "self_term": ss.self_term, "pilot_sigmas": sigmas}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".abcde-", dir=out))
    try:
        draws = ps.draws
        id_type = "integer" if diff.joined.item_id.type().is_integer() else "string"
        # Attributes of every item in the sample.
        if draws.num_rows:
            ids = pa.table({"item_id": pa.concat_arrays([draws.column("item_a").combine_chunks(),
                                                         draws.column("item_b").combine_chunks()])})
            idt = ibis.memtable(ids).distinct()
            src = diff.items if diff.items is not None else affected_items(diff).select("item_id", "weight")
            items_t = eng.to_arrow(idt.join(src, "item_id").order_by("item_id"), step="sample items")
        else:
            items_t = pa.table({"item_id": pa.array([], pa.int64())})
        pq.write_table(items_t, tmp / "items.parquet")
        # Exact slice multipliers.
        if slice_by:
            from .stratified import slice_self_terms

            pw = pairweight_expr(diff)
            rows = []
            for c in slice_by:
                selfs = slice_self_terms(diff, c, o["total_weight"])
                a = diff.items.select("item_id", c)
                full = diff.joined.select("item_id", "weight").join(a, "item_id")
                wt = eng.rows(full.group_by(c).aggregate(weight=full.weight.sum()), step=f"slice weights {c}")
                g = pw.join(a, "item_id")
                pws = {json.dumps(r[c], default=str): r["pw"] for r in
                       eng.rows(g.group_by(c).aggregate(pw=g.pw.sum()), step=f"slice pair weights {c}")}
                for r in sorted(wt, key=lambda r: json.dumps(r[c], default=str)):  # same order on every engine
                    key = json.dumps(r[c], default=str)
                    rows.append({"column": c, "value": key, "weight": r["weight"],
                                 "pairweight": pws.get(key, 0.0) / o["total_weight"],
                                 "self_term": selfs.get(key, (0.0, 0.0))[0],
                                 "self_pairweight": selfs.get(key, (0.0, 0.0))[1]})
            pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema(
                [("column", pa.string()), ("value", pa.string()), ("weight", pa.float64()),
                 ("pairweight", pa.float64()), ("self_term", pa.float64()), ("self_pairweight", pa.float64())])),
                tmp / "slices.parquet")
        meta = {
            "format": FORMAT,
            "version": VERSION,
            "seed": seed,
            "budget": budget,
            **extra,
            "judgeable_pairs": ps.judgeable,
            "exhausted": ps.exhausted,
            "draws": draws.num_rows,
            "pair_totals": ps.totals,
            "total_weight": o["total_weight"],
            "items": o["items"],
            "split_rate_T": o["split_rate"],
            "merge_rate_T": o["merge_rate"],
            "jaccard_distance_T": o["jaccard_distance"],
            "id_type": id_type,
            "attributes": diff.attributes,
            "slice_by": list(slice_by),
            "inputs": input_names(base=base, exp=exp, items=items),
        }
        meta["sample_id"] = _sample_id(draws, seed)
        pq.write_table(draws.replace_schema_metadata({META_KEY: json.dumps(meta, default=str).encode()}),
                       tmp / "pairs.parquet")
        tasks = task_table(draws, items_t)
        for ext in ("csv", "parquet", "jsonl"):
            write_table_file(tasks.replace_schema_metadata(None), tmp / f"tasks.{ext}")
        (tmp / "metadata.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
        for p in sorted(tmp.iterdir()):
            os.replace(p, out / p.name)
        stale = out / "judgements.csv"
        if stale.exists():  # judgements of an earlier sample in this directory would not match
            stale.unlink()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _sample_id(draws: pa.Table, seed: int) -> str:
    import hashlib

    h = hashlib.md5(str(seed).encode())
    for p in draws.column("pair_id").to_pylist() if draws.num_rows else []:
        h.update(p.encode())
    return h.hexdigest()[:16]


def task_table(draws: pa.Table, items_t: pa.Table) -> pa.Table:
    """One row per pair needing a judgement: ``pair_id, item_a, item_b`` and both
    items' attributes side by side (``a_<col>``, ``b_<col>``), in first-draw order."""
    attrs = {r["item_id"]: r for r in items_t.to_pylist()}
    cols = [c for c in items_t.column_names if c != "item_id"]
    rows, seen = [], set()
    if draws.num_rows:
        for a, b, pid, need in zip(draws.column("item_a").to_pylist(), draws.column("item_b").to_pylist(),
                                   draws.column("pair_id").to_pylist(), draws.column("needs_judgement").to_pylist()):
            if not need or pid in seen:
                continue
            seen.add(pid)
            row = {"pair_id": pid, "item_a": a, "item_b": b}
            for c in cols:
                row[f"a_{c}"] = attrs.get(a, {}).get(c)
            for c in cols:
                row[f"b_{c}"] = attrs.get(b, {}).get(c)
            rows.append(row)
    if not rows:
        return pa.table({"pair_id": pa.array([], pa.string()), "item_a": pa.array([], pa.string()),
                         "item_b": pa.array([], pa.string())})
    return pa.Table.from_pylist(rows)


@dataclass(frozen=True)
class PairSampleDir:
    """A pair sample directory read back: draws, metadata, items, slices."""

    path: Path
    draws: pa.Table
    metadata: dict
    items: pa.Table

    @classmethod
    def read(cls, path: str | os.PathLike) -> "PairSampleDir":
        p = Path(path)
        f = p / "pairs.parquet"
        if not f.exists():
            raise InputError(f"'{p}' is not a pair sample directory (no pairs.parquet); make one with 'abcde pairs'.")
        t = pq.read_table(f)
        raw = (t.schema.metadata or {}).get(META_KEY)
        if raw is None:
            raise InputError(f"'{f}' has no abcde metadata; it was not written by 'abcde pairs'.")
        meta = json.loads(raw)
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise InputError(
                f"'{f}' is a {meta.get('format')!r} of version {meta.get('version')!r}; this abcde reads "
                f"{FORMAT} version {VERSION}. Draw the pairs again with this version."
            )
        items = pq.read_table(p / "items.parquet")
        return cls(p, t.replace_schema_metadata(None), meta, items)

    def judgeable_ids(self) -> set:
        if not self.draws.num_rows:
            return set()
        need = self.draws.column("needs_judgement").to_pylist()
        return {pid for pid, n in zip(self.draws.column("pair_id").to_pylist(), need) if n}

    def slices(self) -> dict:
        f = self.path / "slices.parquet"
        if not f.exists():
            return {}
        out: dict = {}
        for r in pq.read_table(f).to_pylist():
            out.setdefault(r["column"], {})[r["value"]] = (r["weight"], r["pairweight"])
        return out

    def slice_self_terms(self) -> dict:
        """``{column: {value: (Σ_{i∈I} u_ii·l_ii, Σ_{i∈I} u_ii)}}``, exact (for the stratified design)."""
        f = self.path / "slices.parquet"
        t = pq.read_table(f) if f.exists() else None
        if t is None or "self_term" not in t.column_names:
            return {}
        out: dict = {}
        for r in t.to_pylist():
            out.setdefault(r["column"], {})[r["value"]] = (r["self_term"], r["self_pairweight"])
        return out


# --------------------------------------------------------------------------- judges
def oracle_judge(sample_dir: str | os.PathLike, column: str, *, out: str | os.PathLike | None = None) -> Path:
    """Judge every pair from a ground-truth attribute: equal values ⇒ ``same``,
    different ⇒ ``different``, a null on either side ⇒ ``unsure``."""
    s = PairSampleDir.read(sample_dir)
    if column not in s.items.column_names:
        raise InputError(
            f"Oracle column '{column}' not found among the items' attributes. "
            f"Columns: {', '.join(repr(c) for c in s.items.column_names if c != 'item_id')}."
        )
    value = dict(zip(s.items.column("item_id").to_pylist(), s.items.column(column).to_pylist()))
    tasks = task_table(s.draws, s.items.select(["item_id"]))
    rows = []
    for r in tasks.to_pylist():
        va, vb = value.get(r["item_a"]), value.get(r["item_b"])
        j = "unsure" if va is None or vb is None else ("same" if va == vb else "different")
        rows.append({"pair_id": r["pair_id"], "item_a": r["item_a"], "item_b": r["item_b"], "judgement": j,
                     "rater": f"oracle:{column}", "source": "oracle", "timestamp": None})
    path = Path(out) if out else s.path / "judgements.csv"
    table = pa.Table.from_pylist(rows, schema=pa.schema([
        ("pair_id", pa.string()), ("item_a", tasks.schema.field("item_a").type),
        ("item_b", tasks.schema.field("item_b").type), ("judgement", pa.string()), ("rater", pa.string()),
        ("source", pa.string()), ("timestamp", pa.string())])) if rows else pa.table(
            {"pair_id": pa.array([], pa.string()), "judgement": pa.array([], pa.string())})
    return write_table_file(table, path)


# --------------------------------------------------------------------------- estimation
@dataclass(frozen=True)
class QualityResult:
    """Quality estimates from a judged pair sample.

    Attributes
    ----------
    delta_precision, good_split_rate, bad_split_rate, good_merge_rate, bad_merge_rate
        :class:`Estimate` objects.
    split_rate, merge_rate
        The exact impact rates that the split/merge estimates decompose.
    judged_pairs, unsure_pairs, missing_pairs
        Distinct judgeable pairs judged same/different, judged unsure, not judged.
    slices
        ``{column: [{value, weight, pairweight, delta_precision, delta_precision_contribution}, …]}``.
    estimator, allocation
        Which estimator produced the numbers (``paper`` or ``stratified``) and, for
        ``stratified``, how its budget was allocated (``proportional`` or ``neyman``;
        None for ``paper``).
    """

    delta_precision: Estimate
    good_split_rate: Estimate
    bad_split_rate: Estimate
    good_merge_rate: Estimate
    bad_merge_rate: Estimate
    split_rate: float
    merge_rate: float
    judged_pairs: int
    unsure_pairs: int
    missing_pairs: int
    draws: dict
    disagreements: int = 0
    ties: int = 0
    slices: dict = field(default_factory=dict)
    estimator: str = "paper"
    allocation: str | None = None

    def to_dict(self) -> dict:
        d = {name: getattr(self, name).to_dict() for name in
             ("delta_precision", "good_split_rate", "bad_split_rate", "good_merge_rate", "bad_merge_rate")}
        gs, bs = self.good_split_rate.value, self.bad_split_rate.value
        gm, bm = self.good_merge_rate.value, self.bad_merge_rate.value
        d.update({
            "split_rate": self.split_rate,
            "merge_rate": self.merge_rate,
            "identities": {
                "good_plus_bad_split": gs + bs if math.isfinite(gs + bs) else None,
                "good_plus_bad_merge": gm + bm if math.isfinite(gm + bm) else None,
            },
            "judged_pairs": self.judged_pairs,
            "unsure_pairs": self.unsure_pairs,
            "missing_pairs": self.missing_pairs,
            "draws": self.draws,
            "rater_disagreements": self.disagreements,
            "rater_ties": self.ties,
            "estimator": self.estimator,
            "allocation": self.allocation,
        })
        if self.slices:
            d["slices"] = self.slices
        return d


def _outcomes(draws: pa.Table, by_pair: dict) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Per draw: estimation class, whether it has a usable answer, and 1(i ≡ j)."""
    cls = pair_class_of_draws(draws) if draws.num_rows else []
    pids = draws.column("pair_id").to_pylist() if draws.num_rows else []
    valid = np.zeros(len(cls), dtype=bool)
    same = np.zeros(len(cls), dtype=float)
    for k, (c, pid) in enumerate(zip(cls, pids)):
        j = "same" if c == "self" else by_pair.get(pid)
        if j in ("same", "different"):
            valid[k] = True
            same[k] = 1.0 if j == "same" else 0.0
    return cls, valid, same


def _dp(cls, valid, same, label, mask, multiplier, what) -> Estimate:
    """Reweighted ΔPrecision-type estimate over the draws in ``mask``."""
    cls_a = np.asarray(cls)
    w = np.zeros(len(cls))
    for c in ESTIMATION_CLASSES:
        in_c = mask & (cls_a == c)
        n_all, n_ok = int(in_c.sum()), int((in_c & valid).sum())
        if n_all and not n_ok:
            return Estimate(what, math.nan, math.nan, 0, note=f"no usable judgement among the {c} pairs sampled")
        if n_ok:
            w[in_c & valid] = n_all / n_ok
    use = mask & valid
    if not use.any():
        return Estimate(what, math.nan, math.nan, 0, note="no judged pairs")
    x = label[use] * same[use]
    m, se = weighted_mean_se(x, w[use])
    n_judged = int((use & (cls_a != "self")).sum())
    if n_judged == 0 and (mask & (cls_a != "self")).any():
        return Estimate(what, math.nan, math.nan, 0, note="no judgements")
    return Estimate(what, multiplier * m, multiplier * se if math.isfinite(se) else math.nan, n_judged)


def _rate(cls, valid, same, klass, want_same, rate, what) -> Estimate:
    cls_a = np.asarray(cls)
    m = (cls_a == klass) & valid
    n = int(m.sum())
    if rate == 0:
        return Estimate(what, 0.0, 0.0, n, note=f"no {klass}s: the {klass} rate is 0")
    if n == 0:
        return Estimate(what, math.nan, math.nan, 0, note=f"no judged {klass} pairs")
    x = same[m] if want_same else 1.0 - same[m]
    mean, se = weighted_mean_se(x, np.ones(n))
    return Estimate(what, rate * mean, rate * se if math.isfinite(se) else math.nan, n)


def estimate_quality(sample_dir, judgements=None, *, slice_by: Sequence[str] = (),
                     source: str | None = None) -> QualityResult:
    """Estimate ΔPrecision and the Good/Bad Split/Merge rates from a judged pair sample.

    Parameters
    ----------
    sample_dir
        Directory written by :func:`draw_pair_sample` (``abcde pairs``).
    judgements
        Judgement file(s); default: ``judgements.csv`` and the judgement store
        ``judgements.sqlite`` (``abcde judge serve`` / ``model``) in the directory, those present.
    source
        Use only the judgements of this source: ``person``, ``model`` or ``oracle``.
    slice_by
        Attribute columns (of vantage items) for ΔPrecision(I) and its contribution;
        their exact multipliers must have been stored with ``--slice-by`` at sampling.
    """
    s = PairSampleDir.read(sample_dir)
    meta = s.metadata
    if judgements is None:
        judgements = [p for p in (s.path / "judgements.csv", s.path / "judgements.sqlite") if p.exists()]
    elif isinstance(judgements, (str, os.PathLike)):
        judgements = [judgements]
    res = load_judgements(judgements, pair_ids=s.judgeable_ids(), id_type=meta["id_type"],
                          source=source) if judgements else None
    stored = s.slices() if slice_by else {}
    for col in slice_by:
        if col not in stored:
            raise InputError(
                f"No exact slice multipliers for '{col}' in this sample. Draw the pairs with "
                f"'--slice-by {col}' (stored: {', '.join(repr(c) for c in stored) or 'none'})."
            )
    if meta.get("estimator") == "stratified":
        from .stratified import STRATA, StratifiedSample, estimate_stratified, estimate_stratified_slices

        strata = s.draws.column("stratum").to_pylist()
        draws = {c: s.draws.filter(pa.array([x == c for x in strata], pa.bool_())) for c in STRATA}
        ss = StratifiedSample(draws, meta["pair_totals"], meta["self_term"], meta["budgets"], meta["allocation"])
        by_pair = res.by_pair if res else {}
        r = estimate_stratified(ss, by_pair, split_rate=meta["split_rate_T"], merge_rate=meta["merge_rate_T"])
        slices = {}
        if slice_by:
            selfs = s.slice_self_terms()
            attrs = {row["item_id"]: row for row in s.items.to_pylist()}
            for col in slice_by:
                if col not in selfs:
                    raise InputError(f"This stratified sample has no exact slice self terms for '{col}'; draw "
                                     f"the pairs again with this version and '--slice-by {col}'.")
                value = {i: json.dumps(a.get(col), default=str) for i, a in attrs.items()}
                slices[col] = estimate_stratified_slices(ss, by_pair, value, stored[col], selfs[col],
                                                         total_weight=meta["total_weight"])
        return replace(r, disagreements=res.disagreements if res else 0, ties=res.ties if res else 0,
                       slices=slices)
    return estimate_from_draws(
        s.draws, res.by_pair if res else {}, meta["pair_totals"], meta["split_rate_T"], meta["merge_rate_T"],
        items=s.items, slice_multipliers={c: stored[c] for c in slice_by}, total_weight=meta["total_weight"],
        disagreements=res.disagreements if res else 0, ties=res.ties if res else 0,
    )


def estimate_from_draws(
    draws: pa.Table,
    by_pair: dict,
    totals: dict,
    split_rate: float,
    merge_rate: float,
    *,
    items: pa.Table | None = None,
    slice_multipliers: dict | None = None,
    total_weight: float | None = None,
    disagreements: int = 0,
    ties: int = 0,
) -> QualityResult:
    """The estimators on in-memory draws (see :func:`estimate_quality`).

    ``by_pair`` maps pair ids to ``same``/``different``/``unsure``; pairs not in it
    are missing. ``totals`` are the exact pair weight totals (``all`` is used).
    """
    cls, valid, same = _outcomes(draws, by_pair)
    label = np.asarray(draws.column("label").to_pylist(), dtype=float) if draws.num_rows else np.zeros(0)
    all_mask = np.ones(len(cls), dtype=bool)
    sr, mr = split_rate, merge_rate
    if totals["all"] == 0:  # no pair has weight: Base and Exp agree, ΔPrecision is exactly 0
        dp = Estimate("delta_precision", 0.0, 0.0, 0, note="Base and Exp agree on every item")
    else:
        dp = _dp(cls, valid, same, label, all_mask, totals["all"], "delta_precision")
    need = draws.column("needs_judgement").to_pylist() if draws.num_rows else []
    judgeable = {p for p, n in zip(draws.column("pair_id").to_pylist(), need) if n} if draws.num_rows else set()
    judged = sum(1 for p in judgeable if by_pair.get(p) in ("same", "different"))
    unsure = sum(1 for p in judgeable if by_pair.get(p) == "unsure")
    slices = {}
    if slice_multipliers:
        attrs = {r["item_id"]: r for r in items.to_pylist()}
        vant = draws.column("item_a").to_pylist() if draws.num_rows else []
        W = total_weight
        for col, stored_col in slice_multipliers.items():
            vals = np.array([json.dumps(attrs.get(v, {}).get(col), default=str) for v in vant])
            rows = []
            for value, (w_i, pw) in sorted(stored_col.items(), key=lambda kv: -kv[1][1]):
                mask = vals == value
                contrib = _dp(cls, valid, same, label, mask, pw, "delta_precision_contribution")
                scale = W / w_i
                dpi = Estimate("delta_precision", contrib.value * scale, contrib.standard_error * scale,
                               contrib.n_judgements, note=contrib.note)
                rows.append({"value": json.loads(value), "weight": w_i, "pairweight": pw,
                             "sampled_draws": int(mask.sum()),
                             "delta_precision": dpi.to_dict(), "delta_precision_contribution": contrib.to_dict()})
            slices[col] = rows
    counts = {c: int((np.asarray(cls) == c).sum()) for c in ESTIMATION_CLASSES} if cls else dict.fromkeys(
        ESTIMATION_CLASSES, 0)
    return QualityResult(
        delta_precision=dp,
        good_split_rate=_rate(cls, valid, same, "split", False, sr, "good_split_rate"),
        bad_split_rate=_rate(cls, valid, same, "split", True, sr, "bad_split_rate"),
        good_merge_rate=_rate(cls, valid, same, "merge", True, mr, "good_merge_rate"),
        bad_merge_rate=_rate(cls, valid, same, "merge", False, mr, "bad_merge_rate"),
        split_rate=sr,
        merge_rate=mr,
        judged_pairs=judged,
        unsure_pairs=unsure,
        missing_pairs=len(judgeable) - judged - unsure,
        draws=counts,
        disagreements=disagreements,
        ties=ties,
        slices=slices,
    )


__all__ = ["Estimate", "PairSampleDir", "QualityResult", "VOCABULARY", "draw_pair_sample", "estimate_quality",
           "oracle_judge", "read_table_file", "weighted_mean_se"]
