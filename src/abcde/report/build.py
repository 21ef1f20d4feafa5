"""The ABCDE report: what a team looks at to decide (paper, "Insights and debugging").

:func:`build_report` gathers, from an :class:`~abcde.ImpactResult` (and optionally a
judged pair sample and an exploration sample), everything the report shows:

- the headline impact metrics and what restricting to the common items removed;
- the most affected clusters of Base and Exp (and both interleaved), each with its
  *neighbourhood* — the fragments ``Base ∩ Exp`` around it and some of their members —
  so the page can draw the paper's Figure 1 (split / stable / merge) from the point
  of view of any member;
- chart data: the distribution of JaccardDistance over the affected weight, the split
  and merge contributions of the most affected clusters and of slices;
- slice tables; quality estimates with 95% intervals when judgements exist.

The :class:`Report` holds that content as plain data: :meth:`Report.to_dict` is the JSON
(what ``abcde report --json`` prints); :meth:`Report.to_html` (one self-contained page) and
:meth:`Report.to_markdown` (a summary for a code review comment) render it with
:mod:`abcde.report.render` (whose charts come from :mod:`abcde.report.charts`) and
:mod:`abcde.report.markdown`.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import ibis

from abcde.core.names import METRIC_LABELS
from abcde.errors import InputError
from abcde.core.formulas import fragment_metrics
from abcde.core.diff import affected_fragments, rows_of_fragments
from abcde.metrics.impact import ImpactResult, private
from abcde.report.markdown import render_markdown
from abcde.report.render import render_html
from abcde.util.files import write_texts

REPORT_FORMAT = "abcde-report"
REPORT_VERSION = 1
MAX_ATTRIBUTES = 8


_SR, _MR, _JD, _DP, _GSR, _BSR, _GMR, _BMR = (METRIC_LABELS[k] for k in (
    "split_rate", "merge_rate", "jaccard_distance", "delta_precision", "good_split_rate", "bad_split_rate",
    "good_merge_rate", "bad_merge_rate"))

#: What the numbers mean: (term, meaning), shown at the end of the page.
MEANING = [
    (f"{_SR}(i)", f"the weight fraction of Base(i) that Exp split off, from item i's point of view. "
     f"{_SR}(T) is its weighted average over all items."),
    (f"{_MR}(i)", "the weight fraction of Exp(i) that Exp newly merged in, from item i's point of view."),
    (f"{_JD}(i)", "the weight of the split and merged items as a fraction of the split, merged and "
     f"stable items (Base(i) ∪ Exp(i)). 0 when i's cluster did not change; {_JD}(T) is a true "
     "distance between the two clusterings."),
    ("Contribution of a cluster C", f"weight(C)·{_JD}(C)/weight(T): how much of {_JD}(T) "
     "comes from C. The most affected clusters are ranked by it."),
    (_DP, "Precision(Exp) − Precision(Base), estimated from same/different judgements of item pairs "
     "sampled ∝ their pair weight. Negative means Exp made clusters less homogeneous."),
    (f"{_GSR} / {_BSR}", f"the parts of {_SR}(T) whose split-off pairs are judged different "
     f"(a good split) or the same (a bad split); Good + Bad = {_SR}."),
    (f"{_GMR} / {_BMR}", f"the parts of {_MR}(T) whose merged pairs are judged the same (good) "
     f"or different (bad); Good + Bad = {_MR}."),
    ("Recall lift (pairwise)", "T_Exp/T_Base − 1: how many more (or, negative, fewer) true links Exp keeps than "
     "Base, a true link being a pair of items of one entity in one cluster, weighted w_i·w_j. It is the ratio of "
     "the two clusterings' pairwise recalls, minus 1, estimated from the judged split, merge and agreed pairs "
     "(pairs together in both), with no ground truth. Not the same number as a truth's Recall (below, when the "
     "report has a truth), which is pointwise: each item's share of its true entity that its cluster holds, "
     "averaged by weight. Undefined when Base keeps no true link."),
    ("95% interval", "covers the true value in about 95% of samples; exact impact metrics have none. "
     f"For {_GSR}, {_BSR}, {_GMR} and {_BMR}: the Agresti–Coull interval of the judged share "
     "(centre (k + 2)/(n + 4), half-width q·√(p̃(1 − p̃)/(n + 4)), q the Student t quantile on n − 1 degrees of "
     "freedom; when a model's answers chose the people's tasks, each cell's Wilson interval added by MOVER), "
     "times the exact rate, so it lies in [0, rate] and Good's and Bad's mirror each other; it has "
     f"width even when every judgement agrees (s.e. 0). For {_DP} under the stratified design: the same "
     "construction summed over the strata (the exact self term plus each stratum's U_c·l_c·p̃_c, half-width "
     "q·√Σ U_c²·p̃_c(1 − p̃_c)/(n_c + 4)), widened to reach the estimate where the strata's shifts, which add "
     "up while the half-widths add in quadrature, carry it outside; under the paper's design: the estimate "
     "± q × standard error. For the recall lift: the lift's 2.5% and 97.5% quantiles (at q) over draws of each "
     "stratum's share of true links from its modified Jeffreys posterior (Beta(k + ½, n − k + ½); Beta(n, 1) or "
     "Beta(1, n) when every judgement agrees), the strata independently. Every estimate lies inside its interval. "
     "A census stratum adds its exact part. Every interval is then cut to the range the metric can take "
     f"(known exactly before anyone judges: [0, {_SR}] for a split rate, for {_DP} the self term plus each "
     "stratum's weight on its own side of 0), which never lowers its coverage. Slices: the estimate "
     "± q × standard error (q on the slice's draws − 1), cut to the slice's range."),
    ("Verdict", f"one rule everywhere, for both sides: {_DP}'s 95% interval above 0 means Precision went up, "
     "below 0 that it went down, across 0 that no change is detectable; the recall lift's interval the same for "
     "recall. Exp is better when one side went up and the other not down, worse when one went down and the other "
     "not up, a trade-off when they went opposite ways. While pairs of the sample are not judged, the answer is "
     "said “so far”. Slices are named as significantly better or worse only when their own interval leaves "
     "0 out and Holm's method across all slices and both sides shown (5% family-wise) rejects no change."),
]


#: What a truth sample's numbers are (shown at the end of the page when the report has them).
TRUTH_SAMPLE_MEANING = (
    "a truth listing every item of each of n entities sampled by a known design (uniform: a simple random sample "
    "of the population's N entities; or each entity included with its own probability π). Each truth item's "
    "Precision is exact against its whole cluster (items outside the truth included), its Recall against its "
    "entity; the population's Precision (likewise Recall) is the ratio of the entities' weighted sums, estimated "
    "by weighting each sampled entity by 1/π (Hájek), its standard error by linearisation; F1 is the harmonic mean "
    "of the two estimates (delta method). Δ = Exp − Base from the same entities, with one standard error for the "
    "difference. 95% intervals: Precision's and Recall's the gamma interval of the weight they miss (a sum of the "
    "sampled entities' losses, leaning as a sum of a few rare losses does); a difference's from the gains' and the "
    "losses' between the two clusterings (MOVER); F1's on the logit scale, Student t on the variance's effective "
    "degrees of freedom. "
    "Where a few entities decide the estimate a note says so: the interval may then cover more than 95%, or less "
    "if the sample misses the entities that matter. "
    "The numbers over the truth's items only (without the design) are shown too, labelled as such: Precision "
    "among them is optimistic, as it misses overmerges with items outside the truth.")


@dataclass(frozen=True)
class Report:
    """Everything the report shows, as plain data (see :func:`build_report`).

    Attributes
    ----------
    data
        The JSON-serializable content (:meth:`to_dict`).
    """

    data: dict = field(repr=False)

    def to_dict(self) -> dict:
        """The report's content as JSON-serializable data (what ``--json`` prints)."""
        return self.data

    def to_html(self) -> str:
        """One self-contained HTML page (no network needed to open it)."""
        return render_html(self.data)

    def to_markdown(self) -> str:
        """A short Markdown summary for a code review comment."""
        return render_markdown(self.data)

    def write(self, path: str | os.PathLike, *, markdown: str | os.PathLike | None = None,
              json_path: str | os.PathLike | None = None) -> list[Path]:
        """Write the HTML page (atomically) and optionally the Markdown and JSON forms."""
        targets = {target: text for target, text in (
            (path, self.to_html()), (markdown, self.to_markdown() if markdown is not None else None),
            (json_path, json.dumps(self.data, indent=2, default=str) + "\n" if json_path is not None else None))
            if target is not None}
        return write_texts(targets)  # all or nothing: a failed Markdown leaves no HTML behind either


