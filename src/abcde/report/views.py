"""What the report's sections show, shared by the HTML page (:mod:`abcde.report.render`) and the
Markdown summary (:mod:`abcde.report.markdown`): the numbers formatted, a table's columns, and the
sections that take more than a lookup in the data (the ground truth, a truth sample's estimates,
the recall lift, the panel "JaccardDistance = good + bad"), in words and formatted numbers.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from abcde.core.names import METRIC_LABELS, RECALL_METRIC
from abcde.util import display


# --------------------------------------------------------------------------- formats
def pct(x) -> str:
    """A rate as a percentage with 3 decimals, as everywhere (:mod:`abcde.util.display`).

    >>> pct(0.12345), pct(None)
    ('12.345%', 'n/a')
    """
    return display.pct(x)


def num(x) -> str:
    """A count or weight by its magnitude (:func:`abcde.util.display.weight`).

    >>> num(1234), num(9834.8), num(2345678.9), num(None)
    ('1,234', '9,834.8', '2,345,679', 'n/a')
    """
    return display.count(x) if isinstance(x, int) else display.weight(x)


def four(x) -> str:
    """An estimate or a standard error with 4 decimals.

    >>> four(0.012345), four(None), four(2.9e-11)
    ('0.0123', 'n/a', '0.0000')
    """
    return display.four(x)


def count(x: int | None) -> str:
    """An integer with thousands separators (``n/a`` when missing), as every count on the page.

    >>> count(1234567), count(None)
    ('1,234,567', 'n/a')
    """
    return "n/a" if x is None else display.count(x)


class Column(NamedTuple):
    """A table column: the row's key, the header, and how a value shows (None: as it is)."""

    key: str
    label: str
    fmt: Callable[[Any], str] | None = None

    def show(self, value):
        if value is None:
            return display.NULL_TEXT if self.fmt is None else self.fmt(value)
        return self.fmt(value) if self.fmt else value


def sentence(text: str) -> str:
    """``text`` with its first letter upper case (str.capitalize would lower the rest: "exp")."""
    return text[:1].upper() + text[1:]


#: The panel "JaccardDistance = good + bad": each exact part and its Good and Bad estimates.
DISTANCE_ROWS = (("split_distance", "good_split_distance", "bad_split_distance"),
                 ("merge_distance", "good_merge_distance", "bad_merge_distance"),
                 ("jaccard_distance", "good_distance", "bad_distance"))


def truth_lift_text(data: dict) -> str:
    """The exact recall lift against the truth beside the estimate from judged pairs, so a reader can
    check one against the other (a partial truth's: over its items only, and said so; a truth
    sample has none)."""
    lift = data.get("truth_recall_lift")
    if lift is None:
        return ""
    rl = (data.get("quality") or {}).get(RECALL_METRIC) or {}
    est = (f"; estimated from the judged pairs: {display.pct(rl['estimate'])} "
           f"(95% interval {display.pct(rl['ci_low'])} to {display.pct(rl['ci_high'])})"
           if rl.get("available") and rl.get("estimate") is not None else "")
    scope = "(exact over the truth's items, not the population)" if data.get("truth_note") else "(exact)"
    return (f"{METRIC_LABELS[RECALL_METRIC]} against the truth {scope}: {display.pct(lift)}: Exp keeps "
            f"{display.pct(abs(lift))} {'more' if lift >= 0 else 'fewer'} true links than Base{est}.")


#: The rows of a truth sample's table, and the labels of its paired differences.
TRUTH_ROWS = (("precision", "Precision"), ("recall", "Recall (pointwise)"), ("f1", "F1"))


def _signed_four(v) -> str:
    """A difference with its sign, 4 decimals (``+0.0012``, ``-0.0019``, ``0.0000``)."""
    s = display.four(v)
    return s if s.startswith("-") or s == "n/a" or s == display.four(0.0) else "+" + s