#: The ids whose class differs between the schemes that the report lists (most weight first).
IDS_TOP = 20


def with_id_table(report: Report, ids, *, top: int = IDS_TOP) -> Report:
    """``report`` with the section of an id table (``abcde ids``): ``ids`` is an
    :class:`abcde.ids.IdTable` (or its ``to_dict(top=...)``). The data's ``ids`` holds the number of
    ids, the class counts per scheme (``counts``: ``{"base": {class: ids}, "exp": {…}}``), how many
    ids' class differs between the schemes (``differing``) and the first ``top`` of them, most
    weight first (``top_differing``: each id's row of the table, with its owners and overlap
    weights); the page and the Markdown add the construction in a paragraph."""
    d = ids if isinstance(ids, dict) else ids.to_dict(top=top)
    rows = [{k: _jsonable(v) for k, v in r.items()} for r in d["top_differing"][:top]]
    counts = {s: {c: int(n) for c, n in cs.items()} for s, cs in d["counts"].items()}
    section = {"ids": int(d["ids"]), "counts": counts, "differing": int(d["differing"]), "top_differing": rows}
    return Report({**report.data, "ids": section})


def with_entities(report: Report, entities) -> Report:
    """``report`` with the section of a judged entity sample (``abcde entities``;
    ``--entities DIR``): ``entities`` is an :class:`abcde.completion.EntityQuality` (or its
    ``to_dict()``). The data's ``entities`` holds its numbers (pointwise ΔRecall, IQ, the ΔPrecision
    cross-check: estimate or bounds, standard error, interval), the design, how many anchors are
    judged, its verdict, and ``beside``: the pointwise ΔRecall beside the report's recall lift in one
    sentence (:func:`abcde.completion.beside.beside_recall_lift`)."""
    from abcde.completion.beside import beside_recall_lift  # lazy: a report without entities

    d = entities if isinstance(entities, dict) else entities.to_dict()
    lift = (report.data.get("quality") or {}).get("recall_lift")
    keep = ("design", "census", "delta_recall", "iq", "delta_precision", "anchors", "anchors_judged",
            "search_skipped", "unsure_members", "answers", "verdict", "slices")
    section = {k: d[k] for k in keep if k in d}
    section["sample"] = Path(str(d.get("sample_dir", ""))).name
    section["beside"] = beside_recall_lift(d, lift)
    return Report({**report.data, "entities": section})