def _truth_cell(e: dict | None, *, delta: bool = False) -> dict:
    """One estimate of a truth sample as the page and the Markdown show it: the estimate, its
    standard error and its 95% interval (levels as percentages, differences with 4 decimals)."""
    if not e:
        return {"value": None, "shown": "n/a", "se": "n/a", "interval": "n/a", "note": ""}
    fmt = four if delta else pct
    lo, hi = e.get("ci_low"), e.get("ci_high")
    return {"value": e.get("estimate"), "shown": _signed_four(e.get("estimate")) if delta else pct(e.get("estimate")),
            "se": fmt(e.get("std_err")), "lo": lo, "hi": hi,
            "interval": "n/a" if lo is None or hi is None else
            (f"[{_signed_four(lo)}, {_signed_four(hi)}]" if delta else f"[{pct(lo)}, {pct(hi)}]"),
            "note": e.get("note") or ""}


def design_text(ts: dict, names: dict) -> str:
    """What a truth sample is and what was estimated from it, in words (the page and the Markdown)."""
    from abcde.quality.verdict import design_words  # lazy: only with a truth sample

    d = ts["design"]
    pop = ts.get("population_items") or {}
    counts = sorted(set(pop.values()))
    of = (f"of the {count(counts[0])} items" if len(counts) == 1 else
          "of the " + " and ".join(f"{count(pop[s])} items of {names.get(s, s)}" for s in pop)) if counts else ""
    share = f" ({pct(ts['truth_items'] / counts[0])})" if len(counts) == 1 and counts[0] else ""
    census = (" It is a census (every entity listed): the numbers are exact, with standard error 0."
              if d.get("census") else "")
    return (f"Estimated for the whole population from a truth of sampled complete entities ({design_words(d)}). "
            f"It covers {count(ts.get('truth_items'))} {of}{share}. Each truth item's Precision is measured against "
            f"its whole cluster (every item of the clustering), its Recall against its entity; the population's "
            f"numbers are ratio estimates over the sampled entities, {names.get('base', 'Base')} and "
            f"{names.get('exp', 'Exp')} paired on the same entities (one interval per difference).{census}")


def truth_sample_view(ts: dict | None, names: dict) -> dict | None:
    """A truth sample's section: the estimates with their intervals per side, the paired
    differences, the design in words, its notes, and the numbers over the truth's items only."""
    if not ts:
        return None
    est, deltas = ts["estimates"], ts.get("deltas") or {}
    sides = [s for s in ("base", "exp") if s in est]
    rows = [{"key": m, "label": label,
             "cells": [{"col": side, **_truth_cell(est[side].get(m))} for side in sides]
             + ([{"col": "delta", **_truth_cell(deltas.get(f"delta_{m}"), delta=True)}] if deltas else [])}
            for m, label in TRUTH_ROWS]
    from abcde.quality.verdict import truth_point_note  # lazy: only with a truth sample

    from abcde.quality.verdict_truth import said_once  # lazy: only with a truth sample

    notes = list(ts.get("notes") or ())
    census = bool(ts["design"].get("census"))
    said = []
    for m, r in zip((m for m, _ in TRUTH_ROWS), rows):
        for c in r["cells"]:
            who = ("Δ" if c["col"] == "delta" else f"{names.get(c['col'], c['col'])}'s ") + r["label"]
            e = (deltas.get(f"delta_{m}") if c["col"] == "delta" else est[c["col"]].get(m)) or {}
            if c["note"]:
                said.append((who, ":", c["note"]))
            elif truth_point_note(e, census):
                said.append((who, "has", truth_point_note(e, census)))
    notes += [f"{n}." for n in said_once(said)]  # one note, said once for every estimate it is about
    restricted = ts.get("restricted") or {}
    rest_rows = [{"key": side, "side": names.get(side, side),
                  **{m: pct(restricted[side].get(m)) for m, _ in TRUTH_ROWS},
                  "raw": {m: restricted[side].get(m) for m, _ in TRUTH_ROWS}}
                 for side in sides if isinstance(restricted.get(side), dict)]
    return {"design": ts["design"], "text": design_text(ts, names), "sides": sides,
            "columns": [{"col": s, "label": names.get(s, s)} for s in sides]
            + ([{"col": "delta", "label": f"Δ ({names.get('exp', 'Exp')} − {names.get('base', 'Base')})"}]
               if deltas else []),
            "rows": rows, "notes": notes, "restricted": rest_rows,
            "restricted_text": (f"Over the truth's {count(ts.get('truth_items'))} items only (restricted): what "
                                "--truth gives without --truth-sample. These describe the listed entities' items, not "
                                "the population: Precision is optimistic when a clustering puts them with items "
                                "outside the truth."),
            "method": " ".join(x for x in (f"Intervals: {ts['interval_method']}." if ts.get("interval_method") else "",
                                           f"F1: {ts['f1_method']}." if ts.get("f1_method") else "") if x)}