# --------------------------------------------------------------------------- gathering
def _jsonable(v):
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    return str(v)


def build_report(
    result: ImpactResult,
    *,
    quality=None,
    judged_by: str | None = None,
    exploration=None,
    explore_by: tuple[str, ...] | list[str] = (),
    max_fragments: int = 40,
    members_per_fragment: int = 20,
    title: str = "ABCDE report",
    names: tuple[str, str] = ("Base", "Exp"),
    truth: dict | None = None,
) -> Report:
    """Gather the report's content.

    Parameters
    ----------
    result
        Exact impact metrics from :func:`abcde.impact` (its ``top`` and ``slice_by``
        decide the clusters and slices shown).
    quality
        Optional quality estimates: a :class:`~abcde.quality.QualityResult` or its
        ``to_dict()``.
    judged_by
        Who made the judgements (e.g. ``"oracle: the example's true entity ids"``);
        shown next to every quality number.
    exploration, explore_by
        Optional :class:`~abcde.ExplorationSample` and attributes to group it by.
    truth
        Optional pointwise metrics of each side against a ground truth: ``{"base": r, "exp": r}``
        with ``r`` a :class:`~abcde.metrics.pointwise.PointwiseResult` or its ``to_dict()``
        (Precision, Recall and F1 are shown side by side; a truth covering part of the items says
        in words what its numbers describe, ``truth_note``); or the estimates from a truth of
        sampled entities, a :class:`~abcde.metrics.truth_sample.TruthSampleResult` of Base and Exp
        (or its ``to_dict()``): the population's Precision, Recall and F1 with 95% intervals, the
        paired differences, the design and its notes, and the numbers over the truth's items only,
        labelled as such (``truth_sample``). Every form
        :func:`abcde.quality.verdict.truth_view` reads.
    max_fragments, members_per_fragment
        Truncation of each cluster's neighbourhood in the page (counts and weights stay
        exact; only the listed members are cut).
    """
    if max_fragments < 1 or members_per_fragment < 1:
        raise InputError("max_fragments and members_per_fragment must be at least 1.")
    imp = result.to_dict()
    W = result.total_weight
    empty = result.affected_items == 0
    data: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "version": REPORT_VERSION,
        "title": title,
        "names": {"base": names[0], "exp": names[1]},
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "engine": result.engine,
        "identical": empty,
        "headline": {k: imp[k] for k in ("items", "total_weight", "split_rate", "merge_rate", "jaccard_distance",
                                         "affected_items", "affected_weight", "unaffected_items",
                                         "unaffected_weight")},
        "restriction": imp["restriction"],
        "top_clusters": imp["top_clusters"],
        "slices": {name: [{k: _jsonable(v) for k, v in row.items()} for row in rows]
                   for name, rows in imp["slices"].items()},
        "neighbourhoods": {},
        "charts": {},
        "meaning": [{"term": t, "meaning": m} for t, m in MEANING],
    }
    data["headline"]["affected_weight_share"] = result.affected_weight / W if W else 0.0
    if not empty:
        diff = result.diff
        data["attributes"] = [c for c in diff.attributes][:MAX_ATTRIBUTES]
        data["charts"]["jaccard_histogram"] = _jaccard_histogram(result)
        data["charts"]["cluster_contributions"] = [
            {"cluster": f"{r['side']}:{r['cluster_id']}", "side": r["side"],
             "split": r["weight"] * r["split_rate"] / W, "merge": r["weight"] * r["merge_rate"] / W}
            for r in imp["top_clusters"]["interleaved"]]
        anchors = {side: [r["cluster_id"] for r in imp["top_clusters"][side]] for side in ("base", "exp")}
        data["neighbourhoods"] = _neighbourhoods(result, anchors, data["attributes"], max_fragments,
                                                 members_per_fragment)
    view = None
    if truth:
        from abcde.quality.verdict import truth_view  # lazy: start-up time (a report without a truth)

        view = truth_view(truth)
    if view is not None:
        data["truth"] = {side: {k: _jsonable(float(v[k])) for k in ("precision", "recall", "f1")}
                         for side, v in view["sides"].items()}
        data["truth_recall_lift"] = view.get("recall_lift")
        if view["kind"] == "partial":
            data["truth_note"] = view["note"]
        elif view["kind"] == "sample":
            data["truth_sample"] = {k: view[k] for k in (
                "design", "estimates", "deltas", "notes", "restricted", "truth_items", "truth_weight",
                "population_items", "population_weight", "f1_method", "interval_method") if k in view}
            data["meaning"].append({"term": "Against a truth sample", "meaning": TRUTH_SAMPLE_MEANING})
    if quality is not None:
        from abcde.quality.verdict import verdict  # lazy: start-up time (a report without quality)

        q = quality if isinstance(quality, dict) else quality.to_dict()
        v = verdict(q, truth=truth, names=names)
        data["verdict"], data["verdict_facts"] = v.text, v.facts  # as 'abcde quality --json' carries them
        data["quality"] = {**q, "judged_by": judged_by or "unknown", "verdict": v.text, "verdict_facts": v.facts}
    if exploration is not None:
        groups = {}
        for col in explore_by:
            groups[col] = [{k: _jsonable(v) if not isinstance(v, dict) else v for k, v in g.to_dict().items()}
                           for g in exploration.group([col], top=15)]
        data["exploration"] = {"sample": {k: _jsonable(v) for k, v in exploration.metadata.items()
                                          if not isinstance(v, dict)},
                               "groups": groups}
    return Report(data)