def recall_note(q: dict) -> str:
    """What the quality section says of the recall lift: what it is, or why it is not there."""
    rl = q.get(RECALL_METRIC) or {}
    if q.get("target") == "precision" or not rl:
        return ""
    if not rl.get("available"):
        return (f"{METRIC_LABELS[RECALL_METRIC]}: not estimated: {rl.get('note', '')}"
                + (f" ({rl['command']})" if rl.get("command") else "") + ".")
    return (f"{METRIC_LABELS[RECALL_METRIC]} = T_Exp/T_Base − 1: how many more (fewer) true links (pairs of one "
            "entity, weighted) Exp keeps than Base, from the same judged split and merge pairs and the agreed "
            "pairs (together in both)" + ("; exact (every pair judged)" if rl.get("exact") else "") + ".")


def _good_share(exact, e: dict) -> str:
    """Good's share of its exact total, as a percentage (n/a when undefined; its interval is Good's
    divided by the exact total)."""
    if not exact or e.get("estimate") is None:
        return "n/a"
    return pct(e["estimate"] / exact)


def distances_view(d: dict | None) -> dict | None:
    """The panel's rows (overall and per slice) from ``quality["distances"]``; or why it is empty."""
    if not d:
        return None
    if not d.get("available"):
        return {"available": False, "note": d.get("note") or "not estimated"}
    L = METRIC_LABELS

    def cells(r: dict, exact: str, good: str, bad: str) -> dict:
        g, b = r[good], r[bad]
        return {"exact": pct(r[exact]), "raw": r[exact], "good": display.estimate(good, g["estimate"]),
                "good_raw": g["estimate"], "good_interval": display.estimate_interval(good, g),
                "bad": display.estimate(bad, b["estimate"]), "bad_raw": b["estimate"],
                "bad_interval": display.estimate_interval(bad, b), "good_share": _good_share(r[exact], g),
                "note": "; ".join(dict.fromkeys(x for x in (g.get("note"), b.get("note")) if x))}

    rows = [{"key": exact, "label": L[exact], **cells(d, exact, good, bad)} for exact, good, bad in DISTANCE_ROWS]
    slices = [{"name": col, "rows": [{"value": r["value"], "weight": r["weight"], "draws": r["sampled_draws"],
                                      **cells(r, "jaccard_distance", "good_distance", "bad_distance")}
                                     for r in rs],
               "columns": [Column("value", col), Column("weight", "weight", num), Column("draws", "draws", count),
                           Column("exact", L["jaccard_distance"]), Column("good", L["good_distance"]),
                           Column("good_interval", "95% interval"), Column("bad", L["bad_distance"]),
                           Column("bad_interval", "95% interval"), Column("good_share", "good share"),
                           Column("note", "")]}
              for col, rs in (d.get("slices") or {}).items()]
    return {"available": True, "rows": rows, "slices": slices, "method": d.get("method", "")}


def ids_construction(names: dict) -> str:
    """How an id table's evaluation is built (``abcde ids``), in a short paragraph with the sides' names."""
    b, e = names.get("base", "Base"), names.get("exp", "Exp")
    return (f"How ids are compared here: every item is a tagged copy, ⟨h, x⟩ for an item x as published earlier "
            f"and ⟨c, y⟩ for a current item y. {b} puts ⟨h, x⟩ with every current item whose cluster got x's published "
            f"id under the {b} scheme; {e} does the same under the {e} scheme. So every pair the two disagree on pairs "
            f"a current item with a historical one (with {e}'s own current clustering, two current items too) and asks "
            f"one question: is y the same real-world thing as x? Recall is then ids kept for the same concept "
            f"({METRIC_LABELS[RECALL_METRIC]}), and precision ids not handed to another concept "
            f"({METRIC_LABELS['delta_precision']}).")


#: What an id's lineage class and its overlap weights are (the id table's section).
IDS_CLASSES_TEXT = (
    "An id's class under a scheme: continuing (none of its items moved out, none came in), split (some of its items "
    "moved to other ids, at least as much as came in), merged (items of other ids came in, more than moved out), new "
    "(never published) or retired (published, given to no current cluster). Its owner is the current cluster the "
    "scheme gives it; published is the weight of its items published earlier that are still current, kept the part "
    "of those in its owner, moved the part now under other ids, incoming the weight of other ids' items published "
    "earlier that are now in its owner.")


def _or_dash(v) -> str:
    """A class or an owner as the id table shows it: ``—`` for none (an id a scheme does not give)."""
    return "—" if v is None else str(v)


def ids_view(ids: dict | None, names: dict) -> dict | None:
    """The id table's section (``abcde ids``): the construction in words, the class counts per
    scheme, and the ids whose class differs between the schemes (the first listed, most weight
    first), with their owners and overlap weights."""
    if not ids:
        return None
    b, e = names.get("base", "Base"), names.get("exp", "Exp")
    counts = ids["counts"]
    classes = list(counts.get("base") or counts.get("exp") or {})
    per_side = [Column(f"{k}_{s}", f"{n} {label}", fmt) for s, n in (("base", b), ("exp", e))
                for k, label, fmt in (("class", "class", _or_dash), ("owner", "owner", _or_dash), ("kept", "kept", num),
                                      ("moved", "moved", num), ("incoming", "incoming", num))]
    shown, total = len(ids["top_differing"]), ids["differing"]
    return {
        "text": ids_construction(names),
        "classes_text": IDS_CLASSES_TEXT,
        "summary": (f"{count(ids['ids'])} ids, published earlier or given now; the class of {count(total)} of them "
                    f"differs between {b} and {e}."),
        "sides": [{"key": s, "label": n} for s, n in (("base", b), ("exp", e))],
        "counts": [{"class": c, "base": counts["base"].get(c, 0), "exp": counts["exp"].get(c, 0),
                    "base_shown": count(counts["base"].get(c, 0)), "exp_shown": count(counts["exp"].get(c, 0))}
                   for c in classes],
        "differing": ids["top_differing"],
        "differing_title": ("Ids whose class differs" + (f": the {count(shown)} with the most weight, of {count(total)}"
                                                         if shown < total else ", most weight first")),
        "columns": [Column("id", "id"), Column("hist_weight", "published", num), *per_side],
    }


#: What each number of an entity sample is (the section's rows, in this order).
ENTITY_ROWS = (("delta_recall", "ΔRecall (pointwise)", "the weighted mean over items of how much more of its true "
                "entity Exp's cluster holds than Base's"),
               ("iq", "IQ", "the share of the change (its JaccardDistance) that moves toward the true entities, "
                "−100% to 100%"),
               ("delta_precision", "ΔPrecision (cross-check)", "pointwise Precision(Exp) − Precision(Base) from the "
                "same completed entities, beside the pair sample's"))


def entities_view(e: dict | None) -> dict | None:
    """An entity sample's section (``--entities``): the three numbers (an estimate, or the range the
    answers leave, with its 95% interval), the design and how much is judged, the verdict, and the
    pointwise ΔRecall beside the recall lift."""
    if not e:
        return None
    rows = []
    for key, label, meaning in ENTITY_ROWS:
        x = e.get(key) or {}
        point = (pct(x.get("estimate")) if x.get("estimate") is not None else
                 f"{pct((x.get('bounds') or [None])[0])} to {pct((x.get('bounds') or [None, None])[1])}")
        rows.append({"key": key, "label": label, "meaning": meaning, "shown": point,
                     "interval": f"[{pct(x.get('ci_low'))}, {pct(x.get('ci_high'))}]",
                     "se": pct(x.get("std_err")),
                     "value": x.get("estimate")})
    how = ("a census of the affected items" if e.get("census") else
           f"affected items drawn ∝ {'weight' if e.get('design') == 'recall' else 'weight × JaccardDistance'}")
    return {
        "rows": rows,
        "design": (f"{e.get('design')} design, {how}; {count(e.get('anchors_judged'))} of {count(e.get('anchors'))} "
                   f"anchors judged (entity sample '{e.get('sample')}')."),
        "verdict": e.get("verdict") or "",
        "beside": e.get("beside") or "",
    }