def _jaccard_histogram(result: ImpactResult, bins: int = 20) -> list[dict]:
    """Affected weight per JaccardDistance bin [k/bins, (k+1)/bins), as shares of the affected weight."""
    diff = result.diff
    # Over the affected fragments (JaccardDistance > 0 only there), whose items share their
    # JaccardDistance: a few percent of the rows of the per-item table, the same numbers.
    t = fragment_metrics(affected_fragments(diff))
    t = t.filter(t.jaccard_distance > 0)
    b = ibis.least((t.jaccard_distance * bins).floor().cast("int64"), bins - 1)
    g = t.group_by(bin=b).aggregate(items=t.n.sum(), weight=t.w.sum()).order_by("bin")
    rows = diff.engine.rows(g, step="JaccardDistance histogram")
    aff = result.affected_weight or 1.0
    return [{"from": r["bin"] / bins, "to": (r["bin"] + 1) / bins, "items": int(r["items"]),
             "weight": float(r["weight"]), "weight_share": float(r["weight"]) / aff} for r in rows]


def _neighbourhoods(result: ImpactResult, anchors: dict[str, list], attributes: list[str], max_fragments: int,
                    per_fragment: int) -> dict[str, dict]:
    """For each anchor cluster (``anchors``: the cluster ids of each side): the fragments of the
    anchor and of the clusters of the other side it touches (exact ``n, w, nb, wb, ne, we``), and
    up to ``per_fragment`` members of each of the ``max_fragments`` heaviest fragments. Both
    sides' anchors in one query for the fragments and one for the members."""
    out: dict[str, dict] = {side: {} for side in anchors}
    diff = result.diff
    eng = diff.engine
    # Every fragment of an anchor (a cluster with a contribution > 0) is affected, and so is every
    # fragment of a cluster of the other side it touches (that cluster holds an affected fragment,
    # and a cluster with two fragments makes both affected): the affected fragments hold them all.
    f = affected_fragments(diff)
    parts = []
    for side, ids in anchors.items():
        if not ids:
            continue
        key, other = f"{side}_cluster", ("exp_cluster" if side == "base" else "base_cluster")
        own = f.filter(f[key].isin(ids))
        touched = own.select(anchor=own[key], oc=own[other]).distinct()
        nb = f.join(touched, f[other] == touched.oc)
        # The anchor in its side's column, the other one null: the two sides' ids may differ in type.
        nulls = {"base": ibis.null(f.base_cluster.type()), "exp": ibis.null(f.exp_cluster.type())}
        parts.append(nb.select(
            side=ibis.literal(side), anchor_base=touched.anchor if side == "base" else nulls["base"],
            anchor_exp=touched.anchor if side == "exp" else nulls["exp"], base_cluster=f.base_cluster,
            exp_cluster=f.exp_cluster, n=f.n, w=f.w, nb=f.nb, wb=f.wb, ne=f.ne, we=f.we,
            own_frag=f[key] == touched.anchor))
    if not parts:
        return out
    nb = ibis.union(*parts) if len(parts) > 1 else parts[0]
    # The anchor's own fragments (the points of view) first, then by weight.
    nb = nb.mutate(rank=ibis.row_number().over(
        group_by=[nb.side, nb.anchor_base, nb.anchor_exp],
        order_by=[ibis.desc(nb.own_frag), ibis.desc(nb.w), nb.base_cluster, nb.exp_cluster]))
    # Computed once (a few thousand rows): listed here, and its kept fragments select the members
    # below (a table of the kept rows built in Python would cost pyarrow's import of pandas).
    nb = eng.materialize(nb, "neighbourhoods")
    frags = eng.rows(nb.order_by(["side", "anchor_base", "anchor_exp", "rank"]),
                     step="neighbourhoods of the top clusters")
    kf = nb.filter(nb.rank < max_fragments).select("side", "anchor_base", "anchor_exp", "base_cluster",
                                                  "exp_cluster")
    # Only the kept fragments' items: every fragment around an anchor is affected (the anchors are, and
    # so is every cluster they touch), so read from the affected items when the samplers made them;
    # else, for inputs joined by id, from the inputs joined for those fragments only.
    j = rows_of_fragments(diff, kf.select("base_cluster", "exp_cluster").distinct(), affected_only=True)
    m = j.join(kf, [j.base_cluster == kf.base_cluster, j.exp_cluster == kf.exp_cluster]).select(
        kf.side, kf.anchor_base, kf.anchor_exp, j.item_id, j.base_cluster, j.exp_cluster, j.weight)
    m = m.mutate(rn=ibis.row_number().over(
        group_by=[m.side, m.anchor_base, m.anchor_exp, m.base_cluster, m.exp_cluster],
        order_by=[ibis.desc(m.weight), m.item_id]))
    m = m.filter(m.rn < per_fragment)
    # The attributes under private names: one called "side", "rn" or "anchor_base" must not meet (or be
    # mistaken for) this query's own columns.
    attr = {c: private(f"attr_{k}") for k, c in enumerate(attributes)}
    if diff.items is not None and attributes:
        it = diff.items.select(**{private("id"): diff.items.item_id, **{attr[c]: diff.items[c] for c in attributes}})
        m = m.left_join(it, m.item_id == it[private("id")]).drop(private("id"))
    members = eng.rows(m.order_by(["side", "anchor_base", "anchor_exp", "base_cluster", "exp_cluster", "rn"]),
                       step="members of the top clusters")
    eng.discard(nb)  # this step's own: a report built again on this engine makes its own

    def anchor(r) -> dict:
        a = r["anchor_base"] if r["side"] == "base" else r["anchor_exp"]
        return out[r["side"]].setdefault(str(a), {"fragments": [], "members": [], "fragments_total": 0,
                                                  "fragments_shown": 0})

    for r in frags:
        a = anchor(r)
        a["fragments_total"] += 1
        if r["rank"] < max_fragments:
            a["fragments_shown"] += 1
            a["fragments"].append({k: _jsonable(r[k]) for k in ("base_cluster", "exp_cluster", "n", "w", "nb", "wb",
                                                                  "ne", "we", "own_frag")})
    for r in members:
        anchor(r)["members"].append({
            "item_id": _jsonable(r["item_id"]), "base_cluster": _jsonable(r["base_cluster"]),
            "exp_cluster": _jsonable(r["exp_cluster"]), "weight": _jsonable(r["weight"]),
            "attributes": {c: _jsonable(r.get(attr[c])) for c in attributes}})
    return out
